//! Freeing what has stayed idle: a background thread that, every quarter of the idle timeout,
//! frees the pooled contexts (and cached multi-threaded contexts) nobody used for that long.
//!
//! The hot path pays two relaxed loads: a context going idle is stamped with the current
//! `epoch()`, and `note_idle()` wakes the thread if it sleeps. The thread sleeps for good (no
//! wake-ups) while every pool is empty, and it lives outside the event loop, so it never keeps
//! a Node process alive. Once a megabyte or more has been freed, it asks the allocator to give
//! free pages back to the system (glibc keeps them otherwise), at most once a second.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

/// A context idle for this many ticks (of a quarter of the timeout each) is freed: between one
/// and one and a quarter timeouts after its last use.
pub const TICKS: u32 = 4;

/// The default idle timeout, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;

/// An idle timeout that never comes.
pub const NEVER: u64 = u64::MAX;

/// Freed memory worth giving back to the system: less is not worth walking the heap for.
const TRIM_FROM_BYTES: usize = 1 << 20;

/// The shortest time between two trims: each walks the allocator's heaps under their locks.
const TRIM_INTERVAL: Duration = Duration::from_secs(1);

static EPOCH: AtomicU32 = AtomicU32::new(0);
static TIMEOUT_MS: AtomicU64 = AtomicU64::new(DEFAULT_TIMEOUT_MS);
/// The thread sleeps until `note_idle`, `note_freed` or `set_timeout_ms` wakes it.
static PARKED: AtomicBool = AtomicBool::new(false);
/// Bytes freed since the last trim.
static FREED: AtomicUsize = AtomicUsize::new(0);
static STARTED: AtomicBool = AtomicBool::new(false);
static START: Once = Once::new();
static LOCK: Mutex<()> = Mutex::new(());
static WAKE: Condvar = Condvar::new();

/// The current tick: what an idle context is stamped with.
pub fn epoch() -> u32 {
  EPOCH.load(Ordering::Relaxed)
}

/// Whether a context stamped `since` has been idle long enough to free at tick `now`.
pub fn expired(since: u32, now: u32) -> bool {
  now.wrapping_sub(since) > TICKS
}

/// A context went idle: starts the thread on first use, and wakes it if it sleeps and there is
/// a timeout to keep.
pub fn note_idle() {
  if !STARTED.load(Ordering::Relaxed) {
    start();
  }
  if PARKED.load(Ordering::SeqCst) && TIMEOUT_MS.load(Ordering::Relaxed) != NEVER {
    wake();
  }
}

/// A context holding `bytes` was freed outside a sweep (returned beyond a bound, or after an
/// error). Large ones count towards a trim: once they add up to a megabyte, the thread gives the
/// memory back to the system. Small ones do not: the allocator reuses their memory for the next
/// contexts, and a pool turned off (a context freed per call) would have the heap walked every
/// second for nothing.
pub fn note_freed(bytes: usize) {
  if bytes < TRIM_FROM_BYTES / 4 || FREED.fetch_add(bytes, Ordering::SeqCst).saturating_add(bytes) < TRIM_FROM_BYTES {
    return;
  }
  if !STARTED.load(Ordering::Relaxed) {
    start();
  }
  if PARKED.load(Ordering::SeqCst) {
    wake();
  }
}

pub fn timeout_ms() -> u64 {
  TIMEOUT_MS.load(Ordering::Relaxed)
}

/// Sets the idle timeout (`NEVER` for none) and has the thread take it up now.
pub fn set_timeout_ms(ms: u64) {
  TIMEOUT_MS.store(ms.max(1), Ordering::SeqCst);
  wake();
}

fn wake() {
  let _guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
  PARKED.store(false, Ordering::SeqCst);
  WAKE.notify_all();
}

fn start() {
  START.call_once(|| {
    // Without a thread (a platform that cannot start one) nothing is freed by time; the
    // bounds on count and bytes still hold.
    let started = std::thread::Builder::new().name("zstd-pool-sweeper".into()).stack_size(256 << 10).spawn(run).is_ok();
    STARTED.store(started, Ordering::Relaxed);
  });
}

fn run() {
  let mut last_trim: Option<Instant> = None;
  loop {
    let timeout = TIMEOUT_MS.load(Ordering::SeqCst);
    let sweeping = timeout != NEVER && crate::pool::anything_idle();
    if !sweeping && !trim_wanted() {
      park(timeout);
      continue;
    }
    // A tick; or, with only a trim to do, a tick (so that a burst's results are gone too and
    // one trim gives back what the whole burst left), and at least the trim interval.
    let mut wait = tick(timeout);
    if !sweeping {
      wait = wait.max(last_trim.map_or(Duration::ZERO, |at| TRIM_INTERVAL.saturating_sub(at.elapsed())));
    }
    if !sleep(timeout, wait) {
      continue;
    }
    if sweeping {
      let now = EPOCH.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
      FREED.fetch_add(crate::pool::sweep(now), Ordering::SeqCst);
    }
    if trim_wanted() && last_trim.is_none_or(|at| at.elapsed() >= TRIM_INTERVAL) {
      FREED.store(0, Ordering::SeqCst);
      trim();
      last_trim = Some(Instant::now());
    }
  }
}

fn trim_wanted() -> bool {
  FREED.load(Ordering::SeqCst) >= TRIM_FROM_BYTES
}

fn tick(timeout: u64) -> Duration {
  let timeout = if timeout == NEVER { DEFAULT_TIMEOUT_MS } else { timeout };
  Duration::from_millis((timeout / u64::from(TICKS)).max(1))
}

/// Sleeps until a context goes idle, memory is freed or the timeout changes. `note_idle` and
/// `note_freed` read `PARKED` after making a context idle or counting freed bytes, and this
/// reads the pools, `FREED` and the timeout after setting it (all SeqCst): one of the two sees
/// the other, so nothing goes unseen.
fn park(timeout: u64) {
  let mut guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
  PARKED.store(true, Ordering::SeqCst);
  let now = TIMEOUT_MS.load(Ordering::SeqCst);
  if now != timeout || (now != NEVER && crate::pool::anything_idle()) || trim_wanted() {
    PARKED.store(false, Ordering::SeqCst);
    return;
  }
  while PARKED.load(Ordering::SeqCst) {
    guard = WAKE.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner());
  }
}

/// Sleeps for `wait`; false if the timeout changed meanwhile.
fn sleep(timeout: u64, wait: Duration) -> bool {
  let deadline = Instant::now() + wait;
  let mut guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
  loop {
    if TIMEOUT_MS.load(Ordering::SeqCst) != timeout {
      return false;
    }
    let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) else {
      return true;
    };
    guard = WAKE.wait_timeout(guard, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
  }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
  extern "C" {
    fn malloc_trim(pad: usize) -> std::ffi::c_int;
  }
  // SAFETY: glibc's malloc_trim takes no pointers and is thread-safe (it locks each arena).
  unsafe {
    malloc_trim(0);
  }
}

/// Other allocators give large blocks back when they are freed.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
