//! The WebAssembly build's staging areas (see `napi/staging.rs`): one-shot calls there take
//! their input from the caller's area, and write a small result into it. Compiled only for
//! `target_family = "wasm"`: native builds stage nothing.

use napi::{Env, Result};
use napi_derive::napi;

use crate::napi::{self as raw, throw, Js};

/// A new owner of a staging area: an id to pass to `stagingArea`, and to the one-shot calls
/// as their `slab`.
#[napi]
pub fn staging_owner() -> u32 {
  static OWNERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
  OWNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

/// Frees `owner`'s staging area and makes a new one of `len` bytes (see `napi/staging.rs`).
/// The caller drops its view of the old area first: that memory goes back to the module's heap.
#[napi(ts_return_type = "Uint8Array | null")]
pub fn staging_area(env: Env, owner: u32, len: u32) -> Result<Js> {
  raw::staging_area(&env, owner, len as usize).map_err(|failure| throw(&env, failure))
}
