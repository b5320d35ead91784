//! The benchmark's floor: libzstd called with no Node work per call, so that `npm run bench`
//! measures it in the same process, and interleaved the same way, as every contender; and a
//! plain call that only reads its arguments, what Node-API costs before any work
//! (`benchmark/anatomy.mjs`). Not part of the package's API (`main.js` does not export them);
//! `benchmark/zstd.bench.ts` uses the floor.

#[cfg(not(target_family = "wasm"))]
use napi::{bindgen_prelude::Object, Env};
use napi::{Error, Result, Status};
use napi_derive::napi;
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx};

#[cfg(not(target_family = "wasm"))]
use crate::napi::plain::{self, Args, Plain};
#[cfg(not(target_family = "wasm"))]
use crate::napi::{Js, Target};

/// A set of payloads and what libzstd needs to work through them, one call at a time.
#[napi]
pub struct Floor {
  inputs: Vec<Vec<u8>>,
  output: Vec<u8>,
  compressing: bool,
  level: i32,
  /// A fresh context per call instead of one reused: what pooling saves.
  fresh: bool,
  compressor: CCtx<'static>,
  decompressor: DCtx<'static>,
  next: usize,
}

fn invalid(message: &str) -> Error {
  Error::new(Status::InvalidArg, message.to_owned())
}

#[napi]
impl Floor {
  /// `payloads` end to end, `sizes[i]` bytes each: inputs to compress, or frames to decompress
  /// (frames that record their content size).
  #[napi(constructor)]
  pub fn new(compressing: bool, payloads: &[u8], sizes: &[u32], level: i32, fresh: bool) -> Result<Self> {
    let mut inputs = Vec::with_capacity(sizes.len());
    let mut rest = payloads;
    for &size in sizes {
      let (input, after) = rest.split_at_checked(size as usize).ok_or_else(|| invalid("sizes exceed the payloads"))?;
      inputs.push(input.to_vec());
      rest = after;
    }
    if inputs.is_empty() || !rest.is_empty() {
      return Err(invalid("sizes must cover the payloads exactly"));
    }
    let room = inputs.iter().map(|input| {
      if compressing {
        Some(zstd_safe::compress_bound(input.len()))
      } else {
        zstd_safe::get_frame_content_size(input).ok().flatten().and_then(|size| usize::try_from(size).ok())
      }
    });
    let room = room.collect::<Option<Vec<usize>>>().ok_or_else(|| invalid("frames must record their content size"))?;
    let mut floor = Self {
      inputs,
      output: Vec::with_capacity(room.into_iter().max().unwrap_or(0)),
      compressing,
      level,
      fresh,
      compressor: CCtx::create(),
      decompressor: DCtx::create(),
      next: 0,
    };
    floor.compressor.set_parameter(CParameter::CompressionLevel(level)).map_err(|_| invalid("level out of range"))?;
    floor.run(1)?;
    Ok(floor)
  }

  /// Makes `calls` calls, cycling through the payloads.
  #[napi]
  pub fn run(&mut self, calls: u32) -> Result<()> {
    for _ in 0..calls {
      let input = &self.inputs[self.next];
      self.next = (self.next + 1) % self.inputs.len();
      self.output.clear();
      let result = match (self.compressing, self.fresh) {
        (true, false) => self.compressor.compress2(&mut self.output, input),
        (true, true) => CCtx::create().compress(&mut self.output, input, self.level),
        (false, false) => self.decompressor.decompress(&mut self.output, input),
        (false, true) => DCtx::create().decompress(&mut self.output, input),
      };
      result.map_err(|code| Error::from_reason(zstd_safe::get_error_name(code)))?;
    }
    Ok(())
  }
}

/// `decompressPlain`'s arguments, read as it reads them (registered by hand, as it is), and
/// nothing done with them: returns the input's length, as a call whose result went into the
/// slab returns the result's. Native builds only, as the plain calls are.
#[cfg(not(target_family = "wasm"))]
struct ArgumentsOnly;

#[cfg(not(target_family = "wasm"))]
impl Plain for ArgumentsOnly {
  const NAME: &'static str = "argumentsOnly";

  fn call(env: &Env, args: &Args) -> Result<Js> {
    let input: &[u8] = args.get(0)?;
    let _: (f64, u32, f64) = (args.get(1)?, args.get(2)?, args.get(3)?);
    let _: (Option<Target>, u32) = (args.get(4)?, args.get(5)?);
    let length = u32::try_from(input.len()).map_err(|_| invalid("input too large"))?;
    Js::number(env, length).map_err(|_| Error::from_reason("could not make a number"))
  }
}

/// Adds the calls registered by hand to the module's exports (napi-rs runs one
/// `module_exports` function: `oneshot::register_plain_calls` calls this).
#[cfg(not(target_family = "wasm"))]
pub fn register_plain_calls(env: &Env, exports: &mut Object) -> Result<()> {
  plain::register::<ArgumentsOnly>(env, exports)
}
