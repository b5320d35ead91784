'use strict'
// The batch API: compressMany / decompressMany and their sync forms, for callers that have many
// messages at once. The async forms cut the inputs into a few groups, one per threadpool thread
// that has a core to run on, and each group runs as one threadpool work item (crates/addon/src/exports/batch.rs): the
// round trip to the threadpool is paid per group rather than per message, and every core works. In
// a large batch, a group that runs out of messages takes over half of what another has left, and
// gives its results back apart, as a segment: every core works to the end. Each message is a
// call of its own (its own pooled context, limits and error); one failing costs no other its
// result. The packed forms (compressManyPacked, decompressManyPacked) give the results end to end
// in one Buffer per run of messages (lib/packed.js) and fail whole; every batch takes a
// PackedResults as its inputs.

const { binding } = require('./lib/binding.js')
const { compressNow, compressView, decompressNow } = require('./lib/calls.js')
const { cancellable, rejectAborted } = require('./lib/cancel.js')
const { invalidType } = require('./lib/errors.js')
const { compressOptions, decompressOptions, referenceOf } = require('./lib/options.js')
const { PackedResults, endsOf, isPacked, packed, sourceOf: packedSource, tooLarge, viewsOf } = require('./lib/packed.js')
const { MAX_LENGTH, allocUnsafeSlow, everySecond, externalMemory, types } = require('#platform')
const { isNativeError, isUint8Array } = types
const { bytes, lengthOf, typedArrayGetters, typedArraySet } = require('./lib/primordials.js')
const { batchResults, resultOf, slabsFor } = require('./lib/results.js')
const { GROUP_BYTES, LANES, TEAM_GROUP_BYTES } = require('./lib/schedule.js')

const { apply } = Reflect
const { BatchForm, BatchTeam } = binding
/** What packed groups come back as: their chunks themselves, where that is safe (see
 * `externalMemory`), else copies. */
const PACKED = externalMemory ? BatchForm.Packed : BatchForm.PackedCopied
/** The most items an Array holds. */
const MAX_ARRAY_LENGTH = 2 ** 32 - 1

const INPUTS = 'an array of Buffer, TypedArray, DataView, ArrayBuffer or string, or PackedResults from a packed batch'

/** The inputs of a batch: an array of byte inputs, each read once (a PackedResults' results). */
function inputsOf(value) {
  if (isPacked(value)) return viewsOf(value)
  if (!Array.isArray(value)) throw invalidType('inputs', INPUTS, value)
  const length = value.length
  if (!Number.isSafeInteger(length) || length < 0 || length > MAX_ARRAY_LENGTH) throw invalidType('inputs', INPUTS, value)
  const inputs = []
  for (let i = 0; i < length; i++) {
    const item = value[i]
    // A Uint8Array is taken as it is (most inputs): no name is made for it, which costs more
    // than the check when there are many.
    inputs.push(isUint8Array(item) ? item : bytes(item, `inputs[${i}]`))
  }
  return inputs
}

/** Cuts the inputs, `sizes[i]` bytes each, `total` together, into groups of neighbours: two
 * about equal shares for every lane (so that a group's results are delivered while the next
 * group runs), and at most GROUP_BYTES of input (or one larger input) per group. A group ends
 * where the inputs so far pass into the next share of the total bytes, so the shares come out
 * even, with no remainder left for a group of its own (and an input that spans several shares
 * ends one group, not several); inputs that are all empty are shared out by count. The index
 * where each group ends. */
function groupEnds(sizes, total) {
  const shares = Math.max(2 * LANES, Math.ceil(total / GROUP_BYTES))
  const perGroup = total > 0 ? Number.POSITIVE_INFINITY : Math.ceil(sizes.length / (2 * LANES))
  const shareOf = (bytes) => (total > 0 ? Math.floor((bytes * shares) / total) : 0)
  const ends = []
  let start = 0
  let bytes = 0
  let before = 0
  let startShare = 0
  for (let i = 0; i < sizes.length; i++) {
    if (i > start && (shareOf(before) > startShare || bytes + sizes[i] > GROUP_BYTES || i - start >= perGroup)) {
      ends.push(i)
      start = i
      bytes = 0
      startShare = shareOf(before)
    }
    bytes += sizes[i]
    before += sizes[i]
  }
  ends.push(sizes.length)
  return ends
}

