//! A packed batch's results (`compressManyPacked`, `decompressManyPacked`): every result of a
//! group end to end in one allocation, with where each ends, as python-zstandard's
//! `multi_*_to_buffer` returns them. JavaScript gets one Buffer per group and views of it made
//! when asked for, so a batch costs the JavaScript thread one copy per group, not an ArrayBuffer
//! (or a view) per result. A packed batch succeeds whole or fails: the group stops at its first
//! failure, which is the result. The results are written into a pooled chunk (see the chunk pool
//! in `memory.rs`), which JavaScript gives back when it collects the group's Buffer.

use std::io::Cursor;

use crate::batch::Sink;
use crate::error::Failure;
use crate::memory::{chunk, Chunk};

/// The bytes of one end.
const END_BYTES: usize = 8;

/// The most room a new chunk is given ahead of its results: what they are expected to take is a
/// guess (from the results of other inputs), and one batch of highly compressible frames must not
/// have the next reserve gigabytes for frames that are not.
const MAX_ROOM_AHEAD: usize = 16 << 20;

/// A chunk with more room than this past its results, and more than half their size, is shrunk
/// to them when the group ends (in place, as the allocator shrinks large blocks): a small group's
/// Buffer must not keep a large chunk alive (V8 sees only the Buffer's length), and the pool's
/// byte bound holds more chunks without the room their growth doubled. Less is kept: shrunk to
/// their exact size, chunks were too small for the next results by a few pages, and grew by a
/// copy into memory fresh from the kernel.
const SLACK_BYTES: usize = 64 << 10;

/// A group's results, end to end.
pub struct Packed {
  data: Chunk,
  /// Where each result ends in `data`, an `f64` each in native byte order (JavaScript views them
  /// through a `Float64Array`): exact up to 2^53, past any size a Buffer can have.
  ends: Vec<u8>,
  /// The first failure, and the index of its item in the group.
  failure: Option<(usize, Failure)>,
  /// The most `data` may hold: the largest Buffer JavaScript can have.
  max_bytes: usize,
}

impl Packed {
  /// Room for where `count` results end, which together may take at most `max_bytes`, and are
  /// expected to take about `expected` bytes, if known (the chunk is chosen by it: see [`chunk`]).
  pub fn new(count: usize, max_bytes: usize, expected: Option<usize>) -> Result<Self, Failure> {
    let bytes = count.saturating_mul(END_BYTES);
    let mut ends = Vec::new();
    ends.try_reserve_exact(bytes).map_err(|_| Failure::OutOfMemory { bytes })?;
    let mut data = chunk(expected)?;
    let expected = expected.unwrap_or_default().min(max_bytes);
    if data.capacity() < expected {
      // A new chunk, or a smaller one: room at once, a quarter more to spare, rather than grown
      // and copied (into memory fresh from the kernel) as results come.
      let room = expected.saturating_add(expected / 4).min(MAX_ROOM_AHEAD);
      data.try_reserve(room).map_err(|_| Failure::OutOfMemory { bytes: room })?;
    }
    Ok(Self { data, ends, failure: None, max_bytes })
  }

  /// How many bytes the results take so far.
  pub fn bytes(&self) -> usize {
    self.data.len()
  }

  /// The results end to end, and where each ends (see the field `ends`); or the first failure
  /// and its item's index.
  pub fn finish(mut self) -> Result<(Chunk, Vec<u8>), (usize, Failure)> {
    if let Some(failure) = self.failure {
      return Err(failure);
    }
    let len = self.data.len();
    if self.data.capacity() - len > SLACK_BYTES.max(len / 2) {
      self.data.shrink_to_fit();
    }
    self.data.measure();
    Ok((self.data, self.ends))
  }

  fn fail(&mut self, failure: Failure) {
    if self.failure.is_none() {
      self.failure = Some((self.ends.len() / END_BYTES, failure));
    }
  }

  /// Ends the result that `data` holds from `start`, unless the results then exceed `max_bytes`.
  fn end_here(&mut self, start: usize) {
    if self.data.len() > self.max_bytes {
      self.data.truncate(start);
      return self.fail(Failure::PackedTooLarge { limit: self.max_bytes });
    }
    // `ends` has room for every item: this never allocates.
    self.ends.extend_from_slice(&(self.data.len() as f64).to_ne_bytes());
  }
}

impl Sink for Packed {
  fn fits(&self, _len: usize) -> bool {
    true
  }

  fn done(&self) -> bool {
    self.failure.is_some()
  }

