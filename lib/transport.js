'use strict'
// Compression Dictionary Transport (RFC 9842) for zstd-pool/http (http.js): the dictionaries a
// server offers, the Use-As-Dictionary header that marks a response as one, which of them a
// request's Available-Dictionary names, and the header of a `dcz` body. Plain functions: the
// face hashes the bytes and makes the Dictionary.

const { invalidType, invalidValue } = require('./errors.js')
const { bytes } = require('./primordials.js')
const { integer, optionsObject } = require('./validate.js')

/** A `dcz` body starts with a skippable frame (magic 0x184D2A5E, 32 bytes of content) that holds
 * the dictionary's SHA-256 (RFC 9842, 5.2): these 8 bytes, then the hash. */
const DCZ_MAGIC = [0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00]

/** What `path` and `match` may hold: a path of RFC 3986's characters (`%` escapes included),
 * and in `match`, `*` matching any characters. URLPattern reads other characters as syntax
 * (`:name`, `(...)`, `{...}`, `+`, `?`, `#`), so they are refused rather than matched otherwise
 * than the browser matches them. */
const PATH = /^\/[A-Za-z0-9\-._~!$&',;=@/%]*$/
const MATCH = /^\/[A-Za-z0-9\-._~!$&',;=@/%*]*$/

/** The longest `match`, and the longest request path matched: beyond it a path is covered by no
 * dictionary (so that matching costs a bounded time whatever the request). */
const MAX_MATCH = 1024
const MAX_PATH = 8192

/** An sf-string's characters (RFC 8941): printable ASCII. */
const PRINTABLE = /^[\x20-\x7e]*$/

/** zstd's dictionary magic (0xEC30A437, little-endian). libzstd reads bytes that begin with it as
 * a trained dictionary (tables, an ID), and a browser reads dcz dictionaries as raw content. */
const DICTIONARY_MAGIC = [0x37, 0xa4, 0x30, 0xec]

/** The largest window RFC 9842 lets a dcz frame use with a dictionary of `size` bytes: the larger
 * of 8 MB and 1.25 times the dictionary, at most 128 MB; as the log of a power of two within. */
function dczWindowLog(size) {
  return Math.min(27, Math.max(23, Math.floor(Math.log2(size * 1.25))))
}

/** How long a browser keeps a dictionary fresh by default, in seconds: one week. */
const DEFAULT_MAX_AGE = 7 * 24 * 3600

/**
 * `options.dictionaries`: an array of `{ path, match, data, id?, type?, maxAge? }`, each read
 * once and checked. `digest(bytes)` is the SHA-256 of `bytes`, as `{ hash, base64 }`; `prepare(bytes)`
 * makes the Dictionary that compresses against them (it must be raw content: see below).
 */
function readDictionaries(value, digest, prepare) {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw invalidType('options.dictionaries', 'an array of dictionary entries', value)
  const seen = new Set()
  return value.map((item, i) => {
    const name = `options.dictionaries[${i}]`
    const entry = optionsObject(item, name, 'an object with path, match and data')
    if (entry === undefined) throw invalidType(name, 'an object with path, match and data', item)
    const { path, match, data, id, type = 'application/octet-stream', maxAge = DEFAULT_MAX_AGE } = entry
    if (typeof path !== 'string' || !PATH.test(path)) throw invalidValue(`${name}.path`, "a path starting with '/'", path)
    if (seen.has(path)) throw invalidValue(`${name}.path`, 'a path no other dictionary has', path)
    seen.add(path)
    if (typeof match !== 'string' || match.length > MAX_MATCH || !MATCH.test(match)) {
      const expected = `a path starting with '/' of at most ${MAX_MATCH} characters, where * matches anything`
      throw invalidValue(`${name}.match`, expected, match)
    }
    if (id !== undefined && (typeof id !== 'string' || id.length > 1024 || !PRINTABLE.test(id))) {
      throw invalidValue(`${name}.id`, 'a string of at most 1024 printable ASCII characters', id)
    }
    if (typeof type !== 'string' || !PRINTABLE.test(type)) throw invalidValue(`${name}.type`, 'a content type', type)
    const content = Uint8Array.from(bytes(data, `${name}.data`))
    if (content.length === 0) throw invalidValue(`${name}.data`, 'at least one byte', data)
    if (DICTIONARY_MAGIC.every((byte, at) => content[at] === byte)) {
      throw invalidValue(`${name}.data`, "raw content, not beginning with zstd's dictionary magic", data)
    }
    const { hash, base64 } = digest(content)
    const header = new Uint8Array(40)
    header.set(DCZ_MAGIC)
    header.set(hash, 8)
    const cacheControl = `public, max-age=${integer(maxAge, `${name}.maxAge`, 0, 2 ** 31 - 1)}`
    return {
      path,
      match,
      // What comes before the first `*`: a request path that does not start with it is not covered.
      literal: match.split('*')[0],
      data: content,
      type,
      cacheControl,
      useAsDictionary: id === undefined ? `match=${sfString(match)}` : `match=${sfString(match)}, id=${sfString(id)}`,
      // As the request names it: an sf-binary (RFC 8941, 3.3.5).
      available: `:${base64}:`,
      etag: `"sha-256:${base64}"`,
      header,
      maxWindowLog: dczWindowLog(content.length),
      dictionary: prepare(content),
    }
  })
}

/**
 * Whether `path` matches `match`, where `*` matches any characters (`/` included) and everything
 * else itself. Two cursors, going back only to the last `*` seen: time at most the product of the
 * two lengths, whatever the pattern (a regular expression of several `.*` can take the power).
 */
function matches(match, path) {
  let m = 0
  let p = 0
  let star = -1
  let resume = 0
  while (p < path.length) {
    if (m < match.length && match[m] === '*') {
      star = m++
      resume = p
    } else if (m < match.length && match[m] === path[p]) {
      m++
      p++
    } else if (star >= 0) {
      m = star + 1
      p = ++resume
    } else {
      return false
    }
  }
  while (m < match.length && match[m] === '*') m++
  return m === match.length
}

/** `text` (printable ASCII) as an sf-string: quoted, `\\` and `"` escaped (RFC 8941, 3.3.3). */
function sfString(text) {
  return `"${text.replace(/[\\"]/g, '\\$&')}"`
}

/** Whether `entry`'s `match` covers `pathname`. */
function covers(entry, pathname) {
  return pathname.length <= MAX_PATH && pathname.startsWith(entry.literal) && matches(entry.match, pathname)
}

/** The dictionary served at `pathname`, if any. */
function servedAt(entries, pathname) {
  return entries.find((entry) => entry.path === pathname)
}

/** Whether some dictionary's `match` covers `pathname`: its responses vary by Available-Dictionary. */
function coversPath(entries, pathname) {
  return entries.some((entry) => covers(entry, pathname))
}

/** The dictionary a request's Available-Dictionary names, if it is one of `entries` and its
 * `match` covers `pathname`; undefined for anything else (malformed, unknown, not for this path). */
function dictionaryFor(entries, pathname, available) {
  if (typeof available !== 'string') return undefined
  const value = available.trim()
  return entries.find((entry) => entry.available === value && covers(entry, pathname))
}

/** The path of a request's target, without its query: of its origin form (`/a/b?c`), or of its
 * absolute form (`http://host/a/b?c`, which proxies send). */
function pathOf(url) {
  let text = typeof url === 'string' ? url : ''
  const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(text)
  if (authority !== null) text = text.slice(authority[0].length) || '/'
  const end = text.search(/[?#]/)
  return end < 0 ? text : text.slice(0, end)
}

module.exports = { coversPath, dictionaryFor, matches, pathOf, readDictionaries, servedAt }
