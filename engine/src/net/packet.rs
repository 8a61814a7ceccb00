//! Packet-level link sharing: messages cut into packets that links forward store-and-forward.
//!
//! A message of `s` bytes becomes `max(1, ⌈s / packet⌉)` packets (the last one holds the rest). All of
//! them wait at the path's first link (the node's injection link, fed from memory) when the message
//! starts. A link sends one packet at a time, in `size / bandwidth`; the packet reaches the next link
//! of its path `hop_latency` later, and after the last link it is delivered (again `hop_latency`
//! later). Each link serves the messages with packets waiting at it in round-robin order, one packet
//! per turn.
//!
//! Flow control: a message may hold at most `window` packets in the buffer of each link after the
//! first (sent by the link before, not yet sent on). Its turn at a link is skipped while the next
//! buffer is full, and it rejoins the link's round when a packet leaves that buffer (credits return
//! at once). The window is the smallest that lets a lone message stream at full rate across the hop
//! latency. With a window per message, round robin at every link gives max-min fair rates: a message
//! held back downstream cannot take more than its downstream share upstream (unbounded buffers
//! would let it, and the parking-lot case would come out unfair). No shared buffers, so no
//! head-of-line blocking between messages and no deadlock.
//!
//! Cost: one event per packet and link, whatever the number of messages in flight, against a
//! reallocation over every flow in flight per start or end in the flow model ([`super::flow`]).
//! A link has at most one valid pending event (the end of its packet in transmission, or a wake-up
//! for its first packet still on the wire); superseded ones are skipped.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::flow::{FlowId, LinkStats};
use crate::prefetch::prefetch;
use crate::time::Time;

/// A message's state at one link of its path. A message's slots are contiguous in one slab: a
/// header (see [`Header`]) and then one `Hop` per link, so a packet's next link is the next slot.
#[derive(Clone, Copy, Default)]
struct Hop {
    link: u32,
    /// Packets that have reached the link and wait for it.
    queued: u32,
    /// Packets the link has still to send.
    left: u32,
    /// Packets in this link's buffer: sent by the link before, not yet sent on (0 at the first).
    buffered: u32,
    /// Position in the path (the header is this many slots + 1 before).
    pos: u16,
    /// The path's last link.
    last: bool,
    /// Out of the link's round until the next link's buffer has room.
    blocked: bool,
    /// The message's packets are larger than nominal (see [`Header`]).
    scaled: bool,
}

/// The header slot of a message, stored as a `Hop`: the size of its last packet and how many times the nominal packet size its packets are (1 unless the message would have
/// 2^32 packets or more of the nominal size).
struct Header {
    last_bytes: u64,
    scale: u32,
}

impl Header {
    fn pack(self) -> Hop {
        Hop { link: self.scale, queued: self.last_bytes as u32, buffered: (self.last_bytes >> 32) as u32, ..Hop::default() }
    }
    fn unpack(h: &Hop) -> Header {
        Header { scale: h.link, last_bytes: h.queued as u64 | (h.buffered as u64) << 32 }
    }
}

/// Packets on their way to a link, in order of their arrival time.
#[derive(Clone, Copy)]
struct Arriving {
    ready: Time,
    slot: u32,
    count: u32,
}

#[derive(Default)]
struct LinkQueue {
    /// Slots of messages with packets waiting here and room downstream, in service order.
    ring: VecDeque<u32>,
    /// Packets not yet here. Their arrival times never decrease: a link is fed either by its node
    /// when a message starts (arrival now) or by links finishing packets now (arrival now + hop).
    arriving: VecDeque<Arriving>,
    /// Slot of the packet being sent.
    sending: Option<u32>,
    /// Scheduling number of the link's valid pending event (0: none).
    event: u64,
}

pub struct PacketNet {
    /// Bytes per picosecond of each link.
    capacity: Vec<f64>,
    /// Picoseconds to send a full packet on each link.
    full_packet: Vec<Time>,
    packet_bytes: u64,
    hop_latency: Time,
    /// Packets a message may hold in each link's buffer.
    window: u32,
    /// Message slots (header + hops); free blocks by path length.
    slab: Vec<Hop>,
    free: Vec<Vec<u32>>,
    links: Vec<LinkQueue>,
    /// Pending link events as one ordered key each (see [`event_key`]).
    events: BinaryHeap<Reverse<u128>>,
    scheduled: u64,
    now: Time,
    /// Messages in flight over each link (between their start and their delivery).
    on_link: Vec<u32>,
    stats: LinkStats,
    /// Link events processed (one per packet sent, plus wake-ups).
    processed: u64,
}

