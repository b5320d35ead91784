//! Batches: `compressMany` / `decompressMany` (`many.js`) send their inputs here a group at a time,
//! and each group runs as one threadpool work item, so that the round trip to the threadpool
//! (tens of microseconds) is paid per group rather than per input.
//!
//! A batch is given its inputs end to end with their lengths, and copies them (its work runs
//! after the call returns). Every item is a call of its own: its own pooled context, limits and
//! failure, so one item failing costs no other item its result. The work packs the small results
//! into pages (see the core's `batch.rs` for why); where small results may share slabs, each page
//! comes back as the slab `lib/results.js` carves their Buffers from, and elsewhere each result
//! as a Buffer of its own.

use std::sync::atomic::{AtomicBool, Ordering};

use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe::{self, CCtx, DCtx};

use zstd_pool_core::batch::{Results, Taken};
use zstd_pool_core::decompress::OutputPlan;
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::{owned, try_vec};
use zstd_pool_core::oneshot::{CompressCall, DecompressCall};
use zstd_pool_core::pool::{Context, ContextPool, Held, COMPRESSORS, DECOMPRESSORS};

use crate::exports::dictionary::prepared;
use crate::exports::oneshot::SHARED_BELOW;
use crate::exports::prefix::{HeldPrefix, SharedPrefix};
use crate::exports::reference::{dictionary_of, set_of, Reference};
use crate::napi::lanes;
use crate::napi::{self as node, Cancellation, Js, RESULTS_IN_PLACE};

/// Results smaller than this go into the pages. Under WASI none do: native code cannot write a
/// Buffer there (see `RESULTS_IN_PLACE`), and each result comes as `NativeBytes`, as a single
/// call's does.
const SMALL_BELOW: usize = if RESULTS_IN_PLACE { SHARED_BELOW } else { 0 };

/// The inputs of a batch, end to end, and where each ends.
struct Items {
  data: Vec<u8>,
  ends: Vec<usize>,
}

impl Items {
  /// A copy of `data`, cut as `lengths` says; they must add up to its length.
  fn new(data: &[u8], lengths: &[u32]) -> std::result::Result<Self, Failure> {
    let mut end = 0usize;
    let ends = lengths
      .iter()
      .map(|&len| {
        end += len as usize;
        end
      })
      .collect();
    if end != data.len() {
      return Err(Failure::InvalidArgument("batch lengths that do not add up to its input"));
    }
    Ok(Self { data: owned(data)?, ends })
  }

  fn each(&self) -> impl Iterator<Item = &[u8]> {
    let starts = std::iter::once(0).chain(self.ends.iter().copied());
    starts.zip(self.ends.iter().copied()).map(|(start, end)| &self.data[start..end])
  }
}

/// What a batch does with each of its items: what a single `compress` / `decompress` call does,
/// with a context its group holds from item to item (see `Held`).
trait ItemCall: Send + 'static {
  /// The async resource name of the batch's work (see `Job::name`).
  const NAME: &'static str;
  type Context: Context;
  /// The pool the group's context comes from.
  fn pool() -> &'static ContextPool<Self::Context>;
  /// Runs the call on `input` and adds its result, or its failure, to `results`.
  fn run(&self, held: &mut Held<'static, Self::Context>, input: &[u8], prefix: Option<&[u8]>, results: &mut Results);
}

impl ItemCall for CompressCall {
  const NAME: &'static str = "zstd-pool:compress-batch";
  type Context = CCtx<'static>;

  fn pool() -> &'static ContextPool<CCtx<'static>> {
    &COMPRESSORS
  }

  fn run(&self, held: &mut Held<'static, CCtx<'static>>, input: &[u8], prefix: Option<&[u8]>, results: &mut Results) {
    let bound = zstd_safe::compress_bound(input.len());
    if results.fits(bound) {
      results.push_written(bound, |output| self.compress_held(held, input, prefix, output).map(drop));
    } else {
      results.push(try_vec(bound).and_then(|mut output| {
        self.compress_held(held, input, prefix, &mut output)?;
        Ok(output)
      }));
    }
  }
}

impl ItemCall for DecompressCall {
  const NAME: &'static str = "zstd-pool:decompress-batch";
  type Context = DCtx<'static>;

  fn pool() -> &'static ContextPool<DCtx<'static>> {
    &DECOMPRESSORS
  }

  fn run(&self, held: &mut Held<'static, DCtx<'static>>, input: &[u8], prefix: Option<&[u8]>, results: &mut Results) {
    match self.plan(input) {
      Ok(OutputPlan::Exact(len)) if results.fits(len) => {
        results.push_written(len, |output| self.decode_exact_held(held, input, prefix, output, len))
      }
      Ok(plan) => results.push(self.decode_to_vec_held(held, input, prefix, plan)),
      Err(failure) => results.push(Err(failure)),
    }
  }
}

/// A batch's work: its items, the prefix they share (a copy of bytes, or a `Prefix`'s), the call
/// each makes, the room for their results, and whether small results may share slabs
/// (`lib/results.js` knows).
struct Batch<C> {
  items: Items,
  prefix: Option<SharedPrefix>,
  call: C,
  results: Results,
  share: bool,
}

impl<C: ItemCall> Batch<C> {
  /// Copies the inputs given end to end in `inputs` (`lengths[i]` bytes each), and `prefix` if
  /// it is bytes.
  fn new(inputs: &[u8], lengths: &[u32], prefix: Option<HeldPrefix>, call: C, share: bool) -> std::result::Result<Self, Failure> {
    let prefix = prefix.map(HeldPrefix::shared).transpose()?;
    let results = Results::new(lengths.len(), SMALL_BELOW)?;
    Ok(Self { items: Items::new(inputs, lengths)?, prefix, call, results, share })
  }
}

