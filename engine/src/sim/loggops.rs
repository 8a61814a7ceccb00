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

mod cores;
mod deadlock;
mod flows;
mod handle;
mod memory;
mod node;
mod noise;
mod prefetch;
mod trace;
mod waits;

use std::collections::VecDeque;
use std::ops::Range;

use crate::net::Network;
use crate::node::memory::MemorySim;
use crate::node::NodeSpec;
use crate::noise::{Noise, Phase};
use crate::record::{MessageTimes, Records, SpanKind, Timeline};
use crate::schedule::{admitted, spins, Op, OpKind, Program};
use crate::sim::cpu_scale::CpuScale;
use crate::sim::critical::Tracer;
use crate::sim::params::{Execution, Options, Params};
use crate::sim::result::SimResult;
use crate::sim::scenario::{Scenario, Stopped};
use crate::spec_error::SpecError;
use crate::sim::hosts::{Clock, Hosts};
use crate::sim::matching::{MatchQueues, Queue};
use crate::sim::queue::{Entry, EventQueue};
use crate::sim::parallel::{merge, run_in_parallel, workers};
use crate::sim::window::{FinalKeys, Windows, MAX_WIDTH};
use crate::time::Time;
use crate::u64_map::U64Map;

use cores::Cores;
use flows::Flows;
use handle::{Handle, Readiness};
use node::{Admission, NodeSim};
use noise::NoiseSim;
use waits::WaitList;

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
/// The line of a node's token pool is served after a handoff (data: MSG_FLAG | node).
const SERVE: u32 = NODE | 4;
/// An arrival that stands for its receiver's wait list (see `WaitList`); the low bits carry the
/// list's version, so a copy left in the queue after the list moved on is recognised and skipped.
const WAITER: u32 = 1 << 29;
const VERSION_MASK: u32 = WAITER - 1;
/// Placeholder event standing for all initially ready operations of a rank.
const ROOTS: u32 = u32::MAX;

/// The fewest ops of one group that are chained (`Sim::chains`): for fewer, the requeues (at most
/// 21) cost less than keeping a chain.
const CHAIN_MIN: usize = 8;

/// The end of the group of ops starting at `issue[k]` that wait behind it, if it has at least
/// `CHAIN_MIN` (else `k`: none chained).
fn group_end(issue: &[(u32, OpKind, u32, Op)], k: usize) -> usize {
    let mut end = k + 1;
    while end < issue.len() && follows(issue[end - 1], issue[end]) {
        end += 1;
    }
    if end - k >= CHAIN_MIN { end } else { k }
}

