import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// SharedArrayBuffer, which the WebAssembly build's memory is, exists only in a cross-origin
// isolated page: every response of the page's origin carries these two headers.
const isolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
}

export default defineConfig({
  // The page's timings fetch its payloads (real text, not random bytes) from the repository's
  // test corpus, served as static files; ZSTD_POOL_CORPUS points elsewhere.
  publicDir: process.env.ZSTD_POOL_CORPUS ?? fileURLToPath(new URL('../../__test__/corpus', import.meta.url)),
  server: { headers: isolation },
  preview: { headers: isolation },
  // Nothing else: Vite 8 bundles the WebAssembly package as it is, following its
  // `new URL('./zstd-pool.wasm32-wasi.wasm', import.meta.url)` and its `new Worker(new URL(…))`
  // in `vite build`, and rewriting them to the right place when it pre-bundles the package for
  // `vite` (dev). Older Vite needed `optimizeDeps: { exclude: ['zstd-pool-wasm32-wasi'] }` there.
})
