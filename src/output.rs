//! Where result Buffers come from: small results are carved from a shared slab, as Node's own
//! `Buffer.allocUnsafe` does, because a fresh ArrayBuffer per result costs more than
//! compressing a kilobyte; larger results get a Buffer of their own.

use std::ffi::c_void;
use std::ptr;

use napi::sys;

use crate::env_state::{self, EnvState};
use crate::error::Failure;
use crate::js::{self, Env, Value};

/// Node's `Buffer.poolSize`: results smaller than half a slab share one, so that, as with
/// `Buffer.allocUnsafe`, a result kept alive keeps at most one such slab alive with it.
const SLAB_SIZE: usize = 8 * 1024;
const SHARED_BELOW: usize = SLAB_SIZE / 2;

/// Whether native code can write a Buffer's memory directly. Under WASI (emnapi), a Buffer's
/// memory lives outside the module's, and what the module writes through a pointer does not
/// reach it; results are copied in whole instead.
const WRITABLE_IN_PLACE: bool = !cfg!(target_family = "wasm");

/// A new Buffer of `len` bytes, uninitialised, and a pointer to its memory. Write it before any
/// JavaScript runs: a shared slab is reachable from earlier results.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn new_buffer(env: Env, len: usize) -> Result<Option<(Value, *mut u8)>, Failure> {
  if !WRITABLE_IN_PLACE {
    return Ok(None);
  }
  if len < SHARED_BELOW {
    if let Ok(carved) = unsafe { carve(env, len) } {
      return Ok(Some(carved));
    }
  }
  unsafe { js::buffer_uninit(env, len) }.map(Some)
}

/// A Buffer of `len` bytes that no JavaScript can reach until it is returned, for a libuv thread
/// to write while JavaScript runs; `None` for small sizes, which are cheaper decoded natively and
/// copied into a shared slab when done.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn new_private_buffer(env: Env, len: usize) -> Result<Option<(Value, *mut u8)>, Failure> {
  if !WRITABLE_IN_PLACE || len < SHARED_BELOW {
    return Ok(None);
  }
  unsafe { js::buffer_uninit(env, len) }.map(Some)
}

/// A new Buffer holding a copy of `bytes`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`.
pub unsafe fn copy_to_buffer(env: Env, bytes: &[u8]) -> Result<Value, Failure> {
  if WRITABLE_IN_PLACE && bytes.len() < SHARED_BELOW {
    if let Ok((buffer, data)) = unsafe { carve(env, bytes.len()) } {
      unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
      return Ok(buffer);
    }
  }
  unsafe { js::buffer_copy(env, bytes) }
}

/// A view of `len` bytes of the current slab, starting a new slab when it is full or when
/// JavaScript detached it (by transferring some earlier result's ArrayBuffer).
unsafe fn carve(env: Env, len: usize) -> Result<(Value, *mut u8), Failure> {
  unsafe {
    let state = env_state::of(env)?;
    let mut array_buffer = ptr::null_mut();
    let mut data: *mut c_void = ptr::null_mut();
    let mut capacity = 0usize;
    if !state.slab.is_null() {
      array_buffer = js::reference_value(env, state.slab)?;
      sys::napi_get_arraybuffer_info(env, array_buffer, &mut data, &mut capacity);
    }
    if data.is_null() || capacity != SLAB_SIZE || SLAB_SIZE - state.slab_used < len {
      (array_buffer, data) = new_slab(env, state)?;
      let reference = js::reference(env, array_buffer)?;
      js::delete_reference(env, std::mem::replace(&mut state.slab, reference));
      state.slab_used = 0;
    }
    let offset = state.slab_used;
    // Keep views 8-byte aligned, as Node's pool does.
    state.slab_used = (offset + len + 7) & !7;
    let mut args = [array_buffer, ptr::null_mut(), ptr::null_mut()];
    sys::napi_create_uint32(env, offset as u32, &mut args[1]);
    sys::napi_create_uint32(env, len as u32, &mut args[2]);
    let buffer_from = js::reference_value(env, state.buffer_from)?;
    let mut view = ptr::null_mut();
    if sys::napi_call_function(env, js::undefined(env), buffer_from, 3, args.as_ptr(), &mut view) != sys::Status::napi_ok {
      return Err(Failure::Napi("Buffer.from"));
    }
    Ok((view, data.cast::<u8>().add(offset)))
  }
}

/// A new slab, which (as Node does for its own Buffer pool) cannot be transferred to another
/// thread: that would detach it, emptying every result that shares it.
unsafe fn new_slab(env: Env, state: &EnvState) -> Result<(Value, *mut c_void), Failure> {
  unsafe {
    let mut array_buffer = ptr::null_mut();
    let mut data = ptr::null_mut();
    if sys::napi_create_arraybuffer(env, SLAB_SIZE, &mut data, &mut array_buffer) != sys::Status::napi_ok {
      return Err(Failure::OutOfMemory { bytes: SLAB_SIZE });
    }
    if !state.mark_as_untransferable.is_null() {
      let mark = js::reference_value(env, state.mark_as_untransferable)?;
      let mut ignored = ptr::null_mut();
      sys::napi_call_function(env, js::undefined(env), mark, 1, &array_buffer, &mut ignored);
    }
    Ok((array_buffer, data))
  }
}
