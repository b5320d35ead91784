//! Stream sessions: a compression or decompression that lasts a whole stream, owning a pooled
//! context from its first chunk to its end, each chunk (a step) worked on the libuv threadpool.
//! The addon's `CompressSession`/`DecompressSession` wrap them, and the Node and Web stream
//! classes of `stream.js` sit on top; the sessions are not public.
//!
//! A session takes one step at a time, in order: a step given while another is still running is
//! refused (`ERR_INVALID_STATE`), so that chunks can never interleave into a corrupt frame.
//!
//! `append` copies a chunk into the session's staged input, on the JavaScript thread, so the
//! caller may reuse the chunk at once and chunks can be appended while a step runs. `push` moves
//! the staged input into the next step before anything that can run JavaScript (queueing creates
//! a Promise; see the addon's `napi/work.rs`), and the step runs on a libuv thread with the session's lock held,
//! touching no JavaScript value. One step takes every chunk appended since the last: a stream
//! pays one threadpool round trip per batch of chunks, not per chunk.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use zstd::zstd_safe::{self, zstd_sys::ZSTD_EndDirective, CCtx, CDict, DCtx, DParameter, InBuffer, OutBuffer};

use crate::compress::{self, CompressParams, Reference};
use crate::decompress::{FrameCheck, Limits};
use crate::dict::Prepared;
use crate::dict_set::{self, DictionarySet};
use crate::error::Failure;
use crate::memory::try_vec;
use crate::pool::{ContextPool, Lease, COMPRESSORS, DECOMPRESSORS};

type CompressorLease = Lease<CCtx<'static>, &'static ContextPool<CCtx<'static>>>;
type DecompressorLease = Lease<DCtx<'static>, &'static ContextPool<DCtx<'static>>>;

/// Most output one decompression step produces: a chunk that expands a lot (a bomb, or just
/// very compressible data) comes out in several steps, each after the reader asked for more.
pub const MAX_STEP_OUTPUT: usize = 1 << 20;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
  mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A session's state, whether its stream was destroyed (then its context is freed as soon as no
/// step is using it: at once, or when the running step ends), and whether a step is under way.
pub struct Session<S> {
  state: Mutex<S>,
  closed: AtomicBool,
  stepping: AtomicBool,
  /// Input appended on the JavaScript thread, copied, for the next step to take whole: the
  /// caller may reuse its chunk as soon as `append` returns, and one step takes many chunks.
  staged: Mutex<Vec<u8>>,
}

/// What a session state gives up when its stream is destroyed.
pub trait Closable {
  fn free_context(&mut self);
}

impl<S: Closable> Session<S> {
  pub fn new(state: S) -> Arc<Self> {
    Arc::new(Self {
      state: Mutex::new(state),
      closed: AtomicBool::new(false),
      stepping: AtomicBool::new(false),
      staged: Mutex::new(Vec::new()),
    })
  }

  /// Copies `chunk` into the input of the next step; the bytes staged in all.
  pub fn append(&self, chunk: &[u8]) -> Result<usize, Failure> {
    let mut staged = lock(&self.staged);
    let needed = staged.len().checked_add(chunk.len()).ok_or(Failure::OutOfMemory { bytes: usize::MAX })?;
    if staged.capacity() < needed {
      // Grows as a Vec does (amortized), falling back to exactly what is needed.
      let (doubled, len) = (staged.capacity().saturating_mul(2).max(needed), staged.len());
      if staged.try_reserve_exact(doubled - len).is_err() {
        staged.try_reserve_exact(chunk.len()).map_err(|_| Failure::OutOfMemory { bytes: needed })?;
      }
    }
    staged.extend_from_slice(chunk);
    Ok(staged.len())
  }

  /// Everything appended since the last step.
  pub fn take_staged(&self) -> Vec<u8> {
    std::mem::take(&mut *lock(&self.staged))
  }

  /// Starts a step, or refuses it while the previous one is under way.
  pub fn begin_step(self: &Arc<Self>) -> Result<StepGuard<S>, Failure> {
    if self.stepping.swap(true, Ordering::AcqRel) {
      return Err(Failure::StepInProgress);
    }
    Ok(StepGuard(self.clone()))
  }

  pub fn close(&self) {
    self.closed.store(true, Ordering::Relaxed);
    drop(self.take_staged());
    self.free_if_closed();
  }

