import { afterAll, describe, expect, it } from 'vitest'

import { compress, compressSync, configurePool, decompress, decompressSync, poolStats } from 'zstd-pool'
import { skipWithoutZstdCli, textOfLength, wasi, zstdPiped } from './helpers'

const big = textOfLength(20 << 20)
const stats = () => poolStats().multithreaded

// These tests count reuse between calls: a slow machine must not free the cache between them.
const { idleTimeoutMs } = configurePool({ idleTimeoutMs: Number.POSITIVE_INFINITY })
afterAll(() => configurePool({ maxIdleMultithreadedContexts: 1, idleTimeoutMs }))

// The WebAssembly build's libzstd has no threads (the WASI sysroot has no pthreads for C).
describe.skipIf(wasi)('compress with workers', () => {
  it('round-trips large inputs compressed on worker threads, sync and async', async () => {
    const before = stats()
    const frame = compressSync(big, { level: 1, workers: 2 })
    expect(decompressSync(frame).equals(big)).toBe(true)
    expect((await decompress(await compress(big, { level: 3, workers: 2 }))).equals(big)).toBe(true)
    expect(stats().created + stats().reused - before.created - before.reused).toBe(2)
  })

  it('reuses a cached context for the same level and workers, not for another level', () => {
    configurePool({ maxIdleMultithreadedContexts: 2 })
    const first = stats()
    compressSync(big, { level: 1, workers: 2 })
    compressSync(big, { level: 1, workers: 2 })
    const sameKey = stats()
    expect(sameKey.reused - first.reused).toBeGreaterThanOrEqual(1)
    compressSync(big, { level: 2, workers: 2 })
    expect(stats().created - sameKey.created).toBe(1)
    expect(stats().idle).toBeLessThanOrEqual(2)
    expect(stats().inUse).toBe(0)
  })

  it('keeps at most maxIdleMultithreadedContexts, the least recently used leaving first', () => {
    configurePool({ maxIdleMultithreadedContexts: 1 })
    expect(stats().idle).toBeLessThanOrEqual(1)
    compressSync(big, { level: 1, workers: 2 })
    compressSync(big, { level: 2, workers: 2 })
    const afterTwoKeys = stats()
    expect(afterTwoKeys.idle).toBe(1)
    compressSync(big, { level: 2, workers: 2 })
    expect(stats().reused - afterTwoKeys.reused).toBe(1)
    configurePool({ maxIdleMultithreadedContexts: 2 })
  })

  it('writes the same bytes from a cached context as from a fresh one, call after call', () => {
    const inputs = [textOfLength(17 << 20), big, textOfLength(18 << 20).reverse()]
    configurePool({ maxIdleMultithreadedContexts: 2 })
    const cached = inputs.map((input) => compressSync(input, { level: 3, workers: 2 }))
    configurePool({ maxIdleMultithreadedContexts: 0 })
    const created = stats().created
    const fresh = inputs.map((input) => compressSync(input, { level: 3, workers: 2 }))
    expect(stats().created - created).toBe(3)
    configurePool({ maxIdleMultithreadedContexts: 2 })
    cached.forEach((frame, i) => {
      expect(frame.equals(fresh[i]), `input ${i}`).toBe(true)
    })
  })

  it('compresses single-threaded when workers is 0 or 1, or the input is too small for threads to help', () => {
    const small = textOfLength(2 << 20)
    const before = stats()
    expect(compressSync(small, { level: 3, workers: 4 }).equals(compressSync(small, 3))).toBe(true)
    expect(compressSync(big, { level: 1, workers: 1 }).equals(compressSync(big, 1))).toBe(true)
    expect(compressSync(big, { level: 1, workers: 0 }).equals(compressSync(big, 1))).toBe(true)
    expect(stats().created + stats().reused).toBe(before.created + before.reused)
  })

  it('runs 8 multi-threaded compressions at once through the async API', async () => {
    const inputs = Array.from({ length: 8 }, (_, i) => textOfLength((16 << 20) + i * 4096))
    const frames = await Promise.all(inputs.map((input) => compress(input, { level: 1, workers: 2 })))
    for (const [i, frame] of frames.entries()) expect(decompressSync(frame).equals(inputs[i]), `call ${i}`).toBe(true)
    expect(stats().inUse).toBe(0)
    expect(stats().idle).toBeLessThanOrEqual(stats().maxIdleContexts)
  })

  it('rejects bad workers values', () => {
    expect(() => compressSync('x', { workers: -1 })).toThrow(RangeError)
    expect(() => compressSync('x', { workers: 2.5 })).toThrow(RangeError)
    expect(() => compressSync('x', { workers: 100_000 })).toThrow(RangeError)
    expect(() => compressSync('x', { workers: '2' } as any)).toThrow(TypeError)
    expect(() => configurePool({ maxIdleMultithreadedContexts: 65 })).toThrow(RangeError)
  })
})

describe.runIf(wasi)('the WebAssembly build', () => {
  it('says that it has no worker threads, and compresses with workers 0 or 1', () => {
    expect(() => compressSync(big, { workers: 2 })).toThrowError(
      expect.objectContaining({ code: 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM' }),
    )
    expect(decompressSync(compressSync(big, { level: 1, workers: 1 })).equals(big)).toBe(true)
    expect(() => compressSync('x', { workers: -1 })).toThrow(RangeError)
  })
})

describe.skipIf(skipWithoutZstdCli || wasi)('multi-threaded frames and the zstd tool', () => {
  it('the zstd tool decompresses them', () => {
    const frame = compressSync(big, { level: 3, workers: 2, checksum: true })
    expect(zstdPiped(['-d', '-c'], frame).equals(big)).toBe(true)
  })
})
