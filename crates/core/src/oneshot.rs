//! One-shot calls, as the addon's exports make them: the settings of a call (its parameters and
//! dictionary, or its limits), how long it should take (what decides whether it runs on the
//! calling thread), and its work with a pooled context, into any output buffer.

use std::sync::Arc;

use zstd::zstd_safe::{self, CCtx, DCtx, WriteBuf};

use crate::compress::{self, CompressParams, Reference};
use crate::decompress::{self, DecodeWith, Limits, OutputPlan, Planned, Walked};
use crate::dict::Prepared;
use crate::dict_set::DictionarySet;
use crate::error::Failure;
use crate::memory::{scratch, try_vec, Scratch};
use crate::mt;
use crate::pool::{Held, COMPRESSORS, DECOMPRESSORS};
use crate::schedule;

/// A compression call's settings.
pub struct CompressCall {
  pub params: CompressParams,
  pub dictionary: Option<Arc<Prepared>>,
}

impl CompressCall {
  /// The settings of a call (as [`CompressParams::from_settings`] reads them); `dictionary` is
  /// asked for once they have been read (a call that fails on both reports the settings).
  pub fn new(settings: &[i32], dictionary: impl FnOnce() -> Result<Option<Arc<Prepared>>, Failure>) -> Result<Self, Failure> {
    let params = CompressParams::from_settings(settings)?;
    let params = CompressParams { workers: mt::effective_workers(params.workers), ..params };
    Ok(Self { params, dictionary: dictionary()? })
  }

  /// Worker threads pay only for inputs of several libzstd jobs; smaller ones compress on the
  /// calling thread, with a pooled context.
  fn multithreaded(&self, len: usize) -> bool {
    self.params.workers > 0 && mt::pays(&self.params, len)
  }

  /// How long compressing `len` bytes (against a prefix of `prefix_len`) should take here, in µs:
  /// infinite for work that should never run on the JavaScript thread of an async call.
  pub fn estimated_micros(&self, len: usize, prefix_len: usize) -> f64 {
    schedule::paced(schedule::Work::Compress, self.model_micros(len, prefix_len))
  }

  /// [`estimated_micros`](Self::estimated_micros) by the cost model's own figures.
  pub fn model_micros(&self, len: usize, prefix_len: usize) -> f64 {
    let tuned_strategy = self.params.tuning.get(compress::param::STRATEGY).filter(|&strategy| strategy > 0);
    let bytes_per_micro = match (tuned_strategy, self.params.level) {
      // fast and dfast, as levels 1 to 3 use.
      (Some(1..=2), _) | (None, ..=3) => schedule::COMPRESS_BYTES_PER_MICRO[0],
      // greedy and lazy (levels 4 to 6).
      (Some(3..=4), _) | (None, 4..=6) => schedule::COMPRESS_BYTES_PER_MICRO[1],
      // lazy2 and btlazy2 (levels 7 to 9 and on).
      (Some(5..=6), _) | (None, 7..=9) => schedule::COMPRESS_BYTES_PER_MICRO[2],
      _ => return f64::INFINITY,
    };
    // Long-distance matching adds a pass over the input.
    let passes = if self.params.tuning.get(compress::param::ENABLE_LDM) == Some(1) { 2.0 } else { 1.0 };
    if self.multithreaded(len) {
      return f64::INFINITY;
    }
    // libzstd sizes its tables down to a small input, but not the long-distance matcher's when
    // `ldmHashLog` is set.
    let ldm_table = self
      .params
      .tuning
      .get(compress::param::LDM_HASH_LOG)
      .map_or(0.0, |log| (8u64 << log) as f64 / schedule::LDM_TABLE_BYTES_PER_MICRO);
    // A prefix is indexed as the input is, and so is a dictionary not yet digested for the level
    // (or loaded by each call, when the tuning chooses the match finder): 28 ms for 1 MiB at
    // level 9, 0.8 ms at level 1 (Node 26, the 2-core VM, 2026-12-02).
    let dictionary_len = match &self.dictionary {
      Some(dictionary) if self.params.tuning.sets_match_finder() || !dictionary.has_cdict(self.params.level) => {
        dictionary.bytes().len()
      }
      _ => 0,
    };
    let indexed = len + prefix_len + dictionary_len;
    schedule::COMPRESS_FIXED_MICROS + ldm_table + passes * indexed as f64 / bytes_per_micro
  }

  /// Compresses `input` into `output`, which has room for `compress_bound(input.len())` bytes,
  /// and returns the frame's length. The context comes from a pool (or, with workers, from the
  /// cache of multi-threaded contexts) and goes back only if the call succeeded.
  pub fn compress_into<C: WriteBuf + ?Sized>(
    &self,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
  ) -> Result<usize, Failure> {
    Held::once(&COMPRESSORS, |held| self.compress_held(held, input, prefix, output))
  }

