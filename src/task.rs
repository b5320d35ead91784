//! Running a job inline (sync calls) or on the libuv threadpool behind a Promise (async calls),
//! with `AbortSignal` support. Both paths run the same `Job::compute`.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use napi::sys;

use crate::env_state;
use crate::error::Failure;
use crate::js::{self, Env, Value};

/// One call's work.
pub trait Job: Send + Sized + 'static {
  type Output: Send + 'static;
  /// The async resource name that diagnostics (async_hooks) show for this work.
  const NAME: &'static str;

  /// The work itself; runs on any thread and touches no JavaScript value.
  fn compute(&mut self) -> Result<Self::Output, Failure>;

  /// Turns the output into the call's result, on the JavaScript thread.
  unsafe fn deliver(&mut self, env: Env, output: Self::Output) -> Result<Value, Failure>;

  /// Makes the job independent of the current call before it is queued: inputs become owned
  /// memory, JavaScript values it holds become references.
  unsafe fn detach(&mut self, env: Env) -> Result<(), Failure>;

  /// Releases what `detach` took, on the JavaScript thread, whatever the outcome.
  unsafe fn release(&mut self, _env: Env) {}

  /// How long the work should take, in µs, if it is small enough to consider running inline
  /// (see [`run_async`]); `None`, the default, if it is not.
  fn estimated_micros(&self) -> Option<f64> {
    None
  }
}

fn compute_catching_panics<J: Job>(job: &mut J) -> Result<J::Output, Failure> {
  catch_unwind(AssertUnwindSafe(|| job.compute())).unwrap_or(Err(Failure::Panicked))
}

/// Runs the job on the calling thread and returns its result.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn run_sync<J: Job>(env: Env, mut job: J) -> Result<Value, Failure> {
  let output = compute_catching_panics(&mut job)?;
  unsafe { job.deliver(env, output) }
}

/// Async calls whose work is estimated under this may run inline: see [`run_inline_if_small`].
pub const MAX_INLINE_MICROS: f64 = 50.0;

/// Runs a small job on the calling thread, if the inline budget allows, and returns its result;
/// hands the job back otherwise.
///
/// A trip through the libuv threadpool (queue, wake a thread, complete on the loop) costs about
/// 35 µs with one call in flight, several times the work of compressing 1 KiB. So a small call
/// runs inline and its Promise settles at once, unless the caller is issuing calls in a burst
/// and the call is not tiny (such calls spread over the threadpool better), or inline work has
/// used its share of this turn of the event loop: an `await` loop of inline calls never lets
/// the loop turn, so past that share calls take the threadpool, which yields.
unsafe fn run_inline_if_small<J: Job>(env: Env, job: J) -> Result<Result<Value, Failure>, J> {
  let Some(micros) = job.estimated_micros().filter(|&micros| micros <= MAX_INLINE_MICROS) else {
    return Err(job);
  };
  let Ok(state) = (unsafe { env_state::of(env) }) else {
    return Err(job);
  };
  if !state.inline.allows(micros) {
    return Err(job);
  }
  let started = Instant::now();
  let settled = unsafe { run_sync(env, job) };
  state.inline.charge(started.elapsed());
  unsafe { state.await_checkpoint(env) };
  Ok(settled)
}

/// Resolves or rejects the call's Promise with its result.
unsafe fn settle(env: Env, deferred: sys::napi_deferred, result: Result<Value, Failure>) {
  unsafe {
    match result {
      Ok(value) => {
        sys::napi_resolve_deferred(env, deferred, value);
      }
      Err(failure) => reject(env, deferred, &failure, None),
    }
  }
}

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const ABORTED: u8 = 2;

struct AsyncWork<J: Job> {
  job: J,
  result: Option<Result<J::Output, Failure>>,
  /// Null once the promise is settled (by the completion, or early by an abort).
  deferred: sys::napi_deferred,
  work: sys::napi_async_work,
  /// QUEUED until a libuv thread starts the work, or ABORTED if the signal fired first.
  state: AtomicU8,
  abort: Option<AbortListener>,
}

