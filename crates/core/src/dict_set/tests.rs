use std::sync::Arc;

use zstd::zstd_safe::DCtx;

use super::*;
use crate::decompress::{decompress_to_vec_with_set, plan_output_with_set, Limits, OutputPlan};
use crate::stream::DecompressState;

/// Records of one kind (`kind` changes their words, so that dictionaries trained on different
/// kinds differ, and so do their IDs).
fn records(kind: &str, count: usize) -> Vec<Vec<u8>> {
  (0..count)
    .map(|i| {
      format!(r#"{{"{kind}":{i},"user":"{kind}-user{}","{kind}-action":"{}","ms":{}}}"#, i % 97, i % 3, i * 7 % 1000).into_bytes()
    })
    .collect()
}

fn dictionary(kind: &str) -> Arc<Prepared> {
  let samples = records(kind, 1500);
  let sizes: Vec<usize> = samples.iter().map(Vec::len).collect();
  let bytes = crate::dict::train(&samples.concat(), &sizes, 2048, crate::dict::default_params(3)).unwrap().dictionary;
  Arc::new(Prepared::new(bytes).unwrap())
}

/// Two dictionaries with different IDs, and a third that is in no set below.
fn three() -> [Arc<Prepared>; 3] {
  let all = [dictionary("alpha"), dictionary("beta"), dictionary("gamma")];
  assert!(all[0].id() != all[1].id() && all[1].id() != all[2].id() && all[0].id() != all[2].id());
  all
}

fn with(dictionary: Option<&Prepared>, data: &[u8], id: bool, size: bool) -> Vec<u8> {
  let mut compressor = match dictionary {
    Some(dictionary) => zstd::bulk::Compressor::with_dictionary(3, dictionary.bytes()).unwrap(),
    None => zstd::bulk::Compressor::new(3).unwrap(),
  };
  compressor.include_dictid(id).unwrap();
  compressor.include_contentsize(size).unwrap();
  compressor.compress(data).unwrap()
}

/// Frames made with the first dictionary, with none, with the second (one that records no
/// content size), and a skippable frame, end to end; and what they decode to.
fn mixed(all: &[Arc<Prepared>; 3]) -> (Vec<u8>, Vec<u8>) {
  let parts = [records("alpha", 40).concat(), b"no dictionary at all".repeat(30), records("beta", 40).concat()];
  let mut frames = with(Some(&all[0]), &parts[0], true, true);
  frames.extend(with(None, &parts[1], false, true));
  frames.extend([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
  frames.extend(with(Some(&all[1]), &parts[2], true, false));
  (frames, parts.concat())
}

fn stream(set: &Arc<DictionarySet>, input: &[u8], chunk: usize) -> Result<Vec<u8>, Failure> {
  let mut state = DecompressState::with_set(Limits::default(), set.clone())?;
  let mut output = Vec::new();
  let pieces: Vec<&[u8]> = input.chunks(chunk.max(1)).collect();
  for (index, piece) in pieces.iter().enumerate() {
    let last = index + 1 == pieces.len();
    output.extend(state.feed(piece, last)?);
    while state.more {
      output.extend(state.feed(&[], last)?);
    }
  }
  Ok(output)
}

#[test]
fn reads_the_dictionary_id_of_every_header_form() {
  assert_eq!(frame_dictionary_id(b""), None);
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f]), None);
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd]), None);
  // A single segment with a 1-byte, a 2-byte and a 4-byte ID; a window descriptor then 4 bytes.
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x21, 7]), Some(7));
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x22, 1, 2]), Some(0x0201));
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x03, 0x50, 1, 2, 3]), None);
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x03, 0x50, 1, 2, 3, 4]), Some(0x0403_0201));
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x00]), Some(0));
  // Skippable frames and what is no frame need no dictionary: libzstd reads or refuses them.
  assert_eq!(frame_dictionary_id(&[0x50, 0x2a, 0x4d, 0x18]), Some(0));
  assert_eq!(frame_dictionary_id(b"nope"), Some(0));
  assert_eq!(frame_dictionary_id(&[0x28, 0xb5, 0x2f, 0xfd, 0x29, 7]), Some(0));
}

#[test]
fn refuses_sets_no_frame_could_choose_from() {
  let all = three();
  assert!(matches!(DictionarySet::new(Vec::new()), Err(Failure::InvalidArgument(_))));
  let raw = Arc::new(Prepared::new(b"raw content, which has no ID".to_vec()).unwrap());
  assert!(matches!(DictionarySet::new(vec![all[0].clone(), raw]), Err(Failure::InvalidArgument(_))));
  assert!(matches!(DictionarySet::new(vec![all[0].clone(), all[0].clone()]), Err(Failure::InvalidArgument(_))));
  let set = DictionarySet::new(vec![all[1].clone(), all[0].clone()]).unwrap();
  let mut ids = vec![all[0].id(), all[1].id()];
  ids.sort_unstable();
  assert_eq!(set.ids(), ids);
  assert!(set.get(all[2].id()).is_none());
}

