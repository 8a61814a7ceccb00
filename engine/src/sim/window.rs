//! Windowed execution: the events of a time window taken host by host instead of in time order,
//! with the results and keys of the time-ordered loop (docs/models.md, "Noise", Cost).
//!
//! When every message between hosts takes at least `width` to arrive (eager LogGOPS: o + L) and
//! nothing a host does starts before the event that caused it (one CPU per host), nothing a host
//! does inside a window `[k width, (k+1) width)` can reach another host before the
//! window ends. So the window's events can run host after host, each host's in (time, key) order,
//! and every host goes through the same states as in the time-ordered loop. Consecutive events then
//! touch neighbouring hosts, which keeps memory traffic streaming once noise has scattered the ranks
//! in time (the time-ordered loop then jumps between random hosts and pays a cache miss each).
//!
//! Keys are the one thing the time-ordered loop hands out in global order (a counter, in the order
//! events are handled), and they decide the order of simultaneous events of a host. Inside a window
//! a created event gets a provisional key (with [`PROVISIONAL`] set: after every key issued
//! before the window, in creation order). That orders a host's own in-window events correctly,
//! because only the host itself creates events that land in its window. When the window is done,
//! a replay of its handled events in time-ordered order (time, then final key) gives every
//! provisional key the value the counter would have given it, and events already queued for later
//! windows are patched before anyone compares them.
//!
//! Since a window's hosts do not affect each other, threads can share it: each worker keeps the
//! windows of its own block of hosts ([`Windows::for_worker`]), its provisional keys marked with its
//! index, and at the end of a window all workers' creators are replayed together as one window's
//! ([`Windows::finish_joint`]), into one table of final keys ([`FinalKeys`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use crate::prefetch::prefetch;
use crate::sim::queue::Entry;
use crate::time::Time;

/// Marks a provisional key; the low bits count the keys issued in the current window by the
/// worker in the bits from [`WORKER_SHIFT`] (parallel windows; 0 otherwise).
pub const PROVISIONAL: u64 = 1 << 63;
const WORKER_SHIFT: u32 = 56;
const INDEX_MASK: u64 = (1 << WORKER_SHIFT) - 1;
/// How many workers can share a run (6 bits of a provisional key).
pub const MAX_WORKERS: usize = 64;
const UNSET: u64 = u64::MAX;
/// The widest window: a creator keeps its time in the window in 24 bits.
pub const MAX_WIDTH: Time = (1 << 24) - 1;
/// A creator's count of keys when it created this many or more (then kept in `final_keys`).
const MANY: u32 = 255;
/// The replay sorts a window's creators into up to this many buckets by time in one pass over
/// memory, then each bucket by the rest of the time where it fits in cache.
const BUCKETS_LOG2: u32 = 6;
/// Later windows up to this many ahead are kept in a ring, the others in a map.
const NEAR: u64 = 64;
/// A run of simultaneous creators in at most this many ascending runs is merged, not radix-sorted.
const FEW_RUNS: usize = 8;
/// How many creators ahead the replay starts loading the final key of one created in the window.
const REPLAY_AHEAD: usize = 16;

/// An event waiting for a later window, with the host it belongs to and its time from the start
/// of its window (24 bytes: every event is written, sorted and read once more in a window).
#[derive(Clone, Copy)]
struct Item {
    since_start: u32,
    owner: u32,
    entry: Entry,
}

/// A handled event of the current window that created keys: its time from the window's start
/// (the high 24 bits of `time_count`), how many keys it created (the low 8 bits, or [`MANY`]: see
/// `final_keys`), the first of them (the others follow) and its own key. 16 bytes: every creator
/// is written, sorted and read once more.
#[derive(Clone, Copy)]
struct Creator {
    time_count: u32,
    first: u32,
    key: u64,
}

impl Creator {
    #[inline]
    fn time(&self) -> u32 {
        self.time_count >> 8
    }
}

/// The final values of the provisional keys of a window of a parallel run, from the joint replay.
#[derive(Default)]
pub struct FinalKeys {
    keys: Vec<u64>,
    offsets: Vec<u64>,
}

impl FinalKeys {
    /// The final value of `key`: a provisional key of the window replayed, or a final one.
    #[inline]
    pub fn of(&self, key: u64) -> u64 {
        if key & PROVISIONAL != 0 {
            self.keys[index_in(&self.offsets, key)]
        } else {
            key
        }
    }
}

