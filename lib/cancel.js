'use strict'
// Cancelling. The listener lives here, in JavaScript; it calls `cancel()` on a native
// Cancellation that holds the work's shared state, never a pointer to the work, so a listener
// called late (or by anyone who got hold of it) does nothing.

const { binding } = require('./binding.js')
const { coded, safely } = require('./errors.js')
const { addAbortListener, types } = require('#platform')
const { isPromise } = types
const { materialize, result } = require('./results.js')

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
  if (abortSignal.aborted) return Promise.reject(abortError(abortSignal))
  return new Promise((resolve, reject) => {
    const cancellation = given ?? new binding.Cancellation()
    let subscription
    let done = false
    const finish = (settle, value) => {
      if (done) return
      done = true
      // A signal whose removeEventListener throws keeps a listener that now does nothing.
      safely(() => subscription?.[Symbol.dispose]())
      settle(value)
    }
    // If this throws, nothing has started: the Promise rejects with its error.
    subscription = addAbortListener(abortSignal, () => {
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
    const settled = given === undefined ? value.then(materialize) : value
    settled.then(
      (output) => finish(resolve, output),
      (error) => finish(reject, error),
    )
  })
}

module.exports = { cancellable }
