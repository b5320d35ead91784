//! A mutation fuzzer over the decompression paths as the addon takes them: the one-shot decode
//! (frame walk, exact or growing output, pooled contexts, output and window limits, dictionaries)
//! and the stream decoder (the same frames cut into random chunks), plus stream compression with
//! random chunks and flush points, and decoding with a set of dictionaries chosen from by frame. Stable Rust, no instrumentation: it mutates real frames (seeds
//! from the corpus, libzstd and the `zstd` tool) and checks that every input decodes within its
//! limits, the same way on both paths, or fails with a failure a decode may report. Shared by
//! `examples/fuzz.rs` (`npm run fuzz`) and `tests/fuzz.rs` (a short fixed-seed pass in CI).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use zstd::zstd_safe::DCtx;
use zstd_pool_core::compress::{bounds, param, CompressParams, Tuning};
use zstd_pool_core::decompress::{decompress_to_vec, decompress_to_vec_with_set, Limits};
use zstd_pool_core::dict::Prepared;
use zstd_pool_core::dict_set::DictionarySet;
use zstd_pool_core::error::Failure;
use zstd_pool_core::pool::ContextPool;
use zstd_pool_core::stream::{CompressState, DecompressState, Flush, MAX_STEP_OUTPUT};

/// A small, fast, deterministic generator (xorshift64*), so a seed replays a run exactly.
pub struct Rng(u64);

impl Rng {
  pub fn new(seed: u64) -> Self {
    Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
  }
  pub fn next(&mut self) -> u64 {
    self.0 ^= self.0 >> 12;
    self.0 ^= self.0 << 25;
    self.0 ^= self.0 >> 27;
    self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
  }
  pub fn below(&mut self, n: usize) -> usize {
    if n == 0 {
      0
    } else {
      (self.next() % n as u64) as usize
    }
  }
  /// A chunk length from 1 byte to 1 MiB, spread evenly over the powers of two.
  pub fn chunk(&mut self) -> usize {
    let scale = 1usize << self.below(21);
    scale + self.below(scale)
  }
}

/// A frame and, when it is a valid one, what it decodes to and with which dictionary.
pub struct Seed {
  pub frame: Vec<u8>,
  pub content: Option<Vec<u8>>,
  /// Index into `Dictionaries::all` of the dictionary the frame needs.
  pub dictionary: Option<usize>,
  /// Frames that need different dictionaries: only the set (`Dictionaries::set`) decodes them.
  pub by_set: bool,
}

/// Dictionaries the seeds are made with: two trained ones (their IDs are in the frames) and raw
/// content (ID 0, so a frame made with it says nothing of it).
pub struct Dictionaries {
  pub all: Vec<Arc<Prepared>>,
  /// The two trained ones, for frames to choose from by ID.
  pub set: Arc<DictionarySet>,
}

fn corpus(root: &Path) -> Vec<Vec<u8>> {
  let mut names: Vec<_> = fs::read_dir(root.join("__test__/corpus")).expect("corpus").flatten().map(|e| e.path()).collect();
  names.sort();
  names.iter().map(|path| fs::read(path).expect("corpus file")).collect()
}

fn dictionaries(files: &[Vec<u8>]) -> Dictionaries {
  let trained = |file: &[u8]| {
    let samples = &file[..file.len().min(64 * 1024)];
    let sizes: Vec<usize> = samples.chunks(256).map(<[u8]>::len).collect();
    let params = zstd_pool_core::dict::default_params(3);
    let bytes =
      zstd_pool_core::dict::train(samples, &sizes, 4096, params).expect("a dictionary trains on corpus text").dictionary;
    Arc::new(Prepared::new(bytes).expect("a trained dictionary"))
  };
  let largest = |files: &[Vec<u8>]| files.iter().max_by_key(|file| file.len()).cloned().expect("a corpus");
  let text = largest(files);
  let other = files.iter().filter(|file| **file != text).max_by_key(|file| file.len()).expect("two corpus files");
  let raw = Arc::new(Prepared::new(text[text.len() / 2..][..8192].to_vec()).expect("raw content"));
  let all = vec![trained(&text), trained(other), raw];
  let set = Arc::new(DictionarySet::new(all[..2].to_vec()).expect("two dictionaries of their own IDs"));
  Dictionaries { all, set }
}

