//! OS noise: detours that take a rank's CPU away, and how they stretch the CPU work the LogGOPS
//! model charges (calc, o, optionally O). See docs/models.md, "Noise".
//!
//! - [`pattern`]: a cyclic pattern of detours (a replayed trace, periodic noise) in O(log n).
//! - [`random`]: Poisson detours generated per window from a counter-based hash.
//! - [`trace`]: the reader of noise trace files.
//!
//! The model stores nothing per rank: ranks share the patterns and differ by a phase computed from
//! a hash of (seed, rank), so a rank's noise does not depend on the order of events. A simulation
//! keeps a [`FreeSpan`] per rank (16 bytes) so that most charges skip the lookup.

pub mod pattern;
pub mod random;
pub mod spec;
pub mod trace;

use crate::time::Time;
use pattern::Pattern;
use random::{mix, LastWindow, RandomNoise};
use spec::{format_time, noise_error, SpecError};

/// How the ranks' noise lines up in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Each rank at its own phase, drawn from (seed, rank): noise on different ranks is independent.
    Independent,
    /// All ranks at the same phase: the pattern's time 0 falls at this rank time (periodic: the
    /// first detour starts then). Random noise is co-scheduled only at phase 0.
    CoScheduled(Time),
}

#[derive(Clone, Debug)]
enum Source {
    /// Rank r replays `patterns[r % len]` (one trace per measured rank, or one periodic pattern).
    Cyclic(Vec<Pattern>),
    Random(RandomNoise),
}

/// A noise model for all ranks of a simulation.
#[derive(Clone, Debug)]
pub struct Noise {
    source: Source,
    phase: Phase,
    /// Seed of the independent phases of cyclic noise (random noise keeps its own).
    seed: u64,
    /// Whether per-byte CPU costs (O) are stretched too, not only calc and o.
    pub per_byte: bool,
}

impl Noise {
    /// One detour of `duration` every `period` ps on every rank.
    pub fn periodic(period: Time, duration: Time, phase: Phase, seed: u64) -> Result<Noise, SpecError> {
        if duration >= period {
            return Err(noise_error("duration", format!(
                "detours of {} every {} leave no time for work: the duration must be shorter than the period",
                format_time(duration as f64), format_time(period as f64))));
        }
        let pattern = Pattern::periodic(period, duration).map_err(|e| noise_error("duration", e))?;
        Ok(Noise { source: Source::Cyclic(vec![pattern]), phase, seed, per_byte: false })
    }

    /// Replays measured traces: rank r replays `traces[r % traces.len()]`, repeated forever.
    pub fn replay(traces: Vec<Pattern>, phase: Phase, seed: u64) -> Result<Noise, SpecError> {
        if traces.is_empty() {
            return Err(noise_error("trace", "no noise trace to replay"));
        }
        Ok(Noise { source: Source::Cyclic(traces), phase, seed, per_byte: false })
    }

    /// Poisson detours (see [`random`], which holds the seed); co-scheduled: every rank sees the
    /// same detours.
    pub fn random(random: RandomNoise, phase: Phase) -> Result<Noise, SpecError> {
        if let Phase::CoScheduled(p) = phase {
            if p != 0 {
                return Err(noise_error("phase", "random noise is independent or coscheduled (no phase time)"));
            }
        }
        Ok(Noise { source: Source::Random(random), phase, seed: 0, per_byte: false })
    }

    /// How the ranks' noise lines up.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Also stretch the per-byte CPU costs (O), not only calc and o.
    pub fn with_per_byte(mut self, per_byte: bool) -> Noise {
        self.per_byte = per_byte;
        self
    }

    /// Expected fraction of a rank's time spent in detours.
    pub fn overhead(&self) -> f64 {
        match &self.source {
            Source::Cyclic(patterns) => patterns.iter().map(|p| p.busy() as f64 / p.cycle() as f64).sum::<f64>() / patterns.len() as f64,
            Source::Random(r) => r.overhead(),
        }
    }

    /// Heap bytes held by the model (independent of the number of ranks).
    pub fn heap_bytes(&self) -> usize {
        match &self.source {
            Source::Cyclic(patterns) => patterns.iter().map(Pattern::heap_bytes).sum(),
            Source::Random(_) => 0,
        }
    }

    /// Where rank `rank`'s time 0 falls in a pattern of `cycle` ps.
    #[inline]
    fn shift(&self, rank: u32, cycle: Time) -> Time {
        match self.phase {
            Phase::Independent => mix(self.seed ^ mix(rank as u64 ^ 0x5851_F42D_4C95_7F2D)) % cycle,
            Phase::CoScheduled(phase) => (cycle - phase % cycle) % cycle,
        }
    }

