//! What a call's frames refer to, as the one argument of every call that takes one: nothing, a
//! `Dictionary`'s native object, a prefix's bytes, or a `Prefix`'s native copy (`lib/options.js`'s
//! `referenceOf`). libzstd takes a dictionary or a prefix, never both, so one argument says which.

use crate::exports::dictionary::PreparedDictionary;
use crate::exports::prefix::PreparedPrefix;
use crate::napi::ViewOr;

/// A call's reference, told apart as `napi::ViewOr` says.
pub type Reference<'a> = ViewOr<'a, PreparedDictionary, PreparedPrefix>;

/// The dictionary of a call's reference, if it is one.
pub fn dictionary_of<'a>(reference: &Option<Reference<'a>>) -> Option<&'a PreparedDictionary> {
  match reference {
    Some(ViewOr::First(dictionary)) => Some(dictionary),
    _ => None,
  }
}
