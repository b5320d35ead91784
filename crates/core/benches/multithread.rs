//! Where libzstd's worker threads start to pay: one-shot compression of 1 to 32 MiB of the
//! corpus at levels 1, 3 and 9, single-threaded and with 2 and 4 workers (a cached context per
//! setting, as zstd-pool keeps them). Sets `mt::MIN_INPUT`. Run: cargo bench --bench multithread

mod corpus;

use std::time::Instant;

use zstd::zstd_safe::CCtx;
use zstd_pool_core::compress::{compress, CompressParams};

use corpus::corpus;

/// The corpus, repeated or cut to `size` bytes.
fn corpus_of(size: usize) -> Vec<u8> {
  let all = corpus();
  all.iter().copied().cycle().take(size).collect()
}

fn millis(cctx: &mut CCtx<'static>, input: &[u8], params: CompressParams) -> f64 {
  let mut times: Vec<f64> = (0..5)
    .map(|_| {
      let start = Instant::now();
      std::hint::black_box(compress(cctx, input, params, None).unwrap());
      cctx.reset(zstd::zstd_safe::ResetDirective::SessionAndParameters).unwrap();
      start.elapsed().as_secs_f64() * 1e3
    })
    .collect();
  times.sort_by(f64::total_cmp);
  times[2]
}

fn main() {
  println!("{:>8} {:>6} {:>12} {:>12} {:>12}", "MiB", "level", "1 thread", "2 workers", "4 workers");
  for mib in [1, 2, 4, 8, 16, 32] {
    let input = corpus_of(mib << 20);
    for level in [1, 3, 9] {
      let mut row = Vec::new();
      for workers in [0, 2, 4] {
        let mut cctx = CCtx::create();
        let params = CompressParams::new(level, false, workers);
        millis(&mut cctx, &input, params);
        row.push(millis(&mut cctx, &input, params));
      }
      println!(
        "{mib:>8} {level:>6} {:>9.2} ms {:>9.2} ms {:>9.2} ms   speed-up x{:.2} x{:.2}",
        row[0],
        row[1],
        row[2],
        row[0] / row[1],
        row[0] / row[2]
      );
    }
  }
}
