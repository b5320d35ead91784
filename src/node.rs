//! The Node-API calls made by hand, where napi-rs's typed layer would cost measurably more or
//! cannot say what is needed. Everything else in the crate uses typed napi-rs arguments.
//!
//! Three things live here:
//! - **Result Buffers**: copies of native bytes, Buffers filled natively before any JavaScript
//!   can see them, and the caller's slab (small results share one `ArrayBuffer`, carved by
//!   `main.js`);
//! - **work on the libuv threadpool**: its Promise, its lifecycle and its cancellation;
//! - **errors**: a [`Failure`] thrown or rejected as the JavaScript error it stands for.
//!
//! What the code here may assume, and what it guarantees:
//! - Every function runs on the JavaScript thread that owns `env`, except [`execute`], which
//!   runs on a libuv thread and touches no JavaScript value.
//! - These Node-API calls can run JavaScript (user code, which may resize, detach or transfer
//!   any buffer it can reach, and call back into this addon): creating a Promise or async work
//!   (`async_hooks` init hooks), and creating an error (V8 reads `Error.stackTraceLimit`, which
//!   can be a getter). No pointer into memory that JavaScript can reach is held across them:
//!   queued work owns its input before [`queue`] is called, and writes only native memory,
//!   copied into a Buffer on completion. (No JavaScript object is ever truly unreachable:
//!   `node:inspector` can find any, so off-thread work never writes a Buffer.)
//! - The other calls made here (buffer creation and inspection, references, numbers) run no
//!   JavaScript; allocating may collect garbage, which runs no JavaScript either (finalizers
//!   are deferred) and moves no `ArrayBuffer` memory.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Env, ValueType};
use napi_derive::napi;
use zstd::zstd_safe::WriteBuf;

use crate::error::{ErrorClass, Failure};

/// Whether native code can write a Buffer's memory in place. Under WASI (emnapi) a Buffer's
/// memory lives outside the module's, and what the module writes through a pointer does not
/// reach it: results are written only into staging areas (see `staging.rs`), or held natively
/// and copied out by `main.js`.
pub const RESULTS_IN_PLACE: bool = !cfg!(target_family = "wasm");

/// A JavaScript value made here, handed to napi-rs as it is.
pub struct Js(sys::napi_value);

impl ToNapiValue for Js {
  unsafe fn to_napi_value(_env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
    Ok(value.0)
  }
}

impl Js {
  pub fn from_raw(value: sys::napi_value) -> Self {
    Self(value)
  }

  pub fn raw(&self) -> sys::napi_value {
    self.0
  }

  pub fn null(env: &Env) -> Result<Self, Failure> {
    let mut result = ptr::null_mut();
    // SAFETY: on the JavaScript thread of `env` (this module's rule); runs no JavaScript.
    let status = unsafe { sys::napi_get_null(env.raw(), &mut result) };
    checked(status, "napi_get_null").map(|()| Self(result))
  }

  pub fn number(env: &Env, value: u32) -> Result<Self, Failure> {
    let mut result = ptr::null_mut();
    // SAFETY: on the JavaScript thread of `env` (this module's rule); runs no JavaScript.
    let status = unsafe { sys::napi_create_uint32(env.raw(), value, &mut result) };
    checked(status, "napi_create_uint32").map(|()| Self(result))
  }
}

fn checked(status: sys::napi_status, call: &'static str) -> Result<(), Failure> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(Failure::Napi(call))
  }
}

/// Runs native work on the calling thread, turning a panic into a [`Failure`] so that it
/// never unwinds into Node.
pub fn guarded<T>(work: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
  catch_unwind(AssertUnwindSafe(work)).unwrap_or(Err(Failure::Panicked))
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The JavaScript error for `failure`: an `Error` or `RangeError` whose `code` names the cause,
/// defined as its own property (so no `code` setter on `Error.prototype` runs). `None` when it
/// could not be made; JavaScript that ran meanwhile may then have left an exception pending.
pub(crate) fn error_value(env: &Env, failure: &Failure) -> Option<sys::napi_value> {
  let shape = failure.shape();
  let mut error = ptr::null_mut();
  let create = match shape.class {
    ErrorClass::Error => sys::napi_create_error,
    ErrorClass::RangeError => sys::napi_create_range_error,
  };
  // A message that could not be made is null, which napi_create_error reports as a status.
  // SAFETY: on the JavaScript thread of `env`; the message is a string made on it, or null.
  let status = unsafe { create(env.raw(), ptr::null_mut(), string(env, &shape.message), &mut error) };
  if status != sys::Status::napi_ok || error.is_null() {
    return None;
  }
  let property = |name: &'static std::ffi::CStr, value: &str| sys::napi_property_descriptor {
    utf8name: name.as_ptr(),
    name: ptr::null_mut(),
    method: None,
    getter: None,
    setter: None,
    value: string(env, value),
    attributes: sys::PropertyAttributes::writable | sys::PropertyAttributes::enumerable | sys::PropertyAttributes::configurable,
    data: ptr::null_mut(),
  };
  let mut properties = vec![property(c"code", shape.code)];
  if matches!(failure, Failure::Aborted) {
    // Node names its AbortErrors so.
    properties.push(property(c"name", "AbortError"));
  }
  // Defining runs no setter.
  // SAFETY: on the JavaScript thread; `error` was just made; names are static, values made here.
  unsafe { sys::napi_define_properties(env.raw(), error, properties.len(), properties.as_ptr()) };
  Some(error)
}

