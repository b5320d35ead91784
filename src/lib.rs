//! zstd-pool's native binding: one-shot compression and decompression, dictionaries and the
//! context pools, with typed napi-rs arguments. It is called only by the package entry,
//! `main.js`, which checks and normalises every argument first (JavaScript validates, native
//! computes); the binding itself is not part of the public API.
//!
//! A call goes through three files: `main.js` (arguments, and the view of a small result),
//! this file (the work), and `node.rs` (the few Node-API calls made by hand: result Buffers,
//! the threadpool, errors). `stream.rs` holds the stream sessions, `batch.rs` the batches of
//! `compressMany` / `decompressMany`. The rest is plain Rust: the
//! pools (`pool.rs`, `mt.rs`), the codecs (`compress.rs`, `decompress.rs`), dictionaries
//! (`dict.rs`) and the failures (`error.rs`).
//!
//! Every exported function runs on a JavaScript thread, and no JavaScript runs during it
//! except where `node.rs` says (creating a Promise, async work or an error): the typed
//! arguments, the input slice among them, are read without running any, and are used only
//! before such a point. Work for the threadpool owns a copy of its input.

#![deny(clippy::all, clippy::undocumented_unsafe_blocks)]

pub mod batch;
pub mod compress;
pub mod decompress;
pub mod dict;
pub mod error;
mod floor;
pub mod frame;
mod lanes;
pub mod mt;
mod node;
pub mod pool;
pub mod staging;
pub mod stream;
pub mod sweep;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use napi::{Env, Result};
use napi_derive::napi;
use zstd::zstd_safe::{self, WriteBuf};

use crate::compress::{CompressParams, Reference, DEFAULT_LEVEL};
use crate::decompress::{DecodeWith, Limits, OutputPlan};
use crate::dict::Prepared;
use crate::error::Failure;
use crate::node::{Cancellation, Js, Target, RESULTS_IN_PLACE};
use crate::pool::{PoolCounters, COMPRESSORS, DECOMPRESSORS, MAX_IDLE_LIMIT};

/// Results smaller than this may share a slab (see `main.js`): as with `Buffer.allocUnsafe`,
/// a fresh `ArrayBuffer` per small result costs more than compressing a kilobyte (about 1 µs).
/// Under WASI, where the slab is the staging area, a result is written there whenever it fits:
/// copying it out in JavaScript costs less than any other way out of the module's memory.
const SHARED_BELOW: usize = if cfg!(target_family = "wasm") { u32::MAX as usize } else { 4096 };

/// A result Buffer is allocated before decoding, from the sizes the frames declare, only up to
/// this (see [`upfront_limit`]); larger results are allocated by JavaScript.
const MAX_UPFRONT: usize = node::JS_ALLOCATES_FROM;

/// The largest result Buffer allocated before decoding `input_len` bytes. Node 20 and 22 abort
/// the process when a Buffer cannot be allocated, so what a header claims is trusted only up to
/// what the input's blocks can produce (`plan_output`), a fixed cap, and 1024 times the input (a
/// ratio that typical data stays well under). A larger declared size is decoded into native
/// memory, allocated fallibly, and copied into a Buffer once produced: earned, not claimed.
fn upfront_limit(input_len: usize) -> usize {
  input_len.saturating_mul(1024).clamp(1 << 20, MAX_UPFRONT)
}

/// The most multi-threaded contexts `configurePool` lets the cache keep.
const MAX_IDLE_MULTITHREADED: u32 = 64;

/// What `main.js` needs to know about this build and libzstd, read once when it loads.
#[napi(object)]
pub struct Capabilities {
  pub min_level: i32,
  pub max_level: i32,
  pub default_level: i32,
  /// The most worker threads libzstd accepts; 0 when it has no multi-threading (WASI).
  pub max_workers: u32,
  pub min_window_log_max: u32,
  pub max_window_log_max: u32,
  pub default_window_log_max: u32,
  /// Whether results can be written into the caller's slab (not under WASI).
  pub results_in_place: bool,
  /// Results smaller than this go into the slab; `main.js` keeps at least this much room.
  pub shared_below: u32,
  /// Whether inputs and small results go through staging areas (see `staging.rs`): under WASI.
  pub staged: bool,
  /// Whether small async calls share long-lived threadpool work items (see `lanes.rs`): not
  /// under WASI, whose threads run work otherwise.
  pub lanes: bool,
  pub max_idle_contexts_limit: u32,
  pub max_idle_multithreaded_contexts_limit: u32,
  /// libzstd's bounds for each compression parameter this build supports (besides the level,
  /// the checksum and the workers), for `main.js` to check values against.
  pub compress_parameters: Vec<ParameterBounds>,
}

