//! Where the time goes: the critical path of a simulated run, and the makespan split along it
//! (docs/models.md, "Where the time goes").
//!
//! Every time at which something happens in the simulator is the value of a clock (a CPU's
//! `nexto`, a NIC's `nextgs` / `nextgr`), a message's arrival, an admission decision or 0. While
//! the run goes, [`Tracer`] remembers, per clock, what last set it (a calc, a send's overhead or
//! gap, a receive's overhead or gap, a rendezvous match), and, per operation and message, what
//! the time it started at came from. After the run, [`Tracer::walk`] starts at the clock that
//! finished last and walks back to time 0; each step covers an interval that ends where the
//! previous one began, so the parts add up to the makespan exactly.

use std::collections::VecDeque;

use crate::schedule::Program;
use crate::sim::cpu_scale::CpuScale;
use crate::sim::params::Params;
use crate::time::Time;

/// What a time came from: a kind in bits 59..61, two marks above it, and the global index of an
/// operation (for message kinds: of the message's send).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cause(u64);

const KIND_SHIFT: u32 = 59;
const KIND_BITS: u64 = 0b111;
const OP_MASK: u64 = (1 << KIND_SHIFT) - 1;
/// An operation's cause is kept from here on (it waited for admission, see `Tracer::held`).
const FROZEN: u64 = 1 << 63;
/// The operation, its clocks free, waited for a shared core (`Tracer::core_wait`).
const CORE: u64 = 1 << 62;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The start of the run (a clock never set, time 0).
    Origin = 0,
    Calc,
    SendCpu,
    SendNic,
    RecvCpu,
    RecvNic,
    /// A rendezvous match raised the sender's clocks.
    Rendezvous,
}

impl Cause {
    pub const ORIGIN: Cause = Cause(0);

    fn new(kind: Kind, op: u64) -> Cause {
        Cause((kind as u64) << KIND_SHIFT | op)
    }

    fn kind(self) -> Kind {
        match (self.0 >> KIND_SHIFT) & KIND_BITS {
            0 => Kind::Origin,
            1 => Kind::Calc,
            2 => Kind::SendCpu,
            3 => Kind::SendNic,
            4 => Kind::RecvCpu,
            5 => Kind::RecvNic,
            _ => Kind::Rendezvous,
        }
    }

    fn op(self) -> u64 {
        self.0 & OP_MASK
    }

    fn frozen(self) -> bool {
        self.0 & FROZEN != 0
    }

    /// The cause without its marks.
    fn plain(self) -> Cause {
        Cause(self.0 & !(FROZEN | CORE))
    }
}

/// The parts of the makespan along the critical path, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Calc work (scaled by `cpu_scale`).
    pub computation: Time,
    /// Per-message CPU and NIC costs: o, (s-1)O, g.
    pub overhead: Time,
    /// The message on its way alone: L, (s-1)G, a network path's latency and serialization.
    pub wire: Time,
    /// Calc work a partner waited for, idle: done after the receive of a message on the path was
    /// posted (with the receiver's CPU free), or after a rendezvous message on the path reached
    /// its receiver (its sender waits for the match).
    pub late_partner: Time,
    /// Time lost to sharing: links, the node's NIC, admission control, memory bandwidth.
    pub contention: Time,
    /// Time waiting for a node's shared core (another rank's work on it, the switch, a spinner's
    /// tick).
    pub cores: Time,
    /// Detours stretching CPU work.
    pub noise: Time,
}

impl Split {
    pub fn total(&self) -> Time {
        self.computation + self.overhead + self.wire + self.late_partner + self.contention + self.cores + self.noise
    }

    fn add(&mut self, other: &Split) {
        self.computation += other.computation;
        self.overhead += other.overhead;
        self.wire += other.wire;
        self.late_partner += other.late_partner;
        self.contention += other.contention;
        self.cores += other.cores;
        self.noise += other.noise;
    }
}

