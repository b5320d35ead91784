//! A batch's results (`compressMany`, `decompressMany`) as its work makes them, in native memory:
//! the small ones packed end to end into pages, the others (large results, failures) each on its
//! own. Where results may share slabs (see `lib/results.js`), each page becomes one slab on the
//! JavaScript thread, which the Buffers of its results are carved from, as Node carves small
//! Buffers from its pool; elsewhere each result is copied out of its page into memory of its own.
//!
//! Why pages (issue 27): a million small results, each a Buffer with an `ArrayBuffer` of its own,
//! left the process about 800 MB larger on Node 26 once they were collected. Each `ArrayBuffer`
//! is a few small native allocations (its bytes and V8's and Node's bookkeeping), and glibc keeps
//! the freed ones, scattered among live memory, as resident memory. And each result made first in
//! a `Vec` of its own on a libuv thread left that thread's arena 24 MB larger. Packed, a group's
//! small results are one allocation, and one `ArrayBuffer` per page of them, as the sync calls'
//! small results share slabs.
//!
//! The pages grow on the libuv thread that runs the group, in its arena, which keeps them for
//! the next group it runs (10 to 12 MB a thread after groups of 250,000 small messages): made on
//! the JavaScript thread instead, they left the threads' arenas empty, but their memory, given
//! back to the system and faulted in again batch after batch, made decoding 10,000 frames of
//! 1 KiB 2 to 7% slower (Node 20 and 26, 2-core VM, 2026-12-02).

use std::io::{Cursor, Write};

use crate::error::Failure;

pub mod share;

/// The size of a page: that of the slabs `lib/results.js` carves small results from.
pub const PAGE_BYTES: usize = 8192;

/// Results start at multiples of this in their page, as in Node's pool (so that a typed array of
/// any element size can view one).
const ALIGN: usize = 8;

/// What the layout holds in place of a page for a result that is in none.
pub const NOT_IN_A_PAGE: u32 = u32::MAX;

/// The numbers the layout holds for each result.
pub const LAYOUT_FIELDS: usize = 3;

/// Where a batch's work puts each item's result, in order: [`Results`], or
/// [`Packed`](crate::packed::Packed).
pub trait Sink {
  /// Whether a result of at most `len` bytes is written in place (`push_written`) rather than
  /// made on its own and given (`push`).
  fn fits(&self, len: usize) -> bool;
  /// Whether the items left need not run (a packed batch fails at its first failure).
  fn done(&self) -> bool {
    false
  }
  /// Adds the next result, written by `write` into the sink, at most `room` bytes of it (`room`
  /// must [`fit`](Self::fits)); `write` is given a cursor over the sink's memory and writes past
  /// the cursor's position (as a codec writes into a [`WriteBuf`](zstd::zstd_safe::WriteBuf)).
  /// Its failure is the result.
  fn push_written(&mut self, room: usize, write: impl FnOnce(&mut Cursor<&mut Vec<u8>>) -> Result<(), Failure>);
  /// Adds the next result, made elsewhere.
  fn push(&mut self, result: Result<Vec<u8>, Failure>);
}

/// A batch's results, in order.
#[derive(Default)]
pub struct Results {
  /// The small results, each within one page of [`PAGE_BYTES`], at multiples of [`ALIGN`]; what
  /// lies between them is zeros.
  pages: Vec<u8>,
  /// [`LAYOUT_FIELDS`] `u32` for each result, in native byte order (JavaScript reads them through
  /// a `Uint32Array`): its page, its offset in the page and its length; or [`NOT_IN_A_PAGE`], its
  /// index in `others`, and 0.
  layout: Vec<u8>,
  /// The results in no page, each taken once.
  others: Vec<Option<Result<Vec<u8>, Failure>>>,
  /// Results smaller than this go into the pages (0: none do).
  small_below: usize,
  /// How many pages the layout names (the last may hold only empty results).
  page_count: usize,
}

