// Dictionaries on small records: compressing ~250-byte JSON records with and without a trained
// dictionary (ratio and time per call), and what building a Dictionary costs against reusing one.
// And training: the time and the ratio it gives for the package's defaults, tuned parameters
// and the zstd tool's, on the same samples.
// Run by `npm run bench`; alone: node benchmark/dictionary.mjs
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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
  const bytes = zstd.trainDictionarySync(training, { size: 16384 })
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
  const trainingTable = measureTraining(training, records)
  const result = {
    node: process.version,
    date: new Date().toISOString().slice(0, 10),
    training: trainingTable,
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

/** Median of `runs` timings of `train()` (one run for a training over 2 s): its milliseconds, and
 * the last dictionary it made. */
function timed(train, runs = 3) {
  const times = []
  let bytes
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    bytes = train()
    times.push(performance.now() - start)
    if (times[0] > 2000) break
  }
  times.sort((a, b) => a - b)
  return { ms: times[Math.floor((times.length - 1) / 2)], bytes }
}

/** Training 16 KiB dictionaries on `samples`, each measured by its time and by the ratio of
 * `heldOut` (one frame each, level 3) with it: the package's defaults, tuned parameters, and the
 * zstd tool given the same samples as files (its times include starting it and reading them). */
function measureTraining(samples, heldOut) {
  const size = 16384
  const raw = heldOut.reduce((sum, record) => sum + record.length, 0)
  const ratio = (bytes) => {
    const dictionary = new zstd.Dictionary(bytes)
    return raw / heldOut.reduce((sum, record) => sum + zstd.compressSync(record, { dictionary }).length, 0)
  }
  const rows = []
  const ours = (name, options) => {
    const { ms, bytes } = timed(() => zstd.trainDictionarySync(samples, { size, ...options }))
    rows.push({ name, ms, ratio: ratio(bytes), parameters: bytes.parameters })
    return bytes.parameters
  }
  const chosen = ours('zstd-pool, defaults (fastCover, optimizer over k, 4 steps)', {})
  const { k, d } = chosen
  ours(`zstd-pool, k=${k} d=${d} given back (no optimizer)`, { k, d })
  ours('zstd-pool, optimizer with 40 steps on 2 threads', { steps: 40, threads: 2 })
  ours('zstd-pool, cover (optimizer over k, 4 steps)', { algorithm: 'cover' })
  const tool = spawnSync('zstd', ['--version'], { encoding: 'utf8' })
  let toolVersion = null
  if (tool.status === 0) {
    toolVersion = tool.stdout.match(/v[\d.]+/)?.[0] ?? tool.stdout.trim()
    const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-train-'))
    const files = samples.map((sample, i) => {
      const file = join(dir, `sample-${String(i).padStart(5, '0')}`)
      writeFileSync(file, sample)
      return file
    })
    const out = join(dir, 'dictionary')
    const theirs = (name, option) => {
      const { ms, bytes } = timed(() => {
        execFileSync('zstd', ['-q', '-f', option, ...files, '-o', out, `--maxdict=${size}`])
        return readFileSync(out)
      })
      rows.push({ name, ms, ratio: ratio(bytes) })
    }
    theirs('zstd tool, `--train`', '--train')
    theirs(`zstd tool, \`--train-fastcover=k=${k},d=${d},f=20,accel=1\``, `--train-fastcover=k=${k},d=${d},f=20,accel=1`)
    theirs('zstd tool, `--train-cover`', '--train-cover')
    rmSync(dir, { recursive: true })
  } else {
    console.log('dictionary: training: no zstd tool on this machine; its rows are left out')
  }
  for (const row of rows) console.log(`dictionary: training: ${row.name}: ${row.ms.toFixed(0)} ms, ratio ${row.ratio.toFixed(3)}`)
  return { samples: samples.length, heldOut: heldOut.length, size, toolVersion, rows }
}

if (import.meta.url === `file://${process.argv[1]}`) measureDictionary()

/** The report's training table: time and ratio for the package's defaults, tuned parameters and
 * the tool's. */
export function trainingSection({ samples, heldOut, size, toolVersion, rows }) {
  const tool = toolVersion
    ? `the \`zstd\` tool ${toolVersion} given the same samples as files (its times include starting it and reading ${samples} files)`
    : 'no `zstd` tool on the machine that ran it'
  const lines = [
    '### Training',
    '',
    `${size}-byte dictionaries trained on ${samples} JSON records, each rated by the ratio of ${heldOut} other records compressed one frame each ` +
      `at level 3 with it; times are the median of 3 runs (one for a training over 2 s), sync; ${tool}.`,
    '',
    '| training | time | ratio |',
    '|---|---:|---:|',
  ]
  for (const row of rows) lines.push(`| ${row.name} | ${row.ms.toFixed(0)} ms | ${row.ratio.toFixed(3)} |`)
  return lines
}