/// Whether ready op `b` waits behind `a` (`Sim::chains`): both sends, or both calcs, of one rank
/// on the same CPU (and NIC), so `b` cannot start before `a` has.
#[inline]
fn follows(a: (u32, OpKind, u32, Op), b: (u32, OpKind, u32, Op)) -> bool {
    a.0 == b.0 && a.1 == b.1 && b.1 != OpKind::Recv && a.3.cpu == b.3.cpu && (b.1 == OpKind::Calc || a.3.nic == b.3.nic)
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
    readiness: Readiness,
    queue: EventQueue,
    /// Windowed execution instead of `queue` when it applies (see `windowed_width`).
    pub(super) windows: Option<Windows>,
    pub(super) next_key: u64,
    issue: Vec<(u32, OpKind, u32, Op)>,
    /// Sends (or calcs) of a rank that became ready together and need the same CPU (and NIC): only
    /// the first is queued; the others wait here, by the first's rank << 32 | op, in key order,
    /// and the next is queued (with its own key) when the one before starts or admission
    /// holds it back. Queuing them all at once would requeue every waiting one each time the CPU
    /// frees, k(k-1)/2 times for k (an all-to-all's P-1 sends); the order of events is the same.
    /// Not with windows or the critical path (which follows every requeue).
    chains: U64Map<VecDeque<(u64, u32)>>,
    pub(super) ops_started: u64,
    messages: u64,
    requeues: u64,
    records: Option<Records>,
    /// Ready time of sends not yet started (records only).
    send_ready_at: U64Map<Time>,
    timeline: Option<Timeline>,
    /// Arrivals waiting for a busy receiver, one list per (host, CPU, NIC) that has any, in a slab
    /// with free slots. A host record points to the list of its CPU 0 and NIC 0 (the common case:
    /// no hash lookup of a random key per waiting arrival); `other_waits` to the others.
    waits: Vec<WaitList>,
    free_waits: Vec<u32>,
    other_waits: U64Map<u32>,
    wait_versions: u32,
    // --- the optional models (None: exact LogGOPS), each with its own state. The network and the
    // node models act on the core only through a `Handle` (`with_flows`, `with_node`); noise and
    // memory schedule nothing, they only say when CPU work ends (and memory moves it later) ---
    /// Links between nodes (docs/models.md, "Network").
    flows: Option<Flows>,
    /// NIC congestion and admission control (docs/models.md).
    node: Option<NodeSim>,
    /// Cores a node's ranks share, when they are fewer than its ranks (docs/models.md, "Shared
    /// cores").
    cores: Option<Cores>,
    /// Detours that stretch CPU work (docs/models.md, "Noise").
    noise: Option<NoiseSim<'p>>,
    /// Memory contention (docs/models.md, "Memory contention (NiMC)").
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

/// How a send's message leaves its host (`Sim::route`).
struct Route {
    /// Through the node's shared NIC (congestion curves).
    nic_path: bool,
    /// Through the node's proxy servers.
    proxied: bool,
    /// Over the network's links.
    networked: bool,
    /// Tokens of the node's pool it holds until its send completes.
    held: u64,
}

/// A handle on the core at time `$now` for an optional model (`handle::Handle`): never in a
/// windowed run, which the optional models exclude (`windowed_width`) and whose keys a handle
/// would bypass.
macro_rules! handle {
    ($sim:ident, $now:expr) => {{
        assert!($sim.windows.is_none(), "the optional models never run windowed");
        Handle::new($now, $sim.prog, &$sim.par, &$sim.msgs, &mut $sim.details, &mut $sim.queue, &mut $sim.next_key, &mut $sim.readiness)
    }};
}

/// An arrival that changes workers: its time, key and message.
pub(super) type Mail = (Time, u64, Message);

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
        && sim.flows.is_none()
        && sim.node.is_none()
        && sim.cores.is_none()
        && sim.memory.is_none()
        && !opts.records
        && !opts.timeline
        && !opts.critical_path;
    let scattered = opts.execution == Execution::Windowed || sim.noise.as_ref().is_some_and(|n| n.phase() == Phase::Independent);
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
/// Bytes of simulator state every rank holds at least, whatever its program: measured 108 B a rank
/// for a binomial broadcast of 2^22 ranks (peak resident set less that of 2^20), the least of the
/// generated collectives (a dissemination barrier holds about 490).
const STATE_PER_RANK: u64 = 100;

/// A run whose per-rank state alone exceeds the memory this machine has available is refused
/// before it is allocated: the allocator would abort the process, or the kernel kill it, midway.
/// Where the available memory cannot be read (not Linux), nothing is checked.
fn check_memory(ranks: u32) -> Result<(), SpecError> {
    let need = ranks as u64 * STATE_PER_RANK;
    // Small runs (what-if sweeps run thousands) skip reading /proc.
    if need < 1 << 28 {
        return Ok(());
    }
    let Some(available) = available_memory() else { return Ok(()) };
    if need <= available {
        return Ok(());
    }
    const GIB: f64 = (1u64 << 30) as f64;
    Err(SpecError::new(
        "ranks",
        format!(
            "{ranks} ranks need at least {:.1} GiB of simulator state ({STATE_PER_RANK} B a rank); this machine has {:.1} GiB available",
            need as f64 / GIB,
            available as f64 / GIB
        ),
    ))
}

/// MemAvailable of /proc/meminfo in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub fn simulate<P: Program, F: FnMut(u64) -> bool>(prog: &P, scenario: &Scenario, opts: &Options, mut progress: F) -> Result<SimResult, Stopped> {
    let network = scenario.check(prog.num_ranks()).map_err(Stopped::Invalid)?;
    check_memory(prog.num_ranks()).map_err(Stopped::Invalid)?;
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
    fn new(prog: &'p P, par: &Params, opts: &Options, network: Option<Network>, noise: Option<&'p Noise>, node: Option<&NodeSpec>, memory: Option<MemorySim>) -> Sim<'p, P> {
        let n = prog.num_ranks() as usize;
        let cpus = prog.num_cpus().max(1) as usize;
        let nics = prog.num_nics().max(1) as usize;
        let node_of = |model: &NodeSpec| -> Vec<u32> { (0..n as u32).map(|r| network.as_ref().map_or(r / model.ranks_per_node, |net| net.node_of(r))).collect() };
        let cores = node.and_then(|model| {
            let spec = model.cores.as_ref()?;
            let node_of = if spec.one_host { vec![0; n] } else { node_of(model) };
            let mut ranks = vec![0u32; node_of.iter().map(|&k| k as usize + 1).max().unwrap_or(0)];
            node_of.iter().for_each(|&k| ranks[k as usize] += 1);
            // With a core for each rank, nothing is shared: exact LogGOPS.
            (ranks.iter().any(|&r| r > spec.per_node) || spec.pins_two_on_a_core(&node_of)).then(|| Cores::new(spec, &node_of))
        });
        let node = node.filter(|model| model.shares_the_nic()).map(|model| NodeSim::new(model, node_of(model)));
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
            readiness: Readiness::default(),
            queue: EventQueue::new(),
            windows: None,
            next_key: (n as u64) << 32,
            issue: Vec::new(),
            chains: U64Map::default(),
            ops_started: 0,
            messages: 0,
            requeues: 0,
            records: opts.records.then(Records::default),
            send_ready_at: U64Map::default(),
            timeline: opts.timeline.then(Timeline::default),
            flows: network.map(Flows::new),
            waits: Vec::new(),
            free_waits: Vec::new(),
            other_waits: U64Map::default(),
            wait_versions: 0,
            noise: noise.map(|n| NoiseSim::new(n, opts.records)),
            node,
            cores,
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
            countdown -= 1;
            if countdown == 0 {
                countdown = PROGRESS_EVERY;
                if !progress(self.ops_started) {
                    return false;
                }
            }
            if self.flows.is_some() && self.network_step() {
                continue;
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

    /// The network's work before the next event: new rates if flows started or ended, then a
    /// packet's link event if it comes first (at equal times it does: a packet that arrives at t
    /// is there for an operation at t). True if it handled a link event.
    #[inline(never)]
    fn network_step(&mut self) -> bool {
        let flows = self.flows.as_ref().expect("a network");
        if flows.due(self.queue.peek_time()) {
            let now = flows.net.now();
            let (flows, mut h) = self.with_flows(now);
            flows.reschedule(&mut h);
        }
        // A link's token bucket runs out before the next event: the rates change then.
        if let Some(te) = self.flows.as_ref().expect("a network").net.next_bucket_empty() {
            if self.queue.peek_time().is_none_or(|t| te < t) {
                let (flows, mut h) = self.with_flows(te);
                flows.bucket_empties(te, &mut h);
                return true;
            }
        }
        match self.flows.as_mut().expect("a network").net.next_packet_event() {
            Some(tp) if self.queue.peek_time().is_none_or(|t| tp <= t) => {
                let (flows, mut h) = self.with_flows(tp);
                flows.packet_event(&mut h);
                true
            }
            _ => false,
        }
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
                FLOW_START => {
                    let (flows, mut h) = self.with_flows(t);
                    flows.start(e.data & !MSG_FLAG, &mut h);
                }
                FLOW_DONE => {
                    let (flows, mut h) = self.with_flows(t);
                    flows.done(e, &mut h);
                }
                _ => {
                    let (node, mut h) = self.with_node(t);
                    node.event(e, &mut h);
                }
            }
        } else {
            self.operation(t, e);
        }
        if !self.readiness.ready.is_empty() {
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

    /// Issues the operations of `rank` that have no dependencies, at time 0, keyed just above
    /// the placeholder (so before anything created later, as v1 queues them all up front).
    fn expand_roots(&mut self, t: Time, rank: u32) {
        let mut roots = std::mem::take(&mut self.readiness.deps);
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
            None if self.crit.is_none() && issue.len() >= CHAIN_MIN => {
                let entries: Vec<Entry> = entries.collect();
                let heads = self.chain(&issue, &entries);
                self.queue.push_front_now(t, heads.into_iter());
            }
            None => self.queue.push_front_now(t, entries),
        }
        self.readiness.deps = roots;
        self.issue = issue;
    }

    /// With shared cores: whether op event `e` of rank `h`, its CPU free at `t`, must wait for a
    /// core (it is queued again when one is free); if not, the core it takes is `Cores::chosen`.
    /// Out of line, as the plain path only tests `self.cores`.
    #[inline(never)]
    fn waits_for_core(&mut self, h: u32, t: Time, e: Entry) -> bool {
        let start = self.core_free(h, t);
        if start > t {
            if let Some(cr) = &mut self.crit {
                cr.core_wait(h, e.data);
            }
            self.requeue(start, e);
        }
        start > t
    }

    /// With shared cores: when rank `h` can have a core at or after `t` (it is `Cores::chosen`).
    #[inline(never)]
    fn core_free(&mut self, h: u32, t: Time) -> Time {
        let cores = self.cores.as_mut().expect("shared cores");
        let (start, core, took) = cores.earliest_took(h, t);
        (cores.chosen, cores.chosen_took) = (core, took);
        start
    }

    /// With shared cores: rank `h` holds the core it was given until `end`.
    #[inline(never)]
    fn hold_core(&mut self, h: u32, end: Time) {
        let cores = self.cores.as_mut().expect("shared cores");
        cores.occupy(cores.chosen, h, cores.chosen_took, end);
    }

    /// When CPU work of `w` that may start at `t` on host `h` ends: `t + w`, stretched by noise.
    #[inline]
    fn cpu_work(&mut self, h: u32, t: Time, w: Time) -> Time {
        match &mut self.noise {
            None => t + w,
            Some(noise) => noise.stretch(h, t, w, &mut self.hosts.get_mut(h).noise_free),
        }
    }

    /// Per-byte CPU work (O): stretched only when the noise model applies to it.
    #[inline]
    fn cpu_bytes(&mut self, h: u32, t: Time, w: Time) -> Time {
        if self.noise.as_ref().is_some_and(NoiseSim::per_byte) {
            self.cpu_work(h, t, w)
        } else {
            t + w
        }
    }

    /// Queues an event (in the time-ordered queue, or in its host's window).
    #[inline(always)]
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
                if self.cores.is_some() && self.waits_for_core(h, t, e) {
                    return;
                }
                self.start(h, i);
                let end = self.calc_end(h, t, &op);
                self.hosts[c] = end;
                if self.cores.is_some() {
                    self.hold_core(h, end);
                }
                self.release_next(h, i, t);
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
                if self.cores.is_some() && self.waits_for_core(h, t, e) {
                    return;
                }
                let Some(Route { nic_path, proxied, networked, held }) = self.route(t, e, &op) else {
                    return self.release_next(h, i, t); // admission control holds it back
                };
                self.start(h, i);
                let k = self.par.costs(op.size);
                let extra = op.size.saturating_sub(1);
                let eager = op.size <= self.par.S;
                // The message leaves when the (possibly stretched) overhead o is done.
                let sent = self.cpu_work(h, t, k.o);
                self.hosts[c] = self.cpu_bytes(h, sent, extra * k.O);
                if self.cores.is_some() {
                    self.hold_core(h, self.hosts[c]);
                }
                if !nic_path {
                    // With NIC curves the node's shared NIC does this work instead (`nic_start`).
                    self.hosts[n] = t + k.g + if networked { 0 } else { extra * k.G };
                }
                self.release_next(h, i, t);
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
                if let Some(noise) = &mut self.noise {
                    noise.sent(id, sent - t - k.o);
                }
                if nic_path || proxied {
                    self.schedule(sent, NIC_ENQUEUE, id);
                } else if networked {
                    self.schedule(sent, FLOW_START, id);
                } else {
                    self.schedule(sent + k.L, ARRIVAL, id);
                }
                if eager && held > 0 && !nic_path && !proxied {
                    // Its tokens come back when the LogGOPS NIC is done with it.
                    let (node, mut hd) = self.with_node(t);
                    node.schedule_release(t + k.g + extra * k.G, h, held, &mut hd);
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
                    None => {
                        self.queues.push(&mut self.hosts.get_mut(h).queues, Queue::Posted, op.peer, op.tag, i);
                        if let Some(cores) = self.cores.as_mut() {
                            cores.wait(h, t, spins(op.tag));
                        }
                    }
                }
            }
        }
    }

    fn message(&mut self, t: Time, e: Entry) {
        let id = e.data & !MSG_FLAG;
        let m = self.msgs[id as usize];
        let c = self.o_slot(m.dst, m.cpu);
        let n = self.gr_slot(m.dst, m.nic);
        let clocks = self.hosts[c].max(self.hosts[n]);
        let free = if self.cores.is_some() { self.core_free(m.dst, t.max(clocks)) } else { clocks };
        let list = (m.dst as u64) << 16 | (m.cpu as u64) << 8 | m.nic as u64;
        let first = e.host & WAITER != 0;
        if first && self.superseded(e, list) {
            return; // a copy superseded by an arrival with a smaller key
        }
        if !first {
            if let Some(mem) = &mut self.memory {
                // An arrival's first event: its payload lands now, and slows the calcs running there.
                let (hosts, timeline) = (&mut self.hosts, &mut self.timeline);
                memory::payload_lands(mem, t, &m, |x| {
                    hosts[Clock { host: x.rank, index: x.cpu as u32 }] = x.end;
                    if let (Some(tl), Some(span)) = (timeline.as_mut(), x.span) {
                        tl.end[span as usize] = x.end;
                    }
                });
            }
        }
        if free > t {
            return self.wait_for_receiver(free, e, list, first);
        }
        self.messages += 1;
        // What freed the receiver last (before this arrival takes it).
        let freed = self.crit.as_ref().map(|_| (clocks, self.cause_of(c, Some(n))));
        let k = self.par.costs(m.size);
        let extra = m.size.saturating_sub(1);
        let (per_byte_cpu, per_byte_nic) = if m.networked { (k.O, 0) } else { (k.O.max(k.G), k.G) };
        let handled = self.cpu_work(m.dst, t, k.o);
        self.hosts[c] = self.cpu_bytes(m.dst, handled, extra * per_byte_cpu);
        if self.cores.is_some() {
            self.hold_core(m.dst, self.hosts[c]);
        }
        if let Some(noise) = &mut self.noise {
            noise.received(id, self.hosts[c] - t - k.o - extra * per_byte_cpu);
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
                if let Some(cores) = self.cores.as_mut().filter(|_| spins(m.tag)) {
                    cores.matched(m.dst);
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
                let tokens = self.details[id as usize].tokens;
                let (node, mut h) = self.with_node(t);
                node.release(m.src, tokens, &mut h);
            }
        }
        if let Some(rec) = &mut self.records {
            let d = self.details[id as usize];
            let (send_noise, receive_noise) = self.noise.as_mut().map_or((0, 0), |n| n.take(id));
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

    /// Schedules message event `kind` (ARRIVAL, FLOW_START, NIC_ENQUEUE) about message `slot` at
    /// `at`, keyed after every event created so far.
    #[inline(always)]
    fn schedule(&mut self, at: Time, kind: u32, slot: u32) {
        let key = self.new_key();
        self.push_event(at, Entry { key, host: kind, data: MSG_FLAG | slot });
    }

    /// The node model and a handle on the core at time `now` (see `handle`).
    fn with_node(&mut self, now: Time) -> (&mut NodeSim, Handle<'_, P>) {
        let h = handle!(self, now);
        (self.node.as_mut().expect("node events need the node model"), h)
    }

    /// The network and a handle on the core at time `now`.
    fn with_flows(&mut self, now: Time) -> (&mut Flows, Handle<'_, P>) {
        let h = handle!(self, now);
        (self.flows.as_mut().expect("flow events need a network"), h)
    }

    /// How a send's message leaves its host (None: admission control holds it back, to be
    /// re-queued or resumed): through the node models if it leaves its node and they are on, over
    /// the network's links if it crosses them.
    #[inline]
    fn route(&mut self, t: Time, e: Entry, op: &Op) -> Option<Route> {
        if self.node.is_none() && self.flows.is_none() {
            return Some(Route { nic_path: false, proxied: false, networked: false, held: 0 });
        }
        self.route_through_models(t, e, op)
    }

    /// `route` with the node models or a network (out of line: the plain path stays small).
    #[inline(never)]
    fn route_through_models(&mut self, t: Time, e: Entry, op: &Op) -> Option<Route> {
        let (h, i) = (e.host, e.data);
        let mut route = Route { nic_path: false, proxied: false, networked: false, held: 0 };
        if let Some(ns) = &mut self.node {
            if ns.between_nodes(h, op.peer) && !admitted(op.tag) {
                route.nic_path = ns.nic_path(); // it leaves its node, outside admission control
            } else if ns.between_nodes(h, op.peer) {
                (route.nic_path, route.proxied) = (ns.nic_path(), ns.proxied());
                match ns.admit(t, e, op.size) {
                    Admission::Now(tokens) => route.held = tokens,
                    held_back => {
                        if let Some(cr) = &mut self.crit {
                            cr.held(h, i, t);
                        }
                        if let Admission::At(later) = held_back {
                            self.requeue(later, e);
                        }
                        return None;
                    }
                }
            }
        }
        // Between nodes of a network, the links carry the bytes instead of the NIC gap G.
        route.networked = self.flows.as_ref().is_some_and(|f| !f.net.same_node(h, op.peer));
        Some(route)
    }

    /// When calc `op` of host `h`, starting at `t`, ends: its work stretched by noise, or sharing
    /// its node's memory bandwidth (memory contention).
    #[inline]
    fn calc_end(&mut self, h: u32, t: Time, op: &Op) -> Time {
        let work = self.cpu_scale.apply(op.size * self.par.unit);
        match &mut self.memory {
            Some(mem) => {
                let span = self.timeline.as_ref().map(|tl| tl.start.len() as u32);
                mem.calc(h, op.cpu, t, work, op.mem(), span)
            }
            None => self.cpu_work(h, t, work),
        }
    }

    /// A new key, after every one issued so far (the time-ordered loop's counter, or the window's).
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
        self.readiness.started(self.prog, h, i);
    }

    /// Marks an operation complete: satisfies its requires dependents.
    #[inline(always)]
    fn done(&mut self, h: u32, i: u32) {
        self.readiness.done(self.prog, h, i);
    }

    /// Queues the operations that became ready: by host, then sends, receives, calcs, each group
    /// in the order its members became ready (a stable sort). Each starts when its CPU (and for a
    /// send its NIC) is free, as in v1.
    fn issue_ready(&mut self) {
        self.issue.clear();
        for &(h, i) in &self.readiness.ready {
            let op = self.prog.op(h, i);
            self.issue.push((h, op.kind, i, op));
        }
        self.readiness.ready.clear();
        if self.issue.len() > 1 {
            self.issue.sort_by_key(|&(h, kind, _, _)| (h, kind));
        }
        let chained = self.windows.is_none() && self.crit.is_none() && self.issue.len() >= CHAIN_MIN;
        let (mut head, mut chain_end) = (0, 0);
        // By index: the loop queues events through `self`, and nothing it calls touches `issue`.
        for k in 0..self.issue.len() {
            let (h, _, i, op) = self.issue[k];
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
            if k < chain_end {
                let first = self.issue[head].2;
                self.chains.entry((h as u64) << 32 | first as u64).or_default().push_back((key, i));
                continue;
            }
            if chained {
                (head, chain_end) = (k, group_end(&self.issue, k));
            }
            self.push_event(time, Entry { key, host: h, data: i });
        }
    }

    /// Of a rank's initially ready ops (`issue`, their `entries`), the ones to queue now: each
    /// group's first; the others wait in `chains` behind it.
    fn chain(&mut self, issue: &[(u32, OpKind, u32, Op)], entries: &[Entry]) -> Vec<Entry> {
        let mut heads = Vec::with_capacity(entries.len());
        let (mut head, mut chain_end) = (0, 0);
        for k in 0..issue.len() {
            if k < chain_end {
                let (h, i) = (issue[head].0, issue[head].2);
                self.chains.entry((h as u64) << 32 | i as u64).or_default().push_back((entries[k].key, issue[k].2));
            } else {
                (head, chain_end) = (k, group_end(issue, k));
                heads.push(entries[k]);
            }
        }
        heads
    }

    /// Send or calc `i` of `h` started, or admission held it back: the next of its chain, if any,
    /// is queued, when its CPU (and NIC) are free.
    #[inline]
    fn release_next(&mut self, h: u32, i: u32, t: Time) {
        if self.chains.is_empty() {
            return;
        }
        let Some(mut rest) = self.chains.remove(&((h as u64) << 32 | i as u64)) else { return };
        let (key, next) = rest.pop_front().expect("a chain has followers");
        let op = self.prog.op(h, next);
        let mut time = self.hosts[self.o_slot(h, op.cpu)].max(t);
        if op.kind == OpKind::Send {
            time = time.max(self.hosts[self.gs_slot(h, op.nic)]);
        }
        self.push_event(time, Entry { key, host: h, data: next });
        if !rest.is_empty() {
            self.chains.insert((h as u64) << 32 | next as u64, rest);
        }
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
            packet_events: self.flows.as_ref().map_or(0, |f| f.net.packet_events()),
            requeues: self.requeues,
            peak_queue: self.windows.as_ref().map_or(self.queue.peak_len(), Windows::peak_len),
            windowed: self.windows.is_some(),
            threads: 1,
            deadlock,
            records: self.records.take(),
            timeline: self.timeline.take(),
            links: self.flows.as_ref().map(|f| f.net.stats().clone()),
            noise: self.noise.as_ref().map_or(0, |n| n.charged),
            admission_waits: self.node.as_ref().map_or(0, NodeSim::admission_waits),
            admission_grants: self.node.as_ref().map_or(0, NodeSim::admission_grants),
            admission_max_in_use: self.node.as_ref().map_or(0, NodeSim::admission_max_in_use),
            memory: self.memory.take().map(MemorySim::into_stats),
            critical_path,
        }
    }
}
