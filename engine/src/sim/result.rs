//! What a simulation answers: finish times, counts, and what the optional models collected; or
//! the deadlock that kept it from finishing.

use crate::net::flow::LinkStats;
use crate::node::memory::MemoryStats;
use crate::record::{Records, Timeline};
use crate::schedule::OpKind;
use crate::sim::critical::CriticalPath;
use crate::time::Time;

/// One operation or message left over when the simulation ran out of events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub rank: u32,
    pub op: u32,
    pub kind: OpKind,
    pub peer: u32,
    pub tag: u32,
    pub bytes: u64,
    pub line: Option<u32>,
}

/// A schedule that cannot finish: receives never matched, messages never received, operations
/// whose dependencies never completed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deadlock {
    pub unmatched_recvs: Vec<Pending>,
    pub unmatched_sends: Vec<Pending>,
    pub never_started: Vec<Pending>,
    /// Totals (the lists above are capped at [`Deadlock::LIST_CAP`] entries each).
    pub unmatched_recv_count: u64,
    pub unmatched_send_count: u64,
    pub never_started_count: u64,
}

impl Deadlock {
    pub const LIST_CAP: usize = 100;

    pub fn count(&self) -> u64 {
        self.unmatched_recv_count + self.unmatched_send_count + self.never_started_count
    }

    /// Adds another worker's deadlock to this one (lists still capped).
    pub fn absorb(&mut self, more: Deadlock) {
        for (list, extra) in [(&mut self.unmatched_recvs, more.unmatched_recvs), (&mut self.unmatched_sends, more.unmatched_sends), (&mut self.never_started, more.never_started)] {
            list.extend(extra.into_iter().take(Deadlock::LIST_CAP.saturating_sub(list.len())));
        }
        self.unmatched_recv_count += more.unmatched_recv_count;
        self.unmatched_send_count += more.unmatched_send_count;
        self.never_started_count += more.never_started_count;
    }
}

#[derive(Debug)]
pub struct SimResult {
    pub num_ranks: u32,
    /// Finishing time of each rank: max over its CPUs of the time the CPU became free.
    pub finish: Vec<Time>,
    pub makespan: Time,
    pub ops: u64,
    pub messages: u64,
    /// ops + messages, the event count LogGOPSim reports.
    pub events: u64,
    /// Link events of the packet model (one per packet and link crossed, plus wake-ups); not in
    /// `events`, which counts what LogGOPSim counts.
    pub packet_events: u64,
    /// Times an event had to wait for a busy CPU or NIC and was queued again.
    pub requeues: u64,
    pub peak_queue: usize,
    /// Whether the events ran window by window (`crate::sim::window`) rather than in time order:
    /// the results are the same, only the engine's speed (and `peak_queue`) differ.
    pub windowed: bool,
    /// Threads that shared the windows (1 for a single loop).
    pub threads: usize,
    pub deadlock: Option<Deadlock>,
    pub records: Option<Records>,
    pub timeline: Option<Timeline>,
    /// Per-link statistics when a network was simulated.
    pub links: Option<LinkStats>,
    /// Detour time charged to CPU work, summed over all ranks (0 without noise).
    pub noise: Time,
    /// Sends that waited for admission (token tickets, a rate gap); 0 without a policy.
    pub admission_waits: u64,
    /// Sends leaving their node that admission let go (each once); 0 without a policy.
    pub admission_grants: u64,
    /// The most tokens in use on one node at once; 0 without a token pool.
    pub admission_max_in_use: u64,
    /// What the memory model did (bytes written per node, calc delay); None without one.
    pub memory: Option<MemoryStats>,
    /// Where the time went, when asked for (`Options::critical_path`) and the run finished.
    pub critical_path: Option<CriticalPath>,
}
