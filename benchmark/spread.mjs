// The 1 MiB sync cells measured in separate processes: each process makes one kind of call on the
// 15 payloads of 1 MiB for 1.5 s (after 30 calls of warm-up) and reports its mean time per call and
// the minor page faults per call. Five processes a cell, the cells taking turns, for zstd-pool and
// zstd-napi, with glibc's allocator as it is and with its thresholds raised (GLIBC_TUNABLES), which
// tells whether a spread is the allocator's (fresh memory for each result) or the library's.
// Run by `npm run bench`; alone: node benchmark/spread.mjs [PROCESSES]
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import { LEVEL, requirePeer } from './contenders.mjs'
import { payloads } from './corpus.mjs'

const SIZE = 1 << 20
/** glibc keeps freed memory up to these instead of giving it back to the kernel at once. */
export const TUNED = 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456'

/** One process's measurement of one cell, printed as JSON. */
function measure(library, mode) {
  const inputs = payloads(SIZE)
  const zstd = createRequire(import.meta.url)('../main.js')
  const frames = inputs.map((input) => zstd.compressSync(input, LEVEL))
  const calls = {
    'zstd-pool': { cs: (i) => zstd.compressSync(inputs[i], LEVEL), ds: (i) => zstd.decompressSync(frames[i]) },
    'zstd-napi': (() => {
      const napi = requirePeer('zstd-napi')
      return {
        cs: (i) => napi.compress(inputs[i], { compressionLevel: LEVEL }),
        ds: (i) => napi.decompress(frames[i]),
      }
    })(),
  }
  const call = calls[library][mode]
  for (let i = 0; i < 30; i++) call(i % inputs.length)
  const faults = process.resourceUsage().minorPageFault
  const start = performance.now()
  let count = 0
  while (performance.now() - start < 1500) call(count++ % inputs.length)
  const micros = ((performance.now() - start) * 1000) / count
  const faultsPerCall = (process.resourceUsage().minorPageFault - faults) / count
  process.stdout.write(JSON.stringify({ micros, faultsPerCall }))
}

/** Every cell in `processes` processes each; writes results/spread.json. */
function measureAll(processes) {
  const cells = []
  for (const allocator of ['default', 'tuned'])
    for (const library of ['zstd-pool', 'zstd-napi'])
      for (const mode of ['cs', 'ds']) cells.push({ allocator, library, mode, runs: [] })
  // The allocator as it is means no tunables, whatever this process was started with.
  const env = (allocator) => ({ ...process.env, GLIBC_TUNABLES: allocator === 'tuned' ? TUNED : '' })
  for (let round = 0; round < processes; round++) {
    for (const cell of cells) {
      const output = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', cell.library, cell.mode], {
        env: env(cell.allocator),
        encoding: 'utf8',
      })
      cell.runs.push(JSON.parse(output))
    }
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
  for (const cell of cells) {
    const times = cell.runs.map((run) => run.micros)
    Object.assign(cell, {
      min: Math.min(...times),
      median: median(times),
      max: Math.max(...times),
      faults: median(cell.runs.map((run) => run.faultsPerCall)),
    })
    console.log(
      `${cell.allocator} allocator, ${cell.library} ${cell.mode} 1 MiB: ${cell.min.toFixed(0)} to ${cell.max.toFixed(0)} µs ` +
        `(${((cell.max / cell.min - 1) * 100).toFixed(0)}% apart), ${cell.faults.toFixed(0)} faults a call`,
    )
  }
  const result = { node: process.version, date: new Date().toISOString().slice(0, 10), processes, tuned: TUNED, cells }
  writeFileSync(new URL('./results/spread.json', import.meta.url), `${JSON.stringify(result, null, 1)}\n`)
}

/** The report's section (benchmark/report.mjs). */
export function spreadSection(result) {
  const row = (cell) =>
    `| ${cell.library} | ${cell.mode === 'cs' ? 'compressSync' : 'decompressSync'} | ${cell.allocator === 'tuned' ? 'thresholds raised' : 'as it is'} | ` +
    `${cell.min.toFixed(0)} µs | ${cell.median.toFixed(0)} µs | ${cell.max.toFixed(0)} µs | ${((cell.max / cell.min - 1) * 100).toFixed(0)}% | ${cell.faults.toFixed(0)} |`
  return [
    '## The 1 MiB sync cells, process by process',
    '',
    `\`benchmark/spread.mjs\`: each cell measured in ${result.processes} separate processes (the cells taking turns), each making the call on the`,
    '15 payloads of 1 MiB for 1.5 s; its mean time per call, and the minor page faults a call. A 1 MiB result is fresh memory from',
    "glibc's allocator, which gives freed memory back to the kernel soon after the garbage collector frees a batch of results; the",
    `next results fault it in again, a page at a time. Raised thresholds (\`GLIBC_TUNABLES=${result.tuned}\`) keep it: what remains`,
    `is the library's own spread. On ${result.node} (${result.date}).`,
    '',
    '| library | call | allocator | fastest | median | slowest | apart | faults a call |',
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...result.cells.map(row),
  ]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--child') measure(process.argv[3], process.argv[4])
  else measureAll(Number(process.argv[2] ?? 5))
}
