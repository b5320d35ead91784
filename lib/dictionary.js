'use strict'
// Dictionaries: the Dictionary class (a prepared native dictionary, as prepared.js keeps it),
// training (libzstd's fastCover and cover trainers, with their optimizer) and finalizing
// hand-picked content, each sync or on the threadpool.

const { binding } = require('./binding.js')
const { cancellable } = require('./cancel.js')
const { coded, invalidType, invalidValue, outOfRange } = require('./errors.js')
const { DEFAULT_LEVEL, level, workers } = require('./parameters.js')
const { allocUnsafeSlow } = require('#platform')
const { bytes, copyOf, lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')
const { Prepared, nativeOf } = require('./prepared.js')
const { materialize } = require('./results.js')
const { integer, optionsObject, signal } = require('./validate.js')

/**
 * A zstd dictionary (from trainDictionary, finalizeDictionary or `zstd --train`), prepared once
 * for any number of calls on any thread. Pass it as the `dictionary` option; frames made with it
 * need it to be decompressed. Its native memory holds its bytes and their digested forms.
 */
class Dictionary extends Prepared {
  #id

  constructor(data) {
    const native = new binding.PreparedDictionary(bytes(data, 'data'))
    super(native, KIND)
    this.#id = native.id
  }

  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  get id() {
    return this.#id
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Dictionary { id: ${this.id}, size: ${this.size} }`
  }
}

const KIND = 'dictionary'

/** The native dictionary of a Dictionary, or undefined. */
function preparedOf(value) {
  return nativeOf(value, KIND)
}

/** What `zstd --train` makes by default: 110 KiB. */
const DEFAULT_SIZE = 112_640
const MAX_SIZE = 2 ** 30
/** libzstd's smallest dictionary (ZDICT_DICTSIZE_MIN). */
const MIN_SIZE = 256
const MAX_UINT32 = 2 ** 32 - 1
/** libzstd's bounds for fastCover's `f` and `accel` (FASTCOVER_MAX_F, FASTCOVER_MAX_ACCEL). */
const MAX_F = 31
const MAX_ACCEL = 10
/** The smallest `k` libzstd's optimizer takes when it chooses `d` (its largest `d`, 8). */
const MIN_K_FOR_ANY_D = 8
/** cover's largest `k`: its map of segments takes 32 bytes per unit of `k` (32 MiB here), and
 * libzstd 1.5.7 overflows a shift from 2^30 (COVER_map_init). zstd calls 16 to 2048 reasonable. */
const MAX_COVER_K = 2 ** 20
/** The smallest `k` libzstd's optimizer tries, which `d` may not pass. */
const MIN_OPTIMIZED_K = 50

/** The samples end to end, and their sizes: each read once and copied at once (so that reading a
 * later one, a getter, cannot change an earlier one) into one buffer that doubles as it fills,
 * rather than a Buffer each (a million samples took seconds of the main thread that way). */
function samplesOf(samples) {
  if (!Array.isArray(samples)) throw invalidType('samples', 'an instance of Array', samples)
  // Read once, and a number (a Proxy's may be anything); nothing is allocated for it up front:
  // a sparse array's length costs nothing to write, and fails at its first hole.
  const count = samples.length
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_UINT32) {
    throw outOfRange('samples.length', `an integer >= 0 and <= ${MAX_UINT32}`, count)
  }
  const sizes = []
  let joined = allocUnsafeSlow(FIRST_ROOM)
  let used = 0
  for (let i = 0; i < count; i++) {
    const view = bytes(samples[i], `samples[${i}]`)
    const length = lengthOf(view)
    if (length > MAX_UINT32 - used) throw outOfRange('samples', `at most ${MAX_UINT32} bytes in all`, used + length)
    if (used + length > lengthOf(joined)) joined = grown(joined, used, used + length)
    typedArraySet.call(joined, view, used)
    sizes.push(length)
    used += length
  }
  return { joined: copyOf(firstBytes(joined, used)), sizes: Uint32Array.from(sizes) }
}

/** A buffer of at least `least` bytes (double the old one's, at the least) holding the first
 * `used` bytes of `old`. */
function grown(old, used, least) {
  const bigger = allocUnsafeSlow(Math.max(least, lengthOf(old) * 2))
  typedArraySet.call(bigger, firstBytes(old, used))
  return bigger
}

/** A view of the first `length` bytes of `buffer`, one of this module's own. */
function firstBytes(buffer, length) {
  return new Uint8Array(typedArrayGetters.buffer.call(buffer), typedArrayGetters.byteOffset.call(buffer), length)
}

/** The joined samples' first buffer: it doubles from there as they need. */
const FIRST_ROOM = 64 << 10

/** An option of one algorithm given for the other. */
function notFor(name, algorithm) {
  return coded(
    new TypeError(`The "options.${name}" property does not apply to the ${algorithm} algorithm`),
    'ERR_INVALID_ARG_VALUE',
  )
}

/**
 * The training options, checked against libzstd's bounds, as the binding takes them (see
 * `train_params` in crates/addon/src/exports/dictionary.rs), and as the result reports them.
 * Defaults are `zstd --train`'s: fastCover, d 8, f 20, accel 1, and the optimizer choosing k in
 * 4 steps; `k` (and `d`) 0 or left out leave them to the optimizer.
 */
function trainingOptions(options) {
  const object = optionsObject(options, 'options', 'an object of training options') ?? {}
  const { size = DEFAULT_SIZE, algorithm = 'fastCover', k = 0, d = 8, f, accel, steps = 4, splitPoint } = object
  const { threads = 1, dictId = 0, level: levelValue = DEFAULT_LEVEL, signal: signalValue } = object
  if (algorithm !== 'fastCover' && algorithm !== 'cover') {
    throw invalidValue('options.algorithm', "'fastCover' or 'cover'", algorithm)
  }
  const cover = algorithm === 'cover'
  const checked = {
    size: integer(size, 'options.size', MIN_SIZE, MAX_SIZE),
    d: cover ? integer(d, 'options.d', 0, MAX_SIZE) : fastCoverD(d),
    f: cover ? absent(f, 'f', algorithm) : integer(f ?? 20, 'options.f', 1, MAX_F),
    accel: cover ? absent(accel, 'accel', algorithm) : integer(accel ?? 1, 'options.accel', 1, MAX_ACCEL),
    steps: integer(steps, 'options.steps', 1, MAX_UINT32),
    // 0 asks for libzstd's default: fastCover trains on 75% of the samples, cover on all.
    splitPoint: splitPoint === undefined ? 0 : share(splitPoint),
    threads: workers(threads, 'options.threads'),
    dictId: integer(dictId, 'options.dictId', 0, MAX_UINT32),
    level: level(levelValue, 'options.level'),
  }
  if (checked.threads === 0) throw outOfRange('options.threads', 'an integer >= 1', 0)
  const maxK = cover ? Math.min(checked.size, MAX_COVER_K) : checked.size
  if (k !== 0) integer(k, 'options.k', Math.max(checked.d, checked.d === 0 ? MIN_K_FOR_ANY_D : 1), maxK)
  else if (checked.d > MIN_OPTIMIZED_K)
    throw outOfRange('options.d', `<= ${MIN_OPTIMIZED_K} when the optimizer chooses k`, checked.d)
  const params = [cover ? 1 : 0, k, checked.d, checked.f ?? 0, checked.accel ?? 0, checked.steps, checked.splitPoint]
  params.push(checked.threads, checked.dictId, checked.level)
  return {
    algorithm,
    size: checked.size,
    params: Float64Array.from(params),
    signal: signal(signalValue),
    checked,
  }
}

/** fastCover's `d`: 6 or 8 (or 0, for the optimizer to try both). */
function fastCoverD(value) {
  if (typeof value !== 'number') throw invalidType('options.d', 'of type number', value)
  if (value !== 0 && value !== 6 && value !== 8)
    throw outOfRange('options.d', '6 or 8 (or 0: both, tried by the optimizer)', value)
  return value
}

function absent(value, name, algorithm) {
  if (value !== undefined) throw notFor(name, algorithm)
  return undefined
}

/** A share of the samples: more than 0, at most 1. */
function share(value) {
  if (typeof value !== 'number') throw invalidType('options.splitPoint', 'of type number', value)
  if (!(value > 0 && value <= 1)) throw outOfRange('options.splitPoint', '> 0 and <= 1', value)
  return value
}

/** The trained dictionary (a Buffer) with the parameters it was made with: `k` and `d` as the
 * optimizer chose them, and options that, given back, make it again without the optimizer. */
function trained([dictionary, k, d], { algorithm, checked }) {
  const buffer = materialize(dictionary)
  const made = { algorithm, k, d, level: checked.level }
  if (algorithm === 'fastCover') Object.assign(made, { f: checked.f, accel: checked.accel })
  // Defined, not assigned: a setter someone put on a prototype does not run.
  return Object.defineProperty(buffer, 'parameters', { value: Object.freeze(made), enumerable: true })
}

/**
 * Trains a dictionary on `samples` (typically thousands of small, similar records, about 100
 * times the dictionary size in all) for `new Dictionary(...)` or `zstd -D`, on the calling thread.
 */
function trainDictionarySync(samples, options) {
  const settings = trainingOptions(options)
  const { joined, sizes } = samplesOf(samples)
  return trained(binding.trainDictionary(joined, sizes, settings.size, settings.params), settings)
}

/** `trainDictionarySync` on the libuv threadpool: a Promise. An AbortSignal rejects it at once;
 * a training that has started runs to its end on its thread (libzstd's trainers cannot stop),
 * and its result is dropped. */
function trainDictionary(samples, options) {
  return later(() => {
    const settings = trainingOptions(options)
    const { joined, sizes } = samplesOf(samples)
    const start = (cancellation) =>
      binding
        .trainDictionaryAsync(joined, sizes, settings.size, settings.params, cancellation)
        .then((made) => trained(made, settings))
    return settings.signal === undefined ? start(undefined) : cancellable(settings.signal, start)
  })
}

/** The finalizing options: the dictionary's largest size (default: the content's, plus room for
 * the header), the level to tune it for, and its ID (0: one derived from the content). */
function finalizeOptions(options, contentLength) {
  const object = optionsObject(options, 'options', 'an object of dictionary options') ?? {}
  const { size, level: levelValue = DEFAULT_LEVEL, dictId = 0, signal: signalValue } = object
  const least = Math.max(contentLength, MIN_SIZE)
  return {
    size:
      size === undefined
        ? Math.min(Math.max(contentLength + HEADER_ROOM, MIN_SIZE), MAX_SIZE)
        : integer(size, 'options.size', least, MAX_SIZE),
    level: level(levelValue, 'options.level'),
    dictId: integer(dictId, 'options.dictId', 0, MAX_UINT32),
    signal: signal(signalValue),
  }
}

/** Room for a dictionary's header past its content: the magic number, ID and entropy tables
 * (libzstd builds them in 256 bytes), and the padding of a very short content. */
const HEADER_ROOM = 512

/** The content, read once, and checked to fit a dictionary. */
function contentOf(content) {
  const view = bytes(content, 'content')
  const length = lengthOf(view)
  if (length > MAX_SIZE) throw outOfRange('content.length', `<= ${MAX_SIZE}`, length)
  return copyOf(view)
}

/**
 * A dictionary made of hand-picked `content` (the strings the data repeats, the most useful
 * last) and the statistics of `samples` compressed against it (ZDICT_finalizeDictionary), on the
 * calling thread.
 */
function finalizeDictionarySync(content, samples, options) {
  const copy = contentOf(content)
  const settings = finalizeOptions(options, copy.length)
  const { joined, sizes } = samplesOf(samples)
  return materialize(binding.finalizeDictionary(copy, joined, sizes, settings.size, settings.level, settings.dictId))
}

/** `finalizeDictionarySync` on the libuv threadpool: a Promise. */
function finalizeDictionary(content, samples, options) {
  return later(() => {
    const copy = contentOf(content)
    const settings = finalizeOptions(options, copy.length)
    const { joined, sizes } = samplesOf(samples)
    const { size, level: tunedFor, dictId } = settings
    const start = (cancellation) =>
      binding.finalizeDictionaryAsync(copy, joined, sizes, size, tunedFor, dictId, cancellation).then(materialize)
    return settings.signal === undefined ? start(undefined) : cancellable(settings.signal, start)
  })
}

/** The Promise of `run()`: a throw is a rejection. */
function later(run) {
  try {
    return run()
  } catch (error) {
    return Promise.reject(error)
  }
}

module.exports = { Dictionary, finalizeDictionary, finalizeDictionarySync, preparedOf, trainDictionary, trainDictionarySync }
