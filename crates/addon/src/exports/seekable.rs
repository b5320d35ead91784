//! The seekable format's tables (the core's `seekable`): the length of the table a file's footer
//! announces, the table itself as numbers that `seekable.js` reads (as `frameInfo` gives its
//! own), the table frame of frames just compressed, and the checksum a table lists for a frame's
//! content. Each runs on the calling thread: a table is read once per file, and costs what its
//! length does; a checksum is taken of a frame decoded whole (at most 8 MiB), at several GB/s.

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::{guarded, Failure, SeekableProblem};
use zstd_pool_core::seekable::{content_checksum, read_footer, read_table, write_table, Entry, FOOTER_LEN};

use crate::napi::{buffer_copy, throw, Js};

/// The length of the seek table that `footer` (a file's last 9 bytes) announces, for a file of
/// `file_length` bytes; it fits in the file.
#[napi]
pub fn seek_table_length(env: Env, footer: &[u8], file_length: f64) -> Result<f64> {
  guarded(|| read_footer(footer, file_length as u64).map(|footer| footer.table_len() as f64))
    .map_err(|failure| throw(&env, failure))
}

/// The seek table `table` (a file's last bytes, as many as its footer announces), as
/// little-endian `f64`s: the frame count, whether the table has checksums (0 or 1), then the
/// `count + 1` offsets of the frames in the file, the `count + 1` offsets of their content, and
/// each frame's checksum when the table has them.
#[napi(ts_return_type = "Buffer")]
pub fn seek_table(env: Env, table: &[u8], file_length: f64) -> Result<Js> {
  let made = guarded(|| {
    let footer_at = table.len().checked_sub(FOOTER_LEN).ok_or(Failure::Seekable(SeekableProblem::NoTable))?;
    let footer = read_footer(&table[footer_at..], file_length as u64)?;
    let parsed = read_table(table, footer, file_length as u64)?;
    let sums = parsed.checksums.as_deref().unwrap_or(&[]);
    let count = parsed.frame_count();
    let len = (2 + 2 * (count + 1) + sums.len()) * 8;
    let mut numbers = Vec::new();
    numbers.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
    let head = [count as f64, f64::from(u8::from(parsed.checksums.is_some()))];
    let offsets = parsed.compressed.iter().chain(&parsed.decompressed).map(|&offset| offset as f64);
    let checksums = sums.iter().map(|&sum| f64::from(sum));
    for number in head.into_iter().chain(offsets).chain(checksums) {
      numbers.extend_from_slice(&number.to_le_bytes());
    }
    Ok(numbers)
  });
  made.and_then(|numbers| buffer_copy(&env, &numbers)).map_err(|failure| throw(&env, failure))
}

/// The table frame listing frames of `compressed` and `decompressed` sizes, with `checksums`
/// (one per frame) when given.
#[napi(ts_return_type = "Buffer")]
pub fn seek_table_frame(env: Env, compressed: &[u32], decompressed: &[u32], checksums: Option<&[u32]>) -> Result<Js> {
  let made = guarded(|| {
    if compressed.len() != decompressed.len() || checksums.is_some_and(|sums| sums.len() != compressed.len()) {
      return Err(Failure::InvalidArgument("a seek table needs as many of each size (and checksum) as frames"));
    }
    let entries: Vec<Entry> = (0..compressed.len())
      .map(|i| Entry { compressed: compressed[i], decompressed: decompressed[i], checksum: checksums.map(|sums| sums[i]) })
      .collect();
    write_table(&entries)
  });
  made.and_then(|table| buffer_copy(&env, &table)).map_err(|failure| throw(&env, failure))
}

/// The checksum a seek table lists for a frame of this `content`: the low 32 bits of its XXH64.
#[napi]
pub fn seekable_checksum(content: &[u8]) -> u32 {
  content_checksum(content)
}
