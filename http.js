'use strict'
// zstd-pool/http: compressed HTTP responses for node:http, Express, Connect and Fastify
// (`compression(options)`), negotiated from Accept-Encoding (lib/negotiate.js): zstd through this
// package's compression stream, br and gzip through node:zlib for clients without zstd, identity
// otherwise; and `dcz` against a dictionary the client holds (lib/transport.js, RFC 9842). And
// zstd request bodies decoded, within limits (`decompressRequest`, request-decoding.js). See
// docs/http.md.

const { createHash } = require('node:crypto')
const zlib = require('node:zlib')

const { Dictionary } = require('./lib/dictionary.js')
const { Prefix } = require('./lib/prefix.js')
const { coded, invalidType, invalidValue } = require('./lib/errors.js')
const { chooseEncoding } = require('./lib/negotiate.js')
const { coversPath, dictionaryFor, pathOf, readDictionaries, servedAt } = require('./lib/transport.js')
const { windowAtMost, windowOf } = require('./lib/parameters.js')
const { integer, optionsObject } = require('./lib/validate.js')
const { compress: compressOnce } = require('./lib/calls.js')
const { alreadyEncoded, compressible, isPartial, members, noTransform, setAll, vary, weakenETag } = require('./lib/headers.js')
const { decompressPayload, decompressRequest } = require('./request-decoding.js')
const { createCompressStream } = require('./stream.js')

/** The codings the middleware can answer with, in its default order of preference. */
const ENCODINGS = ['zstd', 'br', 'gzip']

/** The largest window a zstd response may use: 8 MB, what browsers decode (RFC 9659). */
const ZSTD_WINDOW_LOG = 23

/** Dictionaries larger than this are also kept as a Prefix, for bodies given whole: at level 3
 * (a 2 MiB window) a prepared Dictionary reaches only about its last 1 to 2 MiB, and patch-from
 * reaches all of it (docs/http.md has what that changes). */
const PREFIX_FROM = 1 << 20

/** The middleware's options, checked once when it is made. */
function readOptions(options) {
  if (Array.isArray(options)) throw invalidType('options', 'an object of compression options', options)
  const object = optionsObject(options, 'options', 'an object of compression options') ?? {}
  const { threshold = 1024, encodings = ENCODINGS, filter = compressible, zstd = {}, brotli, gzip, dictionaries } = object
  if (!Array.isArray(encodings) || encodings.length === 0) {
    throw invalidType('options.encodings', `a non-empty array of ${ENCODINGS.map((name) => `'${name}'`).join(', ')}`, encodings)
  }
  for (const [i, name] of encodings.entries()) {
    if (!ENCODINGS.includes(name)) throw invalidValue(`options.encodings[${i}]`, `one of ${ENCODINGS.join(', ')}`, name)
  }
  if (typeof filter !== 'function') throw invalidType('options.filter', 'of type function', filter)
  const streams = {
    zstd: windowAtMost(optionsObject(zstd, 'options.zstd', 'an object of compress stream options'), ZSTD_WINDOW_LOG),
    br: optionsObject(brotli, 'options.brotli', 'an object of node:zlib Brotli options'),
    gzip: optionsObject(gzip, 'options.gzip', 'an object of node:zlib options'),
  }
  // A dictionary of the zstd stream's own would reach browsers that do not have it.
  if (streams.zstd?.dictionary !== undefined)
    throw invalidValue('options.zstd.dictionary', 'undefined (see options.dictionaries)', streams.zstd.dictionary)
  // Each encoder made once now, so that bad options fail here rather than on a request.
  for (const encoding of ENCODINGS) encoder(encoding, streams).destroy()
  return {
    threshold: integer(threshold, 'options.threshold', 0, Number.MAX_SAFE_INTEGER),
    encodings: [...encodings],
    filter,
    streams,
    dictionaries: readDictionaries(dictionaries, digest, (content) => new Dictionary(content)).map((entry) =>
      entry.data.length > PREFIX_FROM ? { ...entry, prefix: new Prefix(entry.data) } : entry,
    ),
  }
}

