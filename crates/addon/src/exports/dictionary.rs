//! Dictionaries: `PreparedDictionary`, which `main.js`'s `Dictionary` holds, and
//! `trainDictionary`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::dict::{self, Prepared, TrainParams, Trained};
use zstd_pool_core::error::{guarded, Failure};
use zstd_pool_core::memory::owned;

use crate::napi::{queue, result_bytes, settled_array, throw, Cancellation, IntoJs, Job, Js, Task};

/// A dictionary prepared once (from `trainDictionary` or `zstd --train`) for any number of calls
/// on any thread; `main.js`'s `Dictionary` holds one. The memory it holds natively (its bytes and
/// digested forms, which grow by a compression form per level used, up to 4) is reported to V8,
/// so that garbage dictionaries are collected as their size warrants, and given back when it is.
#[napi(custom_finalize)]
pub struct PreparedDictionary {
  /// `None` once released: calls already running hold the dictionary by their own `Arc`.
  prepared: Mutex<Option<Arc<Prepared>>>,
  id: u32,
  size: usize,
  /// What V8 has been told this holds.
  reported: AtomicI64,
}

#[napi]
impl PreparedDictionary {
  /// Prepares a copy of `bytes`. Fails if they are empty or their tables are corrupt.
  #[napi(constructor)]
  pub fn new(env: Env, bytes: &[u8]) -> Result<Self> {
    let prepared = guarded(|| Prepared::new(owned(bytes)?)).map_err(|failure| throw(&env, failure))?;
    let (id, size) = (prepared.id(), prepared.bytes().len());
    let dictionary = Self { prepared: Mutex::new(Some(Arc::new(prepared))), id, size, reported: AtomicI64::new(0) };
    dictionary.report(&env);
    Ok(dictionary)
  }

  /// The dictionary ID frames made with it record; 0 for raw content, which has none.
  #[napi(getter)]
  pub fn id(&self) -> u32 {
    self.id
  }

  #[napi(getter)]
  pub fn size(&self) -> f64 {
    self.size as f64
  }

  /// Lets go of the native memory now rather than when the object is collected (once the calls
  /// and streams using it, which hold it too, end). Later calls with it fail.
  #[napi]
  pub fn release(&self, env: Env) {
    drop(self.take());
    self.report(&env);
  }
}

impl PreparedDictionary {
  fn take(&self) -> Option<Arc<Prepared>> {
    self.prepared.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
  }

  fn get(&self) -> Option<Arc<Prepared>> {
    self.prepared.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
  }

  /// Tells V8 what the dictionary holds now, if that changed (a compression call at a new level
  /// adds a digested form, maybe in place of another; a release gives it all back). Called by
  /// compression calls once their input is no longer needed: a form built on the threadpool is
  /// reported by the next call.
  pub(crate) fn report(&self, env: &Env) {
    let now = self.get().map_or(0, |prepared| prepared.memory() as i64);
    let before = self.reported.swap(now, Ordering::Relaxed);
    if now != before {
      // Failing to tell V8 leaves only its estimate off: nothing to report to the caller.
      let _ = env.adjust_external_memory(now - before);
    }
  }
}

impl napi::bindgen_prelude::ObjectFinalize for PreparedDictionary {
  fn finalize(self, env: Env) -> Result<()> {
    env.adjust_external_memory(-self.reported.load(Ordering::Relaxed)).map(drop)
  }
}

/// The dictionary a call uses, held for the call; a released one fails the call.
pub(crate) fn prepared(dictionary: Option<&PreparedDictionary>) -> std::result::Result<Option<Arc<Prepared>>, Failure> {
  dictionary.map(|dictionary| dictionary.get().ok_or(Failure::DictionaryReleased)).transpose()
}

/// The samples' lengths as libzstd takes them.
fn lengths(sizes: &[u32]) -> Vec<usize> {
  sizes.iter().map(|&len| len as usize).collect()
}

