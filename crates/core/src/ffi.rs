//! Every foreign call of the core that `zstd-safe` does not make safe, each in one function
//! with its `unsafe` block: libzstd's parameter and header functions, dictionary training, the
//! references a context keeps past the borrow Rust sees, and glibc's `malloc_trim`. Nothing
//! else in the core is `unsafe`.

use zstd::zstd_safe::zstd_sys::{self, ZSTD_FrameHeader};
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict, ErrorCode};

/// libzstd's bounds for `parameter` (`ZSTD_cParam_getBounds`), or `None` if this build has no
/// such parameter.
pub fn param_bounds(parameter: zstd_sys::ZSTD_cParameter) -> Option<(i32, i32)> {
  // SAFETY: pure functions of their arguments.
  let (bounds, failed) = unsafe {
    let bounds = zstd_sys::ZSTD_cParam_getBounds(parameter);
    (bounds, zstd_sys::ZSTD_isError(bounds.error) != 0)
  };
  (!failed).then_some((bounds.lowerBound, bounds.upperBound))
}

/// The parameters `level` uses for an input of `size` bytes against a dictionary (or prefix)
/// of `dictionary_size` (`ZSTD_getCParams`).
#[inline]
pub fn level_params(level: i32, size: u64, dictionary_size: usize) -> zstd_sys::ZSTD_compressionParameters {
  // SAFETY: a pure function of its arguments.
  unsafe { zstd_sys::ZSTD_getCParams(level, size, dictionary_size) }
}

/// The header of the frame that `bytes` start with (`ZSTD_getFrameHeader`), and libzstd's
/// status: 0 when it was read whole, else how many bytes it needs; or libzstd's error code.
pub fn frame_header(bytes: &[u8]) -> Result<(ZSTD_FrameHeader, usize), ErrorCode> {
  // SAFETY: ZSTD_FrameHeader is plain integers, for which all zeroes is a valid value; libzstd
  // reads at most `bytes.len()` bytes from `bytes` and writes only `header`; ZSTD_isError is a
  // pure function of its argument.
  let (header, status, failed) = unsafe {
    let mut header: ZSTD_FrameHeader = std::mem::zeroed();
    let status = zstd_sys::ZSTD_getFrameHeader(&mut header, bytes.as_ptr().cast(), bytes.len());
    (header, status, zstd_sys::ZSTD_isError(status) != 0)
  };
  if failed {
    Err(status)
  } else {
    Ok((header, status))
  }
}

/// How libzstd's trainers are asked to train: the algorithm and its parameters, each 0 for
/// libzstd's default (or, for `k` and `d`, for the optimizer to choose).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainParams {
  pub cover: bool,
  pub k: u32,
  pub d: u32,
  /// fastCover only: log2 of its frequency table, and how much it skips.
  pub f: u32,
  pub accel: u32,
  pub steps: u32,
  /// The share of the samples trained on; the optimizer tests on the rest.
  pub split_point: f64,
  pub threads: u32,
  pub dict_id: u32,
  pub level: i32,
}

/// What a dictionary is built from, besides samples.
pub enum Build<'a> {
  /// libzstd's cover or fastCover trainer: its optimizer when `k` or `d` is left to it (as
  /// `zstd --train` does), else one training.
  Train(TrainParams),
  /// `content` (the end of it, if it does not fit) and the entropy statistics of the samples
  /// compressed against it, for `level`, with `dict_id` (0 for one derived from the content).
  Finalize { content: &'a [u8], level: i32, dict_id: u32 },
}

