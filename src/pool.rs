//! Process-wide, bounded pools of zstd contexts: take one, use it, give it back clean.
//!
//! Creating a context allocates and clears its tables, which costs more than compressing a
//! small payload, so contexts are kept and reused. The pools hold no JavaScript values, so
//! every thread (the main thread, libuv's workers, `worker_threads`) shares them safely.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_queue::ArrayQueue;
use once_cell::sync::Lazy;
use zstd::zstd_safe::{CCtx, DCtx, ResetDirective};

use crate::error::Failure;

/// No pool keeps more idle contexts than this, whatever it is configured to.
pub const MAX_IDLE_LIMIT: usize = 1024;

/// A zstd context that a pool can create and clean.
pub trait Context: Send + Sized {
  fn create() -> Option<Self>;
  /// Clears the session and every parameter, so no state reaches the next user.
  fn reset(&mut self) -> bool;
}

impl Context for CCtx<'static> {
  fn create() -> Option<Self> {
    CCtx::try_create()
  }
  fn reset(&mut self) -> bool {
    CCtx::reset(self, ResetDirective::SessionAndParameters).is_ok()
  }
}

impl Context for DCtx<'static> {
  fn create() -> Option<Self> {
    DCtx::try_create()
  }
  fn reset(&mut self) -> bool {
    DCtx::reset(self, ResetDirective::SessionAndParameters).is_ok()
  }
}

pub struct ContextPool<C: Context> {
  idle: ArrayQueue<C>,
  /// Idle contexts, counted before they enter the queue and after they leave it, so the
  /// count never undercounts and `max_idle` is a hard bound.
  idle_count: AtomicUsize,
  max_idle: AtomicUsize,
  counts: Counts,
}

/// What happened to the contexts of a pool (or of the multi-threaded cache) so far.
#[derive(Default)]
pub struct Counts {
  pub created: AtomicU64,
  pub reused: AtomicU64,
  pub dropped_after_error: AtomicU64,
  pub freed_over_bound: AtomicU64,
}

impl Counts {
  /// A snapshot, with the contexts in use derived from the others.
  pub fn snapshot(&self, idle: usize, max_idle: usize) -> PoolCounters {
    let created = self.created.load(Ordering::Relaxed);
    let dropped_after_error = self.dropped_after_error.load(Ordering::Relaxed);
    let freed_over_bound = self.freed_over_bound.load(Ordering::Relaxed);
    PoolCounters {
      created,
      reused: self.reused.load(Ordering::Relaxed),
      idle,
      in_use: created.saturating_sub(dropped_after_error + freed_over_bound + idle as u64),
      dropped_after_error,
      freed_over_bound,
      max_idle,
    }
  }
}

/// A snapshot of one pool's (or the multi-threaded cache's) counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolCounters {
  pub created: u64,
  pub reused: u64,
  pub idle: usize,
  pub in_use: u64,
  pub dropped_after_error: u64,
  pub freed_over_bound: u64,
  pub max_idle: usize,
}

impl<C: Context> ContextPool<C> {
  pub fn new(max_idle: usize) -> Self {
    Self {
      idle: ArrayQueue::new(MAX_IDLE_LIMIT),
      idle_count: AtomicUsize::new(0),
      max_idle: AtomicUsize::new(max_idle.min(MAX_IDLE_LIMIT)),
      counts: Counts::default(),
    }
  }

  /// An idle context if there is one, else a new one.
  pub fn take(&self) -> Result<Lease<C, &Self>, Failure> {
    let context = match self.idle.pop() {
      Some(context) => {
        self.idle_count.fetch_sub(1, Ordering::AcqRel);
        self.counts.reused.fetch_add(1, Ordering::Relaxed);
        context
      }
      None => {
        let context = C::create().ok_or(Failure::NoContext)?;
        self.counts.created.fetch_add(1, Ordering::Relaxed);
        context
      }
    };
    Ok(Lease::new(context, self))
  }

