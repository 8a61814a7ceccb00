//! Random noise: Poisson arrivals of detours with a duration distribution, generated per window of
//! time from a counter-based hash of (seed, stream, window), so a rank's detours do not depend on
//! the order in which the simulation asks for them (and no state is kept per rank).
//!
//! Time is cut into windows of `window` ps. Window k of a stream holds N ~ Poisson(rate x window)
//! detours (at most [`MAX_PER_WINDOW`]) with lengths drawn from the distribution, placed uniformly
//! at random among the arrangements in which they do not overlap and stay inside the window: the
//! free time `window - sum(lengths)` is cut at N uniform points, and detour i follows cut i.
//! Lengths that would fill the window are dropped (the window is chosen so that this is very rare).

use crate::time::Time;
use super::spec::{format_hz, format_time, noise_error, SpecError};

/// Detours per window beyond which further arrivals are dropped (Poisson tail; see `window_for`).
pub const MAX_PER_WINDOW: usize = 64;
/// Detours per window that `LastWindow` holds (windows hold about one expected detour; see
/// `window_for`).
const FEW: usize = 8;

/// The detours of the window a charge last drew (if it held at most [`FEW`]), by (stream,
/// window): consecutive charges of one rank, which windowed execution takes together, mostly fall in
/// the same window, and drawing one (a hash, a Poisson count, a logarithm per length) costs more
/// than the charge. A cache only: it never changes a result.
#[derive(Clone, Debug, Default)]
pub struct LastWindow {
    window: Option<(u64, u64)>,
    kept: usize,
    detours: [(Time, Time); FEW],
}

/// The distribution of detour lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Durations {
    Fixed(Time),
    Exponential { mean: Time },
    Uniform { min: Time, max: Time },
}

impl Durations {
    pub fn mean(&self) -> f64 {
        match *self {
            Durations::Fixed(d) => d as f64,
            Durations::Exponential { mean } => mean as f64,
            Durations::Uniform { min, max } => (min as f64 + max as f64) / 2.0,
        }
    }

    fn draw(&self, rng: &mut Stream) -> Time {
        match *self {
            Durations::Fixed(d) => d,
            Durations::Exponential { mean } => ((-(1.0 - rng.unit()).ln()) * mean as f64).round().max(1.0) as Time,
            Durations::Uniform { min, max } => min + rng.below(max - min + 1),
        }
    }
}

/// Poisson detours on one or many streams (one per rank, or one shared by all ranks).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomNoise {
    rate_per_ps: f64,
    durations: Durations,
    window: Time,
    /// exp(-mean detours per window): the threshold of Knuth's Poisson sampler.
    poisson_floor: f64,
    seed: u64,
}

impl RandomNoise {
    /// `rate_hz` detours per second on average, lengths from `durations`. Errors when the expected
    /// detour time reaches half of all time, or the inputs are not positive.
    pub fn new(rate_hz: f64, durations: Durations, seed: u64) -> Result<RandomNoise, SpecError> {
        if !(rate_hz.is_finite() && rate_hz > 0.0) {
            return Err(noise_error("rate", format!("must be a positive number of detours per second, not {rate_hz}")));
        }
        match durations {
            Durations::Fixed(0) | Durations::Exponential { mean: 0 } => return Err(noise_error("duration", "must be positive")),
            Durations::Uniform { min: 0, .. } => return Err(noise_error("min", "must be positive")),
            Durations::Uniform { min, max } if max < min => {
                return Err(noise_error("max", format!("must not be below min ({})", format_time(min as f64))))
            }
            _ => {}
        }
        let rate_per_ps = rate_hz / 1e12;
        let overhead = rate_per_ps * durations.mean();
        if overhead >= 0.5 {
            return Err(noise_error("rate", format!("{} of detours averaging {} take {:.0}% of the time (at most 50%)",
                format_hz(rate_hz), format_time(durations.mean()), overhead * 100.0)));
        }
        let window = window_for(rate_per_ps, &durations);
        Ok(RandomNoise { rate_per_ps, durations, window, poisson_floor: (-(rate_per_ps * window as f64)).exp(), seed })
    }

    /// Width of the windows detours are generated in (ps).
    pub fn window(&self) -> Time {
        self.window
    }

    /// Expected fraction of time in detours.
    pub fn overhead(&self) -> f64 {
        self.rate_per_ps * self.durations.mean()
    }

    /// Writes the detours of `stream`'s window `k` as absolute (start, end) into `out`; returns how
    /// many. Sorted, not overlapping, inside the window. O(detours^2) for the (few) detours.
    pub fn window_detours(&self, stream: u64, k: u64, out: &mut [(Time, Time); MAX_PER_WINDOW]) -> usize {
        let (mut rng, n) = self.arrivals(stream, k);
        self.place(&mut rng, n, k, out)
    }

