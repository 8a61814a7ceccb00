//! Collective and point-to-point pattern generators.
//!
//! Each pattern computes any operation, its dependency count and its dependents from
//! (rank, index) in O(1), so a simulation of 2^23 ranks never stores the 10^8 operations.
//! Where LogGOPSim's Schedgen has the pattern, the program is the one Schedgen writes: the same
//! operations in the same order with the same dependencies (duplicate `requires` lines Schedgen
//! emits for binomial trees change no dependency count that matters and are dropped), so the
//! simulated times are identical (the allgathers, MPICH's, have no Schedgen counterpart). All tags
//! are 0. Roots other than 0 swap ranks 0 and root, as Schedgen does.

use super::{Op, Program, ANY};

/// The patterns built as a chain of steps, step k a send and a receive (`chain_op`): one list, used
/// as a match pattern wherever they are treated alike.
macro_rules! chain_patterns {
    () => {
        Pattern::Dissemination
            | Pattern::AlltoallBruck
            | Pattern::AllreduceRecdoub
            | Pattern::AllreduceRing
            | Pattern::AllgatherRecdoub
            | Pattern::AllgatherRing
            | Pattern::AllgatherBruck
    };
}

/// The patterns `contend` can generate, by CLI name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    BinomialBcast,
    BinomialReduce,
    Dissemination,
    Scatter,
    Gather,
    AlltoallLinear,
    AlltoallPairwise,
    AlltoallBruck,
    AllreduceRecdoub,
    AllreduceRing,
    AllgatherRecdoub,
    AllgatherRing,
    AllgatherBruck,
    Incast,
    Pingpong,
    RandomPairs,
    NeighbourPairs,
}

impl Pattern {
    pub const ALL: [Pattern; 17] = [
        Pattern::BinomialBcast,
        Pattern::BinomialReduce,
        Pattern::Dissemination,
        Pattern::Scatter,
        Pattern::Gather,
        Pattern::AlltoallLinear,
        Pattern::AlltoallPairwise,
        Pattern::AlltoallBruck,
        Pattern::AllreduceRecdoub,
        Pattern::AllreduceRing,
        Pattern::AllgatherRecdoub,
        Pattern::AllgatherRing,
        Pattern::AllgatherBruck,
        Pattern::Incast,
        Pattern::Pingpong,
        Pattern::RandomPairs,
        Pattern::NeighbourPairs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Pattern::BinomialBcast => "binomial-bcast",
            Pattern::BinomialReduce => "binomial-reduce",
            Pattern::Dissemination => "dissemination",
            Pattern::Scatter => "scatter",
            Pattern::Gather => "gather",
            Pattern::AlltoallLinear => "alltoall-linear",
            Pattern::AlltoallPairwise => "alltoall-pairwise",
            Pattern::AlltoallBruck => "alltoall-bruck",
            Pattern::AllreduceRecdoub => "allreduce-recdoub",
            Pattern::AllreduceRing => "allreduce-ring",
            Pattern::AllgatherRecdoub => "allgather-recdoub",
            Pattern::AllgatherRing => "allgather-ring",
            Pattern::AllgatherBruck => "allgather-bruck",
            Pattern::Incast => "incast",
            Pattern::Pingpong => "pingpong",
            Pattern::RandomPairs => "random-pairs",
            Pattern::NeighbourPairs => "neighbour-pairs",
        }
    }

    pub fn from_name(name: &str) -> Result<Pattern, String> {
        Pattern::ALL.iter().copied().find(|p| p.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Pattern::ALL.iter().map(|p| p.name()).collect();
            format!("unknown collective '{name}' (choose from: {})", names.join(", "))
        })
    }
}

/// A generated schedule: a pattern, a rank count, a message size in bytes and a root.
#[derive(Clone, Debug)]
pub struct Collective {
    pattern: Pattern,
    ranks: u32,
    bytes: u64,
    root: u32,
    /// ceil(log2(ranks)): rounds of the tree and dissemination patterns.
    rounds: u32,
    /// random-pairs only: partner of each rank.
    partner: Vec<u32>,
}

