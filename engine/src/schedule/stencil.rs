//! A LAMMPS-like stencil (3-D halo exchange and a calc with memory traffic per step) with optional
//! one-sided-like bulk transfers on a second CPU and NIC of each rank (in-memory checkpoints
//! written into another node), generated from (rank, index) in O(1) like the collectives
//! (docs/models.md, "Memory contention (NiMC)"; `contend reproduce nimc`).
//!
//! Ranks form a periodic px × py × pz grid (x fastest, the most cubic factorisation of the rank
//! count). Step k of a rank is: one receive per direction (tag = direction), one send per direction
//! to the neighbour that way, then `calc <calc> mem <mem>`, which requires all of the step's sends
//! and receives; step k+1's sends and receives require step k's calc. Directions are ±x, ±y, ±z,
//! leaving out dimensions of size 1. A checkpoint (writer w, target t, start s, bytes b) adds to w
//! `calc s cpu 1` and `send b to t tag 1000+i cpu 1 nic 1` (after the calc), and to t
//! `recv b from w tag 1000+i cpu 1 nic 1` (posted at once), so the transfer costs the application's
//! CPU and NIC nothing and lands in the target node's memory.

use super::{Op, Program};

/// A bulk transfer from `writer` to `target` starting at `start` (schedule time units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub writer: u32,
    pub target: u32,
    pub start: u64,
    pub bytes: u64,
}

/// First tag of the checkpoint transfers (halo messages use tags 0..6).
pub const CHECKPOINT_TAG: u32 = 1000;

#[derive(Clone, Copy, Debug)]
struct Extra {
    op: Op,
    /// Requires the extra op just before it (a writer's send after its start calc).
    after_previous: bool,
}

/// The generated stencil program.
#[derive(Clone, Debug)]
pub struct Stencil {
    ranks: u32,
    dims: [u32; 3],
    /// (dimension, +1 or -1) of each direction, in tag order.
    dirs: Vec<(usize, bool)>,
    steps: u32,
    halo: u64,
    calc: u64,
    mem: u64,
    /// Per rank with extra ops: (rank, first index into `extra`, count), sorted by rank.
    extra_of: Vec<(u32, u32, u32)>,
    extra: Vec<Extra>,
}

/// The most cubic px × py × pz = p (largest factors first, each to the smallest dimension so far),
/// px <= py <= pz not guaranteed; deterministic.
pub fn grid_dims(p: u32) -> [u32; 3] {
    let mut factors = Vec::new();
    let mut n = p;
    let mut f = 2;
    while f * f <= n {
        while n.is_multiple_of(f) {
            factors.push(f);
            n /= f;
        }
        f += 1;
    }
    if n > 1 {
        factors.push(n);
    }
    let mut dims = [1u32; 3];
    for &f in factors.iter().rev() {
        let smallest = (0..3).min_by_key(|&i| dims[i]).expect("three dims");
        dims[smallest] *= f;
    }
    dims
}

impl Stencil {
    /// Checks the arguments: at least one rank and one step, checkpoints between existing ranks.
    pub fn new(ranks: u32, steps: u32, halo: u64, calc: u64, mem: u64, checkpoints: &[Checkpoint]) -> Result<Stencil, String> {
        if ranks == 0 || ranks > super::collectives::MAX_RANKS {
            return Err(format!("ranks must be between 1 and {}, not {ranks}", super::collectives::MAX_RANKS));
        }
        if steps == 0 {
            return Err("the stencil needs at least one step".into());
        }
        let max = super::goal::MAX_VALUE;
        for (what, v) in [("halo bytes", halo), ("calc duration", calc), ("memory bytes", mem)] {
            if v > max {
                return Err(format!("{what} {v} too large (at most {max})"));
            }
        }
        let dims = grid_dims(ranks);
        let dirs: Vec<(usize, bool)> = (0..3).filter(|&d| dims[d] > 1).flat_map(|d| [(d, true), (d, false)]).collect();
        let ops_per_rank = steps as u64 * (2 * dirs.len() as u64 + 1);
        if ops_per_rank + 2 * checkpoints.len() as u64 > u32::MAX as u64 / 2 {
            return Err(format!("{steps} steps are too many operations per rank"));
        }
        let mut per_rank: Vec<(u32, Extra)> = Vec::new();
        for (i, c) in checkpoints.iter().enumerate() {
            if c.writer >= ranks || c.target >= ranks {
                return Err(format!("checkpoint {}: rank out of range for {ranks} ranks", i + 1));
            }
            if c.start > max || c.bytes > max {
                return Err(format!("checkpoint {}: start or size too large (at most {max})", i + 1));
            }
            let tag = CHECKPOINT_TAG + i as u32;
            let mut timer = Op::calc(c.start);
            timer.cpu = 1;
            let mut send = Op::send(c.target, c.bytes, tag);
            (send.cpu, send.nic) = (1, 1);
            let mut recv = Op::recv(c.writer, c.bytes, tag);
            (recv.cpu, recv.nic) = (1, 1);
            per_rank.push((c.writer, Extra { op: timer, after_previous: false }));
            per_rank.push((c.writer, Extra { op: send, after_previous: true }));
            per_rank.push((c.target, Extra { op: recv, after_previous: false }));
        }
        // Stable: a rank's extra ops keep their order (a writer's send right after its timer).
        per_rank.sort_by_key(|&(r, _)| r);
        let mut extra_of: Vec<(u32, u32, u32)> = Vec::new();
        let mut extra = Vec::with_capacity(per_rank.len());
        for (r, e) in per_rank {
            match extra_of.last_mut() {
                Some(last) if last.0 == r => last.2 += 1,
                _ => extra_of.push((r, extra.len() as u32, 1)),
            }
            extra.push(e);
        }
        Ok(Stencil { ranks, dims, dirs, steps, halo, calc, mem, extra_of, extra })
    }

    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    fn per_step(&self) -> u32 {
        2 * self.dirs.len() as u32 + 1
    }