impl PacketNet {
    /// Links are numbered in 24 bits of an event's key.
    pub const MAX_LINKS: usize = 1 << 24;

    /// `capacity[l]`: bytes per picosecond of link l (all positive); `packet_bytes` at least 1.
    pub fn new(capacity: Vec<f64>, packet_bytes: u64, hop_latency: Time) -> PacketNet {
        let n = capacity.len();
        let full_packet: Vec<Time> = capacity.iter().map(|&c| transmit(packet_bytes, c).max(1)).collect();
        // A lone message streams at full rate when a link can send `window` packets while the first
        // of them crosses the wire and starts on the next link: window·tx >= tx + hop_latency.
        let fastest = full_packet.iter().copied().min().unwrap_or(1);
        let window = (1 + hop_latency.div_ceil(fastest)).min(u32::MAX as u64) as u32;
        PacketNet {
            capacity,
            full_packet,
            packet_bytes,
            hop_latency,
            window,
            slab: Vec::new(),
            free: Vec::new(),
            links: (0..n).map(|_| LinkQueue::default()).collect(),
            events: BinaryHeap::new(),
            scheduled: 0,
            now: 0,
            on_link: vec![0; n],
            stats: LinkStats { bytes: vec![0; n], busy: vec![0; n], peak_flows: vec![0; n] },
            processed: 0,
        }
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Time of the last start or link event.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Messages in flight on each link (what adaptive routing looks at).
    pub fn load(&self) -> &[u32] {
        &self.on_link
    }

    pub fn events_processed(&self) -> u64 {
        self.processed
    }

    /// Starts a message of `bytes` over `path` (at least one link, fewer than 2^16) at time `t`:
    /// its packets queue at the first link. Returns its handle.
    pub fn start(&mut self, t: Time, path: &[u32], bytes: u64) -> FlowId {
        assert!(!path.is_empty() && path.len() < u16::MAX as usize, "a path of 1 to 65534 links");
        debug_assert!(t >= self.now, "starts come in time order");
        self.now = t;
        let len = path.len();
        if self.free.len() <= len {
            self.free.resize_with(len + 1, Vec::new);
        }
        let id = self.free[len].pop().unwrap_or_else(|| {
            self.slab.resize(self.slab.len() + len + 1, Hop::default());
            (self.slab.len() - len - 1) as u32
        });
        let scale = bytes.div_ceil(self.packet_bytes).div_ceil(u32::MAX as u64).max(1);
        let packet = self.packet_bytes.saturating_mul(scale);
        let packets = bytes.div_ceil(packet).max(1);
        let header = Header { last_bytes: bytes - (packets - 1) * packet, scale: scale as u32 };
        self.slab[id as usize] = header.pack();
        for (k, &l) in path.iter().enumerate() {
            let hop = Hop { link: l, left: packets as u32, pos: k as u16, last: k + 1 == len, scaled: scale > 1, ..Hop::default() };
            self.slab[id as usize + 1 + k] = hop;
            let l = l as usize;
            self.on_link[l] += 1;
            self.stats.bytes[l] += bytes;
            self.stats.peak_flows[l] = self.stats.peak_flows[l].max(self.on_link[l]);
        }
        self.arrive(path[0], Arriving { ready: t, slot: id + 1, count: packets as u32 });
        id
    }

    /// Time of the next link event, if any.
    pub fn next_time(&mut self) -> Option<Time> {
        while let Some(&Reverse(key)) = self.events.peek() {
            let (t, seq, link) = split_key(key);
            if self.links[link as usize].event == seq {
                return Some(t);
            }
            self.events.pop(); // superseded
        }
        None
    }

    /// Processes the next link event (call after [`PacketNet::next_time`] returned a time).
    /// Returns the message whose last packet it delivered, with the delivery time; the message's
    /// handle is free again from then on.
    pub fn step(&mut self) -> Option<(FlowId, Time)> {
        let Reverse(key) = self.events.pop().expect("a pending link event");
        let (t, seq, link) = split_key(key);
        let queue = &mut self.links[link as usize];
        debug_assert_eq!(queue.event, seq, "next_time skips superseded events");
        queue.event = 0;
        self.now = t;
        self.processed += 1;
        let delivered = match queue.sending.take() {
            Some(slot) => self.forward(t, slot),
            None => None,
        };
        // Forwarding may already have served this link (a credit returned to it).
        if self.links[link as usize].sending.is_none() {
            self.serve(link, t);
        }
        delivered
    }

    /// A packet has left the link of `slot` at time `t`.
    fn forward(&mut self, t: Time, slot: u32) -> Option<(FlowId, Time)> {
        let hop = self.slab[slot as usize];
        if !hop.last {
            let link = self.slab[slot as usize + 1].link;
            self.arrive(link, Arriving { ready: t + self.hop_latency, slot: slot + 1, count: 1 });
            return None;
        }
        if hop.left > 0 {
            return None;
        }
        let id = slot - hop.pos as u32 - 1;
        let len = hop.pos as usize + 1;
        for h in &self.slab[id as usize + 1..=slot as usize] {
            self.on_link[h.link as usize] -= 1;
        }
        self.free[len].push(id);
        Some((id, t + self.hop_latency))
    }

    fn arrive(&mut self, link: u32, a: Arriving) {
        let queue = &mut self.links[link as usize];
        debug_assert!(queue.arriving.back().is_none_or(|b| b.ready <= a.ready));
        queue.arriving.push_back(a);
        prefetch(&self.slab[a.slot as usize]);
        // An idle link serves at once; one waiting for an earlier packet on the wire keeps waiting.
        if queue.sending.is_none() && queue.event == 0 {
            self.serve(link, self.now);
        }
    }

    /// The link is free at `t`: takes in the packets that have arrived, then sends the next packet
    /// in round-robin order, or waits for the first packet still on the wire.
    fn serve(&mut self, link: u32, t: Time) {
        let queue = &mut self.links[link as usize];
        debug_assert!(queue.sending.is_none());
        while let Some(a) = queue.arriving.front().copied().filter(|a| a.ready <= t) {
            queue.arriving.pop_front();
            let hop = &mut self.slab[a.slot as usize];
            if hop.queued == 0 {
                queue.ring.push_back(a.slot);
            }
            hop.queued += a.count;
        }
        let mut chosen = None;
        while let Some(slot) = queue.ring.pop_front() {
            let s = slot as usize;
            if !self.slab[s].last && self.slab[s + 1].buffered >= self.window {
                self.slab[s].blocked = true;
                continue;
            }
            chosen = Some(slot);
            break;
        }
        // Round robin walks over many messages: fetch the state of the next one in this link's
        // round now, so it is in cache when the link is free again.
        if let Some(&next) = queue.ring.front() {
            prefetch(&self.slab[next as usize]);
        }
        let when = if let Some(slot) = chosen {
            let s = slot as usize;
            let hop = &mut self.slab[s];
            hop.queued -= 1;
            hop.left -= 1;
            let (last_packet, scaled) = (hop.left == 0, hop.scaled);
            if hop.queued > 0 {
                queue.ring.push_back(slot);
            }
            if !hop.last {
                self.slab[s + 1].buffered += 1;
            }
            let time = if last_packet || scaled {
                let header = Header::unpack(&self.slab[s - self.slab[s].pos as usize - 1]);
                if last_packet {
                    transmit(header.last_bytes, self.capacity[link as usize])
                } else {
                    self.full_packet[link as usize] * header.scale as Time
                }
            } else {
                self.full_packet[link as usize]
            };
            self.stats.busy[link as usize] += time;
            queue.sending = Some(slot);
            t + time
        } else if let Some(a) = queue.arriving.front() {
            a.ready
        } else {
            queue.event = 0;
            return;
        };
        self.scheduled += 1;
        queue.event = self.scheduled;
        self.events.push(Reverse(event_key(when, self.scheduled, link)));
        if let Some(slot) = chosen {
            self.return_credit(slot, t);
        }
    }

    /// A packet left the buffer of `slot`: the link before, if it had held the message back for
    /// want of room here, takes it into its round again.
    fn return_credit(&mut self, slot: u32, t: Time) {
        let s = slot as usize;
        if self.slab[s].pos == 0 {
            return;
        }
        self.slab[s].buffered -= 1;
        let up = &mut self.slab[s - 1];
        if !up.blocked {
            return;
        }
        up.blocked = false;
        let link = up.link;
        let queue = &mut self.links[link as usize];
        queue.ring.push_back(slot - 1);
        if queue.sending.is_none() {
            self.serve(link, t); // it may have been waiting for a packet on the wire: serve now
        }
    }
}

/// An event's place in the heap: by time, then by scheduling number (at most 2^40 events per run),
/// with the link in the low 24 bits (see [`PacketNet::MAX_LINKS`]). One integer compares faster than a tuple.
fn event_key(time: Time, seq: u64, link: u32) -> u128 {
    debug_assert!(seq < 1 << 40 && link < 1 << 24);
    (time as u128) << 64 | (seq as u128) << 24 | link as u128
}

fn split_key(key: u128) -> (Time, u64, u32) {
    ((key >> 64) as Time, (key >> 24) as u64 & ((1 << 40) - 1), key as u32 & ((1 << 24) - 1))
}

/// Picoseconds to send `bytes` at `capacity` bytes per picosecond, rounded up.
fn transmit(bytes: u64, capacity: f64) -> Time {
    (bytes as f64 / capacity).ceil() as Time
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts all messages at 0 and runs to the end; returns each one's delivery time.
    fn run(capacity: Vec<f64>, packet: u64, hop: Time, flows: &[(Vec<u32>, u64)]) -> Vec<Time> {
        let mut net = PacketNet::new(capacity, packet, hop);
        let ids: Vec<FlowId> = flows.iter().map(|(p, b)| net.start(0, p, *b)).collect();
        let mut done = vec![None; flows.len()];
        while net.next_time().is_some() {
            if let Some((f, t)) = net.step() {
                let i = ids.iter().position(|&x| x == f).unwrap();
                assert!(done[i].is_none(), "delivered twice");
                done[i] = Some(t);
            }
        }
        done.into_iter().map(|d| d.expect("every message delivered")).collect()
    }

    #[test]
    fn one_message_pipelines_its_packets() {
        // 3 links of 1 byte/ps, 100-byte packets, 10 ps per hop, 1000 bytes: the first packet needs
        // 3 x (100 + 10); the other 9 follow at one packet time each.
        assert_eq!(run(vec![1.0; 3], 100, 10, &[(vec![0, 1, 2], 1000)]), vec![3 * 110 + 9 * 100]);
        // The last packet holds the rest: 950 bytes = 9 full packets + 50.
        assert_eq!(run(vec![1.0; 3], 100, 10, &[(vec![0, 1, 2], 950)]), vec![3 * 110 + 8 * 100 + 50]);
        // An empty message is one empty packet: only the hop latencies.
        assert_eq!(run(vec![1.0; 3], 100, 10, &[(vec![0, 1, 2], 0)]), vec![30]);
    }

    #[test]
    fn the_slowest_link_paces_the_message() {
        // Middle link half as fast: 200 ps per packet there.
        assert_eq!(run(vec![1.0, 0.5, 1.0], 100, 0, &[(vec![0, 1, 2], 1000)]), vec![100 + 10 * 200 + 100]);
    }

    #[test]
    fn round_robin_shares_a_link_equally() {
        // 4 messages from their own links into link 0: packets interleave, all done within one round
        // of each other, the last at 4 x 10 packet times (+ the first hop).
        let flows: Vec<(Vec<u32>, u64)> = (1..=4).map(|i| (vec![i, 0], 1000)).collect();
        let done = run(vec![1.0; 5], 100, 0, &flows);
        assert_eq!(*done.iter().max().unwrap(), 100 + 4000);
        assert!(done.iter().all(|&t| t > 100 + 4000 - 4 * 100), "{done:?}");
    }

    #[test]
    fn statistics_count_bytes_busy_time_and_peak_messages() {
        let mut net = PacketNet::new(vec![1.0, 1.0], 64, 0);
        net.start(0, &[0, 1], 100);
        net.start(0, &[0], 50);
        while net.next_time().is_some() {
            net.step();
        }
        let s = net.stats();
        assert_eq!(s.bytes, vec![150, 100]);
        assert_eq!(s.busy, vec![150, 100]);
        assert_eq!(s.peak_flows, vec![2, 1]);
        assert!(net.load().iter().all(|&n| n == 0));
    }
}
