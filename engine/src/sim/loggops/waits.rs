//! Arrivals waiting for a busy receiver (`WaitList`): one in the event queue per receiving CPU
//! and NIC, the others in key order beside it.

use crate::schedule::Program;
use crate::sim::hosts::NO_WAITS;
use crate::sim::queue::Entry;
use crate::time::Time;

use super::{Sim, ARRIVAL, VERSION_MASK, WAITER};

/// Message arrivals waiting for the same receiving CPU and NIC. LogGOPSim v1 re-queues every one of
/// them at each instant the receiver frees, where the smallest key wins and the others are re-queued
/// again: O(n²) for an n-message incast. They all wait for the same free time, so only the one with
/// the smallest key needs to be in the event queue (`first`); the others wait here in key order and
/// the next one is queued when the first has been handled. Same order, same times, O(n log n).
#[derive(Default)]
pub(super) struct WaitList {
    /// Key and data of the arrival in the event queue (None: just made), and its entry's version.
    first: Option<(u64, u32)>,
    version: u32,
    rest: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
}

impl<P: Program> Sim<'_, P> {
    /// Whether waiting arrival `e` of `list` is a copy left in the queue after the list moved on.
    #[inline]
    pub(super) fn superseded(&self, e: Entry, list: u64) -> bool {
        self.wait_slot(list).map(|w| &self.waits[w as usize]).is_none_or(|w| w.first.is_none_or(|(key, _)| key != e.key) || w.version != e.host & VERSION_MASK)
    }

    /// Arrival `e` finds its receiver busy until `free`: it joins the receiver's wait list, and is
    /// queued at `free` only if it is (or becomes) the list's first.
    pub(super) fn wait_for_receiver(&mut self, free: Time, e: Entry, list: u64, first: bool) {
        if first {
            return self.requeue(free, e);
        }
        self.requeues += 1;
        let slot = match self.wait_slot(list) {
            Some(slot) => slot,
            None => {
                let slot = self.free_waits.pop().unwrap_or_else(|| {
                    self.waits.push(WaitList::default());
                    self.waits.len() as u32 - 1
                });
                self.set_wait_slot(list, Some(slot));
                slot
            }
        };
        let waiting = &mut self.waits[slot as usize];
        match waiting.first {
            Some(first) if first.0 < e.key => {
                waiting.rest.push(std::cmp::Reverse((e.key, e.data)));
                return;
            }
            // A smaller key than the first's: the first steps back into the list.
            Some(first) => waiting.rest.push(std::cmp::Reverse(first)),
            None => {}
        }
        self.wait_versions = (self.wait_versions + 1) & VERSION_MASK;
        let version = self.wait_versions;
        let waiting = &mut self.waits[slot as usize];
        waiting.first = Some((e.key, e.data));
        waiting.version = version;
        self.push_event(free, Entry { key: e.key, host: ARRIVAL | WAITER | version, data: e.data });
    }

    /// Where the wait list of `list` (host << 16 | cpu << 8 | nic) is in `waits`, if it has one.
    #[inline]
    pub(super) fn wait_slot(&self, list: u64) -> Option<u32> {
        let slot = if list & 0xffff == 0 { self.hosts.get((list >> 16) as u32).waiting } else { *self.other_waits.get(&list)? };
        (slot != NO_WAITS).then_some(slot)
    }

    #[inline]
    pub(super) fn set_wait_slot(&mut self, list: u64, slot: Option<u32>) {
        let slot = slot.unwrap_or(NO_WAITS);
        if list & 0xffff == 0 {
            self.hosts.get_mut((list >> 16) as u32).waiting = slot;
        } else if slot == NO_WAITS {
            self.other_waits.remove(&list);
        } else {
            self.other_waits.insert(list, slot);
        }
    }

    /// The first of a wait list has been handled: the next one (smallest key) is queued at `free`.
    pub(super) fn next_waiter(&mut self, list: u64, free: Time) {
        let slot = self.wait_slot(list).expect("a first has its list");
        let waiting = &mut self.waits[slot as usize];
        match waiting.rest.pop() {
            Some(std::cmp::Reverse(next)) => {
                self.wait_versions = (self.wait_versions + 1) & VERSION_MASK;
                waiting.first = Some(next);
                waiting.version = self.wait_versions;
                let version = waiting.version;
                self.push_event(free, Entry { key: next.0, host: ARRIVAL | WAITER | version, data: next.1 });
            }
            None => {
                waiting.first = None; // empty again, ready for reuse
                self.free_waits.push(slot);
                self.set_wait_slot(list, None);
            }
        }
    }
}
