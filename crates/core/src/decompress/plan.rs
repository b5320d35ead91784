//! Planning a decompression before any work: the frame and block headers of an input walked for
//! what they declare and what they can produce, against the caller's limits, to size the output.

use zstd::zstd_safe;

use super::Limits;
use crate::dict::Prepared;
use crate::dict_set::DictionarySet;
use crate::error::Failure;

/// How a decompression sizes its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPlan {
  /// Every frame records its content size; this is their sum, and the input's blocks can
  /// hold that much, so the output can be allocated once, exactly.
  Exact(usize),
  /// Some frame does not record its size, or the input's blocks cannot produce what the
  /// frames declare: start with this much room and grow, up to the limit.
  Growable(usize),
}

/// What the frame and block headers of an input say about its decompressed size (seen by the
/// module's tests too).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct FrameSizes {
  /// The sum of the content sizes the frames declare, if every frame declares one.
  pub(super) declared: Option<u64>,
  /// The most the frames' blocks can produce: raw and RLE blocks give their exact size, a
  /// compressed block at most the frame's block size.
  pub(super) bound: u64,
  /// The largest window a frame asks for.
  pub(super) window: u64,
  /// The dictionary some frame was made with, if any.
  pub(super) dictionary: Option<u32>,
  /// The first dictionary a frame was made with that the set walked against lacks.
  pub(super) unmatched: Option<u32>,
  /// How many frames and blocks the walk read.
  pub(super) walked: Walked,
  /// Whether the walk read every header (else it ran out of budget, and the fields above cover
  /// the frames it read).
  pub(super) complete: bool,
}

/// How many frames (skippable ones too) and blocks the frame walk read: what decoding them costs
/// besides their bytes. Of the blocks, how many are compressed, each of which may carry tables
/// to build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
  pub frames: u64,
  pub blocks: u64,
  pub compressed: u64,
}

/// A plan, and what the walk that made it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
  pub plan: OutputPlan,
  pub walked: Walked,
}

/// The header of the frame that `bytes` starts with, if they hold all of it.
pub(super) fn frame_header(bytes: &[u8]) -> Option<zstd_safe::zstd_sys::ZSTD_FrameHeader> {
  crate::frame::header(bytes).ok()
}

/// What the walk of an async call, which runs on the JavaScript thread, may read of an input of
/// `input_len` bytes: this many block headers, plus one for every [`BYTES_PER_WALKED_HEADER`]
/// bytes, a frame header counting as [`FRAME_HEADER_WEIGHT`]. A block header takes about 4 ns to
/// read, so the walk holds the thread about 16 µs at most, plus about twice what copying the
/// input costs there. Inputs of a few frames are within it whatever their size (a block holds up
/// to 128 KiB), and so are a few hundred small frames. A hostile frame of a million empty 3-byte
/// blocks held the thread 4 ms to walk, and 5,000 frames of 45 bytes about 100 µs. An input past
/// the budget is planned, in full, where it is decoded: on the threadpool.
const WALK_HEADERS_FREE: usize = 4096;
const BYTES_PER_WALKED_HEADER: usize = 16;
/// A frame header takes several times as long to read as a block header: 17 ns against 4.4 in a
/// loop over many, and 1,400 frames of 32 bytes held the thread 75 µs before going to the
/// threadpool, against 21 µs for one frame of their size (Node 20, the 2-core VM, 2026-12-04).
const FRAME_HEADER_WEIGHT: usize = 10;

/// The walk budget of an async call on `input_len` bytes (see [`WALK_HEADERS_FREE`]).
pub fn walk_budget(input_len: usize) -> usize {
  WALK_HEADERS_FREE.saturating_add(input_len / BYTES_PER_WALKED_HEADER)
}

/// Takes `weight` from what the walk may still read, if that much is left.
fn spend(budget: &mut usize, weight: usize) -> bool {
  let left = budget.checked_sub(weight);
  *budget = left.unwrap_or(0);
  left.is_some()
}