/// Seeds: frames made here from the corpus in every mode libzstd writes (recorded size or not,
/// checksums, levels, concatenations, skippable frames, dictionaries with and without their ID),
/// plus the `zstd` tool's in fuzz/seeds.
pub fn seeds(root: &Path, files: &[Vec<u8>], dictionaries: &Dictionaries) -> Vec<Seed> {
  let mut seeds = Vec::new();
  for (i, data) in files.iter().enumerate() {
    let piece = data[..data.len().min(1000 + i * 3000)].to_vec();
    let level = [-5, 1, 3, 9, 19][i % 5];
    seeds.push(Seed {
      frame: zstd::bulk::compress(&piece, level).unwrap(),
      content: Some(piece.clone()),
      dictionary: None,
      by_set: false,
    });
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), level).unwrap();
    encoder.include_checksum(i % 2 == 0).unwrap();
    encoder.write_all(&piece).unwrap();
    seeds.push(Seed { frame: encoder.finish().unwrap(), content: Some(piece.clone()), dictionary: None, by_set: false });
    let mut two = zstd::bulk::compress(&piece, 1).unwrap();
    two.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    two.extend(zstd::bulk::compress(&piece[..piece.len() / 2], 3).unwrap());
    let content = [&piece[..], &piece[..piece.len() / 2]].concat();
    seeds.push(Seed { frame: two, content: Some(content), dictionary: None, by_set: false });
    // With a dictionary, recording its ID or not.
    let which = i % dictionaries.all.len();
    let mut compressor = zstd::bulk::Compressor::with_dictionary(level.max(1), dictionaries.all[which].bytes()).unwrap();
    compressor.include_dictid(i % 2 == 0).unwrap();
    compressor.include_checksum(i % 3 == 0).unwrap();
    seeds.push(Seed {
      frame: compressor.compress(&piece).unwrap(),
      content: Some(piece.clone()),
      dictionary: Some(which),
      by_set: false,
    });
    // Frames made with each trained dictionary and with none, end to end.
    let half = piece.len() / 2;
    let mut mixed = Vec::new();
    for (index, part) in [Some(0), None, Some(1)].into_iter().zip([&piece[..half], &piece[half..], &piece[..]]) {
      mixed.extend(
        match index {
          Some(index) => {
            zstd::bulk::Compressor::with_dictionary(level.max(1), dictionaries.all[index].bytes()).unwrap().compress(part)
          }
          None => zstd::bulk::compress(part, level),
        }
        .unwrap(),
      );
    }
    seeds.push(Seed { frame: mixed, content: Some([&piece[..], &piece[..]].concat()), dictionary: None, by_set: true });
  }
  for entry in fs::read_dir(root.join("fuzz/seeds")).expect("fuzz/seeds").flatten() {
    let frame = fs::read(entry.path()).expect("seed");
    let content = zstd::stream::decode_all(&frame[..]).ok();
    seeds.push(Seed { frame, content, dictionary: None, by_set: false });
  }
  seeds
}