  /// Runs a step on the state, then frees the context if the stream was destroyed meanwhile:
  /// also when the step panics (`guarded` catches it further up), its lock then poisoned.
  fn with<T>(&self, step: impl FnOnce(&mut S) -> T) -> T {
    struct LetGo<'a, S: Closable>(&'a Session<S>);
    impl<S: Closable> Drop for LetGo<'_, S> {
      fn drop(&mut self) {
        self.0.free_if_closed();
      }
    }
    // Dropped after the lock, which the statement below takes and lets go (a tail expression's
    // lock would outlive it).
    let _let_go = LetGo(self);
    #[allow(clippy::let_and_return)]
    let result = step(&mut lock(&self.state));
    result
  }

  pub fn read<T>(&self, look: impl FnOnce(&S) -> T) -> T {
    let result = look(&lock(&self.state));
    self.free_if_closed();
    result
  }

  /// Frees the context if the stream was destroyed, unless another thread holds the state: that
  /// thread then does, since every holder calls this once it has let go. `close` cannot wait for
  /// the lock (a step holds it for the whole of its work, and the JavaScript thread must not
  /// block). A close and a holder letting go at the same moment could each miss the other (a
  /// step read the mark before the close, and let go after the close's `try_lock` failed: the
  /// context then stayed out until the stream was collected, the likely cause of a context an
  /// HTTP test once found still in use); the fences between marking the session closed and trying
  /// the lock, and between letting go and reading the mark, make at least one of the two see the
  /// other.
  fn free_if_closed(&self) {
    fence(Ordering::SeqCst);
    if self.closed.load(Ordering::Relaxed) {
      match self.state.try_lock() {
        Ok(mut state) => state.free_context(),
        // A step that panicked let go of it: it is free.
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().free_context(),
        Err(TryLockError::WouldBlock) => {}
      }
    }
  }
}

/// A step under way: the session takes the next when this drops, with the step's work (on the
/// JavaScript thread, when the step completes, before its Promise's reactions run).
pub struct StepGuard<S>(Arc<Session<S>>);

impl<S: Closable> StepGuard<S> {
  /// Runs the step's work on the session's state (see [`Session::with`]).
  pub fn run<T>(&self, step: impl FnOnce(&mut S) -> T) -> T {
    self.0.with(step)
  }
}

impl<S> Drop for StepGuard<S> {
  fn drop(&mut self) {
    self.0.stepping.store(false, Ordering::Release);
  }
}

impl Closable for CompressState {
  fn free_context(&mut self) {
    self.context = None;
  }
}

impl Closable for DecompressState {
  fn free_context(&mut self) {
    self.context = None;
  }
}

/// What a compression step does after taking its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
  /// Nothing more: output comes as libzstd has it.
  No,
  /// Emit everything so far as decodable data (`stream.flush()`).
  Block,
  /// End the frame: the stream is done.
  Frame,
}

pub struct CompressState {
  context: Option<CompressorLease>,
  /// Kept alive for as long as the context refers to them (fields drop in order: the context
  /// first). The digested form is held here, not only by the dictionary's cache, which may
  /// drop it while the stream is open when calls use other levels.
  _digested: Option<Arc<CDict<'static>>>,
  _dictionary: Option<Arc<Prepared>>,
}

impl CompressState {
  pub fn new(params: CompressParams, pledged_size: Option<u64>, dictionary: Option<Arc<Prepared>>) -> Result<Self, Failure> {
    // Match-finder parameters need the dictionary digested with them (see `Tuning`).
    let digested = match &dictionary {
      Some(dictionary) if !params.tuning.sets_match_finder() => Some(dictionary.cdict(params.level)?),
      _ => None,
    };
    let reference = match (&dictionary, &digested) {
      (_, Some(cdict)) => Some(Reference::Digested(cdict)),
      (Some(dictionary), None) => Some(Reference::Loaded(dictionary.bytes())),
      (None, None) => None,
    };
    let mut cctx = COMPRESSORS.take()?;
    compress::configure_with(&mut cctx, params, reference)?;
    if let Some(size) = pledged_size {
      cctx.set_pledged_src_size(Some(size)).map_err(Failure::Zstd)?;
    }
    Ok(Self { context: Some(cctx), _digested: digested, _dictionary: dictionary })
  }
}

impl CompressState {
  /// Compresses `chunk`, then flushes as `flush` says; the output so far. A failure frees the
  /// context (never given back); the end of the frame gives it back.
  pub fn feed(&mut self, chunk: &[u8], flush: Flush) -> Result<Vec<u8>, Failure> {
    let result = compress_step(self, chunk, flush);
    match &result {
      Err(_) => self.context = None,
      Ok(_) if flush == Flush::Frame => {
        if let Some(cctx) = self.context.take() {
          cctx.give_back();
        }
      }
      Ok(_) => {
        if let Some(cctx) = self.context.as_mut() {
          cctx.measure();
        }
      }
    }
    result
  }
}