/// The `abort` listener on the caller's signal, removed when the work completes so that a
/// long-lived signal does not collect one listener per call.
struct AbortListener {
  signal: sys::napi_ref,
  listener: sys::napi_ref,
}

/// Returns a Promise of the job's result: settled at once if the job is small enough to run
/// inline (see [`run_inline_if_small`]), else when the libuv threadpool has run it.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that built `job`.
pub unsafe fn run_async<J: Job>(env: Env, job: J, signal: Option<Value>) -> Result<Value, Failure> {
  let mut promise = ptr::null_mut();
  let mut deferred = ptr::null_mut();
  if unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) } != sys::Status::napi_ok {
    return Err(Failure::Napi("napi_create_promise"));
  }
  if let Some(signal) = signal {
    if unsafe { js::boolean(env, js::named_property(env, signal, c"aborted")?)? } {
      unsafe { reject(env, deferred, &Failure::Aborted, Some(signal)) };
      return Ok(promise);
    }
  }
  let mut job = match unsafe { run_inline_if_small(env, job) } {
    Ok(settled) => {
      unsafe { settle(env, deferred, settled) };
      return Ok(promise);
    }
    Err(job) => job,
  };
  if let Err(failure) = unsafe { job.detach(env) } {
    unsafe {
      job.release(env);
      reject(env, deferred, &failure, None);
    }
    return Ok(promise);
  }

  let name = match unsafe { js::string(env, J::NAME) } {
    Ok(name) => name,
    Err(failure) => {
      unsafe {
        job.release(env);
        reject(env, deferred, &failure, None);
      }
      return Ok(promise);
    }
  };
  let work = Box::into_raw(Box::new(AsyncWork {
    job,
    result: None,
    deferred,
    work: ptr::null_mut(),
    state: AtomicU8::new(QUEUED),
    abort: None,
  }));
  let queued = unsafe {
    sys::napi_create_async_work(
      env,
      ptr::null_mut(),
      name,
      Some(execute::<J>),
      Some(complete::<J>),
      work.cast(),
      &mut (*work).work,
    ) == sys::Status::napi_ok
      && sys::napi_queue_async_work(env, (*work).work) == sys::Status::napi_ok
  };
  if !queued {
    let mut work = unsafe { Box::from_raw(work) };
    unsafe {
      if !work.work.is_null() {
        sys::napi_delete_async_work(env, work.work);
      }
      work.job.release(env);
      reject(env, work.deferred, &Failure::Napi("napi_queue_async_work"), None);
    }
    return Ok(promise);
  }
  if let Some(signal) = signal {
    // If listening fails the call still completes; it just cannot be aborted.
    if let Ok(listener) = unsafe { listen_for_abort::<J>(env, signal, work) } {
      unsafe { (*work).abort = Some(listener) };
    }
  }
  Ok(promise)
}

unsafe extern "C" fn execute<J: Job>(_env: Env, data: *mut c_void) {
  let work = unsafe { &mut *data.cast::<AsyncWork<J>>() };
  if work.state.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok() {
    work.result = Some(compute_catching_panics(&mut work.job));
  }
}

unsafe extern "C" fn complete<J: Job>(env: Env, _status: sys::napi_status, data: *mut c_void) {
  // Only notes the turn in state that exists: this may run while the environment shuts down.
  if let Some(state) = unsafe { env_state::existing(env) } {
    state.inline.loop_turned();
  }
  let mut work = unsafe { Box::from_raw(data.cast::<AsyncWork<J>>()) };
  unsafe {
    if let Some(listener) = work.abort.take() {
      stop_listening(env, listener);
    }
    if !work.deferred.is_null() {
      let deferred = std::mem::replace(&mut work.deferred, ptr::null_mut());
      // No result means the work never ran: it was cancelled, or the environment is
      // shutting down (then settling fails quietly, as there is no one left to tell).
      let settled = match work.result.take() {
        Some(Ok(output)) => work.job.deliver(env, output),
        Some(Err(failure)) => Err(failure),
        None => Err(Failure::Aborted),
      };
      settle(env, deferred, settled);
    }
    work.job.release(env);
    sys::napi_delete_async_work(env, work.work);
  }
}

