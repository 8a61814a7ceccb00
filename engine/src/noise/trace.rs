//! Reader of noise traces: the text files `contend noise measure` writes (docs/formats.md).
//!
//! ```text
//! contend-noise 1            magic and format version, the first line
//! resolution_ns 21           header: optional resolution and threshold, required duration
//! threshold_ns 210
//! duration_ns 1000000000
//! rank 0                     optional: starts rank 0's detours (then rank 1, 2, ... in order)
//! 1234567 28000              one detour per line: start_ns length_ns, sorted, not overlapping
//! end 1                      the number of detours in the file: the last line
//! ```
//! `#` starts a comment; blank lines are ignored. Every error names the file and line.

use std::fmt;
use std::path::Path;

use crate::noise::pattern::Pattern;
use crate::time::{Time, MAX_INPUT_PS, PS_PER_NS};

pub const MAGIC: &str = "contend-noise";
pub const VERSION: u32 = 1;

/// A malformed noise trace: `path:line: message` (line 0 when no line applies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        }
    }
}

/// One noise trace file: its header and one cyclic pattern per rank it holds (cycle = duration).
#[derive(Debug, Clone)]
pub struct Trace {
    pub resolution: Option<Time>,
    pub threshold: Option<Time>,
    pub duration: Time,
    pub ranks: Vec<Pattern>,
}

/// Reads and checks a noise trace file.
pub fn read_trace_file(path: &Path) -> Result<Trace, TraceError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        let why = e.to_string();
        let why = why.split(" (os error").next().unwrap_or(&why).to_lowercase();
        TraceError { path: name.clone(), line: 0, message: format!("cannot read noise trace: {why}") }
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        TraceError { path: name.clone(), line, message: format!("byte 0x{:02x} is not UTF-8 text", bytes[at]) }
    })?;
    parse_trace(text, &name)
}

