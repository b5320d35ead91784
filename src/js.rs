//! Checked wrappers over the few Node-API calls the bindings make by hand.

use std::ffi::CStr;
use std::ptr;

use napi::sys;

use crate::error::Failure;

pub type Env = sys::napi_env;
pub type Value = sys::napi_value;

fn check(status: sys::napi_status, what: &'static str) -> Result<(), Failure> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(Failure::Napi(what))
  }
}

pub unsafe fn type_of(env: Env, value: Value) -> Result<sys::napi_valuetype, Failure> {
  let mut kind = 0;
  check(unsafe { sys::napi_typeof(env, value, &mut kind) }, "napi_typeof")?;
  Ok(kind)
}

pub unsafe fn named_property(env: Env, object: Value, name: &CStr) -> Result<Value, Failure> {
  let mut value = ptr::null_mut();
  check(unsafe { sys::napi_get_named_property(env, object, name.as_ptr(), &mut value) }, "napi_get_named_property")?;
  Ok(value)
}

pub unsafe fn number(env: Env, value: Value) -> Result<f64, Failure> {
  let mut number = 0.0;
  check(unsafe { sys::napi_get_value_double(env, value, &mut number) }, "napi_get_value_double")?;
  Ok(number)
}

pub unsafe fn boolean(env: Env, value: Value) -> Result<bool, Failure> {
  let mut flag = false;
  check(unsafe { sys::napi_get_value_bool(env, value, &mut flag) }, "napi_get_value_bool")?;
  Ok(flag)
}

pub unsafe fn undefined(env: Env) -> Value {
  let mut value = ptr::null_mut();
  unsafe { sys::napi_get_undefined(env, &mut value) };
  value
}

pub unsafe fn string(env: Env, text: &str) -> Result<Value, Failure> {
  let mut value = ptr::null_mut();
  check(
    unsafe { sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value) },
    "napi_create_string_utf8",
  )?;
  Ok(value)
}

/// A new Buffer holding a copy of `bytes`. Copying into a JS-owned buffer is faster than
/// handing over native memory with a finalizer, and works where external buffers are
/// forbidden (Electron).
pub unsafe fn buffer_copy(env: Env, bytes: &[u8]) -> Result<Value, Failure> {
  let mut value = ptr::null_mut();
  let mut data = ptr::null_mut();
  let status = unsafe { sys::napi_create_buffer_copy(env, bytes.len(), bytes.as_ptr().cast(), &mut data, &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: bytes.len() });
  }
  Ok(value)
}

/// A new, uninitialised Buffer of `len` bytes and a pointer to its memory.
pub unsafe fn buffer_uninit(env: Env, len: usize) -> Result<(Value, *mut u8), Failure> {
  let mut value = ptr::null_mut();
  let mut data = ptr::null_mut();
  let status = unsafe { sys::napi_create_buffer(env, len, &mut data, &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: len });
  }
  Ok((value, data.cast()))
}

pub unsafe fn reference(env: Env, value: Value) -> Result<sys::napi_ref, Failure> {
  let mut reference = ptr::null_mut();
  check(unsafe { sys::napi_create_reference(env, value, 1, &mut reference) }, "napi_create_reference")?;
  Ok(reference)
}

pub unsafe fn reference_value(env: Env, reference: sys::napi_ref) -> Result<Value, Failure> {
  let mut value = ptr::null_mut();
  check(unsafe { sys::napi_get_reference_value(env, reference, &mut value) }, "napi_get_reference_value")?;
  if value.is_null() {
    return Err(Failure::Napi("napi_get_reference_value (collected)"));
  }
  Ok(value)
}

pub unsafe fn delete_reference(env: Env, reference: sys::napi_ref) {
  if !reference.is_null() {
    unsafe { sys::napi_delete_reference(env, reference) };
  }
}

pub unsafe fn call_method(env: Env, object: Value, name: &CStr, args: &[Value]) -> Result<Value, Failure> {
  let method = unsafe { named_property(env, object, name)? };
  let mut result = ptr::null_mut();
  check(
    unsafe { sys::napi_call_function(env, object, method, args.len(), args.as_ptr(), &mut result) },
    "napi_call_function",
  )?;
  Ok(result)
}

/// How a wrong value is named in an error message, the way Node's own argument errors do
/// ("Received type number (5)"). Reads no property, so it runs no user code.
pub unsafe fn describe(env: Env, value: Value) -> String {
  let Ok(kind) = (unsafe { type_of(env, value) }) else {
    return "an unknown value".to_owned();
  };
  match kind {
    sys::ValueType::napi_undefined => "undefined".to_owned(),
    sys::ValueType::napi_null => "null".to_owned(),
    sys::ValueType::napi_number => match unsafe { number(env, value) } {
      Ok(n) => format!("type number ({})", format_number(n)),
      Err(_) => "type number".to_owned(),
    },
    sys::ValueType::napi_boolean => match unsafe { boolean(env, value) } {
      Ok(flag) => format!("type boolean ({flag})"),
      Err(_) => "type boolean".to_owned(),
    },
    sys::ValueType::napi_string => "type string".to_owned(),
    sys::ValueType::napi_symbol => "type symbol".to_owned(),
    sys::ValueType::napi_bigint => "type bigint".to_owned(),
    sys::ValueType::napi_function => "function".to_owned(),
    _ => "an object".to_owned(),
  }
}

/// Formats a number as JavaScript prints it (`3`, `2.5`, `NaN`, `Infinity`).
pub fn format_number(n: f64) -> String {
  if n.is_nan() {
    "NaN".to_owned()
  } else if n.is_infinite() {
    if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
  } else if n == n.trunc() && n.abs() < 1e21 {
    format!("{}", n as i128)
  } else {
    format!("{n}")
  }
}

/// `process.getBuiltinModule(name)`, or `None` on a Node without it (before 20.16).
pub unsafe fn builtin_module(env: Env, name: &str) -> Result<Option<Value>, Failure> {
  unsafe {
    let mut global = ptr::null_mut();
    sys::napi_get_global(env, &mut global);
    let process = named_property(env, global, c"process")?;
    if type_of(env, process)? != sys::ValueType::napi_object
      || type_of(env, named_property(env, process, c"getBuiltinModule")?)? != sys::ValueType::napi_function
    {
      return Ok(None);
    }
    Ok(Some(call_method(env, process, c"getBuiltinModule", &[string(env, name)?])?))
  }
}
