//! The memory model's hook (docs/models.md, "Memory contention (NiMC)"): an arriving message's
//! payload is written into its node's memory and slows the calcs running there.

use crate::schedule::Program;
use crate::time::Time;

use super::{Message, Sim};

impl<P: Program> Sim<'_, P> {
    /// Message `m` reaches its destination at `t`: between nodes, the destination node's NIC
    /// writes its payload into memory, and the node's running calcs that this slows end later.
    pub(super) fn memory_write(&mut self, t: Time, m: &Message) {
        let mem = self.memory.as_mut().expect("called with a memory model");
        if mem.node_of(m.src) == mem.node_of(m.dst) {
            return;
        }
        mem.incoming(t, m.dst, m.size);
        let extended = mem.take_extended();
        for x in &extended {
            let c = self.o_slot(x.rank, x.cpu);
            self.hosts[c] = x.end;
            if let (Some(tl), Some(span)) = (&mut self.timeline, x.span) {
                tl.end[span as usize] = x.end;
            }
        }
        self.memory.as_mut().expect("just used").give_back(extended);
    }
}
