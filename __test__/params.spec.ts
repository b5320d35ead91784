import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { buffer as collect } from 'node:stream/consumers'
import { describe, expect, it } from 'vitest'

import {
  compress,
  compressMany,
  compressSync,
  configurePool,
  createCompressStream,
  Dictionary,
  decompress,
  decompressSync,
  poolStats,
  trainDictionarySync,
} from 'zstd-pool'
import { corpusFile, jsonRecords, skipWithoutZstdCli, textOfLength, wasi, zstdOnFile, zstdPiped } from './helpers'

/** What a frame header says (RFC 8878, 3.1.1.1), read here so that the tests do not trust our
 * own reading of it. */
function header(frame: Uint8Array) {
  const view = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)
  expect(view.readUInt32LE(0)).toBe(0xfd2fb528)
  const descriptor = view[4]
  const sizeFlag = descriptor >> 6
  const singleSegment = (descriptor >> 5) & 1
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]
  let at = 5
  let windowSize: number | undefined
  if (!singleSegment) {
    const exponent = view[at] >> 3
    const base = 2 ** (10 + exponent)
    windowSize = base + (base / 8) * (view[at] & 7)
    at++
  }
  const dictionaryId = dictionaryBytes === 0 ? 0 : view.readUIntLE(at, dictionaryBytes)
  at += dictionaryBytes
  const sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][sizeFlag]
  const contentSize =
    sizeBytes === 0
      ? null
      : sizeBytes === 8
        ? Number(view.readBigUInt64LE(at))
        : view.readUIntLE(at, sizeBytes) + (sizeBytes === 2 ? 256 : 0)
  return { checksum: Boolean((descriptor >> 2) & 1), dictionaryId, contentSize, windowSize: windowSize ?? contentSize }
}

const text = corpusFile('alice29.txt')
const html = corpusFile('html')

/** Every parameter, by name, with a value that is not libzstd's default for level 3. */
const tuned = {
  windowLog: 20,
  hashLog: 18,
  chainLog: 18,
  searchLog: 4,
  minMatch: 5,
  targetLength: 64,
  strategy: 'lazy2',
  targetCBlockSize: 4096,
  enableLongDistanceMatching: true,
  ldmHashLog: 18,
  ldmMinMatch: 32,
  ldmBucketSizeLog: 4,
  ldmHashRateLog: 6,
  contentSizeFlag: false,
  dictIDFlag: false,
  checksum: true,
} as const

/** The same, by node:zlib's ZSTD_c_* numbers. */
const numbered = {
  101: 20,
  102: 18,
  103: 18,
  104: 4,
  105: 5,
  106: 64,
  107: 5,
  130: 4096,
  160: 1,
  161: 18,
  162: 32,
  163: 4,
  164: 6,
  200: 0,
  202: 0,
  201: 1,
}

const pipedStream = async (data: Buffer, options: object) => collect(Readable.from([data]).pipe(createCompressStream(options)))

