//! Extrapolation of a traced run of P ranks to N = K * P ranks (`contend goal convert --ranks N`),
//! by the scheme of LogGOPSim's Schedgen (its `--traces-extr K`): the extrapolated job is K copies
//! of the traced one. Copy k's rank r (world rank r + P*k) makes traced rank r's calls, with:
//! - point-to-point peers (destinations, posted and matched sources) and one-sided targets and
//!   groups kept inside the copy: p becomes p + P*k;
//! - `MPI_COMM_WORLD`, and any communicator holding all P traced ranks (a dup of world), spanning
//!   all N ranks: copy j's member r follows copy j-1's, so a root r stays world rank r (copy 0's);
//!   per-member sizes of the v-collectives repeat once per copy;
//! - any other communicator (members m_i) becoming the members m_i + P*k in copy k: a
//!   sub-communicator collective stays inside its copy (Schedgen drops those collectives).
//!
//! It assumes weak scaling (every copy computes and communicates what the traced job did, and
//! copies talk to each other only in collectives on the world; per-rank collective sizes
//! unchanged): docs/models.md, "Extrapolating a trace", says where that is wrong.

use std::collections::HashSet;

use super::event::{Call, CommId, Event, RmaSync, TraceError, WORLD};
use super::{RankCalls, TraceSet};

/// The largest extrapolated rank count (world ranks are `int` in MPI).
pub const MAX_RANKS: u64 = (1 << 31) - 1;

/// `inner`'s P ranks as K = N / P copies: a trace set of N ranks.
pub struct Extrapolated<T> {
    inner: T,
    traced: u32,
    ranks: u32,
}

impl<T: TraceSet> Extrapolated<T> {
    /// `ranks` must be a multiple of the traced rank count, at most [`MAX_RANKS`].
    pub fn new(inner: T, ranks: u64) -> Result<Extrapolated<T>, String> {
        let traced = inner.num_ranks();
        if ranks > MAX_RANKS {
            return Err(format!("cannot extrapolate to {ranks} ranks: more than {MAX_RANKS}"));
        }
        if ranks == 0 || traced == 0 || !ranks.is_multiple_of(u64::from(traced)) {
            return Err(format!("cannot extrapolate to {ranks} ranks: not a multiple of the trace's {traced} ranks"));
        }
        Ok(Extrapolated { inner, traced, ranks: ranks as u32 })
    }
}

impl<T: TraceSet> TraceSet for Extrapolated<T> {
    fn num_ranks(&self) -> u32 {
        self.ranks
    }

    fn source(&self, rank: u32) -> String {
        self.inner.source(rank % self.traced)
    }

    fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
        let calls = self.inner.open(rank % self.traced)?;
        if self.ranks == self.traced {
            return Ok(calls);
        }
        let mut copy = Copy { traced: self.traced, ranks: self.ranks, base: rank - rank % self.traced, world_like: HashSet::new() };
        Ok(Box::new(calls.map(move |call| call.map(|c| copy.call(c)))))
    }

    fn has_one_sided(&self) -> bool {
        self.inner.has_one_sided()
    }

    fn threads_multiple(&self) -> bool {
        self.inner.threads_multiple()
    }
}

/// The mapping of one copy's rank: `base` = P*k.
struct Copy {
    traced: u32,
    ranks: u32,
    base: u32,
    /// This rank's communicators holding all traced ranks (they span the extrapolated world).
    world_like: HashSet<CommId>,
}

impl Copy {
    /// A traced world rank to this copy's. Ranks out of the trace's range stay out of the new
    /// range, so the converter still reports them.
    fn peer(&self, r: u32) -> u32 {
        if r < self.traced {
            r + self.base
        } else {
            r.saturating_add(self.ranks - self.traced)
        }
    }

    fn spans_world(&self, comm: CommId) -> bool {
        comm == WORLD || self.world_like.contains(&comm)
    }

