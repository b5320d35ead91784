'use strict'
// libzstd's compression parameters: the one table of them in JavaScript. Everything else is
// derived from it: the named options of the compress functions (by the names zstd.h gives them,
// as zstd-napi takes them), the `params` keys (their ZSTD_c_* numbers, as node:zlib takes them),
// node:zlib's ZSTD_c_* and strategy constants (zlib.js), and the check against the Rust list
// (capabilities().compressParameters, tested in __test__/architecture.spec.ts). The typings
// (main.d.ts, zlib.d.ts) spell them too, for editors. Each value is checked here against
// libzstd's own bounds (ZSTD_cParam_getBounds, from native code); a value of 0 asks for libzstd's
// default, as zstd.h says of every one of them.

const { capabilities } = require('./binding.js')
const { invalidParam, invalidType, invalidValue, outOfRange, unavailable } = require('./errors.js')
const { boolean, integer, optionsObject } = require('./validate.js')

const { minLevel: MIN_LEVEL, maxLevel: MAX_LEVEL, defaultLevel: DEFAULT_LEVEL } = capabilities

/**
 * By ZSTD_c_* number. `option`: the parameter has a compress option of its own by that name (the
 * others are named options as they are named here, sent to native code as (number, value) pairs).
 * `kind`: 'flag' a boolean, 'strategy' a number or a name of STRATEGIES. `clamp`: what libzstd
 * makes of a value outside its bounds when node:zlib hands it one (it raises or lowers it rather
 * than refusing it); `zlibFlag`: libzstd takes any value but 0 as 1; `off`: libzstd's "off" value,
 * which zstd-safe cannot set (taken as 0, libzstd decides). `zlib: false`: node:zlib names no
 * constant for it (libzstd, and so node:zlib's `params`, take it all the same).
 */
const PARAMETERS = [
  { name: 'compressionLevel', id: 100, option: 'level', clamp: [MIN_LEVEL, MAX_LEVEL] },
  { name: 'windowLog', id: 101 },
  { name: 'hashLog', id: 102 },
  { name: 'chainLog', id: 103 },
  { name: 'searchLog', id: 104 },
  { name: 'minMatch', id: 105 },
  { name: 'targetLength', id: 106 },
  { name: 'strategy', id: 107, kind: 'strategy' },
  // ZSTD_TARGETCBLOCKSIZE_MIN
  { name: 'targetCBlockSize', id: 130, clamp: [1340, Number.POSITIVE_INFINITY], zlib: false },
  { name: 'enableLongDistanceMatching', id: 160, kind: 'flag', off: 2 },
  { name: 'ldmHashLog', id: 161 },
  { name: 'ldmMinMatch', id: 162 },
  { name: 'ldmBucketSizeLog', id: 163 },
  { name: 'ldmHashRateLog', id: 164 },
  { name: 'contentSizeFlag', id: 200, kind: 'flag', zlibFlag: true },
  { name: 'checksumFlag', id: 201, option: 'checksum', zlibFlag: true },
  { name: 'dictIDFlag', id: 202, kind: 'flag', zlibFlag: true },
  // ZSTDMT_NBWORKERS_MAX on every target
  { name: 'nbWorkers', id: 400, option: 'workers', clamp: [0, 200] },
  { name: 'jobSize', id: 401 },
  { name: 'overlapLog', id: 402, clamp: [0, 9] },
]

/** ZSTD_fast (1) to ZSTD_btultra2 (9). */
const STRATEGIES = ['fast', 'dfast', 'greedy', 'lazy', 'lazy2', 'btlazy2', 'btopt', 'btultra', 'btultra2']

const byId = new Map(PARAMETERS.map((row) => [row.id, row]))
const idOf = (name) => PARAMETERS.find((row) => row.name === name).id
const ZSTD_c_compressionLevel = idOf('compressionLevel')
const ZSTD_c_checksumFlag = idOf('checksumFlag')
const ZSTD_c_nbWorkers = idOf('nbWorkers')
/** The parameters that are named options, in the order `namedParameters` reads them. */
const TUNED = PARAMETERS.filter((row) => row.option === undefined)

/**
 * The named parameters of an options object, each read once, in TUNED's order (tested): loads of
 * fixed names are what V8 makes fast (a loop over the names cost about 0.4 µs a call with none of
 * them set, commit 2cbdf4d); undefined when none is set.
 */
