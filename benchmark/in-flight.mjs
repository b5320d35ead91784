// Many async calls in flight, taken apart, for zstd-pool and @mongodb-js/zstd (the fastest peer
// there): per call, the wall time, the CPU time of every thread of the process, and the CPU time
// of the JavaScript thread alone (making the calls and settling them). The wall time against the
// CPU time says how busy the cores were; the JavaScript thread's time is where copies into and out
// of native memory show. Rounds of 300 ms take turns, and the median round is printed.
//   npm run bench:in-flight -- [SIZE] [c|d] [IN_FLIGHT]        (default: 65536 d 64)
// With NAPI_RS_NATIVE_LIBRARY_PATH set to another build of the addon, measures that build the
// same way: how the upper bounds in docs/performance.md were taken.
import { createRequire } from 'node:module'

import { LEVEL, requirePeer } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { setupPeers } from './setup.mjs'

const size = Number(process.argv[2] ?? 65536)
const mode = process.argv[3] ?? 'd'
const inFlight = Number(process.argv[4] ?? 64)
if (!(size > 0) || !['c', 'd'].includes(mode) || !(inFlight > 0)) {
  throw new Error('usage: node benchmark/in-flight.mjs [SIZE] [c|d] [IN_FLIGHT]')
}

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
setupPeers()
const mongo = requirePeer('@mongodb-js/zstd')
const inputs = payloads(size, inFlight)
const args = mode === 'c' ? inputs : inputs.map((input) => zstd.compressSync(input, LEVEL))
const libraries = {
  'zstd-pool': mode === 'c' ? (input) => zstd.compress(input, LEVEL) : (frame) => zstd.decompress(frame),
  '@mongodb-js/zstd': mode === 'c' ? (input) => mongo.compress(input, LEVEL) : (frame) => mongo.decompress(frame),
}
// Node 23.9 and later; elsewhere the JavaScript thread's column is left empty.
const threadCpu = typeof process.threadCpuUsage === 'function' ? () => process.threadCpuUsage() : null
const cpuMicros = (usage) => usage.user + usage.system

/** One round of batches of `inFlight` calls: µs per call of wall, process CPU, JavaScript thread CPU. */
async function round(call, ms = 300) {
  let calls = 0
  const process0 = process.cpuUsage()
  const thread0 = threadCpu?.()
  const start = performance.now()
  while (performance.now() - start < ms) {
    await Promise.all(args.map(call))
    calls += inFlight
  }
  const wall = ((performance.now() - start) * 1000) / calls
  const cpu = cpuMicros(process.cpuUsage(process0)) / calls
  const thread = threadCpu ? cpuMicros(process.threadCpuUsage(thread0)) / calls : Number.NaN
  return [wall, cpu, thread]
}

for (const call of Object.values(libraries)) await round(call, 200)
const rounds = Object.fromEntries(Object.keys(libraries).map((name) => [name, []]))
for (let r = 0; r < 9; r++) {
  for (const [name, call] of Object.entries(libraries)) rounds[name].push(await round(call))
}

const median = (values) => values.sort((a, b) => a - b)[values.length >> 1]
const fmt = (us) => (Number.isNaN(us) ? '–' : us.toFixed(1))
const verb = mode === 'c' ? 'compressions' : 'decompressions'
console.log(`${inFlight} ${verb} of ${size} bytes in flight, level ${LEVEL}, ${process.version} (medians of 9 rounds)`)
console.log('| library | wall µs a call | CPU µs a call | cores busy | JavaScript thread µs a call |')
console.log('|---|---:|---:|---:|---:|')
const walls = {}
for (const [name, results] of Object.entries(rounds)) {
  const [wall, cpu, thread] = [0, 1, 2].map((column) => median(results.map((row) => row[column])))
  walls[name] = wall
  console.log(`| ${name} | ${fmt(wall)} | ${fmt(cpu)} | ${(cpu / wall).toFixed(2)} | ${fmt(thread)} |`)
}
console.log(`zstd-pool: ${(walls['@mongodb-js/zstd'] / walls['zstd-pool']).toFixed(2)}x the speed of @mongodb-js/zstd`)