    /// Per-member sizes of a world-spanning collective: the traced ones once per copy.
    fn repeat(&self, counts: &mut Vec<u64>) {
        if !counts.is_empty() {
            *counts = counts.repeat((self.ranks / self.traced) as usize);
        }
    }

    fn call(&mut self, mut call: Call) -> Call {
        match &mut call.event {
            Event::Send(s) => s.dest = self.peer(s.dest),
            Event::Recv(r) => self.recv(r),
            Event::SendRecv(s, r) => {
                s.dest = self.peer(s.dest);
                self.recv(r);
            }
            Event::Collective(c) => {
                if self.spans_world(c.comm) {
                    self.repeat(&mut c.send_counts);
                    self.repeat(&mut c.recv_counts);
                }
            }
            Event::CommCreate { comm, members } => {
                let all = members.len() == self.traced as usize && {
                    let mut seen = vec![false; members.len()];
                    members.iter().all(|&m| m < self.traced && !std::mem::replace(&mut seen[m as usize], true))
                };
                if all {
                    self.world_like.insert(*comm);
                    let (copies, traced) = (self.ranks / self.traced, self.traced);
                    *members = (0..copies).flat_map(|k| members.iter().map(move |&m| m + k * traced)).collect();
                } else {
                    self.world_like.remove(comm);
                    members.iter_mut().for_each(|m| *m = self.peer(*m));
                }
            }
            Event::CommFree { comm } => {
                self.world_like.remove(comm);
            }
            Event::Rma(r) => r.target = self.peer(r.target),
            Event::RmaSync { sync, .. } => match sync {
                RmaSync::Lock { target, .. } | RmaSync::Unlock { target } | RmaSync::Flush { target } | RmaSync::FlushLocal { target } => {
                    *target = self.peer(*target)
                }
                RmaSync::Post { group } | RmaSync::Start { group } => group.iter_mut().for_each(|m| *m = self.peer(*m)),
                RmaSync::Fence | RmaSync::LockAll | RmaSync::UnlockAll | RmaSync::FlushAll | RmaSync::FlushLocalAll | RmaSync::Complete | RmaSync::Wait => {}
            },
            Event::Complete(_) | Event::WinCreate { .. } | Event::WinFree { .. } | Event::Other | Event::Skipped(_) => {}
        }
        call
    }

