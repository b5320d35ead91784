import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { buffer as collect } from 'node:stream/consumers'
import { describe, expect, it } from 'vitest'

import {
  compress,
  compressSeekableSync,
  compressSync,
  createCompressStream,
  createDecompressStream,
  Dictionary,
  decompress,
  decompressMany,
  decompressManySync,
  decompressSync,
  finalizeDictionarySync,
  openSeekable,
  Prefix,
  trainDictionarySync,
  ZstdDecompressionStream,
} from 'zstd-pool'
import { jsonRecords, skippableFrame, skipWithoutZstdCli, through, wasi } from './helpers'

const training = jsonRecords(3000, 1)
const heldOut = jsonRecords(300, 2)
const dictionary = new Dictionary(trainDictionarySync(training, { size: 8192 }))
const other = new Dictionary(trainDictionarySync(jsonRecords(3000, 3), { size: 4096, level: 9 }))
const total = (buffers: Buffer[]) => buffers.reduce((sum, buffer) => sum + buffer.length, 0)

describe('trainDictionarySync and Dictionary', () => {
  it('train a dictionary that multiplies the ratio on small records', () => {
    expect(dictionary.size).toBeLessThanOrEqual(8192)
    expect(dictionary.id).toBeGreaterThan(0)
    const plain = total(heldOut.map((record) => compressSync(record)))
    const withDictionary = total(heldOut.map((record) => compressSync(record, { dictionary })))
    const original = total(heldOut)
    // Records of ~300 bytes barely compress alone; with the dictionary they shrink several-fold.
    expect(original / withDictionary).toBeGreaterThan(2 * (original / plain))
  })

  it('round-trip with the dictionary, sync and async, and produce the same bytes both ways', async () => {
    for (const record of heldOut.slice(0, 50)) {
      const frame = compressSync(record, { dictionary, level: 3 })
      expect((await compress(record, { dictionary, level: 3 })).equals(frame)).toBe(true)
      expect(decompressSync(frame, { dictionary }).equals(record)).toBe(true)
      expect((await decompress(frame, { dictionary })).equals(record)).toBe(true)
    }
  })

  it('free their native memory when disposed: calls already running keep it, later calls fail', async () => {
    const bytes = trainDictionarySync(training, { size: 4096 })
    const disposable = new Dictionary(bytes)
    const again = new Dictionary(bytes)
    const records = Buffer.concat(heldOut)
    const frame = compressSync(heldOut[0], { dictionary: disposable })
    const running = compress(records, { dictionary: disposable, level: 19 })
    const stream = Readable.from([records]).pipe(createCompressStream({ dictionary: disposable }))
    disposable[Symbol.dispose]()
    expect(decompressSync(await running, { dictionary: again }).equals(records)).toBe(true)
    expect(decompressSync(await collect(stream), { dictionary: again }).equals(records)).toBe(true)
    expect([disposable.id, disposable.size]).toEqual([again.id, again.size])
    const disposed = expect.objectContaining({ code: 'ERR_INVALID_STATE', message: expect.stringMatching(/disposed/) }) as Error
    expect(() => compressSync(heldOut[0], { dictionary: disposable })).toThrowError(disposed)
    expect(() => decompressSync(frame, { dictionary: disposable })).toThrowError(disposed)
    await expect(compress(heldOut[0], { dictionary: disposable })).rejects.toThrowError(disposed)
    expect(() => createDecompressStream({ dictionary: disposable })).toThrowError(disposed)
    // Twice is no different from once.
    disposable[Symbol.dispose]()
  })

  it('fail clearly without the dictionary or with another one, naming the ID the frame needs', async () => {
    const frame = compressSync(heldOut[0], { dictionary })
    const expected = expect.objectContaining({
      code: 'ZSTD_error_dictionary_wrong',
      message: expect.stringContaining(String(dictionary.id)),
    })
    expect(() => decompressSync(frame)).toThrowError(expected)
    await expect(decompress(frame)).rejects.toThrowError(expected)
    expect(() => decompressSync(frame, { dictionary: other })).toThrowError(
      expect.objectContaining({ message: expect.stringContaining(String(other.id)) }),
    )
  })

  it('leave no dictionary behind in pooled contexts', () => {
    const record = heldOut[1]
    const withDictionary = compressSync(record, { dictionary })
    const plain = compressSync(record)
    expect(plain.equals(withDictionary)).toBe(false)
    expect(decompressSync(plain).equals(record)).toBe(true)
    expect(decompressSync(withDictionary, { dictionary }).equals(record)).toBe(true)
    expect(decompressSync(compressSync(record)).equals(record)).toBe(true)
  })

  it('round-trip 200 async calls with two dictionaries interleaved', async () => {
    const dictionaries = [dictionary, other]
    const frames = await Promise.all(
      heldOut.slice(0, 200).map((record, i) => compress(record, { dictionary: dictionaries[i % 2], level: 1 + (i % 5) })),
    )
    const back = await Promise.all(frames.map((frame, i) => decompress(frame, { dictionary: dictionaries[i % 2] })))
    back.forEach((record, i) => {
      expect(record.equals(heldOut[i]), `call ${i}`).toBe(true)
    })
  })

  it('refuse malformed dictionaries when built, and wrong types and sizes with the right errors', () => {
    const corrupt = Buffer.concat([Buffer.from([0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4]), Buffer.alloc(300, 0xff)])
    expect(() => new Dictionary(corrupt)).toThrowError(expect.objectContaining({ code: 'ZSTD_error_dictionary_corrupted' }))
    expect(() => new Dictionary(Buffer.alloc(0))).toThrow(/empty/)
    expect(() => new Dictionary(42 as any)).toThrow(TypeError)
    expect(() => compressSync('x', { dictionary: {} as any })).toThrowError(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/Dictionary/) }),
    )
    expect(() => trainDictionarySync(jsonRecords(3))).toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_dictionaryCreation_failed' }),
    )
    expect(() => trainDictionarySync('samples' as any)).toThrow(TypeError)
    expect(() => trainDictionarySync([Buffer.from('a'), 5] as any)).toThrow(TypeError)
    expect(() => trainDictionarySync(training, { size: 10 })).toThrow(RangeError)
    expect(new Dictionary(Buffer.from('raw content, no dictionary header')).id).toBe(0)
    // Forgeries of the class, by prototype or by Proxy, are not Dictionaries.
    for (const forged of [Object.create(Dictionary.prototype), new Proxy(dictionary, {})]) {
      expect(() => compressSync('x', { dictionary: forged })).toThrowError(
        expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
      )
    }
  })

  // emnapi cannot tell V8 what the WebAssembly module's memory holds (a documented limit).
  it.skipIf(wasi)('tell the garbage collector what they hold, so that dropped ones are collected', async () => {
    const bytes = Buffer.alloc(100_000, 1)
    const before = process.memoryUsage().rss
    for (let i = 0; i < 3000; i++) {
      new Dictionary(bytes) // about 0.7 MB of native memory each
      if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    expect(process.memoryUsage().rss - before).toBeLessThan(1 << 30)
  })

  it('ask for no more memory than the samples hold, whatever size is asked for', () => {
    const before = process.memoryUsage().rss
    const trained = trainDictionarySync(training, { size: 2 ** 30 })
    expect(trained.length).toBeLessThanOrEqual(Buffer.concat(training).length)
    expect(process.memoryUsage().rss - before).toBeLessThan(256 << 20)
  })
})

