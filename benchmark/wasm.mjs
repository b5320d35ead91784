// The WebAssembly build under Node: zstd-pool's wasm32-wasip1-threads build (npm run build:wasi)
// against @bokuweb/zstd-wasm (libzstd compiled with Emscripten) and fzstd (a decoder in plain
// JavaScript), level 3, on payloads of 1 KiB, 64 KiB and 1 MiB cut from the corpus. Sync calls,
// and ours async one at a time (awaited, as a caller with one request does). Rounds interleave
// the contenders; each cell is the median round, in µs per call. The browser's figures come from
// `npm run test:browser` (results/browser.json), which times the same calls in Chromium.
// Run by `npm run bench` when the WebAssembly build is there; alone: node benchmark/wasm.mjs [ROUNDS]
import { existsSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

import { payloads } from './corpus.mjs'
import { thisMachine } from './machine.mjs'

// Not contenders.mjs's requirePeer: importing that module loads the package (the native build)
// before NAPI_RS_FORCE_WASI is set, and `require('../main.js')` here then gave the native build
// back from the module cache, which the reports until 2026-12-02 measured as the WebAssembly one.
const requirePeer = createRequire(new URL('./peers/package.json', import.meta.url))
const require = createRequire(import.meta.url)
if (!existsSync(new URL('../zstd-pool.wasm32-wasi.wasm', import.meta.url))) {
  console.log('No WebAssembly build (npm run build:wasi): the WebAssembly section is left out.')
  process.exit(0)
}
// Only this package's loader reads it as 'error' (load the WebAssembly build or fail); the
// peers here are no napi-rs packages.
process.env.NAPI_RS_FORCE_WASI = 'error'
const ours = require('../main.js')
if (!require('../lib/binding.js').capabilities.staged)
  throw new Error('benchmark/wasm.mjs loaded the native build, not the WebAssembly one')
const boku = requirePeer('@bokuweb/zstd-wasm')
await boku.init()
const fzstd = requirePeer('fzstd')

const LEVEL = 3
const rounds = Number(process.argv[2] ?? 9)

async function time(call, inputs, ms) {
  let calls = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    for (const input of inputs) await call(input)
    calls += inputs.length
  }
  return ((performance.now() - start) * 1000) / calls
}

const median = (values) => values.sort((a, b) => a - b)[values.length >> 1]
const rows = []
for (const size of [1 << 10, 64 << 10, 1 << 20]) {
  const inputs = payloads(size, size >= 1 << 20 ? 4 : 15)
  const frames = inputs.map((input) => ours.compressSync(input, LEVEL))
  const contenders = [
    ['compress', 'zstd-pool (WebAssembly), sync', (input) => ours.compressSync(input, LEVEL), inputs],
    ['compress', 'zstd-pool (WebAssembly), async', (input) => ours.compress(input, LEVEL), inputs],
    ['compress', '@bokuweb/zstd-wasm', (input) => boku.compress(input, LEVEL), inputs],
    ['decompress', 'zstd-pool (WebAssembly), sync', (frame) => ours.decompressSync(frame), frames],
    ['decompress', 'zstd-pool (WebAssembly), async', (frame) => ours.decompress(frame), frames],
    ['decompress', '@bokuweb/zstd-wasm', (frame) => boku.decompress(frame), frames],
    ['decompress', 'fzstd', (frame) => fzstd.decompress(frame), frames],
  ]
  const samples = contenders.map(() => [])
  for (let round = 0; round < rounds; round++) {
    for (const [i, [, , call, data]] of contenders.entries()) samples[i].push(await time(call, data, size >= 1 << 20 ? 300 : 100))
  }
  for (const [i, [op, name]] of contenders.entries()) {
    rows.push({ op, size, name, micros: median(samples[i]) })
    console.log(`${op} ${size >> 10} KiB ${name}: ${median(samples[i]).toFixed(1)} µs`)
  }
}
writeFileSync(
  new URL('./results/wasm.json', import.meta.url),
  `${JSON.stringify({ node: `Node ${process.version}`, date: new Date().toISOString().slice(0, 10), machine: thisMachine(), rounds, rows }, null, 2)}\n`,
)
