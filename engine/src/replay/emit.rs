//! Turns the per-rank call streams of a traced run ([`TraceSet`]) into GOAL text, rank by rank,
//! holding one rank's open state (pending requests, communicators) and never a whole trace.
//!
//! Per rank, in program order (docs/models.md, "Replaying traces", has the full rules):
//! - the time between two communication calls becomes a `calc` (times the CPU scale); calls that
//!   communicate nothing (`MPI_Comm_rank`, ...) count as computation; the last call (`MPI_Finalize`)
//!   ends the rank at its entry;
//! - a blocking operation completes before the next one starts (`requires`); a nonblocking one
//!   starts at its call, the next operation may start once it has started (`irequires`), and the
//!   operations after the completion call that completed it require it;
//! - a collective becomes its algorithm's sends and receives ([`super::algorithms`]) on the
//!   communicator's members, mapped to world ranks, tagged in the collective context
//!   ([`CONTEXT_TAGS`]) so that no application receive can take its messages.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::io::{self, Write};

use super::algorithms::{Algorithms, Plan, Preset, BCAST_CELLS};
use super::balance::{Balance, Origin};
use super::event::{Call, CollKind, Collective, CommId, Event, Recv, Rma, RmaOp, RmaSync, Send, TraceError, WinId, WORLD};
use super::TraceSet;
use crate::schedule::collectives::{Collective as Generated, Pattern};
use crate::schedule::writer::GoalSink;
use crate::schedule::{Op, Program, ANY, CONTEXT_TAGS, SPINNING_TAGS, UNADMITTED_TAGS};
use crate::u64_map::U64Map;

/// Schedgen-like conversion options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Computation time factor (0.5: a CPU twice as fast).
    pub cpu_scale: f64,
    /// Convert point-to-point calls (else their time counts as computation).
    pub p2p: bool,
    /// Convert collective calls (else their time counts as computation).
    pub collectives: bool,
    /// Blocking collectives start this many ns before their call, overlapping the computation
    /// before it (Schedgen's `--traces-nbcify`): the overlap potential of nonblocking collectives.
    pub nbc_prepost_ns: u64,
    /// Only the calls from the `first`-th collective call of each rank on, up to `count` collective
    /// calls (Schedgen's `--traces-nops`, which counts collectives because every rank agrees on them).
    pub window: Option<(u64, u64)>,
    /// Emulated copy time of a received message: a calc of this many ns per byte after each
    /// point-to-point receive.
    pub copy_ns_per_byte: f64,
    /// CPU time every rank spends entering a collective beyond the collective's messages (the MPI
    /// library's argument checks and algorithm selection): a calc at the start of each collective
    /// call. Not scaled by `cpu_scale`: it is the library's, as `o` is.
    pub collective_entry_ns: u64,
    pub algorithms: Algorithms,
    /// One-sided operations that MPI does in place (`Rma::in_place`) are the origin's work, not
    /// messages; false: every one is a message (ranks on one host standing for several nodes).
    pub in_place: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu_scale: 1.0,
            p2p: true,
            collectives: true,
            nbc_prepost_ns: 0,
            window: None,
            copy_ns_per_byte: 0.0,
            collective_entry_ns: 0,
            algorithms: Algorithms::new(Preset::Mpich),
            in_place: true,
        }
    }
}

/// What a conversion did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub ranks: u32,
    /// Trace records (calls) read.
    pub records: u64,
    /// GOAL operations written.
    pub ops: u64,
    /// One-sided operations MPI does in place (`Rma::in_place`): their calls' time is work.
    pub in_place: u64,
    /// Repairs made, one line each (the first few of each kind).
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum ConvertError {
    Trace(TraceError),
    Io(io::Error),
    /// The progress callback asked to stop.
    Stopped,
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConvertError::Trace(e) => write!(f, "{e}"),
            ConvertError::Io(e) => write!(f, "cannot write the schedule: {e}"),
            ConvertError::Stopped => write!(f, "stopped"),
        }
    }
}

impl From<io::Error> for ConvertError {
    fn from(e: io::Error) -> Self {
        ConvertError::Io(e)
    }
}

impl From<TraceError> for ConvertError {
    fn from(e: TraceError) -> Self {
        ConvertError::Trace(e)
    }
}

/// Collective-context tags: bit 31, 11 bits of communicator, the unadmitted bit (bit 19,
/// [`UNADMITTED_TAGS`]), the spinning bit (bit 18, [`SPINNING_TAGS`]), 18 bits of sequence number
/// (wrapping: matching is in order, so a reused number is met only after the earlier messages
/// matched).
const SEQ_BITS: u32 = 20;
const CTX_MASK: u32 = (1 << 11) - 1;
const SEQ_MASK: u32 = (1 << 18) - 1;

fn context_tag(ctx: u32, seq: u64, c: &Collective, spinning: bool) -> u32 {
    let tag = CONTEXT_TAGS | ((ctx & CTX_MASK) << SEQ_BITS) | (seq as u32 & SEQ_MASK);
    if spinning {
        // MPICH's release-gather collectives (Algorithms::release_gather): their ranks spin on
        // shared-memory flags, holding their core; the library passes them to MPI whole.
        tag | SPINNING_TAGS
    } else if admitted_by_the_library(c) {
        tag
    } else {
        tag | UNADMITTED_TAGS
    }
}

