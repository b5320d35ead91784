//! The stream sessions behind `stream.js`: the core's session state machines, each step queued
//! on the libuv threadpool.

use std::sync::Arc;

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::compress::CompressParams;
use zstd_pool_core::decompress::Limits;
use zstd_pool_core::error::guarded;
use zstd_pool_core::stream::{self as core, CompressState, DecompressState, Session};

use crate::exports::dictionary::{prepared, PreparedDictionary};
use crate::exports::dictionary_set::PreparedDictionarySet;
use crate::napi::{queue, throw, Js, Task};

/// What a compression step does after taking its input.
#[napi]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flush {
  /// Nothing more: output comes as libzstd has it.
  No,
  /// Emit everything so far as decodable data (`stream.flush()`).
  Block,
  /// End the frame: the stream is done.
  Frame,
}

impl From<Flush> for core::Flush {
  fn from(flush: Flush) -> Self {
    match flush {
      Flush::No => core::Flush::No,
      Flush::Block => core::Flush::Block,
      Flush::Frame => core::Flush::Frame,
    }
  }
}

/// The compression session behind `stream.js`'s compress streams: one frame, fed step by step.
#[napi]
pub struct CompressSession {
  session: Arc<Session<CompressState>>,
  /// What [`CompressSession::next_frame`] makes the next session with: the dictionary held
  /// here, so that a Dictionary disposed of meanwhile does not stop a seekable stream.
  params: CompressParams,
  dictionary: Option<Arc<zstd_pool_core::dict::Prepared>>,
}

#[napi]
impl CompressSession {
  /// `pledged_size`, when given, is recorded in the frame header; the stream fails if the total
  /// it is given differs.
  #[napi(constructor)]
  pub fn new(env: Env, settings: &[i32], dictionary: Option<&PreparedDictionary>, pledged_size: Option<f64>) -> Result<Self> {
    let made = guarded(|| {
      // Streams compress on one thread: the settings' workers do not apply.
      let params = CompressParams { workers: 0, ..CompressParams::from_settings(settings)? };
      let dictionary = prepared(dictionary)?;
      let state = CompressState::new(params, pledged_size.map(|size| size as u64), dictionary.clone())?;
      Ok(Self { session: Session::new(state), params, dictionary })
    });
    if let Some(dictionary) = dictionary {
      dictionary.report(&env);
    }
    made.map_err(|failure| throw(&env, failure))
  }

  /// A session for the next frame of a seekable stream (`lib/seekable-writer.js`): this one's
  /// parameters and dictionary, no pledged size.
  #[napi]
  pub fn next_frame(&self, env: Env) -> Result<CompressSession> {
    let (params, dictionary) = (self.params, self.dictionary.clone());
    guarded(|| CompressState::new(params, None, dictionary.clone()))
      .map(|state| Self { session: Session::new(state), params, dictionary })
      .map_err(|failure| throw(&env, failure))
  }

  /// Copies `chunk` into the input of the next step (the caller may reuse it at once); the
  /// bytes staged in all.
  #[napi]
  pub fn append(&self, env: Env, chunk: &[u8]) -> Result<f64> {
    self.session.append(chunk).map(|staged| staged as f64).map_err(|failure| throw(&env, failure))
  }

  /// Compresses everything appended since the last step on the libuv threadpool, then flushes
  /// as `flush` says; a Promise of the output so far.
  #[napi(ts_return_type = "Promise<Buffer>")]
  pub fn push(&self, env: Env, flush: Flush) -> Result<Js> {
    self
      .session
      .begin_step()
      .and_then(|step| {
        let (input, flush) = (self.session.take_staged(), flush.into());
        // Stream steps always take the threadpool (no `estimated_micros`): streams are for data
        // that does not fit one call.
        let job = Task::new("zstd-pool:compress-stream", move || step.run(|state| state.feed(&input, flush)));
        queue(&env, job, None)
      })
      .map_err(|failure| throw(&env, failure))
  }

  /// Frees the context (now, or when the running step ends): the stream was destroyed.
  #[napi]
  pub fn close(&self) {
    self.session.close();
  }
}

/// The decompression session behind `stream.js`'s decompress streams.
#[napi]
pub struct DecompressSession {
  session: Arc<Session<DecompressState>>,
}

#[napi]
impl DecompressSession {
  /// `dictionaries`, when given, are what each frame chooses from by its ID (`stream.js` never
  /// gives it with `dictionary`, which it then ignores).
  #[napi(constructor)]
  pub fn new(
    env: Env,
    max_output_length: f64,
    window_log_max: u32,
    dictionary: Option<&PreparedDictionary>,
    dictionaries: Option<&PreparedDictionarySet>,
  ) -> Result<Self> {
    let limits = Limits { max_output_length: max_output_length as usize, window_log_max };
    guarded(|| match dictionaries {
      Some(set) => DecompressState::with_set(limits, set.shared()?),
      None => DecompressState::new(limits, prepared(dictionary)?),
    })
    .map(|state| Self { session: Session::new(state) })
    .map_err(|failure| throw(&env, failure))
  }

  /// Copies `chunk` into the input of the next step (the caller may reuse it at once); the
  /// bytes staged in all.
  #[napi]
  pub fn append(&self, env: Env, chunk: &[u8]) -> Result<f64> {
    self.session.append(chunk).map(|staged| staged as f64).map_err(|failure| throw(&env, failure))
  }

  /// Decompresses what is left of the input and everything appended since the last step, on
  /// the libuv threadpool, at most `MAX_STEP_OUTPUT` bytes a step: when `more` is then true,
  /// push again for the rest. `last` says the stream ends with what was appended.
  #[napi(ts_return_type = "Promise<Buffer>")]
  pub fn push(&self, env: Env, last: bool) -> Result<Js> {
    self
      .session
      .begin_step()
      .and_then(|step| {
        let mut input = self.session.take_staged();
        let job =
          Task::new("zstd-pool:decompress-stream", move || step.run(|state| state.feed_owned(std::mem::take(&mut input), last)));
        queue(&env, job, None)
      })
      .map_err(|failure| throw(&env, failure))
  }

  /// The last step stopped at its output limit: push again for the rest.
  #[napi(getter)]
  pub fn more(&self) -> bool {
    self.session.read(|state| state.more)
  }

  /// Frees the context (now, or when the running step ends): the stream was destroyed.
  #[napi]
  pub fn close(&self) {
    self.session.close();
  }
}
