//! The noise spec: what a run's noise is before any trace file is read, its rules and the one
//! grammar of its compact form (`periodic:1kHz:25us`), shared by the command line, the Python API
//! and the bench binary. A machine file's `[noise]` table is read by Python into the same spec.
//!
//! The rules live in the constructors of the model ([`Noise::periodic`], [`RandomNoise::new`],
//! [`Noise::random`], [`Noise::replay`]); [`NoiseSpec::new`] checks a spec by building it, so a
//! rule is written once and its error names the spec's key it is about ([`SpecError`], `noise.<key>`).

use std::fmt;
use std::path::Path;

use super::random::{Durations, RandomNoise};
use super::trace::{read_trace_file, TraceError};
use super::{Noise, Phase};
use crate::time::{parse_time, Time, MAX_INPUT_PS};

pub use crate::spec_error::SpecError;

/// An error about the spec's `key` ("duration", "rate", ...; empty: the whole spec), named as a
/// machine file writes it (`noise.duration`, `noise`).
pub(crate) fn noise_error(key: &str, problem: impl Into<String>) -> SpecError {
    SpecError::new(if key.is_empty() { "noise".to_string() } else { format!("noise.{key}") }, problem)
}

/// Where the detours come from.
#[derive(Clone, Debug, PartialEq)]
pub enum NoiseKind {
    /// One detour of `duration` every `period` ps.
    Periodic { period: Time, duration: Time },
    /// Poisson arrivals at `rate` Hz.
    Random { rate: f64, durations: Durations },
    /// Replayed noise traces (read by [`NoiseSpec::build`]).
    Trace { files: Vec<String> },
}

/// A checked noise spec: built only through [`NoiseSpec::new`] or [`NoiseSpec::parse`].
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseSpec {
    kind: NoiseKind,
    phase: Phase,
    seed: u64,
    per_byte: bool,
}

/// Why a spec could not be built into a model.
#[derive(Debug)]
pub enum BuildError {
    Spec(SpecError),
    Trace(TraceError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Spec(e) => e.fmt(f),
            BuildError::Trace(e) => e.fmt(f),
        }
    }
}

/// The distribution of random detours' lengths when a spec (compact or a `[noise]` table) names none.
pub const DEFAULT_DISTRIBUTION: &str = "exponential";

const HINT: &str = "periodic:FREQ:DURATION, random:RATE:DURATION[:fixed|:exponential], random:RATE:MIN-MAX, trace:FILE or none";

impl NoiseSpec {
    /// A spec checked against the model's rules (each in the model's constructor).
    pub fn new(kind: NoiseKind, phase: Phase, seed: u64, per_byte: bool) -> Result<NoiseSpec, SpecError> {
        let spec = NoiseSpec { kind, phase, seed, per_byte };
        match &spec.kind {
            NoiseKind::Trace { files } if files.is_empty() => return Err(noise_error("trace", "expected a trace file or a list of them")),
            NoiseKind::Trace { .. } => {}
            _ => {
                spec.model(Vec::new())?;
            }
        }
        Ok(spec)
    }

