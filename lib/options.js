'use strict'
// The options of the compress and decompress functions (one-shot, batches, streams): each
// property is read once, in a fixed order, and checked, before any view of an input is taken.

const { INPUT_TYPES, MAX_LENGTH } = require('#platform')
const { binding, capabilities } = require('./binding.js')
const { preparedOf } = require('./dictionary.js')
const { incompatible, invalidParam, invalidType, invalidValue, outOfRange } = require('./errors.js')
const {
  DEFAULT_LEVEL,
  KEPT_FROM_LEVEL,
  level,
  namedParameters,
  nativeParameters,
  numberedParameters,
  tuneNamed,
  workers,
} = require('./parameters.js')
const { disposalCount } = require('./prepared.js')
const { preparedPrefixOf } = require('./prefix.js')
const { bytes, isBinary } = require('./primordials.js')
const { boolean, integer, optionsObject, signal } = require('./validate.js')

const ZSTD_d_windowLogMax = 100

function dictionary(value) {
  if (value === undefined) return undefined
  const prepared = preparedOf(value)
  if (prepared === undefined) throw invalidType('options.dictionary', 'an instance of Dictionary', value)
  return prepared
}

/** The most dictionaries `dictionaries` takes (the native set's bound, crates/core/src/dict_set.rs). */
const MAX_DICTIONARIES = 1024

/** The native sets made for the arrays last given as `dictionaries` (the most recent last), with
 * the array and what it held then: a call given the same array, holding the same dictionaries,
 * takes the same set (making one costs more than decoding a small frame). A few only, each
 * released (its dictionaries let go) as it leaves, and all of them whenever a Dictionary or
 * Prefix is disposed of: a disposed one fails later calls as it does alone, and its memory goes
 * at once rather than when the set is collected (which a busy loop never lets happen). */
const keptSets = []
const KEPT_SETS = 4
let disposalsSeen = 0

function releaseKeptSets(from, to) {
  for (const kept of keptSets.splice(from, to - from)) kept.set.release()
}

/**
 * The dictionaries option of decompression: an array of Dictionary, which frames choose from by
 * the dictionary ID they record. Its length is read once, then each element once, into `copies`
 * (an array's getters or a Proxy run then, and never again); the native set made of them holds
 * each dictionary for the calls and streams given it. An empty array is no dictionary at all.
 */
function dictionaries(value, copies) {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) throw invalidType('options.dictionaries', 'an instance of Array', value)
  // Read once, and a number: a Proxy's `length` may be anything, and an object's valueOf would
  // run again at each comparison.
  const length = value.length
  if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || length > MAX_DICTIONARIES) {
    throw outOfRange('options.dictionaries.length', `an integer >= 0 and <= ${MAX_DICTIONARIES}`, length)
  }
  if (length === 0) return undefined
  const natives = []
  for (let i = 0; i < length; i++) {
    const element = value[i]
    const native = preparedOf(element)
    if (native === undefined) throw invalidType(`options.dictionaries[${i}]`, 'an instance of Dictionary', element)
    natives.push(native)
    copies.push(element)
  }
  if (disposalsSeen !== disposalCount()) {
    releaseKeptSets(0, keptSets.length)
    disposalsSeen = disposalCount()
  }
  const at = keptSets.findIndex((kept) => kept.array === value)
  if (at !== -1 && sameElements(keptSets[at].natives, natives)) {
    const [kept] = keptSets.splice(at, 1)
    keptSets.push(kept)
    return kept.set
  }
  checkIds(natives, copies)
  const set = new binding.PreparedDictionarySet(natives)
  if (at !== -1) releaseKeptSets(at, at + 1)
  keptSets.push({ array: value, natives, set })
  if (keptSets.length > KEPT_SETS) releaseKeptSets(0, keptSets.length - KEPT_SETS)
  return set
}

