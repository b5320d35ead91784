//! Freeing what has stayed idle: a background thread that, every quarter of the idle timeout,
//! frees the pooled contexts (and cached multi-threaded contexts) nobody used for that long.
//!
//! It knows nothing of the pools: each process-wide pool (and the multi-threaded cache)
//! registers itself as [`Sweepable`] when it is first used, and the thread sweeps what is
//! registered.
//!
//! The hot path pays two relaxed loads: a context going idle is stamped with the current
//! `epoch()`, and `note_idle()` wakes the thread if it sleeps. The thread sleeps for good (no
//! wake-ups) while every pool is empty, and it lives outside the event loop, so it never keeps
//! a Node process alive. Once a megabyte or more has been freed, it asks the allocator to give
//! free pages back to the system (glibc keeps them otherwise), at most once a second.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;

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

/// Something holding idle contexts for the thread to free: a pool, or the multi-threaded cache.
pub trait Sweepable: Sync {
  fn has_idle(&self) -> bool;
  /// Frees the contexts idle since before the timeout, at tick `now`; the bytes they held.
  fn sweep(&self, now: u32) -> usize;
}

/// A process-wide pool, registered from its own initializer: reading it waits for that to end.
impl<T: Sweepable + Send> Sweepable for Lazy<T> {
  fn has_idle(&self) -> bool {
    T::has_idle(self)
  }
  fn sweep(&self, now: u32) -> usize {
    T::sweep(self, now)
  }
}

/// What the thread sweeps.
static SWEPT: Mutex<Vec<&'static dyn Sweepable>> = Mutex::new(Vec::new());

/// Has the thread sweep `swept` from now on.
pub fn register(swept: &'static dyn Sweepable) {
  SWEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(swept);
}

/// What is registered, copied out of the lock: a pool registers from its initializer, which
/// reading it from here would wait for.
fn swept() -> Vec<&'static dyn Sweepable> {
  SWEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
}

/// Whether anything registered holds an idle context.
fn anything_idle() -> bool {
  swept().iter().any(|swept| swept.has_idle())
}

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
  if bytes < TRIM_FROM_BYTES / 4 {
    return;
  }
  let before = FREED.fetch_add(bytes, Ordering::SeqCst);
  if before.saturating_add(bytes) < TRIM_FROM_BYTES {
    return;
  }
  if !STARTED.load(Ordering::Relaxed) {
    start();
  }
  // The call that crosses the threshold wakes the thread even from a tick's sleep, so that the
  // trim does not wait for the idle timeout's tick (up to half a day).
  if before < TRIM_FROM_BYTES || PARKED.load(Ordering::SeqCst) {
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

/// Starts the thread, if it is not running: on first use, or before the caller changes its own
/// thread in a way the sweeper should not inherit (a lane's scheduling policy).
pub fn start() {
  START.call_once(|| {
    // Without a thread (a platform that cannot start one) nothing is freed by time; the
    // bounds on count and bytes still hold.
    let started = std::thread::Builder::new().name("zstd-pool-sweeper".into()).stack_size(256 << 10).spawn(run).is_ok();
    STARTED.store(started, Ordering::Relaxed);
  });
}

fn run() {
  let mut last_trim: Option<Instant> = None;
  let mut next_tick: Option<Instant> = None;
  let mut trim_at: Option<Instant> = None;
  // Whether the trim scheduled is the follow-up of one done for freed contexts.
  let mut follow_up = false;
  loop {
    let timeout = TIMEOUT_MS.load(Ordering::SeqCst);
    let sweeping = timeout != NEVER && anything_idle();
    if !sweeping {
      next_tick = None;
    }
    if trim_at.is_none() && trim_wanted() {
      // Let the rest of a burst be freed first, and keep the interval between trims.
      let settle = Instant::now() + tick(timeout).min(TRIM_INTERVAL);
      trim_at = Some(last_trim.map_or(settle, |at| settle.max(at + TRIM_INTERVAL)));
    }
    if !sweeping && trim_at.is_none() {
      park(timeout);
      continue;
    }
    if sweeping && next_tick.is_none() {
      next_tick = Some(Instant::now() + tick(timeout));
    }
    let Some(deadline) = next_tick.into_iter().chain(trim_at).min() else {
      continue;
    };
    sleep(timeout, deadline, trim_at.is_none(), next_tick.is_none() && timeout != NEVER);
    if TIMEOUT_MS.load(Ordering::SeqCst) != timeout {
      next_tick = None;
      continue;
    }
    let now = Instant::now();
    if next_tick.is_some_and(|at| at <= now) {
      next_tick = None;
      let epoch = EPOCH.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
      FREED.fetch_add(swept().iter().map(|swept| swept.sweep(epoch)).sum(), Ordering::SeqCst);
    }
    if trim_at.is_some_and(|at| at <= now) {
      trim_at = None;
      FREED.swap(0, Ordering::SeqCst);
      crate::ffi::trim();
      last_trim = Some(Instant::now());
      // The calls whose contexts were freed free their results after that (a result is copied
      // into a Buffer, then dropped; that Buffer goes at the next garbage collection): one more
      // trim an interval later gives those back too.
      if !follow_up {
        trim_at = Some(Instant::now() + TRIM_INTERVAL);
      }
      follow_up = !follow_up;
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
  if now != timeout || (now != NEVER && anything_idle()) || trim_wanted() {
    PARKED.store(false, Ordering::SeqCst);
    return;
  }
  while PARKED.load(Ordering::SeqCst) {
    guard = WAKE.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner());
  }
}

/// Sleeps until `deadline`, the timeout changes, or (with `for_trim`) a trim is wanted, or (with
/// `for_idle`, while no tick is due) a context goes idle: then it counts as parked for
/// `note_idle`, with the same handshake as `park`.
fn sleep(timeout: u64, deadline: Instant, for_trim: bool, for_idle: bool) {
  let mut guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
  if for_idle {
    PARKED.store(true, Ordering::SeqCst);
  }
  loop {
    let woken = for_idle && (!PARKED.load(Ordering::SeqCst) || anything_idle());
    if woken || TIMEOUT_MS.load(Ordering::SeqCst) != timeout || (for_trim && trim_wanted()) {
      break;
    }
    let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) else {
      break;
    };
    guard = WAKE.wait_timeout(guard, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
  }
  PARKED.store(false, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Something idle until swept, counting its sweeps.
  struct Probe {
    idle: AtomicBool,
    sweeps: AtomicU32,
  }

  impl Sweepable for Probe {
    fn has_idle(&self) -> bool {
      self.idle.load(Ordering::SeqCst)
    }
    fn sweep(&self, _now: u32) -> usize {
      if self.idle.swap(false, Ordering::SeqCst) {
        self.sweeps.fetch_add(1, Ordering::SeqCst);
      }
      0
    }
  }

  #[test]
  fn sweeps_what_registered_itself() {
    static PROBE: Probe = Probe { idle: AtomicBool::new(false), sweeps: AtomicU32::new(0) };
    register(&PROBE);
    let before = timeout_ms();
    set_timeout_ms(20);
    PROBE.idle.store(true, Ordering::SeqCst);
    note_idle();
    let deadline = Instant::now() + Duration::from_secs(5);
    while PROBE.sweeps.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
      std::thread::sleep(Duration::from_millis(5));
    }
    set_timeout_ms(before);
    assert_eq!(PROBE.sweeps.load(Ordering::SeqCst), 1);
    assert!(!PROBE.has_idle());
  }
}
