//! Where the work of an async call runs: on the JavaScript thread at once ("inline"), on the
//! lanes (a few long-lived threadpool work items that many small calls in flight share), or on a
//! threadpool work item of its own. Every threshold of that decision is here, named, with where
//! it comes from, and so is the cost model that turns a call into estimated microseconds. The
//! addon's lanes use theirs from here, and the JavaScript side (`lib/schedule.js`, batches in
//! `many.js`) reads its own from `capabilities().schedule`, so that each is written once.
//!
//! The figures were measured on the project's 2-core VM (AMD EPYC, Node 20 to 26, 2026-11-30 and
//! 2026-12-01). The thresholds are budgets (how long the JavaScript thread may be held, how long
//! other threadpool work may wait) and hold on any machine; the cost model's speeds are this
//! machine's, scaled as the process runs by the pace of the calls it times (`paced`); and the
//! budget outside a burst follows the threadpool's trip as the process measures it (`budget`).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Work estimated under this runs inline, and its Promise settles at once: a trip through the
/// libuv threadpool and back costs about 35 µs with one call in flight (docs/async.md), plus
/// settling its Promise (commit e7aa252, which brought inline calls). Under WASI, a 1 KiB call
/// queued on emnapi's threadpool took 140-160 µs more than on the spot (Node 26, 2-core VM,
/// 2026-12-03), and on the module's own threads a 64 KiB one still takes over 200 µs more
/// (docs/wasm.md): work under 150 µs costs the caller less on the spot than queued.
pub const MAX_INLINE_MICROS: f64 = if cfg!(target_family = "wasm") { 150.0 } else { 50.0 };

/// In a burst of calls (no microtask checkpoint since the last one ran inline), where lanes take
/// small calls and there is more than one core: only work this tiny runs inline (decompressing a
/// few KB), and the rest goes to the lanes, where every core works. Chosen with the lanes
/// (commit e4bddab); no measurement of the value itself is recorded.
pub const MAX_BURST_INLINE_MICROS_WITH_LANES: f64 = 6.0;

/// In a burst without lanes (the WebAssembly build) or on one core, the most a call runs inline
/// (commit e4bddab).
pub const MAX_BURST_INLINE_MICROS: f64 = 12.0;

/// With lanes, a call estimated under this may run on the spot when the lanes are backed up: the
/// JavaScript thread then works as one more lane instead of waiting (commit 2b91d52, which took
/// 16 calls in flight of 1 KiB compression from 1.35x to about 2x the best peer).
pub const HELP_BELOW_MICROS: f64 = 12.0;

/// In a burst with lanes, once the burst has gone on this long (from its first call that ran on
/// the spot), its tiny calls go to the lanes too, the JavaScript thread running one on the spot
/// only to help when they are backed up (see `HELP_BELOW_MICROS`): a long burst then has every
/// core working, where on the spot it had one. A shorter burst stays on the spot, since the lanes'
/// wake and settle cost tens of microseconds (`LANE_SETTLE_AFTER`), more than its calls. With 64
/// decompressions in flight, `bench:compare` measured 0.90-0.97 times the time per call at 1 KiB
/// and 0.82 at 2 KiB; 16 in flight were as before (Node 26, 2-core VM, 2026-12-03).
pub const SHARE_BURST_AFTER_MS: f64 = 0.1;

/// The share of one turn of the event loop that inline calls may take, in milliseconds: past
/// it, calls take the threadpool until the loop turns, so that a loop of awaited calls lets
/// timers and I/O in (commit e7aa252; a long await loop of tiny calls then delays timers by at
/// most about 0.3 ms).
pub const MAX_INLINE_SHARE_MS: f64 = 0.25;

/// [`MAX_INLINE_SHARE_MS`] in a web page (the WebAssembly build's browser entry), where a turn of
/// the event loop costs the await loop far more: the wait for the next turn is a task of its own
/// (a `MessageChannel` message), which Chromium ran about 60 µs after a quarter millisecond of
/// work (13 µs idle), against a few µs for Node's `setImmediate`, and with the Node share, an
/// awaited 1 KiB `decompress` took 1.8 times a `decompressSync` in headless Chromium, 1.2 times
/// with this one (Chromium 2026-12-04, 2-core VM). 4 ms keeps a turn near 2% of the share, as in
/// Node, and the page's thread free for most of each 60 Hz frame, far from the 50 ms a browser
/// reports as a long task.
pub const MAX_INLINE_SHARE_MS_IN_A_PAGE: f64 = 4.0;

