//! One-shot compression of a byte slice into a standard zstd frame.

use zstd::zstd_safe::{self, zstd_sys, CCtx, CDict, CParameter, InBuffer, OutBuffer, Strategy, WriteBuf};

use crate::error::Failure;

/// libzstd's default level (3); level 0 asks libzstd for it too.
pub const DEFAULT_LEVEL: i32 = zstd_safe::zstd_sys::ZSTD_CLEVEL_DEFAULT as i32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressParams {
  pub level: i32,
  pub checksum: bool,
  /// libzstd worker threads (`nbWorkers`); 0 compresses on the calling thread.
  pub workers: u32,
  /// Every other compression parameter the caller set.
  pub tuning: Tuning,
}

impl Default for CompressParams {
  fn default() -> Self {
    Self::new(DEFAULT_LEVEL, false, 0)
  }
}

impl CompressParams {
  pub fn new(level: i32, checksum: bool, workers: u32) -> Self {
    Self { level, checksum, workers, tuning: Tuning::default() }
  }

  /// From settings as the addon's callers lay them out end to end (`lib/parameters.js`'s
  /// `nativeParameters`): the level, the checksum flag (0 or 1) and the workers, then the other
  /// parameters as (`ZSTD_c_*` number, value) pairs.
  pub fn from_settings(settings: &[i32]) -> Result<Self, Failure> {
    let &[level, checksum, workers, ref pairs @ ..] = settings else {
      return Err(Failure::InvalidArgument("compression settings start with the level, the checksum and the workers"));
    };
    let checksum = match checksum {
      0 | 1 => checksum == 1,
      _ => return Err(Failure::InvalidArgument("a checksum flag other than 0 or 1")),
    };
    let workers = u32::try_from(workers).map_err(|_| Failure::InvalidArgument("a negative number of workers"))?;
    Ok(Self { level, checksum, workers, tuning: Tuning::from_pairs(pairs)? })
  }
}

/// libzstd's compression parameters other than the level, the checksum and the workers, by
/// their `ZSTD_c_*` numbers (the values `node:zlib`'s `constants` give them too).
pub mod param {
  pub const WINDOW_LOG: i32 = 101;
  pub const HASH_LOG: i32 = 102;
  pub const CHAIN_LOG: i32 = 103;
  pub const SEARCH_LOG: i32 = 104;
  pub const MIN_MATCH: i32 = 105;
  pub const TARGET_LENGTH: i32 = 106;
  pub const STRATEGY: i32 = 107;
  pub const TARGET_CBLOCK_SIZE: i32 = 130;
  pub const ENABLE_LDM: i32 = 160;
  pub const LDM_HASH_LOG: i32 = 161;
  pub const LDM_MIN_MATCH: i32 = 162;
  pub const LDM_BUCKET_SIZE_LOG: i32 = 163;
  pub const LDM_HASH_RATE_LOG: i32 = 164;
  pub const CONTENT_SIZE_FLAG: i32 = 200;
  pub const DICT_ID_FLAG: i32 = 202;
  pub const JOB_SIZE: i32 = 401;
  pub const OVERLAP_LOG: i32 = 402;

  /// Every parameter a [`super::Tuning`] may set.
  pub const ALL: [i32; 17] = [
    WINDOW_LOG,
    HASH_LOG,
    CHAIN_LOG,
    SEARCH_LOG,
    MIN_MATCH,
    TARGET_LENGTH,
    STRATEGY,
    TARGET_CBLOCK_SIZE,
    ENABLE_LDM,
    LDM_HASH_LOG,
    LDM_MIN_MATCH,
    LDM_BUCKET_SIZE_LOG,
    LDM_HASH_RATE_LOG,
    CONTENT_SIZE_FLAG,
    DICT_ID_FLAG,
    JOB_SIZE,
    OVERLAP_LOG,
  ];
}

/// The parameters a call sets beyond level, checksum and workers: at most one value for each of
/// [`param::ALL`], kept in a fixed array so that a call's settings stay `Copy`. `main.js`
/// checked every value against libzstd's bounds; anything else here is refused, so that no
/// caller of the binding can reach a parameter outside this list (some experimental ones hand
/// libzstd buffers it would keep reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tuning {
  /// The value set for each of `param::ALL`, if any.
  values: [Option<i32>; param::ALL.len()],
}

