//! The pool itself, without Node: per-call time of libzstd with one reused context (the floor),
//! through zstd-pool's pool and codecs (what a call costs minus the binding), and with a fresh
//! context per call (no pooling); and the pool's own take and give-back. Same payloads as
//! benchmark/corpus.mjs. Run: cargo bench --bench pool

mod corpus;

use std::hint::black_box;
use std::time::{Duration, Instant};

use zstd::zstd_safe::{CCtx, CParameter, DCtx};
use zstd_pool_core::compress::{compress, CompressParams};
use zstd_pool_core::decompress::{decompress_exact, plan_output, Limits, OutputPlan};
use zstd_pool_core::pool::{COMPRESSORS, DECOMPRESSORS};

use corpus::corpus;

const LEVEL: i32 = 3;
const SIZES: [usize; 4] = [1 << 10, 8 << 10, 64 << 10, 1 << 20];

/// 15 windows of `size` bytes at evenly spread offsets, as benchmark/corpus.mjs cuts them.
fn payloads(all: &[u8], size: usize) -> Vec<Vec<u8>> {
  (0..15)
    .map(|i| {
      let offset = (i * (all.len() - size)) / 14;
      all[offset..offset + size].to_vec()
    })
    .collect()
}

/// Median over 7 rounds of the mean time per call, each round ≥ 100 ms.
fn micros_per_call(mut call: impl FnMut(usize)) -> f64 {
  let mut rounds = Vec::new();
  for round in 0..8 {
    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed() < Duration::from_millis(100) {
      call(calls);
      calls += 1;
    }
    if round > 0 {
      rounds.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
  }
  rounds.sort_by(f64::total_cmp);
  rounds[rounds.len() / 2]
}

fn main() {
  let all = corpus();
  // The process-wide pools, as the addon uses them: a pool the sweeper does not know would have
  // it woken by every give-back (it sleeps while no pool it sweeps holds an idle context).
  let (compressors, decompressors) = (&*COMPRESSORS, &*DECOMPRESSORS);
  let params = CompressParams { level: LEVEL, ..CompressParams::default() };
  let record = |op: &str, size: usize, variant: &str, micros: f64| {
    println!("{op:<10} {size:>8} {variant:<30} {micros:>10.3} µs");
  };
  // The pool's own cost: a context taken and given back (reset) with no work between.
  record("pool", 0, "take and give back", micros_per_call(|_| decompressors.take().unwrap().give_back()));
  for size in SIZES {
    let inputs = payloads(&all, size);
    let frames: Vec<Vec<u8>> = inputs.iter().map(|input| zstd::bulk::compress(input, LEVEL).unwrap()).collect();
    let n = inputs.len();

    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(LEVEL)).unwrap();
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(size));
    record(
      "compress",
      size,
      "reused context",
      micros_per_call(|i| {
        out.clear();
        black_box(cctx.compress2(&mut out, &inputs[i % n]).unwrap());
      }),
    );
    record(
      "compress",
      size,
      "through the pool",
      micros_per_call(|i| {
        let mut cctx = compressors.take().unwrap();
        black_box(compress(&mut cctx, &inputs[i % n], params, None).unwrap());
        cctx.give_back();
      }),
    );
    record(
      "compress",
      size,
      "fresh context per call",
      micros_per_call(|i| {
        let mut cctx = CCtx::create();
        out.clear();
        black_box(cctx.compress2(&mut out, &inputs[i % n]).unwrap());
      }),
    );

    let mut dctx = DCtx::create();
    let mut out = vec![0u8; size];
    record(
      "decompress",
      size,
      "reused context",
      micros_per_call(|i| {
        black_box(dctx.decompress(&mut out[..], &frames[i % n]).unwrap());
      }),
    );
    record(
      "decompress",
      size,
      "through the pool",
      micros_per_call(|i| {
        let frame = &frames[i % n];
        let OutputPlan::Exact(len) = plan_output(frame, Limits::default(), None).unwrap() else {
          panic!("frames record their size")
        };
        let mut output = Vec::with_capacity(len);
        let mut dctx = decompressors.take().unwrap();
        decompress_exact(&mut dctx, frame, &mut output, len, None).unwrap();
        dctx.give_back();
        black_box(output);
      }),
    );
    record(
      "decompress",
      size,
      "fresh context per call",
      micros_per_call(|i| {
        black_box(DCtx::create().decompress(&mut out[..], &frames[i % n]).unwrap());
      }),
    );
  }
}
