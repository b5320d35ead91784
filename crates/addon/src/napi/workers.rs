//! Under WASI (the WebAssembly build), a call's work runs on threads of the module's own rather
//! than on emnapi's threadpool. Queuing a call there took the JavaScript thread 55 to 63 µs (a
//! 64 KiB `compress`, Node 26.12.1, the 2-core VM, 2026-12-05: wasi-libc's mutex and condition
//! variable under emnapi's C threadpool, 8.5% of a CPU profile), about as long as compressing
//! 16 KiB; with the standard library's futex-based lock and condition variable, 0.3 to 0.8 µs
//! when a thread is awake to take it (waking a parked one costs more: see [`LINGER`]). Finished
//! work is settled on the JavaScript thread. While a one-shot call is in flight, that thread
//! waits on two words of the module's memory with `Atomics.waitAsync` (`lib/workers.js`), and a
//! thread with work done sets one and notifies (`signal.c`, through `staging::signal`); else it
//! calls a thread-safe function (emnapi's: a message from the thread), which also keeps the
//! process alive while work is in flight. The message reached the JavaScript thread 10 µs later
//! under Node, and an awaited 64 KiB `compress` took 15% longer with it in Chromium (see
//! docs/wasm.md).
//!
//! Up to [`max_threads()`] threads, as many as emnapi's threadpool would have, started as work
//! comes and kept: a parked thread costs nothing but its stack, in the module's memory. If no
//! thread can be started, work goes to emnapi's threadpool as before.
//!
//! The JavaScript thread never waits for a lock here: a web page's thread cannot block
//! (`memory.atomic.wait32` traps there), so it takes the two locks the threads share with
//! `try_lock`, and spins for the few instructions a thread holds one. Only the threads wait.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use napi::{sys, Env};

use super::work::{call_threadsafe, hold_threadsafe, threadsafe, AsyncWork, Reached};

/// Work for the threads: `execute` on one of them, then `complete` on the JavaScript thread.
pub(crate) trait Item: Send {
  fn execute(&mut self);
  fn complete(self: Box<Self>, env: &Env);
}

impl<W: AsyncWork> Item for W {
  fn execute(&mut self) {
    AsyncWork::execute(self)
  }

  fn complete(self: Box<Self>, env: &Env) {
    AsyncWork::complete(*self, env, sys::Status::napi_ok)
  }
}

/// The most threads of one JavaScript thread's workers: what napi-rs's loader sizes emnapi's
/// threadpool by (`NAPI_RS_ASYNC_WORK_POOL_SIZE`, else `UV_THREADPOOL_SIZE`, as a number above
/// 0; else 4), within libuv's bound on its threadpool.
fn max_threads() -> usize {
  static MAX: OnceLock<usize> = OnceLock::new();
  *MAX.get_or_init(|| {
    let set = std::env::var("NAPI_RS_ASYNC_WORK_POOL_SIZE").or_else(|_| std::env::var("UV_THREADPOOL_SIZE"));
    match set.ok().and_then(|size| size.trim().parse::<f64>().ok()) {
      Some(size) if size >= 1.0 => (size as usize).min(1024),
      _ => 4,
    }
  })
}

/// How long a thread that ran out of work watches for more before it parks. Waking a parked
/// thread cost the JavaScript thread 24 µs a call (`memory.atomic.notify`, Node 26.12.1, the
/// 2-core VM, 2026-12-05), and a loop of awaited calls makes its next one soon after a result;
/// watching costs the thread's core until then.
const LINGER: Duration = Duration::from_micros(100);

/// A thread's stack, in the module's memory (which never shrinks): the codecs keep their tables
/// on the heap.
const STACK_BYTES: usize = 1 << 20;

