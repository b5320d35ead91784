//! Work on the libuv threadpool: a call's Promise, its work item's lifecycle, and its
//! cancellation. The rules of `js.rs` hold here too; a work item's `execute` alone runs on a libuv
//! thread, and touches no JavaScript value. [`queue_work`] is the one place a work item is made,
//! for a call's work and for the lanes' drainers alike.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use napi::{sys, Env};
use napi_derive::napi;
use zstd_pool_core::error::{guarded, Failure};

use zstd_pool_core::memory::Scratch;
use zstd_pool_core::schedule;

use super::js::{checked, error_value, exception_pending, result_bytes, scratch_result, string, Js};

/// One call's work for the libuv threadpool. It owns everything it reads (inputs copied into
/// native memory, dictionaries by `Arc`), so the caller may do anything to its buffers, and
/// JavaScript may run, while it waits and runs.
pub trait Job: Send + 'static {
  type Output: IntoJs + Send + 'static;
  /// The async resource name that diagnostics (`async_hooks`) show for this work.
  fn name(&self) -> &'static str;

  /// The work itself; runs on a libuv thread and touches no JavaScript value.
  fn compute(&mut self) -> Result<Self::Output, Failure>;

  /// `compute`, for work that can stop part way: `stop` turns true when the call is cancelled
  /// while the work runs (work of many items checks it between items).
  fn compute_until(&mut self, stop: &AtomicBool) -> Result<Self::Output, Failure> {
    let _ = stop;
    self.compute()
  }
}

/// A job given as a closure that owns what it reads, for work whose result is bytes.
pub struct Task<F> {
  name: &'static str,
  run: F,
}

impl<F> Task<F> {
  pub fn new(name: &'static str, run: F) -> Self {
    Self { name, run }
  }
}

impl<F, O> Job for Task<F>
where
  F: FnMut() -> Result<O, Failure> + Send + 'static,
  O: IntoJs + Send + 'static,
{
  type Output = O;

  fn name(&self) -> &'static str {
    self.name
  }

  fn compute(&mut self) -> Result<O, Failure> {
    (self.run)()
  }
}

/// What a work item's output becomes in JavaScript, on the JavaScript thread.
pub trait IntoJs {
  fn into_js(self, env: &Env) -> Result<Js, Failure>;
}

/// Bytes become a Buffer (or, when large, `NativeBytes`: see [`result_bytes`]).
impl IntoJs for Vec<u8> {
  fn into_js(self, env: &Env) -> Result<Js, Failure> {
    result_bytes(env, self)
  }
}

/// Bytes in a scratch buffer become a Buffer too, and the scratch goes back to its pool.
impl IntoJs for Scratch {
  fn into_js(self, env: &Env) -> Result<Js, Failure> {
    scratch_result(env, self)
  }
}

/// Bytes made in a scratch buffer or in memory of their own, as the work found fit.
pub enum Produced {
  Scratch(Scratch),
  Owned(Vec<u8>),
}

impl IntoJs for Produced {
  fn into_js(self, env: &Env) -> Result<Js, Failure> {
    match self {
      Produced::Scratch(scratch) => scratch.into_js(env),
      Produced::Owned(bytes) => bytes.into_js(env),
    }
  }
}

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const CANCELLED: u8 = 2;
const DONE: u8 = 3;

/// What [`Cancellation`] and the work share: the work's phase, and its handle while it exists.
pub(crate) struct WorkState {
  phase: AtomicU8,
  handle: AtomicPtr<sys::napi_async_work__>,
  /// Set by `cancel()` even once the work runs: see [`Job::compute_until`].
  stop: AtomicBool,
  /// When a call queued alone (or as a probe) was queued: its wait for a thread measures the
  /// threadpool's trip (`schedule::observe_wait`).
  queued_alone: OnceLock<Instant>,
}

pub(crate) struct Work<J: Job> {
  job: J,
  result: Option<Result<J::Output, Failure>>,
  deferred: sys::napi_deferred,
  state: Arc<WorkState>,
}

// SAFETY: the job and its output are `Send`; `deferred` is a handle that only `complete` and
// `fail` use, and they run on the JavaScript thread that made it.
unsafe impl<J: Job> Send for Work<J> {}

