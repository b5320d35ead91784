#!/usr/bin/env bash
# Builds the WASI fallback (wasm32-wasip1-threads, single-threaded libzstd: the WASI sysroot
# here has no pthreads) into artifacts/ and runs the API check on it under Node, through the
# generated loader. Not part of CI (it installs clang and the WASI sysroot); run: npm run test:wasi
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang >/dev/null || [ ! -d /usr/include/wasm32-wasi ]; then
  apt-get update -qq
  apt-get install -y -qq clang wasi-libc libclang-rt-14-dev-wasm32 >/dev/null
fi
rustup target add wasm32-wasip1-threads >/dev/null
# clang 14 does not know the wasip1 triple: name the target it knows, and keep libzstd's
# tracing hooks out as in the native build (.cargo/config.toml).
CFLAGS_wasm32_wasip1_threads="--target=wasm32-wasi -matomics -mbulk-memory -DZSTD_TRACE=0" \
  npx napi build --platform --release --target wasm32-wasip1-threads --output-dir artifacts
NAPI_RS_NATIVE_LIBRARY_PATH="$PWD/artifacts/zstd-pool.wasi.cjs" node --no-warnings scripts/platform-check.cjs
