//! Batches: `compressMany` / `decompressMany` (`many.js`) send their inputs here a group at a time,
//! and each group runs as one threadpool work item, so that the round trip to the threadpool
//! (tens of microseconds) is paid per group rather than per input.
//!
//! A batch is given its inputs end to end with their lengths, and copies them (its work runs
//! after the call returns). Every item is a call of its own: its own pooled context, limits and
//! failure. What a group's results come back as is its [`BatchForm`]: each item's result (or
//! failure, which costs no other item its result), as a Buffer of its own or carved from a slab
//! (the work packs small results into pages: see the core's `batch.rs` for why); or, packed, all
//! of them end to end in one Buffer (the core's `packed.rs`).

use std::sync::atomic::{AtomicBool, Ordering};

use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe::{self, CCtx, DCtx};

use zstd_pool_core::batch::{Results, Sink, Taken};
use zstd_pool_core::decompress::OutputPlan;
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::{scratch, try_vec, Scratch};
use zstd_pool_core::oneshot::{CompressCall, DecompressCall};
use zstd_pool_core::packed::Packed;
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

/// The inputs of a batch, end to end (in a pooled scratch buffer, warm: a fresh one had the
/// JavaScript thread fault its pages in, group after group), and where each ends.
struct Items {
  data: Option<Scratch>,
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
    let mut copy = scratch(data.len())?;
    copy.extend_from_slice(data);
    Ok(Self { data: Some(copy), ends })
  }

  fn each(&self) -> impl Iterator<Item = &[u8]> {
    let data = self.data.as_deref().map_or(&[][..], Vec::as_slice);
    let starts = std::iter::once(0).chain(self.ends.iter().copied());
    starts.zip(self.ends.iter().copied()).map(move |(start, end)| data.get(start..end).unwrap_or_default())
  }

  /// Gives the copy back to its pool, once every item has run.
  fn give_back(&mut self) {
    if let Some(copy) = self.data.take() {
      copy.give_back();
    }
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
  fn run(&self, held: &mut Held<'static, Self::Context>, input: &[u8], prefix: Option<&[u8]>, results: &mut impl Sink);
}

impl ItemCall for CompressCall {
  const NAME: &'static str = "zstd-pool:compress-batch";
  type Context = CCtx<'static>;

  fn pool() -> &'static ContextPool<CCtx<'static>> {
    &COMPRESSORS
  }

  fn run(&self, held: &mut Held<'static, CCtx<'static>>, input: &[u8], prefix: Option<&[u8]>, results: &mut impl Sink) {
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

  fn run(&self, held: &mut Held<'static, DCtx<'static>>, input: &[u8], prefix: Option<&[u8]>, results: &mut impl Sink) {
    match self.plan(input) {
      Ok(OutputPlan::Exact(len)) if results.fits(len) => {
        results.push_written(len, |output| self.decode_exact_held(held, input, prefix, output, len))
      }
      Ok(plan) => results.push(self.decode_to_vec_held(held, input, prefix, plan)),
      Err(failure) => results.push(Err(failure)),
    }
  }
}

/// What a group's results come back to JavaScript as (`many.js` chooses).
#[napi]
pub enum BatchForm {
  /// Each result (a Buffer, or its error) with memory of its own.
  Own,
  /// Each result, the small ones carved from slabs (see [`slabs`]).
  Slabs,
  /// All results end to end in one Buffer, with where each ends; or the first failure. The
  /// Buffer is the group's chunk itself, handed over (see `handed_over`).
  Packed,
  /// As `Packed`, the chunk copied into a Buffer of JavaScript's own: on worker threads (see
  /// `externalMemory` in `lib/platform.js`).
  PackedCopied,
}

/// A group's results as the work makes them, for the form they come back as.
enum Sunk {
  Each { results: Results, share: bool },
  Packed { packed: Packed, copied: bool },
}

impl Sunk {
  /// Room for `count` results in `form`; packed, at most `packed_limit` bytes of them (the
  /// largest Buffer: `buffer.constants.MAX_LENGTH`).
  fn new(form: BatchForm, count: usize, packed_limit: f64) -> std::result::Result<Self, Failure> {
    Ok(match form {
      // A float past usize's range saturates; NaN is 0.
      BatchForm::Packed | BatchForm::PackedCopied => {
        Sunk::Packed { packed: Packed::new(count, packed_limit as usize)?, copied: matches!(form, BatchForm::PackedCopied) }
      }
      form => Sunk::Each { results: Results::new(count, SMALL_BELOW)?, share: matches!(form, BatchForm::Slabs) },
    })
  }
}

/// A batch's work: its items, the prefix they share (a copy of bytes, or a `Prefix`'s), the call
/// each makes, and the room for their results.
struct Batch<C> {
  items: Items,
  prefix: Option<SharedPrefix>,
  call: C,
  results: Option<Sunk>,
}

impl<C: ItemCall> Batch<C> {
  /// Copies the inputs given end to end in `inputs` (`lengths[i]` bytes each), and `prefix` if
  /// it is bytes.
  fn new(
    inputs: &[u8],
    lengths: &[u32],
    prefix: Option<HeldPrefix>,
    call: C,
    (form, packed_limit): (BatchForm, f64),
  ) -> std::result::Result<Self, Failure> {
    let prefix = prefix.map(HeldPrefix::shared).transpose()?;
    let results = Some(Sunk::new(form, lengths.len(), packed_limit)?);
    Ok(Self { items: Items::new(inputs, lengths)?, prefix, call, results })
  }

  /// Runs every item into `results`, in order, until the sink is done.
  fn run_all(&self, results: &mut impl Sink, stop: &AtomicBool) {
    let mut held = Held::new(C::pool());
    for input in self.items.each() {
      if results.done() {
        break;
      }
      // Cancelled while it runs: the items left fail as aborted (the call has already rejected).
      if stop.load(Ordering::Acquire) {
        results.push(Err(Failure::Aborted));
      } else {
        self.call.run(&mut held, input, self.prefix.as_deref(), results);
      }
    }
    // Before the prefix and the dictionary, which the context may still refer to.
    held.give_back();
  }
}

impl<C: ItemCall> node::Job for Batch<C> {
  type Output = Sunk;

  fn name(&self) -> &'static str {
    C::NAME
  }

  fn compute(&mut self) -> std::result::Result<Sunk, Failure> {
    self.compute_until(&AtomicBool::new(false))
  }

  fn compute_until(&mut self, stop: &AtomicBool) -> std::result::Result<Sunk, Failure> {
    // Computed once: a bug otherwise.
    let mut results = self.results.take().ok_or(Failure::Panicked)?;
    match &mut results {
      Sunk::Each { results, .. } => self.run_all(results, stop),
      Sunk::Packed { packed, .. } => self.run_all(packed, stop),
    }
    self.items.give_back();
    Ok(results)
  }
}

impl node::IntoJs for Sunk {
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    match self {
      Sunk::Each { results, share: true } => slabs(env, results),
      Sunk::Each { results, share: false } => each_its_own(env, results),
      Sunk::Packed { packed, copied } => packed_js(env, packed, copied),
    }
  }
}

