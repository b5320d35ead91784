//! Dictionaries: training one from samples, and a dictionary's prepared (digested) forms, built
//! once and shared by every thread: one for decompression, one per compression level used.

use std::sync::{Arc, Mutex};

use zstd::zstd_safe::{zstd_sys, CDict, DDict};

use crate::error::Failure;

pub struct Prepared {
  bytes: Vec<u8>,
  id: u32,
  ddict: DDict<'static>,
  /// Compression dictionaries by level, made on first use at that level.
  cdicts: Mutex<Vec<(i32, Arc<CDict<'static>>)>>,
}

impl Prepared {
  /// Digests `bytes` (a dictionary from `trainDictionary` or `zstd --train`, or any bytes to use
  /// as raw content) and checks it by building its decompression and level-3 compression forms.
  pub fn new(bytes: Vec<u8>) -> Result<Self, Failure> {
    if bytes.is_empty() {
      return Err(Failure::BadDictionary("a dictionary cannot be empty"));
    }
    let ddict = DDict::try_create(&bytes).ok_or(Failure::BadDictionary("its tables are corrupt"))?;
    let id = unsafe { zstd_sys::ZSTD_getDictID_fromDict(bytes.as_ptr().cast(), bytes.len()) };
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

  /// The compression dictionary for `level`, built once per level.
  pub fn cdict(&self, level: i32) -> Result<Arc<CDict<'static>>, Failure> {
    let mut cdicts = self.cdicts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, cdict)) = cdicts.iter().find(|(cached, _)| *cached == level) {
      return Ok(cdict.clone());
    }
    let cdict = Arc::new(CDict::try_create(&self.bytes, level).ok_or(Failure::BadDictionary("its tables are corrupt"))?);
    cdicts.push((level, cdict.clone()));
    Ok(cdict)
  }
}

/// Trains a dictionary of at most `size` bytes on `samples`, tuned for `level`.
pub fn train(samples: &[&[u8]], size: usize, level: i32) -> Result<Vec<u8>, Failure> {
  let sizes: Vec<usize> = samples.iter().map(|sample| sample.len()).collect();
  let flat: Vec<u8> = samples.concat();
  let mut dictionary = vec![0u8; size];
  let mut params: zstd_sys::ZDICT_fastCover_params_t = unsafe { std::mem::zeroed() };
  // libzstd's own defaults for ZDICT_trainFromBuffer, plus the target level.
  params.d = 8;
  params.steps = 4;
  params.f = 20;
  params.accel = 1;
  params.zParams.compressionLevel = level;
  let written = unsafe {
    zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(
      dictionary.as_mut_ptr().cast(),
      dictionary.len(),
      flat.as_ptr().cast(),
      sizes.as_ptr(),
      sizes.len() as u32,
      &mut params,
    )
  };
  if unsafe { zstd_sys::ZDICT_isError(written) } != 0 {
    return Err(Failure::TrainingFailed { samples: samples.len(), bytes: flat.len(), size });
  }
  dictionary.truncate(written);
  Ok(dictionary)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn records(count: usize) -> Vec<Vec<u8>> {
    (0..count)
      .map(|i| format!(r#"{{"id":{i},"user":"user{}","action":"{}","ok":{},"ms":{}}}"#, i % 97, ["login", "view", "buy"][i % 3], i % 2 == 0, i * 7 % 1000).into_bytes())
      .collect()
  }

  #[test]
  fn trains_a_dictionary_that_libzstd_accepts() {
    let samples = records(2000);
    let slices: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let dictionary = train(&slices, 4096, 3).unwrap();
    let prepared = Prepared::new(dictionary).unwrap();
    assert_ne!(prepared.id(), 0);
    assert!(Arc::ptr_eq(&prepared.cdict(3).unwrap(), &prepared.cdict(3).unwrap()));
  }

  #[test]
  fn refuses_too_few_samples_and_corrupt_dictionaries() {
    let samples = records(3);
    let slices: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    assert!(matches!(train(&slices, 4096, 3), Err(Failure::TrainingFailed { .. })));
    let mut corrupt = vec![0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4];
    corrupt.extend([0xffu8; 200]);
    assert!(Prepared::new(corrupt).is_err());
    assert!(Prepared::new(Vec::new()).is_err());
    assert_eq!(Prepared::new(b"raw content dictionary".to_vec()).unwrap().id(), 0);
  }
}
