//! Per-message records and per-CPU timeline spans: the ground truth handed to analysis.
//!
//! Records are columns (struct of arrays) so they convert to Arrow/Parquet without copying rows.
//! The delay split of each message sums exactly to `completed - posted`:
//! `ideal + nic_queue + link + target_queue + late_receiver + noise`.

use crate::time::Time;

/// One row per delivered message.
#[derive(Default, Debug, Clone)]
pub struct Records {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub bytes: Vec<u64>,
    pub tag: Vec<i64>,
    pub send_op: Vec<u32>,
    pub recv_op: Vec<u32>,
    /// 0 eager, 1 rendezvous.
    pub protocol: Vec<u8>,
    /// Send operation ready to start.
    pub posted: Vec<Time>,
    /// Send started: CPU and NIC free.
    pub injected: Vec<Time>,
    /// Last byte at the destination: injected + o + L, or over a network when its flow is through.
    pub arrived: Vec<Time>,
    /// Arrival handled: the receiver's CPU and NIC were free.
    pub received: Vec<Time>,
    /// Matched with a posted receive.
    pub matched: Vec<Time>,
    /// Data available to the receiver (its dependents may start).
    pub completed: Vec<Time>,
    pub ideal: Vec<Time>,
    pub nic_queue: Vec<Time>,
    pub link: Vec<Time>,
    pub target_queue: Vec<Time>,
    pub late_receiver: Vec<Time>,
    pub noise: Vec<Time>,
    /// On the run's critical path (filled after the run; empty unless it was traced).
    pub critical: Vec<bool>,
}

/// The times of one message, from which a record row is derived.
pub struct MessageTimes {
    pub posted: Time,
    pub injected: Time,
    pub arrived: Time,
    pub received: Time,
    pub matched: Time,
    /// Receiver cost after the arrival is handled: o + (s-1)max(O,G), or o + (s-1)O over a network.
    pub receive_cost: Time,
    /// Part of the transfer lost to sharing links with other messages.
    pub link: Time,
    /// Detour time inside the sender's overhead o (it delays the message).
    pub send_noise: Time,
    /// Detour time inside the receiver's overhead (o, and O when noise applies to it).
    pub receive_noise: Time,
}

impl Records {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, src: u32, dst: u32, bytes: u64, tag: u32, send_op: u32, recv_op: u32, rendezvous: bool, t: &MessageTimes) {
        let completed = t.matched.max(t.received + t.receive_cost + t.receive_noise);
        self.src.push(src);
        self.dst.push(dst);
        self.bytes.push(bytes);
        self.tag.push(if tag == crate::schedule::ANY { -1 } else { tag as i64 });
        self.send_op.push(send_op);
        self.recv_op.push(recv_op);
        self.protocol.push(rendezvous as u8);
        self.posted.push(t.posted);
        self.injected.push(t.injected);
        self.arrived.push(t.arrived);
        self.received.push(t.received);
        self.matched.push(t.matched);
        self.completed.push(completed);
        self.ideal.push(t.arrived - t.injected - t.link - t.send_noise + t.receive_cost);
        self.nic_queue.push(t.injected - t.posted);
        self.link.push(t.link);
        self.target_queue.push(t.received - t.arrived);
        self.late_receiver.push(completed - t.received - t.receive_cost - t.receive_noise);
        self.noise.push(t.send_noise + t.receive_noise);
    }
}

/// What a CPU was busy with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SpanKind {
    Calc = 0,
    SendOverhead = 1,
    RecvOverhead = 2,
}

/// Busy intervals of CPUs, for timeline views.
#[derive(Default, Debug, Clone)]
pub struct Timeline {
    pub rank: Vec<u32>,
    pub cpu: Vec<u32>,
    pub kind: Vec<u8>,
    pub start: Vec<Time>,
    pub end: Vec<Time>,
}

impl Timeline {
    pub fn push(&mut self, rank: u32, cpu: u32, kind: SpanKind, start: Time, end: Time) {
        self.rank.push(rank);
        self.cpu.push(cpu);
        self.kind.push(kind as u8);
        self.start.push(start);
        self.end.push(end);
    }
}
