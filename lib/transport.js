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

/** What `match` may hold: a path, `*` matching any characters. URLPattern's groups (`:name`,
 * `(...)`, `{...}`) are not read here, so they are refused rather than matched wrongly. */
const MATCH = /^\/[^:(){}\\"\s]*$/

/** An sf-string's characters (RFC 8941): printable ASCII. */
const PRINTABLE = /^[\x20-\x7e]*$/

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
    if (typeof path !== 'string' || !path.startsWith('/')) throw invalidValue(`${name}.path`, "a path starting with '/'", path)
    if (seen.has(path)) throw invalidValue(`${name}.path`, 'a path no other dictionary has', path)
    seen.add(path)
    if (typeof match !== 'string' || !MATCH.test(match)) {
      throw invalidValue(`${name}.match`, "a path starting with '/', where * matches anything", match)
    }
    if (id !== undefined && (typeof id !== 'string' || id.length > 1024 || !PRINTABLE.test(id))) {
      throw invalidValue(`${name}.id`, 'a string of at most 1024 printable ASCII characters', id)
    }
    if (typeof type !== 'string' || !PRINTABLE.test(type)) throw invalidValue(`${name}.type`, 'a content type', type)
    const content = Uint8Array.from(bytes(data, `${name}.data`))
    if (content.length === 0) throw invalidValue(`${name}.data`, 'at least one byte', data)
    const dictionary = prepare(content)
    // A dcz dictionary is raw content. Bytes that begin as a zstd dictionary does are read as
    // one by libzstd (its ID, its tables), and the browser, which takes them as raw bytes, could
    // not decode what they compress.
    if (dictionary.id !== 0) throw invalidValue(`${name}.data`, "raw content (it begins with zstd's dictionary magic)", data)
    const { hash, base64 } = digest(content)
    const header = new Uint8Array(40)
    header.set(DCZ_MAGIC)
    header.set(hash, 8)
    return {
      path,
      match,
      data: content,
      type,
      cacheControl: `public, max-age=${integer(maxAge, `${name}.maxAge`, 0, 2 ** 31 - 1)}`,
      useAsDictionary: id === undefined ? `match="${match}"` : `match="${match}", id="${id}"`,
      // As the request names it: an sf-binary (RFC 8941, 3.3.5).
      available: `:${base64}:`,
      header,
      dictionary,
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

/** The dictionary served at `pathname`, if any. */
function servedAt(entries, pathname) {
  return entries.find((entry) => entry.path === pathname)
}

/** Whether some dictionary's `match` covers `pathname`: its responses vary by Available-Dictionary. */
function coversPath(entries, pathname) {
  return entries.some((entry) => matches(entry.match, pathname))
}

/** The dictionary a request's Available-Dictionary names, if it is one of `entries` and its
 * `match` covers `pathname`; undefined for anything else (malformed, unknown, not for this path). */
function dictionaryFor(entries, pathname, available) {
  if (typeof available !== 'string') return undefined
  const value = available.trim()
  return entries.find((entry) => entry.available === value && matches(entry.match, pathname))
}

/** The path of a request's URL, without its query. */
function pathOf(url) {
  const text = typeof url === 'string' ? url : ''
  const end = text.search(/[?#]/)
  return end < 0 ? text : text.slice(0, end)
}

module.exports = { coversPath, dictionaryFor, matches, pathOf, readDictionaries, servedAt }
