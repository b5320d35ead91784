//! Reading and validating levels and option objects, with `TypeError`s and `RangeError`s that
//! say what was expected.

use std::ffi::CStr;
use std::ptr;
use std::sync::Arc;

use napi::sys::ValueType;
use once_cell::sync::OnceCell;

use crate::compress::CompressParams;
use crate::decompress::{Limits, MAX_WINDOW_LOG_MAX, MIN_WINDOW_LOG_MAX};
use crate::dict::Prepared;
use crate::error::Failure;
use crate::js::{self, Env, Value};
use crate::mt;

/// The lowest (fastest) level libzstd accepts.
pub const MIN_LEVEL: i32 = -(1 << 17);
/// The highest (smallest output) level libzstd accepts.
pub const MAX_LEVEL: i32 = 22;
/// The most multi-threaded contexts `configurePool` lets the cache keep.
const MAX_IDLE_MULTITHREADED: usize = 64;

pub struct CompressRequest {
  pub params: CompressParams,
  pub dictionary: Option<Arc<Prepared>>,
  pub signal: Option<Value>,
}

pub struct DecompressRequest {
  pub limits: Limits,
  pub dictionary: Option<Arc<Prepared>>,
  pub signal: Option<Value>,
}

unsafe fn is_absent(env: Env, value: Option<Value>) -> Result<bool, Failure> {
  match value {
    None => Ok(true),
    Some(value) => {
      let kind = unsafe { js::type_of(env, value)? };
      Ok(kind == ValueType::napi_undefined || kind == ValueType::napi_null)
    }
  }
}

unsafe fn expect_object(env: Env, value: Value, name: &'static str, expected: &'static str) -> Result<(), Failure> {
  if unsafe { js::type_of(env, value)? } == ValueType::napi_object {
    Ok(())
  } else {
    Err(Failure::InvalidType { name, expected, received: unsafe { js::describe(env, value) } })
  }
}

/// An optional property, `None` when it is undefined.
unsafe fn property(env: Env, object: Value, key: &CStr) -> Result<Option<Value>, Failure> {
  let value = unsafe { js::named_property(env, object, key)? };
  Ok((unsafe { js::type_of(env, value)? } != ValueType::napi_undefined).then_some(value))
}

/// An integer in `min..=max`: a `TypeError` for a non-number, a `RangeError` otherwise.
unsafe fn integer(env: Env, value: Value, name: &'static str, min: f64, max: f64) -> Result<f64, Failure> {
  if unsafe { js::type_of(env, value)? } != ValueType::napi_number {
    return Err(Failure::InvalidType { name, expected: "of type number", received: unsafe { js::describe(env, value) } });
  }
  let number = unsafe { js::number(env, value)? };
  if number.fract() != 0.0 || !(min..=max).contains(&number) {
    return Err(Failure::OutOfRange {
      name,
      expected: format!("an integer >= {} and <= {}", js::format_number(min), js::format_number(max)),
      received: js::format_number(number),
    });
  }
  Ok(number)
}

unsafe fn level(env: Env, value: Value, name: &'static str) -> Result<i32, Failure> {
  Ok(unsafe { integer(env, value, name, MIN_LEVEL as f64, MAX_LEVEL as f64)? } as i32)
}

unsafe fn signal(env: Env, object: Value) -> Result<Option<Value>, Failure> {
  let Some(signal) = (unsafe { property(env, object, c"signal")? }) else {
    return Ok(None);
  };
  let looks_like_a_signal = unsafe { js::type_of(env, signal)? } == ValueType::napi_object
    && unsafe { js::type_of(env, js::named_property(env, signal, c"aborted")?)? } == ValueType::napi_boolean
    && unsafe { js::type_of(env, js::named_property(env, signal, c"addEventListener")?)? } == ValueType::napi_function;
  if !looks_like_a_signal {
    return Err(Failure::InvalidType {
      name: "options.signal",
      expected: "an instance of AbortSignal",
      received: unsafe { js::describe(env, signal) },
    });
  }
  Ok(Some(signal))
}

