// `npm run bench` runs this through benchmark/run.mjs: every contender on payloads of 1 KiB to
// 1 MiB cut from the corpus (15 per size, cycled), level 3, in each mode. Filters for a quick run:
// BENCH_MODES=cs,ds BENCH_SIZES=1024 BENCH_LIBS=zstd-pool,zstd-napi,raw npm run bench (or npm run bench:quick)
import { mkdirSync, writeFileSync } from 'node:fs'
import { bench, describe } from 'vitest'

import { LEVEL, loadContenders, references, skipped } from './contenders.mjs'
import { payloads } from './corpus.mjs'
import { FLOOR, FLOOR_AGAIN, FLOOR_FRESH, floors } from './floor.mjs'

export const MODES = {
  cs: { label: 'sync compress', fn: 'compressSync', inFlight: 0 },
  ds: { label: 'sync decompress', fn: 'decompressSync', inFlight: 0 },
  ca: { label: 'async compress, 1 in flight', fn: 'compress', inFlight: 1 },
  da: { label: 'async decompress, 1 in flight', fn: 'decompress', inFlight: 1 },
  ca16: { label: 'async compress, 16 in flight', fn: 'compress', inFlight: 16 },
  da16: { label: 'async decompress, 16 in flight', fn: 'decompress', inFlight: 16 },
  ca64: { label: 'async compress, 64 in flight', fn: 'compress', inFlight: 64 },
  da64: { label: 'async decompress, 64 in flight', fn: 'decompress', inFlight: 64 },
} as const

const list = (value: string | undefined) => value?.split(',').filter(Boolean)
const modes = list(process.env.BENCH_MODES) ?? Object.keys(MODES)
const sizes = (list(process.env.BENCH_SIZES) ?? ['1024', '8192', '65536', '1048576']).map(Number)
const libs = list(process.env.BENCH_LIBS)
// The floor (raw libzstd, crates/addon/src/exports/floor.rs) runs in the sync modes unless BENCH_LIBS leaves out "raw".
const withFloor = !libs || libs.includes('raw')
const options = { time: Number(process.env.BENCH_TIME_MS ?? 500), warmupTime: Number(process.env.BENCH_WARMUP_MS ?? 100) }

const contenders: Record<string, any> = { ...(await loadContenders()), ...references }
for (const name of Object.keys(contenders)) if (libs && !libs.includes(name)) delete contenders[name]

const inputs = new Map(sizes.map((size) => [size, payloads(size)]))
const zstdPool = contenders['zstd-pool'] ?? (await loadContenders())['zstd-pool']
const frames = new Map(sizes.map((size) => [size, inputs.get(size)!.map((input) => zstdPool.compressSync(input))]))

// What each contender's own output weighs: the compression ratio at each size.
const ratios: Record<string, Record<number, number>> = {}
for (const [name, contender] of Object.entries(contenders)) {
  const encode = contender.encode ?? contender.compressSync ?? contender.compress
  if (!encode || name.includes('pooling off')) continue
  ratios[name] = {}
  for (const size of sizes) {
    let compressed = 0
    for (const input of inputs.get(size)!) compressed += (await encode(input)).length
    ratios[name][size] = (size * inputs.get(size)!.length) / compressed
  }
}
// A filtered (quick) run leaves the full run's record alone.
if (!process.env.BENCH_MODES && !process.env.BENCH_SIZES && !process.env.BENCH_LIBS) {
  const resultsDir = new URL('./results/', import.meta.url)
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(
    new URL(`context-${process.versions.node.split('.')[0]}.json`, resultsDir),
    JSON.stringify({ node: process.version, ratios, skipped }, null, 2),
  )
}

for (const mode of modes) {
  const { fn, inFlight } = MODES[mode as keyof typeof MODES]
  for (const size of sizes) {
    describe(`${mode} ${size}`, () => {
      // The floor, in the same describe as the contenders: before them and again after them
      // (the report takes the faster), then with a fresh context per call.
      const decoding = fn.startsWith('de')
      const floor = inFlight === 0 && withFloor ? floors(!decoding, (decoding ? frames : inputs).get(size)!, LEVEL) : undefined
      if (floor) bench(FLOOR, floor[FLOOR], options)
      for (const [name, contender] of Object.entries(contenders)) {
        const call = contender[fn]
        if (!call) continue
        const data = fn.startsWith('de')
          ? contender.encode
            ? inputs.get(size)!.map(contender.encode)
            : frames.get(size)!
          : inputs.get(size)!
        let i = 0
        const hooks = { setup: contender.setup, teardown: contender.teardown }
        if (inFlight === 0) {
          bench(name, () => void call(data[i++ % data.length]), { ...options, ...hooks })
        } else {
          bench(
            name,
            async () => {
              const batch = new Array(inFlight)
              for (let j = 0; j < inFlight; j++) batch[j] = call(data[i++ % data.length])
              await Promise.all(batch)
            },
            { ...options, ...hooks },
          )
        }
      }
      if (floor) bench(FLOOR_AGAIN, floor[FLOOR], options)
      if (floor) bench(FLOOR_FRESH, floor[FLOOR_FRESH], options)
    })
  }
}
