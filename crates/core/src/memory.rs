//! Allocations that fail with a coded [`Failure`] instead of aborting the process; the pool of
//! scratch buffers that results are made in before they are copied into JavaScript's memory; and
//! the pool of chunks, the memory packed batches hand to JavaScript and get back when collected.

use once_cell::sync::Lazy;

use crate::error::Failure;
use crate::pool::{default_max_idle, Context, ContextPool, Lease, DEFAULT_MAX_IDLE_BYTES};
use crate::sweep;

/// A vector with room for exactly `len` bytes, or a coded failure instead of an abort.
pub fn try_vec(len: usize) -> Result<Vec<u8>, Failure> {
  let mut bytes = Vec::new();
  bytes.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  Ok(bytes)
}

/// A copy of an input, for work that runs after the call returns.
pub fn owned(input: &[u8]) -> Result<Vec<u8>, Failure> {
  let mut copy = try_vec(input.len())?;
  copy.extend_from_slice(input);
  Ok(copy)
}

/// A scratch buffer is pooled as a context is: cleared between uses, measured by its capacity.
impl Context for Vec<u8> {
  fn create() -> Option<Self> {
    Some(Vec::new())
  }
  fn reset(&mut self) -> bool {
    self.clear();
    true
  }
  fn bytes(&self) -> usize {
    self.capacity()
  }
  /// The allocator takes a large one back by itself when it is freed, and giving the rest of
  /// the heap back would only have the next results fault their pages in again.
  const TRIMS: bool = false;
  /// Memory has no state to be unsure of: one dropped with its call (failed, or cancelled before
  /// it ran) goes back to the pool, and is cleared before its next use.
  const SAFE_AFTER_FAILURE: bool = true;
}

/// Scratch buffers for results whose final size is known only once made (a frame is at most
/// `compress_bound` of its input, usually far less): made here, then copied into a Buffer of
/// their exact size. A fresh buffer per call costs more than the copy: its pages come new from
/// the kernel (page faults, zeroing) and cold to the cache; a pooled one is warm. Bounded as the
/// context pools are (`configurePool` sets both), and freed when idle.
pub static SCRATCH: Lazy<ContextPool<Vec<u8>>> = Lazy::new(|| {
  sweep::register(&SCRATCH);
  ContextPool::new(default_max_idle(), DEFAULT_MAX_IDLE_BYTES)
});

/// A scratch buffer on loan: given back once its bytes are copied out, freed if dropped.
pub type Scratch = Lease<Vec<u8>, &'static ContextPool<Vec<u8>>>;

/// A scratch buffer with room for at least `len` bytes, empty.
pub fn scratch(len: usize) -> Result<Scratch, Failure> {
  let mut lease = SCRATCH.take()?;
  if lease.capacity() < len {
    // Freed rather than grown: growing would copy its old bytes, which no one needs.
    *lease = Vec::new();
  }
  lease.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  lease.measure();
  Ok(lease)
}

/// The memory of packed batches' results (`crate::packed`), handed to JavaScript without a copy
/// and taken back when JavaScript collects it (the addon gives its Buffers a finalizer that gives
/// the chunk back here). Fresh memory for every group had the threads that fill it fault in its
/// pages, group after group. Bounded and freed when idle as the other pools are, with
/// [`CHUNK_BOUNDS_SCALE`] times their bounds (`configurePool` scales its own the same way).
pub static CHUNKS: Lazy<ContextPool<Vec<u8>>> = Lazy::new(|| {
  sweep::register(&CHUNKS);
  ContextPool::new(default_max_idle() * CHUNK_BOUNDS_SCALE, DEFAULT_MAX_IDLE_BYTES * CHUNK_BOUNDS_SCALE)
});

/// How many times the other pools' bounds the chunk pool's are. Chunks come back in bursts, a
/// garbage collection's worth of batches at once, and a batch of 10,000 results of 1 KiB alone
/// fills four chunks and 10 MB. In a loop of such batches (docs/performance.md), the other pools'
/// bounds kept a fifth of the chunks, and the threads filling the rest faulted in their pages;
/// four times them kept nine in ten and saved about 15% of the threads' time.
pub const CHUNK_BOUNDS_SCALE: usize = 4;

/// A chunk on loan: dropped or given back, it returns to [`CHUNKS`] (cleared before its next use).
pub type Chunk = Lease<Vec<u8>, &'static ContextPool<Vec<u8>>>;

/// A chunk, empty, with whatever room its last use left it: for results expected to take about
/// `expected` bytes, room for them and at most twice as much (else a new chunk); with nothing
/// expected, the most room there is (see [`ContextPool::take_fitting`]).
pub fn chunk(expected: Option<usize>) -> Result<Chunk, Failure> {
  match expected {
    Some(bytes) => CHUNKS.take_fitting(bytes),
    None => CHUNKS.take_largest(),
  }
}
