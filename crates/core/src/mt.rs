//! Multi-threaded compression: contexts whose libzstd worker threads stay up between calls,
//! cached by (level, workers), a bounded few at a time.
//!
//! libzstd starts a context's worker threads at its first multi-threaded frame and stops them
//! when the context is freed; a reset keeps them. Reusing the context skips that start-up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use once_cell::sync::Lazy;
use zstd::zstd_safe::{zstd_sys, CCtx};

use crate::compress::{param, CompressParams};
use crate::error::Failure;
use crate::pool::{lock, Context, Counts, Holdings, Home, Idle, Lease, PoolCounters};
use crate::sweep;

/// Whether worker threads can speed up compressing `len` bytes with `params`.
///
/// libzstd cuts the input into jobs of 4 windows (at least 1 MiB; or `jobSize`, when set): 2 MiB
/// at level 1, 8 MiB at level 3, 16 MiB at level 9. One job runs on one thread, so below two
/// jobs the workers only add their hand-over costs. Measured with `cargo bench --bench
/// multithread` on 2 cores: with 2 workers, level 1 is 1.27x faster at 4 MiB, level 3 0.99x at
/// 8 MiB and 1.81x at 16 MiB, level 9 0.98x at 16 MiB and 1.14x at 32 MiB.
pub fn pays(params: &CompressParams, len: usize) -> bool {
  let tuned = |parameter| params.tuning.get(parameter).filter(|&value| value > 0);
  let level_params = crate::ffi::level_params(params.level, len as u64, 0);
  let window_log = tuned(param::WINDOW_LOG).map_or(level_params.windowLog, |log| log as u32);
  // As ZSTDMT_computeTargetJobLog does without long-distance matching.
  let job = tuned(param::JOB_SIZE).map_or(4u64 << window_log.clamp(18, 28), |size| size as u64);
  // libzstd takes jobs of at least 512 KiB; two of those are still too little to share.
  len as u64 >= 2 * job.max(1 << 20)
}

/// Idle multi-threaded contexts kept by default: each holds its worker threads and their
/// buffers, 33 MB at level 3 and 56 MB at level 9 with 2 workers (`npm run bench`), so only
/// the most recently used one is kept.
pub const DEFAULT_MAX_IDLE: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
  pub level: i32,
  pub workers: u32,
}

pub struct MtCache {
  /// Idle contexts, the least recently used first.
  idle: Mutex<Vec<(Key, Idle<CCtx<'static>>)>>,
  /// Mirrors of the idle list's length, written under its lock, read without it.
  idle_count: AtomicUsize,
  in_use_bytes: AtomicUsize,
  max_idle: AtomicUsize,
  counts: Counts,
}

/// The process-wide cache, registered with the sweeper as it is made.
pub static CACHE: Lazy<MtCache> = Lazy::new(|| {
  sweep::register(&CACHE);
  MtCache::new(DEFAULT_MAX_IDLE)
});

/// Whether this build of libzstd can compress with worker threads.
pub fn available() -> bool {
  max_workers() > 0
}

/// The most workers libzstd accepts: 0 when it cannot compress with worker threads.
pub fn max_workers() -> u32 {
  crate::ffi::param_bounds(zstd_sys::ZSTD_cParameter::ZSTD_c_nbWorkers).map_or(0, |(_, max)| max.max(0) as u32)
}

/// The worker threads a call asking for `requested` gets. One worker would only move the work
/// off a thread that then waits for it, so 0 and 1 both mean single-threaded. More workers than
/// cores would only take turns on them; libzstd writes the same bytes with any number of workers
/// from 1 up, so the count is capped at the cores without changing the output.
pub fn effective_workers(requested: u32) -> u32 {
  if requested < 2 {
    return 0;
  }
  let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
  requested.min(cores.max(2))
}

/// The leased context, and the key it goes back under.
pub struct KeyedHome<'cache> {
  cache: &'cache MtCache,
  key: Key,
}

