import { execFileSync, spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { markAsUntransferable, Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'

import { compress, compressSync, decompress, decompressSync, poolStats } from 'zstd-pool'
import { corpusFile, memoryFromWorker } from './helpers'

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

  it('of async calls, large ones too, can be sent to another thread with a transfer list, as Node Buffers can', async () => {
    // Node refuses to transfer the memory of an external Buffer (DataCloneError): results made
    // on the threadpool are copied into memory of Node's own, however large.
    const content = corpusFile('lcet10.txt').subarray(0, 64 << 10)
    const random = Buffer.from(Array.from({ length: 64 << 10 }, (_, i) => (i * 2654435761) >>> 24))
    const results = await Promise.all([
      ...Array.from({ length: 8 }, () => decompress(compressSync(content))),
      decompress(compressSync(Buffer.concat(Array.from({ length: 16 }, () => content)))),
      compress(random),
    ])
    const expected = results.map((result) => Buffer.from(result))
    results.forEach((result, index) => {
      const moved = structuredClone(result.buffer, { transfer: [result.buffer] })
      expect(result.length).toBe(0)
      expect(Buffer.from(moved).equals(expected[index])).toBe(true)
    })
    expect(expected[0].equals(content)).toBe(true)
    expect(decompressSync(expected[9]).equals(random)).toBe(true)
  })

  it("are a worker's own memory, which keeps its bytes on the thread it was moved to after the worker ends", async () => {
    const main = fileURLToPath(new URL('../main.js', import.meta.url))
    const code = `
      const { parentPort } = require('node:worker_threads')
      const { compressSync, decompress } = require(${JSON.stringify(main)})
      decompress(compressSync(Buffer.alloc(64 << 10, 0x41))).then((result) => {
        parentPort.postMessage(result.buffer, [result.buffer])
      })`
    const memory = await memoryFromWorker(code)
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
