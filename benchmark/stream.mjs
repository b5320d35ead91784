// Streaming throughput: 64 MiB of the corpus in 64 KiB chunks through zstd-pool's Node streams
// and node:zlib's createZstdCompress / createZstdDecompress (level 3), on the Node that runs it.
// Run by `npm run bench` (on the newest Node); alone: node benchmark/stream.mjs
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import * as zlib from 'node:zlib'

import { repeated } from './corpus.mjs'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const SIZE = 64 << 20
const CHUNK = 64 << 10

async function run(input, makeStream) {
  const chunks = function* () {
    for (let offset = 0; offset < input.length; offset += CHUNK) yield input.subarray(offset, offset + CHUNK)
  }
  const out = []
  const start = performance.now()
  await pipeline(
    Readable.from(chunks()),
    makeStream(),
    new Writable({
      write(chunk, _, done) {
        out.push(chunk)
        done()
      },
    }),
  )
  return { millis: performance.now() - start, output: Buffer.concat(out) }
}

async function best(input, makeStream, runs = 3) {
  let fastest
  for (let i = 0; i < runs; i++) {
    const result = await run(input, makeStream)
    if (!fastest || result.millis < fastest.millis) fastest = result
  }
  return fastest
}

export async function measureStreams() {
  const input = repeated(SIZE)
  const contenders = {
    'zstd-pool': { compress: () => zstd.createCompressStream({ level: 3 }), decompress: () => zstd.createDecompressStream() },
  }
  if (zlib.createZstdCompress) {
    contenders['node:zlib zstd'] = {
      compress: () => zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } }),
      decompress: () => zlib.createZstdDecompress(),
    }
  }
  const rows = []
  for (const [name, make] of Object.entries(contenders)) {
    const compressed = await best(input, make.compress)
    const decompressed = await best(compressed.output, make.decompress)
    if (!decompressed.output.equals(input)) throw new Error(`${name} did not round-trip`)
    const mbps = (millis) => SIZE / 1e6 / (millis / 1000)
    rows.push({
      name,
      compress: mbps(compressed.millis),
      decompress: mbps(decompressed.millis),
      ratio: SIZE / compressed.output.length,
    })
    console.log(
      `streams: ${name}: compress ${mbps(compressed.millis).toFixed(0)} MB/s, decompress ${mbps(decompressed.millis).toFixed(0)} MB/s`,
    )
  }
  const result = { node: process.version, size: SIZE, chunk: CHUNK, rows }
  writeFileSync(new URL('./results/stream.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) await measureStreams()
