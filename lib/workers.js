'use strict'
// The WebAssembly build runs async work on threads of the module's own
// (crates/addon/src/napi/workers.rs), and those tell this thread when work is done. By default
// they call a thread-safe function: emnapi posts a message from the thread, taken from the event
// loop or, in a page, from the task queue. While a one-shot call is in flight, this thread waits
// on two words of the module's memory with `Atomics.waitAsync` instead (signal.c there): a
// thread with work done sets the first and notifies, the wait settles, and the work done is
// settled from here: under Node this thread hears of it 10 µs sooner than by the message, and in
// Chromium an awaited 64 KiB `compress` took 15% less time (see docs/wasm.md). The
// thread-safe function still keeps the process alive while work is in flight (a pending
// `Atomics.waitAsync` does not), and wakes this thread for work finished when it was not
// waiting. Nothing here runs in the native build, where `Atomics.waitAsync` is missing
// (Firefox), or with a WebAssembly module older than this file.

const { binding, capabilities } = require('./binding.js')
const { typedArrayGetters } = require('./primordials.js')

const { store, waitAsync } = Atomics
/** The words: set by a thread with work done, and set by this thread while it waits on the first. */
const SIGNALLED = 0
const WAITING = 1
const signal =
  capabilities.staged && typeof waitAsync === 'function' && typeof binding.workersSignal === 'function'
    ? signalWords(binding.workersSignal())
    : null
/** Whether `waitForWorkers` runs. */
let waiting = false

function signalWords(view) {
  return new Int32Array(typedArrayGetters.buffer.call(view), typedArrayGetters.byteOffset.call(view), 2)
}

/** Waits for the module's threads, after a call has queued work there, until none is in flight. */
function awaitWorkers() {
  if (signal === null || waiting) return
  waiting = true
  store(signal, WAITING, 1)
  waitForWorkers()
}

async function waitForWorkers() {
  // From a later microtask: never inside the call that started the wait.
  await undefined
  let more = true
  try {
    while (more) {
      const { async, value } = waitAsync(signal, SIGNALLED, 0)
      // Not async: a thread signalled before the wait began. Awaiting reads the Promise's
      // `constructor`, which code may have patched to throw.
      await (async ? value : undefined)
      store(signal, SIGNALLED, 0)
      more = binding.settleWorkers()
    }
  } catch {
    // The thread-safe function takes over, below.
  }
  // Threads wake this one through the thread-safe function from here on; work a thread
  // finished as a wait ended early is settled here.
  store(signal, WAITING, 0)
  waiting = false
  if (more) {
    try {
      binding.settleWorkers()
    } catch {}
  }
}

module.exports = { awaitWorkers }
