//! One-shot compression and decompression: `compress` and `decompress`, which run a call on the
//! calling thread when it is estimated to be short enough, else queue it on the lanes or the
//! libuv threadpool.

#[cfg(not(target_family = "wasm"))]
use napi::bindgen_prelude::Object;
use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe;
use zstd_pool_core::decompress::{walk_budget, OutputPlan, Planned};
use zstd_pool_core::error::{guarded, Failure};
use zstd_pool_core::memory::{owned, scratch};
use zstd_pool_core::oneshot::{model_micros, CompressCall, DecompressCall};
use zstd_pool_core::schedule::{self, Estimate, Spot, Work};

use crate::exports::dictionary::prepared;
use crate::exports::prefix::HeldPrefix;
use crate::exports::reference::{dictionary_of, set_of, Reference};
use crate::napi::lanes;
#[cfg(not(target_family = "wasm"))]
use crate::napi::plain::{self, Args, Plain};
use crate::napi::{
  filled_buffer, result_bytes, scratch_result, throw, Cancellation, Js, Produced, Slot, Target, Task, JS_ALLOCATES_FROM,
};

/// Results smaller than this may share a slab (see `main.js`): as with `Buffer.allocUnsafe`,
/// a fresh `ArrayBuffer` per small result costs more than compressing a kilobyte (about 1 µs).
/// Under WASI, where the slab is the staging area, a result is written there whenever it fits:
/// copying it out in JavaScript costs less than any other way out of the module's memory.
pub(crate) const SHARED_BELOW: usize = if cfg!(target_family = "wasm") { u32::MAX as usize } else { 4096 };

/// A result Buffer is allocated before decoding, from the sizes the frames declare, only up to
/// this (see [`upfront_limit`]); larger results are allocated by JavaScript.
const MAX_UPFRONT: usize = JS_ALLOCATES_FROM;

/// The largest result Buffer allocated before decoding `input_len` bytes. Node 20 and 22 abort
/// the process when a Buffer cannot be allocated, so what a header claims is trusted only up to
/// what the input's blocks can produce (`plan_output`), a fixed cap, and 1024 times the input (a
/// ratio that typical data stays well under). A larger declared size is decoded into native
/// memory, allocated fallibly, and copied into a Buffer once produced: earned, not claimed.
fn upfront_limit(input_len: usize) -> usize {
  input_len.saturating_mul(1024).clamp(1 << 20, MAX_UPFRONT)
}

/// A result made on the calling thread, or why there is none.
type Outcome = std::result::Result<Js, Failure>;

/// Whether a call run on the spot is timed for the pace (`schedule::timed`). Not with a
/// reference: the model leaves out what a dictionary or a prefix costs. Nor in a burst, whose
/// calls share the cores with the lanes, and whose budgets weigh the model's own estimate.
fn timed(reference: &Option<Reference>, estimate: Estimate) -> bool {
  reference.is_none() && !estimate.burst
}

// ---------------------------------------------------------------------------------------------
// Compression

/// Compresses `input` into one frame that records its content size.
///
/// `inline_micros` decides where the work runs: here, on the calling thread, if its estimated
/// time is at most that (outside a burst, more where the threadpool's trip is slow:
/// `schedule::budget`; `Infinity` for a sync call, which always runs here); else on the libuv
/// threadpool, and the result is a Promise; or, when it is negative, the estimate within its
/// magnitude and the call has no reference, nowhere yet: the result is `false`, and the caller
/// makes the call again once the event loop has turned (`schedule::waits_for_turn`). A result
/// that runs here and is smaller than `SHARED_BELOW` is written into `slab` at `slab_offset`
/// when given, and the result is its length; other results are Buffers (or, under WASI,
/// `NativeBytes`).
#[napi(ts_return_type = "number | Buffer | NativeBytes | Promise<Buffer | NativeBytes> | false")]
#[allow(clippy::too_many_arguments)]
pub fn compress(
  env: Env,
  input: &[u8],
  settings: &[i32],
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | Uint8Array | undefined")] reference: Option<Reference>,
  inline_micros: f64,
  #[napi(ts_arg_type = "Buffer | undefined")] slab: Option<Target>,
  slab_offset: u32,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let slot = slab.map(|slab| Slot::new(slab, slab_offset));
  compress_with(env, input, settings, reference, inline_micros, slot, cancellation)
}

