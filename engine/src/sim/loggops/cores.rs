//! Shared cores (docs/models.md, "Shared cores"): a node's ranks, more than its cores, take turns on
//! them. CPU work of a rank (a calc, a send's or a receive's overhead) needs its own CPU clock free,
//! as in LogGOPS, and one of its node's cores; a rank that waits for a message holds none, as an MPI
//! rank that yields while it polls, but a rank that took a core from another passes it back only after
//! a turn as long as that rank's last burst of work (the kernel's fair share). A core that last ran
//! another rank costs `switch` before the new one runs. A rank waiting in a spinning receive
//! (`crate::schedule::spins`) does not yield: while it waits, its core goes to another rank only at
//! the scheduler's next tick (a multiple of `quantum`), and it spins on again when that rank is done,
//! unless that rank has had less of the cores than the spinner: the kernel's fair share lets it poll
//! on (docs/models.md, "Shared cores").

use crate::node::CoreSpec;
use crate::time::Time;

/// `Cores::last` of a core no rank has run on, `Cores::home` of a rank that has not run.
const NOBODY: u32 = u32::MAX;

pub(super) struct Cores {
    /// Per rank: where its node's cores begin in `free` and `last`, and how many of them it may run
    /// on from there (1 for a rank pinned to a core: `first` is then that core).
    first: Vec<u32>,
    choices: Vec<u32>,
    per_node: u32,
    switch: Time,
    quantum: Time,
    /// Per core: when it is free, the rank it ran last and since when (it holds the core, working
    /// or polling, until another rank takes it), and how many ranks spin on it.
    free: Vec<Time>,
    last: Vec<u32>,
    since: Vec<Time>,
    spinners: Vec<u32>,
    /// Per core: the rank that held it before its holder, and that rank's last burst of work (what a
    /// yielding holder is owed before it passes the core back).
    before: Vec<u32>,
    before_work: Vec<Time>,
    /// Per rank: the time it has held cores (its share so far, the kernel's virtual runtime).
    used: Vec<Time>,
    /// Per node: its ranks.
    members: Vec<Vec<u32>>,
    /// Per rank: the core it ran on last, its spinning receives posted and not yet matched, and
    /// whether it has waited for a message since it last ran (gave up its core's turn).
    home: Vec<u32>,
    spinning: Vec<u32>,
    waited: Vec<bool>,
    /// Per rank that waited: since when (it is runnable from then on: it polls and yields).
    waiting_since: Vec<Time>,
    /// Per rank: its CPU work since it last waited for a message (its current or last burst).
    burst: Vec<Time>,
    /// The core the last `earliest_took` asked by the simulator gave, and when the rank got it
    /// (its caller then occupies it).
    pub(super) chosen: u32,
    pub(super) chosen_took: Time,
}

impl Cores {
    /// The cores of nodes `node_of` (per rank), `spec.per_node` each.
    pub(super) fn new(spec: &CoreSpec, node_of: &[u32]) -> Cores {
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let (per_node, cores) = (spec.per_node, nodes * spec.per_node as usize);
        let pinned = |r: usize| spec.core_of.get(r).copied();
        Cores {
            first: node_of.iter().enumerate().map(|(r, &n)| n * per_node + pinned(r).unwrap_or(0)).collect(),
            choices: (0..node_of.len()).map(|r| if pinned(r).is_some() { 1 } else { per_node }).collect(),
            per_node,
            switch: spec.switch,
            quantum: spec.quantum,
            free: vec![0; cores],
            last: vec![NOBODY; cores],
            since: vec![0; cores],
            spinners: vec![0; cores],
            before: vec![NOBODY; cores],
            before_work: vec![0; cores],
            used: vec![0; node_of.len()],
            members: node_of.iter().enumerate().fold(vec![Vec::new(); nodes], |mut m, (r, &n)| {
                m[n as usize].push(r as u32);
                m
            }),
            home: vec![NOBODY; node_of.len()],
            spinning: vec![0; node_of.len()],
            waited: vec![false; node_of.len()],
            waiting_since: vec![0; node_of.len()],
            burst: vec![0; node_of.len()],
            chosen: NOBODY,
            chosen_took: 0,
        }
    }

