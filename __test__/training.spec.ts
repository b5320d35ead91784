import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import {
  compressSync,
  Dictionary,
  decompressSync,
  finalizeDictionary,
  finalizeDictionarySync,
  trainDictionary,
  trainDictionarySync,
} from 'zstd-pool'
import { jsonRecords, skipWithoutZstdCli, wasi } from './helpers'

const training = jsonRecords(4000, 1)
const heldOut = jsonRecords(400, 2)
const rawBytes = heldOut.reduce((sum, record) => sum + record.length, 0)

/** The compression ratio of the held-out records, one frame each, with `bytes` as dictionary. */
function ratioWith(bytes: Uint8Array): number {
  const dictionary = new Dictionary(bytes)
  return rawBytes / heldOut.reduce((sum, record) => sum + compressSync(record, { dictionary }).length, 0)
}

const outOfRange = expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' })
const notForAlgorithm = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' })

describe('trainDictionary: libzstd trainers and their parameters', () => {
  it('reports the parameters the optimizer chose; given back, they train without it', () => {
    const optimized = trainDictionarySync(training, { size: 8192 })
    expect(optimized.parameters).toEqual({ algorithm: 'fastCover', k: expect.any(Number), d: 8, f: 20, accel: 1, level: 3 })
    expect(optimized.parameters.k).toBeGreaterThanOrEqual(50)
    expect(optimized.parameters.k).toBeLessThanOrEqual(2000)
    expect(Object.isFrozen(optimized.parameters)).toBe(true)
    const again = trainDictionarySync(training, { size: 8192, ...optimized.parameters })
    expect(again.parameters).toEqual(optimized.parameters)
    // Without the optimizer it trains on every sample, not on its 75% split: as good or better.
    expect(ratioWith(again)).toBeGreaterThan(ratioWith(optimized) * 0.98)
  })

  it('trains with cover, fastCover and each parameter, and the dictionaries work', () => {
    const cases = [
      { algorithm: 'cover' as const, k: 300, d: 8 },
      { k: 200, d: 6, f: 18, accel: 2 },
      { d: 0, steps: 2 },
      { threads: wasi ? 1 : 2, splitPoint: 0.5 },
      { level: 19, dictId: 0x1234_5678 },
    ]
    for (const options of cases) {
      const bytes = trainDictionarySync(training, { size: 4096, ...options })
      expect(bytes.length).toBeLessThanOrEqual(4096)
      const dictionary = new Dictionary(bytes)
      if (options.dictId !== undefined) expect(dictionary.id).toBe(options.dictId)
      const frame = compressSync(heldOut[0], { dictionary })
      expect(decompressSync(frame, { dictionary }).equals(heldOut[0])).toBe(true)
      expect(ratioWith(bytes)).toBeGreaterThan(3)
    }
  })

  it('refuses parameters outside libzstd bounds, and those of the other algorithm', () => {
    const refused: [object, unknown][] = [
      [{ d: 7 }, outOfRange],
      [{ k: 4 }, outOfRange],
      [{ k: 5000, size: 4096 }, outOfRange],
      [{ algorithm: 'cover', d: 20, k: 10 }, outOfRange],
      [{ algorithm: 'cover', d: 60 }, outOfRange],
      [{ f: 32 }, outOfRange],
      [{ f: 0 }, outOfRange],
      [{ accel: 11 }, outOfRange],
      [{ steps: 0 }, outOfRange],
      [{ splitPoint: 0 }, outOfRange],
      [{ splitPoint: 1.5 }, outOfRange],
      [{ splitPoint: Number.NaN }, outOfRange],
      [{ threads: 0 }, outOfRange],
      [{ dictId: 2 ** 32 }, outOfRange],
      [{ dictId: -1 }, outOfRange],
      [{ size: 255 }, outOfRange],
      [{ algorithm: 'cover', f: 20 }, notForAlgorithm],
      [{ algorithm: 'cover', accel: 1 }, notForAlgorithm],
      [{ algorithm: 'legacy' }, expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' })],
      [{ k: '200' }, expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })],
      [{ splitPoint: '0.5' }, expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })],
    ]
    for (const [options, error] of refused) {
      expect(() => trainDictionarySync(training, options as any), JSON.stringify(options)).toThrowError(error as Error)
    }
    expect(() => trainDictionarySync(training, 5 as any)).toThrow(TypeError)
    // A length that costs nothing to claim asks for nothing up front.
    expect(() => trainDictionarySync(new Array(2 ** 32 - 1))).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    )
    const lying = new Proxy([], { get: (target, key) => (key === 'length' ? 1e12 : Reflect.get(target, key)) })
    expect(() => trainDictionarySync(lying)).toThrowError(outOfRange)
    expect(() => trainDictionarySync(jsonRecords(3))).toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_dictionaryCreation_failed' }),
    )
  })

  it('trains on the threadpool: the same dictionary, and the event loop keeps turning', async () => {
    const options = { size: 8192, k: 300, d: 8 }
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    const started = performance.now()
    const trained = await trainDictionary(training, { size: 8192, steps: 8 })
    const elapsed = performance.now() - started
    clearInterval(timer)
    // The loop turned while it trained (a 1 ms timer fires about once a millisecond it is free).
    if (elapsed > 20) expect(ticks).toBeGreaterThan(2)
    expect(trained.parameters.k).toBeGreaterThan(0)
    expect((await trainDictionary(training, options)).equals(trainDictionarySync(training, options))).toBe(true)
  })

  it('rejects with an AbortError at once, for a signal aborted before or while it trains', async () => {
    const aborted = expect.objectContaining({ name: 'AbortError', code: 'ABORT_ERR' })
    await expect(trainDictionary(training, { signal: AbortSignal.abort() })).rejects.toThrowError(aborted)
    const controller = new AbortController()
    const training_ = trainDictionary(training, { steps: 40, signal: controller.signal })
    setTimeout(() => controller.abort(), 5)
    await expect(training_).rejects.toThrowError(aborted)
    // Errors of the options are rejections too, never throws.
    await expect(trainDictionary(training, { d: 7 })).rejects.toThrowError(outOfRange)
    await expect(trainDictionary('samples' as any)).rejects.toThrow(TypeError)
  })

  it("copies each sample's own bytes, whatever its length getter or valueOf says", () => {
    class Liar extends Uint8Array {
      get length() {
        return 4000
      }
      valueOf() {
        return new Uint8Array(4000).fill(66)
      }
    }
    // One byte each: too little to train on, and said so with the bytes it really had.
    expect(() => trainDictionarySync([new Liar(1)])).toThrowError(
      expect.objectContaining({ message: expect.stringMatching(/1 samples \(1 bytes\)/) }),
    )
    const finalized = finalizeDictionarySync(new Liar(1), training)
    // The content is the 1 byte given (padded by libzstd), not 4000 bytes of anything else.
    expect(finalized.length).toBeLessThan(400)
    expect(finalized.includes(Buffer.alloc(16, 66))).toBe(false)
  })

  it('refuses a cover k past 2^20 (libzstd overflows from 2^30), and a k longer than the samples hold', () => {
    expect(() => trainDictionarySync(training, { algorithm: 'cover', k: 2 ** 20 + 1, size: 2 ** 21 })).toThrowError(outOfRange)
    expect(() => trainDictionarySync(jsonRecords(10), { k: 4000, d: 8, size: 4096 })).toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_dictionaryCreation_failed' }),
    )
  })

  it('reads each sample once, before any native code runs, async too', async () => {
    const samples: Buffer[] = training.slice(0, 2000)
    let reads = 0
    const hostile = new Proxy(samples, {
      get(target, key, receiver) {
        if (key === '5') reads++
        return Reflect.get(target, key, receiver)
      },
    })
    const promise = trainDictionary(hostile, { size: 4096, k: 200, d: 8 })
    // Changing the samples after the call cannot change what it trains on.
    samples[6] = Buffer.alloc(0)
    const trained = await promise
    expect(reads).toBe(1)
    expect(trained.equals(trainDictionarySync(training.slice(0, 2000), { size: 4096, k: 200, d: 8 }))).toBe(true)
  })
})