    /// The compact form: `periodic:FREQ:DURATION`, `random:RATE:DURATION[:fixed|:exponential]`,
    /// `random:RATE:MIN-MAX` (uniform), `trace:FILE[,FILE...]`, or `none` (None). Independent
    /// phases, seed 0, not on per-byte costs.
    ///
    /// ```
    /// use contend_engine::noise::spec::{NoiseKind, NoiseSpec};
    /// let spec = NoiseSpec::parse("periodic:1kHz:25us").unwrap().unwrap();
    /// assert_eq!(spec.kind(), &NoiseKind::Periodic { period: 1_000_000_000, duration: 25_000_000 });
    /// assert_eq!(NoiseSpec::parse("none").unwrap(), None);
    /// assert_eq!(NoiseSpec::parse("periodic:1kHz:1ms").unwrap_err().key, "noise.duration");
    /// ```
    pub fn parse(text: &str) -> Result<Option<NoiseSpec>, SpecError> {
        let text = text.trim();
        let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
        let parts: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split(':').collect() };
        let kind = match (kind, parts.as_slice()) {
            ("none", []) => return Ok(None),
            ("periodic", [frequency, duration]) => {
                NoiseKind::Periodic { period: period_of(frequency, "frequency")?, duration: duration_of(duration, "duration")? }
            }
            ("random", [rate, lengths]) if lengths.contains('-') => {
                let (min, max) = lengths.split_once('-').expect("contains '-'");
                NoiseKind::Random { rate: frequency_of(rate, "rate")?, durations: Durations::Uniform { min: duration_of(min, "min")?, max: duration_of(max, "max")? } }
            }
            ("random", [rate, duration, rest @ ..]) if rest.len() <= 1 => {
                let mean = duration_of(duration, "duration")?;
                let durations = match rest.first().copied().unwrap_or(DEFAULT_DISTRIBUTION) {
                    "exponential" => Durations::Exponential { mean },
                    "fixed" => Durations::Fixed(mean),
                    other => return Err(noise_error("distribution", format!("expected one of fixed, exponential, uniform, got '{other}'"))),
                };
                NoiseKind::Random { rate: frequency_of(rate, "rate")?, durations }
            }
            ("trace", [_, ..]) => NoiseKind::Trace { files: rest.split(',').map(str::to_string).collect() },
            _ => return Err(noise_error("", format!("expected {HINT}; got '{text}'"))),
        };
        NoiseSpec::new(kind, Phase::Independent, 0, false).map(Some)
    }

    pub fn kind(&self) -> &NoiseKind {
        &self.kind
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn per_byte(&self) -> bool {
        self.per_byte
    }

    /// The model, trace files read.
    pub fn build(&self) -> Result<Noise, BuildError> {
        let mut patterns = Vec::new();
        if let NoiseKind::Trace { files } = &self.kind {
            for f in files {
                patterns.extend(read_trace_file(Path::new(f)).map_err(BuildError::Trace)?.ranks);
            }
        }
        self.model(patterns).map_err(BuildError::Spec)
    }

    fn model(&self, traces: Vec<super::pattern::Pattern>) -> Result<Noise, SpecError> {
        let noise = match &self.kind {
            NoiseKind::Periodic { period, duration } => Noise::periodic(*period, *duration, self.phase, self.seed)?,
            NoiseKind::Random { rate, durations } => Noise::random(RandomNoise::new(*rate, *durations, self.seed)?, self.phase)?,
            NoiseKind::Trace { .. } => Noise::replay(traces, self.phase, self.seed)?,
        };
        Ok(noise.with_per_byte(self.per_byte))
    }
}

/// A frequency in Hz: `1000Hz`, `1kHz`, `10 Hz`, `2.5` (prefixes k, M, G), positive and below 1 THz.
///
/// ```
/// use contend_engine::noise::spec::parse_frequency;
/// assert_eq!(parse_frequency("1kHz").unwrap(), 1000.0);
/// assert_eq!(parse_frequency("2.5").unwrap(), 2.5);
/// assert!(parse_frequency("fast").is_err() && parse_frequency("0Hz").is_err());
/// ```
pub fn parse_frequency(text: &str) -> Result<f64, String> {
    let expected = || format!("expected a frequency such as 1000Hz or 1kHz, got '{text}'");
    let t = text.trim();
    let t = t.strip_suffix("Hz").unwrap_or(t);
    let (t, scale) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('G') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let number = t.trim_end();
    // Digits first, an optional fraction and exponent: no sign, no inf or nan.
    if !number.starts_with(|c: char| c.is_ascii_digit()) || number.contains(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c))) {
        return Err(expected());
    }
    let value = number.parse::<f64>().map_err(|_| expected())? * scale;
    if !(value > 0.0 && value < 1e12) {
        return Err(format!("a frequency must be positive and below 1 THz, got '{text}'"));
    }
    Ok(value)
}

/// A positive duration of noise (`25us`; bare numbers are ns) in ps.
pub fn parse_duration(text: &str) -> Result<Time, String> {
    if text.trim().starts_with('-') {
        return Err(format!("must not be negative, got '{text}'"));
    }
    match parse_time(text)? {
        0 => Err(format!("must be positive, got '{text}'")),
        ps => Ok(ps),
    }
}

/// The period of a frequency in ps, within the engine's range of times like any duration.
pub fn parse_period(frequency: &str) -> Result<Time, String> {
    let period = (1e12 / parse_frequency(frequency)?).round_ties_even();
    if period > MAX_INPUT_PS as f64 {
        return Err(format!("'{frequency}' is too low: one period is longer than the longest time the engine takes"));
    }
    Ok(period as Time)
}