/// The Promise of a call whose work runs later, and that work, not yet handed to anyone.
/// Creating the Promise can run JavaScript (an `async_hooks` init hook): the job owns all it
/// reads (see [`Job`]).
pub(crate) fn promised<J: Job>(env: &Env, job: J) -> Result<(Js, Box<Work<J>>), Failure> {
  let (mut promise, mut deferred) = (ptr::null_mut(), ptr::null_mut());
  // SAFETY: on the JavaScript thread of `env`; nothing here points into JavaScript memory.
  checked(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) }, "napi_create_promise")?;
  let state = Arc::new(WorkState {
    phase: AtomicU8::new(QUEUED),
    handle: AtomicPtr::new(ptr::null_mut()),
    stop: AtomicBool::new(false),
    queued_alone: OnceLock::new(),
  });
  Ok((Js::from_raw(promise), Box::new(Work { job, result: None, deferred, state })))
}

impl<J: Job> Work<J> {
  /// Runs the job unless it was cancelled first; on a libuv thread.
  pub(crate) fn execute(&mut self) {
    if self.state.phase.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok() {
      if let Some(queued) = self.state.queued_alone.get() {
        schedule::observe_wait(queued.elapsed().as_secs_f64() * 1e6);
      }
      let (job, stop) = (&mut self.job, &self.state.stop);
      self.result = Some(guarded(|| job.compute_until(stop)));
    }
  }

  /// Settles the call's Promise with the job's result, on the JavaScript thread. No result means
  /// the work never ran: it was cancelled, or the environment is shutting down (then settling
  /// fails quietly, as there is no one left to tell).
  pub(crate) fn complete(self, env: &Env) {
    let Work { job, result, deferred, state } = self;
    // From here, `cancel()` does nothing.
    state.phase.store(DONE, Ordering::Release);
    // What the work owned (its inputs, and a lane's count of calls in flight) goes first.
    drop(job);
    let settled = match result {
      Some(Ok(output)) => output.into_js(env),
      Some(Err(failure)) => Err(failure),
      None => Err(Failure::Aborted),
    };
    settle(env, deferred, settled);
  }

  /// Rejects the call's Promise with `failure` without running the job, on the JavaScript thread.
  pub(crate) fn fail(self, env: &Env, failure: Failure) {
    self.state.phase.store(DONE, Ordering::Release);
    settle(env, self.deferred, Err(failure));
  }

  #[cfg(not(target_family = "wasm"))]
  pub(crate) fn state(&self) -> &Arc<WorkState> {
    &self.state
  }
}

/// Queues `job` on the libuv threadpool, as a work item of its own, and returns a Promise of its
/// result. With a `cancellation`, `cancel()` on it stops the work if it has not started yet.
pub fn queue<J: Job>(env: &Env, job: J, cancellation: Option<&Cancellation>) -> Result<Js, Failure> {
  queue_item(env, job, cancellation, false)
}

/// [`queue`]; `alone`: no other call of this thread's is in flight (or the call is a probe:
/// `schedule::Spot::Probe`), so that how long the work waits for a thread measures the
/// threadpool's trip, which the budget on the spot follows.
pub(crate) fn queue_item<J: Job>(env: &Env, job: J, cancellation: Option<&Cancellation>, alone: bool) -> Result<Js, Failure> {
  let name = job.name();
  let (promise, work) = promised(env, job)?;
  let state = work.state.clone();
  #[cfg(target_family = "wasm")]
  if let Some(workers) = super::workers::Workers::of(env) {
    // No work item: a cancel marks the work, and the thread that takes it skips it.
    if let Some(cancellation) = cancellation {
      cancellation.attach(state);
    }
    workers.push(env, work);
    return Ok(promise);
  }
  let queued = queue_work(env, name, *work, |handle| {
    state.handle.store(handle, Ordering::Release);
    if alone {
      let _ = state.queued_alone.set(Instant::now());
    }
    // Attached before the work is queued, so that a libuv thread cannot start it first when the
    // signal was aborted meanwhile (by JavaScript that ran while the work item was made).
    if let Some(cancellation) = cancellation {
      cancellation.attach(state.clone());
    }
  });
  if let Err(work) = queued {
    // Never queued: a cancellation must not reach for its handle.
    state.handle.store(ptr::null_mut(), Ordering::Release);
    work.fail(env, Failure::Napi("napi_queue_async_work"));
  }
  Ok(promise)
}

impl<J: Job> AsyncWork for Work<J> {
  fn execute(&mut self) {
    Work::execute(self)
  }

  fn complete(self, env: &Env, _status: sys::napi_status) {
    // Taken first: from here, `cancel()` does nothing, since the handle is about to be deleted.
    self.state.handle.store(ptr::null_mut(), Ordering::Release);
    Work::complete(self, env)
  }
}

