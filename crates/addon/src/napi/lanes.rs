//! Lanes: when several async calls are in flight, small ones share a few long-lived threadpool
//! work items instead of queuing one each. A trip through the libuv threadpool (queue the work,
//! wake a thread, wake the event loop to complete it) costs tens of microseconds on a VM, more
//! than compressing a kilobyte; paid per call, it kept the cores waiting on the event loop.
//!
//! Each JavaScript thread (the main thread, each worker) has its own [`Lanes`]: a queue of calls,
//! and up to one *drainer* per core (at most the threadpool's size, and the drainers of every
//! thread together leave one threadpool thread to other work). A drainer is a threadpool work
//! item that takes a share of the queue at a time and runs it. Once the queue is empty it waits a
//! little (`LANE_LINGER`) for more before it stops, since starting one again costs a trip through
//! the threadpool; once it has held its thread for a while (`lane_slice`, in wall time) it gives
//! the thread back, and a new drainer queued behind the other work waiting for the threadpool
//! takes over.
//!
//! Finished calls are settled on the JavaScript thread in batches: a drainer wakes it through a
//! thread-safe function while it goes on with the next calls (once the finished ones are worth a
//! wake, see `worth_a_wake`), or as soon as it runs out of calls; the JavaScript thread then
//! settles what finishes meanwhile too, for up to `LANE_SETTLE_FOR`, before it lets the event loop
//! turn. What is still finished then is settled on a later turn (see `Channel`).
//!
//! A lone call (none other in flight on its thread, and not part of a burst) gets a work item of
//! its own, as do calls estimated to take long, so that a large call never holds a lane that
//! small ones wait behind. On Linux, drainers run as `SCHED_BATCH` threads (see `policy`), so
//! that waking one never takes the CPU from the JavaScript thread that queues the calls.
//! Every call keeps its own Promise, its own cancellation (a queued call that is cancelled never
//! runs) and its own error.

use napi::Env;

use zstd_pool_core::error::Failure;
#[cfg(not(target_family = "wasm"))]
use zstd_pool_core::schedule;

use crate::napi::js::Js;
use crate::napi::work::{self, Cancellation, Job};
#[cfg(not(target_family = "wasm"))]
use native::Lanes;

/// Whether this build has lanes. Under WASI, every call's work is queued on its own, on the
/// module's threads (`workers.rs`).
pub const ENABLED: bool = !cfg!(target_family = "wasm");

/// Whether an async call estimated to take `micros`, which `main.js` would let run on the spot up
/// to `inline_micros` (0 once this turn of the event loop has had its share), should run on the
/// spot rather than queue behind the calls already waiting for the lanes: the JavaScript thread
/// then works as one more lane, instead of waiting.
pub fn help(env: &Env, micros: f64, inline_micros: f64) -> bool {
  #[cfg(not(target_family = "wasm"))]
  if inline_micros > 0.0 && micros < schedule::HELP_BELOW_MICROS {
    return Lanes::backed_up(env);
  }
  let _ = (env, micros, inline_micros);
  false
}

/// Queues `job`, a call estimated to take `micros`, and returns a Promise of its result: on this
/// thread's lanes if it is small, else as a threadpool work item of its own.
#[cfg(target_family = "wasm")]
pub fn queue<J: Job>(
  env: &Env,
  job: J,
  cancellation: Option<&Cancellation>,
  _micros: f64,
  _burst: bool,
  _probe: bool,
) -> Result<Js, Failure> {
  work::queue(env, job, cancellation)
}

