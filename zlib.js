'use strict'
// zstd-pool/zlib: node:zlib's zstd API (zstdCompress, zstdCompressSync, createZstdCompress, ...)
// over zstd-pool's core, so that code written for node:zlib changes one import to get the pools and
// the threadpool lanes. Options are read as Node's lib/zlib.js reads them (the same names, defaults,
// ranges and error codes) and turned into the core's; errors from the core get node:zlib's codes
// and `errno`. Where the two differ on purpose, docs/zlib.md says why, and
// __test__/zlib.spec.ts shows it.

const { Buffer } = require('node:buffer')
const { finished } = require('node:stream')

const { keptDictionary, release } = require('./lib/dictionary-cache.js')
const { FLUSH } = require('./lib/engine.js')
const { coded, invalidParam, invalidType, outOfRange, safely } = require('./lib/errors.js')
const { asLibzstdTakes, isParameter, PARAMETERS, zlibConstants } = require('./lib/parameters.js')
const { MAX_LENGTH } = require('#platform')
const { bytes, lengthOf } = require('./lib/primordials.js')
const core = require('./main.js')

// ---------------------------------------------------------------------------------------------
// Constants: node:zlib's ZSTD_* names, with libzstd's ABI numbers (stable across its versions),
// written out so that they exist on runtimes whose node:zlib has no zstd (Node 20); those of the
// strategies and parameters come from the table of lib/parameters.js.

const constants = Object.freeze({
  __proto__: null,
  ZSTD_COMPRESS: 10,
  ZSTD_DECOMPRESS: 11,
  ZSTD_e_continue: 0,
  ZSTD_e_flush: 1,
  ZSTD_e_end: 2,
  ...zlibConstants,
  ZSTD_d_windowLogMax: 100,
  ZSTD_CLEVEL_DEFAULT: 3,
  ZSTD_error_no_error: 0,
  ZSTD_error_GENERIC: 1,
  ZSTD_error_prefix_unknown: 10,
  ZSTD_error_version_unsupported: 12,
  ZSTD_error_frameParameter_unsupported: 14,
  ZSTD_error_frameParameter_windowTooLarge: 16,
  ZSTD_error_corruption_detected: 20,
  ZSTD_error_checksum_wrong: 22,
  ZSTD_error_literals_headerWrong: 24,
  ZSTD_error_dictionary_corrupted: 30,
  ZSTD_error_dictionary_wrong: 32,
  ZSTD_error_dictionaryCreation_failed: 34,
  ZSTD_error_parameter_unsupported: 40,
  ZSTD_error_parameter_combination_unsupported: 41,
  ZSTD_error_parameter_outOfBound: 42,
  ZSTD_error_tableLog_tooLarge: 44,
  ZSTD_error_maxSymbolValue_tooLarge: 46,
  ZSTD_error_maxSymbolValue_tooSmall: 48,
  ZSTD_error_stabilityCondition_notRespected: 50,
  ZSTD_error_stage_wrong: 60,
  ZSTD_error_init_missing: 62,
  ZSTD_error_memory_allocation: 64,
  ZSTD_error_workSpace_tooSmall: 66,
  ZSTD_error_dstSize_tooSmall: 70,
  ZSTD_error_srcSize_wrong: 72,
  ZSTD_error_dstBuffer_null: 74,
  ZSTD_error_noForwardProgress_destFull: 80,
  ZSTD_error_noForwardProgress_inputEmpty: 82,
})

const { ZSTD_e_continue, ZSTD_e_flush, ZSTD_e_end, ZSTD_d_windowLogMax } = constants

/**
 * The keys `params` takes: every parameter of the table, node:zlib's ZSTD_c_* constants and
 * the target block size (130), which libzstd (and so node:zlib) accepts though node:zlib names no constant
 * for it. node:zlib refuses only keys above its largest constant with ERR_ZSTD_INVALID_PARAM, and
 * leaves the others to libzstd, whose refusal says neither which key nor why; here every other
 * key is refused as node:zlib refuses the first kind.
 */