/// The training parameters `lib/dictionary.js` passes, in this order: cover (1) or fastCover (0),
/// k, d, f, accel, steps, splitPoint, threads, dictId, level (0 for libzstd's choice or default).
fn train_params(numbers: &[f64]) -> std::result::Result<TrainParams, Failure> {
  let &[cover, k, d, f, accel, steps, split_point, threads, dict_id, level] = numbers else {
    return Err(Failure::InvalidArgument("training parameters"));
  };
  // Out-of-range values saturate: libzstd checks its own bounds (and the JavaScript first).
  let unsigned = |value: f64| value as u32;
  Ok(TrainParams {
    cover: cover != 0.0,
    k: unsigned(k),
    d: unsigned(d),
    f: unsigned(f),
    accel: unsigned(accel),
    steps: unsigned(steps),
    split_point,
    threads: unsigned(threads),
    dict_id: unsigned(dict_id),
    level: level as i32,
  })
}

/// What training made, as JavaScript gets it: `[dictionary, k, d]`.
impl IntoJs for Trained {
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    let (k, d) = (self.params.k, self.params.d);
    let dictionary = result_bytes(env, self.dictionary)?;
    settled_array(env, &[dictionary, Js::number(env, k)?, Js::number(env, d)?])
  }
}

/// Trains a dictionary of at most `size` bytes on samples given end to end in `samples`,
/// `sizes[i]` bytes each, with `params` (see [`train_params`]), here: `[dictionary, k, d]`.
#[napi(ts_return_type = "[Buffer | NativeBytes, number, number]")]
pub fn train_dictionary(env: Env, samples: &[u8], sizes: &[u32], size: u32, params: &[f64]) -> Result<Js> {
  let sizes = lengths(sizes);
  guarded(|| dict::train(samples, &sizes, size as usize, train_params(params)?))
    .and_then(|trained| trained.into_js(&env))
    .map_err(|failure| throw(&env, failure))
}

/// [`train_dictionary`] on the libuv threadpool, on a copy of the samples: a Promise. A
/// cancellation stops it only before it starts (libzstd's trainers cannot be interrupted).
#[napi(ts_return_type = "Promise<[Buffer | NativeBytes, number, number]>")]
pub fn train_dictionary_async(
  env: Env,
  samples: &[u8],
  sizes: &[u32],
  size: u32,
  params: &[f64],
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let sizes = lengths(sizes);
  let queued = train_params(params).and_then(|params| {
    let samples = owned(samples)?;
    let job = Training { samples, sizes, size: size as usize, params };
    queue(&env, job, cancellation)
  });
  queued.map_err(|failure| throw(&env, failure))
}

/// A training on the threadpool: it owns its samples.
struct Training {
  samples: Vec<u8>,
  sizes: Vec<usize>,
  size: usize,
  params: TrainParams,
}

impl Job for Training {
  type Output = Trained;

  fn name(&self) -> &'static str {
    "zstd-pool:train-dictionary"
  }

  fn compute(&mut self) -> std::result::Result<Trained, Failure> {
    dict::train(&self.samples, &self.sizes, self.size, self.params)
  }
}

/// Makes a dictionary of at most `size` bytes from `content` and the statistics of the samples
/// (given as to [`train_dictionary`]), for `level`, with `dict_id` (0: one from the content).
#[napi(ts_return_type = "Buffer | NativeBytes")]
pub fn finalize_dictionary(
  env: Env,
  content: &[u8],
  samples: &[u8],
  sizes: &[u32],
  size: u32,
  level: i32,
  dict_id: u32,
) -> Result<Js> {
  let sizes = lengths(sizes);
  guarded(|| dict::finalize(content, samples, &sizes, size as usize, level, dict_id))
    .and_then(|dictionary| result_bytes(&env, dictionary))
    .map_err(|failure| throw(&env, failure))
}

/// [`finalize_dictionary`] on the libuv threadpool, on copies of its inputs: a Promise.
#[napi(ts_return_type = "Promise<Buffer | NativeBytes>")]
#[allow(clippy::too_many_arguments)]
pub fn finalize_dictionary_async(
  env: Env,
  content: &[u8],
  samples: &[u8],
  sizes: &[u32],
  size: u32,
  level: i32,
  dict_id: u32,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let sizes = lengths(sizes);
  let queued = owned(content).and_then(|content| {
    let samples = owned(samples)?;
    let job = Task::new("zstd-pool:finalize-dictionary", move || {
      dict::finalize(&content, &samples, &sizes, size as usize, level, dict_id)
    });
    queue(&env, job, cancellation)
  });
  queued.map_err(|failure| throw(&env, failure))
}
