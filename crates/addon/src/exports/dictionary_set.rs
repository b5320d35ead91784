//! `PreparedDictionarySet`: the dictionaries a decompression's frames choose from by their IDs
//! (the `dictionaries` option), made once when `lib/options.js` reads the option.

use std::sync::{Arc, Mutex};

use napi::Env;
use napi_derive::napi;
use zstd_pool_core::dict_set::DictionarySet;
use zstd_pool_core::error::{guarded, Failure};

use crate::exports::dictionary::{prepared, PreparedDictionary};
use crate::napi::throw;

/// The dictionaries a decompression's frames choose from, held by the set (a `Dictionary`
/// disposed later stays usable by it, as by a call already running) until it is released.
#[napi]
pub struct PreparedDictionarySet {
  /// `None` once released: calls and streams already given the set hold it by their own `Arc`.
  set: Mutex<Option<Arc<DictionarySet>>>,
}

#[napi]
impl PreparedDictionarySet {
  /// The set of `dictionaries` (`lib/options.js` gives a plain array it made). Fails on a
  /// released dictionary, an empty set or one of more than 1024, a raw-content dictionary (no
  /// frame can name it) and two with the same ID.
  #[napi(constructor)]
  pub fn new(env: Env, dictionaries: Vec<&PreparedDictionary>) -> napi::Result<Self> {
    guarded(|| {
      let mut held = Vec::new();
      held.try_reserve_exact(dictionaries.len()).map_err(|_| Failure::OutOfMemory { bytes: dictionaries.len() * 8 })?;
      for dictionary in dictionaries {
        held.push(prepared(Some(dictionary))?.ok_or(Failure::DictionaryReleased)?);
      }
      DictionarySet::new(held)
    })
    .map(|set| Self { set: Mutex::new(Some(Arc::new(set))) })
    .map_err(|failure| throw(&env, failure))
  }

  /// How many dictionaries the set holds (0 once released).
  #[napi(getter)]
  pub fn size(&self) -> u32 {
    self.lock().as_ref().map_or(0, |set| set.len() as u32)
  }

  /// Lets go of the dictionaries now rather than when the object is collected (`lib/options.js`
  /// keeps a few sets for reuse, and releases them when a Dictionary is disposed of, so that its
  /// memory goes at once). Later calls given the set fail.
  #[napi]
  pub fn release(&self) {
    drop(self.lock().take());
  }
}

impl PreparedDictionarySet {
  fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<DictionarySet>>> {
    self.set.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
  }

  /// The set, for a call or a stream to hold; a released one fails the call.
  pub(crate) fn shared(&self) -> Result<Arc<DictionarySet>, Failure> {
    self.lock().clone().ok_or(Failure::DictionaryReleased)
  }
}