/** `inputs[start..end]` end to end, and their lengths: in the memory `into(total)` gives, or,
 * for one input when the native call that copies it follows at once (not `copied`), that input
 * itself. The lengths are read again here, where no code of the caller's can run before the
 * copy: code that ran since the groups were cut (a global it patched) may have shrunk a view.
 * Every input must be the Uint8Array `inputsOf` made, read twice the same: code that patched a
 * global `inputsOf` called could have put something else in the list, and a copy that left
 * bytes unwritten would compress what the memory held before (another call's input). */
function join(inputs, start, end, into, copied) {
  if (end - start === 1 && !copied) {
    const input = inputs[start]
    const lengths = new Uint32Array(1)
    lengths[0] = checkedLength(input, start)
    return { joined: input, lengths }
  }
  const lengths = new Uint32Array(end - start)
  let total = 0
  for (let i = start; i < end; i++) {
    const length = checkedLength(inputs[i], i)
    lengths[i - start] = length
    total += length
  }
  const joined = into(total)
  let at = 0
  for (let i = start; i < end; i++) {
    const input = inputs[i]
    if (lengthOfInput(input, i) !== lengths[i - start]) throw changed(i, input)
    // A detached view reads as empty, as it does in a single call.
    if (lengths[i - start] > 0) apply(typedArraySet, joined, [input, at])
    at += lengths[i - start]
  }
  return { joined, lengths }
}

/** The length of input `i` as `inputsOf` made it: a Uint8Array. */
function lengthOfInput(input, i) {
  if (!isUint8Array(input)) throw changed(i, input)
  return lengthOf(input)
}

/** `lengthOfInput`, within what a batch's lengths can say. */
function checkedLength(input, i) {
  const length = lengthOfInput(input, i)
  if (length > 0xffffffff) throw tooLarge(i, length)
  return length
}

/** What a batch says when its list of inputs changed while it was read (a patched global). */
function changed(i, input) {
  return invalidType(`inputs[${i}]`, 'the same input each time it is read', input)
}

/** Where a group is joined for a native call that copies it before anything else runs (a batch
 * with no signal): one Buffer, kept from group to group and batch to batch, and let go once a
 * second has passed with no batch. Fresh memory each time made the join about twice as slow: its
 * pages are faulted in anew. A group larger than GROUP_BYTES (one large input) gets memory of its
 * own. */
let joinArea = null
let joinAreaUsed = false
let joinAreaTimer = null
function reusedArea(total) {
  if (total > GROUP_BYTES) return allocUnsafeSlow(total)
  if (joinArea === null) joinArea = allocUnsafeSlow(GROUP_BYTES)
  joinAreaUsed = true
  if (joinAreaTimer === null) joinAreaTimer = everySecond(letIdleAreaGo)
  return new Uint8Array(typedArrayGetters.buffer.call(joinArea), 0, total)
}

