//! Frame inspection: what the headers of every frame in an input say (declared content size,
//! window, dictionary, checksum) and how long each frame is, without decoding anything, so that a
//! caller can hold frames against its own limits before it decompresses them.
//!
//! The walk reads each frame's header and its block headers (3 bytes per block, libzstd's
//! `ZSTD_findFrameCompressedSize`), so its work is linear in the input's length whatever the
//! headers claim, and it keeps details of at most as many frames as asked: a megabyte of empty
//! frames costs a count, not a hundred thousand objects. The walk is plain Rust over libzstd's
//! parsing functions; the addon's `frameInfo` export calls it.

use zstd::zstd_safe::{
  self,
  zstd_sys::{ZSTD_ErrorCode, ZSTD_FrameHeader, ZSTD_FrameType_e},
};

use crate::error::Failure;

/// What kind of frame a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
  Zstd,
  /// A skippable frame: opaque data that decoders pass over. `variant` is the low 4 bits of its
  /// magic number (0x184D2A50 to 0x184D2A5F), which applications use to tell their kinds apart.
  Skippable {
    variant: u32,
  },
}

/// What one frame's header says, and how many bytes of the input the frame spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
  pub kind: Kind,
  /// The decompressed size the header declares, if it records one; for a skippable frame, the
  /// size of its payload.
  pub content_size: Option<u64>,
  /// The window (history) decoding needs; 0 for a skippable frame.
  pub window_size: u64,
  /// The ID of the dictionary the frame was made with; 0 for none (and for skippable frames).
  pub dictionary_id: u32,
  /// Whether the frame ends with a checksum of its content.
  pub checksum: bool,
  /// The frame's whole length, from its magic number to its checksum.
  pub compressed_size: usize,
}

/// Every frame of an input: the details of the first ones, and totals over all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frames {
  /// The first frames, as many as the caller asked for at most.
  pub details: Vec<Frame>,
  /// How many frames there are, zstd and skippable.
  pub count: u64,
  /// The sum of what the zstd frames declare; `None` if one of them declares nothing. Wider
  /// than any one size: frames may each declare up to 2^64 - 1.
  pub content_size: Option<u128>,
  /// The largest window a zstd frame needs; 0 if there is none.
  pub window_size: u64,
  /// The length of the input, which frames fill exactly.
  pub compressed_size: usize,
}

/// Walks every frame of `input`, keeping the details of the first `max_details`. Fails as
/// decompressing would on input that is not exactly a sequence of whole frames: empty, cut
/// short, with bytes after the last frame that start none, or with a header libzstd refuses.
/// It reads headers only: a frame whose blocks are corrupt inside passes, and fails when
/// decoded.
pub fn walk(input: &[u8], max_details: usize) -> std::result::Result<Frames, Failure> {
  if input.is_empty() {
    // As decompressing does: an empty input holds no frame, so it ended before the first one.
    return Err(Failure::Truncated);
  }
  let mut frames = Frames { details: Vec::new(), count: 0, content_size: Some(0), window_size: 0, compressed_size: input.len() };
  let mut rest = input;
  while !rest.is_empty() {
    let frame = frame_at(rest)?;
    if frames.details.len() < max_details {
      // Fallible, so that a huge `max_details` over a huge input fails with a code, not an abort.
      let bytes = (frames.details.len() + 1).saturating_mul(std::mem::size_of::<Frame>());
      frames.details.try_reserve(1).map_err(|_| Failure::OutOfMemory { bytes })?;
      frames.details.push(frame);
    }
    frames.count += 1;
    if frame.kind == Kind::Zstd {
      frames.window_size = frames.window_size.max(frame.window_size);
      frames.content_size = frames.content_size.zip(frame.content_size).map(|(sum, size)| sum + u128::from(size));
    }
    // libzstd measured the frame within `rest`, and at least 8 bytes long (a header): this never
    // fails, and each turn moves on.
    rest = rest.get(frame.compressed_size..).ok_or(Failure::Truncated)?;
  }
  Ok(frames)
}

