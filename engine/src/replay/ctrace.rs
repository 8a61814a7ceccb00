//! contend's own traces: a `contend trace` directory of `rank-NNNNN.ctrace` files (native/trace,
//! docs/formats.md "Trace files", format version 2) as the normalized call model of [`super::event`].
//!
//! One rank's file is read as a stream of fixed 96-byte records (only its header and its
//! communicator table, at the end of the file, are read first), so a conversion holds one record,
//! the communicators and the operations still outstanding. Times: the records' stamps are
//! CLOCK_MONOTONIC ns, or time-stamp counter ticks mapped to ns through the header's two (tick, ns)
//! pairs, as `contend.trace.files.RankTrace.to_ns` does; only differences within a rank are used.
//!
//! How records become calls:
//! - A nonblocking operation's request id is its record number. The tracer stamps every call that
//!   completes operations (Wait, Test, flush, unlock, fence) uniquely per rank and gives each
//!   operation it completed that stamp as `completed`: the Wait/Test record whose `returned` equals
//!   an operation's `completed` lists it. An operation whose completion the tracer did not see
//!   (freed request, full table) stays pending; one completed inside its own call (`completed ==
//!   returned`) is a blocking call.
//! - The init and finalize records (MPI_Init's return, MPI_Finalize's entry) are the first and last
//!   calls, time in MPI: the schedule spans the run between them.
//! - `MPI_Sendrecv` is recorded as a send and a receive of one call site returning at the same
//!   stamp: they become one [`Event::SendRecv`].
//! - Collectives carry their communicator's id (agreed by its members, the same on every rank);
//!   its members come from the file's table, announced by an [`Event::CommCreate`] at the
//!   creating call or, for one the tracer registered at its first collective, just before it.
//!   The v-forms' per-peer sizes come from the file's per-record table (what this rank sent to and
//!   received from each member); without one (records built in memory) this rank's total is spread
//!   evenly. A nonblocking collective is its blocking form's algorithm, started at the call and
//!   completed by the Wait/Test of its request.
//! - Point-to-point records carry world ranks but not their communicator: they travel on
//!   [`WORLD`]. One-sided records carry their window's id, its creation record its communicator; a
//!   window the tracer did not see created (id 0, and every window of records built in memory) is
//!   taken to be over `MPI_COMM_WORLD`. Fetch_and_op and Compare_and_swap are get-accumulates of one
//!   element. The request of an `Rput`, `Rget`, `Raccumulate` or `Rget_accumulate` is not modelled (its
//!   flush, unlock, fence or complete completes it). A post's or start's group (world ranks) comes from
//!   the per-record table.
//!
//! Errors are [`TraceError`]s naming the file and, for a bad record, its 1-based record number.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::event::{
    Call, CollKind, Collective, CommId, Event, Recv, Rma, RmaOp, RmaSync, Send, SendMode, TraceError,
    WORLD,
};
use super::{RankCalls, TraceSet};

pub const MAGIC: &[u8; 8] = b"CTRACE1\0";
pub const VERSION: u32 = 2;
pub const HEADER_BYTES: u64 = 256;
pub const RECORD_BYTES: u64 = 96;
const ADDRESS_BYTES: u64 = 24;
const FRAMES: u32 = 6;
const CLOCK_NS: i32 = 0;
const CLOCK_TSC: i32 = 1;
/// The header's thread level: 0 unknown (traces of earlier tracers), else 1 + the level
/// MPI_Init_thread provided (single, funneled, serialized, multiple).
const THREAD_MULTIPLE: i32 = 4;

/// The header fields a conversion needs (the layout is docs/formats.md's).
#[derive(Clone, Debug)]
struct Header {
    rank: i32,
    ranks: i32,
    records: u64,
    /// Ticks to ns: (tick0, ns0, scale), or None for ns stamps.
    ticks: Option<(i64, i64, f64)>,
    /// Where the communicator table starts, and its int32 words; then the per-record table's int64 words.
    comm_offset: u64,
    comm_words: u64,
    size_words: u64,
    /// The rank's host name (empty: unknown).
    host: Vec<u8>,
    /// The thread level MPI provided (`THREAD_MULTIPLE`'s code, 0: unknown).
    thread_level: i32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn read_header(path: &Path, file: &mut File) -> Result<Header, TraceError> {
    let name = path.display().to_string();
    let err = |msg: String| TraceError::new(name.clone(), 0, msg);
    let size = file.metadata().map_err(|e| err(format!("cannot read ({e})")))?.len();
    let mut b = [0u8; HEADER_BYTES as usize];
    if size < HEADER_BYTES {
        return Err(err(format!("truncated: {size} bytes, shorter than the {HEADER_BYTES}-byte header")));
    }
    file.read_exact(&mut b).map_err(|e| err(format!("cannot read ({e})")))?;
    if &b[0..8] != MAGIC {
        return Err(err("not a contend trace file (bad magic)".into()));
    }
    let version = u32_at(&b, 8);
    if version != VERSION {
        return Err(err(format!("trace format version {version}, this contend reads {VERSION}")));
    }
    if (u32_at(&b, 12) as u64, u32_at(&b, 16) as u64, u32_at(&b, 20)) != (HEADER_BYTES, RECORD_BYTES, FRAMES) {
        return Err(err(format!(
            "header says {}-byte header and {}-byte records with {} frames; expected {HEADER_BYTES}, \
             {RECORD_BYTES}, {FRAMES}",
            u32_at(&b, 12),
            u32_at(&b, 16),
            u32_at(&b, 20)
        )));
    }
    let (rank, ranks) = (i32_at(&b, 24), i32_at(&b, 28));
    let host = b[136..200].split(|&c| c == 0).next().unwrap_or_default().to_vec();
    let records = u64_at(&b, 40);
    let (addresses, names_bytes) = (u64_at(&b, 120), u64_at(&b, 128));
    let (comm_words, size_words) = (u64_at(&b, 240), u64_at(&b, 248));
    let comm_offset = records
        .checked_mul(RECORD_BYTES)
        .and_then(|r| addresses.checked_mul(ADDRESS_BYTES).and_then(|a| r.checked_add(a)))
        .and_then(|x| x.checked_add(HEADER_BYTES)?.checked_add(names_bytes));
    let expected = comm_offset
        .and_then(|o| o.checked_add(comm_words.checked_mul(4)?))
        .and_then(|o| o.checked_add(size_words.checked_mul(8)?));
    if expected != Some(size) {
        return Err(err(format!(
            "truncated or corrupt: {size} bytes, the header promises {} ({records} records, {addresses} addresses)",
            expected.map_or("more than 2^64".to_string(), |e| e.to_string())
        )));
    }
    if ranks <= 0 || rank < 0 || rank >= ranks {
        return Err(err(format!("rank {rank} of {ranks} ranks in the header")));
    }
    let dropped = u64_at(&b, 48);
    if dropped > 0 {
        return Err(err(format!(
            "{dropped} operations were not recorded (the tracer's buffer filled): the schedule would miss \
             them; trace again with a larger CONTEND_TRACE_RECORDS"
        )));
    }
    let ticks = match i32_at(&b, 200) {
        CLOCK_NS => None,
        CLOCK_TSC => {
            let (t0, n0, t1, n1) = (i64_at(&b, 208), i64_at(&b, 216), i64_at(&b, 224), i64_at(&b, 232));
            if t1 <= t0 || n1 <= n0 {
                return Err(err(format!(
                    "the time-stamp counter calibration is unusable (ticks {t0}..{t1}, ns {n0}..{n1})"
                )));
            }
            Some((t0, n0, (n1 - n0) as f64 / (t1 - t0) as f64))
        }
        other => return Err(err(format!("unknown clock kind {other}"))),
    };
    let thread_level = i32_at(&b, 204);
    if !(0..=THREAD_MULTIPLE).contains(&thread_level) {
        return Err(err(format!(
            "unknown thread level {thread_level} (0 to {THREAD_MULTIPLE})"
        )));
    }
    Ok(Header {
        rank,
        ranks,
        records,
        ticks,
        comm_offset: comm_offset.unwrap(),
        comm_words,
        size_words,
        host,
        thread_level,
    })
}

/// The communicator table of a file.
fn read_comms(path: &Path, file: &mut File, h: &Header) -> Result<HashMap<CommId, Vec<u32>>, TraceError> {
    let name = path.display().to_string();
    let mut bytes = vec![0u8; (h.comm_words * 4) as usize];
    file.seek(SeekFrom::Start(h.comm_offset))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|e| TraceError::new(name.clone(), 0, format!("cannot read ({e})")))?;
    let words: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    parse_comms(&name, &words, h.ranks)
}

