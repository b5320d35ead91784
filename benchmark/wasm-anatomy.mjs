// Where a WebAssembly build's sync decompression goes, beside @bokuweb/zstd-wasm's: the staged
// call decoding into the module's memory with no result (libzstd and the call's own bridge), then
// with its result copied out into a new Buffer as lib/results.js copies it, the public
// `decompressSync`, and @bokuweb/zstd-wasm's `decompress` (whose memory is not shared). The steps
// take turns round by round, in one process; each is the median round, in µs per call, with the
// minor page faults a call (a new result's memory, which both libraries allocate, faults in pages
// that the allocator gave back to the system: run it again with
// GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456 to see the calls without that).
//   npm run build:wasi && node benchmark/wasm-anatomy.mjs [SIZE]      (SIZE in bytes, default 65536)
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

import { payloads } from './corpus.mjs'

const requirePeer = createRequire(new URL('./peers/package.json', import.meta.url))
const require = createRequire(import.meta.url)
if (!existsSync(new URL('../zstd-pool.wasm32-wasi.wasm', import.meta.url))) {
  throw new Error('no WebAssembly build: npm run build:wasi')
}
// Set before the package loads (see benchmark/wasm.mjs).
process.env.NAPI_RS_FORCE_WASI = 'error'
const zstd = require('../main.js')
const { binding, capabilities } = require('../lib/binding.js')
if (!capabilities.staged) throw new Error('the native build loaded, not the WebAssembly one')
const staging = require('../lib/staging.js')
const boku = requirePeer('@bokuweb/zstd-wasm')
await boku.init()

const size = Number(process.argv[2] ?? 65536)
const inputs = payloads(size, 15)
const frames = inputs.map((input) => zstd.compressSync(input, 3))
const { maxOutputLength, windowLogMax } = require('../lib/options.js').decompressOptions(undefined)
const SYNC = Number.POSITIVE_INFINITY

/** The staged call as lib/calls.js makes it for decompressSync; the view of its result. */
function decodeStaged(frame) {
  staging.stagedDecompress(frame, SYNC, maxOutputLength, windowLogMax)
  return staging.stagedView(binding.decompressStagedPlain())
}

const steps = {
  'staged decode, result left in the module': (frame) => {
    decodeStaged(frame)
    staging.afterStagedCall()
  },
  '+ copied out into a new Buffer': (frame) => {
    const view = decodeStaged(frame)
    const result = Buffer.allocUnsafeSlow(view.length)
    result.set(view)
    staging.afterStagedCall()
    return result
  },
  decompressSync: (frame) => zstd.decompressSync(frame),
  '@bokuweb/zstd-wasm decompress': (frame) => boku.decompress(frame),
}
for (const [name, step] of Object.entries(steps)) {
  const output = step(frames[0]) ?? inputs[0]
  if (Buffer.compare(Buffer.from(output), inputs[0]) !== 0) throw new Error(`${name}: wrong output`)
}

const times = Object.fromEntries(Object.keys(steps).map((name) => [name, []]))
const faults = Object.fromEntries(Object.keys(steps).map((name) => [name, 0]))
const calls = Object.fromEntries(Object.keys(steps).map((name) => [name, 0]))
for (let round = 0; round < 21; round++) {
  for (const [name, step] of Object.entries(steps)) {
    const before = process.resourceUsage().minorPageFault
    const start = performance.now()
    let made = 0
    while (performance.now() - start < 60) {
      for (const frame of frames) step(frame)
      made += frames.length
    }
    times[name].push(((performance.now() - start) * 1000) / made)
    faults[name] += process.resourceUsage().minorPageFault - before
    calls[name] += made
  }
}
console.log(`decompress ${size} bytes, level 3, ${process.version} (medians of 21 interleaved rounds)`)
console.log('| step | µs per call | page faults a call |')
console.log('|---|---:|---:|')
for (const name of Object.keys(steps)) {
  const median = times[name].sort((a, b) => a - b)[times[name].length >> 1]
  console.log(`| ${name} | ${median.toFixed(2)} | ${(faults[name] / calls[name]).toFixed(2)} |`)
}
