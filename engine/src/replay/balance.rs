//! Checks while converting that every point-to-point message has its receive and every member of a
//! communicator takes part in as many collectives, so that a converted schedule never deadlocks
//! for want of a partner.
//!
//! Memory is one entry per distinct (source, destination, tag) and per communicator, never per
//! message.

use std::collections::HashMap;

use crate::schedule::ANY;

/// Where an operation came from: world rank and trace line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub rank: u32,
    pub line: u64,
}

#[derive(Default)]
struct Count {
    sends: u64,
    recvs: u64,
    first_send: Option<Origin>,
    first_recv: Option<Origin>,
}

/// A mismatch found at the end: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub at: Origin,
    pub msg: String,
}

#[derive(Default)]
pub struct Balance {
    /// (src, dst, tag) with exact source and tag on the receive side.
    exact: HashMap<(u32, u32, u32), Count>,
    /// Wildcard receives per destination: count and first one.
    wild: HashMap<u32, (u64, Origin)>,
    /// Collectives per communicator (keyed by its member list's id): calls per member, first call.
    colls: HashMap<u32, (Vec<u64>, Vec<Option<Origin>>)>,
}

impl Balance {
    pub fn send(&mut self, src: u32, dst: u32, tag: u32, at: Origin) {
        let c = self.exact.entry((src, dst, tag)).or_default();
        c.sends += 1;
        c.first_send.get_or_insert(at);
    }

    /// A receive at `dst`; `src` or `tag` may be [`ANY`].
    pub fn recv(&mut self, src: u32, dst: u32, tag: u32, at: Origin) {
        if src == ANY || tag == ANY {
            let w = self.wild.entry(dst).or_insert((0, at));
            w.0 += 1;
            return;
        }
        let c = self.exact.entry((src, dst, tag)).or_default();
        c.recvs += 1;
        c.first_recv.get_or_insert(at);
    }

    /// Member `index` of a communicator of `size` members (identified by `ctx`) called a collective.
    pub fn collective(&mut self, ctx: u32, size: u32, index: u32, at: Origin) {
        let (calls, first) = self.colls.entry(ctx).or_insert_with(|| (vec![0; size as usize], vec![None; size as usize]));
        calls[index as usize] += 1;
        first[index as usize].get_or_insert(at);
    }

    /// The first mismatch, if any, deterministically (smallest rank, then line). Wildcard receives
    /// at a destination absorb any surplus of sends to it.
    pub fn check(&self, world: &dyn Fn(u32, u32) -> u32) -> Option<Mismatch> {
        let mut found: Vec<Mismatch> = Vec::new();
        let mut surplus: HashMap<u32, (i64, Option<Mismatch>)> = HashMap::new();
        for (&(src, dst, tag), c) in &self.exact {
            if c.sends > c.recvs {
                let at = c.first_send.expect("a send was counted");
                let n = c.sends - c.recvs;
                let m = Mismatch {
                    at,
                    msg: format!(
                        "rank {src} sends {n} message(s) to rank {dst} with tag {tag} that rank {dst} never receives (first here)"
                    ),
                };
                let e = surplus.entry(dst).or_insert((0, None));
                e.0 += n as i64;
                if e.1.as_ref().is_none_or(|old| (old.at.rank, old.at.line) > (at.rank, at.line)) {
                    e.1 = Some(m);
                }
            } else if c.recvs > c.sends {
                let at = c.first_recv.expect("a receive was counted");
                let n = c.recvs - c.sends;
                found.push(Mismatch {
                    at,
                    msg: format!(
                        "rank {dst} receives {n} message(s) from rank {src} with tag {tag} that rank {src} never sends (first here)"
                    ),
                });
            }
        }
        for (dst, (n, first)) in surplus {
            let wild = self.wild.get(&dst).map_or(0, |w| w.0) as i64;
            if n > wild {
                found.push(first.expect("a surplus has its first send"));
            }
        }
        let mut available: HashMap<u32, i64> = HashMap::new();
        for (k, c) in &self.exact {
            if c.sends > c.recvs {
                *available.entry(k.1).or_default() += (c.sends - c.recvs) as i64;
            }
        }
        for (&dst, &(n, at)) in &self.wild {
            let left = available.get(&dst).copied().unwrap_or(0);
            if (n as i64) > left {
                found.push(Mismatch {
                    at,
                    msg: format!("rank {dst} posts {} wildcard receive(s) that no send is left to match", n as i64 - left),
                });
            }
        }
        for (&ctx, (calls, first)) in &self.colls {
            let most = *calls.iter().max().unwrap_or(&0);
            if let Some(i) = calls.iter().position(|&c| c != most) {
                let busy = calls.iter().position(|&c| c == most).expect("the maximum is somewhere");
                let at = first[busy].expect("a member with calls has a first one");
                found.push(Mismatch {
                    at,
                    msg: format!(
                        "rank {} calls {most} collective(s) on this communicator but its member rank {} calls {}",
                        at.rank,
                        world(ctx, i as u32),
                        calls[i]
                    ),
                });
            }
        }
        found.into_iter().min_by_key(|m| (m.at.rank, m.at.line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rank: u32, line: u64) -> Origin {
        Origin { rank, line }
    }

    #[test]
    fn matched_traffic_passes_and_leftovers_are_located() {
        let mut b = Balance::default();
        b.send(0, 1, 5, at(0, 10));
        b.recv(0, 1, 5, at(1, 7));
        b.send(1, 0, 3, at(1, 9));
        b.recv(ANY, 0, ANY, at(0, 12));
        assert_eq!(b.check(&|_, i| i), None);
        b.send(2, 1, 4, at(2, 30));
        let m = b.check(&|_, i| i).unwrap();
        assert_eq!(m.at, at(2, 30));
        assert!(m.msg.contains("rank 2 sends 1 message(s) to rank 1 with tag 4"), "{}", m.msg);
        b.recv(3, 0, 1, at(0, 20));
        assert_eq!(b.check(&|_, i| i).unwrap().at, at(0, 20));
    }

    #[test]
    fn collective_counts_must_agree() {
        let mut b = Balance::default();
        b.collective(0, 2, 0, at(0, 4));
        b.collective(0, 2, 1, at(1, 4));
        assert_eq!(b.check(&|_, i| i), None);
        b.collective(0, 2, 1, at(1, 8));
        let m = b.check(&|_, i| i).unwrap();
        assert_eq!(m.at, at(1, 4));
        assert!(m.msg.contains("calls 2 collective(s)") && m.msg.contains("rank 0 calls 1"), "{}", m.msg);
    }
}
