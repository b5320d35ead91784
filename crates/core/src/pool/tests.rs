use super::*;

#[test]
fn reuses_one_context_for_sequential_calls() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(4, DEFAULT_MAX_IDLE_BYTES);
  for _ in 0..1000 {
    pool.take().unwrap().give_back();
  }
  let counters = pool.counters();
  assert_eq!(counters.created, 1);
  assert_eq!(counters.reused, 999);
  assert_eq!(counters.holdings.idle, 1);
  assert_eq!(counters.in_use, 0);
}

#[test]
fn never_keeps_more_than_the_bound() {
  let pool: ContextPool<CCtx<'static>> = ContextPool::new(2, DEFAULT_MAX_IDLE_BYTES);
  let leases: Vec<_> = (0..5).map(|_| pool.take().unwrap()).collect();
  assert_eq!(pool.counters().in_use, 5);
  leases.into_iter().for_each(Lease::give_back);
  let counters = pool.counters();
  assert_eq!(counters.holdings.idle, 2);
  assert_eq!(counters.freed_over_bound, 3);
  assert_eq!(counters.in_use, 0);
}

#[test]
fn drops_a_context_that_was_not_given_back() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(4, DEFAULT_MAX_IDLE_BYTES);
  drop(pool.take().unwrap());
  let counters = pool.counters();
  assert_eq!((counters.holdings.idle, counters.dropped_after_error, counters.in_use), (0, 1, 0));
  pool.take().unwrap().give_back();
  assert_eq!(pool.counters().created, 2);
}

#[test]
fn a_bound_of_zero_creates_a_context_per_call() {
  let pool: ContextPool<CCtx<'static>> = ContextPool::new(4, DEFAULT_MAX_IDLE_BYTES);
  pool.take().unwrap().give_back();
  pool.set_bounds(Some(0), None);
  assert_eq!(pool.counters().holdings.idle, 0);
  for _ in 0..10 {
    pool.take().unwrap().give_back();
  }
  assert_eq!(pool.counters().created, 11);
}

#[test]
fn stays_bounded_under_concurrent_use() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(3, DEFAULT_MAX_IDLE_BYTES);
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
  assert!(counters.holdings.idle <= 3);
  assert_eq!(counters.in_use, 0);
  assert!(counters.created <= 8 + counters.freed_over_bound);
}

/// A compression context that compressed `len` bytes at `level`, as the pools hold them.
fn used_compressor(pool: &ContextPool<CCtx<'static>>, level: i32, len: usize) {
  let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 ^ (i >> 10) as u8).collect();
  let mut cctx = pool.take().unwrap();
  let params = crate::compress::CompressParams { level, ..Default::default() };
  crate::compress::compress(&mut cctx, &data, params, None).unwrap();
  cctx.give_back();
}

#[test]
fn counts_the_bytes_libzstd_reports() {
  // A bound so large that nothing counts as oversized.
  let pool: ContextPool<CCtx<'static>> = ContextPool::new(4, 1 << 30);
  let leases: Vec<_> = (0..3).map(|_| pool.take().unwrap()).collect();
  let fresh = leases[0].sizeof();
  assert_eq!(pool.counters().holdings.in_use_bytes, 3 * fresh);
  leases.into_iter().for_each(Lease::give_back);
  used_compressor(&pool, 9, 1 << 20);
  let held: usize = lock(&pool.shelf).idle.iter().map(|entry| entry.context.sizeof()).sum();
  let holdings = pool.counters().holdings;
  assert_eq!((holdings.idle, holdings.idle_bytes, holdings.in_use_bytes), (3, held, 0));
  assert!(held > 5 << 20, "a level-9 context for 1 MiB holds megabytes: {held}");
}

#[test]
fn keeps_the_idle_bytes_within_the_bound() {
  let pool: ContextPool<CCtx<'static>> = ContextPool::new(8, 4 << 20);
  // Larger than the whole bound: freed on return.
  used_compressor(&pool, 19, 1 << 20);
  let counters = pool.counters();
  assert_eq!((counters.holdings.idle, counters.holdings.idle_bytes, counters.freed_over_bound), (0, 0, 1));
  // Several that fit one by one but not all together: the oldest go.
  let leases: Vec<_> = (0..4).map(|_| pool.take().unwrap()).collect();
  for mut cctx in leases {
    let data = vec![7u8; 1 << 20];
    crate::compress::compress(&mut cctx, &data, Default::default(), None).unwrap();
    cctx.give_back();
  }
  let holdings = pool.counters().holdings;
  assert!(holdings.idle_bytes <= 4 << 20 && holdings.idle >= 1, "{holdings:?}");
  // A lower bound frees the excess at once.
  pool.set_bounds(None, Some(0));
  assert_eq!(pool.counters().holdings.idle_bytes, 0);
}

#[test]
fn frees_a_context_far_larger_than_the_recent_ones() {
  let pool: ContextPool<CCtx<'static>> = ContextPool::new(8, 64 << 20);
  for _ in 0..50 {
    used_compressor(&pool, 3, 1024);
  }
  let before = pool.counters();
  assert_eq!(before.holdings.idle, 1);
  // The call takes the one idle context, which grows to megabytes for it, and is freed.
  used_compressor(&pool, 9, 1 << 20);
  let after = pool.counters();
  assert_eq!(after.freed_over_bound, before.freed_over_bound + 1);
  assert_eq!((after.holdings.idle, after.holdings.idle_bytes), (0, 0));
  // A load that stays large is followed: its contexts are kept after a few calls.
  for _ in 0..10 {
    used_compressor(&pool, 9, 1 << 20);
  }
  assert!(pool.counters().holdings.idle_bytes > 5 << 20);
}