/// The collectives libcontend-throttle.so admits (it runs them as sends of its own,
/// native/throttle/collectives.c): the blocking all-to-all and all-gather, v-forms included. It
/// passes every other collective to MPI whole, which makes their messages below the PMPI layer.
pub fn admitted_by_the_library(c: &Collective) -> bool {
    c.req.is_none() && matches!(c.kind, CollKind::Alltoall | CollKind::Alltoallv | CollKind::Allgather | CollKind::Allgatherv)
}

/// Where a call stands relative to the window of collectives (`Options::window`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Admit {
    Before,
    Inside,
    After,
}

/// Counts a rank's collective calls to place each call in the window.
#[derive(Default)]
struct WindowFilter {
    seen: u64,
}

impl WindowFilter {
    fn admit(&mut self, window: Option<(u64, u64)>, event: &Event) -> Admit {
        let Some((first, count)) = window else { return Admit::Inside };
        let k = self.seen;
        self.seen += matches!(event, Event::Collective(_)) as u64;
        if k >= first + count {
            Admit::After
        } else if k < first {
            Admit::Before
        } else {
            Admit::Inside
        }
    }
}

/// One-sided traffic's tags: the last communicator context, one tag per purpose. The library admits
/// what the origin sends: a put's or accumulate's data, a get's request, a get-accumulate's
/// (fetch-and-op's, compare-and-swap's) data; it sees neither a reply, which the target's MPI sends,
/// nor the epochs' synchronization: those are unadmitted ([`UNADMITTED_TAGS`]).
const RMA_DATA: u32 = CONTEXT_TAGS | (CTX_MASK << SEQ_BITS);
const RMA_GET: u32 = RMA_DATA + 1;
const RMA_GET_ACCUMULATE: u32 = RMA_DATA + 2;
const RMA_REPLY: u32 = (RMA_DATA | UNADMITTED_TAGS) + 2;
const RMA_POST: u32 = (RMA_DATA | UNADMITTED_TAGS) + 3;
const RMA_DONE: u32 = (RMA_DATA | UNADMITTED_TAGS) + 4;
/// The target's acknowledgement of a put's or accumulate's data (MPICH's active-message RMA): the
/// origin waits for it at the synchronization that completes the operation at the target, spinning
/// (MPICH's RMA synchronizations poll without yielding; docs/models.md, "Replaying traces").
const RMA_ACK: u32 = (RMA_DATA | SPINNING_TAGS) + 5;

/// One-sided operations arriving at one target: (origin, operation, bytes), in origin order.
type Incoming = Vec<(u32, RmaOp, u64)>;

/// Reads every rank's one-sided operations (only for trace sets that have them): the targets' side
/// of each (receiving the data, answering a get) is written before the target's own program,
/// independent of it, as the NIC serves them.
fn incoming_rma<T: TraceSet + ?Sized>(traces: &T, opts: &Options) -> Result<Vec<Incoming>, ConvertError> {
    let mut incoming = vec![Vec::new(); traces.num_ranks() as usize];
    if !opts.p2p || !traces.has_one_sided() {
        return Ok(incoming);
    }
    for rank in 0..traces.num_ranks() {
        let mut window = WindowFilter::default();
        for call in traces.open(rank)? {
            let call = call?;
            match window.admit(opts.window, &call.event) {
                Admit::After => break,
                Admit::Before => continue,
                Admit::Inside => {}
            }
            if let Event::Rma(r) = &call.event {
                if r.target >= traces.num_ranks() {
                    return Err(TraceError::new(traces.source(rank), call.line, format!("target rank {} out of range", r.target)).into());
                }
                if !done_in_place(opts, r) {
                    incoming[r.target as usize].push((rank, r.op, r.bytes));
                }
            }
        }
    }
    Ok(incoming)
}

/// Whether a one-sided operation is converted as the origin's work during its call (both sides
/// of the conversion ask this).
fn done_in_place(opts: &Options, r: &Rma) -> bool {
    opts.in_place && r.in_place
}

/// Records between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 20;

/// Converts every rank of `traces` into GOAL text on `out`. `progress(rank, records)` is called
/// every million records and at the end of each rank; the conversion stops when it returns false.
pub fn convert<T: TraceSet + ?Sized, W: Write>(
    traces: &T,
    opts: &Options,
    out: W,
    progress: &mut dyn FnMut(u32, u64) -> bool,
) -> Result<Summary, ConvertError> {
    let ranks = traces.num_ranks();
    let sink = GoalSink::new(out, ranks, 1, 1)?;
    let mut e = Emitter {
        opts,
        sink,
        ranks,
        contexts: HashMap::new(),
        members: vec![Vec::new()],
        balance: Balance::default(),
        records: 0,
        in_place: 0,
        warn: Warnings::default(),
        threads_multiple: traces.threads_multiple(),
    };
    let incoming = incoming_rma(traces, opts)?;
    for rank in 0..ranks {
        let file = traces.source(rank);
        let calls = traces.open(rank)?;
        e.sink.begin_rank(rank)?;
        e.rma_target_side(&incoming[rank as usize])?;
        let mut st = RankState::new(rank, file);
        for call in calls {
            let call = call?;
            e.records += 1;
            if e.records.is_multiple_of(PROGRESS_EVERY) && !progress(rank, e.records) {
                return Err(ConvertError::Stopped);
            }
            if !e.call(&mut st, call)? {
                break;
            }
        }
        e.finish_rank(&mut st)?;
        e.sink.end_rank()?;
        if !progress(rank, e.records) {
            return Err(ConvertError::Stopped);
        }
    }
    let members = &e.members;
    if let Some(m) = e.balance.check(&|ctx, i| if ctx == 0 { i } else { members[ctx as usize][i as usize] }) {
        return Err(TraceError::new(traces.source(m.at.rank), m.at.line, m.msg).into());
    }
    let ops = e.sink.ops_written();
    e.sink.into_inner().flush()?;
    Ok(Summary { ranks, records: e.records, ops, in_place: e.in_place, warnings: e.warn.lines() })
}

