'use strict'
// Node and Web streams over the native sessions of crates/core/src/stream.rs, both driven by one engine
// (lib/engine.js).

const { Transform } = require('node:stream')

const { done, Engine, FLUSH } = require('./lib/engine.js')
const { coded, invalidType } = require('./lib/errors.js')
const { compressOptions, decompressOptions } = require('./lib/options.js')
const { bytes } = require('./lib/primordials.js')
const { integer } = require('./lib/validate.js')

const { CompressSession, DecompressSession } = require('./lib/binding.js').binding

/** Splits stream options into the stream machinery's and zstd's. */
function split(options) {
  if (options === undefined || options === null) return [{}, {}]
  if (typeof options !== 'object') throw invalidType('options', 'an object of stream options', options)
  const { highWaterMark, signal, ...zstd } = options
  return [{ highWaterMark, signal }, zstd]
}

function compressEngine(options) {
  // Streams compress single-threaded: `workers` does not apply.
  const { parameters, dictionary, prefix } = compressOptions(options, 'options')
  if (prefix !== undefined) throw noPrefix()
  const { pledgedSize } = options
  const pledged = pledgedSize === undefined ? undefined : integer(pledgedSize, 'options.pledgedSize', 0, Number.MAX_SAFE_INTEGER)
  return (deliver, onError) => new Engine(new CompressSession(parameters, dictionary, pledged), false, deliver, onError)
}

/** Patch-from is for one-shot calls: the whole of the new version, against the whole old one. */
function noPrefix() {
  const message = 'The "options.prefix" property is not supported by streams: use compress() and decompress()'
  return coded(new TypeError(message), 'ERR_INVALID_ARG_VALUE')
}

function decompressEngine(options) {
  const { maxOutputLength, windowLogMax, dictionary, dictionaries, prefix } = decompressOptions(options)
  if (prefix !== undefined) throw noPrefix()
  return (deliver, onError) =>
    new Engine(new DecompressSession(maxOutputLength, windowLogMax, dictionary, dictionaries), true, deliver, onError)
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

module.exports = {
  ZstdCompress,
  ZstdDecompress,
  createCompressStream,
  createDecompressStream,
  ZstdCompressionStream,
  ZstdDecompressionStream,
}