/// An async call's estimates, as its budget on the spot (`inline_micros`, from the JavaScript
/// side) decides where it runs.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
  /// The model's estimate scaled to this machine ([`paced`]): how long the call would hold a
  /// thread, which the budgets outside a burst and [`LANE_BELOW_MICROS`] bound.
  pub micros: f64,
  /// What the budget is weighed against: `micros`, except in a burst ([`in_a_burst`]), where it
  /// is the model's own estimate. A burst's budgets ([`MAX_BURST_INLINE_MICROS_WITH_LANES`],
  /// [`HELP_BELOW_MICROS`]) weigh a call's work against what the lanes or the threadpool cost
  /// it per call, and both scale alike with the machine. Weighed with the pace, they tipped with
  /// it: calls run on the spot in a burst share the cores with the lanes, so their timing lifted
  /// the pace (1 to 3 for 1 KiB decompressions, 16 in flight), which sent them to the lanes, at
  /// 12 µs a call against 8 (Node 26, 2-core VM, 2026-12-03).
  pub weighed: f64,
  /// Whether the call is part of a burst ([`in_a_burst`]).
  pub burst: bool,
}

impl Estimate {
  /// The estimates of a call of `work` that the model puts at `model_micros`.
  pub fn of(work: Work, model_micros: f64, inline_micros: f64) -> Self {
    let micros = paced(work, model_micros);
    let burst = in_a_burst(inline_micros);
    Self { micros, weighed: if burst { model_micros } else { micros }, burst }
  }
}

/// Whether a call estimated at `micros` should wait for the event loop to turn and be made again
/// then, where the caller allows `inline_micros` on the spot: a negative `inline_micros` says
/// that this turn's share of inline work ([`MAX_INLINE_SHARE_MS`]) is spent, and that a call
/// within its magnitude, which would have run on the spot, should wait for the next turn rather
/// than take the threadpool. A turn of an idle loop costs a few µs; the trip through the
/// threadpool and back, more than such a call's work (docs/async.md).
pub fn waits_for_turn(micros: f64, inline_micros: f64) -> bool {
  inline_micros < 0.0 && micros <= -inline_micros
}

/// Whether an async call whose budget on the spot is `inline_micros` is part of a burst (calls
/// made with no microtask checkpoint since one ran on the spot), as the JavaScript side's budgets
/// say: in a burst it allows at most `MAX_BURST_INLINE_MICROS` (with lanes or not), help only
/// (just above 0), or nothing (0), and once the turn's share is spent, a negative budget of the
/// burst's magnitude; outside a burst, `MAX_INLINE_MICROS` or its negation. A sync call's
/// budget is infinite. More calls are on their way in a burst, so its calls go to the lanes even
/// when none is in flight.
pub fn in_a_burst(inline_micros: f64) -> bool {
  inline_micros.abs() < MAX_INLINE_MICROS
}

/// A call estimated to take at least this long gets a threadpool work item of its own, so that
/// it never holds up the small calls queued on the lanes behind it (commit e4bddab).
pub const LANE_BELOW_MICROS: f64 = 1000.0;

/// Lanes: how long a drainer that runs out of calls waits for more before its work item ends
/// (and so how much longer the process may stay up after its last call): starting one again
/// costs a trip through the threadpool, about 35 µs (see `MAX_INLINE_MICROS`), which a trickle
/// of calls would otherwise pay per call. Chosen with the lanes (commit e4bddab); no measurement
/// of the value itself is recorded.
pub const LANE_LINGER: Duration = Duration::from_micros(250);

/// Lanes: the wall time a drainer keeps its threadpool thread, running calls and waiting for
/// more alike, before it gives the thread back (when the drainers of every thread hold all the
/// threadpool's threads but at most one: a `UV_THREADPOOL_SIZE` of 1 or 2, or many worker
/// threads), so that other threadpool work (file system, DNS, crypto, other threads' calls)
/// waits at most about this long behind a steady flow of calls, as docs/async.md promises
/// (`lane_slice` shortens it while drainers queue for the threads).
/// A slice of 2 ms restarted the drainers too often (commit 354fa67); one that counted only the
/// time spent running calls let a trickle of calls, which leaves a drainer mostly waiting, hold
/// the only thread for up to 0.5 s (issue 27). In wall time, `fs.stat` and `crypto.pbkdf2`
/// probes beside a trickle of 16 KiB calls wait about one slice at most, at every threadpool
/// size, from the main thread and from a worker (`npm run bench:starve` on the project's 2-core
/// VM, Node 20 to 26, 2026-12-02: the figures are in docs/async.md).
pub const LANE_SLICE: Duration = Duration::from_millis(50);