impl Home<CCtx<'static>> for KeyedHome<'_> {
  fn put_back(&self, context: CCtx<'static>, leased: usize) {
    self.cache.in_use_bytes.fetch_sub(leased, Ordering::Relaxed);
    self.cache.give_back(self.key, context);
  }
  fn discard(&self, context: CCtx<'static>, leased: usize) {
    drop(context);
    self.cache.in_use_bytes.fetch_sub(leased, Ordering::Relaxed);
    self.cache.counts.dropped_after_error.fetch_add(1, Ordering::Release);
    sweep::note_freed(leased);
  }
  fn resized(&self, before: usize, now: usize) {
    self.cache.in_use_bytes.fetch_add(now, Ordering::Relaxed);
    self.cache.in_use_bytes.fetch_sub(before, Ordering::Relaxed);
  }
}

impl MtCache {
  pub fn new(max_idle: usize) -> Self {
    Self {
      idle: Mutex::new(Vec::new()),
      idle_count: AtomicUsize::new(0),
      in_use_bytes: AtomicUsize::new(0),
      max_idle: AtomicUsize::new(max_idle),
      counts: Counts::default(),
    }
  }

  fn idle(&self) -> MutexGuard<'_, Vec<(Key, Idle<CCtx<'static>>)>> {
    lock(&self.idle)
  }

  /// The most recently used idle context for `key`, else a new one. A context is never used by
  /// two calls at once: concurrent calls with the same key each get their own.
  pub fn take(&self, key: Key) -> Result<Lease<CCtx<'static>, KeyedHome<'_>>, Failure> {
    let cached = {
      let mut idle = self.idle();
      let entry = idle.iter().rposition(|(cached, _)| *cached == key).map(|index| idle.remove(index).1);
      self.idle_count.store(idle.len(), Ordering::SeqCst);
      entry
    };
    let (context, bytes) = self.counts.reuse_or_create(cached)?;
    self.in_use_bytes.fetch_add(bytes, Ordering::Relaxed);
    Ok(Lease::new(context, bytes, KeyedHome { cache: self, key }))
  }

  fn give_back(&self, key: Key, mut context: CCtx<'static>) {
    // Resetting the parameters leaves the worker threads running, ready for the next call.
    if !Context::reset(&mut context) {
      self.counts.dropped_after_error.fetch_add(1, Ordering::Release);
      return;
    }
    let entry = Idle { bytes: context.bytes(), context, since: sweep::epoch() };
    let evicted: Vec<_> = {
      let mut idle = self.idle();
      idle.push((key, entry));
      let excess = idle.len().saturating_sub(self.max_idle.load(Ordering::Relaxed));
      let evicted = idle.drain(..excess).collect();
      self.idle_count.store(idle.len(), Ordering::SeqCst);
      self.counts.freed_over_bound.fetch_add(excess as u64, Ordering::Release);
      evicted
    };
    sweep::note_idle();
    let freed = evicted.iter().map(|(_, entry)| entry.bytes).sum();
    // Freeing joins the worker threads: done outside the lock.
    drop(evicted);
    if freed > 0 {
      sweep::note_freed(freed);
    }
  }

  /// Frees the contexts idle since before the timeout (see `sweep`); the bytes they held.
  pub fn sweep(&self, now: u32) -> usize {
    let expired: Vec<_> = {
      let mut idle = self.idle();
      let count = idle.iter().take_while(|(_, entry)| sweep::expired(entry.since, now)).count();
      let expired = idle.drain(..count).collect();
      self.idle_count.store(idle.len(), Ordering::SeqCst);
      self.counts.freed_idle.fetch_add(count as u64, Ordering::Release);
      expired
    };
    expired.iter().map(|(_, entry)| entry.bytes).sum()
  }

  pub fn has_idle(&self) -> bool {
    self.idle_count.load(Ordering::SeqCst) > 0
  }

  /// Changes the bound and frees the idle contexts beyond it, the least recently used first.
  pub fn set_max_idle(&self, max_idle: usize) {
    self.max_idle.store(max_idle, Ordering::Relaxed);
    let freed: Vec<_> = {
      let mut idle = self.idle();
      let excess = idle.len().saturating_sub(max_idle);
      let freed = idle.drain(..excess).collect();
      self.idle_count.store(idle.len(), Ordering::SeqCst);
      self.counts.freed_over_bound.fetch_add(excess as u64, Ordering::Release);
      freed
    };
    let bytes = freed.iter().map(|(_, entry)| entry.bytes).sum();
    // Freeing joins the worker threads: done outside the lock.
    drop(freed);
    if bytes > 0 {
      sweep::note_freed(bytes);
    }
  }

  pub fn counters(&self) -> PoolCounters {
    // Under the idle lock, as sweeps and evictions move contexts from idle to freed under it.
    let idle = self.idle();
    self.counts.snapshot(Holdings {
      idle: idle.len(),
      idle_bytes: idle.iter().map(|(_, entry)| entry.bytes).sum(),
      in_use_bytes: self.in_use_bytes.load(Ordering::Relaxed),
      max_idle: self.max_idle.load(Ordering::Relaxed),
      // Bounded by count: each context holds its worker threads' buffers, tens of megabytes.
      max_idle_bytes: usize::MAX,
    })
  }
}