describe('finalizeDictionary: a dictionary of hand-picked content', () => {
  // What an API's records repeat: field names and common values, the most useful last.
  const content = Buffer.from(
    [
      '"client":{"agent":"Mozilla/5.0 (X11; Linux x86_64)","version":"4.',
      '"event":{"action":"view_item","durationMs":',
      '"user":{"id":"user_',
      '"country":"FR","premium":false},',
      '{"id":100',
      ',"timestamp":"2026-11-30T',
      ',"path":"/items/',
    ].join(''),
  )

  it('makes a dictionary with the ID asked for, that compresses better than none, sync and async alike', async () => {
    const bytes = finalizeDictionarySync(content, training, { dictId: 40_000, level: 3 })
    expect((await finalizeDictionary(content, training, { dictId: 40_000, level: 3 })).equals(bytes)).toBe(true)
    const dictionary = new Dictionary(bytes)
    expect(dictionary.id).toBe(40_000)
    // The content is kept whole, at the dictionary's end.
    expect(bytes.subarray(bytes.length - content.length).equals(content)).toBe(true)
    const plain = rawBytes / heldOut.reduce((sum, record) => sum + compressSync(record).length, 0)
    expect(ratioWith(bytes)).toBeGreaterThan(plain * 1.5)
    expect(new Dictionary(finalizeDictionarySync(content, training)).id).toBeGreaterThanOrEqual(32_768)
  })

  it('refuses a size below the content, and bad arguments, with coded errors', async () => {
    expect(() => finalizeDictionarySync(content, training, { size: content.length - 1 })).toThrowError(outOfRange)
    expect(() => finalizeDictionarySync(42 as any, training)).toThrow(TypeError)
    expect(() => finalizeDictionarySync(content, 'samples' as any)).toThrow(TypeError)
    // No samples: libzstd falls back on default statistics, and the dictionary still works.
    const unsampled = new Dictionary(finalizeDictionarySync(content, []))
    expect(decompressSync(compressSync(heldOut[0], { dictionary: unsampled }), { dictionary: unsampled })).toEqual(heldOut[0])
    await expect(finalizeDictionary(content, training, { dictId: 1.5 })).rejects.toThrowError(outOfRange)
    await expect(finalizeDictionary(content, training, { signal: AbortSignal.abort() })).rejects.toThrowError(
      expect.objectContaining({ name: 'AbortError' }),
    )
  })
})

