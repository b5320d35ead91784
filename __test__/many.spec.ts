import { availableParallelism } from 'node:os'

import { describe, expect, it } from 'vitest'

import {
  compressMany,
  compressManyPacked,
  compressManySync,
  compressSync,
  Dictionary,
  decompressMany,
  decompressManyPacked,
  decompressManySync,
  decompressSync,
  poolStats,
  trainDictionarySync,
} from 'zstd-pool'
import { corpus, jsonRecords, skipWithoutZstdCli, textOfLength, wasi, zstdPiped } from './helpers'

/** Messages of every size from nothing to 200 KiB, cut from the corpus. */
const messages = corpus.flatMap(({ data }, file) =>
  [0, 1, 100, 1024, 8192, 65536, 200 * 1024].map((size, i) => data.subarray(file * 97 + i, file * 97 + i + size)),
)

describe('compressMany and decompressMany', () => {
  it('give each message the frame compressSync gives it, in order, and back', async () => {
    const frames = await compressMany(messages, { level: 5, checksum: true })
    expect(frames).toHaveLength(messages.length)
    for (const [i, frame] of frames.entries()) {
      expect(frame.equals(compressSync(messages[i], { level: 5, checksum: true }))).toBe(true)
    }
    const contents = await decompressMany(frames)
    for (const [i, content] of contents.entries()) expect(content.equals(messages[i])).toBe(true)
    expect(compressManySync(messages, 5).map((frame) => decompressSync(frame).length)).toEqual(messages.map((m) => m.length))
    expect(decompressManySync(frames).every((content, i) => content.equals(messages[i]))).toBe(true)
  })

  it('give every small result whole and as a Buffer, however the results fill the slabs they share', async () => {
    // Incompressible messages of 0 to 5000 bytes: frames and contents of every size around 4 KiB,
    // below which results are carved from shared slabs of 8 KiB, and across their ends.
    const noise = Buffer.alloc(16384)
    for (let i = 0, x = 1; i < noise.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0
      noise[i] = x >>> 24
    }
    const inputs = Array.from({ length: 2000 }, (_, i) => noise.subarray((i * 7) % 10000, ((i * 7) % 10000) + ((i * 37) % 5001)))
    const frames = await compressMany(inputs)
    expect(frames.every((frame, i) => frame.equals(compressSync(inputs[i])))).toBe(true)
    const contents = await decompressMany(frames)
    expect(contents.every((content, i) => content.equals(inputs[i]))).toBe(true)
    expect([...frames, ...contents].every((result) => Object.getPrototypeOf(result) === Buffer.prototype)).toBe(true)
  })

  it('take every kind of input, and an empty list', async () => {
    const text = 'a message as a string'
    const inputs = [Buffer.from('buffer'), new Uint8Array([1, 2, 3]), new DataView(new ArrayBuffer(4)), new ArrayBuffer(2), text]
    const contents = await decompressMany(await compressMany(inputs))
    expect(contents.map((content) => content.length)).toEqual([6, 3, 4, 2, Buffer.byteLength(text)])
    expect(await compressMany([])).toEqual([])
    expect(decompressManySync([])).toEqual([])
  })

  it('copy the messages when called: changing them afterwards changes nothing', async () => {
    const inputs = [Buffer.from('first message'), Buffer.from('second message')]
    const pending = compressMany(inputs)
    inputs[0].fill(0)
    inputs[1].fill(0)
    const contents = decompressManySync(await pending)
    expect(contents.map(String)).toEqual(['first message', 'second message'])
  })

  it('keep every result when one message fails: the error names it and carries them all', async () => {
    const frames = compressManySync(messages.slice(0, 6))
    const broken = [...frames.slice(0, 3), Buffer.from('not zstd'), ...frames.slice(3)]
    const check = (error: any) => {
      expect(error.code).toMatch(/^ZSTD_error_/)
      expect(error.index).toBe(3)
      expect(error.results).toHaveLength(7)
      expect(error.results[3]).toBe(error)
      error.results.forEach((value: Buffer | Error, i: number) => {
        if (i !== 3) expect((value as Buffer).equals(messages[i < 3 ? i : i - 1])).toBe(true)
      })
    }
    const rejected = await decompressMany(broken).catch((error) => error)
    check(rejected)
    let thrown: unknown
    try {
      decompressManySync(broken)
    } catch (error) {
      thrown = error
    }
    check(thrown)
    expect(poolStats().decompressors.inUse).toBe(0)
  })

  it('apply the limits to each message', async () => {
    const frames = compressManySync([Buffer.alloc(100), Buffer.alloc(5000), Buffer.alloc(100)])
    const error = await decompressMany(frames, { maxOutputLength: 1000 }).catch((e) => e)
    expect(error).toMatchObject({ name: 'RangeError', code: 'ERR_BUFFER_TOO_LARGE', index: 1 })
    expect(error.results[0]).toHaveLength(100)
    expect(error.results[2]).toHaveLength(100)
  })

  it.skipIf(skipWithoutZstdCli)('decode frames the zstd tool wrote, without a recorded size', async () => {
    const frames = messages.slice(0, 14).map((message) => zstdPiped(['-c', '-5'], message))
    const contents = await decompressMany(frames)
    for (const [i, content] of contents.entries()) expect(content.equals(messages[i])).toBe(true)
  })

  it('use a dictionary for every message', async () => {
    const records = jsonRecords(3000).map((record) => Buffer.from(record))
    const dictionary = new Dictionary(trainDictionarySync(records.slice(0, 2000), { size: 4096 }))
    const sample = records.slice(2000)
    const frames = await compressMany(sample, { dictionary })
    expect(frames.every((frame, i) => decompressSync(frame, { dictionary }).equals(sample[i]))).toBe(true)
    const contents = await decompressMany(frames, { dictionary })
    expect(contents.every((content, i) => content.equals(sample[i]))).toBe(true)
    const missing = await decompressMany(frames.slice(0, 2)).catch((e) => e)
    expect(missing.index).toBe(0)
  })

  it.skipIf(wasi)('compress large messages with worker threads', async () => {
    const large = Buffer.concat(corpus.map(({ data }) => data)).subarray(0, 5 << 20)
    const [frame, small] = await compressMany([large, Buffer.from('small')], { level: 1, workers: 2 })
    expect(decompressSync(frame).equals(large)).toBe(true)
    expect(decompressSync(small).toString()).toBe('small')
  })

  it('stop at an AbortSignal', async () => {
    const aborted = AbortSignal.abort()
    await expect(compressMany(messages, { signal: aborted })).rejects.toMatchObject({ name: 'AbortError' })
    await expect(decompressMany([], { signal: aborted })).rejects.toMatchObject({ name: 'AbortError' })
    for (const batch of [compressMany, compressManyPacked]) {
      const controller = new AbortController()
      const pending = batch(
        Array.from({ length: 200 }, () => messages[5]),
        { level: 19, signal: controller.signal },
      )
      controller.abort()
      await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
      // Groups already running stop before their next message.
      for (let wait = 0; wait < 200 && poolStats().compressors.inUse > 0; wait++) await new Promise((r) => setTimeout(r, 10))
      expect(poolStats().compressors.inUse).toBe(0)
    }
  })

  it('run nothing when a signal aborts, twice, while the call is being made', async () => {
    const twice = {
      aborted: false,
      reason: undefined,
      addEventListener(_type: string, listener: () => void) {
        listener()
        listener()
      },
      removeEventListener() {},
    }
    const before = poolStats().compressors
    const pending = compressMany(
      Array.from({ length: 8 }, () => messages[5]),
      { level: 19, signal: twice as any },
    )
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await new Promise((r) => setTimeout(r, 100))
    const after = poolStats().compressors
    expect(after.created + after.reused).toBe(before.created + before.reused)
  })

  it("read an empty batch's signal once", async () => {
    // A signal whose `aborted` reads true, then false: the batch rejects as aborted, with its
    // code, whatever a second read would say.
    for (const batch of [compressMany, decompressMany, compressManyPacked, decompressManyPacked] as any[]) {
      let reads = 0
      const flipping = {
        get aborted() {
          return reads++ === 0
        },
        reason: new Error('stop'),
        addEventListener() {},
        removeEventListener() {},
      }
      await expect(batch([], { signal: flipping })).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
      expect(reads).toBe(1)
    }
  })

  it('reject bad arguments as the single calls do', async () => {
    await expect(compressMany('not a list' as any)).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    await expect(compressMany([Buffer.from('ok'), 42 as any])).rejects.toThrow(/inputs\[1\]/)
    await expect(compressMany([], { level: 99 })).rejects.toMatchObject({ name: 'RangeError' })
    await expect(decompressMany([], { maxOutputLength: 0 })).rejects.toMatchObject({ name: 'RangeError' })
    expect(() => compressManySync(null as any)).toThrow(TypeError)
    expect(() => decompressManySync([{} as any])).toThrow(TypeError)
  })

  it('read only the memory a view has, whatever its length property says', async () => {
    class Lying extends Uint8Array {
      get length() {
        return 4096
      }
      get byteLength() {
        return 4096
      }
    }
    const lying = new Lying(10).fill(65)
    const patched = Buffer.alloc(10, 66)
    Object.defineProperty(patched, 'length', { value: 2048 })
    Object.defineProperty(patched, 'byteLength', { value: 2048 })
    const contents = decompressManySync(await compressMany([lying, patched, Buffer.from('after')]))
    expect(contents.map(String)).toEqual(['A'.repeat(10), 'B'.repeat(10), 'after'])
  })

  it('compress what a view holds when its inputs are copied, even if a patched global shrank it after it was measured', async () => {
    // Code that a patched global runs while the groups are cut (after the sizes are read, before
    // the copy) shrinks a length-tracking view: the rest of its room must not be compressed as it
    // was, stale memory (a review found a frame of 60,000 such bytes).
    const resizable = new ArrayBuffer(60_000, { maxByteLength: 60_000 })
    const input = new Uint8Array(resizable).fill(7)
    const { max } = Math
    let armed = true
    Math.max = (...values: number[]) => {
      if (armed) {
        armed = false
        resizable.resize(10)
      }
      return max(...values)
    }
    let frames: Buffer[]
    try {
      frames = await compressMany([input, Buffer.from('after')])
    } finally {
      Math.max = max
    }
    expect(armed).toBe(false)
    expect(decompressManySync(frames)).toEqual([Buffer.alloc(10, 7), Buffer.from('after')])
  })

  it('read each element of the list once', async () => {
    let reads = 0
    const list = [Buffer.from('one')]
    Object.defineProperty(list, 1, {
      enumerable: true,
      get() {
        reads++
        return Buffer.from('two')
      },
    })
    const contents = decompressManySync(await compressMany(list))
    expect(contents.map(String)).toEqual(['one', 'two'])
    expect(reads).toBe(1)
  })

  describe('share out the messages of a group that runs long', () => {
    // A quarter of the bytes is text compressed at a slow level, the rest zeros, which compress
    // at once: the groups of zeros run out long before the first, and take over halves of it.
    const text = textOfLength(1 << 20)
    const uneven = [
      ...Array.from({ length: 256 }, (_, i) => text.subarray(i * 4096, (i + 1) * 4096)),
      ...Array.from({ length: 768 }, () => Buffer.alloc(4096)),
    ]
    const level = 12
    /** Groups in a batch: two per threadpool thread with a core to run on (docs/batches.md). */
    const groups = 2 * Math.min(Number(process.env.UV_THREADPOOL_SIZE ?? 4), availableParallelism())

    it('each result in its place, whoever ran it', async () => {
      const expected = uneven.map((input) => compressSync(input, level))
      const frames = await compressMany(uneven, level)
      expect(frames.every((frame, i) => frame.equals(expected[i]))).toBe(true)
      const contents = await decompressMany(frames)
      expect(contents.every((content, i) => content.equals(uneven[i]))).toBe(true)
      const packed = await compressManyPacked(uneven, level)
      expect(Buffer.concat(packed.buffers).equals(Buffer.concat(expected))).toBe(true)
      expect([...packed].every((frame, i) => frame.equals(expected[i]))).toBe(true)
      const unpacked = await decompressManyPacked(packed)
      expect(Buffer.concat(unpacked.buffers).equals(Buffer.concat(uneven))).toBe(true)
    })

    it.skipIf(wasi)('as runs of results of their own: more Buffers than groups', async () => {
      let most = 0
      // The work is taken over as soon as the others run out; five tries leave room for a
      // machine too busy to run them meanwhile.
      for (let attempt = 0; attempt < 5 && most <= groups; attempt++) {
        most = Math.max(most, (await compressManyPacked(uneven, level)).buffers.length)
      }
      expect(most).toBeGreaterThan(groups)
    })

    it('failing where the failure is, and nowhere else', async () => {
      const frames = await compressMany(uneven, level)
      frames[200] = Buffer.from('not a frame')
      const error = await decompressMany(frames).catch((caught) => caught)
      expect(error).toMatchObject({ index: 200, code: 'ZSTD_error_prefix_unknown' })
      expect(
        error.results.every((result: Buffer | Error, i: number) => (i === 200 ? result === error : result.equals(uneven[i]))),
      ).toBe(true)
      frames[900] = Buffer.alloc(4)
      const packedError = await decompressManyPacked(frames).catch((caught) => caught)
      expect(packedError).toMatchObject({ index: 200, code: 'ZSTD_error_prefix_unknown' })
      frames[200] = compressSync(uneven[200])
      expect(await decompressManyPacked(frames).catch((caught) => caught)).toMatchObject({ index: 900 })
    })
  })
})
