'use strict'
// Cancelling. The listener lives here, in JavaScript; it calls `cancel()` on a native
// Cancellation that holds the work's shared state, never a pointer to the work, so a listener
// called late (or by anyone who got hold of it) does nothing.

const { binding } = require('./binding.js')
const { coded, safely } = require('./errors.js')
const { addAbortListener, types } = require('#platform')
const { isPromise } = types
const { materialize, result } = require('./results.js')
const { awaitWorkers } = require('./workers.js')

const { apply } = Reflect
const { get: mapGet, set: mapSet, delete: mapDelete } = WeakMap.prototype

/** The calls waiting on each signal, which share one listener on it: a listener each made Node
 * warn (MaxListenersExceededWarning) as soon as 11 calls shared a signal. Each signal's waiters
 * are a list, oldest first (`first`, then `next` of each, to `last`), which no Array or Set
 * method walks: code could have patched them since this module loaded. */
const waitersOf = new WeakMap()

/** Calls `callback` (once) when `abortSignal` aborts, unless the function this returns is called
 * first. The first waiter on a signal adds the listener, and the last to stop waiting removes it.
 * Throws what adding it throws. */
function onAbort(abortSignal, callback) {
  const joined = apply(mapGet, waitersOf, [abortSignal])
  const waiters = joined ?? { first: null, last: null, subscription: undefined, aborted: false }
  const waiter = { callback, waiters, previous: waiters.last, next: null }
  if (waiters.last === null) waiters.first = waiter
  else waiters.last.next = waiter
  waiters.last = waiter
  if (joined === undefined) {
    try {
      // The listener may run in here (a signal's own addEventListener can call it).
      waiters.subscription = addAbortListener(abortSignal, () => abortAll(abortSignal, waiters))
    } catch (error) {
      waiter.waiters = null
      throw error
    }
    // Calls made meanwhile (from that addEventListener) wait on lists of their own.
    if (!waiters.aborted) apply(mapSet, waitersOf, [abortSignal, waiters])
    else safely(() => waiters.subscription[Symbol.dispose]())
  }
  return () => stopWaiting(abortSignal, waiter)
}

function stopWaiting(abortSignal, waiter) {
  const { waiters } = waiter
  // Already called back, or already stopped.
  if (waiters === null) return
  waiter.waiters = null
  if (waiter.previous === null) waiters.first = waiter.next
  else waiter.previous.next = waiter.next
  if (waiter.next === null) waiters.last = waiter.previous
  else waiter.next.previous = waiter.previous
  if (waiters.first !== null) return
  if (apply(mapGet, waitersOf, [abortSignal]) === waiters) apply(mapDelete, waitersOf, [abortSignal])
  // A signal whose removeEventListener throws keeps a listener that now does nothing.
  safely(() => waiters.subscription?.[Symbol.dispose]())
}

/** Calls back every call waiting on the signal, which has aborted, oldest first (each rejects in
 * the order the calls were made). Calls that start meanwhile (from code an abort reason's getter
 * runs, say) wait on a list of their own. */
function abortAll(abortSignal, waiters) {
  if (apply(mapGet, waitersOf, [abortSignal]) === waiters) apply(mapDelete, waitersOf, [abortSignal])
  waiters.aborted = true
  let waiter = waiters.first
  waiters.first = null
  waiters.last = null
  while (waiter !== null) {
    const { callback, next } = waiter
    waiter.waiters = null
    safely(callback)
    waiter = next
  }
  // A signal that is not an EventTarget may call a listener again: this one is done.
  safely(() => waiters.subscription?.[Symbol.dispose]())
}

function abortError(abortSignal) {
  const error = new Error('The operation was aborted', { cause: safely(() => abortSignal.reason) })
  return coded(error, 'ABORT_ERR', { name: { value: 'AbortError', writable: true, configurable: true } })
}

/** Runs an async call with an AbortSignal: `start(cancellation, abandoned)` makes the native
 * call, and the signal calls `cancellation.cancel()` (a native Cancellation unless one is given);
 * `abandoned()` says whether the call's Promise has settled (for a call that waits to be made).
 * What a Promise `start` returns resolves to is a single call's result, moved into a Buffer if
 * it is native memory; a batch's (`given`) is its results as they are. */
function cancellable(abortSignal, start, given) {
  if (abortSignal.aborted) return rejectAborted(abortSignal)
  return new Promise((resolve, reject) => {
    const cancellation = given ?? new binding.Cancellation()
    let leave
    let done = false
    const finish = (settle, value) => {
      if (done) return
      done = true
      leave?.()
      settle(value)
    }
    // If this throws, nothing has started: the Promise rejects with its error.
    leave = onAbort(abortSignal, () => {
      cancellation.cancel()
      finish(reject, abortError(abortSignal))
    })
    let value
    try {
      value = start(cancellation, () => done)
    } catch (error) {
      finish(reject, error)
      return
    }
    if (!isPromise(value)) {
      // Ran on the spot: the result is taken at once, before anything else runs.
      let output
      try {
        output = result(value)
      } catch (error) {
        finish(reject, error)
        return
      }
      finish(resolve, output)
      return
    }
    awaitWorkers()
    const settled = given === undefined ? value.then(materialize) : value
    settled.then(
      (output) => finish(resolve, output),
      (error) => finish(reject, error),
    )
  })
}

/** A Promise rejected as a call with an aborted signal is: for a call with nothing to run (an
 * empty batch), whose signal is read once. */
function rejectAborted(abortSignal) {
  return Promise.reject(abortError(abortSignal))
}

module.exports = { cancellable, rejectAborted }
