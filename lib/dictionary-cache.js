'use strict'
// Dictionaries by their bytes, for zstd-pool/zlib. node:zlib takes a dictionary's bytes and loads them into its context on every
// call; the core takes a Dictionary, prepared once. The last few prepared are kept, each with a
// copy of its bytes, and a call whose dictionary has the same bytes (in any buffer) takes the
// kept one: comparing 100 KiB takes microseconds, preparing it again far longer. One pushed out
// is disposed at once, not left to the garbage collector: a loop of sync calls with ever new
// dictionaries (the collector's finalizers wait for the event loop to turn) stays bounded.

const { Dictionary } = require('./dictionary.js')
const { coded, invalidType } = require('./errors.js')
const { compare } = require('#platform')
const { bytes, copyOf, isBinary, lengthOf } = require('./primordials.js')

/** Dictionaries kept, the most recently used last: { bytes, prepared, pins, out }. */
const kept = []
const KEPT_DICTIONARIES = 8
/** Entries pushed out while pinned, until released. */
const pushedOut = new Map()

/** The prepared Dictionary for `value` (a zstd-pool Dictionary, or bytes), pinned: a call that
 * takes one releases it with `release` once native code holds it. A pinned entry pushed out of
 * the cache is disposed of when released, not before: a getter or hook of the caller's that
 * makes other calls meanwhile cannot take it from under the call. */
function keptDictionary(value) {
  if (value === undefined) return undefined
  // A prepared Dictionary is taken as it is: code written for zstd-pool/zlib can skip the cache.
  if (value instanceof Dictionary) return value
  if (!isBinary(value))
    throw invalidType('options.dictionary', 'an instance of Buffer, TypedArray, DataView, or ArrayBuffer', value)
  const view = bytes(value, 'options.dictionary')
  const length = lengthOf(view)
  // node:zlib loads an empty dictionary as none.
  if (length === 0) return undefined
  for (let i = kept.length - 1; i >= 0; i--) {
    const entry = kept[i]
    if (entry.bytes.length !== length || compare(entry.bytes, view) !== 0) continue
    kept.splice(i, 1)
    kept.push(entry)
    entry.pins++
    return entry.prepared
  }
  const copy = copyOf(view)
  let prepared
  try {
    prepared = new Dictionary(copy)
  } catch (error) {
    // node:zlib: libzstd refused to load the dictionary into its context.
    throw coded(new Error('Initialization failed', { cause: error }), 'ERR_ZLIB_INITIALIZATION_FAILED')
  }
  kept.push({ bytes: copy, prepared, pins: 1, out: false })
  if (kept.length > KEPT_DICTIONARIES) {
    const entry = kept.shift()
    // Calls and streams already using it hold it until they end.
    if (entry.pins === 0) {
      entry.prepared[Symbol.dispose]()
    } else {
      entry.out = true
      pushedOut.set(entry.prepared, entry)
    }
  }
  return prepared
}

/** Unpins the dictionary `read` took (its call's native code holds it now, or failed). */
function release(read) {
  const prepared = read.dictionary
  if (prepared === undefined) return
  read.dictionary = undefined
  const entry = kept.find((candidate) => candidate.prepared === prepared) ?? pushedOut.get(prepared)
  if (entry === undefined || --entry.pins > 0) return
  if (entry.out) {
    pushedOut.delete(prepared)
    prepared[Symbol.dispose]()
  }
}

module.exports = { keptDictionary, release }