describe.skipIf(skipWithoutZstdCli)('dictionaries and the zstd tool', () => {
  it('use a dictionary from `zstd --train`, both ways with `zstd -D`', () => {
    const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-dict-'))
    const files = training.slice(0, 1000).map((record, i) => {
      const file = join(dir, `sample-${i}.json`)
      writeFileSync(file, record)
      return file
    })
    const dictFile = join(dir, 'dict')
    execFileSync('zstd', ['-q', '--train', ...files, '-o', dictFile, '--maxdict=8192'])
    const fromTool = new Dictionary(readFileSync(dictFile))
    for (const record of heldOut.slice(0, 20)) {
      const theirs = execFileSync('zstd', ['-q', '-c', '-D', dictFile], { input: record })
      expect(decompressSync(theirs, { dictionary: fromTool }).equals(record)).toBe(true)
      const ours = compressSync(record, { dictionary: fromTool })
      expect(execFileSync('zstd', ['-q', '-d', '-c', '-D', dictFile], { input: ours }).equals(record)).toBe(true)
    }
    const ourDictFile = join(dir, 'ours')
    writeFileSync(ourDictFile, trainDictionarySync(training, { size: 8192 }))
    const frame = compressSync(heldOut[5], { dictionary: new Dictionary(readFileSync(ourDictFile)) })
    expect(execFileSync('zstd', ['-q', '-d', '-c', '-D', ourDictFile], { input: frame }).equals(heldOut[5])).toBe(true)
  })
})

