//! The pool's accounting under many threads at once: random takes, give-backs, drops (a failed
//! call), contexts that grow or shrink on loan, failed resets, bound changes and sweeps, after
//! which every count must add up (written in a hostile review of moving the counts under the
//! pool's lock, 2026-12-05: a reuse counted outside the lock failed it).

use super::*;

/// A context whose size and whose reset's outcome the test controls.
struct Fake<const SAFE: bool> {
  bytes: usize,
  fail_reset: bool,
}

impl<const SAFE: bool> Context for Fake<SAFE> {
  fn create() -> Option<Self> {
    Some(Fake { bytes: 1000, fail_reset: false })
  }
  fn reset(&mut self) -> bool {
    !self.fail_reset
  }
  fn bytes(&self) -> usize {
    self.bytes
  }
  const TRIMS: bool = false;
  const SAFE_AFTER_FAILURE: bool = SAFE;
}

/// xorshift64: the same operations for the same seed, run after run.
struct Rng(u64);
impl Rng {
  fn next(&mut self) -> u64 {
    self.0 ^= self.0 << 13;
    self.0 ^= self.0 >> 7;
    self.0 ^= self.0 << 17;
    self.0
  }
  fn below(&mut self, n: u64) -> u64 {
    self.next() % n
  }
}

/// Every count adds up, with nothing on loan.
fn check_quiescent<C: Context>(pool: &ContextPool<C>, takes: u64, label: &str) {
  let counters = pool.counters();
  let shelf = lock(&pool.shelf);
  let sum: usize = shelf.idle.iter().map(|entry| entry.bytes).sum();
  let measured: usize = shelf.idle.iter().map(|entry| entry.context.bytes()).sum();
  assert_eq!(counters.holdings.in_use_bytes, 0, "{label}: in_use_bytes {counters:?}");
  assert_eq!(counters.in_use, 0, "{label}: in_use {counters:?}");
  assert_eq!(counters.holdings.idle_bytes, sum, "{label}: idle_bytes {counters:?}");
  assert_eq!(sum, measured, "{label}: idle entries' bytes vs contexts' bytes");
  assert_eq!(pool.idle_count.load(Ordering::SeqCst), shelf.idle.len(), "{label}: idle_count mirror");
  assert_eq!(counters.holdings.idle, shelf.idle.len(), "{label}");
  assert_eq!(counters.reused + counters.created, takes, "{label}: reused+created vs takes {counters:?}");
  assert_eq!(
    counters.created,
    counters.dropped_after_error + counters.freed_over_bound + counters.freed_idle + shelf.idle.len() as u64,
    "{label}: conservation {counters:?}"
  );
  assert!(shelf.idle.len() <= counters.holdings.max_idle, "{label}: {counters:?}");
  assert!(shelf.idle_bytes <= counters.holdings.max_idle_bytes, "{label}: {counters:?}");
}

/// Aborts the test process when a thread panics: the others would wait at the barrier for ever.
struct AbortOnPanic;
impl Drop for AbortOnPanic {
  fn drop(&mut self) {
    if std::thread::panicking() {
      std::process::abort();
    }
  }
}

