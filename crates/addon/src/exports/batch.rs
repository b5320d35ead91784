//! Batches: `compressMany` / `decompressMany` (`many.js`) send their inputs here a group at a time,
//! and each group runs as one threadpool work item, so that the round trip to the threadpool
//! (tens of microseconds) is paid per group rather than per input.
//!
//! A batch is given its inputs end to end with their lengths, and copies them (its work runs
//! after the call returns). Every item is a call of its own: its own pooled context, limits and
//! failure, so one item failing costs no other item its result. The results come back as a
//! [`BatchResults`]: the small ones packed into pages, which `lib/results.js` turns into slabs
//! and carves their Buffers from (see the core's `batch.rs` for why), the others each on its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use napi::bindgen_prelude::JavaScriptClassExt;
use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe;

use zstd_pool_core::batch::Results;
use zstd_pool_core::decompress::{self, OutputPlan};
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::owned;
use zstd_pool_core::oneshot::{CompressCall, DecompressCall};

use crate::exports::dictionary::{prepared, PreparedDictionary};
use crate::exports::oneshot::SHARED_BELOW;
use crate::napi::lanes;
use crate::napi::{self as node, Cancellation, Js, Target, RESULTS_IN_PLACE};

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
      return Err(Failure::Unsupported("batch lengths that do not add up to its input"));
    }
    Ok(Self { data: owned(data)?, ends })
  }

  fn each(&self) -> impl Iterator<Item = &[u8]> {
    let starts = std::iter::once(0).chain(self.ends.iter().copied());
    starts.zip(self.ends.iter().copied()).map(|(start, end)| &self.data[start..end])
  }
}

/// What a batch does with each of its items: what a single `compress` / `decompress` call does.
trait ItemCall: Send + 'static {
  /// The async resource name of the batch's work (see `Job::NAME`).
  const NAME: &'static str;
  /// Runs the call on `input` and adds its result, or its failure, to `results`.
  fn run(&self, input: &[u8], prefix: Option<&[u8]>, results: &mut Results);
}

impl ItemCall for CompressCall {
  const NAME: &'static str = "zstd-pool:compress-batch";

  fn run(&self, input: &[u8], prefix: Option<&[u8]>, results: &mut Results) {
    let bound = zstd_safe::compress_bound(input.len());
    if results.fits(bound) {
      results.push_written(bound, |room| self.compress_into(input, prefix, room));
    } else {
      results.push(self.compress_to_vec(input, prefix));
    }
  }
}

impl ItemCall for DecompressCall {
  const NAME: &'static str = "zstd-pool:decompress-batch";

  fn run(&self, input: &[u8], prefix: Option<&[u8]>, results: &mut Results) {
    match decompress::plan_output(input, self.limits, self.dictionary.as_deref()) {
      Ok(OutputPlan::Exact(len)) if results.fits(len) => {
        results.push_written(len, |room| self.decode_exact(input, prefix, room, len).map(|()| len))
      }
      Ok(plan) => results.push(self.decode_to_vec(input, prefix, plan)),
      Err(failure) => results.push(Err(failure)),
    }
  }
}

/// A batch's work: its items, one copy of the prefix they share, the call each makes, and the
/// room for their results.
struct Batch<C> {
  items: Items,
  prefix: Option<Vec<u8>>,
  call: C,
  results: Results,
}

impl<C: ItemCall> Batch<C> {
  /// Copies the inputs given end to end in `inputs` (`lengths[i]` bytes each) and `prefix`, and
  /// makes room for their results, about `expected` bytes of them small.
  fn new(inputs: &[u8], lengths: &[u32], prefix: Option<&[u8]>, call: C, expected: usize) -> std::result::Result<Self, Failure> {
    let prefix = prefix.map(owned).transpose()?;
    let results = Results::new(lengths.len(), SMALL_BELOW, expected)?;
    Ok(Self { items: Items::new(inputs, lengths)?, prefix, call, results })
  }
}

impl<C: ItemCall> node::Job for Batch<C> {
  type Output = Results;
  const NAME: &'static str = C::NAME;

  fn compute(&mut self) -> std::result::Result<Results, Failure> {
    self.compute_until(&AtomicBool::new(false))
  }

  fn compute_until(&mut self, stop: &AtomicBool) -> std::result::Result<Results, Failure> {
    let mut results = std::mem::take(&mut self.results);
    for input in self.items.each() {
      // Cancelled while it runs: the items left fail as aborted (the call has already rejected).
      if stop.load(Ordering::Acquire) {
        results.push(Err(Failure::Aborted));
      } else {
        self.call.run(input, self.prefix.as_deref(), &mut results);
      }
    }
    Ok(results)
  }

  fn resolve(self, env: &Env, results: Results) -> std::result::Result<Js, Failure> {
    let results = BatchResults { results: Mutex::new(Some(results)) };
    // An instance made without calling its constructor.
    results.into_instance(env).map(|instance| Js::from_raw(instance.value)).map_err(|_| Failure::Napi("BatchResults"))
  }
}