describe('the dictionaries option: each frame decoded with the dictionary its ID names', () => {
  const third = new Dictionary(trainDictionarySync(jsonRecords(3000, 4), { size: 4096 }))
  const [a, b] = [heldOut[0], heldOut[1]]
  const plain = Buffer.from('made without a dictionary')
  const streamed = async (data: Buffer, options: object) => collect(Readable.from([data]).pipe(createCompressStream(options)))
  /** Frames with `dictionary`, with none, a skippable frame, and with `other` (one recording no
   * content size, as a stream writes it); and their content. */
  const mixed = async () => {
    const frames = Buffer.concat([
      compressSync(a, { dictionary }),
      compressSync(plain),
      skippableFrame(Buffer.from('skip me')),
      await streamed(b, { dictionary: other }),
    ])
    return { frames, content: Buffer.concat([a, plain, b]) }
  }
  const wrong = (id: number) =>
    expect.objectContaining({
      code: 'ZSTD_error_dictionary_wrong',
      message: expect.stringMatching(new RegExp(`dictionary ${id}\\b.*none of the dictionaries given.*${other.id}`)),
    })

  it('decode mixed frames one-shot, sync and async, in any order of the dictionaries', async () => {
    const { frames, content } = await mixed()
    for (const dictionaries of [
      [dictionary, other],
      [other, dictionary],
      [third, other, dictionary],
    ]) {
      expect(decompressSync(frames, { dictionaries }).equals(content)).toBe(true)
      expect((await decompress(frames, { dictionaries })).equals(content)).toBe(true)
    }
    // Every frame declaring its size: the output allocated once.
    const exact = Buffer.concat([compressSync(b, { dictionary: other }), compressSync(a, { dictionary }), compressSync(plain)])
    expect(decompressSync(exact, { dictionaries: [dictionary, other] }).equals(Buffer.concat([b, a, plain]))).toBe(true)
    // Large enough to be decoded off the main thread.
    const many = Buffer.concat(heldOut.map((record, i) => compressSync(record, { dictionary: i % 2 ? other : dictionary })))
    expect((await decompress(many, { dictionaries: [other, dictionary] })).equals(Buffer.concat(heldOut))).toBe(true)
  })

  it('decode mixed frames in streams, Node and Web, cut at every byte', async () => {
    const { frames, content } = await mixed()
    const dictionaries = [other, dictionary]
    for (const size of [1, 3, 17, frames.length]) {
      expect((await through(createDecompressStream({ dictionaries }), frames, size)).equals(content), `chunks of ${size}`).toBe(
        true,
      )
    }
    for (let cut = 0; cut <= frames.length; cut++) {
      const stream = createDecompressStream({ dictionaries })
      stream.write(frames.subarray(0, cut))
      stream.end(frames.subarray(cut))
      expect((await collect(stream)).equals(content), `cut at ${cut}`).toBe(true)
    }
    const web = new Blob([frames]).stream().pipeThrough(new ZstdDecompressionStream({ dictionaries }))
    expect(Buffer.from(await new Response(web).arrayBuffer()).equals(content)).toBe(true)
    const refused = new Blob([frames]).stream().pipeThrough(new ZstdDecompressionStream({ dictionaries: [other] }))
    await expect(new Response(refused).arrayBuffer()).rejects.toThrowError(wrong(dictionary.id))
    await expect(through(createDecompressStream({ dictionaries: [third, other] }), frames, 5)).rejects.toThrowError(
      wrong(dictionary.id),
    )
  })

  it('decode batches, each input with the dictionaries its frames name', async () => {
    const { frames, content } = await mixed()
    const inputs = [compressSync(a, { dictionary }), frames, compressSync(b, { dictionary: other }), compressSync(plain)]
    const expected = [a, content, b, plain]
    const dictionaries = [dictionary, other]
    for (const results of [await decompressMany(inputs, { dictionaries }), decompressManySync(inputs, { dictionaries })]) {
      expect(results.map((result, i) => result.equals(expected[i]))).toEqual([true, true, true, true])
    }
    // An input that needs a dictionary the set lacks fails the batch, as it fails decompress.
    await expect(decompressMany(inputs, { dictionaries: [other] })).rejects.toThrowError(wrong(dictionary.id))
  })

  it('refuse a frame whose dictionary none of them is, naming its ID and theirs', async () => {
    const frame = compressSync(a, { dictionary })
    expect(() => decompressSync(frame, { dictionaries: [other, third] })).toThrowError(wrong(dictionary.id))
    await expect(decompress(frame, { dictionaries: [other] })).rejects.toThrowError(wrong(dictionary.id))
    expect(() => decompressSync(frame, { dictionaries: [other, third] })).toThrowError(
      expect.objectContaining({ message: expect.stringContaining(String(third.id)) }),
    )
  })

  it('decode a frame that records no dictionary ID with none: such frames need the dictionary option', () => {
    const noId = compressSync(a, { dictionary, dictIDFlag: false })
    expect(decompressSync(noId, { dictionary }).equals(a)).toBe(true)
    let decoded: Buffer | undefined
    try {
      decoded = decompressSync(noId, { dictionaries: [dictionary] })
    } catch (error) {
      expect(error).toMatchObject({ code: expect.stringMatching(/^ZSTD_error_/) })
    }
    expect(decoded?.equals(a)).not.toBe(true)
    // A frame made without one decodes after frames that used one, as it would alone.
    const after = Buffer.concat([compressSync(b, { dictionary: other }), compressSync(plain)])
    expect(decompressSync(after, { dictionaries: [other] }).equals(Buffer.concat([b, plain]))).toBe(true)
  })

  it('read the option once, into a copy, and check it before any work', async () => {
    const frame = compressSync(a, { dictionary })
    const code = (code: string) => expect.objectContaining({ code })
    expect(() => decompressSync(frame, { dictionaries: dictionary as any })).toThrowError(code('ERR_INVALID_ARG_TYPE'))
    expect(() => decompressSync(frame, { dictionaries: [dictionary, Buffer.alloc(8)] as any })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('options.dictionaries[1]') }),
    )
    const raw = new Dictionary(Buffer.from('raw content has no ID to be chosen by'))
    expect(() => decompressSync(frame, { dictionaries: [dictionary, raw] })).toThrowError(code('ERR_INVALID_ARG_VALUE'))
    const twin = new Dictionary(trainDictionarySync(training, { size: 8192 }))
    expect(twin.id).toBe(dictionary.id)
    expect(() => decompressSync(frame, { dictionaries: [dictionary, other, twin] })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', message: expect.stringMatching(/dictionaries\[2\].*\[0\]/) }),
    )
    expect(() => decompressSync(frame, { dictionary, dictionaries: [other] })).toThrowError(code('ERR_INCOMPATIBLE_OPTION_PAIR'))
    expect(() => decompressSync(frame, { prefix: new Prefix(a), dictionaries: [other] })).toThrowError(
      code('ERR_INCOMPATIBLE_OPTION_PAIR'),
    )
    expect(() => createDecompressStream({ dictionary, dictionaries: [other] })).toThrowError(code('ERR_INCOMPATIBLE_OPTION_PAIR'))
    // At most 1024, checked before any element is read.
    const huge = new Proxy([] as Dictionary[], {
      get: (target, key) => (key === 'length' ? 2 ** 32 - 1 : Reflect.get(target, key)),
    })
    expect(() => decompressSync(frame, { dictionaries: huge })).toThrowError(
      expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }),
    )
    expect(() => decompressSync(frame, { dictionaries: new Array(1025).fill(dictionary) })).toThrow(RangeError)
    // An empty array is no dictionary at all.
    expect(decompressSync(compressSync(plain), { dictionaries: [] }).equals(plain)).toBe(true)
    expect(() => decompressSync(frame, { dictionaries: [] })).toThrowError(code('ZSTD_error_dictionary_wrong'))
    // Each element read once: a getter that swaps the one before it changes nothing.
    let reads = 0
    const changing = [other, undefined] as unknown as Dictionary[]
    Object.defineProperty(changing, 1, {
      get() {
        reads++
        changing[0] = third
        return dictionary
      },
    })
    expect(decompressSync(Buffer.concat([frame, compressSync(b, { dictionary: other })]), { dictionaries: changing })).toEqual(
      Buffer.concat([a, b]),
    )
    expect(reads).toBe(1)
    const traps: string[] = []
    const proxy = new Proxy([dictionary, other], {
      get(target, key, receiver) {
        traps.push(String(key))
        return Reflect.get(target, key, receiver)
      },
    })
    expect((await decompress(frame, { dictionaries: proxy })).equals(a)).toBe(true)
    expect(traps).toEqual(['length', '0', '1'])
  })

  it('decode the frames of a seekable file, with the dictionaries as they were when it was opened', async () => {
    const content = Buffer.concat(heldOut.slice(0, 40))
    const file = compressSeekableSync(content, { dictionary: other, frameSize: 1024 })
    const dictionaries = [dictionary, other]
    const reader = await openSeekable(file, { dictionaries })
    dictionaries.length = 0
    expect(Buffer.from(await reader.read(1000, 3000)).equals(content.subarray(1000, 4000))).toBe(true)
    await expect((await openSeekable(file, { dictionaries: [third] })).read(0, 10)).rejects.toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_dictionary_wrong', message: expect.stringContaining(`${other.id}, which`) }),
    )
  })

  it('reuse the set made for an array while it holds the same dictionaries, and none disposed since', () => {
    const disposable = new Dictionary(trainDictionarySync(training, { size: 8192 }))
    const frames = Buffer.concat([compressSync(a, { dictionary: disposable }), compressSync(b, { dictionary: other })])
    const kept = [third, other]
    expect(() => decompressSync(frames, { dictionaries: kept })).toThrowError(wrong(disposable.id))
    kept[0] = disposable
    expect(decompressSync(frames, { dictionaries: kept }).equals(Buffer.concat([a, b]))).toBe(true)
    expect(decompressSync(frames, { dictionaries: kept }).equals(Buffer.concat([a, b]))).toBe(true)
    kept.pop()
    expect(() => decompressSync(frames, { dictionaries: kept })).toThrowError(
      expect.objectContaining({ message: expect.stringContaining(`needs dictionary ${other.id}`) }),
    )
    kept.push(other)
    disposable[Symbol.dispose]()
    expect(() => decompressSync(frames, { dictionaries: kept })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_STATE' }),
    )
  })

  it('let a disposed dictionary go at once, even one given in a kept array, and read a length once', () => {
    // A 1 MiB dictionary holds several MiB natively: 300 of them kept alive would be gigabytes.
    const content = Buffer.concat(jsonRecords(4500, 5)).subarray(0, 1 << 20)
    const bytes = finalizeDictionarySync(content, training, { dictId: 70_000 })
    const frame = compressSync(a, { dictionary: other })
    const kept = [other, other]
    const before = process.memoryUsage().rss
    for (let i = 0; i < 300; i++) {
      const big = new Dictionary(bytes)
      kept[1] = big
      expect(decompressSync(frame, { dictionaries: kept }).equals(a)).toBe(true)
      big[Symbol.dispose]()
    }
    expect(process.memoryUsage().rss - before).toBeLessThan(512 << 20)
    // A length that is no number (a Proxy's may be anything) is refused before any element is read.
    let reads = 0
    const lying = new Proxy([other], {
      get: (target, key) => (key === 'length' ? { valueOf: () => (reads++ ? 1100 : 1) } : Reflect.get(target, key)),
    })
    expect(() => decompressSync(frame, { dictionaries: lying })).toThrowError(
      expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }),
    )
    expect(reads).toBe(0)
  })

  it('keep dictionaries disposed after the option was read; refuse one disposed before', async () => {
    const disposable = new Dictionary(trainDictionarySync(training, { size: 8192 }))
    const frames = Buffer.concat([compressSync(a, { dictionary: disposable }), compressSync(b, { dictionary: other })])
    const stream = createDecompressStream({ dictionaries: [disposable, other] })
    const running = decompress(frames, { dictionaries: [other, disposable] })
    disposable[Symbol.dispose]()
    stream.end(frames)
    expect((await collect(stream)).equals(Buffer.concat([a, b]))).toBe(true)
    expect((await running).equals(Buffer.concat([a, b]))).toBe(true)
    expect(() => decompressSync(frames, { dictionaries: [other, disposable] })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_STATE' }),
    )
  })
})

