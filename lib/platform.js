'use strict'
// What the package takes from Node: the one internal module that names `node:` modules and
// Buffer (the browser entry has its own, lib/platform-browser.js). Taken once, when it loads.

const { Buffer, constants: bufferConstants } = require('node:buffer')
const events = require('node:events')
const os = require('node:os')
const { types } = require('node:util')
const { markAsUntransferable } = require('node:worker_threads')

const { isAnyArrayBuffer, isDataView, isNativeError, isPromise, isTypedArray, isUint8Array } = types
/** A copy of a view, as a Buffer (or the UTF-8 bytes of a string, with 'utf8'). */
const bufferFrom = Buffer.from
/** Views end to end, as one Buffer. */
const concat = Buffer.concat
/** Buffer.compare: the order of two views' bytes (0 when equal). */
const compare = Buffer.compare

/** Memory of its own for a result (not zero-filled): a Buffer. */
const { allocUnsafeSlow } = Buffer

/** `text` as UTF-8 bytes. */
function utf8(text) {
  return bufferFrom(text, 'utf8')
}

/** The largest Buffer. */
const MAX_LENGTH = bufferConstants.MAX_LENGTH

const now = performance.now.bind(performance)
const scheduleImmediate = setImmediate

/** Calls `callback` once the event loop has turned, without keeping the process alive. */
function afterTurn(callback) {
  scheduleImmediate(callback).unref()
}

/** The cores this process can run on. */
const parallelism = os.availableParallelism?.() ?? os.cpus().length

/** Threadpool threads (libuv's, 4 unless UV_THREADPOOL_SIZE says otherwise). */
const threadpoolSize = Number(process.env.UV_THREADPOOL_SIZE) | 0 || 4

/** Node ≥ 20.5's, which returns a disposable that removes the listener; the same otherwise. */
const addAbortListener =
  events.addAbortListener ??
  ((abortSignal, listener) => {
    abortSignal.addEventListener('abort', listener, { once: true })
    return { [Symbol.dispose]: () => abortSignal.removeEventListener('abort', listener) }
  })

function nodeMajor() {
  return process.release?.name === 'node' ? Number(process.versions.node.split('.')[0]) : 0
}

/** Whether results may share a slab: only where the runtime refuses to detach an untransferable
 * ArrayBuffer (Node 24 on). */
function slabsShareable() {
  if (nodeMajor() < 24) return false
  const probe = new ArrayBuffer(8)
  markAsUntransferable(probe)
  try {
    // Node 24 on refuses; Node 22 and Bun detach; Node 20 has no transfer() (and its BYOB reads
    // detach).
    if (typeof probe.transfer !== 'function') return false
    probe.transfer()
    return false
  } catch {
    return probe.byteLength === 8
  }
}

module.exports = {
  MAX_LENGTH,
  addAbortListener,
  afterTurn,
  allocUnsafeSlow,
  bufferFrom,
  compare,
  concat,
  isAnyArrayBuffer,
  isDataView,
  isNativeError,
  isPromise,
  isTypedArray,
  isUint8Array,
  markAsUntransferable,
  now,
  parallelism,
  slabsShareable,
  threadpoolSize,
  utf8,
}