fn compress_step(state: &mut CompressState, chunk: &[u8], flush: Flush) -> Result<Vec<u8>, Failure> {
  let Some(cctx) = state.context.as_mut() else {
    return Err(Failure::StreamEnded);
  };
  let directive = match flush {
    Flush::No => ZSTD_EndDirective::ZSTD_e_continue,
    Flush::Block => ZSTD_EndDirective::ZSTD_e_flush,
    Flush::Frame => ZSTD_EndDirective::ZSTD_e_end,
  };
  let mut input = InBuffer::around(chunk);
  // Room for all the step's output at once, as a rule: what the input can compress to, and a
  // block for what a flush or the end of the frame adds.
  let mut output = try_vec(zstd_safe::compress_bound(chunk.len()).saturating_add(CCtx::out_size()))?;
  let result = loop {
    if output.capacity() - output.len() < CCtx::out_size() {
      output.reserve(CCtx::out_size());
    }
    let position = output.len();
    match cctx.compress_stream2(&mut OutBuffer::around_pos(&mut output, position), &mut input, directive) {
      Err(code) => break Err(Failure::Zstd(code)),
      Ok(remaining) if input.pos() == input.src.len() && (flush == Flush::No || remaining == 0) => break Ok(()),
      Ok(_) => {}
    }
  };
  result.map(|()| output)
}

pub struct DecompressState {
  context: Option<DecompressorLease>,
  _dictionary: Option<Arc<Prepared>>,
  /// Dictionaries each frame chooses from, as it starts (kept alive for the context, as the
  /// dictionary is).
  set: Option<Arc<DictionarySet>>,
  /// Input taken but not yet consumed (a step stops at `MAX_STEP_OUTPUT`).
  pending: Vec<u8>,
  consumed: usize,
  produced: u64,
  max_output_length: usize,
  /// libzstd's last hint: 0 when the input so far ends exactly at the end of a frame.
  frame_open: bool,
  /// The last step stopped on its output limit: there is more to take from the same input.
  pub more: bool,
  /// Whether any input came at all: an empty stream is no zstd data, as an empty buffer is not.
  saw_input: bool,
  /// Each frame must produce what it declares.
  frames: FrameCheck,
  /// The output reached `max_output_length` with more to come: the next step fails.
  over_limit: bool,
}

impl DecompressState {
  pub fn new(limits: Limits, dictionary: Option<Arc<Prepared>>) -> Result<Self, Failure> {
    Self::open(limits, dictionary, None)
  }

  /// A session whose frames each choose their dictionary from `set` by the ID they record.
  pub fn with_set(limits: Limits, set: Arc<DictionarySet>) -> Result<Self, Failure> {
    Self::open(limits, None, Some(set))
  }

  fn open(limits: Limits, dictionary: Option<Arc<Prepared>>, set: Option<Arc<DictionarySet>>) -> Result<Self, Failure> {
    let mut dctx = DECOMPRESSORS.take()?;
    dctx.set_parameter(DParameter::WindowLogMax(limits.window_log_max)).map_err(Failure::Zstd)?;
    if let Some(dictionary) = dictionary.as_deref() {
      crate::decompress::use_dictionary(&mut dctx, Some(dictionary.ddict()))?;
    }
    Ok(Self {
      context: Some(dctx),
      _dictionary: dictionary,
      set,
      pending: Vec::new(),
      consumed: 0,
      produced: 0,
      max_output_length: limits.max_output_length,
      frame_open: false,
      more: false,
      saw_input: false,
      frames: FrameCheck::default(),
      over_limit: false,
    })
  }
}

impl DecompressState {
  /// Decodes `chunk` after what is left of the previous ones, at most `MAX_STEP_OUTPUT` bytes:
  /// when `more` is then true, feed an empty chunk for the rest. `last` says the stream ends
  /// after this chunk. A failure frees the context; the end of the stream gives it back.
  pub fn feed(&mut self, chunk: &[u8], last: bool) -> Result<Vec<u8>, Failure> {
    self.feed_owned(chunk.to_vec(), last)
  }

  /// `feed`, taking the chunk without a copy when nothing of the previous ones is left.
  pub fn feed_owned(&mut self, chunk: Vec<u8>, last: bool) -> Result<Vec<u8>, Failure> {
    let result = step(self, chunk, last);
    if result.is_err() {
      self.context = None;
    } else if last && !self.more {
      if let Some(dctx) = self.context.take() {
        dctx.give_back();
      }
    } else if let Some(dctx) = self.context.as_mut() {
      dctx.measure();
    }
    result
  }
}