/// libzstd's bounds for one compression parameter (`ZSTD_cParam_getBounds`).
#[napi(object)]
pub struct ParameterBounds {
  /// Its `ZSTD_c_*` number.
  pub id: i32,
  pub min: i32,
  pub max: i32,
}

#[napi]
pub fn capabilities() -> Capabilities {
  Capabilities {
    min_level: zstd_safe::min_c_level(),
    max_level: zstd_safe::max_c_level(),
    default_level: DEFAULT_LEVEL,
    max_workers: mt::max_workers(),
    min_window_log_max: decompress::MIN_WINDOW_LOG_MAX,
    max_window_log_max: decompress::MAX_WINDOW_LOG_MAX,
    default_window_log_max: decompress::DEFAULT_WINDOW_LOG_MAX,
    results_in_place: RESULTS_IN_PLACE,
    staged: cfg!(target_family = "wasm"),
    lanes: lanes::ENABLED,
    shared_below: SHARED_BELOW as u32,
    max_idle_contexts_limit: MAX_IDLE_LIMIT as u32,
    max_idle_multithreaded_contexts_limit: MAX_IDLE_MULTITHREADED,
    compress_parameters: compress::param::ALL
      .iter()
      .filter_map(|&id| compress::bounds(id).map(|(min, max)| ParameterBounds { id, min, max }))
      .collect(),
  }
}

/// A dictionary prepared once (from `trainDictionary` or `zstd --train`) for any number of calls
/// on any thread; `main.js`'s `Dictionary` holds one. The memory it holds natively (its bytes and
/// digested forms, which grow by a compression form per level used, up to 4) is reported to V8,
/// so that garbage dictionaries are collected as their size warrants, and given back when it is.
#[napi(custom_finalize)]
pub struct PreparedDictionary {
  /// `None` once released: calls already running hold the dictionary by their own `Arc`.
  prepared: Mutex<Option<Arc<Prepared>>>,
  id: u32,
  size: usize,
  /// What V8 has been told this holds.
  reported: AtomicI64,
}

#[napi]
impl PreparedDictionary {
  /// Prepares a copy of `bytes`. Fails if they are empty or their tables are corrupt.
  #[napi(constructor)]
  pub fn new(env: Env, bytes: &[u8]) -> Result<Self> {
    let prepared = node::guarded(|| Prepared::new(owned(bytes)?)).map_err(|failure| node::throw(&env, failure))?;
    let (id, size) = (prepared.id(), prepared.bytes().len());
    let dictionary = Self { prepared: Mutex::new(Some(Arc::new(prepared))), id, size, reported: AtomicI64::new(0) };
    dictionary.report(&env);
    Ok(dictionary)
  }

  /// The dictionary ID frames made with it record; 0 for raw content, which has none.
  #[napi(getter)]
  pub fn id(&self) -> u32 {
    self.id
  }

  #[napi(getter)]
  pub fn size(&self) -> f64 {
    self.size as f64
  }

  /// Lets go of the native memory now rather than when the object is collected (once the calls
  /// and streams using it, which hold it too, end). Later calls with it fail.
  #[napi]
  pub fn release(&self, env: Env) {
    drop(self.take());
    self.report(&env);
  }
}

impl PreparedDictionary {
  fn take(&self) -> Option<Arc<Prepared>> {
    self.prepared.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
  }

  fn get(&self) -> Option<Arc<Prepared>> {
    self.prepared.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
  }

  /// Tells V8 what the dictionary holds now, if that changed (a compression call at a new level
  /// adds a digested form, maybe in place of another; a release gives it all back). Called by
  /// compression calls once their input is no longer needed: a form built on the threadpool is
  /// reported by the next call.
  pub(crate) fn report(&self, env: &Env) {
    let now = self.get().map_or(0, |prepared| prepared.memory() as i64);
    let before = self.reported.swap(now, Ordering::Relaxed);
    if now != before {
      // Failing to tell V8 leaves only its estimate off: nothing to report to the caller.
      let _ = env.adjust_external_memory(now - before);
    }
  }
}

