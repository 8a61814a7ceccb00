//! The event queue: events ordered by (time, key), smallest first.
//!
//! Simulations of collectives put very many events on few distinct times (every rank of a
//! dissemination round acts at the same instant), so events are kept in one bucket per time in a
//! `BTreeMap`. Within a bucket, pushes and pops are O(1) while keys arrive in increasing order
//! within each of two runs (see `Bucket`), O(log n) otherwise. Moving to the next time costs
//! O(log buckets). A time holding a single event (most times, once noise desynchronises the ranks)
//! keeps it inline, without allocating a bucket. Equal (time, key) never occur. The next few
//! events wait sorted in a short look-ahead list in front of the buckets (see [`EventQueue`]).

use std::cmp::Reverse;
use std::collections::btree_map::Entry as MapEntry;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

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
    #[inline(always)]
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

/// The events of a time other than the current one: one inline, or a bucket.
enum Slot {
    One(Entry),
    Many(Box<Bucket>),
}

impl Slot {
    #[inline]
    fn push(&mut self, e: Entry) {
        match self {
            Slot::One(first) => {
                let mut bucket = Box::<Bucket>::default();
                bucket.push(*first);
                bucket.push(e);
                *self = Slot::Many(bucket);
            }
            Slot::Many(bucket) => bucket.push(e),
        }
    }
}

/// The events behind the look-ahead window, bucketed by time.
#[derive(Default)]
struct Buckets {
    /// Time of `current`.
    now: Time,
    current: Bucket,
    /// Buckets other than `current` (later times, or earlier ones pushed while `current` is open).
    others: BTreeMap<Time, Slot>,
    /// Smallest key of `others`, or Time::MAX.
    others_min: Time,
}

impl Buckets {
    fn new() -> Buckets {
        Buckets { others_min: Time::MAX, ..Default::default() }
    }

    #[inline]
    fn push(&mut self, time: Time, e: Entry) {
        if time == self.now {
            self.current.push(e);
        } else {
            match self.others.entry(time) {
                MapEntry::Vacant(v) => {
                    v.insert(Slot::One(e));
                }
                MapEntry::Occupied(mut o) => o.get_mut().push(e),
            }
            self.others_min = self.others_min.min(time);
        }
    }

    /// Time of the smallest event, if any. O(1) except when the current bucket is exhausted.
    fn peek_time(&self) -> Option<Time> {
        if self.now <= self.others_min && !self.current.is_empty() {
            Some(self.now)
        } else {
            self.others.first_key_value().map(|(&t, _)| t)
        }
    }

    /// Removes and returns the smallest (time, key) event.
    #[inline]
    fn pop(&mut self) -> Option<(Time, Entry)> {
        loop {
            if self.now <= self.others_min {
                if let Some(e) = self.current.pop() {
                    return Some((self.now, e));
                }
            }
            // Move to the earliest other time, parking the current bucket if it still holds events.
            let (time, slot) = self.others.pop_first()?;
            if !self.current.is_empty() {
                self.others.insert(self.now, Slot::Many(Box::new(std::mem::take(&mut self.current))));
            }
            match slot {
                Slot::One(e) => self.current.push(e), // reuses the current bucket's allocation
                Slot::Many(bucket) => self.current = *bucket,
            }
            self.now = time;
            self.others_min = self.others.first_key_value().map_or(Time::MAX, |(&t, _)| t);
        }
    }

