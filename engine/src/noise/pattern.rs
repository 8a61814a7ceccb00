//! A cyclic noise pattern: detours inside one cycle, repeated forever (a replayed trace, or the one
//! detour per period of periodic noise), and how it stretches CPU work in O(log detours).
//!
//! The CPU works only outside detours. With `W(u)` = the free (detour-free) time in `[0, u)` of the
//! repeated pattern, work of length `w > 0` started at pattern time `u` ends at the smallest `T`
//! with `W(T) = W(u) + w`: a detour in progress at `u` delays the start, every detour that starts
//! before the work is done lengthens it by its length, and a detour starting exactly when the work
//! is done does not count. `W` and its inverse are searches over prefix sums: binary, or for long
//! patterns a lookup in slots of the cycle and a short scan.

use crate::time::Time;

/// Detours `[start, start + length)` inside `[0, cycle)`, sorted, not overlapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    cycle: Time,
    starts: Vec<Time>,
    ends: Vec<Time>,
    /// `busy_before[i]`: detour time in `[0, starts[i])`; `busy_before[n]`: all detour time.
    busy_before: Vec<Time>,
    /// `free_before[i] = starts[i] - busy_before[i]`; `free_before[n]`: free time per cycle.
    free_before: Vec<Time>,
    /// For long patterns (a measured trace holds hundreds of detours per second): the cycle cut
    /// into slots of `2^slot_shift` ps, and the number of detours starting before each slot, so
    /// that finding where a time falls takes a shift and a short scan, not a binary search.
    slot_shift: u32,
    before_slot: Vec<u32>,
}

/// Patterns with more detours than this get slots (`Pattern::before_slot`).
const SLOTTED_FROM: usize = 16;

