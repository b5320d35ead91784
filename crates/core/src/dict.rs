//! Dictionaries: training one from samples, and a dictionary's prepared (digested) forms, built
//! once and shared by every thread: one for decompression, one per compression level used.

use std::sync::{Arc, Mutex};

use zstd::zstd_safe::{self, CDict, DDict};

use crate::error::Failure;

pub struct Prepared {
  bytes: Vec<u8>,
  id: u32,
  ddict: DDict<'static>,
  /// Compression dictionaries by level, made on first use at that level, the most recently used
  /// last; at most `CACHED_LEVELS` (each is about as large as the dictionary's tables).
  cdicts: Mutex<Vec<(i32, Arc<CDict<'static>>)>>,
}

/// Compression levels whose digested dictionary stays cached: calls at a level beyond these
/// build their own, and a caller that varies the level cannot make a Dictionary grow unbounded.
const CACHED_LEVELS: usize = 4;

impl Prepared {
  /// Digests `bytes` (a dictionary from `trainDictionary` or `zstd --train`, or any bytes to use
  /// as raw content) and checks it by building its decompression and level-3 compression forms.
  pub fn new(bytes: Vec<u8>) -> Result<Self, Failure> {
    if bytes.is_empty() {
      return Err(Failure::BadDictionary("a dictionary cannot be empty"));
    }
    let ddict = DDict::try_create(&bytes).ok_or(Failure::BadDictionary("its tables are corrupt"))?;
    let id = zstd_safe::get_dict_id_from_dict(&bytes).map_or(0, |id| id.get());
    let prepared = Self { bytes, id, ddict, cdicts: Mutex::new(Vec::new()) };
    prepared.cdict(crate::compress::DEFAULT_LEVEL)?;
    Ok(prepared)
  }

  /// The dictionary ID frames record (0 for a raw-content dictionary, which has none).
  pub fn id(&self) -> u32 {
    self.id
  }

  pub fn bytes(&self) -> &[u8] {
    &self.bytes
  }

  pub fn ddict(&self) -> &DDict<'static> {
    &self.ddict
  }

  /// The compression dictionary for `level`, built once per level (for the levels used most
  /// recently: see `CACHED_LEVELS`).
  pub fn cdict(&self, level: i32) -> Result<Arc<CDict<'static>>, Failure> {
    let mut cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(index) = cdicts.iter().position(|(cached, _)| *cached == level) {
      let entry = cdicts.remove(index);
      let cdict = entry.1.clone();
      cdicts.push(entry);
      return Ok(cdict);
    }
    let cdict = Arc::new(CDict::try_create(&self.bytes, level).ok_or(Failure::BadDictionary("its tables are corrupt"))?);
    cdicts.push((level, cdict.clone()));
    if cdicts.len() > CACHED_LEVELS {
      cdicts.remove(0);
    }
    Ok(cdict)
  }

  /// About how much memory this holds: the bytes and their digested forms.
  pub fn memory(&self) -> usize {
    let cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    self.bytes.len() + self.ddict.sizeof() + cdicts.iter().map(|(_, cdict)| cdict.sizeof()).sum::<usize>()
  }
}

/// The smallest dictionary libzstd trains (ZDICT_DICTSIZE_MIN).
const MIN_DICTIONARY_SIZE: usize = 256;

/// Trains a dictionary of at most `size` bytes, tuned for `level`, on samples given end to end
/// in `samples`, `sizes[i]` bytes each.
pub fn train(samples: &[u8], sizes: &[usize], size: usize, level: i32) -> Result<Vec<u8>, Failure> {
  let training_failed = || Failure::TrainingFailed { samples: sizes.len(), bytes: samples.len(), size };
  let total = sizes.iter().try_fold(0usize, |total, &len| total.checked_add(len));
  if total != Some(samples.len()) || u32::try_from(sizes.len()).is_err() {
    return Err(training_failed());
  }
  // A dictionary is made of the samples' content (and a header): room for more than they hold
  // would only be memory cleared for nothing.
  let capacity = size.min(samples.len().max(MIN_DICTIONARY_SIZE));
  let mut dictionary = Vec::new();
  dictionary.try_reserve_exact(capacity).map_err(|_| Failure::OutOfMemory { bytes: capacity })?;
  dictionary.resize(capacity, 0);
  // `sizes` sum to `samples.len()` (checked above): libzstd reads only the samples.
  let written = crate::ffi::train_fast_cover(&mut dictionary, samples, sizes, level).ok_or_else(training_failed)?;
  dictionary.truncate(written);
  Ok(dictionary)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn flat(samples: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    (samples.concat(), samples.iter().map(Vec::len).collect())
  }

  fn records(count: usize) -> Vec<Vec<u8>> {
    (0..count)
      .map(|i| {
        format!(
          r#"{{"id":{i},"user":"user{}","action":"{}","ok":{},"ms":{}}}"#,
          i % 97,
          ["login", "view", "buy"][i % 3],
          i % 2 == 0,
          i * 7 % 1000
        )
        .into_bytes()
      })
      .collect()
  }

  #[test]
  fn trains_a_dictionary_that_libzstd_accepts() {
    let (samples, sizes) = flat(&records(2000));
    let dictionary = train(&samples, &sizes, 4096, 3).unwrap();
    let prepared = Prepared::new(dictionary).unwrap();
    assert_ne!(prepared.id(), 0);
    assert!(Arc::ptr_eq(&prepared.cdict(3).unwrap(), &prepared.cdict(3).unwrap()));
    // Only the levels used last stay cached.
    for level in 1..=10 {
      prepared.cdict(level).unwrap();
    }
    assert_eq!(prepared.cdicts.lock().unwrap().len(), CACHED_LEVELS);
    assert!(prepared.memory() > prepared.bytes().len());
  }

  #[test]
  fn refuses_too_few_samples_and_corrupt_dictionaries() {
    let (samples, sizes) = flat(&records(3));
    assert!(matches!(train(&samples, &sizes, 4096, 3), Err(Failure::TrainingFailed { .. })));
    assert!(matches!(train(&samples, &[1, 2], 4096, 3), Err(Failure::TrainingFailed { .. })));
    let mut corrupt = vec![0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4];
    corrupt.extend([0xffu8; 200]);
    assert!(Prepared::new(corrupt).is_err());
    assert!(Prepared::new(Vec::new()).is_err());
    assert_eq!(Prepared::new(b"raw content dictionary".to_vec()).unwrap().id(), 0);
  }
}
