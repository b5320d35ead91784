// JavaScript that runs inside a call (getters, Proxy traps, async_hooks, patched globals, abort
// listeners) and JavaScript that detaches, resizes or transfers buffers must never crash the
// process, hang it, or change another call's result. Each test here failed on the binding layer
// before it was rebuilt (issue 11); the crashes run in child processes, on every Node at hand.
import { createRequire } from 'node:module'
import { dirname, sep } from 'node:path'
import { describe, expect, it } from 'vitest'

import * as zstd from 'zstd-pool'
import { compress, compressSync, createDecompressStream, decompress, decompressSync, ZstdDecompressionStream } from 'zstd-pool'
import { hostile, nodes, rleBomb, textOfLength, wasi } from './helpers'

declare const gc: () => void

const fulfilled = expect.objectContaining({ status: 'fulfilled' })
const codedFailure = expect.objectContaining({ status: 'rejected', code: expect.stringMatching(/^(ZSTD_error_\w+|ERR_\w+)$/) })

describe.each(nodes)('in a child process on Node $version', ({ path, major }) => {
  it('an abort listener called after its call completed does nothing (no crash, no later call aborted)', () => {
    expect(hostile(path, 'stale-abort-listener')).toEqual({ staleWasListener: true, unrelated: ['fulfilled', 'fulfilled'] })
  })

  it('an async_hooks init hook that shrinks or transfers the input cannot crash compress, decompress or a stream write', () => {
    const [compressed, decompressed, streamed] = hostile(path, 'shrink:async-hook')
    expect(compressed).toEqual(fulfilled)
    // The input was emptied before the call owned a copy of it: nothing to decode.
    expect(decompressed).toEqual(expect.objectContaining({ code: 'ZSTD_error_prefix_unknown' }))
    expect(streamed).toEqual(fulfilled)
    expect(hostile(path, 'transfer:async-hook')).toEqual(fulfilled)
  })

  it('a signal whose `aborted` getter shrinks the input on a second read is read once', () => {
    expect(hostile(path, 'shrink:signal-reads')).toEqual(fulfilled)
  })

  it('getters on globals and a patched Buffer.from or process.getBuiltinModule cannot shrink an input under a call', () => {
    expect(hostile(path, 'shrink:first-call-globals')).toEqual([fulfilled, fulfilled])
    expect(hostile(path, 'shrink:buffer-from')).toEqual([
      expect.objectContaining({ status: 'fulfilled', length: 3000 }),
      expect.objectContaining({ status: 'fulfilled', length: 3000 }),
    ])
  })

  it("a Symbol.hasInstance on the binding's classes never runs inside a call (it could shrink the input)", () => {
    expect(hostile(path, 'shrink:class-has-instance')).toEqual({ ran: 0, outcomes: Array(7).fill('fulfilled') })
  })

  it('trainDictionarySync reads every sample before any native code sees one', () => {
    expect(hostile(path, 'shrink:train-getters')).toEqual(expect.objectContaining({ status: 'fulfilled', length: 4096 }))
  })

  it('a small frame declaring 32 GiB fails with a coded error, sync and async, never an aborted process', () => {
    const outcomes = hostile(path, 'declared-size')
    expect(outcomes).toHaveLength(4)
    for (const outcome of outcomes) expect(outcome).toEqual(codedFailure)
  })

  // The WebAssembly build reserves its 4 GiB of address space: it cannot load under these limits.
  it.runIf(major <= 22 && !wasi)('a frame declaring 3 GiB fails with a coded error under a memory limit (ulimit -v)', () => {
    const outcomes = hostile(path, 'declared-size', { args: [String(3 * 2 ** 30)], memoryLimitKiB: 3_000_000 })
    for (const outcome of outcomes) expect(outcome).toEqual(codedFailure)
  })

  it('a signal whose addEventListener or removeEventListener throws still gives a Promise that settles', () => {
    expect(hostile(path, 'throwing-listeners')).toEqual({
      thrown: null,
      first: expect.objectContaining({ status: 'rejected', message: 'listener refused' }),
      second: fulfilled,
    })
  })

  it('JavaScript that a first call runs, calling back in, does not deadlock', () => {
    expect(hostile(path, 'reentrant-first-call')).toBe('hello')
  })

  it('detaching one small result (a BYOB read, transfer()) leaves every other result whole', () => {
    const { attempts, sharedSlab, secondIntact } = hostile(path, 'detach-small-result')
    expect(secondIntact).toBe(true)
    // Small results share memory only where nothing can detach it.
    if (attempts.some((attempt: string) => attempt.endsWith('detached'))) expect(sharedSlab).toBe(false)
  })

  it('detaching one small result of a batch leaves every other result whole; they share slabs where nothing can detach them', () => {
    const result = hostile(path, 'detach-batch-result')
    const { attempts, sharedSlab, othersIntact, roundTrip, thenGetterIntact, slabsAfterGetter } = result
    expect({ othersIntact, roundTrip, thenGetterIntact }).toEqual({ othersIntact: true, roundTrip: true, thenGetterIntact: true })
    if (attempts.some((attempt: string) => attempt.endsWith('detached'))) expect(sharedSlab).toBe(false)
    // As the sync calls' small results (issue 27): an ArrayBuffer each cost the memory allocator.
    if (major >= 24 && !wasi) expect([sharedSlab, slabsAfterGetter]).toEqual([true, true])
  })

  it('a result Buffer found with node:inspector and detached meanwhile cannot be written after it is freed', () => {
    const { correct, victimsUntouched } = hostile(path, 'inspector-finds-result', { flags: ['--expose-gc'] })
    expect({ correct, victimsUntouched }).toEqual({ correct: true, victimsUntouched: true })
  })

  it("frameInfo's own Buffer found with node:inspector and detached: frameInfo stays right", () => {
    const { detached, same, contentSize } = hostile(path, 'inspector-detaches-frame-scratch')
    expect({ same, contentSize }).toEqual({ same: true, contentSize: 11 })
    // Under WASI the Buffer is never written; natively it is found and detached.
    if (!wasi) expect(detached).toBeGreaterThan(0)
  })

  it.runIf(major <= 22 && !wasi)(
    '64 small frames declaring 64 MiB each, at once, under a memory limit, fail with coded errors',
    () => {
      const outcomes = hostile(path, 'concurrent-declared', { memoryLimitKiB: 4_000_000 })
      for (const outcome of outcomes) expect(outcome).toMatch(/^rejected (ZSTD_error_\w+|ERR_MEMORY_ALLOCATION_FAILED)$/)
    },
  )

  it('a throwing `code` setter on Error.prototype: every call still fails with its coded error, nothing uncaught', () => {
    expect(hostile(path, 'code-setter')).toEqual({
      codes: ['ZSTD_error_srcSize_wrong', 'ZSTD_error_srcSize_wrong', expect.stringMatching(/^ZSTD_error_/), 'ERR_OUT_OF_RANGE'],
      uncaught: [],
    })
  })

  it.skipIf(wasi)('a result too large to be held twice under a memory limit fails with a coded error, sync and async', () => {
    const outcomes = hostile(path, 'large-result', { memoryLimitKiB: 3_000_000 })
    expect(outcomes).toEqual([
      expect.objectContaining({ status: 'rejected', code: 'ERR_MEMORY_ALLOCATION_FAILED' }),
      expect.objectContaining({ status: 'rejected', code: 'ERR_MEMORY_ALLOCATION_FAILED' }),
    ])
  })

  it('a write callback that throws is an uncaught exception, not an unhandled rejection', () => {
    expect(hostile(path, 'throwing-write-callback')).toEqual(['uncaughtException: thrown by a write callback'])
  })

  it.runIf(major <= 22)('a transfer() replaced before loading does not make slabs shared where BYOB reads detach them', () => {
    expect(hostile(path, 'fooled-slab-probe')).toEqual({ secondIntact: true })
  })

  it.runIf(major === 22)('reads a Float16Array whole (Node 22 with --js-float16array)', () => {
    expect(hostile(path, 'float16', { flags: ['--js-float16array'] })).toEqual({ byteLength: 2000, roundTrip: 2000, equal: true })
  })
})