/// What a step of the path was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Calc,
    /// The sender's CPU overhead (o, (s-1)O).
    SendOverhead,
    /// The sender's NIC gap (g, (s-1)G).
    SendGap,
    /// A message from its sender's overhead to its arrival (wire and contention).
    Transit,
    /// The receiver's CPU overhead on arrival.
    RecvOverhead,
    /// The receiver's NIC gap.
    RecvGap,
    /// A send held by admission control.
    Admission,
    /// CPU work, or a message's handling, waiting for one of the node's shared cores (another
    /// rank's work there, the switch, a spinner's tick).
    CoreWait,
}

impl Activity {
    pub fn name(self) -> &'static str {
        match self {
            Activity::Calc => "calc",
            Activity::SendOverhead => "send overhead",
            Activity::SendGap => "send gap",
            Activity::Transit => "transit",
            Activity::RecvOverhead => "receive overhead",
            Activity::RecvGap => "receive gap",
            Activity::Admission => "admission",
            Activity::CoreWait => "core wait",
        }
    }
}

/// One step of the path: what `rank`'s operation `op` did from `start` to `end`, split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub rank: u32,
    pub op: u32,
    pub activity: Activity,
    pub start: Time,
    pub end: Time,
    pub split: Split,
}

/// The critical path of a run.
#[derive(Clone, Debug, Default)]
pub struct CriticalPath {
    /// Sums to the makespan exactly.
    pub split: Split,
    /// Operations on the path.
    pub ops: u64,
    /// Steps on the path (intervals of nonzero length and the operations they belong to).
    pub steps_total: u64,
    /// Its first [`STEPS_KEPT`] steps in time order.
    pub steps: Vec<Step>,
    /// Messages on the path (sender rank, send op), when asked for (records).
    pub messages: Vec<(u32, u32)>,
}

/// How many of the path's first steps a result keeps.
pub const STEPS_KEPT: usize = 16;

/// Per operation: when it started, and what the time of its (last) event came from.
#[derive(Clone, Copy, Default)]
struct OpTrace {
    start: Time,
    /// The time of the event that `cause` gave; later than it only by admission waits.
    from: Time,
    cause: Cause,
    /// A send's message in `Tracer::msgs`.
    msg: u64,
}

/// Per message (by its send's global index): its times at the receiver.
#[derive(Clone, Copy, Default)]
struct MsgTrace {
    /// The sender's overhead o was done (the message left).
    handed: Time,
    arrived: Time,
    /// Contention on the way (records' `link`).
    link: Time,
    /// The receiver handled the arrival.
    handled: Time,
    /// The receiver's CPU and NIC clocks were free (at the handling; with shared cores a core may
    /// have come later), and what freed them last.
    free: Time,
    free_cause: Cause,
    /// The receive that matched it (global index; u64::MAX while none did).
    recv: u64,
    /// Matched a receive posted before it was handled.
    posted_first: bool,
    networked: bool,
}

/// The trace a run keeps for its critical path (only when asked: O(operations) memory).
pub struct Tracer {
    /// Global index of each rank's operation 0, and of the end.
    offsets: Vec<u64>,
    clocks_per_host: usize,
    setters: Vec<Cause>,
    ops: Vec<OpTrace>,
    /// Messages in the order they were sent (a send's `OpTrace::msg` points here).
    msgs: Vec<MsgTrace>,
}

impl Tracer {
    pub fn new<P: Program>(prog: &P, clocks_per_host: usize) -> Tracer {
        let n = prog.num_ranks();
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut total = 0u64;
        for r in 0..n {
            offsets.push(total);
            total += prog.num_ops(r) as u64;
        }
        offsets.push(total);
        Tracer {
            offsets,
            clocks_per_host,
            setters: vec![Cause::ORIGIN; n as usize * clocks_per_host],
            ops: vec![OpTrace::default(); total as usize],
            msgs: Vec::new(),
        }
    }

    /// The message of the send with global index `g`.
    fn msg(&self, g: u64) -> MsgTrace {
        self.msgs[self.ops[g as usize].msg as usize]
    }

    #[inline]
    fn msg_mut(&mut self, g: u64) -> &mut MsgTrace {
        let k = self.ops[g as usize].msg as usize;
        &mut self.msgs[k]
    }

    #[inline]
    fn global(&self, rank: u32, op: u32) -> u64 {
        self.offsets[rank as usize] + op as u64
    }