/// Repairs made, counted per kind with the first place each happened.
#[derive(Default)]
struct Warnings {
    kinds: Vec<(String, u64, String)>,
}

impl Warnings {
    fn add(&mut self, kind: &str, at: impl FnOnce() -> String) {
        if let Some(k) = self.kinds.iter_mut().find(|k| k.0 == kind) {
            k.1 += 1;
        } else {
            self.kinds.push((kind.to_string(), 1, at()));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.kinds.iter().map(|(kind, n, at)| format!("{at}: {kind} ({n} time(s) in all)")).collect()
    }
}

struct RankState {
    rank: u32,
    file: String,
    /// What the next operation must wait for: (op, true = its start only).
    frontier: Vec<(u32, bool)>,
    /// Exit time of the last converted call: computation runs from there.
    last_end: Option<u64>,
    /// Entry time of the last call that converted to nothing, if after `last_end`.
    tail_start: Option<u64>,
    /// Open requests: the operations whose completion completes each.
    reqs: U64Map<Vec<u32>>,
    /// Communicators: id -> context (index into the emitter's member lists; 0 = world).
    comms: HashMap<CommId, u32>,
    /// Collectives called per context (sequence number of the next one).
    seq: HashMap<u32, u64>,
    /// Per context, the calls counted toward MPICH's threshold of shared-memory collectives
    /// ([`Algorithms::release_gather`]).
    release_gather: HashMap<u32, u64>,
    window: WindowFilter,
    /// Windows: id -> (context of its communicator, one-sided operations not yet completed:
    /// (target, the operation that completes it at the origin), and the targets of puts and
    /// accumulates whose acknowledgement no synchronization has received yet, one entry each).
    wins: HashMap<WinId, (u32, Vec<(u32, u32)>, Vec<u32>)>,
    /// Open PSCW epochs per window: the origins of the post, the targets of the start.
    posted: HashMap<WinId, Vec<u32>>,
    started: HashMap<WinId, Vec<u32>>,
    /// Per context, this rank's broadcasts in shared-memory cells whose readers' notes it has not
    /// yet received: (sequence number, tag, readers as world ranks). Ordered: drained in context order.
    cells: BTreeMap<u32, VecDeque<(u64, u32, Vec<u32>)>>,
    line: u64,
}

impl RankState {
    fn new(rank: u32, file: String) -> RankState {
        RankState {
            rank,
            file,
            frontier: Vec::new(),
            last_end: None,
            tail_start: None,
            reqs: U64Map::default(),
            comms: HashMap::new(),
            seq: HashMap::new(),
            release_gather: HashMap::new(),
            window: WindowFilter::default(),
            wins: HashMap::new(),
            posted: HashMap::new(),
            started: HashMap::new(),
            cells: BTreeMap::new(),
            line: 0,
        }
    }

    fn err(&self, msg: impl Into<String>) -> ConvertError {
        TraceError::new(self.file.clone(), self.line, msg).into()
    }

    fn here(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// Adds completion dependencies to the frontier; an operation the frontier waited for the start of
/// is now waited for to complete (one dependency, not two).
fn require(frontier: &mut Vec<(u32, bool)>, done: impl IntoIterator<Item = u32>) {
    for op in done {
        frontier.retain(|&(o, _)| o != op);
        frontier.push((op, false));
    }
}

/// A call that converts to nothing: its time counts as computation, except that the rank's clock
/// starts at the exit of its first call (`MPI_Init`) and its last call (`MPI_Finalize`) ends it at
/// its entry.
fn transparent(st: &mut RankState, call: &Call) {
    if st.last_end.is_none() {
        st.last_end = Some(call.end);
    } else {
        st.tail_start = Some(call.start);
    }
}

struct Emitter<'a, W: Write> {
    opts: &'a Options,
    sink: GoalSink<W>,
    ranks: u32,
    /// Member lists (world ranks in communicator order) -> context; index 0 is the world.
    contexts: HashMap<Vec<u32>, u32>,
    members: Vec<Vec<u32>>,
    balance: Balance,
    records: u64,
    in_place: u64,
    warn: Warnings,
    /// The traced program ran with MPI_THREAD_MULTIPLE ([`TraceSet::threads_multiple`]).
    threads_multiple: bool,
}

impl<W: Write> Emitter<'_, W> {
    /// Writes `op` depending on `deps`; returns its index.
    fn put(&mut self, op: Op, deps: &[(u32, bool)]) -> io::Result<u32> {
        let l = self.sink.op(&op)?;
        for &(d, start) in deps {
            if start {
                self.sink.irequires(l, d)?;
            } else {
                self.sink.requires(l, d)?;
            }
        }
        Ok(l)
    }