/// Parses the text of a noise trace; `name` is used in error messages.
pub fn parse_trace(text: &str, name: &str) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError { path: name.to_string(), line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()));
    match lines.next() {
        Some((_, first)) if first.split_whitespace().next() == Some(MAGIC) => {
            let version = first.split_whitespace().nth(1).unwrap_or("");
            if version != VERSION.to_string() {
                return Err(err(1, format!("unsupported noise trace version '{version}' (this contend reads version {VERSION})")));
            }
        }
        _ => return Err(err(1, format!("not a contend noise trace: the first line must be '{MAGIC} {VERSION}'"))),
    }
    let (mut resolution, mut threshold, mut duration) = (None, None, None);
    let mut ranks: Vec<Vec<(Time, Time)>> = Vec::new();
    let mut detours: u64 = 0;
    let mut previous_end: Time = 0;
    let mut last_line = 1;
    let mut ended = false;
    for (number, line) in lines {
        last_line = number;
        if line.is_empty() {
            continue;
        }
        if ended {
            return Err(err(number, "text after the 'end' line".into()));
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[0] {
            key @ ("resolution_ns" | "threshold_ns" | "duration_ns") => {
                if !ranks.is_empty() {
                    return Err(err(number, format!("{key} must come before the first detour")));
                }
                if fields.len() != 2 {
                    return Err(err(number, format!("expected '{key} <nanoseconds>'")));
                }
                let value = nanoseconds(fields[1], key).map_err(|m| err(number, m))?;
                let slot = match key {
                    "resolution_ns" => &mut resolution,
                    "threshold_ns" => &mut threshold,
                    _ => &mut duration,
                };
                if slot.replace(value).is_some() {
                    return Err(err(number, format!("{key} given twice")));
                }
            }
            "rank" => {
                let expected = ranks.len();
                if fields.len() != 2 || fields[1] != expected.to_string() {
                    return Err(err(number, format!("expected 'rank {expected}': ranks are numbered 0, 1, 2, ... in order")));
                }
                header_complete(duration, number, &err)?;
                ranks.push(Vec::new());
                previous_end = 0;
            }
            "end" => {
                let count: Option<u64> = fields.get(1).and_then(|c| c.parse().ok());
                if fields.len() != 2 || count.is_none() {
                    return Err(err(number, "expected 'end <number of detours>'".into()));
                }
                if count != Some(detours) {
                    return Err(err(number, format!("the file holds {detours} detours but its end line says {}: it was cut or edited", fields[1])));
                }
                header_complete(duration, number, &err)?;
                ended = true;
            }
            _ => {
                let total = header_complete(duration, number, &err)?;
                if fields.len() != 2 {
                    return Err(err(number, format!("expected a detour 'start_ns length_ns', got {} field(s): '{line}'", fields.len())));
                }
                let start = nanoseconds(fields[0], "start_ns").map_err(|m| err(number, m))?;
                let length = nanoseconds(fields[1], "length_ns").map_err(|m| err(number, m))?;
                if length == 0 {
                    return Err(err(number, "length_ns must be positive".into()));
                }
                if ranks.is_empty() {
                    ranks.push(Vec::new()); // a file without 'rank' lines holds one trace
                }
                let list = ranks.last_mut().expect("a rank is open");
                if start < previous_end {
                    return Err(err(number, format!("detour at {} ns starts before the previous one ends ({} ns): detours must be sorted by start and must not overlap", ns(start), ns(previous_end))));
                }
                let end = start + length;
                if end > total {
                    return Err(err(number, format!("detour ends at {} ns, after duration_ns {}", ns(end), ns(total))));
                }
                list.push((start, length));
                previous_end = end;
                detours += 1;
            }
        }
    }
    if !ended {
        return Err(err(last_line, "truncated: the file ends without its 'end <number of detours>' line".into()));
    }
    let duration = duration.expect("checked at the end line");
    if ranks.is_empty() {
        ranks.push(Vec::new());
    }
    let ranks = ranks
        .iter()
        .enumerate()
        .map(|(r, list)| Pattern::new(duration, list).map_err(|m| err(0, format!("rank {r}: {m}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Trace { resolution, threshold, duration, ranks })
}

fn header_complete(duration: Option<Time>, number: usize, err: &impl Fn(usize, String) -> TraceError) -> Result<Time, TraceError> {
    match duration {
        Some(0) => Err(err(number, "duration_ns must be positive".into())),
        Some(d) => Ok(d),
        None => Err(err(number, "duration_ns missing: the header must give it before the first detour".into())),
    }
}

/// A non-negative decimal number of nanoseconds, to picoseconds.
fn nanoseconds(text: &str, what: &str) -> Result<Time, String> {
    if text.starts_with('-') {
        return Err(format!("{what} {text} is negative"));
    }
    let value: f64 = text.parse().map_err(|_| format!("{what} '{text}' is not a number"))?;
    let ps = (value * PS_PER_NS as f64).round();
    if !ps.is_finite() || ps > MAX_INPUT_PS as f64 {
        return Err(format!("{what} '{text}' is too large"));
    }
    Ok(ps as Time)
}

fn ns(ps: Time) -> String {
    if ps.is_multiple_of(PS_PER_NS) {
        (ps / PS_PER_NS).to_string()
    } else {
        format!("{:.3}", ps as f64 / PS_PER_NS as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "contend-noise 1\n# host vm\nresolution_ns 21.5\nduration_ns 1000\nrank 0\n10 5\n100 50 # long\nrank 1\n\nrank 2\n0 1\nend 3\n";

    fn error(text: &str) -> String {
        parse_trace(text, "t.noise").unwrap_err().to_string()
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_named_with_its_line() {
        let path = std::env::temp_dir().join(format!("contend-noise-utf8-{}.noise", std::process::id()));
        std::fs::write(&path, b"contend-noise 1\nduration 1000\nrank 0 \xc7\n").unwrap();
        let error = read_trace_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((error.line, error.message.as_str()), (3, "byte 0xc7 is not UTF-8 text"));
    }

    #[test]
    fn reads_ranks_and_header() {
        let t = parse_trace(GOOD, "t.noise").unwrap();
        assert_eq!((t.resolution, t.threshold, t.duration), (Some(21_500), None, 1_000_000));
        assert_eq!(t.ranks.len(), 3);
        assert_eq!(t.ranks[0].detours().collect::<Vec<_>>(), vec![(10_000, 5_000), (100_000, 50_000)]);
        assert!(t.ranks[1].is_empty());
        let single = parse_trace("contend-noise 1\nduration_ns 10\n1 2\nend 1", "t").unwrap();
        assert_eq!(single.ranks.len(), 1);
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let cases = [
            ("hello\n", "t.noise:1: not a contend noise trace"),
            ("contend-noise 2\n", "t.noise:1: unsupported noise trace version '2'"),
            ("contend-noise 1\n5 1\nend 1\n", "t.noise:2: duration_ns missing"),
            ("contend-noise 1\nduration_ns 100\n50 10\n40 5\nend 2\n", "t.noise:4: detour at 40 ns starts before the previous one ends (60 ns)"),
            ("contend-noise 1\nduration_ns 100\n-5 10\nend 1\n", "t.noise:3: start_ns -5 is negative"),
            ("contend-noise 1\nduration_ns 100\n5 -1\nend 1\n", "t.noise:3: length_ns -1 is negative"),
            ("contend-noise 1\nduration_ns 100\n5\nend 1\n", "t.noise:3: expected a detour 'start_ns length_ns', got 1 field(s)"),
            ("contend-noise 1\nduration_ns 100\n5 x\nend 1\n", "t.noise:3: length_ns 'x' is not a number"),
            ("contend-noise 1\nduration_ns 100\n5 0\nend 1\n", "t.noise:3: length_ns must be positive"),
            ("contend-noise 1\nduration_ns 100\n95 10\nend 1\n", "t.noise:3: detour ends at 105 ns, after duration_ns 100"),
            ("contend-noise 1\nduration_ns 100\n5 1\n10 1", "t.noise:4: truncated"),
            ("contend-noise 1\nduration_ns 100\n5 1\nend 2\n", "t.noise:4: the file holds 1 detours but its end line says 2"),
            ("contend-noise 1\nduration_ns 100\nrank 1\nend 0\n", "t.noise:3: expected 'rank 0'"),
            ("contend-noise 1\nduration_ns 100\nduration_ns 100\n", "t.noise:3: duration_ns given twice"),
            ("contend-noise 1\nduration_ns 0\nend 0\n", "t.noise:3: duration_ns must be positive"),
            ("contend-noise 1\nduration_ns 100\nend 0\n7 1\n", "t.noise:4: text after the 'end' line"),
            ("contend-noise 1\nduration_ns 100\n0 100\nend 1\n", "t.noise: rank 0: the detours leave no time for work"),
        ];
        for (text, expected) in cases {
            let got = error(text);
            assert!(got.starts_with(expected), "{got:?} should start with {expected:?}");
        }
    }

    #[test]
    fn missing_file_says_so() {
        let e = read_trace_file(Path::new("/nonexistent/x.noise")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.noise: cannot read noise trace"));
    }
}