    /// Rank and index of a global operation index.
    fn local(&self, g: u64) -> (u32, u32) {
        let rank = self.offsets.partition_point(|&o| o <= g) - 1;
        (rank as u32, (g - self.offsets[rank]) as u32)
    }

    /// What last set clock `index` of `host`.
    #[inline]
    pub fn setter(&self, host: u32, index: u32) -> Cause {
        self.setters[host as usize * self.clocks_per_host + index as usize]
    }

    #[inline]
    fn set(&mut self, host: u32, index: u32, cause: Cause) {
        self.setters[host as usize * self.clocks_per_host + index as usize] = cause;
    }

    /// Operation `op` of `rank` was queued at `time`, given by `cause`.
    #[inline]
    pub fn queued(&mut self, rank: u32, op: u32, time: Time, cause: Cause) {
        let g = self.global(rank, op) as usize;
        let o = &mut self.ops[g];
        if !o.cause.frozen() {
            o.from = time;
            o.cause = cause;
        }
    }

    /// A send was held by admission control at `t`: whatever it waits from now on is contention,
    /// and what brought it to `t` stays its cause.
    #[inline]
    pub fn held(&mut self, rank: u32, op: u32, t: Time) {
        let g = self.global(rank, op) as usize;
        let o = &mut self.ops[g];
        if !o.cause.frozen() {
            debug_assert_eq!(o.from, t);
            o.cause.0 |= FROZEN;
        }
    }

    /// Operation `op` of `rank`, its clocks free, waits for a shared core: the wait until it starts
    /// is the path's cores part (unless admission held it first, which then covers the whole wait).
    #[inline]
    pub fn core_wait(&mut self, rank: u32, op: u32) {
        let g = self.global(rank, op) as usize;
        let o = &mut self.ops[g];
        if !o.cause.frozen() {
            o.cause.0 |= CORE;
        }
    }

    #[inline]
    pub fn started(&mut self, rank: u32, op: u32, t: Time) {
        let g = self.global(rank, op) as usize;
        self.ops[g].start = t;
    }

    /// A calc of `rank` on CPU clock `cpu` set it.
    #[inline]
    pub fn calc(&mut self, rank: u32, op: u32, cpu: u32) {
        let g = self.global(rank, op);
        self.set(rank, cpu, Cause::new(Kind::Calc, g));
    }

    /// A send set its CPU clock (and its NIC clock unless the node's NIC does the injecting); its
    /// message left at `handed`.
    #[inline]
    pub fn send(&mut self, rank: u32, op: u32, cpu: u32, nic: Option<u32>, handed: Time, networked: bool) {
        let g = self.global(rank, op);
        self.set(rank, cpu, Cause::new(Kind::SendCpu, g));
        if let Some(nic) = nic {
            self.set(rank, nic, Cause::new(Kind::SendNic, g));
        }
        self.ops[g as usize].msg = self.msgs.len() as u64;
        self.msgs.push(MsgTrace { handed, networked, recv: u64::MAX, ..MsgTrace::default() });
    }

