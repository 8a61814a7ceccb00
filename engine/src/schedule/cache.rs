//! A binary cache of parsed GOAL schedules: a large text file is parsed once, later runs load its
//! [`GoalProgram`] columns as they are (no tokenizing, no label tables).
//!
//! Soundness (a stale entry is never used):
//! - Key: one entry per source path, named by a hash of its canonical path; the entry holds that path
//!   and is used only if it matches. The entry also holds the source's identity: device, inode, size,
//!   modification and status-change times to the nanosecond, and a hash of its first and last 64 KiB.
//!   Any write to the file moves its ctime, which no user can set back; replacing it changes its inode.
//! - Racy writes: file times have a coarse clock (a few ms), so a file rewritten within one tick of
//!   being cached would keep its times. An entry is written only for a source whose mtime and ctime are
//!   at least [`SETTLED`] older than the moment its parse began, and unchanged after it; a later
//!   write then necessarily gets a later time.
//! - The reader's version: the entry holds a hash of this module's, the reader's and the store's
//!   source text, so a build whose reader or layout differs ignores older entries.
//! - Writes are atomic (temporary file in the directory, fsync, rename); an entry that does not read
//!   back whole and consistent (wrong length, impossible offsets) is ignored and rewritten.
//! - An unwritable or missing cache directory means no cache: the schedule is parsed as without one.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::goal::{read_goal_file, GoalError};
use super::store::GoalProgram;
use super::OpKind;

const MAGIC: &[u8; 16] = b"contend-goal-c01";
/// Sources smaller than this are parsed every time: it takes milliseconds.
pub const MIN_SOURCE_BYTES: u64 = 4 << 20;
/// How long a source must have been left alone before it is cached (see the module notes).
pub const SETTLED: Duration = Duration::from_secs(2);
const SAMPLE: u64 = 64 << 10;

const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x100000001b3);
        i += 1;
    }
    h
}
const FNV0: u64 = 0xcbf29ce484222325;

/// Changes whenever the reader, the store or this format changes.
const BUILD_KEY: u64 = fnv(
    fnv(fnv(fnv(FNV0, include_bytes!("cache.rs")), include_bytes!("goal.rs")), include_bytes!("store.rs")),
    include_bytes!("mod.rs"),
);

/// What identifies one version of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    sample: u64,
}

impl Identity {
    fn of(path: &Path) -> std::io::Result<Identity> {
        let mut file = File::open(path)?;
        let m = file.metadata()?;
        let size = m.len();
        let mut sample = FNV0;
        let mut buf = vec![0u8; SAMPLE.min(size) as usize];
        file.read_exact(&mut buf)?;
        sample = fnv(sample, &buf);
        if size > SAMPLE {
            file.seek(SeekFrom::Start(size - SAMPLE.min(size - SAMPLE)))?;
            buf.resize(SAMPLE.min(size - SAMPLE) as usize, 0);
            file.read_exact(&mut buf)?;
            sample = fnv(sample, &buf);
        }
        Ok(Identity {
            dev: m.dev(),
            ino: m.ino(),
            size,
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            sample,
        })
    }

    fn words(&self) -> [u64; 9] {
        let t = |v: i64| v as u64;
        [self.dev, self.ino, self.size, t(self.mtime.0), t(self.mtime.1), t(self.ctime.0), t(self.ctime.1), self.sample, BUILD_KEY]
    }

    /// True if both file times lie at least [`SETTLED`] before `began`.
    fn settled(&self, began: SystemTime) -> bool {
        let at = |(s, ns): (i64, i64)| u64::try_from(s).ok().map(|s| UNIX_EPOCH + Duration::new(s, ns as u32));
        let limit = began.checked_sub(SETTLED);
        match (at(self.mtime), at(self.ctime), limit) {
            (Some(m), Some(c), Some(limit)) => m <= limit && c <= limit,
            _ => false,
        }
    }
}

