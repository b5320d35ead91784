// What zstd-pool's sync calls cost over the floor (raw libzstd with a reused context, no Node
// work: crates/addon/src/exports/floor.rs), measured in pairs: a batch of floor calls and a batch of zstd-pool calls
// on the same payloads, back to back, in alternating order, many rounds. Each round gives one
// ratio; the median round is the result. A shared VM drifts over seconds, which shifts cells
// measured one after the other; it shifts both halves of a pair alike.
// `node benchmark/overhead.mjs [SIZES [MS_PER_CELL [OUTPUT]]]` writes benchmark/results/overhead.json
// (or OUTPUT).
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

import { LEVEL } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { FLOOR, FLOOR_BATCH, floors } from './floor.mjs'

const zstd = createRequire(import.meta.url)('../main.js')
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]

/** Paired rounds of `floor` and `ours` (each one batch of FLOOR_BATCH calls) for `ms`. */
export function paired(floor, ours, ms) {
  const ratios = []
  const extras = []
  const floorTimes = []
  const ourTimes = []
  const time = (fn) => {
    const started = performance.now()
    fn()
    return performance.now() - started
  }
  for (let i = 0; i < 3; i++) {
    time(floor)
    time(ours)
  }
  const end = performance.now() + ms
  for (let round = 0; performance.now() < end || round < 10; round++) {
    // Which half goes first alternates, so that neither always runs on a warmer cache.
    let ourTime
    let floorTime
    if (round % 2) {
      ourTime = time(ours)
      floorTime = time(floor)
    } else {
      floorTime = time(floor)
      ourTime = time(ours)
    }
    ourTimes.push(ourTime)
    floorTimes.push(floorTime)
    ratios.push(ourTime / floorTime)
    extras.push(ourTime - floorTime)
  }
  const perCall = (times) => (median(times) * 1000) / FLOOR_BATCH
  // `extra`: the µs a call takes over the floor's, the median of the rounds' differences.
  return {
    ratio: median(ratios),
    extra: perCall(extras),
    floor: perCall(floorTimes),
    ours: perCall(ourTimes),
    rounds: ratios.length,
  }
}

export function overhead(sizes = [1024, 8192, 65536, 1048576], ms = 1500) {
  const rows = []
  for (const mode of ['cs', 'ds'])
    for (const size of sizes) {
      const inputs = payloads(size)
      const compressing = mode === 'cs'
      const data = compressing ? inputs : inputs.map((input) => zstd.compressSync(input, LEVEL))
      const floor = floors(compressing, data, LEVEL)[FLOOR]
      const call = compressing ? (input) => zstd.compressSync(input, LEVEL) : (frame) => zstd.decompressSync(frame)
      const ours = () => {
        for (const input of data) call(input)
      }
      rows.push({ mode, size, ...paired(floor, ours, ms) })
    }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = process.argv[2]?.split(',').map(Number)
  const rows = overhead(sizes, Number(process.argv[3] ?? 1500))
  const output = process.argv[4] ?? new URL('./results/overhead.json', import.meta.url)
  for (const row of rows)
    console.log(
      `${row.mode} ${row.size}: zstd-pool ${row.ours.toFixed(2)} µs, floor ${row.floor.toFixed(2)} µs, ratio ${row.ratio.toFixed(3)} (${row.rounds} rounds)`,
    )
  writeFileSync(output, `${JSON.stringify({ node: process.version, rows }, null, 2)}\n`)
}