/// One mutation of `frame`, sometimes spliced with `other`.
pub fn mutate(rng: &mut Rng, frame: &[u8], other: &[u8]) -> Vec<u8> {
  let mut out = frame.to_vec();
  for _ in 0..1 + rng.below(3) {
    match rng.below(10) {
      0 | 1 => {
        // Flip a few bits.
        for _ in 0..1 + rng.below(4) {
          if !out.is_empty() {
            let at = rng.below(out.len());
            out[at] ^= 1 << rng.below(8);
          }
        }
      }
      2 => {
        // A byte to a boundary value.
        if !out.is_empty() {
          let at = rng.below(out.len());
          out[at] = [0, 1, 0x7f, 0x80, 0xff][rng.below(5)];
        }
      }
      3 => out.truncate(rng.below(out.len() + 1)),
      4 => {
        // Splice: a prefix of this frame, a suffix of another.
        let cut = rng.below(out.len() + 1);
        let from = rng.below(other.len() + 1);
        out.truncate(cut);
        out.extend_from_slice(&other[from..]);
      }
      5 => {
        // Repeat a chunk.
        if out.len() > 2 {
          let start = rng.below(out.len() - 1);
          let end = (start + 1 + rng.below(64)).min(out.len());
          let chunk = out[start..end].to_vec();
          let at = rng.below(out.len());
          out.splice(at..at, chunk);
        }
      }
      6 => {
        // A giant declared content size: a single-segment header with an 8-byte size.
        if out.len() > 5 && out[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
          out[4] = 0xe0 | (out[4] & 0x07);
          let giant = [u64::MAX, 1 << 40, 1 << 33, (1 << 32) - 1][rng.below(4)];
          out.splice(5..5, giant.to_le_bytes());
        }
      }
      7 => {
        // A skippable frame with an absurd length, before or after.
        let mut skippable = vec![0x50 + rng.below(16) as u8, 0x2a, 0x4d, 0x18];
        skippable.extend_from_slice(&[0xff, 0xff, 0xff, 0x7f + rng.below(0x80) as u8]);
        if rng.below(2) == 0 {
          out.splice(0..0, skippable);
        } else {
          out.extend(skippable);
        }
      }
      8 => {
        // The largest window descriptor.
        if out.len() > 5 && out[..4] == [0x28, 0xb5, 0x2f, 0xfd] && out[4] & 0x20 == 0 {
          out[5] = 0xff;
        }
      }
      _ => {
        // Random bytes somewhere.
        let at = rng.below(out.len() + 1);
        let bytes: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.next() as u8).collect();
        out.splice(at..at, bytes);
      }
    }
  }
  out
}

/// The name a decode failure is counted under. Every kind of `Failure` is named here, with no
/// catch-all: a new kind does not compile until the fuzzer knows whether a decode may return it.
pub fn failure_kind(failure: &Failure) -> String {
  match failure {
    Failure::Zstd(code) | Failure::AgainstPrefix(code) => zstd_pool_core::error::zstd_error_code_name(*code).to_owned(),
    Failure::Truncated => "truncated".to_owned(),
    Failure::OutputTooLarge { .. } => "over maxOutputLength".to_owned(),
    Failure::WindowTooLarge { .. } => "over windowLogMax".to_owned(),
    Failure::OutOfMemory { .. } | Failure::NoContext => "out of memory".to_owned(),
    Failure::DictionaryMismatch { .. } | Failure::DictionaryNotInSet { .. } => "needs another dictionary".to_owned(),
    // None of these can come from decoding bytes: each would be a bug.
    Failure::Aborted
    | Failure::StreamEnded
    | Failure::StepInProgress
    | Failure::Unsupported(_)
    | Failure::InvalidArgument(_)
    | Failure::BadDictionary(_)
    | Failure::DictionaryReleased
    | Failure::PrefixReleased
    | Failure::TrainingFailed { .. }
    | Failure::Napi(_)
    | Failure::Seekable(_)
    | Failure::PackedTooLarge { .. }
    | Failure::Panicked => panic!("a decode failed with {failure:?}, which decoding never may"),
  }
}

#[derive(Default, Debug)]
pub struct Report {
  pub executions: u64,
  pub decoded: u64,
  /// Inputs also fed to the stream decoder in random chunks.
  pub streamed: u64,
  /// Seed contents compressed as a stream with random chunks and flushes, then decoded.
  pub stream_compressed: u64,
  /// Seek tables (of the seekable format) mutated and read.
  pub seek_tables: u64,
  /// Inputs decoded with a set of dictionaries, each frame choosing its own.
  pub by_set: u64,
  pub failures: BTreeMap<String, u64>,
}

/// What an input must do.
#[derive(Clone, Copy)]
pub enum Expect<'a> {
  /// Nothing known: decode within the limits, or fail cleanly.
  Either,
  /// A valid frame with what it needs: decode to exactly this.
  Content(&'a [u8]),
  /// A valid frame without the dictionary it needs: fail.
  Failure,
}

