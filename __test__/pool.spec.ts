import { cpus } from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'

import { compress, compressSync, configurePool, createDecompressStream, decompress, decompressSync, poolStats } from 'zstd-pool'
import { corpusFile, textOfLength, wasi } from './helpers'

const defaults = poolStats()
const defaultMaxIdle = defaults.compressors.maxIdleContexts

afterAll(() =>
  configurePool({
    maxIdleContexts: defaultMaxIdle,
    maxIdleBytes: defaults.compressors.maxIdleBytes,
    idleTimeoutMs: defaults.idleTimeoutMs,
  }),
)

describe('the context pools', () => {
  it('are bounded by the libuv threadpool size plus the CPU count', () => {
    const threadpool = Number(process.env.UV_THREADPOOL_SIZE) || 4
    // WASI tells the WebAssembly build of no CPU but its own.
    expect(defaultMaxIdle).toBe(threadpool + (wasi ? 1 : cpus().length))
    expect(poolStats().decompressors.maxIdleContexts).toBe(defaultMaxIdle)
  })

  it('reuse contexts: thousands of calls create no more contexts than the bound', async () => {
    const data = corpusFile('html').subarray(0, 4096)
    const frame = compressSync(data)
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 50; i++) {
        compressSync(data)
        decompressSync(frame)
      }
      await Promise.all(Array.from({ length: 64 }, (_, i) => (i % 2 ? compress(data) : decompress(frame))))
    }
    const { compressors, decompressors } = poolStats()
    for (const pool of [compressors, decompressors]) {
      expect(pool.created).toBeLessThanOrEqual(pool.maxIdleContexts)
      expect(pool.reused).toBeGreaterThan(4000)
      expect(pool.inUse).toBe(0)
      expect(pool.idle).toBeLessThanOrEqual(pool.maxIdleContexts)
    }
  })

  it('drop a context that saw an error instead of returning it', async () => {
    const before = poolStats().decompressors
    expect(() => decompressSync(Buffer.from('not zstd'))).toThrow()
    await expect(decompress(compressSync('abc').subarray(0, 6))).rejects.toThrow()
    const after = poolStats().decompressors
    expect(after.droppedAfterError - before.droppedAfterError).toBe(2)
    expect(after.inUse).toBe(0)
    expect(decompressSync(compressSync('still works')).toString()).toBe('still works')
  })

  it('can be switched off with maxIdleContexts: 0, then on again', async () => {
    const off = configurePool({ maxIdleContexts: 0 })
    expect(off.compressors.idle).toBe(0)
    expect(off.decompressors.idle).toBe(0)
    const created = poolStats().compressors.created
    for (let i = 0; i < 10; i++) compressSync('fresh context each time')
    await compress('and for async calls')
    expect(poolStats().compressors.created - created).toBe(11)

    configurePool({ maxIdleContexts: 2 })
    for (let i = 0; i < 10; i++) compressSync('pooled again')
    expect(poolStats().compressors.idle).toBe(1)
    expect(poolStats().compressors.created - created).toBe(12)
  })

  it('reject bad settings', () => {
    expect(() => configurePool({ maxIdleContexts: -1 })).toThrow(RangeError)
    expect(() => configurePool({ maxIdleContexts: 1025 })).toThrow(RangeError)
    expect(() => configurePool({ maxIdleContexts: '4' } as any)).toThrow(TypeError)
    expect(() => configurePool(undefined as any)).toThrow(TypeError)
    expect(configurePool({}).compressors.maxIdleContexts).toBe(2)
    for (const maxIdleBytes of [-1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, 2 ** 53]) {
      expect(() => configurePool({ maxIdleBytes })).toThrow(RangeError)
    }
    for (const idleTimeoutMs of [0, -1, 0.5, 2 ** 31, Number.NaN]) {
      expect(() => configurePool({ idleTimeoutMs })).toThrow(RangeError)
    }
    expect(() => configurePool({ maxIdleBytes: '1' } as any)).toThrow(TypeError)
    expect(() => configurePool({ idleTimeoutMs: 10n } as any)).toThrow(TypeError)
    // A bad option applies none of them.
    expect(() => configurePool({ maxIdleContexts: 3, idleTimeoutMs: 0 })).toThrow(RangeError)
    expect(poolStats().compressors.maxIdleContexts).toBe(2)
  })
})

