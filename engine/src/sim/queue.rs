//! The event queue: events ordered by (time, key), smallest first.
//!
//! A radix heap on time (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) with 8-bit digits, around one
//! bucket for the current time. Every queued event lies at or after the time of the last event
//! popped (`now`). An event at a later time `t` waits in the radix bucket of (level, digit): the
//! level is the highest 8-bit digit in which `t` differs from `now`, the digit is `t`'s value there;
//! a bucket is a plain `Vec` the event is appended to. Buckets in (level, digit) order hold ever
//! later times, so when the current time's events are exhausted the first non-empty bucket holds
//! the next time (its minimum, kept per bucket): `now` moves there and that bucket's events are
//! spread into lower levels, the ones at the new `now` into the current bucket.
//!
//! Costs: push O(1); popping within a time O(1) while keys arrive in increasing order within each of
//! two runs (see `Bucket`), O(log n) otherwise; each event moves between buckets at most 8 times in
//! all, typically two or three, always by sequential reads and appends (with 1-bit digits it moved
//! about once per bit of the gap between successive event times: 15 to 20 times). That matters once
//! noise desynchronises the ranks: then nearly every event has a time of its own, and a search tree
//! keyed on time (this queue's predecessor) paid a few cache misses per push in a tree of one node
//! per rank, where the radix buckets are written and read front to back. Finding the first
//! non-empty bucket reads a 2048-bit map through a 32-bit summary. Equal (time, key) never occur.
//!
//! An event pushed before `now` (none of the simulator's models does this; the queue allows it)
//! waits in a small heap that is drained first.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::time::Time;

/// One queued event: its ordering key and two payload words interpreted by the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub key: u64,
    pub host: u32,
    pub data: u32,
}

/// The events of one time, as two sorted runs and a heap. Keys pushed in increasing order go to
/// `fresh`; events re-queued with old keys mostly arrive in increasing order too (they come from
/// an earlier bucket drained in key order) and go to `requeued`; anything else goes to the heap.
#[derive(Default)]
struct Bucket {
    fresh: VecDeque<Entry>,
    requeued: VecDeque<Entry>,
    rest: BinaryHeap<Reverse<Entry>>,
}

