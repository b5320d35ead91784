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
    if let Some(cdict) = self.cached_cdict(level) {
      return Ok(cdict);
    }
    // Built without the lock: digesting takes up to a few hundred milliseconds, and the lock
    // is also taken on the JavaScript thread (`memory`, after every call with this dictionary).
    let built = Arc::new(CDict::try_create(&self.bytes, level).ok_or(Failure::BadDictionary("its tables are corrupt"))?);
    let mut cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Another call may have built it meanwhile: the first one in is kept.
    if let Some((_, cdict)) = cdicts.iter().find(|(cached, _)| *cached == level) {
      return Ok(cdict.clone());
    }
    cdicts.push((level, built.clone()));
    if cdicts.len() > CACHED_LEVELS {
      cdicts.remove(0);
    }
    Ok(built)
  }

  /// The compression dictionary for `level` if it is built, made the most recently used.
  fn cached_cdict(&self, level: i32) -> Option<Arc<CDict<'static>>> {
    let mut cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let index = cdicts.iter().position(|(cached, _)| *cached == level)?;
    let entry = cdicts.remove(index);
    let cdict = entry.1.clone();
    cdicts.push(entry);
    Some(cdict)
  }

  /// Whether the compression dictionary for `level` is built already.
  pub fn has_cdict(&self, level: i32) -> bool {
    self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().any(|(cached, _)| *cached == level)
  }

  /// About how much memory this holds: the bytes and their digested forms.
  pub fn memory(&self) -> usize {
    let cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    self.bytes.len() + self.ddict.sizeof() + cdicts.iter().map(|(_, cdict)| cdict.sizeof()).sum::<usize>()
  }
}

/// The smallest dictionary libzstd trains (ZDICT_DICTSIZE_MIN).
const MIN_DICTIONARY_SIZE: usize = 256;

use crate::ffi::Build;
pub use crate::ffi::TrainParams;

/// What training made: the dictionary, and the parameters it was made with (`k` and `d` as the
/// optimizer chose them, when it ran).
#[derive(Debug)]
pub struct Trained {
  pub dictionary: Vec<u8>,
  pub params: TrainParams,
}

/// Trains a dictionary of at most `size` bytes on samples given end to end in `samples`,
/// `sizes[i]` bytes each, as `params` say.
pub fn train(samples: &[u8], sizes: &[usize], size: usize, params: TrainParams) -> Result<Trained, Failure> {
  let mut dictionary = room_for(samples, sizes, size, samples.len())?;
  // Segments longer than the samples (which bound the dictionary's room): nothing to learn from,
  // rather than libzstd's "parameter out of bound" for a `k` the caller kept within `size`.
  if params.k as usize > dictionary.len() {
    return Err(Failure::TrainingFailed { samples: sizes.len(), bytes: samples.len(), size });
  }
  let (written, chosen) = crate::ffi::build(&mut dictionary, samples, sizes, Build::Train(params))
    .map_err(|code| failed(code, sizes.len(), samples.len(), size))?;
  let params = chosen.unwrap_or(params);
  dictionary.truncate(written);
  Ok(Trained { dictionary, params })
}

/// Makes a dictionary of at most `size` bytes from `content` (hand-picked: the strings the data
/// repeats, the most useful last) and the statistics of `samples` (as [`train`] takes them)
/// compressed against it, for `level`, with `dict_id` (0 for one derived from the content).
pub fn finalize(
  content: &[u8],
  samples: &[u8],
  sizes: &[usize],
  size: usize,
  level: i32,
  dict_id: u32,
) -> Result<Vec<u8>, Failure> {
  // The dictionary holds at most the content, plus its header (entropy tables: well under 1 KiB).
  let mut dictionary = room_for(samples, sizes, size, content.len().saturating_add(1024))?;
  let (written, _) = crate::ffi::build(&mut dictionary, samples, sizes, Build::Finalize { content, level, dict_id })
    .map_err(|code| failed(code, sizes.len(), samples.len(), size))?;
  dictionary.truncate(written);
  Ok(dictionary)
}

