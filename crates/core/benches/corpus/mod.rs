//! The test corpus the benches measure on, shared by them (a folder, so that Cargo does not take
//! it for a bench of its own).

use std::fs;

/// Every file of `__test__/corpus`, end to end, in name order.
pub fn corpus() -> Vec<u8> {
  let mut names: Vec<_> = fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../__test__/corpus"))
    .expect("the corpus")
    .flatten()
    .map(|e| e.path())
    .collect();
  names.sort();
  names.iter().flat_map(|path| fs::read(path).expect("corpus file")).collect()
}
