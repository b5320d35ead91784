// The batch API: 64 messages of 1 KiB and of 8 KiB (level 3), compressed and decompressed with
// compressMany / decompressMany, with a loop of single async calls (all in flight at once, as a
// server issues them), with the sync forms, and against the best other library's loop of
// single async calls. The floor is raw libzstd with a reused context (crates/addon/src/exports/floor.rs), per
// message on one core and, divided by the cores, on all of them. Rounds interleave every
// contender; each cell is the median round, in µs per message.
// Run by `npm run bench` (on the newest Node); alone: node benchmark/many.mjs [ROUNDS]
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'

import { loadContenders } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { FLOOR, FLOOR_BATCH, floors } from './floor.mjs'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const all = await loadContenders()
/** The peers that were fastest at many small calls in flight (benchmark/RESULTS.md). */
const peers = Object.fromEntries(
  ['@mongodb-js/zstd', '@toondepauw/node-zstd'].filter((name) => all[name]).map((name) => [name, all[name]]),
)
const MESSAGES = 64
const LEVEL = 3
const rounds = Number(process.argv[2] ?? 15)
const cores = os.availableParallelism()
/** The messages a round of the floor runs: whole calls of FLOOR_BATCH. */
const FLOOR_ROUND = Math.ceil(MESSAGES / FLOOR_BATCH) * FLOOR_BATCH

const messagesOf = (size) => {
  const cut = payloads(size)
  return Array.from({ length: MESSAGES }, (_, i) => cut[i % cut.length])
}

async function time(run, ms = 120) {
  let messages = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await run()
    messages += MESSAGES
  }
  return ((performance.now() - start) * 1000) / messages
}

const rows = []
for (const size of [1024, 8192]) {
  const inputs = messagesOf(size)
  const frames = inputs.map((input) => zstd.compressSync(input, LEVEL))
  const floorCompress = floors(true, inputs.slice(0, 15), LEVEL)[FLOOR]
  const floorDecompress = floors(false, frames.slice(0, 15), LEVEL)[FLOOR]
  // The same contenders each way: `op` on `items` (inputs or frames), one argument after them.
  const contendersOf = (op, items, floor, ...options) => {
    const many = `${op}Many`
    const sync = `${op}Sync`
    return {
      [many]: () => zstd[many](items, ...options),
      [`${op}, all in flight`]: () => Promise.all(items.map((item) => zstd[op](item, ...options))),
      [`${many}Sync`]: async () => zstd[`${many}Sync`](items, ...options),
      [`${sync}, a loop`]: async () => {
        for (const item of items) zstd[sync](item, ...options)
      },
      ...Object.fromEntries(
        Object.entries(peers).map(([name, peer]) => [
          `${name} ${op}, all in flight`,
          () => Promise.all(items.map((item) => peer[op](item))),
        ]),
      ),
      [FLOOR]: async () => {
        for (let i = 0; i < MESSAGES; i += FLOOR_BATCH) floor()
      },
    }
  }
  const contenders = {
    compress: contendersOf('compress', inputs, floorCompress, LEVEL),
    decompress: contendersOf('decompress', frames, floorDecompress),
  }
  for (const [op, entries] of Object.entries(contenders)) {
    const times = Object.fromEntries(Object.keys(entries).map((name) => [name, []]))
    for (let round = 0; round < rounds; round++) {
      for (const [name, run] of Object.entries(entries)) times[name].push(await time(run))
    }
    for (const [name, values] of Object.entries(times)) {
      values.sort((a, b) => a - b)
      // The floor runs FLOOR_BATCH messages a call, so a round of it runs more than MESSAGES.
      const micros = values[values.length >> 1] * (name === FLOOR ? MESSAGES / FLOOR_ROUND : 1)
      rows.push({ size, op, name, micros })
      console.log(`${op} ${size} ${name}: ${micros.toFixed(2)} µs per message`)
    }
  }
}
writeFileSync(
  new URL('./results/many.json', import.meta.url),
  `${JSON.stringify({ node: process.version, cores, messages: MESSAGES, rounds, rows }, null, 2)}\n`,
)