impl napi::bindgen_prelude::ObjectFinalize for PreparedDictionary {
  fn finalize(self, env: Env) -> Result<()> {
    env.adjust_external_memory(-self.reported.load(Ordering::Relaxed)).map(drop)
  }
}

/// The dictionary a call uses, held for the call; a released one fails the call.
pub(crate) fn prepared(dictionary: Option<&PreparedDictionary>) -> std::result::Result<Option<Arc<Prepared>>, Failure> {
  dictionary.map(|dictionary| dictionary.get().ok_or(Failure::DictionaryReleased)).transpose()
}

/// A copy of an input, for work that runs after the call returns.
pub(crate) fn owned(input: &[u8]) -> std::result::Result<Vec<u8>, Failure> {
  let mut copy = node::try_vec(input.len())?;
  copy.extend_from_slice(input);
  Ok(copy)
}

// ---------------------------------------------------------------------------------------------
// Compression

/// Compresses `input` into one frame that records its content size.
///
/// `inline_micros` decides where the work runs: here, on the calling thread, if its estimated
/// time is at most that (`Infinity` for a sync call, which always runs here); else on the libuv
/// threadpool, and the result is a Promise. A result that runs here and is smaller than
/// `SHARED_BELOW` is written into `slab` at `slab_offset` when given, and the result is its
/// length; other results are Buffers (or, under WASI, `NativeBytes`).
#[napi(ts_return_type = "number | Buffer | Promise<Buffer>")]
#[allow(clippy::too_many_arguments)]
pub fn compress(
  env: Env,
  input: &[u8],
  level: i32,
  checksum: bool,
  workers: u32,
  dictionary: Option<&PreparedDictionary>,
  tuning: Option<&[i32]>,
  prefix: Option<&[u8]>,
  inline_micros: f64,
  #[napi(ts_arg_type = "Buffer | undefined")] slab: Option<Target>,
  slab_offset: u32,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let call = CompressCall::new(level, checksum, workers, tuning, dictionary).map_err(|failure| node::throw(&env, failure))?;
  call.run(&env, input, prefix, inline_micros, slab, slab_offset, cancellation, dictionary)
}

/// [`compress`] under WASI: the input is the first `input_length` bytes of `owner`'s staging
/// area, and a small result is written into it past the input (see `staging.rs`). Numbers only, and as few
/// as can do: emnapi reads each argument in a round trip through JavaScript.
#[napi(ts_return_type = "number | NativeBytes | Promise<NativeBytes>")]
#[allow(clippy::too_many_arguments)]
pub fn compress_staged(
  env: Env,
  owner: u32,
  input_length: u32,
  level: i32,
  checksum: bool,
  dictionary: Option<&PreparedDictionary>,
  tuning: Option<&[i32]>,
  prefix: Option<&[u8]>,
  inline_micros: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let Some((input, slab, offset)) = staging::staged(owner, input_length) else {
    return Err(node::throw(&env, Failure::Napi("no staged input")));
  };
  let call = CompressCall::new(level, checksum, 0, tuning, dictionary).map_err(|failure| node::throw(&env, failure))?;
  call.run(&env, input, prefix, inline_micros, Some(slab), offset, cancellation, dictionary)
}

pub(crate) struct CompressCall {
  pub(crate) params: CompressParams,
  pub(crate) dictionary: Option<Arc<Prepared>>,
}

impl CompressCall {
  pub(crate) fn new(
    level: i32,
    checksum: bool,
    workers: u32,
    tuning: Option<&[i32]>,
    dictionary: Option<&PreparedDictionary>,
  ) -> std::result::Result<Self, Failure> {
    let tuning = tuning.map(compress::Tuning::from_pairs).transpose()?.unwrap_or_default();
    let params = CompressParams { level, checksum, workers: mt::effective_workers(workers), tuning };
    Ok(Self { params, dictionary: prepared(dictionary)? })
  }

