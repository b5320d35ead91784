// zstd-pool in a browser (or a bundle for one): the WebAssembly build, zstd-pool-wasm32-wasi,
// with the one-shot API of the Node entry. Results are Uint8Arrays (there is no Buffer here).
// The page must be cross-origin isolated (COOP `same-origin`, COEP `require-corp`): the module's
// memory is a SharedArrayBuffer, shared with the workers that run the Promise calls.
//
// As in main.js, JavaScript validates and native code computes, and calls pass numbers only:
// inputs are copied into the staging area (a Uint8Array over the module's own memory) and
// results copied out of it, or out of NativeBytes (see src/staging.rs).

import {
  Cancellation,
  capabilities,
  compressStaged,
  decompressStaged,
  NativeBytes,
  PreparedDictionary,
  stagingArea,
  stagingOwner,
} from 'zstd-pool-wasm32-wasi'

// Taken once, so that code patching them later cannot run in the middle of a call.
const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype)
const getter = (prototype, name) => Object.getOwnPropertyDescriptor(prototype, name).get
const viewBuffer = getter(typedArrayPrototype, 'buffer')
const viewOffset = getter(typedArrayPrototype, 'byteOffset')
const viewLength = getter(typedArrayPrototype, 'byteLength')
const viewTag = getter(typedArrayPrototype, Symbol.toStringTag)
const dataViewBuffer = getter(DataView.prototype, 'buffer')
const dataViewOffset = getter(DataView.prototype, 'byteOffset')
const dataViewLength = getter(DataView.prototype, 'byteLength')
const arrayBufferLength = getter(ArrayBuffer.prototype, 'byteLength')
const sharedArrayBufferLength =
  typeof SharedArrayBuffer === 'function' ? getter(SharedArrayBuffer.prototype, 'byteLength') : undefined
const typedArraySet = typedArrayPrototype.set
const U8 = Uint8Array

const limits = capabilities()
export const MIN_LEVEL = limits.minLevel
export const MAX_LEVEL = limits.maxLevel
export const DEFAULT_LEVEL = limits.defaultLevel

/** The largest result, and the largest staging area: what a Rust allocation and an emnapi view
 * can span on wasm32. */
const MAX_LENGTH = 2 ** 31 - 1
/** Async work estimated under this many microseconds runs on the spot (as in main.js). */
const INLINE_MICROS = 50

// ---------------------------------------------------------------------------------------------
// Errors, with Node's codes.

function coded(error, code) {
  return Object.defineProperty(error, 'code', { value: code, writable: true, enumerable: true, configurable: true })
}

function describe(value) {
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'object') return 'an object'
  return `type ${typeof value}`
}

function invalidType(name, expected, value) {
  return coded(new TypeError(`The "${name}" argument must be ${expected}. Received ${describe(value)}`), 'ERR_INVALID_ARG_TYPE')
}

function integer(value, name, min, max) {
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw coded(
      new RangeError(`The value of "${name}" is out of range. It must be an integer >= ${min} and <= ${max}. Received ${value}`),
      'ERR_OUT_OF_RANGE',
    )
  }
  return value
}

// ---------------------------------------------------------------------------------------------
// Inputs: every view is read whole; a string is encoded as UTF-8.

const encoder = new TextEncoder()

function bytes(data, name = 'data') {
  if (typeof data === 'string') return encoder.encode(data)
  // Brand checks (as Node's util.types does), which work across realms and cannot be faked.
  const typed = viewTag.call(data) !== undefined
  if (typed || isBrand(dataViewLength, data)) {
    const [buffer, offset, length] = typed
      ? [viewBuffer, viewOffset, viewLength]
      : [dataViewBuffer, dataViewOffset, dataViewLength]
    try {
      return new U8(buffer.call(data), offset.call(data), length.call(data))
    } catch {
      // A view whose memory is gone (detached, or past the end of a shrunk buffer) reads as no bytes.
      return new U8(0)
    }
  }
  if (isBrand(arrayBufferLength, data) || (sharedArrayBufferLength && isBrand(sharedArrayBufferLength, data))) {
    try {
      return new U8(data)
    } catch {
      return new U8(0)
    }
  }
  throw invalidType(name, 'of type string or an instance of TypedArray, DataView or ArrayBuffer', data)
}

/** Whether `value` has the internal slot that `brandGetter` (a prototype getter) reads. */
function isBrand(brandGetter, value) {
  try {
    brandGetter.call(value)
    return true
  } catch {
    // A detached DataView's byteLength throws too; its buffer getter does not: it is one.
    return value !== null && typeof value === 'object' && brandGetter === dataViewLength && isDetachedView(value)
  }
}

