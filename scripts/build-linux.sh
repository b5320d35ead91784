#!/usr/bin/env bash
# Builds the Linux binaries (x64 and arm64, glibc and musl) into artifacts/, the way releases
# are built: cargo-zigbuild links against glibc 2.17, so the binaries load on old distros too.
# Checks what each binary needs: no GLIBC symbol above 2.17, no ZSTD_ symbol shared with Node.
set -euo pipefail
cd "$(dirname "$0")/.."

# cargo-zigbuild and zig, pinned, from PyPI into a venv of their own: Debian's Python refuses a
# plain `pip install` (PEP 668), and a global one would be whichever version was there before.
tools=.tools/zigbuild
if [ ! -x "$tools/bin/cargo-zigbuild" ] || [ ! -x "$tools/bin/python-zig" ]; then
  python3 -m venv --clear "$tools" ||
    { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && python3 -m venv --clear "$tools"; }
  "$tools/bin/pip" install --quiet --disable-pip-version-check cargo-zigbuild==0.24.1 ziglang==0.17.1
fi
# With no `zig` on PATH, cargo-zigbuild runs `python3 -m ziglang`: the venv's python3 must come first.
export PATH="$PWD/$tools/bin:$PATH"
rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-gnu aarch64-unknown-linux-musl >/dev/null

for target in x86_64-unknown-linux-gnu.2.17 x86_64-unknown-linux-musl aarch64-unknown-linux-gnu.2.17 aarch64-unknown-linux-musl; do
  echo "building $target"
  npx napi build --platform --release --manifest-path crates/addon/Cargo.toml --target "$target" --cross-compile --output-dir artifacts --no-js
done

status=0
# The four names, not artifacts/*.node: a binary that was not built must fail, not be skipped.
for platform in linux-x64-gnu linux-x64-musl linux-arm64-gnu linux-arm64-musl; do
  binary=artifacts/zstd-pool.$platform.node
  # Read once, outside a pipeline: if objdump cannot read the file, the script stops here
  # rather than reporting "no GLIBC symbol, 0 ZSTD_ symbols".
  symbols=$(objdump -T "$binary")
  glibc=$(grep -o 'GLIBC_[0-9.]*' <<<"$symbols" | sort -V | tail -1 || true)
  zstd=$(grep -c 'ZSTD_' <<<"$symbols" || true)
  echo "$binary: highest ${glibc:-GLIBC symbol: none}, ZSTD_ symbols: $zstd"
  # The module's entry point shows that the symbol table was read at all.
  grep -q 'napi_register_module_v1' <<<"$symbols" || { echo "$binary: no napi_register_module_v1"; status=1; }
  if [ "$zstd" != 0 ]; then status=1; fi
  if [ -n "$glibc" ] && [ "$(printf '%s\n' "$glibc" GLIBC_2.17 | sort -V | tail -1)" != GLIBC_2.17 ]; then status=1; fi
done
exit $status
