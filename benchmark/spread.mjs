// The 1 MiB sync cells measured in separate processes: each process makes one kind of call on the
// 15 payloads of 1 MiB for 3 s (after 30 calls of warm-up), alternating call by call with the
// floor (raw libzstd with a reused context and output, no allocation: benchmark/floor.mjs) on the
// same payload, each going first every other time, and reports its mean time per call, the
// floor's, and the minor page faults per call. Five processes a cell, the cells taking turns, for
// zstd-pool and zstd-napi, with glibc's allocator as it is and with its thresholds raised
// (GLIBC_TUNABLES), which tells whether a spread is the allocator's (fresh memory for each result)
// or the library's. A shared VM's speed drifts from one process to the next too: the floor's own
// spread measures mostly that (it runs among the call's garbage, not alone), and a call's time
// over the floor's, process by process, is what is left with the drift divided out.
// Run by `npm run bench`; alone (the build with the floor, when `npm run build:bench` made it):
// node benchmark/spread.mjs [PROCESSES]
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
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
  const { Floor } = createRequire(import.meta.url)('../index.js')
  const payloadsOf = mode === 'cs' ? inputs : frames
  // One call at a time, cycling through the payloads in the same order as `call`'s.
  const floor = Floor
    ? new Floor(
        mode === 'cs',
        Buffer.concat(payloadsOf),
        Uint32Array.from(payloadsOf, (p) => p.length),
        LEVEL,
        false,
      )
    : undefined
  for (let i = 0; i < 30; i++) call(i % inputs.length)
  // The floor's constructor makes one call (on the first payload): after 2n - 1 more, its next is
  // the first payload again, as `call`'s is.
  floor?.run(2 * inputs.length - 1)
  const faults = process.resourceUsage().minorPageFault
  const start = performance.now()
  let count = 0
  let ours = 0
  let floors = 0
  while (performance.now() - start < (floor ? 3000 : 1500)) {
    // Each goes first every other time: the one that follows runs among the other's garbage.
    const callFirst = count % 2 === 0
    const before = performance.now()
    if (callFirst) call(count % inputs.length)
    else floor?.run(1)
    const between = performance.now()
    if (callFirst) floor?.run(1)
    else call(count % inputs.length)
    const after = performance.now()
    ours += callFirst ? between - before : after - between
    floors += callFirst ? after - between : between - before
    count++
  }
  const faultsPerCall = (process.resourceUsage().minorPageFault - faults) / count
  const micros = (ours * 1000) / count
  const floorMicros = floor ? (floors * 1000) / count : undefined
  process.stdout.write(JSON.stringify({ micros, floorMicros, faultsPerCall }))
}