#[test]
fn sweeps_the_contexts_idle_too_long_oldest_first() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(8, DEFAULT_MAX_IDLE_BYTES);
  let leases: Vec<_> = (0..3).map(|_| pool.take().unwrap()).collect();
  leases.into_iter().for_each(Lease::give_back);
  let since = lock(&pool.shelf).idle[0].since;
  assert_eq!(pool.sweep(since.wrapping_add(sweep::TICKS)), 0);
  // The most recent goes out to a call, and comes back later.
  let mut shelf = lock(&pool.shelf);
  let last = shelf.idle.len() - 1;
  shelf.idle[last].since = since.wrapping_add(3);
  drop(shelf);
  assert!(pool.sweep(since.wrapping_add(sweep::TICKS + 1)) > 0);
  let counters = pool.counters();
  assert_eq!((counters.holdings.idle, counters.freed_idle), (1, 2));
  assert_eq!(counters.holdings.idle_bytes, lock(&pool.shelf).idle[0].context.sizeof());
}

#[test]
fn a_stream_lease_reports_its_growth() {
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(4, DEFAULT_MAX_IDLE_BYTES);
  let mut dctx = pool.take().unwrap();
  let before = pool.counters().holdings.in_use_bytes;
  let frame = zstd::stream::encode_all(&vec![1u8; 3 << 20][..], 19).unwrap();
  let mut output = vec![0u8; 1 << 16];
  let mut input = zstd::zstd_safe::InBuffer::around(&frame[..]);
  dctx.decompress_stream(&mut zstd::zstd_safe::OutBuffer::around(&mut output[..]), &mut input).unwrap();
  dctx.measure();
  let grown = pool.counters().holdings.in_use_bytes;
  assert!(grown > before && grown == dctx.sizeof());
  drop(dctx);
  assert_eq!(pool.counters().holdings.in_use_bytes, 0);
}

/// `in_use` is derived from the others: a snapshot taken while contexts move from idle to
/// freed must not count them twice and miss one on loan.
#[test]
fn a_snapshot_never_misses_a_context_on_loan_during_sweeps() {
  use std::sync::atomic::AtomicBool;
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(64, 1 << 30);
  // On loan for the whole test.
  let _held = pool.take().unwrap();
  let stop = AtomicBool::new(false);
  let mut min_seen = u64::MAX;
  let mut bad = 0u64;
  std::thread::scope(|scope| {
    scope.spawn(|| {
      let mut now = 1000u32;
      while !stop.load(Ordering::Relaxed) {
        let leases: Vec<_> = (0..8).map(|_| pool.take().unwrap()).collect();
        leases.into_iter().for_each(Lease::give_back);
        now = now.wrapping_add(100);
        pool.sweep(now);
      }
    });
    for _ in 0..200_000 {
      let in_use = pool.counters().in_use;
      if in_use < 1 {
        bad += 1;
      }
      min_seen = min_seen.min(in_use);
    }
    stop.store(true, Ordering::Relaxed);
  });
  assert!(min_seen >= 1, "in_use read {min_seen} ({bad} times) while one context was on loan");
}

/// With pooling off, a context created and freed between the reads of a snapshot must not be
/// subtracted without being added.
#[test]
fn a_snapshot_never_misses_a_context_on_loan_with_pooling_off() {
  use std::sync::atomic::AtomicBool;
  let pool: ContextPool<DCtx<'static>> = ContextPool::new(0, 1 << 30);
  let _held = pool.take().unwrap();
  let stop = AtomicBool::new(false);
  let mut min_seen = u64::MAX;
  std::thread::scope(|scope| {
    scope.spawn(|| {
      while !stop.load(Ordering::Relaxed) {
        pool.take().unwrap().give_back();
      }
    });
    for _ in 0..200_000 {
      min_seen = min_seen.min(pool.counters().in_use);
    }
    stop.store(true, Ordering::Relaxed);
  });
  assert!(min_seen >= 1, "in_use read {min_seen} while one context was on loan (pooling off)");
}

#[test]
fn memory_is_taken_by_its_room() {
  let pool: ContextPool<Vec<u8>> = ContextPool::new(8, 64 << 20);
  let leases: Vec<_> = [4096, 1 << 20, 64 << 10, 256 << 10]
    .into_iter()
    .map(|room| {
      let mut lease = pool.take().unwrap();
      lease.reserve_exact(room);
      lease.measure();
      lease
    })
    .collect();
  leases.into_iter().for_each(Lease::give_back);
  assert_eq!(pool.counters().holdings.idle, 4);
  let room = |lease: &Lease<Vec<u8>, &ContextPool<Vec<u8>>>| lease.capacity();
  // The least room that holds 150 KiB, and no more than twice that: 256 KiB.
  let fitting = pool.take_fitting(150 << 10).unwrap();
  assert!((256 << 10..300 << 10).contains(&room(&fitting)), "{}", room(&fitting));
  // None holds 300 to 600 KiB now: the largest that holds less, 64 KiB.
  let smaller = pool.take_fitting(300 << 10).unwrap();
  assert!((64 << 10..128 << 10).contains(&room(&smaller)), "{}", room(&smaller));
  let largest = pool.take_largest().unwrap();
  assert!(room(&largest) >= 1 << 20);
  // Only 4 KiB is left, and it is taken rather than a new one made.
  let last = pool.take_fitting(1 << 30).unwrap();
  assert_eq!(pool.take_fitting(1).map(|lease| room(&lease)).unwrap(), 0);
  let counters = pool.counters();
  assert_eq!((counters.created, counters.reused, counters.holdings.idle), (5, 4, 1));
  [fitting, smaller, largest, last].into_iter().for_each(Lease::give_back);
  assert_eq!(pool.counters().in_use, 0);
}