    /// The message of (`src`, `send_op`) was handled by `dst` at `t` (its CPU and NIC free since
    /// `free`, by `free_cause`), setting the clocks `cpu` and `nic` of `dst`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn handled(&mut self, src: u32, send_op: u32, dst: u32, cpu: u32, nic: u32, t: Time, arrived: Time, link: Time, free: Time, free_cause: Cause) {
        let g = self.global(src, send_op);
        let m = self.msg_mut(g);
        m.handled = t;
        m.arrived = arrived;
        m.link = link;
        m.free = free;
        m.free_cause = free_cause;
        self.set(dst, cpu, Cause::new(Kind::RecvCpu, g));
        self.set(dst, nic, Cause::new(Kind::RecvNic, g));
    }

    /// The message of (`src`, `send_op`) met receive `recv_op` of `dst`, on its handling
    /// (`posted_first`) or when the receive was posted.
    #[inline]
    pub fn matched(&mut self, src: u32, send_op: u32, dst: u32, recv_op: u32, posted_first: bool) {
        let g = self.global(src, send_op);
        let recv = self.global(dst, recv_op);
        let m = self.msg_mut(g);
        m.recv = recv;
        m.posted_first = posted_first;
    }

    /// A rendezvous match raised clock `index` of the sender `src`.
    #[inline]
    pub fn rendezvous(&mut self, src: u32, send_op: u32, index: u32) {
        let g = self.global(src, send_op);
        self.set(src, index, Cause::new(Kind::Rendezvous, g));
    }

    /// The path back from `last` (what set the clock that finished last, at `makespan`) to time 0.
    /// `memory`: the run had a memory model (a calc stretched beyond its work is contention, not
    /// noise, which does not combine with it). `messages`: list the messages on the path.
    #[allow(clippy::too_many_arguments)]
    pub fn walk<P: Program>(&self, prog: &P, par: &Params, cpu_scale: CpuScale, memory: bool, last: Cause, makespan: Time, messages: bool) -> CriticalPath {
        enum At {
            Set(Cause),
            Start(u64),
            Handled(u64),
        }
        let mut path = CriticalPath::default();
        let mut kept: VecDeque<Step> = VecDeque::with_capacity(STEPS_KEPT);
        let mut cursor = makespan;
        let mut at = At::Set(last);
        // The earliest time since which a partner of the path so far waited idle for it (its
        // receive posted, or its rendezvous message there): computation after it is late partner.
        let mut idle_since = Time::MAX;
        // Takes the interval [start, cursor] as one step and moves the cursor to its start.
        let mut step = |path: &mut CriticalPath, cursor: &mut Time, g: (u32, u32), activity: Activity, start: Time, split: Split| {
            debug_assert_eq!(split.total(), *cursor - start, "{activity:?} of {g:?}");
            path.split.add(&split);
            if *cursor > start {
                path.steps_total += 1;
                if kept.len() == STEPS_KEPT {
                    kept.pop_back();
                }
                kept.push_front(Step { rank: g.0, op: g.1, activity, start, end: *cursor, split });
            }
            *cursor = start;
        };
        loop {
            match at {
                At::Set(cause) if cause.kind() == Kind::Origin => {
                    assert_eq!(cursor, 0, "the critical path reached a clock never set at {cursor} ps");
                    break;
                }
                At::Set(cause) => {
                    let g = cause.op();
                    let local = self.local(g);
                    let op = prog.op(local.0, local.1);
                    let k = par.costs(op.size);
                    let extra = op.size.saturating_sub(1);
                    match cause.kind() {
                        Kind::Origin => unreachable!("handled above"),
                        Kind::Calc => {
                            let start = self.ops[g as usize].start;
                            let d = cursor - start;
                            let work = cpu_scale.apply(op.size * par.unit).min(d);
                            let stretched = d - work;
                            let mut split = if memory { Split { contention: stretched, ..Split::default() } } else { Split { noise: stretched, ..Split::default() } };
                            // Work done while a partner waited idle for it (the part after
                            // `idle_since`, noise aside) is what the partner waited on.
                            split.late_partner = cursor.saturating_sub(start.max(idle_since)).min(work);
                            split.computation = work - split.late_partner;
                            step(&mut path, &mut cursor, local, Activity::Calc, start, split);
                            at = At::Start(g);
                        }
                        Kind::SendCpu => {
                            let start = self.ops[g as usize].start;
                            let d = cursor - start;
                            let overhead = (k.o + extra * k.O).min(d);
                            step(&mut path, &mut cursor, local, Activity::SendOverhead, start, Split { overhead, noise: d - overhead, ..Split::default() });
                            at = At::Start(g);
                        }
                        Kind::SendNic => {
                            let start = self.ops[g as usize].start;
                            let d = cursor - start;
                            let overhead = k.g.min(d);
                            step(&mut path, &mut cursor, local, Activity::SendGap, start, Split { overhead, wire: d - overhead, ..Split::default() });
                            at = At::Start(g);
                        }
                        Kind::RecvCpu | Kind::RecvNic => {
                            let m = self.msg(g);
                            let d = cursor - m.handled;
                            let receiver = self.receiver(prog, g, &m);
                            path.note(messages, local);
                            if cause.kind() == Kind::RecvCpu {
                                // o and (s-1)O are the CPU's; the rest of (s-1)max(O, G) is the bytes' G.
                                let per_byte = if m.networked { k.O } else { k.O.max(k.G) };
                                let overhead = (k.o + extra * k.O).min(d);
                                let wire = (extra * (per_byte - k.O)).min(d - overhead);
                                step(&mut path, &mut cursor, receiver, Activity::RecvOverhead, m.handled, Split { overhead, wire, noise: d - overhead - wire, ..Split::default() });
                            } else {
                                let overhead = k.g.min(d);
                                step(&mut path, &mut cursor, receiver, Activity::RecvGap, m.handled, Split { overhead, wire: d - overhead, ..Split::default() });
                            }
                            at = At::Handled(g);
                        }
                        Kind::Rendezvous => {
                            let m = self.msg(g);
                            path.note(messages, local);
                            // The sender waited idle since its message was there.
                            idle_since = idle_since.min(m.arrived);
                            // Matched on its handling, or when its receive was posted (late).
                            at = if m.posted_first { At::Handled(g) } else { At::Start(m.recv) };
                        }
                    }
                }
                At::Start(g) => {
                    let o = self.ops[g as usize];
                    debug_assert_eq!(o.start, cursor);
                    let local = self.local(g);
                    path.ops += 1;
                    let waited = cursor - o.from;
                    let split = if o.cause.0 & CORE != 0 { Split { cores: waited, ..Split::default() } } else { Split { contention: waited, ..Split::default() } };
                    let activity = if o.cause.0 & CORE != 0 { Activity::CoreWait } else { Activity::Admission };
                    step(&mut path, &mut cursor, local, activity, o.from, split);
                    at = At::Set(o.cause.plain());
                }
                At::Handled(g) => {
                    let m = self.msg(g);
                    debug_assert_eq!(m.handled, cursor);
                    if m.posted_first {
                        path.ops += 1; // its receive (a late one is reached by its own start)
                    }
                    let ready = m.free.max(m.arrived);
                    if m.handled > ready {
                        // Message and receiver were ready, a shared core was not.
                        let receiver = self.receiver(prog, g, &m);
                        step(&mut path, &mut cursor, receiver, Activity::CoreWait, ready, Split { cores: m.handled - ready, ..Split::default() });
                    }
                    if m.free > m.arrived {
                        // The receiver was busy: what kept it so.
                        at = At::Set(m.free_cause);
                        continue;
                    }
                    if m.posted_first {
                        // The receiver waited idle from when it was ready: the receive posted,
                        // its CPU and NIC free.
                        idle_since = idle_since.min(self.ops[m.recv as usize].start.max(m.free));
                    }
                    let sender = self.local(g);
                    path.note(messages, sender);
                    let transit = cursor - m.handed;
                    let contention = m.link.min(transit);
                    step(&mut path, &mut cursor, sender, Activity::Transit, m.handed, Split { wire: transit - contention, contention, ..Split::default() });
                    let send = self.ops[g as usize];
                    let o = par.costs(prog.op(sender.0, sender.1).size).o.min(cursor - send.start);
                    let noise = cursor - send.start - o;
                    step(&mut path, &mut cursor, sender, Activity::SendOverhead, send.start, Split { overhead: o, noise, ..Split::default() });
                    at = At::Start(g);
                }
            }
        }
        assert_eq!(path.split.total(), makespan, "the critical path's parts must sum to the makespan");
        path.steps = kept.into();
        path
    }

    /// The receive of a message, or (its destination, u32::MAX) while none matched it.
    fn receiver<P: Program>(&self, prog: &P, send: u64, m: &MsgTrace) -> (u32, u32) {
        if m.recv != u64::MAX {
            self.local(m.recv)
        } else {
            let (rank, op) = self.local(send);
            (prog.op(rank, op).peer, u32::MAX)
        }
    }
}

impl CriticalPath {
    fn note(&mut self, wanted: bool, send: (u32, u32)) {
        if wanted && self.messages.last() != Some(&send) {
            self.messages.push(send);
        }
    }
}