/// The threads' work and the JavaScript thread's, for one environment.
pub(crate) struct Workers {
  /// The environment that made them (an identity, never used as a pointer).
  env: usize,
  queue: Mutex<Queue>,
  /// Wakes a parked thread.
  ready: Condvar,
  /// Work done, to settle on the JavaScript thread. A thread holds it to push one item, into
  /// room left from the last settle (see `spare`): nothing is allocated under it in a steady
  /// run, since the JavaScript thread spins while a thread holds it (an allocation there waits
  /// for the module's allocator, which other threads hold while they fill large buffers: the
  /// JavaScript thread spun for up to 260 ms in a hostile review's run before).
  finished: Mutex<Vec<Box<dyn Item>>>,
  /// The JavaScript thread's own: the list `settle` emptied, kept with its room for the next
  /// swap with `finished`.
  spare: Mutex<Vec<Box<dyn Item>>>,
  /// Taken by a thread to call `wake`, and by the finalizer to mark it gone: no thread calls a
  /// finalized thread-safe function. The JavaScript thread takes it only at that teardown.
  gate: Mutex<()>,
  /// Wakes the JavaScript thread to settle `finished`. Set once, right after it is made.
  wake: AtomicPtr<sys::napi_threadsafe_function__>,
  /// Set when the thread-safe function is finalized (the environment is torn down).
  closed: AtomicBool,
  /// Work queued and not yet settled: while there is any, `wake` keeps the process alive.
  in_flight: AtomicUsize,
  /// How many items the queue holds, for lingering threads to watch without the lock.
  queued: AtomicUsize,
}

#[derive(Default)]
struct Queue {
  items: VecDeque<Box<dyn Item>>,
  threads: usize,
  /// Threads waiting for work, and how many of them were signalled to wake.
  parked: usize,
  signalled: usize,
  /// Threads watching `Workers::queued` for work before they park (see `LINGER`).
  lingering: usize,
}

thread_local! {
  /// The workers of this JavaScript thread, one per environment.
  static WORKERS: RefCell<Vec<Arc<Workers>>> = const { RefCell::new(Vec::new()) };
}

impl Workers {
  /// The workers of `env`'s JavaScript thread, made on first use with one thread running; `None`
  /// if no thread or no thread-safe function could be made (work then goes to emnapi's
  /// threadpool).
  pub(crate) fn of(env: &Env) -> Option<Arc<Self>> {
    let key = env.raw() as usize;
    if let Some(workers) = Self::made(env) {
      return (!workers.closed.load(Ordering::Acquire)).then_some(workers);
    }
    let workers = Arc::new(Self {
      env: key,
      queue: Mutex::new(Queue::default()),
      ready: Condvar::new(),
      finished: Mutex::new(Vec::new()),
      spare: Mutex::new(Vec::new()),
      gate: Mutex::new(()),
      wake: AtomicPtr::new(ptr::null_mut()),
      closed: AtomicBool::new(false),
      in_flight: AtomicUsize::new(0),
      queued: AtomicUsize::new(0),
    });
    // Remembered first, closed until it works out: making the thread-safe function can run
    // JavaScript (an `async_hooks` init hook) that calls in, and such calls take emnapi's way.
    workers.closed.store(true, Ordering::Release);
    WORKERS.with(|all| {
      let mut all = all.borrow_mut();
      all.retain(|workers| workers.env != key);
      all.push(workers.clone());
    });
    let wake = threadsafe::<Self, 0>(env, "zstd-pool:workers", &workers)?;
    workers.wake.store(wake, Ordering::Release);
    if !workers.start_thread() {
      return None;
    }
    spin(&workers.queue).threads = 1;
    workers.closed.store(false, Ordering::Release);
    Some(workers)
  }

  /// The workers already made for `env`'s JavaScript thread.
  fn made(env: &Env) -> Option<Arc<Self>> {
    let key = env.raw() as usize;
    WORKERS.with(|all| all.borrow().iter().find(|workers| workers.env == key).cloned())
  }

