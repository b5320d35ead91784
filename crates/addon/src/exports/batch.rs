//! Batches: `compressMany` / `decompressMany` (`many.js`) send their inputs here a group at a time,
//! and each group runs as one threadpool work item, so that the round trip to the threadpool
//! (tens of microseconds) is paid per group rather than per input.
//!
//! A batch is given its inputs end to end with their lengths, and copies them (its work runs
//! after the call returns). The groups of a large batch share a [`BatchTeam`]: a group that runs
//! out of items takes half of what another has left (see the core's `batch/share.rs`), and gives
//! their results back as a segment of their own. Every item is a call of its own: its own pooled
//! context, limits and failure. What a group's results come back as is its [`BatchForm`]: each
//! item's result (or failure, which costs no other item its result), as a Buffer of its own or
//! carved from a slab (the work packs small results into pages: see the core's `batch.rs` for
//! why); or, packed, all of them end to end in one Buffer (the core's `packed.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe::{self, CCtx, DCtx};

use zstd_pool_core::batch::share::{Range, Team};
use zstd_pool_core::batch::{Results, Sink, Taken};
use zstd_pool_core::decompress::OutputPlan;
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::{scratch, try_vec, Scratch};
use zstd_pool_core::oneshot::{CompressCall, DecompressCall};
use zstd_pool_core::packed::Packed;
use zstd_pool_core::pool::{Context, ContextPool, Held, COMPRESSORS, DECOMPRESSORS};
use zstd_pool_core::schedule;

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

  fn count(&self) -> u32 {
    // `lengths` came as a `Uint32Array`: fewer than 2^32 of them.
    u32::try_from(self.ends.len()).unwrap_or(u32::MAX)
  }

  /// Where item `index` starts (0 past the end).
  fn start(&self, index: u32) -> usize {
    index.checked_sub(1).and_then(|before| self.ends.get(before as usize)).copied().unwrap_or_default()
  }

  /// The bytes of items `[from, to)`.
  fn bytes(&self, from: u32, to: u32) -> u64 {
    self.start(to).saturating_sub(self.start(from)) as u64
  }

  /// Item `index` (empty past the end).
  fn get(&self, index: u32) -> &[u8] {
    let data = self.data.as_deref().map_or(&[][..], Vec::as_slice);
    let end = self.ends.get(index as usize).copied().unwrap_or_default();
    data.get(self.start(index)..end).unwrap_or_default()
  }

  /// Gives the copy back to its pool, once every item has run.
  fn give_back(&mut self) {
    if let Some(copy) = self.data.take() {
      copy.give_back();
    }
  }
}

impl Drop for Items {
  /// Once no group runs its items any more.
  fn drop(&mut self) {
    self.give_back();
  }
}

/// What a batch does with each of its items: what a single `compress` / `decompress` call does,
/// with a context its group holds from item to item (see `Held`).
trait ItemCall: Send + Sync + 'static {
  /// The async resource name of the batch's work (see `Job::name`).
  const NAME: &'static str;
  type Context: Context;
  /// The pool the group's context comes from.
  fn pool() -> &'static ContextPool<Self::Context>;
  /// Where packed groups making this call leave their [`Ratio`].
  fn last_ratio() -> &'static AtomicU64;
  /// The groups of `team` that make this call.
  fn team(team: &BatchTeam) -> Arc<Team<Group<Self>>>
  where
    Self: Sized;
  /// Runs the call on `input` and adds its result, or its failure, to `results`.
  fn run(&self, held: &mut Held<'static, Self::Context>, input: &[u8], prefix: Option<&[u8]>, results: &mut impl Sink);
}

impl ItemCall for CompressCall {
  const NAME: &'static str = "zstd-pool:compress-batch";
  type Context = CCtx<'static>;

  fn pool() -> &'static ContextPool<CCtx<'static>> {
    &COMPRESSORS
  }