/// A group's results, in native memory until `lib/results.js` turns them into Buffers: where each
/// is (`layoutInto`), the pages of small results (`copyPage`, each into a slab of its own) and
/// the others (`take`), then `release`.
#[napi]
pub struct BatchResults {
  /// `None` once released.
  results: Mutex<Option<Results>>,
}

#[napi]
impl BatchResults {
  /// How many results there are.
  #[napi(getter)]
  pub fn count(&self) -> u32 {
    self.lock().as_ref().map_or(0, |results| results.count() as u32)
  }

  /// Copies where each result is into `target`, the bytes of a `Uint32Array` of three numbers
  /// per result (see the core's `batch.rs`): its page, its offset there and its length; or
  /// `0xFFFFFFFF` for a result in no page (`take` gives it). Whether `target` had room. (Under
  /// WASI it never has: no result is in a page there.)
  #[napi(ts_args_type = "target: Uint8Array")]
  pub fn layout_into(&self, mut target: Target) -> bool {
    let guard = self.lock();
    let Some(layout) = guard.as_ref().map(Results::layout) else {
      return false;
    };
    write_all(&mut target, layout)
  }

  /// Copies page `index` into `target` (a slab at least as long); whether it could.
  #[napi(ts_args_type = "index: number, target: Buffer")]
  pub fn copy_page(&self, index: u32, mut target: Target) -> bool {
    let guard = self.lock();
    let Some(page) = guard.as_ref().and_then(|results| results.page(index as usize)) else {
      return false;
    };
    write_all(&mut target, page)
  }

  /// Result `index`, if it is in no page: its Buffer (or `NativeBytes`, as a single call's), or
  /// its Error; `null` once taken, and for a result in a page.
  #[napi(ts_return_type = "Buffer | NativeBytes | Error | null")]
  pub fn take(&self, env: Env, index: u32) -> Result<Option<Js>> {
    // Out of the lock before any value is made: making an error can run JavaScript, which may
    // call in.
    let taken = self.lock().as_mut().and_then(|results| results.take(index as usize));
    let value = match taken {
      None => return Ok(None),
      Some(Ok(bytes)) => node::result_bytes(&env, bytes),
      Some(Err(failure)) => node::error_value(&env, &failure).map(Js::from_raw).ok_or(Failure::Napi("an error")),
    };
    value.map(Some).map_err(|failure| node::throw(&env, failure))
  }

  /// Frees the results left in native memory.
  #[napi]
  pub fn release(&self) {
    let results = self.lock().take();
    drop(results);
  }
}

impl BatchResults {
  fn lock(&self) -> MutexGuard<'_, Option<Results>> {
    self.results.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
  }
}

/// Writes `bytes` at the start of `target`, if it has room for them.
fn write_all(target: &mut Target, bytes: &[u8]) -> bool {
  if bytes.is_empty() {
    return true;
  }
  // `bytes` is native memory: it cannot overlap the target.
  match target.room(0, bytes.len(), &[]) {
    Some(mut room) => {
      room.write(bytes);
      true
    }
    None => false,
  }
}

/// Compresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `compress` would, on one threadpool thread (and, with `workers`, libzstd's worker threads for
/// the inputs large enough); a Promise of their results (see [`BatchResults`]). One copy of
/// `prefix` serves every input.
#[napi(ts_return_type = "Promise<BatchResults>")]
#[allow(clippy::too_many_arguments)]
pub fn compress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  level: i32,
  checksum: bool,
  workers: u32,
  dictionary: Option<&PreparedDictionary>,
  tuning: Option<&[i32]>,
  prefix: Option<&[u8]>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = CompressCall::new(level, checksum, workers, tuning, || prepared(dictionary)).and_then(|call| {
    // Small batches share the lanes with single calls in flight (see `lanes.rs`): a group's
    // results are settled while the next group runs.
    let prefix_len = prefix.map_or(0, <[u8]>::len);
    let micros: f64 = lengths.iter().map(|&len| call.estimated_micros(len as usize, prefix_len)).sum();
    // The small frames take at most their bound: room that is never written costs no memory.
    let expected = lengths.iter().map(|&len| zstd_safe::compress_bound(len as usize)).filter(|&bound| bound < SMALL_BELOW).sum();
    lanes::queue(&env, Batch::new(inputs, lengths, prefix, call, expected)?, cancellation, micros)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  queued.map_err(|failure| node::throw(&env, failure))
}

/// Decompresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `decompress` would, each within the limits, on one threadpool thread; a Promise of their
/// results (see [`BatchResults`]).
#[napi(ts_return_type = "Promise<BatchResults>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  max_output_length: f64,
  window_log_max: u32,
  dictionary: Option<&PreparedDictionary>,
  prefix: Option<&[u8]>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = DecompressCall::new(max_output_length, window_log_max, || prepared(dictionary), prefix).and_then(|call| {
    // A guess (sizes are read from the frames only as they are decoded): typical compression
    // ratios are below 4, and no small result is as large as SMALL_BELOW.
    let expected = inputs.len().saturating_mul(4).min(lengths.len().saturating_mul(SMALL_BELOW));
    node::queue(&env, Batch::new(inputs, lengths, prefix, call, expected)?, cancellation)
  });
  queued.map_err(|failure| node::throw(&env, failure))
}
