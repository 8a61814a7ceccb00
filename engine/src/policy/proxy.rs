//! Proxy admission control: each node has `servers` communication servers; a task puts its message
//! in its own queue and a free server injects it. Servers serve the queues in round robin, one
//! message per turn, so no task waits behind another's burst. Only the servers inject, so at most
//! `servers` cores of a node are active at the NIC (Luo et al. 2012's Proxy).

use std::collections::VecDeque;

/// The servers and per-task queues of every node.
#[derive(Debug)]
pub struct Proxy {
    /// Free server indices per node (the lowest is taken first).
    free: Vec<Vec<u32>>,
    queues: Vec<VecDeque<u32>>,
    /// The tasks of each node in rank order, and where its round robin resumes.
    tasks: Vec<Vec<u32>>,
    next: Vec<usize>,
    pending: Vec<u32>,
}

impl Proxy {
    /// `node_of[task]` places the tasks on nodes.
    pub fn new(servers: u32, node_of: &[u32]) -> Proxy {
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let mut tasks = vec![Vec::new(); nodes];
        for (task, &n) in node_of.iter().enumerate() {
            tasks[n as usize].push(task as u32);
        }
        Proxy {
            free: vec![(0..servers).rev().collect(); nodes],
            queues: vec![VecDeque::new(); node_of.len()],
            tasks,
            next: vec![0; nodes],
            pending: vec![0; nodes],
        }
    }

    /// `task` on `node` asks for message `id` to be injected.
    pub fn push(&mut self, node: u32, task: u32, id: u32) {
        self.queues[task as usize].push_back(id);
        self.pending[node as usize] += 1;
    }

    /// If a server of `node` is free and a message waits: the next queue in round robin with a
    /// message; `admit(task, id)` may refuse it (tokens behind the servers), and then the servers
    /// wait and the turn stays with that queue. Returns (server, task, id) of the dispatched message.
    pub fn dispatch(&mut self, node: u32, mut admit: impl FnMut(u32, u32) -> bool) -> Option<(u32, u32, u32)> {
        let n = node as usize;
        if self.pending[n] == 0 || self.free[n].is_empty() {
            return None;
        }
        let count = self.tasks[n].len();
        for step in 0..count {
            let slot = (self.next[n] + step) % count;
            let task = self.tasks[n][slot];
            let Some(&id) = self.queues[task as usize].front() else { continue };
            if !admit(task, id) {
                self.next[n] = slot;
                return None;
            }
            self.queues[task as usize].pop_front();
            self.pending[n] -= 1;
            self.next[n] = (slot + 1) % count;
            let server = self.free[n].pop().expect("a free server");
            return Some((server, task, id));
        }
        unreachable!("pending messages are in some queue of the node")
    }

    /// Server `server` of `node` finished injecting.
    pub fn free_server(&mut self, node: u32, server: u32) {
        let free = &mut self.free[node as usize];
        free.push(server);
        free.sort_unstable_by(|a, b| b.cmp(a));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_over_task_queues() {
        let mut p = Proxy::new(1, &[0, 0, 0]);
        for id in 0..3 {
            p.push(0, 0, id); // task 0's burst
        }
        p.push(0, 2, 10);
        let mut order = Vec::new();
        while let Some((server, _, id)) = p.dispatch(0, |_, _| true) {
            order.push(id);
            p.free_server(0, server);
        }
        assert_eq!(order, vec![0, 10, 1, 2]);
    }

    #[test]
    fn busy_servers_and_refusals_hold_messages() {
        let mut p = Proxy::new(2, &[0, 0]);
        for id in 0..4 {
            p.push(0, id % 2, id);
        }
        assert_eq!(p.dispatch(0, |_, _| true), Some((0, 0, 0)));
        assert_eq!(p.dispatch(0, |_, _| false), None);
        assert_eq!(p.dispatch(0, |_, _| true), Some((1, 1, 1)));
        assert_eq!(p.dispatch(0, |_, _| true), None); // both servers busy
    }
}
