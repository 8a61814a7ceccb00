//! Prefetching of the state the coming events will touch (`EventQueue::ahead`, `Windows::ahead`).
//! Hints only: nothing here changes a result.

use crate::prefetch::prefetch;
use crate::schedule::Program;
use crate::sim::matching::Queue;
use crate::sim::queue::{Entry, AHEAD};

use super::{Message, Sim, ARRIVAL, KIND_MASK, MSG_FLAG, ROOTS};

/// How many events ahead `Sim::prefetch_ahead` starts loading an event's state, in three stages:
/// the message (of an operation: its host), then the host it goes to, then the first receive
/// posted there.
const PREFETCH_MESSAGE: usize = AHEAD - 1;
const PREFETCH_HOST: usize = AHEAD * 2 / 3;
const PREFETCH_MATCH: usize = AHEAD / 3;

impl<P: Program> Sim<'_, P> {
    /// Starts loading the state the coming events will touch (`EventQueue::ahead`), so that their
    /// cache misses overlap with the work of this one instead of following each other: once the
    /// ranks drift apart (independent noise) consecutive events belong to random ranks and nearly
    /// every access misses. For an operation, its host's record; for an arrival, in three stages
    /// each using what the previous one loaded: its message, the record of the host it arrives at,
    /// the first receive posted there. Hints only: nothing here changes a result.
    #[inline]
    pub(super) fn prefetch_ahead(&self) {
        if self.windows.is_some() {
            return self.prefetch_window();
        }
        if let Some((_, e)) = self.queue.ahead(PREFETCH_MESSAGE) {
            match self.arrival_of(e) {
                Some(m) => prefetch(m),
                None if e.data & MSG_FLAG == 0 && e.data != ROOTS => self.hosts.prefetch(e.host),
                None => {}
            }
        }
        if let Some(m) = self.queue.ahead(PREFETCH_HOST).and_then(|(_, e)| self.arrival_of(e)) {
            self.hosts.prefetch(m.dst);
        }
        if let Some(m) = self.queue.ahead(PREFETCH_MATCH).and_then(|(_, e)| self.arrival_of(e)) {
            self.queues.prefetch_head(&self.hosts.get(m.dst).queues, Queue::Posted);
        }
    }

    /// The message of an arrival event (None for other events).
    #[inline]
    pub(super) fn arrival_of(&self, e: Entry) -> Option<&Message> {
        if e.data & MSG_FLAG != 0 && e.host & KIND_MASK == ARRIVAL {
            self.msgs.get((e.data & !MSG_FLAG) as usize)
        } else {
            None
        }
    }

    /// Prefetching for windowed execution: an arrival's message and the receive it meets, and the
    /// coming events' hosts unless the window holds so many that they stream in by themselves.
    #[inline]
    fn prefetch_window(&self) {
        let w = self.windows.as_ref().expect("windowed");
        if let Some(m) = w.ahead(PREFETCH_MESSAGE).and_then(|(e, _)| self.arrival_of(e)) {
            prefetch(m);
        }
        if !w.dense() {
            if let Some((_, owner)) = w.ahead(PREFETCH_HOST) {
                self.hosts.prefetch(owner);
            }
        }
        if let Some((e, owner)) = w.ahead(PREFETCH_MATCH) {
            let queues = &self.hosts.get(owner).queues;
            if self.arrival_of(e).is_some() {
                self.queues.prefetch_head(queues, Queue::Posted);
            } else {
                self.queues.prefetch_head(queues, Queue::Unexpected);
            }
        }
    }
}