/// The event queue of windowed execution.
pub struct Windows {
    width: Time,
    hosts: usize,
    /// End (exclusive) of the current window, and the index (time / width) of the next.
    end: Time,
    base: u64,
    /// The current window's events from earlier windows, sorted by (owner, time, key), and the
    /// position of the next one.
    current: Vec<Item>,
    next: usize,
    /// The host whose events are being handled, and its events created in this window (largest
    /// first: a host rarely has more than two).
    host: u32,
    local: Vec<(Time, Entry)>,
    /// Later windows: `near[i]` is window `base + i`, `far` those beyond the ring.
    near: VecDeque<Vec<Item>>,
    far: BTreeMap<u64, Vec<Item>>,
    /// Scratch space of the sorts.
    counts: Vec<u32>,
    sorted: Vec<Item>,
    creator_scratch: Vec<Creator>,
    sorted_creators: Vec<Creator>,
    /// Scratch space of the joint replay: a run of one time from several workers, and where each
    /// worker's sorted creators are.
    group: Vec<Creator>,
    cursors: Vec<usize>,
    /// Provisional keys issued in this window.
    issued: u32,
    /// The window's creators in handling order, and how many fall in each bucket of time
    /// (`time >> bucket_shift`).
    creators: Vec<Creator>,
    bucket_sizes: Vec<u32>,
    bucket_shift: u32,
    /// Events queued for later windows (`near`, `far`) with provisional keys: (window, position).
    patches: Vec<(u64, u32)>,
    /// By provisional key: its final value once replayed; before that, at the first key of a
    /// creator of [`MANY`] keys or more, how many.
    final_keys: Vec<u64>,
    /// Parallel windows: this worker's index (in the bits of a provisional key), and whether a
    /// window ends by handing back to the caller (which replays all workers' keys at once,
    /// [`Windows::finish_joint`]) instead of opening the next by itself.
    worker: u64,
    joint: bool,
    /// Where each worker's provisional keys begin in `final_keys` during a replay (one worker: 0).
    offsets: Vec<u64>,
    len: usize,
    peak_len: usize,
}

impl Windows {
    /// Windows of `width` (> 0) over `hosts` hosts: no event may create an event for another host
    /// less than `width` later.
    pub fn new(width: Time, hosts: usize) -> Windows {
        assert!(width > 0 && width <= MAX_WIDTH, "windows need a width of 1 to 2^24 - 1 ps");
        let bucket_shift = bits(width - 1).saturating_sub(BUCKETS_LOG2);
        Windows {
            width,
            hosts,
            end: 0,
            base: 0,
            current: Vec::new(),
            next: 0,
            host: 0,
            local: Vec::new(),
            near: VecDeque::new(),
            far: BTreeMap::new(),
            counts: Vec::new(),
            sorted: Vec::new(),
            creator_scratch: Vec::new(),
            sorted_creators: Vec::new(),
            group: Vec::new(),
            cursors: Vec::new(),
            issued: 0,
            creators: Vec::new(),
            bucket_sizes: vec![0; ((width - 1) >> bucket_shift) as usize + 1],
            bucket_shift,
            patches: Vec::new(),
            final_keys: Vec::new(),
            worker: 0,
            joint: false,
            offsets: vec![0],
            len: 0,
            peak_len: 0,
        }
    }

    /// The windows of worker `worker` of a parallel run: a window ends by returning no event, and
    /// the caller opens the next (`next_window`, `open`) once every worker is done with this one.
    pub fn for_worker(width: Time, hosts: usize, worker: usize) -> Windows {
        assert!(worker < MAX_WORKERS, "at most {MAX_WORKERS} workers");
        Windows { worker: (worker as u64) << WORKER_SHIFT, joint: true, ..Windows::new(width, hosts) }
    }

    pub fn peak_len(&self) -> usize {
        self.peak_len
    }

    /// Queues an event of host `owner`. Inside the current window it must belong to the host
    /// being handled.
    #[inline]
    pub fn push(&mut self, time: Time, entry: Entry, owner: u32) {
        self.len += 1;
        self.peak_len = self.peak_len.max(self.len);
        if time < self.end {
            // What makes windows exact; `Sim` runs windowed only where both hold.
            assert!(owner == self.host && time + self.width >= self.end, "an event for another host, or before the window, inside the window");
            let at = self.local.iter().rposition(|&(t, e)| (t, e.key) > (time, entry.key)).map_or(0, |i| i + 1);
            self.local.insert(at, (time, entry));
            return;
        }
        let window = time / self.width;
        let since_start = (time - window * self.width) as u32;
        let items = self.later_mut(window);
        let at = items.len() as u32;
        items.push(Item { since_start, owner, entry });
        if entry.key & PROVISIONAL != 0 {
            self.patches.push((window, at));
        }
    }

