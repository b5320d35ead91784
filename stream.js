'use strict'
// Node and Web streams over the native sessions of src/stream.rs. One engine drives a session
// for both kinds: each chunk is a step on the libuv threadpool, and each step's output goes to
// the reader only as fast as it reads, so a chunk that expands a lot stays bounded in memory.
// main.js passes in what it shares: the binding and its argument readers.

const { Transform } = require('node:stream')

/** A zero-length chunk of our own that asks a stream to flush: compression emits everything
 * taken so far as decodable data, decompression everything it can decode so far. Module-level,
 * so that zlib.js (node:zlib's flush kinds) writes the same chunk that the streams look for. */
const FLUSH = Buffer.alloc(0)

module.exports = function streams({
  binding,
  bytes,
  coded,
  compressOptions,
  decompressOptions,
  integer,
  invalidType,
  materialize,
  ownMemory,
}) {
  const { CompressSession, DecompressSession, Flush } = binding

  /** Most input staged ahead of the running step before a write waits: the writer runs ahead
   * of the threadpool by this much, and the next step takes all of it at once. */
  const STAGE_LIMIT = 1 << 20

  /**
   * Drives one native session for a Node or a Web stream. A write copies its chunk into the
   * session's staged input and returns at once while less than `STAGE_LIMIT` is staged (else a
   * Promise of room); steps run on the libuv threadpool one at a time, each taking everything
   * staged, so a stream pays one round trip per batch of chunks and the writer works while a
   * step runs. Each output goes to `deliver(output)`, which returns a Promise when the reader
   * wants no more for now: the next step waits for it. A decompression step produces at most
   * 1 MiB, so a chunk that expands a lot comes out in several steps, each after the reader asked
   * for more. A step that fails calls `onError(error)` once: a write may have returned already.
   */
  class Engine {
    #session
    #decoding
    #deliver
    #onError
    #staged = 0 // bytes appended since the last step took them
    #running = null // the steps under way, as one Promise that never rejects
    #room = null // a writer waiting for the stage to drain: { resolve, reject }
    #closed = null // why the stream went, once it has

    constructor(session, decoding, deliver, onError) {
      this.#session = session
      this.#decoding = decoding
      this.#deliver = deliver
      this.#onError = onError
    }

    /** Takes a chunk (copied before this returns): undefined when the stream can take more at
     * once, else a Promise that settles when it can. */
    write(chunk) {
      if (this.#closed) throw this.#closed.reason
      // The count comes from the native side: a chunk's own `length` may say anything.
      this.#staged = this.#session.append(ownMemory(chunk))
      if (!this.#running && this.#staged > 0) this.#running = this.#pump()
      if (this.#staged <= STAGE_LIMIT) return undefined
      return new Promise((resolve, reject) => {
        this.#room = { resolve, reject }
      })
    }

    /** Emits everything taken so far as decodable data (compression only). */
    flush() {
      return this.#finally(Flush.Block, false)
    }

    /** Ends the stream: the end of the frame, or the check that no frame was left open. */
    end() {
      return this.#finally(Flush.Frame, true)
    }

    /** Frees the session's context (now, or when the running step ends): the stream is gone,
     * and a step or a write under way fails with `reason`. */
    close(reason) {
      this.#closed ??= { reason }
      this.#session.close()
      const room = this.#room
      this.#room = null
      room?.reject(this.#closed.reason)
    }

    async #pump() {
      try {
        while (this.#staged > 0 && !this.#closed) await this.#step(Flush.No, false)
      } catch (error) {
        if (!this.#closed) {
          this.close(error)
          this.#onError(error)
        }
      } finally {
        this.#running = null
      }
    }

    async #finally(flush, last) {
      while (this.#running) await this.#running
      if (this.#closed) throw this.#closed.reason
      await this.#step(flush, last)
    }

    async #step(flush, last) {
      for (;;) {
        // The step takes everything staged. A writer waiting for room may go on while it runs,
        // unless the decoder still holds input from before: then this step drains that first,
        // and the input held stays bounded however far it expands and however slow the reader.
        const draining = this.#decoding && this.#session.more
        this.#staged = 0
        if (!draining) this.#release()
        const step = this.#decoding ? this.#session.push(last) : this.#session.push(flush)
        const output = materialize(await step)
        if (this.#closed) throw this.#closed.reason
        if (output.length) await this.#deliver(output)
        if (this.#closed) throw this.#closed.reason
        if (!this.#decoding || !this.#session.more) {
          this.#release()
          return
        }
      }
    }

    /** Lets a writer waiting for room go on. */
    #release() {
      const room = this.#room
      this.#room = null
      room?.resolve()
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
    const { level, checksum, dictionary, tuning, prefix } = compressOptions(options, 'options')
    if (prefix !== undefined) throw noPrefix()
    const { pledgedSize } = options
    const pledged =
      pledgedSize === undefined ? undefined : integer(pledgedSize, 'options.pledgedSize', 0, Number.MAX_SAFE_INTEGER)
    return (deliver, onError) =>
      new Engine(new CompressSession(level, checksum, dictionary, tuning, pledged), false, deliver, onError)
  }

  /** Patch-from is for one-shot calls: the whole of the new version, against the whole old one. */
  function noPrefix() {
    const message = 'The "options.prefix" property is not supported by streams: use compress() and decompress()'
    return coded(new TypeError(message), 'ERR_INVALID_ARG_VALUE')
  }

  function decompressEngine(options) {
    const { maxOutputLength, windowLogMax, dictionary, prefix } = decompressOptions(options)
    if (prefix !== undefined) throw noPrefix()
    return (deliver, onError) =>
      new Engine(new DecompressSession(maxOutputLength, windowLogMax, dictionary), true, deliver, onError)
  }

  /** Calls `callback` when `step` settles, outside the Promise chain: whatever the callback runs
   * (a write callback of the caller's) and throws is an uncaught exception, as with node:zlib,
   * not an unhandled rejection. `await`, not `.then`, so a patched `Promise.prototype.then`
   * cannot keep the callback from being called. */
  async function done(step, callback) {
    try {
      await step
    } catch (error) {
      process.nextTick(callback, error)
      return
    }
    process.nextTick(callback)
  }

  /** Node's side of the engine: outputs are pushed, and wait for `_read` when the reader is full. */
  class ZstdTransform extends Transform {
    #engine
    #resume = null
    #deliver = (output) => {
      if (!this.push(output)) return new Promise((resolve) => (this.#resume = resolve))
    }

    constructor(options, engineFor) {
      const [streamOptions, zstdOptions] = split(options)
      const makeEngine = engineFor(zstdOptions)
      super(streamOptions)
      this.#engine = makeEngine(this.#deliver, (error) => this.destroy(error))
      // A signal already aborted destroyed the stream inside super(), before the engine existed.
      if (this.destroyed) this.#engine.close(this.errored ?? coded(new Error('The stream was destroyed'), 'ERR_STREAM_DESTROYED'))
    }

    _transform(chunk, _encoding, callback) {
      if (chunk === FLUSH) return done(this.#engine.flush(), callback)
      let wait
      try {
        wait = this.#engine.write(chunk)
      } catch (error) {
        return callback(error)
      }
      if (wait) done(wait, callback)
      else callback()
    }

    _flush(callback) {
      done(this.#engine.end(), callback)
    }

    _read(size) {
      const resume = this.#resume
      this.#resume = null
      resume?.()
      super._read(size)
    }

    _destroy(error, callback) {
      // Inside super() (a signal already aborted), this class's fields do not exist yet.
      if (#engine in this) {
        this.#engine.close(error ?? coded(new Error('The stream was destroyed'), 'ERR_STREAM_DESTROYED'))
        this.#resume?.()
      }
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
  function webPair(makeEngine) {
    let controller
    let writableController
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
    // A step that fails after its write returned stops both sides.
    const engine = makeEngine(deliver, (error) => {
      if (!failure) {
        stop(error)
        controller.error(error)
        writableController.error(error)
      }
    })
    const readable = new ReadableStream({
      start: (readableController) => {
        controller = readableController
      },
      pull: wake,
      // As a TransformStream's: the writable side fails with the reason the reader gave.
      cancel: (reason) => {
        const why = reason ?? coded(new Error('The readable side was cancelled'), 'ERR_STREAM_PREMATURE_CLOSE')
        if (!failure) {
          stop(why)
          writableController.error(why)
        }
      },
    })
    const writable = new WritableStream({
      start: (startController) => {
        writableController = startController
      },
      // Whatever stops a write (a chunk of the wrong type included) stops the readable side too:
      // a reader never waits for output that cannot come.
      write: async (chunk) => {
        if (failure) throw failure.reason
        try {
          await engine.write(bytes(chunk, 'chunk'))
        } catch (error) {
          fail(error)
        }
      },
      close: async () => {
        if (failure) throw failure.reason
        try {
          await engine.end()
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

module.exports.FLUSH = FLUSH