const MAX_PARAM_KEY = Math.max(...PARAMETERS.map((row) => row.id))

/** The smallest `chunkSize` node:zlib takes. */
const MIN_CHUNK = 64

// ---------------------------------------------------------------------------------------------
// Errors: node:zlib's own, besides the argument errors of lib/errors.js.

function bufferTooLarge(limit) {
  return coded(new RangeError(`Cannot create a Buffer larger than ${limit} bytes`), 'ERR_BUFFER_TOO_LARGE')
}

/** node:zlib's checkRangesOrGetDefault: undefined and NaN mean the default; any other number must
 * be finite and within the bounds (not necessarily an integer). */
function rangeOrDefault(value, name, lower, upper, fallback) {
  if (value === undefined || Number.isNaN(value)) return fallback
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  if (!Number.isFinite(value)) throw outOfRange(name, 'a finite number', value)
  if (value < lower || value > upper) throw outOfRange(name, `>= ${lower} and <= ${upper}`, value)
  return value
}

const ZSTD_MAGIC = 0xfd2fb528
const SKIPPABLE_MAGIC = 0x184d2a50 // to 0x184d2a5f

/** Whether `head` (the first bytes of an input) starts a zstd or a skippable frame. */
function startsWithFrame(head) {
  if (head.length < 4) return false
  const magic = (head[0] | (head[1] << 8) | (head[2] << 16) | (head[3] << 24)) >>> 0
  return magic === ZSTD_MAGIC || (magic & 0xfffffff0) === SKIPPABLE_MAGIC
}

/**
 * A core error as node:zlib reports the same failure. Every libzstd error gets the `errno` node:zlib
 * gives it. Input that ends mid-frame is node:zlib's Z_BUF_ERROR, "unexpected end of file" (as for
 * gzip: code that checks for truncation checks that). Bytes that are not a frame, after a whole
 * frame (the input began with one), are node:zlib's ERR_TRAILING_JUNK_AFTER_STREAM_END: node:zlib
 * drops them unless `rejectGarbageAfterEnd` is set; the core always fails, since that is where a
 * frame whose header was damaged goes missing. The core's error stays as `cause`. Errors already
 * translated, and errors of other kinds, are returned as they are.
 */
function zlibError(error, decompressing, head) {
  if (error === null || typeof error !== 'object') return error
  const code = safely(() => error.code)
  // A parameter value out of libzstd's bounds: node:zlib reports libzstd's refusal to set it.
  // The core's message, which names the parameter and its bounds, is kept in this one's.
  if (code === 'ERR_OUT_OF_RANGE' && String(safely(() => error.message)).includes('"options.params[')) {
    const failed = new Error(`Setting parameter failed: ${error.message}`, { cause: error })
    return coded(failed, 'ERR_ZLIB_INITIALIZATION_FAILED')
  }
  if (decompressing && code === 'ZSTD_error_srcSize_wrong') {
    return coded(new Error('unexpected end of file', { cause: error }), 'Z_BUF_ERROR', {
      errno: { value: -5, writable: true, enumerable: true, configurable: true },
    })
  }
  if (decompressing && code === 'ZSTD_error_prefix_unknown' && startsWithFrame(head())) {
    const junk = new TypeError('Trailing junk found after the end of the compressed stream', { cause: error })
    return coded(junk, 'ERR_TRAILING_JUNK_AFTER_STREAM_END')
  }
  if (typeof code === 'string' && code.startsWith('ZSTD_error_') && code in constants && !Object.hasOwn(error, 'errno')) {
    Object.defineProperty(error, 'errno', { value: constants[code], writable: true, enumerable: true, configurable: true })
  }
  return error
}

/** What node:zlib takes (a string, any ArrayBufferView, an ArrayBuffer or a SharedArrayBuffer),
 * read whole as the core reads it. */