/// Queues `job`, a call estimated to take `micros`, and returns a Promise of its result: on this
/// thread's lanes if it is small and other calls are in flight or it is part of a `burst` (see
/// `schedule::in_a_burst`: more calls are on their way), else as a threadpool work item of its
/// own (for a lone call, a lane would cost as much, plus the wait of a drainer that lingers).
/// The second call of a burst whose first ran on the spot is lone by the count, and a work item
/// of its own cost the JavaScript thread 13 to 42 µs where a lane takes 2 (16 compressions of
/// 1 KiB in flight, traced on the 2-core VM, Node 26, 2026-12-03). A `probe`
/// (`schedule::Spot::Probe`) takes a work item of its own whatever is in flight, and its wait
/// for a thread measures the threadpool's trip, as a lone call's does.
#[cfg(not(target_family = "wasm"))]
pub fn queue<J: Job>(
  env: &Env,
  job: J,
  cancellation: Option<&Cancellation>,
  micros: f64,
  burst: bool,
  probe: bool,
) -> Result<Js, Failure> {
  // Made first: making it can run JavaScript (an `async_hooks` init hook). The job owns all it
  // reads, so that is safe here, and nothing is queued yet that the JavaScript could see.
  let lanes = match Lanes::of(env) {
    Ok(lanes) => lanes,
    Err(_) => return work::queue(env, job, cancellation),
  };
  let lone = probe || (!burst && lanes.in_flight() == 0);
  let job = native::Counted::new(job, &lanes);
  if lone || micros >= schedule::LANE_BELOW_MICROS {
    return work::queue_item(env, job, cancellation, lone);
  }
  let (promise, work) = work::promised(env, job)?;
  if let Some(cancellation) = cancellation {
    cancellation.attach(work.state().clone());
  }
  lanes.push(env, work);
  Ok(promise)
}

#[cfg(not(target_family = "wasm"))]
mod native {
  use std::cell::RefCell;
  use std::collections::VecDeque;
  use std::ptr;
  use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
  use std::sync::{Arc, Condvar, Mutex, MutexGuard};
  use std::time::{Duration, Instant};

  use napi::{sys, Env};

  use zstd_pool_core::error::Failure;
  use zstd_pool_core::schedule::{lane_slice, LANE_LINGER, LANE_MAX_SHARE, LANE_SETTLE_AFTER, LANE_SETTLE_AT, LANE_SETTLE_FOR};

  use crate::napi::work::{
    call_threadsafe, can_run_js, hold_threadsafe, queue_work, threadsafe, AsyncWork, Job, Reached, Threadsafe, Work,
  };

  /// A call's job, counted in its thread's calls in flight until it is dropped: on the
  /// JavaScript thread, as its Promise is settled (or with its work, if it never is).
  pub(crate) struct Counted<J> {
    job: J,
    _in_flight: InFlight,
  }

  struct InFlight(Arc<Lanes>);

  impl Drop for InFlight {
    fn drop(&mut self) {
      self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
  }

  impl<J> Counted<J> {
    pub(crate) fn new(job: J, lanes: &Arc<Lanes>) -> Self {
      lanes.in_flight.fetch_add(1, Ordering::Relaxed);
      Self { job, _in_flight: InFlight(lanes.clone()) }
    }
  }

  impl<J: Job> Job for Counted<J> {
    type Output = J::Output;

    fn name(&self) -> &'static str {
      self.job.name()
    }

    fn compute(&mut self) -> Result<J::Output, Failure> {
      self.job.compute()
    }

    fn compute_until(&mut self, stop: &AtomicBool) -> Result<J::Output, Failure> {
      self.job.compute_until(stop)
    }
  }

  /// A queued call, as a lane sees it.
  pub(super) trait Call: Send {
    /// Runs the call (unless it was cancelled), on a libuv thread.
    fn execute(&mut self);
    /// Settles its Promise, on the JavaScript thread.
    fn complete(self: Box<Self>, env: &Env);
    /// Rejects its Promise without running it, on the JavaScript thread.
    fn fail(self: Box<Self>, env: &Env, failure: Failure);
  }

  impl<J: Job> Call for Work<J> {
    fn execute(&mut self) {
      Work::execute(self)
    }
    fn complete(self: Box<Self>, env: &Env) {
      Work::complete(*self, env)
    }
    fn fail(self: Box<Self>, env: &Env, failure: Failure) {
      Work::fail(*self, env, failure)
    }
  }

  pub(super) struct Lanes {
    /// The environment whose JavaScript thread made these lanes (an identity, never used as a
    /// pointer).
    env: usize,
    /// Wakes the JavaScript thread to settle finished calls. Set once, right after it is made.
    wake: AtomicPtr<sys::napi_threadsafe_function__>,
    /// The other way to the JavaScript thread (see [`Channel`]); null if it could not be made.
    turn: AtomicPtr<sys::napi_threadsafe_function__>,
    /// Set when Node finalizes the thread-safe function (the environment is torn down).
    closed: AtomicBool,
    /// Async calls of this thread queued and not yet settled (lanes or not).
    in_flight: AtomicUsize,
    /// How many drainers may run at once.
    width: usize,
    /// The threadpool's size: drainers of every thread together leave one of its threads free.
    threadpool: usize,
    state: Mutex<State>,
    /// Wakes a parked drainer.
    ready: Condvar,
  }