/// Lanes: how long a drainer may hold its threadpool thread while `drainers` drainers of every
/// JavaScript thread are queued or running on a threadpool of `threadpool` threads; `None` while
/// they leave two threads or more to other work (a restart needs the JavaScript thread). Work
/// queued now waits for `drainers + 1 - threadpool` of them to end (those queued ahead of it,
/// and one running), the threads taking turns: so the slice is `LANE_SLICE` divided by the
/// rounds of that many ends, and the wait at most about `LANE_SLICE` however many threads have
/// lanes. With a full slice each, two workers' drainers on one thread let probes wait two slices
/// (`npm run bench:starve` with `THREADS=worker2`, 2026-12-02).
pub fn lane_slice(drainers: usize, threadpool: usize) -> Option<Duration> {
  let threadpool = threadpool.max(1);
  // The drainers' ends that work queued now waits for.
  let ends = drainers.saturating_add(1).checked_sub(threadpool)?;
  let rounds = ends.max(1).div_ceil(threadpool);
  Some(LANE_SLICE / u32::try_from(rounds).unwrap_or(u32::MAX))
}

/// Lanes: the most calls a drainer takes from the queue at once (it takes its share of the
/// queue, so that the lock is taken once per share and every drainer gets some, up to this).
/// Chosen with the lanes (commit e4bddab); no measurement of the value itself is recorded.
pub const LANE_MAX_SHARE: usize = 8;

/// Lanes: finished calls wait to be settled (a wake of the JavaScript thread costs the drainer a
/// system call and the JavaScript thread a trip through its event loop, several microseconds in
/// all: waking for every small call cost more than the calls) until the oldest has waited this
/// long, or the share a drainer starts would make it wait this long (commit 354fa67)...
pub const LANE_SETTLE_AFTER: Duration = Duration::from_micros(50);

/// ... or until this many have finished. Both chosen with the lanes (commit e4bddab); no
/// measurement of the values themselves is recorded.
pub const LANE_SETTLE_AT: usize = 32;

/// Lanes: how long the JavaScript thread, woken to settle finished calls, goes on settling those
/// that finish meanwhile before it lets the event loop turn (commit 354fa67; no measurement of
/// the value itself is recorded).
pub const LANE_SETTLE_FOR: Duration = Duration::from_millis(1);

/// Batches (`compressMany`, `decompressMany`): the most input one group copies and holds; more
/// makes more groups (commit 8d61e43).
pub const BATCH_GROUP_BYTES: u32 = 8 << 20;

/// Batches: the least input a group takes over from another that has more left (see the core's
/// `batch/share.rs`). Each half taken is a segment of results of its own: a Buffer more for
/// JavaScript to make, and a chunk more for packed results. With halves of 2 items or more,
/// 10,000 compressions of 1 KiB made 20 to 26 segments a batch, with 64 KiB 5 or 6; with
/// 256 KiB they ran 1 to 3% slower, decoding as fast (2-core VM, Node 26, 2026-12-05). A half of
/// 64 KiB of 1 KiB inputs takes about 0.3 ms to compress.
pub const BATCH_MIN_HALF_BYTES: u64 = 64 << 10;

/// Batches: the groups of a batch share their work only where they hold this much input each
/// (on average): enough for two halves of [`BATCH_MIN_HALF_BYTES`] to be taken from one in turn.
/// In smaller batches the groups end close together, and the segments cost more than sharing
/// saves: 64 compressions of 8 KiB, in groups of 128 KiB, took 1 to 7% longer in a team (2-core
/// VM, Node 26, 2026-12-05).
pub const BATCH_TEAM_GROUP_BYTES: u64 = 4 * BATCH_MIN_HALF_BYTES;

// ---------------------------------------------------------------------------------------------
// The cost model: what a call should take, in µs. Its figures were measured on the project's VM;
// `paced` scales them to the machine the process runs on, as it runs.

