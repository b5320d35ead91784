//! The zstd seekable format (`contrib/seekable_format` in the zstd repository): independent
//! frames, then a seek table in a skippable frame at the end, which lists each frame's compressed
//! and decompressed size (and optionally the low 32 bits of the XXH64 of its content, the same
//! value a zstd frame's own checksum holds), so that a reader decodes only the frames a range
//! covers. Any zstd decoder still reads the whole file: the table is a skippable frame.
//!
//! Plain Rust over bytes. A table is read from the end of a file whose length the caller knows:
//! first its 9-byte footer, then the table the footer announces, which must fit in the file and
//! account for every byte before it, so that a hostile table costs at most what the file's length
//! justifies.

use crate::error::{Failure, SeekableProblem};

/// A skippable frame's magic number, the one the seek table uses (variant 0xE).
pub const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
/// The seek table footer's magic number: the last 4 bytes of a seekable file.
pub const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
/// The footer: the number of frames (4 bytes), the descriptor (1), the magic (4).
pub const FOOTER_LEN: usize = 9;
/// The skippable frame's header: its magic and its length.
const HEADER_LEN: usize = 8;
/// The most frames a table may list, as libzstd's implementation allows.
pub const MAX_FRAMES: u32 = 0x0800_0000;
/// The largest decompressed size a table may add up to: what a JavaScript number holds exactly.
pub const MAX_SIZE: u64 = (1 << 53) - 1;
/// The descriptor's checksum flag (bit 7), and its reserved bits (6 to 2), which must be 0.
const CHECKSUM_FLAG: u8 = 0x80;
const RESERVED_BITS: u8 = 0x7C;

/// What a footer says: how many frames the table lists, and whether each entry has a checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
  pub frames: u32,
  pub checksums: bool,
}

impl Footer {
  /// The length of each entry: compressed and decompressed sizes, and the checksum if any.
  pub fn entry_len(&self) -> usize {
    if self.checksums {
      12
    } else {
      8
    }
  }

  /// The length of the whole table frame, header and footer included.
  pub fn table_len(&self) -> u64 {
    (HEADER_LEN + FOOTER_LEN) as u64 + u64::from(self.frames) * self.entry_len() as u64
  }
}

fn le32(bytes: &[u8], at: usize) -> u32 {
  u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads the footer: the last 9 bytes of a file of `file_len` bytes. Checks that the table it
/// announces fits in the file, so that the caller may then read that many bytes.
pub fn read_footer(footer: &[u8], file_len: u64) -> Result<Footer, Failure> {
  if footer.len() != FOOTER_LEN || le32(footer, 5) != SEEKABLE_MAGIC {
    return Err(Failure::Seekable(SeekableProblem::NoTable));
  }
  let descriptor = footer[4];
  if descriptor & RESERVED_BITS != 0 {
    return Err(Failure::Seekable(SeekableProblem::Corrupt("its descriptor sets reserved bits")));
  }
  let parsed = Footer { frames: le32(footer, 0), checksums: descriptor & CHECKSUM_FLAG != 0 };
  if parsed.frames > MAX_FRAMES {
    return Err(Failure::Seekable(SeekableProblem::Corrupt("it lists more frames than the format allows")));
  }
  if parsed.table_len() > file_len {
    return Err(Failure::Seekable(SeekableProblem::Corrupt("it lists more frames than the file can hold")));
  }
  Ok(parsed)
}

/// A seek table: where each frame starts in the file and in the decompressed data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeekTable {
  /// `frames + 1` offsets into the file: frame `i` spans `compressed[i]..compressed[i + 1]`.
  pub compressed: Vec<u64>,
  /// `frames + 1` offsets into the decompressed data, likewise.
  pub decompressed: Vec<u64>,
  /// Each frame's checksum, when the table has them.
  pub checksums: Option<Vec<u32>>,
}

impl SeekTable {
  pub fn frame_count(&self) -> usize {
    self.compressed.len() - 1
  }

  /// The decompressed size of the whole file.
  pub fn size(&self) -> u64 {
    self.decompressed[self.decompressed.len() - 1]
  }