    /// The number of detours in `stream`'s window `k`, and the generator to place them with.
    #[inline]
    fn arrivals(&self, stream: u64, k: u64) -> (Stream, usize) {
        let mut rng = Stream::new(mix(self.seed ^ mix(stream ^ mix(k.wrapping_add(0x632b_e59b_d9b4_e019)))));
        // Knuth: count uniforms until their product falls below exp(-mean).
        let mut n = 0;
        let mut product = rng.unit();
        while product > self.poisson_floor && n < MAX_PER_WINDOW {
            n += 1;
            product *= rng.unit();
        }
        (rng, n)
    }

    /// Draws the lengths and places the `n` (at most `N`) detours of window `k` into `out`; returns
    /// how many were kept. `N` is small for the usual handful, so that nothing larger is cleared.
    #[inline]
    fn place<const N: usize>(&self, rng: &mut Stream, n: usize, k: u64, out: &mut [(Time, Time); N]) -> usize {
        let mut lengths = [0; N];
        let mut busy = 0;
        let mut kept = 0;
        for _ in 0..n {
            let d = self.durations.draw(rng);
            if busy + d < self.window {
                lengths[kept] = d;
                busy += d;
                kept += 1;
            }
        }
        // Cut points in the free time, sorted (insertion sort: a handful of values).
        let free = self.window - busy;
        let mut cuts = [0; N];
        for i in 0..kept {
            let c = rng.below(free);
            let mut j = i;
            while j > 0 && cuts[j - 1] > c {
                cuts[j] = cuts[j - 1];
                j -= 1;
            }
            cuts[j] = c;
        }
        let base = k * self.window;
        let mut before = 0;
        for i in 0..kept {
            let start = base + cuts[i] + before;
            out[i] = (start, start + lengths[i]);
            before += lengths[i];
        }
        kept
    }

    /// When work of `work` ps that may start at `t` ends on `stream`: the work advances only outside
    /// detours (the same rule as a cyclic pattern). O(windows crossed x detours per window).
    pub fn stretch(&self, stream: u64, t: Time, work: Time) -> Time {
        self.stretch_remembering(stream, t, work, &mut LastWindow::default())
    }

    /// As [`RandomNoise::stretch`], reusing the detours in `last` when they are those of the
    /// window asked for, and leaving there those of the last window drawn (if it held few).
    pub fn stretch_remembering(&self, stream: u64, t: Time, work: Time, last: &mut LastWindow) -> Time {
        let (mut now, mut left) = (t, work);
        if left == 0 {
            return now;
        }
        let mut many = None;
        let mut k = now / self.window;
        loop {
            for &(start, end) in self.detours_of(stream, k, last, &mut many) {
                if end <= now {
                    continue;
                }
                if start > now {
                    if start >= now + left {
                        return now + left;
                    }
                    left -= start - now;
                }
                now = end;
            }
            let window_end = (k + 1) * self.window;
            if now + left <= window_end {
                return now + left;
            }
            left -= window_end - now;
            now = window_end;
            k += 1;
        }
    }

    /// The time at which the next detour of `stream` after `t` starts, or a time before it (the
    /// end of `t`'s window, when that window holds no detour after `t`); `t` itself when a detour
    /// is in progress at `t`.
    pub fn next_detour(&self, stream: u64, t: Time, last: &mut LastWindow) -> Time {
        let k = t / self.window;
        let mut many = None;
        match self.detours_of(stream, k, last, &mut many).iter().find(|&&(_, end)| end > t) {
            Some(&(start, _)) => start.max(t),
            None => (k + 1) * self.window,
        }
    }

    /// The detours of `stream`'s window `k`: those in `last` when it holds them, else drawn (into
    /// `last` when they are few, into `many` otherwise: cleared only then, it is large).
    #[inline]
    fn detours_of<'a>(&self, stream: u64, k: u64, last: &'a mut LastWindow, many: &'a mut Option<[(Time, Time); MAX_PER_WINDOW]>) -> &'a [(Time, Time)] {
        if last.window != Some((stream, k)) {
            let (mut rng, n) = self.arrivals(stream, k);
            if n > FEW {
                let many = many.insert([(0, 0); MAX_PER_WINDOW]);
                let kept = self.place(&mut rng, n, k, many);
                return &many[..kept];
            }
            last.kept = self.place(&mut rng, n, k, &mut last.detours);
            last.window = Some((stream, k));
        }
        &last.detours[..last.kept]
    }
}

/// Windows long enough to hold one expected detour and 64 mean detour lengths (and twice the
/// longest uniform detour): dropping a length that would fill the window then needs a sum of
/// lengths many standard deviations above its mean.
fn window_for(rate_per_ps: f64, durations: &Durations) -> Time {
    let longest = match *durations {
        Durations::Uniform { max, .. } => 2 * max,
        _ => 0,
    };
    ((1.0 / rate_per_ps).max(64.0 * durations.mean()).ceil() as Time).max(longest).max(1)
}