  fn last_ratio() -> &'static AtomicU64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    &LAST
  }

  fn team(team: &BatchTeam) -> Arc<Team<Group<Self>>> {
    team.compressions.clone()
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

  fn last_ratio() -> &'static AtomicU64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    &LAST
  }

  fn team(team: &BatchTeam) -> Arc<Team<Group<Self>>> {
    team.decompressions.clone()
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
#[derive(Clone, Copy)]
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
  /// largest Buffer: `buffer.constants.MAX_LENGTH`), about `expected`.
  fn new(form: BatchForm, count: usize, packed_limit: f64, expected: Option<usize>) -> std::result::Result<Self, Failure> {
    Ok(match form {
      // A float past usize's range saturates; NaN is 0.
      BatchForm::Packed | BatchForm::PackedCopied => {
        let packed = Packed::new(count, packed_limit as usize, expected)?;
        Sunk::Packed { packed, copied: matches!(form, BatchForm::PackedCopied) }
      }
      form => Sunk::Each { results: Results::new(count, SMALL_BELOW)?, share: matches!(form, BatchForm::Slabs) },
    })
  }
}

/// A group of a batch, as whoever runs its items sees it: its index in the batch, its items, the
/// prefix they share (a copy of bytes, or a `Prefix`'s) and the call each makes.
struct Group<C> {
  index: u32,
  items: Items,
  prefix: Option<SharedPrefix>,
  call: C,
}

impl<C: ItemCall> Group<C> {
  /// Runs the items of `range` into `results`, in order, until the sink is done.
  fn run(&self, range: &Range<Self>, results: &mut impl Sink, stop: &AtomicBool) {
    let mut held = Held::new(C::pool());
    while let Some(index) = range.next() {
      // Cancelled while it runs: the items left fail as aborted (the call has already rejected).
      if stop.load(Ordering::Acquire) {
        results.push(Err(Failure::Aborted));
      } else {
        self.call.run(&mut held, self.items.get(index), self.prefix.as_deref(), results);
      }
      if results.done() {
        // A packed group that failed: the rest of its range would be wasted work.
        range.finish();
        break;
      }
    }
    // Before the prefix and the dictionary, which the context may still refer to.
    held.give_back();
  }
}

/// A batch group's work: its own range of items, then, in a team, halves of its team's (see
/// the top).
struct Batch<C> {
  range: Arc<Range<Group<C>>>,
  /// `None`: the group runs its own items alone.
  team: Option<Arc<Team<Group<C>>>>,
  /// The room for the results of its own range, made with the call (taken once, as it runs).
  own: Option<Sunk>,
  form: BatchForm,
  packed_limit: f64,
}

impl<C: ItemCall> Batch<C> {
  /// Copies the inputs given end to end in `inputs` (`lengths[i]` bytes each), and `prefix` if
  /// it is bytes: group `index` of the batch whose groups share `team`.
  fn new(
    inputs: &[u8],
    lengths: &[u32],
    prefix: Option<HeldPrefix>,
    call: C,
    (form, packed_limit): (BatchForm, f64),
    (team, index): (Option<&BatchTeam>, u32),
  ) -> std::result::Result<Self, Failure> {
    let prefix = prefix.map(HeldPrefix::shared).transpose()?;
    let items = Items::new(inputs, lengths)?;
    let count = items.count();
    let packed = matches!(form, BatchForm::Packed | BatchForm::PackedCopied);
    let expected = if packed { Ratio::new(C::last_ratio()).of(items.bytes(0, count)) } else { None };
    let own = Some(Sunk::new(form, lengths.len(), packed_limit, expected)?);
    let range = Arc::new(Range::new(Arc::new(Group { index, items, prefix, call }), 0, count));
    let team = team.map(C::team);
    if let Some(team) = &team {
      team.join(&range);
    }
    Ok(Self { range, team, own, form, packed_limit })
  }

