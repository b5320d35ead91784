//! One-shot compression of a byte slice into a standard zstd frame.

use zstd::zstd_safe::{self, CCtx, CDict, CParameter, WriteBuf};

use crate::error::Failure;

/// libzstd's default level (3); level 0 asks libzstd for it too.
pub const DEFAULT_LEVEL: i32 = zstd_safe::zstd_sys::ZSTD_CLEVEL_DEFAULT as i32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressParams {
  pub level: i32,
  pub checksum: bool,
  /// libzstd worker threads (`nbWorkers`); 0 compresses on the calling thread.
  pub workers: u32,
}

impl Default for CompressParams {
  fn default() -> Self {
    Self { level: DEFAULT_LEVEL, checksum: false, workers: 0 }
  }
}

/// Sets a clean context (fresh, or reset with its parameters) up for `params` and `dictionary`.
/// With a dictionary, `cctx` must be reset or freed before `dictionary` is dropped (giving a
/// pooled context back resets it).
pub fn configure(cctx: &mut CCtx<'static>, params: CompressParams, dictionary: Option<&CDict<'static>>) -> Result<(), Failure> {
  if let Some(cdict) = dictionary {
    // SAFETY: the context refers to the dictionary only until reset or freed, before it goes (above).
    let cdict: &'static CDict<'static> = unsafe { &*std::ptr::from_ref(cdict) };
    cctx.ref_cdict(cdict).map_err(Failure::Zstd)?;
  }
  cctx.set_parameter(CParameter::CompressionLevel(params.level)).map_err(Failure::Zstd)?;
  cctx.set_parameter(CParameter::ChecksumFlag(params.checksum)).map_err(Failure::Zstd)?;
  if params.workers > 0 {
    cctx.set_parameter(CParameter::NbWorkers(params.workers)).map_err(Failure::Zstd)?;
  }
  Ok(())
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
  configure(cctx, params, dictionary)?;
  // compress2 knows the whole input, so it writes the content size into the frame header and
  // sizes the window to the input.
  cctx.compress2(output, input).map_err(Failure::Zstd)
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
    compress(&mut reused, &sample(7_000), CompressParams { level: 19, checksum: true, workers: 0 }, None).unwrap();
    reused.reset(zstd_safe::ResetDirective::SessionAndParameters).unwrap();
    let from_reused = compress(&mut reused, &input, CompressParams::default(), None).unwrap();
    let from_fresh = compress(&mut CCtx::create(), &input, CompressParams::default(), None).unwrap();
    assert_eq!(from_reused, from_fresh);
  }

  #[test]
  fn rejects_levels_libzstd_rejects_nothing_silently() {
    let mut cctx = CCtx::create();
    let frame = compress(&mut cctx, b"", CompressParams { level: -5, checksum: true, workers: 0 }, None).unwrap();
    assert_eq!(zstd::decode_all(&frame[..]).unwrap(), b"");
  }
}