/// What a libuv work item does: [`queue_work`] hands it to libuv, which runs `execute` on one of
/// its threads, then `complete` on the JavaScript thread (also when the work was cancelled
/// before it ran: then `status` says so).
pub(crate) trait AsyncWork: Send + Sized + 'static {
  /// On a libuv thread; touches no JavaScript value.
  fn execute(&mut self);
  /// On the JavaScript thread, once; the work item is deleted right after.
  fn complete(self, env: &Env, status: sys::napi_status);
}

/// A work item's data, as libuv's callbacks see it.
struct Item<W> {
  handle: sys::napi_async_work,
  work: W,
}

/// Queues `work` as a libuv work item named `name` (what `async_hooks` show), calling `created`
/// with its handle just before it is queued; gives `work` back if it could not be queued. Making
/// the work item can run JavaScript (an `async_hooks` init hook): `work` must own all it reads.
pub(crate) fn queue_work<W: AsyncWork>(
  env: &Env,
  name: &str,
  work: W,
  created: impl FnOnce(sys::napi_async_work),
) -> Result<(), W> {
  let item = Box::into_raw(Box::new(Item { handle: ptr::null_mut(), work }));
  let mut handle = ptr::null_mut();
  // From here libuv's callbacks own `item`, once queued: `execute_item` borrows it,
  // `complete_item` frees it.
  // SAFETY: on the JavaScript thread of `env`; `item` is a live Box, handed over once.
  let mut status = unsafe {
    sys::napi_create_async_work(
      env.raw(),
      ptr::null_mut(),
      string(env, name),
      Some(execute_item::<W>),
      Some(complete_item::<W>),
      item.cast(),
      &mut handle,
    )
  };
  if status == sys::Status::napi_ok {
    created(handle);
    // SAFETY: on the JavaScript thread; `handle` was just made, and `item` is not queued yet, so
    // nothing else sees it.
    status = unsafe {
      (*item).handle = handle;
      sys::napi_queue_async_work(env.raw(), handle)
    };
  }
  if status == sys::Status::napi_ok {
    return Ok(());
  }
  if !handle.is_null() {
    delete_work(env, handle);
  }
  // SAFETY: `item` came from Box::into_raw above, and no callback will see it: never queued.
  let item = unsafe { Box::from_raw(item) };
  Err(item.work)
}

/// Deletes a work item: once its callbacks ran, or if it was never queued.
fn delete_work(env: &Env, handle: sys::napi_async_work) {
  // SAFETY: on the JavaScript thread of `env`; each handle is deleted once (by `queue_work` if
  // never queued, else by `complete_item` after its callbacks ran).
  unsafe { sys::napi_delete_async_work(env.raw(), handle) };
}

unsafe extern "C" fn execute_item<W: AsyncWork>(_env: sys::napi_env, data: *mut c_void) {
  // SAFETY: `data` is the item that `queue_work` gave libuv, which `complete_item` frees only
  // after this returns; the JavaScript thread does not touch it meanwhile.
  let item = unsafe { &mut *data.cast::<Item<W>>() };
  item.work.execute();
}

unsafe extern "C" fn complete_item<W: AsyncWork>(env: sys::napi_env, status: sys::napi_status, data: *mut c_void) {
  // libuv calls this once per work item, on the JavaScript thread, after `execute_item` (or
  // instead of it).
  // SAFETY: the item from `queue_work`, handed back once: ours to free.
  let Item { handle, work } = *unsafe { Box::from_raw(data.cast::<Item<W>>()) };
  let env = Env::from_raw(env);
  work.complete(&env, status);
  delete_work(&env, handle);
}

/// Settles the call's Promise, whatever happens: a Node-API call that failed on the way (Node 24
/// and later leave an exception pending when a Buffer cannot be allocated) or JavaScript that
/// threw while the error was made rejects it with that exception, which would otherwise be
/// thrown as uncaught and leave the Promise pending, since Node settles nothing while an
/// exception is pending.
fn settle(env: &Env, deferred: sys::napi_deferred, result: Result<Js, Failure>) {
  let failure = match result {
    Ok(value) if !exception_pending(env) => return settle_with(env, deferred, true, value.raw()),
    Ok(_) => Failure::Napi("napi_resolve_deferred"),
    Err(failure) => failure,
  };
  let error = take_exception(env)
    .or_else(|| error_value(env, &failure))
    .or_else(|| take_exception(env))
    .unwrap_or_else(|| string(env, &failure.shape().message));
  settle_with(env, deferred, false, error);
}