impl Pattern {
    /// A pattern of `cycle` ps with `detours` as (start, length) pairs. Errors when a detour is
    /// empty, out of order, overlaps the previous one or ends after the cycle, and when the
    /// detours leave no free time.
    pub fn new(cycle: Time, detours: &[(Time, Time)]) -> Result<Pattern, String> {
        if cycle == 0 {
            return Err("the noise cycle (trace duration or period) must be positive".into());
        }
        let n = detours.len();
        let (mut starts, mut ends) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut busy_before, mut free_before) = (Vec::with_capacity(n + 1), Vec::with_capacity(n + 1));
        let mut busy = 0;
        let mut previous_end = 0;
        for (i, &(start, length)) in detours.iter().enumerate() {
            if length == 0 {
                return Err(format!("detour {i} has length 0"));
            }
            if start < previous_end {
                return Err(format!("detour {i} starts at {start} ps, before the previous one ends ({previous_end} ps)"));
            }
            let end = start.checked_add(length).filter(|&e| e <= cycle).ok_or_else(|| format!("detour {i} ends after the cycle of {cycle} ps"))?;
            starts.push(start);
            ends.push(end);
            busy_before.push(busy);
            free_before.push(start - busy);
            busy += length;
            previous_end = end;
        }
        if busy >= cycle {
            return Err("the detours leave no time for work".into());
        }
        busy_before.push(busy);
        free_before.push(cycle - busy);
        let (slot_shift, before_slot) = slots(cycle, &starts);
        Ok(Pattern { cycle, starts, ends, busy_before, free_before, slot_shift, before_slot })
    }

    /// One detour of `duration` at the start of every `period`.
    pub fn periodic(period: Time, duration: Time) -> Result<Pattern, String> {
        // Pattern::new holds the rule that detours leave time for work.
        Pattern::new(period, &[(0, duration)])
    }

    /// Length of one cycle (ps).
    pub fn cycle(&self) -> Time {
        self.cycle
    }

    /// Detour time per cycle (ps).
    pub fn busy(&self) -> Time {
        self.busy_before[self.starts.len()]
    }

    /// Detours per cycle.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The detours as (start, length) pairs.
    pub fn detours(&self) -> impl Iterator<Item = (Time, Time)> + '_ {
        self.starts.iter().zip(&self.ends).map(|(&s, &e)| (s, e - s))
    }

    /// Heap bytes held (the pattern is shared by every rank that replays it).
    pub fn heap_bytes(&self) -> usize {
        8 * (self.starts.capacity() + self.ends.capacity() + self.busy_before.capacity() + self.free_before.capacity())
            + 4 * self.before_slot.capacity()
    }

    fn free_per_cycle(&self) -> Time {
        self.free_before[self.starts.len()]
    }

    /// How many detours start at or before `u` (inside one cycle).
    #[inline]
    fn started_by(&self, u: Time) -> usize {
        if self.before_slot.is_empty() {
            return self.starts.partition_point(|&s| s <= u);
        }
        let mut i = self.before_slot[(u >> self.slot_shift) as usize] as usize;
        while i < self.starts.len() && self.starts[i] <= u {
            i += 1;
        }
        i
    }

    /// How long the CPU stays free from pattern time `r` (inside one cycle) until the next detour
    /// starts: 0 inside a detour, `Time::MAX` for a pattern without detours.
    #[inline]
    fn free_ahead(&self, r: Time) -> Time {
        let i = self.started_by(r);
        if i > 0 && r < self.ends[i - 1] {
            return 0;
        }
        match (self.starts.get(i), self.starts.first()) {
            (Some(&s), _) => s - r,
            (None, Some(&first)) => self.cycle + first - r,
            (None, None) => Time::MAX,
        }
    }

    /// The time at which the next detour after `t` starts, for a rank whose time 0 is at `shift`
    /// into the pattern; `t` itself when a detour is in progress at `t`.
    pub fn next_detour(&self, shift: Time, t: Time) -> Time {
        t.saturating_add(self.free_ahead((t + shift) % self.cycle))
    }

    /// Free time in `[0, u)` for `u` inside one cycle.
    fn free_until(&self, u: Time) -> Time {
        let i = self.started_by(u);
        if i > 0 && u < self.ends[i - 1] {
            self.free_before[i - 1] // inside detour i-1: no free time accrues
        } else {
            u - self.busy_before[i]
        }
    }

    /// The earliest pattern time by which `v` in `(0, free per cycle]` of free time has passed
    /// since the cycle began: in the first free stretch whose end reaches `v`. O(log n).
    fn time_of_free(&self, v: Time) -> Time {
        let k = self.free_before.partition_point(|&f| f < v);
        v + self.busy_before[k]
    }

    /// When work of `work` ps that may start at `t` ends, for a rank whose time 0 is at `shift`
    /// into the pattern (`shift < cycle`). `work == 0` ends at `t` (nothing to stretch).
    pub fn stretch(&self, shift: Time, t: Time, work: Time) -> Time {
        if work == 0 {
            return t;
        }
        let (cycle, free) = (self.cycle, self.free_per_cycle());
        let u = t + shift;
        let (cycles, r) = (u / cycle, u % cycle);
        // Most work meets no detour: it starts in a free stretch and ends before the next detour
        // starts (one search, instead of two searches and one more division).
        if work <= self.free_ahead(r) {
            return t + work;
        }
        let target = cycles * free + self.free_until(r) + work;
        // Cycle q holds free time (q*free, (q+1)*free]: a target at a cycle's end belongs to it, so
        // that trailing detours of that cycle are not charged.
        let q = (target - 1) / free;
        q * cycle + self.time_of_free(target - q * free) - shift
    }
}

