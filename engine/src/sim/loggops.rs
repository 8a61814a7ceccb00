//! The LogGOPS endpoint model with LogGOPSim v1's event semantics (see docs/models.md).
//!
//! State per host: `nexto[cpu]` (CPU free), `nextgs[nic]`, `nextgr[nic]` (NIC free to send /
//! receive), a posted-receive queue and an unexpected-message queue, both matched first-match-wins
//! in arrival order with wildcards on either side. Events are ordered by (time, key); keys are
//! issued in creation order, and an operation that must wait for its CPU or NIC is re-queued with
//! its old key. Operations that become ready in one event are issued host by host (ascending),
//! each host's in a stable order: sends, receives, calcs, and among equals the order in which they
//! became ready. This stable rule is where `contend` departs from v1, whose unstable sort scrambles
//! more than 16 simultaneously ready operations.

use std::collections::HashSet;
use std::ops::Range;

use crate::net::flow::FlowId;
use crate::net::Network;
use crate::nic::{stretched, NicCurves, NicQueues};
use crate::node::memory::MemorySim;
use crate::node::NodeModel;
use crate::policy::proxy::Proxy;
use crate::policy::rate::RateLimiter;
use crate::policy::tokens::TokenPool;
use crate::policy::PolicySpec;
use crate::noise::random::LastWindow;
use crate::noise::{Noise, Phase};
use crate::record::{MessageTimes, Records, SpanKind, Timeline};
use crate::schedule::{Op, OpKind, Program};
use crate::sim::cpu_scale::CpuScale;
use crate::sim::critical::{Cause, CriticalPath, Tracer};
use crate::sim::params::{Execution, Options, Params};
use crate::sim::result::{Deadlock, Pending, SimResult};
use crate::sim::scenario::{Scenario, Stopped};
use crate::sim::hosts::{Clock, Hosts, NO_WAITS};
use crate::sim::matching::{MatchQueues, Queue};
use crate::prefetch::prefetch;
use crate::sim::queue::{Entry, EventQueue, AHEAD};
use crate::sim::parallel::{merge, run_in_parallel, workers};
use crate::sim::window::{FinalKeys, Windows, MAX_WIDTH};
use crate::time::Time;
use crate::u64_map::U64Map;

/// A message in flight or waiting in an unexpected queue: what every model reads, in 32 bytes (two
/// to a cache line, aligned so that one never straddles two).
#[derive(Clone, Copy, Default)]
#[repr(align(32))]
pub(super) struct Message {
    src: u32,
    dst: u32,
    send_op: u32,
    tag: u32,
    size: u64,
    cpu: u8,
    nic: u8,
    /// Crossed the network (not within a node, not LogGOPS-only).
    networked: bool,
}

/// The rest of a message, kept (in `Sim::details`, indexed like `msgs`) only for records and the
/// node model, so that the plain LogGOPS path moves a third of the bytes per message.
#[derive(Clone, Copy, Default)]
struct MessageDetails {
    posted: Time,
    injected: Time,
    /// When its last byte reached the destination.
    arrived: Time,
    received: Time,
    /// Time lost to sharing links with other messages (or the node's NIC).
    link_delay: Time,
    /// When the sender's overhead was done (the message was handed to its node).
    handed: Time,
    /// Tokens of the node's pool the message holds until its send completes.
    tokens: u64,
    /// Who injects it into the node's NIC: its rank, or ranks + a proxy server's global index.
    injector: u32,
}

/// The network side of a message (kept apart so the LogGOPS-only path moves less memory): its flow,
/// the version of its pending completion event, when the flow started, the time its first packet
/// needs to cross the path and the time its bytes would take alone. Indexed like `msgs`; an entry
/// outlives its message, so a reused slot keeps counting versions and a stale completion event of
/// the slot's previous message never matches.
#[derive(Clone, Copy, Default)]
struct NetMessage {
    flow: FlowId,
    version: u32,
    flow_start: Time,
    head: Time,
    alone: Time,
}

/// What admission control says to a send that leaves its node.
enum Admission {
    /// Go now, holding this many tokens.
    Now(u64),
    /// Try again at this time (rate).
    At(Time),
    /// Wait in line: the pool re-issues the send when its tokens come back.
    Parked,
}

const MSG_FLAG: u32 = 1 << 31;
/// Kinds of message events, in the top bits of `Entry::host`; the low bits carry a version.
const ARRIVAL: u32 = 0;
const FLOW_START: u32 = 1 << 30;
const FLOW_DONE: u32 = 2 << 30;
/// Node events (NIC and admission control); the low bits say which.
const NODE: u32 = 3 << 30;
const KIND_MASK: u32 = 3 << 30;
const NIC_ENQUEUE: u32 = NODE;
const NIC_DONE: u32 = NODE | 1;
/// Tokens come back (data: MSG_FLAG | slot in `NodeSim::releases`).
const RELEASE: u32 = NODE | 2;
const PROXY_DONE: u32 = NODE | 3;
/// An arrival that stands for its receiver's wait list (see `WaitList`); the low bits carry the
/// list's version, so a copy left in the queue after the list moved on is recognised and skipped.
const WAITER: u32 = 1 << 29;
const VERSION_MASK: u32 = WAITER - 1;
/// Placeholder event standing for all initially ready operations of a rank.
const ROOTS: u32 = u32::MAX;
/// How many events ahead `Sim::prefetch_ahead` starts loading an event's state, in three stages:
/// the message (of an operation: its host), then the host it goes to, then the first receive
/// posted there.
const PREFETCH_MESSAGE: usize = AHEAD - 1;
const PREFETCH_HOST: usize = AHEAD * 2 / 3;
const PREFETCH_MATCH: usize = AHEAD / 3;

/// Message arrivals waiting for the same receiving CPU and NIC. LogGOPSim v1 re-queues every one of
/// them at each instant the receiver frees, where the smallest key wins and the others are re-queued
/// again: O(n²) for an n-message incast. They all wait for the same free time, so only the one with
/// the smallest key needs to be in the event queue (`first`); the others wait here in key order and
/// the next one is queued when the first has been handled. Same order, same times, O(n log n).
#[derive(Default)]
struct WaitList {
    /// Key and data of the arrival in the event queue (None: just made), and its entry's version.
    first: Option<(u64, u32)>,
    version: u32,
    rest: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
}