/// A batch's results, and whether the small ones may share slabs.
struct Settled {
  results: Results,
  share: bool,
}

impl<C: ItemCall> node::Job for Batch<C> {
  type Output = Settled;

  fn name(&self) -> &'static str {
    C::NAME
  }

  fn compute(&mut self) -> std::result::Result<Settled, Failure> {
    self.compute_until(&AtomicBool::new(false))
  }

  fn compute_until(&mut self, stop: &AtomicBool) -> std::result::Result<Settled, Failure> {
    let mut results = std::mem::take(&mut self.results);
    let mut held = Held::new(C::pool());
    for input in self.items.each() {
      // Cancelled while it runs: the items left fail as aborted (the call has already rejected).
      if stop.load(Ordering::Acquire) {
        results.push(Err(Failure::Aborted));
      } else {
        self.call.run(&mut held, input, self.prefix.as_deref(), &mut results);
      }
    }
    // Before the prefix and the dictionary, which the context may still refer to.
    held.give_back();
    Ok(Settled { results, share: self.share })
  }
}

impl node::IntoJs for Settled {
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    if self.share {
      slabs(env, self.results)
    } else {
      each_its_own(env, self.results)
    }
  }
}

/// Where small results may share slabs: an array of the layout (see the core's `batch.rs`) as a
/// Buffer, then each page as a Buffer of its own (the slab `lib/results.js` carves the page's
/// results from, once it has made it untransferable), then the results in no page, in order, as
/// [`each_its_own`] gives them. One array: each made costs a few microseconds, paid per group.
fn slabs(env: &Env, mut results: Results) -> std::result::Result<Js, Failure> {
  let mut values = Vec::new();
  values.try_reserve_exact(1 + results.page_count()).map_err(|_| Failure::OutOfMemory { bytes: results.page_count() * 8 })?;
  values.push(node::buffer_copy(env, results.layout())?);
  for index in 0..results.page_count() {
    values.push(node::buffer_copy(env, results.page(index).unwrap_or_default())?);
  }
  for index in 0..results.count() {
    if let Some(Taken::Own(result)) = results.take(index) {
      values.push(its_own(env, result)?);
    }
  }
  node::settled_array(env, &values)
}

/// Every result with memory of its own, in order: a Buffer (or a `NativeBytes` for `main.js` to
/// move into one, as a single call's) or its error.
fn each_its_own(env: &Env, mut results: Results) -> std::result::Result<Js, Failure> {
  let mut values = Vec::new();
  values.try_reserve_exact(results.count()).map_err(|_| Failure::OutOfMemory { bytes: results.count() * 8 })?;
  for index in 0..results.count() {
    values.push(match results.take(index) {
      Some(Taken::Paged(bytes)) => node::buffer_copy(env, bytes)?,
      Some(Taken::Own(result)) => its_own(env, result)?,
      // Each is taken once, here: a bug otherwise.
      None => return Err(Failure::Panicked),
    });
  }
  node::array(env, &values)
}

/// A result in no page, as a single call's: its Buffer (or `NativeBytes`), or its error.
fn its_own(env: &Env, result: std::result::Result<Vec<u8>, Failure>) -> std::result::Result<Js, Failure> {
  match result {
    Ok(bytes) => node::result_bytes(env, bytes),
    Err(failure) => node::error_value(env, &failure).map(Js::from_raw).ok_or(Failure::Napi("an error")),
  }
}

/// Compresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `compress` would, on one threadpool thread (and, with `workers`, libzstd's worker threads for
/// the inputs large enough); a Promise of their results (see [`Settled`]'s `into_js`). One copy
/// of `prefix` (none, for a `Prefix`) serves every input. `share`: whether small results may share slabs.
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error>>")]
#[allow(clippy::too_many_arguments)]
pub fn compress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  settings: &[i32],
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | Uint8Array | undefined")] reference: Option<Reference>,
  share: bool,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let dictionary = dictionary_of(&reference);
  let queued = CompressCall::new(settings, || prepared(dictionary)).and_then(|call| {
    let prefix = HeldPrefix::of(&reference)?;
    // Small batches share the lanes with single calls in flight (see `lanes.rs`): a group's
    // results are settled while the next group runs.
    let prefix_len = prefix.as_ref().map_or(0, |prefix| prefix.bytes().len());
    let micros: f64 = lengths.iter().map(|&len| call.estimated_micros(len as usize, prefix_len)).sum();
    lanes::queue(&env, Batch::new(inputs, lengths, prefix, call, share)?, cancellation, micros)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  queued.map_err(|failure| node::throw(&env, failure))
}

/// Decompresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `decompress` would, each within the limits, on one threadpool thread; a Promise of their
/// results (as for [`compress_batch`]).
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error>>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  max_output_length: f64,
  window_log_max: u32,
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | PreparedDictionarySet | Uint8Array | undefined")] reference: Option<
    Reference,
  >,
  share: bool,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = HeldPrefix::of(&reference).and_then(|prefix| {
    let dictionary = || prepared(dictionary_of(&reference));
    let call = DecompressCall::new(max_output_length, window_log_max, dictionary, prefix.as_ref().map(HeldPrefix::bytes))?
      .with_set(set_of(&reference)?);
    node::queue(&env, Batch::new(inputs, lengths, prefix, call, share)?, cancellation)
  });
  queued.map_err(|failure| node::throw(&env, failure))
}
