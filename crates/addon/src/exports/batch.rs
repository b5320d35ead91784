//! Batches: the work of many small calls as one threadpool work item, so that the round trip to
//! the threadpool (tens of microseconds) is paid per batch rather than per call. `main.js` joins
//! the async calls of a burst into batches and spreads them over the threadpool's threads; it
//! also sends `compressMany` / `decompressMany` here.
//!
//! A batch is given its inputs end to end with their lengths, and copies them (its work runs
//! after the call returns). Every item is a call of its own: its own pooled context, limits and
//! failure, so one item failing costs no other item its result.

use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::Either;
use napi::{Env, Result};
use napi_derive::napi;

use zstd_pool_core::decompress;
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::owned;
use zstd_pool_core::oneshot::{CompressCall, DecompressCall};

use crate::exports::dictionary::{prepared, PreparedDictionary};
use crate::exports::prefix::{HeldPrefix, PreparedPrefix, SharedPrefix};
use crate::napi::lanes;
use crate::napi::{self as node, Cancellation, Js};

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

/// An item's work, unless the batch was cancelled while it ran: then the items left fail as
/// aborted (their call has already rejected).
fn until(
  stop: &AtomicBool,
  work: impl FnOnce() -> std::result::Result<Vec<u8>, Failure>,
) -> std::result::Result<Vec<u8>, Failure> {
  if stop.load(Ordering::Acquire) {
    return Err(Failure::Aborted);
  }
  work()
}

/// Each item's output, or why it has none.
type Outputs = Vec<std::result::Result<Vec<u8>, Failure>>;

/// The batch's result: an array with each item's result (a Buffer, or a `NativeBytes` for
/// `main.js` to move into one, as a single call's) or its error.
impl node::IntoJs for Outputs {
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    let mut elements = Vec::with_capacity(self.len());
    for (index, output) in self.into_iter().enumerate() {
      let value = match output {
        Ok(bytes) => node::result_bytes(env, bytes)?.raw(),
        Err(failure) => node::error_value(env, &failure).ok_or(Failure::Napi("an error"))?,
      };
      elements.push((index, value));
    }
    node::array(env, elements.len(), &elements)
  }
}

/// What a batch does with each of its items: what a single `compress` / `decompress` call does.
trait ItemCall: Send + 'static {
  /// The async resource name of the batch's work (see `Job::NAME`).
  const NAME: &'static str;
  fn run(&self, input: &[u8], prefix: Option<&[u8]>) -> std::result::Result<Vec<u8>, Failure>;
}

impl ItemCall for CompressCall {
  const NAME: &'static str = "zstd-pool:compress-batch";

  fn run(&self, input: &[u8], prefix: Option<&[u8]>) -> std::result::Result<Vec<u8>, Failure> {
    self.compress_to_vec(input, prefix)
  }
}

impl ItemCall for DecompressCall {
  const NAME: &'static str = "zstd-pool:decompress-batch";

  fn run(&self, input: &[u8], prefix: Option<&[u8]>) -> std::result::Result<Vec<u8>, Failure> {
    let plan = decompress::plan_output(input, self.limits, self.dictionary.as_deref())?;
    self.decode_to_vec(input, prefix, plan)
  }
}

/// A batch's work: its items, the prefix they share (a copy of bytes, or a `Prefix`'s), and the
/// call each makes.
struct Batch<C> {
  items: Items,
  prefix: Option<SharedPrefix>,
  call: C,
}

impl<C: ItemCall> Batch<C> {
  /// Copies the inputs given end to end in `inputs` (`lengths[i]` bytes each), and `prefix` if
  /// it is bytes.
  fn new(inputs: &[u8], lengths: &[u32], prefix: Option<HeldPrefix>, call: C) -> std::result::Result<Self, Failure> {
    let prefix = prefix.map(HeldPrefix::shared).transpose()?;
    Ok(Self { items: Items::new(inputs, lengths)?, prefix, call })
  }
}

impl<C: ItemCall> node::Job for Batch<C> {
  type Output = Outputs;
  const NAME: &'static str = C::NAME;

  fn compute(&mut self) -> std::result::Result<Outputs, Failure> {
    self.compute_until(&AtomicBool::new(false))
  }

  fn compute_until(&mut self, stop: &AtomicBool) -> std::result::Result<Outputs, Failure> {
    let (call, prefix) = (&self.call, self.prefix.as_deref());
    Ok(self.items.each().map(|input| until(stop, || call.run(input, prefix))).collect())
  }
}

/// Compresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `compress` would, on one threadpool thread (and, with `workers`, libzstd's worker threads for
/// the inputs large enough); a Promise of their results (see `resolve`). One copy of `prefix`
/// (none, for a `Prefix`) serves every input.
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error>>")]
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
  prefix: Option<Either<&[u8], &PreparedPrefix>>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = CompressCall::new(level, checksum, workers, tuning, || prepared(dictionary)).and_then(|call| {
    let prefix = HeldPrefix::of(prefix)?;
    // Small batches share the lanes with single calls in flight (see `lanes.rs`): a group's
    // results are settled while the next group runs.
    let prefix_len = prefix.as_ref().map_or(0, |prefix| prefix.bytes().len());
    let micros: f64 = lengths.iter().map(|&len| call.estimated_micros(len as usize, prefix_len)).sum();
    lanes::queue(&env, Batch::new(inputs, lengths, prefix, call)?, cancellation, micros)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  queued.map_err(|failure| node::throw(&env, failure))
}

/// Decompresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `decompress` would, each within the limits, on one threadpool thread; a Promise of their
/// results (see `resolve`).
#[napi(ts_return_type = "Promise<Array<Buffer | NativeBytes | Error>>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress_batch(
  env: Env,
  inputs: &[u8],
  lengths: &[u32],
  max_output_length: f64,
  window_log_max: u32,
  dictionary: Option<&PreparedDictionary>,
  prefix: Option<Either<&[u8], &PreparedPrefix>>,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let queued = HeldPrefix::of(prefix).and_then(|prefix| {
    let call =
      DecompressCall::new(max_output_length, window_log_max, || prepared(dictionary), prefix.as_ref().map(HeldPrefix::bytes))?;
    node::queue(&env, Batch::new(inputs, lengths, prefix, call)?, cancellation)
  });
  queued.map_err(|failure| node::throw(&env, failure))
}