/// Largest rank count a generator accepts.
pub const MAX_RANKS: u32 = (1 << 31) - 1;

fn ceil_log2(p: u32) -> u32 {
    if p <= 1 {
        0
    } else {
        32 - (p - 1).leading_zeros()
    }
}

fn bit_length(v: u32) -> u32 {
    32 - v.leading_zeros()
}

/// splitmix64: a tiny, well-mixed deterministic generator (same seed, same pairs everywhere).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

impl Collective {
    /// Checks the arguments; `seed` only matters for random patterns.
    pub fn new(pattern: Pattern, ranks: u32, bytes: u64, root: u32, seed: u64) -> Result<Collective, String> {
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(format!("ranks must be between 1 and {MAX_RANKS}, not {ranks}"));
        }
        if root >= ranks {
            return Err(format!("root {root} out of range for {ranks} ranks"));
        }
        if bytes > crate::schedule::goal::MAX_VALUE {
            return Err(format!("message size {bytes} too large (at most {})", crate::schedule::goal::MAX_VALUE));
        }
        match pattern {
            Pattern::AllreduceRecdoub | Pattern::AllgatherRecdoub if !ranks.is_power_of_two() => {
                return Err(format!("{} needs a power-of-two rank count, not {ranks}", pattern.name()))
            }
            Pattern::Pingpong if ranks < 2 => return Err("pingpong needs at least 2 ranks".into()),
            Pattern::AlltoallLinear | Pattern::AlltoallPairwise if (ranks as u64) * (ranks as u64) > 1 << 34 => {
                return Err(format!("{} with {ranks} ranks has too many operations (ranks^2 > 2^34)", pattern.name()))
            }
            _ => {}
        }
        let mut partner = Vec::new();
        if pattern == Pattern::RandomPairs {
            // Fisher-Yates shuffle; consecutive positions of the permutation are partners.
            let mut perm: Vec<u32> = (0..ranks).collect();
            let mut state = seed;
            for i in (1..ranks as usize).rev() {
                let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
                perm.swap(i, j);
            }
            partner = vec![u32::MAX; ranks as usize];
            for pair in perm.chunks_exact(2) {
                partner[pair[0] as usize] = pair[1];
                partner[pair[1] as usize] = pair[0];
            }
        }
        Ok(Collective { pattern, ranks, bytes, root, rounds: ceil_log2(ranks), partner })
    }

    pub fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Rank <-> virtual rank (Schedgen swaps 0 and the root; the map is its own inverse).
    #[inline]
    fn swap_root(&self, r: u32) -> u32 {
        if r == 0 {
            self.root
        } else if r == self.root {
            0
        } else {
            r
        }
    }

    /// Binomial trees: number of children of virtual rank v (rounds r >= bitlen(v) with v+2^r < P).
    #[inline]
    fn tree_children(&self, v: u32) -> u32 {
        let mut n = 0;
        let mut r = bit_length(v);
        while r < self.rounds && (v as u64 + (1u64 << r)) < self.ranks as u64 {
            n += 1;
            r += 1;
        }
        n
    }

    /// Steps of the chain patterns (send k, recv k alternate; send k requires recv k-1).
    #[inline]
    fn chain_steps(&self) -> u32 {
        match self.pattern {
            Pattern::Dissemination | Pattern::AlltoallBruck | Pattern::AllgatherBruck => self.rounds,
            Pattern::AllreduceRecdoub => 2 * self.ranks.trailing_zeros(),
            Pattern::AllgatherRecdoub => self.ranks.trailing_zeros(),
            Pattern::AllreduceRing => 2 * (self.ranks - 1),
            Pattern::AllgatherRing => self.ranks - 1,
            _ => 0,
        }
    }

    #[inline]
    fn pair_partner(&self, rank: u32) -> Option<u32> {
        let p = match self.pattern {
            Pattern::RandomPairs => self.partner[rank as usize],
            _ => rank ^ 1,
        };
        (p < self.ranks).then_some(p)
    }

    /// Bruck round k: bytes of the blocks whose index has bit k set.
    fn bruck_bytes(&self, k: u32) -> u64 {
        let p = self.ranks as u64;
        let half = 1u64 << k;
        let full = (p >> (k + 1)) << k;
        let rest = (p % (2 * half)).saturating_sub(half);
        (full + rest) * self.bytes
    }

    /// The (peer, size, is_send) of step k of a chain pattern.
    #[inline]
    fn chain_op(&self, rank: u32, index: u32) -> Op {
        let k = index / 2;
        let send = index % 2 == 0;
        let p = self.ranks;
        let (to, from, size) = match self.pattern {
            Pattern::Dissemination | Pattern::AlltoallBruck => {
                // k < ceil(log2 P), so 2^k < P and one conditional subtraction wraps around.
                let d = 1u32 << k;
                let wrap = |x: u32| if x >= p { x - p } else { x };
                let to = wrap(rank + d);
                let from = wrap(rank + (p - d));
                let size = if self.pattern == Pattern::Dissemination { self.bytes } else { self.bruck_bytes(k) };
                (to, from, size)
            }
            Pattern::AllreduceRecdoub => {
                let s = p.trailing_zeros();
                let (mask, size) = if k < s {
                    (1u32 << k, self.bytes >> (k + 1))
                } else {
                    let j = k - s;
                    (1u32 << (s - 1 - j), (self.bytes >> s) << j)
                };
                (rank ^ mask, rank ^ mask, size)
            }
            // Allgathers: `bytes` is one rank's block. Recursive doubling exchanges 2^k blocks
            // with rank ^ 2^k; Bruck sends min(2^k, P-2^k) blocks to rank - 2^k and receives from
            // rank + 2^k; the ring passes one block to the right P-1 times.
            Pattern::AllgatherRecdoub => (rank ^ (1 << k), rank ^ (1 << k), self.bytes << k),
            Pattern::AllgatherBruck => {
                let d = 1u32 << k;
                let size = (d.min(p - d)) as u64 * self.bytes;
                ((rank + p - d) % p, (rank + d) % p, size)
            }
            Pattern::AllgatherRing => ((rank + 1) % p, (rank + p - 1) % p, self.bytes),
            _ => ((rank + 1) % p, (rank + p - 1) % p, self.bytes / p as u64),
        };
        if send {
            Op::send(to, size, 0)
        } else {
            Op::recv(from, size, 0)
        }
    }
}

