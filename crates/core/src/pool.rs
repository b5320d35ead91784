//! Process-wide, bounded pools of zstd contexts: take one, use it, give it back clean.
//!
//! Creating a context allocates and clears its tables, which costs more than compressing a
//! small payload, so contexts are kept and reused. The pools hold no JavaScript values, so
//! every thread (the main thread, libuv's workers, `worker_threads`) shares them safely.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use once_cell::sync::Lazy;
use zstd::zstd_safe::{CCtx, DCtx, ResetDirective};

use crate::error::Failure;
use crate::sweep;

/// No pool keeps more idle contexts than this, whatever it is configured to.
pub const MAX_IDLE_LIMIT: usize = 1024;

/// The default bound on the bytes each pool's idle contexts hold. A level-3 context for
/// payloads up to 64 KiB holds under 1 MB, one for streams of unknown size about 3 MB; a
/// level-19 context for 8 MiB holds 85 MB, more than a pool keeps.
pub const DEFAULT_MAX_IDLE_BYTES: usize = 16 << 20;

/// A context returned larger than this many times what the pool's contexts typically hold is
/// freed rather than kept for calls that need much less.
const OVERSIZED_FACTOR: usize = 4;

/// ... provided it holds more than this share of the pool's byte bound: smaller ones cost
/// little to keep and would cost more to rebuild.
const OVERSIZED_FLOOR_SHARE: usize = 8;

/// A zstd context that a pool can create, clean and measure.
pub trait Context: Send + Sized {
  fn create() -> Option<Self>;
  /// Clears the session and every parameter, so no state reaches the next user.
  fn reset(&mut self) -> bool;
  /// The memory it holds, as libzstd counts it (`ZSTD_sizeof_CCtx`, `ZSTD_sizeof_DCtx`).
  fn bytes(&self) -> usize;
  /// Whether freeing one counts towards giving memory back to the system (see
  /// `sweep::note_freed`).
  const TRIMS: bool = true;
  /// Whether one whose use failed part way can be reused all the same (after `reset`): a zstd
  /// context cannot, as its state is then unknown.
  const SAFE_AFTER_FAILURE: bool = false;
}

/// libzstd's two contexts: zstd-safe gives them the same calls, but under no common trait.
macro_rules! context {
  ($context:ident) => {
    impl Context for $context<'static> {
      fn create() -> Option<Self> {
        $context::try_create()
      }
      fn reset(&mut self) -> bool {
        $context::reset(self, ResetDirective::SessionAndParameters).is_ok()
      }
      fn bytes(&self) -> usize {
        self.sizeof()
      }
    }
  };
}

context!(CCtx);
context!(DCtx);

/// An idle context, what it holds, and the sweeper's tick when it went idle.
pub struct Idle<C> {
  pub context: C,
  pub bytes: usize,
  pub since: u32,
}

pub struct ContextPool<C: Context> {
  /// The idle contexts and the bytes the pool counts, under one lock.
  shelf: Mutex<Shelf<C>>,
  /// A mirror of the idle list's length, written under its lock, read without it.
  idle_count: AtomicUsize,
  max_idle: AtomicUsize,
  max_idle_bytes: AtomicUsize,
  /// A moving average of what returned contexts hold (see `OVERSIZED_FACTOR`).
  typical_bytes: AtomicUsize,
  counts: Counts,
}

/// What a pool changes on every take and give-back, kept under one lock: plain numbers there
/// cost a call nothing, where an atomic add outside it is one more locked instruction each
/// (docs/pools.md).
struct Shelf<C> {
  /// Idle contexts, the least recently used first: calls take the most recent (so a steady
  /// load keeps reusing the same few and the rest grow old) and bounds and the sweeper free
  /// the oldest.
  idle: Vec<Idle<C>>,
  idle_bytes: usize,
  /// What the contexts on loan held when last measured.
  in_use_bytes: usize,
}

/// What happened to the contexts of a pool (or of the multi-threaded cache) so far.
#[derive(Default)]
pub struct Counts {
  pub created: AtomicU64,
  pub reused: AtomicU64,
  pub dropped_after_error: AtomicU64,
  pub freed_over_bound: AtomicU64,
  pub freed_idle: AtomicU64,
}

/// What a pool holds now, and its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Holdings {
  pub idle: usize,
  pub idle_bytes: usize,
  pub in_use_bytes: usize,
  pub max_idle: usize,
  pub max_idle_bytes: usize,
}