  #[allow(clippy::too_many_arguments)]
  fn run(
    self,
    env: &Env,
    input: &[u8],
    prefix: Option<&[u8]>,
    inline_micros: f64,
    slab: Option<Target>,
    slab_offset: u32,
    cancellation: Option<&Cancellation>,
    dictionary: Option<&PreparedDictionary>,
  ) -> Result<Js> {
    let micros = self.estimated_micros(input.len(), prefix.map_or(0, <[u8]>::len));
    let result = if micros <= inline_micros || lanes::help(env, micros, inline_micros) {
      self.run_here(env, input, prefix, slab, slab_offset)
    } else {
      owned(input).and_then(|input| {
        let prefix = prefix.map(owned).transpose()?;
        lanes::queue(env, CompressJob { input, prefix, call: self }, cancellation, micros)
      })
    };
    if let Some(dictionary) = dictionary {
      dictionary.report(env);
    }
    result.map_err(|failure| node::throw(env, failure))
  }

  /// Worker threads pay only for inputs of several libzstd jobs; smaller ones compress on the
  /// calling thread, with a pooled context.
  fn multithreaded(&self, len: usize) -> bool {
    self.params.workers > 0 && mt::pays(&self.params, len)
  }

  /// How long compressing `len` bytes (against a prefix of `prefix_len`) should take, in µs:
  /// infinite for work that should never run on the JavaScript thread of an async call.
  pub(crate) fn estimated_micros(&self, len: usize, prefix_len: usize) -> f64 {
    // Measured on a 2-core VM: about 250 MB/s at levels up to 3 for small inputs, slower above.
    let tuned_strategy = self.params.tuning.get(compress::param::STRATEGY).filter(|&strategy| strategy > 0);
    let bytes_per_micro = match (tuned_strategy, self.params.level) {
      // fast and dfast, as levels 1 to 3 use.
      (Some(1..=2), _) | (None, ..=3) => 250.0,
      // greedy and lazy (levels 4 to 6).
      (Some(3..=4), _) | (None, 4..=6) => 100.0,
      // lazy2 and btlazy2 (levels 7 to 9 and on).
      (Some(5..=6), _) | (None, 7..=9) => 40.0,
      _ => return f64::INFINITY,
    };
    // Long-distance matching adds a pass over the input.
    let passes = if self.params.tuning.get(compress::param::ENABLE_LDM) == Some(1) { 2.0 } else { 1.0 };
    if self.multithreaded(len) {
      return f64::INFINITY;
    }
    // libzstd sizes its tables down to a small input, but not the long-distance matcher's when
    // `ldmHashLog` is set: 8 bytes an entry, allocated and cleared at about 5 GB/s (2^28 entries
    // took 1.6 s for 1 KiB).
    let ldm_table = self.params.tuning.get(compress::param::LDM_HASH_LOG).map_or(0.0, |log| (8u64 << log) as f64 / 5000.0);
    // A prefix is indexed as the input is.
    6.0 + ldm_table + passes * (len + prefix_len) as f64 / bytes_per_micro
  }

  /// Compresses `input` into `output`, which has room for `compress_bound(input.len())` bytes,
  /// and returns the frame's length. The context comes from a pool (or, with workers, from the
  /// cache of multi-threaded contexts) and goes back only if the call succeeded.
  fn compress_into<C: WriteBuf + ?Sized>(
    &self,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
  ) -> std::result::Result<usize, Failure> {
    let mut params = self.params;
    // An empty prefix is none: it would only size the window for the input alone.
    let prefix = prefix.filter(|prefix| !prefix.is_empty());
    if let Some(prefix) = prefix {
      params.tuning = compress::tuning_for_prefix(params.level, params.tuning, prefix.len(), input.len());
    }
    // Declared before the context, so that a context that fails is freed before its dictionary.
    let digested = match &self.dictionary {
      Some(dictionary) if !params.tuning.sets_match_finder() => Some(dictionary.cdict(params.level)?),
      _ => None,
    };
    // `main.js` never passes both a prefix and a dictionary (libzstd would keep only the last).
    let reference = match (prefix, &self.dictionary, &digested) {
      (Some(prefix), _, _) => Some(Reference::Prefix(prefix)),
      (None, _, Some(cdict)) => Some(Reference::Digested(cdict)),
      (None, Some(dictionary), None) => Some(Reference::Loaded(dictionary.bytes())),
      (None, None, _) => None,
    };
    if self.multithreaded(input.len()) {
      let mut cctx = mt::CACHE.take(mt::Key { level: params.level, workers: params.workers })?;
      let written = compress::compress_with(&mut cctx, input, params, reference, output)?;
      cctx.give_back();
      return Ok(written);
    }
    let mut cctx = COMPRESSORS.take()?;
    let params = CompressParams { workers: 0, ..params };
    let written = compress::compress_with(&mut cctx, input, params, reference, output)?;
    cctx.give_back();
    Ok(written)
  }