describe('compression parameters', () => {
  it('are taken by name and by ZSTD_c_* number alike, on every path, and give frames that decode', async () => {
    const byName = compressSync(text, tuned)
    expect(compressSync(text, { params: numbered }).equals(byName)).toBe(true)
    expect((await compress(text, tuned)).equals(byName)).toBe(true)
    expect((await compressMany([text, text], tuned)).every((frame) => frame.equals(byName))).toBe(true)
    expect(byName.equals(compressSync(text))).toBe(false)
    expect(header(byName)).toMatchObject({ checksum: true, contentSize: null })
    expect(decompressSync(byName).equals(text)).toBe(true)
    const streamed = await pipedStream(text, tuned)
    expect(decompressSync(streamed).equals(text)).toBe(true)
    expect(header(streamed)).toMatchObject({ checksum: true, contentSize: null, windowSize: 2 ** 20 })
  })

  it.skipIf(skipWithoutZstdCli)('make frames the zstd tool decodes, as small as its own with the same settings', () => {
    const frame = compressSync(html, tuned)
    expect(zstdPiped(['-d'], frame).equals(html)).toBe(true)
    // zstd --zstd= takes the match finder's parameters by zstd.h's names. The tool feeds libzstd
    // its input in chunks, so its bytes differ slightly; its sizes follow the settings as ours do.
    const settings: [object, string][] = [
      [{}, ''],
      [{ strategy: 'btultra2', windowLog: 20 }, 'strat=9,wlog=20'],
      [{ strategy: 'fast', hashLog: 12, minMatch: 7 }, 'strat=1,hlog=12,mml=7'],
      [{ strategy: 'lazy2', searchLog: 6, chainLog: 20, targetLength: 64 }, 'strat=5,slog=6,clog=20,tlen=64'],
    ]
    const file = zstdOnFile(['--no-check'], html)
    for (const [options, zstd] of settings) {
      const ours = compressSync(html, options).length
      const theirs = zstd ? zstdOnFile(['--no-check', `--zstd=${zstd}`], html).length : file.length
      expect(Math.abs(ours - theirs) / theirs, zstd).toBeLessThan(0.005)
    }
  })

  it.skipIf(skipWithoutZstdCli)('with a dictionary, make the very bytes the zstd tool makes with the same settings', () => {
    const bytes = trainDictionarySync(jsonRecords(2000, 1), { size: 4096 })
    const dictionary = new Dictionary(bytes)
    const file = join(mkdtempSync(join(tmpdir(), 'zstd-pool-')), 'dictionary')
    writeFileSync(file, bytes)
    for (const record of jsonRecords(20, 7)) {
      // Match-finder settings are not lost to the dictionary's digested form (which the tool
      // does not use, so that without them its bytes may differ).
      const options = { dictionary, strategy: 'btultra2', windowLog: 17, searchLog: 6 } as const
      const theirs = zstdOnFile(['--no-check', '-D', file, '--zstd=strat=9,wlog=17,slog=6'], record)
      expect(compressSync(record, options).equals(theirs)).toBe(true)
      expect(decompressSync(theirs, { dictionary }).equals(record)).toBe(true)
    }
  })

  it('set the frame flags: content size, dictionary ID, checksum', () => {
    const dictionary = new Dictionary(trainDictionarySync(jsonRecords(2000, 1), { size: 4096 }))
    const record = jsonRecords(1, 5)[0]
    expect(header(compressSync(record, { dictionary }))).toMatchObject({
      dictionaryId: dictionary.id,
      contentSize: record.length,
    })
    const bare = compressSync(record, { dictionary, dictIDFlag: false, contentSizeFlag: false, checksum: true })
    expect(header(bare)).toMatchObject({ dictionaryId: 0, contentSize: null, checksum: true })
    expect(decompressSync(bare, { dictionary }).equals(record)).toBe(true)
  })

  it.skipIf(wasi)('reach the multi-threaded path: jobSize and overlapLog with workers', async () => {
    const data = textOfLength(6 << 20)
    const options = { workers: 2, jobSize: 1 << 20, overlapLog: 4, level: 1 }
    const frame = await compress(data, options)
    expect(decompressSync(frame).equals(data)).toBe(true)
    expect(compressSync(data, options).equals(frame)).toBe(true)
    // With 1 MiB jobs, 6 MiB compresses on the workers (libzstd's own jobs would be 8 MiB);
    // the frame differs from the single-threaded one.
    expect(frame.equals(compressSync(data, { level: 1, jobSize: 1 << 20, overlapLog: 4 }))).toBe(false)
  })

  it('never stick to a pooled context: each group, then the defaults give the bytes a fresh context gives', async () => {
    configurePool({ maxIdleContexts: 8 })
    const baseline = { sync: compressSync(html), level19: compressSync(html, 19), stream: await pipedStream(html, {}) }
    const groups = {
      matchFinder: { windowLog: 12, hashLog: 8, chainLog: 8, searchLog: 1, minMatch: 7, targetLength: 0, strategy: 'fast' },
      longDistance: { enableLongDistanceMatching: true, ldmHashLog: 12, ldmMinMatch: 16, ldmBucketSizeLog: 2, ldmHashRateLog: 2 },
      blocks: { targetCBlockSize: 1340 },
      flags: { contentSizeFlag: false, dictIDFlag: false, checksum: true },
      threads: wasi ? {} : { workers: 2, jobSize: 1 << 20, overlapLog: 9 },
    }
    for (const [group, options] of Object.entries(groups)) {
      const reusedBefore = poolStats().compressors.reused
      compressSync(html, options)
      await Promise.all([compress(html, options), compress(html, { ...options, level: 19 })])
      await pipedStream(html, options)
      expect(compressSync(html).equals(baseline.sync), group).toBe(true)
      expect((await compress(html)).equals(baseline.sync), group).toBe(true)
      expect(compressSync(html, 19).equals(baseline.level19), group).toBe(true)
      expect((await pipedStream(html, {})).equals(baseline.stream), group).toBe(true)
      expect(poolStats().compressors.reused, group).toBeGreaterThan(reusedBefore)
    }
  })

  it('refuse values outside libzstd bounds, wrong types and unknown parameters, with Node-style errors', async () => {
    const rangeError = (code: string) => expect.objectContaining({ name: 'RangeError', code })
    const typeError = (code: string) => expect.objectContaining({ name: 'TypeError', code })
    const cases: [object, unknown][] = [
      [{ windowLog: 9 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ windowLog: 32 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ hashLog: 5 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ minMatch: 8 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ strategy: 10 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ strategy: 'slow' }, typeError('ERR_INVALID_ARG_VALUE')],
      [{ targetCBlockSize: 100 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ ldmBucketSizeLog: 9 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ overlapLog: 10 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ searchLog: 2.5 }, rangeError('ERR_OUT_OF_RANGE')],
      [{ chainLog: '20' }, typeError('ERR_INVALID_ARG_TYPE')],
      [{ enableLongDistanceMatching: 1 }, typeError('ERR_INVALID_ARG_TYPE')],
      [{ contentSizeFlag: 'no' }, typeError('ERR_INVALID_ARG_TYPE')],
      [{ params: { 999: 1 } }, rangeError('ERR_ZSTD_INVALID_PARAM')],
      [{ params: { 101: 'x' } }, typeError('ERR_INVALID_ARG_TYPE')],
      [{ params: { 101: 40 } }, rangeError('ERR_OUT_OF_RANGE')],
      [{ params: { 100: 99 } }, rangeError('ERR_OUT_OF_RANGE')],
      [{ params: 5 }, typeError('ERR_INVALID_ARG_TYPE')],
      // Keys as written numbers only, so that no two name one parameter.
      [{ params: { '1e2': 5 } }, rangeError('ERR_ZSTD_INVALID_PARAM')],
      [{ params: { ' 101': 20 } }, rangeError('ERR_ZSTD_INVALID_PARAM')],
      [{ params: { '0x65': 20 } }, rangeError('ERR_ZSTD_INVALID_PARAM')],
    ]
    for (const [options, error] of cases) {
      expect(() => compressSync(text, options), JSON.stringify(options)).toThrowError(error as Error)
      await expect(compress(text, options), JSON.stringify(options)).rejects.toThrowError(error as Error)
      expect(() => createCompressStream(options), JSON.stringify(options)).toThrowError(error as Error)
    }
    // 0 asks for libzstd's default, as zstd.h says; the named option wins over `params`.
    expect(compressSync(text, { windowLog: 0, strategy: 0, minMatch: 0 }).equals(compressSync(text))).toBe(true)
    expect(compressSync(text, { params: { 100: 1 }, level: 3 }).equals(compressSync(text))).toBe(true)
  })

  it.skipIf(wasi)('never run on the event loop when they make libzstd clear a large table: ldmHashLog', async () => {
    // libzstd sizes its tables down to a small input, but not the long-distance matcher's when
    // ldmHashLog is set (2^20 entries: 8 MiB cleared, even for a kilobyte): such a call takes the
    // threadpool, where a plain kilobyte runs on the spot. async_hooks sees the work queued.
    const { createHook } = await import('node:async_hooks')
    const queued: string[] = []
    const hook = createHook({ init: (_id, type) => void (type.startsWith('zstd-pool') && queued.push(type)) }).enable()
    try {
      await compress(text.subarray(0, 1024))
      expect(queued).toEqual([])
      const frame = await compress(text.subarray(0, 1024), { enableLongDistanceMatching: true, ldmHashLog: 20 })
      expect(queued).toEqual(['zstd-pool:compress'])
      expect(decompressSync(frame).equals(text.subarray(0, 1024))).toBe(true)
    } finally {
      hook.disable()
    }
  })

  it('read each option once, in order, and call no getter twice', () => {
    const reads: string[] = []
    const options = new Proxy({ windowLog: 20, strategy: 'fast' } as Record<string, unknown>, {
      get(target, key) {
        reads.push(String(key))
        return target[key as string]
      },
    })
    compressSync(text, options)
    expect(new Set(reads).size).toBe(reads.length)
  })
})