  #[derive(Default)]
  struct State {
    queued: VecDeque<Box<dyn Call>>,
    finished: Vec<Box<dyn Call>>,
    /// When the oldest of `finished` finished.
    finished_since: Option<Instant>,
    /// Drainers queued or running.
    drainers: usize,
    /// A wake is on its way to the JavaScript thread.
    woken: bool,
    /// The channel through which the calls that a settle left are on their way (`woken` stays
    /// set meanwhile), and when they were sent.
    left_for: Option<(Channel, Instant)>,
    /// Drainers waiting for calls, and how many of them were signalled to wake.
    parked: usize,
    signalled: usize,
  }

  /// The two thread-safe functions that reach the JavaScript thread. Node runs the calls of one
  /// back to back, within one turn of the event loop, as long as new ones come while it runs them
  /// (up to a thousand); a call made to the other while one runs comes on a later turn, or at
  /// the latest on the next (libuv looks at each async handle once per turn). So a settle that
  /// stops after `LANE_SETTLE_FOR` sends what is left through the channel it was not called by:
  /// settling a burst goes from one to the other, and the event loop turns in between (timers,
  /// I/O and immediates that are due run), with no threadpool thread needed. A burst of 100,000
  /// compressions of 1 KiB was settled in one go before, 300 to 570 ms during which a 1 ms
  /// interval fired once or not at all (Node 26, 2-core VM, 2026-12-04; docs/async.md). A
  /// threadpool work item in place of `turn` waited behind other work of the threadpool.
  #[derive(Clone, Copy, PartialEq, Eq)]
  enum Channel {
    /// `wake`, which drainers call too.
    Wake,
    /// `turn`, called only for what a settle left.
    Turn,
  }

  thread_local! {
    /// The lanes of this JavaScript thread, one per environment (the addon may be loaded more
    /// than once on a thread, as test runners that isolate modules do).
    static LANES: RefCell<Vec<Arc<Lanes>>> = const { RefCell::new(Vec::new()) };
  }

  /// Drainers of every thread of the process (they share one threadpool).
  static ALL_DRAINERS: AtomicUsize = AtomicUsize::new(0);

  impl Lanes {
    /// The lanes of `env`'s JavaScript thread, made on first use.
    pub(super) fn of(env: &Env) -> Result<Arc<Self>, Failure> {
      let key = env.raw() as usize;
      let current = LANES.with(|all| all.borrow().iter().find(|lanes| lanes.env == key && !lanes.closed()).cloned());
      if let Some(lanes) = current {
        return Ok(lanes);
      }
      let (width, threadpool) = width();
      let lanes = Arc::new(Self {
        env: key,
        wake: AtomicPtr::new(ptr::null_mut()),
        turn: AtomicPtr::new(ptr::null_mut()),
        closed: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        width,
        threadpool,
        state: Mutex::new(State::default()),
        ready: Condvar::new(),
      });
      // Published before the thread-safe function is made, since making it can run JavaScript
      // (an `async_hooks` init hook) that calls in: such calls use these lanes, and until the
      // function is there, their results are settled by the drainers' completions.
      LANES.with(|all| {
        let mut all = all.borrow_mut();
        all.retain(|lanes| !lanes.closed());
        all.push(lanes.clone());
      });
      let Some(wake) = threadsafe::<Lanes, WAKE>(env, "zstd-pool:lanes", &lanes) else {
        // Without a way to wake this thread, these lanes take no more calls.
        lanes.closed.store(true, Ordering::Release);
        return Err(Failure::Napi("napi_create_threadsafe_function"));
      };
      lanes.wake.store(wake, Ordering::Release);
      // Without it, a settle goes on until nothing is left, as it did before there was one.
      if let Some(turn) = threadsafe::<Lanes, TURN>(env, "zstd-pool:lanes-turn", &lanes) {
        lanes.turn.store(turn, Ordering::Release);
      }
      Ok(lanes)
    }

    /// Whether `env`'s lanes have at least two calls per drainer waiting.
    pub(super) fn backed_up(env: &Env) -> bool {
      let key = env.raw() as usize;
      LANES.with(|all| {
        all.borrow().iter().find(|lanes| lanes.env == key).is_some_and(|lanes| lanes.lock().queued.len() >= 2 * lanes.width)
      })
    }

    fn closed(&self) -> bool {
      self.closed.load(Ordering::Acquire)
    }

