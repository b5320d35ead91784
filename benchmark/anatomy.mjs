// Where a small sync call's time goes, taken apart: raw libzstd with a reused context and output
// (the floor), the native call writing into the same reused Buffer every time (no new result),
// the native call with its result carved from a fresh slab as lib/calls.js makes it, and the
// public call (the JavaScript layer too). Each step adds one cost; the steps take turns round by
// round, so a shared VM's drift falls on all alike, and the median round is printed.
//   npm run build:bench && node benchmark/anatomy.mjs [SIZE]      (SIZE in bytes, default 1024)
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { payloads } from './corpus.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const benchBuild = join(root, 'target/bench')
const floorBinary = readdirSync(benchBuild).find((name) => name.endsWith('.node'))
if (!floorBinary) throw new Error('no build with the floor: npm run build:bench')
// The floor is in the bench build only: load that build, before anything loads the binding.
process.env.NAPI_RS_NATIVE_LIBRARY_PATH ??= join(benchBuild, floorBinary)
const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const { binding, capabilities } = require('../lib/binding.js')
const results = require('../lib/results.js')
const { FLOOR_BATCH, floors } = await import('./floor.mjs')
const { LEVEL } = await import('./contenders.mjs')

const size = Number(process.argv[2] ?? 1024)
const inputs = payloads(size, FLOOR_BATCH)
const frames = inputs.map((input) => zstd.compressSync(input, LEVEL))
const reused = Buffer.allocUnsafeSlow(Math.max(8192, 2 * size + 1024))
const SYNC = Number.POSITIVE_INFINITY
// What decompressSync passes when given no options.
const maxOutputLength = require('node:buffer').constants.MAX_LENGTH
const windowLogMax = capabilities.defaultWindowLogMax
// What compressSync passes given a level: the level, no checksum, no workers.
const PARAMETERS = Int32Array.of(LEVEL, 0, 0)
const each = (call) => () => {
  for (let i = 0; i < FLOOR_BATCH; i++) call(i)
}

const steps = {
  decompress: {
    'raw libzstd, reused context and output': floors(false, frames, LEVEL)['raw libzstd, reused context'],
    'native call, into a reused Buffer': each((i) =>
      binding.decompressPlain(frames[i], maxOutputLength, windowLogMax, SYNC, reused, 0),
    ),
    'native call, result from a slab': each((i) =>
      results.result(
        results.decoded(
          binding.decompressPlain(frames[i], maxOutputLength, windowLogMax, SYNC, results.decompressSlab(), results.slabOffset()),
        ),
      ),
    ),
    'decompressSync (JavaScript too)': each((i) => zstd.decompressSync(frames[i])),
  },
  compress: {
    'raw libzstd, reused context and output': floors(true, inputs, LEVEL)['raw libzstd, reused context'],
    'native call, into a reused Buffer': each((i) => binding.compressPlain(inputs[i], PARAMETERS, SYNC, reused, 0)),
    'native call, result from a slab': each((i) =>
      results.result(binding.compressPlain(inputs[i], PARAMETERS, SYNC, results.compressSlab(size), results.slabOffset())),
    ),
    'compressSync (JavaScript too)': each((i) => zstd.compressSync(inputs[i], LEVEL)),
  },
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
for (const [op, cases] of Object.entries(steps)) {
  const names = Object.keys(cases)
  // Calls per sample: enough for ~5 ms.
  const repeats = {}
  for (const name of names) {
    let count = 1
    for (let started = performance.now(); performance.now() - started < 5; count *= 2) {
      started = performance.now()
      for (let i = 0; i < count; i++) cases[name]()
    }
    repeats[name] = count
  }
  const samples = Object.fromEntries(names.map((name) => [name, []]))
  for (let round = 0; round < 21; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const started = performance.now()
      for (let i = 0; i < repeats[name]; i++) cases[name]()
      samples[name].push(((performance.now() - started) * 1000) / (repeats[name] * FLOOR_BATCH))
    }
  }
  console.log(`\n${op} ${size} bytes, level ${LEVEL}, ${process.version} (median of 21 interleaved rounds)`)
  console.log('| step | µs per call | added |\n|---|---:|---:|')
  let previous = 0
  for (const name of names) {
    const micros = median(samples[name])
    console.log(`| ${name} | ${micros.toFixed(2)} | ${previous ? `${(micros - previous).toFixed(2)}` : ''} |`)
    previous = micros
  }
}