pub(crate) fn string(env: &Env, text: &str) -> sys::napi_value {
  let mut value = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; `text` is UTF-8 of the length given, copied.
  unsafe { sys::napi_create_string_utf8(env.raw(), text.as_ptr().cast(), text.len() as isize, &mut value) };
  value
}

/// Throws `failure` as its JavaScript error and returns what tells napi-rs that an exception is
/// pending (so that it throws nothing else). For `.map_err` at the end of an exported function.
/// If making the error ran JavaScript that threw, that exception is what the call throws.
pub fn throw(env: &Env, failure: Failure) -> napi::Error {
  let pending = napi::Error::new(napi::Status::PendingException, failure.shape().message);
  match error_value(env, &failure) {
    // SAFETY: on the JavaScript thread of `env`; `error` is a value made on it.
    Some(error) if unsafe { sys::napi_throw(env.raw(), error) } == sys::Status::napi_ok => pending,
    _ if exception_pending(env) => pending,
    _ => napi::Error::from_reason(failure.shape().message),
  }
}

fn exception_pending(env: &Env) -> bool {
  let mut pending = false;
  // SAFETY: on the JavaScript thread of `env`; reads a flag.
  unsafe { sys::napi_is_exception_pending(env.raw(), &mut pending) };
  pending
}

// ---------------------------------------------------------------------------------------------
// Result Buffers

/// Memory that native code may write and JavaScript will own, handed to the codecs as an output
/// buffer without claiming it is initialised (Node does not clear new Buffers).
pub struct Uninit<'a> {
  data: NonNull<u8>,
  capacity: usize,
  filled: usize,
  _memory: PhantomData<&'a mut [u8]>,
}

impl Uninit<'_> {
  /// How many bytes from the start have been written.
  pub fn filled(&self) -> usize {
    self.filled
  }

  /// Writes `bytes` at the start; the caller made sure they fit (see where the room came from).
  pub fn write(&mut self, bytes: &[u8]) {
    let len = bytes.len().min(self.capacity);
    // `bytes` is native memory, never the room itself.
    // SAFETY: `data` has room for `capacity` bytes (see `WriteBuf` below); `len` is at most that.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.data.as_ptr(), len) };
    self.filled = len;
  }
}

// SAFETY: `as_mut_ptr` points at `capacity` bytes that are writable for the borrow's lifetime
// (see where an `Uninit` is made), and `as_slice` covers only what a write reported as filled.
unsafe impl WriteBuf for Uninit<'_> {
  fn as_slice(&self) -> &[u8] {
    // SAFETY: the first `filled` bytes were written (`filled_until`), within `capacity`.
    unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.filled) }
  }
  fn capacity(&self) -> usize {
    self.capacity
  }
  fn as_mut_ptr(&mut self) -> *mut u8 {
    self.data.as_ptr()
  }
  unsafe fn filled_until(&mut self, n: usize) {
    self.filled = n;
  }
}

/// A new Buffer holding a copy of `bytes`. Copying into memory Node allocates is faster than
/// handing native memory over with a finalizer, and works where external buffers are
/// forbidden (Electron). The size is that of bytes already produced: earned, never claimed.
pub fn buffer_copy(env: &Env, bytes: &[u8]) -> Result<Js, Failure> {
  let (mut value, data, len) = (ptr::null_mut(), bytes.as_ptr().cast(), bytes.len());
  // SAFETY: on the JavaScript thread of `env`; `bytes` is readable; no JavaScript runs meanwhile.
  let status = unsafe { sys::napi_create_buffer_copy(env.raw(), len, data, ptr::null_mut(), &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: bytes.len() });
  }
  Ok(Js(value))
}