    /// The events queued for a later window.
    #[inline]
    fn later_mut(&mut self, window: u64) -> &mut Vec<Item> {
        let ahead = window - self.base;
        if ahead < NEAR {
            while self.near.len() as u64 <= ahead {
                self.near.push_back(Vec::new());
            }
            &mut self.near[ahead as usize]
        } else {
            self.far.entry(window).or_default()
        }
    }

    /// A key for an event created by the event being handled.
    #[inline]
    pub fn issue(&mut self) -> u64 {
        self.final_keys.push(UNSET);
        self.issued += 1;
        PROVISIONAL | self.worker | (self.issued - 1) as u64
    }

    /// The `n`-th event of the current window still to come (a hint for prefetching: events
    /// created meanwhile may come first).
    #[inline]
    pub fn ahead(&self, n: usize) -> Option<(Entry, u32)> {
        self.current.get(self.next + n).map(|it| (it.entry, it.owner))
    }

    /// Whether the current window holds events of most hosts (so they are visited nearly in a row).
    #[inline]
    pub fn dense(&self) -> bool {
        self.current.len() * 2 >= self.hosts
    }

    /// The next event: the current host's next one, else the next host's first; at the end of a
    /// window, the keys are made final (`next_key`: the time-ordered loop's counter) and the
    /// next window opens.
    #[inline]
    pub fn pop(&mut self, next_key: &mut u64) -> Option<(Time, Entry)> {
        self.close_creator();
        loop {
            let start = self.end.saturating_sub(self.width);
            let queued = self.current.get(self.next).filter(|it| it.owner == self.host).map(|it| (start + it.since_start as Time, it.entry));
            let local = self.local.last().copied();
            let (time, entry) = match (queued, local) {
                (Some(a), Some(b)) if (b.0, b.1.key) < (a.0, a.1.key) => self.local.pop().expect("seen"),
                (Some(a), _) => {
                    self.next += 1;
                    a
                }
                (None, Some(_)) => self.local.pop().expect("seen"),
                (None, None) => {
                    match self.current.get(self.next) {
                        Some(it) => self.host = it.owner,
                        None if self.joint => {
                            // The worker's share of the joint replay, while the others finish.
                            self.sort_creators();
                            return None;
                        }
                        None => {
                            self.finish_window(next_key);
                            match self.next_window() {
                                Some(window) => self.open(window),
                                None => return None,
                            }
                        }
                    }
                    continue;
                }
            };
            self.len -= 1;
            let since_start = (time - start) as u32;
            self.bucket_sizes[(since_start >> self.bucket_shift) as usize] += 1;
            self.creators.push(Creator { time_count: since_start << 8, key: entry.key, first: self.issued });
            return Some((time, entry));
        }
    }

    /// Forgets the last handled event if it created no key, else notes how many it created.
    #[inline]
    fn close_creator(&mut self) {
        let Some(last) = self.creators.last_mut() else { return };
        if last.time_count & MANY != 0 {
            return; // closed already
        }
        match self.issued - last.first {
            0 => {
                self.bucket_sizes[(last.time() >> self.bucket_shift) as usize] -= 1;
                self.creators.pop();
            }
            count if count < MANY => last.time_count |= count,
            count => {
                last.time_count |= MANY;
                self.final_keys[last.first as usize] = PROVISIONAL | count as u64;
            }
        }
    }

