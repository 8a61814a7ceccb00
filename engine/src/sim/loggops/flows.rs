//! The network model's handlers (docs/models.md, "Network"): a message's flow enters the
//! network, its rates are reallocated, its last byte arrives (fluid flows or the packet model).

use crate::net::flow::FlowId;
use crate::schedule::Program;
use crate::sim::queue::Entry;
use crate::time::Time;

use super::{Sim, ARRIVAL, FLOW_DONE, KIND_MASK, MSG_FLAG};

/// The network side of a message (kept apart so the LogGOPS-only path moves less memory): its flow,
/// the version of its pending completion event, when the flow started, the time its first packet
/// needs to cross the path and the time its bytes would take alone. Indexed like `msgs`; an entry
/// outlives its message, so a reused slot keeps counting versions and a stale completion event of
/// the slot's previous message never matches.
#[derive(Clone, Copy, Default)]
pub(super) struct NetMessage {
    flow: FlowId,
    version: u32,
    flow_start: Time,
    head: Time,
    alone: Time,
}

impl<P: Program> Sim<'_, P> {
    /// A message enters the network (its sender's overhead is paid).
    pub(super) fn flow_start(&mut self, t: Time, id: u32) {
        let net = self.net.as_mut().expect("flow events need a network");
        let m = &self.msgs[id as usize];
        let started = net.start(t, m.src, m.dst, m.size);
        self.net_dirty = net.is_fluid();
        if self.net_msgs.len() <= id as usize {
            self.net_msgs.resize(id as usize + 1, NetMessage::default());
        }
        let nm = &mut self.net_msgs[id as usize];
        nm.flow = started.flow;
        nm.flow_start = started.at;
        nm.head = started.head;
        nm.alone = started.alone;
        if self.flow_msg.len() <= started.flow as usize {
            self.flow_msg.resize(started.flow as usize + 1, 0);
        }
        self.flow_msg[started.flow as usize] = id;
    }

    /// Packet model: one link event; a message whose last packet it delivered arrives.
    pub(super) fn packet_event(&mut self) {
        let net = self.net.as_mut().expect("packet events need a network");
        if let Some((flow, arrival)) = net.packet_step() {
            self.arrive_from_network(self.flow_msg[flow as usize], arrival);
        }
    }

    /// The last byte of message `id` reaches its destination at `arrival`.
    pub(super) fn arrive_from_network(&mut self, id: u32, arrival: Time) {
        if self.keep_details {
            let nm = self.net_msgs[id as usize];
            let d = &mut self.details[id as usize];
            d.arrived = arrival;
            // Contention is whatever the message took beyond crossing the path alone.
            d.link_delay = (arrival - nm.flow_start).saturating_sub(nm.head + nm.alone);
        }
        self.schedule(arrival, ARRIVAL, id);
    }

    /// A flow's last byte left (if the event is still current): the message arrives `head` later.
    pub(super) fn flow_done(&mut self, t: Time, e: Entry) {
        let id = e.data & !MSG_FLAG;
        let nm = self.net_msgs[id as usize];
        if e.host & !KIND_MASK != nm.version {
            return; // superseded by a later reallocation
        }
        self.net.as_mut().expect("flow events need a network").finish(t, nm.flow);
        self.net_dirty = true;
        self.arrive_from_network(id, t + nm.head);
    }

    /// New fair rates after the flow starts and ends of one instant; each flow whose completion
    /// moved gets a new completion event (the old one becomes stale through its version).
    pub(super) fn reschedule_flows(&mut self) {
        self.net_dirty = false;
        let mut moved = std::mem::take(&mut self.rescheduled);
        moved.clear();
        self.net.as_mut().expect("dirty only with a network").reallocate(&mut moved);
        for &(flow, done) in &moved {
            let id = self.flow_msg[flow as usize];
            let nm = &mut self.net_msgs[id as usize];
            nm.version = (nm.version + 1) & !KIND_MASK;
            let version = nm.version;
            self.schedule(done, FLOW_DONE | version, id);
        }
        self.rescheduled = moved;
    }
}