/// Resolves `deferred` with `value`, or rejects it with it; no exception may be pending.
fn settle_with(env: &Env, deferred: sys::napi_deferred, resolve: bool, value: sys::napi_value) {
  // SAFETY: on the JavaScript thread; `deferred` is settled once (this frees it); no exception is
  // pending (`settle` took any).
  unsafe {
    if resolve {
      sys::napi_resolve_deferred(env.raw(), deferred, value)
    } else {
      sys::napi_reject_deferred(env.raw(), deferred, value)
    }
  };
  // Reactions run later, as microtasks; but resolving reads the value's `then`, which can be a
  // getter. One that throws rejects this Promise with its error, and Node 20 leaves that error
  // pending too: cleared, so that it is not taken for the next call's (which settles next when
  // many settle together) or reported as uncaught.
  take_exception(env);
}

/// Whether JavaScript can run on `env`'s thread now: not while its environment is torn down.
/// Calls a native function that does nothing, through `napi_call_function`, which checks that
/// first (and runs no JavaScript).
#[cfg(not(target_family = "wasm"))]
pub(crate) fn can_run_js(env: &Env) -> bool {
  unsafe extern "C" fn nothing(_env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    ptr::null_mut()
  }
  let (mut function, mut receiver, mut result) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
  // SAFETY: on the JavaScript thread of `env`; the function is native and does nothing.
  let can = unsafe {
    sys::napi_create_function(env.raw(), c"nothing".as_ptr(), 7, Some(nothing), ptr::null_mut(), &mut function)
      == sys::Status::napi_ok
      && sys::napi_get_undefined(env.raw(), &mut receiver) == sys::Status::napi_ok
      && sys::napi_call_function(env.raw(), receiver, function, 0, ptr::null(), &mut result) == sys::Status::napi_ok
  };
  if !can {
    take_exception(env);
  }
  can
}

fn take_exception(env: &Env) -> Option<sys::napi_value> {
  if !exception_pending(env) {
    return None;
  }
  let mut exception = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; moves the pending exception into `exception`.
  let status = unsafe { sys::napi_get_and_clear_last_exception(env.raw(), &mut exception) };
  (status == sys::Status::napi_ok && !exception.is_null()).then_some(exception)
}

/// Stops a queued call's work if it has not started: made by `main.js` for a call with an
/// `AbortSignal`, whose listener calls `cancel()`. It holds the work's shared state, never a
/// pointer to the work, and the completion clears that state, so a `cancel()` that comes late
/// (a stale listener, called by anyone at any time) does nothing.
#[napi]
pub struct Cancellation {
  work: Mutex<Cancel>,
}

enum Cancel {
  /// No work yet: the call has not queued any (or ran on the spot).
  Waiting,
  /// `cancel()` came before the work was queued (JavaScript that ran while it was being queued,
  /// an `async_hooks` hook, aborted the signal): the work is marked cancelled as it is attached,
  /// and never runs.
  Requested,
  Attached(Arc<WorkState>),
  Done,
}

#[napi]
impl Cancellation {
  #[napi(constructor)]
  #[allow(clippy::new_without_default)]
  pub fn new() -> Self {
    Self { work: Mutex::new(Cancel::Waiting) }
  }

  /// Cancels the work if it is still queued: it then never runs. Work already running finishes
  /// on its thread. Does nothing after the work completed, or for a call that ran on the spot.
  #[napi]
  pub fn cancel(&self, env: Env) {
    let previous = std::mem::replace(&mut *self.lock(), Cancel::Done);
    match previous {
      // A second `cancel()` before the work is attached must not forget the first.
      Cancel::Waiting | Cancel::Requested => *self.lock() = Cancel::Requested,
      Cancel::Attached(state) => cancel_work(&env, &state),
      Cancel::Done => {}
    }
  }
}

impl Cancellation {
  fn lock(&self) -> std::sync::MutexGuard<'_, Cancel> {
    self.work.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
  }

  /// Called before the work is queued: cancelling it then needs no libuv call, `execute` sees it.
  pub(crate) fn attach(&self, state: Arc<WorkState>) {
    let mut slot = self.lock();
    if matches!(*slot, Cancel::Requested) {
      *slot = Cancel::Done;
      state.phase.store(CANCELLED, Ordering::Release);
    } else {
      *slot = Cancel::Attached(state);
    }
  }
}

