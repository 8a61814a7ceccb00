//! The network model's handlers (docs/models.md, "Network"): a message's flow enters the
//! network, its rates are reallocated, its last byte arrives (fluid flows or the packet model).
//! Their state is `Flows`'; they act on the core only through the handle (`super::handle`).

use crate::net::flow::FlowId;
use crate::net::Network;
use crate::schedule::Program;
use crate::sim::queue::Entry;
use crate::time::Time;

use super::handle::Handle;
use super::{ARRIVAL, FLOW_DONE, KIND_MASK, MSG_FLAG};

/// The network side of a message (kept apart so the LogGOPS-only path moves less memory): its flow,
/// the version of its pending completion event, when the flow started, the time its first packet
/// needs to cross the path and the time its bytes would take alone. Indexed like the messages; an
/// entry outlives its message, so a reused slot keeps counting versions and a stale completion
/// event of the slot's previous message never matches.
#[derive(Clone, Copy, Default)]
struct NetMessage {
    flow: FlowId,
    version: u32,
    flow_start: Time,
    head: Time,
    alone: Time,
}

/// The network during a run: its links, and which flow carries which message.
pub(super) struct Flows {
    pub(super) net: Network,
    /// Flows started or finished since the last reallocation of rates.
    dirty: bool,
    /// Network side of each message slot, and the message of each flow id.
    msgs: Vec<NetMessage>,
    flow_msg: Vec<u32>,
    rescheduled: Vec<(FlowId, Time)>,
}

impl Flows {
    pub(super) fn new(net: Network) -> Flows {
        Flows { net, dirty: false, msgs: Vec::new(), flow_msg: Vec::new(), rescheduled: Vec::new() }
    }

    /// Whether the rates must be reallocated before the next event, at `next` (None: no event
    /// left): flows started or finished, and the network's time has passed.
    #[inline]
    pub(super) fn due(&self, next: Option<Time>) -> bool {
        self.dirty && next.is_none_or(|t| t > self.net.now())
    }

    /// A message enters the network (its sender's overhead is paid).
    pub(super) fn start<P: Program>(&mut self, id: u32, h: &mut Handle<'_, P>) {
        let m = h.msg(id);
        let started = self.net.start(h.now(), m.src, m.dst, m.size);
        self.dirty = self.net.is_fluid();
        if self.msgs.len() <= id as usize {
            self.msgs.resize(id as usize + 1, NetMessage::default());
        }
        let nm = &mut self.msgs[id as usize];
        nm.flow = started.flow;
        nm.flow_start = started.at;
        nm.head = started.head;
        nm.alone = started.alone;
        if self.flow_msg.len() <= started.flow as usize {
            self.flow_msg.resize(started.flow as usize + 1, 0);
        }
        self.flow_msg[started.flow as usize] = id;
    }

    /// Packet model: one link event (the handle's time is its time); a message whose last packet
    /// it delivered arrives.
    pub(super) fn packet_event<P: Program>(&mut self, h: &mut Handle<'_, P>) {
        if let Some((flow, arrival)) = self.net.packet_step() {
            self.arrive(self.flow_msg[flow as usize], arrival, h);
        }
    }

    /// The last byte of message `id` reaches its destination at `arrival`.
    fn arrive<P: Program>(&mut self, id: u32, arrival: Time, h: &mut Handle<'_, P>) {
        let nm = self.msgs[id as usize];
        if let Some(d) = h.kept_details(id) {
            d.arrived = arrival;
            // Contention is whatever the message took beyond crossing the path alone.
            d.link_delay = (arrival - nm.flow_start).saturating_sub(nm.head + nm.alone);
        }
        h.schedule(arrival, ARRIVAL, id);
    }

    /// A flow's last byte left (if the event is still current): the message arrives `head` later.
    pub(super) fn done<P: Program>(&mut self, e: Entry, h: &mut Handle<'_, P>) {
        let id = e.data & !MSG_FLAG;
        let nm = self.msgs[id as usize];
        if e.host & !KIND_MASK != nm.version {
            return; // superseded by a later reallocation
        }
        self.net.finish(h.now(), nm.flow);
        self.dirty = true;
        self.arrive(id, h.now() + nm.head, h);
    }

    /// A link's token bucket ran out at `t`: the rates from then on.
    pub(super) fn bucket_empties<P: Program>(&mut self, t: Time, h: &mut Handle<'_, P>) {
        self.net.bucket_empties(t);
        self.reschedule(h);
    }

    /// New fair rates after the flow starts and ends of one instant; each flow whose completion
    /// moved gets a new completion event (the old one becomes stale through its version).
    pub(super) fn reschedule<P: Program>(&mut self, h: &mut Handle<'_, P>) {
        self.dirty = false;
        let mut moved = std::mem::take(&mut self.rescheduled);
        moved.clear();
        self.net.reallocate(&mut moved);
        for &(flow, done) in &moved {
            let id = self.flow_msg[flow as usize];
            let nm = &mut self.msgs[id as usize];
            nm.version = (nm.version + 1) & !KIND_MASK;
            h.schedule(done, FLOW_DONE | nm.version, id);
        }
        self.rescheduled = moved;
    }
}