function isDetachedView(value) {
  try {
    dataViewBuffer.call(value)
    return true
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------------------------
// Options

const dictionaries = new WeakMap() // Dictionary -> its PreparedDictionary

function dictionary(value) {
  if (value === undefined) return undefined
  const prepared = dictionaries.get(value)
  if (prepared === undefined) throw invalidType('options.dictionary', 'an instance of Dictionary', value)
  return prepared
}

function signal(value) {
  if (value === undefined) return undefined
  // As Node does: anything with `aborted` and addEventListener (a signal from another realm too).
  if (value !== null && typeof value === 'object' && 'aborted' in value && typeof value.addEventListener === 'function') {
    return value
  }
  throw invalidType('options.signal', 'an instance of AbortSignal', value)
}

function compressOptions(options) {
  if (options === undefined || options === null) return { level: DEFAULT_LEVEL, checksum: false }
  if (typeof options === 'number') return { level: integer(options, 'level', MIN_LEVEL, MAX_LEVEL), checksum: false }
  if (typeof options !== 'object') throw invalidType('level', 'of type number or an object of compress options', options)
  const { level, checksum, workers, dictionary: dictionaryValue, signal: signalValue } = options
  if (workers !== undefined && integer(workers, 'options.workers', 0, 256) >= 2) {
    throw coded(
      new Error('zstd-pool: the WebAssembly build has no multi-threading: workers must be 0 or 1'),
      'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM',
    )
  }
  if (checksum !== undefined && typeof checksum !== 'boolean') throw invalidType('options.checksum', 'of type boolean', checksum)
  return {
    level: level === undefined ? DEFAULT_LEVEL : integer(level, 'options.level', MIN_LEVEL, MAX_LEVEL),
    checksum: checksum === true,
    dictionary: dictionary(dictionaryValue),
    signal: signal(signalValue),
  }
}

function decompressOptions(options) {
  if (options === undefined || options === null) return { maxOutputLength: MAX_LENGTH, windowLogMax: limits.defaultWindowLogMax }
  if (typeof options !== 'object') throw invalidType('options', 'an object of decompress options', options)
  const { maxOutputLength, windowLogMax, dictionary: dictionaryValue, signal: signalValue } = options
  return {
    maxOutputLength:
      maxOutputLength === undefined ? MAX_LENGTH : integer(maxOutputLength, 'options.maxOutputLength', 1, MAX_LENGTH),
    windowLogMax:
      windowLogMax === undefined
        ? limits.defaultWindowLogMax
        : integer(windowLogMax, 'options.windowLogMax', limits.minWindowLogMax, limits.maxWindowLogMax),
    dictionary: dictionary(dictionaryValue),
    signal: signal(signalValue),
  }
}

// ---------------------------------------------------------------------------------------------
// The staging area (see main.js, which does the same with Buffers).

const STAGE_MIN = 2 << 20
const STAGE_ROOM = 1 << 20
const STAGE_KEEP = 8 << 20
/** This copy's own staging area (another copy of the package may share the module). */
const STAGE_OWNER = stagingOwner()
let stage = null
// The memory under `stage`, taken when it is made: results are viewed through these, never
// through methods of `stage` that a patched `Symbol.species` could divert.
let stageBuffer = null
let stageOffset = 0
let stageResultAt = 0

function staged(input, room) {
  const length = viewLength.call(input)
  stageResultAt = Math.ceil(length / 8) * 8
  const wanted = stageResultAt + room
  const size = stage === null ? 0 : viewLength.call(stage)
  if (size < wanted || (size > STAGE_KEEP && wanted <= STAGE_KEEP)) replaceStage(wanted)
  if (length > 0) typedArraySet.call(stage, input)
  return length
}

function replaceStage(wanted) {
  stage = null
  stageBuffer = null
  if (wanted > MAX_LENGTH) {
    throw coded(
      new RangeError(`zstd-pool: the WebAssembly build takes inputs of at most ${MAX_LENGTH} bytes`),
      'ERR_MEMORY_ALLOCATION_FAILED',
    )
  }
  const size = wanted > STAGE_KEEP ? wanted : 2 ** Math.ceil(Math.log2(Math.max(STAGE_MIN, wanted)))
  const area = stagingArea(STAGE_OWNER, size)
  if (!ArrayBuffer.isView(area)) throw coded(new Error('zstd-pool: the WebAssembly module is shut down'), 'ERR_INVALID_STATE')
  stage = area
  stageBuffer = viewBuffer.call(area)
  stageOffset = viewOffset.call(area)
}

/** Replaces a large staging area once the call that needed it is queued (it owns a copy). */
function shrinkStage(value) {
  if (value instanceof Promise && stage !== null && viewLength.call(stage) > STAGE_KEEP) replaceStage(STAGE_MIN)
  return value
}

/** No room past a large input: its result comes as NativeBytes. */
function roomFor(input, room) {
  return viewLength.call(input) > STAGE_KEEP ? 0 : room
}

function compressBound(input) {
  const length = viewLength.call(input)
  return length + Math.ceil(length / 256) + 1024
}

/** A copy of `view` in memory of its own (no method of `view` runs: no Symbol.species). */
function copied(view) {
  const out = new U8(viewLength.call(view))
  typedArraySet.call(out, view)
  return out
}

/** The result of a staged call: its length in the staging area, or NativeBytes. */
function result(value) {
  const output = typeof value === 'number' ? copied(new U8(stageBuffer, stageOffset + stageResultAt, value)) : materialize(value)
  if (viewLength.call(stage) > STAGE_KEEP) replaceStage(STAGE_MIN)
  return output
}

function materialize(value) {
  if (!(value instanceof NativeBytes)) return value
  try {
    return copied(value.view())
  } finally {
    value.release()
  }
}

// ---------------------------------------------------------------------------------------------
// The API

/** Compresses `data` into one zstd frame that records its content size. */
// The browser entry takes the level, the checksum and a dictionary; the other compression
// parameters and patch-from are the Node entry's.
const NO_TUNING = undefined
const NO_PREFIX = undefined

export function compressSync(data, level) {
  const input = bytes(data)
  const { level: chosen, checksum, dictionary: prepared } = compressOptions(level)
  return result(
    compressStaged(
      STAGE_OWNER,
      staged(input, roomFor(input, compressBound(input))),
      chosen,
      checksum,
      prepared,
      NO_TUNING,
      NO_PREFIX,
      Infinity,
      undefined,
    ),
  )
}

/** Decompresses every frame in `data`, within `maxOutputLength` and `windowLogMax`. */
export function decompressSync(data, options) {
  const input = bytes(data)
  const { maxOutputLength, windowLogMax, dictionary: prepared } = decompressOptions(options)
  return result(
    decompressStaged(
      STAGE_OWNER,
      staged(input, roomFor(input, STAGE_ROOM)),
      maxOutputLength,
      windowLogMax,
      prepared,
      NO_PREFIX,
      Infinity,
      undefined,
    ),
  )
}

/** compressSync off the page's thread, on the module's workers (or at once when small). */
export function compress(data, level) {
  return call(() => {
    const input = bytes(data)
    const options = compressOptions(level)
    const { level: chosen, checksum, dictionary: prepared } = options
    return [
      options.signal,
      (cancellation) => {
        const length = staged(input, roomFor(input, compressBound(input)))
        return shrinkStage(
          compressStaged(STAGE_OWNER, length, chosen, checksum, prepared, NO_TUNING, NO_PREFIX, INLINE_MICROS, cancellation),
        )
      },
    ]
  })
}

/** decompressSync off the page's thread, on the module's workers (or at once when small). */
export function decompress(data, options) {
  return call(() => {
    const input = bytes(data)
    const settings = decompressOptions(options)
    const { maxOutputLength, windowLogMax, dictionary: prepared } = settings
    return [
      settings.signal,
      (cancellation) => {
        const length = staged(input, roomFor(input, STAGE_ROOM))
        return shrinkStage(
          decompressStaged(STAGE_OWNER, length, maxOutputLength, windowLogMax, prepared, NO_PREFIX, INLINE_MICROS, cancellation),
        )
      },
    ]
  })
}

function abortError(abortSignal) {
  const error = new Error('The operation was aborted', { cause: abortSignal.reason })
  error.name = 'AbortError'
  return coded(error, 'ABORT_ERR')
}

/** Runs an async call: `prepare()` checks the arguments and gives the signal and the start. */
function call(prepare) {
  let abortSignal
  let start
  try {
    ;[abortSignal, start] = prepare()
  } catch (error) {
    return Promise.reject(error)
  }
  if (abortSignal?.aborted) return Promise.reject(abortError(abortSignal))
  const cancellation = abortSignal ? new Cancellation() : undefined
  let value
  try {
    value = start(cancellation)
    if (!(value instanceof Promise)) return Promise.resolve(result(value))
  } catch (error) {
    return Promise.reject(error)
  }
  const settled = value.then(materialize)
  if (!abortSignal) return settled
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancellation.cancel()
      reject(abortError(abortSignal))
    }
    abortSignal.addEventListener('abort', onAbort, { once: true })
    settled.then(resolve, reject).finally(() => abortSignal.removeEventListener('abort', onAbort))
  })
}

/** A zstd dictionary (from `zstd --train` or the Node entry's trainDictionary), prepared once. */
export class Dictionary {
  #prepared

  constructor(data) {
    this.#prepared = new PreparedDictionary(bytes(data))
    dictionaries.set(this, this.#prepared)
  }

  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  get id() {
    return this.#prepared.id
  }

  /** The dictionary's size in bytes. */
  get size() {
    return this.#prepared.size
  }
}