impl Counts {
  /// The context of `cached`, counted as reused, or else a new one, counted as created; and
  /// what it holds. The second half of the multi-threaded cache's `take`.
  #[inline]
  pub fn reuse_or_create<C: Context>(&self, cached: Option<Idle<C>>) -> Result<(C, usize), Failure> {
    match cached {
      Some(entry) => {
        self.reused.fetch_add(1, Ordering::Relaxed);
        Ok((entry.context, entry.bytes))
      }
      None => self.create(),
    }
  }

  /// A new context, counted as created, and what it holds.
  pub fn create<C: Context>(&self) -> Result<(C, usize), Failure> {
    let context = C::create().ok_or(Failure::NoContext)?;
    self.created.fetch_add(1, Ordering::Release);
    let bytes = context.bytes();
    Ok((context, bytes))
  }

  /// Counts a reuse, for a pool that counts every reuse under its lock: a load and a store,
  /// where an atomic add would be a locked instruction more per call.
  fn count_reuse_under_lock(&self) {
    self.reused.store(self.reused.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
  }

  /// A snapshot, with the contexts in use derived from the others.
  pub fn snapshot(&self, holdings: Holdings) -> PoolCounters {
    // The ways out first, `created` last: a context seen leaving was seen created too.
    let dropped_after_error = self.dropped_after_error.load(Ordering::Acquire);
    let freed_over_bound = self.freed_over_bound.load(Ordering::Acquire);
    let freed_idle = self.freed_idle.load(Ordering::Acquire);
    let created = self.created.load(Ordering::Acquire);
    PoolCounters {
      created,
      reused: self.reused.load(Ordering::Relaxed),
      in_use: created.saturating_sub(dropped_after_error + freed_over_bound + freed_idle + holdings.idle as u64),
      dropped_after_error,
      freed_over_bound,
      freed_idle,
      holdings,
    }
  }
}

/// A snapshot of one pool's (or the multi-threaded cache's) counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolCounters {
  pub created: u64,
  pub reused: u64,
  pub in_use: u64,
  pub dropped_after_error: u64,
  pub freed_over_bound: u64,
  pub freed_idle: u64,
  pub holdings: Holdings,
}

/// Notes that contexts holding `bytes` were freed, where they count towards a trim.
fn note_freed<C: Context>(bytes: usize) {
  if C::TRIMS {
    sweep::note_freed(bytes);
  }
}