  /// The frames that hold decompressed bytes `start..end` (`end` at most `size()`): an empty
  /// range when `start == end`.
  pub fn frames_covering(&self, start: u64, end: u64) -> std::ops::Range<usize> {
    if start >= end {
      return 0..0;
    }
    // The last frame starting at or before `start`, skipping empty frames; the first frame
    // starting at or after `end`.
    let first = self.decompressed.partition_point(|&offset| offset <= start).saturating_sub(1);
    let last = self.decompressed.partition_point(|&offset| offset < end);
    first..last.min(self.frame_count()).max(first)
  }
}

/// Reads a table frame (`table`, the last `footer.table_len()` bytes of a file of `file_len`
/// bytes). Every byte before the table must belong to a listed frame, and a frame of no bytes
/// may hold no content.
pub fn read_table(table: &[u8], footer: Footer, file_len: u64) -> Result<SeekTable, Failure> {
  let corrupt = |why| Err(Failure::Seekable(SeekableProblem::Corrupt(why)));
  if table.len() as u64 != footer.table_len() || table.len() as u64 > file_len {
    return corrupt("its length is not the one its footer announces");
  }
  if le32(table, 0) != SKIPPABLE_MAGIC || le32(table, 4) as usize != table.len() - HEADER_LEN {
    return corrupt("it is not in a skippable frame of its own length");
  }
  let frames = footer.frames as usize;
  let entry_len = footer.entry_len();
  let mut compressed = Vec::with_capacity(frames + 1);
  let mut decompressed = Vec::with_capacity(frames + 1);
  let mut checksums = footer.checksums.then(|| Vec::with_capacity(frames));
  let (mut at_file, mut at_data) = (0u64, 0u64);
  compressed.push(0);
  decompressed.push(0);
  for entry in table[HEADER_LEN..HEADER_LEN + frames * entry_len].chunks_exact(entry_len) {
    let (frame_len, content_len) = (le32(entry, 0), le32(entry, 4));
    // An empty entry (no bytes, no content) is allowed, as the reference tools read it.
    if frame_len == 0 && content_len != 0 {
      return corrupt("it lists content in a frame of no bytes");
    }
    // At most 2^27 frames of less than 2^32 bytes each: the sums fit in 64 bits.
    at_file += u64::from(frame_len);
    at_data += u64::from(content_len);
    if at_file > file_len - table.len() as u64 {
      return corrupt("its frames add up to more than the file holds");
    }
    if at_data > MAX_SIZE {
      return corrupt("its frames add up to more than 2^53 - 1 decompressed bytes");
    }
    compressed.push(at_file);
    decompressed.push(at_data);
    if let Some(sums) = checksums.as_mut() {
      sums.push(le32(entry, 8));
    }
  }
  if at_file != file_len - table.len() as u64 {
    return corrupt("its frames do not account for every byte before it");
  }
  Ok(SeekTable { compressed, decompressed, checksums })
}

/// What a seek table lists as a frame's checksum: the low 32 bits of the XXH64 (seed 0) of its
/// content, the value a zstd frame's own checksum holds.
pub fn content_checksum(content: &[u8]) -> u32 {
  xxhash_rust::xxh64::xxh64(content, 0) as u32
}

/// One frame as a table lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
  pub compressed: u32,
  pub decompressed: u32,
  pub checksum: Option<u32>,
}

