//! The handle through which the optional models (the node models, the network's flows) act on the
//! LogGOPS core: the only way they schedule an event, take a key or complete an operation. Each
//! model keeps its own state in its own struct and sees the core only through a [`Handle`] lent
//! for one call: the messages (read), their details (the models keep them up to date), the
//! parameters, and three actions, whose rules the handle enforces:
//! - [`Handle::schedule`]: a new event, keyed after every event created so far, never in the past;
//! - [`Handle::resume`]: an operation the model held back ([`Held`]), re-queued with its old key
//!   so that it keeps its place among the events of its instant;
//! - [`Handle::complete`]: a send the model carried is complete (its dependents may become ready).
//!
//! A handle wraps the time-ordered event queue and its key counter: the optional models never run
//! windowed (`windowed_width` excludes them), and `Sim::models` refuses to lend one in a windowed
//! run, so no model can bypass the windows' keys.

use crate::schedule::Program;
use crate::sim::params::{Costs, Params};
use crate::sim::queue::{Entry, EventQueue};
use crate::time::Time;
use crate::u64_map::U64Map;

use super::{Message, MessageDetails, MSG_FLAG};

/// How operations become ready: dependency counts of those partly satisfied and the list of those
/// made ready by the current event (the core issues them when the event is done).
#[derive(Default)]
pub(super) struct Readiness {
    /// Remaining dependency counts of operations partly satisfied (key: rank << 32 | op).
    waiting: U64Map<u32>,
    /// Operations that became ready during the current event, in the order they did.
    pub(super) ready: Vec<(u32, u32)>,
    /// Scratch list of an operation's dependents.
    pub(super) deps: Vec<u32>,
}

impl Readiness {
    /// Operation `i` of `h` started: satisfies its irequires dependents.
    #[inline]
    pub(super) fn started<P: Program>(&mut self, prog: &P, h: u32, i: u32) {
        self.satisfy_dependents(prog, h, i, P::after_start);
    }

    /// Operation `i` of `h` completed: satisfies its requires dependents.
    #[inline]
    pub(super) fn done<P: Program>(&mut self, prog: &P, h: u32, i: u32) {
        self.satisfy_dependents(prog, h, i, P::after_done);
    }

    /// Satisfies one dependency of each operation `dependents` lists for operation `i` of `h`. The
    /// fields are taken apart so the list is borrowed, not moved out and back, for each event.
    #[inline(always)]
    fn satisfy_dependents<P: Program>(&mut self, prog: &P, h: u32, i: u32, dependents: impl Fn(&P, u32, u32, &mut Vec<u32>)) {
        let Readiness { waiting, ready, deps } = self;
        deps.clear();
        dependents(prog, h, i, deps);
        for &a in deps.iter() {
            satisfy(waiting, ready, prog, h, a);
        }
    }
}

/// One dependency of operation `a` of `h` is met: it is ready once all are.
#[inline]
fn satisfy<P: Program>(waiting: &mut U64Map<u32>, ready: &mut Vec<(u32, u32)>, prog: &P, h: u32, a: u32) {
    let needed = prog.dep_count(h, a);
    if needed <= 1 {
        ready.push((h, a));
        return;
    }
    let key = (h as u64) << 32 | a as u64;
    let left = waiting.entry(key).or_insert(needed);
    *left -= 1;
    if *left == 0 {
        waiting.remove(&key);
        ready.push((h, a));
    }
}

/// An operation a model held back (a send waiting for admission): the event the core offered it,
/// with its key. Not copyable: it is resumed once, through [`Handle::resume`].
pub(super) struct Held(Entry);

impl Held {
    /// The operation event `e` the core offers to a model that may hold it back.
    pub(super) fn offered(e: Entry) -> Held {
        Held(e)
    }

    /// Its rank and operation index, as one key (rank << 32 | op).
    pub(super) fn op_key(&self) -> u64 {
        (self.0.host as u64) << 32 | self.0.data as u64
    }
}

/// What a model may do to the core during one of its handlers (see the module doc).
pub(super) struct Handle<'a, P: Program> {
    now: Time,
    prog: &'a P,
    par: &'a Params,
    msgs: &'a [Message],
    details: &'a mut [MessageDetails],
    queue: &'a mut EventQueue,
    next_key: &'a mut u64,
    readiness: &'a mut Readiness,
}

impl<'a, P: Program> Handle<'a, P> {
    /// The core's, lending the parts a model may touch at time `now` (see `Sim::models`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        now: Time,
        prog: &'a P,
        par: &'a Params,
        msgs: &'a [Message],
        details: &'a mut [MessageDetails],
        queue: &'a mut EventQueue,
        next_key: &'a mut u64,
        readiness: &'a mut Readiness,
    ) -> Handle<'a, P> {
        Handle { now, prog, par, msgs, details, queue, next_key, readiness }
    }

    /// The time of the event being handled.
    #[inline]
    pub(super) fn now(&self) -> Time {
        self.now
    }

    /// The costs of a message of `size` bytes, and whether it is eager (at most S bytes).
    #[inline]
    pub(super) fn costs(&self, size: u64) -> (Costs, bool) {
        (self.par.costs(size), size <= self.par.S)
    }

    /// Message `id` (a slot of the core's messages).
    #[inline]
    pub(super) fn msg(&self, id: u32) -> Message {
        self.msgs[id as usize]
    }

    /// The details of message `id`, which the core keeps whenever the node model is on.
    #[inline]
    pub(super) fn details(&mut self, id: u32) -> &mut MessageDetails {
        &mut self.details[id as usize]
    }

    /// The details of message `id` if the core keeps them (records, critical path, node model).
    #[inline]
    pub(super) fn kept_details(&mut self, id: u32) -> Option<&mut MessageDetails> {
        self.details.get_mut(id as usize)
    }

    /// Schedules message event `kind` (ARRIVAL, FLOW_START, NIC_DONE, ...; the low bits may carry
    /// a version) about `slot` (of the messages, or a model's own slot for its own kinds) at `at`,
    /// keyed after every event created so far.
    pub(super) fn schedule(&mut self, at: Time, kind: u32, slot: u32) {
        assert!(at >= self.now, "a model scheduled an event in the past");
        let key = *self.next_key;
        *self.next_key += 1;
        self.queue.push(at, Entry { key, host: kind, data: MSG_FLAG | slot });
    }

    /// Queues at `at` (now or later) an operation the model held back, with its old key.
    pub(super) fn resume(&mut self, at: Time, held: Held) {
        assert!(at >= self.now, "a model resumed an operation in the past");
        self.queue.push(at, held.0);
    }

    /// Send `op` of `rank`, carried by the model, is complete.
    pub(super) fn complete(&mut self, rank: u32, op: u32) {
        self.readiness.done(self.prog, rank, op);
    }
}