/// Slots for `Pattern::before_slot`: about four per detour, a power of two ps wide.
fn slots(cycle: Time, starts: &[Time]) -> (u32, Vec<u32>) {
    if starts.len() <= SLOTTED_FROM {
        return (0, Vec::new());
    }
    let wanted = (4 * starts.len() as u64).min(1 << 20);
    let shift = 64 - (cycle / wanted).max(1).leading_zeros() - 1;
    let count = ((cycle - 1) >> shift) as usize + 1;
    let before_slot = (0..count).map(|k| starts.partition_point(|&s| s < (k as Time) << shift) as u32).collect();
    (shift, before_slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one picosecond at a time: the work advances only outside detours.
    fn by_steps(p: &Pattern, shift: Time, t: Time, work: Time) -> Time {
        let busy = |x: Time| {
            let u = (x + shift) % p.cycle;
            p.detours().any(|(s, l)| s <= u && u < s + l)
        };
        let (mut now, mut left) = (t, work);
        while left > 0 {
            if !busy(now) {
                left -= 1;
            }
            now += 1;
        }
        now
    }

    #[test]
    fn periodic_by_hand() {
        // Detours [0,10), [100,110), ...
        let p = Pattern::periodic(100, 10).unwrap();
        assert_eq!(p.stretch(0, 0, 50), 60); // waits for the detour in progress
        assert_eq!(p.stretch(0, 10, 90), 100); // a detour starting at the end is not charged
        assert_eq!(p.stretch(0, 10, 91), 111);
        assert_eq!(p.stretch(0, 0, 95), 115);
        assert_eq!(p.stretch(0, 50, 300), 50 + 300 + 3 * 10); // detours at 100, 200, 300
        assert_eq!(p.stretch(0, 105, 0), 105);
        // Shifted by 30: the rank's detours are at [70,80), [170,180), ...
        assert_eq!(p.stretch(30, 0, 70), 70);
        assert_eq!(p.stretch(30, 0, 71), 81);
    }

    #[test]
    fn one_detour_inside_work_adds_its_length() {
        let p = Pattern::new(1_000_000, &[(400, 77)]).unwrap();
        assert_eq!(p.stretch(0, 100, 1000), 100 + 1000 + 77);
        assert_eq!(p.stretch(0, 400, 1000), 400 + 77 + 1000); // starts with it
        assert_eq!(p.stretch(0, 450, 1000), 477 + 1000); // in progress: the rest delays the start
        assert_eq!(p.stretch(0, 477, 1000), 1477); // just over
    }

    #[test]
    fn matches_the_definition_and_composes() {
        // Detours at the cycle's start and end; and free time around the detours, so that work
        // can run into the next cycle's first one.
        let patterns = [Pattern::new(200, &[(0, 5), (20, 1), (21, 30), (120, 40), (190, 10)]).unwrap(), Pattern::new(100, &[(30, 10), (60, 5)]).unwrap()];
        for p in &patterns {
            for shift in [0, 7, 150 % p.cycle, p.cycle - 1] {
                for t in (0..450).step_by(7) {
                    for work in [0, 1, 3, 25, 100, 149, 150, 151, 430] {
                        let end = p.stretch(shift, t, work);
                        assert_eq!(end, by_steps(p, shift, t, work), "shift {shift} t {t} work {work}");
                        for split in [0, work / 3, work] {
                            let mid = p.stretch(shift, t, split);
                            assert_eq!(p.stretch(shift, mid, work - split), end, "split {split}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn slots_find_what_the_binary_search_finds() {
        // 300 detours of 1-40 ps at random places in a cycle of 100,000 ps: with slots and without.
        let mut state = 9u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut starts: Vec<Time> = (0..300).map(|_| next(99_000)).collect();
        starts.sort();
        starts.dedup_by(|b, a| *b < *a + 41);
        let detours: Vec<(Time, Time)> = starts.iter().map(|&s| (s, 1 + next(40))).collect();
        let slotted = Pattern::new(100_000, &detours).unwrap();
        assert!(!slotted.before_slot.is_empty() && detours.len() > 200);
        let plain = Pattern { before_slot: Vec::new(), ..slotted.clone() };
        for _ in 0..20_000 {
            let (shift, t, work) = (next(100_000), next(1_000_000), next(5_000));
            assert_eq!(slotted.stretch(shift, t, work), plain.stretch(shift, t, work), "shift {shift} t {t} work {work}");
        }
        for u in (0..100_000).step_by(7) {
            assert_eq!(slotted.started_by(u), plain.started_by(u));
        }
    }

    #[test]
    fn empty_pattern_is_noiseless() {
        let p = Pattern::new(1000, &[]).unwrap();
        assert_eq!(p.stretch(123, 5_000, 7_777), 12_777);
    }

    #[test]
    fn rejects_bad_detours() {
        assert!(Pattern::new(100, &[(10, 0)]).unwrap_err().contains("length 0"));
        assert!(Pattern::new(100, &[(10, 20), (25, 5)]).unwrap_err().contains("before the previous one ends"));
        assert!(Pattern::new(100, &[(90, 20)]).unwrap_err().contains("after the cycle"));
        assert!(Pattern::new(100, &[(0, 100)]).unwrap_err().contains("no time for work"));
        assert!(Pattern::periodic(100, 100).is_err());
        assert!(Pattern::new(0, &[]).is_err());
    }
}