pub(super) struct Sim<'p, P: Program> {
    prog: &'p P,
    par: Params,
    cpu_scale: CpuScale,
    cpus: usize,
    nics: usize,
    /// Per host (one cache line): clocks nexto[cpus], nextgs[nics], nextgr[nics], started count,
    /// match queues.
    hosts: Hosts,
    queues: MatchQueues,
    msgs: Vec<Message>,
    /// Per message slot, when records or the node model need them (`keep_details`); else empty.
    details: Vec<MessageDetails>,
    keep_details: bool,
    free_msgs: Vec<u32>,
    /// Remaining dependency counts of operations partly satisfied (key: rank << 32 | op).
    waiting: U64Map<u32>,
    queue: EventQueue,
    /// Windowed execution instead of `queue` when it applies (see `windowed_width`).
    pub(super) windows: Option<Windows>,
    pub(super) next_key: u64,
    /// Operations that became ready during the current event, in the order they did.
    ready: Vec<(u32, u32)>,
    issue: Vec<(u32, OpKind, u32, Op)>,
    deps: Vec<u32>,
    pub(super) ops_started: u64,
    messages: u64,
    requeues: u64,
    records: Option<Records>,
    /// Ready time of sends not yet started (records only).
    send_ready_at: U64Map<Time>,
    timeline: Option<Timeline>,
    net: Option<Network>,
    /// Flows started or finished since the last reallocation of rates.
    net_dirty: bool,
    /// Network side of each message slot (see `NetMessage`), and the message of each flow id.
    net_msgs: Vec<NetMessage>,
    flow_msg: Vec<u32>,
    rescheduled: Vec<(FlowId, Time)>,
    /// Arrivals waiting for a busy receiver, one list per (host, CPU, NIC) that has any, in a slab
    /// with free slots. A host record points to the list of its CPU 0 and NIC 0 (the common case:
    /// no hash lookup of a random key per waiting arrival); `other_waits` to the others.
    waits: Vec<WaitList>,
    free_waits: Vec<u32>,
    other_waits: U64Map<u32>,
    wait_versions: u32,
    /// Detours that stretch CPU work (docs/models.md, "Noise"); None: exact LogGOPS.
    noise: Option<&'p Noise>,
    noise_charged: Time,
    last_noise_window: LastWindow,
    /// Records only: detour time in each message's send and receive overheads, by message slot.
    msg_noise: U64Map<(Time, Time)>,
    /// NIC congestion and admission control (docs/models.md); None: exact LogGOPS.
    node: Option<NodeSim>,
    /// Memory contention (docs/models.md, "Memory contention (NiMC)"); None: exact LogGOPS.
    memory: Option<MemorySim>,
    /// What each time came from, for the critical path (`Options::critical_path`).
    crit: Option<Tracer>,
    /// The ranks whose events this simulator handles: all of them, or a worker's block (of
    /// `block` ranks) in a parallel run, which hands arrivals for other blocks to `outbox`, one
    /// list per worker, and keeps the earliest time among them in `earliest_out`.
    pub(super) owned: Range<u32>,
    block: u32,
    pub(super) outbox: Vec<Vec<Mail>>,
    pub(super) earliest_out: Time,
}

/// An arrival that changes workers: its time, key and message.
pub(super) type Mail = (Time, u64, Message);

/// The node models' state during a run.
struct NodeSim {
    node_of: Vec<u32>,
    curves: Option<NicCurves>,
    nic: NicQueues,
    tokens: Option<TokenPool<Entry>>,
    rate: Option<RateLimiter>,
    proxy: Option<(Proxy, u32)>,
    /// Sends granted their tokens after waiting, by rank << 32 | op: the tokens they hold.
    admitted: U64Map<u64>,
    /// Tokens to give back at a RELEASE event: (rank, tokens), slots reused through `free_releases`.
    releases: Vec<(u32, u64)>,
    free_releases: Vec<u32>,
    granted: Vec<(Entry, u64)>,
    waits: u64,
}

impl NodeSim {
    fn new(model: &NodeModel, node_of: Vec<u32>) -> NodeSim {
        let ranks = node_of.len();
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let (mut tokens, mut rate, mut proxy) = (None, None, None);
        match &model.policy {
            Some(PolicySpec::Token(spec)) => tokens = Some(TokenPool::new(spec.clone(), nodes, ranks)),
            Some(PolicySpec::Rate { gap }) => rate = Some(RateLimiter::new(*gap, ranks)),
            Some(PolicySpec::Proxy { servers, tokens: behind }) => {
                proxy = Some((Proxy::new(*servers, &node_of), *servers));
                tokens = behind.as_ref().map(|spec| TokenPool::new(spec.clone(), nodes, ranks));
            }
            None => {}
        }
        let servers = proxy.as_ref().map_or(0, |p| p.1 as usize);
        NodeSim {
            curves: model.nic.clone(),
            nic: NicQueues::new(nodes, ranks + nodes * servers),
            node_of,
            tokens,
            rate,
            proxy,
            admitted: U64Map::default(),
            releases: Vec::new(),
            free_releases: Vec::new(),
            granted: Vec::new(),
            waits: 0,
        }
    }
}

/// The window width of windowed execution (`crate::sim::window`), if it applies: plain eager
/// LogGOPS (no network, node or memory model, no records or timeline, every message at most S
/// bytes), where a message takes at least o + L from its send's start to its arrival, on one CPU
/// per rank (with more, an operation made ready by one CPU's work is issued when its own CPU was
/// free, possibly before the event that readied it, and time order then lets its effects overtake
/// events already handled). Chosen for independent noise, which scatters the ranks in time; in
/// step, the time-ordered loop is faster.
fn windowed_width<P: Program>(prog: &P, par: &Params, opts: &Options, sim: &Sim<'_, P>) -> Option<Time> {
    let plain = opts.execution != Execution::TimeOrdered
        && sim.cpus == 1
        && sim.net.is_none()
        && sim.node.is_none()
        && sim.memory.is_none()
        && !opts.records
        && !opts.timeline
        && !opts.critical_path;
    let scattered = opts.execution == Execution::Windowed || sim.noise.is_some_and(|n| n.phase() == Phase::Independent);
    // Any narrower window is as exact; the windows keep times within them in 24 bits.
    let width = (par.o + par.L).min(MAX_WIDTH);
    // Last: bounding the message sizes may take a pass over the operations.
    let eager = || prog.max_message_bytes().is_some_and(|b| b <= par.S);
    (plain && scattered && width > 0 && eager()).then_some(width)
}

/// Events processed between two calls of the progress callback.
pub const PROGRESS_EVERY: u64 = 1 << 22;

