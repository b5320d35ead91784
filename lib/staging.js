'use strict'
// Under WASI (the WebAssembly build, in Node or a browser), a Buffer's memory lives outside the
// module's, and emnapi copies each input's whole ArrayBuffer in (kept until it is collected) and
// each result out through a fresh ArrayBuffer: most of the time of a small call. There, a call
// is laid out in the staging area, a Uint8Array over the module's own memory (its numbers and
// settings, then a copy of its input: the layout is crates/addon/src/napi/staging.rs's), its
// owner is written into a word of that memory, and a plain native call takes no arguments; a
// result that fits past the input is written there, its length over the call's first number, and
// copied out by results.js;
// other results come as NativeBytes, copied out through a view of their own (see
// crates/addon/src/napi/staging.rs). Elsewhere nothing here runs but `ownMemory`, which returns its argument.

const { binding, capabilities } = require('./binding.js')
const { coded } = require('./errors.js')
const { allocUnsafeSlow, types } = require('#platform')
const { isPromise, isUint8Array } = types
const { NativeUint8Array, lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')

const STAGED = capabilities.staged
const STAGE_MIN = 2 << 20
/** Room for a decompressed result: one that does not fit comes as NativeBytes. */
const STAGE_ROOM = 1 << 20
/** A staging area larger than this is replaced by a small one after the call that needed it. */
const STAGE_KEEP = 8 << 20
/** The largest staging area: what a Rust allocation and an emnapi view can span on wasm32. */
const MAX_STAGE = 2 ** 31 - 1
/** This copy of the package's own staging area (another copy of it may share the module). */
const STAGE_OWNER = STAGED ? binding.stagingOwner() : 0
/** The word that names the owner of each staged call: plain staged calls take no arguments. */
const caller = STAGED ? callerWord(binding.stagingCaller()) : null
let stage = null
// The memory under `stage`, taken when it is made: results are viewed through these, never
// through methods of `stage` that a patched `Symbol.species` could divert into calling back in.
let stageBuffer = null
let stageOffset = 0
// The call's numbers and settings, at the start of `stage` (crates/addon/src/napi/staging.rs).
let stageNumbers = null
let stageSettings = null
/** How many numbers (f64) a staged call starts with: its input's length, the microseconds it
 * may run on the spot, the most output and the window log bound (decompression), how many
 * settings (i32, compression's) follow, and the layout's own number (see `layouts`). */
const NUMBERS = 6
/** How many calls this owner has laid out: a call with arguments names its layout by it, and
 * native code refuses one whose area code run meanwhile laid out again. */
let layouts = 0
const NO_SETTINGS = new Int32Array(0)

/** Where a small result is written in the staging area: past the input, 8-byte aligned. */
let stageResultAt = 0

/**
 * Lays a call out in the staging area: its numbers, compression's `settings` (an Int32Array,
 * empty for decompression), then a copy of `input` with `room` bytes past it for the result; for
 * a staged native call made right after, with nothing in between that could run other code
 * (which could call back in).
 */
function staged(input, room, micros, settings, maxOutputLength, windowLogMax) {
  const length = lengthOf(input)
  const count = lengthOf(settings) >> 2
  const inputAt = Math.ceil((NUMBERS * 8 + count * 4) / 8) * 8
  stageResultAt = inputAt + Math.ceil(length / 8) * 8
  const wanted = stageResultAt + room
  const size = stage === null ? 0 : lengthOf(stage)
  if (size < wanted || (size > STAGE_KEEP && wanted <= STAGE_KEEP)) replaceStage(wanted)
  stageNumbers[0] = length
  stageNumbers[1] = micros
  stageNumbers[2] = maxOutputLength
  stageNumbers[3] = windowLogMax
  stageNumbers[4] = count
  stageNumbers[5] = ++layouts
  caller[0] = STAGE_OWNER
  if (count > 0) typedArraySet.call(stageSettings, settings)
  // A view whose memory is gone (see `bytes`) reads as no bytes: there is nothing to copy.
  if (length > 0) typedArraySet.call(stage, input, inputAt)
}

/** Lays out a compression (see `staged`). */
function stagedCompress(input, micros, settings) {
  staged(input, compressRoom(input), micros, settings, 0, 0)
}

/** Lays out a decompression (see `staged`). */
function stagedDecompress(input, micros, maxOutputLength, windowLogMax) {
  staged(input, decompressRoom(input), micros, NO_SETTINGS, maxOutputLength, windowLogMax)
}

/** The room to keep past an input for its result: none for a large input, whose result comes
 * as NativeBytes (an area twice its size would only cost time, and address space). */
function roomFor(input, room) {
  return lengthOf(input) > STAGE_KEEP ? 0 : room
}

/** The room a compressed result needs: an upper bound of the size of `input` compressed
 * (libzstd's ZSTD_COMPRESSBOUND, rounded up), or none for a large input. */
function compressRoom(input) {
  const length = lengthOf(input)
  return roomFor(input, length + Math.ceil(length / 256) + 1024)
}

/** The room a decompressed result gets. */
function decompressRoom(input) {
  return roomFor(input, STAGE_ROOM)
}

/**
 * `view` for a native call that takes it as a Buffer (a stream's chunk). Under WASI emnapi copies
 * the whole ArrayBuffer behind a view into the module on every such call, and keeps the copy
 * until that ArrayBuffer is collected: chunks cut from one large buffer would cost the whole
 * buffer each. There the chunk is copied into memory of its own first.
 */
function ownMemory(view) {
  const length = STAGED ? lengthOf(view) : 0
  // Empty (or with its memory gone): nothing to copy.
  if (length === 0) return view
  const copy = allocUnsafeSlow(length)
  typedArraySet.call(copy, view)
  return copy
}

/** A new staging area of at least `wanted` bytes (a power of two up to STAGE_KEEP), in place
 * of the current one. */
function replaceStage(wanted) {
  stage = null
  stageBuffer = null
  stageNumbers = null
  stageSettings = null
  if (wanted > MAX_STAGE) {
    throw coded(
      new RangeError(`zstd-pool: the WebAssembly build takes inputs of at most ${MAX_STAGE} bytes`),
      'ERR_MEMORY_ALLOCATION_FAILED',
    )
  }
  const size = wanted > STAGE_KEEP ? wanted : 2 ** Math.ceil(Math.log2(Math.max(STAGE_MIN, wanted)))
  const area = binding.stagingArea(STAGE_OWNER, size)
  // Once the module is torn down (in an 'exit' listener), no area comes back.
  if (!isUint8Array(area)) throw coded(new Error('zstd-pool: the WebAssembly module is shut down'), 'ERR_INVALID_STATE')
  stage = area
  stageBuffer = typedArrayGetters.buffer.call(area)
  stageOffset = typedArrayGetters.byteOffset.call(area)
  // The area is 8-byte aligned (a native allocation of 8-byte words) and at least STAGE_MIN long.
  stageNumbers = new Float64Array(stageBuffer, stageOffset, NUMBERS)
  stageSettings = new Int32Array(stageBuffer, stageOffset + NUMBERS * 8, (size - NUMBERS * 8) >> 2)
}

/** Replaces a large staging area once the call that needed it is queued (it owns a copy). */
function shrinkStage(value) {
  if (isPromise(value) && stage !== null && lengthOf(stage) > STAGE_KEEP) replaceStage(STAGE_MIN)
  return value
}

/** The number of the last call laid out: what a staged call with arguments passes, after its
 * owner (see crates/addon/src/napi/staging.rs). */
function lastLayout() {
  return layouts
}

/** A view of the result a staged call wrote, whose length it wrote over the call's first number
 * (and returned undefined) or returned: copy it before `afterStagedCall`. */
function stagedView(returned) {
  const length = returned === undefined ? stageNumbers[0] : returned
  return new NativeUint8Array(stageBuffer, stageOffset + stageResultAt, length)
}

/** A Uint32Array over the 4 bytes of `view`. */
function callerWord(view) {
  return new Uint32Array(typedArrayGetters.buffer.call(view), typedArrayGetters.byteOffset.call(view), 1)
}

/** After a staged call's result is taken: an area that grew for it is made small again. */
function afterStagedCall() {
  if (lengthOf(stage) > STAGE_KEEP) replaceStage(STAGE_MIN)
}

module.exports = {
  STAGED,
  STAGE_OWNER,
  afterStagedCall,
  lastLayout,
  ownMemory,
  shrinkStage,
  stagedCompress,
  stagedDecompress,
  stagedView,
}