/// The table frame of `entries`, with checksums if every entry has one.
pub fn write_table(entries: &[Entry]) -> Result<Vec<u8>, Failure> {
  if entries.len() > MAX_FRAMES as usize {
    return Err(Failure::Seekable(SeekableProblem::Corrupt("more frames than the format allows")));
  }
  let checksums = !entries.is_empty() && entries.iter().all(|entry| entry.checksum.is_some());
  let footer = Footer { frames: entries.len() as u32, checksums };
  let mut table = Vec::with_capacity(footer.table_len() as usize);
  table.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
  table.extend_from_slice(&((footer.table_len() as usize - HEADER_LEN) as u32).to_le_bytes());
  for entry in entries {
    table.extend_from_slice(&entry.compressed.to_le_bytes());
    table.extend_from_slice(&entry.decompressed.to_le_bytes());
    if let (true, Some(checksum)) = (checksums, entry.checksum) {
      table.extend_from_slice(&checksum.to_le_bytes());
    }
  }
  table.extend_from_slice(&footer.frames.to_le_bytes());
  table.push(if checksums { CHECKSUM_FLAG } else { 0 });
  table.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
  Ok(table)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn file_of(frames: &[(u32, u32)], checksums: bool) -> Vec<u8> {
    let entries: Vec<Entry> = frames
      .iter()
      .map(|&(compressed, decompressed)| Entry { compressed, decompressed, checksum: checksums.then_some(7) })
      .collect();
    let mut file = vec![0u8; frames.iter().map(|&(c, _)| c as usize).sum()];
    file.extend(write_table(&entries).unwrap());
    file
  }

  fn read(file: &[u8]) -> Result<SeekTable, Failure> {
    let len = file.len() as u64;
    let footer = read_footer(&file[file.len() - FOOTER_LEN..], len)?;
    read_table(&file[file.len() - footer.table_len() as usize..], footer, len)
  }

  #[test]
  fn reads_what_it_writes() {
    for checksums in [false, true] {
      let table = read(&file_of(&[(10, 100), (20, 0), (30, 50)], checksums)).unwrap();
      assert_eq!(table.compressed, [0, 10, 30, 60]);
      assert_eq!(table.decompressed, [0, 100, 100, 150]);
      assert_eq!(table.checksums, checksums.then(|| vec![7, 7, 7]));
      assert_eq!(table.frames_covering(0, 1), 0..1);
      assert_eq!(table.frames_covering(99, 101), 0..3);
      assert_eq!(table.frames_covering(100, 101), 2..3);
      assert_eq!(table.frames_covering(149, 150), 2..3);
      assert_eq!(table.frames_covering(5, 5), 0..0);
    }
    let empty = read(&file_of(&[], false)).unwrap();
    assert_eq!((empty.frame_count(), empty.size()), (0, 0));
  }

  #[test]
  fn content_checksums_are_what_zstd_frames_end_with() {
    for content in [&b""[..], b"a", &[7u8; 100_000]] {
      let frame = zstd::bulk::Compressor::new(3)
        .and_then(|mut compressor| {
          compressor.include_checksum(true)?;
          compressor.compress(content)
        })
        .unwrap();
      let own = u32::from_le_bytes(frame[frame.len() - 4..].try_into().unwrap());
      assert_eq!(content_checksum(content), own);
    }
  }

  #[test]
  fn refuses_hostile_tables_without_allocating_for_them() {
    let good = file_of(&[(10, 100), (20, 50)], true);
    let problem = |file: &[u8]| match read(file) {
      Err(Failure::Seekable(problem)) => problem,
      other => panic!("{other:?}"),
    };
    // No magic at the end.
    assert_eq!(problem(&good[..good.len() - 1]), SeekableProblem::NoTable);
    // 10^9 frames claimed by a small file.
    let mut claims = good.clone();
    let at = claims.len() - FOOTER_LEN;
    claims[at..at + 4].copy_from_slice(&1_000_000_000u32.to_le_bytes());
    assert!(matches!(problem(&claims), SeekableProblem::Corrupt(_)));
    // Reserved bits.
    let mut reserved = good.clone();
    reserved[at + 4] |= 0x04;
    assert!(matches!(problem(&reserved), SeekableProblem::Corrupt(_)));
    // Sizes past the bytes before the table, short of them, or a frame of none.
    for frames in [[(10, 100), (21, 50)], [(10, 100), (19, 50)], [(0, 100), (30, 50)]] {
      let entries: Vec<Entry> =
        frames.iter().map(|&(compressed, decompressed)| Entry { compressed, decompressed, checksum: None }).collect();
      let mut file = vec![0u8; 30];
      file.extend(write_table(&entries).unwrap());
      assert!(matches!(problem(&file), SeekableProblem::Corrupt(_)), "{frames:?}");
    }
    // A frame as large as 32 bits allow: the sum is taken in 64, and is past the file.
    let mut huge = good.clone();
    let first_entry = 30 + 8;
    huge[first_entry..first_entry + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(problem(&huge), SeekableProblem::Corrupt(_)));
  }
}