fn frequency_of(text: &str, key: &'static str) -> Result<f64, SpecError> {
    parse_frequency(text).map_err(|e| noise_error(key, e))
}

fn duration_of(text: &str, key: &'static str) -> Result<Time, SpecError> {
    parse_duration(text).map_err(|e| noise_error(key, e))
}

fn period_of(text: &str, key: &'static str) -> Result<Time, SpecError> {
    parse_period(text).map_err(|e| noise_error(key, e))
}

/// `v` with `digits` significant digits, trailing zeros dropped ("2.5", "1000").
fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A duration for people: "25 us", "2.5 ms", "800 ns".
pub fn format_time(ps: f64) -> String {
    for (unit, scale) in [("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)] {
        if ps >= scale {
            return format!("{} {unit}", significant(ps / scale, 4));
        }
    }
    format!("{} ns", significant(ps / 1e3, 4))
}

/// A frequency for people: "1000 Hz".
pub fn format_hz(hz: f64) -> String {
    format!("{} Hz", significant(hz, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> SpecError {
        NoiseSpec::parse(text).unwrap_err()
    }

    #[test]
    fn the_compact_forms() {
        let random = |text| NoiseSpec::parse(text).unwrap().unwrap().kind().clone();
        assert_eq!(random("random:1kHz:25us"), NoiseKind::Random { rate: 1000.0, durations: Durations::Exponential { mean: 25_000_000 } });
        assert_eq!(random("random:1kHz:25us:fixed"), NoiseKind::Random { rate: 1000.0, durations: Durations::Fixed(25_000_000) });
        assert_eq!(random("random:2kHz:10us-40us"), NoiseKind::Random { rate: 2000.0, durations: Durations::Uniform { min: 10_000_000, max: 40_000_000 } });
        assert_eq!(random("trace:a.noise,b.noise"), NoiseKind::Trace { files: vec!["a.noise".into(), "b.noise".into()] });
        assert_eq!(random("periodic:200kHz:700ns"), NoiseKind::Periodic { period: 5_000_000, duration: 700_000 });
    }

    #[test]
    fn each_rule_names_its_key() {
        assert_eq!(error("periodic:1kHz").key, "noise");
        assert!(error("periodic:1kHz").problem.starts_with("expected periodic:FREQ:DURATION"));
        let e = error("periodic:1kHz:2ms");
        assert_eq!((e.key.as_str(), e.problem.as_str()), ("noise.duration", "detours of 2 ms every 1 ms leave no time for work: the duration must be shorter than the period"));
        assert_eq!(error("random:1kHz:3us:gauss").key, "noise.distribution");
        let e = error("random:1kHz:40us-30us");
        assert_eq!((e.key.as_str(), e.problem.as_str()), ("noise.max", "must not be below min (40 us)"));
        let e = error("random:10kHz:90us");
        assert_eq!((e.key.as_str(), e.problem.as_str()), ("noise.rate", "10000 Hz of detours averaging 90 us take 90% of the time (at most 50%)"));
        assert_eq!(error("periodic:fast:1us").key, "noise.frequency");
        assert_eq!(error("periodic:1kHz:-1us").problem, "must not be negative, got '-1us'");
        assert_eq!(error("periodic:1kHz:0").problem, "must be positive, got '0'");
        assert!(error("periodic:0.0001Hz:1us").problem.contains("is too low"));
        assert!(NoiseSpec::parse("periodic:0.001Hz:1us").is_ok());
        let e = NoiseSpec::new(NoiseKind::Random { rate: 1000.0, durations: Durations::Fixed(1000) }, Phase::CoScheduled(5), 0, false).unwrap_err();
        assert_eq!((e.key.as_str(), e.problem.as_str()), ("noise.phase", "random noise is independent or coscheduled (no phase time)"));
        assert_eq!(NoiseSpec::new(NoiseKind::Trace { files: vec![] }, Phase::Independent, 0, false).unwrap_err().key, "noise.trace");
    }

    #[test]
    fn people_read_times_and_rates() {
        assert_eq!([format_time(25e6), format_time(2.5e9), format_time(8e5), format_time(0.0)], ["25 us", "2.5 ms", "800 ns", "0 ns"]);
        assert_eq!(format_hz(1000.0), "1000 Hz");
    }
}