/// The frame that `bytes` start with.
fn frame_at(bytes: &[u8]) -> std::result::Result<Frame, Failure> {
  let header = header(bytes)?;
  if header.frameType == ZSTD_FrameType_e::ZSTD_skippableFrame {
    // Its 8-byte header and the payload it declares, which must be there: a payload cut short
    // is truncated input, as decompressing says (libzstd's own walk refuses a declared size
    // whose sum with the header passes 2^32 as an unsupported parameter instead).
    let compressed_size = usize::try_from(8 + header.frameContentSize).ok().filter(|&size| size <= bytes.len());
    let compressed_size = compressed_size.ok_or(Failure::Truncated)?;
    return Ok(Frame {
      // libzstd gives a skippable frame's magic variant as its dictionary ID.
      kind: Kind::Skippable { variant: header.dictID },
      content_size: Some(header.frameContentSize),
      window_size: 0,
      dictionary_id: 0,
      checksum: false,
      compressed_size,
    });
  }
  // libzstd reads a declared size of 2^64 - 1 as its "unknown" sentinel; the descriptor says
  // whether the header holds a size at all (its size field, or a single segment's 1-byte one).
  let compressed_size = zstd_safe::find_frame_compressed_size(bytes).map_err(walk_error)?;
  let descriptor = bytes.get(4).copied().unwrap_or(0);
  let records_size = descriptor >> 6 != 0 || descriptor & 0x20 != 0;
  Ok(Frame {
    kind: Kind::Zstd,
    content_size: records_size.then_some(header.frameContentSize),
    window_size: header.windowSize,
    dictionary_id: header.dictID,
    checksum: header.checksumFlag != 0,
    compressed_size,
  })
}

/// The header of the frame that `bytes` start with, as libzstd reads it: `Err` if they are not
/// a frame's start (`ZSTD_error_prefix_unknown`), it has parameters libzstd refuses, or they end
/// within it.
pub(crate) fn header(bytes: &[u8]) -> std::result::Result<ZSTD_FrameHeader, Failure> {
  let (header, status) = crate::ffi::frame_header(bytes).map_err(walk_error)?;
  match status {
    0 => Ok(header),
    // Any other status is how many bytes the header needs: more than there are.
    _ => Err(Failure::Truncated),
  }
}

