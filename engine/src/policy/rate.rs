//! Inline rate throttling: a task injects at most once per `gap`, whatever the others do (Luo
//! et al. 2012's IRT: task-local knowledge only).

use crate::time::Time;

/// The last injection of every task.
#[derive(Debug)]
pub struct RateLimiter {
    gap: Time,
    last: Vec<Option<Time>>,
}

impl RateLimiter {
    pub fn new(gap: Time, tasks: usize) -> RateLimiter {
        RateLimiter { gap, last: vec![None; tasks] }
    }

    /// `Ok` (and the injection is recorded) if `task` may inject at `t`, else the time it may.
    pub fn admit(&mut self, task: u32, t: Time) -> Result<(), Time> {
        let last = &mut self.last[task as usize];
        match *last {
            Some(l) if t < l + self.gap => Err(l + self.gap),
            _ => {
                *last = Some(t);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_injections_of_one_task_only() {
        let mut r = RateLimiter::new(100, 2);
        assert_eq!(r.admit(0, 5), Ok(()));
        assert_eq!(r.admit(0, 50), Err(105));
        assert_eq!(r.admit(1, 50), Ok(()));
        assert_eq!(r.admit(0, 105), Ok(()));
    }
}
