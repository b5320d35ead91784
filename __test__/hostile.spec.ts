import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'

import { compress, compressSync, decompress, decompressSync, poolStats } from 'zstd-pool'
import { fuzz } from '../scripts/fuzz.mjs'
import { corpus, rleBomb, textOfLength, wasi } from './helpers'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('hostile input', () => {
  it('mutated real frames decode within their limits or fail with a coded Error, one-shot and streamed alike (fixed seed)', async () => {
    const { executions, counts } = await fuzz({ seed: 20261130, iterations: 20_000 })
    expect(executions).toBe(20_000)
    expect(counts.decoded).toBeGreaterThan(0)
    expect(counts.streamed).toBeGreaterThan(1000)
    expect(counts['stream compressed']).toBeGreaterThan(100)
    expect(counts.ZSTD_error_dictionary_wrong).toBeGreaterThan(0)
    expect(Object.keys(counts).length).toBeGreaterThan(3)
    expect(poolStats().decompressors.inUse).toBe(0)
  })

  it('a few kilobytes that expand to 4 GiB fail at maxOutputLength, sync and async, in bounded memory', async () => {
    const bomb = rleBomb(32768) // 128 KiB of input, 4 GiB of output
    const before = process.memoryUsage().rss
    expect(() => decompressSync(bomb, { maxOutputLength: 64 << 20 })).toThrow(RangeError)
    await expect(decompress(bomb, { maxOutputLength: 64 << 20 })).rejects.toThrow(RangeError)
    expect(process.memoryUsage().rss - before).toBeLessThan(512 << 20)
  })
})

describe('load', () => {
  it('completes 10,000 async calls issued at once, with the pools bounded and the loop turning', async () => {
    const inputs = corpus.map(({ data }, i) => data.subarray(0, 1024 << (i % 7)))
    const frames = inputs.map((input) => compressSync(input))
    let turns = 0
    const ticker = setInterval(() => turns++, 1)
    const before = process.memoryUsage().rss
    const calls = Array.from({ length: 10_000 }, (_, i) =>
      i % 2 ? compress(inputs[i % inputs.length]) : decompress(frames[i % frames.length]),
    )
    const results = await Promise.all(calls)
    clearInterval(ticker)
    results.forEach((result, i) => {
      const expected = i % 2 ? frames[i % frames.length] : inputs[i % inputs.length]
      if (!result.equals(expected)) throw new Error(`call ${i} returned the wrong bytes`)
    })
    const { compressors, decompressors } = poolStats()
    for (const pool of [compressors, decompressors]) {
      expect(pool.inUse).toBe(0)
      expect(pool.idle).toBeLessThanOrEqual(pool.maxIdleContexts)
      expect(pool.created).toBeLessThanOrEqual(
        pool.maxIdleContexts + pool.freedOverBound + pool.freedIdle + pool.droppedAfterError,
      )
    }
    expect(process.memoryUsage().rss - before).toBeLessThan(1 << 30)
    // The WebAssembly build queues work at a cost close to doing it (see docs/wasm.md, its limits).
    if (!wasi) expect(turns).toBeGreaterThan(0)
  })
})

describe('long runs', () => {
  it('RSS flattens under a soak of mixed sync and async calls', () => {
    const soak = spawnSync(process.execPath, ['--expose-gc', `${root}scripts/soak.mjs`, '15'], { encoding: 'utf8' })
    expect(soak.status, soak.stdout + soak.stderr).toBe(0)
  })
})

describe('worker_threads', () => {
  it('survive being terminated mid-call, and the pools stay consistent', async () => {
    const source = `
      const { parentPort, workerData } = require('node:worker_threads')
      const zstd = require(workerData.entry)
      const input = Buffer.alloc(8 << 20, 'worker data ')
      parentPort.postMessage('started')
      for (let i = 0; i < 1000; i++) zstd.compress(input, { level: 3 }).then((frame) => zstd.decompress(frame))
    `
    for (let round = 0; round < 3; round++) {
      const workers = Array.from({ length: 4 }, () => new Worker(source, { eval: true, workerData: { entry: `${root}main.js` } }))
      await Promise.all(workers.map((worker) => new Promise((resolve) => worker.once('message', resolve))))
      await new Promise((resolve) => setTimeout(resolve, 30))
      await Promise.all(workers.map((worker) => worker.terminate()))
    }
    const data = textOfLength(1 << 20)
    expect((await decompress(await compress(data))).equals(data)).toBe(true)
    // Work already running when its worker ended still finishes on its libuv thread, then
    // gives its context back.
    for (let wait = 0; wait < 200 && poolStats().compressors.inUse + poolStats().decompressors.inUse > 0; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(poolStats().compressors.inUse).toBe(0)
    expect(poolStats().decompressors.inUse).toBe(0)
  })
})
