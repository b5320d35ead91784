// Random reads of a seekable file (docs/seekable.md): 64 KiB at a random position of a 256 MiB
// file of 1 MiB frames, read by zstd-pool's `openSeekable(fileHandle)` and `read`, against getting
// the same bytes without the seek table (decompressing the whole file, or decoding a stream up to
// the range), and against pyzstd's `SeekableZstdFile` (`seek` and `read`) timed inside Python, in
// a process started once; beside them, the decode of a read's frame alone (`decompress` of its
// bytes in memory). Cold: a reader opened for the read (the file opened, its seek table
// read, one read); steady: reads on a reader opened before them, at positions spread over all
// the frames, so that most reads miss the reader's cache of decoded frames. Every contender reads
// the same positions in a round, the contenders interleaved (in another order each round); each
// cell is the median of its rounds' mean time per read. Every read's bytes are compared with the
// content (pyzstd's through their SHA-256), outside the timings.
// Run by `npm run bench`; alone: node --expose-gc benchmark/seekable.mjs [--quick]
// (--quick: a smaller file, fewer rounds, printed only).
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { open, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

import { jsonRecords } from '../__test__/records.mjs'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))

const QUICK = process.argv.includes('--quick')
/** The report's file: 256 frames, so that a reader's cache (8 frames by default) holds few. */
const SIZE = (QUICK ? 32 : 256) << 20
const FRAME_SIZE = 1 << 20
const LEVEL = 3
const LENGTH = 64 << 10
const ROUNDS = Number(process.env.BENCH_SEEKABLE_ROUNDS ?? (QUICK ? 3 : 15))
/** Reads per contender per round: steady reads on an open reader, cold reads, and reads through
 * the whole file (each decodes up to 256 MiB, so there are fewer of them). */
const STEADY_READS = 32
const COLD_READS = 8
const WHOLE_READS = 2
/** The decoded frames a reader keeps: `openSeekable`'s default `cacheFrames` (seekable.js). */
const CACHE_FRAMES = 8

/** A deterministic generator of integers below `n`. */
function generator(seed) {
  let state = seed
  return (n) => {
    state = (state * 1103515245 + 12345) & 0x7fffffff
    return state % n
  }
}

/** `size` bytes of content of the kind such files hold: pieces of 4 to 64 KiB cut at random
 * offsets of the corpus's files (text, HTML, URLs, a PDF, a JPEG, protobuf), and in between runs
 * of JSON log records, each run drawn with its own seed, so that no frame repeats another. */
export function content(size) {
  const dir = fileURLToPath(new URL('../__test__/corpus', import.meta.url))
  const files = readdirSync(dir)
    .sort()
    .map((name) => readFileSync(join(dir, name)))
  const next = generator(7)
  const out = Buffer.allocUnsafe(size)
  let at = 0
  let seed = 1
  while (at < size) {
    let piece
    if (next(3) === 0) {
      piece = Buffer.from(`${jsonRecords(16 + next(240), seed++).join('\n')}\n`)
    } else {
      const file = files[next(files.length)]
      const length = (4 << 10) + next(60 << 10)
      const offset = next(Math.max(1, file.length - length))
      piece = file.subarray(offset, offset + length)
    }
    at += piece.copy(out, at)
  }
  return out
}

/** pyzstd's side: reads the positions it is sent on stdin (a JSON line), cold or on an open
 * file, and answers with the time of each read and the SHA-256 of its bytes. */
const PYTHON = `
import hashlib, json, sys, time
import pyzstd

path = sys.argv[1]
print(json.dumps({"version": pyzstd.__version__, "zstd": pyzstd.zstd_version}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    length = job["length"]
    times, digests = [], []
    if job["cold"]:
        for position in job["positions"]:
            start = time.perf_counter()
            f = pyzstd.SeekableZstdFile(path)
            f.seek(position)
            data = f.read(length)
            times.append(time.perf_counter() - start)
            f.close()
            digests.append(hashlib.sha256(data).hexdigest())
    else:
        f = pyzstd.SeekableZstdFile(path)
        for position in job["positions"]:
            start = time.perf_counter()
            f.seek(position)
            data = f.read(length)
            times.append(time.perf_counter() - start)
            digests.append(hashlib.sha256(data).hexdigest())
        f.close()
    print(json.dumps({"times": times, "digests": digests}), flush=True)
`

/** Python's environment with pyzstd, which .ci/run installs (pinned) into .tools/pypkgs. */
const pythonEnv = { ...process.env, PYTHONPATH: join(root, '.tools/pypkgs') }

