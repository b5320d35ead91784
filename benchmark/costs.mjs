// Measures what two design choices cost: copying the input of async calls (so the caller may
// mutate or detach it meanwhile), and how outputs become Buffers; then what the platform charges
// for a new result, whoever makes it. Run: npm run bench:costs
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { monitorEventLoopDelay } from 'node:perf_hooks'

import { payloads, repeated } from './corpus.mjs'

const require = createRequire(import.meta.url)
const { compress, compressSync, decompressSync } = require('../main.js')

const median = (values) => values.sort((a, b) => a - b)[values.length >> 1]
const fmt = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(2)} µs`)
const mib = (bytes) => (bytes >= 1 << 20 ? `${bytes / (1 << 20)} MiB` : `${bytes / 1024} KiB`)

/** Median time of `fn` in µs, over enough repeats to last ~`ms`. */
function timeIt(fn, ms = 300) {
  const samples = []
  const end = performance.now() + ms
  while (performance.now() < end || samples.length < 5) {
    const t0 = performance.now()
    fn()
    samples.push((performance.now() - t0) * 1000)
  }
  return median(samples)
}

console.log('## Async input copy: time compress() spends on the calling thread before it returns')
console.log('One call at a time (each awaited), so the numbers are per call, not a pile-up of queued copies. Level 10,')
console.log('which never runs inline (small calls at low levels run on the calling thread and copy nothing).')
console.log('| input | compress() returns after | minus an empty call | copy speed |')
console.log('|---|---:|---:|---:|')
/** Median time (µs) that `compress(input)` blocks its caller, one call in flight. */
async function callTime(input, calls) {
  const samples = []
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now()
    const pending = compress(input, 10)
    samples.push((performance.now() - t0) * 1000)
    await pending
  }
  return median(samples)
}
const baseline = await callTime(Buffer.alloc(0), 2000)
for (const size of [64 << 10, 1 << 20, 16 << 20, 64 << 20]) {
  const input = repeated(size)
  const call = await callTime(input, size >= 16 << 20 ? 5 : size >= 1 << 20 ? 30 : 500)
  const copy = Math.max(0, call - baseline)
  console.log(`| ${mib(size)} | ${fmt(call)} | ${fmt(copy)} | ${copy > 0 ? `${(size / copy / 1000).toFixed(1)} GB/s` : '-'} |`)
}

console.log('\n## Event loop while one 64 MiB compress runs (level 3)')
{
  const input = repeated(64 << 20)
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  // The histogram records a delay only between two of its own ticks: let it tick once first.
  await new Promise((resolve) => setTimeout(resolve, 20))
  const t0 = performance.now()
  await compress(input, 3)
  const wall = performance.now() - t0
  histogram.disable()
  console.log(
    `compress took ${fmt(wall * 1000)}; event-loop delay p50 ${(histogram.percentile(50) / 1e6).toFixed(1)} ms, max ${(histogram.max / 1e6).toFixed(1)} ms`,
  )
}

console.log('\n## Output buffers: decompressSync into a Buffer allocated up front vs a native buffer copied at the end')
console.log('Same content; frames from compressSync record their size (allocated once, written in place), frames from')
console.log('`zstd` on a pipe do not (grown natively, then copied into a Buffer).')
console.log('| size | size recorded: in place | size unknown: grow + copy | in-place speed-up |')
console.log('|---|---:|---:|---:|')
for (const size of [1 << 10, 64 << 10, 1 << 20, 16 << 20]) {
  const inputs = payloads(Math.min(size, 1 << 20), 5).map((p) => (size > 1 << 20 ? repeated(size) : p))
  const known = inputs.map((input) => compressSync(input, 3))
  const unknown = inputs.map((input) => execFileSync('zstd', ['-q', '-3', '--no-check', '-c'], { input, maxBuffer: 1 << 30 }))
  let i = 0
  const inPlace = timeIt(() => decompressSync(known[i++ % known.length]))
  const grown = timeIt(() => decompressSync(unknown[i++ % unknown.length]))
  console.log(`| ${mib(size)} | ${fmt(inPlace)} | ${fmt(grown)} | ${(grown / inPlace).toFixed(2)}x |`)
}

console.log("\n## What a new result costs, measured alone: Node's memory, not this package's code")
console.log('A loop that makes a Buffer of the size and copies that many bytes into it, against the same copy into one')
console.log('Buffer reused: the difference is what fresh memory costs (the allocation, its pages faulted in, caches')
console.log('missed, the collector), which every library that returns a new Buffer pays. Then the same copy out of a')
console.log('SharedArrayBuffer, as the WebAssembly build copies its results out of its memory (V8 copies shared memory')
console.log('word by word, with relaxed atomic loads).')
console.log(
  '| size | into a new Buffer | into a reused one | the new Buffer | out of shared memory, into a new Buffer | shared memory costs |',
)
console.log('|---|---:|---:|---:|---:|---:|')
for (const size of [8 << 10, 64 << 10, 1 << 20]) {
  const plain = new Uint8Array(new ArrayBuffer(size)).fill(7)
  const shared = new Uint8Array(new SharedArrayBuffer(size)).fill(7)
  const reused = Buffer.allocUnsafeSlow(size)
  const ms = size >= 1 << 20 ? 1000 : 300
  // Each timing is the median of batches of 16 calls, so that the collector's work is in it.
  const perCall = (fn) =>
    timeIt(() => {
      for (let i = 0; i < 16; i++) fn()
    }, ms) / 16
  const fresh = perCall(() => Buffer.allocUnsafeSlow(size).set(plain))
  const warm = perCall(() => reused.set(plain))
  const freshShared = perCall(() => Buffer.allocUnsafeSlow(size).set(shared))
  console.log(
    `| ${mib(size)} | ${fmt(fresh)} | ${fmt(warm)} | ${fmt(fresh - warm)} | ${fmt(freshShared)} | ${fmt(freshShared - fresh)} |`,
  )
}