    fn main_ops(&self) -> u32 {
        self.steps * self.per_step()
    }

    /// (first index into `extra`, count) of `rank`'s extra ops.
    fn extras(&self, rank: u32) -> (u32, u32) {
        match self.extra_of.binary_search_by_key(&rank, |&(r, _, _)| r) {
            Ok(i) => (self.extra_of[i].1, self.extra_of[i].2),
            Err(_) => (0, 0),
        }
    }

    /// The neighbour of `rank` one step along direction `d`.
    fn neighbour(&self, rank: u32, d: usize, plus: bool) -> u32 {
        let [dx, dy, _] = self.dims;
        let mut c = [rank % dx, (rank / dx) % dy, rank / (dx * dy)];
        let n = self.dims[d];
        c[d] = if plus { (c[d] + 1) % n } else { (c[d] + n - 1) % n };
        c[0] + dx * (c[1] + dy * c[2])
    }
}

impl Program for Stencil {
    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn num_cpus(&self) -> u32 {
        1 + !self.extra.is_empty() as u32
    }
    fn num_nics(&self) -> u32 {
        1 + !self.extra.is_empty() as u32
    }
    fn num_ops(&self, rank: u32) -> u32 {
        self.main_ops() + self.extras(rank).1
    }
    fn op(&self, rank: u32, index: u32) -> Op {
        if index >= self.main_ops() {
            return self.extra[(self.extras(rank).0 + index - self.main_ops()) as usize].op;
        }
        let nd = self.dirs.len() as u32;
        let j = index % self.per_step();
        if j < nd {
            // Receive what the neighbour on the other side sends in direction j.
            let (d, plus) = self.dirs[j as usize];
            Op::recv(self.neighbour(rank, d, !plus), self.halo, j)
        } else if j < 2 * nd {
            let (d, plus) = self.dirs[(j - nd) as usize];
            Op::send(self.neighbour(rank, d, plus), self.halo, j - nd)
        } else {
            Op::calc_mem(self.calc, self.mem)
        }
    }
    fn dep_count(&self, rank: u32, index: u32) -> u32 {
        if index >= self.main_ops() {
            return self.extra[(self.extras(rank).0 + index - self.main_ops()) as usize].after_previous as u32;
        }
        let j = index % self.per_step();
        if j == self.per_step() - 1 {
            j
        } else {
            (index >= self.per_step()) as u32
        }
    }
    fn roots(&self, rank: u32, out: &mut Vec<u32>) {
        out.extend(0..self.per_step() - 1);
        let (first, count) = self.extras(rank);
        for e in 0..count {
            if !self.extra[(first + e) as usize].after_previous {
                out.push(self.main_ops() + e);
            }
        }
    }
    fn after_done(&self, rank: u32, index: u32, out: &mut Vec<u32>) {
        let main = self.main_ops();
        if index >= main {
            let (first, count) = self.extras(rank);
            let e = index - main;
            if e + 1 < count && self.extra[(first + e + 1) as usize].after_previous {
                out.push(index + 1);
            }
            return;
        }
        let per = self.per_step();
        let step_start = index - index % per;
        if index % per == per - 1 {
            if index + 1 < main {
                out.extend(index + 1..index + per);
            }
        } else {
            out.push(step_start + per - 1);
        }
    }
    fn after_start(&self, _rank: u32, _index: u32, _out: &mut Vec<u32>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::OpKind;

    #[test]
    fn dims_are_near_cubic() {
        assert_eq!(grid_dims(64), [4, 4, 4]);
        assert_eq!(grid_dims(8192).iter().product::<u32>(), 8192);
        assert_eq!(grid_dims(7), [7, 1, 1]);
    }

    #[test]
    fn every_send_has_its_receive() {
        let s = Stencil::new(24, 2, 100, 10, 0, &[Checkpoint { writer: 3, target: 17, start: 5, bytes: 1000 }]).unwrap();
        let mut sends = std::collections::HashMap::new();
        let mut recvs = std::collections::HashMap::new();
        for r in 0..24 {
            for i in 0..s.num_ops(r) {
                let op = s.op(r, i);
                match op.kind {
                    OpKind::Send => *sends.entry((r, op.peer, op.tag)).or_insert(0) += 1,
                    OpKind::Recv => *recvs.entry((op.peer, r, op.tag)).or_insert(0) += 1,
                    OpKind::Calc => {}
                }
            }
        }
        assert_eq!(sends, recvs);
        assert_eq!(s.num_cpus(), 2);
    }
}
