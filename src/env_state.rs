//! What each JavaScript environment (the main thread, each worker) keeps between calls, as
//! Node-API instance data: the slab small results are carved from, and the inline-call budget.

use std::ffi::c_void;
use std::ptr;
use std::time::{Duration, Instant};

use napi::sys;

use crate::error::Failure;
use crate::js::{self, Env, Value};

pub struct EnvState {
  /// The current output slab (an ArrayBuffer), and how much of it results already use.
  pub slab: sys::napi_ref,
  pub slab_used: usize,
  /// `Buffer.from`, to make a Buffer view of a slab.
  pub buffer_from: sys::napi_ref,
  /// `worker_threads.markAsUntransferable`, null where Node lacks `process.getBuiltinModule`.
  pub mark_as_untransferable: sys::napi_ref,
  /// `queueMicrotask`, and a native function it calls back to note a microtask checkpoint.
  queue_microtask: sys::napi_ref,
  checkpoint_marker: sys::napi_ref,
  pub inline: InlineBudget,
}

/// Bookkeeping for the calls that run inline (see `task::run_async`).
#[derive(Default)]
pub struct InlineBudget {
  /// When the current accounting window began, and the inline time spent in it.
  window: Option<(Instant, Duration)>,
  /// An inline call settled its Promise and no microtask checkpoint has run since: the caller
  /// is issuing calls in a burst rather than awaiting each one.
  awaiting_checkpoint: bool,
}

/// Inline work allowed before the event loop must turn (or a window must pass).
const MAX_INLINE_SHARE: Duration = Duration::from_micros(250);
const WINDOW: Duration = Duration::from_millis(1);

/// Within a burst, a call goes inline only if its work is below what a threadpool trip costs
/// per call when many are in flight (a few µs of the main thread's time each).
const MAX_BURST_INLINE_MICROS: f64 = 12.0;

impl InlineBudget {
  /// Whether a call estimated at `micros` may run inline now.
  pub fn allows(&mut self, micros: f64) -> bool {
    if self.awaiting_checkpoint && micros > MAX_BURST_INLINE_MICROS {
      return false;
    }
    match self.window {
      Some((start, spent)) if start.elapsed() < WINDOW => spent < MAX_INLINE_SHARE,
      _ => {
        self.window = Some((Instant::now(), Duration::ZERO));
        true
      }
    }
  }

  pub fn charge(&mut self, elapsed: Duration) {
    if let Some((start, spent)) = self.window {
      self.window = Some((start, spent + elapsed));
    }
  }

  /// The event loop has turned: timers and I/O had their chance.
  pub fn loop_turned(&mut self) {
    self.window = None;
  }
}

impl EnvState {
  /// Marks that an inline call just settled, and asks for a note at the next microtask
  /// checkpoint: until then, further calls are taken as a burst and go to the threadpool.
  ///
  /// # Safety
  /// Must run on the JavaScript thread that owns `env`.
  pub unsafe fn await_checkpoint(&mut self, env: Env) {
    self.inline.awaiting_checkpoint = true;
    unsafe {
      if let (Ok(queue), Ok(marker)) =
        (js::reference_value(env, self.queue_microtask), js::reference_value(env, self.checkpoint_marker))
      {
        let mut ignored = ptr::null_mut();
        if sys::napi_call_function(env, js::undefined(env), queue, 1, &marker, &mut ignored) != sys::Status::napi_ok {
          self.inline.awaiting_checkpoint = false;
        }
      } else {
        self.inline.awaiting_checkpoint = false;
      }
    }
  }
}

unsafe extern "C" fn on_checkpoint(env: Env, info: sys::napi_callback_info) -> Value {
  unsafe {
    let mut data = ptr::null_mut();
    let mut argc = 0usize;
    sys::napi_get_cb_info(env, info, &mut argc, ptr::null_mut(), ptr::null_mut(), &mut data);
    // `data` is this environment's state, which lives as long as the environment.
    if let Some(state) = data.cast::<EnvState>().as_mut() {
      state.inline.awaiting_checkpoint = false;
    }
    js::undefined(env)
  }
}

/// This environment's state, if it was made already.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn existing(env: Env) -> Option<&'static mut EnvState> {
  let mut data: *mut c_void = ptr::null_mut();
  unsafe {
    sys::napi_get_instance_data(env, &mut data);
    data.cast::<EnvState>().as_mut()
  }
}

/// This environment's state, created on first use.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn of(env: Env) -> Result<&'static mut EnvState, Failure> {
  if let Some(state) = unsafe { existing(env) } {
    return Ok(state);
  }
  unsafe {
    let mut global = ptr::null_mut();
    sys::napi_get_global(env, &mut global);
    let buffer = js::named_property(env, global, c"Buffer")?;
    let state = Box::into_raw(Box::new(EnvState {
      slab: ptr::null_mut(),
      slab_used: 0,
      buffer_from: js::reference(env, js::named_property(env, buffer, c"from")?)?,
      mark_as_untransferable: match js::builtin_module(env, "worker_threads") {
        Ok(Some(worker_threads)) => js::reference(env, js::named_property(env, worker_threads, c"markAsUntransferable")?)?,
        _ => ptr::null_mut(),
      },
      queue_microtask: js::reference(env, js::named_property(env, global, c"queueMicrotask")?)?,
      checkpoint_marker: ptr::null_mut(),
      inline: InlineBudget::default(),
    }));
    let mut marker = ptr::null_mut();
    let name = "zstdPoolCheckpoint";
    sys::napi_create_function(env, name.as_ptr().cast(), name.len() as isize, Some(on_checkpoint), state.cast(), &mut marker);
    (*state).checkpoint_marker = js::reference(env, marker)?;
    if sys::napi_set_instance_data(env, state.cast(), Some(free_state), ptr::null_mut()) != sys::Status::napi_ok {
      drop(Box::from_raw(state));
      return Err(Failure::Napi("napi_set_instance_data"));
    }
    Ok(&mut *state)
  }
}

/// Runs when the environment ends; its references die with it.
unsafe extern "C" fn free_state(_env: Env, data: *mut c_void, _hint: *mut c_void) {
  drop(unsafe { Box::from_raw(data.cast::<EnvState>()) });
}
