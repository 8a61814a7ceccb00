//! Shared cores (docs/models.md, "Shared cores"): a node's ranks, more than its cores, take turns on
//! them. CPU work of a rank (a calc, a send's or a receive's overhead) needs its own CPU clock free,
//! as in LogGOPS, and one of its node's cores; a rank that waits for a message holds none, as an MPI
//! rank that yields while it polls. A core that last ran another rank costs `switch` before the new
//! one runs. A rank waiting in a spinning receive (`crate::schedule::spins`) does not yield: while
//! it waits, its core goes to another rank only at the scheduler's next tick (a multiple of
//! `quantum`), and it spins on again when that rank is done.

use crate::node::CoreSpec;
use crate::time::Time;

/// `Cores::last` of a core no rank has run on, `Cores::home` of a rank that has not run.
const NOBODY: u32 = u32::MAX;

pub(super) struct Cores {
    /// Per rank: where its node's cores begin in `free` and `last`.
    first: Vec<u32>,
    per_node: u32,
    switch: Time,
    quantum: Time,
    /// Per core: when it is free, the rank it ran last, and how many ranks spin on it.
    free: Vec<Time>,
    last: Vec<u32>,
    spinners: Vec<u32>,
    /// Per rank: the core it ran on last, its spinning receives posted and not yet matched, and
    /// whether it has waited for a message since it last ran (gave up its core's turn).
    home: Vec<u32>,
    spinning: Vec<u32>,
    waited: Vec<bool>,
    /// The core the last `earliest` asked by the simulator gave (its caller then occupies it).
    pub(super) chosen: u32,
}

impl Cores {
    /// The cores of nodes `node_of` (per rank), `spec.per_node` each.
    pub(super) fn new(spec: &CoreSpec, node_of: &[u32]) -> Cores {
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let (per_node, cores) = (spec.per_node, nodes * spec.per_node as usize);
        Cores {
            first: node_of.iter().map(|&n| n * per_node).collect(),
            per_node,
            switch: spec.switch,
            quantum: spec.quantum,
            free: vec![0; cores],
            last: vec![NOBODY; cores],
            spinners: vec![0; cores],
            home: vec![NOBODY; node_of.len()],
            spinning: vec![0; node_of.len()],
            waited: vec![false; node_of.len()],
            chosen: NOBODY,
        }
    }

    /// The earliest time at or after `t` that rank `h` can start CPU work on one of its node's
    /// cores, and which core: the earliest, and among equals the one it ran on last, else the
    /// first.
    #[inline]
    pub(super) fn earliest(&self, h: u32, t: Time) -> (Time, u32) {
        let base = self.first[h as usize];
        let mine = if self.spinning[h as usize] > 0 { self.home[h as usize] } else { NOBODY };
        let mut best = (Time::MAX, base);
        for core in base..base + self.per_node {
            let (free, last) = (self.free[core as usize], self.last[core as usize]);
            let switch = if last == h || last == NOBODY { 0 } else { self.switch };
            // A rank that ran there last runs on: it never left the core unless it waited for a
            // message (its own NIC's gap or its own operations kept it in the call) or a tick
            // came since, which hands the core to a waiting spinner; or it is the spinner polling
            // there. Others wait for the tick.
            let same_turn = self.quantum == 0 || t / self.quantum == free / self.quantum;
            let running_on = last == h && (t <= free || mine == core || (!self.waited[h as usize] && same_turn));
            let others_spin = !running_on && self.spinners[core as usize] > (mine == core) as u32;
            let start = if others_spin && self.quantum > 0 {
                // A spinning rank keeps the core until the next tick; a rank asking within a
                // switch after a tick caught it (so that asking again at the start it was given
                // gives the same start).
                t.saturating_sub(switch).max(free).div_ceil(self.quantum) * self.quantum + switch
            } else {
                t.max(free + switch)
            };
            if start < best.0 || (start == best.0 && last == h) {
                best = (start, core);
            }
        }
        best
    }

    /// Rank `h` runs on `core` until `end` (and spins there from then on, if it is spinning).
    #[inline]
    pub(super) fn occupy(&mut self, core: u32, h: u32, end: Time) {
        self.free[core as usize] = end;
        self.last[core as usize] = h;
        self.waited[h as usize] = false;
        let home = &mut self.home[h as usize];
        if self.spinning[h as usize] > 0 && *home != core {
            if *home != NOBODY {
                self.spinners[*home as usize] -= 1;
            }
            self.spinners[core as usize] += 1;
        }
        *home = core;
    }