/// Decodes `input` under `limits` through a pooled context and checks the promises: it decodes
/// within the limits, or fails with a failure a decode may report; and as `expect` says.
pub fn check(
  pool: &ContextPool<DCtx<'static>>,
  input: &[u8],
  limits: Limits,
  dictionary: Option<&Prepared>,
  expect: Expect,
  report: &mut Report,
) -> Result<Vec<u8>, String> {
  report.executions += 1;
  let mut dctx = pool.take().expect("a context");
  match decompress_to_vec(&mut dctx, input, limits, dictionary) {
    Ok(output) => {
      dctx.give_back();
      assert!(output.len() <= limits.max_output_length, "output over the limit");
      assert!(output.capacity() <= limits.max_output_length.saturating_add(1).max(64 * 1024), "buffer over the limit");
      match expect {
        Expect::Content(content) => assert!(output == content, "a valid frame decoded wrong"),
        Expect::Failure => panic!("a frame decoded without the dictionary it needs"),
        Expect::Either => {}
      }
      report.decoded += 1;
      Ok(output)
    }
    Err(failure) => {
      let kind = failure_kind(&failure);
      assert!(!matches!(expect, Expect::Content(_)), "a valid frame failed: {failure:?}");
      *report.failures.entry(kind.clone()).or_default() += 1;
      Err(kind)
    }
  }
}

/// Feeds `input` to the stream decoder in random chunks (with the stream's empty follow-up steps
/// while a step stops at its output limit); the output, or the failure's kind.
pub fn stream_decode(rng: &mut Rng, input: &[u8], limits: Limits, dictionary: Option<&Arc<Prepared>>) -> Result<Vec<u8>, String> {
  let state = DecompressState::new(limits, dictionary.cloned()).map_err(|failure| failure_kind(&failure))?;
  stream_feed(rng, state, input, limits)
}

/// Feeds `input` to `state` in random chunks, as [`stream_decode`] says.
fn stream_feed(rng: &mut Rng, mut state: DecompressState, input: &[u8], limits: Limits) -> Result<Vec<u8>, String> {
  let mut output = Vec::new();
  let mut rest = input;
  loop {
    let cut = rng.chunk().min(rest.len());
    let (chunk, after) = rest.split_at(cut);
    rest = after;
    let last = rest.is_empty();
    let mut piece = state.feed(chunk, last).map_err(|failure| failure_kind(&failure))?;
    let mut idle_steps = 0;
    loop {
      assert!(piece.len() <= MAX_STEP_OUTPUT, "a stream step gave more than a step may");
      output.append(&mut piece);
      assert!(output.len() <= limits.max_output_length, "stream output over maxOutputLength");
      if !state.more {
        break;
      }
      // A follow-up step gives a full step's output, or stops at the output limit (then the
      // next one fails): two in a row that give nothing would be a hang.
      piece = state.feed(&[], last).map_err(|failure| failure_kind(&failure))?;
      idle_steps = if piece.is_empty() { idle_steps + 1 } else { 0 };
      assert!(idle_steps < 2, "stream steps make no progress but ask for more");
    }
    if last {
      return Ok(output);
    }
  }
}