function letIdleAreaGo() {
  if (!joinAreaUsed) {
    joinArea = null
    clearInterval(joinAreaTimer)
    joinAreaTimer = null
  }
  joinAreaUsed = false
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

/** The inputs of a batch as groups are cut from them: each one's size, and `group(start, end,
 * into, copied)`, inputs `start` to `end` end to end (as native code takes them, in memory from
 * `into` when they need a copy) with their lengths. */
function sourceOf(inputs) {
  if (isPacked(inputs)) return packedSource(inputs)
  const sizes = []
  for (let i = 0; i < inputs.length; i++) sizes[i] = lengthOfInput(inputs[i], i)
  return { sizes, group: (start, end, into, copied) => join(inputs, start, end, into, copied) }
}

/** A batch's inputs, for `runGroups`: a PackedResults as it is, else as `inputsOf` reads them. */
function groupInputsOf(value) {
  return isPacked(value) ? value : inputsOf(value)
}

/** Runs `run(joined, lengths, reference, form, packedLimit, cancellation, team, group)` per
 * group (`reference`: of `settings`, see options.js's `referenceOf`; `form`: a `BatchForm`,
 * `Packed` for `packedForm`, else whether small results share slabs; `packedLimit`: the largest
 * Buffer; `team`: the BatchTeam the groups share, through which one that runs out of items takes
 * over half of what another has left; `group`: its index) and gathers the groups' results: every
 * input's, a Buffer each (or the batch error), or PackedResults. */
function runGroups(inputs, settings, run, packedForm) {
  const { signal } = settings
  const { sizes, group } = sourceOf(inputs)
  if (sizes.length === 0) {
    const none = packedForm ? packed([], []) : []
    // Nothing to cancel: `aborted` is read once (a signal whose getter flips read it twice).
    return signal?.aborted ? rejectAborted(signal) : Promise.resolve(none)
  }
  let total = 0
  for (const size of sizes) total += size
  const ends = groupEnds(sizes, total)
  const starts = [0, ...ends.slice(0, -1)]
  const forms = ends.map((end, i) => (packedForm ? PACKED : slabsFor(end - starts[i]) ? BatchForm.Slabs : BatchForm.Own))
  // In a team if the groups hold TEAM_GROUP_BYTES each (see crates/core/src/schedule.rs).
  const team = ends.length > 1 && total >= TEAM_GROUP_BYTES * ends.length ? new BatchTeam() : undefined
  const start = (i, copy, cancellation) =>
    run(copy.joined, copy.lengths, referenceOf(settings), forms[i], MAX_LENGTH, cancellation, team, i)
  const gather = (pending) => {
    // Each group's results in the form its own take, made as it completes while the others run;
    // in a team, as segments: of its own inputs, and of any it took over from others.
    const resultsOf = (i, value) => (packedForm ? value : batchResults(value, forms[i] === BatchForm.Slabs))
    const parts = pending.map((promise, i) =>
      promise.then((value) =>
        team === undefined ? resultsOf(i, value) : segmentsOf(value, starts, (results) => resultsOf(i, results)),
      ),
    )
    return Promise.all(parts).then((parts) => {
      if (team === undefined) {
        if (packedForm) return packedResults(parts.map((results, i) => ({ at: starts[i], results })))
        return allOrFirstError(parts.flat())
      }
      const segments = inOrder(parts)
      if (packedForm) return packedResults(segments)
      const results = []
      for (let i = 0; i < segments.length; i++) {
        const part = segments[i].results
        for (let j = 0; j < part.length; j++) results[results.length] = part[j]
      }
      return allOrFirstError(results)
    })
  }
  if (signal === undefined) {
    // Each group is copied and queued in turn, so that the first runs while the next is copied.
    // No code of the caller's runs in between.
    const pending = []
    try {
      for (let i = 0; i < ends.length; i++) pending[i] = start(i, group(starts[i], ends[i], reusedArea, false), undefined)
    } catch (error) {
      // The call fails, and the groups already queued run unobserved.
      for (const promise of pending) promise.then(undefined, () => {})
      throw error
    }
    return gather(pending)
  }
  // Every input is copied now, before the signal is read: the caller may reuse its buffers at
  // once, and no code that runs later (a signal's listener) can change what is compressed.
  const groups = ends.map((end, i) => group(starts[i], end, allocUnsafeSlow, true))
  const queue = (cancellations) =>
    gather(
      groups.map((copy, i) => {
        const pending = start(i, copy, cancellations[i])
        // Native code has its own copy now.
        groups[i] = undefined
        return pending
      }),
    )
  return withSignal(signal, groups.length, queue)
}

/** A group's segments as native code gives them (`[group, first, results, ...]`: the results
 * of that group's inputs from its `first`), each `{ at, results }`: `at`, the index of its first
 * input in the batch (the group's start in `starts`, plus `first`), and its results through
 * `each`. */
function segmentsOf(values, starts, each) {
  const segments = []
  for (let i = 0; i < values.length; i += 3)
    segments.push({ at: starts[values[i]] + values[i + 1], results: each(values[i + 2]) })
  return segments
}

/** The segments of every group (`parts`, a list per group) in one list, by where they start:
 * sorted by hand, since a patched `Array.prototype.sort` must not put results out of place. */
function inOrder(parts) {
  const segments = []
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]
    for (let j = 0; j < part.length; j++) {
      const segment = part[j]
      let at = segments.length
      for (; at > 0 && segments[at - 1].at > segment.at; at--) segments[at] = segments[at - 1]
      segments[at] = segment
    }
  }
  return segments
}

