//! `frameInfo`: what the headers of every frame in an input say, from the core's frame walk.

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::guarded;
use zstd_pool_core::frame::{walk, Frame, Kind};

use crate::napi::throw;

/// One frame of [`FrameInfo`], as `main.d.ts` documents it. Numbers above 2^53 are rounded.
#[napi(object, use_nullable = true)]
pub struct FrameDetails {
  pub skippable: bool,
  /// A skippable frame's magic variant, 0 to 15; null for a zstd frame.
  pub variant: Option<u32>,
  pub content_size: Option<f64>,
  pub window_size: f64,
  pub dictionary_id: u32,
  pub checksum: bool,
  pub compressed_size: f64,
}

/// What `frameInfo` returns, as `main.d.ts` documents it.
#[napi(object, use_nullable = true)]
pub struct FrameInfo {
  pub frames: Vec<FrameDetails>,
  pub frame_count: f64,
  pub content_size: Option<f64>,
  pub window_size: f64,
  pub compressed_size: f64,
}

impl From<Frame> for FrameDetails {
  fn from(frame: Frame) -> Self {
    let variant = match frame.kind {
      Kind::Zstd => None,
      Kind::Skippable { variant } => Some(variant),
    };
    Self {
      skippable: variant.is_some(),
      variant,
      content_size: frame.content_size.map(|size| size as f64),
      window_size: frame.window_size as f64,
      dictionary_id: frame.dictionary_id,
      checksum: frame.checksum,
      compressed_size: frame.compressed_size as f64,
    }
  }
}

/// The frames of `input`, with the details of the first `max_frames`. It runs here, on the
/// calling thread: it reads headers only.
#[napi]
pub fn frame_info(env: Env, input: &[u8], max_frames: u32) -> Result<FrameInfo> {
  // The input is read in full here, before napi-rs makes the result: it defines the objects'
  // properties (no setter runs), but sets the array's elements, which runs a setter a caller
  // put on `Array.prototype` for an index. Such code can call back in or detach the input, and
  // change only what its caller sees.
  let frames = guarded(|| walk(input, max_frames as usize)).map_err(|failure| throw(&env, failure))?;
  Ok(FrameInfo {
    frames: frames.details.into_iter().map(FrameDetails::from).collect(),
    frame_count: frames.count as f64,
    content_size: frames.content_size.map(|size| size as f64),
    window_size: frames.window_size as f64,
    compressed_size: frames.compressed_size as f64,
  })
}
