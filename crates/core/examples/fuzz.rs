//! `npm run fuzz` (or `cargo run --release --example fuzz -- SECONDS [SEED [INPUTS]]`): mutates
//! real zstd frames for SECONDS (0: no time limit) or INPUTS inputs and checks that each decodes
//! within its limits, the same way one-shot and as a stream, or fails cleanly. The seed is
//! random unless given, and printed: a failure prints the command that replays it.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

fn main() {
  let mut args = std::env::args().skip(1);
  let seconds: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or(60);
  let seed: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or_else(|| {
    std::time::SystemTime::now()
      .duration_since(std::time::UNIX_EPOCH)
      .map_or(1, |elapsed| elapsed.as_nanos() as u64 % 1_000_000_000)
  });
  let inputs: u64 = args.next().and_then(|arg| arg.parse().ok()).unwrap_or(u64::MAX);
  let limit = if seconds == 0 { "no time limit".to_owned() } else { format!("{seconds} s") };
  println!("fuzzing the decoders (one-shot and stream, with sets of dictionaries too), stream compression and seek tables for {limit}, seed {seed}");
  let started = Instant::now();
  let deadline = (seconds > 0).then(|| started + Duration::from_secs(seconds));
  let report = harness::run(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), seed, inputs, deadline);
  let elapsed = started.elapsed().as_secs_f64();
  println!(
    "{} inputs in {elapsed:.0} s ({:.0}/s): {} decoded, {} also as a stream in random chunks, {} stream compressions with random flushes round-tripped, {} seek tables read, {} decoded with a set of dictionaries (both ways); failures by kind:",
    report.executions,
    report.executions as f64 / elapsed,
    report.decoded,
    report.streamed,
    report.stream_compressed,
    report.seek_tables,
    report.by_set
  );
  for (kind, count) in &report.failures {
    println!("  {kind}: {count}");
  }
}