/// Locks `mutex`, which guards plain data: a panic elsewhere cannot leave it half-updated.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<C: Context> ContextPool<C> {
  pub fn new(max_idle: usize, max_idle_bytes: usize) -> Self {
    Self {
      shelf: Mutex::new(Shelf { idle: Vec::new(), idle_bytes: 0, in_use_bytes: 0 }),
      idle_count: AtomicUsize::new(0),
      max_idle: AtomicUsize::new(max_idle.min(MAX_IDLE_LIMIT)),
      max_idle_bytes: AtomicUsize::new(max_idle_bytes),
      typical_bytes: AtomicUsize::new(0),
      counts: Counts::default(),
    }
  }

  /// Whether it keeps no idle context (`maxIdleContexts: 0`): every call makes its own.
  pub fn keeps_none(&self) -> bool {
    self.max_idle.load(Ordering::Relaxed) == 0
  }

  /// The most recently used idle context if there is one, else a new one.
  pub fn take(&self) -> Result<Lease<C, &Self>, Failure> {
    {
      let mut shelf = lock(&self.shelf);
      if let Some(entry) = shelf.idle.pop() {
        return Ok(self.lend(&mut shelf, entry));
      }
    }
    self.take_new()
  }

  /// The idle context that holds the most bytes, else a new one.
  pub fn take_largest(&self) -> Result<Lease<C, &Self>, Failure> {
    self.take_chosen(|idle| (0..idle.len()).max_by_key(|&index| idle[index].bytes))
  }

  /// The idle context that holds the fewest bytes of those that hold from `bytes` to twice as
  /// many; else the one that holds the most of those that hold fewer (it grows, its pages kept);
  /// else the one that holds the fewest; else a new one. For memory, where what matters is the
  /// room: a chunk far larger than a small run of results is shrunk to them, and no longer there
  /// for a large run, whose memory then comes fresh from the kernel.
  pub fn take_fitting(&self, bytes: usize) -> Result<Lease<C, &Self>, Failure> {
    let fits = |held: usize| held >= bytes && held <= bytes.saturating_mul(2);
    self.take_chosen(|idle| {
      let held = |index: &usize| idle[*index].bytes;
      let all = 0..idle.len();
      let fitting = all.clone().filter(|index| fits(held(index))).min_by_key(held);
      let smaller = || all.clone().filter(|index| held(index) < bytes).max_by_key(held);
      fitting.or_else(smaller).or_else(|| all.clone().min_by_key(held))
    })
  }

  /// The idle context at the index `choose` picks, else a new one.
  fn take_chosen(&self, choose: impl FnOnce(&[Idle<C>]) -> Option<usize>) -> Result<Lease<C, &Self>, Failure> {
    {
      let mut shelf = lock(&self.shelf);
      if let Some(index) = choose(&shelf.idle) {
        let entry = shelf.idle.remove(index);
        return Ok(self.lend(&mut shelf, entry));
      }
    }
    self.take_new()
  }

  /// Lends `entry`, just taken off the idle list.
  fn lend(&self, shelf: &mut Shelf<C>, entry: Idle<C>) -> Lease<C, &Self> {
    shelf.idle_bytes -= entry.bytes;
    shelf.in_use_bytes += entry.bytes;
    // The sweeper needs to see a context go idle (`give_back`), not leave: relaxed.
    self.idle_count.store(shelf.idle.len(), Ordering::Relaxed);
    self.counts.count_reuse_under_lock();
    Lease::new(entry.context, entry.bytes, self)
  }

  fn take_new(&self) -> Result<Lease<C, &Self>, Failure> {
    let (context, bytes) = self.counts.create()?;
    lock(&self.shelf).in_use_bytes += bytes;
    Ok(Lease::new(context, bytes, self))
  }

  /// Takes a context that held `leased` out of the bytes in use, and counts it in `counter` as
  /// it leaves the pool.
  fn leave(&self, leased: usize, counter: &AtomicU64) {
    lock(&self.shelf).in_use_bytes -= leased;
    counter.fetch_add(1, Ordering::Release);
  }

  fn give_back(&self, mut context: C, leased: usize) {
    if !context.reset() {
      self.leave(leased, &self.counts.dropped_after_error);
      return;
    }
    let bytes = context.bytes();
    let max_idle_bytes = self.max_idle_bytes.load(Ordering::Relaxed);
    if self.max_idle.load(Ordering::Relaxed) == 0 || bytes > max_idle_bytes || self.oversized(bytes, max_idle_bytes) {
      self.leave(leased, &self.counts.freed_over_bound);
      drop(context);
      note_freed::<C>(bytes);
      return;
    }
    let entry = Idle { context, bytes, since: sweep::epoch() };
    let evicted = {
      let mut shelf = lock(&self.shelf);
      shelf.in_use_bytes -= leased;
      shelf.idle.push(entry);
      shelf.idle_bytes += bytes;
      let evicted = self.evict(&mut shelf);
      // Before `note_idle` reads whether the sweeper sleeps (see `sweep::park`).
      self.idle_count.store(shelf.idle.len(), Ordering::SeqCst);
      evicted
    };
    sweep::note_idle();
    let freed = evicted.iter().map(|entry| entry.bytes).sum();
    drop(evicted);
    if freed > 0 {
      note_freed::<C>(freed);
    }
  }

  /// Whether a context holding `bytes` is much larger than what this pool's contexts hold of
  /// late. Counts it towards that either way, so a lasting change of load is followed.
  fn oversized(&self, bytes: usize, max_idle_bytes: usize) -> bool {
    // Racy on purpose: an average that misses an update now and then is still an average.
    let typical = self.typical_bytes.load(Ordering::Relaxed);
    let updated = if bytes >= typical { typical + (bytes - typical) / 8 } else { typical - (typical - bytes) / 8 };
    if updated != typical {
      // A steady load writes nothing: no cache line bounces between the threads for it.
      self.typical_bytes.store(updated, Ordering::Relaxed);
    }
    bytes > max_idle_bytes / OVERSIZED_FLOOR_SHARE && bytes > typical.saturating_mul(OVERSIZED_FACTOR)
  }

  /// Takes the least recently used idle contexts beyond the bounds off the shelf, to be freed
  /// once the lock is released. The caller updates `idle_count`.
  fn evict(&self, shelf: &mut Shelf<C>) -> Vec<Idle<C>> {
    let max_idle = self.max_idle.load(Ordering::Relaxed);
    let max_idle_bytes = self.max_idle_bytes.load(Ordering::Relaxed);
    let idle = &shelf.idle;
    let mut excess = idle.len().saturating_sub(max_idle);
    let over_count: usize = idle[..excess].iter().map(|entry| entry.bytes).sum();
    let mut kept_bytes = shelf.idle_bytes - over_count;
    while excess < idle.len() && kept_bytes > max_idle_bytes {
      kept_bytes -= idle[excess].bytes;
      excess += 1;
    }
    if excess == 0 {
      return Vec::new();
    }
    let evicted: Vec<_> = shelf.idle.drain(..excess).collect();
    shelf.idle_bytes = kept_bytes;
    self.counts.freed_over_bound.fetch_add(evicted.len() as u64, Ordering::Release);
    evicted
  }

  /// Frees the contexts idle since before the timeout (see `sweep`); the bytes they held.
  pub fn sweep(&self, now: u32) -> usize {
    let expired: Vec<_> = {
      let mut shelf = lock(&self.shelf);
      let count = shelf.idle.iter().take_while(|entry| sweep::expired(entry.since, now)).count();
      let expired: Vec<_> = shelf.idle.drain(..count).collect();
      shelf.idle_bytes -= expired.iter().map(|entry| entry.bytes).sum::<usize>();
      self.idle_count.store(shelf.idle.len(), Ordering::SeqCst);
      // Counted with the idle count's change, so that no snapshot sees them in use.
      self.counts.freed_idle.fetch_add(count as u64, Ordering::Release);
      expired
    };
    expired.iter().map(|entry| entry.bytes).sum()
  }

  /// Changes the bounds (each when given) and frees the idle contexts beyond them.
  pub fn set_bounds(&self, max_idle: Option<usize>, max_idle_bytes: Option<usize>) {
    if let Some(max_idle) = max_idle {
      self.max_idle.store(max_idle.min(MAX_IDLE_LIMIT), Ordering::Relaxed);
    }
    if let Some(max_idle_bytes) = max_idle_bytes {
      self.max_idle_bytes.store(max_idle_bytes, Ordering::Relaxed);
    }
    let evicted = {
      let mut shelf = lock(&self.shelf);
      let evicted = self.evict(&mut shelf);
      self.idle_count.store(shelf.idle.len(), Ordering::SeqCst);
      evicted
    };
    let freed = evicted.iter().map(|entry| entry.bytes).sum();
    drop(evicted);
    if freed > 0 {
      note_freed::<C>(freed);
    }
  }

  pub fn has_idle(&self) -> bool {
    self.idle_count.load(Ordering::SeqCst) > 0
  }

  pub fn counters(&self) -> PoolCounters {
    // Under the shelf's lock, which sweeps and evictions hold while they move contexts from
    // idle to freed: none is seen both idle and freed.
    let shelf = lock(&self.shelf);
    self.counts.snapshot(Holdings {
      idle: shelf.idle.len(),
      idle_bytes: shelf.idle_bytes,
      in_use_bytes: shelf.in_use_bytes,
      max_idle: self.max_idle.load(Ordering::Relaxed),
      max_idle_bytes: self.max_idle_bytes.load(Ordering::Relaxed),
    })
  }
}

