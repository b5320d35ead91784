//! Work shared between the groups of one batch. Each group is a threadpool work item that runs its
//! own items in order; a group that runs out takes the second half of what is left of the group
//! with the most left, and runs it as a range of its own (which others may split in turn), its
//! results apart from the group it came from (a *segment*; `many.js` puts them back in order).
//!
//! Why: the groups of a batch are equal shares of its bytes, but they do not run equally fast.
//! The JavaScript thread copies and queues them one after another, and with more groups than
//! cores the kernel gives them turns of a few milliseconds each. A batch of 10,000 compressions
//! of 1 KiB (four groups on the 2-core VM, Node 26, 2026-12-05, `perf sched`) ended with one
//! group running alone for up to 5.5 ms of its 28, one core idle meanwhile.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The items `[next, end)` of one group that are still to run, taken one at a time by the range's
/// runner or half at a time by another group's.
pub struct Range<G> {
  /// What the items are (the group's inputs and call), shared with whoever splits the range.
  pub group: Arc<G>,
  /// The index of its first item.
  first: u32,
  /// `next` in the low 32 bits, `end` in the high: one atomic, so that taking the next item and
  /// splitting off the rest never both take the same item.
  bounds: AtomicU64,
}

fn pack(next: u32, end: u32) -> u64 {
  u64::from(next) | (u64::from(end) << 32)
}

fn unpack(bounds: u64) -> (u32, u32) {
  (bounds as u32, (bounds >> 32) as u32)
}

/// Where the second half of items `[next, end)` starts, if two or more are left (so that each
/// half has one at least).
fn middle(next: u32, end: u32) -> Option<u32> {
  (end.saturating_sub(next) >= 2).then(|| next + (end - next).div_ceil(2))
}

impl<G> Range<G> {
  pub fn new(group: Arc<G>, next: u32, end: u32) -> Self {
    Self { group, first: next, bounds: AtomicU64::new(pack(next, end.max(next))) }
  }

  /// The index of its first item (taken or not).
  pub fn first(&self) -> u32 {
    self.first
  }

  /// The index of the next item to run, if any is left.
  pub fn next(&self) -> Option<u32> {
    let mut bounds = self.bounds.load(Ordering::Acquire);
    loop {
      let (next, end) = unpack(bounds);
      if next >= end {
        return None;
      }
      match self.bounds.compare_exchange_weak(bounds, pack(next + 1, end), Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => return Some(next),
        Err(now) => bounds = now,
      }
    }
  }

  /// The index past its last item (lowered as halves of it are taken).
  pub fn end(&self) -> u32 {
    unpack(self.bounds.load(Ordering::Acquire)).1
  }

  /// How many items are left.
  pub fn left(&self) -> u32 {
    let (next, end) = unpack(self.bounds.load(Ordering::Acquire));
    end.saturating_sub(next)
  }

  /// Leaves no item to run or to split off.
  pub fn finish(&self) {
    self
      .bounds
      .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bounds| {
        let (_, end) = unpack(bounds);
        Some(pack(end, end))
      })
      .ok();
  }

  /// Takes the second half of the items left (at least one, and only where two or more are
  /// left): their bounds.
  fn split(&self) -> Option<(u32, u32)> {
    let mut bounds = self.bounds.load(Ordering::Acquire);
    loop {
      let (next, end) = unpack(bounds);
      let middle = middle(next, end)?;
      match self.bounds.compare_exchange_weak(bounds, pack(next, middle), Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => return Some((middle, end)),
        Err(now) => bounds = now,
      }
    }
  }
}

/// The ranges of one batch's groups, for them to split. A range is held by its runner; the team
/// only refers to it, so that a group that ends (or never runs) lets its inputs go at once.
pub struct Team<G> {
  ranges: Mutex<Vec<Weak<Range<G>>>>,
}

impl<G> Default for Team<G> {
  fn default() -> Self {
    Self { ranges: Mutex::new(Vec::new()) }
  }
}

impl<G> Team<G> {
  /// Makes `range` one that others may split.
  pub fn join(&self, range: &Arc<Range<G>>) {
    let mut ranges = self.ranges.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    ranges.retain(|range| range.strong_count() > 0);
    ranges.push(Arc::downgrade(range));
  }