/// A Promise already rejected with `failure`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn rejected_promise(env: Env, failure: &Failure) -> Result<Value, Failure> {
  let mut promise = ptr::null_mut();
  let mut deferred = ptr::null_mut();
  if unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) } != sys::Status::napi_ok {
    return Err(Failure::Napi("napi_create_promise"));
  }
  unsafe { reject(env, deferred, failure, None) };
  Ok(promise)
}

unsafe fn reject(env: Env, deferred: sys::napi_deferred, failure: &Failure, signal: Option<Value>) {
  unsafe {
    let error = failure.to_js(env);
    if let Some(signal) = signal {
      // Like Node's own AbortErrors, carry the signal's reason as the cause.
      if let Ok(reason) = js::named_property(env, signal, c"reason") {
        sys::napi_set_named_property(env, error, c"cause".as_ptr(), reason);
      }
    }
    sys::napi_reject_deferred(env, deferred, error);
  }
}

unsafe fn listen_for_abort<J: Job>(env: Env, signal: Value, work: *mut AsyncWork<J>) -> Result<AbortListener, Failure> {
  unsafe {
    let mut listener = ptr::null_mut();
    let name = "onZstdAbort";
    if sys::napi_create_function(env, name.as_ptr().cast(), name.len() as isize, Some(on_abort::<J>), work.cast(), &mut listener)
      != sys::Status::napi_ok
    {
      return Err(Failure::Napi("napi_create_function"));
    }
    js::call_method(env, signal, c"addEventListener", &[js::string(env, "abort")?, listener])?;
    let signal_ref = js::reference(env, signal)?;
    match js::reference(env, listener) {
      Ok(listener_ref) => Ok(AbortListener { signal: signal_ref, listener: listener_ref }),
      Err(failure) => {
        js::delete_reference(env, signal_ref);
        Err(failure)
      }
    }
  }
}

unsafe fn stop_listening(env: Env, listener: AbortListener) {
  unsafe {
    if let (Ok(signal), Ok(function), Ok(event)) = (
      js::reference_value(env, listener.signal),
      js::reference_value(env, listener.listener),
      js::string(env, "abort"),
    ) {
      let _ = js::call_method(env, signal, c"removeEventListener", &[event, function]);
    }
    js::delete_reference(env, listener.signal);
    js::delete_reference(env, listener.listener);
  }
}

/// The signal fired: reject at once. Work still queued is cancelled and never runs; work
/// already running finishes on its thread, and its result is discarded.
unsafe extern "C" fn on_abort<J: Job>(env: Env, info: sys::napi_callback_info) -> Value {
  unsafe {
    let mut data = ptr::null_mut();
    let mut this = ptr::null_mut();
    let mut argc = 0usize;
    sys::napi_get_cb_info(env, info, &mut argc, ptr::null_mut(), &mut this, &mut data);
    // The listener is removed before its work is freed, and both happen on this thread, so
    // `data` still points at live work whenever the listener runs.
    let work = &mut *data.cast::<AsyncWork<J>>();
    if !work.deferred.is_null() {
      if work.state.compare_exchange(QUEUED, ABORTED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        sys::napi_cancel_async_work(env, work.work);
      }
      let deferred = std::mem::replace(&mut work.deferred, ptr::null_mut());
      let signal = work.abort.as_ref().and_then(|listener| js::reference_value(env, listener.signal).ok());
      reject(env, deferred, &Failure::Aborted, signal);
    }
    js::undefined(env)
  }
}