/// The per-record table (after the communicator table): 0-based record number -> its two lists, a
/// v-collective's bytes sent to and received from each member, or a post's or start's group (world
/// ranks) and nothing. Checked where a record uses them.
type PerRecord = HashMap<u64, (Vec<i64>, Vec<i64>)>;

fn read_per_record(path: &Path, file: &mut File, h: &Header) -> Result<PerRecord, TraceError> {
    let name = path.display().to_string();
    let mut bytes = vec![0u8; (h.size_words * 8) as usize];
    file.seek(SeekFrom::Start(h.comm_offset + 4 * h.comm_words))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|e| TraceError::new(name.clone(), 0, format!("cannot read ({e})")))?;
    let words: Vec<i64> = bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    let mut table = HashMap::new();
    let mut at = 0usize;
    while at < words.len() {
        let bad = || TraceError::new(name.as_str(), 0, format!("per-record table at word {at}: truncated or corrupt"));
        if at + 3 > words.len() || words[at] < 0 || words[at + 1] < 0 || words[at + 2] < 0 {
            return Err(bad());
        }
        let (ns, nr) = (words[at + 1] as usize, words[at + 2] as usize);
        let end = match ns.checked_add(nr).and_then(|n| n.checked_add(at + 3)) {
            Some(end) if end <= words.len() => end,
            _ => return Err(bad()),
        };
        let all = &words[at + 3..end];
        table.insert(words[at] as u64, (all[..ns].to_vec(), all[ns..].to_vec()));
        at = end;
    }
    Ok(table)
}

/// A communicator table, [id, size, world ranks...] per communicator: id -> world ranks in
/// communicator-rank order.
fn parse_comms(name: &str, words: &[i32], ranks: i32) -> Result<HashMap<CommId, Vec<u32>>, TraceError> {
    let mut table = HashMap::new();
    let mut at = 0usize;
    while at < words.len() {
        let bad = |what: &str| TraceError::new(name, 0, format!("communicator table at word {at}: {what}"));
        if at + 2 > words.len() || words[at + 1] < 0 || at + 2 + words[at + 1] as usize > words.len() {
            return Err(bad("truncated"));
        }
        let (id, size) = (words[at], words[at + 1] as usize);
        let members = &words[at + 2..at + 2 + size];
        if id <= 0 || table.contains_key(&(id as u64)) {
            return Err(bad(&format!("bad or repeated id {id}")));
        }
        if members.iter().any(|&m| m < 0 || m >= ranks) {
            return Err(bad(&format!("a member of communicator {id} is outside the {ranks} ranks")));
        }
        table.insert(id as u64, members.iter().map(|&m| m as u32).collect());
        at += 2 + size;
    }
    Ok(table)
}

/// One record, as the reader needs it.
#[derive(Clone, Copy, Debug)]
struct Record {
    posted: i64,
    returned: i64,
    completed: i64,
    bytes: i64,
    peer: i32,
    tag: i32,
    kind: u16,
    flags: u16,
    site: u64,
}

fn parse(b: &[u8]) -> Record {
    Record {
        posted: i64_at(b, 0),
        returned: i64_at(b, 8),
        completed: i64_at(b, 16),
        bytes: i64_at(b, 24),
        peer: i32_at(b, 32),
        tag: i32_at(b, 36),
        kind: u16::from_le_bytes([b[40], b[41]]),
        flags: u16::from_le_bytes([b[42], b[43]]),
        site: u64_at(b, 48),
    }
}

// Record kinds (native/trace/trace.h; python/contend/trace/files.py KINDS).
const K_SEND: u16 = 0;
const K_ISEND: u16 = 1;
const K_SSEND: u16 = 2;
const K_ISSEND: u16 = 3;
const K_RECV: u16 = 4;
const K_IRECV: u16 = 5;
const K_WAIT: u16 = 48;
const K_TEST: u16 = 58;
const K_COMM_CREATE: u16 = 59;
const K_INIT: u16 = 60;
const K_FINALIZE: u16 = 61;
const K_WIN_CREATE: u16 = 62;
/// A window's creation flag: MPI allocated its memory (native/trace/trace.h).
const F_MPI_MEMORY: u16 = 8;
const K_WIN_FREE: u16 = 63;
const K_FETCH_AND_OP: u16 = 64;
const K_COMPARE_AND_SWAP: u16 = 65;
const K_WIN_POST: u16 = 66;
const K_WIN_START: u16 = 67;
const K_WIN_COMPLETE: u16 = 68;
const K_WIN_WAIT: u16 = 69;
const K_UNCONVERTED: u16 = 70;
/// The warning of each call left out, by phrase (`&'static str`: the warnings are counted by it).
macro_rules! left_out {
    ($why:literal: $($name:literal),* $(,)?) => { [$(concat!($name, ": ", $why)),*] };
}
/// What K_UNCONVERTED's calls (by code, from 1, native/trace/trace.h's order) become: left out, with a
/// warning that names them; the collectives without an algorithm first, then the persistent ones.
const WITHOUT_ALGORITHM: [&str; 12] = left_out!("no algorithm for it, not converted: its time counts as computation":
    "MPI_Alltoallw", "MPI_Ialltoallw", "MPI_Neighbor_allgather", "MPI_Neighbor_allgatherv",
    "MPI_Neighbor_alltoall", "MPI_Neighbor_alltoallv", "MPI_Neighbor_alltoallw", "MPI_Ineighbor_allgather",
    "MPI_Ineighbor_allgatherv", "MPI_Ineighbor_alltoall", "MPI_Ineighbor_alltoallv",
    "MPI_Ineighbor_alltoallw"
);
const PERSISTENT: [&str; 22] = left_out!("a persistent collective, not converted: its starts' and waits' time counts as computation":
    "MPI_Allgather_init", "MPI_Allgatherv_init", "MPI_Allreduce_init", "MPI_Alltoall_init",
    "MPI_Alltoallv_init", "MPI_Alltoallw_init", "MPI_Barrier_init", "MPI_Bcast_init", "MPI_Exscan_init",
    "MPI_Gather_init", "MPI_Gatherv_init", "MPI_Reduce_init", "MPI_Reduce_scatter_init",
    "MPI_Reduce_scatter_block_init", "MPI_Scan_init", "MPI_Scatter_init", "MPI_Scatterv_init",
    "MPI_Neighbor_allgather_init", "MPI_Neighbor_allgatherv_init", "MPI_Neighbor_alltoall_init",
    "MPI_Neighbor_alltoallv_init", "MPI_Neighbor_alltoallw_init"
);

