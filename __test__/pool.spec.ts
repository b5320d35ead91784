import { cpus } from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'

import { compress, compressSync, configurePool, decompress, decompressSync, poolStats } from 'zstd-pool'
import { corpusFile } from './helpers'

const defaultMaxIdle = poolStats().compressors.maxIdleContexts

afterAll(() => configurePool({ maxIdleContexts: defaultMaxIdle }))

describe('the context pools', () => {
  it('are bounded by the libuv threadpool size plus the CPU count', () => {
    const threadpool = Number(process.env.UV_THREADPOOL_SIZE) || 4
    expect(defaultMaxIdle).toBe(threadpool + cpus().length)
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
  })
})
