//! What is left when the events run out: unmatched receives and sends, operations never started.

use std::collections::HashSet;

use crate::schedule::Program;
use crate::sim::matching::Queue;
use crate::sim::result::{Deadlock, Pending};

use super::Sim;

impl<P: Program> Sim<'_, P> {
    pub(super) fn pending(&self, rank: u32, op: u32) -> Pending {
        let o = self.prog.op(rank, op);
        Pending { rank, op, kind: o.kind, peer: o.peer, tag: o.tag, bytes: o.size, line: self.prog.source_line(rank, op) }
    }

    pub(super) fn find_deadlock(&self) -> Option<Deadlock> {
        let mut d = Deadlock::default();
        let cap = Deadlock::LIST_CAP;
        for h in self.owned.clone() {
            for op in self.queues.items(&self.hosts.get(h).queues, Queue::Posted) {
                d.unmatched_recv_count += 1;
                if d.unmatched_recvs.len() < cap {
                    d.unmatched_recvs.push(self.pending(h, op));
                }
            }
            for id in self.queues.items(&self.hosts.get(h).queues, Queue::Unexpected) {
                let m = &self.msgs[id as usize];
                d.unmatched_send_count += 1;
                if d.unmatched_sends.len() < cap {
                    d.unmatched_sends.push(self.pending(m.src, m.send_op));
                }
            }
        }
        // Rendezvous sends whose message waits unmatched never completed: (rank, op).
        let stuck_sends: HashSet<(u32, u32)> = self
            .owned
            .clone()
            .flat_map(|r| self.queues.items(&self.hosts.get(r).queues, Queue::Unexpected))
            .map(|id| &self.msgs[id as usize])
            .filter(|m| m.size > self.par.S)
            .map(|m| (m.src, m.send_op))
            .collect();
        for h in self.owned.clone() {
            let total = self.prog.num_ops(h);
            let started = self.hosts.get(h).started;
            if started < total {
                d.never_started_count += (total - started) as u64;
                if d.never_started.len() < cap {
                    self.list_never_started(h, &stuck_sends, &mut d.never_started, cap);
                }
            }
        }
        (d.count() > 0).then_some(d)
    }

    /// Lists operations of `h` that never started: those not reachable by replaying the rank's
    /// dependencies from its roots (started ops are exactly the reachable ones in a finished run,
    /// so the replay needs no per-op state during the simulation).
    pub(super) fn list_never_started(&self, h: u32, stuck_sends: &HashSet<(u32, u32)>, out: &mut Vec<Pending>, cap: usize) {
        let n = self.prog.num_ops(h) as usize;
        let mut remaining: Vec<u32> = (0..n as u32).map(|i| self.prog.dep_count(h, i)).collect();
        let mut started = vec![false; n];
        let mut stack = Vec::new();
        self.prog.roots(h, &mut stack);
        let mut deps = Vec::new();
        let posted: HashSet<u32> = self.queues.items(&self.hosts.get(h).queues, Queue::Posted).collect();
        while let Some(i) = stack.pop() {
            if started[i as usize] {
                continue;
            }
            started[i as usize] = true;
            deps.clear();
            self.prog.after_start(h, i, &mut deps);
            // An op completes unless it is a receive still posted or a rendezvous send unmatched.
            if !(posted.contains(&i) || stuck_sends.contains(&(h, i))) {
                self.prog.after_done(h, i, &mut deps);
            }
            for &a in &deps {
                remaining[a as usize] -= 1;
                if remaining[a as usize] == 0 {
                    stack.push(a);
                }
            }
        }
        for i in 0..n as u32 {
            if !started[i as usize] && out.len() < cap {
                out.push(self.pending(h, i));
            }
        }
    }
}
