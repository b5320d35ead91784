'use strict'
// The two sides a stream engine (lib/engine.js, or anything with its write, flush, end and close)
// is driven from: Node's Transform and the Web's pair of streams. The faces (stream.js,
// seekable.js) give each the engine of their kind.

const { done, FLUSH } = require('./engine.js')
const { coded, invalidType } = require('./errors.js')
const { Transform } = require('#platform')
const { bytes } = require('./primordials.js')

/** Splits stream options into the stream machinery's and zstd's. */
function split(options) {
  if (options === undefined || options === null) return [{}, {}]
  if (typeof options !== 'object') throw invalidType('options', 'an object of stream options', options)
  const { highWaterMark, signal, ...zstd } = options
  return [{ highWaterMark, signal }, zstd]
}

/** A compress stream's `flush(callback)`, as node:zlib's: the engine's flush, except after
 * `end()`, when there is nothing left to flush and the callback comes once the stream has ended. */
function flushStream(stream, callback) {
  if (stream.writableFinished) {
    if (callback) queueMicrotask(callback)
  } else if (stream.writableEnded) {
    if (callback) stream.once('end', callback)
  } else {
    stream.write(FLUSH, callback)
  }
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

module.exports = { flushStream, split, webPair, ZstdTransform }
