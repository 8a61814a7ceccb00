//! Reader of liballprof traces: the per-rank text files LogGOPSim's MPI tracer writes and its
//! Schedgen reads, in both dialects of LogGOPSim's samples (`# collprof 0.9 output file` and
//! `# htor's PMPI Tracer 0.9 Output File`).
//!
//! The format (docs/formats.md, "liballprof traces"): one file per rank, `<prefix>-<rank><suffix>`
//! (rank 0 may be zero-padded, `-000`, and the others then have as many digits); `#` lines are
//! comments; every other line is one MPI call, `MPI_<Name>:<entry>:<arguments in C order>:<exit>`,
//! fields separated by `:`. Times are microseconds (with or without decimals; `-` where not taken).
//! A datatype argument is `handle,size,extent` (bytes per element: `size`), a communicator
//! `handle,rank,size`; buffers, statuses and requests are addresses. A request is named by the
//! address of its `MPI_Request` variable; `MPI_Waitall` gives the address of the array, whose
//! elements are 4 (MPICH) or 8 (Open MPI) bytes apart: the reader takes the spacing at which the
//! array's elements are open requests.
//!
//! A communicator of the run's size is taken as `MPI_COMM_WORLD` (as Schedgen does; its rank
//! field is not checked, LogGOPSim's `simple` sample has rank 0's in every file). Others are known
//! only through `MPI_Comm_split` lines
//! (`MPI_Comm_split:<entry>:<comm>:<color>:<key>:<newcomm>:<exit>`, `<newcomm>` a communicator
//! triple, or `-` for `MPI_UNDEFINED`), resolved across ranks before conversion; collectives on
//! other communicators are left out with a warning, as Schedgen does.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::event::{Call, CollKind, Collective, CommId, Event, Recv, Send, SendMode, TraceError, WORLD};
use super::{RankCalls, TraceSet};
use crate::u64_map::U64Hasher;

/// Open request addresses.
type Requests = HashSet<u64, BuildHasherDefault<U64Hasher>>;

/// A communicator as the trace names it: (handle, rank in it, size).
type Triple = (u64, u32, u32);
/// Member world ranks of the sub-communicators of one rank, by triple.
type CommMap = HashMap<Triple, Arc<Vec<u32>>>;

/// A communicator of a call: None for the world, else its id in the call stream and its members
/// (empty when the trace does not describe it).
type CommRef = Option<(CommId, Arc<Vec<u32>>)>;
/// One rank's split: (rank, color, key, the new communicator or None for MPI_UNDEFINED).
type Split = (u32, i64, i64, Option<Triple>);

/// Collective names (after `MPI_` or `MPI_I`), to recognise nonblocking collectives.
const COLLECTIVES: [&str; 14] = [
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
    "alltoall", "alltoallv", "scan", "exscan",
];

/// The parts of `text` between `sep` bytes (ASCII), without the general pattern machinery: this is
/// the reader's hot path.
fn parts(text: &str, sep: u8) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let end = bytes[start..].iter().position(|&b| b == sep).map_or(bytes.len(), |i| start + i);
        let part = &text[start..end];
        done = end == bytes.len();
        start = end + 1;
        Some(part)
    })
}

/// Most fields a record has (`MPI_Sendrecv`: 15).
const MAX_FIELDS: usize = 24;

const HEADERS: [&str; 2] = ["# collprof 0.9 output file", "# htor's PMPI Tracer 0.9 Output File"];

/// A liballprof trace set: the files of ranks 0..N-1.
pub struct Liballprof {
    files: Vec<PathBuf>,
    /// Sub-communicators per rank: (handle, rank in it, size) -> member world ranks.
    comms: Arc<Vec<CommMap>>,
}

/// Whether `path` (a directory or a file) looks like a liballprof trace: its rank-0 file starts
/// with one of the two headers.
pub fn detect(path: &Path) -> bool {
    rank0_file(path).ok().and_then(|f| first_line(&f)).is_some_and(|l| HEADERS.iter().any(|h| l.trim_end() == *h))
}

