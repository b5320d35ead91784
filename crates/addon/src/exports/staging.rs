//! The WebAssembly build's entry points: `compress` and `decompress` over the caller's staging
//! area (see `napi/staging.rs`), and the area itself. Compiled only for `target_family = "wasm"`:
//! native builds stage nothing. Separate exports, not the one-shot ones with other argument
//! types: emnapi reads each argument in a round trip through JavaScript, and the one-shot
//! exports' slab arguments (with a workers argument, since folded into the settings) cost a tiny
//! call about a sixth more there (measured 2026-12-02).

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::Failure;

use crate::exports::oneshot::{compress, decompress};
use crate::exports::reference::Reference;
use crate::napi::{self as raw, throw, Cancellation, Js, Target};

/// A new owner of a staging area: an id to pass to the other functions here.
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

/// A staged call's input and where its result goes (see `napi::staged`), or the error that the
/// owner has no input that long staged.
fn staged<'a>(env: &Env, owner: u32, input_length: u32) -> Result<(&'a [u8], Target, u32)> {
  raw::staged(owner, input_length).ok_or_else(|| throw(env, Failure::Napi("no staged input")))
}

/// `compress` under WASI: the input is the first `input_length` bytes of `owner`'s staging area,
/// and a small result is written into it past the input.
#[napi(ts_return_type = "number | NativeBytes | Promise<NativeBytes>")]
#[allow(clippy::too_many_arguments)]
pub fn compress_staged(
  env: Env,
  owner: u32,
  input_length: u32,
  settings: &[i32],
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | Uint8Array | undefined")] reference: Option<Reference>,
  inline_micros: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let (input, area, offset) = staged(&env, owner, input_length)?;
  compress(env, input, settings, reference, inline_micros, Some(area), offset, cancellation)
}

/// `decompress` under WASI, as [`compress_staged`] is `compress`.
#[napi(ts_return_type = "number | NativeBytes | Promise<NativeBytes>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress_staged(
  env: Env,
  owner: u32,
  input_length: u32,
  max_output_length: f64,
  window_log_max: u32,
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | PreparedDictionarySet | Uint8Array | undefined")] reference: Option<
    Reference,
  >,
  inline_micros: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let (input, area, offset) = staged(&env, owner, input_length)?;
  decompress(env, input, max_output_length, window_log_max, reference, inline_micros, Some(area), offset, cancellation)
}