    /// Computation from the last converted call's exit to `until` (ns), scaled.
    fn compute(&mut self, st: &mut RankState, until: u64) -> io::Result<()> {
        if let Some(from) = st.last_end {
            let ns = until.saturating_sub(from) as f64 * self.opts.cpu_scale;
            let d = ns.round() as u64;
            if d > 0 {
                let l = self.put(Op::calc(d), &st.frontier)?;
                st.frontier.clear();
                st.frontier.push((l, false));
            }
        }
        st.tail_start = None;
        Ok(())
    }

    fn check_peer(&self, st: &RankState, peer: u32, what: &str) -> Result<(), ConvertError> {
        if peer >= self.ranks {
            return Err(st.err(format!("{what} rank {peer} out of range (the trace has {} ranks)", self.ranks)));
        }
        Ok(())
    }

    /// Handles one call; false once the window is over.
    fn call(&mut self, st: &mut RankState, call: Call) -> Result<bool, ConvertError> {
        st.line = call.line;
        match st.window.admit(self.opts.window, &call.event) {
            Admit::After => return Ok(false),
            Admit::Before => {
                st.last_end = Some(call.end);
                return Ok(true);
            }
            Admit::Inside => {}
        }
        match &call.event {
            Event::Send(s) if self.opts.p2p => {
                self.compute(st, call.start)?;
                let mut deps = std::mem::take(&mut st.frontier);
                let l = self.send(st, s, &deps)?;
                deps.clear();
                deps.push((l, s.req.is_some()));
                st.frontier = deps;
                if let Some(r) = s.req {
                    st.reqs.insert(r, vec![l]);
                }
                st.last_end = Some(call.end);
            }
            Event::Recv(r) if self.opts.p2p => {
                self.compute(st, call.start)?;
                let mut deps = std::mem::take(&mut st.frontier);
                let (l, done) = self.recv(st, r, &deps)?;
                deps.clear();
                match r.req {
                    Some(q) => {
                        st.reqs.insert(q, vec![done]);
                        deps.push((l, true));
                    }
                    None => deps.push((done, false)),
                }
                st.frontier = deps;
                st.last_end = Some(call.end);
            }
            Event::SendRecv(s, r) if self.opts.p2p => {
                self.compute(st, call.start)?;
                let deps = std::mem::take(&mut st.frontier);
                let ls = self.send(st, s, &deps)?;
                let (_, done) = self.recv(st, r, &deps)?;
                st.frontier = vec![(ls, false), (done, false)];
                st.last_end = Some(call.end);
            }
            Event::Complete(reqs) => {
                let mut found = Vec::new();
                for q in reqs {
                    match st.reqs.remove(q) {
                        Some(ops) => found.extend(ops),
                        None if self.opts.p2p && self.opts.collectives => {
                            let here = st.here();
                            self.warn.add("completion of a request never started: ignored", || here);
                        }
                        None => {}
                    }
                }
                if found.is_empty() {
                    transparent(st, &call);
                } else {
                    self.compute(st, call.start)?;
                    require(&mut st.frontier, found);
                    st.last_end = Some(call.end);
                }
            }
            Event::Collective(c) if self.opts.collectives => self.collective(st, &call, c)?,
            Event::CommCreate { comm, members } => {
                self.comm_create(st, *comm, members.clone())?;
                transparent(st, &call);
            }
            Event::CommFree { comm } => {
                st.comms.remove(comm);
                transparent(st, &call);
            }
            Event::WinCreate { win, comm } => {
                let ctx = self.context(st, *comm)?;
                st.wins.insert(*win, (ctx, Vec::new(), Vec::new()));
                transparent(st, &call);
            }
            Event::WinFree { win } => {
                // An epoch left open (a trace cut short): its acknowledgements still arrive.
                let acks = self.acknowledgements(st, *win, None)?;
                require(&mut st.frontier, acks);
                st.wins.remove(win);
                transparent(st, &call);
            }
            Event::Rma(r) if self.opts.p2p => self.rma(st, &call, r)?,
            Event::RmaSync { win, sync } if self.opts.p2p => self.rma_sync(st, &call, *win, sync)?,
            Event::Skipped(why) => {
                let here = st.here();
                self.warn.add(why, || here);
                transparent(st, &call);
            }
            _ => transparent(st, &call),
        }
        Ok(true)
    }

    fn send(&mut self, st: &RankState, s: &Send, deps: &[(u32, bool)]) -> Result<u32, ConvertError> {
        self.check_peer(st, s.dest, "destination")?;
        if s.tag >= CONTEXT_TAGS {
            return Err(st.err(format!("tag {} too large (at most {})", s.tag, CONTEXT_TAGS - 1)));
        }
        self.balance.send(st.rank, s.dest, s.tag, Origin { rank: st.rank, line: st.line });
        Ok(self.put(Op::send(s.dest, s.bytes, s.tag), deps)?)
    }

