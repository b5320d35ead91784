//! Decompression of whole inputs: one or more frames, with or without a recorded content size,
//! skippable frames included, never producing more than a caller's limit. The output is planned
//! first from the input's headers (`plan.rs`); streamed decoding has each frame checked as it
//! goes (`check.rs`).

use zstd::zstd_safe::{self, zstd_sys::ZSTD_ErrorCode, DCtx, DDict, DParameter, InBuffer, OutBuffer, WriteBuf};

use crate::dict::Prepared;
use crate::dict_set::{self, DictionarySet};
use crate::error::Failure;

mod check;
mod plan;

pub use check::FrameCheck;
#[cfg(test)]
use plan::{frame_sizes, FrameSizes};
pub use plan::{
  plan_output, plan_output_with_set, plan_output_with_set_within, plan_output_within, walk_budget, OutputPlan, Planned, Walked,
};

/// libzstd's own default: frames needing a window above 128 MiB are refused unless asked for.
pub const DEFAULT_WINDOW_LOG_MAX: u32 = 27;
/// The window bounds libzstd accepts on 64-bit targets.
pub const MIN_WINDOW_LOG_MAX: u32 = 10;
pub const MAX_WINDOW_LOG_MAX: u32 = if usize::BITS == 32 { 30 } else { 31 };

/// What a decompression may cost: its output, and the window (history) a frame may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
  pub max_output_length: usize,
  pub window_log_max: u32,
}

impl Default for Limits {
  fn default() -> Self {
    Self { max_output_length: usize::MAX, window_log_max: DEFAULT_WINDOW_LOG_MAX }
  }
}

/// Where the decompression loop stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
  /// Every frame ended, and the input with them.
  Finished,
  /// The output has no room left and the input has more to give.
  OutputFull,
}

/// Runs `ZSTD_decompressStream` over the whole input until every frame is done, the output is
/// full, or no progress is possible (the input ended mid-frame).
fn run<C: WriteBuf + ?Sized>(
  dctx: &mut DCtx<'static>,
  input: &mut InBuffer<'_>,
  output: &mut OutBuffer<'_, C>,
  frames: &mut FrameCheck,
  reference: Option<DecodeWith<'_>>,
) -> Result<Stop, Failure> {
  loop {
    // A frame's dictionary is chosen before libzstd reads its header (here the input is whole).
    if let Some(DecodeWith::Set(set)) = reference {
      if !frames.in_frame() {
        dict_set::select_for_frame(dctx, set, &input.src[input.pos()..])?;
      }
    }
    let (input_before, output_before) = (input.pos(), output.pos());
    let hint = dctx.decompress_stream(output, input).map_err(decode_error)?;
    frames.observe(&input.src[input_before..input.pos()], output.pos() - output_before, hint)?;
    let input_done = input.pos() == input.src.len();
    if hint == 0 && input_done {
      return Ok(Stop::Finished);
    }
    // libzstd uses a prefix for one frame: every frame gets it, as one-shot decoding gives it.
    if hint == 0 && matches!(reference, Some(DecodeWith::Prefix(_))) {
      use_reference(dctx, reference)?;
    }
    if input.pos() == input_before && output.pos() == output_before {
      if output.pos() == output.capacity() {
        return Ok(Stop::OutputFull);
      }
      return Err(Failure::Truncated);
    }
  }
}

/// Decompresses into `output`, which must have room for `expected` bytes, the size
/// [`plan_output`] found.
///
/// [`plan_output`] has checked that the input is a sequence of complete frames, so one-shot
/// decoding applies: it decodes straight into `output`, with no window buffer and no copy.
pub fn decompress_exact<C: WriteBuf + ?Sized>(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  output: &mut C,
  expected: usize,
  reference: Option<DecodeWith<'_>>,
) -> Result<(), Failure> {
  if let Some(DecodeWith::Set(_)) = reference {
    return decompress_exact_by_frame(dctx, input, output, expected, reference);
  }
  use_reference(dctx, reference)?;
  match dctx.decompress(output, input) {
    Ok(written) if written == expected => Ok(()),
    // The frames hold more or less than they declare: corrupt, whatever libzstd noticed first
    // (with an exact-size output, more shows up as "destination buffer is too small").
    Ok(_) => Err(Failure::Zstd(corruption_code())),
    Err(code) => Err(decode_error(code)),
  }
}

/// [`decompress_exact`] with a dictionary chosen per frame, which libzstd's one-call decoder cannot
/// do: its streaming decoder, given each frame whole and room for its declared size, decodes it
/// in one pass as well, straight into `output`.
fn decompress_exact_by_frame<C: WriteBuf + ?Sized>(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  output: &mut C,
  expected: usize,
  reference: Option<DecodeWith<'_>>,
) -> Result<(), Failure> {
  let mut input = InBuffer::around(input);
  let mut output = OutBuffer::around(output);
  match run(dctx, &mut input, &mut output, &mut FrameCheck::default(), reference)? {
    Stop::Finished if output.pos() == expected => Ok(()),
    // The frames hold more than they declare (FrameCheck reports one that holds less).
    _ => Err(Failure::Zstd(corruption_code())),
  }
}