impl Bucket {
    #[inline]
    fn push(&mut self, e: Entry) {
        if self.fresh.back().is_none_or(|last| last.key < e.key) {
            self.fresh.push_back(e);
        } else if self.requeued.back().is_none_or(|last| last.key < e.key) {
            self.requeued.push_back(e);
        } else {
            self.rest.push(Reverse(e));
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        let a = self.fresh.front().map_or(u64::MAX, |e| e.key);
        let b = self.requeued.front().map_or(u64::MAX, |e| e.key);
        let c = self.rest.peek().map_or(u64::MAX, |Reverse(e)| e.key);
        if a < b && a < c {
            self.fresh.pop_front()
        } else if b < c {
            self.requeued.pop_front()
        } else {
            self.rest.pop().map(|Reverse(e)| e)
        }
    }

    fn is_empty(&self) -> bool {
        self.fresh.is_empty() && self.requeued.is_empty() && self.rest.is_empty()
    }

    /// The smallest key, if any.
    fn min_key(&self) -> Option<u64> {
        let a = self.fresh.front().map(|e| e.key);
        let b = self.requeued.front().map(|e| e.key);
        let c = self.rest.peek().map(|Reverse(e)| e.key);
        [a, b, c].into_iter().flatten().min()
    }
}

/// Radix buckets: 8 levels of 256 digits, in the order of their times.
const LEVELS: usize = 8;
const BUCKETS: usize = LEVELS * 256;
/// Largest capacity (events) an emptied radix bucket keeps for reuse.
const KEEP_CAPACITY: usize = 4096;

pub struct EventQueue {
    /// Time of `current`: the last time popped (0 at first).
    now: Time,
    current: Bucket,
    /// `radix[level * 256 + digit]`: events at times `t > now` whose highest 8-bit digit differing
    /// from `now` is `level`, where `t`'s digit is `digit`.
    radix: Vec<Vec<(Time, Entry)>>,
    /// Smallest time in each radix bucket (Time::MAX when empty).
    radix_min: Vec<Time>,
    /// Bit `b % 64` of word `b / 64` set: `radix[b]` is not empty; bit `w` of `summary`: word `w`
    /// is not zero.
    occupied: [u64; BUCKETS / 64],
    summary: u32,
    /// Events pushed at a time before `now`, (time, entry) smallest first: popped before the others.
    earlier: BinaryHeap<Reverse<(Time, Entry)>>,
    /// Times `now` has moved (see [`EventQueue::next_events`]).
    advances: u64,
    len: usize,
    peak_len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue {
            now: 0,
            current: Bucket::default(),
            radix: (0..BUCKETS).map(|_| Vec::new()).collect(),
            radix_min: vec![Time::MAX; BUCKETS],
            occupied: [0; BUCKETS / 64],
            summary: 0,
            earlier: BinaryHeap::new(),
            advances: 0,
            len: 0,
            peak_len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Largest number of events queued at once so far.
    pub fn peak_len(&self) -> usize {
        self.peak_len
    }

    /// How many times the current time has moved so far: the events of [`EventQueue::next_events`]
    /// change only when it does.
    pub fn advances(&self) -> u64 {
        self.advances
    }

    /// Events that come right after those of the current time, in no particular order: the first
    /// radix buckets, as long as they hold at most `max` events together. Lets the simulator fetch
    /// their state into the cache before it needs it.
    pub fn next_events(&self, max: usize) -> impl Iterator<Item = &(Time, Entry)> {
        let mut left = max;
        let mut summary = self.summary;
        let (mut w, mut word) = (0, 0u64);
        std::iter::from_fn(move || {
            while word == 0 {
                if summary == 0 {
                    return None;
                }
                w = summary.trailing_zeros() as usize;
                summary &= summary - 1;
                word = self.occupied[w];
            }
            let bucket = &self.radix[w * 64 + word.trailing_zeros() as usize];
            word &= word - 1;
            if bucket.len() > left {
                (summary, word) = (0, 0);
                return None;
            }
            left -= bucket.len();
            Some(bucket.as_slice())
        })
        .flatten()
    }

    /// The radix bucket of a time after `now`.
    #[inline]
    fn bucket_of(&self, time: Time) -> usize {
        let level = (63 - (time ^ self.now).leading_zeros() as usize) / 8;
        level * 256 + (time >> (8 * level)) as usize % 256
    }

    /// Queues `(time, e)` in radix bucket `b`.
    #[inline]
    fn park(&mut self, b: usize, time: Time, e: Entry) {
        self.radix[b].push((time, e));
        self.radix_min[b] = self.radix_min[b].min(time);
        self.occupied[b / 64] |= 1 << (b % 64);
        self.summary |= 1 << (b / 64);
    }

    /// The first non-empty radix bucket, if any.
    #[inline]
    fn first_bucket(&self) -> Option<usize> {
        (self.summary != 0).then(|| {
            let w = self.summary.trailing_zeros() as usize;
            w * 64 + self.occupied[w].trailing_zeros() as usize
        })
    }

    #[inline]
    pub fn push(&mut self, time: Time, e: Entry) {
        self.len += 1;
        self.peak_len = self.peak_len.max(self.len);
        if time == self.now {
            self.current.push(e);
        } else if time > self.now {
            self.park(self.bucket_of(time), time, e);
        } else {
            self.earlier.push(Reverse((time, e)));
        }
    }

    /// Time of the smallest event, if any. O(1).
    pub fn peek_time(&self) -> Option<Time> {
        if let Some(Reverse((t, _))) = self.earlier.peek() {
            Some(*t)
        } else if !self.current.is_empty() {
            Some(self.now)
        } else {
            self.first_bucket().map(|b| self.radix_min[b])
        }
    }

    /// Removes and returns the smallest (time, key) event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Entry)> {
        if !self.earlier.is_empty() {
            self.len -= 1;
            return self.earlier.pop().map(|Reverse(x)| x);
        }
        if self.current.is_empty() {
            let b = self.first_bucket()?;
            self.advance(b);
        }
        let e = self.current.pop().expect("advance fills the current bucket");
        self.len -= 1;
        Some((self.now, e))
    }