    /// Writes a receive (and its copy time); returns (the receive, the op that completes it).
    fn recv(&mut self, st: &RankState, r: &Recv, deps: &[(u32, bool)]) -> Result<(u32, u32), ConvertError> {
        // An any-source receive keeps the source it matched in the trace, when the trace knows.
        let src = r.source.or(r.matched).unwrap_or(ANY);
        let tag = r.tag.or(r.matched_tag).unwrap_or(ANY);
        if src != ANY {
            self.check_peer(st, src, "source")?;
        }
        if tag != ANY && tag >= CONTEXT_TAGS {
            return Err(st.err(format!("tag {tag} too large (at most {})", CONTEXT_TAGS - 1)));
        }
        self.balance.recv(src, st.rank, tag, Origin { rank: st.rank, line: st.line });
        let l = self.put(Op::recv(src, r.bytes, tag), deps)?;
        let copy = (r.bytes as f64 * self.opts.copy_ns_per_byte).round() as u64;
        if copy > 0 {
            let c = self.put(Op::calc(copy), &[(l, false)])?;
            return Ok((l, c));
        }
        Ok((l, l))
    }

    fn comm_create(&mut self, st: &mut RankState, comm: CommId, members: Vec<u32>) -> Result<(), ConvertError> {
        if comm == WORLD {
            return Err(st.err("a new communicator cannot take the id of MPI_COMM_WORLD"));
        }
        for &m in &members {
            self.check_peer(st, m, "member")?;
        }
        if !members.contains(&st.rank) {
            return Err(st.err(format!("rank {} creates a communicator it is not a member of", st.rank)));
        }
        let world = members.len() as u32 == self.ranks && members.iter().enumerate().all(|(i, &m)| m == i as u32);
        let ctx = if world {
            0
        } else {
            let next = self.members.len() as u32;
            *self.contexts.entry(members.clone()).or_insert_with(|| {
                self.members.push(members);
                next
            })
        };
        st.comms.insert(comm, ctx);
        Ok(())
    }

    /// The context of a communicator id of this rank.
    fn context(&self, st: &RankState, comm: CommId) -> Result<u32, ConvertError> {
        if comm == WORLD {
            return Ok(0);
        }
        st.comms.get(&comm).copied().ok_or_else(|| st.err(format!("communicator {comm} used before it was created")))
    }

    fn collective(&mut self, st: &mut RankState, call: &Call, c: &Collective) -> Result<(), ConvertError> {
        let ctx = self.context(st, c.comm)?;
        self.collective_in(st, call, c, ctx)
    }

    /// A collective on the communicator of context `ctx`.
    fn collective_in(&mut self, st: &mut RankState, call: &Call, c: &Collective, ctx: u32) -> Result<(), ConvertError> {
        let (size, me) = if ctx == 0 {
            (self.ranks, st.rank)
        } else {
            let m = &self.members[ctx as usize];
            (m.len() as u32, m.iter().position(|&r| r == st.rank).expect("a member") as u32)
        };
        let root = c.root.unwrap_or(0);
        if root >= size {
            return Err(st.err(format!("root {root} out of range for a communicator of {size} ranks")));
        }
        let bytes = self.block_bytes(c, size);
        let counted = st.release_gather.entry(ctx).or_insert(0);
        let released = c.req.is_none() && self.opts.algorithms.release_gather(c.kind, size, bytes, self.threads_multiple, counted);
        let seq = st.seq.entry(ctx).or_insert(0);
        let (number, tag) = (*seq, context_tag(ctx, *seq, c, released));
        *seq += 1;
        self.balance.collective(ctx, size, me, Origin { rank: st.rank, line: st.line });

        // Preposting a blocking collective splits the computation before it.
        let prepost = if c.req.is_none() { self.opts.nbc_prepost_ns } else { 0 };
        let mut overlap = None;
        match st.last_end {
            Some(from) if prepost > 0 => {
                let lead = call.start.saturating_sub(from).min(prepost);
                self.compute(st, call.start - lead)?;
                let d = (lead as f64 * self.opts.cpu_scale).round() as u64;
                if d > 0 {
                    overlap = Some(self.put(Op::calc(d), &st.frontier)?);
                }
            }
            _ => self.compute(st, call.start)?,
        }
        if self.opts.collective_entry_ns > 0 {
            let entered = self.put(Op::calc(self.opts.collective_entry_ns), &st.frontier)?;
            st.frontier = vec![(entered, false)];
        }

        let world_of = |i: u32| if ctx == 0 { i } else { self.members[ctx as usize][i as usize] };
        // Phases run one after the other: a phase's first operations wait for the previous one's last.
        let mut phases: Vec<(Vec<Op>, Option<Generated>)> = Vec::new();
        match self.opts.algorithms.plan(c.kind, size, bytes, released) {
            Plan::Nothing => {}
            Plan::Pattern(pattern, bytes) => phases.push(self.generated(st, pattern, size, bytes, root, me, &world_of, tag)?),
            Plan::Phases(first, second) => {
                phases.push(self.generated(st, first.0, size, first.1, root, me, &world_of, tag)?);
                phases.push(self.generated(st, second.0, size, second.1, root, me, &world_of, tag)?);
            }
            Plan::Linear => phases.push((self.linear(st, c, size, me, root, &world_of, tag)?, None)),
        }
        // A broadcast through the buffers goes through one of its cells (BCAST_CELLS).
        let in_cells = released && c.kind == CollKind::Bcast;
        let (root_world, readers): (u32, Vec<u32>) = (world_of(root), (0..size).filter(|&i| i != root).map(&world_of).collect());
        let mut entry = st.frontier.clone();
        if in_cells && me == root {
            // The root reuses the cell of its broadcast BCAST_CELLS ago once every reader has
            // left it: it waits for their notes.
            let pending = st.cells.entry(ctx).or_default();
            while pending.front().is_some_and(|&(n, _, _)| n + BCAST_CELLS <= number) {
                let (_, old, from) = pending.pop_front().expect("checked");
                for r in from {
                    entry.push((self.put(Op::recv(r, 0, old), &st.frontier)?, false));
                }
            }
        }
        let mut sinks = Vec::new();
        for (ops, gen) in &phases {
            sinks = self.phase(ops, gen.as_ref(), me, &entry)?;
            if !sinks.is_empty() {
                entry = sinks.iter().map(|&s| (s, false)).collect();
            }
        }
        if in_cells && me == root {
            st.cells.entry(ctx).or_default().push_back((number, tag, readers));
        } else if in_cells {
            // A reader's note that it has copied out of the cell (MPICH's gather flag).
            let copied: Vec<(u32, bool)> = sinks.iter().map(|&s| (s, false)).collect();
            self.put(Op::send(root_world, 0, tag), &copied)?;
        }
        // One join operation stands for a collective that ends in several operations.
        if sinks.len() > 1 {
            let deps: Vec<(u32, bool)> = sinks.iter().map(|&s| (s, false)).collect();
            sinks = vec![self.put(Op::calc(0), &deps)?];
        }
        match c.req {
            Some(q) => {
                st.reqs.insert(q, sinks);
            }
            None => {
                if !sinks.is_empty() || overlap.is_some() {
                    st.frontier = sinks.iter().map(|&s| (s, false)).chain(overlap.map(|o| (o, false))).collect();
                }
            }
        }
        st.last_end = Some(call.end);
        Ok(())
    }

