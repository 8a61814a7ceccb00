//! Simulated time: integer picoseconds, and parsing of durations and per-byte costs with units.
//!
//! Every clock inside the engine is a [`Time`] in picoseconds (u64: about 213 days of range).
//! GOAL schedules keep their own unit (nanoseconds by convention); [`PS_PER_NS`] converts.

/// A point in time or a duration, in picoseconds.
pub type Time = u64;

/// Picoseconds per nanosecond: the default time unit of GOAL schedules and bare CLI numbers.
pub const PS_PER_NS: Time = 1_000;

/// Largest duration or per-byte cost accepted from users (about 11.6 days); keeps every sum of
/// costs far from u64 overflow for messages up to 2^40 bytes.
pub const MAX_INPUT_PS: Time = 1 << 60 >> 10;

fn unit_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "ps" => 1.0,
        "ns" | "" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        _ => return None,
    })
}

fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(end);
    (num.trim(), unit.trim())
}

fn parse_value(text: &str, what: &str) -> Result<(f64, String), String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("empty {what}"));
    }
    let (num, unit) = split_number(t);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("cannot read {what} '{text}': expected a number with an optional unit"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{what} '{text}' must be a non-negative number"));
    }
    Ok((value, unit.to_string()))
}

fn to_ps(value_ps: f64, text: &str, what: &str) -> Result<Time, String> {
    let rounded = value_ps.round();
    if rounded > MAX_INPUT_PS as f64 {
        return Err(format!("{what} '{text}' is too large"));
    }
    Ok(rounded as Time)
}

/// Parses a duration such as `3000` (ns), `3us`, `1.5 ms`, `80ps` into picoseconds.
///
/// ```
/// use contend_engine::time::parse_time;
/// assert_eq!(parse_time("3us").unwrap(), 3_000_000);
/// assert_eq!(parse_time("2500").unwrap(), 2_500_000);
/// assert!(parse_time("-1").is_err());
/// ```
pub fn parse_time(text: &str) -> Result<Time, String> {
    let (value, unit) = parse_value(text, "duration")?;
    let scale = unit_scale(&unit)
        .ok_or_else(|| format!("unknown time unit '{unit}' in '{text}' (use ps, ns, us, ms or s)"))?;
    to_ps(value * scale, text, "duration")
}

/// Parses a cost per byte into picoseconds per byte: a time (`6`, `6ns`, `80ps`, taken per byte)
/// or a bandwidth (`12.5GB/s`, `10Gbit/s`, `800MB/s`), converted as 1e12 / (bytes per second).
///
/// ```
/// use contend_engine::time::parse_per_byte;
/// assert_eq!(parse_per_byte("6").unwrap(), 6_000);
/// assert_eq!(parse_per_byte("12.5GB/s").unwrap(), 80);
/// assert_eq!(parse_per_byte("8Gbit/s").unwrap(), 1_000);
/// ```
pub fn parse_per_byte(text: &str) -> Result<Time, String> {
    let (value, unit) = parse_value(text, "per-byte cost")?;
    let unit_lc = unit.strip_suffix("/B").unwrap_or(&unit);
    if let Some(scale) = unit_scale(unit_lc) {
        return to_ps(value * scale, text, "per-byte cost");
    }
    let bytes_per_s = match unit.as_str() {
        "B/s" => 1.0,
        "KB/s" | "kB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        "TB/s" => 1e12,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        "bit/s" | "bps" => 1.0 / 8.0,
        "Kbit/s" | "kbit/s" => 1e3 / 8.0,
        "Mbit/s" => 1e6 / 8.0,
        "Gbit/s" => 1e9 / 8.0,
        "Tbit/s" => 1e12 / 8.0,
        _ => {
            return Err(format!(
                "unknown unit '{unit}' in '{text}' (use a time per byte such as 6ns, or a bandwidth such as 12.5GB/s)"
            ))
        }
    } * value;
    if bytes_per_s <= 0.0 {
        return Err(format!("bandwidth '{text}' must be positive"));
    }
    to_ps(1e12 / bytes_per_s, text, "per-byte cost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_time("0").unwrap(), 0);
        assert_eq!(parse_time("6ns").unwrap(), 6_000);
        assert_eq!(parse_time("1.5us").unwrap(), 1_500_000);
        assert_eq!(parse_time("2 ms").unwrap(), 2_000_000_000);
        assert_eq!(parse_time("1s").unwrap(), 1_000_000_000_000);
        assert_eq!(parse_time("80ps").unwrap(), 80);
        assert!(parse_time("3 parsecs").is_err());
        assert!(parse_time("abc").is_err());
        assert!(parse_time("").is_err());
        assert!(parse_time("1e30").is_err());
        assert!(parse_time("nan").is_err());
    }

    #[test]
    fn per_byte() {
        assert_eq!(parse_per_byte("0").unwrap(), 0);
        assert_eq!(parse_per_byte("0.08ns").unwrap(), 80);
        assert_eq!(parse_per_byte("1GB/s").unwrap(), 1_000);
        assert_eq!(parse_per_byte("1Gbit/s").unwrap(), 8_000);
        assert!(parse_per_byte("0GB/s").is_err());
        assert!(parse_per_byte("5 furlongs").is_err());
    }
}