    pub(super) fn in_flight(&self) -> usize {
      self.in_flight.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
      self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `call`, and wakes a parked drainer or starts one if there is room.
    pub(super) fn push(self: &Arc<Self>, env: &Env, call: Box<dyn Call>) {
      let start = {
        let mut state = self.lock();
        state.queued.push_back(call);
        if state.parked > state.signalled {
          // One signal per parked drainer: signalling one that is already waking costs a system
          // call for nothing.
          state.signalled += 1;
          self.ready.notify_one();
          false
        } else {
          // One drainer always, so that queued calls run; more up to one per core, while the
          // drainers of every thread leave a thread of the threadpool to other work.
          let start =
            state.drainers == 0 || (state.drainers < self.width && ALL_DRAINERS.load(Ordering::Relaxed) + 1 < self.threadpool);
          if start {
            state.drainers += 1;
            ALL_DRAINERS.fetch_add(1, Ordering::Relaxed);
          }
          start
        }
      };
      if start && self.start_drainer(env).is_err() {
        self.stopped(env, || Failure::Napi("napi_queue_async_work"));
      }
    }

    /// Queues a drainer on the threadpool. Can run JavaScript (an `async_hooks` init hook), which
    /// may call in and queue more: no lock is held.
    fn start_drainer(self: &Arc<Self>, env: &Env) -> Result<(), ()> {
      queue_work(env, "zstd-pool:lane", Drainer { lanes: self.clone(), again: false }, drop).map_err(drop)
    }

    /// Gives up the slot of a drainer that stopped without running its calls (it could not be
    /// queued, was cancelled, or its environment is torn down): if it was the last, nothing
    /// would run the queued calls, which are returned.
    fn give_up_slot(&self) -> VecDeque<Box<dyn Call>> {
      let mut state = self.lock();
      state.drainers -= 1;
      ALL_DRAINERS.fetch_sub(1, Ordering::Relaxed);
      if state.drainers == 0 {
        std::mem::take(&mut state.queued)
      } else {
        VecDeque::new()
      }
    }

    /// A drainer stopped without running: the calls no drainer will run fail.
    fn stopped(&self, env: &Env, failure: impl Fn() -> Failure) {
      for call in self.give_up_slot() {
        call.fail(env, failure());
      }
    }

    /// Settles finished calls, on the JavaScript thread, called by `via` (none: a drainer's
    /// completion). Settling can run JavaScript (a `then` getter on a result's prototype), which
    /// may call in: no lock is held meanwhile.
    ///
    /// No drainer wakes this thread again until it is done: Node runs the calls of a thread-safe
    /// function back to back, without letting the event loop turn, for as long as new ones come
    /// while it runs them (up to a thousand), and with calls flowing steadily they would.
    /// Calls that finish while it settles are settled too, for up to `LANE_SETTLE_FOR` (or, for
    /// the rest of a settle, as long as the turn took since), the time read after each call
    /// (calls that finished while this thread ran other code, thousands after a loop that made
    /// them, come all at once: settled in one go, they took 30 to 40 ms). What is left then goes
    /// through the other channel (see [`Channel`]).
    fn settle(&self, env: &Env, via: Option<Channel>) {
      let began = Instant::now();
      let mut state = self.lock();
      let mut share = LANE_SETTLE_FOR;
      if let Some((channel, sent)) = state.left_for {
        if via == Some(channel) {
          state.left_for = None;
          self.hold(env, channel, false);
          // As long as the rest of the event loop's turn took, at least: on a loop busy with other
          // work (20 ms a turn), a millisecond a turn made a burst of 100,000 compressions of
          // 1 KiB take 2 s where it took 0.4 s when it was settled in one go (2026-12-04).
          share = share.max(sent.elapsed());
        } else if can_run_js(env) {
          // What was left is on its way, and is settled when it comes.
          return;
        }
        // Else the environment is torn down, and no channel calls back: all is settled now.
      }
      state.woken = true;
      let mut limited = true;
      while !state.finished.is_empty() {
        if limited && began.elapsed() >= share {
          drop(state);
          if self.send_rest(env, via) {
            // `woken` stays set: no drainer wakes this thread before the rest comes.
            return;
          }
          // No way to send it: everything is settled now, as before there was one.
          limited = false;
          state = self.lock();
          continue;
        }
        state.finished_since = None;
        let mut finished = std::mem::take(&mut state.finished).into_iter();
        drop(state);
        for call in finished.by_ref() {
          call.complete(env);
          if limited && began.elapsed() >= share {
            break;
          }
        }
        state = self.lock();
        if finished.len() > 0 {
          // The rest goes first, in the order they finished.
          let later = std::mem::replace(&mut state.finished, finished.collect());
          state.finished.extend(later);
          state.finished_since.get_or_insert(began);
        }
      }
      state.woken = false;
      // Calls that finished meanwhile: a parked drainer, signalled, wakes this thread for them
      // (after this returns, most likely); a running one does after its share.
      if !state.finished.is_empty() && state.parked > state.signalled {
        state.signalled += 1;
        self.ready.notify_one();
      }
    }

    /// Wakes the JavaScript thread to settle finished calls. If the thread-safe function is
    /// closing, the drainer's completion settles them instead.
    fn wake(&self) {
      self.call(Channel::Wake);
    }

    /// Sends the calls a settle left through the channel that did not call it (a drainer's
    /// completion: `Turn`), referenced until they come, so that the process waits for them.
    /// False if it cannot: no such channel, or the environment is torn down.
    fn send_rest(&self, env: &Env, via: Option<Channel>) -> bool {
      let channel = if via == Some(Channel::Turn) { Channel::Wake } else { Channel::Turn };
      if self.function(channel).is_null() || self.closed() || !can_run_js(env) {
        return false;
      }
      self.lock().left_for = Some((channel, Instant::now()));
      self.hold(env, channel, true);
      if self.call(channel) {
        return true;
      }
      self.lock().left_for = None;
      self.hold(env, channel, false);
      false
    }

    fn function(&self, channel: Channel) -> Threadsafe {
      match channel {
        Channel::Wake => self.wake.load(Ordering::Acquire),
        Channel::Turn => self.turn.load(Ordering::Acquire),
      }
    }

    /// Calls `channel`'s thread-safe function; whether it took the call. Not made yet (a call
    /// made while `wake` was being made), or gone: the drainers' completions settle what finished.
    fn call(&self, channel: Channel) -> bool {
      call_threadsafe(self.function(channel), &self.closed)
    }

    /// Makes `channel` keep the process alive (`keep`), or no longer.
    fn hold(&self, env: &Env, channel: Channel, keep: bool) {
      hold_threadsafe(env, self.function(channel), &self.closed, keep)
    }
  }

