'use strict'
// The one-shot API, and its native calls, sync and async, on options already read (options.js):
// each takes the views of its input and prefix right before the native call, after everything that can run
// the caller's code, and passes either the input (native builds, with the slab for a small
// result) or its length in the staging area (the WebAssembly build).

const { binding } = require('./binding.js')
const { cancellable } = require('./cancel.js')
const { compressOptions, decompressOptions, prefixBytes } = require('./options.js')
const { preparedPrefixOf } = require('./prefix.js')
const { bytes, lengthOf } = require('./primordials.js')
const { compressSlab, decoded, decompressSlab, result, slabOffset } = require('./results.js')
const { inlineMicros, SYNC, settled } = require('./schedule.js')
const { STAGED, STAGE_OWNER, compressRoom, decompressRoom, shrinkStage, staged } = require('./staging.js')

/** `compressSync` of an input and options already checked. */
function compressNow(input, settings) {
  const prefix = prefixBytes(settings.prefix)
  if (STAGED) {
    const { level, checksum, dictionary, tuning } = settings
    const prepared = preparedPrefixOf(settings.prefix)
    const length = staged(input, compressRoom(input))
    return result(
      binding.compressStaged(STAGE_OWNER, length, level, checksum, dictionary, tuning, prefix, prepared, SYNC, undefined),
    )
  }
  return result(nativeCompress(input, settings, prefix, SYNC, undefined))
}

/** The native call of `compress`: its result, or a Promise of it. */
function startCompress(data, settings, cancellation) {
  // Before the views: it calls setImmediate, which async_hooks hooks see.
  const micros = inlineMicros()
  const input = bytes(data, 'data')
  const prefix = prefixBytes(settings.prefix)
  if (STAGED) {
    const { level, checksum, dictionary, tuning } = settings
    const prepared = preparedPrefixOf(settings.prefix)
    const length = staged(input, compressRoom(input))
    return shrinkStage(
      binding.compressStaged(STAGE_OWNER, length, level, checksum, dictionary, tuning, prefix, prepared, micros, cancellation),
    )
  }
  return nativeCompress(input, settings, prefix, micros, cancellation)
}

/** The native compress call of a native build, with the slab for a small result. The plain call
 * (no dictionary, prefix or signal: most calls) has an export of its own, which reads its
 * arguments with less work (crates/addon/src/napi/plain.rs). */
function nativeCompress(input, settings, prefix, micros, cancellation) {
  const { level, checksum, workers, dictionary, tuning } = settings
  const buffer = compressSlab(lengthOf(input))
  if (dictionary === undefined && settings.prefix === undefined && cancellation === undefined) {
    return binding.compressPlain(input, level, checksum, workers, tuning, micros, buffer, slabOffset())
  }
  const prepared = preparedPrefixOf(settings.prefix)
  const offset = slabOffset()
  return binding.compress(
    input,
    level,
    checksum,
    workers,
    dictionary,
    tuning,
    prefix,
    prepared,
    micros,
    buffer,
    offset,
    cancellation,
  )
}

/** `decompressSync` of an input and options already checked. */
function decompressNow(input, settings) {
  const prefix = prefixBytes(settings.prefix)
  if (STAGED) {
    const { maxOutputLength, windowLogMax, dictionary } = settings
    const prepared = preparedPrefixOf(settings.prefix)
    const length = staged(input, decompressRoom(input))
    return result(
      binding.decompressStaged(STAGE_OWNER, length, maxOutputLength, windowLogMax, dictionary, prefix, prepared, SYNC, undefined),
    )
  }
  return result(nativeDecompress(input, settings, prefix, SYNC, undefined))
}

/** The native call of `decompress`: its result, or a Promise of it. */
function startDecompress(data, settings, cancellation) {
  // Before the views, as in startCompress.
  const micros = inlineMicros()
  const input = bytes(data, 'data')
  const prefix = prefixBytes(settings.prefix)
  if (STAGED) {
    const { maxOutputLength, windowLogMax, dictionary } = settings
    const prepared = preparedPrefixOf(settings.prefix)
    const length = staged(input, decompressRoom(input))
    return shrinkStage(
      binding.decompressStaged(
        STAGE_OWNER,
        length,
        maxOutputLength,
        windowLogMax,
        dictionary,
        prefix,
        prepared,
        micros,
        cancellation,
      ),
    )
  }
  return nativeDecompress(input, settings, prefix, micros, cancellation)
}

/** The native decompress call of a native build, as nativeCompress. */
function nativeDecompress(input, settings, prefix, micros, cancellation) {
  const { maxOutputLength, windowLogMax, dictionary } = settings
  const buffer = decompressSlab()
  if (dictionary === undefined && settings.prefix === undefined && cancellation === undefined) {
    return decoded(binding.decompressPlain(input, maxOutputLength, windowLogMax, micros, buffer, slabOffset()))
  }
  const prepared = preparedPrefixOf(settings.prefix)
  const offset = slabOffset()
  return decoded(
    binding.decompress(input, maxOutputLength, windowLogMax, dictionary, prefix, prepared, micros, buffer, offset, cancellation),
  )
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
    return cancellable(settings.signal, (cancellation) => start(data, settings, cancellation))
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

module.exports = { compress, compressNow, compressSync, decompress, decompressNow, decompressSync }