    /// One rank's operations of a generated pattern on the communicator, peers as world ranks.
    #[allow(clippy::too_many_arguments)]
    fn generated(
        &self,
        st: &RankState,
        pattern: Pattern,
        size: u32,
        bytes: u64,
        root: u32,
        me: u32,
        world_of: &dyn Fn(u32) -> u32,
        tag: u32,
    ) -> Result<(Vec<Op>, Option<Generated>), ConvertError> {
        let g = Generated::new(pattern, size, bytes, root, 0).map_err(|e| st.err(e))?;
        let ops = (0..g.num_ops(me))
            .map(|i| {
                let mut op = g.op(me, i);
                op.peer = world_of(op.peer);
                op.tag = tag;
                op
            })
            .collect();
        Ok((ops, Some(g)))
    }

    /// Writes one phase: its operations, their dependencies within the phase (from `gen`; none for
    /// linear exchanges), and `entry` for those without. Returns the phase's last operations.
    fn phase(&mut self, ops: &[Op], gen: Option<&Generated>, me: u32, entry: &[(u32, bool)]) -> io::Result<Vec<u32>> {
        let base = self.sink.next_index();
        for op in ops {
            self.sink.op(op)?;
        }
        let n = ops.len() as u32;
        let mut sinks = Vec::new();
        let mut after = Vec::new();
        let mut has_dep = vec![false; n as usize];
        for i in 0..n {
            after.clear();
            if let Some(g) = gen {
                g.after_done(me, i, &mut after);
            }
            if after.is_empty() {
                sinks.push(base + i);
            }
            for &j in &after {
                has_dep[j as usize] = true;
                self.sink.requires(base + j, base + i)?;
            }
        }
        for i in (0..n).filter(|&i| !has_dep[i as usize]) {
            for &(d, start) in entry {
                if start {
                    self.sink.irequires(base + i, d)?;
                } else {
                    self.sink.requires(base + i, d)?;
                }
            }
        }
        Ok(sinks)
    }

    /// Bytes per message of the generated pattern: reduce-scatters exchange one member's block.
    fn block_bytes(&self, c: &Collective, size: u32) -> u64 {
        match c.kind {
            CollKind::ReduceScatter | CollKind::ReduceScatterBlock => c.bytes / size as u64,
            _ => c.bytes,
        }
    }

