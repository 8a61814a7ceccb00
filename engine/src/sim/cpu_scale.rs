//! A faster or slower CPU: every calc's duration multiplied by a factor (0.5: twice as fast),
//! rounded to the picosecond. Overheads (o, O) are the machine's and stay as they are.

use crate::time::Time;

/// A validated CPU speed factor; the default (1) leaves every duration as it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuScale(f64);

impl CpuScale {
    /// The range accepted: wide enough for any what-if, narrow enough that a scaled calc of a
    /// valid schedule stays far from overflowing the picosecond clock.
    pub const MIN: f64 = 1e-6;
    pub const MAX: f64 = 1e6;

    /// `factor` if it is a finite number in [MIN, MAX], else a one-line reason.
    pub fn new(factor: f64) -> Result<CpuScale, String> {
        if factor.is_finite() && (Self::MIN..=Self::MAX).contains(&factor) {
            Ok(CpuScale(factor))
        } else {
            Err(format!("cpu_scale must be a number in [{:e}, {:e}], not {factor}", Self::MIN, Self::MAX))
        }
    }

    pub fn factor(self) -> f64 {
        self.0
    }

    /// The duration of a calc of `work` picoseconds on the scaled CPU (exactly `work` at 1).
    #[inline]
    pub fn apply(self, work: Time) -> Time {
        if self.0 == 1.0 {
            work
        } else {
            // `as` saturates: a product beyond the clock's range becomes its end.
            (work as f64 * self.0).round() as Time
        }
    }
}

impl Default for CpuScale {
    fn default() -> CpuScale {
        CpuScale(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_rounds_to_the_picosecond() {
        let half = CpuScale::new(0.5).unwrap();
        assert_eq!(half.apply(3), 2); // 1.5 rounds away from zero
        assert_eq!(half.apply(1_000_000), 500_000);
        assert_eq!(CpuScale::new(3.0).unwrap().apply(7), 21);
        assert_eq!(CpuScale::default().apply(u64::MAX), u64::MAX);
    }

    #[test]
    fn refuses_what_is_not_a_speed() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-7, 2e6] {
            assert!(CpuScale::new(bad).is_err(), "{bad}");
        }
    }
}
