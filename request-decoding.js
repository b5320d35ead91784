'use strict'
// zstd-pool/http's request side (re-exported by http.js): request bodies sent with
// `Content-Encoding: zstd`, decoded as they arrive with a bound on what they decode to, for the body
// readers after the middleware (express.json, express.raw, Fastify's parsers, `for await` over the
// request). See docs/http.md, "Compressed request bodies".

const { decompressSync } = require('./lib/calls.js')
const { invalidType } = require('./lib/errors.js')
const { members } = require('./lib/headers.js')
const { decompressOptions } = require('./lib/options.js')
const { optionsObject } = require('./lib/validate.js')
const { createDecompressStream } = require('./stream.js')

/** What a request body may decode to by default: 1 MiB, Fastify's default bodyLimit. */
const MAX_REQUEST_LENGTH = 1 << 20

/** The window a request's frames may use by default: 8 MB, what browsers decode (RFC 9659). */
const REQUEST_WINDOW_LOG = 23

/** The decoder's limits, checked once when the middleware is made. */
function readLimits(options) {
  if (Array.isArray(options)) throw invalidType('options', 'an object of decompression options', options)
  const object = optionsObject(options, 'options', 'an object of decompression options') ?? {}
  const { maxOutputLength = MAX_REQUEST_LENGTH, windowLogMax = REQUEST_WINDOW_LOG } = object
  const limits = { maxOutputLength, windowLogMax }
  // Checked here, so that a wrong one fails when the middleware is made rather than on a request.
  decompressOptions(limits)
  return limits
}

/** The request's codings, when its last (the one applied last) is zstd: the others, which stay on
 * it for the readers after the middleware (body-parser decodes gzip, deflate and br itself). */
function codingsBeneathZstd(headers) {
  const codings = members(headers['content-encoding']).filter((coding) => coding !== 'identity')
  return codings.at(-1) === 'zstd' ? codings.slice(0, -1) : undefined
}

