// The JavaScript half of `npm run fuzz`: mutates real zstd frames (bit flips, truncation,
// splicing, giant declared sizes, skippable frames with absurd lengths), some made with a
// dictionary, and feeds them to the public API: sync, async, and the Node and Web decompress
// streams in random chunks. Every call must return a Buffer within its limit or fail with an
// Error with a code, and a stream must give exactly what the one-shot call gives or fail too.
// Now and then a compress stream with random chunks and flushes must round-trip, and a seekable
// file with a mutated seek table must read right or fail with a code.
// `node --expose-gc scripts/fuzz.mjs [SECONDS [SEED [INPUTS]]]` (SECONDS 0: no time limit); the
// seed is random unless given, and a failure prints the command that replays it.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const root = fileURLToPath(new URL('..', import.meta.url))

const corpus = readdirSync(`${root}__test__/corpus`)
  .sort()
  .map((name) => readFileSync(`${root}__test__/corpus/${name}`))

/** Two trained dictionaries, from different corpus files. */
function dictionaries() {
  const largest = [...corpus].sort((a, b) => b.length - a.length)
  return largest.slice(0, 2).map((file) => {
    const samples = []
    for (let at = 0; at < Math.min(file.length, 64 * 1024); at += 256) samples.push(file.subarray(at, at + 256))
    return new zstd.Dictionary(zstd.trainDictionarySync(samples, { size: 4096 }))
  })
}

/** Frames in several modes, each with its dictionary (an index into `dicts`, or -1). */
function seeds(dicts) {
  const made = corpus.flatMap((data, i) => {
    const piece = data.subarray(0, 500 + i * 2000)
    const dictionary = i % dicts.length
    return [
      { frame: zstd.compressSync(piece, [-3, 1, 3, 9, 19][i % 5]), dictionary: -1 },
      { frame: zstd.compressSync(piece, { level: 3, checksum: true }), dictionary: -1 },
      { frame: zstd.compressSync(piece, { level: 3, dictionary: dicts[dictionary] }), dictionary },
    ]
  })
  const tool = readdirSync(`${root}fuzz/seeds`).map((name) => ({
    frame: readFileSync(`${root}fuzz/seeds/${name}`),
    dictionary: -1,
  }))
  return [...made, ...tool]
}

/** xorshift, so that a seed replays a run. */
function generator(seed) {
  let state = BigInt(seed) | 1n
  // Chunk lengths from 1 byte to 1 MiB, spread evenly over the powers of two.
  const below = (n) => {
    state ^= (state << 13n) & 0xffffffffffffffffn
    state ^= state >> 7n
    state ^= (state << 17n) & 0xffffffffffffffffn
    return Number(state % BigInt(n))
  }
  below.chunk = () => {
    const scale = 2 ** below(21)
    return scale + below(scale)
  }
  return below
}

function mutate(below, frame, other) {
  let out = Buffer.from(frame)
  for (let step = 0; step <= below(3); step++) {
    switch (below(8)) {
      case 0:
        for (let i = 0; i <= below(4) && out.length; i++) out[below(out.length)] ^= 1 << below(8)
        break
      case 1:
        out = out.subarray(0, below(out.length + 1))
        break
      case 2:
        out = Buffer.concat([out.subarray(0, below(out.length + 1)), other.subarray(below(other.length + 1))])
        break
      case 3:
        if (out.length > 5 && out.readUInt32LE(0) === 0xfd2fb528) {
          const giant = Buffer.alloc(8)
          giant.writeBigUInt64LE([2n ** 64n - 1n, 2n ** 40n, 2n ** 33n][below(3)])
          out = Buffer.concat([out.subarray(0, 4), Buffer.from([0xe0 | (out[4] & 7)]), giant, out.subarray(5)])
        }
        break
      case 4: {
        const skippable = Buffer.alloc(8)
        skippable.writeUInt32LE(0x184d2a50 + below(16))
        skippable.writeUInt32LE(0xffffff00 + below(256), 4)
        out = below(2) ? Buffer.concat([skippable, out]) : Buffer.concat([out, skippable])
        break
      }
      case 5:
        if (out.length) out[below(out.length)] = [0, 0xff, 0x7f, 0x80][below(4)]
        break
      default: {
        const at = below(out.length + 1)
        out = Buffer.concat([
          out.subarray(0, at),
          Buffer.from(Array.from({ length: 1 + below(16) }, () => below(256))),
          out.subarray(at),
        ])
      }
    }
  }
  return out
}