/// The entry for `source` in `dir`.
pub fn entry_path(dir: &Path, source: &Path) -> Option<PathBuf> {
    let canonical = fs::canonicalize(source).ok()?;
    let key = fnv(FNV0, canonical.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key:016x}.goalc")))
}

/// Reads a GOAL file through the cache in `dir` (None: no cache). Parses the text when there is no
/// valid entry, then writes one if the source qualifies. Cache failures are never errors.
pub fn read_goal_cached(path: &Path, dir: Option<&Path>) -> Result<GoalProgram, GoalError> {
    let Some(dir) = dir else { return read_goal_file(path) };
    let began = SystemTime::now();
    let (Some(entry), Ok(before)) = (entry_path(dir, path), Identity::of(path)) else { return read_goal_file(path) };
    if before.size < MIN_SOURCE_BYTES {
        return read_goal_file(path);
    }
    let canonical = fs::canonicalize(path).map(|p| p.into_os_string().into_encoded_bytes()).unwrap_or_default();
    if let Some(prog) = load(&entry, &canonical, &before) {
        return Ok(prog);
    }
    let prog = read_goal_file(path)?;
    if before.settled(began) && Identity::of(path).is_ok_and(|after| after == before) {
        let _ = store(dir, &entry, &canonical, &before, &prog);
    }
    Ok(prog)
}

fn load(entry: &Path, canonical: &[u8], id: &Identity) -> Option<GoalProgram> {
    let file = File::open(entry).ok()?;
    let total = file.metadata().ok()?.len();
    let mut r = Columns { input: BufReader::with_capacity(1 << 20, file), left: total };
    let mut magic = [0u8; 16];
    r.bytes(&mut magic)?;
    if &magic != MAGIC || r.column::<u64>(9)? != id.words() {
        return None;
    }
    let path_len = r.column::<u64>(1)?[0] as usize;
    if path_len != canonical.len() {
        return None;
    }
    let mut path = vec![0u8; path_len];
    r.bytes(&mut path)?;
    if path != canonical {
        return None;
    }
    let h = r.column::<u64>(6)?;
    let (ranks, ops, done, start) = (h[0] as usize, h[3] as usize, h[4] as usize, h[5] as usize);
    let mut p = GoalProgram::new(u32::try_from(h[0]).ok()?);
    (p.num_cpus, p.num_nics) = (u32::try_from(h[1]).ok()?, u32::try_from(h[2]).ok()?);
    p.rank_start = r.column(ranks.checked_add(1)?)?;
    let mut kinds = vec![0u8; ops];
    r.bytes(&mut kinds)?;
    p.kind = kinds
        .into_iter()
        .map(|k| match k {
            0 => Some(OpKind::Send),
            1 => Some(OpKind::Recv),
            2 => Some(OpKind::Calc),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    p.cpu = vec![0u8; ops];
    r.bytes(&mut p.cpu)?;
    p.nic = vec![0u8; ops];
    r.bytes(&mut p.nic)?;
    p.peer = r.column(ops)?;
    p.tag = r.column(ops)?;
    p.size = r.column(ops)?;
    p.line = r.column(ops)?;
    p.done_start = r.column(ops + 1)?;
    p.done_edges = r.column(done)?;
    p.start_start = r.column(ops + 1)?;
    p.start_edges = r.column(start)?;
    (r.left == 0 && consistent(&p)).then(|| count_dependencies(p))
}

/// Each op's number of dependencies, from the two dependency lists (the entry does not hold it, so it
/// always agrees with them).
fn count_dependencies(mut p: GoalProgram) -> GoalProgram {
    p.deps = vec![0; p.kind.len()];
    for r in 0..p.num_ranks as usize {
        let (first, last) = (p.rank_start[r] as usize, p.rank_start[r + 1] as usize);
        for (starts, edges) in [(&p.done_start, &p.done_edges), (&p.start_start, &p.start_edges)] {
            for &e in &edges[starts[first] as usize..starts[last] as usize] {
                p.deps[first + e as usize] += 1;
            }
        }
    }
    p
}

/// The invariants the simulator relies on, so that a damaged entry cannot reach it.
fn consistent(p: &GoalProgram) -> bool {
    let ops = p.kind.len();
    let monotone = |v: &[u32], end: usize| v.first() == Some(&0) && v.windows(2).all(|w| w[0] <= w[1]) && v.last() == Some(&(end as u32));
    if p.rank_start.len() != p.num_ranks as usize + 1
        || !monotone(&p.rank_start, ops)
        || !monotone(&p.done_start, p.done_edges.len())
        || !monotone(&p.start_start, p.start_edges.len())
    {
        return false;
    }
    let (cpus, nics) = (p.num_cpus, p.num_nics);
    if p.cpu.iter().any(|&c| c as u32 >= cpus) || p.nic.iter().any(|&n| n as u32 >= nics) {
        return false;
    }
    // Edges name ops of their own rank; peers are ranks (or any).
    for r in 0..p.num_ranks as usize {
        let (first, last) = (p.rank_start[r] as usize, p.rank_start[r + 1] as usize);
        let count = (last - first) as u32;
        for g in first..last {
            let edges = |start: &[u32], edges: &[u32]| edges[start[g] as usize..start[g + 1] as usize].iter().all(|&e| e < count);
            if !edges(&p.done_start, &p.done_edges) || !edges(&p.start_start, &p.start_edges) {
                return false;
            }
            if p.kind[g] != OpKind::Calc && p.peer[g] >= p.num_ranks && p.peer[g] != super::ANY {
                return false;
            }
        }
    }
    true
}

struct Columns {
    input: BufReader<File>,
    left: u64,
}

impl Columns {
    fn bytes(&mut self, out: &mut [u8]) -> Option<()> {
        self.left = self.left.checked_sub(out.len() as u64)?;
        self.input.read_exact(out).ok()
    }

    fn column<T: Plain>(&mut self, n: usize) -> Option<Vec<T>> {
        let bytes = n.checked_mul(std::mem::size_of::<T>())?;
        if bytes as u64 > self.left {
            return None;
        }
        let mut out = vec![T::default(); n];
        // SAFETY: T is a plain integer (every bit pattern valid, no padding), the slice covers
        // exactly the vector's initialized elements, and entries are written little-endian (below).
        let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, bytes) };
        self.bytes(raw)?;
        Some(out)
    }
}