    /// The v-variants: every message at once, sizes per peer.
    #[allow(clippy::too_many_arguments)]
    fn linear(
        &self,
        st: &RankState,
        c: &Collective,
        size: u32,
        me: u32,
        root: u32,
        world_of: &dyn Fn(u32) -> u32,
        tag: u32,
    ) -> Result<Vec<Op>, ConvertError> {
        let counts = |v: &Vec<u64>, what: &str| -> Result<(), ConvertError> {
            if v.len() != size as usize {
                return Err(st.err(format!("{what} sizes: {} given for a communicator of {size} ranks", v.len())));
            }
            Ok(())
        };
        let mut ops = Vec::new();
        let others = (0..size).filter(|&i| i != me);
        match c.kind {
            CollKind::Gatherv if me == root => {
                counts(&c.recv_counts, "receive")?;
                ops.extend(others.filter(|&i| c.recv_counts[i as usize] > 0).map(|i| Op::recv(world_of(i), c.recv_counts[i as usize], tag)));
            }
            CollKind::Gatherv if c.bytes > 0 => ops.push(Op::send(world_of(root), c.bytes, tag)),
            CollKind::Scatterv if me == root => {
                counts(&c.send_counts, "send")?;
                ops.extend(others.filter(|&i| c.send_counts[i as usize] > 0).map(|i| Op::send(world_of(i), c.send_counts[i as usize], tag)));
            }
            CollKind::Scatterv if c.bytes > 0 => ops.push(Op::recv(world_of(root), c.bytes, tag)),
            CollKind::Allgatherv => {
                counts(&c.recv_counts, "receive")?;
                if c.bytes > 0 {
                    ops.extend(others.clone().map(|i| Op::send(world_of(i), c.bytes, tag)));
                }
                ops.extend(others.filter(|&i| c.recv_counts[i as usize] > 0).map(|i| Op::recv(world_of(i), c.recv_counts[i as usize], tag)));
            }
            CollKind::Alltoallv => {
                counts(&c.send_counts, "send")?;
                counts(&c.recv_counts, "receive")?;
                ops.extend(others.clone().filter(|&i| c.send_counts[i as usize] > 0).map(|i| Op::send(world_of(i), c.send_counts[i as usize], tag)));
                ops.extend(others.filter(|&i| c.recv_counts[i as usize] > 0).map(|i| Op::recv(world_of(i), c.recv_counts[i as usize], tag)));
            }
            _ => {}
        }
        Ok(ops)
    }

    /// The target's side of one-sided operations: data received, gets answered; no dependency on
    /// the target's program.
    fn rma_target_side(&mut self, incoming: &Incoming) -> io::Result<()> {
        for &(origin, op, bytes) in incoming {
            match op {
                RmaOp::Put | RmaOp::Accumulate => {
                    let data = self.sink.op(&Op::recv(origin, bytes, RMA_DATA))?;
                    self.put(Op::send(origin, 0, RMA_ACK), &[(data, false)])?;
                }
                RmaOp::Get => {
                    let q = self.sink.op(&Op::recv(origin, 0, RMA_GET))?;
                    self.put(Op::send(origin, bytes, RMA_REPLY), &[(q, false)])?;
                }
                RmaOp::GetAccumulate => {
                    let q = self.sink.op(&Op::recv(origin, bytes, RMA_GET_ACCUMULATE))?;
                    self.put(Op::send(origin, bytes, RMA_REPLY), &[(q, false)])?;
                }
            }
        }
        Ok(())
    }

    /// The origin's side: put and accumulate send the data, get sends a request and receives the
    /// reply; all start at the call, like nonblocking operations, and complete at a synchronization.
    /// An operation MPI does in place is the origin's work during its call, and complete then.
    fn rma(&mut self, st: &mut RankState, call: &Call, r: &Rma) -> Result<(), ConvertError> {
        self.check_peer(st, r.target, "target")?;
        if !st.wins.contains_key(&r.win) {
            return Err(st.err(format!("window {} used before it was created", r.win)));
        }
        if done_in_place(self.opts, r) {
            self.in_place += 1;
            if let Some(q) = r.req {
                st.reqs.insert(q, Vec::new());
            }
            transparent(st, call);
            return Ok(());
        }
        self.compute(st, call.start)?;
        let deps = std::mem::take(&mut st.frontier);
        let (first, done) = match r.op {
            RmaOp::Put | RmaOp::Accumulate => {
                let s = self.put(Op::send(r.target, r.bytes, RMA_DATA), &deps)?;
                (s, s)
            }
            RmaOp::Get | RmaOp::GetAccumulate => {
                let (out, request) = if r.op == RmaOp::Get { (0, RMA_GET) } else { (r.bytes, RMA_GET_ACCUMULATE) };
                let s = self.put(Op::send(r.target, out, request), &deps)?;
                let reply = self.put(Op::recv(r.target, r.bytes, RMA_REPLY), &deps)?;
                (s, reply)
            }
        };
        st.frontier = vec![(first, true)];
        let w = st.wins.get_mut(&r.win).expect("checked");
        w.1.push((r.target, done));
        if matches!(r.op, RmaOp::Put | RmaOp::Accumulate) {
            w.2.push(r.target);
        }
        if let Some(q) = r.req {
            st.reqs.insert(q, vec![done]);
        }
        st.last_end = Some(call.end);
        Ok(())
    }

