//! Dictionaries: `PreparedDictionary`, which `main.js`'s `Dictionary` holds, and
//! `trainDictionary`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::dict::{self, Prepared};
use zstd_pool_core::error::{guarded, Failure};
use zstd_pool_core::memory::owned;

use crate::napi::{result_bytes, throw, Js};

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

/// Trains a dictionary of at most `size` bytes, tuned for `level`, on samples given end to end
/// in `samples`, `sizes[i]` bytes each.
#[napi(ts_return_type = "Buffer")]
pub fn train_dictionary(env: Env, samples: &[u8], sizes: &[u32], size: u32, level: i32) -> Result<Js> {
  let sizes: Vec<usize> = sizes.iter().map(|&len| len as usize).collect();
  guarded(|| dict::train(samples, &sizes, size as usize, level))
    .and_then(|dictionary| result_bytes(&env, dictionary))
    .map_err(|failure| throw(&env, failure))
}
