// Dictionaries on small records: compressing ~300-byte JSON records with and without a trained
// dictionary (ratio and time per call), and what building a Dictionary costs against reusing one.
// Run by `npm run bench`; alone: node benchmark/dictionary.mjs
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const zstd = require('../index.js')

/** The records __test__/helpers.ts makes: similar shapes, varying values. */
function jsonRecords(count, seed) {
  let state = seed
  const next = (n) => {
    state = (state * 1103515245 + 12345) & 0x7fffffff
    return state % n
  }
  const actions = ['login', 'logout', 'view_item', 'add_to_cart', 'checkout', 'search']
  const countries = ['FR', 'DE', 'US', 'JP', 'BR', 'IN', 'GB']
  return Array.from({ length: count }, (_, i) =>
    Buffer.from(
      JSON.stringify({
        id: 100000 + i,
        timestamp: `2026-11-30T${String(next(24)).padStart(2, '0')}:${String(next(60)).padStart(2, '0')}:00Z`,
        user: { id: `user_${next(5000)}`, country: countries[next(countries.length)], premium: next(2) === 1 },
        event: { action: actions[next(actions.length)], durationMs: next(5000), path: `/items/${next(900)}/details` },
        client: { agent: 'Mozilla/5.0 (X11; Linux x86_64)', version: `4.${next(20)}.${next(10)}` },
      }),
    ),
  )
}

function micros(fn, ms = 400) {
  let calls = 0
  const end = performance.now() + ms
  const start = performance.now()
  while (performance.now() < end) fn(calls++)
  return ((performance.now() - start) * 1000) / calls
}

export function measureDictionary() {
  const training = jsonRecords(5000, 1)
  const records = jsonRecords(1000, 2)
  const trainStart = performance.now()
  const bytes = zstd.trainDictionary(training, { size: 16384 })
  const trainMs = performance.now() - trainStart
  const dictionary = new zstd.Dictionary(bytes)
  const average = records.reduce((sum, record) => sum + record.length, 0) / records.length
  const rows = []
  for (const [name, options] of [['no dictionary', {}], ['trained dictionary', { dictionary }]]) {
    const frames = records.map((record) => zstd.compressSync(record, options))
    const ratio = records.reduce((sum, r) => sum + r.length, 0) / frames.reduce((sum, f) => sum + f.length, 0)
    const compress = micros((i) => zstd.compressSync(records[i % records.length], options))
    const decompress = micros((i) => zstd.decompressSync(frames[i % frames.length], options))
    rows.push({ name, ratio, compress, decompress })
    console.log(`dictionary: ${name}: ratio ${ratio.toFixed(2)}, compress ${compress.toFixed(2)} µs, decompress ${decompress.toFixed(2)} µs`)
  }
  const build = micros(() => new zstd.Dictionary(bytes), 1000)
  const buildAndUse = micros((i) => zstd.compressSync(records[i % records.length], { dictionary: new zstd.Dictionary(bytes) }), 1000)
  console.log(`dictionary: building a Dictionary ${build.toFixed(1)} µs; a call that builds its own ${buildAndUse.toFixed(1)} µs`)
  const result = { node: process.version, records: records.length, average, dictionarySize: bytes.length, trainMs, rows, build, buildAndUse }
  writeFileSync(new URL('./results/dictionary.json', import.meta.url), JSON.stringify(result, null, 2) + '\n')
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) measureDictionary()
