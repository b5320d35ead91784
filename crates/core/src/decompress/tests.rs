use super::*;

fn text(len: usize) -> Vec<u8> {
  let words = ["zstd ", "pool ", "context ", "frame ", "block ", "window ", "level "];
  words.iter().cycle().flat_map(|w| w.bytes()).take(len).collect()
}

fn decompress_all(input: &[u8], limit: usize) -> Result<Vec<u8>, Failure> {
  decompress_to_vec(&mut DCtx::create(), input, Limits { max_output_length: limit, ..Limits::default() }, None)
}

fn unlimited() -> Limits {
  Limits::default()
}

/// A frame without a recorded content size, as a streaming encoder writes it.
fn streamed_frame(data: &[u8]) -> Vec<u8> {
  let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
  std::io::Write::write_all(&mut encoder, data).unwrap();
  encoder.finish().unwrap()
}

#[test]
fn reads_the_sizes_of_every_frame_kind() {
  let data = text(1_000_000);
  let declared = zstd::bulk::compress(&data, 3).unwrap();
  let sizes = frame_sizes(&declared, None, usize::MAX).unwrap();
  assert_eq!(sizes.declared, Some(1_000_000));
  assert!(sizes.bound >= 1_000_000, "{sizes:?}");
  let mut skippable_then_streamed = vec![0x5e, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 7, 7];
  skippable_then_streamed.extend(streamed_frame(&data));
  assert_eq!(frame_sizes(&skippable_then_streamed, None, usize::MAX).unwrap().declared, None);
  assert_eq!(frame_sizes(&declared[..declared.len() - 1], None, usize::MAX), None);
  assert_eq!(frame_sizes(b"", None, usize::MAX), None);
}

#[test]
fn sizes_the_output_exactly_when_frames_declare_it() {
  let data = text(300_000);
  let frame = zstd::bulk::compress(&data, 3).unwrap();
  assert_eq!(plan_output(&frame, unlimited(), None).unwrap(), OutputPlan::Exact(300_000));
  assert_eq!(decompress_all(&frame, usize::MAX).unwrap(), data);
}

#[test]
fn grows_the_output_for_frames_without_a_content_size() {
  let data = text(3_000_000);
  let frame = streamed_frame(&data);
  assert!(matches!(plan_output(&frame, unlimited(), None).unwrap(), OutputPlan::Growable(_)));
  assert_eq!(decompress_all(&frame, usize::MAX).unwrap(), data);
}

#[test]
fn decodes_concatenated_and_skippable_frames() {
  let (a, b) = (text(10_000), text(70_000));
  let mut input = zstd::bulk::compress(&a, 1).unwrap();
  input.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4]);
  input.extend(streamed_frame(&b));
  input.extend(zstd::bulk::compress(&a, 19).unwrap());
  let expected = [&a[..], &b[..], &a[..]].concat();
  assert_eq!(decompress_all(&input, usize::MAX).unwrap(), expected);
}

#[test]
fn stops_at_the_output_limit() {
  let data = text(1_000_000);
  let declared = zstd::bulk::compress(&data, 3).unwrap();
  assert!(matches!(decompress_all(&declared, 999_999), Err(Failure::OutputTooLarge { declared: Some(1_000_000), .. })));
  let undeclared = streamed_frame(&data);
  assert!(matches!(decompress_all(&undeclared, 999_999), Err(Failure::OutputTooLarge { declared: None, .. })));
  assert_eq!(decompress_all(&undeclared, 1_000_000).unwrap(), data);
  assert_eq!(decompress_all(&declared, 1_000_000).unwrap(), data);
}

#[test]
fn reports_truncated_and_empty_input() {
  let frame = zstd::bulk::compress(&text(100_000), 3).unwrap();
  for cut in [0, 1, 5, frame.len() / 2, frame.len() - 1] {
    assert!(matches!(decompress_all(&frame[..cut], usize::MAX), Err(Failure::Truncated)), "cut at {cut}");
  }
}

#[test]
fn does_not_trust_a_header_that_claims_a_terabyte() {
  // A frame header (single segment, 8-byte content size) declaring 1 TiB, then one
  // raw last block of 1 byte.
  let mut input = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
  input.extend_from_slice(&(1u64 << 40).to_le_bytes());
  input.extend_from_slice(&[0x09, 0x00, 0x00, b'x']);
  assert!(matches!(decompress_all(&input, 1 << 20), Err(Failure::OutputTooLarge { .. })));
  assert_eq!(
    frame_sizes(&input, None, usize::MAX),
    Some(FrameSizes {
      declared: Some(1 << 40),
      bound: 1,
      window: 1 << 40,
      dictionary: None,
      unmatched: None,
      walked: Walked { frames: 1, blocks: 1, compressed: 0 },
      complete: true
    })
  );
  assert!(matches!(plan_output(&input, unlimited(), None), Err(Failure::WindowTooLarge { .. })));
  let wide_open = Limits { window_log_max: MAX_WINDOW_LOG_MAX, ..unlimited() };
  assert!(matches!(plan_output(&input, wide_open, None), Err(Failure::WindowTooLarge { .. })));
}

