//! The context pools' settings and counters: `poolStats` and `configurePool`.

use napi_derive::napi;
use zstd_pool_core::memory::{CHUNKS, CHUNK_BOUNDS_SCALE, SCRATCH};
use zstd_pool_core::mt;
use zstd_pool_core::pool::{PoolCounters, COMPRESSORS, DECOMPRESSORS};
use zstd_pool_core::schedule::{self, Work};
use zstd_pool_core::sweep;

/// The most multi-threaded contexts `configurePool` lets the cache keep.
pub(crate) const MAX_IDLE_MULTITHREADED: u32 = 64;

// `main.d.ts` re-exports this type and `PoolStats` as public ones: their doc comments are the
// API's documentation.
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
  /// Bytes the idle contexts hold, as libzstd counts them (`ZSTD_sizeof_CCtx`, `ZSTD_sizeof_DCtx`).
  pub idle_bytes: f64,
  /// Bytes the contexts in use held when taken (a call may grow its context), or at their
  /// stream's last step.
  pub in_use_bytes: f64,
  /// Contexts freed because a call using them failed: never returned to the pool.
  pub dropped_after_error: f64,
  /// Contexts freed on return, or evicted (the least recently used first), to keep the pool within `maxIdleContexts` and
  /// `maxIdleBytes`, or because they held far more than the pool's recent calls needed.
  pub freed_over_bound: f64,
  /// Idle contexts freed after `idleTimeoutMs` without use.
  pub freed_idle: f64,
  /// The most idle contexts the pool keeps.
  pub max_idle_contexts: u32,
  /// The most bytes the pool's idle contexts hold; `Infinity` for the multi-threaded cache,
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

/// What `poolStats` and `configurePool` return.
#[napi(object)]
pub struct PoolStats {
  pub compressors: ContextPoolStats,
  pub decompressors: ContextPoolStats,
  /// Multi-threaded compression contexts (`workers`), cached with their worker threads.
  pub multithreaded: ContextPoolStats,
  /// The buffers results are made in before they are copied into Buffers of their size (frames,
  /// and what async decompressions of a declared size decode), pooled as contexts are (the same
  /// bounds).
  pub scratch: ContextPoolStats,
  /// The memory packed batches (`compressManyPacked`, `decompressManyPacked`) hand their results
  /// over in, one chunk per group, taken back when JavaScript collects the chunk's Buffer:
  /// `inUse` counts those not collected yet. Four times the bounds of the others (at most 1024
  /// chunks).
  pub chunks: ContextPoolStats,
  /// How long an idle context stays before it is freed, in milliseconds; `Infinity` when idle
  /// contexts stay.
  pub idle_timeout_ms: f64,
  /// How much longer calls take on this machine than the cost model that decides where async
  /// calls run says, as timed on the calling thread (see docs/async.md).
  pub pace: Pace,
  /// What a trip through the threadpool and back costs a call queued alone, as measured: twice
  /// its wait for a thread (35 until measured, and in the WebAssembly build, which measures none;
  /// at most 70). Past 35 µs, the budget on the spot of an async call outside a burst grows from
  /// 50 µs with it, up to 100 µs (see docs/async.md).
  pub threadpool_trip_micros: f64,
}

/// The paces of compression and decompression: 1 while calls take no longer than the cost
/// model's figures, up to 8; an async call's estimate is the model's times its pace.
#[napi(object)]
pub struct Pace {
  pub compress: f64,
  pub decompress: f64,
}

/// The counters of the process-wide context pools (shared by every thread and worker).
#[napi]
pub fn pool_stats() -> PoolStats {
  let timeout = sweep::timeout_ms();
  PoolStats {
    compressors: COMPRESSORS.counters().into(),
    decompressors: DECOMPRESSORS.counters().into(),
    multithreaded: mt::CACHE.counters().into(),
    scratch: SCRATCH.counters().into(),
    chunks: CHUNKS.counters().into(),
    idle_timeout_ms: if timeout == sweep::NEVER { f64::INFINITY } else { timeout as f64 },
    pace: Pace { compress: schedule::pace(Work::Compress), decompress: schedule::pace(Work::Decompress) },
    threadpool_trip_micros: schedule::trip_micros(),
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
  SCRATCH.set_bounds(max_idle, max_idle_bytes);
  let scaled = |bound: usize| bound.saturating_mul(CHUNK_BOUNDS_SCALE);
  CHUNKS.set_bounds(max_idle.map(scaled), max_idle_bytes.map(scaled));
  if let Some(max_idle) = max_idle_multithreaded_contexts {
    mt::CACHE.set_max_idle(max_idle.min(MAX_IDLE_MULTITHREADED) as usize);
  }
  if let Some(ms) = idle_timeout_ms {
    sweep::set_timeout_ms(if ms.is_finite() { ms as u64 } else { sweep::NEVER });
  }
  pool_stats()
}