/// splitmix64's finaliser: a bijective mix of 64 bits.
#[inline]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64: a small, fast generator for the draws inside one window.
struct Stream(u64);

impl Stream {
    fn new(state: u64) -> Stream {
        Stream(state)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) for n > 0 (multiply-shift; the bias is below 2^-64 x n).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detours_are_sorted_disjoint_and_inside_their_window() {
        let noise = RandomNoise::new(1000.0, Durations::Exponential { mean: 25_000_000 }, 7).unwrap();
        let mut out = [(0, 0); MAX_PER_WINDOW];
        for k in 0..2000 {
            let n = noise.window_detours(3, k, &mut out);
            let mut previous = k * noise.window();
            for &(s, e) in &out[..n] {
                assert!(s >= previous && e > s && e <= (k + 1) * noise.window());
                previous = e;
            }
        }
    }

    #[test]
    fn rate_and_overhead_converge() {
        // 1000 Hz x 25 us fixed: 2.5% of the time, 1000 detours per second.
        let noise = RandomNoise::new(1000.0, Durations::Fixed(25_000_000), 1).unwrap();
        let mut out = [(0, 0); MAX_PER_WINDOW];
        let windows = 20_000;
        let (mut count, mut busy) = (0u64, 0u64);
        for k in 0..windows {
            let n = noise.window_detours(0, k, &mut out);
            count += n as u64;
            busy += out[..n].iter().map(|&(s, e)| e - s).sum::<u64>();
        }
        let seconds = (windows * noise.window()) as f64 / 1e12;
        assert!((count as f64 / seconds - 1000.0).abs() < 20.0, "{}", count as f64 / seconds);
        assert!((busy as f64 / (seconds * 1e12) - 0.025).abs() < 0.0005);
    }

    #[test]
    fn remembering_the_last_window_changes_nothing() {
        // Charges of a few streams, often the same one twice in a row, at times that go back and
        // forth: one shared cache against none.
        let noise = RandomNoise::new(20_000.0, Durations::Exponential { mean: 3_000_000 }, 2).unwrap();
        let mut last = LastWindow::default();
        let mut state = 5u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for _ in 0..20_000 {
            let (stream, t, work) = (next(3), next(2_000_000_000), next(50_000_000));
            assert_eq!(noise.stretch_remembering(stream, t, work, &mut last), noise.stretch(stream, t, work));
        }
    }

    #[test]
    fn stretch_skips_exactly_the_detours_it_meets() {
        let noise = RandomNoise::new(50_000.0, Durations::Uniform { min: 1_000_000, max: 3_000_000 }, 11).unwrap();
        let mut out = [(0, 0); MAX_PER_WINDOW];
        // The detours of the first windows, flattened.
        let mut all = Vec::new();
        for k in 0..200 {
            let n = noise.window_detours(5, k, &mut out);
            all.extend_from_slice(&out[..n]);
        }
        let horizon = 200 * noise.window();
        for (t, work) in [(0, 1), (12_345, 40_000_000), (999_999_999, 777_777_777), (3, 0)] {
            let end = noise.stretch(5, t, work);
            assert!(end < horizon);
            let blocked: u64 = all.iter().map(|&(s, e)| e.min(end).saturating_sub(s.max(t))).sum();
            assert_eq!(end - t - blocked, work, "t {t} work {work}");
            assert!(work == 0 || !all.iter().any(|&(s, e)| s < end && end < e), "ends inside a detour");
        }
    }

    #[test]
    fn same_seed_same_detours_other_streams_differ() {
        let a = RandomNoise::new(1000.0, Durations::Fixed(25_000_000), 42).unwrap();
        let b = RandomNoise::new(1000.0, Durations::Fixed(25_000_000), 42).unwrap();
        assert_eq!(a.stretch(9, 1_000_000_000, 500_000_000_000), b.stretch(9, 1_000_000_000, 500_000_000_000));
        let ends: Vec<Time> = (0..8).map(|s| a.stretch(s, 0, 100_000_000_000)).collect();
        assert!(ends.windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn rejects_bad_settings() {
        assert!(RandomNoise::new(0.0, Durations::Fixed(1), 0).is_err());
        assert!(RandomNoise::new(1000.0, Durations::Fixed(0), 0).is_err());
        assert!(RandomNoise::new(1000.0, Durations::Uniform { min: 5, max: 4 }, 0).is_err());
        assert!(RandomNoise::new(1000.0, Durations::Fixed(600_000_000), 0).unwrap_err().problem.contains("at most 50%"));
    }
}