/// Results at least this large are allocated by JavaScript (see [`result_bytes`]).
pub const JS_ALLOCATES_FROM: usize = 64 << 20;

/// `bytes`, produced natively, as the call's result: a Buffer holding a copy, or, from
/// [`JS_ALLOCATES_FROM`] on, a [`NativeBytes`] that `main.js` moves into a Buffer it allocates
/// itself. Node 20 and 22 abort the process when native code cannot get a Buffer; allocating
/// in JavaScript throws a `RangeError` instead, and large allocations are the ones that fail.
pub fn result_bytes(env: &Env, bytes: Vec<u8>) -> Result<Js, Failure> {
  if bytes.len() < JS_ALLOCATES_FROM && RESULTS_IN_PLACE {
    return buffer_copy(env, &bytes);
  }
  let native = NativeBytes { bytes: Mutex::new(bytes) };
  // SAFETY: on the JavaScript thread of `env`; makes an instance without calling its constructor.
  unsafe { NativeBytes::to_napi_value(env.raw(), native) }.map(Js).map_err(|_| Failure::Napi("NativeBytes"))
}

/// A large result in native memory, waiting for `main.js` to move it into a Buffer; under WASI,
/// every result that is not written into a staging area (`main.js` copies it out through
/// `view`, which needs no `Buffer` in the runtime, and then calls `release`).
#[napi]
pub struct NativeBytes {
  bytes: Mutex<Vec<u8>>,
}

#[napi]
impl NativeBytes {
  #[napi(getter)]
  pub fn length(&self) -> f64 {
    self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len() as f64
  }

  /// Copies the bytes into `target`, a Buffer as long as they are, and frees them.
  #[napi(ts_args_type = "target: Buffer")]
  pub fn move_into(&self, mut target: Target) -> bool {
    let bytes = std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    if target.len != bytes.len() {
      return false;
    }
    let Some(mut room) = target.room(0, bytes.len(), &bytes) else {
      return false;
    };
    room.write(&bytes);
    true
  }

  /// Under WASI, a `Uint8Array` over the bytes, in the module's memory, valid until `release`
  /// (the caller copies it out and drops it); `null` in native builds.
  #[napi(ts_return_type = "Uint8Array | null")]
  pub fn view(&self, env: Env) -> napi::Result<Js> {
    #[cfg(target_family = "wasm")]
    let view = crate::staging::view(&env, &self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    #[cfg(not(target_family = "wasm"))]
    let view = Js::null(&env);
    view.map_err(|failure| throw(&env, failure))
  }

  /// Frees the bytes.
  #[napi]
  pub fn release(&self) {
    drop(std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())));
  }
}

/// A new Buffer of `len` bytes, written by `fill` before any JavaScript can see it: the result
/// Buffer is decoded into in place, with no copy. `len` must be earned by the input (bounded by
/// it and by a fixed cap): Node 20 and 22 abort the process when this allocation fails.
pub fn filled_buffer(env: &Env, len: usize, fill: impl FnOnce(&mut Uninit<'_>) -> Result<(), Failure>) -> Result<Js, Failure> {
  if !RESULTS_IN_PLACE {
    let mut bytes = try_vec(len)?;
    bytes.resize(len, 0);
    let mut output = Uninit { data: NonNull::from(&mut bytes[..]).cast(), capacity: len, filled: 0, _memory: PhantomData };
    fill(&mut output)?;
    let filled = output.filled();
    bytes.truncate(filled);
    return result_bytes(env, bytes);
  }
  let mut data = ptr::null_mut();
  let mut value = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; allocates a Buffer, runs no JavaScript.
  let status = unsafe { sys::napi_create_buffer(env.raw(), len, &mut data, &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: len });
  }
  let mut output = Uninit {
    data: NonNull::new(data.cast()).unwrap_or(NonNull::dangling()),
    capacity: if data.is_null() { 0 } else { len },
    filled: 0,
    _memory: PhantomData,
  };
  // `output` is the new Buffer's memory: no JavaScript has seen `value` yet, and none runs
  // before `fill` returns (the codecs call none), so nothing else can touch it meanwhile.
  fill(&mut output)?;
  Ok(Js(value))
}

