'use strict'
// Node and Web streams over the native sessions of src/stream.rs. One engine drives a session
// for both kinds: each chunk is a step on the libuv threadpool, and each step's output goes to
// the reader only as fast as it reads, so a chunk that expands a lot stays bounded in memory.
// main.js passes in what it shares: the binding and its argument readers.

const { Transform } = require('node:stream')

const EMPTY = new Uint8Array(0)

module.exports = function streams({
  binding,
  bytes,
  coded,
  compressOptions,
  decompressOptions,
  integer,
  invalidType,
  materialize,
}) {
  const { CompressSession, DecompressSession, Flush } = binding

  /**
   * Drives one native session, one step at a time (the session refuses overlapping steps), and
   * hands each output to `deliver(output)`, which returns a Promise when the reader wants no
   * more for now: the next step waits for it. A decompression step produces at most 1 MiB, so
   * a chunk that expands a lot comes out in several steps, each after the reader asked for more.
   */
  class Engine {
    #session
    #decoding
    #closed = null // why the stream went, once it has

    constructor(session, decoding) {
      this.#session = session
      this.#decoding = decoding
    }

    /** Takes a chunk. */
    write(chunk, deliver) {
      return this.#run(chunk, false, Flush.No, deliver)
    }

    /** Emits everything taken so far as decodable data (compression only). */
    flush(deliver) {
      return this.#run(EMPTY, false, Flush.Block, deliver)
    }

    /** Ends the stream: the end of the frame, or the check that no frame was left open. */
    end(deliver) {
      return this.#run(EMPTY, true, Flush.Frame, deliver)
    }

    /** Frees the session's context (now, or when the running step ends): the stream is gone,
     * and a step under way fails with `reason`. */
    close(reason) {
      this.#closed ??= { reason }
      this.#session.close()
    }

    async #run(input, last, flush, deliver) {
      for (;;) {
        if (this.#closed) throw this.#closed.reason
        const output = materialize(await (this.#decoding ? this.#session.push(input, last) : this.#session.push(input, flush)))
        input = EMPTY
        if (this.#closed) throw this.#closed.reason
        if (output.length) await deliver(output)
        if (!this.#decoding || !this.#session.more) return
      }
    }
  }

  /** Splits stream options into the stream machinery's and zstd's. */
  function split(options) {
    if (options === undefined || options === null) return [{}, {}]
    if (typeof options !== 'object') throw invalidType('options', 'an object of stream options', options)
    const { highWaterMark, signal, ...zstd } = options
    return [{ highWaterMark, signal }, zstd]
  }

  function compressEngine(options) {
    // Streams compress single-threaded: `workers` does not apply.
    const { level, checksum, dictionary } = compressOptions(options, 'options')
    const { pledgedSize } = options
    const pledged =
      pledgedSize === undefined ? undefined : integer(pledgedSize, 'options.pledgedSize', 0, Number.MAX_SAFE_INTEGER)
    return new Engine(new CompressSession(level, checksum, dictionary, pledged), false)
  }

  function decompressEngine(options) {
    const { maxOutputLength, windowLogMax, dictionary } = decompressOptions(options)
    return new Engine(new DecompressSession(maxOutputLength, windowLogMax, dictionary), true)
  }

  /** Calls `callback` when `step` settles, outside the Promise chain: whatever the callback runs
   * (a write callback of the caller's) and throws is an uncaught exception, as with node:zlib,
   * not an unhandled rejection. */
  function done(step, callback) {
    step.then(
      () => process.nextTick(callback),
      (error) => process.nextTick(callback, error),
    )
  }

  /** A zero-length chunk of our own that asks the compressor to flush. */
  const FLUSH = Buffer.alloc(0)

  /** Node's side of the engine: outputs are pushed, and wait for `_read` when the reader is full. */
  class ZstdTransform extends Transform {
    #engine
    #resume = null
    #deliver = (output) => {
      if (!this.push(output)) return new Promise((resolve) => (this.#resume = resolve))
    }

    constructor(options, makeEngine) {
      const [streamOptions, zstdOptions] = split(options)
      const engine = makeEngine(zstdOptions)
      super(streamOptions)
      this.#engine = engine
    }

    _transform(chunk, _encoding, callback) {
      const step = chunk === FLUSH ? this.#engine.flush(this.#deliver) : this.#engine.write(chunk, this.#deliver)
      done(step, callback)
    }

    _flush(callback) {
      done(this.#engine.end(this.#deliver), callback)
    }

    _read(size) {
      const resume = this.#resume
      this.#resume = null
      resume?.()
      super._read(size)
    }

    _destroy(error, callback) {
      this.#engine.close(error ?? coded(new Error('The stream was destroyed'), 'ERR_STREAM_DESTROYED'))
      this.#resume?.()
      callback(error)
    }
  }

  class ZstdCompress extends ZstdTransform {
    constructor(options) {
      super(options, compressEngine)
    }

    /** Emits everything written so far as decodable data (zstd's flush), for live protocols. */
    flush(callback) {
      this.write(FLUSH, callback)
    }
  }

  class ZstdDecompress extends ZstdTransform {
    constructor(options) {
      super(options, decompressEngine)
    }
  }

  /** A Node Transform stream that compresses into one zstd frame. */
  function createCompressStream(options) {
    return new ZstdCompress(options)
  }

  /** A Node Transform stream that decompresses zstd frames (with or without a recorded size, concatenated, skippable). */
  function createDecompressStream(options) {
    return new ZstdDecompress(options)
  }

  /**
   * The Web side of the engine: a writable and a readable, like a TransformStream's, except
   * that each output waits until the reader has room for it (a TransformStream lets one write
   * enqueue any number of outputs without waiting).
   */
  function webPair(engine) {
    let controller
    let waiting = null // the writer's wait for the reader: { resolve, reject }
    let failure = null // why the pair stopped, once it has
    const wake = () => {
      const wait = waiting
      waiting = null
      if (wait) failure ? wait.reject(failure.reason) : wait.resolve()
    }
    const stop = (reason) => {
      failure ??= { reason }
      engine.close(reason)
      wake()
    }
    const deliver = (output) => {
      if (failure) throw failure.reason
      controller.enqueue(output)
      if (controller.desiredSize <= 0) return new Promise((resolve, reject) => (waiting = { resolve, reject }))
    }
    const fail = (error) => {
      if (!failure) {
        stop(error)
        controller.error(error)
      }
      throw error
    }
    const readable = new ReadableStream({
      start: (readableController) => {
        controller = readableController
      },
      pull: wake,
      cancel: (reason) => stop(reason ?? coded(new Error('The readable side was cancelled'), 'ERR_STREAM_PREMATURE_CLOSE')),
    })
    const writable = new WritableStream({
      // Whatever stops a write (a chunk of the wrong type included) stops the readable side too:
      // a reader never waits for output that cannot come.
      write: async (chunk) => {
        if (failure) throw failure.reason
        try {
          await engine.write(bytes(chunk, 'chunk'), deliver)
        } catch (error) {
          fail(error)
        }
      },
      close: async () => {
        if (failure) throw failure.reason
        try {
          await engine.end(deliver)
        } catch (error) {
          fail(error)
        }
        controller.close()
      },
      abort: (reason) => {
        if (!failure) {
          stop(reason)
          controller.error(reason)
        }
      },
    })
    return { readable, writable }
  }

  /** Like the web platform's `CompressionStream`, for zstd: `readable.pipeThrough(new ZstdCompressionStream())`. */
  class ZstdCompressionStream {
    constructor(options) {
      const { readable, writable } = webPair(compressEngine(split(options)[1]))
      this.readable = readable
      this.writable = writable
    }
  }

  /** Like the web platform's `DecompressionStream`, for zstd. */
  class ZstdDecompressionStream {
    constructor(options) {
      const { readable, writable } = webPair(decompressEngine(split(options)[1]))
      this.readable = readable
      this.writable = writable
    }
  }

  return {
    ZstdCompress,
    ZstdDecompress,
    createCompressStream,
    createDecompressStream,
    ZstdCompressionStream,
    ZstdDecompressionStream,
  }
}