function inputBytes(value) {
  return bytes(value, 'buffer')
}

// ---------------------------------------------------------------------------------------------
// Options, read in node:zlib's order. node:zlib ignores options that are not an object (a level
// given as a number included: its zstd takes the level from `params` only), and so does this.

/** `params` as node:zlib reads it (every own enumerable key, as a number; values numbers or
 * booleans, kept in a Uint32Array), as the core's `params` object: keys are checked here as
 * node:zlib checks them, values by the core, against libzstd's bounds. */
function compressParams(params) {
  if (!params) return undefined
  const result = { __proto__: null }
  const seen = { __proto__: null }
  let any = false
  for (const name of Object.keys(params)) {
    // node:zlib's order: a key that is no index up to its largest constant ('1e2' is 100), or
    // names a parameter already given, then the value's type, then libzstd.
    const key = +name
    if (!Number.isInteger(key) || key < 0 || key > MAX_PARAM_KEY || key in seen) throw invalidParam(name)
    seen[key] = true
    const value = paramValue(params[name], name)
    if (!isParameter(key)) throw invalidParam(name)
    if (value === undefined) continue
    result[key] = asLibzstdTakes(key, value)
    any = true
  }
  return any ? result : undefined
}

/** A value as node:zlib keeps it, in a Uint32Array: booleans as 1 and 0; fractions cut, NaN and
 * the infinities 0, others modulo 2^32; read back as libzstd's int. 2^32 - 1 (-1) is node:zlib's
 * "not set": undefined. */
function paramValue(value, name) {
  if (typeof value === 'boolean') return value ? 1 : 0
  if (typeof value !== 'number') throw invalidType(`options.params[${name}]`, 'of type number', value)
  const kept = value >>> 0
  return kept === 0xffffffff ? undefined : kept | 0
}

/** The decompression `params`, as the core's: windowLogMax (100) is the only one, checked by
 * the core against its bounds. 0 means libzstd's default. */
function decompressParams(params) {
  if (!params) return undefined
  let windowLogMax
  for (const name of Object.keys(params)) {
    const key = +name
    if (!Number.isInteger(key) || key < 0 || key > ZSTD_d_windowLogMax) throw invalidParam(name)
    const value = paramValue(params[name], name)
    if (key !== ZSTD_d_windowLogMax) throw invalidParam(name)
    windowLogMax = value
  }
  return windowLogMax === undefined || windowLogMax === 0 ? undefined : { [ZSTD_d_windowLogMax]: windowLogMax }
}