describe('the Promise functions', () => {
  it('reject, never throw, whatever the arguments do: throwing getters and Proxy traps included', async () => {
    const throwing = {
      get level() {
        throw new Error('level getter')
      },
    }
    const trap = new Proxy(
      {},
      {
        get: () => {
          throw new Error('proxy trap')
        },
        has: () => {
          throw new Error('proxy trap')
        },
      },
    )
    const calls = [
      () => compress('x', throwing),
      () => compress('x', trap),
      () => compress('x', { signal: trap as any }),
      () =>
        compress('x', {
          signal: {
            aborted: false,
            addEventListener: () => {
              throw new Error('listener')
            },
          } as any,
        }),
      () =>
        decompress(compressSync('x'), {
          get maxOutputLength(): number {
            throw new Error('getter')
          },
        }),
      () => decompress(compressSync('x'), trap),
      () => compress(trap as any),
      () => compress(Symbol('x') as any),
    ]
    for (const call of calls) {
      let promise: Promise<Buffer> | undefined
      expect(() => (promise = call())).not.toThrow()
      await expect(promise).rejects.toThrow()
    }
  })

  it('read a signal once: one whose `aborted` changes between reads neither breaks a call nor leaks one', async () => {
    let reads = 0
    const signal = {
      get aborted() {
        return reads++ % 2 ? undefined : false
      },
      addEventListener() {},
      removeEventListener() {},
    } as any
    const input = textOfLength(64 << 10)
    const results = await Promise.allSettled(Array.from({ length: 200 }, () => compress(input, { level: 9, signal })))
    expect(results.map((result) => result.status)).toEqual(Array(200).fill('fulfilled'))
  })
})