  pub(crate) fn compress_to_vec(&self, input: &[u8], prefix: Option<&[u8]>) -> std::result::Result<Vec<u8>, Failure> {
    let mut output = node::try_vec(zstd_safe::compress_bound(input.len()))?;
    self.compress_into(input, prefix, &mut output)?;
    Ok(output)
  }

  /// Compresses on this thread: into the slab when the frame is sure to be small, else into
  /// native memory, copied into the slab or a new Buffer. With a prefix, never straight into
  /// the slab: the prefix could be a view of it.
  fn run_here(
    &self,
    env: &Env,
    input: &[u8],
    prefix: Option<&[u8]>,
    mut slab: Option<Target>,
    offset: u32,
  ) -> std::result::Result<Js, Failure> {
    let bound = zstd_safe::compress_bound(input.len());
    if bound < SHARED_BELOW && prefix.is_none() {
      if let Some(mut room) = slab.as_mut().and_then(|slab| slab.room(offset, bound, input)) {
        let written = node::guarded(|| self.compress_into(input, None, &mut room))?;
        return Js::number(env, written as u32);
      }
    }
    let frame = node::guarded(|| self.compress_to_vec(input, prefix))?;
    small_result(env, frame, slab, offset, input)
  }
}

/// `bytes` as the result: written into the slab if small and it has room, else as
/// `node::result_bytes` makes it.
fn small_result(
  env: &Env,
  bytes: Vec<u8>,
  mut slab: Option<Target>,
  offset: u32,
  input: &[u8],
) -> std::result::Result<Js, Failure> {
  if bytes.len() < SHARED_BELOW {
    if let Some(mut room) = slab.as_mut().and_then(|slab| slab.room(offset, bytes.len(), input)) {
      room.write(&bytes);
      return Js::number(env, bytes.len() as u32);
    }
  }
  node::result_bytes(env, bytes)
}

struct CompressJob {
  input: Vec<u8>,
  prefix: Option<Vec<u8>>,
  call: CompressCall,
}

impl node::Job for CompressJob {
  type Output = Vec<u8>;
  const NAME: &'static str = "zstd-pool:compress";

  fn compute(&mut self) -> std::result::Result<Vec<u8>, Failure> {
    self.call.compress_to_vec(&self.input, self.prefix.as_deref())
  }

  fn resolve(self, env: &Env, output: Vec<u8>) -> std::result::Result<Js, Failure> {
    node::result_bytes(env, output)
  }
}

// ---------------------------------------------------------------------------------------------
// Decompression

/// Decompresses every frame in `input` (frames with or without a recorded size, concatenated
/// frames, skippable frames) within `max_output_length` and `window_log_max`. Where the work
/// runs, and what the result is, as for [`compress`].
#[napi(ts_return_type = "number | Buffer | Promise<Buffer>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress(
  env: Env,
  input: &[u8],
  max_output_length: f64,
  window_log_max: u32,
  dictionary: Option<&PreparedDictionary>,
  prefix: Option<&[u8]>,
  inline_micros: f64,
  #[napi(ts_arg_type = "Buffer | undefined")] slab: Option<Target>,
  slab_offset: u32,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  DecompressCall::new(max_output_length, window_log_max, dictionary, prefix)
    .and_then(|call| call.run(&env, input, prefix, inline_micros, slab, slab_offset, cancellation))
    .map_err(|failure| node::throw(&env, failure))
}