/// `threads` threads making `ops` random operations each, four rounds, on one pool.
fn hammer<const SAFE: bool>(seed: u64, threads: usize, ops: usize) {
  let pool: ContextPool<Fake<SAFE>> = ContextPool::new(4, 4 << 20);
  let takes = AtomicU64::new(0);
  let barrier = std::sync::Barrier::new(threads + 1);
  let held_bytes = AtomicU64::new(0);
  for round in 0..4 {
    std::thread::scope(|scope| {
      for t in 0..threads {
        let (pool, takes, barrier, held_bytes) = (&pool, &takes, &barrier, &held_bytes);
        scope.spawn(move || {
          let _abort = AbortOnPanic;
          let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (round as u64 * 7919) | 1);
          let mut leases: Vec<Lease<Fake<SAFE>, &ContextPool<Fake<SAFE>>>> = Vec::new();
          for _ in 0..ops {
            match rng.below(100) {
              0..=29 if leases.len() < 4 => {
                leases.push(pool.take().unwrap());
                takes.fetch_add(1, Ordering::Relaxed);
              }
              0..=44 if !leases.is_empty() => {
                let i = rng.below(leases.len() as u64) as usize;
                leases.swap_remove(i).give_back();
              }
              45..=52 if !leases.is_empty() => {
                let i = rng.below(leases.len() as u64) as usize;
                drop(leases.swap_remove(i));
              }
              53..=64 if !leases.is_empty() => {
                let i = rng.below(leases.len() as u64) as usize;
                let sizes = [0usize, 1, 1000, 64 << 10, 1 << 20, 3 << 20, 5 << 20, 40 << 20];
                leases[i].bytes_mut_for_test(sizes[rng.below(sizes.len() as u64) as usize]);
                if rng.below(2) == 0 {
                  leases[i].measure();
                }
              }
              65..=69 if !leases.is_empty() => {
                let i = rng.below(leases.len() as u64) as usize;
                leases[i].fail_reset = true;
                if rng.below(2) == 0 {
                  leases.swap_remove(i).give_back();
                }
              }
              70..=74 => {
                let counts = [None, Some(0), Some(1), Some(2), Some(4), Some(8), Some(5000)];
                let bytes = [None, Some(0), Some(1000), Some(1 << 20), Some(4 << 20), Some(16 << 20), Some(usize::MAX)];
                pool.set_bounds(counts[rng.below(7) as usize], bytes[rng.below(7) as usize]);
              }
              75..=79 => {
                pool.sweep(sweep::epoch().wrapping_add(rng.below(12) as u32));
              }
              _ => {
                let c = pool.counters();
                // A wrapped counter shows up as an absurd number.
                assert!(c.holdings.in_use_bytes < 1 << 40, "{c:?}");
                assert!(c.holdings.idle_bytes < 1 << 40, "{c:?}");
                assert!(c.in_use < 1 << 30, "{c:?}");
              }
            }
          }
          // Quiescent check with leases still held: in_use_bytes == sum of what leases record.
          let mine: u64 = leases.iter().map(|lease| lease.bytes as u64).sum();
          held_bytes.fetch_add(mine, Ordering::SeqCst);
          barrier.wait();
          barrier.wait();
          for lease in leases {
            if rng.below(2) == 0 {
              lease.give_back()
            } else {
              drop(lease)
            }
          }
        });
      }
      barrier.wait();
      let _abort = AbortOnPanic;
      let c = pool.counters();
      assert_eq!(c.holdings.in_use_bytes as u64, held_bytes.swap(0, Ordering::SeqCst), "held phase {c:?}");
      barrier.wait();
    });
    // Make the final bounds hold for the check.
    pool.set_bounds(None, None);
    check_quiescent(&pool, takes.load(Ordering::Relaxed), &format!("seed {seed} round {round} safe {SAFE}"));
  }
}

impl<const SAFE: bool> Lease<Fake<SAFE>, &ContextPool<Fake<SAFE>>> {
  fn bytes_mut_for_test(&mut self, bytes: usize) {
    (**self).bytes = bytes;
  }
}

#[test]
fn accounting_holds_under_concurrent_use() {
  for seed in 1..=6u64 {
    hammer::<false>(seed.wrapping_mul(0x1234_5678_9ABC), 6, 30_000);
    hammer::<true>(seed.wrapping_mul(0x8765_4321_0FED), 6, 30_000);
  }
}

#[test]
fn accounting_holds_under_concurrent_use_of_real_contexts() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(3, DEFAULT_MAX_IDLE_BYTES);
  let takes = AtomicU64::new(0);
  std::thread::scope(|scope| {
    for t in 0..6u64 {
      let (pool, takes) = (&pool, &takes);
      scope.spawn(move || {
        let mut rng = Rng(t * 77 + 13);
        for _ in 0..5000 {
          let lease = pool.take().unwrap();
          takes.fetch_add(1, Ordering::Relaxed);
          match rng.below(10) {
            0 => drop(lease),
            1 => pool.set_bounds(Some(rng.below(5) as usize), None),
            2 => {
              pool.sweep(sweep::epoch().wrapping_add(rng.below(8) as u32));
              lease.give_back()
            }
            _ => lease.give_back(),
          }
        }
      });
    }
  });
  pool.set_bounds(Some(3), None);
  check_quiescent(&pool, takes.load(Ordering::Relaxed), "dctx");
}