describe('JavaScript that runs inside a call and calls back in', () => {
  it('changes no result through a Symbol.species getter that calls the library again', () => {
    const a = textOfLength(3000)
    const b = Buffer.from('B'.repeat(5000))
    const frameA = compressSync(a)
    const frameB = compressSync(b)
    // Every view a Uint8Array or Buffer method makes would call this first.
    Object.defineProperty(Uint8Array, Symbol.species, {
      configurable: true,
      get: () => {
        decompressSync(frameB)
        compressSync(b)
        return Uint8Array
      },
    })
    try {
      for (let i = 0; i < 20; i++) {
        expect(decompressSync(frameA).equals(a)).toBe(true)
        expect(decompressSync(compressSync(a)).equals(a)).toBe(true)
      }
    } finally {
      delete (Uint8Array as any)[Symbol.species]
    }
  })

  /** A second copy of the package (its modules evaluated again), sharing the binding, as two
   * installs of it in one process do. */
  function secondCopy(): typeof zstd {
    const require = createRequire(import.meta.url)
    const main = require.resolve('zstd-pool')
    const lib = `${dirname(main)}${sep}lib${sep}`
    const ours = Object.keys(require.cache).filter((key) => key === main || key.startsWith(lib))
    const cached = ours.map((key) => [key, require.cache[key]] as const)
    for (const key of ours) delete require.cache[key]
    try {
      return require('zstd-pool') as typeof zstd
    } finally {
      for (const [key, module] of cached) require.cache[key] = module
    }
  }

  it('keeps two copies of the package in one process apart (two installs sharing one binding)', () => {
    const second = secondCopy()
    expect(second).not.toBe(zstd)
    expect(second.compressSync).not.toBe(compressSync)
    const c = Buffer.from('C'.repeat(3000))
    for (let i = 0; i < 3; i++) {
      compressSync('A'.repeat(3000))
      // A large call that makes the second copy's staging area grow under the WebAssembly build.
      expect(second.decompressSync(second.compressSync(textOfLength(5 << 20))).length).toBe(5 << 20)
      expect(decompressSync(compressSync(c)).equals(c)).toBe(true)
      expect(second.decompressSync(compressSync(c)).equals(c)).toBe(true)
    }
  })

  it('changes no result when the global Uint8Array is replaced by one that calls the library again', () => {
    const input = Buffer.from(textOfLength(3000))
    const frame = compressSync(input)
    const RealUint8Array = globalThis.Uint8Array
    let depth = 0
    globalThis.Uint8Array = new Proxy(RealUint8Array, {
      construct(target, args, newTarget) {
        if (depth === 0) {
          depth++
          try {
            decompressSync(compressSync(textOfLength(5000)))
          } finally {
            depth--
          }
        }
        return Reflect.construct(target, args, newTarget)
      },
    })
    try {
      for (let i = 0; i < 20; i++) {
        expect(decompressSync(frame).equals(input)).toBe(true)
        expect(decompressSync(compressSync(input)).equals(input)).toBe(true)
      }
    } finally {
      globalThis.Uint8Array = RealUint8Array
    }
  })

  it('keeps the calls of two copies apart when a call with a prefix or dictionary runs code as its arguments are read', () => {
    // Under WebAssembly, emnapi copies a Buffer argument into the module with
    // `Uint8Array.prototype.set`, after the call is laid out: code patched there can make a call of
    // its own, of the other copy or of this one.
    const second = secondCopy()
    const prefix = Buffer.from('the shared prefix text, ')
    const input = Buffer.from('the shared prefix text, and what follows')
    const frame = compressSync(input, { prefix })
    const dictionary = new zstd.Dictionary(Buffer.from(textOfLength(4000)))
    const dictionaryFrame = compressSync(input, { dictionary })
    const realSet = Uint8Array.prototype.set
    for (const [copy, sameCopy] of [
      [second, false],
      [zstd, true],
    ] as const) {
      let reentered = false
      Uint8Array.prototype.set = function (this: Uint8Array, ...args: any[]) {
        if (!reentered) {
          reentered = true
          copy.decompressSync(copy.compressSync(textOfLength(5000)))
        }
        return realSet.apply(this, args as [ArrayLike<number>, number])
      }
      try {
        for (const [call, expected] of [
          [() => decompressSync(compressSync(input, { prefix }), { prefix }), input],
          [() => decompressSync(frame, { prefix }), input],
          [() => decompressSync(dictionaryFrame, { dictionary }), input],
        ] as const) {
          reentered = false
          try {
            expect(call().equals(expected)).toBe(true)
          } catch (error: any) {
            // The call laid out again under a call of this copy is refused, never run on it.
            if (!sameCopy || error?.code !== 'ERR_NAPI') throw error
          }
        }
      } finally {
        Uint8Array.prototype.set = realSet
      }
    }
    dictionary[Symbol.dispose]()
  })

  it('changes no result: async_hooks, getters and patched prototypes that call the library again', async () => {
    const { createHook } = await import('node:async_hooks')
    const inner = textOfLength(3000)
    const innerFrame = compressSync(inner)
    let depth = 0
    const reenter = () => {
      if (depth > 0) return
      depth++
      try {
        if (!decompressSync(compressSync(inner)).equals(inner) || !decompressSync(innerFrame).equals(inner))
          throw new Error('inner call wrong')
        void compress(inner)
      } finally {
        depth--
      }
    }
    const hook = createHook({ init: reenter }).enable()
    const realSubarray = Buffer.prototype.subarray
    Buffer.prototype.subarray = function (this: Buffer, ...args: any[]) {
      reenter()
      return realSubarray.apply(this, args as [number, number])
    }
    try {
      for (let i = 0; i < 200; i++) {
        const input = textOfLength(100 + i * 37)
        const options = {
          get level() {
            reenter()
            return 1 + (i % 9)
          },
        }
        const frame = i % 2 ? compressSync(input, options) : await compress(input, options)
        const back = i % 3 ? decompressSync(frame) : await decompress(frame)
        expect(back.equals(input), `call ${i}`).toBe(true)
      }
    } finally {
      Buffer.prototype.subarray = realSubarray
      hook.disable()
    }
  })
})