/// Walks the frame and block headers of `input` (cheap: a few bytes per 128 KiB block), or
/// `None` if it is not exactly a sequence of complete frames; decoding then reports why. Each
/// frame's dictionary is looked up in `set`, when given. The walk stops, incomplete, once it
/// has spent `budget` (see [`walk_budget`]).
pub(super) fn frame_sizes(input: &[u8], set: Option<&DictionarySet>, mut budget: usize) -> Option<FrameSizes> {
  use zstd_safe::zstd_sys::{ZSTD_FrameType_e, ZSTD_CONTENTSIZE_UNKNOWN};

  if input.is_empty() {
    return None;
  }
  let mut sizes = FrameSizes {
    declared: Some(0),
    bound: 0,
    window: 0,
    dictionary: None,
    unmatched: None,
    walked: Walked::default(),
    complete: false,
  };
  let mut rest = input;
  while !rest.is_empty() {
    if !spend(&mut budget, FRAME_HEADER_WEIGHT) {
      return Some(sizes);
    }
    let header = frame_header(rest)?;
    sizes.walked.frames += 1;
    rest = rest.get(header.headerSize as usize..)?;
    if header.frameType == ZSTD_FrameType_e::ZSTD_skippableFrame {
      rest = rest.get(usize::try_from(header.frameContentSize).ok()?..)?;
      continue;
    }
    sizes.window = sizes.window.max(header.windowSize);
    if header.dictID != 0 {
      sizes.dictionary.get_or_insert(header.dictID);
      if set.is_some_and(|set| sizes.unmatched.is_none() && set.get(header.dictID).is_none()) {
        sizes.unmatched = Some(header.dictID);
      }
    }
    sizes.declared = match header.frameContentSize {
      size if size == ZSTD_CONTENTSIZE_UNKNOWN as u64 => None,
      size => sizes.declared.and_then(|sum| sum.checked_add(size)),
    };
    let block_size_max = u64::from(header.blockSizeMax);
    loop {
      if !spend(&mut budget, 1) {
        return Some(sizes);
      }
      let block = rest.get(..3)?;
      sizes.walked.blocks += 1;
      let block = u32::from(block[0]) | u32::from(block[1]) << 8 | u32::from(block[2]) << 16;
      let (last, kind, size) = (block & 1 == 1, (block >> 1) & 3, (block >> 3) as usize);
      let (consumed, produced) = match kind {
        0 => (size, size as u64),
        1 => (1, size as u64),
        // A compressed block has at least a literals header and a sequences header (libzstd's
        // MIN_CBLOCK_SIZE): a shorter one produces nothing (libzstd's streaming decoder skips an
        // empty one as if it were no block).
        2 if size < 2 => (size, 0),
        2 => {
          sizes.walked.compressed += 1;
          (size, block_size_max)
        }
        _ => return None,
      };
      if produced > block_size_max {
        return None;
      }
      sizes.bound = sizes.bound.checked_add(produced)?;
      rest = rest.get(3 + consumed..)?;
      if last {
        break;
      }
    }
    if header.checksumFlag != 0 {
      rest = rest.get(4..)?;
    }
  }
  sizes.complete = true;
  Some(sizes)
}

/// Sizes the output of decompressing `input` without trusting what a header merely claims:
/// a declared size is used only if the input's blocks can produce that much.
/// A frame made with a dictionary is refused up front, naming it, unless that dictionary is given.
pub fn plan_output(input: &[u8], limits: Limits, dictionary: Option<&Prepared>) -> Result<OutputPlan, Failure> {
  whole(input, limits, plan_output_within(input, limits, dictionary, usize::MAX))
}