impl Program for Collective {
    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn num_cpus(&self) -> u32 {
        1
    }
    fn num_nics(&self) -> u32 {
        1
    }

    fn max_message_bytes(&self) -> Option<u64> {
        // Bruck's step k carries at most P/2 blocks; the other patterns one block or less.
        Some(match self.pattern {
            Pattern::AlltoallBruck | Pattern::AllgatherRecdoub | Pattern::AllgatherBruck => {
                self.bytes.saturating_mul(self.ranks as u64)
            }
            _ => self.bytes,
        })
    }

    fn num_ops(&self, rank: u32) -> u32 {
        let p = self.ranks;
        match self.pattern {
            Pattern::BinomialBcast | Pattern::BinomialReduce => {
                let v = self.swap_root(rank);
                (v > 0) as u32 + self.tree_children(v)
            }
            chain_patterns!() => {
                2 * self.chain_steps()
            }
            Pattern::Scatter | Pattern::Gather | Pattern::Incast => {
                if rank == self.root {
                    p - 1
                } else {
                    1
                }
            }
            Pattern::AlltoallLinear | Pattern::AlltoallPairwise => 2 * (p - 1),
            Pattern::Pingpong => {
                if rank ^ 1 < p {
                    2
                } else {
                    0
                }
            }
            Pattern::RandomPairs | Pattern::NeighbourPairs => 2 * self.pair_partner(rank).is_some() as u32,
        }
    }

