'use strict'
// Where async work runs, the JavaScript side: this side tells native code how many microseconds a
// call may take on the spot (`inlineMicros`), and native code compares its estimate with that.
// Every threshold (these and native code's own) and the cost model are written once, in
// crates/core/src/schedule.rs, which says where each comes from; this side reads its own from
// `capabilities.schedule`.
//
// A trip through the libuv threadpool costs several times the work of compressing 1 KiB, so an
// async call whose work is estimated under `maxInlineMicros` runs on the spot and its Promise
// settles at once (native code lengthens that budget where it measures a slower trip). Two
// limits keep that from hurting. Calls issued in a burst (no microtask checkpoint since the last
// one ran on the spot) go to the threadpool unless tiny, where small
// calls share a few long-lived work items (crates/addon/src/napi/lanes.rs), one per core, so that
// the round trip is not paid per call and every core works; a burst that goes on long enough
// sends its tiny calls there too, the JavaScript thread helping while the lanes are backed up;
// where there are no lanes (the WebAssembly build) or one core, calls in a burst run on the spot
// while tiny. And once
// `maxInlineShareMs` have passed since the first async call in this turn of the event loop, a call
// that would run on the spot waits for the loop to turn and runs then (`waitTurn`), which lets
// timers and I/O in for a few µs where the threadpool's trip costs more than the call (a burst
// that lanes take still goes to them); larger calls take the threadpool.

const { capabilities } = require('./binding.js')
const { afterTurn, inAPage, nextTurn, now, parallelism, threadpoolSize, types } = require('#platform')
const { isPromise } = types
const { materialize, result } = require('./results.js')
const { awaitWorkers } = require('./workers.js')

const {
  maxInlineMicros: MAX_INLINE_MICROS,
  maxBurstInlineMicrosWithLanes,
  maxBurstInlineMicros,
  maxInlineShareMs,
  maxInlineShareMsInAPage,
  shareBurstAfterMs: SHARE_BURST_AFTER_MS,
  batchGroupBytes: GROUP_BYTES,
  batchTeamGroupBytes: TEAM_GROUP_BYTES,
} = capabilities.schedule

/** The share of a turn of the event loop that inline calls may take: longer in a web page, where
 * a turn costs more (see crates/core/src/schedule.rs). */
const MAX_INLINE_SHARE_MS = inAPage ? maxInlineShareMsInAPage : maxInlineShareMs

/** What a sync call passes: any work runs on the spot. */
const SYNC = Number.POSITIVE_INFINITY
/** Whether lanes take the calls of a burst (see the top). */
const LANES_TAKE_BURSTS = capabilities.lanes && parallelism > 1
/** The most a call issued in a burst runs on the spot. */
const MAX_BURST_INLINE_MICROS = LANES_TAKE_BURSTS ? maxBurstInlineMicrosWithLanes : maxBurstInlineMicros
/** What a call in a long burst may run on the spot (see `inlineMicros`): nothing, but native code
 * still runs it there to help lanes that are backed up (any budget above 0 lets it). */
const ONLY_TO_HELP = Number.MIN_VALUE

/** Batches (many.js): groups run at once, as many as the threadpool has threads with a core to
 * run on. */
const LANES = Math.max(1, Math.min(threadpoolSize, parallelism))

const settledPromise = Promise.resolve()
let turnStart = -1
let inBurst = false
let burstStart = 0

/** How many microseconds an async call made now may run on the spot; negated once the turn's
 * share is spent, for a call that would fit to wait for the next turn (native code then returns
 * false: see `waitTurn`). In a burst that has gone on for SHARE_BURST_AFTER_MS, with lanes, only
 * to help them. Call it before the views of the input are taken: it schedules the end of the
 * turn (setImmediate, which async_hooks hooks see). */
function inlineMicros() {
  const micros = inBurst ? MAX_BURST_INLINE_MICROS : MAX_INLINE_MICROS
  if (turnStart < 0) {
    turnStart = now()
    afterTurn(endTurn)
  } else {
    const at = now()
    if (at - turnStart >= MAX_INLINE_SHARE_MS) return inBurst && LANES_TAKE_BURSTS ? 0 : -micros
    if (inBurst && LANES_TAKE_BURSTS && at - burstStart >= SHARE_BURST_AFTER_MS) return ONLY_TO_HELP
  }
  return micros
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
  if (isPromise(value)) {
    awaitWorkers()
    return value.then(materialize)
  }
  const output = result(value)
  inTheBurst()
  return Promise.resolve(output)
}

/** Notes that a call ran on the spot, or waits to: until the next microtask checkpoint, calls
 * are in a burst. */
function inTheBurst() {
  if (!inBurst) {
    inBurst = true
    burstStart = now()
    settledPromise.then(endBurst)
  }
}

/** The calls waiting for the loop to turn, oldest first, in a list of their own (no Array method
 * runs, which code could have patched after this module loaded). */
let firstWaiting = null
let lastWaiting = null
/** What a waiting call that was abandoned meanwhile is rejected with (its caller has settled it). */
const ABANDONED = Symbol('abandoned')

/**
 * The Promise of a call that native code sent back to wait for the next turn of the loop (it
 * returned false): `make(micros)` makes it again then, as `inlineMicros` allows (it owns a copy
 * of its input), and its result is taken as `settled` takes it. A call that its caller has
 * settled meanwhile (`abandoned()`: aborted) is not made.
 */
function waitTurn(make, abandoned) {
  // The calls made after this one before a microtask checkpoint are a burst, as if it had run.
  inTheBurst()
  return new Promise((resolve, reject) => {
    const call = { make, abandoned, resolve, reject, next: null }
    if (lastWaiting === null) {
      firstWaiting = call
      nextTurn(runWaiting)
    } else {
      lastWaiting.next = call
    }
    lastWaiting = call
  })
}

/** Makes the waiting calls, oldest first, until one is sent back again (the new turn's share is
 * spent): it and those after it wait for the next turn, as they are. */
function runWaiting() {
  // A new turn, whether or not `endTurn`'s callback ran before this one.
  endTurn()
  while (firstWaiting !== null) {
    const call = firstWaiting
    let value
    let failure = ABANDONED
    try {
      value = call.abandoned?.() ? ABANDONED : call.make(inlineMicros())
    } catch (error) {
      value = ABANDONED
      failure = error
    }
    if (value === false) break
    firstWaiting = call.next
    if (firstWaiting === null) lastWaiting = null
    if (value === ABANDONED) call.reject(failure)
    else settle(call, value)
  }
  if (firstWaiting !== null) nextTurn(runWaiting)
}

function settle(call, value) {
  try {
    call.resolve(settled(value))
  } catch (error) {
    call.reject(error)
  }
}

module.exports = { GROUP_BYTES, LANES, SYNC, TEAM_GROUP_BYTES, inlineMicros, settled, waitTurn }
