// Dictionaries on small records: compressing ~250-byte JSON records with and without a trained
// dictionary (ratio and time per call), and what building a Dictionary costs against reusing one.
// Run by `npm run bench`; alone: node benchmark/dictionary.mjs
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

import { jsonRecords } from '../__test__/records.mjs'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')

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
  for (const [name, options] of [
    ['no dictionary', {}],
    ['trained dictionary', { dictionary }],
  ]) {
    const frames = records.map((record) => zstd.compressSync(record, options))
    const ratio = records.reduce((sum, r) => sum + r.length, 0) / frames.reduce((sum, f) => sum + f.length, 0)
    const compress = micros((i) => zstd.compressSync(records[i % records.length], options))
    const decompress = micros((i) => zstd.decompressSync(frames[i % frames.length], options))
    rows.push({ name, ratio, compress, decompress })
    console.log(
      `dictionary: ${name}: ratio ${ratio.toFixed(2)}, compress ${compress.toFixed(2)} µs, decompress ${decompress.toFixed(2)} µs`,
    )
  }
  const build = micros(() => new zstd.Dictionary(bytes), 1000)
  const buildAndUse = micros(
    (i) => zstd.compressSync(records[i % records.length], { dictionary: new zstd.Dictionary(bytes) }),
    1000,
  )
  console.log(`dictionary: building a Dictionary ${build.toFixed(1)} µs; a call that builds its own ${buildAndUse.toFixed(1)} µs`)
  const result = {
    node: process.version,
    records: records.length,
    average,
    dictionarySize: bytes.length,
    trainMs,
    rows,
    build,
    buildAndUse,
  }
  writeFileSync(new URL('./results/dictionary.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) measureDictionary()
