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

/** Whether the request says it has a body, empty or not (RFC 9112, 6.3), as body-parser reads it. */
function hasBody(headers) {
  return headers['transfer-encoding'] !== undefined || headers['content-length'] !== undefined
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
 * (default 1 MiB), or needs a window past `windowLogMax` (default 23), is an error with status
 * 413; one that is not zstd, 400: emitted on the request, for its reader to answer (see
 * docs/http.md).
 */
function decompressRequest(options) {
  const limits = readLimits(options)
  return function zstdPoolDecompressRequest(req, _res, next) {
    const beneath = codingsBeneathZstd(req.headers)
    // HTTP/1 only: HTTP/2's compatibility request reads its body otherwise.
    const decodable = req.httpVersionMajor === 1 && hasBody(req.headers) && !req.readableEnded && req.readableEncoding == null
    if (beneath !== undefined && decodable) {
      markDecoded(req.headers, beneath)
      if (req.complete) decodeReceived(req, limits)
      else decodeArriving(req, limits)
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
  return function zstdPoolDecompressPayload(request, reply, payload, done) {
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
    // A body Fastify stopped reading (past bodyLimit, or not parsed): its decoder goes with the reply.
    reply.raw.once('close', () => {
      if (!decoder.readableEnded) decoder.destroy()
    })
    done(null, payload.pipe(decoder))
  }
}

/**
 * Decodes a body still arriving. Each chunk Node's HTTP parser pushes into the request goes to a
 * decompression stream instead (off the main thread), and what it decodes is pushed into the
 * request, with backpressure both ways: the request's reader holds the decoder back, and the
 * decoder holds the socket back (returning false from push, as Node's parser reads it).
 *
 * Nothing is decoded before a reader asks (a handler that answers without reading costs no
 * decoding and meets no error), nor once no reader looks at the data: a request resumed with no
 * 'data' listener, as Node does to read off the body of a request answered unread, and as
 * body-parser does after an error, is read off and dropped as it is.
 */
function decodeArriving(req, limits) {
  const { push, _read: read } = req
  // Made when a reader first asks: a request never read holds no context.
  let decoder = null
  // 'waiting' for a reader (chunks held in `held`), 'decoding', 'dropping' (no reader looks at
  // the data), 'told' (the reader got an error: the rest is dropped, and the request ends so that
  // the reader can answer, as body-parser does), or 'closed' (the request was destroyed).
  let state = 'waiting'
  let held = takeReadAhead(req)
  let received = 0
  let ended = false
  // Node marks a request whose body it reads off `_dumped` (Node 26 reads it with read(), not
  // resume()); body-parser reads off with resume().
  const unread = () => req._dumped === true || (req.readableFlowing === true && req.listenerCount('data') === 0)
  const restartSocket = () => {
    if (!req.destroyed) read.call(req, req.readableHighWaterMark)
  }
  const drop = () => {
    state = state === 'told' ? 'told' : 'dropping'
    held = []
    decoder?.destroy()
    if (ended) push.call(req, null)
  }
  const start = () => {
    state = 'decoding'
    decoder = createDecoder()
    for (const chunk of held) feed(chunk)
    held = []
  }
  const feed = (chunk) => {
    if (chunk !== null) return decoder.write(chunk)
    // An empty body decodes to an empty body.
    if (received === 0) {
      decoder.destroy()
      push.call(req, null)
    } else decoder.end()
    return false
  }
  req.push = function pushEncoded(chunk, encoding) {
    if (chunk === null) ended = true
    else received += chunk.length
    if ((state === 'waiting' || state === 'decoding') && unread()) drop()
    if (state === 'dropping' || state === 'told' || state === 'closed') {
      if (chunk === null && state !== 'closed') push.call(req, null)
      return chunk !== null
    }
    if (state === 'waiting') {
      held.push(chunk === null || encoding === undefined ? chunk : Buffer.from(chunk, encoding))
      return false
    }
    return feed(chunk)
  }
  req._read = function readDecoded(size) {
    if (state === 'waiting') {
      if (unread()) drop()
      else start()
    }
    if (state === 'decoding') decoder.resume()
    if (!req.destroyed) read.call(this, size)
  }
  const createDecoder = () => {
    const created = createDecompressStream(limits)
    created.on('data', (output) => {
      if (!push.call(req, output)) created.pause()
    })
    created.on('end', () => push.call(req, null))
    // The decoder took what it held: more may come from the socket.
    created.on('drain', () => {
      if (state === 'decoding') restartSocket()
    })
    created.on('error', (error) => {
      if (state !== 'decoding') return
      if (unread()) return drop()
      if (req.listenerCount('error') === 0) {
        // Node emits a request's errors only to listeners: a request that has none is destroyed
        // (its reader sees 'close', and no 'end'), and the connection closed.
        state = 'closed'
        req.destroy()
        return
      }
      state = 'told'
      // Piped destinations are not ended with a body that failed.
      req.unpipe()
      req.emit('error', asHttpError(error))
      drop()
      restartSocket()
    })
    return created
  }
  // A request that goes away mid-body: the decoder (and its native context) goes too.
  req.on('close', () => decoder?.destroy())
}

/** What Node read ahead of an unread request before the middleware ran (an asynchronous
 * middleware before it), taken out without asking for more: read() calls _read, which here would
 * start the socket and mark the request as read (so that Node would no longer read off an unread
 * body); an empty push then clears the read that _read left pending. */
function takeReadAhead(req) {
  if (req.readableLength === 0) return []
  const { _read: read } = req
  req._read = () => {}
  const taken = req.read(req.readableLength)
  req._read = read
  req.push(EMPTY)
  return [taken]
}

const EMPTY = new Uint8Array(0)

/**
 * Decodes a body received whole before the middleware ran (an asynchronous middleware before it),
 * once a reader shows up (a 'data' or 'readable' listener): no more will come through push, so it
 * is decoded on the spot (it is at most what Node reads ahead of an unread request: its
 * highWaterMark and one read from the socket) and put back. A body no reader takes is read off as
 * it is, by Node.
 */
function decodeReceived(req, limits) {
  const onReader = (event) => {
    if (event !== 'data' && event !== 'readable') return
    req.off('newListener', onReader)
    // An empty body decodes to an empty body.
    if (req.readableLength === 0) return
    const encoded = req.read(req.readableLength)
    let decoded
    try {
      decoded = decompressSync(encoded, limits)
    } catch (error) {
      // After this tick: the reader's other listeners ('error' among them) are added by then.
      process.nextTick(() => {
        if (req.listenerCount('error') === 0) return req.destroy()
        req.unpipe()
        req.emit('error', asHttpError(error))
      })
      return
    }
    if (decoded.length > 0) req.unshift(decoded)
  }
  req.on('newListener', onReader)
}

module.exports = { decompressPayload, decompressRequest }