describe('stream backpressure', () => {
  // 16 KiB that expand to 512 MiB, one chunk read, then the reader idles.
  const bomb = rleBomb(4096)
  const idle = () => new Promise((resolve) => setTimeout(resolve, 1000))

  it('the Web decompression stream produces no more than the reader takes', async () => {
    gc()
    const before = process.memoryUsage().rss
    const reader = new Blob([bomb]).stream().pipeThrough(new ZstdDecompressionStream()).getReader()
    expect((await reader.read()).value!.length).toBe(1 << 20)
    await idle()
    expect(process.memoryUsage().rss - before).toBeLessThan(64 << 20)
    await reader.cancel()
  })

  it('the Node decompression stream too', async () => {
    gc()
    const before = process.memoryUsage().rss
    const stream = createDecompressStream()
    stream.end(bomb)
    await new Promise((resolve) => stream.once('readable', resolve))
    expect(stream.read()!.length).toBe(1 << 20)
    await idle()
    expect(process.memoryUsage().rss - before).toBeLessThan(64 << 20)
    stream.destroy()
  })
})

describe('the package', () => {
  it('exports the documented API and nothing else', () => {
    expect(
      Object.keys(zstd)
        .filter((name) => name !== 'default')
        .sort(),
    ).toEqual(
      [
        'compress',
        'compressMany',
        'compressManyPacked',
        'compressManySync',
        'compressSeekable',
        'compressSeekableSync',
        'compressSync',
        'configurePool',
        'createCompressStream',
        'createDecompressStream',
        'createSeekableCompressStream',
        'decompress',
        'decompressMany',
        'decompressManyPacked',
        'decompressManySync',
        'decompressSync',
        'DEFAULT_LEVEL',
        'Dictionary',
        'frameInfo',
        'MAX_LEVEL',
        'MIN_LEVEL',
        'openSeekable',
        'PackedResults',
        'poolStats',
        'Prefix',
        'trainDictionary',
        'trainDictionarySync',
        'finalizeDictionary',
        'finalizeDictionarySync',
        'ZstdCompress',
        'ZstdCompressionStream',
        'ZstdDecompress',
        'ZstdDecompressionStream',
        'ZstdSeekableCompressionStream',
      ].sort(),
    )
  })

  it('keeps the native sessions internal; they refuse malformed settings, and a step while one is running', async () => {
    // The binding is not public; this is the one test that loads it, to check its own guards.
    const binding = createRequire(import.meta.url)('../index.js')
    // Settings the package's JavaScript never makes: too short, a checksum flag of 2, negative
    // workers, a pair cut short.
    for (const settings of [
      [3, 0],
      [3, 2, 0],
      [3, 0, -1],
      [3, 0, 0, 101],
    ]) {
      expect(() => new binding.CompressSession(Int32Array.from(settings), undefined)).toThrowError(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }),
      )
    }
    const session = new binding.CompressSession(Int32Array.of(3, 0, 0), undefined)
    const data = textOfLength(1 << 20)
    session.append(data)
    const first = session.push(binding.Flush.No)
    // Appending while a step runs is how streams stay ahead; a second step is refused.
    session.append(Buffer.from('appended meanwhile'))
    expect(() => session.push(binding.Flush.No)).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_STATE' }))
    // Under WASI every result is NativeBytes, copied out through a view (see crates/addon/src/napi/staging.rs).
    const bytes = (value: any) => (value instanceof binding.NativeBytes ? Buffer.from(value.view()) : value)
    const frame = Buffer.concat([bytes(await first), bytes(await session.push(binding.Flush.Frame))])
    expect(decompressSync(frame).equals(Buffer.concat([data, Buffer.from('appended meanwhile')]))).toBe(true)
  })

  it('reads a view whose memory is gone (detached, or past the end of a shrunk buffer) as no bytes', () => {
    const empty = compressSync(Buffer.alloc(0))
    const detach = (buffer: ArrayBuffer) => structuredClone(buffer, { transfer: [buffer] })
    const views = [new Uint8Array(16), new Uint16Array(8), new DataView(new ArrayBuffer(16))]
    for (const view of views) detach(view.buffer as ArrayBuffer)
    const arrayBuffer = new ArrayBuffer(16)
    detach(arrayBuffer)
    const resizable = new (ArrayBuffer as any)(64, { maxByteLength: 64 })
    const shrunk = [new Uint16Array(resizable, 16, 8), new DataView(resizable, 16, 16)]
    resizable.resize(8)
    for (const input of [...views, arrayBuffer, ...shrunk]) expect(compressSync(input).equals(empty)).toBe(true)
  })

  it('reads every ArrayBufferView whole, whatever its element size', () => {
    const bytes = textOfLength(4096)
    const kinds = [
      Int8Array,
      Uint8ClampedArray,
      Int16Array,
      Uint16Array,
      Int32Array,
      Float32Array,
      Float64Array,
      BigInt64Array,
      DataView,
    ]
    if (typeof (globalThis as any).Float16Array === 'function') kinds.push((globalThis as any).Float16Array)
    for (const Kind of kinds) {
      const view = new (Kind as any)(new Uint8Array(bytes).buffer)
      expect(decompressSync(compressSync(view)).equals(bytes), Kind.name).toBe(true)
    }
  })
})
