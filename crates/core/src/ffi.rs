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

/// Trains a dictionary for `level` into `dictionary` from `samples`, given end to end, `sizes`
/// bytes each (which must add up to `samples.len()`), with libzstd's fast-cover trainer and its
/// defaults; the dictionary's length, or `None` if training failed.
pub fn train_fast_cover(dictionary: &mut [u8], samples: &[u8], sizes: &[usize], level: i32) -> Option<usize> {
  debug_assert_eq!(sizes.iter().sum::<usize>(), samples.len());
  let count = u32::try_from(sizes.len()).ok()?;
  // SAFETY: the parameters are plain integers, for which all zeroes is valid (and asks libzstd
  // for its defaults); libzstd writes at most `dictionary.len()` bytes into `dictionary` and
  // reads `samples` as `sizes` say, which add up to its length; ZDICT_isError is a pure function.
  let (written, failed) = unsafe {
    let mut params: zstd_sys::ZDICT_fastCover_params_t = std::mem::zeroed();
    // libzstd's own defaults for ZDICT_trainFromBuffer, plus the target level.
    params.d = 8;
    params.steps = 4;
    params.f = 20;
    params.accel = 1;
    params.zParams.compressionLevel = level;
    let written = zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(
      dictionary.as_mut_ptr().cast(),
      dictionary.len(),
      samples.as_ptr().cast(),
      sizes.as_ptr(),
      count,
      &mut params,
    );
    (written, zstd_sys::ZDICT_isError(written) != 0)
  };
  (!failed).then_some(written)
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
