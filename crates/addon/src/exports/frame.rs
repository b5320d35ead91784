//! `frameInfo`: what the headers of every frame in an input say, from the core's frame walk, as
//! numbers that `frame.js` makes its objects from (as Node's `fs.stat` fills a `Float64Array`
//! that `lib/internal/fs/utils.js` makes a `Stats` from): JavaScript makes a plain object faster
//! than Node-API defines one, and no setter on a prototype runs while it does.

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::{guarded, Failure};
use zstd_pool_core::frame::{walk, Frame, Frames, Kind};

use crate::napi::{buffer_copy, throw, Js, Target};

/// What a size or variant that is absent reads as: none is negative.
const NONE: f64 = -1.0;
/// The totals: frame count, content size, window size, compressed size.
const TOTALS: usize = 4;
/// Per frame: variant (none for a zstd frame), content size, window size, dictionary ID,
/// checksum (0 or 1), compressed size.
const PER_FRAME: usize = 6;

/// The numbers `frame.js` reads, as little-endian `f64`s end to end: the totals, then each frame's
/// details.
fn numbers(frames: &Frames) -> std::result::Result<Vec<u8>, Failure> {
  let totals = [
    frames.count as f64,
    frames.content_size.map_or(NONE, |size| size as f64),
    frames.window_size as f64,
    frames.compressed_size as f64,
  ];
  let len = frames.details.len().saturating_mul(PER_FRAME).saturating_add(TOTALS).saturating_mul(8);
  let mut bytes = Vec::new();
  bytes.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  for number in totals.into_iter().chain(frames.details.iter().flat_map(details)) {
    bytes.extend_from_slice(&number.to_le_bytes());
  }
  Ok(bytes)
}

fn details(frame: &Frame) -> [f64; PER_FRAME] {
  let variant = match frame.kind {
    Kind::Zstd => NONE,
    Kind::Skippable { variant } => variant.into(),
  };
  [
    variant,
    frame.content_size.map_or(NONE, |size| size as f64),
    frame.window_size as f64,
    frame.dictionary_id.into(),
    f64::from(u8::from(frame.checksum)),
    frame.compressed_size as f64,
  ]
}

/// The frames of `input`, with the details of the first `max_frames`, as numbers (see
/// [`numbers`]): written into `scratch` if they fit, and the result is their length in bytes; else
/// a Buffer of them (a Buffer made per call costs about as much as the walk of one frame). Numbers
/// above 2^53 are rounded. It runs here, on the calling thread: it reads headers only.
#[napi(ts_return_type = "number | Buffer")]
pub fn frame_info(
  env: Env,
  input: &[u8],
  max_frames: u32,
  #[napi(ts_arg_type = "Buffer | undefined")] scratch: Option<Target>,
) -> Result<Js> {
  let made = guarded(|| walk(input, max_frames as usize)).and_then(|frames| {
    let numbers = numbers(&frames)?;
    if let Some(mut scratch) = scratch {
      if let Some(mut room) = scratch.room(0, numbers.len(), input) {
        room.write(&numbers);
        return Js::number(&env, numbers.len() as u32);
      }
    }
    buffer_copy(&env, &numbers)
  });
  made.map_err(|failure| throw(&env, failure))
}