    /// When CPU work of `work` ps that may start at `t` on `rank` ends: `t + work` plus the detours
    /// it meets. A detour in progress at `t` delays the start; one starting exactly at the end is
    /// not charged; `work == 0` ends at `t`. Composes: work a then b ends where work a + b does.
    /// O(log detours per cycle) for cyclic noise, O(windows crossed) for random noise.
    #[inline]
    pub fn stretch(&self, rank: u32, t: Time, work: Time) -> Time {
        self.stretch_remembering(rank, t, work, &mut LastWindow::default())
    }

    /// As [`Noise::stretch`], with a cache of the last random-noise window drawn (see
    /// [`LastWindow`]; unused by cyclic noise).
    #[inline]
    pub fn stretch_remembering(&self, rank: u32, t: Time, work: Time, last: &mut LastWindow) -> Time {
        match &self.source {
            Source::Cyclic(patterns) => {
                let p = pattern_of(patterns, rank);
                p.stretch(self.shift(rank, p.cycle()), t, work)
            }
            Source::Random(r) => r.stretch_remembering(self.stream(rank), t, work, last),
        }
    }

    /// As [`Noise::stretch_remembering`], charging work that lies inside `free` (a stretch of
    /// the rank's time known to hold no detour) without looking at the detours, and leaving in
    /// `free` the stretch from the end of the work to the next detour.
    #[inline]
    pub fn stretch_cached(&self, rank: u32, t: Time, work: Time, free: &mut FreeSpan, last: &mut LastWindow) -> Time {
        if free.from <= t && t + work <= free.until {
            return t + work;
        }
        let end = self.stretch_remembering(rank, t, work, last);
        *free = FreeSpan { from: end, until: self.next_detour(rank, end, last) };
        end
    }

    /// When `rank`'s next detour after `t` starts, or a time before it: work in `[t, that)` meets
    /// no detour. `t` itself when a detour is in progress at `t`.
    pub fn next_detour(&self, rank: u32, t: Time, last: &mut LastWindow) -> Time {
        match &self.source {
            Source::Cyclic(patterns) => {
                let p = pattern_of(patterns, rank);
                p.next_detour(self.shift(rank, p.cycle()), t)
            }
            Source::Random(r) => r.next_detour(self.stream(rank), t, last),
        }
    }

    /// The random-noise stream of `rank`: its own, or the one all ranks share.
    #[inline]
    fn stream(&self, rank: u32) -> u64 {
        match self.phase {
            Phase::Independent => rank as u64,
            Phase::CoScheduled(_) => u64::MAX,
        }
    }
}

/// The pattern `rank` replays.
#[inline]
fn pattern_of(patterns: &[Pattern], rank: u32) -> &Pattern {
    if patterns.len() == 1 {
        &patterns[0]
    } else {
        &patterns[rank as usize % patterns.len()]
    }
}

/// A stretch `[from, until)` of a rank's time known to hold no detour, which a simulation keeps
/// per rank (in the rank's state, which every charge touches anyway) so that most CPU work is
/// charged with a comparison: looking the detours up costs a division and a search for a pattern,
/// and a hash, a Poisson count and a logarithm per detour for a window of random noise. A cache
/// only: it never changes a result. Empty to begin with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreeSpan {
    pub from: Time,
    pub until: Time,
}

#[cfg(test)]
mod tests {
    use super::random::Durations;
    use super::*;

    #[test]
    fn co_scheduled_periodic_phase_is_the_first_detour() {
        let n = Noise::periodic(1_000, 100, Phase::CoScheduled(300), 0).unwrap();
        assert_eq!(n.stretch(0, 0, 300), 300);
        assert_eq!(n.stretch(7, 0, 301), 401); // the detour at [300, 400) on every rank
        assert_eq!(n.stretch(7, 250, 100), 450);
    }

    #[test]
    fn independent_phases_differ_between_ranks_and_repeat_with_the_seed() {
        let n = Noise::periodic(1_000_000, 100_000, Phase::Independent, 3).unwrap();
        let ends: Vec<Time> = (0..64).map(|r| n.stretch(r, 0, 500_000)).collect();
        assert!(ends.iter().any(|&e| e == 500_000) && ends.iter().any(|&e| e == 600_000));
        let again = Noise::periodic(1_000_000, 100_000, Phase::Independent, 3).unwrap();
        assert_eq!(ends, (0..64).map(|r| again.stretch(r, 0, 500_000)).collect::<Vec<_>>());
        let other = Noise::periodic(1_000_000, 100_000, Phase::Independent, 4).unwrap();
        assert_ne!(ends, (0..64).map(|r| other.stretch(r, 0, 500_000)).collect::<Vec<_>>());
    }

