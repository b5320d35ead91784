//! Decompression of whole inputs: one or more frames, with or without a recorded content size,
//! skippable frames included, never producing more than a caller's limit.

use zstd::zstd_safe::{self, zstd_sys::ZSTD_ErrorCode, DCtx, DDict, DParameter, InBuffer, OutBuffer, WriteBuf};

use crate::dict::Prepared;
use crate::dict_set::{self, DictionarySet};
use crate::error::Failure;

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

/// What the frame and block headers of an input say about its decompressed size.
#[derive(Debug, PartialEq, Eq)]
struct FrameSizes {
  /// The sum of the content sizes the frames declare, if every frame declares one.
  declared: Option<u64>,
  /// The most the frames' blocks can produce: raw and RLE blocks give their exact size, a
  /// compressed block at most the frame's block size.
  bound: u64,
  /// The largest window a frame asks for.
  window: u64,
  /// The dictionary some frame was made with, if any.
  dictionary: Option<u32>,
  /// The first dictionary a frame was made with that the set walked against lacks.
  unmatched: Option<u32>,
  /// How many frames and blocks the walk read.
  walked: Walked,
  /// Whether the walk read every header (else it ran out of budget, and the fields above cover
  /// the frames it read).
  complete: bool,
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
fn frame_header(bytes: &[u8]) -> Option<zstd_safe::zstd_sys::ZSTD_FrameHeader> {
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
fn frame_sizes(input: &[u8], set: Option<&DictionarySet>, mut budget: usize) -> Option<FrameSizes> {
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

/// Checks each frame as libzstd's streaming decoder goes through it, where that decoder is more
/// lenient than its one-call decoder (and the format), so that how an input is cut into chunks
/// never changes what it decodes to:
/// - a frame must decode to exactly the size its header declares: the streaming decoder does
///   not check that when a frame's last block is empty;
/// - a compressed block must not be empty: the streaming decoder takes one as an empty block
///   when the block's header and what follows arrive in different calls.
///
/// It is told, call by call, what each `ZSTD_decompressStream` consumed and produced, and the
/// hint it returned (0 at the end of a frame); one call never goes past the end of a frame, so
/// each frame's first bytes are its header.
#[derive(Debug, Default)]
pub struct FrameCheck {
  /// The current frame's first bytes, as many as a frame header can take.
  header: Vec<u8>,
  produced: u64,
  in_frame: bool,
  walk: Walk,
}

/// Where a frame's bytes have got to, block by block.
#[derive(Debug, Default, Clone, Copy)]
enum Walk {
  /// In the frame header (its bytes go to `FrameCheck::header`).
  #[default]
  Header,
  /// In a block header: `have` of its three bytes so far.
  BlockHeader { bytes: [u8; 3], have: usize },
  /// In a block's content, or in a skippable frame's, or in the checksum: `left` bytes to go.
  Skip { left: u64, then: Then },
  /// Past what this check knows (an unknown magic number, a reserved block type): libzstd
  /// reports those itself.
  Off,
}

/// What comes after the bytes a `Walk::Skip` goes over.
#[derive(Debug, Clone, Copy)]
enum Then {
  Block,
  Checksum,
  EndOfFrame,
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;

impl FrameCheck {
  /// Whether some of a frame has been seen and not its end: false at a frame boundary.
  pub fn in_frame(&self) -> bool {
    self.in_frame
  }

  pub fn observe(&mut self, consumed: &[u8], produced: usize, hint: usize) -> Result<(), Failure> {
    if consumed.is_empty() && produced == 0 {
      // A call that took and gave nothing says nothing about the frame.
      return Ok(());
    }
    if !self.in_frame {
      self.header.clear();
      self.produced = 0;
      self.in_frame = true;
      self.walk = Walk::Header;
    }
    self.walk(consumed)?;
    self.produced += produced as u64;
    if hint == 0 {
      self.in_frame = false;
      let declared =
        frame_header(&self.header).filter(|header| header.frameType == zstd_safe::zstd_sys::ZSTD_FrameType_e::ZSTD_frame);
      let declared = declared
        .map(|header| header.frameContentSize)
        .filter(|&size| size != zstd_safe::zstd_sys::ZSTD_CONTENTSIZE_UNKNOWN as u64);
      if declared.is_some_and(|declared| declared != self.produced) {
        return Err(Failure::Zstd(corruption_code()));
      }
    }
    Ok(())
  }

  /// The size of the current frame's header, once enough of it has come to tell.
  fn header_size(&self) -> Option<Result<usize, ()>> {
    let magic = u32::from_le_bytes(self.header.get(..4)?.try_into().ok()?);
    if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
      return Some(Ok(8));
    }
    if magic != ZSTD_MAGIC {
      return Some(Err(()));
    }
    let descriptor = *self.header.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    let dictionary_id = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size = [usize::from(single_segment), 2, 4, 8][usize::from(descriptor >> 6)];
    Some(Ok(5 + usize::from(!single_segment) + dictionary_id + content_size))
  }

  fn walk(&mut self, mut bytes: &[u8]) -> Result<(), Failure> {
    while !bytes.is_empty() {
      match self.walk {
        Walk::Off => return Ok(()),
        Walk::Header => {
          let target = match self.header_size() {
            Some(Err(())) => {
              self.walk = Walk::Off;
              continue;
            }
            Some(Ok(size)) => size,
            // Not enough to tell yet: the magic number and the descriptor.
            None => 5,
          };
          let take = target.saturating_sub(self.header.len()).min(bytes.len());
          self.header.extend_from_slice(&bytes[..take]);
          bytes = &bytes[take..];
          if self.header_size() == Some(Ok(self.header.len())) {
            let magic = u32::from_le_bytes([self.header[0], self.header[1], self.header[2], self.header[3]]);
            self.walk = if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
              let left = u32::from_le_bytes([self.header[4], self.header[5], self.header[6], self.header[7]]);
              Walk::Skip { left: u64::from(left), then: Then::EndOfFrame }
            } else {
              Walk::BlockHeader { bytes: [0; 3], have: 0 }
            };
          }
        }
        Walk::BlockHeader { bytes: mut header, have } => {
          let take = (3 - have).min(bytes.len());
          header[have..have + take].copy_from_slice(&bytes[..take]);
          bytes = &bytes[take..];
          if have + take < 3 {
            self.walk = Walk::BlockHeader { bytes: header, have: have + take };
            continue;
          }
          let value = u32::from_le_bytes([header[0], header[1], header[2], 0]);
          let (last, kind, size) = (value & 1 != 0, (value >> 1) & 3, u64::from(value >> 3));
          let then = match (last, self.header[4] & 4 != 0) {
            (false, _) => Then::Block,
            (true, true) => Then::Checksum,
            (true, false) => Then::EndOfFrame,
          };
          self.walk = match kind {
            0 => Walk::Skip { left: size, then },
            1 => Walk::Skip { left: 1, then },
            2 if size == 0 => return Err(Failure::Zstd(corruption_code())),
            2 => Walk::Skip { left: size, then },
            _ => Walk::Off,
          };
          self.settle();
        }
        Walk::Skip { left, then } => {
          let take = usize::try_from(left).map_or(bytes.len(), |left| left.min(bytes.len()));
          bytes = &bytes[take..];
          self.walk = Walk::Skip { left: left - take as u64, then };
          self.settle();
        }
      }
    }
    Ok(())
  }

  /// Moves on from a `Skip` that has nothing left.
  fn settle(&mut self) {
    while let Walk::Skip { left: 0, then } = self.walk {
      self.walk = match then {
        Then::Block => Walk::BlockHeader { bytes: [0; 3], have: 0 },
        Then::Checksum => Walk::Skip { left: 4, then: Then::EndOfFrame },
        // Whatever follows in this frame is for libzstd to refuse.
        Then::EndOfFrame => Walk::Off,
      };
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