/// What a call does, for its pace: the model's figures for compression and for decompression
/// err apart (on the 2-core VM, 2026-12-02, corpus text decoded at 0.5 to 1 GB/s against the
/// model's 1 GB/s, while compressions ran faster than the model), so each has a pace of its own,
/// and a run of one kind does not move the estimates of the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
  Compress = 0,
  Decompress = 1,
}

/// The paces, by `Work`, in 2^20ths: how much longer calls take here than the model's figures
/// say.
static PACES: [AtomicU32; 2] = [AtomicU32::new(PACE_ONE), AtomicU32::new(PACE_ONE)];
const PACE_ONE: u32 = 1 << 20;

/// One call in this many on each thread that runs calls on the spot is timed for the pace: two
/// reads of the clock (about 25 ns each on Linux) are then under 1% of the cheapest call's time.
pub const PACE_SAMPLE_EVERY: u32 = 16;

/// A timed call moves the pace one step, of this much of itself, up if it took longer than the
/// pace says and down if not: the pace follows the median of the timed calls, which one call
/// preempted for a whole time slice cannot move by more than a step. (A running average, tried
/// first, was lifted by those: with each call faster than the model counted as the model, it
/// stayed above 1 on a machine faster than the model, and sent 8 KiB compressions, estimated at
/// 39 µs, to the threadpool: an awaited one took 1.4-1.9x as long, `bench:compare` on the
/// 2-core VM, 2026-12-02.) A change of machine speed (a CPU-bound neighbour, a throttled
/// container) shows in the estimates after a dozen samples per doubling.
const PACE_STEP: f64 = 1.0 / 16.0;

/// The pace stays within these. Never below 1: the model's figures are what the inline budgets
/// were set with, and data the model overrates (incompressible input runs up to 10 times faster
/// than it says) must not let data it underrates run inline for several budgets. At most 8.
const PACE_MIN: f64 = 1.0;
const PACE_MAX: f64 = 8.0;

/// A thread that has estimated this many calls without timing one (they all queued: a high pace
/// sends them to the threadpool, where they are not timed) moves the pace a step back towards 1,
/// so that it comes back from a slow spell with no call on the spot to tell it so.
const PACE_UNTIMED_STEP: u32 = 256;

/// How much longer calls of `work` take on this machine than the model says (1 until such calls
/// are timed).
pub fn pace(work: Work) -> f64 {
  f64::from(PACES[work as usize].load(Ordering::Relaxed)) / f64::from(PACE_ONE)
}

/// The model's estimate `model_micros` of a call of `work`, scaled to this machine, for a call
/// about to be decided.
pub fn paced(work: Work, model_micros: f64) -> f64 {
  let untimed = UNTIMED.with(|untimed| {
    let mut counts = untimed.get();
    counts[work as usize] += 1;
    let step = counts[work as usize] == PACE_UNTIMED_STEP;
    if step {
      counts[work as usize] = 0;
    }
    untimed.set(counts);
    step
  });
  if untimed {
    move_pace(work, PACE_MIN);
  }
  model_micros * pace(work)
}

/// Notes that a call of `work` the model put at `model_micros` took `took_micros`.
pub fn observe(work: Work, model_micros: f64, took_micros: f64) {
  if model_micros.is_finite() && model_micros > 0.0 {
    move_pace(work, took_micros / model_micros);
  }
}

/// Moves the pace of `work` a step ([`PACE_STEP`]) towards `ratio`.
fn move_pace(work: Work, ratio: f64) {
  let next = step_towards(pace(work), ratio);
  // Racy on purpose: a step lost to another thread's store is one step of many.
  PACES[work as usize].store((next.clamp(PACE_MIN, PACE_MAX) * f64::from(PACE_ONE)).round() as u32, Ordering::Relaxed);
}

/// `current` moved a step ([`PACE_STEP`]) towards `sample`: what follows one step per sample
/// follows the samples' median.
fn step_towards(current: f64, sample: f64) -> f64 {
  if sample > current {
    current * (1.0 + PACE_STEP)
  } else if sample < current {
    current / (1.0 + PACE_STEP)
  } else {
    current
  }
}