/// The `dictionary` option: a `Dictionary` made by this addon.
unsafe fn dictionary(env: Env, object: Value) -> Result<Option<Arc<Prepared>>, Failure> {
  let Some(value) = (unsafe { property(env, object, c"dictionary")? }) else {
    return Ok(None);
  };
  match unsafe { crate::Dictionary::prepared_of(env, value) } {
    Some(prepared) => Ok(Some(prepared)),
    None => Err(Failure::InvalidType {
      name: "options.dictionary",
      expected: "an instance of Dictionary",
      received: unsafe { js::describe(env, value) },
    }),
  }
}

/// The `pledgedSize` option of a compress stream: the total it will be given, recorded in the
/// frame header (the stream fails if the total differs).
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `arg`.
pub unsafe fn read_pledged_size(env: Env, arg: Option<Value>) -> Result<Option<u64>, Failure> {
  if unsafe { is_absent(env, arg)? } {
    return Ok(None);
  }
  let arg = arg.unwrap_or(ptr::null_mut());
  if unsafe { js::type_of(env, arg)? } != ValueType::napi_object {
    return Ok(None);
  }
  match unsafe { property(env, arg, c"pledgedSize")? } {
    None => Ok(None),
    Some(value) => Ok(Some(unsafe { integer(env, value, "options.pledgedSize", 0.0, 9007199254740991.0)? } as u64)),
  }
}

/// Reads `trainDictionary`'s options: `{ size, level }`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `arg`.
pub unsafe fn read_train_options(env: Env, arg: Option<Value>) -> Result<(usize, i32), Failure> {
  // The zstd tool's default dictionary size.
  let mut settings = (112_640, crate::compress::DEFAULT_LEVEL);
  if unsafe { is_absent(env, arg)? } {
    return Ok(settings);
  }
  let arg = arg.unwrap_or(ptr::null_mut());
  unsafe {
    expect_object(env, arg, "options", "an object of training options")?;
    if let Some(value) = property(env, arg, c"size")? {
      settings.0 = integer(env, value, "options.size", 256.0, (1u64 << 30) as f64)? as usize;
    }
    if let Some(value) = property(env, arg, c"level")? {
      settings.1 = level(env, value, "options.level")?;
    }
  }
  Ok(settings)
}

/// Reads the second argument of `compress`/`compressSync`: a level, or `{ level, checksum, signal }`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `arg`.
pub unsafe fn read_compress_options(env: Env, arg: Option<Value>) -> Result<CompressRequest, Failure> {
  let mut request = CompressRequest { params: CompressParams::default(), dictionary: None, signal: None };
  if unsafe { is_absent(env, arg)? } {
    return Ok(request);
  }
  let arg = arg.unwrap_or(ptr::null_mut());
  if unsafe { js::type_of(env, arg)? } == ValueType::napi_number {
    request.params.level = unsafe { level(env, arg, "level")? };
    return Ok(request);
  }
  unsafe {
    expect_object(env, arg, "level", "of type number or an object of compress options")?;
    if let Some(value) = property(env, arg, c"level")? {
      request.params.level = level(env, value, "options.level")?;
    }
    if let Some(value) = property(env, arg, c"checksum")? {
      if js::type_of(env, value)? != ValueType::napi_boolean {
        return Err(Failure::InvalidType {
          name: "options.checksum",
          expected: "of type boolean",
          received: js::describe(env, value),
        });
      }
      request.params.checksum = js::boolean(env, value)?;
    }
    if let Some(value) = property(env, arg, c"workers")? {
      request.params.workers = workers(env, value)?;
    }
    request.dictionary = dictionary(env, arg)?;
    request.signal = signal(env, arg)?;
  }
  Ok(request)
}

/// The `workers` option: libzstd worker threads for large inputs. 1 worker would only move the
/// work off a thread that then waits for it, so 0 and 1 both mean single-threaded. More workers
/// than cores would only take turns on them; libzstd writes the same bytes with any number of
/// workers from 1 up, so the count is capped at the cores without changing the output.
unsafe fn workers(env: Env, value: Value) -> Result<u32, Failure> {
  let most = if mt::available() { mt::max_workers() } else { 256 };
  let requested = unsafe { integer(env, value, "options.workers", 0.0, most as f64)? } as u32;
  if requested < 2 {
    return Ok(0);
  }
  if !mt::available() {
    return Err(Failure::Unsupported("this build of libzstd has no multi-threading (the WASI build)"));
  }
  let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
  Ok(requested.min(cores.max(2)))
}

