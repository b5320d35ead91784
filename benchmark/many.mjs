// The batch API: 64 messages of 1 KiB and of 8 KiB (level 3), compressed and decompressed with
// compressMany / decompressMany, with a loop of single async calls (all in flight at once, as a
// server issues them), with the sync forms, and against the best other library's loop of
// single async calls. The floor is raw libzstd with a reused context (crates/addon/src/exports/floor.rs), per
// message on one core and, divided by the cores, on all of them. Rounds interleave every
// contender; each cell is the median round, in µs per message.
// Run by `npm run bench` (on the newest Node); alone: node benchmark/many.mjs [ROUNDS]
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os, { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

import { loadContenders } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { FLOOR, FLOOR_BATCH, floors } from './floor.mjs'
import { pythonPackages } from './setup.mjs'

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

// ---------------------------------------------------------------------------------------------
// Large batches against python-zstandard's batch API, the only other one in any language

/** How many messages of 1 KiB the comparison with python-zstandard batches. */
const PYTHON_MESSAGES = 10000

/** Python's side: loads the messages and frames, then times one `multi_*_to_buffer` call on all of
 * them per command it reads ("compress" or "decompress"), with as many threads as there are cores. */
const PYTHON = `
import json, struct, sys, time, zstandard
def load(path):
    data = open(path, 'rb').read()
    count = struct.unpack_from('<I', data)[0]
    sizes = struct.unpack_from('<%dI' % count, data, 4)
    items, at = [], 4 + 4 * count
    for size in sizes:
        items.append(data[at:at + size])
        at += size
    return items
inputs, frames = load(sys.argv[1]), load(sys.argv[2])
threads = int(sys.argv[3])
compressor, decompressor = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
print(json.dumps({"version": zstandard.__version__, "zstd": ".".join(map(str, zstandard.ZSTD_VERSION))}), flush=True)
for line in sys.stdin:
    started = time.perf_counter()
    if line.strip() == "compress":
        compressor.multi_compress_to_buffer(inputs, threads=threads)
    else:
        decompressor.multi_decompress_to_buffer(frames, threads=threads)
    print((time.perf_counter() - started) * 1e6 / len(inputs), flush=True)
`

/** The messages end to end after their count and lengths, as PYTHON's `load` reads them. */
function packed(items) {
  const head = new Uint32Array([items.length, ...items.map((item) => item.length)])
  return Buffer.concat([Buffer.from(head.buffer), ...items])
}

/** python-zstandard's `multi_compress_to_buffer` / `multi_decompress_to_buffer` on 10,000 messages
 * of 1 KiB and zstd-pool's `compressMany` / `decompressMany` on the same, the rounds interleaved;
 * undefined, with the reason printed, when python-zstandard cannot be run. */
async function againstPython() {
  const env = { ...process.env, PYTHONPATH: pythonPackages }
  const missing = spawnSync('python3', ['-c', 'import zstandard'], { env, encoding: 'utf8' })
  if (missing.status !== 0) {
    console.log('many: python-zstandard skipped: not installed (npm run bench installs it into .tools/pypkgs)')
    return undefined
  }
  const cut = payloads(1024)
  const inputs = Array.from({ length: PYTHON_MESSAGES }, (_, i) => cut[i % cut.length])
  const frames = inputs.map((input) => zstd.compressSync(input, LEVEL))
  const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-many-'))
  writeFileSync(join(dir, 'inputs'), packed(inputs))
  writeFileSync(join(dir, 'frames'), packed(frames))
  const child = spawn('python3', ['-c', PYTHON, join(dir, 'inputs'), join(dir, 'frames'), String(cores)], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const next = async () => JSON.parse((await lines.next()).value)
  const { version, zstd: libzstd } = await next()
  // Ours in both forms: packed (the results end to end, as python-zstandard gives them) and a
  // Buffer per message.
  const ours = {
    compress: { packed: () => zstd.compressManyPacked(inputs, LEVEL), array: () => zstd.compressMany(inputs, LEVEL) },
    decompress: { packed: () => zstd.decompressManyPacked(frames), array: () => zstd.decompressMany(frames) },
  }
  const times = { compress: { ours: [], array: [], python: [] }, decompress: { ours: [], array: [], python: [] } }
  const timed = async (run) => {
    const started = performance.now()
    await run()
    return ((performance.now() - started) * 1000) / inputs.length
  }
  for (let round = 0; round < rounds; round++) {
    for (const op of ['compress', 'decompress']) {
      child.stdin.write(`${op}\n`)
      times[op].python.push(await next())
      times[op].ours.push(await timed(ours[op].packed))
      times[op].array.push(await timed(ours[op].array))
    }
  }
  child.stdin.end()
  rmSync(dir, { recursive: true })
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
  const result = {
    version: `python-zstandard ${version} (libzstd ${libzstd})`,
    messages: inputs.length,
    threads: cores,
    rows: [],
  }
  for (const op of ['compress', 'decompress']) {
    const row = { op, ours: median(times[op].ours), array: median(times[op].array), python: median(times[op].python) }
    result.rows.push(row)
    console.log(
      `${op} ${inputs.length} x 1 KiB: ${op}ManyPacked ${row.ours.toFixed(2)} µs, ${op}Many ${row.array.toFixed(2)} µs, python-zstandard ${row.python.toFixed(2)} µs per message`,
    )
  }
  return result
}

const python = await againstPython()
writeFileSync(
  new URL('./results/many.json', import.meta.url),
  `${JSON.stringify({ node: process.version, cores, messages: MESSAGES, rounds, rows, python }, null, 2)}\n`,
)