  /// How many drainers of one thread run at once, one per core within the threadpool's size (a
  /// drainer holds a threadpool thread while it runs), and that size, read as libuv reads
  /// `UV_THREADPOOL_SIZE` (the leading digits; 0 means 1; at most 1024; 4 when unset).
  fn width() -> (usize, usize) {
    let threadpool = std::env::var("UV_THREADPOOL_SIZE").ok().map_or(4, |size| {
      let digits: String = size.trim_start().chars().take_while(char::is_ascii_digit).collect();
      digits.parse::<usize>().unwrap_or(0).clamp(1, 1024)
    });
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    (threadpool.min(cores).max(1), threadpool)
  }

  /// Whether the finished calls are worth waking the JavaScript thread for now, as a drainer
  /// starts a share that it expects to take `next` (as long as its last). A wake costs the
  /// drainer a system call and the JavaScript thread a trip through its event loop, several
  /// microseconds in all: waking for every small call cost more than the calls. So finished
  /// calls wait while neither the oldest has waited, nor the share about to start would make it
  /// wait, `LANE_SETTLE_AFTER`, and fewer than `LANE_SETTLE_AT` have finished.
  fn worth_a_wake(state: &State, next: Duration) -> bool {
    state.finished.len() >= LANE_SETTLE_AT
      || state.finished_since.is_some_and(|since| since.elapsed() + next >= LANE_SETTLE_AFTER)
  }

  struct Drainer {
    lanes: Arc<Lanes>,
    /// Its slice ran out with calls still queued: `drained` queues the next drainer in its place.
    again: bool,
  }

  impl AsyncWork for Drainer {
    fn execute(&mut self) {
      drain(self)
    }

    fn complete(self, env: &Env, status: sys::napi_status) {
      drained(self, env, status)
    }
  }