/// Room for a dictionary of at most `size` bytes, and no more than `needs`: a dictionary is made
/// of what it is given (and a header), so room past that would be memory cleared for nothing.
/// Checks that `sizes` add up to the samples' length, as libzstd reads them.
fn room_for(samples: &[u8], sizes: &[usize], size: usize, needs: usize) -> Result<Vec<u8>, Failure> {
  let total = sizes.iter().try_fold(0usize, |total, &len| total.checked_add(len));
  if total != Some(samples.len()) || u32::try_from(sizes.len()).is_err() {
    return Err(Failure::TrainingFailed { samples: sizes.len(), bytes: samples.len(), size });
  }
  let capacity = size.min(needs.max(MIN_DICTIONARY_SIZE));
  let mut dictionary = Vec::new();
  dictionary.try_reserve_exact(capacity).map_err(|_| Failure::OutOfMemory { bytes: capacity })?;
  dictionary.resize(capacity, 0);
  Ok(dictionary)
}

/// What a trainer's error `code` means for the caller: libzstd's own error when it could not get
/// memory or found a parameter out of bounds (which the package's JavaScript checks first), else
/// too little to learn from.
fn failed(code: usize, samples: usize, bytes: usize, size: usize) -> Failure {
  use zstd::zstd_safe::{self, zstd_sys::ZSTD_ErrorCode};
  let own = [ZSTD_ErrorCode::ZSTD_error_memory_allocation, ZSTD_ErrorCode::ZSTD_error_parameter_outOfBound];
  if own.into_iter().any(|kind| zstd_safe::is_error_kind(code, kind)) {
    return Failure::Zstd(code);
  }
  Failure::TrainingFailed { samples, bytes, size }
}

/// libzstd's defaults for `ZDICT_trainFromBuffer` and `zstd --train` (fastCover, `d` 8, `f` 20,
/// `accel` 1, 4 optimizer steps over `k`), tuned for `level`.
pub fn default_params(level: i32) -> TrainParams {
  TrainParams { cover: false, k: 0, d: 8, f: 20, accel: 1, steps: 4, split_point: 0.0, threads: 1, dict_id: 0, level }
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
    let dictionary = train(&samples, &sizes, 4096, default_params(3)).unwrap().dictionary;
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
    assert!(matches!(train(&samples, &sizes, 4096, default_params(3)), Err(Failure::TrainingFailed { .. })));
    assert!(matches!(train(&samples, &[1, 2], 4096, default_params(3)), Err(Failure::TrainingFailed { .. })));
    let mut corrupt = vec![0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4];
    corrupt.extend([0xffu8; 200]);
    assert!(Prepared::new(corrupt).is_err());
    assert!(Prepared::new(Vec::new()).is_err());
    assert_eq!(Prepared::new(b"raw content dictionary".to_vec()).unwrap().id(), 0);
  }

  #[test]
  fn trains_with_each_trainer_and_reports_what_the_optimizer_chose() {
    let (samples, sizes) = flat(&records(2000));
    let optimized = train(&samples, &sizes, 4096, default_params(3)).unwrap();
    assert!((50..=2000).contains(&optimized.params.k));
    assert_eq!(optimized.params.d, 8);
    let cover = TrainParams { cover: true, k: 200, d: 6, dict_id: 40_000, ..default_params(3) };
    let trained = train(&samples, &sizes, 4096, cover).unwrap();
    assert_eq!((trained.params.k, trained.params.d), (200, 6));
    assert_eq!(Prepared::new(trained.dictionary).unwrap().id(), 40_000);
    // Out of libzstd's bounds: its own error, not "too few samples".
    let wrong = TrainParams { k: 100, d: 7, ..default_params(3) };
    assert!(matches!(train(&samples, &sizes, 4096, wrong), Err(Failure::Zstd(_))));
  }

  #[test]
  fn finalizes_hand_picked_content() {
    let (samples, sizes) = flat(&records(500));
    let content = br#"{"id":1,"user":"user1","action":"login","ok":true,"ms":"#;
    let dictionary = finalize(content, &samples, &sizes, 4096, 3, 50_000).unwrap();
    assert!(dictionary.ends_with(content));
    assert_eq!(Prepared::new(dictionary).unwrap().id(), 50_000);
    // The content must fit: libzstd refuses a smaller dictionary than its content.
    assert!(finalize(&[b'x'; 600], &samples, &sizes, 512, 3, 0).is_err());
  }
}
