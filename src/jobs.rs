//! The compress and decompress jobs: what runs (inline for sync calls, on the libuv
//! threadpool for async ones) and how its result becomes a Buffer.

use napi::sys;

use crate::compress::{self, CompressParams};
use crate::decompress::{self, OutputPlan};
use crate::error::Failure;
use crate::input::Input;
use crate::js::{self, Env, Value};
use crate::pool::{COMPRESSORS, DECOMPRESSORS};
use crate::task::Job;

pub struct CompressJob {
  pub input: Input,
  pub params: CompressParams,
}

impl Job for CompressJob {
  type Output = Vec<u8>;
  const NAME: &'static str = "zstd-pool:compress";

  fn compute(&mut self) -> Result<Vec<u8>, Failure> {
    let mut cctx = COMPRESSORS.take()?;
    let output = compress::compress(&mut cctx, self.input.as_slice(), self.params)?;
    cctx.give_back();
    Ok(output)
  }

  unsafe fn deliver(&mut self, env: Env, output: Vec<u8>) -> Result<Value, Failure> {
    unsafe { js::buffer_copy(env, &output) }
  }

  unsafe fn detach(&mut self, _env: Env) -> Result<(), Failure> {
    self.input = std::mem::replace(&mut self.input, Input::Owned(Vec::new())).into_owned()?;
    Ok(())
  }

  unsafe fn release(&mut self, _env: Env) {}
}

/// Where decompressed bytes go.
enum Destination {
  /// A Buffer allocated up front, of exactly the declared size, and written in place: no copy
  /// afterwards. Async calls hold it by reference; no JavaScript can see it before the call
  /// resolves, so writing it from a libuv thread is safe.
  Preallocated { buffer: Value, reference: sys::napi_ref, data: *mut u8, len: usize },
  /// A growing native buffer, copied into a Buffer at the end.
  Growable { initial: usize },
}

pub struct DecompressJob {
  input: Input,
  max_output_length: usize,
  destination: Destination,
}

// SAFETY: `Destination::Preallocated` points into a Buffer that only this job writes, kept
// alive by a reference while the job is queued; its JS handles are used on the JS thread only.
unsafe impl Send for DecompressJob {}

pub enum Decompressed {
  InPlace,
  Grown(Vec<u8>),
}

impl DecompressJob {
  /// Plans the output (allocating it now when its size is known) for `input`.
  ///
  /// # Safety
  /// Must run on the JavaScript thread that owns `env`.
  pub unsafe fn new(env: Env, input: Input, max_output_length: usize) -> Result<Self, Failure> {
    let destination = match decompress::plan_output(input.as_slice(), max_output_length)? {
      OutputPlan::Exact(len) => {
        let (buffer, data) = unsafe { js::buffer_uninit(env, len)? };
        Destination::Preallocated { buffer, reference: std::ptr::null_mut(), data, len }
      }
      OutputPlan::Growable(initial) => Destination::Growable { initial },
    };
    Ok(Self { input, max_output_length, destination })
  }
}

impl Job for DecompressJob {
  type Output = Decompressed;
  const NAME: &'static str = "zstd-pool:decompress";

  fn compute(&mut self) -> Result<Decompressed, Failure> {
    let mut dctx = DECOMPRESSORS.take()?;
    let input = self.input.as_slice();
    let output = match self.destination {
      Destination::Preallocated { data, len, .. } => {
        let output = if len == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut(data, len) } };
        decompress::decompress_exact(&mut dctx, input, output)?;
        Decompressed::InPlace
      }
      Destination::Growable { initial } => {
        Decompressed::Grown(decompress::decompress_growable(&mut dctx, input, initial, self.max_output_length)?)
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
      (Decompressed::Grown(bytes), _) => unsafe { js::buffer_copy(env, &bytes) },
      (Decompressed::InPlace, Destination::Growable { .. }) => Err(Failure::Panicked),
    }
  }

  unsafe fn detach(&mut self, env: Env) -> Result<(), Failure> {
    self.input = std::mem::replace(&mut self.input, Input::Owned(Vec::new())).into_owned()?;
    if let Destination::Preallocated { buffer, reference, .. } = &mut self.destination {
      *reference = unsafe { js::reference(env, *buffer)? };
    }
    Ok(())
  }

  unsafe fn release(&mut self, env: Env) {
    if let Destination::Preallocated { reference, .. } = &mut self.destination {
      unsafe { js::delete_reference(env, std::mem::replace(reference, std::ptr::null_mut())) };
    }
  }
}
