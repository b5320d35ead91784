'use strict'
// frameInfo: what the headers of every frame in an input declare (content size, window,
// dictionary, checksum) and how long each frame is, without decoding, so that a caller can hold
// frames against its own limits before it decompresses them (crates/core/src/frame.rs walks them).

const { binding } = require('./lib/binding.js')
const { bytes } = require('./lib/primordials.js')
const { ownMemory } = require('./lib/staging.js')
const { integer, optionsObject } = require('./lib/validate.js')

/** Details of this many frames by default: frameCount and the totals still cover every frame. */
const DEFAULT_MAX_FRAMES = 1000
/** The most items an Array holds. */
const MAX_ARRAY_LENGTH = 2 ** 32 - 1

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
  return binding.frameInfo(ownMemory(input), max)
}

module.exports = { frameInfo }
