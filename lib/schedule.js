'use strict'
// Where async work runs: every threshold of the JavaScript side of that decision, named, each
// with where it comes from. Native code keeps its own half, which this side does not repeat: the
// throughput table that turns an input into estimated microseconds (crates/core/src/oneshot.rs), and in
// crates/addon/src/napi/lanes.rs LANE_BELOW_MICROS (1000 µs: a call at least that long gets a work item of its own)
// and HELP_BELOW_MICROS (12 µs: a call that may run on the spot when the lanes are backed up).
// This side tells native code how many microseconds a call may take on the spot (`inlineMicros`);
// native code compares its estimate with that.
//
// A trip through the libuv threadpool costs about 35 µs with one call in flight (docs/async.md,
// measured on the 2-core VM of the benchmark), several times the work of compressing 1 KiB, so an async call whose
// work is estimated under MAX_INLINE_MICROS runs on the spot and its Promise settles at once. Two
// limits keep that from hurting. Calls issued in a burst (no microtask checkpoint since the last
// one ran on the spot) go to the threadpool unless tiny (MAX_BURST_INLINE_MICROS), where small
// calls share a few long-lived work items (crates/addon/src/napi/lanes.rs), one per core, so that the round trip is
// not paid per call and every core works; where there are no lanes (the WebAssembly build) or one
// core, calls in a burst run on the spot while tiny. And once MAX_INLINE_SHARE_MS have passed
// since the first async call in this turn of the event loop, calls take the threadpool (which
// yields) until the loop turns.

const { capabilities } = require('./binding.js')
const { afterTurn, isPromise, now, parallelism, threadpoolSize } = require('#platform')
const { materialize, result } = require('./results.js')

/** What a sync call passes: any work runs on the spot. */
const SYNC = Number.POSITIVE_INFINITY
/** Work estimated under this runs on the spot: the ~35 µs round trip plus settling its Promise
 * (commit e7aa252, which brought inline calls; docs/async.md's figures are measured against it). */
const MAX_INLINE_MICROS = 50
/** In a burst: 6 µs where lanes take small calls (decompressing a few KB, docs/async.md), else 12 µs
 * (the same as native code's HELP_BELOW_MICROS). Chosen with the lanes (commit e4bddab); no
 * measurement of the value itself is recorded. */
const MAX_BURST_INLINE_MICROS = capabilities.lanes && parallelism > 1 ? 6 : 12
/** The share of one turn of the event loop that calls on the spot may take, so that a loop of
 * awaited calls lets timers and I/O in (commit e7aa252; no measurement of the value recorded). */
const MAX_INLINE_SHARE_MS = 0.25

/** Batches (many.js): groups run at once, as many as the threadpool has threads with a core to
 * run on. */
const LANES = Math.max(1, Math.min(threadpoolSize, parallelism))
/** Batches: the most input one group copies and holds; more makes more groups. */
const GROUP_BYTES = 8 * 1024 * 1024

const settledPromise = Promise.resolve()
let turnStart = -1
let inBurst = false

/** How many microseconds an async call made now may run on the spot. Call it before the views
 * of the input are taken: it schedules the end of the turn (setImmediate, which async_hooks
 * hooks see). */
function inlineMicros() {
  if (turnStart < 0) {
    turnStart = now()
    afterTurn(endTurn)
  } else if (now() - turnStart >= MAX_INLINE_SHARE_MS) {
    return 0
  }
  return inBurst ? MAX_BURST_INLINE_MICROS : MAX_INLINE_MICROS
}

function endTurn() {
  turnStart = -1
}

function endBurst() {
  inBurst = false
}

/** The Promise of an async call: the native call's own when it queued work, else one settled
 * with its result. */
function settled(value) {
  if (isPromise(value)) return value.then(materialize)
  const output = result(value)
  if (!inBurst) {
    inBurst = true
    settledPromise.then(endBurst)
  }
  return Promise.resolve(output)
}

module.exports = { GROUP_BYTES, LANES, SYNC, inlineMicros, settled }
