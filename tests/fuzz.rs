//! A short, fixed-seed pass of the decompression fuzzer (the long run is `npm run fuzz`).

#[path = "../fuzz/harness.rs"]
mod harness;

#[test]
fn mutated_frames_decode_within_their_limits_or_fail_cleanly() {
  let report = harness::run(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), 20261130, 20_000, None);
  assert!(report.executions >= 20_000);
  assert!(report.decoded > 0 && !report.failures.is_empty(), "{report:?}");
}