describe('long windows and long-distance matching', () => {
  // A window of 2^28 is declared by a frame whose size is unknown when it starts: a stream.
  const data = textOfLength(2 << 20)

  it('frames with windowLog above 27 need windowLogMax from our decoder', async () => {
    const frame = await pipedStream(data, { windowLog: 28, enableLongDistanceMatching: true })
    expect(header(frame).windowSize).toBe(2 ** 28)
    expect(() => decompressSync(frame)).toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_frameParameter_windowTooLarge' }) as Error,
    )
    expect(decompressSync(frame, { windowLogMax: 28 }).equals(data)).toBe(true)
    expect((await decompress(frame, { windowLogMax: 28 })).equals(data)).toBe(true)
  })

  it.skipIf(skipWithoutZstdCli)('and --long=N from the zstd tool, which decodes ours and makes frames we decode', async () => {
    const frame = await pipedStream(data, { windowLog: 28, enableLongDistanceMatching: true })
    expect(() => zstdPiped(['-d'], frame)).toThrow()
    expect(zstdPiped(['-d', '--long=28'], frame).equals(data)).toBe(true)
    const theirs = zstdPiped(['-c', '--long=28'], data)
    expect(decompressSync(theirs, { windowLogMax: 28 }).equals(data)).toBe(true)
  })
})
