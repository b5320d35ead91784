'use strict'
// The results of native calls. Small results share a slab, as Node's own Buffer.allocUnsafe
// does: a fresh ArrayBuffer costs about 1 µs, more than compressing a kilobyte. Native code
// writes a small result into the slab past `slabUsed` and returns its length; the view is made
// here. A shared slab must never be detached (that would empty every result in it and hand their
// bytes to whoever detached it), so slabs are shared only where the runtime refuses to detach an
// untransferable ArrayBuffer (Node 24 on); elsewhere (Node 20 and 22, Bun, browsers) every
// result has memory of its own. This trusts the runtime's own functions as they are when the
// package loads: code that replaces them before that can defeat it, as it can defeat Node's own
// Buffer pool.

const { capabilities } = require('./binding.js')
const { coded } = require('./errors.js')
const { allocUnsafeSlow, markAsUntransferable, slabsShareable, types } = require('#platform')
const { isNativeError, isUint8Array } = types
const { NativeUint8Array, lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')
const { STAGED, afterStagedCall, stagedView } = require('./staging.js')

const SLAB_SIZE = 8192
/** Results below this share a slab (under WASI, where native code writes no slab, the copies). */
const SHARED_BELOW = Math.min(capabilities.sharedBelow, 4096)
const shareSlabs = slabsShareable()
let slab = null
let slabUsed = SLAB_SIZE
// The memory under `slab`, taken when it is made (a getter call per result cost 3% of a 1 KiB
// decompression under WASI).
let slabBuffer = null
let slabStart = 0

/** The room kept in the slab for a decompressed result, whose size is not known before the
 * call: the length of the last small one, so that a run of like results fills each slab (as
 * Node's pool does) instead of leaving up to SHARED_BELOW of each unused. A larger result that
 * then finds too little room is made with memory of its own, and the next call starts a slab. */
let decodedRoom = SHARED_BELOW

/** The slab to pass to a native call, with at least `room` bytes left past `slabOffset()`. Call it
 * right before the native call, with nothing in between that could run other code (which could
 * call back in and move `slabUsed`). */
function slabWithRoom(room) {
  if (!shareSlabs || !capabilities.resultsInPlace) return undefined
  if (SLAB_SIZE - slabUsed < room) newSlab()
  return slab
}

/** The slab for compressing `inputLength` bytes: room for the largest frame they can make
 * (libzstd's ZSTD_COMPRESSBOUND), which native code then writes in place. */
function compressSlab(inputLength) {
  const bound = inputLength + (inputLength >>> 8) + (inputLength < 128 << 10 ? ((128 << 10) - inputLength) >>> 11 : 0)
  return slabWithRoom(Math.min(bound, SHARED_BELOW))
}

/** The slab for a decompression (see `decodedRoom`). */
function decompressSlab() {
  return slabWithRoom(decodedRoom)
}

/** What a decompression's native call returned, as it was; notes the length of a small result
 * made on the spot, for `decompressSlab`. */
function decoded(value) {
  if (typeof value === 'number') decodedRoom = value
  else if (shareSlabs && isUint8Array(value) && lengthOf(value) < SHARED_BELOW) decodedRoom = lengthOf(value)
  return value
}

/** A sync decompression's result gets a Buffer allocated here, before the native call, when the
 * input's first frame declares a size from SHARED_BELOW up to TARGET_UP_TO, and up to this many
 * times the input's length: typical data compresses 3 to 10 times. A header that claims more is
 * left to native code, which allocates only what the input's blocks can hold; so is a larger
 * result, where Node-API's cost for a Buffer is lost in the decoding's (docs/performance.md). */
const TARGET_RATIO = 128
const TARGET_UP_TO = 64 << 10
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd]
const DICTIONARY_ID_BYTES = [0, 1, 2, 4]

/** The content size the frame that `input` starts with declares, or -1: read from its header
 * (RFC 8878, 3.1.1.1), as a hint only. Native code uses the Buffer made from it only when every
 * frame together declares exactly that size and the blocks can hold it. */