  fn give_back(&self, mut context: C) {
    if !context.reset() {
      self.counts.dropped_after_error.fetch_add(1, Ordering::Relaxed);
      return;
    }
    let max_idle = self.max_idle.load(Ordering::Relaxed);
    let reserved =
      self.idle_count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| (count < max_idle).then_some(count + 1)).is_ok();
    if reserved && self.idle.push(context).is_ok() {
      return;
    }
    if reserved {
      self.idle_count.fetch_sub(1, Ordering::AcqRel);
    }
    self.counts.freed_over_bound.fetch_add(1, Ordering::Relaxed);
  }

  /// Changes the bound and frees the idle contexts beyond it.
  pub fn set_max_idle(&self, max_idle: usize) {
    let max_idle = max_idle.min(MAX_IDLE_LIMIT);
    self.max_idle.store(max_idle, Ordering::Relaxed);
    while self.idle_count.load(Ordering::Acquire) > max_idle {
      match self.idle.pop() {
        Some(context) => {
          self.idle_count.fetch_sub(1, Ordering::AcqRel);
          self.counts.freed_over_bound.fetch_add(1, Ordering::Relaxed);
          drop(context);
        }
        None => break,
      }
    }
  }

  pub fn counters(&self) -> PoolCounters {
    self.counts.snapshot(self.idle_count.load(Ordering::Acquire), self.max_idle.load(Ordering::Relaxed))
  }
}

/// Where a leased context goes back to: a pool, or the cache of multi-threaded contexts.
pub trait Home<C> {
  fn put_back(&self, context: C);
  /// The lease ended without `give_back`: its context is being freed.
  fn discard(&self);
}

impl<C: Context> Home<C> for &ContextPool<C> {
  fn put_back(&self, context: C) {
    self.give_back(context);
  }
  fn discard(&self) {
    self.counts.dropped_after_error.fetch_add(1, Ordering::Relaxed);
  }
}

/// A context on loan. [`Lease::give_back`] returns it after a successful use; a lease dropped
/// without it (an error, a panic) frees the context instead, so that no half-finished state can
/// reach the next call.
pub struct Lease<C, H: Home<C>> {
  context: Option<C>,
  home: H,
}

impl<C, H: Home<C>> Lease<C, H> {
  pub fn new(context: C, home: H) -> Self {
    Self { context: Some(context), home }
  }

  pub fn give_back(mut self) {
    if let Some(context) = self.context.take() {
      self.home.put_back(context);
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
    if self.context.take().is_some() {
      self.home.discard();
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

pub static COMPRESSORS: Lazy<ContextPool<CCtx<'static>>> = Lazy::new(|| ContextPool::new(default_max_idle()));
pub static DECOMPRESSORS: Lazy<ContextPool<DCtx<'static>>> = Lazy::new(|| ContextPool::new(default_max_idle()));

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn reuses_one_context_for_sequential_calls() {
    let pool: ContextPool<DCtx<'static>> = ContextPool::new(4);
    for _ in 0..1000 {
      pool.take().unwrap().give_back();
    }
    let counters = pool.counters();
    assert_eq!(counters.created, 1);
    assert_eq!(counters.reused, 999);
    assert_eq!(counters.idle, 1);
    assert_eq!(counters.in_use, 0);
  }

  #[test]
  fn never_keeps_more_than_the_bound() {
    let pool: ContextPool<CCtx<'static>> = ContextPool::new(2);
    let leases: Vec<_> = (0..5).map(|_| pool.take().unwrap()).collect();
    assert_eq!(pool.counters().in_use, 5);
    leases.into_iter().for_each(Lease::give_back);
    let counters = pool.counters();
    assert_eq!(counters.idle, 2);
    assert_eq!(counters.freed_over_bound, 3);
    assert_eq!(counters.in_use, 0);
  }

  #[test]
  fn drops_a_context_that_was_not_given_back() {
    let pool: ContextPool<DCtx<'static>> = ContextPool::new(4);
    drop(pool.take().unwrap());
    let counters = pool.counters();
    assert_eq!((counters.idle, counters.dropped_after_error, counters.in_use), (0, 1, 0));
    pool.take().unwrap().give_back();
    assert_eq!(pool.counters().created, 2);
  }

  #[test]
  fn a_bound_of_zero_creates_a_context_per_call() {
    let pool: ContextPool<CCtx<'static>> = ContextPool::new(4);
    pool.take().unwrap().give_back();
    pool.set_max_idle(0);
    assert_eq!(pool.counters().idle, 0);
    for _ in 0..10 {
      pool.take().unwrap().give_back();
    }
    assert_eq!(pool.counters().created, 11);
  }

  #[test]
  fn stays_bounded_under_concurrent_use() {
    let pool: ContextPool<DCtx<'static>> = ContextPool::new(3);
    std::thread::scope(|scope| {
      for _ in 0..8 {
        scope.spawn(|| {
          for _ in 0..2000 {
            pool.take().unwrap().give_back();
          }
        });
      }
    });
    let counters = pool.counters();
    assert!(counters.idle <= 3);
    assert_eq!(counters.in_use, 0);
    assert!(counters.created <= 8 + counters.freed_over_bound);
  }
}