impl Tuning {
  /// From (parameter, value) pairs given end to end; a later pair for the same parameter wins.
  pub fn from_pairs(pairs: &[i32]) -> Result<Self, Failure> {
    let mut tuning = Self::default();
    if !pairs.len().is_multiple_of(2) {
      return Err(Failure::InvalidArgument("compression parameters come in (parameter, value) pairs"));
    }
    for pair in pairs.chunks_exact(2) {
      tuning = tuning.with(pair[0], pair[1])?;
    }
    Ok(tuning)
  }

  /// This tuning with `parameter` set to `value`. For every parameter but the two flags, 0 asks
  /// for libzstd's default (as zstd.h says), which is what a fresh or reset context has: it is
  /// not set at all.
  pub fn with(mut self, parameter: i32, value: i32) -> Result<Self, Failure> {
    let index = param::ALL.iter().position(|&known| known == parameter);
    let index = index.ok_or(Failure::InvalidArgument("an unknown compression parameter"))?;
    let flag = matches!(parameter, param::CONTENT_SIZE_FLAG | param::DICT_ID_FLAG);
    self.values[index] = (value != 0 || flag).then_some(value);
    Ok(self)
  }

  pub fn get(&self, parameter: i32) -> Option<i32> {
    if self.is_empty() {
      return None;
    }
    let index = param::ALL.iter().position(|&known| known == parameter)?;
    self.values[index]
  }

  /// The value of `parameter`, one of `param::ALL`.
  fn slot(&mut self, parameter: i32) -> &mut Option<i32> {
    let index = param::ALL.iter().position(|&known| known == parameter).unwrap_or_default();
    &mut self.values[index]
  }

  pub fn is_empty(&self) -> bool {
    self.values.iter().all(Option::is_none)
  }

  /// Whether it sets any of the parameters that a digested dictionary fixes (libzstd compresses
  /// a small input with the dictionary's own match-finder settings, not the context's).
  pub fn sets_match_finder(&self) -> bool {
    (param::WINDOW_LOG..=param::STRATEGY).any(|parameter| self.get(parameter).is_some())
  }

  fn set(&self, cctx: &mut CCtx<'static>) -> Result<(), Failure> {
    if self.is_empty() {
      return Ok(());
    }
    for (&parameter, value) in param::ALL.iter().zip(self.values) {
      if let Some(value) = value {
        let setting = setting(parameter, value).ok_or(Failure::Zstd(bad_value()))?;
        cctx.set_parameter(setting).map_err(Failure::Zstd)?;
      }
    }
    Ok(())
  }
}

/// `parameter` set to `value`, as zstd-safe names it; `None` for a value it cannot express.
fn setting(parameter: i32, value: i32) -> Option<CParameter> {
  let unsigned = u32::try_from(value).ok();
  Some(match parameter {
    param::WINDOW_LOG => CParameter::WindowLog(unsigned?),
    param::HASH_LOG => CParameter::HashLog(unsigned?),
    param::CHAIN_LOG => CParameter::ChainLog(unsigned?),
    param::SEARCH_LOG => CParameter::SearchLog(unsigned?),
    param::MIN_MATCH => CParameter::MinMatch(unsigned?),
    param::TARGET_LENGTH => CParameter::TargetLength(unsigned?),
    param::STRATEGY => CParameter::Strategy(strategy(value)?),
    param::TARGET_CBLOCK_SIZE => CParameter::TargetCBlockSize(unsigned?),
    // libzstd's switch: 0 leaves it to libzstd, 1 turns it on. zstd-safe sets only those two.
    param::ENABLE_LDM if value <= 1 => CParameter::EnableLongDistanceMatching(value == 1),
    param::LDM_HASH_LOG => CParameter::LdmHashLog(unsigned?),
    param::LDM_MIN_MATCH => CParameter::LdmMinMatch(unsigned?),
    param::LDM_BUCKET_SIZE_LOG => CParameter::LdmBucketSizeLog(unsigned?),
    param::LDM_HASH_RATE_LOG => CParameter::LdmHashRateLog(unsigned?),
    param::CONTENT_SIZE_FLAG => CParameter::ContentSizeFlag(value != 0),
    param::DICT_ID_FLAG => CParameter::DictIdFlag(value != 0),
    param::JOB_SIZE => CParameter::JobSize(unsigned?),
    param::OVERLAP_LOG => CParameter::OverlapSizeLog(unsigned?),
    _ => return None,
  })
}

/// libzstd's strategy `value`, 0 (the level's own) to 9.
pub fn strategy(value: i32) -> Option<Strategy> {
  Some(match value {
    0 => return None,
    1 => Strategy::ZSTD_fast,
    2 => Strategy::ZSTD_dfast,
    3 => Strategy::ZSTD_greedy,
    4 => Strategy::ZSTD_lazy,
    5 => Strategy::ZSTD_lazy2,
    6 => Strategy::ZSTD_btlazy2,
    7 => Strategy::ZSTD_btopt,
    8 => Strategy::ZSTD_btultra,
    9 => Strategy::ZSTD_btultra2,
    _ => return None,
  })
}

