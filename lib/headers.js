'use strict'
// The response headers zstd-pool/http (http.js) reads and writes: plain functions of a response's
// getHeader/setHeader, and of header values.

/** The content types compressed by default: text, and the structured and script types sent as
 * text: the kinds of type that the `compression` middleware compresses by default, as a few patterns. */
const COMPRESSIBLE =
  /^(?:text\/|application\/(?:json|javascript|ecmascript|x-javascript|xml|xhtml\+xml|rss\+xml|atom\+xml|manifest\+json|ld\+json|x-ndjson|graphql-response\+json|wasm|x-www-form-urlencoded)\b|image\/svg\+xml\b|[a-z]+\/[^;\s]+\+(?:json|xml|text)\b)/i

/** Whether the response's Content-Type is one compressed by default (`options.filter`'s default). */
function compressible(_req, res) {
  const type = res.getHeader('Content-Type')
  return typeof type === 'string' && COMPRESSIBLE.test(type)
}

/** `value`'s header list, as a lowercased array of its comma-separated members. */
function members(value) {
  const text = Array.isArray(value) ? value.join(',') : String(value ?? '')
  return text
    .split(',')
    .map((member) => member.trim().toLowerCase())
    .filter(Boolean)
}

/** Adds `field` to the response's Vary, unless it is there (or Vary is `*`). */
function vary(res, field) {
  const before = res.getHeader('Vary')
  const present = members(before)
  if (present.includes('*') || present.includes(field.toLowerCase())) return
  res.setHeader('Vary', present.length === 0 ? field : `${Array.isArray(before) ? before.join(', ') : before}, ${field}`)
}

/** Whether the response is a range of its representation: encoding it would make the range one of
 * the encoded bytes (RFC 9110, 14.1.2), which it is not. */
function isPartial(res) {
  return res.statusCode === 206 || res.hasHeader('Content-Range')
}

/** A strong ETag names the bytes of one representation, and the encoded body is another (RFC
 * 9110, 8.8.3): it becomes weak, which If-None-Match still matches. */
function weakenETag(res) {
  const etag = res.getHeader('ETag')
  if (typeof etag === 'string' && etag.startsWith('"')) res.setHeader('ETag', `W/${etag}`)
}

/** Whether the response has a Content-Encoding already (other than identity). */
function alreadyEncoded(res) {
  const encoding = res.getHeader('Content-Encoding')
  return encoding !== undefined && members(encoding).some((member) => member !== 'identity')
}

/** Whether the response forbids transforming its body (Cache-Control: no-transform). */
function noTransform(res) {
  return members(res.getHeader('Cache-Control')).includes('no-transform')
}

/** Sets each of `headers` (an object, or a flat array of names and values, where a name may
 * come more than once) on `res`, as writeHead would send them. */
function setAll(res, headers) {
  if (Array.isArray(headers)) {
    const named = new Set()
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const name = String(headers[i]).toLowerCase()
      if (!named.has(name)) res.removeHeader(name)
      named.add(name)
      res.appendHeader(name, headers[i + 1])
    }
    return
  }
  for (const name of Object.keys(headers)) if (headers[name] !== undefined) res.setHeader(name, headers[name])
}

module.exports = { alreadyEncoded, compressible, isPartial, members, noTransform, setAll, vary, weakenETag }