    /// Synchronizations: the operations after a flush, unlock, fence or complete require the
    /// one-sided operations they complete; a fence is also a barrier of the window's group; post,
    /// start, complete and wait exchange empty messages between the groups.
    fn rma_sync(&mut self, st: &mut RankState, call: &Call, win: WinId, sync: &RmaSync) -> Result<(), ConvertError> {
        let Some(ctx) = st.wins.get(&win).map(|w| w.0) else {
            return Err(st.err(format!("window {win} used before it was created")));
        };
        if matches!(sync, RmaSync::Lock { .. } | RmaSync::LockAll) {
            transparent(st, call);
            return Ok(());
        }
        self.compute(st, call.start)?;
        // The targets whose operations it completes: one, all (None), or none (post, start and wait
        // open and close epochs without completing this rank's operations).
        let covers = match sync {
            RmaSync::Flush { target } | RmaSync::FlushLocal { target } | RmaSync::Unlock { target } => Some(Some(*target)),
            RmaSync::Post { .. } | RmaSync::Start { .. } | RmaSync::Wait => None,
            _ => Some(None),
        };
        let pending = &mut st.wins.get_mut(&win).expect("checked").1;
        let mut done = Vec::new();
        if let Some(target) = covers {
            pending.retain(|&(t, op)| {
                let hit = target.is_none_or(|x| x == t);
                if hit {
                    done.push(op);
                }
                !hit
            });
            // Complete at the target: the covered puts' acknowledgements, received here.
            if !matches!(sync, RmaSync::FlushLocal { .. } | RmaSync::FlushLocalAll) {
                done.extend(self.acknowledgements(st, win, target)?);
            }
        }
        let at = Origin { rank: st.rank, line: st.line };
        match sync {
            RmaSync::Fence => {
                require(&mut st.frontier, done);
                let fence = Collective {
                    kind: CollKind::Barrier,
                    comm: WORLD,
                    root: None,
                    bytes: 0,
                    send_counts: Vec::new(),
                    recv_counts: Vec::new(),
                    req: None,
                };
                st.last_end = Some(call.start); // the computation before is written already
                return self.collective_in(st, call, &fence, ctx);
            }
            RmaSync::Post { group } => {
                for &o in group {
                    self.check_peer(st, o, "origin")?;
                    self.balance.send(st.rank, o, RMA_POST, at);
                    self.put(Op::send(o, 0, RMA_POST), &st.frontier.clone())?;
                }
                st.posted.insert(win, group.clone());
            }
            RmaSync::Start { group } => {
                let mut waits = Vec::new();
                for &t in group {
                    self.check_peer(st, t, "target")?;
                    self.balance.recv(t, st.rank, RMA_POST, at);
                    waits.push((self.put(Op::recv(t, 0, RMA_POST), &st.frontier.clone())?, false));
                }
                st.frontier.extend(waits);
                st.started.insert(win, group.clone());
            }
            RmaSync::Complete => {
                require(&mut st.frontier, done);
                let deps = std::mem::take(&mut st.frontier);
                for t in st.started.remove(&win).unwrap_or_default() {
                    self.balance.send(st.rank, t, RMA_DONE, at);
                    let s = self.put(Op::send(t, 0, RMA_DONE), &deps)?;
                    st.frontier.push((s, false));
                }
            }
            RmaSync::Wait => {
                let mut waits = Vec::new();
                for o in st.posted.remove(&win).unwrap_or_default() {
                    self.balance.recv(o, st.rank, RMA_DONE, at);
                    waits.push((self.put(Op::recv(o, 0, RMA_DONE), &st.frontier.clone())?, false));
                }
                st.frontier.extend(waits);
            }
            _ => require(&mut st.frontier, done),
        }
        st.last_end = Some(call.end);
        Ok(())
    }

    /// Receives, after the frontier, the acknowledgements still owed for the puts and accumulates
    /// of window `win` to `target` (None: every target); returns the receives.
    fn acknowledgements(&mut self, st: &mut RankState, win: WinId, target: Option<u32>) -> Result<Vec<u32>, ConvertError> {
        let Some(w) = st.wins.get_mut(&win) else { return Ok(Vec::new()) };
        let mut owed = Vec::new();
        w.2.retain(|&t| {
            let hit = target.is_none_or(|x| x == t);
            if hit {
                owed.push(t);
            }
            !hit
        });
        let mut acks = Vec::with_capacity(owed.len());
        for t in owed {
            acks.push(self.put(Op::recv(t, 0, RMA_ACK), &st.frontier)?);
        }
        Ok(acks)
    }

    fn finish_rank(&mut self, st: &mut RankState) -> Result<(), ConvertError> {
        if let Some(t) = st.tail_start {
            self.compute(st, t)?;
        }
        // Windows never freed (a trace cut short): their acknowledgements still arrive.
        let mut open: Vec<WinId> = st.wins.keys().copied().collect();
        open.sort_unstable();
        for win in open {
            let acks = self.acknowledgements(st, win, None)?;
            require(&mut st.frontier, acks);
        }
        // The notes of the last broadcasts' readers, which no later broadcast waited for.
        for (_, old, from) in std::mem::take(&mut st.cells).into_values().flatten() {
            for r in from {
                self.put(Op::recv(r, 0, old), &st.frontier)?;
            }
        }
        if !st.reqs.is_empty() {
            let n = st.reqs.len();
            let at = st.file.clone();
            self.warn.add("request(s) never completed by a wait or test: left to run out", || format!("{at} ({n} on this rank)"));
        }
        Ok(())
    }
}