/** The SHA-256 of `content`, as bytes and in base64. */
function digest(content) {
  const hash = createHash('sha256').update(content).digest()
  return { hash, base64: hash.toString('base64') }
}

/** A compression stream for `encoding` (for `dcz`, against `dictionary`'s). */
function encoder(encoding, streams, dictionary) {
  if (encoding === 'zstd') return createCompressStream(streams.zstd)
  if (encoding === 'dcz') return createCompressStream(dczOptions(streams.zstd, dictionary))
  if (encoding === 'br') return zlib.createBrotliCompress(brotliOptions(streams.br))
  return zlib.createGzip(streams.gzip)
}

/** node:zlib's Brotli options, with quality 4 unless they say otherwise. */
function brotliOptions(options) {
  return { ...options, params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, ...options?.params } }
}

/** A dcz stream's options: the zstd stream's, against `entry`'s dictionary (its digested form,
 * shared by every response), in the window RFC 9842 allows for it. */
function dczOptions(options, entry) {
  return windowAtMost({ ...options, dictionary: entry.dictionary }, entry.maxWindowLog)
}

/** A whole dcz body's options against a large dictionary: patch-from, with its Prefix, in the
 * largest window RFC 9842 allows for it (which reaches as much of the dictionary as may be). */
function dczPrefixOptions(options, entry) {
  return windowOf({ ...options, prefix: entry.prefix }, entry.maxWindowLog)
}

/** The length in bytes of a chunk given to write() or end(). */
function chunkLength(chunk, encoding) {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return 0
  return typeof chunk === 'string' ? Buffer.byteLength(chunk, typeof encoding === 'string' ? encoding : 'utf8') : chunk.length
}

/**
 * A middleware `(req, res, next)` that compresses responses as the request's Accept-Encoding
 * allows (see docs/http.md): for Express and Connect (`app.use(compression())`), Fastify (through
 * @fastify/middie or its raw hooks), or node:http (`compression()(req, res, () => handler(req, res))`).
 */
function compression(options) {
  const config = readOptions(options)
  return function zstdPoolCompression(req, res, next) {
    compress(req, res, config)
    const served = req.method === 'GET' || req.method === 'HEAD' ? servedAt(config.dictionaries, pathOfRequest(req)) : undefined
    if (served !== undefined) serveDictionary(req, res, served)
    else if (typeof next === 'function') next()
  }
}

/** Answers a request for a dictionary's path with its bytes, marked as a dictionary for the
 * paths its `match` covers (RFC 9842, 2.1), and cacheable (a browser keeps a dictionary as long as
 * its response is fresh). */