fn bad_value() -> usize {
  crate::error::zstd_error(zstd_sys::ZSTD_ErrorCode::ZSTD_error_parameter_outOfBound)
}

/// libzstd's bounds for compression parameter `parameter`, or `None` where this build of
/// libzstd does not support it.
pub fn bounds(parameter: i32) -> Option<(i32, i32)> {
  use zstd_sys::ZSTD_cParameter::*;
  let parameter = match parameter {
    param::WINDOW_LOG => ZSTD_c_windowLog,
    param::HASH_LOG => ZSTD_c_hashLog,
    param::CHAIN_LOG => ZSTD_c_chainLog,
    param::SEARCH_LOG => ZSTD_c_searchLog,
    param::MIN_MATCH => ZSTD_c_minMatch,
    param::TARGET_LENGTH => ZSTD_c_targetLength,
    param::STRATEGY => ZSTD_c_strategy,
    param::TARGET_CBLOCK_SIZE => ZSTD_c_targetCBlockSize,
    param::ENABLE_LDM => ZSTD_c_enableLongDistanceMatching,
    param::LDM_HASH_LOG => ZSTD_c_ldmHashLog,
    param::LDM_MIN_MATCH => ZSTD_c_ldmMinMatch,
    param::LDM_BUCKET_SIZE_LOG => ZSTD_c_ldmBucketSizeLog,
    param::LDM_HASH_RATE_LOG => ZSTD_c_ldmHashRateLog,
    param::CONTENT_SIZE_FLAG => ZSTD_c_contentSizeFlag,
    param::DICT_ID_FLAG => ZSTD_c_dictIDFlag,
    param::JOB_SIZE => ZSTD_c_jobSize,
    param::OVERLAP_LOG => ZSTD_c_overlapLog,
    _ => return None,
  };
  crate::ffi::param_bounds(parameter)
}

/// Patch-from (`zstd --patch-from`): compressing against a reference (the old version of the
/// data) needs a window that reaches back into it. As the zstd tool does, the window spans the
/// larger of the reference and the input, and long-distance matching turns on when that is more
/// than the level's match finder can see, unless the caller set either.
pub fn tuning_for_prefix(level: i32, tuning: Tuning, prefix_len: usize, input_len: usize) -> Tuning {
  let largest = prefix_len.max(input_len) as u64;
  let window_log = (64 - largest.leading_zeros()).clamp(zstd_sys::ZSTD_WINDOWLOG_MIN, max_window_log());
  let params = crate::ffi::level_params(level, largest, prefix_len);
  // As libzstd's ZSTD_cycleLog: the binary-tree strategies use one bit of the chain for the tree.
  let cycle_log = params.chainLog - u32::from(params.strategy as u32 >= Strategy::ZSTD_btlazy2 as u32);
  let mut tuned = tuning;
  let window_log = *tuned.slot(param::WINDOW_LOG).get_or_insert(window_log as i32);
  if window_log > cycle_log as i32 {
    tuned.slot(param::ENABLE_LDM).get_or_insert(1);
  }
  tuned
}

/// The largest window libzstd compresses with on this target.
pub fn max_window_log() -> u32 {
  if usize::BITS == 32 {
    zstd_sys::ZSTD_WINDOWLOG_MAX_32
  } else {
    zstd_sys::ZSTD_WINDOWLOG_MAX_64
  }
}

/// Sets a clean context (fresh, or reset with its parameters) up for `params` and `dictionary`.
/// With a dictionary, `cctx` must be reset or freed before `dictionary` is dropped (giving a
/// pooled context back resets it).
pub fn configure(cctx: &mut CCtx<'static>, params: CompressParams, dictionary: Option<&CDict<'static>>) -> Result<(), Failure> {
  configure_with(cctx, params, dictionary.map(Reference::Digested))
}