/// A packed group's results: `[data, ends]`, a Buffer of the results end to end (the chunk
/// handed over, or `copied`) and one of where each ends (an `f64` each, for a `Float64Array`);
/// or `[error, index]`, its first failure and the index of that item in the group.
fn packed_js(env: &Env, packed: Packed, copied: bool) -> std::result::Result<Js, Failure> {
  let pair = match packed.finish() {
    Ok((data, ends)) => [node::handed_over(env, data, !copied)?, node::result_bytes(env, ends)?],
    Err((index, failure)) => {
      let index = u32::try_from(index).map_err(|_| Failure::Napi("a batch index"))?;
      [its_own(env, Err(failure))?, Js::number(env, index)?]
    }
  };
  node::settled_array(env, &pair)
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
/// the inputs large enough); a Promise of their results (see [`Sunk`]'s `into_js`). One copy
/// of `prefix` (none, for a `Prefix`) serves every input. `form`: what the results come back as;
/// `packed_limit`: the most bytes a packed group's results may take.
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error | number>>")]
#[allow(clippy::too_many_arguments)]
pub fn compress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  settings: &[i32],
  #[napi(ts_arg_type = "PreparedDictionary | PreparedPrefix | Uint8Array | undefined")] reference: Option<Reference>,
  form: BatchForm,
  packed_limit: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let dictionary = dictionary_of(&reference);
  let queued = CompressCall::new(settings, || prepared(dictionary)).and_then(|call| {
    let prefix = HeldPrefix::of(&reference)?;
    // Small batches share the lanes with single calls in flight (see `lanes.rs`): a group's
    // results are settled while the next group runs.
    let prefix_len = prefix.as_ref().map_or(0, |prefix| prefix.bytes().len());
    let micros: f64 = lengths.iter().map(|&len| call.estimated_micros(len as usize, prefix_len)).sum();
    lanes::queue(&env, Batch::new(inputs, lengths, prefix, call, (form, packed_limit))?, cancellation, micros, false, false)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  queued.map_err(|failure| node::throw(&env, failure))
}

/// Decompresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `decompress` would, each within the limits, on one threadpool thread; a Promise of their
/// results (as for [`compress_batch`]).
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error | number>>")]
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
  form: BatchForm,
  packed_limit: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = HeldPrefix::of(&reference).and_then(|prefix| {
    let dictionary = || prepared(dictionary_of(&reference));
    let call = DecompressCall::new(max_output_length, window_log_max, dictionary, prefix.as_ref().map(HeldPrefix::bytes))?
      .with_set(set_of(&reference)?);
    node::queue(&env, Batch::new(inputs, lengths, prefix, call, (form, packed_limit))?, cancellation)
  });
  queued.map_err(|failure| node::throw(&env, failure))
}