  /// [`compress_into`](Self::compress_into) with a context held for a run of calls (a batch's).
  pub fn compress_held<C: WriteBuf + ?Sized>(
    &self,
    held: &mut Held<'_, CCtx<'static>>,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
  ) -> Result<usize, Failure> {
    let mut params = self.params;
    // An empty prefix is none: it would only size the window for the input alone.
    let prefix = prefix.filter(|prefix| !prefix.is_empty());
    if let Some(prefix) = prefix {
      params.tuning = compress::tuning_for_prefix(params.level, params.tuning, prefix.len(), input.len());
    }
    // Declared before the context, so that a context that fails is freed before its dictionary.
    let digested = match &self.dictionary {
      Some(dictionary) if !params.tuning.sets_match_finder() => Some(dictionary.cdict(params.level)?),
      _ => None,
    };
    // `main.js` never passes both a prefix and a dictionary (libzstd would keep only the last).
    let reference = match (prefix, &self.dictionary, &digested) {
      (Some(prefix), _, _) => Some(Reference::Prefix(prefix)),
      (None, _, Some(cdict)) => Some(Reference::Digested(cdict)),
      (None, Some(dictionary), None) => Some(Reference::Loaded(dictionary.bytes())),
      (None, None, _) => None,
    };
    if self.multithreaded(input.len()) {
      let mut cctx = mt::CACHE.take(mt::Key { level: params.level, workers: params.workers })?;
      let written = compress::compress_with(&mut cctx, input, params, reference, output)?;
      cctx.give_back();
      return Ok(written);
    }
    let params = CompressParams { workers: 0, ..params };
    held.run(|cctx| compress::compress_with(cctx, input, params, reference, output))
  }

  /// Compresses into a pooled scratch buffer, for a frame that is copied out at once.
  pub fn compress_to_scratch(&self, input: &[u8], prefix: Option<&[u8]>) -> Result<Scratch, Failure> {
    let mut output = scratch(zstd_safe::compress_bound(input.len()))?;
    self.compress_into(input, prefix, &mut *output)?;
    Ok(output)
  }
}

/// A decompression call's settings.
pub struct DecompressCall {
  pub limits: Limits,
  pub dictionary: Option<Arc<Prepared>>,
  /// Dictionaries each frame chooses from by its ID (`main.js` never gives both this and
  /// `dictionary` or a prefix).
  pub set: Option<Arc<DictionarySet>>,
}

impl DecompressCall {
  /// A prefix (patch-from) raises the window limit to what compressing against it gives.
  pub fn new(
    max_output_length: f64,
    window_log_max: u32,
    dictionary: impl FnOnce() -> Result<Option<Arc<Prepared>>, Failure>,
    prefix: Option<&[u8]>,
  ) -> Result<Self, Failure> {
    let window_log_max = match prefix {
      Some(prefix) => decompress::window_log_max_for_prefix(window_log_max, prefix.len()),
      None => window_log_max,
    };
    // `main.js` checked the limit against `buffer.constants.MAX_LENGTH`; `as` saturates.
    let limits = Limits { max_output_length: max_output_length as usize, window_log_max };
    Ok(Self { limits, dictionary: dictionary()?, set: None })
  }

  /// This call, its frames choosing their dictionaries from `set`.
  pub fn with_set(self, set: Option<Arc<DictionarySet>>) -> Self {
    Self { set, ..self }
  }

  /// How to size the output of decoding `input` (see [`decompress::plan_output`]).
  pub fn plan(&self, input: &[u8]) -> Result<OutputPlan, Failure> {
    match &self.set {
      Some(set) => decompress::plan_output_with_set(input, self.limits, set),
      None => decompress::plan_output(input, self.limits, self.dictionary.as_deref()),
    }
  }

  /// [`plan`](Self::plan) with the frame walk stopping once it has spent `budget`
  /// ([`decompress::walk_budget`]): `None` if it did (see [`decompress::plan_output_within`]).
  pub fn plan_within(&self, input: &[u8], budget: usize) -> Result<Option<Planned>, Failure> {
    match &self.set {
      Some(set) => decompress::plan_output_with_set_within(input, self.limits, set, budget),
      None => decompress::plan_output_within(input, self.limits, self.dictionary.as_deref(), budget),
    }
  }

  /// What frames decode against: the prefix, the set, or the dictionary (`main.js` never gives
  /// two of them).
  fn reference<'a>(&'a self, prefix: Option<&'a [u8]>) -> Option<DecodeWith<'a>> {
    match (prefix, &self.set) {
      (Some(prefix), _) => Some(DecodeWith::Prefix(prefix)),
      (None, Some(set)) => Some(DecodeWith::Set(set)),
      (None, None) => self.dictionary.as_deref().map(|dictionary| DecodeWith::Dictionary(dictionary.ddict())),
    }
  }