    fn op(&self, rank: u32, index: u32) -> Op {
        let p = self.ranks;
        let s = self.bytes;
        match self.pattern {
            Pattern::BinomialBcast => {
                let v = self.swap_root(rank);
                let b = bit_length(v);
                if v > 0 && index == 0 {
                    Op::recv(self.swap_root(v - (1 << (b - 1))), s, 0)
                } else {
                    let j = index - (v > 0) as u32;
                    Op::send(self.swap_root(v + (1 << (b + j))), s, 0)
                }
            }
            Pattern::BinomialReduce => {
                let v = self.swap_root(rank);
                let b = bit_length(v);
                if v > 0 && index == 0 {
                    Op::send(self.swap_root(v - (1 << (b - 1))), s, 0)
                } else {
                    let j = index - (v > 0) as u32;
                    Op::recv(self.swap_root(v + (1 << (b + j))), s, 0)
                }
            }
            chain_patterns!() => {
                self.chain_op(rank, index)
            }
            Pattern::Scatter | Pattern::Gather => {
                let root_side = rank == self.root;
                let peer = if root_side { self.swap_root(index + 1) } else { self.root };
                if root_side == (self.pattern == Pattern::Scatter) {
                    Op::send(peer, s, 0)
                } else {
                    Op::recv(peer, s, 0)
                }
            }
            Pattern::Incast => {
                if rank == self.root {
                    Op::recv(ANY, s, 0)
                } else {
                    Op::send(self.root, s, 0)
                }
            }
            Pattern::AlltoallLinear | Pattern::AlltoallPairwise => {
                let step = index / 2 + 1;
                let (to, from) = if self.pattern == Pattern::AlltoallPairwise && p.is_power_of_two() {
                    (rank ^ step, rank ^ step)
                } else {
                    ((rank + step) % p, (rank + p - step) % p)
                };
                if index % 2 == 0 {
                    Op::send(to, s, 0)
                } else {
                    Op::recv(from, s, 0)
                }
            }
            Pattern::Pingpong => {
                let peer = rank ^ 1;
                // The even rank sends first; the odd rank answers.
                if (index == 0) == (rank % 2 == 0) {
                    Op::send(peer, s, 0)
                } else {
                    Op::recv(peer, s, 0)
                }
            }
            Pattern::RandomPairs | Pattern::NeighbourPairs => {
                let peer = self.pair_partner(rank).expect("op of a rank without partner");
                if index == 0 {
                    Op::send(peer, s, 0)
                } else {
                    Op::recv(peer, s, 0)
                }
            }
        }
    }

    fn dep_count(&self, rank: u32, index: u32) -> u32 {
        match self.pattern {
            Pattern::BinomialBcast => {
                let v = self.swap_root(rank);
                (v > 0 && index > 0) as u32
            }
            Pattern::BinomialReduce => {
                let v = self.swap_root(rank);
                if v > 0 && index == 0 {
                    self.tree_children(v)
                } else {
                    0
                }
            }
            chain_patterns!() => {
                (index % 2 == 0 && index > 0) as u32
            }
            Pattern::AlltoallPairwise => {
                if index >= 2 {
                    2
                } else {
                    0
                }
            }
            Pattern::Pingpong => (rank % 2 == 1 && index == 1) as u32,
            Pattern::Scatter | Pattern::Gather | Pattern::Incast | Pattern::AlltoallLinear => 0,
            Pattern::RandomPairs | Pattern::NeighbourPairs => 0,
        }
    }

