//! GOAL text writer: [`GoalSink`] writes a schedule operation by operation (the trace converter
//! streams through it), and [`write_goal`] writes any [`Program`] (a parsed file or a generated
//! collective) through it.
//!
//! Every operation gets the label `l<index>` (its index in the rank's program order). Dependencies
//! may only name operations written before them.

use std::io::{self, Write};

use super::{Op, OpKind, Program, ANY};

/// Appends the decimal digits of `v`.
fn push_u64(line: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    line.extend_from_slice(&digits[i..]);
}

/// A peer or tag: `-1` for the wildcard.
fn push_peer(line: &mut Vec<u8>, v: u32) {
    if v == ANY {
        line.extend_from_slice(b"-1");
    } else {
        push_u64(line, v as u64);
    }
}

/// Streams GOAL text: a header, then rank blocks in order, each a sequence of operations and
/// dependencies between operations already written.
pub struct GoalSink<W: Write> {
    out: W,
    /// The line being written (numbers are formatted by hand: this is the converter's hot path).
    line: Vec<u8>,
    cpus: bool,
    nics: bool,
    next: u32,
    ops: u64,
}

impl<W: Write> GoalSink<W> {
    /// Writes the header. `cpu` and `nic` fields are written only when the schedule has more than
    /// one of each.
    pub fn new(mut out: W, num_ranks: u32, num_cpus: u32, num_nics: u32) -> io::Result<Self> {
        writeln!(out, "num_ranks {num_ranks}")?;
        Ok(GoalSink { out, line: Vec::with_capacity(128), cpus: num_cpus > 1, nics: num_nics > 1, next: 0, ops: 0 })
    }

    pub fn begin_rank(&mut self, rank: u32) -> io::Result<()> {
        self.next = 0;
        writeln!(self.out, "\nrank {rank} {{")
    }

    pub fn end_rank(&mut self) -> io::Result<()> {
        writeln!(self.out, "}}")
    }

    /// Writes one operation of the current rank and returns its index (label `l<index>`).
    pub fn op(&mut self, op: &Op) -> io::Result<u32> {
        let i = self.next;
        let l = &mut self.line;
        l.clear();
        l.push(b'l');
        push_u64(l, i as u64);
        match op.kind {
            OpKind::Send | OpKind::Recv => {
                let (verb, dir): (&[u8], &[u8]) = if op.kind == OpKind::Send { (b": send ", b"b to ") } else { (b": recv ", b"b from ") };
                l.extend_from_slice(verb);
                push_u64(l, op.size);
                l.extend_from_slice(dir);
                push_peer(l, op.peer);
                l.extend_from_slice(b" tag ");
                push_peer(l, op.tag);
                if self.cpus {
                    l.extend_from_slice(b" cpu ");
                    push_u64(l, op.cpu as u64);
                }
                if self.nics {
                    l.extend_from_slice(b" nic ");
                    push_u64(l, op.nic as u64);
                }
            }
            OpKind::Calc => {
                l.extend_from_slice(b": calc ");
                push_u64(l, op.size);
                if op.mem() > 0 {
                    l.extend_from_slice(b" mem ");
                    push_u64(l, op.mem());
                }
                if self.cpus {
                    l.extend_from_slice(b" cpu ");
                    push_u64(l, op.cpu as u64);
                }
            }
        }
        l.push(b'\n');
        self.out.write_all(l)?;
        self.next += 1;
        self.ops += 1;
        Ok(i)
    }

    fn dep(&mut self, after: u32, verb: &[u8], before: u32) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.push(b'l');
        push_u64(l, after as u64);
        l.extend_from_slice(verb);
        push_u64(l, before as u64);
        l.push(b'\n');
        self.out.write_all(l)
    }

    /// `l<after> requires l<before>`: `after` starts once `before` has completed.
    pub fn requires(&mut self, after: u32, before: u32) -> io::Result<()> {
        self.dep(after, b" requires l", before)
    }

    /// `l<after> irequires l<before>`: `after` starts once `before` has started.
    pub fn irequires(&mut self, after: u32, before: u32) -> io::Result<()> {
        self.dep(after, b" irequires l", before)
    }

    /// The index the next operation of the current rank will get.
    pub fn next_index(&self) -> u32 {
        self.next
    }

    /// Operations written so far, all ranks.
    pub fn ops_written(&self) -> u64 {
        self.ops
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes `prog` as GOAL text. Large outputs should be given a buffered writer. Dependencies come
/// after a rank's operations, grouped per dependency in the program's own order, so reading the
/// output back yields the same program (same dependents in the same order, hence the same
/// simulated times).
pub fn write_goal<P: Program, W: Write + ?Sized>(prog: &P, out: &mut W) -> io::Result<()> {
    let mut sink = GoalSink::new(out, prog.num_ranks(), prog.num_cpus(), prog.num_nics())?;
    let mut deps = Vec::new();
    for rank in 0..prog.num_ranks() {
        sink.begin_rank(rank)?;
        let n = prog.num_ops(rank);
        for i in 0..n {
            sink.op(&prog.op(rank, i))?;
        }
        for i in 0..n {
            deps.clear();
            prog.after_done(rank, i, &mut deps);
            for &a in &deps {
                sink.requires(a, i)?;
            }
            deps.clear();
            prog.after_start(rank, i, &mut deps);
            for &a in &deps {
                sink.irequires(a, i)?;
            }
        }
        sink.end_rank()?;
    }
    Ok(())
}

/// Runs `write` on a buffered writer to `path` (gzip-compressed when the name ends in `.gz`). The
/// text goes to a temporary file beside `path` that is renamed into place only when `write`
/// succeeded, so a failed or interrupted write leaves nothing half-written.
pub fn write_file_atomically<T, E: From<io::Error>>(
    path: &std::path::Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, E>,
) -> Result<T, E> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let buffered = io::BufWriter::with_capacity(1 << 20, file);
        let value = if path.extension().is_some_and(|e| e == "gz") {
            let mut gz = flate2::write::GzEncoder::new(buffered, flate2::Compression::fast());
            let value = write(&mut gz)?;
            gz.finish()?.flush()?;
            value
        } else {
            let mut out = buffered;
            let value = write(&mut out)?;
            out.flush()?;
            value
        };
        std::fs::rename(&tmp, path)?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `prog` to `path` (gzip when the name ends in `.gz`), atomically.
pub fn write_goal_file<P: Program>(prog: &P, path: &std::path::Path) -> io::Result<()> {
    write_file_atomically(path, |out| write_goal(prog, out))
}
