// zstd-pool in a browser (or a bundle for one): the WebAssembly build, zstd-pool-wasm32-wasi,
// with the one-shot API of the Node entry. Results are Uint8Arrays (there is no Buffer here).
// The page must be cross-origin isolated (COOP `same-origin`, COEP `require-corp`): the module's
// memory is a SharedArrayBuffer, shared with the workers that run the Promise calls.
//
// The same internal modules as the Node entry (lib/), with lib/platform-browser.js in place of
// lib/platform.js (package.json's "imports" map, "browser" condition): calls pass numbers only,
// inputs copied into the staging area and results out of it (lib/staging.js, crates/addon/src/napi/staging.rs).

import * as wasm from 'zstd-pool-wasm32-wasi'
import platform from '#platform'

// The binding first; then the modules that load it. A dynamic import, so that nothing of lib/
// loads before the WebAssembly build is handed in. Its default export is the module's exports
// object, which has the exports registered by hand (crates/addon/src/napi/plain.rs) besides the
// named ones.
platform.provideBinding(wasm.default ?? wasm)
// `.default`: a CommonJS module's exports, under Node and every bundler.
const { compress, compressSync, decompress, decompressSync } = (await import('./lib/calls.js')).default
const { Dictionary } = (await import('./lib/dictionary.js')).default
const { DEFAULT_LEVEL, MAX_LEVEL, MIN_LEVEL } = (await import('./lib/parameters.js')).default
const { Prefix } = (await import('./lib/prefix.js')).default

export { compress, compressSync, DEFAULT_LEVEL, Dictionary, decompress, decompressSync, MAX_LEVEL, MIN_LEVEL, Prefix }
