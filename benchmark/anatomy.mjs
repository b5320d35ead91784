// Where a sync call's time goes, taken apart: raw libzstd with a reused context and output (the
// floor), the native call writing into the same reused Buffer every time (no new result), the
// native call with a new result as lib/calls.js makes it (carved from a slab when small, else a
// Buffer of its own), and the public call (the JavaScript layer too). Each step adds one cost;
// the steps take turns round by round, so a shared VM's drift falls on all alike, and the median
// round is printed. Then, in a rotation of their own, the public call, a native call that only
// reads decompressPlain's arguments (Node-API's share of the native call) and zstd-napi's call.
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
const { LEVEL, requirePeer } = await import('./contenders.mjs')

const size = Number(process.argv[2] ?? 1024)
const inputs = payloads(size, FLOOR_BATCH)
const frames = inputs.map((input) => zstd.compressSync(input, LEVEL))
const reused = Buffer.allocUnsafeSlow(Math.max(8192, 2 * size + 1024))
// A decompressed result past the slab's share goes into a Buffer of exactly its size, made for
// it: reused here, where a call gets a new one (from lib/results.js's decodeTarget up to 64 KiB,
// from native code past it). A compressed one past the slab's share is copied into a new Buffer
// whatever the step: its size is known only once it is made.
const ownBuffer = size >= capabilities.sharedBelow
const reusedTarget = ownBuffer ? Buffer.allocUnsafeSlow(size) : reused
const reusedOffset = ownBuffer ? results.OWN_BUFFER : 0
const SYNC = Number.POSITIVE_INFINITY
const { decompressNow } = require('../lib/calls.js')
const DEFAULTS = require('../lib/options.js').decompressOptions(undefined)
// What decompressSync passes when given no options.
const maxOutputLength = require('node:buffer').constants.MAX_LENGTH
const windowLogMax = capabilities.defaultWindowLogMax
// What compressSync passes given a level: the level, no checksum, no workers.
const PARAMETERS = Int32Array.of(LEVEL, 0, 0)
const each = (call) => () => {
  for (let i = 0; i < FLOOR_BATCH; i++) call(i)
}

/** Beside the steps, in a rotation of their own with the public call (so that no step pays for
 * collecting their garbage): a native call registered as decompressPlain is, that reads the same
 * arguments and does nothing with them (crates/addon/src/exports/floor.rs: an upper bound on what
 * Node-API costs the call, the loop around it included), and zstd-napi's call, the sync peer
 * closest to ours (when `npm run bench` has installed the peers). */
const ARGUMENTS_ONLY = 'a native call that only reads the same arguments'
const zstdNapi = (() => {
  try {
    return requirePeer('zstd-napi')
  } catch {
    return undefined
  }
})()
// A compression whose frame may pass the slab's share makes it in native memory, then copies it
// into a new Buffer, in every step.
const compressReused = 'native call, into a reused Buffer (past the slab, a new one)'
const publicDecompress = each((i) => zstd.decompressSync(frames[i]))
const publicCompress = each((i) => zstd.compressSync(inputs[i], LEVEL))
const ops = {
  decompress: {
    steps: {
      'raw libzstd, reused context and output': floors(false, frames, LEVEL)['raw libzstd, reused context'],
      'native call, into a reused Buffer': each((i) =>
        binding.decompressPlain(frames[i], maxOutputLength, windowLogMax, SYNC, reusedTarget, reusedOffset),
      ),
      // decompressSync without reading its arguments and options.
      'native call, a new result (slab or Buffer)': each((i) => decompressNow(frames[i], DEFAULTS)),
      'decompressSync (JavaScript too)': publicDecompress,
    },
    beside: {
      decompressSync: publicDecompress,
      [ARGUMENTS_ONLY]: each((i) => binding.argumentsOnly(frames[i], maxOutputLength, windowLogMax, SYNC, reused, 0)),
      ...(zstdNapi && { "zstd-napi's decompress": each((i) => zstdNapi.decompress(frames[i])) }),
    },
  },
  compress: {
    steps: {
      'raw libzstd, reused context and output': floors(true, inputs, LEVEL)['raw libzstd, reused context'],
      [compressReused]: each((i) => binding.compressPlain(inputs[i], PARAMETERS, SYNC, reused, 0)),
      'native call, a new result (slab or Buffer)': each((i) =>
        results.result(binding.compressPlain(inputs[i], PARAMETERS, SYNC, results.compressSlab(size), results.slabOffset())),
      ),
      'compressSync (JavaScript too)': publicCompress,
    },
    beside: {
      compressSync: publicCompress,
      ...(zstdNapi && { "zstd-napi's compress": each((i) => zstdNapi.compress(inputs[i], { compressionLevel: LEVEL })) }),
    },
  },
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
/** The median µs per call of each of `cases`, over 21 rounds in which they take turns. */
function rotation(cases) {
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
  return Object.fromEntries(names.map((name) => [name, median(samples[name])]))
}

for (const [op, { steps, beside }] of Object.entries(ops)) {
  const timed = rotation(steps)
  console.log(`\n${op} ${size} bytes, level ${LEVEL}, ${process.version} (medians of 21 interleaved rounds)`)
  console.log('| step | µs per call | added |\n|---|---:|---:|')
  let previous = 0
  for (const [name, micros] of Object.entries(timed)) {
    console.log(`| ${name} | ${micros.toFixed(2)} | ${previous ? `${(micros - previous).toFixed(2)}` : ''} |`)
    previous = micros
  }
  const besides = Object.entries(rotation(beside)).map(([name, micros]) => `${name} ${micros.toFixed(2)} µs`)
  console.log(`In a rotation of their own: ${besides.join(', ')}`)
}