function declaredSize(input) {
  const length = lengthOf(input)
  if (length < 6) return -1
  for (let i = 0; i < 4; i++) if (input[i] !== ZSTD_MAGIC[i]) return -1
  const descriptor = input[4]
  const singleSegment = (descriptor >>> 5) & 1
  const at = 5 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3]
  const field = descriptor >>> 6
  if (at + (field === 3 ? 8 : 4) > length) return -1
  // A one-byte size (under 256) or none: too small to matter here.
  if (field === 0) return -1
  const low16 = input[at] | (input[at + 1] << 8)
  if (field === 1) return low16 + 256
  const low32 = low16 + input[at + 2] * 2 ** 16 + input[at + 3] * 2 ** 24
  if (field === 2) return low32
  return input[at + 4] | input[at + 5] | input[at + 6] | input[at + 7] ? -1 : low32
}

/** The Buffer for a sync decompression of `input` to write its whole result into, if its first
 * frame declares a size within `maxOutputLength` that earns one (see TARGET_RATIO): Node-API's
 * `napi_create_buffer` costs more than allocating a Buffer here. Else undefined, and the slab is
 * passed as usual. */
function decodeTarget(input, maxOutputLength) {
  if (STAGED || !capabilities.resultsInPlace) return undefined
  const declared = declaredSize(input)
  if (declared < SHARED_BELOW || declared > TARGET_UP_TO || declared > maxOutputLength) return undefined
  if (declared > lengthOf(input) * TARGET_RATIO) return undefined
  return allocUnsafeSlow(declared)
}

/** The slab offset to pass with a Buffer from `decodeTarget`: native code writes into it only a
 * result of exactly its length, and then returns that length. */
const OWN_BUFFER = capabilities.ownBuffer

/** Where in the slab a native call may write its result: pass it right after the slab. */
function slabOffset() {
  return slabUsed
}

function newSlab() {
  slab = allocUnsafeSlow(SLAB_SIZE)
  slabBuffer = typedArrayGetters.buffer.call(slab)
  slabStart = typedArrayGetters.byteOffset.call(slab)
  markAsUntransferable(slabBuffer)
  slabUsed = 0
}

/** The call's result: the Buffer a native call returned, a view of the `length` bytes it wrote
 * into the slab (or a copy of them from the staging area), or a large result moved into a
 * Buffer allocated here. Call it on the native call's return value, before anything else runs. */
function result(value) {
  if (STAGED) {
    const output = value === undefined || typeof value === 'number' ? copied(stagedView(value), true) : value
    afterStagedCall()
    return materialize(output)
  }
  if (typeof value !== 'number') return materialize(value)
  const start = slabUsed
  // Taken before the view is made, so a call made meanwhile cannot write over this result;
  // views stay 8-byte aligned, as in Node's pool.
  slabUsed = (start + value + 7) & ~7
  return slab.subarray(start, start + value)
}

/** A Buffer over `length` bytes of `arrayBuffer` from `offset`, made without calling anything a
 * user can patch after this module loads: not `slab.subarray` (it asks `Symbol.species`), not
 * `Buffer.from` (replaceable). */
const construct = Reflect.construct
function BufferView() {}
BufferView.prototype = Object.getPrototypeOf(allocUnsafeSlow(0))
function slabView(arrayBuffer, offset, length) {
  return construct(NativeUint8Array, [arrayBuffer, offset, length], BufferView)
}

function allocationFailed(length) {
  return coded(new RangeError(`could not allocate ${length} bytes`), 'ERR_MEMORY_ALLOCATION_FAILED')
}

/** A Buffer holding a copy of `view`, a result in the module's memory: carved from the slab
 * when small, `shared` and slabs can be shared (results that ran on the spot, as in the native
 * build), else with memory of its own. */
function copied(view, shared) {
  const length = lengthOf(view)
  let buffer
  if (shared && shareSlabs && length < SHARED_BELOW) {
    if (slab === null || SLAB_SIZE - slabUsed < length) newSlab()
    const start = slabUsed
    slabUsed = (start + length + 7) & ~7
    buffer = slabView(slabBuffer, slabStart + start, length)
  } else {
    try {
      buffer = allocUnsafeSlow(length)
    } catch {
      throw allocationFailed(length)
    }
  }
  typedArraySet.call(buffer, view)
  return buffer
}

/**
 * A large result (64 MiB or more) comes as native memory, moved into a Buffer allocated here:
 * Node 20 and 22 abort the process when native code cannot get a Buffer, while an allocation in
 * JavaScript throws a RangeError, reported as the call's error.
 */