/// Reads the second argument of `decompress`/`decompressSync`: `{ maxOutputLength, windowLogMax, signal }`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `arg`.
pub unsafe fn read_decompress_options(env: Env, arg: Option<Value>) -> Result<DecompressRequest, Failure> {
  let max_length = unsafe { max_buffer_length(env) };
  let mut request =
    DecompressRequest { limits: Limits { max_output_length: max_length, ..Limits::default() }, dictionary: None, signal: None };
  if unsafe { is_absent(env, arg)? } {
    return Ok(request);
  }
  let arg = arg.unwrap_or(ptr::null_mut());
  unsafe {
    expect_object(env, arg, "options", "an object of decompress options")?;
    if let Some(value) = property(env, arg, c"maxOutputLength")? {
      request.limits.max_output_length = integer(env, value, "options.maxOutputLength", 1.0, max_length as f64)? as usize;
    }
    if let Some(value) = property(env, arg, c"windowLogMax")? {
      request.limits.window_log_max =
        integer(env, value, "options.windowLogMax", MIN_WINDOW_LOG_MAX as f64, MAX_WINDOW_LOG_MAX as f64)? as u32;
    }
    request.dictionary = dictionary(env, arg)?;
    request.signal = signal(env, arg)?;
  }
  Ok(request)
}

pub struct PoolSettings {
  pub max_idle_contexts: Option<usize>,
  pub max_idle_multithreaded_contexts: Option<usize>,
}

/// Reads `configurePool`'s argument: `{ maxIdleContexts, maxIdleMultithreadedContexts }`.
///
/// # Safety
/// Must run on the JavaScript thread that owns `env`, during the call that received `arg`.
pub unsafe fn read_pool_options(env: Env, arg: Value, max_idle_limit: usize) -> Result<PoolSettings, Failure> {
  unsafe {
    expect_object(env, arg, "options", "an object of pool options")?;
    let bounded = |key: &CStr, name: &'static str, max: f64| -> Result<Option<usize>, Failure> {
      match property(env, arg, key)? {
        None => Ok(None),
        Some(value) => Ok(Some(integer(env, value, name, 0.0, max)? as usize)),
      }
    };
    Ok(PoolSettings {
      max_idle_contexts: bounded(c"maxIdleContexts", "options.maxIdleContexts", max_idle_limit as f64)?,
      max_idle_multithreaded_contexts: bounded(
        c"maxIdleMultithreadedContexts",
        "options.maxIdleMultithreadedContexts",
        MAX_IDLE_MULTITHREADED as f64,
      )?,
    })
  }
}

/// The largest Buffer this Node allows (`buffer.constants.MAX_LENGTH`: 4 GiB on Node 20,
/// 2^53 - 1 from Node 22), the default and the ceiling of `maxOutputLength`.
unsafe fn max_buffer_length(env: Env) -> usize {
  static MAX_LENGTH: OnceCell<usize> = OnceCell::new();
  *MAX_LENGTH.get_or_init(|| {
    let from_node = unsafe { read_max_buffer_length(env) }.ok().flatten();
    let length = from_node.unwrap_or(u32::MAX as f64 + 1.0);
    (length as u64).min(isize::MAX as u64) as usize
  })
}

unsafe fn read_max_buffer_length(env: Env) -> Result<Option<f64>, Failure> {
  unsafe {
    let Some(buffer) = js::builtin_module(env, "buffer")? else {
      return Ok(None);
    };
    let constants = js::named_property(env, buffer, c"constants")?;
    let max_length = js::named_property(env, constants, c"MAX_LENGTH")?;
    if js::type_of(env, max_length)? != ValueType::napi_number {
      return Ok(None);
    }
    Ok(Some(js::number(env, max_length)?))
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::compress::DEFAULT_LEVEL;

  #[test]
  fn level_bounds_are_libzstds_own() {
    assert_eq!(MIN_LEVEL, zstd::zstd_safe::min_c_level());
    assert_eq!(MAX_LEVEL, zstd::zstd_safe::max_c_level());
    assert_eq!(DEFAULT_LEVEL, 3);
  }
}