fn cancel_work(env: &Env, state: &WorkState) {
  // Work of many items that has started stops before its next item.
  state.stop.store(true, Ordering::Release);
  if state.phase.compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
    let handle = state.handle.load(Ordering::Acquire);
    if !handle.is_null() {
      // When libuv has already started the work, this fails, and `execute` sees CANCELLED.
      // SAFETY: on the JavaScript thread, as `complete`, which deletes the handle after DONE: live.
      unsafe { sys::napi_cancel_async_work(env.raw(), handle) };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Thread-safe functions: how other threads reach the JavaScript thread (the lanes' drainers,
// the WebAssembly build's threads).

/// What a thread-safe function made by [`threadsafe`] reaches on the JavaScript thread.
pub(crate) trait Reached: Send + Sync + 'static {
  /// A call of the function made for `which`, on the JavaScript thread of `env`.
  fn reached(&self, env: &Env, which: u8);
  /// The function was finalized, as the environment is torn down, after its last call: `this`
  /// is the reference it held. Its owner must make no call of it from then on (see
  /// [`call_threadsafe`]).
  fn finalized(this: Arc<Self>);
}

/// A thread-safe function, as Node-API hands it out.
pub(crate) type Threadsafe = sys::napi_threadsafe_function;

/// A thread-safe function named `name` whose calls reach `target.reached(env, WHICH)`,
/// unreferenced (until [`hold_threadsafe`], it does not keep the process alive). It holds a
/// reference to `target` of its own, handed to [`Reached::finalized`]. Making it can run
/// JavaScript (an `async_hooks` init hook).
pub(crate) fn threadsafe<T: Reached, const WHICH: u8>(env: &Env, name: &str, target: &Arc<T>) -> Option<Threadsafe> {
  let context = Arc::into_raw(target.clone()).cast_mut().cast::<c_void>();
  let mut function = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; `context` stays valid until `finalized_target`
  // runs, and `function` is unreferenced right after it is made.
  let status = unsafe {
    let status = sys::napi_create_threadsafe_function(
      env.raw(),
      ptr::null_mut(),
      ptr::null_mut(),
      string(env, name),
      0,
      1,
      context,
      Some(finalized_target::<T>),
      context,
      Some(reached_target::<T, WHICH>),
      &mut function,
    );
    if status == sys::Status::napi_ok {
      sys::napi_unref_threadsafe_function(env.raw(), function);
    }
    status
  };
  if status != sys::Status::napi_ok {
    // SAFETY: the reference made above, which Node-API did not take.
    drop(unsafe { Arc::from_raw(context.cast::<T>()) });
    return None;
  }
  Some(function)
}

/// Calls `function` (made by [`threadsafe`]) from any thread, unless it is null or `closed`
/// (the flag its target's [`Reached::finalized`] sets): whether it took the call.
pub(crate) fn call_threadsafe(function: Threadsafe, closed: &AtomicBool) -> bool {
  if function.is_null() || closed.load(Ordering::Acquire) {
    return false;
  }
  // SAFETY: Node-API finalizes the function only as the environment is torn down. The lanes'
  // drainers are work items, which all complete before that; the WebAssembly build's threads,
  // which are not, call it under the lock under which `Reached::finalized` sets `closed`. So it
  // is live here.
  let status =
    unsafe { sys::napi_call_threadsafe_function(function, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking) };
  status == sys::Status::napi_ok
}

/// Makes `function` keep the process alive (`keep`), or no longer, on the JavaScript thread of
/// `env`, unless it is null or `closed` (as for [`call_threadsafe`]).
pub(crate) fn hold_threadsafe(env: &Env, function: Threadsafe, closed: &AtomicBool, keep: bool) {
  if function.is_null() || closed.load(Ordering::Acquire) {
    return;
  }
  // SAFETY: on the JavaScript thread of `env`, which made `function`, not finalized yet
  // (`closed` is not set).
  unsafe {
    if keep {
      sys::napi_ref_threadsafe_function(env.raw(), function);
    } else {
      sys::napi_unref_threadsafe_function(env.raw(), function);
    }
  }
}

/// A call of a function from [`threadsafe`]. `env` is null when Node empties the function's
/// queue as it finalizes it: nothing is reached then.
unsafe extern "C" fn reached_target<T: Reached, const WHICH: u8>(
  env: sys::napi_env,
  _callback: sys::napi_value,
  context: *mut c_void,
  _data: *mut c_void,
) {
  if env.is_null() {
    return;
  }
  // SAFETY: `context` is the reference `threadsafe` gave the function, released only in
  // `finalized_target`, after its last call.
  let target = unsafe { &*context.cast::<T>() };
  target.reached(&Env::from_raw(env), WHICH);
}

unsafe extern "C" fn finalized_target<T: Reached>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
  // SAFETY: the reference `threadsafe` gave the function, released once, here.
  T::finalized(unsafe { Arc::from_raw(data.cast::<T>()) });
}
