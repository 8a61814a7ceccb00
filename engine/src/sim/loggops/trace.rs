//! The critical path's hooks (`Options::critical_path`): what set the clock an operation waited
//! for, and the walk back from the last clock when the run is done.

use std::collections::HashSet;

use crate::schedule::Program;
use crate::sim::critical::{Cause, CriticalPath};
use crate::sim::hosts::Clock;
use crate::time::Time;

use super::Sim;

impl<P: Program> Sim<'_, P> {
    /// What set the clock that binds an operation or arrival: `c`, or `n` if that is later.
    pub(super) fn cause_of(&self, c: Clock, n: Option<Clock>) -> Cause {
        let cr = self.crit.as_ref().expect("tracing the critical path");
        match n {
            Some(n) if self.hosts[n] > self.hosts[c] => cr.setter(n.host, n.index),
            _ => cr.setter(c.host, c.index),
        }
    }

    /// Operation `i` of `h` is queued at `time`, the value of clock `c` (or `n`, if later).
    #[inline]
    pub(super) fn trace_queued(&mut self, h: u32, i: u32, time: Time, c: Clock, n: Option<Clock>) {
        if self.crit.is_some() {
            let cause = self.cause_of(c, n);
            self.crit.as_mut().expect("checked").queued(h, i, time, cause);
        }
    }

    /// The walk back from the clock that finished last (the lowest rank and CPU at the makespan),
    /// and the records' marks of the messages on it.
    pub(super) fn critical_path(&mut self, finish: &[Time], makespan: Time, finished: bool) -> Option<CriticalPath> {
        let cr = self.crit.as_ref().filter(|_| finished)?;
        let last = match finish.iter().position(|&f| f == makespan) {
            Some(h) => {
                let cpu = (0..self.cpus as u32).find(|&index| self.hosts[Clock { host: h as u32, index }] == makespan).expect("a CPU at the rank's finish");
                cr.setter(h as u32, cpu)
            }
            None => Cause::ORIGIN,
        };
        let path = cr.walk(self.prog, &self.par, self.cpu_scale, self.memory.is_some(), last, makespan, self.records.is_some());
        if let Some(rec) = &mut self.records {
            let on_path: HashSet<(u32, u32)> = path.messages.iter().copied().collect();
            rec.critical = rec.src.iter().zip(&rec.send_op).map(|(&s, &o)| on_path.contains(&(s, o))).collect();
        }
        Some(path)
    }
}