/// Decodes `input` with each frame's dictionary chosen from `set`, one-shot through a pooled
/// context and as a stream in random chunks: both decode within the limits and give the same, or
/// both fail cleanly; and as `expect` says.
pub fn check_set(
  rng: &mut Rng,
  pool: &ContextPool<DCtx<'static>>,
  input: &[u8],
  limits: Limits,
  set: &Arc<DictionarySet>,
  expect: Expect,
  report: &mut Report,
) {
  report.executions += 1;
  report.by_set += 1;
  let mut dctx = pool.take().expect("a context");
  let whole = decompress_to_vec_with_set(&mut dctx, input, limits, set).map_err(|failure| failure_kind(&failure));
  if whole.is_ok() {
    dctx.give_back();
  }
  let state = DecompressState::with_set(limits, set.clone()).map_err(|failure| failure_kind(&failure));
  let stream = state.and_then(|state| stream_feed(rng, state, input, limits));
  match (&whole, &stream) {
    (Ok(whole), Ok(stream)) => {
      assert!(whole.len() <= limits.max_output_length, "output over the limit");
      assert!(whole == stream, "with a set, the stream decoder's output differs from the one-shot decode's");
      assert!(!matches!(expect, Expect::Failure), "a frame decoded without the dictionary it needs");
      if let Expect::Content(content) = expect {
        assert!(whole == content, "a valid frame decoded wrong with a set");
      }
      report.decoded += 1;
    }
    (Err(kind), Err(_)) => {
      assert!(!matches!(expect, Expect::Content(_)), "a valid frame failed with a set: {kind}");
      *report.failures.entry(kind.clone()).or_default() += 1;
    }
    (whole, stream) => panic!(
      "with a set, the decoders disagree: one-shot {:?}, stream {:?}",
      whole.as_ref().map(Vec::len),
      stream.as_ref().map(Vec::len)
    ),
  }
}

/// Compresses `content` as a stream in random chunks with random flushes, then checks that both
/// decoders give `content` back.
pub fn stream_round_trip(rng: &mut Rng, content: &[u8], dictionary: Option<&Arc<Prepared>>, pool: &ContextPool<DCtx<'static>>) {
  let tuning = if rng.below(2) == 0 { random_tuning(rng) } else { Tuning::default() };
  let params = CompressParams { level: [-3, 1, 3, 7][rng.below(4)], checksum: rng.below(2) == 0, workers: 0, tuning };
  let pledged = (rng.below(2) == 0).then_some(content.len() as u64);
  let mut state = CompressState::new(params, pledged, dictionary.cloned()).expect("a compression stream");
  let mut frame = Vec::new();
  let mut rest = content;
  while !rest.is_empty() {
    let (chunk, after) = rest.split_at(rng.chunk().min(rest.len()));
    rest = after;
    let flush = if rng.below(4) == 0 { Flush::Block } else { Flush::No };
    frame.extend(state.feed(chunk, flush).expect("stream compression"));
  }
  frame.extend(state.feed(&[], Flush::Frame).expect("the end of a stream"));
  let mut dctx = pool.take().expect("a context");
  let whole = decompress_to_vec(&mut dctx, &frame, Limits::default(), dictionary.map(|dictionary| &**dictionary));
  dctx.give_back();
  assert!(whole.as_ref().is_ok_and(|whole| whole == content), "a stream-compressed frame decoded wrong: {:?}", whole.err());
  let streamed = stream_decode(rng, &frame, Limits::default(), dictionary);
  assert!(streamed.as_deref() == Ok(content), "a stream-compressed frame stream-decoded wrong: {:?}", streamed.err());
}

/// Up to three compression parameters set to random values within libzstd's bounds, the logs
/// kept at 22 at most (memory, and windows the default decoding limits take).
fn random_tuning(rng: &mut Rng) -> Tuning {
  let mut tuning = Tuning::default();
  for _ in 0..rng.below(4) {
    let parameter = param::ALL[rng.below(param::ALL.len())];
    let Some((min, max)) = bounds(parameter) else { continue };
    let max = match parameter {
      // zstd-safe sets long-distance matching to 0 (libzstd decides) or 1, not 2 (off).
      param::ENABLE_LDM => 1,
      param::WINDOW_LOG | param::HASH_LOG | param::CHAIN_LOG | param::SEARCH_LOG | param::LDM_HASH_LOG => max.min(22),
      _ => max,
    };
    let value = min + rng.below((max - min + 1) as usize) as i32;
    tuning = tuning.with(parameter, value).expect("a parameter of param::ALL");
  }
  tuning
}

