//! `PreparedDictionarySet`: the dictionaries a decompression's frames choose from by their IDs
//! (the `dictionaries` option), made once when `lib/options.js` reads the option.

use std::sync::Arc;

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::dict_set::DictionarySet;
use zstd_pool_core::error::{guarded, Failure};

use crate::exports::dictionary::{prepared, PreparedDictionary};
use crate::napi::throw;

/// The dictionaries a decompression's frames choose from, held by the set (a `Dictionary`
/// disposed later stays usable by it, as by a call already running).
#[napi]
pub struct PreparedDictionarySet {
  set: Arc<DictionarySet>,
}

#[napi]
impl PreparedDictionarySet {
  /// The set of `dictionaries` (`lib/options.js` gives a plain array it made). Fails on a
  /// released dictionary, an empty set or one of more than 1024, a raw-content dictionary (no
  /// frame can name it) and two with the same ID.
  #[napi(constructor)]
  pub fn new(env: Env, dictionaries: Vec<&PreparedDictionary>) -> Result<Self> {
    guarded(|| {
      let mut held = Vec::new();
      held.try_reserve_exact(dictionaries.len()).map_err(|_| Failure::OutOfMemory { bytes: dictionaries.len() * 8 })?;
      for dictionary in dictionaries {
        held.push(prepared(Some(dictionary))?.ok_or(Failure::DictionaryReleased)?);
      }
      DictionarySet::new(held)
    })
    .map(|set| Self { set: Arc::new(set) })
    .map_err(|failure| throw(&env, failure))
  }

  /// How many dictionaries the set holds.
  #[napi(getter)]
  pub fn size(&self) -> u32 {
    self.set.len() as u32
  }
}

impl PreparedDictionarySet {
  /// The set, for a call or a stream to hold.
  pub(crate) fn shared(&self) -> Arc<DictionarySet> {
    self.set.clone()
  }
}