/** Why pyzstd cannot be measured here, or undefined when it can. */
function pyzstdMissing() {
  const ran = spawnSync('python3', ['-c', 'import pyzstd'], { env: pythonEnv, encoding: 'utf8' })
  if (ran.error) return `no python3 (${ran.error.code})`
  if (ran.status !== 0) return 'pyzstd is not installed (.ci/run installs it into .tools/pypkgs)'
  return undefined
}

/** The pyzstd process, started once: `run(cold, positions)` gives each read's time (ms) and
 * digest. */
async function startPyzstd(path) {
  const child = spawn('python3', ['-c', PYTHON, path], { env: pythonEnv, stdio: ['pipe', 'pipe', 'inherit'] })
  // A process that died is reported by the answer that does not come, not by the write to it.
  child.stdin.on('error', () => {})
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const answer = async () => {
    const { value, done } = await lines.next()
    if (done) throw new Error(`the pyzstd process ended (exit code ${child.exitCode})`)
    return JSON.parse(value)
  }
  const { version, zstd } = await answer()
  return {
    name: `pyzstd ${version} (libzstd ${zstd})`,
    run: async (cold, positions) => {
      child.stdin.write(`${JSON.stringify({ cold, length: LENGTH, positions })}\n`)
      const { times, digests } = await answer()
      return { times: times.map((seconds) => seconds * 1000), digests }
    },
    stop: () => child.kill(),
  }
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

/** Bytes `position` to `position + length` of the file, decoded as a stream until they are out:
 * the best a reader without the seek table does (on average, half the file). */
async function streamToRange(zstd, path, position, length) {
  // 1 MiB pieces of the file: fewer hops to the threadpool than fs's default 64 KiB.
  const source = createReadStream(path, { highWaterMark: 1 << 20 })
  const decoder = zstd.createDecompressStream()
  source.pipe(decoder)
  const out = Buffer.allocUnsafe(length)
  let at = 0
  let got = 0
  try {
    for await (const chunk of decoder) {
      const from = Math.max(0, position - at)
      const to = Math.min(chunk.length, position + length - at)
      if (to > from) got += chunk.copy(out, got, from, to)
      at += chunk.length
      if (got === length) break
    }
  } finally {
    source.destroy()
    decoder.destroy()
  }
  return out.subarray(0, got)
}

/** How many of a round's steady reads need a frame the reader does not keep, the reader keeping
 * the `kept` most recently used (as seekable.js does). */
function missesOf(positions, kept) {
  const recent = []
  let misses = 0
  for (const position of positions) {
    const first = Math.floor(position / FRAME_SIZE)
    const last = Math.floor((position + LENGTH - 1) / FRAME_SIZE)
    let missed = false
    for (let frame = first; frame <= last; frame++) {
      const at = recent.indexOf(frame)
      if (at === -1) missed = true
      else recent.splice(at, 1)
      recent.push(frame)
      if (recent.length > kept) recent.shift()
    }
    if (missed) misses++
  }
  return misses
}

const median = (values) => [...values].sort((a, b) => a - b)[(values.length - 1) >> 1]
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length

export async function measureSeekable() {
  const zstd = require('../main.js')
  // What else ran on the machine: its figures are not comparable to those of a quiet one.
  const loadBefore = loadavg()[0]
  const started = performance.now()
  const data = content(SIZE)
  const file = await zstd.compressSeekable(data, { frameSize: FRAME_SIZE, level: LEVEL })
  const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-bench-seekable-'))
  const path = join(dir, 'data.zst')
  writeFileSync(path, file)
  const compressed = file.length
  // Each frame's bytes, for the decode alone (the part of a read that is not I/O or bookkeeping).
  const frames = []
  for (let at = 0; frames.length < Math.ceil(SIZE / FRAME_SIZE); ) {
    const { compressedSize } = zstd.frameInfo(file.subarray(at), { maxFrames: 1 }).frames[0]
    frames.push(file.subarray(at, at + compressedSize))
    at += compressedSize
  }
  const label = QUICK ? `seekable (quick: a ${SIZE >> 20} MiB file, not the report's 256 MiB)` : 'seekable'
  console.log(
    `${label}: ${SIZE >> 20} MiB of content in ${(compressed / 2 ** 20).toFixed(1)} MiB (ratio ${(SIZE / compressed).toFixed(2)}), ` +
      `${Math.ceil(SIZE / FRAME_SIZE)} frames, made in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  )
  const missing = pyzstdMissing()
  if (missing) console.log(`seekable: pyzstd skipped: ${missing}`)
  const pyzstd = missing ? undefined : await startPyzstd(path)
  const expected = (position) => data.subarray(position, position + LENGTH)
  /** A read checked against the content: a benchmark that reads wrong bytes measures nothing. */
  const check = (name, position, bytes) => {
    if (!expected(position).equals(bytes)) throw new Error(`${name} read wrong bytes at ${position}`)
  }
  /** Times each read of `positions` by `read` (ms), checking its bytes after it. */
  const timed = async (name, positions, read) => {
    const times = []
    for (const position of positions) {
      const start = performance.now()
      const bytes = await read(position)
      times.push(performance.now() - start)
      check(name, position, bytes)
    }
    return times
  }
  // The contenders of a round, each given the round's positions: the steady ones read them all,
  // the cold ones the first COLD_READS, the whole-file ones the first WHOLE_READS.
  const cells = {
    'zstd-pool, cold': async (positions) => {
      const times = []
      for (const position of positions.slice(0, COLD_READS)) {
        const start = performance.now()
        const handle = await open(path)
        const reader = await zstd.openSeekable(handle)
        const bytes = await reader.read(position, LENGTH)
        times.push(performance.now() - start)
        reader.close()
        await handle.close()
        check('zstd-pool', position, bytes)
      }
      return times
    },
    'zstd-pool, steady': async (positions) => {
      const handle = await open(path)
      const reader = await zstd.openSeekable(handle)
      try {
        return await timed('zstd-pool', positions, (position) => reader.read(position, LENGTH))
      } finally {
        reader.close()
        await handle.close()
      }
    },
    'zstd-pool, decode only': async (positions) => {
      const times = []
      for (const position of positions) {
        const frame = Math.floor(position / FRAME_SIZE)
        const start = performance.now()
        const decoded = await zstd.decompress(frames[frame])
        times.push(performance.now() - start)
        if (!decoded.equals(data.subarray(frame * FRAME_SIZE, (frame + 1) * FRAME_SIZE)))
          throw new Error(`frame ${frame} decoded to other bytes`)
      }
      return times
    },
    'whole file, decompress': (positions) =>
      timed('decompress', positions.slice(0, WHOLE_READS), async (position) => {
        const whole = await zstd.decompress(await readFile(path))
        return whole.subarray(position, position + LENGTH)
      }),
    'whole file, stream to the range': (positions) =>
      timed('the stream', positions.slice(0, WHOLE_READS), (position) => streamToRange(zstd, path, position, LENGTH)),
  }
  if (pyzstd) {
    const viaPython = (cold) => async (positions) => {
      const chosen = cold ? positions.slice(0, COLD_READS) : positions
      const { times, digests } = await pyzstd.run(cold, chosen)
      chosen.forEach((position, i) => {
        if (digests[i] !== sha256(expected(position))) throw new Error(`pyzstd read other bytes at ${position}`)
      })
      return times
    }
    cells['pyzstd, cold'] = viaPython(true)
    cells['pyzstd, steady'] = viaPython(false)
  }
  const names = Object.keys(cells)
  const perRound = Object.fromEntries(names.map((name) => [name, []]))
  const reads = Object.fromEntries(names.map((name) => [name, 0]))
  const positionsOf = (round) => {
    const next = generator(1000 + round)
    return Array.from({ length: STEADY_READS }, () => next(SIZE - LENGTH + 1))
  }
  let misses = 0
  try {
    // A warm-up round, not counted: code compiled, pyzstd imported, the file in the page cache.
    for (const name of names) await cells[name](positionsOf(-1).slice(0, 2))
    for (let round = 0; round < ROUNDS; round++) {
      const positions = positionsOf(round)
      misses += missesOf(positions, CACHE_FRAMES)
      // Each round in another order, so that no contender always follows the same one.
      const order = names.map((_, i) => names[(i + round) % names.length])
      for (const name of order) {
        // The garbage of the whole-file reads (256 MiB each) collected outside every timing.
        globalThis.gc?.()
        const times = await cells[name](positions)
        perRound[name].push(mean(times))
        reads[name] += times.length
      }
    }
  } finally {
    pyzstd?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  const cell = (name) => (perRound[name] ? { ms: median(perRound[name]), reads: reads[name], rounds: perRound[name] } : undefined)
  const result = {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    quick: QUICK,
    size: SIZE,
    compressed,
    level: LEVEL,
    frameSize: FRAME_SIZE,
    frames: Math.ceil(SIZE / FRAME_SIZE),
    length: LENGTH,
    cacheFrames: CACHE_FRAMES,
    rounds: ROUNDS,
    cores: availableParallelism(),
    load: [loadBefore, loadavg()[0]],
    steadyMisses: misses,
    pyzstd: pyzstd ? pyzstd.name : undefined,
    pyzstdSkipped: missing,
    cells: Object.fromEntries(names.map((name) => [name, cell(name)])),
  }
  for (const [name, { ms, reads: count }] of Object.entries(result.cells))
    console.log(`${label}: ${name}: ${timeLabel(ms)} per read (median of ${ROUNDS} rounds, ${count} reads)`)
  console.log(
    `${label}: steady reads that needed a frame the reader did not keep: ${misses} of ${result.cells['zstd-pool, steady'].reads}`,
  )
  if (!QUICK) writeFileSync(new URL('./results/seekable.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

const timeLabel = (ms) =>
  ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(0)} µs`
const times = (ratio) => (ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2))

/** The report's section (benchmark/report.mjs). */
export function seekableSection(result) {
  const { cells } = result
  const ms = (name) => cells[name]?.ms
  const row = (what, cold, steady) =>
    `| ${what} | ${cells[cold] ? timeLabel(ms(cold)) : '–'} | ${cells[steady] ? timeLabel(ms(steady)) : '–'} | ${[cold, steady]
      .filter((name) => cells[name])
      .map((name) => cells[name].reads)
      .join(' + ')} |`
  const steadyReads = cells['zstd-pool, steady'].reads
  const lines = [
    '## Random reads of a seekable file',
    '',
    `\`benchmark/seekable.mjs\`: ${result.size >> 20} MiB of content (pieces of 4 to 64 KiB cut at random offsets of the corpus's files, with runs`,
    `of JSON log records between them), written by \`compressSeekable\` in frames of ${result.frameSize >> 20} MiB (level ${result.level}, with checksums) to a`,
    `temporary file: ${(result.compressed / 2 ** 20).toFixed(1)} MiB, a ratio of ${(result.size / result.compressed).toFixed(2)}, ${result.frames} frames. Each read asks for ${result.length >> 10} KiB at a random position (1 read`,
    `in ${result.frameSize / result.length} crosses into a second frame). Cold: a reader opened for the read (the file opened, its seek table read, one read);`,
    'steady: reads on a reader opened before them. Every contender reads the same positions in a round; each cell is the median',
    `of ${result.rounds} rounds of the mean time per read, the contenders interleaved, in another order each round. On ${result.node} (${result.date});`,
    result.pyzstd
      ? `${result.pyzstd} in a Python process started once, timed inside Python (\`time.perf_counter\`).`
      : `pyzstd not measured: ${result.pyzstdSkipped}.`,
    "Every read's bytes are checked against the content. The file is in the page cache: cold means a new reader, not a cold disk.",
    `The 1-minute load average was ${result.load[0].toFixed(1)} when the section started and ${result.load[1].toFixed(1)} when it ended (its own reads add about 1), on ${result.cores} cores.`,
    '',
    '| how the 64 KiB are read | cold, per read | steady, per read | reads (cold + steady) |',
    '|---|---:|---:|---:|',
    row('zstd-pool: `openSeekable(fileHandle)`, `read(position, 65536)`', 'zstd-pool, cold', 'zstd-pool, steady'),
    row("zstd-pool's decode alone: `decompress` of the read's (first) frame, from memory", undefined, 'zstd-pool, decode only'),
  ]
  if (result.pyzstd)
    lines.push(row('pyzstd: `SeekableZstdFile(path)`, `seek(position)`, `read(65536)`', 'pyzstd, cold', 'pyzstd, steady'))
  lines.push(
    row('without the seek table: `readFile`, `decompress` of the whole file, the range of it', 'whole file, decompress'),
    row('without the seek table: `createDecompressStream`, stopped once the range is out', 'whole file, stream to the range'),
    '',
    `Of the ${steadyReads} steady reads, ${result.steadyMisses} needed a frame that was not among the ${result.cacheFrames} decoded frames the reader keeps`,
    '(`cacheFrames`, the default; counted from the positions). Without the table, decompressing the whole file takes',
    `${times(ms('whole file, decompress') / ms('zstd-pool, cold'))}x the time of a cold zstd-pool read and ${times(ms('whole file, decompress') / ms('zstd-pool, steady'))}x that of a steady one; the stream (half the file decoded on average), ` +
      `${times(ms('whole file, stream to the range') / ms('zstd-pool, cold'))}x and ${times(ms('whole file, stream to the range') / ms('zstd-pool, steady'))}x.`,
  )
  if (result.pyzstd)
    lines.push(
      `zstd-pool's time over pyzstd's: ${(ms('zstd-pool, cold') / ms('pyzstd, cold')).toFixed(2)}x cold, ${(ms('zstd-pool, steady') / ms('pyzstd, steady')).toFixed(2)}x steady (above 1, pyzstd is faster). A read`,
      "by zstd-pool decodes each frame it covers whole, to keep it, in two trips to the threadpool (the file's read, the",
      "decode); pyzstd's decodes from the frame's start to the range's end, on the calling thread, and keeps no decoded frame.",
    )
  return lines
}

if (import.meta.url === `file://${process.argv[1]}`) await measureSeekable()