#[test]
fn a_frame_of_empty_blocks_is_not_what_it_declares() {
  // 768 KiB of empty raw blocks under a header declaring 32 GiB: libzstd's streaming decoder
  // skips empty blocks, and would return nothing as a success.
  let mut input = vec![0x28, 0xb5, 0x2f, 0xfd, 0xc0, (17 - 10) << 3];
  input.extend_from_slice(&(32u64 << 30).to_le_bytes());
  let blocks = (768 << 10) / 3;
  for i in 0..blocks {
    input.extend_from_slice(&[if i == blocks - 1 { 0x01 } else { 0x00 }, 0, 0]);
  }
  assert!(matches!(plan_output(&input, unlimited(), None).unwrap(), OutputPlan::Growable(_)));
  let outcome = decompress_to_vec(&mut DCtx::create(), &input, unlimited(), None);
  assert!(matches!(outcome, Err(Failure::Zstd(code)) if code == corruption_code()), "{outcome:?}");
  let limited = Limits { max_output_length: 1 << 30, ..unlimited() };
  assert!(matches!(decompress_to_vec(&mut DCtx::create(), &input, limited, None), Err(Failure::OutputTooLarge { .. })));
}

/// A single-segment frame declaring `payload`'s size: `empty` empty raw blocks, then `payload`
/// in a last raw block.
fn frame_of_empty_blocks(empty: usize, payload: &[u8]) -> Vec<u8> {
  let mut input = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, payload.len() as u8];
  input.resize(input.len() + 3 * empty, 0);
  input.extend_from_slice(&(1 | (payload.len() as u32) << 3).to_le_bytes()[..3]);
  input.extend_from_slice(payload);
  input
}

#[test]
fn a_walk_within_a_budget_stops_where_headers_outnumber_what_the_input_earns() {
  let payload = b"hello, world";
  let within = |input: &[u8]| plan_output_within(input, unlimited(), None, walk_budget(input.len())).unwrap();
  // A few thousand empty blocks are walked, and counted: the frame declares what its blocks produce.
  let few = frame_of_empty_blocks(4000, payload);
  let walked = Walked { frames: 1, blocks: 4001, compressed: 0 };
  assert_eq!(within(&few), Some(Planned { plan: OutputPlan::Exact(12), walked }));
  // A million (3 MB) are not; with no budget they are, and the plan is the same.
  let many = frame_of_empty_blocks(1_000_000, payload);
  assert_eq!(within(&many), None);
  assert_eq!(plan_output(&many, unlimited(), None).unwrap(), OutputPlan::Exact(12));
  assert_eq!(decompress_all(&many, usize::MAX).unwrap(), payload);
  // Frames of 1 KiB of text (about 60 bytes each) are walked in full, a few hundred of them
  // concatenated; a thousand are planned in full where they are decoded.
  let frames = |count| -> Vec<u8> { (0..count).flat_map(|_| zstd::bulk::compress(&text(1024), 3).unwrap()).collect() };
  assert_eq!(within(&frames(300)).map(|planned| planned.plan), Some(OutputPlan::Exact(1024 * 300)));
  assert_eq!(within(&frames(1000)), None);
  assert_eq!(plan_output(&frames(1000), unlimited(), None).unwrap(), OutputPlan::Exact(1024 * 1000));
}

#[test]
fn an_empty_compressed_block_is_corrupt_however_the_input_is_cut() {
  // A frame declaring no content whose one (last) block is compressed and empty, then its
  // checksum: libzstd's one-call decoder says corrupt; its streaming decoder takes the block
  // as empty when the block's header comes in a call of its own.
  let input = [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x05, 0x00, 0x00, 0x99, 0xe9, 0xd8, 0x51];
  let outcome = decompress_to_vec(&mut DCtx::create(), &input, unlimited(), None);
  assert!(matches!(outcome, Err(Failure::Zstd(code)) if code == corruption_code()), "{outcome:?}");
  for cut in 1..input.len() {
    let mut dctx = DCtx::create();
    let mut frames = FrameCheck::default();
    let mut output = Vec::with_capacity(64);
    let mut failed = false;
    for part in [&input[..cut], &input[cut..]] {
      let mut part = InBuffer::around(part);
      while part.pos() < part.src.len() && !failed {
        let before = part.pos();
        let hint = dctx.decompress_stream(&mut OutBuffer::around(&mut output), &mut part).map_err(decode_error);
        failed = hint.and_then(|hint| frames.observe(&part.src[before..part.pos()], 0, hint)).is_err();
      }
    }
    assert!(failed, "cut at {cut}: decoded");
  }
}