fn first_line(path: &Path) -> Option<String> {
    let mut line = String::new();
    BufReader::new(File::open(path).ok()?).read_line(&mut line).ok()?;
    Some(line)
}

/// The rank-0 file: `path` itself, or the one file in the directory `path` named `*-0<suffix>`
/// (any number of zeros).
fn rank0_file(path: &Path) -> Result<PathBuf, TraceError> {
    let shown = path.display().to_string();
    if !path.is_dir() {
        if !path.exists() {
            return Err(TraceError::new(shown, 0, "no such file or directory"));
        }
        return Ok(path.to_path_buf());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| TraceError::new(shown.clone(), 0, format!("cannot read: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| split_rank(n).is_some_and(|(_, r, _)| r.bytes().all(|b| b == b'0'))))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(TraceError::new(shown, 0, "no rank-0 trace file (named like trace-0.dat) in this directory")),
        _ => Err(TraceError::new(
            shown,
            0,
            format!("several rank-0 trace files: {} (give one of them)", found.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")),
        )),
    }
}

/// Splits a file name at its last `-<digits>`: (prefix, digits, suffix).
fn split_rank(name: &str) -> Option<(&str, &str, &str)> {
    let b = name.as_bytes();
    let mut i = b.len();
    while i > 0 {
        i -= 1;
        if b[i] == b'-' {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 {
                return Some((&name[..i], &name[i + 1..i + 1 + digits], &name[i + 1 + digits..]));
            }
        }
    }
    None
}

impl Liballprof {
    /// Finds the files of every rank from `path` (a directory or the rank-0 file) and resolves the
    /// communicators the traces create.
    pub fn open(path: &Path) -> Result<Liballprof, TraceError> {
        let first = rank0_file(path)?;
        let name = first.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let (prefix, zeros, suffix) = split_rank(&name)
            .filter(|(_, d, _)| d.bytes().all(|c| c == b'0'))
            .ok_or_else(|| TraceError::new(first.display().to_string(), 0, "not a rank-0 trace file (its name must end in -0, before any extension)"))?;
        let width = zeros.len();
        let mut files = Vec::new();
        loop {
            let f = first.with_file_name(format!("{prefix}-{:0width$}{suffix}", files.len()));
            if !f.is_file() {
                break;
            }
            files.push(f);
        }
        for f in &files {
            let line = first_line(f).unwrap_or_default();
            if !HEADERS.iter().any(|h| line.trim_end() == *h) {
                return Err(TraceError::new(f.display().to_string(), 1, "not a liballprof trace (no collprof or PMPI Tracer 0.9 header)"));
            }
        }
        let comms = resolve_splits(&files)?;
        Ok(Liballprof { files, comms: Arc::new(comms) })
    }
}

impl TraceSet for Liballprof {
    fn num_ranks(&self) -> u32 {
        self.files.len() as u32
    }

    fn source(&self, rank: u32) -> String {
        self.files[rank as usize].display().to_string()
    }

    fn has_one_sided(&self) -> bool {
        false // the reader produces no one-sided events
    }

    fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
        let path = &self.files[rank as usize];
        let file = File::open(path).map_err(|e| TraceError::new(path.display().to_string(), 0, format!("cannot read: {e}")))?;
        Ok(Box::new(RankReader {
            input: BufReader::with_capacity(1 << 20, file),
            file: path.display().to_string(),
            rank,
            ranks: self.files.len() as u32,
            comms: self.comms.clone(),
            ids: HashMap::new(),
            line: Vec::new(),
            lineno: 0,
            pending: Requests::default(),
            finalized: false,
            done: false,
        }))
    }
}

/// Streams one rank's calls.
struct RankReader {
    input: BufReader<File>,
    file: String,
    rank: u32,
    ranks: u32,
    comms: Arc<Vec<CommMap>>,
    /// Sub-communicator triple -> the id given to it in the call stream.
    ids: HashMap<Triple, CommId>,
    line: Vec<u8>,
    lineno: u64,
    /// Open request addresses (to resolve `MPI_Waitall`'s array).
    pending: Requests,
    finalized: bool,
    done: bool,
}

impl RankReader {
    fn err(&self, msg: impl Into<String>) -> TraceError {
        TraceError::new(self.file.clone(), self.lineno, msg)
    }

    /// Microseconds (decimal text) to ns, exactly.
    fn time(&self, s: &str) -> Result<u64, TraceError> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let us: u64 = int.parse().map_err(|_| self.err(format!("bad time '{s}'")))?;
        let mut ns = 0u64;
        for (i, c) in frac.bytes().chain(std::iter::repeat(b'0')).take(3).enumerate() {
            if !c.is_ascii_digit() {
                return Err(self.err(format!("bad time '{s}'")));
            }
            ns += (c - b'0') as u64 * [100, 10, 1][i];
        }
        Ok(us * 1000 + ns)
    }

    fn int(&self, s: &str, what: &str) -> Result<i64, TraceError> {
        s.trim().parse().map_err(|_| self.err(format!("bad {what} '{s}'")))
    }

    fn uint(&self, s: &str, what: &str) -> Result<u64, TraceError> {
        s.trim().parse().map_err(|_| self.err(format!("bad {what} '{s}'")))
    }

    /// `count` elements of the datatype triple `dt` in bytes.
    fn bytes(&self, count: &str, dt: &str) -> Result<u64, TraceError> {
        let n = self.int(count, "count")?;
        let size = parts(dt, b',').nth(1).ok_or_else(|| self.err(format!("bad datatype '{dt}' (expected handle,size,extent)")))?;
        let size = self.int(size, "datatype size")?;
        if n < 0 || size < 0 {
            return Err(self.err(format!("negative count or datatype size ({n} x {size})")));
        }
        Ok(n as u64 * size as u64)
    }

    /// The communicator triple: its id in the event stream and members (None: the world).
    fn comm(&mut self, s: &str) -> Result<CommRef, TraceError> {
        let t = self.triple(s)?;
        if t.2 > self.ranks {
            return Err(self.err(format!("communicator of {} ranks in a trace of {} rank files (mixed rank counts?)", t.2, self.ranks)));
        }
        if let Some(m) = self.comms[self.rank as usize].get(&t) {
            let next = self.ids.len() as CommId + 1;
            return Ok(Some((*self.ids.entry(t).or_insert(next), m.clone())));
        }
        if t.2 == self.ranks {
            return Ok(None);
        }
        Ok(Some((u64::MAX, Arc::new(Vec::new()))))
    }

    fn triple(&self, s: &str) -> Result<Triple, TraceError> {
        let mut it = parts(s, b',');
        let (Some(h), Some(r), Some(n), None) = (it.next(), it.next(), it.next(), it.next()) else {
            return Err(self.err(format!("bad communicator '{s}' (expected handle,rank,size)")));
        };
        let n = self.uint(n, "communicator size")? as u32;
        let r = self.uint(r, "communicator rank")? as u32;
        if r >= n {
            return Err(self.err(format!("rank {r} in a communicator of {n}")));
        }
        Ok((self.uint(h, "communicator handle")?, r, n))
    }

    /// A peer (rank in `comm`) as a world rank; None for MPI_PROC_NULL / ANY (negative).
    fn peer(&self, s: &str, comm: &CommRef) -> Result<Option<u32>, TraceError> {
        let v = self.int(s, "rank")?;
        if v < 0 {
            return Ok(None);
        }
        match comm {
            None if v as u64 >= self.ranks as u64 => Err(self.err(format!("rank {v} out of range for {} ranks", self.ranks))),
            None => Ok(Some(v as u32)),
            Some((_, m)) if m.is_empty() => Err(self.err("point-to-point on a communicator whose members the trace does not record")),
            Some((_, m)) => m.get(v as usize).copied().map(Some).ok_or_else(|| self.err(format!("rank {v} out of range for its communicator"))),
        }
    }

    fn parse(&mut self, text: &str) -> Result<Option<Call>, TraceError> {
        let mut fields = [""; MAX_FIELDS];
        let mut n = 0;
        for part in parts(text, b':') {
            if n == MAX_FIELDS {
                return Err(self.err(format!("record has more than {MAX_FIELDS} fields")));
            }
            fields[n] = part;
            n += 1;
        }
        let f = &fields[..n];
        let name = f[0];
        let want = |n: usize| -> Result<(), TraceError> {
            if f.len() != n {
                Err(self.err(format!("{name} record has {} fields, expected {n} (truncated or malformed)", f.len())))
            } else {
                Ok(())
            }
        };
        let last = f.len() - 1;
        let event = match name {
            "MPI_Init" | "MPI_Init_thread" => {
                let end = self.time(f[last])?;
                return Ok(Some(Call { start: end, end, line: self.lineno, event: Event::Other }));
            }
            "MPI_Finalize" => {
                want(3)?;
                let start = self.time(f[1])?;
                self.finalized = true;
                return Ok(Some(Call { start, end: start, line: self.lineno, event: Event::Other }));
            }
            "MPI_Send" | "MPI_Rsend" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Isend" | "MPI_Irsend" | "MPI_Issend" | "MPI_Ibsend" => {
                let nb = name.as_bytes()[4] == b'I';
                want(if nb { 10 } else { 9 })?;
                let comm = self.comm(f[7])?;
                let mode = match &name[if nb { 5 } else { 4 }..] {
                    "Rsend" => SendMode::Ready,
                    "Ssend" => SendMode::Synchronous,
                    "Bsend" => SendMode::Buffered,
                    _ => SendMode::Standard,
                };
                match self.peer(f[5], &comm)? {
                    None => Event::Other,
                    Some(dest) => {
                        let req = if nb { Some(self.open_req(f[8])?) } else { None };
                        let tag = self.int(f[6], "tag")?;
                        Event::Send(Send {
                            dest,
                            bytes: self.bytes(f[3], f[4])?,
                            tag: u32::try_from(tag).map_err(|_| self.err(format!("bad tag {tag}")))?,
                            comm: comm.map_or(WORLD, |c| c.0),
                            mode,
                            req,
                        })
                    }
                }
            }
            "MPI_Recv" | "MPI_Irecv" => {
                want(10)?;
                let comm = self.comm(f[7])?;
                let src = self.int(f[5], "source")?;
                if src == -2 {
                    Event::Other // MPI_PROC_NULL
                } else {
                    let source = self.peer(f[5], &comm)?;
                    let tag = self.int(f[6], "tag")?;
                    let req = if name == "MPI_Irecv" { Some(self.open_req(f[8])?) } else { None };
                    Event::Recv(Recv {
                        source,
                        matched: None,
                        bytes: self.bytes(f[3], f[4])?,
                        tag: if tag < 0 { None } else { Some(u32::try_from(tag).map_err(|_| self.err(format!("bad tag {tag}")))?) },
                        matched_tag: None,
                        comm: comm.map_or(WORLD, |c| c.0),
                        req,
                    })
                }
            }
            "MPI_Sendrecv" => {
                want(15)?;
                let comm = self.comm(f[12])?;
                let dest = self.peer(f[5], &comm)?;
                let source = self.peer(f[10], &comm)?;
                let (stag, rtag) = (self.int(f[6], "tag")?, self.int(f[11], "tag")?);
                let cid = comm.as_ref().map_or(WORLD, |c| c.0);
                match dest {
                    None => Event::Other,
                    Some(dest) => Event::SendRecv(
                        Send {
                            dest,
                            bytes: self.bytes(f[3], f[4])?,
                            tag: u32::try_from(stag).map_err(|_| self.err(format!("bad tag {stag}")))?,
                            comm: cid,
                            mode: SendMode::Standard,
                            req: None,
                        },
                        Recv {
                            source,
                            matched: None,
                            bytes: self.bytes(f[8], f[9])?,
                            tag: u32::try_from(rtag).ok(),
                            matched_tag: None,
                            comm: cid,
                            req: None,
                        },
                    ),
                }
            }
            "MPI_Wait" => {
                want(5)?;
                let r = self.uint(f[2], "request")?;
                self.pending.remove(&r);
                Event::Complete(vec![r])
            }
            "MPI_Waitall" => {
                want(6)?;
                let n = self.uint(f[2], "count")?;
                let base = self.uint(f[3], "request array")?;
                Event::Complete(self.close_array(base, n))
            }
            "MPI_Barrier" => {
                want(4)?;
                self.coll(CollKind::Barrier, f[2], None, 0)?
            }
            "MPI_Bcast" => {
                want(8)?;
                let bytes = self.bytes(f[3], f[4])?;
                self.coll(CollKind::Bcast, f[6], Some(f[5]), bytes)?
            }
            "MPI_Reduce" => {
                want(10)?;
                let bytes = self.bytes(f[4], f[5])?;
                self.coll(CollKind::Reduce, f[8], Some(f[7]), bytes)?
            }
            "MPI_Allreduce" | "MPI_Scan" | "MPI_Exscan" => {
                want(9)?;
                let bytes = self.bytes(f[4], f[5])?;
                let kind = match name {
                    "MPI_Allreduce" => CollKind::Allreduce,
                    "MPI_Scan" => CollKind::Scan,
                    _ => CollKind::Exscan,
                };
                self.coll(kind, f[7], None, bytes)?
            }
            "MPI_Allgather" | "MPI_Alltoall" => {
                want(10)?;
                let bytes = self.bytes(f[3], f[4])?;
                let kind = if name == "MPI_Allgather" { CollKind::Allgather } else { CollKind::Alltoall };
                self.coll(kind, f[8], None, bytes)?
            }
            "MPI_Gather" | "MPI_Scatter" => {
                want(11)?;
                // The block: what each rank sends (gather) or receives (scatter).
                let bytes = if name == "MPI_Gather" { self.bytes(f[3], f[4])? } else { self.bytes(f[6], f[7])? };
                let kind = if name == "MPI_Gather" { CollKind::Gather } else { CollKind::Scatter };
                self.coll(kind, f[9], Some(f[8]), bytes)?
            }
            "MPI_Comm_split" => {
                want(7)?;
                if f[5] != "-" {
                    let t = self.triple(f[5])?;
                    if let Some(m) = self.comms[self.rank as usize].get(&t).cloned() {
                        let next = self.ids.len() as CommId + 1;
                        let id = *self.ids.entry(t).or_insert(next);
                        let end = self.time(f[last])?;
                        let start = self.time(f[1])?;
                        return Ok(Some(Call { start, end, line: self.lineno, event: Event::CommCreate { comm: id, members: m.to_vec() } }));
                    }
                }
                Event::Other
            }
            "MPI_Gatherv" | "MPI_Scatterv" | "MPI_Allgatherv" | "MPI_Alltoallv" | "MPI_Reduce_scatter" => {
                Event::Skipped("collective with per-rank counts (liballprof records only the arrays' addresses): left out")
            }
            _ if name.starts_with("MPI_I") && COLLECTIVES.contains(&&name[5..]) => {
                Event::Skipped("nonblocking collective: not read from liballprof traces, left out")
            }
            _ if name.starts_with("MPI_") => Event::Other,
            _ => return Err(self.err(format!("not an MPI call record: '{}'", text.chars().take(40).collect::<String>()))),
        };
        if f.len() < 3 {
            return Err(self.err(format!("{name} record has {} fields (truncated or malformed)", f.len())));
        }
        let start = self.time(f[1])?;
        let end = self.time(f[last])?;
        if end < start {
            return Err(self.err(format!("{name} exits ({}) before it enters ({})", f[last], f[1])));
        }
        Ok(Some(Call { start, end, line: self.lineno, event }))
    }

    fn open_req(&mut self, s: &str) -> Result<u64, TraceError> {
        let r = self.uint(s, "request")?;
        self.pending.insert(r);
        Ok(r)
    }

    /// The requests of an array at `base` of `n` handles: the spacing (4 or 8 bytes) at which the
    /// elements are open requests.
    fn close_array(&mut self, base: u64, n: u64) -> Vec<u64> {
        let found = |stride: u64, pending: &Requests| (0..n).filter(|i| pending.contains(&(base + i * stride))).count();
        let stride = if found(8, &self.pending) > found(4, &self.pending) { 8 } else { 4 };
        let reqs: Vec<u64> = (0..n).map(|i| base + i * stride).collect();
        for r in &reqs {
            self.pending.remove(r);
        }
        reqs
    }

    fn coll(&mut self, kind: CollKind, comm: &str, root: Option<&str>, bytes: u64) -> Result<Event, TraceError> {
        let c = self.comm(comm)?;
        let id = match c {
            None => WORLD,
            Some((_, m)) if m.is_empty() => {
                return Ok(Event::Skipped("collective on a communicator the trace does not describe: left out (as Schedgen does)"))
            }
            Some((id, _)) => id,
        };
        let root = match root {
            Some(r) => Some(u32::try_from(self.int(r, "root")?).map_err(|_| self.err(format!("bad root '{r}'")))?),
            None => None,
        };
        Ok(Event::Collective(Collective { kind, comm: id, root, bytes, send_counts: Vec::new(), recv_counts: Vec::new(), req: None }))
    }
}

