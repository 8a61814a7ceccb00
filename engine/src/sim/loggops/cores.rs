//! Shared cores (docs/models.md, "Shared cores"): a node's ranks, more than its cores, take turns on
//! them. CPU work of a rank (a calc, a send's or a receive's overhead) needs its own CPU clock free,
//! as in LogGOPS, and one of its node's cores; a rank that waits for a message holds none, as an MPI
//! rank that yields while it polls. A core that last ran another rank costs `switch` before the new
//! one runs.

use crate::node::CoreSpec;
use crate::time::Time;

/// `Cores::last` of a core no rank has run on.
const NOBODY: u32 = u32::MAX;

pub(super) struct Cores {
    /// Per rank: where its node's cores begin in `free` and `last`.
    first: Vec<u32>,
    per_node: u32,
    switch: Time,
    /// Per core: when it is free, and the rank it ran last.
    free: Vec<Time>,
    last: Vec<u32>,
}

impl Cores {
    /// The cores of nodes `node_of` (per rank), `spec.per_node` each.
    pub(super) fn new(spec: &CoreSpec, node_of: &[u32]) -> Cores {
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let per_node = spec.per_node;
        Cores {
            first: node_of.iter().map(|&n| n * per_node).collect(),
            per_node,
            switch: spec.switch,
            free: vec![0; nodes * per_node as usize],
            last: vec![NOBODY; nodes * per_node as usize],
        }
    }

    /// The earliest time at or after `t` that rank `h` can start CPU work on one of its node's
    /// cores, and which core: the earliest, and among equals the one it ran on last, else the
    /// first.
    #[inline]
    pub(super) fn earliest(&self, h: u32, t: Time) -> (Time, u32) {
        let base = self.first[h as usize];
        let mut best = (Time::MAX, base);
        for core in base..base + self.per_node {
            let (free, last) = (self.free[core as usize], self.last[core as usize]);
            let switch = if last == h || last == NOBODY { 0 } else { self.switch };
            let start = t.max(free + switch);
            if start < best.0 || (start == best.0 && last == h) {
                best = (start, core);
            }
        }
        best
    }

    /// Rank `h` runs on `core` until `end`.
    #[inline]
    pub(super) fn occupy(&mut self, core: u32, h: u32, end: Time) {
        self.free[core as usize] = end;
        self.last[core as usize] = h;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_keeps_its_core_and_pays_the_switch_to_take_another_s() {
        // Ranks 0..3 on one node of 2 cores, a switch of 5.
        let mut cores = Cores::new(&CoreSpec::new(2, 5).unwrap(), &[0, 0, 0]);
        assert_eq!(cores.earliest(0, 0), (0, 0));
        cores.occupy(0, 0, 10);
        assert_eq!(cores.earliest(1, 0), (0, 1));
        cores.occupy(1, 1, 20);
        // Rank 2 waits for core 0 (free at 10), then its switch: 15.
        assert_eq!(cores.earliest(2, 0), (15, 0));
        // Rank 0 takes core 0 back at 10, without a switch.
        assert_eq!(cores.earliest(0, 0), (10, 0));
        // Long after, a switch has passed on either core: rank 0 prefers its own.
        assert_eq!(cores.earliest(0, 100), (100, 0));
        assert_eq!(cores.earliest(2, 100), (100, 0));
    }

    #[test]
    fn nodes_do_not_share_cores() {
        let mut cores = Cores::new(&CoreSpec::new(1, 5).unwrap(), &[0, 0, 1, 1]);
        cores.occupy(0, 0, 10);
        assert_eq!(cores.earliest(1, 0), (15, 0));
        assert_eq!(cores.earliest(2, 0), (0, 1));
    }
}