#[test]
fn a_frame_that_ends_short_of_what_it_declares_is_corrupt_even_among_frames_of_unknown_size() {
  // Declares 200 bytes, holds 100 (a raw block) and ends with an empty last block; then a
  // frame without a content size. libzstd's streaming decoder returns 104 bytes for it.
  let mut input = vec![0x28, 0xb5, 0x2f, 0xfd, 0xa0, 200, 0, 0, 0];
  input.extend_from_slice(&[(100 << 3) as u8, 0, 0]);
  input.extend_from_slice(&[b'a'; 100]);
  input.extend_from_slice(&[1, 0, 0]);
  input.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 1 | (4 << 3), 0, 0]);
  input.extend_from_slice(b"tail");
  let outcome = decompress_to_vec(&mut DCtx::create(), &input, unlimited(), None);
  assert!(matches!(outcome, Err(Failure::Zstd(code)) if code == corruption_code()), "{outcome:?}");
}

#[test]
fn refuses_windows_above_window_log_max_on_both_paths() {
  let data = text(3 << 20);
  let declared = zstd::bulk::compress(&data, 19).unwrap();
  let undeclared = streamed_frame(&data);
  for frame in [&declared, &undeclared] {
    let strict = Limits { window_log_max: 20, ..unlimited() };
    let refused = decompress_to_vec(&mut DCtx::create(), frame, strict, None);
    assert!(matches!(refused, Err(Failure::WindowTooLarge { .. }) | Err(Failure::Zstd(_))), "{refused:?}");
    assert_eq!(decompress_to_vec(&mut DCtx::create(), frame, unlimited(), None).unwrap(), data);
  }
}

#[test]
fn a_prefix_raises_the_window_limit_to_what_patch_from_gives_it() {
  assert_eq!(window_log_max_for_prefix(27, 3 << 20), 27);
  assert_eq!(window_log_max_for_prefix(20, 3 << 20), 22);
  assert_eq!(window_log_max_for_prefix(20, usize::MAX), MAX_WINDOW_LOG_MAX);
}

#[test]
fn every_frame_decodes_against_the_prefix_on_both_paths() {
  use crate::compress::{compress_with, CompressParams, Reference, Tuning};
  let old = text(300_000);
  let new: Vec<u8> = old.iter().map(|&byte| if byte == b'e' { b'E' } else { byte }).collect();
  let frame = |content_size: bool| {
    let tuning = Tuning::from_pairs(&[crate::compress::param::CONTENT_SIZE_FLAG, content_size as i32]).unwrap();
    let params = CompressParams { tuning, ..CompressParams::default() };
    let mut frame = Vec::with_capacity(zstd_safe::compress_bound(new.len()));
    compress_with(&mut zstd_safe::CCtx::create(), &new, params, Some(Reference::Prefix(&old)), &mut frame).unwrap();
    frame
  };
  let expected = [&new[..], &new[..]].concat();
  for sized in [true, false] {
    let frames = [frame(sized), frame(sized)].concat();
    let plan = plan_output(&frames, unlimited(), None).unwrap();
    assert_eq!(matches!(plan, OutputPlan::Exact(_)), sized);
    let mut dctx = DCtx::create();
    let decoded = match plan {
      OutputPlan::Exact(len) => {
        let mut output = Vec::with_capacity(len);
        decompress_exact(&mut dctx, &frames, &mut output, len, Some(DecodeWith::Prefix(&old))).map(|()| output)
      }
      OutputPlan::Growable(initial) => {
        decompress_growable(&mut dctx, &frames, initial, unlimited(), Some(DecodeWith::Prefix(&old)))
      }
    };
    assert!(decoded.as_ref().is_ok_and(|decoded| *decoded == expected), "sized: {sized}");
  }
}

#[test]
fn rejects_garbage_and_trailing_garbage() {
  assert!(matches!(decompress_all(b"not a zstd frame at all", usize::MAX), Err(Failure::Zstd(_))));
  let mut input = zstd::bulk::compress(b"hello", 3).unwrap();
  input.extend_from_slice(b"junk");
  assert!(decompress_all(&input, usize::MAX).is_err());
}