impl Iterator for RankReader {
    type Item = Result<Call, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            self.line.clear();
            self.lineno += 1;
            let n = match self.input.read_until(b'\n', &mut self.line) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.err(format!("cannot read: {e}"))));
                }
            };
            if n == 0 {
                self.done = true;
                if !self.finalized {
                    self.lineno -= 1;
                    return Some(Err(self.err("the trace ends before MPI_Finalize (truncated?)")));
                }
                return None;
            }
            if self.line.last() != Some(&b'\n') {
                self.done = true;
                return Some(Err(self.err("the last line is cut off (truncated trace)")));
            }
            // The buffer is lent to the parser and given back, so no line is copied.
            let buf = std::mem::take(&mut self.line);
            let parsed = match std::str::from_utf8(&buf) {
                Ok(t) => {
                    let text = t.trim_end();
                    if text.is_empty() || text.starts_with('#') {
                        Ok(None)
                    } else if self.finalized {
                        Err(self.err("a call after MPI_Finalize"))
                    } else {
                        self.parse(text)
                    }
                }
                Err(_) => Err(self.err("not text")),
            };
            self.line = buf;
            match parsed {
                Ok(Some(call)) => return Some(Ok(call)),
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Reads every rank's `MPI_Comm_split` lines and computes each new communicator's members: the
/// ranks of the parent that gave the same color, ordered by (key, rank in the parent). Splits of
/// one parent pair up across ranks in call order.
fn resolve_splits(files: &[PathBuf]) -> Result<Vec<CommMap>, TraceError> {
    let ranks = files.len() as u32;
    let mut out = vec![HashMap::new(); files.len()];
    // (parent is world?, ordinal of the split on this rank) -> per rank (color, key, new triple).
    let mut splits: HashMap<u64, Vec<Split>> = HashMap::new();
    for (rank, path) in files.iter().enumerate() {
        let file = File::open(path).map_err(|e| TraceError::new(path.display().to_string(), 0, format!("cannot read: {e}")))?;
        let mut ordinal = 0u64;
        let mut input = BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        let mut i = 0usize;
        loop {
            buf.clear();
            i += 1;
            // Only the rare split lines are decoded; a read error surfaces in the conversion pass.
            if input.read_until(b'\n', &mut buf).unwrap_or(0) == 0 {
                break;
            }
            if !buf.starts_with(b"MPI_Comm_split:") {
                continue;
            }
            let line = String::from_utf8_lossy(&buf).into_owned();
            let err = |m: String| TraceError::new(path.display().to_string(), i as u64, m);
            let f: Vec<&str> = line.trim_end().split(':').collect();
            if f.len() != 7 {
                return Err(err(format!("MPI_Comm_split record has {} fields, expected 7", f.len())));
            }
            // Only splits of the world into communicators given as triples are understood; the
            // collectives on others are left out, with a warning, when they come.
            let parent: Vec<&str> = f[2].split(',').collect();
            if parent.len() != 3 || parent[2].parse::<u32>().ok() != Some(ranks) || (f[5] != "-" && f[5].split(',').count() != 3) {
                continue;
            }
            let num = |s: &str| s.trim().parse::<i64>().map_err(|_| err(format!("bad number '{s}'")));
            let (color, key) = (num(f[3])?, num(f[4])?);
            let new = if f[5] == "-" {
                None
            } else {
                let t: Vec<&str> = f[5].split(',').collect();
                if t.len() != 3 {
                    return Err(err(format!("bad communicator '{}'", f[5])));
                }
                Some((num(t[0])? as u64, num(t[1])? as u32, num(t[2])? as u32))
            };
            splits.entry(ordinal).or_default().push((rank as u32, color, key, new));
            ordinal += 1;
        }
    }
    for (_, mut members) in splits {
        members.sort_by_key(|&(rank, color, key, _)| (color, key, rank));
        for group in members.chunk_by(|a, b| a.1 == b.1) {
            if group[0].3.is_none() {
                continue;
            }
            let list: Arc<Vec<u32>> = Arc::new(group.iter().map(|g| g.0).collect());
            for (i, &(rank, _, _, new)) in group.iter().enumerate() {
                if let Some(t) = new {
                    if t.1 as usize != i || t.2 as usize != group.len() {
                        return Err(TraceError::new(
                            files[rank as usize].display().to_string(),
                            0,
                            format!("MPI_Comm_split: the trace says rank {} of {} in the new communicator, the colors and keys of all ranks say {i} of {}", t.1, t.2, group.len()),
                        ));
                    }
                    out[rank as usize].insert(t, list.clone());
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(lines: &str) -> Vec<Result<Call, TraceError>> {
        let dir = std::env::temp_dir().join(format!("contend-liballprof-{}-{}", std::process::id(), lines.len()));
        std::fs::create_dir_all(&dir).unwrap();
        for r in 0..2 {
            let text = format!("# collprof 0.9 output file\nMPI_Init:-:0:0:1.5\n{lines}MPI_Finalize:99:-\n").replace("RANK", &r.to_string());
            std::fs::write(dir.join(format!("t-{r}.dat")), text).unwrap();
        }
        let set = Liballprof::open(&dir).unwrap();
        let out = set.open(0).unwrap().collect();
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn fields_times_and_requests() {
        let got = calls(
            "MPI_Sendrecv:2.000123:0:3:1,8,8:1:4:0:2:1,4,4:1:5:0,RANK,2:0:3.5\n\
             MPI_Irecv:4:0:1:1,8,8:-1:-1:0,RANK,2:200:4\n\
             MPI_Irecv:4:0:1:1,8,8:1:6:0,RANK,2:204:4\n\
             MPI_Waitall:5:2:200:0:6\n",
        );
        let events: Vec<Event> = got.iter().map(|c| c.as_ref().unwrap().event.clone()).collect();
        let first = got[1].as_ref().unwrap();
        assert_eq!((first.start, first.end, first.line), (2000, 3500, 3), "µs to ns exactly, line numbers");
        let Event::SendRecv(s, r) = &events[1] else { panic!("{:?}", events[1]) };
        assert_eq!((s.dest, s.bytes, s.tag, r.source, r.bytes, r.tag), (1, 24, 4, Some(1), 8, Some(5)));
        let Event::Recv(any) = &events[2] else { panic!() };
        assert_eq!((any.source, any.tag, any.req), (None, None, Some(200)));
        // MPICH's 4-byte request handles: the array at 200 holds the requests at 200 and 204
        assert_eq!(events[4], Event::Complete(vec![200, 204]));
        assert_eq!(events.len(), 6);
    }

    #[test]
    fn exact_microseconds() {
        let got = calls("MPI_Barrier:1237759886287766.123456:0,RANK,2:1237759886287767.1:\n");
        let e = got[1].as_ref().unwrap_err();
        assert!(e.msg.contains("MPI_Barrier record has 5 fields, expected 4"), "{e}");
        let got = calls("MPI_Barrier:1237759886287766.123456:0,RANK,2:1237759886287767.1\n");
        let c = got[1].as_ref().unwrap();
        assert_eq!((c.start, c.end), (1237759886287766123, 1237759886287767100));
    }
}
