//! What a call's frames refer to, as the one argument of every call that takes one: nothing, a
//! `Dictionary`'s native object, a prefix's bytes, a `Prefix`'s native copy, or (decompression
//! only) the dictionaries frames choose from (`lib/options.js`'s `referenceOf`). libzstd takes a
//! dictionary or a prefix, never both, so one argument says which.

use std::sync::Arc;

use zstd_pool_core::dict_set::DictionarySet;
use zstd_pool_core::error::Failure;

use crate::exports::dictionary::PreparedDictionary;
use crate::exports::dictionary_set::PreparedDictionarySet;
use crate::exports::prefix::PreparedPrefix;
use crate::napi::ViewOr;

/// A call's reference, told apart as `napi::ViewOr` says.
pub type Reference<'a> = ViewOr<'a, PreparedDictionary, PreparedPrefix, PreparedDictionarySet>;

/// The dictionaries of a call's reference, if it is a set of them (a released one fails the
/// call). Compression never takes one (`lib/options.js` has no such option for it).
pub fn set_of(reference: &Option<Reference<'_>>) -> Result<Option<Arc<DictionarySet>>, Failure> {
  match reference {
    Some(ViewOr::Third(set)) => set.shared().map(Some),
    _ => Ok(None),
  }
}

/// The dictionary of a call's reference, if it is one.
pub fn dictionary_of<'a>(reference: &Option<Reference<'a>>) -> Option<&'a PreparedDictionary> {
  match reference {
    Some(ViewOr::First(dictionary)) => Some(dictionary),
    _ => None,
  }
}