/// A collective kind, and whether it is nonblocking (16..=31: its blocking form's kind minus 16).
fn collective_kind(kind: u16) -> Option<(CollKind, bool)> {
    use CollKind::*;
    let (blocking, nonblocking) = if (16..32).contains(&kind) { (kind + 16, true) } else { (kind, false) };
    let coll = match blocking {
        32 => Barrier,
        33 => Bcast,
        34 => Allreduce,
        35 => Reduce,
        36 => Alltoall,
        37 => Allgather,
        38 => Gather,
        39 => Scatter,
        40 => Alltoallv,
        41 => Allgatherv,
        42 => ReduceScatter,
        43 => ReduceScatterBlock,
        44 => Scan,
        45 => Exscan,
        46 => Gatherv,
        47 => Scatterv,
        _ => return None,
    };
    Some((coll, nonblocking))
}

/// A `contend trace` directory (one `rank-NNNNN.ctrace` per world rank, all of one run), or the
/// same records built in memory by another reader (the OTF2 import: one owner of what records mean).
pub struct CtraceSet {
    ranks: Vec<Source>,
    /// Each rank's host name, from the files' headers (None: records without headers).
    hosts: Option<Arc<Vec<Vec<u8>>>>,
    /// A header says MPI provided MPI_THREAD_MULTIPLE.
    threads_multiple: bool,
}

enum Source {
    File(PathBuf),
    Memory(MemoryRank),
}

/// One rank's records in the file's 96-byte record layout, with ns stamps, and its communicator
/// table words; `name` is what errors name.
pub struct MemoryRank {
    pub name: String,
    pub records: std::sync::Arc<Vec<u8>>,
    pub comm_words: Vec<i32>,
}

/// Whether `dir` looks like a `contend trace` directory (it holds a `rank-*.ctrace` file).
pub fn is_trace_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| rank_of_name(&e.file_name().to_string_lossy()).is_some())
    })
}

fn rank_of_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("rank-")?.strip_suffix(".ctrace")?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl CtraceSet {
    /// Opens a trace directory, checking it is one complete run: a file per rank, each naming the
    /// same rank count and its own rank.
    pub fn open_dir(dir: &Path) -> Result<CtraceSet, TraceError> {
        let shown = dir.display().to_string();
        let entries =
            std::fs::read_dir(dir).map_err(|e| TraceError::new(shown.clone(), 0, format!("cannot read ({e})")))?;
        let mut found: Vec<(u32, PathBuf)> = entries
            .flatten()
            .filter_map(|e| rank_of_name(&e.file_name().to_string_lossy()).map(|r| (r, e.path())))
            .collect();
        found.sort();
        if found.is_empty() {
            return Err(TraceError::new(shown, 0, "no rank-NNNNN.ctrace files"));
        }
        let mut ranks = None;
        let mut hosts = Vec::with_capacity(found.len());
        let mut threads_multiple = false;
        for (rank, path) in &found {
            let mut file = File::open(path)
                .map_err(|e| TraceError::new(path.display().to_string(), 0, format!("cannot read ({e})")))?;
            let h = read_header(path, &mut file)?;
            hosts.push(h.host.clone());
            threads_multiple |= h.thread_level == THREAD_MULTIPLE;
            let here = path.display().to_string();
            if h.rank as u32 != *rank {
                return Err(TraceError::new(here, 0, format!("holds rank {}, not {rank} as its name says", h.rank)));
            }
            match ranks {
                None => ranks = Some(h.ranks),
                Some(n) if n != h.ranks => {
                    return Err(TraceError::new(
                        here,
                        0,
                        format!("a run of {} ranks, but {} says {n}: files of different runs are mixed",
                            h.ranks, found[0].1.display()),
                    ))
                }
                _ => {}
            }
        }
        let ranks = ranks.unwrap() as u32;
        if let Some((extra, path)) = found.iter().find(|(r, _)| *r >= ranks) {
            return Err(TraceError::new(
                path.display().to_string(),
                0,
                format!("rank {extra} is beyond the {ranks} ranks of the run"),
            ));
        }
        if found.len() as u32 != ranks {
            let have: HashSet<u32> = found.iter().map(|(r, _)| *r).collect();
            let missing = (0..ranks).find(|r| !have.contains(r)).unwrap();
            return Err(TraceError::new(
                shown,
                0,
                format!("{} of {ranks} rank files missing (first: rank-{missing:05}.ctrace)", ranks as usize - found.len()),
            ));
        }
        Ok(CtraceSet {
            ranks: found.into_iter().map(|(_, p)| Source::File(p)).collect(),
            hosts: Some(Arc::new(hosts)),
            threads_multiple,
        })
    }

    /// Records built in memory, rank i's at position i (errors in their communicator tables are
    /// found here, record errors while streaming).
    pub fn from_memory(ranks: Vec<MemoryRank>) -> Result<CtraceSet, TraceError> {
        let n = ranks.len() as i32;
        for rank in &ranks {
            if !(rank.records.len() as u64).is_multiple_of(RECORD_BYTES) {
                return Err(TraceError::new(rank.name.as_str(), 0, "records are not whole 96-byte records"));
            }
            parse_comms(&rank.name, &rank.comm_words, n)?;
        }
        Ok(CtraceSet {
            ranks: ranks.into_iter().map(Source::Memory).collect(),
            hosts: None,
            threads_multiple: false,
        })
    }
}

impl TraceSet for CtraceSet {
    fn num_ranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    fn source(&self, rank: u32) -> String {
        match &self.ranks[rank as usize] {
            Source::File(path) => path.display().to_string(),
            Source::Memory(m) => m.name.clone(),
        }
    }

    fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
        Ok(Box::new(match &self.ranks[rank as usize] {
            Source::File(path) => RankReader::open(path)?.on_hosts(self.hosts.clone()),
            Source::Memory(m) => RankReader::memory(m, rank as i32, self.ranks.len() as i32)?,
        }))
    }

    fn threads_multiple(&self) -> bool {
        self.threads_multiple
    }
}

