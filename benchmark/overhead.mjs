// What zstd-pool's sync calls cost over the floor (raw libzstd with a reused context, no Node
// work: crates/addon/src/exports/floor.rs), and how its sync calls and calls in flight compare with
// each peer's, measured in pairs: a batch of floor (or peer) calls and a batch of zstd-pool calls
// on the same payloads, back to back, in alternating order, many rounds. Each round gives one
// ratio; the median round is the result. A shared VM drifts over seconds, which shifts cells
// measured one after the other; it shifts both halves of a pair alike.
// `node benchmark/overhead.mjs [SIZES [MS_PER_CELL [OUTPUT]]]` writes benchmark/results/overhead.json
// (or OUTPUT): `rows` against the floor, `peers` against each peer.
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

import { LEVEL, loadContenders } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { FLOOR, FLOOR_BATCH, floors } from './floor.mjs'

const zstd = createRequire(import.meta.url)('../main.js')
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]

/** How long `fn` takes, in ms; awaited when it returns a Promise (calls in flight). */
async function time(fn) {
  const started = performance.now()
  const done = fn()
  if (done) await done
  return performance.now() - started
}

/** Paired rounds of `floor` and `ours` (each one batch of `calls` calls) for `ms`. */
export async function paired(floor, ours, ms, calls = FLOOR_BATCH) {
  const ratios = []
  const extras = []
  const floorTimes = []
  const ourTimes = []
  for (let i = 0; i < 3; i++) {
    await time(floor)
    await time(ours)
  }
  const end = performance.now() + ms
  for (let round = 0; performance.now() < end || round < 10; round++) {
    // Which half goes first alternates, so that neither always runs on a warmer cache.
    let ourTime
    let floorTime
    if (round % 2) {
      ourTime = await time(ours)
      floorTime = await time(floor)
    } else {
      floorTime = await time(floor)
      ourTime = await time(ours)
    }
    ourTimes.push(ourTime)
    floorTimes.push(floorTime)
    ratios.push(ourTime / floorTime)
    extras.push(ourTime - floorTime)
  }
  const perCall = (times) => (median(times) * 1000) / calls
  // `extra`: the µs a call takes over the floor's, the median of the rounds' differences.
  return {
    ratio: median(ratios),
    extra: perCall(extras),
    floor: perCall(floorTimes),
    ours: perCall(ourTimes),
    rounds: ratios.length,
  }
}

const SIZES = [1024, 8192, 65536, 1048576]
/** The cells paired with the peers: sync calls (a batch of 15, one after the other) and calls in
 * flight (a batch of 16 or 64 started at once and awaited), as `zstd.bench.ts` makes them. */
const CALLS = {
  cs: ['compressSync', 0],
  ds: ['decompressSync', 0],
  ca16: ['compress', 16],
  ca64: ['compress', 64],
  da16: ['decompress', 16],
  da64: ['decompress', 64],
}
/** Calls in flight are paired up to this size, which the targets go to. */
const IN_FLIGHT_UP_TO = 65536

/** Per mode and size: the payloads (frames, to decompress), the method called, and a batch of
 * calls of a given library's method over them. */
function* cells(modes, sizes) {
  for (const mode of modes)
    for (const size of sizes) {
      const [method, inFlight] = CALLS[mode]
      if (inFlight && size > IN_FLIGHT_UP_TO) continue
      const inputs = payloads(size)
      const compressing = method.startsWith('compress')
      const data = compressing ? inputs : inputs.map((input) => zstd.compressSync(input, LEVEL))
      const batchOf = (call) => {
        if (!inFlight)
          return () => {
            for (const input of data) call(input)
          }
        let i = 0
        return () => {
          const batch = new Array(inFlight)
          for (let j = 0; j < inFlight; j++) batch[j] = call(data[i++ % data.length])
          return Promise.all(batch)
        }
      }
      yield { mode, size, compressing, data, method, calls: inFlight || data.length, batchOf }
    }
}

const ours = {
  compressSync: (input) => zstd.compressSync(input, LEVEL),
  decompressSync: (frame) => zstd.decompressSync(frame),
  compress: (input) => zstd.compress(input, LEVEL),
  decompress: (frame) => zstd.decompress(frame),
}