/// A libzstd error of the walk. An input that ends inside a frame is reported as decompressing
/// reports it: the same code, and a message that says what happened.
fn walk_error(code: usize) -> Failure {
  if zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_srcSize_wrong) {
    return Failure::Truncated;
  }
  Failure::Zstd(code)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn text(len: usize) -> Vec<u8> {
    let words = ["zstd ", "pool ", "frame ", "header ", "block ", "window ", "skippable "];
    words.iter().cycle().flat_map(|w| w.bytes()).take(len).collect()
  }

  /// A frame without a recorded content size, as a streaming encoder writes it.
  fn streamed_frame(data: &[u8], checksum: bool) -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_checksum(checksum).unwrap();
    std::io::Write::write_all(&mut encoder, data).unwrap();
    encoder.finish().unwrap()
  }

  fn skippable(variant: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x50 + variant, 0x2a, 0x4d, 0x18];
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(payload);
    frame
  }

  fn code(outcome: std::result::Result<Frames, Failure>) -> &'static str {
    match outcome {
      Err(failure) => failure.shape().code,
      Ok(frames) => panic!("walked: {frames:?}"),
    }
  }

  #[test]
  fn reads_each_frame_kind() {
    let data = text(300_000);
    let declared = zstd::bulk::compress(&data, 3).unwrap();
    let streamed = streamed_frame(&data, true);
    let metadata = skippable(7, b"metadata");
    let input = [&declared[..], &metadata, &streamed].concat();
    let frames = walk(&input, 10).unwrap();
    assert_eq!(frames.count, 3);
    assert_eq!(frames.compressed_size, input.len());
    assert_eq!(frames.content_size, None);
    let [first, second, third] = frames.details[..] else { panic!("{frames:?}") };
    assert_eq!((first.kind, first.content_size, first.checksum), (Kind::Zstd, Some(300_000), false));
    assert_eq!(first.compressed_size, declared.len());
    // A single-segment frame's window is its content.
    assert_eq!(first.window_size, 300_000);
    assert_eq!(
      second,
      Frame {
        kind: Kind::Skippable { variant: 7 },
        content_size: Some(8),
        window_size: 0,
        dictionary_id: 0,
        checksum: false,
        compressed_size: 16
      }
    );
    assert_eq!((third.kind, third.content_size, third.checksum), (Kind::Zstd, None, true));
    assert_eq!(third.compressed_size, streamed.len());
    assert!(third.window_size >= 1 << 17, "{third:?}");
    assert_eq!(frames.window_size, first.window_size.max(third.window_size));
  }

  #[test]
  fn sums_declared_sizes_when_every_zstd_frame_declares_one() {
    let (a, b) = (text(1000), text(70_000));
    let input = [zstd::bulk::compress(&a, 1).unwrap(), skippable(0, b"xyz"), zstd::bulk::compress(&b, 19).unwrap()].concat();
    assert_eq!(walk(&input, 10).unwrap().content_size, Some(71_000));
    // A skippable frame alone: no zstd frame, nothing to decode.
    let only = walk(&skippable(15, &[]), 10).unwrap();
    assert_eq!((only.count, only.content_size, only.window_size), (1, Some(0), 0));
  }

  #[test]
  fn reads_dictionary_ids() {
    let samples: Vec<Vec<u8>> =
      (0..2000).map(|i| format!("{{\"id\":{i},\"name\":\"user {i}\",\"ok\":true}}").into_bytes()).collect();
    let dictionary = zstd::dict::from_samples(&samples, 4096).unwrap();
    let mut compressor = zstd::bulk::Compressor::with_dictionary(3, &dictionary).unwrap();
    let frame = compressor.compress(&samples[7]).unwrap();
    let id = zstd::zstd_safe::get_dict_id_from_dict(&dictionary).unwrap().get();
    assert_eq!(walk(&frame, 1).unwrap().details[0].dictionary_id, id);
  }

  #[test]
  fn keeps_at_most_the_details_asked_for_and_counts_every_frame() {
    let empty = zstd::bulk::compress(b"", 3).unwrap();
    let one = [&empty[..], &skippable(1, &[])].concat();
    let input = one.repeat(100_000);
    let frames = walk(&input, 1000).unwrap();
    assert_eq!((frames.count, frames.details.len(), frames.content_size), (200_000, 1000, Some(0)));
    assert_eq!(walk(&input, 0).unwrap().details, []);
  }

  #[test]
  fn reports_a_declared_size_of_2_to_the_64_minus_1() {
    // A single-segment header with an 8-byte size of 2^64 - 1, then one raw last block of 1
    // byte: libzstd's own reading calls that size unknown.
    let mut input = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
    input.extend_from_slice(&u64::MAX.to_le_bytes());
    input.extend_from_slice(&[0x09, 0x00, 0x00, b'x']);
    let twice = input.repeat(2);
    let frames = walk(&twice, 2).unwrap();
    assert_eq!(frames.details[0].content_size, Some(u64::MAX));
    assert_eq!(frames.details[0].window_size, u64::MAX);
    assert_eq!(frames.content_size, Some(2 * u128::from(u64::MAX)));
  }

  #[test]
  fn fails_on_input_cut_anywhere_but_between_frames_as_decompressing_does() {
    let parts = [zstd::bulk::compress(&text(200_000), 3).unwrap(), skippable(2, b"tail"), streamed_frame(b"x", true)];
    let input = parts.concat();
    let ends: Vec<usize> = parts.iter().scan(0, |end, part| Some(*end + part.len()).inspect(|&next| *end = next)).collect();
    for cut in 0..=input.len() {
      match walk(&input[..cut], 10) {
        Ok(frames) => assert_eq!(Some(frames.count as usize), ends.iter().position(|&end| end == cut).map(|i| i + 1)),
        Err(failure) => {
          assert!(!ends.contains(&cut), "cut at {cut}: {failure:?}");
          assert_eq!(failure.shape().code, "ZSTD_error_srcSize_wrong", "cut at {cut}");
        }
      }
    }
  }

  #[test]
  fn fails_on_what_is_not_a_frame() {
    assert_eq!(code(walk(b"not a zstd frame", 10)), "ZSTD_error_prefix_unknown");
    // Not even a whole magic number, and not the start of one.
    assert_eq!(code(walk(b"no", 10)), "ZSTD_error_prefix_unknown");
    let frame = zstd::bulk::compress(b"hello", 3).unwrap();
    assert_eq!(code(walk(&[&frame[..], b"junk after it"].concat(), 10)), "ZSTD_error_prefix_unknown");
    // A reserved bit of the descriptor.
    let mut reserved = frame.clone();
    reserved[4] |= 0x08;
    assert_eq!(code(walk(&reserved, 10)), "ZSTD_error_frameParameter_unsupported");
    // A block of the reserved type.
    let mut block = frame.clone();
    block[header(&frame).unwrap().headerSize as usize] |= 0b110;
    assert_eq!(code(walk(&block, 10)), "ZSTD_error_corruption_detected");
  }

  #[test]
  fn fails_on_a_window_libzstd_cannot_use() {
    // Window descriptor 0xF8: a window log of 41, the format's largest.
    let input = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x01, 0x00, 0x00];
    assert_eq!(code(walk(&input, 10)), "ZSTD_error_frameParameter_windowTooLarge");
  }

  #[test]
  fn fails_on_a_skippable_frame_longer_than_the_input() {
    let mut input = skippable(0, b"abc");
    input[4..8].copy_from_slice(&1000u32.to_le_bytes());
    assert_eq!(code(walk(&input, 10)), "ZSTD_error_srcSize_wrong");
    // So long that its length with its header overflows 32 bits: cut short too, as decompressing
    // says (libzstd's own walk calls it an unsupported parameter).
    input[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(code(walk(&input, 10)), "ZSTD_error_srcSize_wrong");
  }
}
