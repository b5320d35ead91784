//! zstd-pool: zstd for Node.js through pooled compression and decompression contexts.
//! This file holds only the exports; each module below does one job.

// The codecs and the pools are plain Rust, public for benches/ and the fuzzer (fuzz/).
pub mod compress;
pub mod decompress;
pub mod dict;
mod env_state;
pub mod error;
mod input;
mod jobs;
mod js;
pub mod mt;
mod options;
mod output;
pub mod pool;
mod stream;
mod task;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::dict::Prepared;
use crate::error::Failure;
use crate::jobs::{CompressJob, DecompressJob};
use crate::pool::{PoolCounters, COMPRESSORS, DECOMPRESSORS, MAX_IDLE_LIMIT};

/// The lowest (fastest) compression level libzstd accepts.
#[napi]
pub const MIN_LEVEL: i32 = options::MIN_LEVEL;
/// The highest compression level libzstd accepts (slowest, smallest output).
#[napi]
pub const MAX_LEVEL: i32 = options::MAX_LEVEL;
/// The level used when none is given.
#[napi]
pub const DEFAULT_LEVEL: i32 = compress::DEFAULT_LEVEL;

/// A JavaScript value made by hand; napi-rs passes it through as it is.
pub struct JsResult(sys::napi_value);

impl ToNapiValue for JsResult {
  unsafe fn to_napi_value(_env: sys::napi_env, value: Self) -> Result<sys::napi_value> {
    Ok(value.0)
  }
}

fn raw(value: Option<Unknown>) -> Option<sys::napi_value> {
  value.map(|value| value.raw())
}

fn finish(env: &Env, result: std::result::Result<sys::napi_value, Failure>) -> Result<JsResult> {
  result.map(JsResult).map_err(|failure| unsafe { failure.into_napi(env.raw()) })
}

/// Promise-returning functions report bad arguments as a rejection too, never a throw.
fn finish_async(env: &Env, result: std::result::Result<sys::napi_value, Failure>) -> Result<JsResult> {
  let result = result.or_else(|failure| unsafe { task::rejected_promise(env.raw(), &failure) });
  finish(env, result)
}

/// Compresses `data` into one zstd frame that records its content size.
/// `level` is a number, or an object of options; it defaults to `DEFAULT_LEVEL` (3).
#[napi(ts_args_type = "data: Input, level?: number | CompressOptions", ts_return_type = "Buffer")]
pub fn compress_sync(env: Env, data: Unknown, level: Option<Unknown>) -> Result<JsResult> {
  let env_raw = env.raw();
  let result = unsafe {
    options::read_compress_options(env_raw, raw(level)).and_then(|request| {
      let input = input::read_input(env_raw, data.raw())?;
      task::run_sync(env_raw, CompressJob { input, params: request.params, dictionary: request.dictionary })
    })
  };
  finish(&env, result)
}

/// Compresses `data` on the libuv threadpool; see `compressSync`.
#[napi(ts_args_type = "data: Input, level?: number | CompressOptions", ts_return_type = "Promise<Buffer>")]
pub fn compress(env: Env, data: Unknown, level: Option<Unknown>) -> Result<JsResult> {
  let env_raw = env.raw();
  let result = unsafe {
    options::read_compress_options(env_raw, raw(level)).and_then(|request| {
      let input = input::read_input(env_raw, data.raw())?;
      let job = CompressJob { input, params: request.params, dictionary: request.dictionary };
      task::run_async(env_raw, job, request.signal)
    })
  };
  finish_async(&env, result)
}

/// Decompresses every frame in `data` (frames with or without a recorded size, concatenated
/// frames, skippable frames) and returns the concatenated output.
#[napi(ts_args_type = "data: Input, options?: DecompressOptions", ts_return_type = "Buffer")]
pub fn decompress_sync(env: Env, data: Unknown, options: Option<Unknown>) -> Result<JsResult> {
  let env_raw = env.raw();
  let result = unsafe {
    options::read_decompress_options(env_raw, raw(options)).and_then(|request| {
      let input = input::read_input(env_raw, data.raw())?;
      task::run_sync(env_raw, DecompressJob::new(env_raw, input, request.limits, request.dictionary, true)?)
    })
  };
  finish(&env, result)
}

/// Decompresses `data` on the libuv threadpool; see `decompressSync`.
#[napi(ts_args_type = "data: Input, options?: DecompressOptions", ts_return_type = "Promise<Buffer>")]
pub fn decompress(env: Env, data: Unknown, options: Option<Unknown>) -> Result<JsResult> {
  let env_raw = env.raw();
  let result = unsafe {
    options::read_decompress_options(env_raw, raw(options)).and_then(|request| {
      let input = input::read_input(env_raw, data.raw())?;
      let job = DecompressJob::new(env_raw, input, request.limits, request.dictionary, false)?;
      task::run_async(env_raw, job, request.signal)
    })
  };
  finish_async(&env, result)
}