function namedParameters(options) {
  const named = [
    options.windowLog,
    options.hashLog,
    options.chainLog,
    options.searchLog,
    options.minMatch,
    options.targetLength,
    options.strategy,
    options.targetCBlockSize,
    options.enableLongDistanceMatching,
    options.ldmHashLog,
    options.ldmMinMatch,
    options.ldmBucketSizeLog,
    options.ldmHashRateLog,
    options.contentSizeFlag,
    options.dictIDFlag,
    options.jobSize,
    options.overlapLog,
  ]
  for (let i = 0; i < named.length; i++) if (named[i] !== undefined) return named
  return undefined
}

/** The bounds of each parameter this build of libzstd has, by number. */
const parameterBounds = new Map(capabilities.compressParameters.map(({ id, min, max }) => [id, { min, max }]))
// zstd-safe, the Rust binding underneath, sets long-distance matching to 0 (libzstd decides) or
// 1 (on), not to libzstd's 2 (off).
for (const { id, off } of PARAMETERS) if (off !== undefined && parameterBounds.has(id)) parameterBounds.get(id).max = off - 1

function level(value, name) {
  return integer(value, name, MIN_LEVEL, MAX_LEVEL)
}

function workers(value, name = 'options.workers') {
  integer(value, name, 0, capabilities.maxWorkers || 256)
  if (value >= 2 && capabilities.maxWorkers === 0) {
    throw unavailable('zstd-pool: this build of libzstd has no multi-threading (the WASI build): workers must be 0 or 1')
  }
  return value
}

/** A parameter's value as libzstd takes it: 0 (libzstd's default) or within its bounds. */
function parameterValue(id, value, name) {
  const bounds = parameterBounds.get(id)
  if (bounds === undefined) {
    throw unavailable(
      `zstd-pool: this build of libzstd has no ${byId.get(id).name} parameter (the WASI build has no multi-threading)`,
    )
  }
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  const { min, max } = bounds
  if (!Number.isInteger(value) || (value !== 0 && (value < min || value > max))) {
    const range = `an integer >= ${min} and <= ${max}`
    throw outOfRange(name, min > 0 ? `0 (libzstd's default) or ${range}` : range, value)
  }
  return value
}

/** The named parameters' values (from `namedParameters`) added to `tuned` (a Map, or undefined
 * for a new one), each checked by its kind. */
function tuneNamed(named, tuned) {
  for (let i = 0; i < TUNED.length; i++) {
    const value = named[i]
    if (value === undefined) continue
    const { name: parameter, id, kind } = TUNED[i]
    const name = `options.${parameter}`
    tuned ??= new Map()
    if (kind === 'flag') tuned.set(id, boolean(value, name) ? 1 : 0)
    else if (kind === 'strategy' && typeof value === 'string') tuned.set(id, strategyNumber(value, name))
    else tuned.set(id, parameterValue(id, value, name))
  }
  return tuned
}

function strategyNumber(value, name) {
  const index = STRATEGIES.indexOf(value)
  if (index < 0) throw invalidValue(name, `one of ${STRATEGIES.map((strategy) => `'${strategy}'`).join(', ')}`, value)
  return index + 1
}

/** The `params` option: { [ZSTD_c_* number]: value }, read once, key by key. Sets `settings`'
 * level, checksum and workers, and returns the other parameters as a Map. */
function numberedParameters(params, settings) {
  const object = optionsObject(params, 'options.params', 'an object keyed by ZSTD_c_* numbers')
  const tuned = new Map()
  if (object === undefined) return tuned
  for (const key of Object.keys(object)) {
    // As written, a number: not '1e2', ' 101' or '0x65', so that no two keys name one parameter.
    const id = String(Number(key)) === key ? Number(key) : Number.NaN
    const name = `options.params[${key}]`
    const value = object[key]
    if (id === ZSTD_c_compressionLevel) settings.level = level(value, name)
    else if (id === ZSTD_c_checksumFlag) settings.checksum = integer(value, name, 0, 1) === 1
    else if (id === ZSTD_c_nbWorkers) settings.workers = workers(value, name)
    else if (byId.has(id)) tuned.set(id, parameterValue(id, value, name))
    else throw invalidParam(key)
  }
  return tuned
}