/** Fails the run unless `outcome` is a Buffer within the limit or an Error with a code. */
function judge(outcome, options) {
  if (outcome instanceof Error) {
    if (typeof outcome.code !== 'string') throw new Error(`an error without a code: ${outcome.stack}`)
    return outcome.code
  }
  if (!Buffer.isBuffer(outcome)) throw new Error('a result that is not a Buffer')
  if (outcome.length > options.maxOutputLength) throw new Error('a result over maxOutputLength')
  return 'decoded'
}

const settle = (promise) => promise.catch((error) => error)

/** Splits `input` into random chunks (a view of it, or a copy). */
function chunks(below, input) {
  const out = []
  for (let at = 0; at < input.length; ) {
    const end = Math.min(input.length, at + below.chunk())
    out.push(below(2) ? input.subarray(at, end) : Uint8Array.from(input.subarray(at, end)))
    at = end
  }
  return out
}

/** Decodes `input` through a Node or a Web decompress stream, in random chunks. */
async function streamed(below, input, options) {
  const parts = chunks(below, input)
  const run = async () => {
    if (below(2)) return buffer(Readable.from(parts).pipe(zstd.createDecompressStream(options)))
    const source = new ReadableStream({
      pull(controller) {
        if (parts.length) controller.enqueue(parts.shift())
        else controller.close()
      },
    })
    return buffer(source.pipeThrough(new zstd.ZstdDecompressionStream(options)))
  }
  let timer
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('a decompress stream hung for 30 s')), 30_000)
  })
  try {
    return await Promise.race([settle(run()), hang])
  } finally {
    clearTimeout(timer)
  }
}

/** Compresses `content` through a compress stream in random chunks with random flushes. */
async function compressedStream(below, content, options) {
  const stream = zstd.createCompressStream(options)
  const done = buffer(stream)
  for (const part of chunks(below, content)) {
    if (!stream.write(part)) await new Promise((resolve) => stream.once('drain', resolve))
    if (below(4) === 0) await new Promise((resolve) => stream.flush(resolve))
  }
  stream.end()
  return done
}

/** A seekable file of part of `content`, its seek table mutated (or spliced with `other`) or not:
 * a random read gives the content's bytes when it is intact, else those or a coded error. */
async function seekableCase(below, content, other, options) {
  const data = content.subarray(0, below.chunk())
  // Frames within maxOutputLength, which bounds each frame a reader decodes.
  const frameSize = 1 + below(Math.min(8192, options.maxOutputLength))
  const file = zstd.compressSeekableSync(data, { frameSize, level: 1, checksum: below(2) === 0 })
  const table = 17 + below(64)
  const intact = below(4) === 0
  const input = intact
    ? file
    : Buffer.concat([file.subarray(0, Math.max(0, file.length - table)), mutate(below, file.subarray(-table), other)])
  const opened = await settle(zstd.openSeekable(input, options))
  if (opened instanceof Error) {
    if (intact) throw opened
    judge(opened, options)
    return
  }
  const position = below(data.length + 10)
  const length = Math.min(below(20_000), options.maxOutputLength)
  const read = await settle(opened.read(position, length))
  if (intact && !(Buffer.isBuffer(read) && read.equals(data.subarray(position, position + length))))
    throw new Error(`a seekable read of ${length} at ${position} gave ${read.code ?? `${read.length} other bytes`}`)
  judge(read, options)
}