    /// The first later window holding events, if any.
    pub fn next_window(&self) -> Option<u64> {
        let near = self.near.iter().position(|v| !v.is_empty()).map(|i| self.base + i as u64);
        let far = self.far.first_key_value().map(|(&w, _)| w);
        match (near, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Opens window `window` (no earlier one may hold events; in a parallel run it may hold none
    /// of this worker's).
    pub fn open(&mut self, window: u64) {
        // Move the ring on to the window, recycling the finished window's allocation.
        let mut items = std::mem::take(&mut self.current);
        items.clear();
        let mut recycled = Some(items);
        let mut opened = Vec::new();
        // A window beyond the ring: every slot is an earlier, empty window, so the ring moves on
        // whole (hours of simulated time under heavy noise would otherwise turn it once per window).
        let ring = self.near.len() as u64;
        if window.saturating_sub(self.base) > ring {
            self.base = window - ring;
        }
        while self.base <= window {
            let slot = self.near.pop_front().unwrap_or_default();
            if let Some(spare) = recycled.take() {
                self.near.push_back(spare);
            }
            if self.base == window {
                opened = slot;
            } else {
                debug_assert!(slot.is_empty());
                recycled = Some(slot);
            }
            self.base += 1;
        }
        if let Some(mut more) = self.far.remove(&window) {
            opened.append(&mut more);
        }
        self.sort_by_host(&mut opened);
        self.end = (window + 1) * self.width;
        self.current = opened;
        self.next = 0;
        self.host = self.current.first().map_or(u32::MAX, |it| it.owner);
        self.issued = 0;
    }

    /// Sorts a window's events by (owner, time, key): by owner, counting when they are many (most
    /// hosts have one or two) and by radix when they are few, then each host's by (time, key).
    fn sort_by_host(&mut self, items: &mut Vec<Item>) {
        let order = |it: &Item| (it.owner, it.since_start, it.entry.key);
        if items.windows(2).all(|p| order(&p[0]) < order(&p[1])) {
            return;
        }
        if items.len() < self.hosts / 8 {
            radix_sort(items, &mut self.sorted, bits(self.hosts as u64 - 1), |it| it.owner as u64);
            sort_each_host(items);
            return;
        }
        let counts = &mut self.counts;
        counts.clear();
        counts.resize(self.hosts + 1, 0);
        for it in items.iter() {
            counts[it.owner as usize + 1] += 1;
        }
        for h in 1..counts.len() {
            counts[h] += counts[h - 1];
        }
        let sorted = &mut self.sorted;
        sorted.clear();
        sorted.resize(items.len(), Item { since_start: 0, owner: 0, entry: Entry { key: 0, host: 0, data: 0 } });
        for it in items.iter() {
            let at = &mut counts[it.owner as usize];
            sorted[*at as usize] = *it;
            *at += 1;
        }
        sort_each_host(sorted);
        std::mem::swap(items, sorted);
    }

    /// Replays the window's creators in time-ordered order to give each provisional key its final
    /// value, then patches the events queued for later windows.
    fn finish_window(&mut self, next_key: &mut u64) {
        if self.issued == 0 {
            return;
        }
        self.sort_creators();
        let mut creators = std::mem::take(&mut self.sorted_creators);
        self.replay(&mut [&mut creators], next_key);
        self.sorted_creators = creators;
        let final_keys = std::mem::take(&mut self.final_keys);
        self.apply_patches(&final_keys, &[0]);
        self.final_keys = final_keys;
        self.final_keys.clear();
    }

    /// Ends a window of a parallel run: replays the creators of every worker (in worker order, as
    /// made by [`Windows::for_worker`]) together, as one window, into `finals`. Each worker then
    /// patches its events queued for later windows ([`Windows::patch`]) before the next opens.
    pub fn finish_joint(workers: &mut [&mut Windows], next_key: &mut u64, finals: &mut FinalKeys) {
        finals.keys.clear();
        let mut streams: Vec<Vec<Creator>> = workers.iter_mut().map(|w| std::mem::take(&mut w.sorted_creators)).collect();
        let (first, rest) = workers.split_first_mut().expect("at least one worker");
        first.offsets.truncate(1);
        for (w, stream) in rest.iter_mut().zip(&mut streams[1..]) {
            let offset = first.final_keys.len() as u32;
            first.offsets.push(offset as u64);
            first.final_keys.append(&mut w.final_keys);
            stream.iter_mut().for_each(|c| c.first += offset);
        }
        if !first.final_keys.is_empty() {
            let mut slices: Vec<&mut [Creator]> = streams.iter_mut().map(|s| s.as_mut_slice()).collect();
            first.replay(&mut slices, next_key);
        }
        for (w, stream) in workers.iter_mut().zip(streams) {
            w.sorted_creators = stream;
        }
        let first = &mut workers[0];
        std::mem::swap(&mut first.final_keys, &mut finals.keys);
        finals.offsets.clone_from(&first.offsets);
        first.offsets.truncate(1);
    }

    /// Gives this worker's events queued for later windows the final keys of the window just
    /// replayed by [`Windows::finish_joint`].
    pub fn patch(&mut self, finals: &FinalKeys) {
        if !self.patches.is_empty() {
            self.apply_patches(&finals.keys, &finals.offsets);
        }
    }

    /// Where provisional key `key` is in `final_keys` (see `offsets`).
    #[inline]
    fn index_of(&self, key: u64) -> usize {
        index_in(&self.offsets, key)
    }

    /// Gives the events this worker queued for later windows with provisional keys their final
    /// keys.
    fn apply_patches(&mut self, final_keys: &[u64], offsets: &[u64]) {
        let patches = std::mem::take(&mut self.patches);
        for &(window, at) in &patches {
            let key = &mut self.later_mut(window)[at as usize].entry.key;
            *key = final_keys[index_in(offsets, *key)];
        }
        self.patches = patches;
        self.patches.clear();
    }

    /// Sorts the window's creators by time into `sorted_creators`: by bucket of time in one pass
    /// over memory, then each bucket by the rest of the time, in cache.
    fn sort_creators(&mut self) {
        self.bucket_by_time();
        let mut creators = std::mem::take(&mut self.sorted_creators);
        let low_bits = (1u32 << self.bucket_shift) - 1;
        let mut start = 0;
        for b in 0..self.bucket_sizes.len() {
            let end = start + std::mem::take(&mut self.bucket_sizes[b]) as usize;
            radix_sort(&mut creators[start..end], &mut self.creator_scratch, self.bucket_shift, |c| (c.time() & low_bits) as u64);
            start = end;
        }
        self.sorted_creators = creators;
        self.creators.clear();
    }

    /// Replays creators sorted by time, from one or more workers (`streams`, each sorted), to hand
    /// out the final keys: the creators of each time together, in the order of their keys.
    fn replay(&mut self, streams: &mut [&mut [Creator]], next_key: &mut u64) {
        // Final keys are below every provisional one, so at equal times they come first, and in
        // order; the provisional ones among themselves in the order of their final values, which
        // their creators (earlier, or at the same time) hand out during the replay.
        let mut at = std::mem::take(&mut self.cursors);
        at.clear();
        at.resize(streams.len(), 0);
        let mut group = std::mem::take(&mut self.group);
        loop {
            // The earliest next creator: in the first stream that has its time (an earlier stream
            // with the same time would have been taken).
            let mut earliest: Option<(usize, u32)> = None;
            for (k, stream) in streams.iter().enumerate() {
                if let Some(c) = stream.get(at[k]) {
                    if earliest.is_none_or(|(_, t)| c.time() < t) {
                        earliest = Some((k, c.time()));
                    }
                }
            }
            let Some((k, t)) = earliest else { break };
            let start = at[k];
            self.prefetch_replay(&streams[k][start..]);
            at[k] = start + streams[k][start..].iter().take_while(|c| c.time() == t).count();
            // Most runs are one stream's (and one creator): replayed in place.
            if !(k + 1..streams.len()).any(|j| streams[j].get(at[j]).is_some_and(|c| c.time() == t)) {
                self.replay_time(&mut streams[k][start..at[k]], next_key);
                continue;
            }
            group.clear();
            group.extend_from_slice(&streams[k][start..at[k]]);
            for j in k + 1..streams.len() {
                let from = at[j];
                at[j] = from + streams[j][from..].iter().take_while(|c| c.time() == t).count();
                group.extend_from_slice(&streams[j][from..at[j]]);
            }
            self.replay_time(&mut group, next_key);
        }
        self.group = group;
        self.cursors = at;
    }

    /// Starts loading the final key of a creator [`REPLAY_AHEAD`] ahead in `creators` if it was
    /// created in this window and shares its time with others (so that it will be looked up):
    /// random in memory.
    #[inline]
    fn prefetch_replay(&self, creators: &[Creator]) {
        if let Some(ahead) = creators.get(REPLAY_AHEAD).filter(|c| c.key & PROVISIONAL != 0) {
            let shared = |n: usize| creators.get(n).is_some_and(|c| c.time() == ahead.time());
            if shared(REPLAY_AHEAD - 1) || shared(REPLAY_AHEAD + 1) {
                if let Some(k) = self.final_keys.get(self.index_of(ahead.key)) {
                    prefetch(k);
                }
            }
        }
    }

    /// Puts the window's creators in `sorted_creators` by bucket of time (in handling order
    /// inside each).
    fn bucket_by_time(&mut self) {
        let mut next = Vec::with_capacity(self.bucket_sizes.len());
        let mut sum = 0;
        for &size in &self.bucket_sizes {
            next.push(sum);
            sum += size;
        }
        let sorted = &mut self.sorted_creators;
        sorted.clear();
        sorted.resize(self.creators.len(), Creator { time_count: 0, first: 0, key: 0 });
        for c in &self.creators {
            let at = &mut next[(c.time() >> self.bucket_shift) as usize];
            sorted[*at as usize] = *c;
            *at += 1;
        }
    }

    /// Replays the creators of one time in the order of their keys: final ones as they are (below
    /// every provisional one), provisional ones by the final values they got from their own
    /// creators, earlier in the replay. Those created at this very time wait for theirs.
    fn replay_time(&mut self, group: &mut [Creator], next_key: &mut u64) {
        if let [alone] = group {
            // Its own key orders it among others of its time only: there are none (and its
            // creator, if it was created at this time too, would be one).
            return assign(&mut self.final_keys, alone, next_key);
        }
        let mut unknown = false;
        for c in group.iter_mut() {
            if c.key & PROVISIONAL != 0 {
                match self.final_keys[self.index_of(c.key)] {
                    k if k & PROVISIONAL != 0 => unknown = true,
                    k => c.key = k,
                }
            }
        }
        // Often already in order, or in a few ascending runs: ranks in step keep the order of
        // their creators, which for a message is its sender's (a rotation of the ranks, say).
        // The standard library's stable sort merges a few runs in linear time.
        let descents = group.windows(2).filter(|p| p[0].key > p[1].key).count();
        if descents > 0 {
            let (low, high) = group.iter().fold((u64::MAX, 0), |(l, h), c| (l.min(c.key), h.max(c.key)));
            if descents > FEW_RUNS && group.len() > 64 && high - low < 1 << 32 {
                radix_sort(group, &mut self.creator_scratch, bits(high - low), |c| c.key - low);
            } else {
                group.sort_by_key(|c| c.key);
            }
        }
        if !unknown {
            for c in group.iter() {
                assign(&mut self.final_keys, c, next_key);
            }
            return;
        }
        let known = group.iter().position(|c| c.key & PROVISIONAL != 0).unwrap_or(group.len());
        for c in &group[..known] {
            assign(&mut self.final_keys, c, next_key);
        }
        self.replay_provisional(&group[known..], next_key);
    }

    /// Creators of one time that were created at this time too (a chain of zero-time events), in
    /// the order of the final keys they get from each other while they are replayed: each waits,
    /// by its provisional key, until its creator has been replayed.
    fn replay_provisional(&mut self, group: &[Creator], next_key: &mut u64) {
        let mut ready: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        let mut waiting: HashMap<u64, usize> = HashMap::new();
        for (n, c) in group.iter().enumerate() {
            match self.final_keys[self.index_of(c.key)] {
                k if k & PROVISIONAL != 0 => {
                    waiting.insert(self.index_of(c.key) as u64, n);
                }
                k => ready.push(Reverse((k, n))),
            }
        }
        while let Some(Reverse((_, n))) = ready.pop() {
            let (first, count) = (group[n].first as u64, created(&self.final_keys, &group[n]));
            assign(&mut self.final_keys, &group[n], next_key);
            for q in first..first + count {
                if let Some(w) = waiting.remove(&q) {
                    ready.push(Reverse((self.final_keys[q as usize], w)));
                }
            }
        }
        assert!(waiting.is_empty(), "an event of the window was created by none before it");
    }
}

/// Sorts the events of each host (consecutive in `items`) by (time, key); a host has few.
fn sort_each_host(items: &mut [Item]) {
    let mut start = 0;
    while start < items.len() {
        let owner = items[start].owner;
        let mut end = start + 1;
        while end < items.len() && items[end].owner == owner {
            end += 1;
        }
        if end - start > 1 {
            items[start..end].sort_unstable_by_key(|it| (it.since_start, it.entry.key));
        }
        start = end;
    }
}

/// Where provisional key `key` is in a table of final keys where each worker's begin at
/// `offsets[worker]`.
#[inline]
fn index_in(offsets: &[u64], key: u64) -> usize {
    (offsets[((key & !PROVISIONAL) >> WORKER_SHIFT) as usize] + (key & INDEX_MASK)) as usize
}

/// Bits needed to write `x`.
fn bits(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Sorts `items` by `key` (below 2^`key_bits`), stably, a byte per pass.
fn radix_sort<T: Copy>(items: &mut [T], scratch: &mut Vec<T>, key_bits: u32, key: impl Fn(&T) -> u64) {
    const DIGIT: u32 = 8;
    if items.len() < 2 || key_bits == 0 {
        return;
    }
    if scratch.len() < items.len() {
        scratch.resize(items.len(), items[0]);
    }
    let scratch = &mut scratch[..items.len()];
    let mut in_scratch = false;
    let mut shift = 0;
    while shift < key_bits {
        let (from, to): (&[T], &mut [T]) = if in_scratch { (&*scratch, &mut *items) } else { (&*items, &mut *scratch) };
        let digit = |x: &T| (key(x) >> shift) as usize & ((1 << DIGIT) - 1);
        let mut counts = [0u32; 1 << DIGIT];
        for x in from {
            counts[digit(x)] += 1;
        }
        let mut sum = 0;
        for n in counts.iter_mut() {
            (*n, sum) = (sum, sum + *n);
        }
        for x in from {
            let at = &mut counts[digit(x)];
            to[*at as usize] = *x;
            *at += 1;
        }
        in_scratch = !in_scratch;
        shift += DIGIT;
    }
    if in_scratch {
        items.copy_from_slice(scratch);
    }
}

/// How many keys `c` created (before they are assigned).
#[inline]
fn created(final_keys: &[u64], c: &Creator) -> u64 {
    match c.time_count & MANY {
        MANY => final_keys[c.first as usize] & !PROVISIONAL,
        count => count as u64,
    }
}

/// Hands out the next final keys to the keys `c` created.
fn assign(final_keys: &mut [u64], c: &Creator, next_key: &mut u64) {
    let count = created(final_keys, c) as u32;
    for q in c.first..c.first + count {
        final_keys[q as usize] = *next_key;
        *next_key += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: u64, host: u32) -> Entry {
        Entry { key, host, data: 0 }
    }

    #[test]
    fn a_window_far_beyond_the_ring_opens_with_its_events() {
        // Window 2 fills the ring's first slots; the next event is 10^12 windows later (a rank
        // under noise that leaves picoseconds of work per second): it opens in one step.
        let mut w = Windows::new(10, 1);
        let mut next_key = 0;
        w.push(25, e(0, 0), 0);
        w.push(10_000_000_000_005, e(1, 0), 0);
        assert_eq!(w.next_window(), Some(2));
        w.open(2);
        assert_eq!(w.pop(&mut next_key).unwrap(), (25, e(0, 0)));
        assert_eq!(w.pop(&mut next_key).unwrap(), (10_000_000_000_005, e(1, 0)));
        let late = w.issue();
        w.push(10_000_000_000_031, e(late, 0), 0);
        assert_eq!(w.pop(&mut next_key).unwrap().0, 10_000_000_000_031);
        assert!(w.pop(&mut next_key).is_none());
    }

    #[test]
    fn radix_sort_is_a_stable_sort() {
        let mut state = 7u64;
        for (n, bits) in [(0usize, 5u32), (1, 5), (1000, 3), (5000, 11), (5000, 12), (20000, 33)] {
            let items: Vec<(u64, usize)> = (0..n)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((state >> 20) & ((1u64 << bits) - 1), i)
                })
                .collect();
            let mut sorted = items.clone();
            radix_sort(&mut sorted, &mut Vec::new(), bits, |x| x.0);
            let mut expected = items;
            expected.sort_by_key(|x| x.0); // stable
            assert_eq!(sorted, expected);
        }
    }

    #[test]
    fn hosts_one_after_the_other_and_keys_made_final_in_time_order() {
        // Window width 10. Host 1 has an event at 2, host 0 one at 5 (keys 7 and 3, final).
        let mut w = Windows::new(10, 2);
        let mut next_key = 100;
        w.push(5, e(3, 0), 0);
        w.push(2, e(7, 1), 1);
        let (t, x) = w.pop(&mut next_key).unwrap();
        assert_eq!((t, x.key), (5, 3)); // host 0 first, though later in time
        // It creates one event for itself in the window and one for host 1 in the next.
        let a = w.issue();
        w.push(6, e(a, 0), 0);
        let b = w.issue();
        w.push(15, e(b, 1), 1);
        assert_eq!(w.pop(&mut next_key).unwrap(), (6, e(a, 0)));
        let (t, x) = w.pop(&mut next_key).unwrap();
        assert_eq!((t, x.key), (2, 7));
        let c = w.issue();
        w.push(15, e(c, 1), 1);
        // Time order: host 1's event at 2 (creates key 100 = c), then host 0's at 5 (creates
        // a = 101, b = 102), so at time 15 c's event comes before b's.
        assert_eq!(w.pop(&mut next_key).unwrap(), (15, e(100, 1)));
        assert_eq!(w.pop(&mut next_key).unwrap(), (15, e(102, 1)));
        assert!(w.pop(&mut next_key).is_none());
        assert_eq!(next_key, 103);
    }

    #[test]
    fn workers_replay_their_keys_together_in_time_order() {
        // The first test's events, host 0 on worker 0 and host 1 on worker 1: each worker runs
        // the window alone, host 0's event for host 1 changes hands between windows, and the
        // joint replay hands out the keys as the single loop does.
        let (mut w0, mut w1) = (Windows::for_worker(10, 2, 0), Windows::for_worker(10, 2, 1));
        let mut next_key = 100;
        w0.push(5, e(3, 0), 0);
        w1.push(2, e(7, 1), 1);
        let window = [w0.next_window(), w1.next_window()].into_iter().flatten().min();
        assert_eq!(window, Some(0));
        w0.open(0);
        w1.open(0);
        assert_eq!(w0.pop(&mut next_key).unwrap(), (5, e(3, 0)));
        let a = w0.issue();
        w0.push(6, e(a, 0), 0);
        let b = w0.issue();
        assert_eq!(w0.pop(&mut next_key).unwrap(), (6, e(a, 0)));
        assert!(w0.pop(&mut next_key).is_none()); // the window ends here for worker 0
        assert_eq!(w1.pop(&mut next_key).unwrap(), (2, e(7, 1)));
        let c = w1.issue();
        w1.push(15, e(c, 1), 1);
        assert!(w1.pop(&mut next_key).is_none());
        assert_ne!(b, c); // same count in each worker, told apart by the worker's bits
        let mut finals = FinalKeys::default();
        Windows::finish_joint(&mut [&mut w0, &mut w1], &mut next_key, &mut finals);
        w0.patch(&finals);
        w1.patch(&finals);
        w1.push(15, e(finals.of(b), 1), 1); // b changes hands
        assert_eq!(finals.of(7), 7);
        assert_eq!((w0.next_window(), w1.next_window()), (None, Some(1)));
        w0.open(1);
        w1.open(1);
        assert!(w0.pop(&mut next_key).is_none());
        // Host 1's event at 2 created c = 100; host 0's at 5 then a = 101 and b = 102.
        assert_eq!(w1.pop(&mut next_key).unwrap(), (15, e(100, 1)));
        assert_eq!(w1.pop(&mut next_key).unwrap(), (15, e(102, 1)));
        assert!(w1.pop(&mut next_key).is_none());
        assert_eq!(next_key, 103);
    }

    #[test]
    fn a_creator_of_hundreds_of_keys_hands_them_out_in_order() {
        // Host 0's event at 5 creates 300 events for host 1 at 15 (more than a creator record
        // counts); host 1's at 2 creates one for host 0 at 12, and comes first in time order.
        let mut w = Windows::new(10, 2);
        let mut next_key = 100;
        w.push(5, e(3, 0), 0);
        w.push(2, e(7, 1), 1);
        assert_eq!(w.pop(&mut next_key).unwrap().1.key, 3);
        let many: Vec<u64> = (0..300).map(|_| w.issue()).collect();
        for &k in many.iter().rev() {
            w.push(15, e(k, 1), 1);
        }
        assert_eq!(w.pop(&mut next_key).unwrap().1.key, 7);
        let one = w.issue();
        w.push(12, e(one, 0), 0);
        assert_eq!(w.pop(&mut next_key).unwrap(), (12, e(100, 0)));
        for key in 101..401 {
            assert_eq!(w.pop(&mut next_key).unwrap(), (15, e(key, 1)));
        }
        assert!(w.pop(&mut next_key).is_none());
        assert_eq!(next_key, 401);
    }

    #[test]
    fn a_provisional_creator_at_the_same_time_replays_after_its_own_creator() {
        // Host 0 at time 0 (key 9) creates, at time 0 too, an event that creates one more; host 1 at
        // time 0 (key 4) creates one event. Time order: key 4, key 9, then 9's child.
        let mut w = Windows::new(10, 2);
        let mut next_key = 50;
        w.push(0, e(9, 0), 0);
        w.push(0, e(4, 1), 1);
        assert_eq!(w.pop(&mut next_key).unwrap().1.key, 9);
        let child = w.issue();
        w.push(0, e(child, 0), 0);
        assert_eq!(w.pop(&mut next_key).unwrap().1.key, child);
        let grandchild = w.issue();
        w.push(20, e(grandchild, 0), 0);
        assert_eq!(w.pop(&mut next_key).unwrap().1.key, 4);
        let other = w.issue();
        w.push(20, e(other, 1), 1);
        // Replay: key 4 issues 50 (other), key 9 issues 51 (child), child issues 52 (grandchild).
        assert_eq!(w.pop(&mut next_key).unwrap(), (20, e(52, 0)));
        assert_eq!(w.pop(&mut next_key).unwrap(), (20, e(50, 1)));
        assert!(w.pop(&mut next_key).is_none());
    }
}