export async function overhead(sizes = SIZES, ms = 1500) {
  const rows = []
  for (const { mode, size, compressing, data, method, batchOf } of cells(['cs', 'ds'], sizes)) {
    const floor = floors(compressing, data, LEVEL)[FLOOR]
    rows.push({ mode, size, ...(await paired(floor, batchOf(ours[method]), ms)) })
  }
  return rows
}

/** zstd-pool against each peer with that kind of call, in pairs: `ratio` is zstd-pool's time over
 * the peer's, the median of the rounds. */
export async function againstPeers(sizes = SIZES, ms = 1500) {
  const peers = Object.entries(await loadContenders()).filter(([, contender]) => !contender.ours)
  const rows = []
  for (const { mode, size, method, calls, batchOf } of cells(Object.keys(CALLS), sizes))
    for (const [peer, contender] of peers) {
      if (!contender[method]) continue
      const pair = await paired(batchOf(contender[method]), batchOf(ours[method]), ms, calls)
      rows.push({ mode, size, peer, ratio: pair.ratio, ours: pair.ours, theirs: pair.floor, rounds: pair.rounds })
    }
  return rows
}

/** The peer that measured fastest against zstd-pool in pairs, in a cell, as the report's targets
 * take it: `ratio` is the peer's time over zstd-pool's. */
export function bestInPairs(peers, mode, size) {
  const cell = peers?.filter((row) => row.mode === mode && row.size === Number(size)) ?? []
  const fastest = cell.reduce((a, b) => (!a || b.ratio > a.ratio ? b : a), undefined)
  return fastest && { ratio: 1 / fastest.ratio, peer: `${fastest.peer}, in pairs` }
}

/** The report's section on the peer pairs: per cell, each peer's time over zstd-pool's. */
export function peerPairsSection(peers, label) {
  if (!peers?.length) return []
  const names = [...new Set(peers.map((row) => row.peer))]
  const cells = [...new Set(peers.map((row) => `${row.mode} ${row.size}`))]
  const lines = [
    '## Calls against the peers, in pairs',
    '',
    "The same pairs, with a batch of each peer's calls in place of the floor's (for calls in flight, a batch of 16 or 64 started",
    "at once and awaited): each cell is the peer's time over zstd-pool's (above 1: zstd-pool is faster), then the peer's time per",
    "call; zstd-pool's time is the median of its pairs. The targets above against the best peer take it from here where a cell",
    'has pairs.',
    '',
    `| call | size | zstd-pool | ${names.join(' | ')} |`,
    `|---|---|---:|${names.map(() => '---:').join('|')}|`,
  ]
  for (const cell of cells) {
    const rows = peers.filter((row) => `${row.mode} ${row.size}` === cell)
    const [{ mode, size }] = rows
    const ours = median(rows.map((row) => row.ours))
    const shown = names.map((name) => {
      const row = rows.find((row) => row.peer === name)
      return row ? `${(1 / row.ratio).toFixed(2)}x (${label.time(row.theirs)})` : '–'
    })
    lines.push(`| ${label.mode(mode)} | ${label.size(size)} | ${label.time(ours)} | ${shown.join(' | ')} |`)
  }
  return [...lines, '']
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = process.argv[2]?.split(',').map(Number)
  const ms = Number(process.argv[3] ?? 1500)
  const rows = await overhead(sizes, ms)
  const output = process.argv[4] ?? new URL('./results/overhead.json', import.meta.url)
  for (const row of rows)
    console.log(
      `${row.mode} ${row.size}: zstd-pool ${row.ours.toFixed(2)} µs, floor ${row.floor.toFixed(2)} µs, ratio ${row.ratio.toFixed(3)} (${row.rounds} rounds)`,
    )
  const peers = await againstPeers(sizes, ms)
  for (const row of peers)
    console.log(
      `${row.mode} ${row.size}: zstd-pool ${row.ours.toFixed(2)} µs, ${row.peer} ${row.theirs.toFixed(2)} µs, ${(1 / row.ratio).toFixed(3)}x its speed (${row.rounds} rounds)`,
    )
  writeFileSync(output, `${JSON.stringify({ node: process.version, rows, peers }, null, 2)}\n`)
}
