//! A short, fixed-seed pass of the fuzzer (the long run, with a random seed, is `npm run fuzz`).

#[path = "../fuzz/harness.rs"]
mod harness;

#[test]
fn mutated_frames_decode_within_their_limits_or_fail_cleanly() {
  let report = harness::run(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), 20261130, 20_000, None);
  assert!(report.executions >= 20_000);
  assert!(report.decoded > 0 && report.streamed > 0 && report.stream_compressed > 0 && report.by_set > 0, "{report:?}");
  assert!(report.failures.contains_key("needs another dictionary"), "{report:?}");
}
