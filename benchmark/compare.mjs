// Compares two builds of zstd-pool cell by cell, in one process, round after round in turn, so
// that a shared VM's drift falls on both alike: the way to tell whether a change made a cell
// faster or slower (the full report compares libraries within one run, not runs with each other).
//   node benchmark/compare.mjs <before: a built checkout> [after: default this one]
//   ROUNDS=15 SIZES=1024,65536 MODES=cs,da64 node benchmark/compare.mjs ../zstd-pool-before
// Prints, per cell, the median time per call of each and their ratio (after / before).
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { payloads } from './corpus.mjs'

const require = createRequire(import.meta.url)
const [beforeRoot, afterRoot = fileURLToPath(new URL('..', import.meta.url))] = process.argv.slice(2)
if (!beforeRoot) throw new Error('usage: node benchmark/compare.mjs <before: a built checkout> [after]')
const before = require(resolve(beforeRoot, 'main.js'))
const after = require(resolve(afterRoot, 'main.js'))

const list = (value, fallback) => (value ? value.split(',').filter(Boolean) : fallback)
const sizes = list(process.env.SIZES, ['1024', '8192', '65536', '1048576']).map(Number)
const rounds = Number(process.env.ROUNDS ?? 11)
const roundMs = Number(process.env.ROUND_MS ?? 60)
const modes = {
  cs: [(zstd, inputs) => (i) => zstd.compressSync(inputs[i % inputs.length], 3), 0],
  'cs{}': [(zstd, inputs) => (i) => zstd.compressSync(inputs[i % inputs.length], { level: 3 }), 0],
  ds: [(zstd, _, frames) => (i) => zstd.decompressSync(frames[i % frames.length]), 0],
  ca: [(zstd, inputs) => (i) => zstd.compress(inputs[i % inputs.length], 3), 1],
  da: [(zstd, _, frames) => (i) => zstd.decompress(frames[i % frames.length]), 1],
  ca16: [(zstd, inputs) => (i) => zstd.compress(inputs[i % inputs.length], 3), 16],
  da16: [(zstd, _, frames) => (i) => zstd.decompress(frames[i % frames.length]), 16],
  ca64: [(zstd, inputs) => (i) => zstd.compress(inputs[i % inputs.length], 3), 64],
  da64: [(zstd, _, frames) => (i) => zstd.decompress(frames[i % frames.length]), 64],
  // With a dictionary (raw content: the payloads themselves), which takes the full native calls.
  csD: [
    (zstd, inputs) => withDictionary(zstd, inputs, (options) => (i) => zstd.compressSync(inputs[i % inputs.length], options)),
    0,
  ],
  dsD: [
    (zstd, inputs) =>
      withDictionary(zstd, inputs, (options, frames) => (i) => zstd.decompressSync(frames[i % frames.length], options)),
    0,
  ],
}

/** `make({ dictionary }, frames)` for a raw-content Dictionary of `zstd`'s over the payloads, with
 * `inputs` compressed against it. */
function withDictionary(zstd, inputs, make) {
  const dictionary = new zstd.Dictionary(Buffer.concat(inputs).subarray(0, 64 << 10))
  const frames = inputs.map((input) => zstd.compressSync(input, { level: 3, dictionary }))
  return make({ dictionary }, frames)
}
const chosen = list(process.env.MODES, Object.keys(modes))

/** Micros per call of `call` over one round. */
async function round(call, inFlight) {
  let calls = 0
  const start = performance.now()
  while (performance.now() - start < roundMs) {
    if (inFlight === 0) {
      for (let k = 0; k < 20; k++) call(calls++)
    } else {
      const batch = new Array(inFlight)
      for (let j = 0; j < inFlight; j++) batch[j] = call(calls++)
      await Promise.all(batch)
    }
  }
  return ((performance.now() - start) * 1000) / calls
}

const median = (values) => values.slice().sort((a, b) => a - b)[values.length >> 1]
console.log(`| size | mode | before (µs) | after (µs) | after / before |`)
console.log(`|---:|---|---:|---:|---:|`)
for (const size of sizes) {
  const inputs = payloads(size)
  const frames = inputs.map((input) => after.compressSync(input, 3))
  for (const name of chosen) {
    const [make, inFlight] = modes[name]
    const calls = [make(before, inputs, frames), make(after, inputs, frames)]
    const times = [[], []]
    for (let r = 0; r < rounds; r++) {
      for (const k of [0, 1]) times[k].push(await round(calls[k], inFlight))
    }
    const [a, b] = times.map(median)
    console.log(`| ${size} | ${name} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(3)} |`)
  }
}