    /// Moves `now` to the smallest queued time, the minimum of radix bucket `b`, the first
    /// non-empty one (the current bucket is empty): spreads bucket `b` into lower levels relative to
    /// the new `now`, its events at `now` into `current`.
    fn advance(&mut self, b: usize) {
        self.advances += 1;
        self.now = self.radix_min[b];
        self.radix_min[b] = Time::MAX;
        self.occupied[b / 64] &= !(1 << (b % 64));
        if self.occupied[b / 64] == 0 {
            self.summary &= !(1 << (b / 64));
        }
        let mut spread = std::mem::take(&mut self.radix[b]);
        for &(time, e) in &spread {
            if time == self.now {
                // Mostly in key order already (keys are issued in increasing order), which
                // `Bucket` takes in O(1) each.
                self.current.push(e);
            } else {
                // To a lower level: the new `now` agrees with every event of bucket b from its
                // level up.
                self.park(self.bucket_of(time), time, e);
            }
        }
        // A bucket that held a whole round of a collective gives its memory back: kept, every
        // bucket a round passed through would hold a round's worth.
        if spread.capacity() <= KEEP_CAPACITY {
            spread.clear();
            self.radix[b] = spread;
        }
    }

    /// Puts events at the current time whose keys are all below every event queued at this time:
    /// used to expand a placeholder into the operations it stands for, keyed just above it. The
    /// current time is that of the last event popped, which must not have come from before `now`.
    pub fn push_front_now(&mut self, entries: impl DoubleEndedIterator<Item = Entry>) {
        debug_assert!(self.earlier.is_empty(), "placeholders are expanded at the current time");
        // Entries come largest key first; each goes to the front while it is below everything queued.
        let mut floor = self.current.min_key().unwrap_or(u64::MAX);
        for e in entries.rev() {
            if e.key < floor {
                self.current.fresh.push_front(e);
                self.len += 1;
                floor = e.key;
            } else {
                self.push(self.now, e);
            }
        }
        self.peak_len = self.peak_len.max(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: u64) -> Entry {
        Entry { key, host: 0, data: 0 }
    }

    #[test]
    fn orders_by_time_then_key() {
        let mut q = EventQueue::new();
        q.push(5, e(3));
        q.push(0, e(9));
        q.push(5, e(1));
        q.push(0, e(2));
        q.push(3, e(7));
        let got: Vec<(Time, u64)> = std::iter::from_fn(|| q.pop()).map(|(t, e)| (t, e.key)).collect();
        assert_eq!(got, vec![(0, 2), (0, 9), (3, 7), (5, 1), (5, 3)]);
    }

    #[test]
    fn earlier_time_pushed_while_draining_comes_first() {
        let mut q = EventQueue::new();
        q.push(10, e(1));
        q.push(10, e(2));
        assert_eq!(q.pop().unwrap(), (10, e(1)));
        q.push(4, e(8));
        q.push(10, e(5));
        assert_eq!(q.pop().unwrap(), (4, e(8)));
        assert_eq!(q.pop().unwrap(), (10, e(2)));
        assert_eq!(q.pop().unwrap(), (10, e(5)));
        assert!(q.pop().is_none());
        assert!(q.is_empty());
    }

    #[test]
    fn matches_a_reference_priority_set() {
        // Pseudo-random pushes (some with old, smaller keys) interleaved with pops: every pop must
        // return the minimum of what is queued, as a BTreeSet would.
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut state = 12345u64;
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut now = 0;
        for n in 0..20000u64 {
            let t = now + rnd() % 40;
            let k = if rnd() % 4 == 0 { (rnd() % (n + 1)) * 100_000 + n } else { n * 100_000 };
            q.push(t, e(k));
            reference.insert((t, k));
            while rnd() % 2 == 0 {
                let Some((t, x)) = q.pop() else { break };
                assert_eq!(Some((t, x.key)), reference.pop_first());
                now = t;
            }
        }
        while let Some(t) = q.peek_time() {
            let (t2, x) = q.pop().unwrap();
            assert_eq!(t, t2);
            assert_eq!(Some((t, x.key)), reference.pop_first());
        }
        assert!(q.pop().is_none());
        assert!(reference.is_empty());
    }

    #[test]
    fn matches_a_reference_heap_over_wide_times_with_ties() {
        // Times spread over many radix buckets (from the current time to 2^40 ps later), many
        // events per time (ties broken by key), old keys re-queued, the odd push before the
        // current time, and placeholder expansion at the current time: every pop must return what a
        // reference BinaryHeap of (time, key) returns.
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut state = 987654321u64;
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let (mut now, mut next_key) = (0u64, 1u64 << 40);
        let mut used = std::collections::HashSet::new();
        for n in 0..60000u64 {
            let t = match rnd() % 8 {
                0 => now,
                1 => now + (1 << (rnd() % 41)) + rnd() % 7,
                2 => now.saturating_sub(rnd() % 1000),
                3..=5 => now + rnd() % 16 * 1_000_000,
                _ => now + rnd() % 3_000,
            };
            let k = if rnd() % 5 == 0 { rnd() % (1 << 40) * 64 + n % 64 } else { next_key };
            next_key += 1;
            if !used.insert(k) {
                continue; // keys are unique in the simulator
            }
            q.push(t, e(k));
            reference.push(Reverse((t, k)));
            if rnd() % 500 == 0 && q.peek_time() == Some(now) && q.earlier.is_empty() {
                // Placeholder expansion: keys below everything queued now.
                let base = rnd() % 1000;
                if !(0..3).all(|j| used.insert(base * 4 + j)) {
                    continue;
                }
                q.push_front_now((0..3).map(|j| e(base * 4 + j)));
                reference.extend((0..3).map(|j| Reverse((now, base * 4 + j))));
            }
            assert_eq!(q.len(), reference.len());
            while rnd() % 3 != 0 {
                let expected = reference.pop().map(|Reverse(x)| x);
                assert_eq!(q.peek_time(), expected.map(|(t, _)| t));
                let got = q.pop().map(|(t, x)| (t, x.key));
                assert_eq!(got, expected);
                match got {
                    Some((t, _)) => now = t,
                    None => break,
                }
            }
        }
        while let Some(Reverse(expected)) = reference.pop() {
            assert_eq!(q.pop().map(|(t, x)| (t, x.key)), Some(expected));
        }
        assert!(q.pop().is_none() && q.is_empty() && q.peek_time().is_none());
    }

    #[test]
    fn many_events_at_one_time_come_out_in_key_order() {
        // A whole round of a collective at one time, pushed from a far time with keys out of order
        // across two buckets' worth of moves.
        let mut q = EventQueue::new();
        for k in (0..1000u64).rev() {
            q.push(1 << 30, e(k * 2));
        }
        q.push(5, e(7));
        assert_eq!(q.pop(), Some((5, e(7))));
        for k in 0..1000u64 {
            q.push(1 << 30, e(k * 2 + 1));
        }
        for k in 0..2000u64 {
            assert_eq!(q.pop(), Some((1 << 30, e(k))));
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn next_events_are_the_ones_popped_next() {
        // Whenever it returns k events, they are the k events popped after the current time's.
        let mut q = EventQueue::new();
        let mut state = 42u64;
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        for k in 0..5000u64 {
            q.push(rnd() % 100_000_000, e(k));
        }
        let mut checked = 0;
        while let Some((t, _)) = q.pop() {
            let mut next: Vec<(Time, u64)> = q.next_events(8).map(|&(t, x)| (t, x.key)).collect();
            assert!(next.len() <= 8);
            next.sort();
            let mut copy = EventQueue::new();
            copy.now = q.now;
            for (time, key) in std::iter::from_fn(|| q.pop()).map(|(t, x)| (t, x.key)).collect::<Vec<_>>() {
                copy.push(time, e(key));
            }
            let after: Vec<(Time, u64)> = std::iter::from_fn(|| copy.pop()).map(|(t, x)| (t, x.key)).filter(|&(u, _)| u > t).collect();
            assert_eq!(next, after[..next.len()].to_vec());
            checked += next.len();
            for &(time, key) in &after {
                q.push(time, e(key));
            }
            if after.len() < 100 {
                break;
            }
        }
        assert!(checked > 0);
    }
}