function materialize(value) {
  // A Buffer, or else NativeBytes: told apart without `instanceof`, which would run a
  // `Symbol.hasInstance` someone defined on the binding's class.
  if (isUint8Array(value)) return value
  if (STAGED) {
    try {
      return copied(value.view(), false)
    } finally {
      value.release()
    }
  }
  const length = value.length
  let buffer
  try {
    buffer = allocUnsafeSlow(length)
  } catch {
    throw allocationFailed(length)
  }
  if (!value.moveInto(buffer)) throw coded(new Error('zstd-pool: a result was moved twice'), 'ERR_INTERNAL_ASSERTION')
  return buffer
}

// ---------------------------------------------------------------------------------------------
// Batches (many.js)

/** Groups of fewer results than this get memory of their own for each: a group's slabs cost
 * about 5 µs more to make than its results save (1 to 4 results on Node 26, 2-core VM, measured
 * 2026-12-02; 8 were as fast either way, 16 and more faster with slabs, by 0.7 to 1.4 µs a
 * result). */
const SLABS_FROM = 8

/** Whether the small results of a batch's group of `count` share slabs (many.js tells the
 * native batch call). */
function slabsFor(count) {
  return shareSlabs && capabilities.resultsInPlace && count >= SLABS_FROM
}

/** What a batch's layout holds in place of a page for a result in none (crates/core/src/batch.rs). */
const NOT_IN_A_PAGE = 0xffffffff
/** The numbers of the layout for each result: its page, its offset there, its length. */
const LAYOUT_FIELDS = 3

/**
 * The results of one group of a batch, in order: a Buffer or an Error each, from what the native
 * batch call gave. Where its small results share slabs (`shared`), that is the layout, then each
 * page, then the results in no page: each page becomes a slab, made untransferable before any
 * result is carved from it, as a sync call's small results are carved from theirs; the others
 * (large results, errors) come as a single call's. Elsewhere it is every result, each with memory
 * of its own.
 *
 * Memory (issue 27): with an ArrayBuffer of its own for each small result, a million of them
 * left the process about 800 MB larger (Node 26) once collected, in the allocator's free lists;
 * a slab per page leaves what the sync calls leave.
 */
function batchResults(batch, shared) {
  const results = []
  if (!shared) {
    for (let i = 0; i < batch.length; i++) results.push(resultOf(batch[i]))
    return results
  }
  const bytes = batch[0]
  const layout = new Uint32Array(
    typedArrayGetters.buffer.call(bytes),
    typedArrayGetters.byteOffset.call(bytes),
    lengthOf(bytes) / Uint32Array.BYTES_PER_ELEMENT,
  )
  // The pages fill in order: the last result that is in a page is in the last page.
  let pages = 0
  for (let at = layout.length - LAYOUT_FIELDS; at >= 0 && pages === 0; at -= LAYOUT_FIELDS) {
    if (layout[at] !== NOT_IN_A_PAGE) pages = layout[at] + 1
  }
  const slabs = []
  const starts = []
  for (let page = 1; page <= pages; page++) {
    const memory = typedArrayGetters.buffer.call(batch[page])
    markAsUntransferable(memory)
    slabs.push(memory)
    starts.push(typedArrayGetters.byteOffset.call(batch[page]))
  }
  let other = 1 + pages
  for (let at = 0; at < layout.length; at += LAYOUT_FIELDS) {
    const page = layout[at]
    if (page === NOT_IN_A_PAGE) results.push(resultOf(batch[other++]))
    else results.push(slabView(slabs[page], starts[page] + layout[at + 1], layout[at + 2]))
  }
  return results
}

/** A result with memory of its own, as native code gave it (a Buffer, `NativeBytes` or an
 * Error): its Buffer, or its Error (also when a large result cannot be moved into a Buffer). */
function resultOf(value) {
  if (isNativeError(value)) return value
  try {
    return materialize(value)
  } catch (error) {
    return error
  }
}

module.exports = {
  batchResults,
  compressSlab,
  decoded,
  decodeTarget,
  decompressSlab,
  OWN_BUFFER,
  materialize,
  result,
  resultOf,
  slabOffset,
  slabsFor,
}