/// Runs `executions` mutated inputs from `seed`, or until `deadline`. A failing input is written
/// to `target/fuzz-failures/` and the command that replays the run up to it is printed.
/// A seekable file made of `body` cut into random frames, its seek table then mutated (or the
/// whole file cut short): reading it gives a table whose offsets account for the file exactly, or
/// a seekable failure; never a panic, nor more memory than the file's length justifies.
pub fn seek_table_case(rng: &mut Rng, body: &[u8], report: &mut Report) {
  use zstd_pool_core::seekable::{read_footer, read_table, write_table, Entry, FOOTER_LEN};
  let mut entries = Vec::new();
  let mut at = 0;
  while at < body.len() {
    let len = (1 + rng.below(body.len() - at)).min(body.len() - at);
    entries.push(Entry { compressed: len as u32, decompressed: rng.next() as u32, checksum: None });
    at += len;
  }
  if rng.below(2) == 0 {
    for entry in &mut entries {
      entry.checksum = Some(rng.next() as u32);
    }
  }
  let mut file = body.to_vec();
  file.extend(write_table(&entries).expect("a table of few frames"));
  let table_start = body.len();
  for _ in 0..1 + rng.below(4) {
    match rng.below(4) {
      0 => file.truncate(rng.below(file.len() + 1)),
      _ if file.len() > table_start => {
        let at = table_start + rng.below(file.len() - table_start);
        file[at] = rng.next() as u8;
      }
      _ => {}
    }
  }
  let len = file.len() as u64;
  let outcome = (|| {
    let footer = read_footer(file.get(file.len().checked_sub(FOOTER_LEN)?..)?, len);
    Some(footer.and_then(|footer| read_table(&file[file.len() - footer.table_len() as usize..], footer, len)))
  })();
  match outcome {
    None => {}
    Some(Ok(table)) => {
      let frames = table.frame_count();
      assert!(frames as u64 <= len / 8, "a table of {frames} frames from a file of {len} bytes");
      let frames_of = |offsets: &[u64]| offsets.windows(2).map(|pair| pair[1] - pair[0]).collect::<Vec<_>>();
      let sizes = frames_of(&table.compressed).into_iter().zip(frames_of(&table.decompressed));
      assert!(sizes.into_iter().all(|(bytes, content)| bytes > 0 || content == 0), "content in a frame of no bytes");
      assert!(table.size() <= zstd_pool_core::seekable::MAX_SIZE);
    }
    Some(Err(failure)) => {
      assert!(matches!(failure, Failure::Seekable(_)), "a seek table failed with {failure:?}");
      *report.failures.entry("seek table refused".to_owned()).or_default() += 1;
    }
  }
}

