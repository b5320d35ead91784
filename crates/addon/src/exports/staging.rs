//! The WebAssembly build's entry points: `compress` and `decompress` over the caller's staging
//! area (see `napi/staging.rs`), and the area itself. Compiled only for `target_family = "wasm"`:
//! native builds stage nothing. Separate exports, not the one-shot ones with other argument
//! types: emnapi reads each argument in a round trip through JavaScript, and the one-shot
//! exports' slab arguments (with a workers argument, since folded into the settings) cost a tiny
//! call about a sixth more there (measured 2026-12-02).

use napi::bindgen_prelude::Object;
use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::Failure;

use crate::exports::oneshot::{compress_with, decompress_with};
use crate::exports::reference::Reference;
use crate::napi::plain::{self, Args, Plain};
use crate::napi::{self as raw, throw, Caller, Cancellation, Js, Slot};

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

/// A view of the word that names the owner of each staged call: `lib/staging.js` writes its
/// owner's id there as it lays a call out (see `napi/staging.rs`).
#[napi(ts_return_type = "Uint8Array")]
pub fn staging_caller(env: Env) -> Result<Js> {
  raw::staging_caller(&env).map_err(|failure| throw(&env, failure))
}

/// A view of the words `lib/workers.js` waits on with `Atomics.waitAsync` for work done on the
/// module's threads (see `napi/workers.rs`).
#[napi(ts_return_type = "Uint8Array")]
pub fn workers_signal(env: Env) -> Result<Js> {
  raw::workers_signal(&env).map_err(|failure| throw(&env, failure))
}

/// Settles the work the module's threads finished: whether work is still in flight.
#[napi]
pub fn settle_workers(env: Env) -> bool {
  raw::settle_workers(&env)
}

/// `caller`'s staged call and where its result goes (see `napi::staged`), or the error that it
/// has no call staged that fits its area, or that code run while its arguments were read laid
/// out another.
fn staged<'a>(env: &Env, caller: Caller) -> Result<(raw::StagedCall<'a>, Slot)> {
  raw::staged(caller)
    .ok_or_else(|| throw(env, Failure::Napi("no call staged, or its area laid out again by code run as its arguments were read")))
}

/// `compress` under WASI: the call is laid out in its owner's staging area (its numbers, settings
/// and input, see `napi/staging.rs`) as its `layout`th, and a small result is written into it past
/// the input, its length over the call's first number: then the call returns undefined.
/// `owner` and `layout` are numbers read as `f64`s: emnapi reads an unsigned one through a fresh
/// typed array.
#[napi(ts_return_type = "undefined | number | NativeBytes | Promise<NativeBytes> | false")]
pub fn compress_staged(
  env: Env,
  owner: f64,
  layout: f64,
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | Uint8Array | undefined")] reference: Option<Reference>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  compress_of(env, Caller::Given { owner: owner as u32, layout }, reference, cancellation)
}

/// `caller`'s staged compression: what both staged compress exports run.
fn compress_of(env: Env, caller: Caller, reference: Option<Reference>, cancellation: Option<&Cancellation>) -> Result<Js> {
  let (call, slot) = staged(&env, caller)?;
  compress_with(env, call.input, call.settings, reference, call.inline_micros, Some(slot), cancellation)
}

/// `decompress` under WASI, as [`compress_staged`] is `compress`.
#[napi(ts_return_type = "undefined | number | NativeBytes | Promise<NativeBytes> | false")]
pub fn decompress_staged(
  env: Env,
  owner: f64,
  layout: f64,
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | PreparedDictionarySet | Uint8Array | undefined")] reference: Option<
    Reference,
  >,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  decompress_of(env, Caller::Given { owner: owner as u32, layout }, reference, cancellation)
}

/// `caller`'s staged decompression: what both staged decompress exports run.
fn decompress_of(env: Env, caller: Caller, reference: Option<Reference>, cancellation: Option<&Cancellation>) -> Result<Js> {
  let (call, slot) = staged(&env, caller)?;
  let (max_output_length, window_log_max) = (call.max_output_length, call.window_log_max);
  decompress_with(env, call.input, max_output_length, window_log_max, reference, call.inline_micros, Some(slot), cancellation)
}

/// `compressStaged` with no reference or cancellation (most calls), registered by hand (see
/// `napi/plain.rs`) and taking no arguments: `compressStagedPlain()`. Under emnapi every Node-API
/// call is a trip through JavaScript, and the `#[napi]` export's two optional arguments (a type
/// check each) and its borrow scope were a tenth of a 1 KiB decompression's time (a CPU profile
/// on Node 26, 2026-12-03).
struct CompressStagedPlain;

impl Plain for CompressStagedPlain {
  const NAME: &'static str = "compressStagedPlain";
  const TAKES_ARGUMENTS: bool = false;

  fn call(env: &Env, _args: &Args) -> Result<Js> {
    compress_of(*env, Caller::Written, None, None)
  }
}

/// `decompressStaged` with no reference or cancellation, as [`CompressStagedPlain`].
struct DecompressStagedPlain;

impl Plain for DecompressStagedPlain {
  const NAME: &'static str = "decompressStagedPlain";
  const TAKES_ARGUMENTS: bool = false;

  fn call(env: &Env, _args: &Args) -> Result<Js> {
    decompress_of(*env, Caller::Written, None, None)
  }
}

/// Adds the plain staged calls to the module's exports.
#[napi(module_exports)]
pub fn register_plain_staged_calls(mut exports: Object, env: Env) -> Result<()> {
  plain::register::<CompressStagedPlain>(&env, &mut exports)?;
  plain::register::<DecompressStagedPlain>(&env, &mut exports)
}