/** Whether the request says it has a body (RFC 9112, 6.3), as body-parser and Fastify read it. */
function hasBody(headers) {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** The request's headers as they are once its body is decoded: without zstd in Content-Encoding,
 * and of a length no longer known (sent chunked, as readers take a body of unknown length). */
function markDecoded(headers, beneath) {
  if (beneath.length === 0) delete headers['content-encoding']
  else headers['content-encoding'] = beneath.join(', ')
  delete headers['content-length']
  headers['transfer-encoding'] ??= 'chunked'
}

/** A failure to decode, as HTTP frameworks answer errors: 413 when the body is larger than the
 * limits allow (its output, or the window its frames need), else 400 (a body that is not zstd). */
function asHttpError(error) {
  const tooLarge = error?.code === 'ERR_BUFFER_TOO_LARGE' || error?.code === 'ZSTD_error_frameParameter_windowTooLarge'
  const status = tooLarge ? 413 : 400
  return Object.assign(error instanceof Error ? error : new Error(String(error)), { status, statusCode: status, expose: true })
}

/**
 * A middleware `(req, res, next)` that decodes request bodies sent with `Content-Encoding: zstd`
 * as they arrive, in place: the readers after it read the decoded body from `req` (express.json,
 * express.raw, `for await (const chunk of req)`). A body that decodes past `maxOutputLength`
 * (default 1 MiB), or needs a window past `windowLogMax` (default 23), is a 413; one that is not
 * zstd, a 400 (see docs/http.md).
 */
function decompressRequest(options) {
  const limits = readLimits(options)
  return function zstdPoolDecompressRequest(req, res, next) {
    const beneath = codingsBeneathZstd(req.headers)
    if (beneath !== undefined && hasBody(req.headers) && !req.readableEnded && req.readableEncoding == null) {
      markDecoded(req.headers, beneath)
      if (req.complete) decodeReceived(req, res, limits)
      else decodeArriving(req, res, limits)
    }
    if (typeof next === 'function') next()
  }
}

/**
 * Fastify's form: a `preParsing` hook (`fastify.addHook('preParsing', decompressPayload())`) that
 * gives Fastify's parsers the decoded body, with the encoded length Fastify checks against the
 * request's Content-Length. Errors are as decompressRequest's.
 */
function decompressPayload(options) {
  const limits = readLimits(options)
  return function zstdPoolDecompressPayload(request, _reply, payload, done) {
    const beneath = codingsBeneathZstd(request.headers)
    if (beneath === undefined) return done(null, payload)
    if (beneath.length === 0) delete request.headers['content-encoding']
    else request.headers['content-encoding'] = beneath.join(', ')
    const decoder = createDecompressStream(limits)
    decoder.receivedEncodedLength = 0
    payload.on('data', (chunk) => {
      decoder.receivedEncodedLength += chunk.length
    })
    // An error the reader answers; the payload is then left unread, as Fastify leaves it.
    decoder.on('error', (error) => {
      asHttpError(error)
      payload.unpipe(decoder)
    })
    payload.on('error', (error) => decoder.destroy(error))
    done(null, payload.pipe(decoder))
  }
}

/**
 * Decodes a body still arriving: each chunk Node's HTTP parser pushes into the request goes to a
 * decompression stream instead (off the main thread), and what it decodes is pushed into the
 * request, with backpressure both ways: the request's reader holds the decoder back, and the
 * decoder holds the socket back (returning false from push, as Node's parser reads it).
 */
function decodeArriving(req, res, limits) {
  const { push, _read: read } = req
  const decoder = createDecompressStream(limits)
  // After a failure, what still arrives is dropped; and the request ends, when its reader got the
  // error (so that it can answer, as body-parser does once the body is read off), not when the
  // middleware answered (no part of a body that failed is given as the whole of it).
  let failure = null
  let received = false
  const endAfterFailure = () => {
    if (failure === 'told' && !req.destroyed) push.call(req, null)
  }
  req.push = function pushEncoded(chunk, encoding) {
    if (chunk === null) received = true
    if (failure !== null) {
      if (chunk === null) endAfterFailure()
      return chunk !== null
    }
    if (chunk === null) {
      decoder.end()
      return false
    }
    return decoder.write(chunk, encoding)
  }
  req._read = function readDecoded(size) {
    decoder.resume()
    return read.call(this, size)
  }
  decoder.on('data', (output) => {
    if (!push.call(req, output)) decoder.pause()
  })
  decoder.on('end', () => push.call(req, null))
  // The decoder took what it held: more may come from the socket.
  decoder.on('drain', () => read.call(req, req.readableHighWaterMark))
  decoder.on('error', (error) => {
    decoder.destroy()
    failure = fail(req, res, asHttpError(error))
    if (received) endAfterFailure()
  })
  // A request that goes away mid-body: the decoder (and its native context) goes too.
  req.on('close', () => decoder.destroy())
  // What arrived before the middleware ran, first.
  if (req.readableLength > 0) decoder.write(req.read(req.readableLength))
}

/**
 * Decodes a body received whole before the middleware ran (an asynchronous middleware before it):
 * no more will come through push, so it is decoded on the spot (it is at most what Node buffers
 * for an unread request, the request's highWaterMark and one read from the socket) and put back.
 */
function decodeReceived(req, res, limits) {
  const encoded = req.readableLength > 0 ? req.read(req.readableLength) : new Uint8Array(0)
  let decoded
  try {
    decoded = decompressSync(encoded, limits)
  } catch (error) {
    // After next(): the readers it starts listen by then.
    process.nextTick(fail, req, res, asHttpError(error))
    return
  }
  if (decoded.length > 0) req.unshift(decoded)
}

/**
 * A body that cannot be decoded: its reader gets the error (express.json and Fastify answer with
 * its status): 'told'. With no reader listening (Node emits a request's errors only to listeners),
 * the middleware answers it itself, then closes the connection: 'answered'; or, if a response was
 * already under way, closes it.
 */
function fail(req, res, error) {
  if (req.listenerCount('error') > 0) {
    req.emit('error', error)
    return 'told'
  }
  if (res.headersSent) req.destroy()
  else {
    res.statusCode = error.status
    res.setHeader('Connection', 'close')
    res.setHeader('Content-Type', 'text/plain; charset=utf-8')
    res.end(`${error.message}\n`, () => req.destroy())
  }
  return 'answered'
}

module.exports = { decompressPayload, decompressRequest }
