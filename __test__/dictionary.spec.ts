import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { buffer as collect } from 'node:stream/consumers'
import { describe, expect, it } from 'vitest'

import {
  compress,
  compressSync,
  createCompressStream,
  createDecompressStream,
  Dictionary,
  decompress,
  decompressSync,
  trainDictionarySync,
} from 'zstd-pool'
import { jsonRecords, skipWithoutZstdCli, wasi } from './helpers'

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