/// Where a leased context goes back to: a pool, or the cache of multi-threaded contexts.
pub trait Home<C> {
  /// `leased` is what the context held when taken (or last measured).
  fn put_back(&self, context: C, leased: usize);
  /// The lease ended without `give_back` (its call failed, or was dropped unrun).
  fn discard(&self, context: C, leased: usize);
  /// A context on loan now holds `now` bytes instead of `before`.
  fn resized(&self, before: usize, now: usize);
}

impl<C: Context> Home<C> for &ContextPool<C> {
  fn put_back(&self, context: C, leased: usize) {
    self.give_back(context, leased);
  }
  fn discard(&self, context: C, leased: usize) {
    if C::SAFE_AFTER_FAILURE {
      return self.put_back(context, leased);
    }
    self.leave(leased, &self.counts.dropped_after_error);
    drop(context);
    note_freed::<C>(leased);
  }
  fn resized(&self, before: usize, now: usize) {
    let mut shelf = lock(&self.shelf);
    shelf.in_use_bytes = shelf.in_use_bytes + now - before;
  }
}

/// A context on loan. [`Lease::give_back`] returns it after a successful use; a lease dropped
/// without it (an error, a panic) frees the context instead, so that no half-finished state can
/// reach the next call.
pub struct Lease<C, H: Home<C>> {
  context: Option<C>,
  /// What the context held when last measured, as its home counts it in use.
  bytes: usize,
  home: H,
}

impl<C, H: Home<C>> Lease<C, H> {
  pub fn new(context: C, bytes: usize, home: H) -> Self {
    Self { context: Some(context), bytes, home }
  }

  pub fn give_back(mut self) {
    if let Some(context) = self.context.take() {
      self.home.put_back(context, self.bytes);
    }
  }
}