/** The options every form reads: the zstd settings, then the stream's, as node:zlib's ZlibBase does. */
function readOptions(options, decompressing) {
  const object = options !== null && typeof options === 'object' ? options : undefined
  const params = decompressing ? decompressParams(object?.params) : compressParams(object?.params)
  const dictionaryValue = object?.dictionary
  const pledgedSrcSize = object?.pledgedSrcSize
  if (pledgedSrcSize !== undefined) {
    if (typeof pledgedSrcSize !== 'number') throw coded(new TypeError('pledgedSrcSize must be a number'), 'ERR_INVALID_ARG_TYPE')
    if (pledgedSrcSize < 0) throw coded(new RangeError('pledgedSrcSize must be non-negative'), 'ERR_OUT_OF_RANGE')
    if (!Number.isSafeInteger(pledgedSrcSize)) {
      throw coded(new RangeError('pledgedSrcSize must be a safe integer'), 'ERR_OUT_OF_RANGE')
    }
  }
  const chunkSize = object?.chunkSize
  let outputChunk
  if (chunkSize !== undefined && !Number.isNaN(chunkSize)) {
    if (typeof chunkSize !== 'number') throw invalidType('options.chunkSize', 'of type number', chunkSize)
    if (!Number.isFinite(chunkSize)) throw outOfRange('options.chunkSize', 'a finite number', chunkSize)
    if (chunkSize < MIN_CHUNK) throw outOfRange('options.chunkSize', `>= ${MIN_CHUNK}`, chunkSize)
    outputChunk = Math.floor(chunkSize)
  }
  const flush = rangeOrDefault(object?.flush, 'options.flush', ZSTD_e_continue, ZSTD_e_end, ZSTD_e_continue)
  rangeOrDefault(object?.finishFlush, 'options.finishFlush', ZSTD_e_continue, ZSTD_e_end, ZSTD_e_end)
  const maxOutputLength = rangeOrDefault(object?.maxOutputLength, 'options.maxOutputLength', 1, MAX_LENGTH, MAX_LENGTH)
  const rejectGarbageAfterEnd = object?.rejectGarbageAfterEnd
  if (rejectGarbageAfterEnd !== undefined && typeof rejectGarbageAfterEnd !== 'boolean') {
    throw invalidType('options.rejectGarbageAfterEnd', 'of type boolean', rejectGarbageAfterEnd)
  }
  // node:zlib's stream checks its signal in every form (the sync ones then ignore it).
  const signal = object?.signal
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) {
    throw invalidType('options.signal', 'an instance of AbortSignal', signal)
  }
  const info = Boolean(object?.info)
  const highWaterMark = object?.highWaterMark
  // The dictionary last: no getter of the caller's runs between its preparing and the call,
  // which holds it (pinned: see `keep`) until native code has it.
  let dictionary
  let dictionaryError
  try {
    dictionary = keptDictionary(dictionaryValue)
  } catch (error) {
    // node:zlib refuses a dictionary it cannot load when it starts to decompress, but reports it
    // when it compresses (to the callback, or as the stream's error event).
    if (decompressing || error?.code === 'ERR_INVALID_ARG_TYPE') throw error
    dictionaryError = error
  }
  return {
    params,
    dictionary,
    dictionaryError,
    pledgedSrcSize,
    chunkSize: outputChunk,
    flush,
    // node:zlib stops once the output is longer than the limit: a fractional limit allows its floor.
    maxOutputLength: Math.floor(maxOutputLength),
    info,
    highWaterMark,
    signal,
  }
}

/** The core's compress options (with no prototype, whose getters the core's reads could run). */
function compressCore({ params, dictionary }) {
  return { __proto__: null, params, dictionary }
}

/** The core's decompress options. */
function decompressCore({ params, dictionary, maxOutputLength }) {
  return { __proto__: null, params, dictionary, maxOutputLength }
}

// ---------------------------------------------------------------------------------------------
// Streams: the core's, with node:zlib's methods and options on top.