/// A vector with room for exactly `len` bytes, or a coded failure instead of an abort.
pub fn try_vec(len: usize) -> Result<Vec<u8>, Failure> {
  let mut bytes = Vec::new();
  bytes.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  Ok(bytes)
}

/// A Buffer that `main.js` hands native code to write a result into: the slab it keeps for
/// small results (written past the offset it gives, then carved into a view), or the Buffer a
/// large result is moved into. Read as raw memory, not a Rust slice: other arguments (the input)
/// may be views of the same `ArrayBuffer`.
pub struct Target {
  data: *mut u8,
  len: usize,
}

impl FromNapiValue for Target {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let (mut kind, mut len, mut data) = (0, 0, ptr::null_mut());
    let (buffer, offset) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: napi-rs calls this on the JavaScript thread; reading the layout runs no JavaScript.
    let status = unsafe { sys::napi_get_typedarray_info(env, value, &mut kind, &mut len, &mut data, buffer, offset) };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
      return Err(napi::Error::new(napi::Status::InvalidArg, "the target must be a Buffer"));
    }
    Ok(Self { data: data.cast(), len: if data.is_null() { 0 } else { len } })
  }
}

impl TypeName for Target {
  fn type_name() -> &'static str {
    "Buffer"
  }
  fn value_type() -> ValueType {
    ValueType::Object
  }
}

impl ValidateNapiValue for Target {}

impl Target {
  /// The `len` bytes at `data`, which the caller keeps valid as for any target.
  #[cfg(target_family = "wasm")]
  pub fn from_raw(data: *mut u8, len: usize) -> Self {
    Self { data, len }
  }

  /// `len` bytes of the target from `offset` on, to write a result into, if it has that much
  /// room there and it does not overlap `input`.
  ///
  /// The memory stays valid until the native call that received the target returns (`main.js`
  /// holds it for the call), as long as no JavaScript runs meanwhile: the callers write it and
  /// return, running none.
  pub fn room(&mut self, offset: u32, len: usize, input: &[u8]) -> Option<Uninit<'_>> {
    if self.data.is_null() {
      return None;
    }
    let offset = offset as usize;
    if len > self.len.checked_sub(offset)? {
      return None;
    }
    // SAFETY: `offset <= self.len`, and `self.data` points at the target's `self.len` bytes.
    let start = unsafe { self.data.add(offset) };
    #[cfg(target_family = "wasm")]
    if !crate::staging::contains(start as usize, len) {
      return None;
    }
    let (input_start, input_end) = (input.as_ptr() as usize, input.as_ptr() as usize + input.len());
    if (start as usize) < input_end && input_start < start as usize + len {
      return None;
    }
    Some(Uninit { data: NonNull::new(start)?, capacity: len, filled: 0, _memory: PhantomData })
  }
}

// ---------------------------------------------------------------------------------------------
// Work on the libuv threadpool

/// One call's work for the libuv threadpool. It owns everything it reads (inputs copied into
/// native memory, dictionaries by `Arc`), so the caller may do anything to its buffers, and
/// JavaScript may run, while it waits and runs.
pub trait Job: Send + 'static {
  type Output: Send + 'static;
  /// The async resource name that diagnostics (`async_hooks`) show for this work.
  const NAME: &'static str;

  /// The work itself; runs on a libuv thread and touches no JavaScript value.
  fn compute(&mut self) -> Result<Self::Output, Failure>;

  /// `compute`, for work that can stop part way: `stop` turns true when the call is cancelled
  /// while the work runs (work of many items checks it between items).
  fn compute_until(&mut self, stop: &AtomicBool) -> Result<Self::Output, Failure> {
    let _ = stop;
    self.compute()
  }

  /// Turns the output into the call's result, on the JavaScript thread.
  fn resolve(self, env: &Env, output: Self::Output) -> Result<Js, Failure>;
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
  let state =
    Arc::new(WorkState { phase: AtomicU8::new(QUEUED), handle: AtomicPtr::new(ptr::null_mut()), stop: AtomicBool::new(false) });
  Ok((Js(promise), Box::new(Work { job, result: None, deferred, state })))
}

