//! Decoding with several dictionaries: each frame is decoded with the one whose ID its header
//! records, or with none when it records none.
//!
//! libzstd can choose itself (`ZSTD_d_refMultipleDDicts`), but not safely here: resetting a
//! context leaves its table of referenced dictionaries in place (only freeing the context empties
//! it), so a pooled context would go back to the pool pointing at dictionaries that may then be
//! freed, and the next call that turned the parameter on could match a frame against one of them;
//! and it switches only for a frame whose ID it finds, so a frame that records no ID would be
//! decoded with whichever dictionary the frame before it used. The decoders here read each
//! frame's ID at the frame's start instead, before libzstd has any of its bytes, and reference
//! that dictionary or none (see [`select_for_frame`]).

use std::sync::Arc;

use zstd::zstd_safe::DCtx;

use crate::dict::Prepared;
use crate::error::Failure;

/// The most dictionaries a set holds: far more than a caller keeps versions of, few enough that
/// naming them in an error and finding one stay cheap.
pub const MAX_DICTIONARIES: usize = 1024;

/// Dictionaries told apart by their IDs, held for as long as the calls and streams using them.
pub struct DictionarySet {
  /// Sorted by ID, each ID once.
  entries: Vec<Arc<Prepared>>,
}

impl DictionarySet {
  /// The set of `entries`: at least one, at most [`MAX_DICTIONARIES`], each with an ID of its own
  /// (a raw-content dictionary has none, so no frame can name it). `lib/options.js` checks the
  /// same before native code sees them; this is for code calling the binding directly.
  pub fn new(mut entries: Vec<Arc<Prepared>>) -> Result<Self, Failure> {
    if entries.is_empty() || entries.len() > MAX_DICTIONARIES {
      return Err(Failure::InvalidArgument("a set of dictionaries holds 1 to 1024 of them"));
    }
    if entries.iter().any(|entry| entry.id() == 0) {
      return Err(Failure::InvalidArgument("a raw-content dictionary (ID 0) cannot be chosen by a frame's ID"));
    }
    entries.sort_unstable_by_key(|entry| entry.id());
    if entries.windows(2).any(|pair| pair[0].id() == pair[1].id()) {
      return Err(Failure::InvalidArgument("two dictionaries of a set have the same ID"));
    }
    Ok(Self { entries })
  }

  /// The dictionary with ID `id`, if the set has it.
  pub fn get(&self, id: u32) -> Option<&Prepared> {
    let index = self.entries.binary_search_by_key(&id, |entry| entry.id()).ok()?;
    Some(&self.entries[index])
  }

  /// The IDs of the set, in order.
  pub fn ids(&self) -> Vec<u32> {
    self.entries.iter().map(|entry| entry.id()).collect()
  }

  pub fn len(&self) -> usize {
    self.entries.len()
  }

  pub fn is_empty(&self) -> bool {
    self.entries.is_empty()
  }

  /// The dictionary a frame recording `id` decodes with: none for 0 (a frame made without one,
  /// or with its ID left out); a failure naming the ID if the set lacks it.
  pub fn choose(&self, id: u32) -> Result<Option<&Prepared>, Failure> {
    if id == 0 {
      return Ok(None);
    }
    self.get(id).map(Some).ok_or_else(|| Failure::DictionaryNotInSet { needed: id, given: self.ids() })
  }
}

impl std::fmt::Debug for DictionarySet {
  fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    formatter.debug_struct("DictionarySet").field("ids", &self.ids()).finish()
  }
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;

/// The dictionary ID recorded by the frame that `bytes` begin with: 0 for none, and for a
/// skippable frame or bytes that are no zstd frame or header (libzstd refuses those itself); `None` until
/// `bytes` hold enough of the header to tell (at most 10 bytes).
pub fn frame_dictionary_id(bytes: &[u8]) -> Option<u32> {
  let magic = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
  if magic != ZSTD_MAGIC {
    return Some(0);
  }
  let descriptor = *bytes.get(4)?;
  // A reserved bit set: a header libzstd refuses, which has no ID to read.
  if descriptor & 0x08 != 0 {
    return Some(0);
  }
  // The window descriptor comes first unless the frame is a single segment.
  let at = 5 + usize::from(descriptor & 0x20 == 0);
  let id = match descriptor & 3 {
    0 => 0,
    1 => u32::from(*bytes.get(at)?),
    2 => u32::from(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?)),
    _ => u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?),
  };
  Some(id)
}

/// At the start of a frame, before libzstd is given any of it: makes `dctx` decode the frame that
/// `next` begins with using the dictionary of `set` its header names, or none. `Ok(false)` when
/// `next` does not hold enough of the header to tell yet (nothing changed). The context must be
/// reset or freed before the set's dictionaries go, as with one dictionary.
pub fn select_for_frame(dctx: &mut DCtx<'static>, set: &DictionarySet, next: &[u8]) -> Result<bool, Failure> {
  let Some(id) = frame_dictionary_id(next) else {
    return Ok(false);
  };
  match set.choose(id)? {
    Some(dictionary) => crate::ffi::ref_ddict(dctx, dictionary.ddict()).map_err(Failure::Zstd)?,
    None => dctx.disable_dictionary().map(drop).map_err(Failure::Zstd)?,
  }
  Ok(true)
}

#[cfg(test)]
mod tests;