/// [`compress`], its small result written into `slot` (the staged calls' own, under WASI).
pub(crate) fn compress_with(
  env: Env,
  input: &[u8],
  settings: &[i32],
  reference: Option<Reference>,
  inline_micros: f64,
  slot: Option<Slot>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let dictionary = dictionary_of(&reference);
  let call = CompressCall::new(settings, || prepared(dictionary));
  let result = call.and_then(|call| {
    let held = HeldPrefix::of(&reference)?;
    let prefix = held.as_ref().map(HeldPrefix::bytes);
    let model = call.model_micros(input.len(), prefix.map_or(0, <[u8]>::len));
    let estimate = Estimate::of(Work::Compress, model, inline_micros);
    let spot = schedule::spot(estimate.weighed, inline_micros);
    if spot == Spot::Here || lanes::help(&env, estimate.weighed, inline_micros) {
      let here = || compress_here(&call, &env, input, prefix, slot);
      return if timed(&reference, estimate) { schedule::timed(Work::Compress, model, here) } else { here() };
    }
    // Only calls with no reference wait: a dictionary or prefix disposed of meanwhile would
    // fail a call that its caller made while it was there.
    if reference.is_none() && schedule::waits_for_turn(estimate.weighed, inline_micros) {
      return Js::not_run(&env);
    }
    let (input, prefix) = (owned(input)?, held.map(HeldPrefix::shared).transpose()?);
    let job = Task::new("zstd-pool:compress", move || call.compress_to_scratch(&input, prefix.as_deref()));
    lanes::queue(&env, job, cancellation, estimate.micros, estimate.burst, spot == Spot::Probe)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  result.map_err(|failure| throw(&env, failure))
}

/// Compresses on this thread: into the slab when the frame is sure to be small, else into
/// native memory, copied into the slab or a new Buffer. With a prefix, never straight into
/// the slab: the prefix could be a view of it.
fn compress_here(call: &CompressCall, env: &Env, input: &[u8], prefix: Option<&[u8]>, mut slot: Option<Slot>) -> Outcome {
  let bound = zstd_safe::compress_bound(input.len());
  if bound < SHARED_BELOW && prefix.is_none() {
    if let Some(slot) = slot.as_mut() {
      if let Some(mut room) = slot.room(bound, input) {
        let written = guarded(|| call.compress_into(input, None, &mut room))?;
        return slot.filled(env, written, input);
      }
    }
  }
  let frame = guarded(|| call.compress_to_scratch(input, prefix))?;
  match in_slot(env, &frame, slot, input) {
    Some(outcome) => {
      frame.give_back();
      outcome
    }
    None => scratch_result(env, frame),
  }
}

/// `bytes` as the result: written into the slot if small and it has room, else as
/// `napi::result_bytes` makes it.
fn small_result(env: &Env, bytes: Vec<u8>, slot: Option<Slot>, input: &[u8]) -> Outcome {
  in_slot(env, &bytes, slot, input).unwrap_or_else(|| result_bytes(env, bytes))
}

/// Writes `bytes` into the slot if they are small and it has room: their length, the result.
// Under WASI every length is small (`SHARED_BELOW`), which the lint sees as a pointless test.
#[allow(clippy::absurd_extreme_comparisons)]
fn in_slot(env: &Env, bytes: &[u8], mut slot: Option<Slot>, input: &[u8]) -> Option<Outcome> {
  if bytes.len() >= SHARED_BELOW {
    return None;
  }
  let slot = slot.as_mut()?;
  slot.room(bytes.len(), input)?.write(bytes);
  Some(slot.filled(env, bytes.len(), input))
}

/// `compress` with no dictionary, prefix or cancellation, registered by hand (see
/// `napi/plain.rs`): `compressPlain(input, settings, inlineMicros, slab, slabOffset)`.
#[cfg(not(target_family = "wasm"))]
struct CompressPlain;

#[cfg(not(target_family = "wasm"))]
impl Plain for CompressPlain {
  const NAME: &'static str = "compressPlain";

  fn call(env: &Env, args: &Args) -> Result<Js> {
    let (input, settings, inline_micros) = (args.get(0)?, args.get(1)?, args.get(2)?);
    compress(*env, input, settings, None, inline_micros, args.get(3)?, args.get(4)?, None)
  }
}

// ---------------------------------------------------------------------------------------------
// Decompression

/// Decompresses every frame in `input` (frames with or without a recorded size, concatenated
/// frames, skippable frames) within `max_output_length` and `window_log_max`. Where the work
/// runs, and what the result is, as for [`compress`].
#[napi(ts_return_type = "number | Buffer | NativeBytes | Promise<Buffer | NativeBytes> | false")]
#[allow(clippy::too_many_arguments)]
pub fn decompress(
  env: Env,
  input: &[u8],
  max_output_length: f64,
  window_log_max: u32,
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | PreparedDictionarySet | Uint8Array | undefined")] reference: Option<
    Reference,
  >,
  inline_micros: f64,
  #[napi(ts_arg_type = "Buffer | undefined")] slab: Option<Target>,
  slab_offset: u32,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let slot = slab.map(|slab| Slot::new(slab, slab_offset));
  decompress_with(env, input, max_output_length, window_log_max, reference, inline_micros, slot, cancellation)
}

/// [`decompress`], its small result written into `slot` (the staged calls' own, under WASI).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decompress_with(
  env: Env,
  input: &[u8],
  max_output_length: f64,
  window_log_max: u32,
  reference: Option<Reference>,
  inline_micros: f64,
  slot: Option<Slot>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let result = HeldPrefix::of(&reference).and_then(|held| {
    let prefix = held.as_ref().map(HeldPrefix::bytes);
    let call = DecompressCall::new(max_output_length, window_log_max, || prepared(dictionary_of(&reference)), prefix)?
      .with_set(set_of(&reference)?);
    // The frame walk refuses what the limits or the dictionaries rule out, before any work. An
    // async call's is bounded: an input with more headers is planned where it is decoded.
    let budget = if inline_micros.is_finite() { walk_budget(input.len()) } else { usize::MAX };
    let planned = call.plan_within(input, budget)?;
    let model = planned.as_ref().map_or(f64::INFINITY, |planned| model_micros(planned, input.len()));
    let estimate = Estimate::of(Work::Decompress, model, inline_micros);
    let spot = schedule::spot(estimate.weighed, inline_micros);
    let here = planned.filter(|_| spot == Spot::Here || lanes::help(&env, estimate.weighed, inline_micros));
    if let Some(Planned { plan, .. }) = here {
      let here = || decompress_here(&call, &env, input, prefix, plan, slot);
      return if timed(&reference, estimate) { schedule::timed(Work::Decompress, model, here) } else { here() };
    }
    // Only calls with no reference wait: a dictionary or prefix disposed of meanwhile would
    // fail a call that its caller made while it was there.
    if reference.is_none() && schedule::waits_for_turn(estimate.weighed, inline_micros) {
      return Js::not_run(&env);
    }
    // The work decodes into native memory, copied into a Buffer when it completes: a libuv
    // thread never writes memory that JavaScript could reach (even a Buffer made for the call is
    // reachable, by `node:inspector`'s `queryObjects`) and detach or free meanwhile. Against
    // writing the Buffer in place, the copy costs 5-15% for outputs of 64 KiB and more. A
    // declared size is a scratch buffer taken here, on the JavaScript thread, which also gives it
    // back after the copy: allocated on the libuv threads (glibc gives each its own arena), a
    // fresh buffer cost 10-30% more with 16 or 64 calls in flight.
    let plan = planned.map(|planned| planned.plan);
    let mut output = match plan {
      Some(OutputPlan::Exact(len)) => Some(scratch(len)?),
      _ => None,
    };
    let (input, prefix) = (owned(input)?, held.map(HeldPrefix::shared).transpose()?);
    let job = Task::new("zstd-pool:decompress", move || match (plan, output.take()) {
      (Some(OutputPlan::Exact(len)), Some(mut output)) => {
        call.decode_exact(&input, prefix.as_deref(), &mut *output, len)?;
        Ok(Produced::Scratch(output))
      }
      (Some(plan), _) => call.decode_to_vec(&input, prefix.as_deref(), plan).map(Produced::Owned),
      // The walk here has no budget.
      (None, _) => call.decode_to_vec(&input, prefix.as_deref(), call.plan(&input)?).map(Produced::Owned),
    });
    lanes::queue(&env, job, cancellation, estimate.micros, estimate.burst, spot == Spot::Probe)
  });
  result.map_err(|failure| throw(&env, failure))
}

/// Decodes on this thread. With a prefix, never straight into the slab: the prefix could be
/// a view of it.
fn decompress_here(
  call: &DecompressCall,
  env: &Env,
  input: &[u8],
  prefix: Option<&[u8]>,
  plan: OutputPlan,
  mut slot: Option<Slot>,
) -> Outcome {
  match plan {
    // A small result goes into the slab; a larger one into the Buffer that `lib/results.js` made
    // for it (`decodeTarget`) when one of exactly its size came: Node-API's `napi_create_buffer`
    // costs more than a Buffer allocated in JavaScript (docs/performance.md).
    OutputPlan::Exact(len) if prefix.is_none() && (len < SHARED_BELOW || len <= upfront_limit(input.len())) => {
      if let Some(slot) = slot.as_mut() {
        if let Some(mut room) = if len < SHARED_BELOW { slot.room(len, input) } else { slot.own(len, input) } {
          guarded(|| call.decode_exact(input, None, &mut room, len))?;
          return slot.filled(env, len, input);
        }
      }
      filled_buffer(env, len, |output| guarded(|| call.decode_exact(input, None, output, len)))
    }
    OutputPlan::Exact(len) if len <= upfront_limit(input.len()) => {
      filled_buffer(env, len, |output| guarded(|| call.decode_exact(input, prefix, output, len)))
    }
    plan => {
      let bytes = guarded(|| call.decode_to_vec(input, prefix, plan))?;
      small_result(env, bytes, slot, input)
    }
  }
}

/// `decompress` with no dictionary, prefix or cancellation, registered by hand (see
/// `napi/plain.rs`): `decompressPlain(input, maxOutputLength, windowLogMax, inlineMicros, slab,
/// slabOffset)`.
#[cfg(not(target_family = "wasm"))]
struct DecompressPlain;

#[cfg(not(target_family = "wasm"))]
impl Plain for DecompressPlain {
  const NAME: &'static str = "decompressPlain";

  fn call(env: &Env, args: &Args) -> Result<Js> {
    let (input, max_output_length, window_log_max) = (args.get(0)?, args.get(1)?, args.get(2)?);
    decompress(*env, input, max_output_length, window_log_max, None, args.get(3)?, args.get(4)?, args.get(5)?, None)
  }
}

/// Adds the plain calls to the module's exports.
#[cfg(not(target_family = "wasm"))]
#[napi(module_exports)]
pub fn register_plain_calls(mut exports: Object, env: Env) -> Result<()> {
  #[cfg(feature = "bench-floor")]
  crate::exports::floor::register_plain_calls(&env, &mut exports)?;
  plain::register::<CompressPlain>(&env, &mut exports)?;
  plain::register::<DecompressPlain>(&env, &mut exports)
}
