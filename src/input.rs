//! Turning the `data` argument into bytes: a Buffer, any TypedArray, a DataView, an
//! ArrayBuffer, or a string (encoded as UTF-8).

use std::ptr;

use napi::sys;

use crate::error::Failure;
use crate::js::{self, Env, Value};

/// The bytes of the `data` argument.
pub enum Input {
  /// JavaScript memory, valid only until the current call returns: sync calls read it in
  /// place, since no JavaScript runs while they work.
  Borrowed { data: *const u8, len: usize },
  /// Memory of our own. Async calls copy their input here before the call returns, because
  /// while the work runs the caller may mutate, transfer or detach the ArrayBuffer, or let it
  /// be collected; a reference to it would not keep its memory alive through a transfer.
  Owned(Vec<u8>),
}

// SAFETY: a Borrowed input is only read on the JavaScript thread during the call that made
// it; only Owned inputs reach other threads (see `Input::own`).
unsafe impl Send for Input {}

impl Input {
  pub fn as_slice(&self) -> &[u8] {
    match self {
      Input::Borrowed { len: 0, .. } => &[],
      Input::Borrowed { data, len } => unsafe { std::slice::from_raw_parts(*data, *len) },
      Input::Owned(bytes) => bytes,
    }
  }

  /// Makes the input memory of our own, copying it if it is JavaScript memory.
  pub fn own(&mut self) -> Result<(), Failure> {
    if let Input::Borrowed { .. } = self {
      let bytes = self.as_slice();
      let mut copy = Vec::new();
      copy.try_reserve_exact(bytes.len()).map_err(|_| Failure::OutOfMemory { bytes: bytes.len() })?;
      copy.extend_from_slice(bytes);
      *self = Input::Owned(copy);
    }
    Ok(())
  }
}

const EXPECTED: &str = "of type string or an instance of Buffer, TypedArray, DataView, or ArrayBuffer";

/// Reads `value` as the bytes to work on, or fails with a `TypeError`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `value`.
pub unsafe fn read_input(env: Env, value: Value) -> Result<Input, Failure> {
  unsafe {
    let mut data: *mut std::ffi::c_void = ptr::null_mut();
    let mut len = 0usize;
    let mut is = false;

    sys::napi_is_typedarray(env, value, &mut is);
    if is {
      let mut kind = 0;
      let mut elements = 0usize;
      let status = sys::napi_get_typedarray_info(
        env,
        value,
        &mut kind,
        &mut elements,
        &mut data,
        ptr::null_mut(),
        ptr::null_mut(),
      );
      if status != sys::Status::napi_ok {
        return Err(Failure::Napi("napi_get_typedarray_info"));
      }
      len = elements * element_size(kind);
      return Ok(borrowed(data, len));
    }

    sys::napi_is_dataview(env, value, &mut is);
    if is {
      let status = sys::napi_get_dataview_info(env, value, &mut len, &mut data, ptr::null_mut(), ptr::null_mut());
      if status != sys::Status::napi_ok {
        return Err(Failure::Napi("napi_get_dataview_info"));
      }
      return Ok(borrowed(data, len));
    }

    sys::napi_is_arraybuffer(env, value, &mut is);
    if is {
      if sys::napi_get_arraybuffer_info(env, value, &mut data, &mut len) != sys::Status::napi_ok {
        return Err(Failure::Napi("napi_get_arraybuffer_info"));
      }
      return Ok(borrowed(data, len));
    }

    if js::type_of(env, value)? == sys::ValueType::napi_string {
      return read_string(env, value);
    }
    // A SharedArrayBuffer passes none of the checks above and lands here too.
    Err(Failure::InvalidType { name: "data", expected: EXPECTED, received: js::describe(env, value) })
  }
}

/// Reads an array of inputs (`trainDictionary`'s samples), or fails with a `TypeError`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `value`.
pub unsafe fn read_inputs(env: Env, value: Value) -> Result<Vec<Input>, Failure> {
  let mut is_array = false;
  unsafe { sys::napi_is_array(env, value, &mut is_array) };
  if !is_array {
    return Err(Failure::InvalidType { name: "samples", expected: "an array", received: unsafe { js::describe(env, value) } });
  }
  let mut len = 0u32;
  unsafe { sys::napi_get_array_length(env, value, &mut len) };
  (0..len)
    .map(|index| {
      let mut element = ptr::null_mut();
      if unsafe { sys::napi_get_element(env, value, index, &mut element) } != sys::Status::napi_ok {
        return Err(Failure::Napi("napi_get_element"));
      }
      unsafe { read_input(env, element) }.map_err(|failure| match failure {
        Failure::InvalidType { received, .. } => Failure::InvalidType { name: "samples[i]", expected: EXPECTED, received },
        other => other,
      })
    })
    .collect()
}

fn borrowed(data: *mut std::ffi::c_void, len: usize) -> Input {
  // A detached ArrayBuffer reports a null pointer; it reads as empty.
  if data.is_null() {
    return Input::Borrowed { data: ptr::null(), len: 0 };
  }
  Input::Borrowed { data: data.cast_const().cast(), len }
}

unsafe fn read_string(env: Env, value: Value) -> Result<Input, Failure> {
  let mut len = 0usize;
  if unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) } != sys::Status::napi_ok {
    return Err(Failure::Napi("napi_get_value_string_utf8"));
  }
  // napi writes a terminating NUL, so it needs one byte more than the text.
  let mut bytes: Vec<u8> = Vec::new();
  bytes.try_reserve_exact(len + 1).map_err(|_| Failure::OutOfMemory { bytes: len + 1 })?;
  let mut written = 0usize;
  let status = unsafe {
    sys::napi_get_value_string_utf8(env, value, bytes.as_mut_ptr().cast(), len + 1, &mut written)
  };
  if status != sys::Status::napi_ok {
    return Err(Failure::Napi("napi_get_value_string_utf8"));
  }
  unsafe { bytes.set_len(written) };
  Ok(Input::Owned(bytes))
}

fn element_size(kind: sys::napi_typedarray_type) -> usize {
  use sys::TypedarrayType as T;
  match kind {
    T::int8_array | T::uint8_array | T::uint8_clamped_array => 1,
    T::int16_array | T::uint16_array => 2,
    T::int32_array | T::uint32_array | T::float32_array => 4,
    T::float64_array | T::bigint64_array | T::biguint64_array => 8,
    _ => 2, // Float16Array, the only other kind Node-API may report
  }
}