  fn push_written(&mut self, room: usize, write: impl FnOnce(&mut Cursor<&mut Vec<u8>>) -> Result<(), Failure>) {
    let start = self.data.len();
    if self.data.try_reserve(room).is_err() {
      return self.fail(Failure::OutOfMemory { bytes: start.saturating_add(room) });
    }
    let mut cursor = Cursor::new(&mut *self.data);
    cursor.set_position(start as u64);
    let written = write(&mut cursor).and_then(|()| match self.data.len() - start {
      // A codec writes no more than the room it was promised: a bug otherwise, failed as one.
      written if written > room => Err(Failure::Panicked),
      _ => Ok(()),
    });
    match written {
      Ok(()) => self.end_here(start),
      Err(failure) => {
        self.data.truncate(start);
        self.fail(failure);
      }
    }
  }

  fn push(&mut self, result: Result<Vec<u8>, Failure>) {
    match result {
      Ok(bytes) => {
        if self.data.try_reserve(bytes.len()).is_err() {
          return self.fail(Failure::OutOfMemory { bytes: self.data.len().saturating_add(bytes.len()) });
        }
        let start = self.data.len();
        self.data.extend_from_slice(&bytes);
        self.end_here(start);
      }
      Err(failure) => self.fail(failure),
    }
  }
}

#[cfg(test)]
mod tests {
  use std::io::Write;

  use super::*;

  #[test]
  fn results_are_end_to_end_with_their_ends() {
    let mut packed = Packed::new(4, usize::MAX, None).expect("room");
    packed.push(Ok(vec![1; 3]));
    packed.push_written(100, |cursor| cursor.write_all(&[2; 10]).map_err(|_| Failure::Truncated));
    packed.push(Ok(Vec::new()));
    packed.push_written(5, |_| Ok(()));
    let Ok((data, ends)) = packed.finish() else { panic!("no failure") };
    assert_eq!(*data, [[1; 3].as_slice(), &[2; 10]].concat());
    let ends: Vec<f64> = ends.chunks_exact(8).map(|bytes| f64::from_ne_bytes(bytes.try_into().expect("8 bytes"))).collect();
    assert_eq!(ends, [3.0, 13.0, 13.0, 13.0]);
  }

  #[test]
  fn the_first_failure_is_the_result_and_its_bytes_are_dropped() {
    let mut packed = Packed::new(4, usize::MAX, None).expect("room");
    packed.push(Ok(vec![1; 3]));
    assert!(!packed.done());
    packed.push_written(100, |cursor| {
      cursor.write_all(&[2; 10]).map_err(|_| Failure::Truncated)?;
      Err(Failure::Truncated)
    });
    assert!(packed.done());
    packed.push(Err(Failure::Aborted));
    match packed.finish() {
      Err((index, Failure::Truncated)) => assert_eq!(index, 1),
      _ => panic!("the first failure"),
    }
  }

  #[test]
  fn results_past_the_largest_buffer_fail_with_their_index() {
    let mut packed = Packed::new(3, 10, None).expect("room");
    packed.push(Ok(vec![1; 6]));
    packed.push(Ok(vec![2; 6]));
    assert!(matches!(packed.finish(), Err((1, Failure::PackedTooLarge { limit: 10 }))));
  }

  #[test]
  fn a_chunk_far_larger_than_its_results_is_shrunk_to_them() {
    let mut packed = Packed::new(1, usize::MAX, None).expect("room");
    packed.push_written(1 << 20, |cursor| cursor.write_all(&[3; 10]).map_err(|_| Failure::Truncated));
    let Ok((data, _)) = packed.finish() else { panic!("no failure") };
    assert_eq!(*data, [3; 10]);
    assert!(data.capacity() <= SLACK_BYTES, "{} bytes kept for 10", data.capacity());
  }

  #[test]
  fn room_ahead_of_results_is_bounded_whatever_is_expected() {
    let packed = Packed::new(1, usize::MAX, Some(1 << 40)).expect("room");
    assert!(packed.data.capacity() <= MAX_ROOM_AHEAD + MAX_ROOM_AHEAD / 4, "{}", packed.data.capacity());
  }

  #[test]
  fn a_codec_writing_past_its_room_fails_as_a_bug() {
    let mut packed = Packed::new(1, usize::MAX, None).expect("room");
    packed.push_written(2, |cursor| cursor.write_all(&[2; 10]).map_err(|_| Failure::Truncated));
    assert!(matches!(packed.finish(), Err((0, Failure::Panicked))));
  }
}