/** The lowest level whose settings are made once and kept (here and in options.js): zstd's own
 * fast levels go down to -7, and lower ones are rare. */
const KEPT_FROM_LEVEL = -MAX_LEVEL

/** Settings arrays with no workers and no other parameter, by checksum flag then level. */
const KEPT = [[], []]

/**
 * The compression parameters as native code takes them (`CompressParams::from_settings` in
 * crates/core/src/compress.rs): an Int32Array of the level, the checksum flag and the workers,
 * then the other parameters (`tuned`, a Map, or undefined) as (ZSTD_c_* number, value) pairs.
 * Those of a level and a checksum flag alone are made once and shared: native code only reads
 * them, and no caller's code sees them.
 */
function nativeParameters(levelValue, checksum, workersValue, tuned) {
  const flag = checksum ? 1 : 0
  const pairs = tuned === undefined ? 0 : tuned.size
  if (pairs === 0 && workersValue === 0 && levelValue >= KEPT_FROM_LEVEL) {
    const index = levelValue - KEPT_FROM_LEVEL
    KEPT[flag][index] ??= Int32Array.of(levelValue, flag, 0)
    return KEPT[flag][index]
  }
  const native = new Int32Array(3 + 2 * pairs)
  native[0] = levelValue
  native[1] = flag
  native[2] = workersValue
  let at = 3
  if (tuned !== undefined) {
    for (const [id, value] of tuned) {
      native[at++] = id
      native[at++] = value
    }
  }
  return native
}

/** Levels from this one use windows over 8 MB (32 to 128 MB) when no windowLog is set. */
const LARGE_WINDOW_LEVEL = 20

/** Compress options (`options`, an object or undefined) with a window of at most 2^`most` bytes:
 * a larger windowLog lowered, and a level that would use a larger window given that one. */
function windowAtMost(options, most) {
  const { level: levelValue = DEFAULT_LEVEL, windowLog } = options ?? {}
  if (windowLog !== undefined && windowLog !== 0) return windowLog > most ? { ...options, windowLog: most } : options
  return levelValue >= LARGE_WINDOW_LEVEL ? { ...options, windowLog: most } : options
}

/** Compress options with a window of 2^`log` bytes, or less if they set less: for patch-from
 * against a reference larger than the level's window, which the window should reach (a `prefix`
 * sets the window to the reference's size, which a limit on the window may not allow). */
function windowOf(options, log) {
  const { windowLog } = options ?? {}
  return { ...options, windowLog: windowLog !== undefined && windowLog !== 0 ? Math.min(windowLog, log) : log }
}

// ---------------------------------------------------------------------------------------------
// As node:zlib names and takes them (zlib.js).

/** node:zlib's constants for the strategies and the parameters (ZSTD_fast, ZSTD_c_windowLog, ...),
 * in its order. */
const zlibConstants = {
  ...Object.fromEntries(STRATEGIES.map((strategy, i) => [`ZSTD_${strategy}`, i + 1])),
  ...Object.fromEntries(PARAMETERS.filter((row) => row.zlib !== false).map(({ name, id }) => [`ZSTD_c_${name}`, id])),
}

/** Whether `id` is a key node:zlib's `params` takes. */
function isParameter(id) {
  return byId.has(id)
}

/** What libzstd makes of `value` for parameter `id` where it raises or lowers it rather than
 * refusing it (node:zlib hands it values as they come). Other values are returned as they are,
 * for the checks above to refuse. */
function asLibzstdTakes(id, value) {
  const { clamp, zlibFlag, off } = byId.get(id)
  if (clamp !== undefined && value !== 0) return Math.min(Math.max(value, clamp[0]), clamp[1])
  if (zlibFlag) return value === 0 ? 0 : 1
  if (off !== undefined && value === off) return 0
  return value
}

module.exports = {
  DEFAULT_LEVEL,
  KEPT_FROM_LEVEL,
  MAX_LEVEL,
  MIN_LEVEL,
  PARAMETERS,
  TUNED,
  asLibzstdTakes,
  isParameter,
  level,
  namedParameters,
  numberedParameters,
  nativeParameters,
  tuneNamed,
  windowAtMost,
  windowOf,
  workers,
  zlibConstants,
}
