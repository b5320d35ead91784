// `npm run soak` (SOAK_SECONDS, default 600): sync and async compress/decompress of mixed sizes
// for a while, with RSS sampled after a full GC every second. RSS must flatten, not climb: fails
// if the growth over the second half of the run passes the bound.
// `node --expose-gc scripts/soak.mjs [SECONDS] [MAX_GROWTH_MB]`
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const root = fileURLToPath(new URL('..', import.meta.url))
const seconds = Number(process.argv[2] ?? 600)
const maxGrowthMb = Number(process.argv[3] ?? 32)

const corpus = Buffer.concat(
  readdirSync(`${root}__test__/corpus`)
    .sort()
    .map((name) => readFileSync(`${root}__test__/corpus/${name}`)),
)
const sizes = [100, 1 << 10, 16 << 10, 256 << 10, 2 << 20]
const inputs = sizes.map((size, i) => corpus.subarray(i * 1000, i * 1000 + size))
const frames = inputs.map((input) => zstd.compressSync(input))

const samples = []
const started = Date.now()
let calls = 0
let nextSample = started
while (Date.now() - started < seconds * 1000) {
  const batch = []
  for (let i = 0; i < 64; i++) {
    const k = (calls + i) % inputs.length
    if (i % 4 === 0) zstd.compressSync(inputs[k], 1 + (i % 5))
    else if (i % 4 === 1) zstd.decompressSync(frames[k])
    else if (i % 4 === 2) batch.push(zstd.compress(inputs[k], { level: 3, checksum: i % 8 === 2 }))
    else batch.push(zstd.decompress(frames[k], { maxOutputLength: 4 << 20 }))
  }
  batch.push(zstd.decompress(Buffer.from('not zstd')).catch(() => null))
  await Promise.all(batch)
  calls += 65
  if (Date.now() >= nextSample) {
    globalThis.gc()
    samples.push({ t: (Date.now() - started) / 1000, rss: process.memoryUsage().rss })
    nextSample += 1000
  }
}

const mb = (bytes) => bytes / (1 << 20)
const secondHalf = samples.slice(samples.length >> 1)
const growth = mb(Math.max(...secondHalf.map((s) => s.rss)) - secondHalf[0].rss)
// Least-squares slope of RSS over time, over the second half (after warm-up).
const n = secondHalf.length
const meanT = secondHalf.reduce((a, s) => a + s.t, 0) / n
const meanR = secondHalf.reduce((a, s) => a + mb(s.rss), 0) / n
const slope =
  secondHalf.reduce((a, s) => a + (s.t - meanT) * (mb(s.rss) - meanR), 0) /
  (secondHalf.reduce((a, s) => a + (s.t - meanT) ** 2, 0) || 1)
console.log(
  `soak: ${calls} calls in ${seconds} s; RSS ${mb(samples[0].rss).toFixed(1)} MB at first, peak ${mb(Math.max(...samples.map((s) => s.rss))).toFixed(1)} MB, last ${mb(samples.at(-1).rss).toFixed(1)} MB`,
)
console.log(
  `soak: second half: growth ${growth.toFixed(1)} MB, slope ${slope.toFixed(3)} MB/s; pools ${JSON.stringify(zstd.poolStats().compressors)}`,
)
if (growth > maxGrowthMb) {
  console.error(`soak: RSS grew ${growth.toFixed(1)} MB over the second half, more than ${maxGrowthMb} MB`)
  process.exit(1)
}
