'use strict'
// Node and Web streams over the native sessions (CompressSession, DecompressSession): each chunk
// is worked on the libuv threadpool, and a stream keeps its pooled context from start to end.

const { Transform } = require('node:stream')

const { CompressSession, DecompressSession } = require('./index.js')

const EMPTY = Buffer.alloc(0)
/** A zero-length chunk of our own that asks the compressor to flush. */
const FLUSH = Buffer.alloc(0)
const Flush = { NO: 0, BLOCK: 1, FRAME: 2 }

/** Splits the options the stream machinery takes from those zstd takes. */
function split(options = {}) {
  const { highWaterMark, signal, ...zstd } = options
  return [{ highWaterMark, signal }, zstd]
}

class ZstdCompress extends Transform {
  constructor(options) {
    const [streamOptions, zstdOptions] = split(options)
    super(streamOptions)
    this._session = new CompressSession(zstdOptions)
  }

  _transform(chunk, encoding, callback) {
    const flush = chunk === FLUSH ? Flush.BLOCK : Flush.NO
    this._session.push(chunk, flush).then((output) => {
      if (output.length) this.push(output)
      callback()
    }, callback)
  }

  _flush(callback) {
    this._session.push(EMPTY, Flush.FRAME).then((output) => {
      if (output.length) this.push(output)
      callback()
    }, callback)
  }

  /** Emits everything written so far as decodable data (zstd's flush), for live protocols. */
  flush(callback) {
    this.write(FLUSH, callback)
  }

  _destroy(error, callback) {
    this._session.close()
    callback(error)
  }
}

class ZstdDecompress extends Transform {
  constructor(options) {
    const [streamOptions, zstdOptions] = split(options)
    super(streamOptions)
    this._session = new DecompressSession(zstdOptions)
    this._resume = null
  }

  _transform(chunk, encoding, callback) {
    this._decode(chunk, false).then(() => callback(), callback)
  }

  _flush(callback) {
    this._decode(EMPTY, true).then(() => callback(), callback)
  }

  // A chunk that expands a lot comes out 1 MiB at a time, each after the reader asked for more.
  async _decode(chunk, last) {
    let input = chunk
    for (;;) {
      const output = await this._session.push(input, last)
      input = EMPTY
      if (output.length && !this.push(output)) await new Promise((resolve) => (this._resume = resolve))
      if (!this._session.more) return
    }
  }

  _read(size) {
    const resume = this._resume
    this._resume = null
    if (resume) resume()
    super._read(size)
  }

  _destroy(error, callback) {
    this._session.close()
    callback(error)
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

const bytes = (chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)

/** Like the web platform's `CompressionStream`, for zstd: `readable.pipeThrough(new ZstdCompressionStream())`. */
class ZstdCompressionStream {
  constructor(options) {
    const session = new CompressSession(options)
    const { readable, writable } = new TransformStream({
      transform: (chunk, controller) =>
        session.push(bytes(chunk), Flush.NO).then((output) => output.length && controller.enqueue(output)),
      flush: (controller) => session.push(EMPTY, Flush.FRAME).then((output) => output.length && controller.enqueue(output)),
    })
    this.readable = readable
    this.writable = writable
  }
}

/** Like the web platform's `DecompressionStream`, for zstd. */
class ZstdDecompressionStream {
  constructor(options) {
    const session = new DecompressSession(options)
    const decode = async (chunk, last, controller) => {
      let input = bytes(chunk)
      for (;;) {
        const output = await session.push(input, last)
        input = EMPTY
        if (output.length) controller.enqueue(output)
        if (!session.more) return
      }
    }
    const { readable, writable } = new TransformStream({
      transform: (chunk, controller) => decode(chunk, false, controller),
      flush: (controller) => decode(EMPTY, true, controller),
    })
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