    /// Rank `h` posted a receive that found no message: it waits (yielding its core's turn), or,
    /// `spinning`, spins on the core it ran on last (without a quantum, nothing spins).
    #[inline]
    pub(super) fn wait(&mut self, h: u32, spinning: bool) {
        self.waited[h as usize] = true;
        if !spinning || self.quantum == 0 {
            return;
        }
        self.spinning[h as usize] += 1;
        let home = self.home[h as usize];
        if self.spinning[h as usize] == 1 && home != NOBODY {
            self.spinners[home as usize] += 1;
        }
    }

    /// A spinning receive of rank `h` matched.
    #[inline]
    pub(super) fn matched(&mut self, h: u32) {
        if self.quantum == 0 {
            return;
        }
        self.spinning[h as usize] -= 1;
        let home = self.home[h as usize];
        if self.spinning[h as usize] == 0 && home != NOBODY {
            self.spinners[home as usize] -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_keeps_its_core_and_pays_the_switch_to_take_another_s() {
        // Ranks 0..3 on one node of 2 cores, a switch of 5.
        let mut cores = Cores::new(&CoreSpec::new(2, 5, 0).unwrap(), &[0, 0, 0]);
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
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 0).unwrap(), &[0, 0, 1, 1]);
        cores.occupy(0, 0, 10);
        assert_eq!(cores.earliest(1, 0), (15, 0));
        assert_eq!(cores.earliest(2, 0), (0, 1));
    }

    #[test]
    fn a_rank_keeps_its_core_between_its_own_operations_until_it_waits_for_a_message() {
        // Rank 1 ran on the one core and spins there; rank 0 takes it at the tick and works to 1010.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        cores.occupy(0, 1, 10);
        cores.wait(1, true);
        assert_eq!(cores.earliest(0, 20), (1005, 0));
        cores.occupy(0, 0, 1010);
        // Its next send, after its NIC's gap: it never left the core.
        assert_eq!(cores.earliest(0, 1012), (1012, 0));
        // Asking after a tick has passed, the spinner's turn comes first: the next tick.
        assert_eq!(cores.earliest(0, 2012), (3000, 0));
        // Once it has waited for a message, likewise.
        cores.wait(0, false);
        assert_eq!(cores.earliest(0, 1012), (2000, 0));
    }

    #[test]
    fn a_spinning_rank_keeps_its_core_until_the_next_tick() {
        // Ranks 0 and 1 on one core, a switch of 5, ticks every 1000.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        cores.occupy(0, 0, 10);
        cores.wait(0, true);
        // Rank 1 waits for the tick after 10, then its switch.
        assert_eq!(cores.earliest(1, 0), (1005, 0));
        assert_eq!(cores.earliest(1, 2500), (3005, 0));
        // Asking again at the start it was given, it is given the same.
        assert_eq!(cores.earliest(1, 1005), (1005, 0));
        // Rank 1, running on from its own work, needs no tick.
        let mut other = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        other.occupy(0, 0, 5);
        other.occupy(0, 1, 10);
        other.wait(0, true);
        assert_eq!(other.earliest(1, 10), (10, 0));
        assert_eq!(other.earliest(1, 11), (11, 0));
        // After waiting for a message it asks anew: the tick.
        other.wait(1, false);
        assert_eq!(other.earliest(1, 11), (1000, 0));
        // Rank 0 itself needs no tick; once it has matched, rank 1 needs none either.
        assert_eq!(cores.earliest(0, 20), (20, 0));
        cores.matched(0);
        assert_eq!(cores.earliest(1, 20), (20, 0));
        // A spinner that ran on its core last is the one polling there: its message needs no tick.
        let mut two = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0, 0]);
        two.occupy(0, 0, 10);
        two.wait(0, true);
        two.occupy(0, 1, 20);
        two.wait(1, true);
        assert_eq!(two.earliest(1, 50), (50, 0));
        assert_eq!(two.earliest(0, 50), (1005, 0));
        // A preempted spinner spins on when the rank that took its core waits for a message.
        cores.wait(0, true);
        cores.occupy(0, 1, 1100);
        assert_eq!(cores.earliest(1, 1200), (1200, 0));
        cores.wait(1, false);
        assert_eq!(cores.earliest(1, 1200), (2000, 0));
    }
}