impl sweep::Sweepable for MtCache {
  fn has_idle(&self) -> bool {
    MtCache::has_idle(self)
  }
  fn sweep(&self, now: u32) -> usize {
    MtCache::sweep(self, now)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::compress::{compress, CompressParams};

  fn input(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7) % 251) as u8 ^ ((i >> 12) as u8)).collect()
  }

  #[test]
  fn threads_pay_from_two_jobs_on() {
    let level = |level| CompressParams::new(level, false, 2);
    assert!(!pays(&level(1), 3 << 20) && pays(&level(1), 4 << 20));
    assert!(!pays(&level(3), 15 << 20) && pays(&level(3), 16 << 20));
    assert!(!pays(&level(9), 31 << 20) && pays(&level(9), 32 << 20));
    let small_jobs =
      CompressParams { tuning: crate::compress::Tuning::from_pairs(&[param::JOB_SIZE, 1 << 20]).unwrap(), ..level(3) };
    assert!(!pays(&small_jobs, (2 << 20) - 1) && pays(&small_jobs, 2 << 20));
  }

  #[test]
  fn libzstd_is_built_with_threads() {
    assert!(available());
    assert!(max_workers() >= 2);
  }

  #[test]
  fn reuses_by_key_and_keeps_the_bound() {
    let cache = MtCache::new(2);
    let key = Key { level: 3, workers: 2 };
    cache.take(key).unwrap().give_back();
    cache.take(key).unwrap().give_back();
    assert_eq!((cache.counters().created, cache.counters().reused), (1, 1));
    cache.take(Key { level: 3, workers: 4 }).unwrap().give_back();
    cache.take(Key { level: 9, workers: 2 }).unwrap().give_back();
    let counters = cache.counters();
    assert_eq!((counters.created, counters.holdings.idle, counters.freed_over_bound), (3, 2, 1));
    // The least recently used (level 3, 2 workers) went first.
    cache.take(key).unwrap().give_back();
    assert_eq!(cache.counters().created, 4);
  }

  #[test]
  fn a_cached_context_writes_what_a_fresh_one_writes() {
    let cache = MtCache::new(2);
    let params = CompressParams::new(3, false, 2);
    let key = Key { level: 3, workers: 2 };
    for round in 0..3 {
      let data = input(17 << 20 | round);
      let mut cached = cache.take(key).unwrap();
      let from_cache = compress(&mut cached, &data, params, None).unwrap();
      cached.give_back();
      let from_fresh = compress(&mut CCtx::create(), &data, params, None).unwrap();
      assert_eq!(from_cache, from_fresh, "round {round}");
      assert_eq!(zstd::decode_all(&from_cache[..]).unwrap(), data);
    }
    assert_eq!(cache.counters().created, 1);
  }

  #[test]
  fn a_multithreaded_snapshot_never_misses_a_context_on_loan_during_sweeps() {
    use std::sync::atomic::AtomicBool;
    let cache = MtCache::new(64);
    let key = Key { level: 3, workers: 2 };
    let _held = cache.take(key).unwrap();
    let stop = AtomicBool::new(false);
    let mut min_seen = u64::MAX;
    std::thread::scope(|scope| {
      scope.spawn(|| {
        let mut now = 1000u32;
        while !stop.load(Ordering::Relaxed) {
          let leases: Vec<_> = (0..8).map(|_| cache.take(key).unwrap()).collect();
          leases.into_iter().for_each(Lease::give_back);
          now = now.wrapping_add(100);
          cache.sweep(now);
        }
      });
      for _ in 0..50_000 {
        min_seen = min_seen.min(cache.counters().in_use);
      }
      stop.store(true, Ordering::Relaxed);
    });
    assert!(min_seen >= 1, "mt in_use read {min_seen} while one context was on loan");
  }
}
