import { execFileSync, spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { markAsUntransferable, Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'

import { compressSync, decompress, decompressSync, poolStats } from 'zstd-pool'
import { corpusFile, wasi } from './helpers'

const root = fileURLToPath(new URL('..', import.meta.url))
const addon = readdirSync(root).find((name) => name.endsWith('.node'))!

/** Whether this runtime refuses to detach an ArrayBuffer marked untransferable (Node 24 on). */
function refusesDetaching() {
  const probe = new ArrayBuffer(8)
  markAsUntransferable(probe)
  // Node 20 has no transfer(), and its BYOB reads detach.
  if (typeof (probe as any).transfer !== 'function') return false
  try {
    ;(probe as any).transfer()
    return false
  } catch {
    return probe.byteLength === 8
  }
}

describe('result Buffers', () => {
  it('are real Buffers; small ones share memory where nothing can detach it, as Buffer.allocUnsafe results do', () => {
    const small = [compressSync('one'), compressSync('two'), decompressSync(compressSync('three'))]
    for (const buffer of small) expect(Buffer.isBuffer(buffer)).toBe(true)
    if (refusesDetaching()) {
      expect(small[0].buffer).toBe(small[1].buffer)
      expect(small[0].buffer.byteLength).toBe(8192)
    } else {
      // Node 20 and 22 can detach any ArrayBuffer (a BYOB read; transfer() on 22): each small
      // result has memory of its own there.
      expect(small[0].buffer).not.toBe(small[1].buffer)
      expect(small[0].buffer.byteLength).toBe(small[0].length)
    }
    const large = decompressSync(compressSync(Buffer.alloc(100_000, 7)))
    expect(large.byteOffset).toBe(0)
    expect(large.buffer.byteLength).toBe(100_000)
  })

  it('keep their bytes whatever is done to another result (transfer, postMessage, a BYOB read)', async () => {
    const earlier = compressSync('earlier result')
    const neighbour = compressSync('a neighbour in the same memory')
    try {
      structuredClone(earlier.buffer, { transfer: [earlier.buffer] })
    } catch {}
    const { port1 } = new MessageChannel()
    try {
      port1.postMessage(earlier, [earlier.buffer])
    } catch {}
    port1.close()
    const later = compressSync('a later result')
    try {
      const stream = new ReadableStream({
        type: 'bytes',
        pull(controller) {
          controller.byobRequest!.view![0] = 1
          controller.byobRequest!.respond(1)
        },
      })
      await stream.getReader({ mode: 'byob' }).read(later)
    } catch {}
    expect(decompressSync(neighbour).toString()).toBe('a neighbour in the same memory')
    expect(decompressSync(compressSync('and the next one')).toString()).toBe('and the next one')
  })

  it.skipIf(wasi)(
    'made on the threadpool and large are the memory they were made in, whole even when transferred, given back once collected',
    async () => {
      const content = corpusFile('lcet10.txt').subarray(0, 64 << 10)
      const frame = compressSync(content)
      const before = poolStats().scratch.inUse
      let result: Buffer | undefined = await decompress(frame)
      expect(result.equals(content)).toBe(true)
      expect(result.byteOffset).toBe(0)
      expect(result.buffer.byteLength).toBe(content.length)
      // Held by the result, not copied out of it.
      expect(poolStats().scratch.inUse).toBe(before + 1)
      // Moved to another ArrayBuffer where the runtime can (Node 22 on), the memory goes with it:
      // other calls, which take scratch buffers from the pool, never write into it.
      let moved: Uint8Array | undefined =
        'transfer' in ArrayBuffer.prototype ? new Uint8Array((result.buffer as any).transfer()) : result
      result = undefined
      for (let round = 0; round < 4; round++) {
        await Promise.all(Array.from({ length: 8 }, () => decompress(compressSync(Buffer.alloc(64 << 10, round)))))
        globalThis.gc?.()
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(Buffer.from(moved.buffer, moved.byteOffset, moved.length).equals(content)).toBe(true)
      // Collected, then finalized on a later turn of the event loop: back in the pool.
      moved = undefined
      for (let turn = 0; turn < 20 && poolStats().scratch.inUse > before; turn++) {
        globalThis.gc?.()
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(poolStats().scratch.inUse).toBe(before)
      // Smaller results are copies, which hold nothing of the pool's.
      const small = await decompress(compressSync(content.subarray(0, 8 << 10)))
      expect(small.equals(content.subarray(0, 8 << 10))).toBe(true)
      expect(poolStats().scratch.inUse).toBe(before)
    },
  )

  it("are a worker's own memory, which keeps its bytes on the thread it was moved to after the worker ends", async () => {
    // A worker's environment frees its external memory when it ends, even memory transferred to
    // another thread meanwhile (Node 26): a worker's large results are copies.
    const main = fileURLToPath(new URL('../main.js', import.meta.url))
    const code = `
      const { parentPort } = require('node:worker_threads')
      const { compressSync, decompress } = require(${JSON.stringify(main)})
      decompress(compressSync(Buffer.alloc(64 << 10, 0x41))).then((result) => {
        const memory = 'transfer' in ArrayBuffer.prototype ? result.buffer.transfer() : result.buffer
        parentPort.postMessage(memory, [memory])
      })`
    const worker = new Worker(code, { eval: true })
    const memory: ArrayBuffer = await new Promise((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
    await new Promise((resolve) => worker.once('exit', resolve))
    const view = new Uint8Array(memory)
    expect(view.length).toBe(64 << 10)
    await Promise.all(Array.from({ length: 8 }, () => decompress(compressSync(Buffer.alloc(64 << 10, 0x42)))))
    expect(view.every((byte) => byte === 0x41)).toBe(true)
  })
})

describe('the package entries', () => {
  it('export the same public API from CommonJS (main.js) and as ES module named exports (main.mjs)', async () => {
    const { createRequire } = await import('node:module')
    const cjs = createRequire(import.meta.url)('../main.js')
    const esm = await import('../main.mjs')
    const publicNames = Object.keys(cjs).filter((name) => !name.startsWith('__'))
    expect(publicNames.filter((name) => !(name in esm))).toEqual([])
    expect(esm.default.compress).toBe(esm.compress)
  })
})

describe('the native addon', () => {
  // nm comes with binutils, which Rust's linker needs on Linux; CI checks that it is there.
  const withoutNm = spawnSync('nm', ['--version']).status !== 0 && !process.env.CI
  it.skipIf(process.platform !== 'linux' || withoutNm)(
    'keeps libzstd private: it neither exports nor imports any ZSTD_ symbol',
    () => {
      // Node 22.15+ exports its own ZSTD_* symbols; an addon that exposed or imported them
      // could end up calling Node's copy of libzstd instead of its own.
      const symbols = execFileSync('nm', ['-D', `${root}/${addon}`], { encoding: 'utf8' })
      expect(symbols).not.toMatch(/\bZSTD_/)
      expect(symbols).toMatch(/napi_register_module_v1/)
    },
  )

  it('works from several worker_threads at once, sharing the process-wide pools', async () => {
    const data = corpusFile('asyoulik.txt')
    const source = `
      const { parentPort, workerData } = require('node:worker_threads')
      const zstd = require(workerData.entry)
      ;(async () => {
        let ok = true
        for (let i = 0; i < 50; i++) {
          const frame = i % 2 ? zstd.compressSync(workerData.data, 3) : await zstd.compress(workerData.data, 3)
          const back = i % 2 ? await zstd.decompress(frame) : zstd.decompressSync(frame)
          ok = ok && Buffer.compare(back, workerData.data) === 0
        }
        parentPort.postMessage(ok)
      })()
    `
    const results = await Promise.all(
      Array.from({ length: 4 }, () => {
        const worker = new Worker(source, { eval: true, workerData: { entry: `${root}/main.js`, data } })
        return new Promise((resolve, reject) => {
          worker.once('message', resolve)
          worker.once('error', reject)
        }).finally(() => worker.terminate())
      }),
    )
    expect(results).toEqual([true, true, true, true])
    expect(decompressSync(compressSync(data)).equals(data)).toBe(true)
    expect(poolStats().compressors.inUse).toBe(0)
  })
})
