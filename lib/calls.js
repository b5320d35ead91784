'use strict'
// The one-shot API, and its native calls, sync and async, on options already read (options.js):
// each takes the views of its input and reference right before the native call, after everything that can run
// the caller's code, and passes either the input (native builds, with the slab for a small
// result) or its length in the staging area (the WebAssembly build).

const { binding } = require('./binding.js')
const { cancellable } = require('./cancel.js')
const { compressOptions, decompressOptions, referenceOf } = require('./options.js')
const { bytes, copyOf, lengthOf } = require('./primordials.js')
const { compressSlab, decodeTarget, decoded, decompressSlab, OWN_BUFFER, result, slabOffset } = require('./results.js')
const { inlineMicros, SYNC, settled, waitTurn } = require('./schedule.js')
const { STAGED, STAGE_OWNER, lastLayout, shrinkStage, stagedCompress, stagedDecompress } = require('./staging.js')

/** `compressSync` of an input and options already checked. */
function compressNow(input, settings) {
  return result(compressView(input, settings, SYNC, undefined))
}

/** The native call of `compress`: its result, or a Promise of it. `abandoned()` says whether the
 * caller has settled it already (aborted), for a call that waits. */
function startCompress(data, settings, cancellation, abandoned) {
  // Before the view: it calls setImmediate, which async_hooks hooks see.
  const micros = inlineMicros()
  const input = bytes(data, 'data')
  const value = compressView(input, settings, micros, cancellation)
  return value === false ? later(compressView, input, settings, cancellation, abandoned) : value
}

/** The Promise of a call that native code sent back to wait for the loop to turn: `view` makes it
 * again then, on a copy of its `input` taken now (an async call's result is that of its input as
 * it was at the call). */
function later(view, input, settings, cancellation, abandoned) {
  const copy = copyOf(input)
  return waitTurn((micros) => view(copy, settings, micros, cancellation), abandoned)
}

/**
 * The native compress call on `input`, run on the spot when its work fits `micros`: its result
 * (a Buffer, or the length written into the slab), or a Promise of it. The prefix's view is taken
 * here, right before the call. A plain call (no dictionary, prefix or signal: most calls) has an
 * export of its own (a staged one under WASI), which reads its arguments with less work
 * (crates/addon/src/napi/plain.rs).
 */
function compressView(input, settings, micros, cancellation) {
  const { parameters } = settings
  if (STAGED) {
    if (isPlain(settings, cancellation)) {
      stagedCompress(input, micros, parameters)
      return shrinkStage(binding.compressStagedPlain())
    }
    // Before the layout: taking a prefix's view can run a caller's code (as emnapi's reading of
    // the arguments can, which the layout's number guards against).
    const reference = referenceOf(settings)
    stagedCompress(input, micros, parameters)
    return shrinkStage(binding.compressStaged(STAGE_OWNER, lastLayout(), reference, cancellation))
  }
  const slab = compressSlab(lengthOf(input))
  if (isPlain(settings, cancellation)) return binding.compressPlain(input, parameters, micros, slab, slabOffset())
  const reference = referenceOf(settings)
  return binding.compress(input, parameters, reference, micros, slab, slabOffset(), cancellation)
}

/** Whether a call has an export of its own: no dictionary, prefix or signal. */
function isPlain({ dictionary, prefix }, cancellation) {
  return dictionary === undefined && prefix === undefined && cancellation === undefined
}

/** Whether a decompression has an export of its own: no dictionaries either. */
function isPlainDecode(settings, cancellation) {
  return settings.dictionaries === undefined && isPlain(settings, cancellation)
}

/** `decompressSync` of an input and options already checked. */
function decompressNow(input, settings) {
  return result(decompressView(input, settings, SYNC, undefined))
}

/** The native call of `decompress`: its result, or a Promise of it. */
function startDecompress(data, settings, cancellation, abandoned) {
  // Before the view, as in startCompress.
  const micros = inlineMicros()
  const input = bytes(data, 'data')
  const value = decompressView(input, settings, micros, cancellation)
  return value === false ? later(decompressView, input, settings, cancellation, abandoned) : value
}

/** The native decompress call on `input`, as compressView. */
function decompressView(input, settings, micros, cancellation) {
  const { maxOutputLength: max, windowLogMax } = settings
  if (STAGED) {
    if (isPlainDecode(settings, cancellation)) {
      stagedDecompress(input, micros, max, windowLogMax)
      return shrinkStage(binding.decompressStagedPlain())
    }
    // Before the layout, as in compressView.
    const reference = referenceOf(settings)
    stagedDecompress(input, micros, max, windowLogMax)
    return shrinkStage(binding.decompressStaged(STAGE_OWNER, lastLayout(), reference, cancellation))
  }
  // A sync call's larger result goes into a Buffer made for it here, when its size is declared:
  // filled, if the native call returns a length.
  const target = micros === SYNC ? decodeTarget(input, max) : undefined
  const slab = target ?? decompressSlab()
  const offset = target === undefined ? slabOffset() : OWN_BUFFER
  const value = isPlainDecode(settings, cancellation)
    ? binding.decompressPlain(input, max, windowLogMax, micros, slab, offset)
    : binding.decompress(input, max, windowLogMax, referenceOf(settings), micros, slab, offset, cancellation)
  return target !== undefined && typeof value === 'number' ? target : decoded(value)
}

/** The Promise of an async call on `data` with `options`: `readOptions` reads them, then
 * `start(data, settings, cancellation)` makes the native call. Every failure is a rejection. */
function asyncCall(start, readOptions, data, options) {
  try {
    // The options first: their getters may run code, which must find no view of the input taken.
    const settings = readOptions(options)
    // Checked now, so that a wrong type is the error whatever the signal says. The view itself is
    // taken by `start`, after everything that can run the caller's code (the signal's, hooks).
    bytes(data, 'data')
    if (settings.signal === undefined) return settled(start(data, settings, undefined))
    return cancellable(settings.signal, (cancellation, abandoned) => start(data, settings, cancellation, abandoned))
  } catch (error) {
    return Promise.reject(error)
  }
}

// ---------------------------------------------------------------------------------------------
// The one-shot API, as main.js and browser.mjs export it.

/**
 * Compresses `data` into one zstd frame that records its content size. `level` is a number or
 * an object of options; it defaults to 3.
 */
function compressSync(data, level) {
  // The options first: their getters may run code, which must find no view of the input taken.
  const settings = compressOptions(level)
  return compressNow(bytes(data, 'data'), settings)
}

/** Compresses `data` off the main thread (or at once when it is small); see compressSync. */
function compress(data, level) {
  return asyncCall(startCompress, compressOptions, data, level)
}

/**
 * Decompresses every frame in `data` (frames with or without a recorded size, concatenated
 * frames, skippable frames) and returns their content, within `maxOutputLength` and
 * `windowLogMax`.
 */
function decompressSync(data, options) {
  const settings = decompressOptions(options)
  return decompressNow(bytes(data, 'data'), settings)
}

/** Decompresses `data` off the main thread (or at once when it is small); see decompressSync. */
function decompress(data, options) {
  return asyncCall(startDecompress, decompressOptions, data, options)
}

module.exports = { compress, compressNow, compressSync, compressView, decompress, decompressNow, decompressSync }