    /// The ranks of `h`'s node other than `h` that spin on `core`.
    fn spinners_on(&self, h: u32, core: u32) -> impl Iterator<Item = u32> + '_ {
        self.members[(core / self.per_node) as usize]
            .iter()
            .copied()
            .filter(move |&r| r != h && self.spinning[r as usize] > 0 && self.home[r as usize] == core)
    }

    /// The rank spinning on `core`, other than `h`, that has had the least of the cores.
    fn least_spinner(&self, h: u32, core: u32) -> u32 {
        self.spinners_on(h, core).min_by_key(|&r| (self.used[r as usize], r)).unwrap_or(h)
    }

    /// Whether rank `h`, off `core`, has had no more of the cores at `tick` than every rank
    /// spinning there (the one holding it counts its time on it until then).
    fn eligible_at(&self, h: u32, core: u32, tick: Time) -> bool {
        let holder = self.last[core as usize];
        self.spinners_on(h, core).all(|r| {
            let held = if r == holder { tick.saturating_sub(self.since[core as usize]) } else { 0 };
            self.used[h as usize] <= self.used[r as usize] + held
        })
    }

    /// Whether rank `h`, holding `core` since `since[core]` and polling there at `t`, has had no
    /// more of the cores by then than every rank spinning there: the kernel then finds no spinner
    /// eligible when `h` yields, and `h` polls on (EEVDF: a task whose virtual runtime is ahead of
    /// the average has had its share). Else: when the first spinner became eligible.
    fn owed_until(&self, h: u32, core: u32, t: Time) -> Result<(), Time> {
        let held = self.used[h as usize] + t.saturating_sub(self.since[core as usize]);
        let least = self.spinners_on(h, core).map(|r| self.used[r as usize]).min().unwrap_or(Time::MAX);
        if held <= least {
            Ok(())
        } else {
            Err(self.since[core as usize] + least.saturating_sub(self.used[h as usize]))
        }
    }

    /// [`Cores::earliest_took`]'s start and core (what the tests check).
    #[cfg(test)]
    fn earliest(&self, h: u32, t: Time) -> (Time, u32) {
        let (start, core, _) = self.earliest_took(h, t);
        (start, core)
    }

    /// The earliest time at or after `t` that rank `h` can start CPU work on one of its node's
    /// cores, and which core: the earliest, and among equals the one it ran on last, else the
    /// first; and when the rank got that core: its start, or, for a waiting rank the kernel gave
    /// the core at a tick before its message came, that tick.
    pub(super) fn earliest_took(&self, h: u32, t: Time) -> (Time, u32, Time) {
        let base = self.first[h as usize];
        let mine = if self.spinning[h as usize] > 0 { self.home[h as usize] } else { NOBODY };
        let mut best = (Time::MAX, base, Time::MAX);
        for core in base..base + self.choices[h as usize] {
            let (free, last) = (self.free[core as usize], self.last[core as usize]);
            let switch = if last == h || last == NOBODY { 0 } else { self.switch };
            // A rank that ran there last runs on: it never left the core unless it waited for a
            // message (its own NIC's gap or its own operations kept it in the call) or a tick
            // came since, which hands the core to a waiting spinner; or it is the spinner polling
            // there. Others wait for the tick.
            let same_turn = self.quantum == 0 || t / self.quantum == free / self.quantum;
            let running_on = last == h && (t <= free || mine == core || (!self.waited[h as usize] && same_turn));
            let others_spin = !running_on && self.spinners[core as usize] > (mine == core) as u32;
            // A rank that waited for a message polls on while the spinners there have had more of
            // the cores; once one has caught up, it took the core then.
            let polled = if others_spin && last == h { self.owed_until(h, core, t) } else { Err(free) };
            // A rank waiting for a message is runnable (it polls and yields): at the first tick
            // after it began to wait, and after the spinners had the core back, the kernel gives it
            // the core if they have had more of the cores than it (one it ran on last: they had
            // caught up with it, and have run since); it polls there from then on.
            let ticked = match polled {
                Err(from) if others_spin && self.waited[h as usize] && self.quantum > 0 => {
                    let tick = from.max(self.waiting_since[h as usize]).div_ceil(self.quantum) * self.quantum;
                    (tick + switch <= t && (last == h || self.eligible_at(h, core, tick))).then_some(tick)
                }
                _ => None,
            };
            let start = if ticked.is_some() {
                t
            } else if others_spin && polled.is_err() && self.quantum > 0 {
                // A spinning rank keeps the core until the next tick; a rank asking within a
                // switch after a tick caught it (so that asking again at the start it was given
                // gives the same start).
                let taken = polled.err().unwrap_or(free).max(free);
                t.saturating_sub(switch).max(taken).div_ceil(self.quantum) * self.quantum + switch
            } else {
                // The rank that took the core from `h` and now waits for a message polls and
                // yields; the kernel passes the core back only once it has had as long a turn as
                // `h`'s last burst of work there (EEVDF: a task ahead of the other is not eligible).
                let owed = last != h && last != NOBODY && self.waited[last as usize] && self.before[core as usize] == h;
                let caught_up = if owed {
                    self.since[core as usize].saturating_add(self.before_work[core as usize]).saturating_add(switch)
                } else {
                    0
                };
                t.max(free + switch).max(caught_up)
            };
            if start < best.0 || (start == best.0 && last == h) {
                best = (start, core, ticked.unwrap_or(start));
            }
        }
        best
    }

    /// Rank `h`, which got `core` at `took` (its start, or the tick it got the core at while it
    /// waited), runs there until `end` (and spins there from then on, if it is spinning). The rank
    /// that held the core until then has used it that long, or, if a spinner caught up with it
    /// while it polled, until then, and the spinner since.
    #[inline]
    pub(super) fn occupy(&mut self, core: u32, h: u32, took: Time, end: Time) {
        let (held, since) = (self.last[core as usize], self.since[core as usize]);
        if held != NOBODY {
            let mine = if self.spinning[held as usize] > 0 { self.home[held as usize] } else { NOBODY };
            let spinners = self.spinners[core as usize] > (mine == core) as u32;
            let caught = if spinners && mine != core { self.owed_until(held, core, took).err() } else { None };
            match caught.map(|at| at.max(self.free[core as usize])).filter(|&at| at < took) {
                Some(at) => {
                    // `least_spinner` is the one the kernel ran: the least served.
                    let s = self.least_spinner(held, core);
                    self.used[held as usize] += at.saturating_sub(since);
                    self.used[s as usize] += took - at;
                    self.since[core as usize] = took;
                }
                None if held != h => {
                    self.used[held as usize] += took.saturating_sub(since);
                    self.since[core as usize] = took;
                }
                None => {}
            }
        } else {
            self.since[core as usize] = took;
        }
        let k = core as usize;
        if held != h && held != NOBODY {
            (self.before[k], self.before_work[k]) = (held, self.burst[held as usize]);
        }
        let work = end.saturating_sub(took);
        self.burst[h as usize] = if self.waited[h as usize] { work } else { self.burst[h as usize].saturating_add(work) };
        self.free[k] = end;
        self.last[k] = h;
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

    /// Rank `h` posted a receive at `t` that found no message: it waits (yielding its core's turn),
    /// or, `spinning`, spins on the core it ran on last (without a quantum, nothing spins).
    #[inline]
    pub(super) fn wait(&mut self, h: u32, t: Time, spinning: bool) {
        if !self.waited[h as usize] {
            self.waiting_since[h as usize] = t;
        }
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
        cores.occupy(0, 0, 0, 10);
        assert_eq!(cores.earliest(1, 0), (0, 1));
        cores.occupy(1, 1, 0, 20);
        // Rank 2 waits for core 0 (free at 10), then its switch: 15.
        assert_eq!(cores.earliest(2, 0), (15, 0));
        // Rank 0 takes core 0 back at 10, without a switch.
        assert_eq!(cores.earliest(0, 0), (10, 0));
        // Long after, a switch has passed on either core: rank 0 prefers its own.
        assert_eq!(cores.earliest(0, 100), (100, 0));
        assert_eq!(cores.earliest(2, 100), (100, 0));
    }

    #[test]
    fn a_rank_that_took_the_core_and_waits_passes_it_back_after_as_long_a_turn() {
        // Ranks 0..2 on one core, a switch of 5, no ticks. Rank 1 works a burst of 100 and waits.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 0).unwrap(), &[0, 0, 0]);
        cores.wait(1, 0, false);
        cores.occupy(0, 1, 0, 100);
        cores.wait(1, 100, false);
        // Rank 0 takes the core after the switch, works to 110 and waits.
        assert_eq!(cores.earliest(0, 100), (105, 0));
        cores.occupy(0, 0, 105, 110);
        cores.wait(0, 110, false);
        // Rank 1's message comes at 120: rank 0 polls on until its turn is as long as rank 1's burst.
        assert_eq!(cores.earliest(1, 120), (105 + 100 + 5, 0));
        // Rank 2, which the core was not taken from, is owed nothing.
        assert_eq!(cores.earliest(2, 120), (120, 0));
    }

    #[test]
    fn nodes_do_not_share_cores() {
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 0).unwrap(), &[0, 0, 1, 1]);
        cores.occupy(0, 0, 0, 10);
        assert_eq!(cores.earliest(1, 0), (15, 0));
        assert_eq!(cores.earliest(2, 0), (0, 1));
    }

    #[test]
    fn a_rank_keeps_its_core_between_its_own_operations_until_it_waits_for_a_message() {
        // Rank 1 ran on the one core and spins there; rank 0 takes it at the tick and works to 1010.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        cores.occupy(0, 1, 0, 10);
        cores.wait(1, 10, true);
        assert_eq!(cores.earliest(0, 20), (1005, 0));
        cores.occupy(0, 0, 1005, 1010);
        // Its next send, after its NIC's gap: it never left the core.
        assert_eq!(cores.earliest(0, 1012), (1012, 0));
        // Asking after a tick has passed, the spinner's turn comes first: the next tick.
        assert_eq!(cores.earliest(0, 2012), (3000, 0));
        // Once it has waited for a message it polls on, while it has had less of the core than
        // the spinner (7 by 1012, the spinner 1005).
        cores.wait(0, 1010, false);
        assert_eq!(cores.earliest(0, 1012), (1012, 0));
    }

    #[test]
    fn a_spinning_rank_keeps_its_core_until_the_next_tick() {
        // Ranks 0 and 1 on one core, a switch of 5, ticks every 1000.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        cores.occupy(0, 0, 0, 10);
        cores.wait(0, 10, true);
        // Rank 1 waits for the tick after 10, then its switch.
        assert_eq!(cores.earliest(1, 0), (1005, 0));
        assert_eq!(cores.earliest(1, 2500), (3005, 0));
        // Asking again at the start it was given, it is given the same.
        assert_eq!(cores.earliest(1, 1005), (1005, 0));
        // Rank 1, running on from its own work, needs no tick.
        let mut other = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        other.occupy(0, 0, 0, 5);
        other.occupy(0, 1, 5, 10);
        other.wait(0, 5, true);
        assert_eq!(other.earliest(1, 10), (10, 0));
        assert_eq!(other.earliest(1, 11), (11, 0));
        // After waiting for a message it asks anew: the tick.
        other.wait(1, 11, false);
        assert_eq!(other.earliest(1, 11), (1000, 0));
        // Rank 0 itself needs no tick; once it has matched, rank 1 needs none either.
        assert_eq!(cores.earliest(0, 20), (20, 0));
        cores.matched(0);
        assert_eq!(cores.earliest(1, 20), (20, 0));
        // A spinner that ran on its core last is the one polling there: its message needs no tick.
        let mut two = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0, 0]);
        two.occupy(0, 0, 0, 10);
        two.wait(0, 10, true);
        two.occupy(0, 1, 15, 20);
        two.wait(1, 20, true);
        assert_eq!(two.earliest(1, 50), (50, 0));
        assert_eq!(two.earliest(0, 50), (1005, 0));
        // A preempted spinner spins on once the rank that took its core waits for a message and
        // has had as much of the cores (the kernel's fair share): rank 0 held the core 0..1005,
        // rank 1 from 1005, and it waits from 1100 on.
        cores.wait(0, 20, true);
        cores.occupy(0, 1, 1005, 1100);
        assert_eq!(cores.earliest(1, 1200), (1200, 0));
        cores.wait(1, 1100, false);
        // By 1200 it has had 195 of the core: it polls on.
        assert_eq!(cores.earliest(1, 1200), (1200, 0));
        // From 2010 on it would have had more: the spinner took the core back then, and rank 1
        // has it again at the next tick (the spinner has run since), or asks at 3000 for it.
        assert_eq!(cores.earliest(1, 2200), (3000, 0));
        assert_eq!(cores.earliest(1, 3100), (3100, 0));
    }

    #[test]
    fn a_waiting_rank_takes_a_core_from_a_spinner_that_has_had_more_at_a_tick() {
        // Ranks 0 and 1 on one core, ticks every 1000, a switch of 5: rank 0 computed 0..600 and
        // spins; rank 1, which has had none of the core, waits for a message from 100 on.
        let mut cores = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0, 1]);
        cores.occupy(0, 0, 0, 600);
        cores.wait(0, 600, true);
        cores.wait(1, 100, false);
        // Its message comes at 1500: the kernel gave it the core at the tick at 1000 (the spinner
        // had had 1000 of it, rank 1 none), and it has polled there since.
        assert_eq!(cores.earliest(1, 1500), (1500, 0));
        // Before the tick (and its switch), it waits for both.
        assert_eq!(cores.earliest(1, 900), (1005, 0));
        // A rank that has had more than the spinner waits for the tick after its message.
        let mut ahead = Cores::new(&CoreSpec::new(1, 5, 1000).unwrap(), &[0, 0]);
        ahead.occupy(0, 1, 0, 3000);
        ahead.occupy(0, 0, 3005, 3600);
        ahead.wait(0, 3600, true);
        ahead.wait(1, 3000, false);
        assert_eq!(ahead.earliest(1, 4500), (5005, 0));
    }
}