describe.skipIf(skipWithoutZstdCli)('the dictionaries option and the zstd tool', () => {
  it('decode frames of `zstd -D` with two dictionaries, end to end, one-shot and as a stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-dicts-'))
    const [first, second] = [dictionary, other].map((prepared, i) => {
      const file = join(dir, `dict-${i}`)
      writeFileSync(
        file,
        i === 0
          ? trainDictionarySync(training, { size: 8192 })
          : trainDictionarySync(jsonRecords(3000, 3), { size: 4096, level: 9 }),
      )
      expect(new Dictionary(readFileSync(file)).id).toBe(prepared.id)
      return file
    })
    const records = heldOut.slice(0, 6)
    const frames = Buffer.concat(
      records.map((record, i) => execFileSync('zstd', ['-q', '-c', '-D', i % 2 ? second : first], { input: record })),
    )
    const content = Buffer.concat(records)
    expect(decompressSync(frames, { dictionaries: [dictionary, other] }).equals(content)).toBe(true)
    expect((await through(createDecompressStream({ dictionaries: [other, dictionary] }), frames, 7)).equals(content)).toBe(true)
    // `--no-dictID` frames name none: they decode with the dictionary option, not this one.
    const noId = execFileSync('zstd', ['-q', '-c', '--no-dictID', '-D', first], { input: records[0] })
    expect(decompressSync(noId, { dictionary }).equals(records[0])).toBe(true)
    expect(() => decompressSync(noId, { dictionaries: [dictionary, other] })).toThrow()
  })
})