  /// A drainer's work: shares of the queue, one after another, until none is left for
  /// `LANE_LINGER`, or until its slice is over.
  ///
  /// The slice (`lane_slice`: `LANE_SLICE`, shorter when many threads have drainers) is wall
  /// time, waiting for calls included: a steady flow of calls would hold the threadpool's threads
  /// for as long as it lasts, and so would a trickle, since each call renews the linger (a slice
  /// that counted only the time spent running calls let a trickle hold the only thread for half
  /// a second). Once a drainer has held its thread that long, it ends: its work item completes,
  /// and whatever waits for the threadpool (file system, DNS, crypto, other threads' calls) runs
  /// before the drainer that takes over, queued behind it. There is no slice while the drainers
  /// of every thread leave two threads or more to other work, since a restart with calls queued
  /// needs the JavaScript thread, which may be busy for long, and the lanes wait for it meanwhile.
  fn drain(drainer: &mut Drainer) {
    let _background = policy::Background::enter();
    let lanes = drainer.lanes.clone();
    let began = Instant::now();
    let mut last_share = Duration::ZERO;
    let mut done: Vec<Box<dyn Call>> = Vec::new();
    let mut state = lanes.lock();
    let mut idle_since: Option<Instant> = None;
    loop {
      if !done.is_empty() {
        state.finished.append(&mut done);
        state.finished_since.get_or_insert_with(Instant::now);
      }
      let sliced =
        lane_slice(ALL_DRAINERS.load(Ordering::Relaxed), lanes.threadpool).is_some_and(|slice| began.elapsed() >= slice);
      if !state.queued.is_empty() {
        if sliced {
          // Its slot stays taken: `drained` queues the next drainer.
          drainer.again = true;
          break;
        }
        idle_since = None;
        // A share of the queue, so that the lock is taken once per share rather than per call,
        // and every drainer still gets some.
        let share = state.queued.len().div_ceil(2 * lanes.width).min(LANE_MAX_SHARE);
        done.extend(state.queued.drain(..share));
        // Calls finished and more to run: the JavaScript thread settles them meanwhile, once
        // they are worth a wake (see `worth_a_wake`).
        let wake = !state.woken && worth_a_wake(&state, last_share);
        state.woken |= wake;
        drop(state);
        if wake {
          lanes.wake();
        }
        let share_started = Instant::now();
        for call in &mut done {
          // Panics are caught inside: one call's failure is its own.
          call.execute();
        }
        last_share = share_started.elapsed();
        state = lanes.lock();
        continue;
      }
      // Nothing to run. What finished is settled now, since nothing else may finish for a while.
      let idle = *idle_since.get_or_insert_with(Instant::now);
      let left = LANE_LINGER.saturating_sub(idle.elapsed());
      // Its slice over, it ends at once rather than linger: the next call starts a drainer,
      // queued behind the other work.
      if left.is_zero() || sliced {
        // This drainer's completion settles what finished.
        state.drainers -= 1;
        ALL_DRAINERS.fetch_sub(1, Ordering::Relaxed);
        break;
      }
      if !state.finished.is_empty() && !state.woken {
        state.woken = true;
        drop(state);
        lanes.wake();
        state = lanes.lock();
        continue;
      }
      state.parked += 1;
      state = lanes.ready.wait_timeout(state, left).map_or_else(|poisoned| poisoned.into_inner().0, |(state, _)| state);
      state.parked -= 1;
      state.signalled = state.signalled.saturating_sub(1);
    }
    drop(state);
  }

  /// While a drainer runs, its threadpool thread is scheduled as `SCHED_BATCH` (on Linux), and
  /// given back as it was. The JavaScript thread wakes a parked drainer as it queues a call; as
  /// `SCHED_OTHER`, the woken drainer took the CPU from it, so with a drainer per core the
  /// JavaScript thread stalled for the drainers' shares (up to 46 µs) before it queued the next
  /// call, and a burst reached the lanes a call and a wake at a time. A `SCHED_BATCH` thread
  /// does not preempt as it wakes, and has the same share of the CPU (the policy changes no
  /// weight). Traced on the 2-core VM (Node 26, 2026-12-03): the calls of a burst were queued
  /// 1.7 µs apart, where 10% of them had waited 15 µs or more. Switching for the waits alone
  /// gained less: 16 and 64 compressions of 1 KiB in flight took 9% and 5% longer than this.
  ///
  /// The kernel is asked each time (glibc's `pthread_getschedparam` keeps what it read first),
  /// so that a thread whose policy changed meanwhile (`chrt -a -p` on the process) is left as it
  /// is. Threads made while a drainer runs inherit its policy: the sweeper is started before,
  /// and libzstd's workers for a multi-threaded compression, if their first call ran on a lane,
  /// run as `SCHED_BATCH`. A thread under a seccomp filter never switches, since a filter may
  /// kill the process for the call (systemd's `SystemCallFilter=~@resources` without
  /// `SystemCallErrorNumber=`).
  #[cfg(target_os = "linux")]
  mod policy {
    use std::cell::Cell;