  /// Runs `range` into `sunk`, or a sink of its own: a segment of the results. Packed, their
  /// size is expected to be the range's input times `ratio`; adds what it ran to `ratio`.
  fn segment(
    &self,
    range: &Range<Group<C>>,
    sunk: Option<Sunk>,
    ratio: &mut Ratio,
    stop: &AtomicBool,
  ) -> std::result::Result<Segment, Failure> {
    let group = &range.group;
    let first = range.first();
    let mut sunk = match sunk {
      Some(sunk) => sunk,
      None => Sunk::new(self.form, range.left() as usize, self.packed_limit, ratio.of(group.items.bytes(first, range.end())))?,
    };
    let made = match &mut sunk {
      Sunk::Each { results, .. } => {
        group.run(range, results, stop);
        None
      }
      Sunk::Packed { packed, .. } => {
        group.run(range, packed, stop);
        Some(packed.bytes())
      }
    };
    if let Some(made) = made {
      ratio.add(group.items.bytes(first, range.end()), made);
    }
    Ok(Segment { group: group.index, first, sunk })
  }
}

/// The bytes a packed group's results took for the bytes of its input so far (before its first
/// result, those of the last packed group of the process that made the same call): how large a
/// chunk its next run of results will want. A chunk too small grows by a copy into memory fresh
/// from the kernel, which cost decoding 10,000 frames of 1 KiB a thousand page faults a batch
/// once groups took over each other's items (2-core VM, Node 26, 2026-12-05).
struct Ratio {
  input: u64,
  output: u64,
  /// Where the last group left it (`f64` bits; 0: none yet).
  last: &'static AtomicU64,
}

impl Ratio {
  fn new(last: &'static AtomicU64) -> Self {
    Self { input: 0, output: 0, last }
  }

  /// The bytes expected for `input` bytes, if known.
  fn of(&self, input: u64) -> Option<usize> {
    let ratio = match self.input {
      0 => f64::from_bits(self.last.load(Ordering::Relaxed)),
      _ => self.output as f64 / self.input as f64,
    };
    // A float past usize's range saturates.
    (ratio > 0.0).then_some((input as f64 * ratio) as usize)
  }

  fn add(&mut self, input: u64, output: usize) {
    self.input += input;
    self.output += output as u64;
    if self.input > 0 {
      self.last.store((self.output as f64 / self.input as f64).to_bits(), Ordering::Relaxed);
    }
  }
}

/// The results of a run of one group's items, from item `first` of group `group`.
struct Segment {
  group: u32,
  first: u32,
  sunk: Sunk,
}

/// A group's results: its own segment, and in a team (`apart`) those it took over.
struct Segments {
  own: Segment,
  taken: Vec<Segment>,
  apart: bool,
}

impl<C: ItemCall> node::Job for Batch<C> {
  type Output = Segments;

  fn name(&self) -> &'static str {
    C::NAME
  }

  fn compute(&mut self) -> std::result::Result<Segments, Failure> {
    self.compute_until(&AtomicBool::new(false))
  }

  fn compute_until(&mut self, stop: &AtomicBool) -> std::result::Result<Segments, Failure> {
    let mut ratio = Ratio::new(C::last_ratio());
    // Computed once: a bug otherwise.
    let sunk = self.own.take().ok_or(Failure::Panicked)?;
    let own = self.segment(&self.range, Some(sunk), &mut ratio, stop)?;
    let mut taken = Vec::new();
    let bytes = |group: &Group<C>, from, to| group.items.bytes(from, to);
    while let Some(half) = self.team.as_ref().and_then(|team| team.take_half(schedule::BATCH_MIN_HALF_BYTES, bytes)) {
      taken.push(self.segment(&half, None, &mut ratio, stop)?);
    }
    // The inputs' copy back to its pool now, on this thread, unless another group still runs
    // some of them.
    if let Some(group) = Arc::get_mut(&mut self.range).and_then(|range| Arc::get_mut(&mut range.group)) {
      group.items.give_back();
    }
    Ok(Segments { own, taken, apart: self.team.is_some() })
  }
}

