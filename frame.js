'use strict'
// frameInfo: what the headers of every frame in an input declare (content size, window,
// dictionary, checksum) and how long each frame is, without decoding, so that a caller can hold
// frames against its own limits before it decompresses them (crates/core/src/frame.rs walks them).

const { binding } = require('./lib/binding.js')
const { bytes, typedArrayGetters } = require('./lib/primordials.js')
const { ownMemory } = require('./lib/staging.js')
const { allocUnsafeSlow } = require('#platform')
const { integer, optionsObject } = require('./lib/validate.js')

/** Details of this many frames by default: frameCount and the totals still cover every frame. */
const DEFAULT_MAX_FRAMES = 1000
/** The most items an Array holds. */
const MAX_ARRAY_LENGTH = 2 ** 32 - 1
/** How many numbers the totals take, and each frame's details (crates/addon/src/exports/frame.rs). */
const TOTALS = 4
const PER_FRAME = 6

const { apply } = Reflect
const { from: arrayFrom } = Array
const { getFloat64 } = DataView.prototype
const LITTLE_ENDIAN = true

/** Where native code writes the numbers when they fit (the totals and 41 frames): a Buffer made
 * per call costs about as much as reading a frame. Read in full before any other code runs. */
const SCRATCH_BYTES = 2048
const scratch = allocUnsafeSlow(SCRATCH_BYTES)
const scratchNumbers = new DataView(scratch.buffer, scratch.byteOffset, SCRATCH_BYTES)

/** A size or variant that is absent: native code gives -1. */
const orNull = (number) => (number < 0 ? null : number)

/** The `index`th number of `numbers` (a DataView of little-endian f64s). */
const number = (numbers, index) => apply(getFloat64, numbers, [index * 8, LITTLE_ENDIAN])

/** The frame whose details start at the `at`th number. */
function frameAt(numbers, at) {
  const variant = orNull(number(numbers, at))
  return {
    skippable: variant !== null,
    variant,
    contentSize: orNull(number(numbers, at + 1)),
    windowSize: number(numbers, at + 2),
    dictionaryId: number(numbers, at + 3),
    checksum: number(numbers, at + 4) === 1,
    compressedSize: number(numbers, at + 5),
  }
}

/** A DataView of the numbers in `buffer`, wherever it starts, and their length in bytes. */
function numbersOf(buffer) {
  const length = apply(typedArrayGetters.byteLength, buffer, [])
  const start = apply(typedArrayGetters.byteOffset, buffer, [])
  return { numbers: new DataView(apply(typedArrayGetters.buffer, buffer, []), start, length), length }
}

/**
 * The frames of `data`, zstd and skippable: the details of the first `maxFrames`, and totals
 * over all of them. Reads headers only (linear in the input's length, whatever they claim), on
 * the calling thread; fails as decompressing would on input that is not whole frames.
 */
function frameInfo(data, options) {
  // The options first: their getters may run code, which must find no view of the input taken.
  const object = optionsObject(options, 'options', 'an object of frameInfo options')
  const maxFrames = object?.maxFrames
  const max = maxFrames === undefined ? DEFAULT_MAX_FRAMES : integer(maxFrames, 'options.maxFrames', 0, MAX_ARRAY_LENGTH)
  const input = bytes(data, 'data')
  // Under WASI, only the view's bytes are copied into the module, not its whole ArrayBuffer.
  const found = binding.frameInfo(ownMemory(input), max, scratch)
  const { numbers, length } = typeof found === 'number' ? { numbers: scratchNumbers, length: found } : numbersOf(found)
  const count = (length / 8 - TOTALS) / PER_FRAME
  // The objects and the array, made by literal and Array.from, define their properties: no
  // setter a caller put on a prototype runs.
  return {
    frames: arrayFrom({ length: count }, (_, i) => frameAt(numbers, TOTALS + i * PER_FRAME)),
    frameCount: number(numbers, 0),
    contentSize: orNull(number(numbers, 1)),
    windowSize: number(numbers, 2),
    compressedSize: number(numbers, 3),
  }
}

module.exports = { frameInfo }
