'use strict'
// What the package takes from a browser, in place of lib/platform.js (package.json's "imports"
// map gives `#platform` as this one under the "browser" condition): no Buffer, no `node:`
// modules. Results are Uint8Arrays; the binding is the WebAssembly build, which browser.mjs
// imports (its loader awaits the module at the top level, which a require() cannot) and hands
// to `provideBinding` before any other internal module loads. Taken once, when it loads.

const getter = (prototype, name) => Object.getOwnPropertyDescriptor(prototype, name).get
const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype)
const viewTag = getter(typedArrayPrototype, Symbol.toStringTag)
const dataViewBuffer = getter(DataView.prototype, 'buffer')
const arrayBufferLength = getter(ArrayBuffer.prototype, 'byteLength')
const sharedArrayBufferLength =
  typeof SharedArrayBuffer === 'function' ? getter(SharedArrayBuffer.prototype, 'byteLength') : undefined
const U8 = Uint8Array
const NativePromise = Promise
const NativeError = Error
const encoder = new TextEncoder()

let provided

/** Called by browser.mjs with the WebAssembly build's exports, before lib/binding.js loads. */
function provideBinding(binding) {
  provided = binding
}

function loadBinding() {
  if (provided === undefined)
    throw new Error('zstd-pool: the WebAssembly build was not handed in (import zstd-pool, not its lib/)')
  return provided
}

// Brand checks, as Node's util.types has them (lib/platform.js exports that): they work across
// realms and cannot be faked.

/** Whether `value` has the internal slot that `brandGetter` (a prototype getter) reads. */
function isBrand(brandGetter, value) {
  try {
    brandGetter.call(value)
    return true
  } catch {
    return false
  }
}

function isTypedArray(value) {
  return viewTag.call(value) !== undefined
}

function isUint8Array(value) {
  return viewTag.call(value) === 'Uint8Array'
}

function isDataView(value) {
  // A detached DataView's byteLength throws too; its buffer getter does not: it is one.
  return isBrand(dataViewBuffer, value)
}

function isAnyArrayBuffer(value) {
  return isBrand(arrayBufferLength, value) || (sharedArrayBufferLength !== undefined && isBrand(sharedArrayBufferLength, value))
}

// Not `instanceof`, which runs a `Symbol.hasInstance` that code may define on the constructors
// later: the ordinary check, as it was when this module loaded.
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance]

function isPromise(value) {
  return ordinaryHasInstance.call(NativePromise, value)
}

function isNativeError(value) {
  return ordinaryHasInstance.call(NativeError, value)
}

/** Memory of its own for a result. */
function allocUnsafeSlow(length) {
  return new U8(length)
}

function utf8(text) {
  return encoder.encode(text)
}

/** The largest result: what a Rust allocation and an emnapi view can span on wasm32. */
const MAX_LENGTH = 2 ** 31 - 1

const now = performance.now.bind(performance)
const scheduleTimeout = setTimeout

/** Calls `callback` once the event loop has turned. */
function afterTurn(callback) {
  scheduleTimeout(callback, 0)
}

/** Calls `callback` once the event loop has turned: a message to a port of our own, a task that
 * browsers do not delay as they delay nested `setTimeout(0)` (by 4 ms each from the fifth). The
 * port keeps a runtime that has `ref` (Node, Bun, Deno) alive only while a callback waits. */
let turnChannel = null
const turnCallbacks = []
function nextTurn(callback) {
  if (turnChannel === null) {
    turnChannel = new MessageChannel()
    turnChannel.port1.onmessage = turnCame
  }
  if (turnCallbacks.length === 0) turnChannel.port1.ref?.()
  turnCallbacks.push(callback)
  turnChannel.port2.postMessage(null)
}

function turnCame() {
  const callback = turnCallbacks.shift()
  if (turnCallbacks.length === 0) turnChannel.port1.unref?.()
  callback()
}

const parallelism = globalThis.navigator?.hardwareConcurrency ?? 1

function addAbortListener(abortSignal, listener) {
  abortSignal.addEventListener('abort', listener, { once: true })
  return { [Symbol.dispose]: () => abortSignal.removeEventListener('abort', listener) }
}

module.exports = {
  // There is no Buffer here.
  INPUT_TYPES: 'of type string or an instance of TypedArray, DataView or ArrayBuffer',
  MAX_LENGTH,
  addAbortListener,
  afterTurn,
  // A web page's event loop, where a turn is a task (see lib/schedule.js).
  inAPage: true,
  nextTurn,
  allocUnsafeSlow,
  // Native memory is copied out of the module's in a browser anyway.
  externalMemory: false,
  loadBinding,
  // Nothing in a browser detaches results: none share a slab.
  markAsUntransferable: () => {},
  now,
  parallelism,
  provideBinding,
  slabsShareable: () => false,
  // The module's own workers run async calls; there is no libuv threadpool.
  threadpoolSize: parallelism,
  types: { isAnyArrayBuffer, isDataView, isNativeError, isPromise, isTypedArray, isUint8Array },
  utf8,
}