/// Simulates `prog` under `scenario` to completion (or until nothing can happen: a deadlock,
/// reported in the result), calling `progress(operations started so far)` every
/// [`PROGRESS_EVERY`] events. Stops with [`Stopped::Cancelled`] as soon as the callback returns
/// false (e.g. on Ctrl-C), and with [`Stopped::Invalid`] before it starts if the scenario's models
/// do not fit the program or each other.
pub fn simulate<P: Program, F: FnMut(u64) -> bool>(prog: &P, scenario: &Scenario, opts: &Options, mut progress: F) -> Result<SimResult, Stopped> {
    let network = scenario.check(prog.num_ranks()).map_err(Stopped::Invalid)?;
    let (par, noise) = (&scenario.params, scenario.noise.as_ref());
    let n = prog.num_ranks() as usize;
    // --- memory contention (NiMC): its own node map, from the network's placement if any ---
    let memory = scenario.memory.as_ref().map(|model| {
        let node_of = (0..n as u32).map(|r| network.as_ref().map_or(r / model.ranks_per_node, |net| net.node_of(r))).collect();
        MemorySim::new(model, node_of)
    });
    let mut sim = Sim::new(prog, par, opts, network, noise, scenario.node.as_ref(), memory);
    let Some(width) = windowed_width(prog, par, opts, &sim) else {
        sim.queue_roots();
        return sim.run(&mut progress).then(|| sim.finish()).ok_or(Stopped::Cancelled);
    };
    let workers = workers(opts.threads, n);
    if workers == 1 {
        sim.windows = Some(Windows::new(width, n));
        sim.queue_roots();
        return sim.run(&mut progress).then(|| sim.finish()).ok_or(Stopped::Cancelled);
    }
    // Windowed runs have no network, node or memory model: every worker is a plain simulator.
    let block = n.div_ceil(workers) as u32;
    let mut sims: Vec<Sim<'_, P>> = (0..workers)
        .map(|k| {
            let mut s = Sim::new(prog, par, opts, None, noise, None, None);
            s.owned = (k as u32 * block).min(n as u32)..((k as u32 + 1) * block).min(n as u32);
            s.block = block;
            s.outbox = vec![Vec::new(); workers];
            s.windows = Some(Windows::for_worker(width, n, k));
            s.queue_roots();
            s
        })
        .collect();
    run_in_parallel(&mut sims, width, &mut progress).then(|| merge(sims)).ok_or(Stopped::Cancelled)
}

impl<'p, P: Program> Sim<'p, P> {
    /// A simulator of every rank, with the time-ordered queue (the caller may set windows).
    fn new(prog: &'p P, par: &Params, opts: &Options, network: Option<Network>, noise: Option<&'p Noise>, node: Option<&NodeModel>, memory: Option<MemorySim>) -> Sim<'p, P> {
        let n = prog.num_ranks() as usize;
        let cpus = prog.num_cpus().max(1) as usize;
        let nics = prog.num_nics().max(1) as usize;
        let node = node.map(|model| {
            let node_of = (0..n as u32).map(|r| network.as_ref().map_or(r / model.ranks_per_node, |net| net.node_of(r))).collect();
            NodeSim::new(model, node_of)
        });
        Sim {
            prog,
            par: *par,
            cpu_scale: opts.cpu_scale,
            cpus,
            nics,
            hosts: Hosts::new(n, cpus + 2 * nics),
            queues: MatchQueues::new(),
            msgs: Vec::new(),
            details: Vec::new(),
            keep_details: opts.records || opts.critical_path || node.is_some(),
            free_msgs: Vec::new(),
            waiting: U64Map::default(),
            queue: EventQueue::new(),
            windows: None,
            next_key: (n as u64) << 32,
            ready: Vec::new(),
            issue: Vec::new(),
            deps: Vec::new(),
            ops_started: 0,
            messages: 0,
            requeues: 0,
            records: opts.records.then(Records::default),
            send_ready_at: U64Map::default(),
            timeline: opts.timeline.then(Timeline::default),
            net: network,
            net_dirty: false,
            net_msgs: Vec::new(),
            flow_msg: Vec::new(),
            rescheduled: Vec::new(),
            waits: Vec::new(),
            free_waits: Vec::new(),
            other_waits: U64Map::default(),
            wait_versions: 0,
            noise,
            noise_charged: 0,
            last_noise_window: LastWindow::default(),
            msg_noise: U64Map::default(),
            node,
            memory,
            crit: opts.critical_path.then(|| Tracer::new(prog, cpus + 2 * nics)),
            owned: 0..n as u32,
            block: n as u32,
            outbox: Vec::new(),
            earliest_out: Time::MAX,
        }
    }

    /// Queues the placeholder of each owned rank's initially ready operations.
    fn queue_roots(&mut self) {
        for rank in self.owned.clone() {
            self.push_event(0, Entry { key: (rank as u64) << 32, host: rank, data: ROOTS });
        }
    }
}

