'use strict'
// The batch API: compressMany / decompressMany and their sync forms, for callers that have many
// messages at once. The async forms cut the inputs into a few groups, one per threadpool thread
// that has a core to run on, and each group runs as one threadpool work item (crates/addon/src/exports/batch.rs): the
// round trip to the threadpool is paid per group rather than per message, and every core works.
// Each message is a call of its own (its own pooled context, limits and error); one failing
// costs no other its result.

const { binding } = require('./lib/binding.js')
const { compressNow, compressView, decompressNow } = require('./lib/calls.js')
const { cancellable } = require('./lib/cancel.js')
const { invalidType } = require('./lib/errors.js')
const { compressOptions, decompressOptions, referenceOf } = require('./lib/options.js')
const { allocUnsafeSlow, types } = require('#platform')
const { isNativeError, isUint8Array } = types
const { bytes, lengthOf, typedArraySet } = require('./lib/primordials.js')
const { batchResults, resultOf, slabsFor } = require('./lib/results.js')
const { GROUP_BYTES, LANES } = require('./lib/schedule.js')

const { apply } = Reflect
/** The most items an Array holds. */
const MAX_ARRAY_LENGTH = 2 ** 32 - 1

/** The inputs of `compressMany` / `decompressMany`: an array of byte inputs, each read once. */
function inputsOf(value) {
  if (!Array.isArray(value)) throw invalidType('inputs', 'an array of Buffer, TypedArray, DataView, ArrayBuffer or string', value)
  const length = value.length
  if (!Number.isSafeInteger(length) || length < 0 || length > MAX_ARRAY_LENGTH) {
    throw invalidType('inputs', 'an array of Buffer, TypedArray, DataView, ArrayBuffer or string', value)
  }
  const inputs = []
  for (let i = 0; i < length; i++) {
    const item = value[i]
    // A Uint8Array is taken as it is (most inputs): no name is made for it, which costs more
    // than the check when there are many.
    inputs.push(isUint8Array(item) ? item : bytes(item, `inputs[${i}]`))
  }
  return inputs
}

/** Cuts the inputs, `sizes[i]` bytes each, into groups of neighbours: two about equal shares
 * for every lane (so that a group's results are delivered while the next group runs), and at
 * most GROUP_BYTES of input (or one larger input) per group. The index where each group ends. */
function groupEnds(sizes) {
  let total = 0
  for (const size of sizes) total += size
  const share = Math.min(GROUP_BYTES, Math.max(1, Math.ceil(total / (2 * LANES))))
  const perGroup = Math.ceil(sizes.length / (2 * LANES))
  const ends = []
  let start = 0
  let bytes = 0
  for (let i = 0; i < sizes.length; i++) {
    if (i > start && (bytes + sizes[i] > share || i - start >= perGroup)) {
      ends.push(i)
      start = i
      bytes = 0
    }
    bytes += sizes[i]
  }
  ends.push(sizes.length)
  return ends
}

/** A copy of `inputs[start..end]` end to end, and their lengths. The lengths are read again
 * here, where no code of the caller's can run before the copy: code that ran since the groups were
 * cut (a global it patched) may have shrunk a view, and what the copy left unwritten would be
 * stale memory compressed into the frame. */
function join(inputs, start, end) {
  const lengths = new Uint32Array(end - start)
  let total = 0
  for (let i = start; i < end; i++) {
    const length = lengthOf(inputs[i])
    lengths[i - start] = length
    total += length
  }
  const joined = allocUnsafeSlow(total)
  let at = 0
  for (let i = start; i < end; i++) {
    // A detached view reads as empty, as it does in a single call.
    if (lengths[i - start] > 0) apply(typedArraySet, joined, [inputs[i], at])
    at += lengths[i - start]
  }
  return { joined, lengths }
}

/** Every item's result, if none failed; else throws the batch's error: the first failure's
 * error, naming its index, with every item's result (a Buffer, or an Error) in `results`. */
function allOrFirstError(results) {
  const index = results.findIndex((value) => isNativeError(value))
  if (index < 0) return results
  const error = results[index]
  Object.defineProperty(error, 'index', { value: index, writable: true, enumerable: false, configurable: true })
  Object.defineProperty(error, 'results', { value: results, writable: true, enumerable: false, configurable: true })
  throw error
}

/** Runs `run(joined, lengths, reference, share, cancellation)` per group (`reference`: of
 * `settings`, see options.js's `referenceOf`; `share`: whether its small results share slabs) and
 * gathers every item's result in order: a Buffer per item, or the batch error. */
