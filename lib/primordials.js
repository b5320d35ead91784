'use strict'
// What the package calls on the caller's values, taken once when it loads, so that code patching
// globals later (a prototype's getter) cannot run in the middle of a call; and the one reading of
// an input as bytes that every face uses.

const { invalidType } = require('./errors.js')
const { INPUT_TYPES, allocUnsafeSlow, types, utf8 } = require('#platform')
const { isAnyArrayBuffer, isDataView, isTypedArray, isUint8Array } = types

/** The constructor as it was when this module loaded: code can replace the global, and a view
 * made between a native call and the copy of its result must run none. */
const NativeUint8Array = Uint8Array
const typedArrayPrototype = Object.getPrototypeOf(NativeUint8Array.prototype)
const typedArrayGetters = viewGetters(typedArrayPrototype)
const dataViewGetters = viewGetters(DataView.prototype)
function viewGetters(prototype) {
  const getter = (name) => Object.getOwnPropertyDescriptor(prototype, name).get
  return { buffer: getter('buffer'), byteOffset: getter('byteOffset'), byteLength: getter('byteLength') }
}
const typedArraySet = typedArrayPrototype.set

/** A view's length in bytes, as the getter was when this module loaded (an own or patched
 * `length` may say anything). */
function lengthOf(view) {
  return typedArrayGetters.byteLength.call(view)
}

/**
 * `data` as a Uint8Array over the same bytes (a string is encoded as UTF-8): every
 * ArrayBufferView is read whole, through the getters as they were when this module loaded.
 * Anything else is an ERR_INVALID_ARG_TYPE naming `name`.
 */
function bytes(data, name) {
  if (isUint8Array(data)) return data
  if (typeof data === 'string') return utf8(data)
  const getters = isTypedArray(data) ? typedArrayGetters : isDataView(data) ? dataViewGetters : undefined
  // A view whose memory is gone (detached, or past the end of a shrunk resizable buffer) reads
  // as no bytes, as a detached Uint8Array does.
  if (getters) {
    const { buffer, byteOffset, byteLength } = getters
    return viewOrEmpty(() => new NativeUint8Array(buffer.call(data), byteOffset.call(data), byteLength.call(data)))
  }
  if (isAnyArrayBuffer(data)) return viewOrEmpty(() => new NativeUint8Array(data))
  throw invalidType(name, INPUT_TYPES, data)
}

function viewOrEmpty(view) {
  try {
    return view()
  } catch {
    return new NativeUint8Array(0)
  }
}

/** A Buffer holding a copy of `view`'s bytes, sized and filled from the view's own memory: not
 * `Buffer.from(view)`, which asks the view's `length` (a subclass's getter may say anything, and
 * Node 20 then copies that many bytes of its pool, stale memory included) and `valueOf`. */
function copyOf(view) {
  const copy = allocUnsafeSlow(lengthOf(view))
  typedArraySet.call(copy, view)
  return copy
}

/** Whether `value` is bytes of a kind other than a string: a view or an ArrayBuffer. */
function isBinary(value) {
  return isTypedArray(value) || isDataView(value) || isAnyArrayBuffer(value)
}

module.exports = {
  NativeUint8Array,
  bytes,
  copyOf,
  isBinary,
  lengthOf,
  typedArrayGetters,
  typedArraySet,
}