    #[test]
    fn ranks_cycle_through_the_traces() {
        let a = Pattern::new(100, &[(10, 10)]).unwrap();
        let b = Pattern::new(100, &[(50, 20)]).unwrap();
        let n = Noise::replay(vec![a, b], Phase::CoScheduled(0), 0).unwrap();
        assert_eq!(n.stretch(0, 0, 40), 50);
        assert_eq!(n.stretch(1, 0, 40), 40);
        assert_eq!(n.stretch(3, 0, 60), 80);
        assert!((n.overhead() - 0.15).abs() < 1e-12);
    }

    #[test]
    fn co_scheduled_random_noise_is_the_same_on_every_rank() {
        let r = RandomNoise::new(2000.0, Durations::Fixed(50_000_000), 9).unwrap();
        let n = Noise::random(r.clone(), Phase::CoScheduled(0)).unwrap();
        let first = n.stretch(0, 0, 10_000_000_000);
        assert!(first > 10_000_000_000);
        assert!((1..32).all(|rank| n.stretch(rank, 0, 10_000_000_000) == first));
        assert!(Noise::random(r, Phase::CoScheduled(5)).is_err());
    }

    #[test]
    fn the_next_detour_of_a_pattern() {
        // Detour [0, 100) every 1000; rank time 0 at pattern time 0.
        let n = Noise::periodic(1_000, 100, Phase::CoScheduled(0), 0).unwrap();
        let mut last = LastWindow::default();
        assert_eq!(n.next_detour(0, 50, &mut last), 50); // in progress
        assert_eq!(n.next_detour(0, 100, &mut last), 1_000);
        assert_eq!(n.next_detour(0, 999, &mut last), 1_000);
        assert_eq!(n.next_detour(0, 1_000, &mut last), 1_000);
        assert_eq!(n.next_detour(0, 1_100, &mut last), 2_000);
        // The detour at [300, 400) of every cycle.
        let n = Noise::periodic(1_000, 100, Phase::CoScheduled(300), 0).unwrap();
        assert_eq!(n.next_detour(0, 0, &mut last), 300);
        assert_eq!(n.next_detour(0, 400, &mut last), 1_300);
        let quiet = Noise::replay(vec![Pattern::new(100, &[]).unwrap()], Phase::Independent, 0).unwrap();
        assert_eq!(quiet.next_detour(0, 5, &mut last), Time::MAX);
    }

    /// Pseudo-random numbers below `n` for the checks below.
    fn draws(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |n| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        }
    }

    fn kinds() -> Vec<Noise> {
        let random = RandomNoise::new(20_000.0, Durations::Exponential { mean: 3_000_000 }, 2).unwrap();
        let trace = Pattern::new(10_000_000, &(0..40).map(|i| (i * 250_000 + 7, 1_000 + i * 3_000)).collect::<Vec<_>>()).unwrap();
        vec![
            Noise::periodic(1_000_000, 25_000, Phase::Independent, 1).unwrap(),
            Noise::periodic(1_000_000, 25_000, Phase::CoScheduled(0), 1).unwrap(),
            Noise::random(random.clone(), Phase::Independent).unwrap(),
            Noise::random(random, Phase::CoScheduled(0)).unwrap(),
            Noise::replay(vec![trace], Phase::Independent, 5).unwrap(),
        ]
    }

    #[test]
    fn work_before_the_next_detour_is_never_stretched() {
        for n in kinds() {
            let mut next = draws(3);
            let mut last = LastWindow::default();
            for _ in 0..5_000 {
                let (rank, t) = (next(4) as u32, next(100_000_000_000));
                let until = n.next_detour(rank, t, &mut last);
                assert!(until >= t);
                if until > t {
                    assert_eq!(n.stretch(rank, t, until - t), until, "{n:?} rank {rank} t {t}");
                } else {
                    assert!(n.stretch(rank, t, 1) > t + 1, "a detour in progress at {t}");
                }
            }
        }
    }

    #[test]
    fn charging_through_the_free_span_changes_nothing() {
        // Each rank's charges mostly follow each other (one CPU), sometimes go back (two CPUs).
        for n in kinds() {
            let mut next = draws(8);
            let mut free = [FreeSpan::default(); 4];
            let mut last = LastWindow::default();
            let mut now = [0; 4];
            for _ in 0..20_000 {
                let rank = next(4) as usize;
                let t = if next(10) == 0 { now[rank] - now[rank].min(next(5_000_000)) } else { now[rank] + next(2_000_000) };
                let work = if next(20) == 0 { 0 } else { next(3_000_000) };
                let end = n.stretch_cached(rank as u32, t, work, &mut free[rank], &mut last);
                assert_eq!(end, n.stretch(rank as u32, t, work), "{n:?} rank {rank} t {t} work {work}");
                now[rank] = end;
            }
        }
    }
}