impl Results {
  /// Room for the layout of `count` results, of which those smaller than `small_below` go into
  /// the pages.
  pub fn new(count: usize, small_below: usize) -> Result<Self, Failure> {
    let layout_bytes = count.saturating_mul(LAYOUT_FIELDS * 4);
    let mut layout = Vec::new();
    layout.try_reserve_exact(layout_bytes).map_err(|_| Failure::OutOfMemory { bytes: layout_bytes })?;
    // Empty: the pages grow as results come, on the thread that makes them (see above).
    let pages = Vec::new();
    Ok(Self { pages, layout, others: Vec::new(), small_below, page_count: 0 })
  }

  /// Writes a result at the end of the pages, moved to the next page if it would cross into it;
  /// where it starts. The codecs write into room reserved but not yet initialised (zeroing it
  /// first was 1% of the time of decoding frames of 1 KiB).
  fn write(
    &mut self,
    room: usize,
    write: impl FnOnce(&mut Cursor<&mut Vec<u8>>) -> Result<(), Failure>,
  ) -> Result<usize, Failure> {
    let at = self.pages.len().next_multiple_of(ALIGN);
    let more = (at + room).saturating_sub(self.pages.len());
    self.pages.try_reserve(more).map_err(|_| Failure::OutOfMemory { bytes: at + room })?;
    // The cursor pads from the end of the pages to `at` with zeros as it is written.
    let mut cursor = Cursor::new(&mut self.pages);
    cursor.set_position(at as u64);
    write(&mut cursor)?;
    if self.pages.len() < at {
      // Nothing was written (an empty result): it starts at `at` all the same.
      self.zeros_to(at)?;
    }
    let written = self.pages.len() - at;
    if written > room {
      // A codec writes no more than the room it was promised: a bug otherwise, failed as one.
      return Err(Failure::Panicked);
    }
    let mut start = at;
    if at % PAGE_BYTES + written > PAGE_BYTES {
      start = at.next_multiple_of(PAGE_BYTES);
      self.zeros_to(start + written)?;
      self.pages.copy_within(at..at + written, start);
      self.pages[at..start].fill(0);
    }
    self.pages.truncate(start + written);
    Ok(start)
  }

  /// Makes the pages `len` long, the bytes added zeros; fails rather than aborts.
  fn zeros_to(&mut self, len: usize) -> Result<(), Failure> {
    let more = len.saturating_sub(self.pages.len());
    self.pages.try_reserve(more).map_err(|_| Failure::OutOfMemory { bytes: len })?;
    self.pages.resize(self.pages.len().max(len), 0);
    Ok(())
  }

  fn push_other(&mut self, result: Result<Vec<u8>, Failure>) {
    let index = u32::try_from(self.others.len()).unwrap_or(u32::MAX);
    self.others.push(Some(result));
    self.push_layout([NOT_IN_A_PAGE, index, 0]);
  }

  fn push_layout(&mut self, fields: [u32; LAYOUT_FIELDS]) {
    for field in fields {
      self.layout.extend_from_slice(&field.to_ne_bytes());
    }
  }

  /// How many results there are.
  pub fn count(&self) -> usize {
    self.layout.len() / (LAYOUT_FIELDS * 4)
  }

  /// Where each result is (see the field `layout`), as bytes.
  pub fn layout(&self) -> &[u8] {
    &self.layout
  }

  /// How many pages there are.
  pub fn page_count(&self) -> usize {
    self.page_count
  }

  /// The bytes of page `index` (the last may be short, even empty; past the end, `None`).
  pub fn page(&self, index: usize) -> Option<&[u8]> {
    if index >= self.page_count {
      return None;
    }
    let start = index.checked_mul(PAGE_BYTES)?.min(self.pages.len());
    self.pages.get(start..self.pages.len().min(start.saturating_add(PAGE_BYTES)))
  }

