#!/usr/bin/env bash
# Builds the Linux binaries (x64 and arm64, glibc and musl) into artifacts/, the way releases
# are built: cargo-zigbuild links against glibc 2.17, so the binaries load on old distros too.
# Checks what each binary needs: no GLIBC symbol above 2.17, no ZSTD_ symbol shared with Node.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo-zigbuild >/dev/null || pip install --quiet cargo-zigbuild ziglang
rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-unknown-linux-musl >/dev/null

for target in x86_64-unknown-linux-gnu.2.17 x86_64-unknown-linux-musl aarch64-unknown-linux-gnu.2.17 aarch64-unknown-linux-musl; do
  echo "building $target"
  npx napi build --platform --release --target "$target" --cross-compile --output-dir artifacts --no-js
done

status=0
for binary in artifacts/*.node; do
  glibc=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1 || true)
  zstd=$(objdump -T "$binary" | grep -c 'ZSTD_' || true)
  echo "$binary: highest ${glibc:-GLIBC symbol: none}, ZSTD_ symbols: $zstd"
  if [ "$zstd" != 0 ]; then status=1; fi
  if [ -n "$glibc" ] && [ "$(printf '%s\n' "$glibc" GLIBC_2.17 | sort -V | tail -1)" != GLIBC_2.17 ]; then status=1; fi
done
exit $status