/// Integers whose in-memory form is the entry's on-disk form: the entry is little-endian.
trait Plain: Copy + Default {}
#[cfg(target_endian = "little")]
impl Plain for u32 {}
#[cfg(target_endian = "little")]
impl Plain for u64 {}

fn store(dir: &Path, entry: &Path, canonical: &[u8], id: &Identity, p: &GoalProgram) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{}.{}.tmp", entry.file_name().unwrap_or_default().to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&temporary)?);
        w.write_all(MAGIC)?;
        let words = |w: &mut BufWriter<File>, v: &[u64]| v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()));
        let halves = |w: &mut BufWriter<File>, v: &[u32]| v.iter().try_for_each(|x| w.write_all(&x.to_le_bytes()));
        words(&mut w, &id.words())?;
        words(&mut w, &[canonical.len() as u64])?;
        w.write_all(canonical)?;
        let ops = p.kind.len() as u64;
        words(&mut w, &[p.num_ranks as u64, p.num_cpus as u64, p.num_nics as u64, ops, p.done_edges.len() as u64, p.start_edges.len() as u64])?;
        halves(&mut w, &p.rank_start)?;
        w.write_all(&p.kind.iter().map(|&k| k as u8).collect::<Vec<u8>>())?;
        w.write_all(&p.cpu)?;
        w.write_all(&p.nic)?;
        for column in [&p.peer, &p.tag] {
            halves(&mut w, column)?;
        }
        words(&mut w, &p.size)?;
        for column in [&p.line, &p.done_start, &p.done_edges, &p.start_start, &p.start_edges] {
            halves(&mut w, column)?;
        }
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&temporary, entry)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}