describe('memory the pools hold', () => {
  it('defaults to 16 MiB of idle contexts per pool, freed after 5 s without use', () => {
    expect(defaults.compressors.maxIdleBytes).toBe(16 * 2 ** 20)
    expect(defaults.decompressors.maxIdleBytes).toBe(16 * 2 ** 20)
    expect(defaults.multithreaded.maxIdleBytes).toBe(Number.POSITIVE_INFINITY)
    expect(defaults.idleTimeoutMs).toBe(5000)
  })

  it('reports the bytes idle contexts hold, within the budget, and frees them when it shrinks', () => {
    configurePool({ maxIdleContexts: defaultMaxIdle, maxIdleBytes: 16 * 2 ** 20 })
    const data = textOfLength(256 << 10)
    // A level-9 context for 256 KiB holds megabytes, far more than the contexts of the small
    // calls before: the first few are freed on return, until the pool follows the new load.
    const freed = poolStats().compressors.freedOverBound
    for (let i = 0; i < 12; i++) compressSync(data, 9)
    decompressSync(compressSync(data.subarray(0, 1024)))
    const { compressors, decompressors } = poolStats()
    expect(compressors.freedOverBound - freed).toBeGreaterThan(0)
    expect(compressors.idleBytes).toBeGreaterThan(2e6)
    expect(compressors.idleBytes).toBeLessThanOrEqual(compressors.maxIdleBytes)
    // A decompression context holds about 96 KB.
    expect(decompressors.idleBytes).toBeGreaterThan(50e3)
    expect(compressors.inUseBytes + decompressors.inUseBytes).toBe(0)

    const shrunk = configurePool({ maxIdleBytes: 0 })
    expect(shrunk.compressors).toMatchObject({ idle: 0, idleBytes: 0, maxIdleBytes: 0 })
    expect(shrunk.decompressors).toMatchObject({ idle: 0, idleBytes: 0 })
    const created = shrunk.compressors.created
    expect(decompressSync(compressSync('no budget, no pooling')).toString()).toBe('no budget, no pooling')
    expect(poolStats().compressors).toMatchObject({ idle: 0, created: created + 1 })

    const unbounded = configurePool({ maxIdleBytes: Number.POSITIVE_INFINITY, idleTimeoutMs: Number.POSITIVE_INFINITY })
    expect(unbounded.compressors.maxIdleBytes).toBeGreaterThan(2 ** 52)
    expect(unbounded.idleTimeoutMs).toBe(Number.POSITIVE_INFINITY)
    configurePool({ maxIdleBytes: 16 * 2 ** 20, idleTimeoutMs: 5000 })
  })

  it('frees idle contexts, pooled and multi-threaded, after idleTimeoutMs without use', async () => {
    configurePool({ idleTimeoutMs: 200 })
    const input = textOfLength(4 << 20)
    // Level 1 uses worker threads from 4 MiB on: the cache keeps the context and its threads
    // (except in the WebAssembly build, which has none).
    const frame = compressSync(input, { level: 1, workers: wasi ? 0 : 2 })
    decompressSync(frame)
    compressSync(input.subarray(0, 1024))
    // An input of more than about 4 KiB is compressed in a scratch buffer.
    compressSync(input.subarray(0, 64 << 10))
    const held = poolStats()
    if (!wasi) expect(held.scratch.idleBytes).toBeGreaterThan(64 << 10)
    expect(held.multithreaded.idle).toBe(wasi ? 0 : 1)
    if (!wasi) expect(held.multithreaded.idleBytes).toBeGreaterThan(1e6)
    expect(held.compressors.idle).toBeGreaterThan(0)
    // Freed between 200 and 250 ms after their last use, by a thread of their own.
    await new Promise((resolve) => setTimeout(resolve, 600))
    const freed = poolStats()
    for (const pool of ['compressors', 'decompressors', 'multithreaded', 'scratch'] as const) {
      expect(freed[pool]).toMatchObject({ idle: 0, idleBytes: 0 })
      expect(freed[pool].freedIdle - held[pool].freedIdle).toBe(held[pool].idle)
    }
    configurePool({ idleTimeoutMs: 5000 })
  })

  it('takes back the scratch buffers of calls cancelled before they ran, not counting them as failed', async () => {
    const frame = compressSync(textOfLength(1 << 20))
    const before = poolStats().scratch
    // Every libuv thread busy for a while, so that the calls below wait in the queue.
    const big = textOfLength(4 << 20)
    const blockers = Array.from({ length: 8 }, () => compress(big, 12))
    const controller = new AbortController()
    const calls = Array.from({ length: 20 }, () => decompress(frame, { signal: controller.signal }))
    controller.abort()
    const settled = await Promise.allSettled(calls)
    await Promise.all(blockers)
    expect(settled.every((outcome) => outcome.status === 'rejected')).toBe(true)
    const after = poolStats().scratch
    expect(after.droppedAfterError).toBe(before.droppedAfterError)
    expect(after.inUse).toBe(0)
  })

  it('counts a stream context in use, as it grows, until the stream ends', async () => {
    const frame = compressSync(textOfLength(4 << 20), { level: 19 })
    const before = poolStats().decompressors.inUseBytes
    const stream = createDecompressStream()
    const chunks: Buffer[] = []
    const first = new Promise((resolve) => stream.once('data', resolve))
    stream.on('data', (chunk) => chunks.push(chunk))
    stream.write(frame.subarray(0, frame.length >> 1))
    await first
    // Once it has decoded something, the stream's window (8 MiB at level 19) is part of its context.
    expect(poolStats().decompressors.inUseBytes - before).toBeGreaterThan(4 << 20)
    stream.end(frame.subarray(frame.length >> 1))
    await new Promise((resolve) => stream.on('end', resolve))
    expect(Buffer.concat(chunks).length).toBe(4 << 20)
    expect(poolStats().decompressors.inUseBytes).toBe(before)
  })
})