/// What a compression refers to besides its input.
#[derive(Clone, Copy)]
pub enum Reference<'a> {
  /// A dictionary digested for the call's level.
  Digested(&'a CDict<'static>),
  /// A dictionary's bytes, digested for this call alone: when the call sets match-finder
  /// parameters, which a digested dictionary would override.
  Loaded(&'a [u8]),
  /// The old version of the data, for patch-from (`ZSTD_CCtx_refPrefix`).
  Prefix(&'a [u8]),
}

/// [`configure`], with any kind of [`Reference`]. The context must be reset or freed before a
/// referenced dictionary or prefix goes (giving a pooled context back resets it).
pub fn configure_with(cctx: &mut CCtx<'static>, params: CompressParams, reference: Option<Reference<'_>>) -> Result<(), Failure> {
  match reference {
    None => {}
    Some(Reference::Digested(cdict)) => {
      crate::ffi::ref_cdict(cctx, cdict).map_err(Failure::Zstd)?;
    }
    // libzstd copies the bytes.
    Some(Reference::Loaded(bytes)) => {
      cctx.load_dictionary(bytes).map_err(Failure::Zstd)?;
    }
    Some(Reference::Prefix(prefix)) => {
      crate::ffi::ref_compress_prefix(cctx, prefix).map_err(Failure::Zstd)?;
    }
  }
  cctx.set_parameter(CParameter::CompressionLevel(params.level)).map_err(Failure::Zstd)?;
  cctx.set_parameter(CParameter::ChecksumFlag(params.checksum)).map_err(Failure::Zstd)?;
  if params.workers > 0 {
    cctx.set_parameter(CParameter::NbWorkers(params.workers)).map_err(Failure::Zstd)?;
  }
  params.tuning.set(cctx)
}

/// Compresses `input` as one frame that records its content size, so any decoder can size
/// its output up front. On error, `cctx` must be discarded. See [`configure`] for the rest.
pub fn compress(
  cctx: &mut CCtx<'static>,
  input: &[u8],
  params: CompressParams,
  dictionary: Option<&CDict<'static>>,
) -> Result<Vec<u8>, Failure> {
  let bound = zstd_safe::compress_bound(input.len());
  let mut output = Vec::new();
  output.try_reserve_exact(bound).map_err(|_| Failure::OutOfMemory { bytes: bound })?;
  compress_into(cctx, input, params, dictionary, &mut output)?;
  Ok(output)
}

/// [`compress`] into `output`, which should have room for `compress_bound(input.len())` bytes
/// (with less, it may fail with `ZSTD_error_dstSize_tooSmall`). Returns the frame's length.
pub fn compress_into<C: WriteBuf + ?Sized>(
  cctx: &mut CCtx<'static>,
  input: &[u8],
  params: CompressParams,
  dictionary: Option<&CDict<'static>>,
  output: &mut C,
) -> Result<usize, Failure> {
  compress_with(cctx, input, params, dictionary.map(Reference::Digested), output)
}

/// [`compress_into`], with any kind of [`Reference`] (see [`configure_with`]).
pub fn compress_with<C: WriteBuf + ?Sized>(
  cctx: &mut CCtx<'static>,
  input: &[u8],
  params: CompressParams,
  reference: Option<Reference<'_>>,
  output: &mut C,
) -> Result<usize, Failure> {
  configure_with(cctx, params, reference)?;
  // (With worker threads, ZSTD_e_continue may return before taking anything: compress2 waits.)
  if matches!(reference, Some(Reference::Prefix(_))) && params.workers == 0 {
    return compress_in_steps(cctx, input, output);
  }
  // compress2 knows the whole input, so it writes the content size into the frame header and
  // sizes the window to the input.
  cctx.compress2(output, input).map_err(Failure::Zstd)
}

/// Compresses `input` as a stream that takes it all at once (`ZSTD_e_continue`), then ends the
/// frame (`ZSTD_e_end`), the size pledged up front. Against a prefix, libzstd finds more this way
/// than in the single `ZSTD_e_end` of `compress2`, as the zstd tool does: an edited copy of the
/// corpus (2.9 MB) against the original took 866 bytes instead of 1163 at level 3.
fn compress_in_steps<C: WriteBuf + ?Sized>(cctx: &mut CCtx<'static>, input: &[u8], output: &mut C) -> Result<usize, Failure> {
  use zstd_sys::ZSTD_EndDirective::{ZSTD_e_continue, ZSTD_e_end};
  let too_small = || Failure::Zstd(crate::error::zstd_error(zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall));
  cctx.set_pledged_src_size(Some(input.len() as u64)).map_err(Failure::Zstd)?;
  let mut output = OutBuffer::around(output);
  let mut input = InBuffer::around(input);
  while input.pos() < input.src.len() {
    let (before, written) = (input.pos(), output.pos());
    cctx.compress_stream2(&mut output, &mut input, ZSTD_e_continue).map_err(Failure::Zstd)?;
    if input.pos() == before && output.pos() == written {
      return Err(too_small());
    }
  }
  loop {
    let written = output.pos();
    if cctx.compress_stream2(&mut output, &mut input, ZSTD_e_end).map_err(Failure::Zstd)? == 0 {
      return Ok(output.pos());
    }
    if output.pos() == written {
      return Err(too_small());
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn sample(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect()
  }

  #[test]
  fn frames_record_their_content_size() {
    let mut cctx = CCtx::create();
    let input = sample(100_000);
    let frame = compress(&mut cctx, &input, CompressParams::default(), None).unwrap();
    assert_eq!(zstd_safe::get_frame_content_size(&frame).unwrap(), Some(100_000));
    assert_eq!(zstd::decode_all(&frame[..]).unwrap(), input);
  }

  #[test]
  fn a_reset_context_gives_the_same_bytes_as_a_fresh_one() {
    let input = sample(50_000);
    let mut reused = CCtx::create();
    compress(&mut reused, &sample(7_000), CompressParams::new(19, true, 0), None).unwrap();
    reused.reset(zstd_safe::ResetDirective::SessionAndParameters).unwrap();
    let from_reused = compress(&mut reused, &input, CompressParams::default(), None).unwrap();
    let from_fresh = compress(&mut CCtx::create(), &input, CompressParams::default(), None).unwrap();
    assert_eq!(from_reused, from_fresh);
  }

  #[test]
  fn a_tuning_takes_only_the_listed_parameters_in_pairs() {
    assert!(Tuning::from_pairs(&[param::WINDOW_LOG, 20, param::STRATEGY, 9]).is_ok());
    // An odd count, an unknown number, an experimental parameter (stableInBuffer is 1008), the
    // level and the checksum (options of their own).
    for pairs in [&[param::WINDOW_LOG][..], &[999, 1], &[1008, 1], &[100, 3], &[201, 1]] {
      assert!(Tuning::from_pairs(pairs).is_err(), "{pairs:?}");
    }
  }

  #[test]
  fn settings_are_the_level_the_checksum_and_the_workers_then_pairs() {
    let params = CompressParams::from_settings(&[-5, 1, 2, param::WINDOW_LOG, 20]).unwrap();
    assert_eq!((params.level, params.checksum, params.workers), (-5, true, 2));
    assert_eq!(params.tuning.get(param::WINDOW_LOG), Some(20));
    assert_eq!(CompressParams::from_settings(&[3, 0, 0]).unwrap(), CompressParams::new(3, false, 0));
    // Too short, a checksum flag other than 0 or 1, negative workers, a pair cut short.
    for settings in [&[3, 0][..], &[3, 2, 0], &[3, 0, -1], &[3, 0, 0, param::WINDOW_LOG]] {
      assert!(CompressParams::from_settings(settings).is_err(), "{settings:?}");
    }
  }

  #[test]
  fn zero_asks_for_the_default_except_for_the_flags() {
    let tuning = Tuning::from_pairs(&[param::WINDOW_LOG, 0, param::STRATEGY, 0, param::CONTENT_SIZE_FLAG, 0]).unwrap();
    assert_eq!(tuning.get(param::WINDOW_LOG), None);
    assert_eq!(tuning.get(param::CONTENT_SIZE_FLAG), Some(0));
    let input = sample(20_000);
    let params = CompressParams { tuning, ..CompressParams::default() };
    let frame = compress(&mut CCtx::create(), &input, params, None).unwrap();
    assert_eq!(zstd_safe::get_frame_content_size(&frame).unwrap(), None);
  }

  #[test]
  fn patch_from_spans_the_reference_and_turns_long_matching_on() {
    let tuning = tuning_for_prefix(3, Tuning::default(), 3 << 20, 100);
    assert_eq!(tuning.get(param::WINDOW_LOG), Some(22));
    assert_eq!(tuning.get(param::ENABLE_LDM), Some(1));
    // A small reference fits the level's own match finder: no long-distance matching.
    assert_eq!(tuning_for_prefix(3, Tuning::default(), 1000, 1000).get(param::ENABLE_LDM), None);
    // What the caller set stays.
    let set = Tuning::from_pairs(&[param::WINDOW_LOG, 27]).unwrap();
    assert_eq!(tuning_for_prefix(3, set, 3 << 20, 100).get(param::WINDOW_LOG), Some(27));
  }

  #[test]
  fn rejects_levels_libzstd_rejects_nothing_silently() {
    let mut cctx = CCtx::create();
    let frame = compress(&mut cctx, b"", CompressParams::new(-5, true, 0), None).unwrap();
    assert_eq!(zstd::decode_all(&frame[..]).unwrap(), b"");
  }
}