/// [`decompress`] under WASI, as [`compress_staged`] is [`compress`].
#[napi(ts_return_type = "number | NativeBytes | Promise<NativeBytes>")]
#[allow(clippy::too_many_arguments)]
pub fn decompress_staged(
  env: Env,
  owner: u32,
  input_length: u32,
  max_output_length: f64,
  window_log_max: u32,
  dictionary: Option<&PreparedDictionary>,
  prefix: Option<&[u8]>,
  inline_micros: f64,
  cancellation: Option<&Cancellation>,
) -> Result<Js> {
  let Some((input, slab, offset)) = staging::staged(owner, input_length) else {
    return Err(node::throw(&env, Failure::Napi("no staged input")));
  };
  DecompressCall::new(max_output_length, window_log_max, dictionary, prefix)
    .and_then(|call| call.run(&env, input, prefix, inline_micros, Some(slab), offset, cancellation))
    .map_err(|failure| node::throw(&env, failure))
}

pub(crate) struct DecompressCall {
  pub(crate) limits: Limits,
  pub(crate) dictionary: Option<Arc<Prepared>>,
}

impl DecompressCall {
  /// A prefix (patch-from) raises the window limit to what compressing against it gives.
  pub(crate) fn new(
    max_output_length: f64,
    window_log_max: u32,
    dictionary: Option<&PreparedDictionary>,
    prefix: Option<&[u8]>,
  ) -> std::result::Result<Self, Failure> {
    let window_log_max = match prefix {
      Some(prefix) => decompress::window_log_max_for_prefix(window_log_max, prefix.len()),
      None => window_log_max,
    };
    // `main.js` checked the limit against `buffer.constants.MAX_LENGTH`; `as` saturates.
    let limits = Limits { max_output_length: max_output_length as usize, window_log_max };
    Ok(Self { limits, dictionary: prepared(dictionary)? })
  }

  /// What frames decode against: the prefix, or the dictionary (`main.js` never gives both).
  fn reference<'a>(&'a self, prefix: Option<&'a [u8]>) -> Option<DecodeWith<'a>> {
    match prefix {
      Some(prefix) => Some(DecodeWith::Prefix(prefix)),
      None => self.dictionary.as_deref().map(|dictionary| DecodeWith::Dictionary(dictionary.ddict())),
    }
  }

  #[allow(clippy::too_many_arguments)]
  fn run(
    self,
    env: &Env,
    input: &[u8],
    prefix: Option<&[u8]>,
    inline_micros: f64,
    slab: Option<Target>,
    offset: u32,
    cancellation: Option<&Cancellation>,
  ) -> std::result::Result<Js, Failure> {
    // The frame walk refuses what the limits or the dictionary rule out, before any work.
    let plan = decompress::plan_output(input, self.limits, self.dictionary.as_deref())?;
    let micros = estimated_micros(plan);
    if micros <= inline_micros || lanes::help(env, micros, inline_micros) {
      return self.run_here(env, input, prefix, plan, slab, offset);
    }
    // The work decodes into native memory, copied into a Buffer when it completes: a libuv thread
    // never writes memory that JavaScript could reach (even a Buffer made for the call is
    // reachable, by `node:inspector`'s `queryObjects`) and detach or free meanwhile. Against
    // writing the Buffer in place, the copy costs 5-15% for outputs of 64 KiB and more. A
    // declared size is allocated here, on the JavaScript thread, which also frees it after the
    // copy: allocated on the libuv threads (glibc gives each its own arena), it cost 10-30% more
    // with 16 or 64 calls in flight.
    let output = match plan {
      OutputPlan::Exact(len) => node::try_vec(len)?,
      OutputPlan::Growable(_) => Vec::new(),
    };
    let prefix = prefix.map(owned).transpose()?;
    let job = DecompressJob { input: owned(input)?, prefix, call: self, plan, output };
    lanes::queue(env, job, cancellation, micros)
  }

