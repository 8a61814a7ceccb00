//! The memory model's hook (docs/models.md, "Memory contention (NiMC)"): an arriving message's
//! payload is written into its node's memory and slows the calcs running there. It schedules
//! nothing: it only moves the ends of running calcs later, which the core applies.

use crate::node::memory::{Extension, MemorySim};
use crate::time::Time;

use super::Message;

/// Message `m` reaches its destination at `t`: between nodes, the destination node's NIC writes
/// its payload into memory; `extend` is called for each running calc that this slows (its new,
/// later end).
pub(super) fn payload_lands(mem: &mut MemorySim, t: Time, m: &Message, extend: impl FnMut(&Extension)) {
    if mem.node_of(m.src) == mem.node_of(m.dst) {
        return;
    }
    mem.incoming(t, m.dst, m.size);
    let extended = mem.take_extended();
    extended.iter().for_each(extend);
    mem.give_back(extended);
}