/// Shared record bytes, readable without copying them per stream.
struct SharedBytes(std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// One rank's records as calls, streamed.
pub struct RankReader {
    name: String,
    input: Box<dyn Read + std::marker::Send>,
    header: Header,
    comms: HashMap<CommId, Vec<u32>>,
    per_record: PerRecord,
    announced: HashSet<CommId>,
    window_announced: bool,
    /// Records read so far (the next one's 0-based number).
    next: u64,
    /// A record read ahead (to find a Sendrecv's receive).
    ahead: Option<Record>,
    /// Outstanding nonblocking operations by the stamp of the call that will complete them.
    pending: HashMap<i64, Vec<u64>>,
    /// Calls made from one record that are still to be returned (announcements come first).
    queued: std::collections::VecDeque<Call>,
    failed: bool,
    /// Every rank's host name (`CtraceSet::hosts`), and this rank's windows whose memory MPI
    /// allocated: together they tell the one-sided operations MPI does in place.
    hosts: Option<Arc<Vec<Vec<u8>>>>,
    mpi_memory: HashSet<u64>,
}

impl RankReader {
    pub fn open(path: &Path) -> Result<RankReader, TraceError> {
        let name = path.display().to_string();
        let mut file = File::open(path).map_err(|e| TraceError::new(name.clone(), 0, format!("cannot read ({e})")))?;
        let header = read_header(path, &mut file)?;
        let comms = read_comms(path, &mut file, &header)?;
        let per_record = read_per_record(path, &mut file, &header)?;
        file.seek(SeekFrom::Start(HEADER_BYTES))
            .map_err(|e| TraceError::new(name.clone(), 0, format!("cannot read ({e})")))?;
        Ok(RankReader::start(name, Box::new(BufReader::with_capacity(1 << 16, file)), header, comms, per_record))
    }

    /// The host names of the run's ranks, for telling one-sided operations done in place.
    fn on_hosts(mut self, hosts: Option<Arc<Vec<Vec<u8>>>>) -> RankReader {
        self.hosts = hosts;
        self
    }

    /// Whether MPI does a one-sided operation on `win` to `target` in place, as loads and stores
    /// by this rank (docs/models.md, "Replaying traces"): MPI allocated the window's memory and the
    /// target runs on this rank's host, so the window is mapped here (MPICH's and Open MPI's shared
    /// memory windows). Unknown hosts never are.
    fn in_place(&self, win: u64, target: u32) -> bool {
        let Some(hosts) = &self.hosts else { return false };
        let mine = &hosts[self.header.rank as usize];
        self.mpi_memory.contains(&win) && !mine.is_empty() && hosts.get(target as usize) == Some(mine)
    }

    fn memory(m: &MemoryRank, rank: i32, ranks: i32) -> Result<RankReader, TraceError> {
        let records = m.records.len() as u64 / RECORD_BYTES;
        let header = Header {
            rank,
            ranks,
            records,
            ticks: None,
            comm_offset: 0,
            comm_words: 0,
            size_words: 0,
            host: Vec::new(),
            thread_level: 0,
        };
        let comms = parse_comms(&m.name, &m.comm_words, ranks)?;
        let input = Box::new(std::io::Cursor::new(SharedBytes(m.records.clone())));
        Ok(RankReader::start(m.name.clone(), input, header, comms, PerRecord::new()))
    }

    /// A reader at its first record, whichever the records come from (a file or memory).
    fn start(
        name: String,
        input: Box<dyn Read + std::marker::Send>,
        header: Header,
        comms: HashMap<CommId, Vec<u32>>,
        per_record: PerRecord,
    ) -> RankReader {
        RankReader {
            name,
            input,
            header,
            comms,
            per_record,
            announced: HashSet::new(),
            window_announced: false,
            next: 0,
            ahead: None,
            pending: HashMap::new(),
            queued: Default::default(),
            failed: false,
            hosts: None,
            mpi_memory: HashSet::new(),
        }
    }

    fn ns(&self, stamp: i64) -> u64 {
        let ns = match self.header.ticks {
            None => stamp,
            // in f64 throughout: a corrupt stamp saturates instead of overflowing
            Some((t0, n0, scale)) => (n0 as f64 + (stamp as f64 - t0 as f64) * scale).round() as i64,
        };
        ns.max(0) as u64
    }

    fn read_record(&mut self) -> Result<Option<Record>, TraceError> {
        if let Some(r) = self.ahead.take() {
            return Ok(Some(r));
        }
        if self.next >= self.header.records {
            return Ok(None);
        }
        let mut b = [0u8; RECORD_BYTES as usize];
        self.input
            .read_exact(&mut b)
            .map_err(|e| TraceError::new(self.name.clone(), self.next + 1, format!("cannot read ({e})")))?;
        self.next += 1;
        Ok(Some(parse(&b)))
    }

    fn bad(&self, number: u64, msg: String) -> TraceError {
        TraceError::new(self.name.clone(), number, msg)
    }

    fn peer(&self, number: u64, r: &Record, what: &str) -> Result<u32, TraceError> {
        if r.peer < 0 || r.peer >= self.header.ranks {
            return Err(self.bad(number, format!("{what} rank {} is not one of the {} ranks", r.peer, self.header.ranks)));
        }
        Ok(r.peer as u32)
    }

    /// The request of a nonblocking operation, remembered until the call that completes it.
    fn request(&mut self, number: u64, r: &Record) -> Option<u64> {
        if r.completed >= 0 && r.completed == r.returned {
            return None; // completed inside its own call
        }
        if r.completed >= 0 {
            self.pending.entry(r.completed).or_default().push(number);
        }
        Some(number)
    }

    /// A CommCreate for `id` unless announced already (at its creating call, or its first collective).
    fn announce_comm(&mut self, number: u64, id: CommId, start: u64, end: u64) -> Result<(), TraceError> {
        if id == WORLD || self.announced.contains(&id) {
            return Ok(());
        }
        let members = self.comms.get(&id).cloned().ok_or_else(|| {
            self.bad(number, format!("communicator {id} is not in the file's communicator table"))
        })?;
        self.announced.insert(id);
        self.queued.push_back(Call { start, end, line: number, event: Event::CommCreate { comm: id, members } });
        Ok(())
    }

    /// The window of a one-sided record: its id from the tracer, or 0, a window the tracer did not see
    /// created (records built in memory, as from OTF2, have only that one), taken to be over
    /// MPI_COMM_WORLD and announced before its first use.
    fn window(&mut self, number: u64, r: &Record, start: u64) -> u64 {
        if r.tag > 0 {
            return r.tag as u64;
        }
        if !self.window_announced {
            self.window_announced = true;
            self.queued.push_back(Call { start, end: start, line: number, event: Event::WinCreate { win: 0, comm: WORLD } });
        }
        0
    }

    fn send(&mut self, number: u64, r: &Record, nonblocking: bool) -> Result<Send, TraceError> {
        let mode = if matches!(r.kind, K_SSEND | K_ISSEND) { SendMode::Synchronous } else { SendMode::Standard };
        Ok(Send {
            dest: self.peer(number, r, "destination")?,
            bytes: r.bytes.max(0) as u64,
            tag: r.tag.max(0) as u32,
            comm: WORLD,
            mode,
            req: if nonblocking { self.request(number, r) } else { None },
        })
    }

    fn recv(&mut self, number: u64, r: &Record, nonblocking: bool) -> Result<Recv, TraceError> {
        // A wildcard receive's source and tag are the status's (the tracer keeps the matched ones).
        let source = if r.peer >= 0 { Some(self.peer(number, r, "source")?) } else { None };
        let tag = if r.tag >= 0 { Some(r.tag as u32) } else { None };
        Ok(Recv {
            source,
            matched: source,
            bytes: r.bytes.max(0) as u64,
            tag,
            matched_tag: tag,
            comm: WORLD,
            req: if nonblocking { self.request(number, r) } else { None },
        })
    }

    fn collective(&mut self, number: u64, r: &Record, kind: CollKind, nonblocking: bool, start: u64) -> Result<Event, TraceError> {
        if r.tag < 0 {
            // every member's record says so: all leave it out alike
            return Ok(Event::Skipped("collective on an intercommunicator: left out"));
        }
        let comm = r.tag as CommId;
        self.announce_comm(number, comm, start, start)?;
        let size = if comm == WORLD { self.header.ranks as u64 } else { self.comms[&comm].len() as u64 };
        let rooted = matches!(kind, CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Gatherv
            | CollKind::Scatter | CollKind::Scatterv);
        let root = if rooted {
            let world = self.peer(number, r, "root")?;
            Some(if comm == WORLD {
                world
            } else {
                self.comms[&comm].iter().position(|&m| m == world).ok_or_else(|| {
                    self.bad(number, format!("root {world} is not a member of communicator {comm}"))
                })? as u32
            })
        } else {
            None
        };
        let total = r.bytes.max(0) as u64;
        let bytes = match kind {
            CollKind::Alltoallv => total / size.max(1), // this rank's total, spread over the members
            CollKind::ReduceScatterBlock => total * size, // the tracer keeps one block
            _ => total,
        };
        // The v-forms' per-peer sizes: as the tracer kept them, else this rank's total spread evenly.
        let n = size as usize;
        let is_root = root.is_some_and(|root| {
            let me = self.header.rank as u32;
            if comm == WORLD { root == me } else { self.comms[&comm].get(root as usize) == Some(&me) }
        });
        let (send_counts, recv_counts) = match self.per_record.remove(&(number - 1)) {
            Some((send, recv)) => (self.byte_counts(number, send)?, self.byte_counts(number, recv)?),
            None => match kind {
                CollKind::Alltoallv => (vec![bytes; n], vec![bytes; n]),
                CollKind::Allgatherv => (vec![], vec![bytes; n]),
                CollKind::Gatherv if is_root => (vec![], vec![bytes; n]),
                CollKind::Scatterv if is_root => (vec![bytes; n], vec![]),
                _ => (vec![], vec![]),
            },
        };
        let req = if nonblocking { self.request(number, r) } else { None };
        Ok(Event::Collective(Collective { kind, comm, root, bytes, send_counts, recv_counts, req }))
    }

    /// A v-collective's per-member byte counts from the per-record table.
    fn byte_counts(&self, number: u64, words: Vec<i64>) -> Result<Vec<u64>, TraceError> {
        words
            .into_iter()
            .map(|w| u64::try_from(w).map_err(|_| self.bad(number, format!("a per-member size of {w} bytes"))))
            .collect()
    }

    /// A post's or start's group (world ranks) from the per-record table.
    fn group(&mut self, number: u64) -> Result<Vec<u32>, TraceError> {
        let Some((members, _)) = self.per_record.remove(&(number - 1)) else {
            return Err(self.bad(number, "the group of this post or start is not in the per-record table".into()));
        };
        let ranks = self.header.ranks as i64;
        members
            .into_iter()
            .map(|m| {
                if (0..ranks).contains(&m) {
                    Ok(m as u32)
                } else {
                    Err(self.bad(number, format!("group member rank {m} is not one of the {ranks} ranks")))
                }
            })
            .collect()
    }

    fn rma_sync(&mut self, number: u64, r: &Record) -> Result<RmaSync, TraceError> {
        Ok(match r.kind {
            49 => RmaSync::Fence,
            50 => RmaSync::Flush { target: self.peer(number, r, "target")? },
            51 => RmaSync::FlushAll,
            52 => RmaSync::FlushLocal { target: self.peer(number, r, "target")? },
            53 => RmaSync::FlushLocalAll,
            54 => RmaSync::Lock { target: self.peer(number, r, "target")?, exclusive: r.bytes == 1 },
            55 => RmaSync::Unlock { target: self.peer(number, r, "target")? },
            56 => RmaSync::LockAll,
            57 => RmaSync::UnlockAll,
            K_WIN_POST => RmaSync::Post { group: self.group(number)? },
            K_WIN_START => RmaSync::Start { group: self.group(number)? },
            K_WIN_COMPLETE => RmaSync::Complete,
            _ => RmaSync::Wait,
        })
    }

    /// The calls of the next record (or two, for a Sendrecv); None at the end.
    fn step(&mut self) -> Result<Option<()>, TraceError> {
        let Some(r) = self.read_record()? else { return Ok(None) };
        let number = self.next; // 1-based number of r (the look-ahead is read only below)
        let (start, end) = (self.ns(r.posted), self.ns(r.returned));
        // a time-stamp counter not synchronised between cores can run backwards across a migration
        let end = end.max(start);
        let event = match r.kind {
            K_SEND | K_SSEND => {
                let send = self.send(number, &r, false)?;
                match self.read_record()? {
                    Some(next) if next.kind == K_RECV && next.returned == r.returned && next.site == r.site => {
                        let recv = self.recv(number + 1, &next, false)?;
                        Event::SendRecv(send, recv)
                    }
                    other => {
                        self.ahead = other;
                        Event::Send(send)
                    }
                }
            }
            K_ISEND | K_ISSEND => Event::Send(self.send(number, &r, true)?),
            K_RECV => Event::Recv(self.recv(number, &r, false)?),
            K_IRECV => Event::Recv(self.recv(number, &r, true)?),
            8..=15 | K_FETCH_AND_OP | K_COMPARE_AND_SWAP => {
                let win = self.window(number, &r, start);
                let op = match r.kind {
                    8 | 12 => RmaOp::Put,
                    9 | 13 => RmaOp::Get,
                    10 | 14 => RmaOp::Accumulate,
                    _ => RmaOp::GetAccumulate, // get_accumulate, rget_accumulate, fetch_and_op, compare_and_swap
                };
                let target = self.peer(number, &r, "target")?;
                let in_place = self.in_place(win, target);
                Event::Rma(Rma { op, win, target, bytes: r.bytes.max(0) as u64, req: None, in_place })
            }
            K_WAIT | K_TEST => Event::Complete(self.pending.remove(&r.returned).unwrap_or_default()),
            49..=57 | K_WIN_POST..=K_WIN_WAIT => {
                let win = self.window(number, &r, start);
                Event::RmaSync { win, sync: self.rma_sync(number, &r)? }
            }
            K_COMM_CREATE => {
                if r.bytes > 0 && !self.announced.contains(&(r.bytes as CommId)) {
                    self.announce_comm(number, r.bytes as CommId, start, end)?;
                    return Ok(Some(()));
                }
                Event::Other
            }
            K_INIT | K_FINALIZE => Event::Other,
            K_UNCONVERTED => match usize::try_from(r.bytes).ok().and_then(|k| k.checked_sub(1)).and_then(|k| WITHOUT_ALGORITHM.iter().chain(&PERSISTENT).nth(k)) {
                Some(&left_out) => Event::Skipped(left_out),
                None => return Err(self.bad(number, format!("unknown call code {} of an unconverted call", r.bytes))),
            },
            K_WIN_CREATE if r.bytes > 0 => {
                if r.tag < 0 {
                    return Err(self.bad(number, "a window on an intercommunicator".into()));
                }
                self.announce_comm(number, r.tag as CommId, start, start)?;
                if r.flags & F_MPI_MEMORY != 0 {
                    self.mpi_memory.insert(r.bytes as u64);
                }
                Event::WinCreate { win: r.bytes as u64, comm: r.tag as CommId }
            }
            K_WIN_FREE if r.tag > 0 => Event::WinFree { win: r.tag as u64 },
            K_WIN_CREATE | K_WIN_FREE => Event::Other,
            kind => match collective_kind(kind) {
                Some((coll, nonblocking)) => self.collective(number, &r, coll, nonblocking, start)?,
                None => return Err(self.bad(number, format!("unknown record kind {kind}"))),
            },
        };
        self.queued.push_back(Call { start, end, line: number, event });
        Ok(Some(()))
    }
}

impl Iterator for RankReader {
    type Item = Result<Call, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(call) = self.queued.pop_front() {
                return Some(Ok(call));
            }
            if self.failed {
                return None;
            }
            match self.step() {
                Ok(Some(())) => {}
                Ok(None) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A record: (kind, posted, returned, completed, bytes, peer, tag), all from call site 0x1000.
    type Rec = (u16, i64, i64, i64, i64, i32, i32);

    /// Writes a version-2 rank file as the tracer does (ns clock unless `ticks`).
    fn write_rank(dir: &Path, rank: i32, ranks: i32, records: &[Rec], comms: &[i32], ticks: Option<[i64; 4]>) {
        write_rank_with_table(dir, rank, ranks, records, comms, ticks, &[]);
    }

    /// The same with a per-record table.
    fn write_rank_with_table(
        dir: &Path,
        rank: i32,
        ranks: i32,
        records: &[Rec],
        comms: &[i32],
        ticks: Option<[i64; 4]>,
        table: &[i64],
    ) {
        let mut b = vec![0u8; HEADER_BYTES as usize];
        b[0..8].copy_from_slice(MAGIC);
        for (at, v) in [(8, VERSION), (12, 256), (16, 96), (20, 6)] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[24..28].copy_from_slice(&rank.to_le_bytes());
        b[28..32].copy_from_slice(&ranks.to_le_bytes());
        b[40..48].copy_from_slice(&(records.len() as u64).to_le_bytes());
        b[200..204].copy_from_slice(&(ticks.is_some() as i32).to_le_bytes());
        for (k, v) in ticks.unwrap_or_default().iter().enumerate() {
            b[208 + 8 * k..216 + 8 * k].copy_from_slice(&v.to_le_bytes());
        }
        b[240..248].copy_from_slice(&(comms.len() as u64).to_le_bytes());
        b[248..256].copy_from_slice(&(table.len() as u64).to_le_bytes());
        for &(kind, posted, returned, completed, bytes, peer, tag) in records {
            let mut r = vec![0u8; 96];
            for (at, v) in [(0, posted), (8, returned), (16, completed), (24, bytes)] {
                r[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            r[32..36].copy_from_slice(&peer.to_le_bytes());
            r[36..40].copy_from_slice(&tag.to_le_bytes());
            r[40..42].copy_from_slice(&kind.to_le_bytes());
            r[44..48].copy_from_slice(&1u32.to_le_bytes());
            r[48..56].copy_from_slice(&0x1000u64.to_le_bytes());
            b.extend(r);
        }
        for w in comms {
            b.extend(w.to_le_bytes());
        }
        for w in table {
            b.extend(w.to_le_bytes());
        }
        File::create(dir.join(format!("rank-{rank:05}.ctrace"))).unwrap().write_all(&b).unwrap();
    }

    /// A scratch directory of one test, removed when the test is done with it (also when it fails).
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("contend-ctrace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn calls(set: &CtraceSet, rank: u32) -> Vec<Call> {
        set.open(rank).unwrap().collect::<Result<Vec<_>, _>>().unwrap()
    }

    #[test]
    fn a_ring_of_isend_irecv_waitall_lists_both_requests_at_the_wait() {
        let d = temp("ring");
        for rank in 0..2 {
            let peer = 1 - rank;
            // Irecv (record 1), Isend (2), Waitall (3) completing both at its return (stamp 500)
            write_rank(&d, rank, 2, &[(K_IRECV, 100, 110, 500, 64, peer, 7), (K_ISEND, 200, 210, 500, 64, peer, 7),
                (K_WAIT, 300, 500, 500, 2, -1, -1)], &[], None);
        }
        let set = CtraceSet::open_dir(&d).unwrap();
        assert_eq!(set.num_ranks(), 2);
        let c = calls(&set, 1);
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].start, c[0].end, c[0].line), (100, 110, 1));
        assert_eq!(c[0].event, Event::Recv(Recv { source: Some(0), matched: Some(0), bytes: 64, tag: Some(7),
            matched_tag: Some(7), comm: WORLD, req: Some(1) }));
        assert_eq!(c[1].event, Event::Send(Send { dest: 0, bytes: 64, tag: 7, comm: WORLD, mode: SendMode::Standard,
            req: Some(2) }));
        assert_eq!(c[2].event, Event::Complete(vec![1, 2]));
    }

    #[test]
    fn sendrecv_is_one_call_and_ticks_become_ns() {
        let d = temp("sendrecv");
        // ticks: 2 ticks per ns from tick 1000 at ns 50
        let ticks = Some([1000, 50, 3000, 1050]);
        write_rank(&d, 0, 1, &[(K_SEND, 1200, 1400, 1400, 8, 0, 1), (K_RECV, 1202, 1400, 1400, 8, 0, 1),
            (K_SEND, 1500, 1600, 1600, 8, 0, 2)], &[], ticks);
        let c = calls(&CtraceSet::open_dir(&d).unwrap(), 0);
        assert_eq!(c.len(), 2);
        assert!(matches!(c[0].event, Event::SendRecv(..)));
        assert_eq!((c[0].start, c[0].end), (150, 250));
        assert_eq!((c[1].line, c[1].start), (3, 300));
        assert!(matches!(c[1].event, Event::Send(Send { req: None, .. })));
    }

    #[test]
    fn a_sub_communicator_bcast_names_its_members_and_root_rank() {
        let d = temp("split");
        // comm 3 = world ranks [3, 1] (comm rank 0 is world 3); created by a split (record 1), then a
        // Bcast rooted at world 1 = comm rank 1; comm 4 registered at its first collective.
        write_rank(&d, 1, 4, &[(K_COMM_CREATE, 10, 20, 20, 3, -1, 0), (33, 30, 40, 40, 16, 1, 3),
            (32, 50, 60, 60, 0, -1, 4)], &[3, 2, 3, 1, 4, 1, 1], None);
        for rank in [0, 2, 3] {
            write_rank(&d, rank, 4, &[], &[], None);
        }
        let c = calls(&CtraceSet::open_dir(&d).unwrap(), 1);
        assert_eq!(c[0].event, Event::CommCreate { comm: 3, members: vec![3, 1] });
        assert_eq!((c[0].start, c[0].end), (10, 20));
        assert_eq!(c[1].event, Event::Collective(Collective { kind: CollKind::Bcast, comm: 3, root: Some(1), bytes: 16,
            send_counts: vec![], recv_counts: vec![], req: None }));
        assert_eq!(c[2].event, Event::CommCreate { comm: 4, members: vec![1] });
        assert!(matches!(c[3].event, Event::Collective(Collective { kind: CollKind::Barrier, comm: 4, .. })));
    }

    #[test]
    fn one_sided_calls_name_their_window_and_its_communicator() {
        let d = temp("window");
        // window 1 over communicator 2 = world ranks [1, 0]; an exclusive lock, a put, the unlock
        write_rank(&d, 0, 2, &[(K_WIN_CREATE, 10, 20, 20, 1, -1, 2), (54, 30, 31, 31, 1, 1, 1), (8, 40, 41, -1, 64, 1, 1),
            (55, 50, 60, 60, 0, 1, 1), (K_WIN_FREE, 70, 80, 80, 0, -1, 1)], &[2, 2, 1, 0], None);
        write_rank(&d, 1, 2, &[], &[], None);
        let c = calls(&CtraceSet::open_dir(&d).unwrap(), 0);
        let events: Vec<Event> = c.into_iter().map(|c| c.event).collect();
        assert_eq!(events, vec![
            Event::CommCreate { comm: 2, members: vec![1, 0] },
            Event::WinCreate { win: 1, comm: 2 },
            Event::RmaSync { win: 1, sync: RmaSync::Lock { target: 1, exclusive: true } },
            Event::Rma(Rma { op: RmaOp::Put, win: 1, target: 1, bytes: 64, req: None, in_place: false }),
            Event::RmaSync { win: 1, sync: RmaSync::Unlock { target: 1 } },
            Event::WinFree { win: 1 },
        ]);
    }

    /// Sets rank `rank`'s host name and the flags of its record `index` in a file `write_rank` wrote.
    fn patch(dir: &Path, rank: i32, host: &[u8], flagged: Option<(u64, u16)>) {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(dir.join(format!("rank-{rank:05}.ctrace"))).unwrap();
        f.seek(SeekFrom::Start(136)).unwrap();
        f.write_all(host).unwrap();
        if let Some((index, flags)) = flagged {
            f.seek(SeekFrom::Start(HEADER_BYTES + RECORD_BYTES * index + 42)).unwrap();
            f.write_all(&flags.to_le_bytes()).unwrap();
        }
    }

    #[test]
    fn the_thread_level_mpi_provided_is_read_from_the_headers() {
        use std::io::{Seek, SeekFrom, Write};
        let level = |d: &Path, rank: i32, code: i32| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(d.join(format!("rank-{rank:05}.ctrace")))
                .unwrap();
            f.seek(SeekFrom::Start(204)).unwrap();
            f.write_all(&code.to_le_bytes()).unwrap();
        };
        // 0 (unknown: earlier tracers), single, funneled, serialized: not multiple; multiple on any rank.
        for (codes, multiple) in [
            ([0, 0], false),
            ([1, 3], false),
            ([4, 4], true),
            ([0, 4], true),
        ] {
            let d = temp("threads");
            for (rank, code) in codes.into_iter().enumerate() {
                write_rank(&d, rank as i32, 2, &[], &[], None);
                level(&d, rank as i32, code);
            }
            assert_eq!(
                CtraceSet::open_dir(&d).unwrap().threads_multiple(),
                multiple,
                "{codes:?}"
            );
        }
        let d = temp("threads-bad");
        write_rank(&d, 0, 1, &[], &[], None);
        level(&d, 0, 5);
        let e = CtraceSet::open_dir(&d).err().unwrap();
        assert!(e.to_string().contains("unknown thread level 5"), "{e}");
    }

    #[test]
    fn one_sided_operations_on_mpi_memory_of_the_same_host_are_done_in_place() {
        // Rank 0 creates windows 1 (MPI's memory) and 2 (its own), then puts to rank 1 on each.
        let put_on = |win: i32| (8, 40, 41, -1, 64, 1, win);
        let records = [(K_WIN_CREATE, 10, 20, 20, 1, -1, 0), (K_WIN_CREATE, 21, 22, 22, 2, -1, 0), put_on(1), put_on(2)];
        for (host1, expected) in [(&b"a\0"[..], [true, false]), (&b"b\0"[..], [false, false])] {
            let d = temp("in-place");
            write_rank(&d, 0, 2, &records, &[], None);
            write_rank(&d, 1, 2, &[], &[], None);
            patch(&d, 0, b"a\0", Some((0, F_MPI_MEMORY)));
            patch(&d, 1, host1, None);
            let got: Vec<bool> = calls(&CtraceSet::open_dir(&d).unwrap(), 0)
                .into_iter()
                .filter_map(|c| if let Event::Rma(r) = c.event { Some(r.in_place) } else { None })
                .collect();
            assert_eq!(got, expected, "rank 1 on {:?}", std::str::from_utf8(host1));
        }
        // Unknown (empty) host names: never in place.
        let d = temp("no-host");
        write_rank(&d, 0, 2, &records, &[], None);
        write_rank(&d, 1, 2, &[], &[], None);
        patch(&d, 0, b"\0", Some((0, F_MPI_MEMORY)));
        patch(&d, 1, b"\0", None);
        assert!(calls(&CtraceSet::open_dir(&d).unwrap(), 0).into_iter().all(|c| !matches!(c.event, Event::Rma(Rma { in_place: true, .. }))));
    }

    #[test]
    fn an_unconverted_call_is_left_out_by_name_and_an_unknown_code_is_an_error() {
        let d = temp("unconverted");
        write_rank(&d, 0, 1, &[(K_UNCONVERTED, 10, 20, 20, 1, -1, -1), (K_UNCONVERTED, 30, 40, 40, 34, -1, -1)], &[], None);
        let left: Vec<Event> = calls(&CtraceSet::open_dir(&d).unwrap(), 0).into_iter().map(|c| c.event).collect();
        assert_eq!(left, vec![
            Event::Skipped("MPI_Alltoallw: no algorithm for it, not converted: its time counts as computation"),
            Event::Skipped("MPI_Neighbor_alltoallw_init: a persistent collective, not converted: its starts' and waits' time counts as computation"),
        ]);
        for code in [0, 35, -1] {
            let d = temp("unconverted-bad");
            write_rank(&d, 0, 1, &[(K_UNCONVERTED, 10, 20, 20, code, -1, -1)], &[], None);
            let err = CtraceSet::open_dir(&d).unwrap().open(0).unwrap().find_map(Result::err).expect("an error");
            assert!(err.to_string().contains(&format!("unknown call code {code}")), "{err}");
        }
    }

    #[test]
    fn nonblocking_v_collectives_take_their_sizes_and_complete_at_their_wait() {
        let d = temp("iv");
        // Ialltoallv (24, record 1) on the world: sent 8 and 16 bytes, received 24 and 32; Igatherv (30,
        // record 2) rooted here, receiving 40 and 48; a Waitall (record 3) completing both
        let table = [0, 2, 2, 8, 16, 24, 32, 1, 0, 2, 40, 48];
        write_rank_with_table(&d, 0, 2, &[(24, 10, 20, 50, 24, -1, 0), (30, 30, 40, 50, 40, 0, 0),
            (K_WAIT, 45, 50, 50, 2, -1, -1)], &[], None, &table);
        write_rank(&d, 1, 2, &[], &[], None);
        let c = calls(&CtraceSet::open_dir(&d).unwrap(), 0);
        assert_eq!(c[0].event, Event::Collective(Collective { kind: CollKind::Alltoallv, comm: WORLD, root: None,
            bytes: 12, send_counts: vec![8, 16], recv_counts: vec![24, 32], req: Some(1) }));
        assert_eq!(c[1].event, Event::Collective(Collective { kind: CollKind::Gatherv, comm: WORLD, root: Some(0),
            bytes: 40, send_counts: vec![], recv_counts: vec![40, 48], req: Some(2) }));
        assert_eq!(c[2].event, Event::Complete(vec![1, 2]));
        // every nonblocking kind is its blocking form's
        for kind in 16..32u16 {
            assert_eq!(collective_kind(kind), collective_kind(kind + 16).map(|(c, _)| (c, true)));
        }
    }

    #[test]
    fn atomics_and_request_accumulates_are_one_sided_operations() {
        let d = temp("atomics");
        // Raccumulate (14), Rget_accumulate (15), Fetch_and_op (64), Compare_and_swap (65) to rank 1 of
        // window 0 (not seen created: the world), completed by a flush_all (51)
        write_rank(&d, 0, 2, &[(14, 10, 11, 60, 32, 1, 0), (15, 20, 21, 60, 16, 1, 0), (K_FETCH_AND_OP, 30, 31, 60, 8, 1, 0),
            (K_COMPARE_AND_SWAP, 40, 41, 60, 4, 1, 0), (51, 50, 60, 60, 0, -1, 0)], &[], None);
        write_rank(&d, 1, 2, &[], &[], None);
        let events: Vec<Event> = calls(&CtraceSet::open_dir(&d).unwrap(), 0).into_iter().map(|c| c.event).collect();
        let rma = |op, bytes| Event::Rma(Rma { op, win: 0, target: 1, bytes, req: None, in_place: false });
        assert_eq!(events, vec![
            Event::WinCreate { win: 0, comm: WORLD },
            rma(RmaOp::Accumulate, 32),
            rma(RmaOp::GetAccumulate, 16),
            rma(RmaOp::GetAccumulate, 8),
            rma(RmaOp::GetAccumulate, 4),
            Event::RmaSync { win: 0, sync: RmaSync::FlushAll },
        ]);
    }

    #[test]
    fn a_pscw_epoch_names_its_groups_in_world_ranks() {
        let d = temp("pscw");
        // rank 1 posts to {0, 2} and waits; rank 0 starts towards {1}, puts, completes
        write_rank_with_table(&d, 1, 3, &[(K_WIN_POST, 10, 20, 20, 2, -1, 0), (K_WIN_WAIT, 30, 40, 40, 0, -1, 0)], &[], None,
            &[0, 2, 0, 0, 2]);
        write_rank_with_table(&d, 0, 3, &[(K_WIN_START, 10, 20, 20, 1, -1, 0), (8, 21, 22, 30, 64, 1, 0),
            (K_WIN_COMPLETE, 25, 30, 30, 0, -1, 0)], &[], None, &[0, 1, 0, 1]);
        write_rank(&d, 2, 3, &[], &[], None);
        let set = CtraceSet::open_dir(&d).unwrap();
        let events = |rank| calls(&set, rank).into_iter().map(|c| c.event).skip(1).collect::<Vec<_>>();
        assert_eq!(events(1), vec![Event::RmaSync { win: 0, sync: RmaSync::Post { group: vec![0, 2] } },
            Event::RmaSync { win: 0, sync: RmaSync::Wait }]);
        assert_eq!(events(0), vec![Event::RmaSync { win: 0, sync: RmaSync::Start { group: vec![1] } },
            Event::Rma(Rma { op: RmaOp::Put, win: 0, target: 1, bytes: 64, req: None, in_place: false }),
            Event::RmaSync { win: 0, sync: RmaSync::Complete }]);
        // a group the table does not hold, or with a member outside the run: the record is refused
        write_rank(&d, 2, 3, &[(K_WIN_POST, 10, 20, 20, 1, -1, 0)], &[], None);
        let e = CtraceSet::open_dir(&d).unwrap().open(2).unwrap().find_map(Result::err).unwrap();
        assert_eq!((e.line, e.msg.as_str()), (1, "the group of this post or start is not in the per-record table"));
        write_rank_with_table(&d, 2, 3, &[(K_WIN_START, 10, 20, 20, 1, -1, 0)], &[], None, &[0, 1, 0, -1]);
        let e = CtraceSet::open_dir(&d).unwrap().open(2).unwrap().find_map(Result::err).unwrap();
        assert_eq!((e.line, e.msg.as_str()), (1, "group member rank -1 is not one of the 3 ranks"));
    }

    #[test]
    fn bad_traces_name_the_file_and_record() {
        let d = temp("bad");
        write_rank(&d, 0, 2, &[(K_SEND, 1, 2, 2, 8, 1, 0), (77, 3, 4, 4, 0, -1, -1)], &[], None);
        write_rank(&d, 1, 2, &[(33, 1, 2, 2, 8, 0, 9)], &[], None);
        let set = CtraceSet::open_dir(&d).unwrap();
        let e = set.open(0).unwrap().find_map(Result::err).unwrap();
        assert_eq!((e.line, e.msg.as_str()), (2, "unknown record kind 77"));
        assert!(e.file.ends_with("rank-00000.ctrace"));
        let e = set.open(1).unwrap().find_map(Result::err).unwrap();
        assert_eq!((e.line, e.msg.as_str()), (1, "communicator 9 is not in the file's communicator table"));
        // truncated file, mixed rank counts, a missing rank
        let bytes = std::fs::read(d.join("rank-00001.ctrace")).unwrap();
        std::fs::write(d.join("rank-00001.ctrace"), &bytes[..bytes.len() - 10]).unwrap();
        let e = CtraceSet::open_dir(&d).err().unwrap();
        assert!(e.msg.starts_with("truncated or corrupt"), "{e}");
        write_rank(&d, 1, 3, &[], &[], None);
        let e = CtraceSet::open_dir(&d).err().unwrap();
        assert!(e.msg.contains("files of different runs are mixed"), "{e}");
        std::fs::remove_file(d.join("rank-00001.ctrace")).unwrap();
        let e = CtraceSet::open_dir(&d).err().unwrap();
        assert_eq!(e.msg, "1 of 2 rank files missing (first: rank-00001.ctrace)");
    }
}
