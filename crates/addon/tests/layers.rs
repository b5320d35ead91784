//! The rules of the Rust layers (see `src/lib.rs` and the core's `lib.rs`), checked on the
//! sources so that a change cannot quietly undo them:
//! - `unsafe` lives only in the addon's `src/napi/` and the core's `src/ffi.rs`, and stays
//!   within 40 blocks in at most 6 files;
//! - raw Node-API (`napi::sys`, emnapi) is called only in `src/napi/`;
//! - `src/napi/` does not use the exports; the core has no napi dependency (Cargo enforces that
//!   its code cannot name napi; this checks the manifest keeps it so).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
  Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Rust sources under `dir`, with their code (comments and strings left out, roughly: line
/// comments, which is what these sources use).
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
  let mut found = Vec::new();
  let mut stack = vec![dir.to_path_buf()];
  while let Some(dir) = stack.pop() {
    for entry in fs::read_dir(&dir).expect("a source folder").flatten() {
      let path = entry.path();
      if path.is_dir() {
        stack.push(path);
      } else if path.extension().is_some_and(|ext| ext == "rs") {
        let text = fs::read_to_string(&path).expect("a source file");
        let code = text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        found.push((path, code));
      }
    }
  }
  found
}

fn all_sources() -> Vec<(PathBuf, String)> {
  let crates = root().join("crates");
  ["core/src", "core/benches", "core/examples", "core/tests", "core/fuzz", "addon/src"]
    .iter()
    .flat_map(|dir| sources(&crates.join(dir)))
    .collect()
}

fn relative(path: &Path) -> String {
  path.strip_prefix(root().join("crates")).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

#[test]
fn unsafe_lives_in_the_node_api_folder_and_the_core_ffi_module() {
  let mut blocks = 0;
  let mut files = Vec::new();
  for (path, code) in all_sources() {
    let uses = ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"];
    if !uses.iter().any(|use_| code.contains(use_)) {
      continue;
    }
    let name = relative(&path);
    assert!(name.starts_with("addon/src/napi/") || name == "core/src/ffi.rs", "{name} has unsafe code");
    blocks += code.matches("unsafe {").count();
    files.push(name);
  }
  assert!(blocks <= 40, "{blocks} unsafe blocks in {files:?}");
  assert!(files.len() <= 6, "unsafe in {files:?}");
}

#[test]
fn raw_node_api_is_called_only_in_the_node_api_folder() {
  for (path, code) in all_sources() {
    let name = relative(&path);
    if name.starts_with("addon/src/napi/") {
      continue;
    }
    for raw in ["napi::sys", "napi::{sys", "sys::napi_", "sys::Status", "emnapi_"] {
      assert!(!code.contains(raw), "{name} names {raw}");
    }
  }
}

#[test]
fn the_node_api_folder_does_not_use_the_exports() {
  for (path, code) in sources(&root().join("crates/addon/src/napi")) {
    assert!(!code.contains("crate::exports"), "{} uses the exports", relative(&path));
  }
}

#[test]
fn the_core_has_no_napi_dependency() {
  let manifest = fs::read_to_string(root().join("crates/core/Cargo.toml")).expect("the core's manifest");
  let dependencies = manifest.lines().filter(|line| !line.trim_start().starts_with('#'));
  assert!(dependencies.clone().all(|line| !line.contains("napi")), "the core depends on napi");
  for (path, code) in sources(&root().join("crates/core/src")) {
    assert!(!code.contains("napi"), "{} names napi", relative(&path));
  }
}
