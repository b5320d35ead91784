//! `npm run fuzz` (or `cargo run --release --example fuzz -- SECONDS [SEED]`): mutates real zstd
//! frames for a while and checks that each decodes within its limits or fails cleanly.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

fn main() {
  let mut args = std::env::args().skip(1);
  let seconds: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or(60);
  let seed: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or_else(|| {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |elapsed| elapsed.as_nanos() as u64)
  });
  println!("fuzzing the decompression path for {seconds} s, seed {seed}");
  let started = Instant::now();
  let report =
    harness::run(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), seed, u64::MAX, Some(started + Duration::from_secs(seconds)));
  let rate = report.executions as f64 / started.elapsed().as_secs_f64();
  println!("{} inputs ({rate:.0}/s), {} decoded, failures by kind:", report.executions, report.decoded);
  for (kind, count) in &report.failures {
    println!("  {kind}: {count}");
  }
}