/// [`plan_output`] for frames that each choose their dictionary from `set` (or use none): a frame
/// whose dictionary the set lacks is refused up front, naming it.
pub fn plan_output_with_set(input: &[u8], limits: Limits, set: &DictionarySet) -> Result<OutputPlan, Failure> {
  whole(input, limits, plan_output_with_set_within(input, limits, set, usize::MAX))
}

/// [`plan_output`], the walk stopping once it has spent `budget` ([`walk_budget`]): `None` if
/// it did, and the input is then planned with no budget, where it is decoded.
pub fn plan_output_within(
  input: &[u8],
  limits: Limits,
  dictionary: Option<&Prepared>,
  budget: usize,
) -> Result<Option<Planned>, Failure> {
  planned(input, limits, frame_sizes(input, None, budget), |sizes| match sizes.dictionary {
    Some(needed) if dictionary.map(Prepared::id) != Some(needed) => {
      Err(Failure::DictionaryMismatch { needed, given: dictionary.map(Prepared::id) })
    }
    _ => Ok(()),
  })
}

/// [`plan_output_with_set`], within `budget` as [`plan_output_within`] is.
pub fn plan_output_with_set_within(
  input: &[u8],
  limits: Limits,
  set: &DictionarySet,
  budget: usize,
) -> Result<Option<Planned>, Failure> {
  planned(input, limits, frame_sizes(input, Some(set), budget), |sizes| match sizes.unmatched {
    Some(needed) => Err(Failure::DictionaryNotInSet { needed, given: set.ids() }),
    None => Ok(()),
  })
}

/// The plan of a walk with no budget, which cannot run out (a header takes at least a byte).
fn whole(input: &[u8], limits: Limits, planned: Result<Option<Planned>, Failure>) -> Result<OutputPlan, Failure> {
  match planned? {
    Some(Planned { plan, .. }) => Ok(plan),
    None => plan_sizes(input, limits, None),
  }
}

/// The plan for what a walk found, once `check` (the dictionaries) passes; `None` for a walk
/// that ran out of budget.
fn planned(
  input: &[u8],
  limits: Limits,
  sizes: Option<FrameSizes>,
  check: impl FnOnce(&FrameSizes) -> Result<(), Failure>,
) -> Result<Option<Planned>, Failure> {
  if let Some(sizes) = &sizes {
    if !sizes.complete {
      return Ok(None);
    }
    check(sizes)?;
  }
  let walked = sizes.as_ref().map_or(Walked::default(), |sizes| sizes.walked);
  Ok(Some(Planned { plan: plan_sizes(input, limits, sizes)?, walked }))
}

/// The plan for what the frame walk found (`None`: an input that decoding will refuse).
fn plan_sizes(input: &[u8], limits: Limits, sizes: Option<FrameSizes>) -> Result<OutputPlan, Failure> {
  let max_output_length = limits.max_output_length;
  let declared = sizes.as_ref().and_then(|sizes| sizes.declared);
  if let Some(declared) = declared.filter(|&declared| declared > max_output_length as u64) {
    return Err(Failure::OutputTooLarge { limit: max_output_length, declared: Some(declared) });
  }
  // One-shot decoding needs no window buffer, but a frame is refused the same way whichever
  // path decodes it (the growing path has libzstd check it).
  if let Some(window) = sizes.as_ref().map(|sizes| sizes.window).filter(|&window| window > 1u64 << limits.window_log_max) {
    return Err(Failure::WindowTooLarge { window, window_log_max: limits.window_log_max });
  }
  let bound = sizes.as_ref().map_or(u64::MAX, |sizes| sizes.bound);
  if let Some(declared) = declared {
    if declared <= bound {
      return Ok(OutputPlan::Exact(declared as usize));
    }
  }
  // Typical compression ratios are below 4; the buffer doubles from there when they are not.
  let guess = input.len().saturating_mul(4).max(64 * 1024);
  let initial = guess.min(usize::try_from(bound).unwrap_or(usize::MAX)).min(max_output_length.saturating_add(1));
  Ok(OutputPlan::Growable(initial))
}
