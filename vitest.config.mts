import { defineConfig } from 'vitest/config'

// ZSTD_POOL_WASI=1 runs the suite against the WebAssembly build (npm run build:wasi first):
// the package loads it in the test workers and in every process they start. Set there, not
// here, because the flag would switch every napi-rs package in this process to WASI too,
// vite's own bundler included.
const wasi = process.env.ZSTD_POOL_WASI === '1'
// benchmark/run.mjs's build with the floor, loaded in the workers for the same reason.
const benchBinary = process.env.ZSTD_POOL_BENCH_BINARY

export default defineConfig({
  test: {
    env: {
      ...(wasi ? { NAPI_RS_FORCE_WASI: 'error' } : {}),
      ...(benchBinary ? { NAPI_RS_NATIVE_LIBRARY_PATH: benchBinary } : {}),
    },
    include: ['__test__/**/*.spec.ts'],
    globalSetup: ['__test__/global-setup.ts'],
    // The package's entries load as Node loads them, not through vitest's module runner, which
    // would run main.js (imported by main.mjs) apart from the main.js that require() gives:
    // two Dictionary classes, two slabs, where Node has one module.
    server: { deps: { external: [/\/(main|zlib|http|browser)\.m?js$/] } },
    // Some tests collect garbage on purpose, to prove that async calls do not depend on
    // the caller's buffers staying alive.
    execArgv: ['--expose-gc'],
    testTimeout: 120_000,
    benchmark: {
      include: ['benchmark/**/*.bench.ts'],
    },
  },
})