impl<C: Context, H: Home<C>> Lease<C, H> {
  /// Brings the bytes its home counts in use up to date, for a context held across many steps
  /// (a stream's).
  pub fn measure(&mut self) {
    if let Some(context) = &self.context {
      let now = context.bytes();
      if now != self.bytes {
        self.home.resized(self.bytes, now);
        self.bytes = now;
      }
    }
  }
}

impl<C, H: Home<C>> Deref for Lease<C, H> {
  type Target = C;
  fn deref(&self) -> &C {
    self.context.as_ref().expect("a lease holds its context until it ends")
  }
}

impl<C, H: Home<C>> DerefMut for Lease<C, H> {
  fn deref_mut(&mut self) -> &mut C {
    self.context.as_mut().expect("a lease holds its context until it ends")
  }
}

impl<C, H: Home<C>> Drop for Lease<C, H> {
  fn drop(&mut self) {
    if let Some(context) = self.context.take() {
      self.home.discard(context, self.bytes);
    }
  }
}

/// A context held for a run of calls on one thread (a batch's group): taken from its pool at the
/// first call, reset before each next one, given back at the end; a call that fails frees it, as
/// it frees a lease, and the next call takes another. Against a lease per call it saves the
/// pool's lock and counters per item, which threads running groups side by side contend for.
pub struct Held<'p, C: Context> {
  pool: &'p ContextPool<C>,
  lease: Option<Lease<C, &'p ContextPool<C>>>,
}

impl<'p, C: Context> Held<'p, C> {
  pub fn new(pool: &'p ContextPool<C>) -> Self {
    Self { pool, lease: None }
  }

  /// Runs `calls` with a context held for them alone: given back if they succeed, freed if not.
  pub fn once<R>(pool: &'p ContextPool<C>, calls: impl FnOnce(&mut Self) -> Result<R, Failure>) -> Result<R, Failure> {
    let mut held = Self::new(pool);
    let result = calls(&mut held)?;
    held.give_back();
    Ok(result)
  }

  /// Runs `call` with the held context (or a new lease), clean: no state of the last call's
  /// reaches it. Keeps the context if the call succeeded.
  pub fn run<R>(&mut self, call: impl FnOnce(&mut C) -> Result<R, Failure>) -> Result<R, Failure> {
    // A context that cannot be reset is freed (the lease, dropped, counts it) for a new one.
    let reused = self.lease.take().and_then(|mut lease| lease.reset().then_some(lease));
    let mut lease = match reused {
      Some(lease) => lease,
      None => self.pool.take()?,
    };
    let result = call(&mut lease);
    if result.is_ok() {
      self.lease = Some(lease);
    }
    result
  }

  /// Gives the context back to its pool (which resets it).
  pub fn give_back(self) {
    if let Some(lease) = self.lease {
      lease.give_back();
    }
  }
}

/// The default bound on idle contexts per pool.
///
/// At most one context per thread is in use at a time, and the threads that use them are
/// libuv's workers (every async call runs there: `UV_THREADPOOL_SIZE`, 4 by default, 1024 at
/// most, as libuv reads it) plus the JavaScript threads making sync calls (the main thread and
/// any `worker_threads`, which applications size to the CPU count). Keeping that many idle
/// means a steady load never creates a context, while a burst beyond it frees the extras.
pub fn default_max_idle() -> usize {
  let threadpool = std::env::var("UV_THREADPOOL_SIZE")
    .ok()
    .and_then(|value| value.trim().parse::<usize>().ok())
    .filter(|&size| size > 0)
    .unwrap_or(4)
    .min(1024);
  let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
  (threadpool + cpus).min(MAX_IDLE_LIMIT)
}

/// The process-wide pools, each registered with the sweeper as it is made.
pub static COMPRESSORS: Lazy<ContextPool<CCtx<'static>>> = Lazy::new(|| {
  sweep::register(&COMPRESSORS);
  ContextPool::new(default_max_idle(), DEFAULT_MAX_IDLE_BYTES)
});
pub static DECOMPRESSORS: Lazy<ContextPool<DCtx<'static>>> = Lazy::new(|| {
  sweep::register(&DECOMPRESSORS);
  ContextPool::new(default_max_idle(), DEFAULT_MAX_IDLE_BYTES)
});

impl<C: Context> sweep::Sweepable for ContextPool<C> {
  fn has_idle(&self) -> bool {
    ContextPool::has_idle(self)
  }
  fn sweep(&self, now: u32) -> usize {
    ContextPool::sweep(self, now)
  }
}

#[cfg(test)]
mod stress;
#[cfg(test)]
mod tests;
