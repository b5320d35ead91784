#!/usr/bin/env bash
# Builds the WebAssembly fallback (wasm32-wasip1-threads) next to index.js, where the generated
# loader finds it (zstd-pool.wasi.cjs and its typings, zstd-pool.wasi-browser.js, the workers and
# the .wasm; the release workflow moves them into npm/wasm32-wasi with `napi artifacts`). libzstd
# is single-threaded there (the WASI sysroot here has no pthreads for C), so `workers` reports
# that it is unavailable. Run the suite against it with: npm run test:wasi
# With a directory, relative to the repository (`bash scripts/build-wasi.sh artifacts`, as the
# release workflow builds), the files go there instead: the module that ships is built with the
# flags the suite tested.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.}

if ! command -v clang >/dev/null || [ ! -d /usr/include/wasm32-wasi ]; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq clang wasi-libc >/dev/null
  # clang's WebAssembly runtime, where the distribution has one for its clang (Debian 12 does);
  # rust-lld links the module, so the build does not depend on it.
  rt=libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev-wasm32
  if apt-cache show "$rt" >/dev/null 2>&1; then $sudo apt-get install -y -qq "$rt" >/dev/null; fi
fi
rustup target add wasm32-wasip1-threads >/dev/null 2>&1

# clang before 18 (Debian 12's is 14) does not know the wasip1 triple: name the target it knows.
# Bulk memory makes memcpy and memset single instructions; SIMD128 (in every browser since 2023
# and in Node 16 on) lets clang vectorise libzstd's copies. Tracing is compiled out as in the
# native build.
export CFLAGS_wasm32_wasip1_threads="--target=wasm32-wasi -matomics -mbulk-memory -msimd128 -DZSTD_TRACE=0"
export CARGO_TARGET_WASM32_WASIP1_THREADS_RUSTFLAGS="-C target-feature=+simd128"
# A separate output directory: a native `napi build` deletes the WASI outputs it finds, and
# this one regenerates index.js as it should be.
out=$(mktemp -d)
npx napi build --platform --release --manifest-path crates/addon/Cargo.toml --target wasm32-wasip1-threads --output-dir "$out" >/dev/null
# The loader prefers a .debug.wasm when one is present; the release module is what ships.
mkdir -p "$dest"
cp "$out"/zstd-pool.wasm32-wasi.wasm "$out"/zstd-pool.wasi.cjs "$out"/zstd-pool.wasi.d.cts \
  "$out"/zstd-pool.wasi-browser.js "$out"/wasi-worker.mjs "$out"/wasi-worker-browser.mjs "$dest"
rm -rf "$out"
ls -l "$dest"/zstd-pool.wasm32-wasi.wasm