/// Builds a dictionary into `dictionary` from `samples`, given end to end, `sizes[i]` bytes each
/// (which must add up to `samples.len()`), as `build` says: its length and, for a training, the
/// parameters used (the optimizer's choice of `k` and `d`); or libzstd's error code.
pub fn build(
  dictionary: &mut [u8],
  samples: &[u8],
  sizes: &[usize],
  build: Build<'_>,
) -> Result<(usize, Option<TrainParams>), usize> {
  debug_assert_eq!(sizes.iter().sum::<usize>(), samples.len());
  let count =
    u32::try_from(sizes.len()).map_err(|_| crate::error::zstd_error(zstd_sys::ZSTD_ErrorCode::ZSTD_error_srcSize_wrong))?;
  let (dict, dict_len, samples_at, sizes_at) =
    (dictionary.as_mut_ptr().cast(), dictionary.len(), samples.as_ptr().cast(), sizes.as_ptr());
  let z_params = |level, dict_id| zstd_sys::ZDICT_params_t { compressionLevel: level, notificationLevel: 0, dictID: dict_id };
  let mut chosen = None;
  // SAFETY: the parameter structs are plain integers and floats, filled in whole; libzstd writes
  // at most `dictionary.len()` bytes into `dictionary` (distinct from `content`: Rust borrows),
  // reads `content` whole and `samples` as `sizes` say (they add up to its length), and writes back
  // only the parameter struct it is given; ZDICT_isError is a pure function.
  let (written, failed) = unsafe {
    let written = match build {
      Build::Finalize { content, level, dict_id } => zstd_sys::ZDICT_finalizeDictionary(
        dict,
        dict_len,
        content.as_ptr().cast(),
        content.len(),
        samples_at,
        sizes_at,
        count,
        z_params(level, dict_id),
      ),
      Build::Train(params) if params.cover => {
        let mut cover = zstd_sys::ZDICT_cover_params_t {
          k: params.k,
          d: params.d,
          steps: params.steps,
          nbThreads: params.threads,
          splitPoint: params.split_point,
          shrinkDict: 0,
          shrinkDictMaxRegression: 0,
          zParams: z_params(params.level, params.dict_id),
        };
        let written = if params.k == 0 || params.d == 0 {
          zstd_sys::ZDICT_optimizeTrainFromBuffer_cover(dict, dict_len, samples_at, sizes_at, count, &mut cover)
        } else {
          zstd_sys::ZDICT_trainFromBuffer_cover(dict, dict_len, samples_at, sizes_at, count, cover)
        };
        chosen = Some(TrainParams { k: cover.k, d: cover.d, ..params });
        written
      }
      Build::Train(params) => {
        let mut fast = zstd_sys::ZDICT_fastCover_params_t {
          k: params.k,
          d: params.d,
          f: params.f,
          steps: params.steps,
          nbThreads: params.threads,
          splitPoint: params.split_point,
          accel: params.accel,
          shrinkDict: 0,
          shrinkDictMaxRegression: 0,
          zParams: z_params(params.level, params.dict_id),
        };
        let written = if params.k == 0 || params.d == 0 {
          zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(dict, dict_len, samples_at, sizes_at, count, &mut fast)
        } else {
          zstd_sys::ZDICT_trainFromBuffer_fastCover(dict, dict_len, samples_at, sizes_at, count, fast)
        };
        chosen = Some(TrainParams { k: fast.k, d: fast.d, ..params });
        written
      }
    };
    (written, zstd_sys::ZDICT_isError(written) != 0)
  };
  if failed {
    Err(written)
  } else {
    Ok((written, chosen))
  }
}

// The references below outlive the borrow they are made from: libzstd keeps a pointer to the
// dictionary (or prefix) in the context. Every caller resets or frees the context before what it
// refers to goes (a pooled context is reset as it is given back, and freed if it is not).

/// `value` with its borrow widened to `'static`, for a context to refer to.
///
/// # Safety
/// The context that is given it must be reset or freed before `value` goes (see above).
unsafe fn until_reset<T: ?Sized>(value: &T) -> &'static T {
  &*std::ptr::from_ref(value)
}

/// Makes `cctx` compress with `cdict` until it is reset or freed, which must happen first.
pub fn ref_cdict(cctx: &mut CCtx<'static>, cdict: &CDict<'static>) -> Result<(), ErrorCode> {
  // SAFETY: see above: the context refers to the dictionary only until reset or freed.
  cctx.ref_cdict(unsafe { until_reset(cdict) }).map(drop)
}

/// Makes `cctx` compress its next frame against `prefix`, which must outlive that use.
pub fn ref_compress_prefix(cctx: &mut CCtx<'static>, prefix: &[u8]) -> Result<(), ErrorCode> {
  // SAFETY: see above: the context refers to the prefix only until reset or freed.
  cctx.ref_prefix(unsafe { until_reset(prefix) }).map(drop)
}

/// Makes `dctx` decode with `ddict` until it is reset or freed, which must happen first.
pub fn ref_ddict(dctx: &mut DCtx<'static>, ddict: &DDict<'static>) -> Result<(), ErrorCode> {
  // SAFETY: see above: the context refers to the dictionary only until reset or freed.
  dctx.ref_ddict(unsafe { until_reset(ddict) }).map(drop)
}

/// Makes `dctx` decode its next frame against `prefix`, which must outlive that use.
pub fn ref_decompress_prefix(dctx: &mut DCtx<'static>, prefix: &[u8]) -> Result<(), ErrorCode> {
  // SAFETY: see above: the context refers to the prefix only until reset or freed.
  dctx.ref_prefix(unsafe { until_reset(prefix) }).map(drop)
}

/// Gives the allocator's free pages back to the system (glibc keeps them otherwise).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim() {
  extern "C" {
    fn malloc_trim(pad: usize) -> std::ffi::c_int;
  }
  // SAFETY: glibc's malloc_trim takes no pointers and is thread-safe (it locks each arena).
  unsafe {
    malloc_trim(0);
  }
}

/// Other allocators give large blocks back when they are freed.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() {}