thread_local! {
  /// By `Work`: calls made, for the sample, and calls estimated since one was timed.
  static CALLS: Cell<[u32; 2]> = const { Cell::new([0; 2]) };
  static UNTIMED: Cell<[u32; 2]> = const { Cell::new([0; 2]) };
}

/// Runs `call`, a call of `work` the model puts at `model_micros`, timing one in
/// [`PACE_SAMPLE_EVERY`] of each kind for its pace, when it succeeds (a call that fails part way
/// is no measure of a whole one). Only calls run on the thread that asked for them are timed: what
/// the inline decision weighs is how long the JavaScript thread is held, and calls on the
/// threadpool take longer when many share the cores. Under WASI too, where the model's native
/// figures are 1.5-2 times too fast (there a clock read is a call out of the module, made for one
/// call in 16). The caller leaves out calls the model does not cover (with a dictionary, a
/// prefix).
pub fn timed<T, E>(work: Work, model_micros: f64, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
  let sampled = CALLS.with(|calls| {
    let mut counts = calls.get();
    counts[work as usize] = counts[work as usize].wrapping_add(1);
    calls.set(counts);
    counts[work as usize] % PACE_SAMPLE_EVERY == 0
  });
  if !sampled {
    return call();
  }
  let started = Instant::now();
  let result = call();
  if result.is_ok() {
    observe(work, model_micros, started.elapsed().as_secs_f64() * 1e6);
    UNTIMED.with(|untimed| {
      let mut counts = untimed.get();
      counts[work as usize] = 0;
      untimed.set(counts);
    });
  }
  result
}

// ---------------------------------------------------------------------------------------------
// The threadpool's trip on this machine, which the budget of a call outside a burst follows.

/// The threadpool's trip that [`MAX_INLINE_MICROS`] was set for, in µs (see there): where the
/// trip measures longer, the budget outside a burst grows with it (see [`budget`]).
pub const TRIP_OF_THE_BUDGET_MICROS: f64 = 35.0;

/// The most a call outside a burst may run on the spot where the threadpool's trip is slow: twice
/// [`MAX_INLINE_MICROS`]. The model errs most on data unlike the corpus (a JSON-like input it put
/// at 145 µs took 216 to 270 µs at levels 3 to 9, the pace following the typical call: hostile
/// review, Intel 2-core VM, 2026-12-04), and each turn of the event loop may end with one such
/// call past its share.
pub const MAX_TRIP_BUDGET_MICROS: f64 = if cfg!(target_family = "wasm") { MAX_INLINE_MICROS } else { 2.0 * MAX_INLINE_MICROS };

/// Of the calls that run on the spot only because the trip lengthened their budget, one in this
/// many is queued instead, as a probe ([`Spot::Probe`]), so that the trip goes on being measured:
/// otherwise nothing would bring it back once the threadpool is quick again (every such call
/// running on the spot, none waits for a thread), as a hostile review found (a trip lifted by a
/// busy threadpool stayed at its bound with the threadpool idle, 2026-12-04).
pub const TRIP_PROBE_EVERY: u32 = 16;

/// How long a call queued alone (or as a probe) waits for a threadpool thread to start it, in
/// 2^10ths of a µs, following the median of the waits measured (a step of [`PACE_STEP`] per
/// call); half of [`TRIP_OF_THE_BUDGET_MICROS`] until one is.
static TRIP_WAIT: AtomicU32 = AtomicU32::new((TRIP_OF_THE_BUDGET_MICROS / 2.0 * WAIT_ONE) as u32);
const WAIT_ONE: f64 = 1024.0;

/// What the threadpool's round trip costs a call here, in µs: twice the wait of a call queued
/// alone (or as a probe, [`Spot::Probe`]) for its thread, since the way back, a wake of the JavaScript thread, costs about as much.
/// That way is not measured: it waits for the JavaScript thread, which may be busy with other
/// work, and a busy thread must not make calls run on it.
pub fn trip_micros() -> f64 {
  2.0 * f64::from(TRIP_WAIT.load(Ordering::Relaxed)) / WAIT_ONE
}

/// Notes that a call queued alone (or as a probe) waited `micros` for a threadpool thread to
/// start it.
pub fn observe_wait(micros: f64) {
  let most = MAX_TRIP_BUDGET_MICROS / MAX_INLINE_MICROS * TRIP_OF_THE_BUDGET_MICROS / 2.0;
  let wait = step_towards(trip_micros() / 2.0, micros).clamp(0.5, most);
  // Racy on purpose, as the paces.
  TRIP_WAIT.store((wait * WAIT_ONE).round() as u32, Ordering::Relaxed);
}