/// A zstd dictionary (from `trainDictionary`, or `zstd --train`), prepared once for any number
/// of calls on any thread. Pass it as the `dictionary` option of the compress and decompress
/// functions; frames made with it need it to be decompressed.
#[napi]
pub struct Dictionary {
  prepared: Arc<Prepared>,
}

#[napi]
impl Dictionary {
  /// Prepares `data` (its bytes are copied). Fails if it is empty or its tables are corrupt.
  #[napi(constructor, ts_args_type = "data: Input")]
  pub fn new(env: Env, data: Unknown) -> Result<Self> {
    let prepared = unsafe { input::read_input(env.raw(), data.raw()) }
      .and_then(|mut bytes| {
        bytes.own()?;
        Prepared::new(bytes.as_slice().to_vec())
      })
      .map_err(|failure| unsafe { failure.into_napi(env.raw()) })?;
    Ok(Self { prepared: Arc::new(prepared) })
  }

  /// The dictionary ID that frames made with it record; 0 for raw content, which has none.
  #[napi(getter)]
  pub fn id(&self) -> u32 {
    self.prepared.id()
  }

  /// The dictionary's size in bytes.
  #[napi(getter)]
  pub fn size(&self) -> u32 {
    self.prepared.bytes().len() as u32
  }

  /// The prepared dictionary behind `value`, if it is a `Dictionary` of this addon.
  unsafe fn prepared_of(env: sys::napi_env, value: sys::napi_value) -> Option<Arc<Prepared>> {
    let mut wrapped = std::ptr::null_mut();
    unsafe {
      if sys::napi_unwrap(env, value, &mut wrapped) != sys::Status::napi_ok || wrapped.is_null() {
        return None;
      }
      // The type tag proves the wrapped pointer is a Dictionary, not another class's object.
      validate_type_tag(env, value, &<Dictionary as TypeTag>::type_tag(), "Dictionary").ok()?;
      Some((*wrapped.cast::<Dictionary>()).prepared.clone())
    }
  }
}

/// Trains a dictionary on `samples` (typically thousands of small, similar records, about 100
/// times the dictionary size in all) for `new Dictionary(...)` or `zstd -D`.
#[napi(ts_args_type = "samples: Input[], options?: TrainOptions", ts_return_type = "Buffer")]
pub fn train_dictionary(env: Env, samples: Unknown, options: Option<Unknown>) -> Result<JsResult> {
  let env_raw = env.raw();
  let result = unsafe {
    options::read_train_options(env_raw, raw(options)).and_then(|(size, level)| {
      let inputs = input::read_inputs(env_raw, samples.raw())?;
      let slices: Vec<&[u8]> = inputs.iter().map(input::Input::as_slice).collect();
      let dictionary = dict::train(&slices, size, level)?;
      output::copy_to_buffer(env_raw, &dictionary)
    })
  };
  finish(&env, result)
}

/// The compression session behind `createCompressStream` and `ZstdCompressionStream`: one
/// frame, fed chunk by chunk on the libuv threadpool. Use those classes rather than this.
#[napi]
pub struct CompressSession {
  session: Arc<stream::Session<stream::CompressState>>,
}

#[napi]
impl CompressSession {
  #[napi(constructor, ts_args_type = "options?: CompressStreamOptions")]
  pub fn new(env: Env, options: Option<Unknown>) -> Result<Self> {
    let env_raw = env.raw();
    unsafe {
      options::read_compress_options(env_raw, raw(options))
        .and_then(|request| {
          let pledged = options::read_pledged_size(env_raw, raw(options))?;
          let params = compress::CompressParams { workers: 0, ..request.params };
          stream::CompressState::new(params, pledged, request.dictionary)
        })
        .map(|state| Self { session: stream::Session::new(state) })
        .map_err(|failure| failure.into_napi(env_raw))
    }
  }

  /// Frees the context (now, or when the running step ends): the stream was destroyed.
  #[napi]
  pub fn close(&self) {
    self.session.close();
  }

  /// Compresses `chunk`; `flush` 1 emits everything so far as decodable data, 2 ends the frame.
  #[napi(ts_args_type = "chunk: Input, flush: number", ts_return_type = "Promise<Buffer>")]
  pub fn push(&self, env: Env, chunk: Unknown, flush: u32) -> Result<JsResult> {
    let env_raw = env.raw();
    let flush = match flush {
      0 => stream::Flush::No,
      1 => stream::Flush::Block,
      _ => stream::Flush::Frame,
    };
    let result = unsafe {
      input::read_input(env_raw, chunk.raw())
        .and_then(|input| task::run_async(env_raw, stream::CompressStep { session: self.session.clone(), input, flush }, None))
    };
    finish_async(&env, result)
  }
}

