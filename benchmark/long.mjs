// `npm run bench:long`: what long-distance matching and patch-from buy, against the zstd tool
// doing the same on the same input. Prints a Markdown table for each (docs/parameters.md quotes them).
//
// Long-distance matching: the corpus (2.9 MB) repeated 16 times with a few edits in each copy,
// as backups or logs repeat themselves far apart: each copy lies beyond the 2 MiB window of
// level 3, so the regular match finder never sees the one before it.
// Patch-from: a file from the corpus and a new version of it with edits spread through it, and
// the whole corpus (as one 2.9 MB file) and a new version of it.
//
// Speeds are the median of BENCH_ROUNDS (5) runs, in MB/s of the uncompressed data; the zstd
// tool's include its start-up and file I/O (about 2 ms, a tmpfs where available).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'

import { edited } from '../__test__/records.mjs'
import { compressSync, decompressSync } from '../main.js'
import { repeated } from './corpus.mjs'

const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const directory = mkdtempSync(`${process.platform === 'linux' ? '/dev/shm' : tmpdir()}/zstd-pool-long-`)
const path = (name, data) => {
  const file = `${directory}/${name}`
  if (data) writeFileSync(file, data)
  return file
}

/** The median time of `run()`, in ms. */
function time(run) {
  const times = []
  for (let i = 0; i < rounds; i++) {
    const start = performance.now()
    run()
    times.push(performance.now() - start)
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]
}

const zstd = (args) => execFileSync('zstd', ['-q', '-f', ...args], { maxBuffer: 1 << 30 })
const mbps = (bytes, ms) => (bytes / 1e6 / (ms / 1000)).toFixed(0)
const rows = []
const row = (...cells) => rows.push(`| ${cells.join(' | ')} |`)

/** Compresses `data` with our `options` and with the tool's `args`, checks both frames
 * decode, and adds a row for each. */
function compare(label, data, options, args, decodeOptions = {}, decodeArgs = []) {
  const ours = compressSync(data, options)
  const compressMs = time(() => compressSync(data, options))
  const decompressMs = time(() => decompressSync(ours, decodeOptions))
  if (!decompressSync(ours, decodeOptions).equals(data)) throw new Error(`${label}: our frame does not decode`)
  row(
    `${label}: zstd-pool`,
    ours.length,
    (data.length / ours.length).toFixed(1),
    mbps(data.length, compressMs),
    mbps(data.length, decompressMs),
  )
  const input = path('input', data)
  const output = path('input.zst')
  const theirsMs = time(() => zstd([...args, input, '-o', output]))
  const theirs = readFileSync(output)
  const theirsDecompressMs = time(() => zstd(['-d', ...decodeArgs, output, '-o', path('decoded')]))
  if (!readFileSync(path('decoded')).equals(data)) throw new Error(`${label}: the tool's frame does not decode`)
  // The reference's path, as the file name alone.
  const shown = args.map((arg) => arg.replace(`${directory}/`, ''))
  row(
    `${label}: zstd ${shown.join(' ')}`,
    theirs.length,
    (data.length / theirs.length).toFixed(1),
    mbps(data.length, theirsMs),
    mbps(data.length, theirsDecompressMs),
  )
}

const header = ['| | bytes | ratio | compress MB/s | decompress MB/s |', '|---|---:|---:|---:|---:|']
const version = execFileSync('zstd', ['--version'], { encoding: 'utf8' }).trim()
console.log(`zstd-pool against ${version}, Node ${process.version}, median of ${rounds} runs\n`)

// Long-distance matching.
const base = repeated(2_900_000)
const copies = Array.from({ length: 16 }, (_, i) => edited(base, 10 + i))
const large = Buffer.concat(copies)
console.log(`Long-distance matching: ${(large.length / 1e6).toFixed(1)} MB (the corpus 16 times, edited)\n`)
rows.push(...header)
compare('level 3', large, 3, ['-3'])
compare('level 3, long-distance matching, windowLog 27', large, { level: 3, enableLongDistanceMatching: true, windowLog: 27 }, [
  '-3',
  '--long=27',
])
compare('level 9', large, 9, ['-9'])
compare('level 9, long-distance matching, windowLog 27', large, { level: 9, enableLongDistanceMatching: true, windowLog: 27 }, [
  '-9',
  '--long=27',
])
console.log(`${rows.splice(0).join('\n')}\n`)

// Patch-from.
for (const [name, old] of [
  ['lcet10.txt (427 KB), 12 edits', readFileSync(new URL('../__test__/corpus/lcet10.txt', import.meta.url))],
  ['the corpus as one file (2.9 MB), 40 edits', repeated(2_900_000)],
]) {
  const next = edited(old, name.includes('12 edits') ? 12 : 40)
  const reference = path('old', old)
  console.log(`Patch-from: ${name}\n`)
  rows.push(...header)
  compare('level 3, alone', next, 3, ['-3'])
  for (const level of [3, 19])
    compare(
      `level ${level}, against the old version`,
      next,
      { level, prefix: old },
      [`-${level}`, `--patch-from=${reference}`],
      { prefix: old },
      [`--patch-from=${reference}`],
    )
  console.log(`${rows.splice(0).join('\n')}\n`)
}
rmSync(directory, { recursive: true, force: true })