/// Where a call runs, as [`spot`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spot {
  /// On the calling thread, at once.
  Here,
  /// Queued.
  Queued,
  /// Queued, as a work item of its own whose wait for a thread measures the trip, whatever else
  /// is in flight (so that a thread whose calls overlap still measures it).
  Probe,
}

/// Where a call estimated at `weighed` runs, where the JavaScript side allows `inline_micros`:
/// here within that, or within the [`budget`] the trip lengthens it to, but for one in
/// [`TRIP_PROBE_EVERY`] of those on each thread, a probe.
pub fn spot(weighed: f64, inline_micros: f64) -> Spot {
  if weighed <= inline_micros {
    return Spot::Here;
  }
  if weighed > budget(inline_micros) {
    return Spot::Queued;
  }
  LIFTED.with(|lifted| {
    let count = lifted.get().wrapping_add(1);
    lifted.set(count);
    if count % TRIP_PROBE_EVERY == 0 {
      Spot::Probe
    } else {
      Spot::Here
    }
  })
}

thread_local! {
  /// Calls that ran on the spot only because the trip lengthened their budget, or were queued to
  /// measure it (see `spot`).
  static LIFTED: Cell<u32> = const { Cell::new(0) };
}

/// The budget on the spot of a call the JavaScript side allows `inline_micros`: outside a burst
/// ([`MAX_INLINE_MICROS`]), scaled by the threadpool's trip as measured ([`trip_micros`]) where it
/// is longer than the one the budget was set for, up to [`MAX_TRIP_BUDGET_MICROS`]. Where the trip
/// is slow, queuing a call costs more than the work the budget was set to keep off the
/// JavaScript thread, both in time and on the thread itself (the wakes each way: docs/async.md).
/// Every other budget as it is.
fn budget(inline_micros: f64) -> f64 {
  if inline_micros == MAX_INLINE_MICROS {
    (inline_micros * trip_micros() / TRIP_OF_THE_BUDGET_MICROS).clamp(MAX_INLINE_MICROS, MAX_TRIP_BUDGET_MICROS)
  } else {
    inline_micros
  }
}

/// Compression speed for small inputs, in bytes a microsecond, by match finder: fast and dfast
/// (levels 1 to 3), greedy and lazy (4 to 6), lazy2 and btlazy2 (7 to 9). Slower ones never run
/// inline.
pub const COMPRESS_BYTES_PER_MICRO: [f64; 3] = [250.0, 100.0, 40.0];

/// What any compression costs besides its bytes (a context from the pool, the frame), in µs.
pub const COMPRESS_FIXED_MICROS: f64 = 6.0;

/// How fast libzstd allocates and clears the long-distance matcher's table (8 bytes an entry),
/// which it does whatever the input's size when `ldmHashLog` is set: 2^28 entries took 1.6 s
/// for 1 KiB (commit 139d00b).
pub const LDM_TABLE_BYTES_PER_MICRO: f64 = 5000.0;

/// Decompression: about 1 GB/s of output, or of input where that is larger, plus a fixed cost,
/// in µs.
pub const DECOMPRESS_BYTES_PER_MICRO: f64 = 1000.0;
pub const DECOMPRESS_FIXED_MICROS: f64 = 3.0;
/// What each frame after the first adds to a decompression, and each block: a sync call of
/// 3,000 frames of 20-30 bytes took 0.35 µs a frame; one of a million empty blocks, 16-23 ns a
/// block (Node 20, the 2-core VM, 2026-12-04).
pub const DECOMPRESS_FRAME_MICROS: f64 = 0.35;
pub const DECOMPRESS_BLOCK_MICROS: f64 = 0.02;
/// What each compressed block after the first may add, building the tables it brings: 6.2 µs for
/// a block of 22 bytes declaring all three sequence tables at full accuracy (hostile review,
/// 2026-12-04); a block of typical data spends more on its bytes than on its tables.
pub const DECOMPRESS_TABLES_MICROS: f64 = 6.0;