  /// Decodes on this thread. With a prefix, never straight into the slab: the prefix could be
  /// a view of it.
  fn run_here(
    &self,
    env: &Env,
    input: &[u8],
    prefix: Option<&[u8]>,
    plan: OutputPlan,
    mut slab: Option<Target>,
    offset: u32,
  ) -> std::result::Result<Js, Failure> {
    match plan {
      OutputPlan::Exact(len) if len < SHARED_BELOW && prefix.is_none() => {
        if let Some(mut room) = slab.as_mut().and_then(|slab| slab.room(offset, len, input)) {
          node::guarded(|| self.decode_exact(input, None, &mut room, len))?;
          return Js::number(env, len as u32);
        }
        node::filled_buffer(env, len, |output| node::guarded(|| self.decode_exact(input, None, output, len)))
      }
      OutputPlan::Exact(len) if len <= upfront_limit(input.len()) => {
        node::filled_buffer(env, len, |output| node::guarded(|| self.decode_exact(input, prefix, output, len)))
      }
      plan => {
        let bytes = node::guarded(|| self.decode_to_vec(input, prefix, plan))?;
        small_result(env, bytes, slab, offset, input)
      }
    }
  }

  /// Decodes frames that declare `len` bytes in all into `output`, which has room for them.
  fn decode_exact<C: WriteBuf + ?Sized>(
    &self,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
    len: usize,
  ) -> std::result::Result<(), Failure> {
    // The dictionary (or prefix) outlives the context's use of it: the context is given back
    // (reset) or freed before this returns.
    let mut dctx = DECOMPRESSORS.take()?;
    decompress::decompress_exact(&mut dctx, input, output, len, self.reference(prefix))?;
    dctx.give_back();
    Ok(())
  }

  /// Decodes into native memory: frames of unknown size grow their buffer as they go, declared
  /// sizes are allocated fallibly.
  pub(crate) fn decode_to_vec(
    &self,
    input: &[u8],
    prefix: Option<&[u8]>,
    plan: OutputPlan,
  ) -> std::result::Result<Vec<u8>, Failure> {
    match plan {
      OutputPlan::Exact(len) => {
        let mut output = node::try_vec(len)?;
        self.decode_exact(input, prefix, &mut output, len)?;
        Ok(output)
      }
      OutputPlan::Growable(initial) => {
        let mut dctx = DECOMPRESSORS.take()?;
        let output = decompress::decompress_growable(&mut dctx, input, initial, self.limits, self.reference(prefix))?;
        dctx.give_back();
        Ok(output)
      }
    }
  }
}

/// How long a decompression should take, in µs: about 1 GB/s of output plus a fixed cost.
/// Output of unknown size is never guessed at.
fn estimated_micros(plan: OutputPlan) -> f64 {
  match plan {
    OutputPlan::Exact(len) => 3.0 + len as f64 / 1000.0,
    OutputPlan::Growable(_) => f64::INFINITY,
  }
}

struct DecompressJob {
  input: Vec<u8>,
  prefix: Option<Vec<u8>>,
  call: DecompressCall,
  plan: OutputPlan,
  /// Room for the output when its size is declared.
  output: Vec<u8>,
}

impl node::Job for DecompressJob {
  type Output = Vec<u8>;
  const NAME: &'static str = "zstd-pool:decompress";

  fn compute(&mut self) -> std::result::Result<Vec<u8>, Failure> {
    match self.plan {
      OutputPlan::Exact(len) => {
        let mut output = std::mem::take(&mut self.output);
        self.call.decode_exact(&self.input, self.prefix.as_deref(), &mut output, len)?;
        Ok(output)
      }
      OutputPlan::Growable(_) => self.call.decode_to_vec(&self.input, self.prefix.as_deref(), self.plan),
    }
  }

  fn resolve(self, env: &Env, output: Vec<u8>) -> std::result::Result<Js, Failure> {
    node::result_bytes(env, output)
  }
}

// ---------------------------------------------------------------------------------------------
// Dictionaries and the pools

/// Trains a dictionary of at most `size` bytes, tuned for `level`, on samples given end to end
/// in `samples`, `sizes[i]` bytes each.
#[napi(ts_return_type = "Buffer")]
pub fn train_dictionary(env: Env, samples: &[u8], sizes: &[u32], size: u32, level: i32) -> Result<Js> {
  let sizes: Vec<usize> = sizes.iter().map(|&len| len as usize).collect();
  node::guarded(|| dict::train(samples, &sizes, size as usize, level))
    .and_then(|dictionary| node::result_bytes(&env, dictionary))
    .map_err(|failure| node::throw(&env, failure))
}

