// The JavaScript half of `npm run fuzz`: mutates real zstd frames (bit flips, truncation,
// splicing, giant declared sizes, skippable frames with absurd lengths) and feeds them to the
// public API, sync and async, checking that every call returns a Buffer within its limit or
// throws an Error with a code. `node --expose-gc scripts/fuzz.mjs [SECONDS] [SEED]`
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const root = fileURLToPath(new URL('..', import.meta.url))

function seeds() {
  const corpus = readdirSync(`${root}__test__/corpus`)
    .sort()
    .map((name) => readFileSync(`${root}__test__/corpus/${name}`))
  const made = corpus.flatMap((data, i) => {
    const piece = data.subarray(0, 500 + i * 2000)
    return [zstd.compressSync(piece, [-3, 1, 3, 9, 19][i % 5]), zstd.compressSync(piece, { level: 3, checksum: true })]
  })
  const tool = readdirSync(`${root}fuzz/seeds`).map((name) => readFileSync(`${root}fuzz/seeds/${name}`))
  return [...made, ...tool]
}

/** xorshift, so that a seed replays a run. */
function generator(seed) {
  let state = BigInt(seed) | 1n
  return (n) => {
    state ^= (state << 13n) & 0xffffffffffffffffn
    state ^= state >> 7n
    state ^= (state << 17n) & 0xffffffffffffffffn
    return Number(state % BigInt(n))
  }
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

function judge(outcome, options, counts) {
  if (outcome instanceof Error) {
    if (typeof outcome.code !== 'string') throw new Error(`an error without a code: ${outcome.stack}`)
    counts[outcome.code] = (counts[outcome.code] ?? 0) + 1
  } else {
    if (!Buffer.isBuffer(outcome)) throw new Error('a result that is not a Buffer')
    if (outcome.length > options.maxOutputLength) throw new Error('a result over maxOutputLength')
    counts.decoded = (counts.decoded ?? 0) + 1
  }
}

/** Runs `iterations` mutated inputs (or until `deadline`), a quarter of them through the async API. */
export async function fuzz({ seed = 1, iterations = Infinity, deadline = Infinity } = {}) {
  const below = generator(seed)
  const frames = seeds()
  const counts = {}
  let executions = 0
  while (executions < iterations && Date.now() < deadline) {
    const input = mutate(below, frames[below(frames.length)], frames[below(frames.length)])
    const options = { maxOutputLength: [1024, 1 << 20, 64 << 20][below(3)], windowLogMax: [23, 27, 31][below(3)] }
    if (below(4) === 0) {
      judge(await zstd.decompress(input, options).catch((error) => error), options, counts)
    } else {
      let outcome
      try {
        outcome = zstd.decompressSync(input, options)
      } catch (error) {
        outcome = error
      }
      judge(outcome, options, counts)
    }
    executions++
  }
  return { executions, counts }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.argv[2] ?? 60)
  const seed = Number(process.argv[3] ?? Date.now())
  console.log(`fuzzing the public API for ${seconds} s, seed ${seed}`)
  const started = Date.now()
  const { executions, counts } = await fuzz({ seed, deadline: started + seconds * 1000 })
  console.log(`${executions} inputs (${Math.round(executions / ((Date.now() - started) / 1000))}/s); outcomes:`, counts)
  console.log('pools:', JSON.stringify(zstd.poolStats().decompressors))
}