    fn roots(&self, rank: u32, out: &mut Vec<u32>) {
        let n = self.num_ops(rank);
        match self.pattern {
            Pattern::BinomialBcast if self.swap_root(rank) > 0 => out.push(0),
            chain_patterns!() => {
                if n > 0 {
                    out.push(0);
                    out.extend((1..n).step_by(2));
                }
            }
            Pattern::AlltoallPairwise => out.extend(0..n.min(2)),
            Pattern::Pingpong if rank % 2 == 1 => out.push(0),
            _ => out.extend((0..n).filter(|&i| self.dep_count(rank, i) == 0)),
        }
    }

    fn after_done(&self, rank: u32, index: u32, out: &mut Vec<u32>) {
        match self.pattern {
            Pattern::BinomialBcast => {
                let v = self.swap_root(rank);
                if v > 0 && index == 0 {
                    out.extend(1..=self.tree_children(v));
                }
            }
            Pattern::BinomialReduce => {
                if self.swap_root(rank) > 0 && index > 0 {
                    out.push(0);
                }
            }
            chain_patterns!() => {
                if index % 2 == 1 && index + 1 < 2 * self.chain_steps() {
                    out.push(index + 1);
                }
            }
            Pattern::AlltoallPairwise => {
                let next = (index / 2 + 1) * 2;
                if next < self.num_ops(rank) {
                    out.extend([next, next + 1]);
                }
            }
            Pattern::Pingpong => {
                if rank % 2 == 1 && index == 0 {
                    out.push(1);
                }
            }
            _ => {}
        }
    }

    fn after_start(&self, _rank: u32, _index: u32, _out: &mut Vec<u32>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dependency counts must equal the number of times each op is listed as a dependent, and
    /// every op must be reachable: otherwise the generator would deadlock or double-issue.
    #[test]
    fn dependency_lists_match_counts() {
        for pattern in Pattern::ALL {
            for p in [1u32, 2, 3, 5, 8, 12, 16, 33] {
                let Ok(c) = Collective::new(pattern, p, 1000, 0, 7) else { continue };
                for r in 0..p {
                    let n = c.num_ops(r);
                    let mut counts = vec![0u32; n as usize];
                    let mut out = Vec::new();
                    for i in 0..n {
                        out.clear();
                        c.after_done(r, i, &mut out);
                        for &a in &out {
                            counts[a as usize] += 1;
                        }
                    }
                    for i in 0..n {
                        assert_eq!(counts[i as usize], c.dep_count(r, i), "{} P={p} rank {r} op {i}", pattern.name());
                    }
                    let mut roots = Vec::new();
                    c.roots(r, &mut roots);
                    let expect: Vec<u32> = (0..n).filter(|&i| c.dep_count(r, i) == 0).collect();
                    assert_eq!(roots, expect, "{} P={p} rank {r}", pattern.name());
                }
            }
        }
    }

    /// Every send has a matching receive: per (src, dst) pair, the counts agree.
    #[test]
    fn sends_and_receives_pair_up() {
        for pattern in Pattern::ALL {
            for p in [2u32, 3, 7, 8, 16] {
                let Ok(c) = Collective::new(pattern, p, 64, 1 % p, 3) else { continue };
                let mut sent = std::collections::HashMap::new();
                let mut recvd = std::collections::HashMap::new();
                let mut any = 0i64;
                for r in 0..p {
                    for i in 0..c.num_ops(r) {
                        let op = c.op(r, i);
                        match op.kind {
                            crate::schedule::OpKind::Send => *sent.entry((r, op.peer)).or_insert(0i64) += 1,
                            crate::schedule::OpKind::Recv if op.peer == ANY => any += 1,
                            crate::schedule::OpKind::Recv => *recvd.entry((op.peer, r)).or_insert(0i64) += 1,
                            _ => {}
                        }
                    }
                }
                let total_sent: i64 = sent.values().sum();
                let total_recv: i64 = recvd.values().sum::<i64>() + any;
                assert_eq!(total_sent, total_recv, "{} P={p}", pattern.name());
                if any == 0 {
                    assert_eq!(sent, recvd, "{} P={p}", pattern.name());
                }
            }
        }
    }
}