impl<J: Job> Work<J> {
  /// Runs the job unless it was cancelled first; on a libuv thread.
  pub(crate) fn execute(&mut self) {
    if self.state.phase.compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok() {
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
    let settled = match result {
      Some(Ok(output)) => job.resolve(env, output),
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
  let raw_env = env.raw();
  let (promise, work) = promised(env, job)?;
  let state = work.state.clone();
  let work = Box::into_raw(work);
  let mut handle = ptr::null_mut();
  // From here libuv's callbacks own `work`: `execute` borrows it, `complete` frees it. Can run
  // JavaScript (an init hook), as above.
  // SAFETY: on the JavaScript thread of `env`; `work` is a live Box, handed over once.
  let mut status = unsafe {
    sys::napi_create_async_work(
      raw_env,
      ptr::null_mut(),
      string(env, J::NAME),
      Some(execute::<J>),
      Some(complete::<J>),
      work.cast(),
      &mut handle,
    )
  };
  if status == sys::Status::napi_ok {
    state.handle.store(handle, Ordering::Release);
    // Attached before the work is queued, so that a libuv thread cannot start it first when the
    // signal was aborted meanwhile (by JavaScript that ran above).
    if let Some(cancellation) = cancellation {
      cancellation.attach(state.clone());
    }
    // SAFETY: on the JavaScript thread; `handle` was just created.
    status = unsafe { sys::napi_queue_async_work(raw_env, handle) };
  }
  if status != sys::Status::napi_ok {
    // Never queued: the callbacks will not run, so the work is ours to free, and a cancellation
    // must not reach for its handle.
    state.handle.store(ptr::null_mut(), Ordering::Release);
    if !handle.is_null() {
      // SAFETY: on the JavaScript thread; the handle was created and never queued.
      unsafe { sys::napi_delete_async_work(raw_env, handle) };
    }
    // SAFETY: `work` came from Box::into_raw above and no callback will see it.
    let work = unsafe { Box::from_raw(work) };
    work.fail(env, Failure::Napi("napi_queue_async_work"));
  }
  Ok(promise)
}

unsafe extern "C" fn execute<J: Job>(_env: sys::napi_env, data: *mut c_void) {
  // `complete` frees it only after this returns; the JavaScript thread touches only `state`.
  // SAFETY: `data` is the `Work<J>` that `queue` gave libuv, borrowed by nothing else meanwhile.
  let work = unsafe { &mut *data.cast::<Work<J>>() };
  work.execute();
}

unsafe extern "C" fn complete<J: Job>(env: sys::napi_env, _status: sys::napi_status, data: *mut c_void) {
  // libuv calls this once per work, on the JavaScript thread, after `execute` (or instead of it).
  // SAFETY: the `Work<J>` from `queue`, handed back once: ours to free.
  let work = unsafe { Box::from_raw(data.cast::<Work<J>>()) };
  // Taken first: from here, `cancel()` does nothing, since the handle is about to be deleted.
  let handle = work.state.handle.swap(ptr::null_mut(), Ordering::AcqRel);
  let env = Env::from_raw(env);
  work.complete(&env);
  // SAFETY: on the JavaScript thread; the handle is deleted once, here, after its callbacks ran.
  unsafe { sys::napi_delete_async_work(env.raw(), handle) };
}

/// Settles the call's Promise, whatever happens: a Node-API call that failed on the way (Node 24
/// and later leave an exception pending when a Buffer cannot be allocated) or JavaScript that
/// threw while the error was made rejects it with that exception, which would otherwise be
/// thrown as uncaught and leave the Promise pending, since Node settles nothing while an
/// exception is pending.
fn settle(env: &Env, deferred: sys::napi_deferred, result: Result<Js, Failure>) {
  let failure = match result {
    Ok(value) if !exception_pending(env) => {
      // Reactions run later, as microtasks; but resolving reads the value's `then`, which can be
      // a getter. One that throws rejects this Promise with its error, and Node 20 leaves that
      // error pending too: cleared, so that it is not taken for the next call's (which settles
      // next when many settle together) or reported as uncaught.
      // SAFETY: on the JavaScript thread; `deferred` is settled once (this frees it).
      unsafe { sys::napi_resolve_deferred(env.raw(), deferred, value.0) };
      take_exception(env);
      return;
    }
    Ok(_) => Failure::Napi("napi_resolve_deferred"),
    Err(failure) => failure,
  };
  let error = take_exception(env)
    .or_else(|| error_value(env, &failure))
    .or_else(|| take_exception(env))
    .unwrap_or_else(|| string(env, &failure.shape().message));
  // SAFETY: as above; no exception is pending (any was taken just above).
  unsafe { sys::napi_reject_deferred(env.raw(), deferred, error) };
}

/// Whether JavaScript can run on `env`'s thread now: not while its environment is torn down.
/// Calls a native function that does nothing, through `napi_call_function`, which checks that
/// first (and runs no JavaScript).
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