impl<P: Program> Sim<'_, P> {
    /// The clock nexto[cpu] of host h.
    #[inline]
    fn o_slot(&self, h: u32, cpu: u8) -> Clock {
        Clock { host: h, index: cpu as u32 }
    }
    /// The clocks nextgs[nic] and nextgr[nic] of host h.
    #[inline]
    fn gs_slot(&self, h: u32, nic: u8) -> Clock {
        Clock { host: h, index: (self.cpus + nic as usize) as u32 }
    }
    #[inline]
    fn gr_slot(&self, h: u32, nic: u8) -> Clock {
        Clock { host: h, index: (self.cpus + self.nics + nic as usize) as u32 }
    }

    /// Processes events until none is left (true) or `progress` asks to stop (false).
    fn run(&mut self, progress: &mut impl FnMut(u64) -> bool) -> bool {
        let mut countdown = PROGRESS_EVERY;
        loop {
            if self.net_dirty && self.queue.peek_time().is_none_or(|t| t > self.net.as_ref().map_or(0, Network::now)) {
                self.reschedule_flows();
            }
            countdown -= 1;
            if countdown == 0 {
                countdown = PROGRESS_EVERY;
                if !progress(self.ops_started) {
                    return false;
                }
            }
            // Packet model: link events go first at equal times (a packet that arrives at t is
            // there for an operation at t).
            if let Some(tp) = self.net.as_mut().and_then(Network::next_packet_event) {
                if self.queue.peek_time().is_none_or(|t| tp <= t) {
                    self.packet_event();
                    continue;
                }
            }
            let next = match &mut self.windows {
                Some(w) => w.pop(&mut self.next_key),
                None => self.queue.pop(),
            };
            let Some((t, e)) = next else { break };
            self.handle(t, e);
        }
        true
    }

    /// One window of a parallel run for this worker: the final keys of the last window's, the
    /// arrivals other workers sent its ranks then (`mail[from][to]`), and its events in `window`.
    pub(super) fn step(&mut self, window: u64, finals: &FinalKeys, mail: &[Vec<Vec<Mail>>]) {
        let me = (self.owned.start / self.block) as usize;
        self.windows.as_mut().expect("windowed").patch(finals);
        for &(time, key, m) in mail.iter().flat_map(|boxes| &boxes[me]) {
            self.accept(time, finals.of(key), m);
        }
        self.windows.as_mut().expect("windowed").open(window);
        while let Some((t, e)) = self.windows.as_mut().expect("windowed").pop(&mut self.next_key) {
            self.handle(t, e);
        }
    }

    #[inline]
    fn handle(&mut self, t: Time, e: Entry) {
        self.prefetch_ahead();
        if e.data == ROOTS {
            return self.expand_roots(t, e.host);
        }
        if e.data & MSG_FLAG != 0 {
            match e.host & KIND_MASK {
                ARRIVAL => self.message(t, e),
                FLOW_START => self.flow_start(t, e.data & !MSG_FLAG),
                FLOW_DONE => self.flow_done(t, e),
                _ => self.node_event(t, e),
            }
        } else {
            self.operation(t, e);
        }
        if !self.ready.is_empty() {
            self.issue_ready();
        }
    }

    /// Takes over a message that another worker's rank sent to one of this worker's.
    fn accept(&mut self, time: Time, key: u64, m: Message) {
        let id = self.new_message(m);
        let dst = m.dst;
        self.windows.as_mut().expect("windowed").push(time, Entry { key, host: ARRIVAL, data: MSG_FLAG | id }, dst);
    }

    /// A slot for message `m`.
    #[inline]
    fn new_message(&mut self, m: Message) -> u32 {
        match self.free_msgs.pop() {
            Some(id) => {
                self.msgs[id as usize] = m;
                id
            }
            None => {
                self.msgs.push(m);
                self.msgs.len() as u32 - 1
            }
        }
    }

    /// Starts loading the state the coming events will touch (`EventQueue::ahead`), so that their
    /// cache misses overlap with the work of this one instead of following each other: once the
    /// ranks drift apart (independent noise) consecutive events belong to random ranks and nearly
    /// every access misses. For an operation, its host's record; for an arrival, in three stages
    /// each using what the previous one loaded: its message, the record of the host it arrives at,
    /// the first receive posted there. Hints only: nothing here changes a result.
    #[inline]
    fn prefetch_ahead(&self) {
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
    fn arrival_of(&self, e: Entry) -> Option<&Message> {
        if e.data & MSG_FLAG != 0 && e.host & KIND_MASK == ARRIVAL {
            self.msgs.get((e.data & !MSG_FLAG) as usize)
        } else {
            None
        }
    }

    /// Issues the operations of `rank` that have no dependencies, at time 0, keyed just above
    /// the placeholder (so before anything created later, as v1 queues them all up front).
    fn expand_roots(&mut self, t: Time, rank: u32) {
        let mut roots = std::mem::take(&mut self.deps);
        roots.clear();
        self.prog.roots(rank, &mut roots);
        let mut issue = std::mem::take(&mut self.issue);
        issue.clear();
        issue.extend(roots.iter().map(|&i| {
            let op = self.prog.op(rank, i);
            (rank, op.kind, i, op)
        }));
        issue.sort_by_key(|&(_, kind, _, _)| kind);
        let base = (rank as u64) << 32;
        if self.records.is_some() {
            for &(_, kind, i, _) in &issue {
                if kind == OpKind::Send {
                    self.send_ready_at.insert(base | i as u64, 0);
                }
            }
        }
        let entries = issue.iter().enumerate().map(|(k, &(_, _, i, _))| Entry { key: base + k as u64, host: rank, data: i });
        match &mut self.windows {
            Some(w) => entries.for_each(|e| w.push(t, e, rank)),
            None => self.queue.push_front_now(t, entries),
        }
        self.deps = roots;
        self.issue = issue;
    }

    /// When CPU work of `w` that may start at `t` on host `h` ends: `t + w`, stretched by noise.
    #[inline]
    fn cpu_work(&mut self, h: u32, t: Time, w: Time) -> Time {
        match self.noise {
            None => t + w,
            Some(noise) => {
                let end = noise.stretch_cached(h, t, w, &mut self.hosts.get_mut(h).noise_free, &mut self.last_noise_window);
                self.noise_charged += end - t - w;
                end
            }
        }
    }

    /// Per-byte CPU work (O): stretched only when the noise model applies to it.
    #[inline]
    fn cpu_bytes(&mut self, h: u32, t: Time, w: Time) -> Time {
        if self.noise.is_some_and(|n| n.per_byte) {
            self.cpu_work(h, t, w)
        } else {
            t + w
        }
    }

    /// Queues an event (in the time-ordered queue, or in its host's window).
    #[inline]
    fn push_event(&mut self, time: Time, e: Entry) {
        match &mut self.windows {
            None => self.queue.push(time, e),
            Some(w) => {
                let owner = if e.data != ROOTS && e.data & MSG_FLAG != 0 { self.msgs[(e.data & !MSG_FLAG) as usize].dst } else { e.host };
                if self.owned.contains(&owner) {
                    w.push(time, e, owner);
                } else {
                    self.mail(time, e, owner);
                }
            }
        }
    }

    /// Hands an arrival for another worker's rank to that worker, with its message.
    #[inline(never)]
    fn mail(&mut self, time: Time, e: Entry, owner: u32) {
        let id = e.data & !MSG_FLAG;
        self.outbox[(owner / self.block) as usize].push((time, e.key, self.msgs[id as usize]));
        self.earliest_out = self.earliest_out.min(time);
        self.free_msgs.push(id);
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

    #[inline]
    fn requeue(&mut self, time: Time, e: Entry) {
        self.requeues += 1;
        self.push_event(time, e);
    }

    fn operation(&mut self, t: Time, e: Entry) {
        let (h, i) = (e.host, e.data);
        let op = self.prog.op(h, i);
        let c = self.o_slot(h, op.cpu);
        match op.kind {
            OpKind::Calc => {
                if self.hosts[c] > t {
                    self.trace_queued(h, i, self.hosts[c], c, None);
                    return self.requeue(self.hosts[c], e);
                }
                self.start(h, i);
                let work = self.cpu_scale.apply(op.size * self.par.unit);
                let end = match &mut self.memory {
                    // --- memory contention (NiMC): the calc shares its node's memory bandwidth ---
                    Some(mem) => {
                        let span = self.timeline.as_ref().map(|tl| tl.start.len() as u32);
                        mem.calc(h, op.cpu, t, work, op.mem(), span)
                    }
                    None => self.cpu_work(h, t, work),
                };
                self.hosts[c] = end;
                if let Some(cr) = &mut self.crit {
                    cr.started(h, i, t);
                    cr.calc(h, i, c.index);
                }
                if let Some(tl) = &mut self.timeline {
                    tl.push(h, op.cpu as u32, SpanKind::Calc, t, end);
                }
                self.done(h, i);
            }
            OpKind::Send => {
                let n = self.gs_slot(h, op.nic);
                let free = self.hosts[c].max(self.hosts[n]);
                if free > t {
                    self.trace_queued(h, i, free, c, Some(n));
                    return self.requeue(free, e);
                }
                // Node models apply to messages that leave the node: (through the shared NIC,
                // through the proxy servers).
                let (mut nic_path, mut proxied) = (false, false);
                let mut held = 0;
                if let Some(ns) = &self.node {
                    if ns.node_of[h as usize] != ns.node_of[op.peer as usize] {
                        (nic_path, proxied) = (ns.curves.is_some(), ns.proxy.is_some());
                        match self.admit(t, e, op.size) {
                            Admission::Now(tokens) => held = tokens,
                            Admission::At(later) => {
                                if let Some(cr) = &mut self.crit {
                                    cr.held(h, i, t);
                                }
                                return self.requeue(later, e);
                            }
                            Admission::Parked => {
                                if let Some(cr) = &mut self.crit {
                                    cr.held(h, i, t);
                                }
                                return;
                            }
                        }
                    }
                }
                self.start(h, i);
                let k = self.par.costs(op.size);
                let extra = op.size.saturating_sub(1);
                let eager = op.size <= self.par.S;
                // Between nodes of a network, the links carry the bytes instead of the NIC gap G.
                let networked = self.net.as_ref().is_some_and(|net| !net.same_node(h, op.peer));
                // The message leaves when the (possibly stretched) overhead o is done.
                let sent = self.cpu_work(h, t, k.o);
                self.hosts[c] = self.cpu_bytes(h, sent, extra * k.O);
                if !nic_path {
                    // With NIC curves the node's shared NIC does this work instead (`nic_start`).
                    self.hosts[n] = t + k.g + if networked { 0 } else { extra * k.G };
                }
                if let Some(cr) = &mut self.crit {
                    cr.started(h, i, t);
                    cr.send(h, i, c.index, (!nic_path).then_some(n.index), sent, networked);
                }
                if let Some(tl) = &mut self.timeline {
                    tl.push(h, op.cpu as u32, SpanKind::SendOverhead, t, self.hosts[c]);
                }
                let posted = if self.records.is_some() { self.send_ready_at.remove(&((h as u64) << 32 | i as u64)).unwrap_or(t) } else { 0 };
                let m = Message { src: h, dst: op.peer, send_op: i, tag: op.tag, size: op.size, cpu: op.cpu, nic: op.nic, networked };
                let id = self.new_message(m);
                if self.keep_details {
                    let d = MessageDetails { posted, injected: t, arrived: sent + k.L, handed: sent, tokens: held, injector: h, ..MessageDetails::default() };
                    match self.details.get_mut(id as usize) {
                        Some(slot) => *slot = d,
                        None => self.details.push(d),
                    }
                }
                if self.noise.is_some() && self.records.is_some() {
                    self.msg_noise.insert(id as u64, (sent - t - k.o, 0));
                }
                let key = self.new_key();
                if nic_path || proxied {
                    self.push_event(sent, Entry { key, host: NIC_ENQUEUE, data: MSG_FLAG | id });
                } else if networked {
                    self.push_event(sent, Entry { key, host: FLOW_START, data: MSG_FLAG | id });
                } else {
                    self.push_event(sent + k.L, Entry { key, host: ARRIVAL, data: MSG_FLAG | id });
                }
                if eager && held > 0 && !nic_path && !proxied {
                    // Its tokens come back when the LogGOPS NIC is done with it.
                    self.schedule_release(t + k.g + extra * k.G, h, held);
                }
                // With NIC curves an eager send completes when the shared NIC has injected it.
                if eager && !nic_path {
                    self.done(h, i);
                }
            }
            OpKind::Recv => {
                self.start(h, i);
                if let Some(cr) = &mut self.crit {
                    cr.started(h, i, t);
                }
                match self.queues.take_first(&mut self.hosts.get_mut(h).queues, Queue::Unexpected, op.peer, op.tag) {
                    Some(id) => {
                        if let Some(cr) = &mut self.crit {
                            let m = self.msgs[id as usize];
                            cr.matched(m.src, m.send_op, h, i, false);
                        }
                        self.deliver(id, i, t, t);
                        self.done(h, i);
                    }
                    None => self.queues.push(&mut self.hosts.get_mut(h).queues, Queue::Posted, op.peer, op.tag, i),
                }
            }
        }
    }

    fn message(&mut self, t: Time, e: Entry) {
        let id = e.data & !MSG_FLAG;
        let m = self.msgs[id as usize];
        let c = self.o_slot(m.dst, m.cpu);
        let n = self.gr_slot(m.dst, m.nic);
        let free = self.hosts[c].max(self.hosts[n]);
        let list = (m.dst as u64) << 16 | (m.cpu as u64) << 8 | m.nic as u64;
        let first = e.host & WAITER != 0;
        if first && self.wait_slot(list).map(|w| &self.waits[w as usize]).is_none_or(|w| w.first.is_none_or(|(key, _)| key != e.key) || w.version != e.host & VERSION_MASK) {
            return; // a copy superseded by an arrival with a smaller key
        }
        if !first && self.memory.is_some() {
            self.memory_write(t, &m); // an arrival's first event: its payload lands now
        }
        if free > t {
            return self.wait_for_receiver(free, e, list, first);
        }
        self.messages += 1;
        // What freed the receiver last (before this arrival takes it).
        let freed = self.crit.as_ref().map(|_| (free, self.cause_of(c, Some(n))));
        let k = self.par.costs(m.size);
        let extra = m.size.saturating_sub(1);
        let (per_byte_cpu, per_byte_nic) = if m.networked { (k.O, 0) } else { (k.O.max(k.G), k.G) };
        let handled = self.cpu_work(m.dst, t, k.o);
        self.hosts[c] = self.cpu_bytes(m.dst, handled, extra * per_byte_cpu);
        if self.noise.is_some() && self.records.is_some() {
            self.msg_noise.entry(id as u64).or_default().1 = self.hosts[c] - t - k.o - extra * per_byte_cpu;
        }
        self.hosts[n] = t + k.g + extra * per_byte_nic;
        if let Some(tl) = &mut self.timeline {
            tl.push(m.dst, m.cpu as u32, SpanKind::RecvOverhead, t, self.hosts[c]);
        }
        if self.keep_details {
            self.details[id as usize].received = t;
        }
        if let (Some(cr), Some((free, cause))) = (&mut self.crit, freed) {
            let d = &self.details[id as usize];
            cr.handled(m.src, m.send_op, m.dst, c.index, n.index, t, d.arrived, d.link_delay, free, cause);
        }
        match self.queues.take_first(&mut self.hosts.get_mut(m.dst).queues, Queue::Posted, m.src, m.tag) {
            Some(recv_op) => {
                if let Some(cr) = &mut self.crit {
                    cr.matched(m.src, m.send_op, m.dst, recv_op, true);
                }
                self.deliver(id, recv_op, t, t);
                self.done(m.dst, recv_op);
            }
            None => self.queues.push(&mut self.hosts.get_mut(m.dst).queues, Queue::Unexpected, m.src, m.tag, id),
        }
        if first {
            let free = self.hosts[c].max(self.hosts[n]);
            self.next_waiter(list, free);
        }
    }

    // --- memory contention (NiMC) ---
    /// Message `m` reaches its destination at `t`: between nodes, the destination node's NIC
    /// writes its payload into memory, and the node's running calcs that this slows end later.
    fn memory_write(&mut self, t: Time, m: &Message) {
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
    // --- end of memory contention ---

    /// Arrival `e` finds its receiver busy until `free`: it joins the receiver's wait list, and is
    /// queued at `free` only if it is (or becomes) the list's first.
    fn wait_for_receiver(&mut self, free: Time, e: Entry, list: u64, first: bool) {
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
    fn wait_slot(&self, list: u64) -> Option<u32> {
        let slot = if list & 0xffff == 0 { self.hosts.get((list >> 16) as u32).waiting } else { *self.other_waits.get(&list)? };
        (slot != NO_WAITS).then_some(slot)
    }

    #[inline]
    fn set_wait_slot(&mut self, list: u64, slot: Option<u32>) {
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
    fn next_waiter(&mut self, list: u64, free: Time) {
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

    /// A message meets its receive at time `t`: completes a rendezvous send, records the message
    /// and frees it. `matched` is when the match happened.
    fn deliver(&mut self, id: u32, recv_op: u32, t: Time, matched: Time) {
        let m = self.msgs[id as usize];
        let rendezvous = m.size > self.par.S;
        if rendezvous {
            // The sender learns of the match at once (no control message, as in v1): its CPU and
            // NIC are busy until then and the send completes now.
            let c = self.o_slot(m.src, m.cpu);
            let n = self.gs_slot(m.src, m.nic);
            if let Some(cr) = &mut self.crit {
                for clock in [c, n] {
                    if self.hosts[clock] < t {
                        cr.rendezvous(m.src, m.send_op, clock.index);
                    }
                }
            }
            self.hosts[c] = self.hosts[c].max(t);
            self.hosts[n] = self.hosts[n].max(t);
            self.done(m.src, m.send_op);
            if self.node.is_some() && self.details[id as usize].tokens > 0 {
                self.release(t, m.src, self.details[id as usize].tokens);
            }
        }
        if let Some(rec) = &mut self.records {
            let d = self.details[id as usize];
            let (send_noise, receive_noise) = self.msg_noise.remove(&(id as u64)).unwrap_or_default();
            let k = self.par.costs(m.size);
            let per_byte = if m.networked { k.O } else { k.O.max(k.G) };
            let times = MessageTimes {
                posted: d.posted,
                injected: d.injected,
                arrived: d.arrived,
                received: d.received,
                matched,
                receive_cost: k.o + m.size.saturating_sub(1) * per_byte,
                link: d.link_delay,
                send_noise,
                receive_noise,
            };
            rec.push(m.src, m.dst, m.size, m.tag, m.send_op, recv_op, rendezvous, &times);
        }
        self.free_msgs.push(id);
    }

    /// A message enters the network (its sender's overhead is paid).
    fn flow_start(&mut self, t: Time, id: u32) {
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
    fn packet_event(&mut self) {
        let net = self.net.as_mut().expect("packet events need a network");
        if let Some((flow, arrival)) = net.packet_step() {
            self.arrive_from_network(self.flow_msg[flow as usize], arrival);
        }
    }

    /// The last byte of message `id` reaches its destination at `arrival`.
    fn arrive_from_network(&mut self, id: u32, arrival: Time) {
        if self.keep_details {
            let nm = self.net_msgs[id as usize];
            let d = &mut self.details[id as usize];
            d.arrived = arrival;
            // Contention is whatever the message took beyond crossing the path alone.
            d.link_delay = (arrival - nm.flow_start).saturating_sub(nm.head + nm.alone);
        }
        let key = self.new_key();
        self.push_event(arrival, Entry { key, host: ARRIVAL, data: MSG_FLAG | id });
    }

    /// A flow's last byte left (if the event is still current): the message arrives `head` later.
    fn flow_done(&mut self, t: Time, e: Entry) {
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
    fn reschedule_flows(&mut self) {
        self.net_dirty = false;
        let mut moved = std::mem::take(&mut self.rescheduled);
        moved.clear();
        self.net.as_mut().expect("dirty only with a network").reallocate(&mut moved);
        for &(flow, done) in &moved {
            let id = self.flow_msg[flow as usize];
            let nm = &mut self.net_msgs[id as usize];
            nm.version = (nm.version + 1) & !KIND_MASK;
            let version = nm.version;
            let key = self.new_key();
            self.push_event(done, Entry { key, host: FLOW_DONE | version, data: MSG_FLAG | id });
        }
        self.rescheduled = moved;
    }

    /// Admission control of a send leaving its node (a send granted after waiting brings its
    /// tokens; the proxy admits at its servers instead).
    fn admit(&mut self, t: Time, e: Entry, size: u64) -> Admission {
        let ns = self.node.as_mut().expect("admission needs the node model");
        if let Some(tokens) = ns.admitted.remove(&((e.host as u64) << 32 | e.data as u64)) {
            return Admission::Now(tokens);
        }
        if ns.proxy.is_some() {
            return Admission::Now(0);
        }
        if let Some(rate) = &mut ns.rate {
            if let Err(at) = rate.admit(e.host, t) {
                ns.waits += 1;
                return Admission::At(at);
            }
        }
        match &mut ns.tokens {
            Some(pool) => match pool.request(ns.node_of[e.host as usize], e.host, size, e) {
                Some(tokens) => Admission::Now(tokens),
                None => Admission::Parked,
            },
            None => Admission::Now(0),
        }
    }

    fn node_event(&mut self, t: Time, e: Entry) {
        let id = e.data & !MSG_FLAG;
        match e.host {
            NIC_ENQUEUE => {
                let ns = self.node.as_mut().expect("node events need the node model");
                let m = &self.msgs[id as usize];
                let node = ns.node_of[m.src as usize];
                match &mut ns.proxy {
                    Some((proxy, _)) => {
                        proxy.push(node, m.src, id);
                        self.proxy_dispatch(t, node);
                    }
                    None => self.nic_enqueue(t, id),
                }
            }
            NIC_DONE => self.nic_done(t, id),
            RELEASE => {
                let ns = self.node.as_mut().expect("node events need the node model");
                let (task, tokens) = ns.releases[id as usize];
                ns.free_releases.push(id);
                self.release(t, task, tokens);
            }
            _ => self.proxy_done(t, id),
        }
    }

    /// Message `id` enters its node's NIC; its service starts now if the NIC was idle.
    fn nic_enqueue(&mut self, t: Time, id: u32) {
        let ns = self.node.as_mut().expect("NIC events need the node model");
        let node = ns.node_of[self.msgs[id as usize].src as usize];
        if ns.nic.push(node, self.details[id as usize].injector, id) {
            self.nic_start(t, node);
        }
    }

    /// The NIC of `node` starts injecting its oldest message at the rate its load allows now:
    /// `(g + (s-1)G) / factor(active injectors, messages held)`.
    fn nic_start(&mut self, t: Time, node: u32) {
        let ns = self.node.as_ref().expect("NIC events need the node model");
        let id = ns.nic.front(node).expect("a message to inject");
        let (active, held) = ns.nic.load(node);
        let m = self.msgs[id as usize];
        let k = self.par.costs(m.size);
        let nominal = k.g + m.size.saturating_sub(1) * k.G;
        let factor = ns.curves.as_ref().expect("NIC queues run only with curves").factor(m.size, active, held);
        let service = stretched(nominal, factor);
        // Waiting for the shared NIC and its slowdown count as contention, like a busy link.
        let d = &mut self.details[id as usize];
        d.link_delay = (t - d.handed + service).saturating_sub(nominal);
        let key = self.new_key();
        self.push_event(t + service, Entry { key, host: NIC_DONE, data: MSG_FLAG | id });
    }

    /// The NIC injected message `id`: it travels L; an eager send completes and gives back its
    /// tokens; the next message's service starts.
    fn nic_done(&mut self, t: Time, id: u32) {
        let m = self.msgs[id as usize];
        let ns = self.node.as_mut().expect("NIC events need the node model");
        let node = ns.node_of[m.src as usize];
        let d = &mut self.details[id as usize];
        ns.nic.pop(node, d.injector);
        let more = ns.nic.front(node).is_some();
        let k = self.par.costs(m.size);
        d.arrived = t + k.L;
        let tokens = d.tokens;
        let key = self.new_key();
        self.push_event(t + k.L, Entry { key, host: ARRIVAL, data: MSG_FLAG | id });
        if m.size <= self.par.S {
            self.done(m.src, m.send_op);
            if tokens > 0 {
                self.release(t, m.src, tokens);
            }
        }
        if more {
            self.nic_start(t, node);
        }
    }

    /// Free servers of `node` take the waiting messages, round robin over the tasks' queues (and
    /// take their tokens first when tokens stand behind the servers). A server is busy `g` per
    /// message.
    fn proxy_dispatch(&mut self, t: Time, node: u32) {
        let ns = self.node.as_mut().expect("proxy events need the node model");
        let ranks = ns.node_of.len() as u32;
        let (proxy, servers) = ns.proxy.as_mut().expect("a proxy");
        let (msgs, details) = (&self.msgs, &mut self.details);
        loop {
            let mut held = 0;
            let tokens = &mut ns.tokens;
            let Some((server, _, id)) = proxy.dispatch(node, |task, id| match tokens {
                None => true,
                Some(pool) => pool.try_take(node, task, msgs[id as usize].size).map(|k| held = k).is_some(),
            }) else {
                break;
            };
            let d = &mut details[id as usize];
            d.tokens = held;
            d.injector = ranks + node * *servers + server;
            let key = self.next_key;
            self.next_key += 1;
            self.queue.push(t + self.par.costs(msgs[id as usize].size).g, Entry { key, host: PROXY_DONE, data: MSG_FLAG | id });
        }
    }

    /// A proxy server has injected message `id`: into the shared NIC (with curves), else on its
    /// way as in LogGOPS; the server takes the next message.
    fn proxy_done(&mut self, t: Time, id: u32) {
        let m = self.msgs[id as usize];
        let d = self.details[id as usize];
        let ns = self.node.as_mut().expect("proxy events need the node model");
        let node = ns.node_of[m.src as usize];
        let ranks = ns.node_of.len() as u32;
        let (proxy, servers) = ns.proxy.as_mut().expect("a proxy");
        proxy.free_server(node, d.injector - ranks - node * *servers);
        if ns.curves.is_some() {
            self.nic_enqueue(t, id);
        } else {
            let k = self.par.costs(m.size);
            let key = self.new_key();
            if m.networked {
                self.push_event(t, Entry { key, host: FLOW_START, data: MSG_FLAG | id });
            } else {
                self.details[id as usize].arrived = t + k.L;
                self.push_event(t + k.L, Entry { key, host: ARRIVAL, data: MSG_FLAG | id });
            }
            if d.tokens > 0 && m.size <= self.par.S {
                self.schedule_release(t + m.size.saturating_sub(1) * k.G, m.src, d.tokens);
            }
        }
        self.proxy_dispatch(t, node);
    }

    /// `task` gives back `tokens` at `at` (a RELEASE event).
    fn schedule_release(&mut self, at: Time, task: u32, tokens: u64) {
        let ns = self.node.as_mut().expect("tokens need the node model");
        let slot = match ns.free_releases.pop() {
            Some(slot) => {
                ns.releases[slot as usize] = (task, tokens);
                slot
            }
            None => {
                ns.releases.push((task, tokens));
                ns.releases.len() as u32 - 1
            }
        };
        let key = self.new_key();
        self.push_event(at, Entry { key, host: RELEASE, data: MSG_FLAG | slot });
    }

    /// `task`'s send completed and gives back its tokens: the waiting sends they admit are issued
    /// now, in ticket order, keeping their keys (or the proxy's servers resume).
    fn release(&mut self, t: Time, task: u32, tokens: u64) {
        let ns = self.node.as_mut().expect("tokens need the node model");
        let node = ns.node_of[task as usize];
        let mut granted = std::mem::take(&mut ns.granted);
        granted.clear();
        ns.tokens.as_mut().expect("a token pool").release(node, task, tokens, &mut granted);
        if ns.proxy.is_some() {
            ns.granted = granted;
            return self.proxy_dispatch(t, node);
        }
        for &(entry, k) in &granted {
            ns.admitted.insert((entry.host as u64) << 32 | entry.data as u64, k);
            self.queue.push(t, entry);
        }
        ns.granted = granted;
    }

    #[inline]
    fn new_key(&mut self) -> u64 {
        if let Some(w) = &mut self.windows {
            return w.issue();
        }
        let k = self.next_key;
        self.next_key += 1;
        k
    }

    /// Marks an operation started: satisfies its irequires dependents.
    #[inline]
    fn start(&mut self, h: u32, i: u32) {
        self.hosts.get_mut(h).started += 1;
        self.ops_started += 1;
        let mut deps = std::mem::take(&mut self.deps);
        deps.clear();
        self.prog.after_start(h, i, &mut deps);
        for &a in &deps {
            self.satisfy(h, a);
        }
        self.deps = deps;
    }

    /// Marks an operation complete: satisfies its requires dependents.
    #[inline]
    fn done(&mut self, h: u32, i: u32) {
        let mut deps = std::mem::take(&mut self.deps);
        deps.clear();
        self.prog.after_done(h, i, &mut deps);
        for &a in &deps {
            self.satisfy(h, a);
        }
        self.deps = deps;
    }

    #[inline]
    fn satisfy(&mut self, h: u32, a: u32) {
        let needed = self.prog.dep_count(h, a);
        if needed <= 1 {
            self.ready.push((h, a));
            return;
        }
        let key = (h as u64) << 32 | a as u64;
        let left = self.waiting.entry(key).or_insert(needed);
        *left -= 1;
        if *left == 0 {
            self.waiting.remove(&key);
            self.ready.push((h, a));
        }
    }

    /// Queues the operations that became ready: by host, then sends, receives, calcs, each group
    /// in the order its members became ready (a stable sort). Each starts when its CPU (and for a
    /// send its NIC) is free, as in v1.
    fn issue_ready(&mut self) {
        let mut issue = std::mem::take(&mut self.issue);
        issue.clear();
        for &(h, i) in &self.ready {
            let op = self.prog.op(h, i);
            issue.push((h, op.kind, i, op));
        }
        self.ready.clear();
        if issue.len() > 1 {
            issue.sort_by_key(|&(h, kind, _, _)| (h, kind));
        }
        for &(h, _, i, op) in &issue {
            let c = self.o_slot(h, op.cpu);
            let time = if op.kind == OpKind::Send {
                let t = self.hosts[c].max(self.hosts[self.gs_slot(h, op.nic)]);
                if self.records.is_some() {
                    self.send_ready_at.insert((h as u64) << 32 | i as u64, t);
                }
                t
            } else {
                self.hosts[c]
            };
            if self.crit.is_some() {
                let n = (op.kind == OpKind::Send).then(|| self.gs_slot(h, op.nic));
                self.trace_queued(h, i, time, c, n);
            }
            let key = self.new_key();
            self.push_event(time, Entry { key, host: h, data: i });
        }
        self.issue = issue;
    }

    pub(super) fn finish(mut self) -> SimResult {
        let n = self.prog.num_ranks() as usize;
        let finish: Vec<Time> = (0..n as u32).map(|h| (0..self.cpus as u32).map(|index| self.hosts[Clock { host: h, index }]).max().unwrap_or(0)).collect();
        let makespan = finish.iter().copied().max().unwrap_or(0);
        let ops = self.ops_started;
        let deadlock = self.find_deadlock();
        let critical_path = self.critical_path(&finish, makespan, deadlock.is_none());
        SimResult {
            num_ranks: n as u32,
            finish,
            makespan,
            ops,
            messages: self.messages,
            events: ops + self.messages,
            packet_events: self.net.as_ref().map_or(0, Network::packet_events),
            requeues: self.requeues,
            peak_queue: self.windows.as_ref().map_or(self.queue.peak_len(), Windows::peak_len),
            windowed: self.windows.is_some(),
            threads: 1,
            deadlock,
            records: self.records.take(),
            timeline: self.timeline.take(),
            links: self.net.as_ref().map(|n| n.stats().clone()),
            noise: self.noise_charged,
            admission_waits: self.node.as_ref().map_or(0, |ns| ns.waits + ns.tokens.as_ref().map_or(0, |p| p.waits)),
            memory: self.memory.take().map(MemorySim::into_stats),
            critical_path,
        }
    }

    // --- critical path (`Options::critical_path`) ---
    /// What set the clock that binds an operation or arrival: `c`, or `n` if that is later.
    fn cause_of(&self, c: Clock, n: Option<Clock>) -> Cause {
        let cr = self.crit.as_ref().expect("tracing the critical path");
        match n {
            Some(n) if self.hosts[n] > self.hosts[c] => cr.setter(n.host, n.index),
            _ => cr.setter(c.host, c.index),
        }
    }

    /// Operation `i` of `h` is queued at `time`, the value of clock `c` (or `n`, if later).
    #[inline]
    fn trace_queued(&mut self, h: u32, i: u32, time: Time, c: Clock, n: Option<Clock>) {
        if self.crit.is_some() {
            let cause = self.cause_of(c, n);
            self.crit.as_mut().expect("checked").queued(h, i, time, cause);
        }
    }

    /// The walk back from the clock that finished last (the lowest rank and CPU at the makespan),
    /// and the records' marks of the messages on it.
    fn critical_path(&mut self, finish: &[Time], makespan: Time, finished: bool) -> Option<CriticalPath> {
        let cr = self.crit.as_ref().filter(|_| finished)?;
        let last = match finish.iter().position(|&f| f == makespan) {
            Some(h) => {
                let cpu = (0..self.cpus as u32).find(|&index| self.hosts[Clock { host: h as u32, index }] == makespan).expect("a CPU at the rank's finish");
                cr.setter(h as u32, cpu)
            }
            None => Cause::ORIGIN,
        };
        let path = cr.walk(self.prog, &self.par, self.cpu_scale, self.memory.is_some(), last, makespan, self.records.is_some());
        if let Some(rec) = &mut self.records {
            let on_path: HashSet<(u32, u32)> = path.messages.iter().copied().collect();
            rec.critical = rec.src.iter().zip(&rec.send_op).map(|(&s, &o)| on_path.contains(&(s, o))).collect();
        }
        Some(path)
    }
    // --- end of critical path ---

    fn pending(&self, rank: u32, op: u32) -> Pending {
        let o = self.prog.op(rank, op);
        Pending { rank, op, kind: o.kind, peer: o.peer, tag: o.tag, bytes: o.size, line: self.prog.source_line(rank, op) }
    }

    fn find_deadlock(&self) -> Option<Deadlock> {
        let mut d = Deadlock::default();
        let cap = Deadlock::LIST_CAP;
        for h in self.owned.clone() {
            for op in self.queues.items(&self.hosts.get(h).queues, Queue::Posted) {
                d.unmatched_recv_count += 1;
                if d.unmatched_recvs.len() < cap {
                    d.unmatched_recvs.push(self.pending(h, op));
                }
            }
            for id in self.queues.items(&self.hosts.get(h).queues, Queue::Unexpected) {
                let m = &self.msgs[id as usize];
                d.unmatched_send_count += 1;
                if d.unmatched_sends.len() < cap {
                    d.unmatched_sends.push(self.pending(m.src, m.send_op));
                }
            }
        }
        // Rendezvous sends whose message waits unmatched never completed: (rank, op).
        let stuck_sends: HashSet<(u32, u32)> = self
            .owned
            .clone()
            .flat_map(|r| self.queues.items(&self.hosts.get(r).queues, Queue::Unexpected))
            .map(|id| &self.msgs[id as usize])
            .filter(|m| m.size > self.par.S)
            .map(|m| (m.src, m.send_op))
            .collect();
        for h in self.owned.clone() {
            let total = self.prog.num_ops(h);
            let started = self.hosts.get(h).started;
            if started < total {
                d.never_started_count += (total - started) as u64;
                if d.never_started.len() < cap {
                    self.list_never_started(h, &stuck_sends, &mut d.never_started, cap);
                }
            }
        }
        (d.count() > 0).then_some(d)
    }

    /// Lists operations of `h` that never started: those not reachable by replaying the rank's
    /// dependencies from its roots (started ops are exactly the reachable ones in a finished run,
    /// so the replay needs no per-op state during the simulation).
    fn list_never_started(&self, h: u32, stuck_sends: &HashSet<(u32, u32)>, out: &mut Vec<Pending>, cap: usize) {
        let n = self.prog.num_ops(h) as usize;
        let mut remaining: Vec<u32> = (0..n as u32).map(|i| self.prog.dep_count(h, i)).collect();
        let mut started = vec![false; n];
        let mut stack = Vec::new();
        self.prog.roots(h, &mut stack);
        let mut deps = Vec::new();
        let posted: HashSet<u32> = self.queues.items(&self.hosts.get(h).queues, Queue::Posted).collect();
        while let Some(i) = stack.pop() {
            if started[i as usize] {
                continue;
            }
            started[i as usize] = true;
            deps.clear();
            self.prog.after_start(h, i, &mut deps);
            // An op completes unless it is a receive still posted or a rendezvous send unmatched.
            if !(posted.contains(&i) || stuck_sends.contains(&(h, i))) {
                self.prog.after_done(h, i, &mut deps);
            }
            for &a in &deps {
                remaining[a as usize] -= 1;
                if remaining[a as usize] == 0 {
                    stack.push(a);
                }
            }
        }
        for i in 0..n as u32 {
            if !started[i as usize] && out.len() < cap {
                out.push(self.pending(h, i));
            }
        }
    }
}
