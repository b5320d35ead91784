'use strict'
// Node and Web streams over the native sessions of crates/core/src/stream.rs, both driven by one engine
// (lib/engine.js) from the sides of lib/stream-sides.js.

const { Engine } = require('./lib/engine.js')
const { coded } = require('./lib/errors.js')
const { compressOptions, decompressOptions } = require('./lib/options.js')
const { flushStream, split, webPair, ZstdTransform } = require('./lib/stream-sides.js')
const { integer } = require('./lib/validate.js')

const { CompressSession, DecompressSession } = require('./lib/binding.js').binding

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

class ZstdCompress extends ZstdTransform {
  constructor(options) {
    super(options, compressEngine)
  }

  /** Emits everything written so far as decodable data (zstd's flush), for live protocols. */
  flush(callback) {
    flushStream(this, callback)
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
