//! The compress and decompress jobs: what runs (inline for sync calls, on the libuv
//! threadpool for async ones) and how its result becomes a Buffer.

use std::sync::Arc;

use napi::sys;

use crate::compress::{self, CompressParams};
use crate::decompress::{self, Limits, OutputPlan};
use crate::dict::Prepared;
use crate::error::Failure;
use crate::input::Input;
use crate::js::{self, Env, Value};
use crate::mt;
use crate::output;
use crate::pool::{COMPRESSORS, DECOMPRESSORS};
use crate::task::Job;

pub struct CompressJob {
  pub input: Input,
  pub params: CompressParams,
  pub dictionary: Option<Arc<Prepared>>,
}

impl CompressJob {
  /// Worker threads pay only for inputs of several libzstd jobs; smaller ones compress on the
  /// calling thread, with a pooled context.
  fn multithreaded(&self) -> bool {
    self.params.workers > 0 && mt::pays(self.params.level, self.input.as_slice().len())
  }
}

impl Job for CompressJob {
  type Output = Vec<u8>;
  const NAME: &'static str = "zstd-pool:compress";

  fn compute(&mut self) -> Result<Vec<u8>, Failure> {
    let input = self.input.as_slice();
    // Declared before the context, so that a context that fails is freed before its dictionary.
    let cdict = self.dictionary.as_ref().map(|dictionary| dictionary.cdict(self.params.level)).transpose()?;
    if self.multithreaded() {
      let mut cctx = mt::CACHE.take(mt::Key { level: self.params.level, workers: self.params.workers })?;
      let output = compress::compress(&mut cctx, input, self.params, cdict.as_deref())?;
      cctx.give_back();
      return Ok(output);
    }
    let mut cctx = COMPRESSORS.take()?;
    let output = compress::compress(&mut cctx, input, CompressParams { workers: 0, ..self.params }, cdict.as_deref())?;
    cctx.give_back();
    Ok(output)
  }

  unsafe fn deliver(&mut self, env: Env, output: Vec<u8>) -> Result<Value, Failure> {
    unsafe { output::copy_to_buffer(env, &output) }
  }

  unsafe fn detach(&mut self, _env: Env) -> Result<(), Failure> {
    self.input.own()
  }

  fn estimated_micros(&self) -> Option<f64> {
    if self.multithreaded() {
      return None;
    }
    // Measured on a 2-core VM: about 250 MB/s at levels up to 3 for small inputs, slower above.
    let bytes_per_micro = match self.params.level {
      ..=3 => 250.0,
      4..=6 => 100.0,
      7..=9 => 40.0,
      _ => return None,
    };
    Some(6.0 + self.input.as_slice().len() as f64 / bytes_per_micro)
  }
}

/// Where decompressed bytes go.
enum Destination {
  /// The result Buffer itself, allocated up front at exactly the declared size and written in
  /// place: no copy afterwards. A sync call may take it from the shared slab, since no
  /// JavaScript runs before it is filled; an async call gets one of its own, held by reference,
  /// that no JavaScript can see before the call resolves.
  Preallocated { buffer: Value, reference: sys::napi_ref, data: *mut u8, len: usize },
  /// A small result of known size for an async call: decoded natively, copied at the end.
  Exact { len: usize },
  /// A result of unknown size: a native buffer that grows, copied at the end.
  Growable { initial: usize },
}

pub struct DecompressJob {
  input: Input,
  limits: Limits,
  dictionary: Option<Arc<Prepared>>,
  destination: Destination,
}

// SAFETY: `Destination::Preallocated` points into a Buffer that only this job writes, kept
// alive by a reference while the job is queued; its JS handles are used on the JS thread only.
unsafe impl Send for DecompressJob {}

pub enum Decompressed {
  InPlace,
  Native(Vec<u8>),
}

impl DecompressJob {
  /// Plans the output for `input`, allocating the result now when its size is known.
  /// `inline` says the job will run on this thread before any JavaScript does (a sync call).
  ///
  /// # Safety
  /// Must run on the JavaScript thread that owns `env`.
  pub unsafe fn new(
    env: Env,
    input: Input,
    limits: Limits,
    dictionary: Option<Arc<Prepared>>,
    inline: bool,
  ) -> Result<Self, Failure> {
    let destination = match decompress::plan_output(input.as_slice(), limits, dictionary.as_deref())? {
      OutputPlan::Exact(len) => {
        let buffer = if inline { unsafe { output::new_buffer(env, len)? } } else { unsafe { output::new_private_buffer(env, len)? } };
        match buffer {
          Some((buffer, data)) => Destination::Preallocated { buffer, reference: std::ptr::null_mut(), data, len },
          None => Destination::Exact { len },
        }
      }
      OutputPlan::Growable(initial) => Destination::Growable { initial },
    };
    Ok(Self { input, limits, dictionary, destination })
  }
}

impl Job for DecompressJob {
  type Output = Decompressed;
  const NAME: &'static str = "zstd-pool:decompress";

  fn compute(&mut self) -> Result<Decompressed, Failure> {
    // The job holds the dictionary until after the context is given back (reset) or freed.
    let ddict = self.dictionary.as_deref().map(Prepared::ddict);
    let mut dctx = DECOMPRESSORS.take()?;
    let input = self.input.as_slice();
    let output = match self.destination {
      Destination::Preallocated { data, len, .. } => {
        let output = if len == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut(data, len) } };
        decompress::decompress_exact(&mut dctx, input, output, ddict)?;
        Decompressed::InPlace
      }
      Destination::Exact { len } => {
        let mut output = vec![0u8; len];
        decompress::decompress_exact(&mut dctx, input, &mut output, ddict)?;
        Decompressed::Native(output)
      }
      Destination::Growable { initial } => {
        Decompressed::Native(decompress::decompress_growable(&mut dctx, input, initial, self.limits, ddict)?)
      }
    };
    dctx.give_back();
    Ok(output)
  }

  unsafe fn deliver(&mut self, env: Env, output: Decompressed) -> Result<Value, Failure> {
    match (output, &self.destination) {
      (Decompressed::InPlace, Destination::Preallocated { buffer, reference, .. }) => {
        if reference.is_null() {
          Ok(*buffer)
        } else {
          unsafe { js::reference_value(env, *reference) }
        }
      }
      (Decompressed::Native(bytes), _) => unsafe { output::copy_to_buffer(env, &bytes) },
      (Decompressed::InPlace, _) => Err(Failure::Panicked),
    }
  }

  unsafe fn detach(&mut self, env: Env) -> Result<(), Failure> {
    self.input.own()?;
    if let Destination::Preallocated { buffer, reference, .. } = &mut self.destination {
      *reference = unsafe { js::reference(env, *buffer)? };
    }
    Ok(())
  }

  fn estimated_micros(&self) -> Option<f64> {
    // About 1 GB/s of output, plus a fixed cost; unknown sizes are never guessed at.
    match self.destination {
      Destination::Exact { len } | Destination::Preallocated { len, .. } => Some(3.0 + len as f64 / 1000.0),
      Destination::Growable { .. } => None,
    }
  }

  unsafe fn release(&mut self, env: Env) {
    if let Destination::Preallocated { reference, .. } = &mut self.destination {
      unsafe { js::delete_reference(env, std::mem::replace(reference, std::ptr::null_mut())) };
    }
  }
}