impl node::IntoJs for Segments {
  /// A group alone: its results. In a team: `[group, first, results, ...]`, three values per
  /// segment.
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    let Segments { own, taken, apart } = self;
    if !apart {
      return own.sunk.into_js(env);
    }
    let count = 1 + taken.len();
    let mut values = Vec::new();
    values.try_reserve_exact(3 * count).map_err(|_| Failure::OutOfMemory { bytes: 24 * count })?;
    for Segment { group, first, sunk } in std::iter::once(own).chain(taken) {
      values.push(Js::number(env, group)?);
      values.push(Js::number(env, first)?);
      values.push(sunk.into_js(env)?);
    }
    node::settled_array(env, &values)
  }
}

impl Sunk {
  fn into_js(self, env: &Env) -> std::result::Result<Js, Failure> {
    match self {
      Sunk::Each { results, share: true } => slabs(env, results),
      Sunk::Each { results, share: false } => each_its_own(env, results),
      Sunk::Packed { packed, copied } => packed_js(env, packed, copied),
    }
  }
}

/// What the groups of one batch share, so that one that runs out of items takes over half of
/// what another has left (see the core's `batch/share.rs`). Made by `many.js`, given to each
/// group's call.
#[napi]
pub struct BatchTeam {
  compressions: Arc<Team<Group<CompressCall>>>,
  decompressions: Arc<Team<Group<DecompressCall>>>,
}

#[napi]
impl BatchTeam {
  #[napi(constructor)]
  #[allow(clippy::new_without_default)]
  pub fn new() -> Self {
    Self { compressions: Arc::default(), decompressions: Arc::default() }
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
/// the inputs large enough); a Promise of their results, as segments (see `into_js` for
/// `Vec<Segment>`). One copy of `prefix` (none, for a `Prefix`) serves every input. `form`: what
/// the results come back as; `packed_limit`: the most bytes a packed group's results may take;
/// `team`: what the batch's groups share (none: this group runs its items alone), `group` its
/// index among them.
#[napi(ts_return_type = "Promise<Array<number | Array<Buffer | NativeBytes | Error | number>>>")]
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
  team: Option<&BatchTeam>,
  group: u32,
) -> Result<Js> {
  let dictionary = dictionary_of(&reference);
  let queued = CompressCall::new(settings, || prepared(dictionary)).and_then(|call| {
    let prefix = HeldPrefix::of(&reference)?;
    // Small batches share the lanes with single calls in flight (see `lanes.rs`): a group's
    // results are settled while the next group runs.
    let prefix_len = prefix.as_ref().map_or(0, |prefix| prefix.bytes().len());
    let micros: f64 = lengths.iter().map(|&len| call.estimated_micros(len as usize, prefix_len)).sum();
    let batch = Batch::new(inputs, lengths, prefix, call, (form, packed_limit), (team, group))?;
    lanes::queue(&env, batch, cancellation, micros, false, false)
  });
  if let Some(dictionary) = dictionary {
    dictionary.report(&env);
  }
  queued.map_err(|failure| node::throw(&env, failure))
}

/// Decompresses each of the inputs given end to end in `inputs` (`lengths[i]` bytes each) as
/// `decompress` would, each within the limits, on one threadpool thread; a Promise of their
/// results (as for [`compress_batch`]).
#[napi(ts_return_type = "Promise<Array<number | Array<Buffer | NativeBytes | Error | number>>>")]
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
  team: Option<&BatchTeam>,
  group: u32,
) -> Result<Js> {
  let queued = HeldPrefix::of(&reference).and_then(|prefix| {
    let dictionary = || prepared(dictionary_of(&reference));
    let call = DecompressCall::new(max_output_length, window_log_max, dictionary, prefix.as_ref().map(HeldPrefix::bytes))?
      .with_set(set_of(&reference)?);
    node::queue(&env, Batch::new(inputs, lengths, prefix, call, (form, packed_limit), (team, group))?, cancellation)
  });
  queued.map_err(|failure| node::throw(&env, failure))
}