/// What making a context adds to a decompression where the pool keeps none (`configurePool({
/// maxIdleContexts: 0 })`), in µs: a sync call of 1 KiB took 8.5 µs against 5.1 pooled (`npm run
/// bench`, Node 26, the 2-core VM, 2026-12-03). Left out, 16 decompressions of 1 KiB in flight
/// ran on the spot at 10.6-11.0 µs a call, where the lanes take them at 8.6-8.8. (Compressions
/// leave it out: 2.5 µs more put 1 KiB above `HELP_BELOW_MICROS`, and 16 in flight took 15.5-16.9
/// µs a call against 14.8-15.0.)
pub const DECOMPRESS_NEW_CONTEXT_MICROS: f64 = 3.4;

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_pace_follows_timed_calls_within_its_bounds() {
    // One test for the process-wide paces: tests run side by side.
    let now = || pace(Work::Decompress);
    assert_eq!(paced(Work::Decompress, f64::INFINITY), f64::INFINITY);
    // Twice as slow as the model, call after call: the pace goes there, within a step.
    for _ in 0..100 {
      observe(Work::Decompress, 10.0, 20.0);
    }
    assert!((now() - 2.0).abs() <= 2.0 * PACE_STEP + 1e-3, "{}", now());
    // Compression has a pace of its own, which decompressions leave alone.
    assert_eq!(pace(Work::Compress), 1.0);
    // A burst's budgets weigh the model's own estimate, the others the paced one.
    let burst = Estimate::of(Work::Decompress, 10.0, MAX_BURST_INLINE_MICROS_WITH_LANES);
    assert!(burst.burst && burst.weighed == 10.0 && burst.micros > 19.0, "{burst:?}");
    let alone = Estimate::of(Work::Decompress, 10.0, MAX_INLINE_MICROS);
    assert!(!alone.burst && alone.weighed == alone.micros && alone.micros > 19.0, "{alone:?}");
    // One call preempted for a whole slice moves it one step at most, and half the calls
    // preempted leave it where it is.
    let before = now();
    observe(Work::Decompress, 10.0, 1e6);
    assert!(now() <= before * (1.0 + PACE_STEP) + 1e-3);
    let before = now();
    for _ in 0..100 {
      observe(Work::Decompress, 10.0, 1e6);
      observe(Work::Decompress, 10.0, 19.0);
    }
    assert!((now() - before).abs() < 1e-3, "{before} -> {}", now());
    // Nothing to learn from a call the model does not estimate.
    let before = now();
    observe(Work::Decompress, f64::INFINITY, 5.0);
    observe(Work::Decompress, 0.0, 5.0);
    assert_eq!(now(), before);
    // Calls faster than the model never take the estimates below it.
    for _ in 0..1000 {
      observe(Work::Decompress, 10.0, 0.1);
    }
    assert!((1.0..1.0001).contains(&now()), "{}", now());
    // At the most, once a slow spell is over and nothing is timed, estimates come back.
    for _ in 0..1000 {
      observe(Work::Decompress, 1.0, 1e9);
    }
    assert!(now() > PACE_MAX - 0.001, "{}", now());
    for _ in 0..200 * PACE_UNTIMED_STEP {
      paced(Work::Decompress, 10.0);
    }
    assert!(now() < 1.01, "{}", now());
    // A failed call is not timed.
    for _ in 0..10 * PACE_SAMPLE_EVERY {
      let _ = timed(Work::Decompress, 1e-6, || {
        std::thread::sleep(std::time::Duration::from_micros(10));
        Err::<(), ()>(())
      });
    }
    assert!(now() < 1.01, "{}", now());
  }

  #[test]
  fn budgets_tell_a_burst() {
    for budget in [MAX_BURST_INLINE_MICROS_WITH_LANES, MAX_BURST_INLINE_MICROS, f64::from_bits(1), 0.0, -MAX_BURST_INLINE_MICROS]
    {
      assert!(in_a_burst(budget), "{budget}");
    }
    for budget in [MAX_INLINE_MICROS, -MAX_INLINE_MICROS, f64::INFINITY] {
      assert!(!in_a_burst(budget), "{budget}");
    }
  }

  #[test]
  fn the_budget_outside_a_burst_follows_the_threadpool_trip_within_its_bounds() {
    // One test for the process-wide trip: tests run side by side.
    assert_eq!(trip_micros(), TRIP_OF_THE_BUDGET_MICROS);
    assert_eq!(budget(MAX_INLINE_MICROS), MAX_INLINE_MICROS);
    // Waits of 10 µs (a trip of 20): the budget stays.
    for _ in 0..100 {
      observe_wait(10.0);
    }
    assert!((trip_micros() - 20.0).abs() <= 20.0 * PACE_STEP + 0.1, "{}", trip_micros());
    assert_eq!(budget(MAX_INLINE_MICROS), MAX_INLINE_MICROS);
    // Waits of 35 µs: a trip of 70, twice the one the budget was set for, twice the budget.
    for _ in 0..100 {
      observe_wait(35.0);
    }
    let twice = 2.0 * MAX_INLINE_MICROS;
    assert!((budget(MAX_INLINE_MICROS) - twice).abs() <= twice * PACE_STEP + 0.1, "{}", budget(MAX_INLINE_MICROS));
    // A thread blocked for seconds moves it a step at a time, to its bound at most.
    let before = trip_micros();
    observe_wait(5e6);
    assert!(trip_micros() <= before * (1.0 + PACE_STEP) + 0.1);
    for _ in 0..1000 {
      observe_wait(5e6);
    }
    assert!((budget(MAX_INLINE_MICROS) - MAX_TRIP_BUDGET_MICROS).abs() < 0.01, "{}", budget(MAX_INLINE_MICROS));
    // Of the calls only the lengthened budget lets run on the spot, one in TRIP_PROBE_EVERY is
    // queued, to measure the trip again; the others run on the spot, as do those within the
    // budget the JavaScript side gave, and none past the lengthened one.
    let lifted = (MAX_INLINE_MICROS + MAX_TRIP_BUDGET_MICROS) / 2.0;
    let spots: Vec<Spot> = (0..TRIP_PROBE_EVERY * 4).map(|_| spot(lifted, MAX_INLINE_MICROS)).collect();
    assert_eq!(spots.iter().filter(|&&spot| spot == Spot::Probe).count(), 4);
    assert_eq!(spots.iter().filter(|&&spot| spot == Spot::Here).count(), (TRIP_PROBE_EVERY as usize - 1) * 4);
    assert!((0..100).all(|_| spot(MAX_INLINE_MICROS, MAX_INLINE_MICROS) == Spot::Here));
    assert_eq!(spot(MAX_TRIP_BUDGET_MICROS + 1.0, MAX_INLINE_MICROS), Spot::Queued);
    assert_eq!(spot(lifted, MAX_BURST_INLINE_MICROS_WITH_LANES), Spot::Queued);
    // A burst's budgets, a spent share and sync calls are left as they are.
    for inline in [MAX_BURST_INLINE_MICROS_WITH_LANES, 0.0, -MAX_INLINE_MICROS, f64::INFINITY] {
      assert_eq!(budget(inline), inline);
    }
    for _ in 0..1000 {
      observe_wait(0.0);
    }
    assert_eq!(budget(MAX_INLINE_MICROS), MAX_INLINE_MICROS);
  }

  #[test]
  fn lanes_slice_only_when_they_hold_all_threads_but_one() {
    assert_eq!(lane_slice(1, 4), None);
    assert_eq!(lane_slice(2, 4), None);
    assert_eq!(lane_slice(3, 4), Some(LANE_SLICE));
    assert_eq!(lane_slice(1, 2), Some(LANE_SLICE));
    assert_eq!(lane_slice(1, 1), Some(LANE_SLICE));
    assert_eq!(lane_slice(0, 1), Some(LANE_SLICE));
  }

  #[test]
  fn lanes_share_the_slice_when_drainers_queue_for_threads() {
    // One thread: other work waits behind every drainer queued ahead of it.
    assert_eq!(lane_slice(2, 1), Some(LANE_SLICE / 2));
    assert_eq!(lane_slice(4, 1), Some(LANE_SLICE / 4));
    // Four threads: up to four ends happen in one round.
    assert_eq!(lane_slice(7, 4), Some(LANE_SLICE));
    assert_eq!(lane_slice(8, 4), Some(LANE_SLICE / 2));
    assert_eq!(lane_slice(1024, 1024), Some(LANE_SLICE));
    assert_eq!(lane_slice(usize::MAX - 1, 1), Some(LANE_SLICE / u32::MAX));
    assert_eq!(lane_slice(5, 0), lane_slice(5, 1));
  }
}