/** A packed batch's PackedResults from its segments' results (`[data, ends]` each, for the
 * segment that starts at input `at`), in order; or throws the first failure (`[error, index]`),
 * its `index` naming its input. */
function packedResults(segments) {
  const chunks = []
  const ends = []
  for (const { at, results } of segments) {
    const [first, second] = results
    const chunk = resultOf(first)
    if (isNativeError(chunk)) {
      const index = isNativeError(first) ? at + second : at
      Object.defineProperty(chunk, 'index', { value: index, writable: true, enumerable: false, configurable: true })
      throw chunk
    }
    chunks.push(chunk)
    ends.push(endsOf(resultOf(second)))
  }
  return packed(chunks, ends)
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
  return compressGroups(inputs, options, false)
}

/**
 * Compresses each of `inputs` as `compressMany` does: a Promise of PackedResults, the frames end
 * to end in one Buffer per run of messages. If any fails, it rejects with the first failure's error, whose
 * `index` names the input.
 */
function compressManyPacked(inputs, options) {
  return compressGroups(inputs, options, true)
}

function compressGroups(inputs, options, packedForm) {
  try {
    // The options first: their getters may run code, which must find no view of an input taken.
    const settings = compressOptions(options, 'options')
    const { parameters, workers, signal, prefix } = settings
    if (!packedForm && workers > 1 && prefix === undefined) {
      // Worker threads already spread one input over the cores: one call per input. (With a
      // prefix, groups: each call would copy the prefix. The WebAssembly build, whose one-shot
      // calls take staged inputs only, refuses more than one worker.)
      // No time on the spot (0): every call queues, and the Promise is its result's.
      return runEach(inputsOf(inputs), signal, (input, cancellation) => compressView(input, settings, 0, cancellation))
    }
    const run = (joined, lengths, reference, form, packedLimit, cancellation, team, group) =>
      binding.compressBatch(joined, lengths, parameters, reference, form, packedLimit, cancellation, team, group)
    return runGroups(groupInputsOf(inputs), settings, run, packedForm)
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
  return decompressGroups(inputs, options, false)
}

/**
 * Decompresses each of `inputs` as `decompressMany` does: a Promise of PackedResults, the
 * contents end to end in one Buffer per run of messages. If any fails, it rejects as `compressManyPacked`
 * does.
 */
function decompressManyPacked(inputs, options) {
  return decompressGroups(inputs, options, true)
}

function decompressGroups(inputs, options, packedForm) {
  try {
    const settings = decompressOptions(options)
    const { maxOutputLength, windowLogMax } = settings
    const run = (joined, lengths, reference, form, packedLimit, cancellation, team, group) =>
      binding.decompressBatch(
        joined,
        lengths,
        maxOutputLength,
        windowLogMax,
        reference,
        form,
        packedLimit,
        cancellation,
        team,
        group,
      )
    return runGroups(groupInputsOf(inputs), settings, run, packedForm)
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

module.exports = {
  compressMany,
  compressManyPacked,
  compressManySync,
  decompressMany,
  decompressManyPacked,
  decompressManySync,
  PackedResults,
}