    thread_local! {
      /// Whether this thread may switch: read once from `/proc/thread-self/status`.
      static UNFILTERED: Cell<Option<bool>> = const { Cell::new(None) };
    }

    pub(super) struct Background(bool);

    impl Background {
      pub(super) fn enter() -> Self {
        if !unfiltered() {
          return Self(false);
        }
        zstd_pool_core::sweep::start();
        Self(switch(libc::SCHED_OTHER, libc::SCHED_BATCH))
      }
    }

    impl Drop for Background {
      fn drop(&mut self) {
        if self.0 {
          switch(libc::SCHED_BATCH, libc::SCHED_OTHER);
        }
      }
    }

    fn unfiltered() -> bool {
      UNFILTERED.with(|unfiltered| {
        let known = unfiltered.get().unwrap_or_else(|| {
          let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
          status.lines().any(|line| line.split_whitespace().eq(["Seccomp:", "0"]))
        });
        unfiltered.set(Some(known));
        known
      })
    }

    /// Sets the calling thread's policy to `to` if it is `from`; whether it did. By system call:
    /// musl's `sched_getscheduler` and `sched_setscheduler` only fail (ENOSYS).
    fn switch(from: libc::c_int, to: libc::c_int) -> bool {
      // SAFETY: the calling thread's own policy (thread ID 0), and a `sched_param` (plain
      // integers, for which zeroes are valid: a priority of 0, as these policies take) that lives
      // across the call, which only reads it.
      unsafe {
        let param = std::mem::zeroed::<libc::sched_param>();
        libc::syscall(libc::SYS_sched_getscheduler, 0) == libc::c_long::from(from)
          && libc::syscall(libc::SYS_sched_setscheduler, 0, to, &param) == 0
      }
    }
  }

  #[cfg(not(target_os = "linux"))]
  mod policy {
    pub(super) struct Background;

    impl Background {
      pub(super) fn enter() -> Self {
        Self
      }
    }
  }

  /// A drainer's completion, on the JavaScript thread: the work item is deleted after it.
  fn drained(drainer: Drainer, env: &Env, status: sys::napi_status) {
    if status == sys::Status::napi_cancelled {
      drainer.lanes.stopped(env, || Failure::Aborted);
    } else if drainer.again {
      // As the environment is torn down (a worker terminated), Node still completes work items
      // but forbids JavaScript: making a work item would then throw from its `async_hooks` init
      // hooks, reported as uncaught. The queued calls are dropped instead: no one is left to tell.
      if !can_run_js(env) {
        drop(drainer.lanes.give_up_slot());
      } else if drainer.lanes.start_drainer(env).is_err() {
        drainer.lanes.stopped(env, || Failure::Napi("napi_queue_async_work"));
      }
    }
    drainer.lanes.settle(env, None);
  }

  /// What the two thread-safe functions are made for (see [`Channel`]).
  const WAKE: u8 = 0;
  const TURN: u8 = 1;

  impl Reached for Lanes {
    /// Settles through the channel called. When Node empties a function's queue as it
    /// finalizes it, nothing is reached: the drainers' completions have settled everything
    /// then, or `finalized` lets the calls left go.
    fn reached(&self, env: &Env, which: u8) {
      self.settle(env, Some(if which == TURN { Channel::Turn } else { Channel::Wake }));
    }

    /// Node finalizes the thread-safe functions as the environment is torn down, after every
    /// work item of the environment completed (a drainer is one), so no drainer can wake them
    /// afterwards. Calls still finished or queued then (sent on by a settle, say) have no one
    /// left to tell: they are let go, as `drained` lets go of those it cannot settle. Each holds
    /// the lanes (their count of calls in flight), which would otherwise never be freed.
    fn finalized(lanes: Arc<Self>) {
      lanes.closed.store(true, Ordering::Release);
      let (finished, queued) = {
        let mut state = lanes.lock();
        (std::mem::take(&mut state.finished), std::mem::take(&mut state.queued))
      };
      drop((finished, queued));
    }
  }
}