  /// Queues `item`, on the JavaScript thread of `env`: a parked thread is woken for it, or
  /// another started, up to `max_threads()`.
  pub(crate) fn push(self: &Arc<Self>, env: &Env, item: Box<dyn Item>) {
    if self.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
      self.hold(env, true);
    }
    let (signal, start) = {
      let mut queue = spin(&self.queue);
      queue.items.push_back(item);
      self.queued.store(queue.items.len(), Ordering::Release);
      if queue.items.len() <= queue.lingering + queue.signalled {
        // Threads on their way take it (lingering ones need no wake): a burst still wakes or
        // starts one thread per item, up to `max_threads()`.
        (false, false)
      } else if queue.parked > queue.signalled {
        queue.signalled += 1;
        (true, false)
      } else if queue.threads < max_threads() {
        queue.threads += 1;
        (false, true)
      } else {
        (false, false)
      }
    };
    if signal {
      self.ready.notify_one();
    }
    // A thread that cannot start leaves the work to those that run.
    if start && !self.start_thread() {
      spin(&self.queue).threads -= 1;
    }
  }

  fn start_thread(self: &Arc<Self>) -> bool {
    let workers = self.clone();
    let thread = std::thread::Builder::new().name("zstd-pool-worker".into()).stack_size(STACK_BYTES);
    thread.spawn(move || workers.run()).is_ok()
  }

  /// A thread's life: runs queued work; once there is none, lingers, then parks.
  fn run(&self) {
    let mut queue = lock(&self.queue);
    loop {
      if let Some(mut item) = queue.items.pop_front() {
        self.queued.store(queue.items.len(), Ordering::Release);
        drop(queue);
        item.execute();
        let first = {
          let mut finished = lock(&self.finished);
          finished.push(item);
          finished.len() == 1
        };
        // One wake for what finishes until the JavaScript thread settles: it takes everything.
        if first {
          self.wake_js();
        }
        queue = lock(&self.queue);
        if queue.items.is_empty() {
          queue.lingering += 1;
          drop(queue);
          self.linger();
          queue = lock(&self.queue);
          queue.lingering -= 1;
        }
        continue;
      }
      queue.parked += 1;
      queue = self.ready.wait(queue).unwrap_or_else(|poisoned| poisoned.into_inner());
      queue.parked -= 1;
      // A spurious wake may take a signal meant for another thread: that one then finds the
      // work already taken, or a later push signals it.
      queue.signalled = queue.signalled.saturating_sub(1);
    }
  }

  /// Watches for work for up to `LINGER`, awake: the caller of a call just settled often makes
  /// the next one within that, and finds a thread that needs no wake.
  fn linger(&self) {
    let until = Instant::now() + LINGER;
    while self.queued.load(Ordering::Acquire) == 0 && Instant::now() < until {
      std::hint::spin_loop();
    }
  }

  /// Settles the work done, on the JavaScript thread of `env`.
  fn settle(&self, env: &Env) {
    let mut done = std::mem::take(&mut *spin(&self.spare));
    std::mem::swap(&mut *spin(&self.finished), &mut done);
    let count = done.len();
    // Settling can run JavaScript (a resolved value's `then` getter) that queues more work:
    // nothing here is locked meanwhile.
    for item in done.drain(..) {
      item.complete(env);
    }
    *spin(&self.spare) = done;
    if count > 0 && self.in_flight.fetch_sub(count, Ordering::Relaxed) == count {
      self.hold(env, false);
    }
  }

  /// Wakes the JavaScript thread, from a thread: through the signal words while it waits on
  /// them (`lib/workers.js`), else through `wake`.
  fn wake_js(&self) {
    if !super::staging::signal() {
      self.call_wake();
    }
  }

  /// Settles the work done for `env`'s JavaScript thread, woken through the signal words: whether
  /// work is still in flight (for it to wait on them again).
  pub(crate) fn settle_signalled(env: &Env) -> bool {
    let Some(workers) = Self::made(env) else { return false };
    workers.settle(env);
    workers.in_flight.load(Ordering::Relaxed) > 0
  }

  /// Wakes the JavaScript thread through `wake`, from a thread.
  fn call_wake(&self) {
    let _gate = lock(&self.gate);
    call_threadsafe(self.wake.load(Ordering::Acquire), &self.closed);
  }

  /// Makes `wake` keep the process alive (`keep`), or no longer, on the JavaScript thread.
  fn hold(&self, env: &Env, keep: bool) {
    hold_threadsafe(env, self.wake.load(Ordering::Acquire), &self.closed, keep);
  }
}

impl Reached for Workers {
  /// Settles the work done.
  fn reached(&self, env: &Env, _which: u8) {
    self.settle(env);
  }

  /// The environment is torn down: work done or still queued has no one left to tell, and is
  /// let go (the threads stay parked until the process ends).
  fn finalized(workers: Arc<Self>) {
    {
      let _gate = spin(&workers.gate);
      workers.closed.store(true, Ordering::Release);
    }
    let finished = std::mem::take(&mut *spin(&workers.finished));
    let queued = std::mem::take(&mut spin(&workers.queue).items);
    drop((finished, queued));
  }
}

/// Takes `mutex` on a thread that may block.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes `mutex` on the JavaScript thread, which must not block: a thread holds it for a few
/// instructions at a time.
fn spin<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  loop {
    match mutex.try_lock() {
      Ok(guard) => return guard,
      Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
      Err(TryLockError::WouldBlock) => std::hint::spin_loop(),
    }
  }
}
