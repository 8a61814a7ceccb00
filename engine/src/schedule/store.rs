//! Compact storage of a parsed GOAL schedule: struct-of-arrays, 35 bytes per operation plus
//! 4 bytes per dependency, and dependents in CSR form (grouped per operation, statement order kept).

use super::{Op, OpKind, Program};

/// A whole GOAL schedule in memory. Operation ids are global (ranks stored one after the other).
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct GoalProgram {
    pub(crate) num_ranks: u32,
    pub(crate) num_cpus: u32,
    pub(crate) num_nics: u32,
    /// First global op id of each rank, plus the total at the end.
    pub(crate) rank_start: Vec<u32>,
    pub(crate) kind: Vec<OpKind>,
    pub(crate) cpu: Vec<u8>,
    pub(crate) nic: Vec<u8>,
    /// For calcs, peer and tag hold the memory bytes (see [`Op::mem`]): no column of its own.
    pub(crate) peer: Vec<u32>,
    pub(crate) tag: Vec<u32>,
    pub(crate) size: Vec<u64>,
    pub(crate) deps: Vec<u32>,
    /// Source line of each op (for error reports); 0 when unknown.
    pub(crate) line: Vec<u32>,
    /// CSR: dependents of op i are done_edges[done_start[i]..done_start[i+1]] (local indices).
    pub(crate) done_start: Vec<u32>,
    pub(crate) done_edges: Vec<u32>,
    pub(crate) start_start: Vec<u32>,
    pub(crate) start_edges: Vec<u32>,
}

impl GoalProgram {
    pub(crate) fn new(num_ranks: u32) -> GoalProgram {
        GoalProgram {
            num_ranks,
            num_cpus: 1,
            num_nics: 1,
            rank_start: vec![0],
            done_start: vec![0],
            start_start: vec![0],
            ..Default::default()
        }
    }

    /// Total number of operations over all ranks.
    pub fn total_ops(&self) -> u64 {
        self.kind.len() as u64
    }

    /// Bytes of heap memory held by the store (for the memory benchmark).
    pub fn heap_bytes(&self) -> usize {
        self.rank_start.capacity() * 4
            + self.kind.capacity()
            + self.cpu.capacity()
            + self.nic.capacity()
            + self.peer.capacity() * 4
            + self.tag.capacity() * 4
            + self.size.capacity() * 8
            + self.deps.capacity() * 4
            + self.line.capacity() * 4
            + (self.done_start.capacity() + self.done_edges.capacity()) * 4
            + (self.start_start.capacity() + self.start_edges.capacity()) * 4
    }

    /// Frees the columns' spare capacity once the schedule is complete (growth by doubling leaves
    /// up to half of each unused).
    pub(crate) fn shrink_to_fit(&mut self) {
        let u32s = [&mut self.rank_start, &mut self.peer, &mut self.tag, &mut self.deps, &mut self.line];
        let csr = [&mut self.done_start, &mut self.done_edges, &mut self.start_start, &mut self.start_edges];
        for v in u32s.into_iter().chain(csr) {
            v.shrink_to_fit();
        }
        self.kind.shrink_to_fit();
        self.cpu.shrink_to_fit();
        self.nic.shrink_to_fit();
        self.size.shrink_to_fit();
    }

    /// Appends one op of the rank being built; returns its global id.
    pub(crate) fn push_op(&mut self, op: Op, line: u32) -> u32 {
        let id = self.kind.len() as u32;
        self.kind.push(op.kind);
        self.cpu.push(op.cpu);
        self.nic.push(op.nic);
        self.peer.push(op.peer);
        self.tag.push(op.tag);
        self.size.push(op.size);
        self.deps.push(0);
        self.line.push(line);
        self.num_cpus = self.num_cpus.max(op.cpu as u32 + 1);
        self.num_nics = self.num_nics.max(op.nic as u32 + 1);
        id
    }

    /// Closes the rank being built. `done` and `start` hold (dependency, dependent) pairs in local
    /// indices, in statement order; they are grouped per dependency keeping that order.
    pub(crate) fn finish_rank(&mut self, done: &[(u32, u32)], start: &[(u32, u32)]) {
        let first = *self.rank_start.last().unwrap() as usize;
        let count = self.kind.len() - first;
        for &(_, a) in done.iter().chain(start) {
            self.deps[first + a as usize] += 1;
        }
        Self::group(count, done, &mut self.done_start, &mut self.done_edges);
        Self::group(count, start, &mut self.start_start, &mut self.start_edges);
        self.rank_start.push(self.kind.len() as u32);
    }

    /// Stable counting sort of (key, value) pairs by key into a CSR segment of `count` rows.
    fn group(count: usize, pairs: &[(u32, u32)], starts: &mut Vec<u32>, edges: &mut Vec<u32>) {
        let base = edges.len();
        let mut row_len = vec![0u32; count];
        for &(b, _) in pairs {
            row_len[b as usize] += 1;
        }
        let mut cursor = Vec::with_capacity(count);
        let mut at = base as u32;
        for len in &row_len {
            cursor.push(at);
            at += len;
            starts.push(at);
        }
        edges.resize(base + pairs.len(), 0);
        for &(b, a) in pairs {
            let slot = &mut cursor[b as usize];
            edges[*slot as usize] = a;
            *slot += 1;
        }
    }

    #[inline]
    fn gid(&self, rank: u32, index: u32) -> usize {
        (self.rank_start[rank as usize] + index) as usize
    }
}

impl Program for GoalProgram {
    fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    fn num_cpus(&self) -> u32 {
        self.num_cpus
    }
    fn num_nics(&self) -> u32 {
        self.num_nics
    }
    fn num_ops(&self, rank: u32) -> u32 {
        self.rank_start[rank as usize + 1] - self.rank_start[rank as usize]
    }
    /// One pass over the sizes (once per simulation).
    fn max_message_bytes(&self) -> Option<u64> {
        Some(self.kind.iter().zip(&self.size).filter(|(k, _)| **k == OpKind::Send).map(|(_, &s)| s).max().unwrap_or(0))
    }
    #[inline]
    fn op(&self, rank: u32, index: u32) -> Op {
        let g = self.gid(rank, index);
        Op {
            kind: self.kind[g],
            peer: self.peer[g],
            size: self.size[g],
            tag: self.tag[g],
            cpu: self.cpu[g],
            nic: self.nic[g],
        }
    }
    #[inline]
    fn dep_count(&self, rank: u32, index: u32) -> u32 {
        self.deps[self.gid(rank, index)]
    }
    fn roots(&self, rank: u32, out: &mut Vec<u32>) {
        let first = self.rank_start[rank as usize] as usize;
        let last = self.rank_start[rank as usize + 1] as usize;
        out.extend((first..last).filter(|&g| self.deps[g] == 0).map(|g| (g - first) as u32));
    }
    #[inline]
    fn after_done(&self, rank: u32, index: u32, out: &mut Vec<u32>) {
        let g = self.gid(rank, index);
        out.extend_from_slice(&self.done_edges[self.done_start[g] as usize..self.done_start[g + 1] as usize]);
    }
    #[inline]
    fn after_start(&self, rank: u32, index: u32, out: &mut Vec<u32>) {
        let g = self.gid(rank, index);
        out.extend_from_slice(&self.start_edges[self.start_start[g] as usize..self.start_start[g + 1] as usize]);
    }
    fn source_line(&self, rank: u32, index: u32) -> Option<u32> {
        let line = self.line[self.gid(rank, index)];
        (line > 0).then_some(line)
    }
}