/// Counters of one context pool (or of the multi-threaded cache).
#[napi(object)]
pub struct ContextPoolStats {
  /// Contexts ever created.
  pub created: f64,
  /// Calls served by a context taken from the pool instead of a new one.
  pub reused: f64,
  /// Contexts in the pool now, ready for the next call.
  pub idle: u32,
  /// Contexts held by calls and streams running now.
  pub in_use: f64,
  /// Bytes the idle contexts hold, as libzstd counts them (`ZSTD_sizeof_CCtx`/`DCtx`).
  pub idle_bytes: f64,
  /// Bytes the contexts in use held when taken, or at their stream's last step.
  pub in_use_bytes: f64,
  /// Contexts freed because a call using them failed: never returned to the pool.
  pub dropped_after_error: f64,
  /// Contexts freed on return, or evicted, to keep the pool within `maxIdleContexts` and
  /// `maxIdleBytes`, or because they held far more than the pool's recent calls needed.
  pub freed_over_bound: f64,
  /// Idle contexts freed after `idleTimeoutMs` without use.
  pub freed_idle: f64,
  /// The most idle contexts the pool keeps.
  pub max_idle_contexts: u32,
  /// The most bytes the pool's idle contexts hold: `Infinity` for the multi-threaded cache,
  /// which is bounded by count.
  pub max_idle_bytes: f64,
}

impl From<PoolCounters> for ContextPoolStats {
  fn from(counters: PoolCounters) -> Self {
    let holdings = counters.holdings;
    Self {
      created: counters.created as f64,
      reused: counters.reused as f64,
      idle: holdings.idle as u32,
      in_use: counters.in_use as f64,
      idle_bytes: holdings.idle_bytes as f64,
      in_use_bytes: holdings.in_use_bytes as f64,
      dropped_after_error: counters.dropped_after_error as f64,
      freed_over_bound: counters.freed_over_bound as f64,
      freed_idle: counters.freed_idle as f64,
      max_idle_contexts: holdings.max_idle as u32,
      max_idle_bytes: if holdings.max_idle_bytes == usize::MAX { f64::INFINITY } else { holdings.max_idle_bytes as f64 },
    }
  }
}

#[napi(object)]
pub struct PoolStats {
  pub compressors: ContextPoolStats,
  pub decompressors: ContextPoolStats,
  /// Multi-threaded compression contexts (`workers`), cached with their worker threads.
  pub multithreaded: ContextPoolStats,
  /// How long an idle context stays before it is freed, in milliseconds (`Infinity`: no limit).
  pub idle_timeout_ms: f64,
}

/// The counters of the process-wide context pools (shared by every thread and worker).
#[napi]
pub fn pool_stats() -> PoolStats {
  let timeout = sweep::timeout_ms();
  PoolStats {
    compressors: COMPRESSORS.counters().into(),
    decompressors: DECOMPRESSORS.counters().into(),
    multithreaded: mt::CACHE.counters().into(),
    idle_timeout_ms: if timeout == sweep::NEVER { f64::INFINITY } else { timeout as f64 },
  }
}

/// Sets each pool's bounds (idle contexts, and the bytes they hold), how many multi-threaded
/// contexts stay cached and the idle timeout (`Infinity`: none), freeing what is beyond; each is
/// left as it is when not given. `main.js` has checked them.
#[napi]
pub fn configure_pool(
  max_idle_contexts: Option<u32>,
  max_idle_bytes: Option<f64>,
  max_idle_multithreaded_contexts: Option<u32>,
  idle_timeout_ms: Option<f64>,
) -> PoolStats {
  let max_idle = max_idle_contexts.map(|max_idle| max_idle as usize);
  // A bound beyond what the address space holds is no bound: saturating is exact enough.
  let max_idle_bytes = max_idle_bytes.map(|bytes| bytes as usize);
  COMPRESSORS.set_bounds(max_idle, max_idle_bytes);
  DECOMPRESSORS.set_bounds(max_idle, max_idle_bytes);
  if let Some(max_idle) = max_idle_multithreaded_contexts {
    mt::CACHE.set_max_idle(max_idle.min(MAX_IDLE_MULTITHREADED) as usize);
  }
  if let Some(ms) = idle_timeout_ms {
    sweep::set_timeout_ms(if ms.is_finite() { ms as u64 } else { sweep::NEVER });
  }
  pool_stats()
}