/** Adds node:zlib's stream surface to one of the core's stream classes. */
function zlibStream(Base, decompressing) {
  return class extends Base {
    #chunkSize
    #flushEach
    #head = new Uint8Array(0) // the first bytes written (decompression), to place a bad frame start

    constructor(settings) {
      try {
        super(settings.stream)
      } catch (error) {
        throw zlibError(error, decompressing, () => new Uint8Array(0))
      } finally {
        release(settings.read)
      }
      // A dictionary libzstd refused, as node:zlib's compress streams report it: an error event.
      const { dictionaryError } = settings.read
      if (dictionaryError) process.nextTick(() => this.destroy(dictionaryError))
      this.#chunkSize = settings.chunkSize
      // Each write ends with a flush (live protocols); ZSTD_e_end is taken as a flush as well.
      this.#flushEach = !decompressing && settings.flush !== ZSTD_e_continue
      /** Input bytes taken so far, as node:zlib counts them. */
      this.bytesWritten = 0
    }

    _transform(chunk, encoding, callback) {
      if (decompressing && this.#head.length < 4 && chunk !== FLUSH) {
        this.#head = Buffer.concat([this.#head, chunk.subarray(0, 4 - this.#head.length)])
      }
      super._transform(chunk, encoding, (error) => {
        if (error) return callback(this.#translate(error))
        this.bytesWritten += chunk.length
        if (!this.#flushEach || chunk === FLUSH) return callback()
        super._transform(FLUSH, encoding, (error) => callback(error && this.#translate(error)))
      })
    }

    _flush(callback) {
      super._flush((error) => callback(error && this.#translate(error)))
    }

    /** Splits outputs into `chunkSize` pieces when it was given (else they come as the core makes
     * them: up to 1 MiB, where node:zlib's are 16 KiB). */
    push(chunk, encoding) {
      const size = this.#chunkSize
      if (size === undefined || chunk === null || chunk.length <= size) return super.push(chunk, encoding)
      let more = true
      for (let offset = 0; offset < chunk.length; offset += size) more = super.push(chunk.subarray(offset, offset + size))
      return more
    }

    /**
     * node:zlib's flush: `kind` ZSTD_e_flush (the default) emits everything written so far as
     * decodable data; ZSTD_e_end does the same (node:zlib ends the frame there, and starts a new
     * one with the next write); ZSTD_e_continue only waits for the writes before it.
     */
    flush(kind, callback) {
      if (typeof kind === 'function' || (kind === undefined && !callback)) {
        callback = kind
        kind = ZSTD_e_flush
      }
      kind = rangeOrDefault(kind, 'kind', ZSTD_e_continue, ZSTD_e_end, ZSTD_e_flush)
      if (this.writableFinished) {
        if (callback) process.nextTick(callback)
      } else if (this.writableEnded) {
        if (callback) this.once('end', callback)
      } else {
        this.write(kind === ZSTD_e_continue ? Buffer.alloc(0) : FLUSH, callback)
      }
    }

    /** node:zlib's close: destroys the stream, `callback` called once it has finished or failed. */
    close(callback) {
      if (callback) finished(this, callback)
      this.destroy()
    }

    destroy(error, callback) {
      // A signal already aborted destroys the stream inside super(), before this class's fields
      // and methods exist (and its error is an AbortError, which needs no translation).
      if (!(#head in this)) return super.destroy(error, callback)
      return super.destroy(error && this.#translate(error), callback)
    }

    #translate(error) {
      return zlibError(error, decompressing, () => this.#head)
    }
  }
}

/** The core's stream options for node:zlib's `options`. */
function streamSettings(options, decompressing) {
  const read = readOptions(options, decompressing)
  const stream = decompressing
    ? { ...decompressCore(read), highWaterMark: read.highWaterMark, signal: read.signal }
    : { ...compressCore(read), pledgedSize: read.pledgedSrcSize, highWaterMark: read.highWaterMark, signal: read.signal }
  return { stream, chunkSize: read.chunkSize, flush: read.flush, read }
}

class ZstdCompress extends zlibStream(core.ZstdCompress, false) {
  constructor(options) {
    super(streamSettings(options, false))
  }
}

class ZstdDecompress extends zlibStream(core.ZstdDecompress, true) {
  constructor(options) {
    super(streamSettings(options, true))
  }
}

function createZstdCompress(options) {
  return new ZstdCompress(options)
}

function createZstdDecompress(options) {
  return new ZstdDecompress(options)
}

// ---------------------------------------------------------------------------------------------
// The one-shot functions: the core's, which compress or decompress in one native call (on the
// libuv threadpool for the callback forms), where node:zlib runs its stream machinery.

/** node:zlib's `{ buffer, engine }` for `info: true`: the engine is a stream made with the same
 * options, closed, that took `length` bytes. */
function withInfo(buffer, Class, options, length) {
  const engine = new Class(options)
  engine.bytesWritten = length
  engine.close()
  return { buffer, engine }
}

/** The failure node:zlib reports when `pledgedSrcSize` is not the input's size, or undefined. */
function pledgeBroken(read, input) {
  if (read.pledgedSrcSize === undefined || read.pledgedSrcSize === lengthOf(input)) return undefined
  return coded(new Error('Src size is incorrect'), 'ZSTD_error_srcSize_wrong', {
    errno: { value: constants.ZSTD_error_srcSize_wrong, writable: true, enumerable: true, configurable: true },
  })
}

function checkOutput(output, read) {
  if (output.length > read.maxOutputLength) throw bufferTooLarge(read.maxOutputLength)
  return output
}

function zstdCompressSync(buffer, options) {
  const read = readOptions(options, false)
  try {
    if (read.dictionaryError) throw read.dictionaryError
    const input = inputBytes(buffer)
    const broken = pledgeBroken(read, input)
    if (broken) throw broken
    const output = checkOutput(
      callCore(() => core.compressSync(input, compressCore(read))),
      read,
    )
    return read.info ? withInfo(output, ZstdCompress, options, lengthOf(input)) : output
  } finally {
    release(read)
  }
}

function zstdDecompressSync(buffer, options) {
  const read = readOptions(options, true)
  try {
    const input = inputBytes(buffer)
    const output = callCore(() => core.decompressSync(input, decompressCore(read)), input)
    return read.info ? withInfo(output, ZstdDecompress, options, lengthOf(input)) : output
  } finally {
    release(read)
  }
}

/** Runs a core call, its error translated (decompression: `input` given). */
function callCore(call, input) {
  try {
    return call()
  } catch (error) {
    throw zlibError(error, input !== undefined, () => input)
  }
}

function zstdCompress(buffer, options, callback) {
  withCallback(buffer, options, callback, false, (read, input, given, done) => {
    // A dictionary libzstd refused, or a size pledged wrong, is a failure of the compression,
    // reported to the callback.
    const failed = read.dictionaryError ?? pledgeBroken(read, input)
    settle(
      failed ? Promise.reject(failed) : core.compress(input, { ...compressCore(read), signal: read.signal }),
      done,
      (output) => {
        checkOutput(output, read)
        return read.info ? withInfo(output, ZstdCompress, given, lengthOf(input)) : output
      },
      undefined,
    )
  })
}

function zstdDecompress(buffer, options, callback) {
  withCallback(buffer, options, callback, true, (read, input, given, done) =>
    settle(
      core.decompress(input, { ...decompressCore(read), signal: read.signal }),
      done,
      (output) => (read.info ? withInfo(output, ZstdDecompress, given, lengthOf(input)) : output),
      input,
    ),
  )
}

/** The callback forms' common start, as node:zlib's: the options may be left out; they are read
 * (and released once `run` has started the call), then the callback checked, then the input
 * taken. `run` gets the options as given and the callback. */
function withCallback(buffer, options, callback, decompressing, run) {
  if (typeof options === 'function') {
    callback = options
    options = {}
  }
  const read = readOptions(options, decompressing)
  try {
    if (typeof callback !== 'function') throw invalidType('callback', 'of type function', callback)
    run(read, inputBytes(buffer), options, callback)
  } finally {
    release(read)
  }
}

/** Calls `callback` with the outcome of `promise`, outside the Promise chain: whatever the callback
 * throws is an uncaught exception, as with node:zlib, not an unhandled rejection. `await`, not
 * `.then`, so that a patched `Promise.prototype.then` cannot keep the callback from being called. */
async function settle(promise, callback, finish, input) {
  let result
  try {
    result = finish(await promise)
  } catch (error) {
    process.nextTick(
      callback,
      zlibError(error, input !== undefined, () => input),
    )
    return
  }
  process.nextTick(callback, null, result)
}

module.exports = {
  constants,
  ZstdCompress,
  ZstdDecompress,
  createZstdCompress,
  createZstdDecompress,
  zstdCompress,
  zstdCompressSync,
  zstdDecompress,
  zstdDecompressSync,
}