  /// The second half of what is left of the range with the most left, as a range of its own
  /// (joined, so that it may be split in turn); `None` once no range has that much left. How
  /// much is left is `weight(group, next, end)` for items `[next, end)`, and a half must weigh
  /// `min_half` or more: a half of a few small items saves less than its results cost apart.
  pub fn take_half(&self, min_half: u64, weight: impl Fn(&G, u32, u32) -> u64) -> Option<Arc<Range<G>>> {
    let left = |range: &Range<G>| {
      let (next, end) = unpack(range.bounds.load(Ordering::Acquire));
      middle(next, end).map_or(0, |middle| weight(&range.group, middle, end))
    };
    loop {
      let fullest = {
        let mut ranges = self.ranges.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        ranges.retain(|range| range.strong_count() > 0);
        ranges.iter().filter_map(Weak::upgrade).max_by_key(|range| left(range))?
      };
      if left(&fullest) < min_half.max(1) {
        // The fullest has too little left: so has every other.
        return None;
      }
      // Split outside the lock; another group may have split it or run it down meanwhile (then
      // the ranges are weighed again).
      if let Some((next, end)) = fullest.split() {
        let half = Arc::new(Range::new(fullest.group.clone(), next, end));
        self.join(&half);
        return Some(half);
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use std::collections::BTreeSet;
  use std::sync::Barrier;

  use super::*;

  #[test]
  fn a_range_gives_its_items_in_order_then_none() {
    let range = Range::new(Arc::new(()), 3, 6);
    assert_eq!([range.next(), range.next(), range.next(), range.next()], [Some(3), Some(4), Some(5), None]);
    assert!(Range::new(Arc::new(()), 5, 2).next().is_none());
    let range = Range::new(Arc::new(()), 0, 10);
    range.finish();
    assert_eq!((range.next(), range.left(), range.first()), (None, 0, 0));
  }

  fn count(_: &char, next: u32, end: u32) -> u64 {
    u64::from(end - next)
  }

  #[test]
  fn the_second_half_of_the_fullest_range_is_taken_and_may_be_split_again() {
    let team = Team::default();
    let small = Arc::new(Range::new(Arc::new('a'), 0, 3));
    let large = Arc::new(Range::new(Arc::new('b'), 10, 20));
    team.join(&small);
    team.join(&large);
    let half = team.take_half(1, count).expect("a half");
    assert_eq!((*half.group, half.first(), half.next(), large.left()), ('b', 15, Some(15), 5));
    // Left: `small` 3, `large` 5 and `half` 4, whose halves weigh 1, 2 and 2: none of 3.
    assert!(team.take_half(3, count).is_none());
    let quarter = team.take_half(2, count).expect("a half");
    assert_eq!(quarter.left(), 2);
    assert_eq!(large.left() + half.left(), 7);
    while large.next().is_some() {}
    while half.next().is_some() {}
    while small.next().is_some() {}
    assert_eq!(team.take_half(1, count).map(|range| range.left()), Some(1));
    assert!(team.take_half(1, count).is_none());
  }

  #[test]
  fn a_range_no_one_holds_is_not_split() {
    let team = Team::default();
    team.join(&Arc::new(Range::new(Arc::new(()), 0, 100)));
    assert!(team.take_half(1, |_, next, end| u64::from(end - next)).is_none());
  }

  /// Threads running ranges and taking halves of each other's: every item runs exactly once.
  #[test]
  fn every_item_runs_once_however_the_ranges_are_split() {
    const THREADS: u32 = 4;
    const ITEMS: u32 = 20_000;
    let team = Arc::new(Team::default());
    let ranges: Vec<_> =
      (0..THREADS).map(|i| Arc::new(Range::new(Arc::new(i), i * ITEMS / THREADS, (i + 1) * ITEMS / THREADS))).collect();
    for range in &ranges {
      team.join(range);
    }
    let start = Arc::new(Barrier::new(THREADS as usize));
    let threads: Vec<_> = ranges
      .into_iter()
      .enumerate()
      .map(|(thread, range)| {
        let (team, start) = (team.clone(), start.clone());
        std::thread::spawn(move || {
          start.wait();
          let mut ran = Vec::new();
          let mut current = Some(range);
          while let Some(range) = current {
            while let Some(item) = range.next() {
              ran.push((*range.group, item));
              // Uneven work, so that the ranges are split often.
              if thread == 0 {
                std::hint::black_box((0..200).sum::<u32>());
              }
            }
            current = team.take_half(1, |_, next, end| u64::from(end - next));
          }
          ran
        })
      })
      .collect();
    let mut seen = BTreeSet::new();
    for thread in threads {
      for (group, item) in thread.join().expect("no panic") {
        assert_eq!(group, item / (ITEMS / THREADS), "item {item} ran as part of group {group}");
        assert!(seen.insert(item), "item {item} ran twice");
      }
    }
    assert_eq!(seen.len() as u32, ITEMS);
  }
}