    /// Puts an event at `time` whose key is below every event queued at that time, if it can go
    /// to the front of the current bucket in O(1); gives it back otherwise.
    #[inline]
    fn push_front(&mut self, time: Time, e: Entry) -> Result<(), Entry> {
        if time == self.now && self.now <= self.others_min && self.current.min_key().is_none_or(|k| e.key < k) {
            self.current.fresh.push_front(e);
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// Events the queue keeps sorted ahead of the buckets, so the simulator can see what comes next
/// and fetch the state those events will touch while it handles the current one.
pub const AHEAD: usize = 16;

/// The event queue: the next events in order (`ahead`: at least [`AHEAD`] of them while the
/// buckets hold more), then the rest in time buckets. Everything in `ahead` comes before
/// everything in `buckets`, so popping takes its front (refilling it from the buckets, [`AHEAD`]
/// at a time, when it is down to [`AHEAD`]), and a push that falls before the last of `ahead` is
/// inserted into it (a short move: it holds a few dozen entries but right after a placeholder
/// expanded, whose operations go to its front in O(1)).
#[derive(Default)]
pub struct EventQueue {
    ahead: VecDeque<(Time, Entry)>,
    buckets: Buckets,
    len: usize,
    peak_len: usize,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue { ahead: VecDeque::with_capacity(2 * AHEAD), buckets: Buckets::new(), len: 0, peak_len: 0 }
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

    #[inline]
    pub fn push(&mut self, time: Time, e: Entry) {
        self.len += 1;
        self.peak_len = self.peak_len.max(self.len);
        self.place(time, e);
    }

    #[inline]
    fn place(&mut self, time: Time, e: Entry) {
        match self.ahead.back() {
            Some(&(t, last)) if (time, e.key) < (t, last.key) => {
                let at = self.ahead.partition_point(|&(t, x)| (t, x.key) < (time, e.key));
                self.ahead.insert(at, (time, e));
            }
            _ => self.buckets.push(time, e),
        }
    }

    /// Time of the smallest event, if any. O(1) except when the current bucket is exhausted.
    pub fn peek_time(&self) -> Option<Time> {
        match self.ahead.front() {
            Some(&(t, _)) => Some(t),
            None => self.buckets.peek_time(),
        }
    }

    /// The `n`-th event to be popped from now on (0: the next), if the look-ahead holds it (it
    /// does for `n < AHEAD` whenever that many events are queued). Events pushed later may still
    /// come before it.
    #[inline]
    pub fn ahead(&self, n: usize) -> Option<(Time, Entry)> {
        self.ahead.get(n).copied()
    }

    /// Removes and returns the smallest (time, key) event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Entry)> {
        if self.ahead.len() <= AHEAD {
            self.refill();
        }
        let next = self.ahead.pop_front();
        if next.is_some() {
            self.len -= 1;
        }
        next
    }

    /// Tops the look-ahead up to twice its reach, so that most pops only take its front.
    #[inline(never)]
    fn refill(&mut self) {
        while self.ahead.len() < 2 * AHEAD {
            match self.buckets.pop() {
                Some(next) => self.ahead.push_back(next),
                None => break,
            }
        }
    }

    /// Puts events at the current time whose keys are all below every event queued at this time:
    /// used to expand a placeholder into the operations it stands for, keyed just above it.
    pub fn push_front_now(&mut self, now: Time, entries: impl DoubleEndedIterator<Item = Entry>) {
        // Entries come largest key first; each goes to the front of the buckets' current time if it
        // can, else where it belongs.
        for e in entries.rev() {
            self.len += 1;
            match (self.ahead.front(), self.ahead.back()) {
                (Some(&(t, first)), _) if (now, e.key) < (t, first.key) => self.ahead.push_front((now, e)),
                (_, Some(&(t, last))) if (now, e.key) < (t, last.key) => self.place(now, e),
                _ => {
                    if let Err(e) = self.buckets.push_front(now, e) {
                        self.buckets.push(now, e);
                    }
                }
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
    fn push_front_now_goes_before_the_events_of_its_time() {
        // Placeholders of 40 ranks at time 0 (more than the look-ahead holds), a later event; the
        // third placeholder expands into three events keyed just above it.
        let mut q = EventQueue::new();
        q.push(7, e(1));
        for r in 0..40 {
            q.push(0, e(r << 32));
        }
        assert_eq!(q.pop().unwrap(), (0, e(0)));
        assert_eq!(q.pop().unwrap(), (0, e(1 << 32)));
        assert_eq!(q.pop().unwrap(), (0, e(2 << 32)));
        q.push_front_now(0, [(2 << 32) + 1, (2 << 32) + 2, (2 << 32) + 3].into_iter().map(e));
        assert_eq!(q.len(), 37 + 3 + 1);
        let keys: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|(_, x)| x.key).collect();
        let mut expected = vec![(2 << 32) + 1, (2 << 32) + 2, (2 << 32) + 3];
        expected.extend((3..40).map(|r| r << 32));
        expected.push(1);
        assert_eq!(keys, expected);
        // The same with the whole queue behind the look-ahead's reach: into the buckets' front.
        let mut q = EventQueue::new();
        q.push(0, e(10));
        q.push_front_now(0, [3, 4].into_iter().map(e));
        assert_eq!(std::iter::from_fn(|| q.pop()).map(|(_, x)| x.key).collect::<Vec<_>>(), vec![3, 4, 10]);
        assert_eq!(q.peak_len(), 3);
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
                // The look-ahead shows the next events in order, as many as AHEAD.
                for (n, &(_, k)) in reference.iter().take(AHEAD).enumerate() {
                    assert_eq!(q.ahead(n).map(|(_, x)| x.key), Some(k));
                }
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
}
