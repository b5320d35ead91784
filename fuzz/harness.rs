//! A mutation fuzzer over the decompression path, as the addon takes it (frame walk, one-shot
//! or growing decode, pooled contexts, output and window limits). Stable Rust, no instrumentation:
//! it mutates real frames (seeds from the corpus, libzstd and the `zstd` tool) and checks that
//! every input either decodes within its limits or fails cleanly. Shared by
//! `examples/fuzz.rs` (`npm run fuzz`) and `tests/fuzz.rs` (a short fixed-seed pass in CI).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use zstd::zstd_safe::DCtx;
use zstd_pool::decompress::{decompress_to_vec, Limits};
use zstd_pool::error::Failure;
use zstd_pool::pool::ContextPool;

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
}

/// A frame and, when it is a valid one, what it decodes to.
pub struct Seed {
  pub frame: Vec<u8>,
  pub content: Option<Vec<u8>>,
}

/// Seeds: frames made here from the corpus in every mode libzstd writes (recorded size or not,
/// checksums, levels, concatenations, skippable frames), plus the `zstd` tool's in fuzz/seeds.
pub fn seeds(root: &Path) -> Vec<Seed> {
  let mut names: Vec<_> = fs::read_dir(root.join("__test__/corpus")).expect("corpus").flatten().map(|e| e.path()).collect();
  names.sort();
  let mut seeds = Vec::new();
  for (i, path) in names.iter().enumerate() {
    let data = fs::read(path).expect("corpus file");
    let piece = data[..data.len().min(1000 + i * 3000)].to_vec();
    let level = [-5, 1, 3, 9, 19][i % 5];
    seeds.push(Seed { frame: zstd::bulk::compress(&piece, level).unwrap(), content: Some(piece.clone()) });
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), level).unwrap();
    encoder.include_checksum(i % 2 == 0).unwrap();
    encoder.write_all(&piece).unwrap();
    seeds.push(Seed { frame: encoder.finish().unwrap(), content: Some(piece.clone()) });
    let mut two = zstd::bulk::compress(&piece, 1).unwrap();
    two.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    two.extend(zstd::bulk::compress(&piece[..piece.len() / 2], 3).unwrap());
    seeds.push(Seed { frame: two, content: Some([&piece[..], &piece[..piece.len() / 2]].concat()) });
  }
  for entry in fs::read_dir(root.join("fuzz/seeds")).expect("fuzz/seeds").flatten() {
    let frame = fs::read(entry.path()).expect("seed");
    let content = zstd::stream::decode_all(&frame[..]).ok();
    seeds.push(Seed { frame, content });
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

#[derive(Default, Debug)]
pub struct Report {
  pub executions: u64,
  pub decoded: u64,
  pub failures: BTreeMap<String, u64>,
}

/// Decodes `input` under `limits` through a pooled context and checks the promises: it
/// decodes within the limits, or fails with a zstd error, the output limit, or the window
/// limit; a seed decodes to its content.
pub fn check(pool: &ContextPool<DCtx<'static>>, input: &[u8], limits: Limits, expected: Option<&[u8]>, report: &mut Report) {
  report.executions += 1;
  let mut dctx = pool.take().expect("a context");
  match decompress_to_vec(&mut dctx, input, limits, None) {
    Ok(output) => {
      dctx.give_back();
      assert!(output.len() <= limits.max_output_length, "output over the limit");
      assert!(output.capacity() <= limits.max_output_length.saturating_add(1).max(64 * 1024), "buffer over the limit");
      if let Some(expected) = expected {
        assert!(output == expected, "a valid frame decoded wrong");
      }
      report.decoded += 1;
    }
    Err(failure) => {
      assert!(expected.is_none(), "a valid frame failed: {failure:?}");
      let kind = match failure {
        Failure::Zstd(code) => zstd_pool::error::zstd_error_code_name(code).to_owned(),
        Failure::Truncated => "truncated".to_owned(),
        Failure::OutputTooLarge { .. } => "over maxOutputLength".to_owned(),
        Failure::WindowTooLarge { .. } => "over windowLogMax".to_owned(),
        Failure::OutOfMemory { .. } => "out of memory".to_owned(),
        other => panic!("unexpected failure {other:?}"),
      };
      *report.failures.entry(kind).or_default() += 1;
    }
  }
}

/// Runs `executions` mutated inputs from `seed`, or until `deadline`.
pub fn run(root: &Path, seed: u64, executions: u64, deadline: Option<std::time::Instant>) -> Report {
  let seeds = seeds(root);
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(2);
  let mut rng = Rng::new(seed);
  let mut report = Report::default();
  for seed in &seeds {
    check(&pool, &seed.frame, Limits::default(), seed.content.as_deref(), &mut report);
  }
  while report.executions < executions && deadline.is_none_or(|deadline| std::time::Instant::now() < deadline) {
    let base = &seeds[rng.below(seeds.len())];
    let other = &seeds[rng.below(seeds.len())];
    let input = mutate(&mut rng, &base.frame, &other.frame);
    let limits = Limits {
      max_output_length: [1 << 10, 1 << 20, 64 << 20, usize::MAX][rng.below(4)],
      window_log_max: [23, 27, 31][rng.below(3)],
    };
    check(&pool, &input, limits, None.filter(|_: &&[u8]| input == base.frame), &mut report);
  }
  let counters = pool.counters();
  assert_eq!(counters.in_use, 0);
  assert!(counters.idle <= 2);
  report
}