function sameElements(a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Each dictionary of a set needs an ID of its own for frames to name it by. The IDs are the
 * native objects': a Dictionary's own getter could be overridden by a subclass. */
function checkIds(natives, elements) {
  const indexOfId = new Map()
  for (let i = 0; i < natives.length; i++) {
    const id = natives[i].id
    const name = `options.dictionaries[${i}]`
    const expected =
      id === 0
        ? 'a dictionary with an ID (raw content has none to be chosen by: pass it as options.dictionary)'
        : indexOfId.has(id)
          ? `a dictionary of its own ID (options.dictionaries[${indexOfId.get(id)}] has ID ${id} too)`
          : undefined
    if (expected !== undefined) throw invalidValue(name, expected, elements[i])
    indexOfId.set(id, i)
  }
}

const PREFIX_TYPES = INPUT_TYPES.replace('an instance of ', 'an instance of Prefix, ')

/** The prefix option as given (a Prefix, or bytes), its type checked: its view is taken by
 * `referenceOf` right before the native call, after anything that can run the caller's code. */
function prefix(value) {
  if (value === undefined || preparedPrefixOf(value) !== undefined) return value
  if (typeof value !== 'string' && !isBinary(value)) throw invalidType('options.prefix', PREFIX_TYPES, value)
  return value
}

/** What native code takes as a call's reference (crates/addon/src/exports/reference.rs): its
 * dictionary's native object, its Prefix's, a view of its prefix of bytes, or undefined. The view
 * is taken here: call it right before the native call, after anything that can run the caller's
 * code. */
function referenceOf(settings) {
  const { dictionary, dictionaries, prefix } = settings
  if (dictionary !== undefined) return dictionary
  if (dictionaries !== undefined) return dictionaries
  if (prefix === undefined) return undefined
  return preparedPrefixOf(prefix) ?? bytes(prefix, 'options.prefix')
}

/** The settings of a call: its parameters as native code takes them (`nativeParameters`), and
 * what JavaScript reads of them. */
function settingsOf(levelValue, checksum, workersValue, tuned, dictionaryValue, signalValue, prefixValue) {
  return {
    parameters: nativeParameters(levelValue, checksum, workersValue, tuned),
    workers: workersValue,
    dictionary: dictionaryValue,
    signal: signalValue,
    prefix: prefixValue,
  }
}

/** The settings of a call given a level alone, by level from KEPT_FROM_LEVEL: made once each, as
 * most calls give a level alone. */
const BY_LEVEL = []

function levelSettings(levelValue) {
  if (levelValue < KEPT_FROM_LEVEL) return settingsOf(levelValue, false, 0)
  const index = levelValue - KEPT_FROM_LEVEL
  BY_LEVEL[index] ??= Object.freeze(settingsOf(levelValue, false, 0))
  return BY_LEVEL[index]
}

const DEFAULTS = levelSettings(DEFAULT_LEVEL)

/** The second argument of the compress functions: a level, or an object of options. */
function compressOptions(options, name = 'level') {
  if (options === undefined || options === null) return DEFAULTS
  if (typeof options === 'number') return levelSettings(level(options, name))
  if (typeof options !== 'object') throw invalidType(name, 'of type number or an object of compress options', options)
  // Read by name, each once, in this order; the parameters' names after these.
  const {
    level: levelValue,
    checksum: checksumValue,
    workers: workersValue,
    dictionary: dictionaryValue,
    signal: signalValue,
    prefix: prefixValue,
    params,
  } = options
  const named = namedParameters(options)
  // The checksum is left undecided until every option is read (see below).
  const chosen = { level: DEFAULT_LEVEL, checksum: undefined, workers: 0 }
  // `params` first: the named options say the same things more plainly, and win.
  let tuned = params === undefined ? undefined : numberedParameters(params, chosen)
  if (levelValue !== undefined) chosen.level = level(levelValue, 'options.level')
  if (checksumValue !== undefined) chosen.checksum = boolean(checksumValue, 'options.checksum')
  if (workersValue !== undefined) chosen.workers = workers(workersValue)
  if (named !== undefined) tuned = tuneNamed(named, tuned)
  const dictionaryOption = dictionary(dictionaryValue)
  const signalOption = signal(signalValue)
  if (prefixValue !== undefined && dictionaryOption !== undefined) throw incompatible('prefix', 'dictionary')
  const prefixOption = prefix(prefixValue)
  // Unless the caller said (`checksum`, or `params[ZSTD_c_checksumFlag]`), patch-from frames
  // carry a checksum: decoded against the wrong reference, a patch gives wrong bytes that nothing
  // else catches. The zstd tool writes one by default, and so fails on a wrong --patch-from.
  const checksum = chosen.checksum ?? prefixValue !== undefined
  return settingsOf(chosen.level, checksum, chosen.workers, tuned, dictionaryOption, signalOption, prefixOption)
}

const DECOMPRESS_DEFAULTS = Object.freeze({
  maxOutputLength: MAX_LENGTH,
  windowLogMax: capabilities.defaultWindowLogMax,
  dictionary: undefined,
  dictionaries: undefined,
  // The Dictionaries of `dictionaries` as read, for seekable.js, whose frames are decoded by calls
  // of their own: they take this copy, not the caller's array.
  dictionaryList: undefined,
  signal: undefined,
  prefix: undefined,
})

function windowLogMax(value, name) {
  return integer(value, name, capabilities.minWindowLogMax, capabilities.maxWindowLogMax)
}

/** The second argument of the decompress functions. */
function decompressOptions(options) {
  const object = optionsObject(options, 'options', 'an object of decompress options')
  if (object === undefined) return DECOMPRESS_DEFAULTS
  const {
    maxOutputLength,
    windowLogMax: windowLogMaxValue,
    dictionary: dictionaryValue,
    dictionaries: dictionariesValue,
    signal: signalValue,
    prefix: prefixValue,
    params,
  } = object
  const settings = { ...DECOMPRESS_DEFAULTS }
  // `params` as node:zlib takes it: { [ZSTD_d_windowLogMax]: value }; the named option wins.
  const numbered = optionsObject(params, 'options.params', 'an object keyed by ZSTD_d_* numbers')
  for (const key of numbered === undefined ? [] : Object.keys(numbered)) {
    if (key !== String(ZSTD_d_windowLogMax)) throw invalidParam(key)
    const value = numbered[key]
    if (value !== 0) settings.windowLogMax = windowLogMax(value, `options.params[${key}]`)
  }
  if (maxOutputLength !== undefined) {
    settings.maxOutputLength = integer(maxOutputLength, 'options.maxOutputLength', 1, MAX_LENGTH)
  }
  if (windowLogMaxValue !== undefined) settings.windowLogMax = windowLogMax(windowLogMaxValue, 'options.windowLogMax')
  settings.dictionary = dictionary(dictionaryValue)
  // Checked before the array is read: a call refused anyway runs none of its getters.
  if (dictionariesValue !== undefined && settings.dictionary !== undefined) throw incompatible('dictionaries', 'dictionary')
  if (prefixValue !== undefined && dictionariesValue !== undefined) throw incompatible('prefix', 'dictionaries')
  settings.signal = signal(signalValue)
  if (prefixValue !== undefined && settings.dictionary !== undefined) throw incompatible('prefix', 'dictionary')
  settings.prefix = prefix(prefixValue)
  // Last: the native set is made once nothing else can fail.
  if (dictionariesValue !== undefined) {
    const copies = []
    settings.dictionaries = dictionaries(dictionariesValue, copies)
    if (settings.dictionaries !== undefined) settings.dictionaryList = copies
  }
  return settings
}

module.exports = { ZSTD_d_windowLogMax, compressOptions, decompressOptions, referenceOf }
