import { describe, expect, it } from 'vitest'

import { compress, compressSync, DEFAULT_LEVEL, decompressSync, MAX_LEVEL, MIN_LEVEL } from 'zstd-pool'
import { corpus, corpusFile, skipWithoutZstdCli, zstdPiped } from './helpers'

const levels = [-5, 1, 3, 9, 19]

/** The content size a frame header records, or undefined. */
function recordedContentSize(frame: Buffer): number | undefined {
  const descriptor = frame[4]
  const sizeFlag = descriptor >> 6
  const singleSegment = (descriptor >> 5) & 1
  const offset = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]
  const sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][sizeFlag]
  if (sizeBytes === 0) return undefined
  const value = frame.readUIntLE(offset, Math.min(sizeBytes, 6))
  return sizeBytes === 2 ? value + 256 : value
}

describe('compressSync', () => {
  it.each(levels)('round-trips every corpus file at level %i', (level) => {
    for (const { name, data } of corpus) {
      expect(decompressSync(compressSync(data, level)).equals(data), name).toBe(true)
    }
  })

  it('takes the level as a number or in an options object, and defaults to 3', () => {
    const data = corpusFile('html')
    const atDefault = compressSync(data)
    expect(DEFAULT_LEVEL).toBe(3)
    expect(compressSync(data, 3).equals(atDefault)).toBe(true)
    expect(compressSync(data, { level: 3 }).equals(atDefault)).toBe(true)
    expect(compressSync(data, {}).equals(atDefault)).toBe(true)
    expect(compressSync(data, 19).length).toBeLessThan(atDefault.length)
  })

  it('accepts fast negative levels down to MIN_LEVEL, and MAX_LEVEL', () => {
    const data = corpusFile('alice29.txt')
    const fast = compressSync(data, -5)
    expect(fast.length).toBeGreaterThan(compressSync(data, 1).length)
    for (const level of [MIN_LEVEL, MAX_LEVEL]) {
      expect(decompressSync(compressSync(data, level)).equals(data)).toBe(true)
    }
  })

  it('compresses empty input to a frame that decompresses to nothing', () => {
    const frame = compressSync(Buffer.alloc(0))
    expect(frame.length).toBeGreaterThan(0)
    expect(decompressSync(frame).length).toBe(0)
  })

  it('accepts every input type: Buffer, TypedArrays, DataView, ArrayBuffer, string', () => {
    const bytes = Buffer.from(corpusFile('urls.10K').subarray(1000, 9000))
    const expected = compressSync(bytes)
    const copy = () => new Uint8Array(bytes).buffer
    const inputs = {
      Uint8Array: new Uint8Array(copy()),
      Int16Array: new Int16Array(copy()),
      Float64Array: new Float64Array(copy()),
      BigUint64Array: new BigUint64Array(copy()),
      DataView: new DataView(copy()),
      ArrayBuffer: copy(),
      'offset view': (() => {
        const padded = new Uint8Array(13 + bytes.length)
        padded.set(bytes, 13)
        return new Uint8Array(padded.buffer, 13, bytes.length)
      })(),
    }
    for (const [kind, input] of Object.entries(inputs)) {
      expect(compressSync(input).equals(expected), kind).toBe(true)
    }
    const text = 'zstd-pool ✓ ünïcödé '.repeat(100)
    expect(decompressSync(compressSync(text)).toString('utf8')).toBe(text)
  })

  it('writes standard frames that record their content size', () => {
    for (const { data } of corpus.slice(0, 4)) {
      expect(recordedContentSize(compressSync(data))).toBe(data.length)
    }
    expect(recordedContentSize(compressSync(Buffer.alloc(0)))).toBe(0)
  })

  it('adds a content checksum when asked', () => {
    const data = corpusFile('html')
    const plain = compressSync(data)
    const checked = compressSync(data, { checksum: true })
    expect(checked.length).toBe(plain.length + 4)
    expect(decompressSync(checked).equals(data)).toBe(true)
  })

  it('rejects wrong types with a TypeError and bad values with a RangeError', () => {
    for (const data of [undefined, null, 42, {}, [1, 2], Symbol('x'), () => 1]) {
      expect(() => compressSync(data as any)).toThrowError(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
      )
    }
    expect(() => compressSync('x', '3' as any)).toThrow(TypeError)
    expect(() => compressSync('x', { checksum: 'yes' } as any)).toThrow(/"options.checksum" property must be of type boolean/)
    expect(() => compressSync('x', { level: 'high' } as any)).toThrow(TypeError)
    expect(() => compressSync('x', { signal: {} } as any)).toThrow(/AbortSignal/)
    for (const level of [MAX_LEVEL + 1, MIN_LEVEL - 1, 2.5, NaN, Infinity]) {
      expect(() => compressSync('x', level)).toThrowError(
        expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }),
      )
      expect(() => compressSync('x', { level })).toThrow(/"options.level" is out of range/)
    }
    expect(() => compressSync('x', 23)).toThrow('It must be an integer >= -131072 and <= 22. Received 23')
  })
})

describe('compress', () => {
  it.each(levels)('gives byte-identical output to compressSync at level %i', async (level) => {
    for (const { name, data } of corpus) {
      expect((await compress(data, level)).equals(compressSync(data, level)), name).toBe(true)
    }
  })

  it('rejects (never throws) for bad arguments', async () => {
    await expect(compress(42 as any)).rejects.toThrow(TypeError)
    await expect(compress('x', 99)).rejects.toThrow(RangeError)
  })
})

describe.skipIf(skipWithoutZstdCli)('compressed frames and the zstd tool', () => {
  it.each(levels)('the zstd tool decompresses our level %i frames', (level) => {
    for (const { name, data } of corpus) {
      const frame = compressSync(data, { level, checksum: level === 3 })
      expect(zstdPiped(['-d', '-c'], frame).equals(data), name).toBe(true)
    }
  })
})
