//! The benchmark's floor: libzstd called with no Node work per call, so that `npm run bench`
//! measures it in the same process, and interleaved the same way, as every contender. Not part
//! of the package's API (`main.js` does not export it); `benchmark/zstd.bench.ts` uses it.

use napi::{Error, Result, Status};
use napi_derive::napi;
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx};

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