function serveDictionary(req, res, entry) {
  res.setHeader('Content-Type', entry.type)
  res.setHeader('Cache-Control', entry.cacheControl)
  res.setHeader('Use-As-Dictionary', entry.useAsDictionary)
  res.setHeader('ETag', entry.etag)
  if (members(req.headers['if-none-match']).some((tag) => tag.replace(/^w\//, '') === entry.etag.toLowerCase())) {
    res.statusCode = 304
    res.end()
    return
  }
  res.setHeader('Content-Length', entry.data.length)
  res.end(req.method === 'HEAD' ? undefined : entry.data)
}

/** A request's path: of the URL it was sent to (Express's `originalUrl`, which a mount point does
 * not shorten), without its query. */
function pathOfRequest(req) {
  return pathOf(req.originalUrl ?? req.url)
}

/** Wraps `res` so that its body is encoded when the response, once its headers are known, should
 * be: a body given whole to end() in one call (the common case: `res.send`, `res.json`), a body
 * written in parts through an encoder stream. */
function compress(req, res, config) {
  const original = { write: res.write, end: res.end, writeHead: res.writeHead }
  let decided = false
  // The coding chosen (and for dcz, the dictionary), or null for the body as it is.
  let chosen = null
  let stream = null
  let ended = false
  // The length of a body given whole to end(), before any header was sent.
  let endLength

  function decide() {
    decided = true
    // A 304 carries the Vary of the response it stands for (RFC 9110, 15.4.5).
    if (res.statusCode === 304) {
      vary(res, 'Accept-Encoding')
      if (coversPath(config.dictionaries, pathOfRequest(req))) vary(res, 'Available-Dictionary')
      return
    }
    if (res.statusCode === 204 || (res.statusCode >= 100 && res.statusCode < 200)) return
    if (!safeFilter(config.filter, req, res)) return
    vary(res, 'Accept-Encoding')
    const path = pathOfRequest(req)
    if (coversPath(config.dictionaries, path)) vary(res, 'Available-Dictionary')
    if (req.method === 'HEAD' || isPartial(res) || alreadyEncoded(res) || noTransform(res)) return
    const declared = Number(res.getHeader('Content-Length'))
    const length = endLength ?? (Number.isFinite(declared) && res.hasHeader('Content-Length') ? declared : undefined)
    if (length !== undefined && length < config.threshold) return
    const dictionary = dictionaryFor(config.dictionaries, path, req.headers['available-dictionary'])
    // dcz is zstd: offered where zstd is.
    const offered =
      dictionary === undefined || !config.encodings.includes('zstd') ? config.encodings : ['dcz', ...config.encodings]
    const encoding = chooseEncoding(req.headers['accept-encoding'], offered)
    if (encoding === 'identity') return
    res.setHeader('Content-Encoding', encoding)
    res.removeHeader('Content-Length')
    weakenETag(res)
    chosen = { encoding, dictionary }
  }

  /** The encoder stream of a body written in parts, made at its first write. */
  function startStream() {
    stream = encoder(chosen.encoding, config.streams, chosen.dictionary)
    // A dcz body starts with the dictionary's hash (RFC 9842, 5.2), then the frame.
    let first = chosen.encoding === 'dcz' ? chosen.dictionary.header : undefined
    stream.on('data', (chunk) => {
      const output = first === undefined ? chunk : Buffer.concat([first, chunk])
      first = undefined
      if (original.write.call(res, output) === false) stream.pause()
    })
    stream.on('end', () => original.end.call(res))
    stream.on('error', (error) => res.destroy(error))
    res.on('drain', () => stream.resume())
    // 'drain' on the response means that the encoder took what it was given, as write()'s
    // return value said; the response's own drains resume the encoder's output.
    stream.on('drain', () => res.emit('drain'))
    // A client that goes away mid-response: the encoder (and its native context) goes too.
    res.on('close', () => {
      if (!stream.writableFinished || !stream.readableEnded) stream.destroy()
    })
  }

  /** Decides, if the response's headers were not sent yet; an encoded response's headers are then
   * sent (committed, as Node commits them at the first write). */
  function decideNow() {
    if (decided || res.headersSent) return
    decide()
    if (chosen !== null) original.writeHead.call(res, res.statusCode)
  }

  res.writeHead = function writeHead(status, ...rest) {
    if (!decided) {
      if (typeof status === 'number') res.statusCode = status
      // Headers given here are set first, so that the decision sees them.
      const headers = typeof rest[0] === 'string' ? rest[1] : rest[0]
      if (headers && typeof headers === 'object') {
        setAll(res, headers)
        rest = typeof rest[0] === 'string' ? [rest[0]] : []
      }
      decide()
    }
    return original.writeHead.call(this, status, ...rest)
  }

  res.write = function write(chunk, encoding, callback) {
    if (ended) return writeAfterEnd(this, chosen !== null, original, chunk, encoding, callback)
    decideNow()
    if (chosen === null) return original.write.call(this, chunk, encoding, callback)
    if (stream === null) startStream()
    return stream.write(chunk, encoding, callback)
  }

  res.end = function end(chunk, encoding, callback) {
    if (ended) return endAgain(this, chosen !== null, original, chunk, encoding, callback)
    ended = true
    if (!decided && !res.headersSent) endLength = chunkLength(chunk, encoding)
    decideNow()
    if (chosen === null) return original.end.call(this, chunk, encoding, callback)
    if (stream === null) {
      // The whole body, in one call: encoded in one piece (on the spot when small, else off the
      // main thread), with no stream to set up.
      const done = [chunk, encoding, callback].find((value) => typeof value === 'function')
      const body =
        typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8')
          : chunk === undefined || chunk === null || typeof chunk === 'function'
            ? EMPTY
            : chunk
      encodeWhole(chosen, body, config.streams).then(
        (encoded) => original.end.call(res, encoded, done),
        (error) => res.destroy(error),
      )
      return this
    }
    if (typeof chunk === 'function') stream.end(chunk)
    else stream.end(chunk, encoding, callback)
    return this
  }

  // Ended as soon as end() is called, as Node's response says, while the encoder finishes.
  Object.defineProperty(res, 'writableEnded', { configurable: true, get: () => ended })

  /** Sends what was written so far down to the client (server-sent events, long polls). */
  res.flush = function flush() {
    if (stream !== null && !stream.writableEnded && !stream.destroyed) stream.flush()
  }
}

const EMPTY = new Uint8Array(0)

/** `body` encoded as `chosen` says, in one piece: a Promise of the bytes. */
function encodeWhole(chosen, body, streams) {
  if (chosen.encoding === 'zstd') return compressWhole(body, streams.zstd)
  if (chosen.encoding === 'dcz') {
    const { dictionary } = chosen
    const options =
      dictionary.prefix === undefined ? dczOptions(streams.zstd, dictionary) : dczPrefixOptions(streams.zstd, dictionary)
    return compressWhole(body, options).then((frame) => Buffer.concat([dictionary.header, frame]))
  }
  // node:zlib's work goes to the threadpool: gzip of even 1 KiB costs about 100 µs, most of it
  // setting up its state (Node 20, 2-core VM), more than this package lets run on the main thread
  // (crates/core/src/schedule.rs).
  return new Promise((resolve, reject) => {
    const settle = (error, result) => (error ? reject(error) : resolve(result))
    if (chosen.encoding === 'br') zlib.brotliCompress(body, brotliOptions(streams.br), settle)
    else zlib.gzip(body, streams.gzip, settle)
  })
}

/** `compress` with the zstd stream's options (those of a stream alone, such as highWaterMark, are
 * not compress options, and are not read). */
function compressWhole(body, options) {
  const { highWaterMark, pledgedSize, ...compressOptions } = options ?? {}
  return compressOnce(body, compressOptions)
}

/** end() after end(): nothing more is written; the callback, if any, is called when the response
 * finishes, as Node calls it. */
function endAgain(res, encoded, original, chunk, encoding, callback) {
  if (!encoded) return original.end.call(res, chunk, encoding, callback)
  const done = [chunk, encoding, callback].find((value) => typeof value === 'function')
  if (done !== undefined) {
    if (res.writableFinished) process.nextTick(done, coded(new Error('end after finish'), 'ERR_STREAM_ALREADY_FINISHED'))
    else res.once('finish', done)
  }
  return res
}

/** write() after end(): as Node answers it for an unencoded body; for an encoded one, the
 * callback (if any) gets Node's ERR_STREAM_WRITE_AFTER_END and nothing reaches the body, which the
 * encoder is still finishing. */
function writeAfterEnd(res, encoded, original, chunk, encoding, callback) {
  if (!encoded) return original.write.call(res, chunk, encoding, callback)
  const done = typeof encoding === 'function' ? encoding : callback
  if (typeof done === 'function') {
    process.nextTick(done, coded(new Error('write after end'), 'ERR_STREAM_WRITE_AFTER_END'))
  }
  return false
}

/** The filter's answer; a filter that throws leaves the response as it is. */
function safeFilter(filter, req, res) {
  try {
    return Boolean(filter(req, res))
  } catch {
    return false
  }
}

module.exports = { compressible, compression, decompressPayload, decompressRequest }