/** Every cell in `processes` processes each; writes results/spread.json. */
function measureAll(processes) {
  const cells = []
  for (const allocator of ['default', 'tuned'])
    for (const library of ['zstd-pool', 'zstd-napi'])
      for (const mode of ['cs', 'ds']) cells.push({ allocator, library, mode, runs: [] })
  // The allocator as it is means no tunables, whatever this process was started with. The
  // children load the build with the floor (as run.mjs has them do), where there is one.
  const benchBuild = fileURLToPath(new URL('../target/bench', import.meta.url))
  const floorBinary = existsSync(benchBuild) && readdirSync(benchBuild).find((name) => name.endsWith('.node'))
  const binary = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? (floorBinary ? join(benchBuild, floorBinary) : undefined)
  const env = (allocator) => ({
    ...process.env,
    ...(binary ? { NAPI_RS_NATIVE_LIBRARY_PATH: binary } : {}),
    GLIBC_TUNABLES: allocator === 'tuned' ? TUNED : '',
  })
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
  const apart = (values) => Math.max(...values) / Math.min(...values) - 1
  for (const cell of cells) {
    const times = cell.runs.map((run) => run.micros)
    Object.assign(cell, {
      min: Math.min(...times),
      median: median(times),
      max: Math.max(...times),
      faults: median(cell.runs.map((run) => run.faultsPerCall)),
    })
    const withFloor = cell.runs.every((run) => run.floorMicros !== undefined)
    if (withFloor) {
      const overFloor = cell.runs.map((run) => run.micros / run.floorMicros)
      Object.assign(cell, {
        floorApart: apart(cell.runs.map((run) => run.floorMicros)),
        overFloor: median(overFloor),
        overFloorApart: apart(overFloor),
      })
    }
    const floorSummary = withFloor
      ? `; the floor ${(cell.floorApart * 100).toFixed(0)}% apart, time over the floor ${cell.overFloor.toFixed(2)}x ` +
        `(${(cell.overFloorApart * 100).toFixed(0)}% apart)`
      : ''
    console.log(
      `${cell.allocator} allocator, ${cell.library} ${cell.mode} 1 MiB: ${cell.min.toFixed(0)} to ${cell.max.toFixed(0)} µs ` +
        `(${(apart(times) * 100).toFixed(0)}% apart), ${cell.faults.toFixed(0)} faults a call${floorSummary}`,
    )
  }
  const result = { node: process.version, date: new Date().toISOString().slice(0, 10), processes, tuned: TUNED, cells }
  writeFileSync(new URL('./results/spread.json', import.meta.url), `${JSON.stringify(result, null, 1)}\n`)
}

/** The report's section (benchmark/report.mjs). */
export function spreadSection(result) {
  const percent = (fraction) => `${(fraction * 100).toFixed(0)}%`
  const withFloor = result.cells.every((cell) => cell.overFloor !== undefined)
  const floorColumns = (cell) =>
    withFloor ? ` ${percent(cell.floorApart)} | ${cell.overFloor.toFixed(2)}x | ${percent(cell.overFloorApart)} |` : ''
  const row = (cell) =>
    `| ${cell.library} | ${cell.mode === 'cs' ? 'compressSync' : 'decompressSync'} | ${cell.allocator === 'tuned' ? 'thresholds raised' : 'as it is'} | ` +
    `${cell.min.toFixed(0)} µs | ${cell.median.toFixed(0)} µs | ${cell.max.toFixed(0)} µs | ${percent(cell.max / cell.min - 1)} | ${cell.faults.toFixed(0)} |` +
    floorColumns(cell)
  return [
    '## The 1 MiB sync cells, process by process',
    '',
    `\`benchmark/spread.mjs\`: each cell measured in ${result.processes} separate processes (the cells taking turns), each making the call on the`,
    '15 payloads of 1 MiB; its mean time per call, and the minor page faults a call. A 1 MiB result is fresh memory from',
    "glibc's allocator, which gives freed memory back to the kernel soon after the garbage collector frees a batch of results; the",
    `next results fault it in again, a page at a time. Raised thresholds (\`GLIBC_TUNABLES=${result.tuned}\`) keep it.`,
    ...(withFloor
      ? [
          "Each call alternates with the floor's on the same payload (raw libzstd, reused context and output: no allocation), each",
          "going first every other time, for 3 s a process. The floor's own spread is mostly the machine's drift from one process to",
          "the next (it runs among the call's garbage, not alone); a call's time over the floor's, process by process, is what is",
          'left with that drift divided out: the library and the allocator as it uses them. The verdict in the targets takes the',
          'time itself, as the goal is written.',
        ]
      : ['Each process makes the call for 1.5 s (the floor was not measured).']),
    `On ${result.node} (${result.date}).`,
    '',
    `| library | call | allocator | fastest | median | slowest | apart | faults a call |${withFloor ? ' floor apart | over the floor (median) | over the floor, apart |' : ''}`,
    `|---|---|---|---:|---:|---:|---:|---:|${withFloor ? '---:|---:|---:|' : ''}`,
    ...result.cells.map(row),
  ]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--child') measure(process.argv[3], process.argv[4])
  else measureAll(Number(process.argv[2] ?? 5))
}
