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

const { binding, capabilities } = require('./binding.js')
const { coded } = require('./errors.js')
const { allocUnsafeSlow, markAsUntransferable, slabsShareable } = require('#platform')
const { lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')
const { STAGED, afterStagedCall, stagedView } = require('./staging.js')

const { NativeBytes } = binding

const SLAB_SIZE = 8192
/** Results below this share a slab (under WASI, where native code writes no slab, the copies). */
const SHARED_BELOW = Math.min(capabilities.sharedBelow, 4096)
const shareSlabs = slabsShareable()
let slab = null
let slabUsed = SLAB_SIZE

/** The slab to pass to a native call: one with room for any small result. Call it right
 * before the native call, with nothing in between that could run other code (which could call
 * back in and move `slabUsed`). */
function currentSlab() {
  if (!shareSlabs || !capabilities.resultsInPlace) return undefined
  if (SLAB_SIZE - slabUsed < SHARED_BELOW) newSlab()
  return slab
}

/** Where in the slab a native call may write its result: pass it right after `currentSlab()`. */
function slabOffset() {
  return slabUsed
}

function newSlab() {
  slab = allocUnsafeSlow(SLAB_SIZE)
  markAsUntransferable(typedArrayGetters.buffer.call(slab))
  slabUsed = 0
}

/** The call's result: the Buffer a native call returned, a view of the `length` bytes it wrote
 * into the slab (or a copy of them from the staging area), or a large result moved into a
 * Buffer allocated here. Call it on the native call's return value, before anything else runs. */
function result(value) {
  if (STAGED) {
    const output = typeof value === 'number' ? copied(stagedView(value), true) : value
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
  return construct(Uint8Array, [arrayBuffer, offset, length], BufferView)
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
    buffer = slabView(typedArrayGetters.buffer.call(slab), typedArrayGetters.byteOffset.call(slab) + start, length)
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
  if (!(value instanceof NativeBytes)) return value
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

module.exports = { currentSlab, materialize, result, slabOffset }