pub fn run(root: &Path, seed: u64, executions: u64, deadline: Option<std::time::Instant>) -> Report {
  let files = corpus(root);
  let dictionaries = dictionaries(&files);
  let seeds = seeds(root, &files, &dictionaries);
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(2, zstd_pool_core::pool::DEFAULT_MAX_IDLE_BYTES);
  let mut rng = Rng::new(seed);
  let mut report = Report::default();
  for seed in &seeds {
    // A frame that names a trained dictionary, or none, decodes with the set (one made with the
    // raw dictionary, or that leaves its ID out, would decode with none: wrong).
    let recorded = zstd::zstd_safe::get_dict_id_from_frame(&seed.frame);
    let by_set = seed.by_set || seed.dictionary.is_none_or(|index| index < 2 && recorded.is_some());
    if by_set {
      let expect = seed.content.as_deref().map_or(Expect::Either, Expect::Content);
      check_set(&mut rng, &pool, &seed.frame, Limits::default(), &dictionaries.set, expect, &mut report);
    }
    if seed.by_set {
      continue;
    }
    let needed = seed.dictionary.map(|index| &*dictionaries.all[index]);
    let expect = seed.content.as_deref().map_or(Expect::Either, Expect::Content);
    let decoded = check(&pool, &seed.frame, Limits::default(), needed, expect, &mut report);
    if let (Some(index), Some(recorded)) = (seed.dictionary, recorded) {
      // A frame that records its dictionary's ID fails without it, or with another.
      assert_eq!(recorded.get(), dictionaries.all[index].id());
      check(&pool, &seed.frame, Limits::default(), None, Expect::Failure, &mut report).ok();
      let other = &dictionaries.all[(index + 1) % dictionaries.all.len()];
      check(&pool, &seed.frame, Limits::default(), Some(other), Expect::Failure, &mut report).ok();
    }
    assert!(decoded.is_ok() || seed.content.is_none());
  }
  while report.executions < executions && deadline.is_none_or(|deadline| std::time::Instant::now() < deadline) {
    let number = report.executions;
    let base = &seeds[rng.below(seeds.len())];
    let other = &seeds[rng.below(seeds.len())];
    let input = if rng.below(16) == 0 { base.frame.clone() } else { mutate(&mut rng, &base.frame, &other.frame) };
    let limits = Limits {
      max_output_length: [1 << 10, 1 << 20, 64 << 20, usize::MAX][rng.below(4)],
      window_log_max: [23, 27, 31][rng.below(3)],
    };
    // The frame's own dictionary most of the time, sometimes none or another.
    let dictionary = match (base.dictionary, rng.below(4)) {
      (Some(index), 0) => Some((index + 1) % dictionaries.all.len()),
      (Some(index), 1..) => Some(index),
      (None, 0) => Some(rng.below(dictionaries.all.len())),
      _ => None,
    };
    let streamed = rng.below(2) == 0;
    let round_trip = rng.below(32) == 0;
    let seek_table = rng.below(8) == 0;
    let by_set = base.by_set || rng.below(8) == 0;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
      let within = |content: &Vec<u8>| content.len() <= limits.max_output_length && limits.window_log_max >= 27;
      if by_set {
        // Only frames made here are known to decode with the set (see the seeds' loop above).
        let chosen_by_id = base.by_set
          || base.dictionary.is_none_or(|index| index < 2 && zstd::zstd_safe::get_dict_id_from_frame(&base.frame).is_some());
        let expect = match &base.content {
          Some(content) if input == base.frame && chosen_by_id && within(content) => Expect::Content(content),
          _ => Expect::Either,
        };
        check_set(&mut rng, &pool, &input, limits, &dictionaries.set, expect, &mut report);
        return;
      }
      let given = dictionary.map(|index| &dictionaries.all[index]);
      let expect = match (&base.content, input == base.frame, dictionary == base.dictionary) {
        (Some(content), true, true) if within(content) => Expect::Content(content),
        _ => Expect::Either,
      };
      let whole = check(&pool, &input, limits, given.map(|dictionary| &**dictionary), expect, &mut report);
      if streamed {
        report.streamed += 1;
        let stream = stream_decode(&mut rng, &input, limits, given);
        // The stream decoder gives exactly what the one-shot decode gives, or fails as it does.
        match (&whole, &stream) {
          (Ok(whole), Ok(stream)) => assert!(whole == stream, "the stream decoder's output differs from the one-shot decode's"),
          (Err(_), Err(_)) => {}
          (whole, stream) => panic!(
            "the decoders disagree: one-shot {:?}, stream {:?}",
            whole.as_ref().map(Vec::len),
            stream.as_ref().map(Vec::len)
          ),
        }
      }
      if seek_table {
        report.seek_tables += 1;
        seek_table_case(&mut rng, &input, &mut report);
      }
      if round_trip {
        if let Some(content) = &base.content {
          report.stream_compressed += 1;
          stream_round_trip(&mut rng, content, base.dictionary.map(|index| &dictionaries.all[index]), &pool);
        }
      }
    }));
    if let Err(panic) = outcome {
      let dir = root.join("target/fuzz-failures");
      let file = dir.join(format!("seed-{seed}-input-{number}.zst"));
      let saved = fs::create_dir_all(&dir).and_then(|()| fs::write(&file, &input)).is_ok();
      eprintln!(
        "\nfuzz: input {number} of seed {seed} failed (limits {limits:?}, dictionary {dictionary:?}, stream {streamed}){}\n\
         replay: cargo run --release --example fuzz -- 0 {seed} {}\n",
        if saved { format!("; the input is in {}", file.display()) } else { String::new() },
        number + 1
      );
      panic::resume_unwind(panic);
    }
  }
  let counters = pool.counters();
  assert_eq!(counters.in_use, 0);
  assert!(counters.holdings.idle <= 2);
  report
}