#[test]
fn decodes_each_frame_with_the_dictionary_it_names() {
  let all = three();
  let set = Arc::new(DictionarySet::new(vec![all[1].clone(), all[0].clone()]).unwrap());
  let (frames, content) = mixed(&all);
  // One frame records no size: the growing path. Without it, every frame declares one: exact.
  assert!(matches!(plan_output_with_set(&frames, Limits::default(), &set).unwrap(), OutputPlan::Growable(_)));
  assert_eq!(decompress_to_vec_with_set(&mut DCtx::create(), &frames, Limits::default(), &set).unwrap(), content);
  let parts = [records("beta", 30).concat(), b"plain".repeat(100), records("alpha", 30).concat()];
  let mut exact = with(Some(&all[1]), &parts[0], true, true);
  exact.extend(with(None, &parts[1], true, true));
  exact.extend(with(Some(&all[0]), &parts[2], true, true));
  assert!(matches!(plan_output_with_set(&exact, Limits::default(), &set).unwrap(), OutputPlan::Exact(_)));
  // One context for both: a context that decoded with the set decodes the next input right.
  let mut dctx = DCtx::create();
  assert_eq!(decompress_to_vec_with_set(&mut dctx, &exact, Limits::default(), &set).unwrap(), parts.concat());
  assert_eq!(decompress_to_vec_with_set(&mut dctx, &frames, Limits::default(), &set).unwrap(), content);
}

#[test]
fn a_frame_with_no_id_decodes_with_no_dictionary_whatever_came_before() {
  let all = three();
  let set = Arc::new(DictionarySet::new(vec![all[0].clone()]).unwrap());
  let data = records("alpha", 30).concat();
  // Made with the dictionary but recording no ID: decoded with none, it is corrupt (or wrong).
  let mut frames = with(Some(&all[0]), &data, true, true);
  frames.extend(with(Some(&all[0]), &data, false, true));
  let decoded = decompress_to_vec_with_set(&mut DCtx::create(), &frames, Limits::default(), &set);
  assert!(decoded.map_or(true, |decoded| decoded != [data.clone(), data.clone()].concat()));
  assert!(stream(&set, &frames, 5).map_or(true, |decoded| decoded != [data.clone(), data].concat()));
}

#[test]
fn names_the_dictionary_no_member_of_the_set_is() {
  let all = three();
  let set = Arc::new(DictionarySet::new(vec![all[0].clone(), all[1].clone()]).unwrap());
  let mut frames = with(Some(&all[0]), b"first", true, true);
  frames.extend(with(Some(&all[2]), b"second", true, true));
  let needed = all[2].id();
  let given = set.ids();
  let refused = |failure: Result<Vec<u8>, Failure>| match failure {
    Err(Failure::DictionaryNotInSet { needed: id, given: ids }) => id == needed && ids == given,
    _ => false,
  };
  assert!(refused(decompress_to_vec_with_set(&mut DCtx::create(), &frames, Limits::default(), &set)));
  // Streams learn of it as the frame starts.
  assert!(refused(stream(&set, &frames, 1)));
  assert!(refused(stream(&set, &frames, frames.len())));
  let message = Failure::DictionaryNotInSet { needed, given }.shape().message;
  assert!(message.contains(&needed.to_string()) && message.contains(&all[1].id().to_string()), "{message}");
  let many = Failure::DictionaryNotInSet { needed: 5000, given: (1..=1000).collect() }.shape().message;
  assert!(many.ends_with("and 984 more)"), "{many}");
}

#[test]
fn streams_decode_mixed_frames_cut_at_every_byte() {
  let all = three();
  let set = Arc::new(DictionarySet::new(vec![all[0].clone(), all[1].clone()]).unwrap());
  let (frames, content) = mixed(&all);
  for chunk in [1, 2, 3, 5, 7, 10, 64, frames.len()] {
    assert_eq!(stream(&set, &frames, chunk).unwrap(), content, "chunks of {chunk}");
  }
  // Cut in two at every byte.
  for cut in 0..=frames.len() {
    let mut state = DecompressState::with_set(Limits::default(), set.clone()).unwrap();
    let mut output = state.feed(&frames[..cut], false).unwrap();
    output.extend(state.feed(&frames[cut..], true).unwrap());
    assert_eq!(output, content, "cut at {cut}");
  }
  // A header cut short is truncated input, not a wait for ever.
  let header_only = &frames[..7];
  assert!(matches!(stream(&set, header_only, 3), Err(Failure::Truncated)));
}