function runGroups(inputs, settings, run) {
  const { signal } = settings
  if (inputs.length === 0) return signal?.aborted ? cancellable(signal, () => []) : Promise.resolve([])
  // Every input is copied now, before anything else runs: the caller may reuse its buffers at
  // once, and no code that runs later (a signal's listener) can change what is compressed.
  const sizes = inputs.map(lengthOf)
  let start = 0
  const groups = groupEnds(sizes).map((end) => {
    const group = join(inputs, start, end)
    start = end
    return group
  })
  const gather = (cancellations) => {
    const parts = groups.map((group, i) => {
      const share = slabsFor(group.lengths.length)
      // The reference's view is taken right before each native call, as the inputs' were joined.
      const pending = run(group.joined, group.lengths, referenceOf(settings), share, cancellations?.[i])
      // Native code has its own copy now.
      group.joined = undefined
      // Each group's Buffers are made as it completes, while the others run.
      return pending.then((value) => batchResults(value, share))
    })
    return Promise.all(parts).then((parts) => allOrFirstError(parts.flat()))
  }
  return withSignal(signal, groups.length, gather)
}

/** `gather(cancellations)`, with one native Cancellation per work item when there is a
 * signal: aborting it cancels every one that has not started, and rejects at once. */
function withSignal(signal, count, gather) {
  if (signal === undefined) return gather(undefined)
  const cancellations = Array.from({ length: count }, () => new binding.Cancellation())
  const all = {
    cancel() {
      for (const cancellation of cancellations) cancellation.cancel()
    },
  }
  return cancellable(signal, () => gather(cancellations), all)
}

/**
 * Compresses each of `inputs` as `compress` would, with the same options, most of them on the
 * libuv threadpool a group at a time: a Promise of the frames, in order. If any fails, it
 * rejects with the first failure's error, whose `index` names the input and whose `results`
 * holds every input's frame or error.
 */
function compressMany(inputs, options) {
  try {
    // The options first: their getters may run code, which must find no view of an input taken.
    const settings = compressOptions(options, 'options')
    const items = inputsOf(inputs)
    const { parameters, workers, signal, prefix } = settings
    if (workers > 1 && prefix === undefined) {
      // Worker threads already spread one input over the cores: one call per input. (With a
      // prefix, groups: each call would copy the prefix. The WebAssembly build, whose one-shot
      // calls take staged inputs only, refuses more than one worker.)
      // No time on the spot (0): every call queues, and the Promise is its result's.
      return runEach(items, signal, (input, cancellation) => compressView(input, settings, 0, cancellation))
    }
    return runGroups(items, settings, (joined, lengths, reference, share, cancellation) =>
      binding.compressBatch(joined, lengths, parameters, reference, share, cancellation),
    )
  } catch (error) {
    return Promise.reject(error)
  }
}

/** One native call per input, each on the threadpool, gathered as `runGroups` does. */
function runEach(inputs, signal, start) {
  // Each call copies its input before it returns: the caller may reuse its buffers at once.
  const gather = (cancellations) =>
    Promise.all(
      inputs.map((input, i) => {
        try {
          return Promise.resolve(start(input, cancellations?.[i])).then(resultOf, (error) => error)
        } catch (error) {
          return error
        }
      }),
    ).then(allOrFirstError)
  return withSignal(signal, inputs.length, gather)
}

/**
 * Decompresses each of `inputs` as `decompress` would, each within the same limits: a Promise
 * of their contents, in order. If any fails, it rejects as `compressMany` does.
 */
function decompressMany(inputs, options) {
  try {
    const settings = decompressOptions(options)
    const items = inputsOf(inputs)
    const { maxOutputLength, windowLogMax } = settings
    return runGroups(items, settings, (joined, lengths, reference, share, cancellation) =>
      binding.decompressBatch(joined, lengths, maxOutputLength, windowLogMax, reference, share, cancellation),
    )
  } catch (error) {
    return Promise.reject(error)
  }
}

/** Runs `call` on each input in turn; the results, or the batch error once all have run. */
function eachSync(inputs, call) {
  const results = new Array(inputs.length)
  for (let i = 0; i < inputs.length; i++) {
    try {
      results[i] = call(inputs[i])
    } catch (error) {
      if (!isNativeError(error)) throw error
      results[i] = error
    }
  }
  return allOrFirstError(results)
}

/** `compressMany` on the calling thread: the frames, or it throws as `compressMany` rejects. */
function compressManySync(inputs, options) {
  const settings = compressOptions(options, 'options')
  const items = inputsOf(inputs)
  return eachSync(items, (input) => compressNow(input, settings))
}

/** `decompressMany` on the calling thread: the contents, or it throws as `decompressMany` rejects. */
function decompressManySync(inputs, options) {
  const settings = decompressOptions(options)
  const items = inputsOf(inputs)
  return eachSync(items, (input) => decompressNow(input, settings))
}

module.exports = { compressMany, compressManySync, decompressMany, decompressManySync }