  /// Decodes frames that declare `len` bytes in all into `output`, which has room for them.
  pub fn decode_exact<C: WriteBuf + ?Sized>(
    &self,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
    len: usize,
  ) -> Result<(), Failure> {
    Held::once(&DECOMPRESSORS, |held| self.decode_exact_held(held, input, prefix, output, len))
  }

  /// [`decode_exact`](Self::decode_exact) with a context held for a run of calls (a batch's). The
  /// dictionary (or prefix) outlives the context's use of it: the context is reset before its next
  /// call, and given back (reset) or freed before the call's settings are.
  pub fn decode_exact_held<C: WriteBuf + ?Sized>(
    &self,
    held: &mut Held<'_, DCtx<'static>>,
    input: &[u8],
    prefix: Option<&[u8]>,
    output: &mut C,
    len: usize,
  ) -> Result<(), Failure> {
    held.run(|dctx| {
      decompress::decompress_exact(dctx, input, output, len, self.reference(prefix))
        .map_err(|failure| failure.against_prefix(prefix))
    })
  }

  /// Decodes into native memory: frames of unknown size grow their buffer as they go, declared
  /// sizes are allocated fallibly.
  pub fn decode_to_vec(&self, input: &[u8], prefix: Option<&[u8]>, plan: OutputPlan) -> Result<Vec<u8>, Failure> {
    Held::once(&DECOMPRESSORS, |held| self.decode_to_vec_held(held, input, prefix, plan))
  }

  /// [`decode_to_vec`](Self::decode_to_vec) with a context held for a run of calls.
  pub fn decode_to_vec_held(
    &self,
    held: &mut Held<'_, DCtx<'static>>,
    input: &[u8],
    prefix: Option<&[u8]>,
    plan: OutputPlan,
  ) -> Result<Vec<u8>, Failure> {
    match plan {
      OutputPlan::Exact(len) => {
        let mut output = try_vec(len)?;
        self.decode_exact_held(held, input, prefix, &mut output, len)?;
        Ok(output)
      }
      OutputPlan::Growable(initial) => held.run(|dctx| {
        decompress::decompress_growable(dctx, input, initial, self.limits, self.reference(prefix))
          .map_err(|failure| failure.against_prefix(prefix))
      }),
    }
  }
}

/// How long decompressing `input_len` bytes as `planned` should take, in µs, by the cost model's
/// own figures (scaled to this machine by `schedule::paced` with `Work::Decompress`). Output of
/// unknown size is never guessed at. Decoding reads every input byte as well as writing every
/// output byte, and pays for each frame and block, and for the tables a compressed block may
/// bring: a frame that declares little but holds many blocks (empty ones, or tiny ones each with
/// tables of their own), or many tiny frames, cost by those.
pub fn model_micros(planned: &Planned, input_len: usize) -> f64 {
  match planned.plan {
    OutputPlan::Exact(len) => {
      let new_context = if DECOMPRESSORS.keeps_none() { schedule::DECOMPRESS_NEW_CONTEXT_MICROS } else { 0.0 };
      let Walked { frames, blocks, compressed } = planned.walked;
      // The fixed cost covers one frame and one compressed block's tables.
      let headers = frames.saturating_sub(1) as f64 * schedule::DECOMPRESS_FRAME_MICROS
        + blocks as f64 * schedule::DECOMPRESS_BLOCK_MICROS
        + compressed.saturating_sub(1) as f64 * schedule::DECOMPRESS_TABLES_MICROS;
      schedule::DECOMPRESS_FIXED_MICROS + new_context + headers + len.max(input_len) as f64 / schedule::DECOMPRESS_BYTES_PER_MICRO
    }
    OutputPlan::Growable(_) => f64::INFINITY,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_decompression_costs_by_its_input_frames_and_blocks_where_they_outweigh_its_output() {
    let planned =
      |len, frames, blocks, compressed| Planned { plan: OutputPlan::Exact(len), walked: Walked { frames, blocks, compressed } };
    let typical = model_micros(&planned(1024, 1, 1, 1), 400);
    assert_eq!(typical, model_micros(&planned(1024, 1, 1, 1), 0));
    assert!(typical < 5.0, "{typical}");
    // A million empty blocks (3 MB) declaring 12 bytes: milliseconds, not a few µs.
    assert!(model_micros(&planned(12, 1, 1_000_001, 0), 3_000_000) >= 20_000.0);
    // 3,000 frames of a few bytes each (a sync call took about 1 ms).
    assert!(model_micros(&planned(60_000, 3000, 3000, 0), 88_000) >= 1000.0);
    // 100 compressed blocks of 22 bytes, each with tables of its own (0.63 ms on the spot).
    assert!(model_micros(&planned(700, 1, 100, 100), 2200) >= 500.0);
    let unknown = Planned { plan: OutputPlan::Growable(1 << 16), walked: Walked::default() };
    assert_eq!(model_micros(&unknown, 10), f64::INFINITY);
  }
}
