// `npm run bench`: zstd-pool against node:zlib on payloads cut from the shared corpus.
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib'
import { bench, describe } from 'vitest'

import { compress, compressSync, configurePool, decompress, decompressSync, poolStats } from '../index.js'
import { payloads } from './corpus.mjs'

const level = 3
const defaultMaxIdle = poolStats().compressors.maxIdleContexts
const pooling = {
  off: { setup: () => void configurePool({ maxIdleContexts: 0 }), teardown: () => void configurePool({ maxIdleContexts: defaultMaxIdle }) },
}
const brotli4 = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }

for (const [label, size] of [['1 KiB', 1 << 10], ['64 KiB', 64 << 10], ['1 MiB', 1 << 20]] as const) {
  const inputs = payloads(size)
  const frames = inputs.map((input) => compressSync(input, level))
  const gzipped = inputs.map((input) => gzipSync(input, { level: 6 }))
  const brotlied = inputs.map((input) => brotliCompressSync(input, brotli4))
  let i = 0
  const next = <T>(items: T[]) => items[i++ % items.length]

  describe(`compress ${label}`, () => {
    bench('zstd-pool compressSync', () => void compressSync(next(inputs), level))
    bench('zstd-pool compressSync, pooling off', () => void compressSync(next(inputs), level), pooling.off)
    bench('zstd-pool compress (1 in flight)', async () => void (await compress(next(inputs), level)))
    bench('zstd-pool compress (16 in flight, per batch)', async () => {
      await Promise.all(Array.from({ length: 16 }, () => compress(next(inputs), level)))
    })
    bench('node:zlib gzipSync level 6', () => void gzipSync(next(inputs), { level: 6 }))
    bench('node:zlib brotliCompressSync quality 4', () => void brotliCompressSync(next(inputs), brotli4))
  })

  describe(`decompress ${label}`, () => {
    bench('zstd-pool decompressSync', () => void decompressSync(next(frames)))
    bench('zstd-pool decompressSync, pooling off', () => void decompressSync(next(frames)), pooling.off)
    bench('zstd-pool decompress (1 in flight)', async () => void (await decompress(next(frames))))
    bench('zstd-pool decompress (16 in flight, per batch)', async () => {
      await Promise.all(Array.from({ length: 16 }, () => decompress(next(frames))))
    })
    bench('node:zlib gunzipSync', () => void gunzipSync(next(gzipped)))
    bench('node:zlib brotliDecompressSync', () => void brotliDecompressSync(next(brotlied)))
  })
}
