// Streaming throughput: 48 MiB of the corpus (level 3) in chunks of 1 KiB to 1 MiB, through
// zstd-pool's Node streams (createCompressStream / createDecompressStream) and Web streams
// (ZstdCompressionStream / ZstdDecompressionStream through pipeThrough), node:zlib's
// createZstdCompress / createZstdDecompress where Node has them, and zstd-pool's one-shot
// compress / decompress of the whole 48 MiB for comparison. Every contender runs once per round,
// rounds interleaved; each cell is the median round. Decompression is fed the same chunk size.
// Run by `npm run bench` (on the newest Node); alone: node benchmark/stream.mjs [ROUNDS]
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import * as zlib from 'node:zlib'

import { repeated } from './corpus.mjs'

const zstd = createRequire(import.meta.url)('../main.js')
export const SIZE = 48 << 20
export const CHUNKS = [1 << 10, 16 << 10, 64 << 10, 1 << 20]

const pieces = (data, chunk) => {
  const out = []
  for (let offset = 0; offset < data.length; offset += chunk) out.push(data.subarray(offset, offset + chunk))
  return out
}

/** Milliseconds to pipe `data` in `chunk`-sized pieces through a Node Transform, and its output. */
async function throughNode(data, chunk, makeStream) {
  const out = []
  const started = performance.now()
  await pipeline(
    Readable.from(pieces(data, chunk)),
    makeStream(),
    new Writable({
      write(piece, _, done) {
        out.push(piece)
        done()
      },
    }),
  )
  return { millis: performance.now() - started, output: Buffer.concat(out) }
}

/** The same through a Web transform pair (`readable.pipeThrough(pair)`). */
async function throughWeb(data, chunk, makePair) {
  const queue = pieces(data, chunk)
  let next = 0
  const out = []
  const started = performance.now()
  const source = new ReadableStream({
    pull(controller) {
      if (next < queue.length) controller.enqueue(queue[next++])
      else controller.close()
    },
  })
  const reader = source.pipeThrough(makePair()).getReader()
  for (let next = await reader.read(); !next.done; next = await reader.read()) out.push(next.value)
  return { millis: performance.now() - started, output: Buffer.concat(out) }
}

async function oneShot(data, fn) {
  const started = performance.now()
  const output = await fn(data)
  return { millis: performance.now() - started, output }
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
const mbps = (millis) => SIZE / 1e6 / (millis / 1000)

export async function measureStreams(rounds = 3) {
  const input = repeated(SIZE)
  const frame = zstd.compressSync(input, 3)
  const contenders = {
    'zstd-pool, Node streams': {
      run: throughNode,
      compress: () => zstd.createCompressStream({ level: 3 }),
      decompress: () => zstd.createDecompressStream(),
    },
    'zstd-pool, Web streams': {
      run: throughWeb,
      compress: () => new zstd.ZstdCompressionStream({ level: 3 }),
      decompress: () => new zstd.ZstdDecompressionStream(),
    },
  }
  if (zlib.createZstdCompress) {
    contenders['node:zlib zstd streams'] = {
      run: throughNode,
      compress: () => zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } }),
      decompress: () => zlib.createZstdDecompress(),
    }
  }
  const times = {} // times[name][chunk] = { compress: [], decompress: [] }
  const whole = { compress: [], decompress: [] }
  for (let round = 0; round < rounds; round++) {
    const compressed = await oneShot(input, (data) => zstd.compress(data, 3))
    const decompressed = await oneShot(frame, (data) => zstd.decompress(data))
    if (!decompressed.output.equals(input)) throw new Error('one-shot decompress did not round-trip')
    whole.compress.push(compressed.millis)
    whole.decompress.push(decompressed.millis)
    for (const chunk of CHUNKS)
      for (const [name, contender] of Object.entries(contenders)) {
        const packed = await contender.run(input, chunk, contender.compress)
        const unpacked = await contender.run(frame, chunk, contender.decompress)
        if (!unpacked.output.equals(input) || !zstd.decompressSync(packed.output).equals(input))
          throw new Error(`${name} did not round-trip in ${chunk}-byte chunks`)
        times[name] ??= {}
        times[name][chunk] ??= { compress: [], decompress: [], ratio: SIZE / packed.output.length }
        times[name][chunk].compress.push(packed.millis)
        times[name][chunk].decompress.push(unpacked.millis)
      }
  }
  const rows = []
  for (const [name, byChunk] of Object.entries(times))
    for (const [chunk, cell] of Object.entries(byChunk)) {
      const row = { name, chunk: Number(chunk), compress: mbps(median(cell.compress)), decompress: mbps(median(cell.decompress)) }
      rows.push({ ...row, ratio: cell.ratio })
      console.log(
        `streams: ${name}, ${chunk >> 10} KiB chunks: compress ${row.compress.toFixed(0)} MB/s, decompress ${row.decompress.toFixed(0)} MB/s`,
      )
    }
  const oneShotRates = { compress: mbps(median(whole.compress)), decompress: mbps(median(whole.decompress)) }
  console.log(
    `streams: one-shot compress ${oneShotRates.compress.toFixed(0)} MB/s, decompress ${oneShotRates.decompress.toFixed(0)} MB/s`,
  )
  const result = { node: process.version, size: SIZE, rounds, oneShot: oneShotRates, rows }
  writeFileSync(new URL('./results/stream.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) await measureStreams(Number(process.argv[2] ?? 3))
