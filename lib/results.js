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
const { allocUnsafeSlow, isNativeError, markAsUntransferable, slabsShareable } = require('#platform')
const { lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')
const { STAGED, afterStagedCall, stagedView } = require('./staging.js')

const { NativeBytes } = binding

/** 8 KiB, as Node's pool; a batch's pages are this size too, one slab each. */
const SLAB_SIZE = capabilities.slabBytes
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
  slab = sharedSlab()
  slabUsed = 0
}

/** A slab that results may share: nothing can detach it (see the top of this file). */
function sharedSlab() {
  const fresh = allocUnsafeSlow(SLAB_SIZE)
  markAsUntransferable(typedArrayGetters.buffer.call(fresh))
  return fresh
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

// ---------------------------------------------------------------------------------------------
// Batches (many.js)

/** What a batch's layout holds in place of a page for a result in none (crates/core/src/batch.rs). */
const NOT_IN_A_PAGE = 0xffffffff
/** The numbers of the layout for each result: its page, its offset there, its length. */
const LAYOUT_FIELDS = 3

/**
 * The results of one group of a batch (a native BatchResults), in order: a Buffer or an Error
 * each. The small ones come in pages: each page is copied into a slab of its own and its results
 * are views of it, as a sync call's small results are (where slabs cannot be shared, each is
 * copied out into memory of its own). The others (large results, errors) are taken one by one.
 *
 * Memory (issue 27): with an ArrayBuffer of its own for each small result, a million of them
 * left the process about 800 MB larger (Node 26) once collected, in the allocator's free lists;
 * a slab per page leaves what the sync calls leave.
 */
function batchResults(batch) {
  try {
    const count = batch.count
    const results = []
    if (!capabilities.resultsInPlace) {
      // Under WASI no result is in a page.
      for (let i = 0; i < count; i++) results.push(taken(batch, i))
      return results
    }
    const layout = new Uint32Array(LAYOUT_FIELDS * count)
    if (!batch.layoutInto(new Uint8Array(typedArrayGetters.buffer.call(layout)))) throw internalError('a batch layout')
    // The slab of the page at hand (where slabs cannot be shared, the group's scratch slab), and
    // where it lies in its ArrayBuffer.
    let page = -1
    let slab
    let memory
    let start = 0
    let failure
    for (let at = 0; at < layout.length; at += LAYOUT_FIELDS) {
      const where = layout[at]
      if (where === NOT_IN_A_PAGE) {
        results.push(taken(batch, at / LAYOUT_FIELDS))
        continue
      }
      if (where !== page) {
        page = where
        failure = undefined
        try {
          if (shareSlabs) slab = sharedSlab()
          else slab ??= allocUnsafeSlow(SLAB_SIZE)
          memory = typedArrayGetters.buffer.call(slab)
          start = typedArrayGetters.byteOffset.call(slab)
        } catch {
          // Each result of the page fails as its own allocation would.
          failure = allocationFailed(SLAB_SIZE)
          slab = undefined
        }
        if (failure === undefined && !batch.copyPage(page, slab)) throw internalError('a batch page')
      }
      const offset = start + layout[at + 1]
      const length = layout[at + 2]
      results.push(failure ?? (shareSlabs ? slabView(memory, offset, length) : ownCopy(memory, offset, length)))
    }
    return results
  } finally {
    batch.release()
  }
}

/** A Buffer of its own holding `length` bytes of `memory` from `offset`, or why there is none. */
function ownCopy(memory, offset, length) {
  let buffer
  try {
    buffer = allocUnsafeSlow(length)
  } catch {
    return allocationFailed(length)
  }
  typedArraySet.call(buffer, new Uint8Array(memory, offset, length))
  return buffer
}

/** A batch's result `index` that is in no page: its Buffer, or its Error. */
function taken(batch, index) {
  const value = batch.take(index)
  if (value === null) throw internalError('a batch result')
  if (isNativeError(value)) return value
  try {
    return materialize(value)
  } catch (error) {
    return error
  }
}

function internalError(what) {
  return coded(new Error(`zstd-pool: ${what} could not be read`), 'ERR_INTERNAL_ASSERTION')
}

module.exports = { batchResults, currentSlab, materialize, result, slabOffset }