/// The decompression session behind `createDecompressStream` and `ZstdDecompressionStream`.
/// Use those classes rather than this.
#[napi]
pub struct DecompressSession {
  session: Arc<stream::Session<stream::DecompressState>>,
}

#[napi]
impl DecompressSession {
  #[napi(constructor, ts_args_type = "options?: DecompressOptions")]
  pub fn new(env: Env, options: Option<Unknown>) -> Result<Self> {
    let env_raw = env.raw();
    unsafe {
      options::read_decompress_options(env_raw, raw(options))
        .and_then(|request| stream::DecompressState::new(request.limits, request.dictionary))
        .map(|state| Self { session: stream::Session::new(state) })
        .map_err(|failure| failure.into_napi(env_raw))
    }
  }

  /// Frees the context (now, or when the running step ends): the stream was destroyed.
  #[napi]
  pub fn close(&self) {
    self.session.close();
  }

  /// Decompresses `chunk` (at most 1 MiB of output a step; when `more` is true, push an empty
  /// chunk for the rest). `last` says the stream ends after it.
  #[napi(ts_args_type = "chunk: Input, last: boolean", ts_return_type = "Promise<Buffer>")]
  pub fn push(&self, env: Env, chunk: Unknown, last: bool) -> Result<JsResult> {
    let env_raw = env.raw();
    let result = unsafe {
      input::read_input(env_raw, chunk.raw())
        .and_then(|input| task::run_async(env_raw, stream::DecompressStep { session: self.session.clone(), input, last }, None))
    };
    finish_async(&env, result)
  }

  /// The last step stopped at its output limit: push an empty chunk for the rest.
  #[napi(getter)]
  pub fn more(&self) -> bool {
    self.session.read(|state| state.more)
  }
}

/// Counters of one context pool.
#[napi(object)]
pub struct ContextPoolStats {
  /// Contexts ever created.
  pub created: f64,
  /// Calls served by a context taken from the pool instead of a new one.
  pub reused: f64,
  /// Contexts in the pool now, ready for the next call.
  pub idle: u32,
  /// Contexts held by calls running now.
  pub in_use: f64,
  /// Contexts freed because a call using them failed: never returned to the pool.
  pub dropped_after_error: f64,
  /// Contexts freed on return because the pool already held `maxIdleContexts`.
  pub freed_over_bound: f64,
  /// The most idle contexts the pool keeps.
  pub max_idle_contexts: u32,
}

impl From<PoolCounters> for ContextPoolStats {
  fn from(counters: PoolCounters) -> Self {
    Self {
      created: counters.created as f64,
      reused: counters.reused as f64,
      idle: counters.idle as u32,
      in_use: counters.in_use as f64,
      dropped_after_error: counters.dropped_after_error as f64,
      freed_over_bound: counters.freed_over_bound as f64,
      max_idle_contexts: counters.max_idle as u32,
    }
  }
}

#[napi(object)]
pub struct PoolStats {
  pub compressors: ContextPoolStats,
  pub decompressors: ContextPoolStats,
  /// Multi-threaded compression contexts (`workers`), cached with their worker threads.
  pub multithreaded: ContextPoolStats,
}

/// The counters of the process-wide context pools (shared by every thread and worker).
#[napi]
pub fn pool_stats() -> PoolStats {
  PoolStats {
    compressors: COMPRESSORS.counters().into(),
    decompressors: DECOMPRESSORS.counters().into(),
    multithreaded: mt::CACHE.counters().into(),
  }
}

/// Changes how many idle contexts each pool keeps (0 turns pooling off: a fresh context per
/// call), and how many multi-threaded contexts stay cached, freeing those beyond. Returns the
/// resulting counters.
#[napi(ts_args_type = "options: PoolOptions")]
pub fn configure_pool(env: Env, options: Unknown) -> Result<PoolStats> {
  let settings = unsafe { options::read_pool_options(env.raw(), options.raw(), MAX_IDLE_LIMIT) }
    .map_err(|failure| unsafe { failure.into_napi(env.raw()) })?;
  if let Some(max_idle) = settings.max_idle_contexts {
    COMPRESSORS.set_max_idle(max_idle);
    DECOMPRESSORS.set_max_idle(max_idle);
  }
  if let Some(max_idle) = settings.max_idle_multithreaded_contexts {
    mt::CACHE.set_max_idle(max_idle);
  }
  Ok(pool_stats())
}