    fn recv(&self, r: &mut super::event::Recv) {
        r.source = r.source.map(|s| self.peer(s));
        r.matched = r.matched.map(|s| self.peer(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::emit::{convert, Options};
    use crate::replay::event::{CollKind, Collective, Recv, Rma, RmaOp, Send, SendMode};
    use crate::schedule::goal::parse_goal;

    fn at(event: Event) -> Call {
        Call { start: 0, end: 0, line: 0, event }
    }

    fn send(dest: u32) -> Event {
        Event::Send(Send { dest, bytes: 8, tag: 1, comm: WORLD, mode: SendMode::Standard, req: None })
    }

    fn recv(source: Option<u32>, matched: Option<u32>) -> Event {
        Event::Recv(Recv { source, matched, bytes: 8, tag: Some(1), matched_tag: None, comm: WORLD, req: None })
    }

    fn coll(kind: CollKind, comm: CommId, counts: Vec<u64>) -> Event {
        Event::Collective(Collective { kind, comm, root: None, bytes: 8, send_counts: counts.clone(), recv_counts: counts, req: None })
    }

    /// Rank `rank`'s events of `traces` extrapolated to `n` ranks.
    fn events(traces: Vec<Vec<Event>>, n: u64, rank: u32) -> Vec<Event> {
        let set: Vec<Vec<Call>> = traces.into_iter().map(|r| r.into_iter().map(at).collect()).collect();
        let x = Extrapolated::new(set, n).unwrap();
        assert_eq!(x.num_ranks() as u64, n);
        x.open(rank).unwrap().map(|c| c.unwrap().event).collect()
    }

    #[test]
    fn point_to_point_peers_stay_inside_the_copy() {
        let rank1 = vec![send(0), recv(Some(0), Some(0)), recv(None, Some(0)), Event::SendRecv(
            Send { dest: 0, bytes: 1, tag: 2, comm: WORLD, mode: SendMode::Ready, req: Some(3) },
            Recv { source: None, matched: None, bytes: 1, tag: None, matched_tag: None, comm: WORLD, req: None },
        )];
        // Copy 2 of a 2-rank trace extrapolated to 8: traced rank 1 is world rank 5, its peer 0 is 4.
        let got = events(vec![vec![], rank1.clone()], 8, 5);
        let want = vec![send(4), recv(Some(4), Some(4)), recv(None, Some(4)), Event::SendRecv(
            Send { dest: 4, bytes: 1, tag: 2, comm: WORLD, mode: SendMode::Ready, req: Some(3) },
            Recv { source: None, matched: None, bytes: 1, tag: None, matched_tag: None, comm: WORLD, req: None },
        )];
        assert_eq!(got, want);
        // Copy 0 is the trace itself.
        assert_eq!(events(vec![vec![], rank1.clone()], 8, 1), rank1);
        // A peer the trace does not have stays out of range (the converter reports it).
        assert_eq!(events(vec![vec![send(2)], vec![]], 6, 2), vec![send(6)]);
    }

    #[test]
    fn communicators_map_to_the_copy_or_span_the_world() {
        let rank0 = vec![
            Event::CommCreate { comm: 5, members: vec![0, 2] },
            Event::CommCreate { comm: 6, members: vec![2, 0, 1] },
            coll(CollKind::Alltoallv, 5, vec![1, 2]),
            coll(CollKind::Alltoallv, 6, vec![1, 2, 3]),
            coll(CollKind::Allgatherv, WORLD, vec![4, 5, 6]),
            Event::CommFree { comm: 6 },
            Event::CommCreate { comm: 6, members: vec![0] },
            coll(CollKind::Gatherv, 6, vec![7]),
        ];
        let got = events(vec![rank0, vec![], vec![]], 9, 3);
        let want = vec![
            Event::CommCreate { comm: 5, members: vec![3, 5] },
            Event::CommCreate { comm: 6, members: vec![2, 0, 1, 5, 3, 4, 8, 6, 7] },
            coll(CollKind::Alltoallv, 5, vec![1, 2]),
            coll(CollKind::Alltoallv, 6, vec![1, 2, 3, 1, 2, 3, 1, 2, 3]),
            coll(CollKind::Allgatherv, WORLD, vec![4, 5, 6, 4, 5, 6, 4, 5, 6]),
            Event::CommFree { comm: 6 },
            Event::CommCreate { comm: 6, members: vec![3] },
            coll(CollKind::Gatherv, 6, vec![7]),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn one_sided_targets_and_groups_stay_inside_the_copy() {
        let rank0 = vec![
            Event::WinCreate { win: 1, comm: WORLD },
            Event::Rma(Rma { op: RmaOp::Put, win: 1, target: 1, bytes: 8, req: None, in_place: false }),
            Event::RmaSync { win: 1, sync: RmaSync::Lock { target: 1, exclusive: true } },
            Event::RmaSync { win: 1, sync: RmaSync::Flush { target: 1 } },
            Event::RmaSync { win: 1, sync: RmaSync::FlushLocal { target: 0 } },
            Event::RmaSync { win: 1, sync: RmaSync::Unlock { target: 1 } },
            Event::RmaSync { win: 1, sync: RmaSync::Post { group: vec![0, 1] } },
            Event::RmaSync { win: 1, sync: RmaSync::Start { group: vec![1] } },
            Event::RmaSync { win: 1, sync: RmaSync::Fence },
        ];
        let got = events(vec![rank0, vec![]], 4, 2);
        let want = vec![
            Event::WinCreate { win: 1, comm: WORLD },
            Event::Rma(Rma { op: RmaOp::Put, win: 1, target: 3, bytes: 8, req: None, in_place: false }),
            Event::RmaSync { win: 1, sync: RmaSync::Lock { target: 3, exclusive: true } },
            Event::RmaSync { win: 1, sync: RmaSync::Flush { target: 3 } },
            Event::RmaSync { win: 1, sync: RmaSync::FlushLocal { target: 2 } },
            Event::RmaSync { win: 1, sync: RmaSync::Unlock { target: 3 } },
            Event::RmaSync { win: 1, sync: RmaSync::Post { group: vec![2, 3] } },
            Event::RmaSync { win: 1, sync: RmaSync::Start { group: vec![3] } },
            Event::RmaSync { win: 1, sync: RmaSync::Fence },
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn rank_counts_must_be_whole_copies() {
        let two = || -> Vec<Vec<Call>> { vec![vec![], vec![]] };
        for bad in [0, 3, 5] {
            let e = Extrapolated::new(two(), bad).err().unwrap();
            assert_eq!(e, format!("cannot extrapolate to {bad} ranks: not a multiple of the trace's 2 ranks"));
        }
        assert_eq!(Extrapolated::new(two(), MAX_RANKS + 1).err().unwrap(), "cannot extrapolate to 2147483648 ranks: more than 2147483647");
        assert_eq!(Extrapolated::new(two(), 1 << 30).unwrap().source((1 << 30) - 1), "rank 1");
    }

    /// The GOAL text `traces` extrapolated to `n` ranks convert to (checked to parse).
    fn goal(traces: Vec<Vec<Event>>, n: u64) -> String {
        let set: Vec<Vec<Call>> = traces.into_iter().map(|r| r.into_iter().map(at).collect()).collect();
        let mut out = Vec::new();
        convert(&Extrapolated::new(set, n).unwrap(), &Options::default(), &mut out, &mut |_, _| true).unwrap();
        let text = String::from_utf8(out).unwrap();
        parse_goal(text.as_bytes(), "extrapolated").unwrap();
        text
    }

    /// Each rank's peers in the GOAL text (sends' destinations and receives' sources).
    fn peers(text: &str) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = Vec::new();
        for line in text.lines() {
            if line.starts_with("rank ") {
                out.push(Vec::new());
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(i) = words.iter().position(|w| *w == "to" || *w == "from") {
                out.last_mut().unwrap().push(words[i + 1].parse().unwrap());
            }
        }
        out
    }

    #[test]
    fn world_collectives_span_all_ranks_and_rings_stay_apart() {
        // A 2-rank ping then a barrier, as 3 copies: each ping stays in its copy; the barrier's
        // messages reach ranks of other copies.
        let traces = vec![vec![send(1), coll(CollKind::Barrier, WORLD, vec![])], vec![recv(Some(0), Some(0)), coll(CollKind::Barrier, WORLD, vec![])]];
        let text = goal(traces.clone(), 6);
        assert!(text.starts_with("num_ranks 6\n"), "{text}");
        let p = peers(&text);
        assert_eq!(p.len(), 6);
        for k in 0..3u32 {
            assert_eq!(p[(2 * k) as usize][0], 2 * k + 1, "{text}");
            assert_eq!(p[(2 * k + 1) as usize][0], 2 * k, "{text}");
        }
        let across = p.iter().enumerate().any(|(r, ps)| ps[1..].iter().any(|&q| q / 2 != r as u32 / 2));
        assert!(across, "the barrier stayed inside the copies:\n{text}");
        // Without the barrier, no message leaves its copy.
        let pings: Vec<Vec<Event>> = traces.into_iter().map(|r| r[..1].to_vec()).collect();
        let p = peers(&goal(pings, 6));
        assert!(p.iter().enumerate().all(|(r, ps)| ps.iter().all(|&q| q / 2 == r as u32 / 2)));
    }
}