describe.skipIf(skipWithoutZstdCli)('training against the zstd tool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-train-'))
  const files = training.map((record, i) => {
    const file = join(dir, `sample-${String(i).padStart(5, '0')}`)
    writeFileSync(file, record)
    return file
  })

  /** The tool's dictionary for `args` (a `--train…` option), at 8 KiB. */
  function toolDictionary(args: string): Buffer {
    const out = join(dir, 'dictionary')
    execFileSync('zstd', ['-q', '-f', args, ...files, '-o', out, '--maxdict=8192'])
    return readFileSync(out)
  }

  it('gives a ratio on held-out records within 2% of the tool, or better, with the same parameters', () => {
    const cases: [string, object][] = [
      ['--train', {}],
      ['--train-fastcover=k=400,d=8,f=20,accel=1', { k: 400, d: 8, f: 20, accel: 1 }],
      ['--train-fastcover=k=200,d=6,f=18,accel=2', { k: 200, d: 6, f: 18, accel: 2 }],
      ['--train-cover=k=300,d=8', { algorithm: 'cover', k: 300, d: 8 }],
    ]
    for (const [args, options] of cases) {
      const theirs = ratioWith(toolDictionary(args))
      const ours = ratioWith(trainDictionarySync(training, { size: 8192, ...options }))
      expect(ours, `${args}: ours ${ours.toFixed(3)}, the tool's ${theirs.toFixed(3)}`).toBeGreaterThan(theirs * 0.98)
    }
  })

  it('makes dictionaries and frames that cross both ways with `zstd -D`', () => {
    const ours = join(dir, 'ours')
    writeFileSync(ours, trainDictionarySync(training, { size: 8192, k: 300, d: 8, dictId: 77_777 }))
    const content = Buffer.from(heldOut.slice(0, 10).join(''))
    const finalized = join(dir, 'finalized')
    writeFileSync(finalized, finalizeDictionarySync(content, training))
    for (const file of [ours, finalized]) {
      const dictionary = new Dictionary(readFileSync(file))
      for (const record of heldOut.slice(20, 30)) {
        const frame = compressSync(record, { dictionary })
        expect(execFileSync('zstd', ['-q', '-d', '-c', '-D', file], { input: frame }).equals(record)).toBe(true)
        const theirs = execFileSync('zstd', ['-q', '-c', '-D', file], { input: record })
        expect(decompressSync(theirs, { dictionary }).equals(record)).toBe(true)
      }
    }
  })
})