  /// Result `index`: its bytes in a page, or the result it holds on its own (once: `None` after
  /// that, and past the end).
  pub fn take(&mut self, index: usize) -> Option<Taken<'_>> {
    let [page, offset, len] = self.fields(index)?;
    if page != NOT_IN_A_PAGE {
      let start = (page as usize).checked_mul(PAGE_BYTES)?.checked_add(offset as usize)?;
      return self.pages.get(start..start.checked_add(len as usize)?).map(Taken::Paged);
    }
    self.others.get_mut(offset as usize)?.take().map(Taken::Own)
  }

  /// The layout's numbers for result `index`.
  fn fields(&self, index: usize) -> Option<[u32; LAYOUT_FIELDS]> {
    let at = index.checked_mul(LAYOUT_FIELDS * 4)?;
    let bytes = self.layout.get(at..at + LAYOUT_FIELDS * 4)?;
    let field = |n: usize| u32::from_ne_bytes([bytes[4 * n], bytes[4 * n + 1], bytes[4 * n + 2], bytes[4 * n + 3]]);
    Some([field(0), field(1), field(2)])
  }
}

impl Sink for Results {
  /// Whether a result of at most `len` bytes goes into the pages.
  fn fits(&self, len: usize) -> bool {
    len < self.small_below && len <= PAGE_BYTES
  }

  fn push_written(&mut self, room: usize, write: impl FnOnce(&mut Cursor<&mut Vec<u8>>) -> Result<(), Failure>) {
    let before = self.pages.len();
    match self.write(room, write) {
      Ok(start) => {
        let len = self.pages.len() - start;
        // The page count stays far below `u32::MAX` (`NOT_IN_A_PAGE`): 32 TiB of pages.
        let page = u32::try_from(start / PAGE_BYTES).unwrap_or(NOT_IN_A_PAGE - 1);
        self.page_count = self.page_count.max(page as usize + 1);
        self.push_layout([page, (start % PAGE_BYTES) as u32, len as u32]);
      }
      Err(failure) => {
        self.pages.truncate(before);
        self.push_other(Err(failure));
      }
    }
  }

  /// Copied into the pages if it fits, else kept as it is.
  fn push(&mut self, result: Result<Vec<u8>, Failure>) {
    match result {
      Ok(bytes) if self.fits(bytes.len()) => {
        self.push_written(bytes.len(), |cursor| cursor.write_all(&bytes).map_err(|_| Failure::OutOfMemory { bytes: bytes.len() }))
      }
      result => self.push_other(result),
    }
  }
}

/// A result, as [`Results::take`] gives it.
pub enum Taken<'a> {
  /// The bytes of a small result, in its page.
  Paged(&'a [u8]),
  /// A result in no page: a large one, or a failure.
  Own(Result<Vec<u8>, Failure>),
}

#[cfg(test)]
mod tests {
  use super::*;

  fn layout(results: &Results) -> Vec<[u32; 3]> {
    let numbers: Vec<u32> =
      results.layout().chunks_exact(4).map(|bytes| u32::from_ne_bytes(bytes.try_into().expect("4 bytes"))).collect();
    numbers.chunks_exact(3).map(|fields| [fields[0], fields[1], fields[2]]).collect()
  }

  fn bytes(len: usize, fill: u8) -> Vec<u8> {
    vec![fill; len]
  }

  #[test]
  fn small_results_are_packed_aligned_and_never_cross_a_page() {
    let mut results = Results::new(6, 4096).expect("room");
    results.push(Ok(bytes(3, 1)));
    results.push(Ok(bytes(4095, 2)));
    // 8 + 4096 = 4104: 4095 more would cross into the second page, so they start it.
    results.push(Ok(bytes(4095, 3)));
    // Written in place with more room than it used: the rest is given back.
    results.push_written(4000, |cursor| cursor.write_all(&[4; 10]).map_err(|_| Failure::Truncated));
    results.push(Ok(Vec::new()));
    assert_eq!(results.count(), 5);
    assert_eq!(layout(&results), [[0, 0, 3], [0, 8, 4095], [1, 0, 4095], [1, 4096, 10], [1, 4112, 0]]);
    let first = results.page(0).expect("a page");
    assert_eq!(first.len(), PAGE_BYTES);
    assert_eq!(&first[..8], &[1, 1, 1, 0, 0, 0, 0, 0]);
    assert!(first[8..4103].iter().all(|&byte| byte == 2) && first[4103..].iter().all(|&byte| byte == 0));
    // The empty result ends the pages at its (aligned) start.
    let second = results.page(1).expect("a page");
    assert_eq!(second.len(), 4112);
    assert!(second[..4095].iter().all(|&byte| byte == 3) && second[4095] == 0);
    assert!(second[4096..4106].iter().all(|&byte| byte == 4) && second[4106..].iter().all(|&byte| byte == 0));
    assert!(results.page(2).is_none());
    assert_eq!(results.page_count(), 2);
    assert!(matches!(results.take(1), Some(Taken::Paged(bytes)) if bytes.len() == 4095 && bytes.iter().all(|&byte| byte == 2)));
    assert!(matches!(results.take(4), Some(Taken::Paged(&[]))));
  }