fn step(state: &mut DecompressState, chunk: Vec<u8>, last: bool) -> Result<Vec<u8>, Failure> {
  let Some(dctx) = state.context.as_mut() else {
    return Err(Failure::StreamEnded);
  };
  if state.over_limit {
    return Err(Failure::OutputTooLarge { limit: state.max_output_length, declared: None });
  }
  if state.consumed == state.pending.len() {
    state.pending = chunk;
    state.consumed = 0;
  } else if !chunk.is_empty() {
    // Keep only what is left of the input before adding to it.
    state.pending.drain(..state.consumed);
    state.consumed = 0;
    state.pending.try_reserve(chunk.len()).map_err(|_| Failure::OutOfMemory { bytes: state.pending.len() + chunk.len() })?;
    state.pending.extend_from_slice(&chunk);
  }
  state.saw_input |= !state.pending.is_empty();
  let mut input = InBuffer::around(&state.pending[state.consumed..]);
  // What may still come out under maxOutputLength, and one byte more to tell "over" from "at".
  let allowance = (state.max_output_length as u64).saturating_sub(state.produced);
  let room = usize::try_from(allowance.saturating_add(1)).map_or(MAX_STEP_OUTPUT, |room| room.min(MAX_STEP_OUTPUT));
  // Room for a whole step's output at once: pages the step does not write are never touched.
  let mut output = try_vec(room)?;
  state.more = false;
  loop {
    if output.len() >= room {
      state.more = true;
      break;
    }
    if let Some(set) = state.set.as_deref() {
      // Until a frame's header names its dictionary, libzstd is given none of the frame (it would
      // pick the dictionary once it has the whole header); what is held back waits in `pending`.
      if !state.frames.in_frame() && !dict_set::select_for_frame(dctx, set, &input.src[input.pos()..])? {
        break;
      }
    }
    let (input_before, output_before) = (input.pos(), output.len());
    let position = output.len();
    let hint = dctx
      .decompress_stream(&mut OutBuffer::around_pos(&mut output, position), &mut input)
      .map_err(crate::decompress::decode_error)?;
    state.frames.observe(&input.src[input_before..input.pos()], output.len() - output_before, hint)?;
    let progressed = input.pos() != input_before || output.len() != output_before;
    // A call that took and gave nothing (the input is used up) tells nothing about the frame.
    if progressed {
      state.frame_open = hint != 0;
    }
    if !progressed || (input.pos() == input.src.len() && output.len() < output.capacity()) {
      break;
    }
  }
  state.consumed += input.pos();
  if output.len() as u64 > allowance {
    // Everything up to the limit goes to the reader; the next step fails.
    output.truncate(allowance as usize);
    state.over_limit = true;
    state.more = true;
  }
  state.produced += output.len() as u64;
  if last && !state.more && (state.frame_open || state.consumed < state.pending.len() || !state.saw_input) {
    return Err(Failure::Truncated);
  }
  Ok(output)
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::sync::mpsc;

  struct Held(bool);

  impl Closable for Held {
    fn free_context(&mut self) {
      self.0 = false;
    }
  }

  #[test]
  fn a_close_while_another_thread_holds_the_state_frees_the_context_when_it_lets_go() {
    for hold in ["step", "read"] {
      let session = Session::new(Held(true));
      let (held, closed) = (mpsc::channel(), mpsc::channel::<()>());
      let holder = {
        let (session, held, closed) = (session.clone(), held.0, closed.1);
        std::thread::spawn(move || {
          let wait = || {
            held.send(()).expect("the test waits");
            closed.recv().expect("the test closes");
          };
          if hold == "step" {
            session.begin_step().expect("no step under way").run(|_| wait());
          } else {
            session.read(|_| wait());
          }
        })
      };
      held.1.recv().expect("the holder holds the state");
      // The state is held: close cannot free the context now.
      session.close();
      assert!(session.state.try_lock().is_err());
      closed.0.send(()).expect("the holder waits");
      holder.join().expect("the holder ends");
      assert!(!session.read(|state| state.0), "the context outlived a close while a {hold} held the state");
    }
  }

  #[test]
  fn a_step_that_panics_after_a_close_still_frees_the_context() {
    let session = Session::new(Held(true));
    let stepping = {
      let session = session.clone();
      std::thread::spawn(move || {
        let step = session.begin_step().expect("no step under way");
        // A close while the step holds the state, then the step panics.
        step.run(|_| {
          session.close();
          panic!("a step's bug");
        })
      })
    };
    assert!(stepping.join().is_err());
    match session.state.try_lock() {
      Err(TryLockError::Poisoned(poisoned)) => assert!(!poisoned.into_inner().0, "the context outlived the panic"),
      _ => panic!("the step's panic poisons the lock"),
    };
  }
}