/// Decompresses into a buffer that starts at `initial` bytes and doubles, failing as soon as
/// the output would pass the limit.
pub fn decompress_growable(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  initial: usize,
  limits: Limits,
  reference: Option<DecodeWith<'_>>,
) -> Result<Vec<u8>, Failure> {
  use_reference(dctx, reference)?;
  let max_output_length = limits.max_output_length;
  dctx.set_parameter(DParameter::WindowLogMax(limits.window_log_max)).map_err(Failure::Zstd)?;
  // One byte past the limit tells "exactly at the limit" from "over it".
  let capacity_limit = max_output_length.saturating_add(1);
  let mut output: Vec<u8> = Vec::new();
  reserve_to(&mut output, initial.clamp(1, capacity_limit))?;
  let mut input = InBuffer::around(input);
  let mut frames = FrameCheck::default();
  loop {
    let position = output.len();
    let stop = run(dctx, &mut input, &mut OutBuffer::around_pos(&mut output, position), &mut frames, reference)?;
    if output.len() > max_output_length || (stop == Stop::OutputFull && output.capacity() >= capacity_limit) {
      return Err(Failure::OutputTooLarge { limit: max_output_length, declared: None });
    }
    match stop {
      Stop::Finished => return Ok(output),
      Stop::OutputFull => {
        let grown = output.capacity().saturating_mul(2).min(capacity_limit);
        reserve_to(&mut output, grown)?;
      }
    }
  }
}

/// What frames are decoded against besides their own content.
#[derive(Clone, Copy)]
pub enum DecodeWith<'a> {
  Dictionary(&'a DDict<'static>),
  /// The old version of the data, for patch-from (`ZSTD_DCtx_refPrefix`).
  Prefix(&'a [u8]),
  /// Each frame's dictionary, chosen by its ID as the frame starts (`dict_set`).
  Set(&'a DictionarySet),
}

/// Makes `dctx` decode with `dictionary`. The context must be reset or freed before the
/// dictionary is dropped (giving a pooled context back resets it).
pub(crate) fn use_dictionary(dctx: &mut DCtx<'static>, dictionary: Option<&DDict<'static>>) -> Result<(), Failure> {
  use_reference(dctx, dictionary.map(DecodeWith::Dictionary))
}

/// Makes `dctx` decode with `reference` (a prefix: for its next frame). The context must be
/// reset or freed before the reference goes (giving a pooled context back resets it).
pub(crate) fn use_reference(dctx: &mut DCtx<'static>, reference: Option<DecodeWith<'_>>) -> Result<(), Failure> {
  match reference {
    None => Ok(()),
    Some(DecodeWith::Dictionary(ddict)) => crate::ffi::ref_ddict(dctx, ddict).map_err(Failure::Zstd),
    Some(DecodeWith::Prefix(prefix)) => crate::ffi::ref_decompress_prefix(dctx, prefix).map_err(Failure::Zstd),
    // Chosen frame by frame, as each starts.
    Some(DecodeWith::Set(_)) => Ok(()),
  }
}

/// The window limit for frames decoded against a prefix of `prefix_len` bytes: what the caller
/// allows, or the window that patch-from compression gives a reference that large, as the zstd
/// tool lets a reference raise its memory limit.
pub fn window_log_max_for_prefix(window_log_max: u32, prefix_len: usize) -> u32 {
  let reach = 64 - (prefix_len as u64).leading_zeros();
  window_log_max.max(reach.min(MAX_WINDOW_LOG_MAX))
}

/// Decompresses into a new native buffer: the whole path, as the addon takes it, minus the
/// JavaScript Buffers (for tests, benches and the fuzzer).
pub fn decompress_to_vec(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  limits: Limits,
  dictionary: Option<&Prepared>,
) -> Result<Vec<u8>, Failure> {
  let ddict = dictionary.map(|dictionary| DecodeWith::Dictionary(dictionary.ddict()));
  planned_to_vec(dctx, input, limits, plan_output(input, limits, dictionary)?, ddict)
}

/// [`decompress_to_vec`] with each frame's dictionary chosen from `set`.
pub fn decompress_to_vec_with_set(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  limits: Limits,
  set: &DictionarySet,
) -> Result<Vec<u8>, Failure> {
  planned_to_vec(dctx, input, limits, plan_output_with_set(input, limits, set)?, Some(DecodeWith::Set(set)))
}

/// Decompresses into a new native buffer as `plan` says.
fn planned_to_vec(
  dctx: &mut DCtx<'static>,
  input: &[u8],
  limits: Limits,
  plan: OutputPlan,
  reference: Option<DecodeWith<'_>>,
) -> Result<Vec<u8>, Failure> {
  match plan {
    OutputPlan::Exact(len) => {
      let mut output = Vec::new();
      reserve_to(&mut output, len)?;
      decompress_exact(dctx, input, &mut output, len, reference)?;
      Ok(output)
    }
    OutputPlan::Growable(initial) => decompress_growable(dctx, input, initial, limits, reference),
  }
}

fn reserve_to(output: &mut Vec<u8>, capacity: usize) -> Result<(), Failure> {
  output.try_reserve_exact(capacity.saturating_sub(output.len())).map_err(|_| Failure::OutOfMemory { bytes: capacity })
}

/// A libzstd decoding error as reported: a frame that holds more than it declares shows up as
/// "destination buffer is too small" (the output was sized from the declaration), which is
/// corruption of the input, not a mistake of the caller's.
pub(crate) fn decode_error(code: usize) -> Failure {
  if zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall) {
    return Failure::Zstd(corruption_code());
  }
  Failure::Zstd(code)
}

fn corruption_code() -> usize {
  crate::error::zstd_error(ZSTD_ErrorCode::ZSTD_error_corruption_detected)
}

#[cfg(test)]
mod tests;