  #[test]
  fn a_result_written_past_the_end_of_its_page_moves_to_the_next() {
    let mut results = Results::new(3, 4096).expect("room");
    results.push(Ok(bytes(4090, 1)));
    results.push(Ok(bytes(3000, 9)));
    // 7096 + 3000 > 8192 once written: moved to the second page, zeros left behind.
    results.push_written(4000, |cursor| cursor.write_all(&[7; 3000]).map_err(|_| Failure::Truncated));
    assert_eq!(layout(&results)[1..], [[0, 4096, 3000], [1, 0, 3000]]);
    let first = results.page(0).expect("a page");
    assert_eq!(first.len(), PAGE_BYTES);
    assert!(first[4096..7096].iter().all(|&byte| byte == 9) && first[7096..].iter().all(|&byte| byte == 0));
    assert!(results.page(1).expect("a page").iter().all(|&byte| byte == 7));
  }

  fn own(taken: Option<Taken<'_>>) -> Option<Result<Vec<u8>, Failure>> {
    match taken {
      Some(Taken::Own(result)) => Some(result),
      _ => None,
    }
  }

  #[test]
  fn large_results_and_failures_are_taken_once_each() {
    let mut results = Results::new(4, 4096).expect("room");
    results.push(Ok(bytes(4096, 5)));
    results.push(Err(Failure::Aborted));
    results.push_written(100, |_| Err(Failure::Truncated));
    results.push(Ok(bytes(1, 6)));
    assert_eq!(layout(&results), [[NOT_IN_A_PAGE, 0, 0], [NOT_IN_A_PAGE, 1, 0], [NOT_IN_A_PAGE, 2, 0], [0, 0, 1]]);
    // A failed write leaves nothing behind in the pages.
    assert_eq!(results.page(0), Some(&[6][..]));
    assert_eq!(own(results.take(0)).expect("a result").expect("bytes").len(), 4096);
    assert!(results.take(0).is_none());
    assert!(matches!(own(results.take(2)), Some(Err(Failure::Truncated))));
    assert!(matches!(own(results.take(1)), Some(Err(Failure::Aborted))));
    // One in a page, as many times as asked.
    for _ in 0..2 {
      assert!(matches!(results.take(3), Some(Taken::Paged(&[6]))));
    }
    assert!(results.take(4).is_none());
    assert!(results.take(usize::MAX).is_none());
  }

  #[test]
  fn with_no_pages_every_result_is_on_its_own() {
    let mut results = Results::new(1, 0).expect("room");
    assert!(!results.fits(0));
    results.push(Ok(bytes(1, 1)));
    assert_eq!(layout(&results), [[NOT_IN_A_PAGE, 0, 0]]);
    assert_eq!(results.page_count(), 0);
    assert_eq!(results.page(0), None);
  }

  #[test]
  fn an_empty_result_after_a_full_page_is_in_a_page_of_its_own() {
    let mut results = Results::new(3, 4096).expect("room");
    results.push(Ok(bytes(4095, 1)));
    results.push(Ok(bytes(4095, 2)));
    // The pages end at 8191: the next result starts at 8192, the second page.
    results.push(Ok(Vec::new()));
    assert_eq!(layout(&results), [[0, 0, 4095], [0, 4096, 4095], [1, 0, 0]]);
    assert_eq!(results.page_count(), 2);
    assert_eq!(results.page(1), Some(&[][..]));
  }
}