/** Runs `iterations` mutated inputs (or until `deadline`). */
export async function fuzz({ seed = 1, iterations = Infinity, deadline = Infinity } = {}) {
  const below = generator(seed)
  const dicts = dictionaries()
  const frames = seeds(dicts)
  const counts = { streamed: 0, batched: 0, 'stream compressed': 0, seekable: 0 }
  let executions = 0
  while (executions < iterations && Date.now() < deadline) {
    const base = frames[below(frames.length)]
    const input = mutate(below, base.frame, frames[below(frames.length)].frame)
    const options = { maxOutputLength: [1024, 1 << 20, 64 << 20][below(3)], windowLogMax: [23, 27, 30][below(3)] }
    // The frame's own dictionary most of the time, sometimes none or another.
    const dictionary = base.dictionary >= 0 && below(4) ? base.dictionary : below(3) - 1
    if (dictionary >= 0) options.dictionary = dicts[dictionary]
    const path = below(8)
    try {
      let whole
      if (path < 2) {
        whole = await settle(zstd.decompress(input, options))
      } else {
        try {
          whole = zstd.decompressSync(input, options)
        } catch (error) {
          whole = error
        }
      }
      const kind = judge(whole, options)
      counts[kind] = (counts[kind] ?? 0) + 1
      if (path >= 5) {
        // The same input through a stream: exactly the one-shot result, or a failure too.
        counts.streamed++
        const stream = await streamed(below, input, options)
        judge(stream, options)
        if (Buffer.isBuffer(whole) !== Buffer.isBuffer(stream) || (Buffer.isBuffer(whole) && !whole.equals(stream)))
          throw new Error(
            `the decoders disagree: one-shot ${whole.code ?? `${whole.length} bytes`}, stream ${stream.code ?? `${stream.length} bytes`}`,
          )
      }
      if (below(16) === 0) {
        // The same input twice in a batch: each exactly the one-shot result, or its failure.
        counts.batched++
        const batch = await settle(zstd.decompressMany([input, input], options))
        const items = Array.isArray(batch) ? batch : batch.results
        if (items?.length !== 2) throw new Error(`a batch failed as a whole: ${batch.code ?? batch}`)
        for (const item of items) {
          const same = Buffer.isBuffer(whole) ? Buffer.isBuffer(item) && item.equals(whole) : item.code === whole.code
          if (!same) throw new Error(`a batch disagrees with the one-shot call: ${item.code ?? `${item.length} bytes`}`)
        }
      }
      if (below(16) === 0) {
        counts.seekable++
        await seekableCase(below, corpus[below(corpus.length)], frames[below(frames.length)].frame, options)
      }
      if (below(64) === 0) {
        counts['stream compressed']++
        const content = corpus[below(corpus.length)].subarray(0, below.chunk())
        const level = [-3, 1, 3, 7][below(4)]
        const frame = await compressedStream(below, content, { level, checksum: below(2) === 0 })
        if (!zstd.decompressSync(frame).equals(content)) throw new Error('a stream-compressed frame decoded wrong')
      }
    } catch (error) {
      const file = `${root}target/fuzz-failures/js-seed-${seed}-input-${executions}.zst`
      mkdirSync(`${root}target/fuzz-failures`, { recursive: true })
      writeFileSync(file, input)
      console.error(
        `\nfuzz: input ${executions} of seed ${seed} failed (options ${JSON.stringify({ ...options, dictionary })}, path ${path}); ` +
          `the input is in ${file}\nreplay: node --expose-gc scripts/fuzz.mjs 0 ${seed} ${executions + 1}\n`,
      )
      throw error
    }
    executions++
  }
  return { executions, counts }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.argv[2] ?? 60)
  const seed = Number(process.argv[3] ?? Math.floor(Math.random() * 1e9))
  const iterations = Number(process.argv[4] ?? Infinity)
  console.log(`fuzzing the public API for ${seconds ? `${seconds} s` : 'no time limit'}, seed ${seed}`)
  const started = Date.now()
  const deadline = seconds ? started + seconds * 1000 : Infinity
  const { executions, counts } = await fuzz({ seed, iterations, deadline })
  const elapsed = (Date.now() - started) / 1000
  console.log(`${executions} inputs in ${elapsed.toFixed(0)} s (${Math.round(executions / elapsed)}/s); outcomes:`, counts)
  console.log('pools:', JSON.stringify(zstd.poolStats().decompressors))
}
