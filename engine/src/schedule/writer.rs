//! GOAL text writer: [`GoalSink`] writes a schedule operation by operation (the trace converter
//! streams through it), and [`write_goal`] writes any [`Program`] (a parsed file or a generated
//! collective) through it.
//!
//! Every operation gets the label `l<index>` (its index in the rank's program order). Dependencies
//! may only name operations written before them.

use std::io::{self, Write};

use super::{Op, OpKind, Program, ANY};

fn peer_text(v: u32) -> String {
    if v == ANY {
        "-1".to_string()
    } else {
        v.to_string()
    }
}

/// Streams GOAL text: a header, then rank blocks in order, each a sequence of operations and
/// dependencies between operations already written.
pub struct GoalSink<W: Write> {
    out: W,
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
        Ok(GoalSink { out, cpus: num_cpus > 1, nics: num_nics > 1, next: 0, ops: 0 })
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
        let out = &mut self.out;
        match op.kind {
            OpKind::Send | OpKind::Recv => {
                let (verb, dir) = if op.kind == OpKind::Send { ("send", "to") } else { ("recv", "from") };
                write!(out, "l{i}: {verb} {}b {dir} {} tag {}", op.size, peer_text(op.peer), peer_text(op.tag))?;
                if self.cpus {
                    write!(out, " cpu {}", op.cpu)?;
                }
                if self.nics {
                    write!(out, " nic {}", op.nic)?;
                }
            }
            OpKind::Calc => {
                write!(out, "l{i}: calc {}", op.size)?;
                if op.mem() > 0 {
                    write!(out, " mem {}", op.mem())?;
                }
                if self.cpus {
                    write!(out, " cpu {}", op.cpu)?;
                }
            }
        }
        writeln!(out)?;
        self.next += 1;
        self.ops += 1;
        Ok(i)
    }

    /// `l<after> requires l<before>`: `after` starts once `before` has completed.
    pub fn requires(&mut self, after: u32, before: u32) -> io::Result<()> {
        writeln!(self.out, "l{after} requires l{before}")
    }

    /// `l<after> irequires l<before>`: `after` starts once `before` has started.
    pub fn irequires(&mut self, after: u32, before: u32) -> io::Result<()> {
        writeln!(self.out, "l{after} irequires l{before}")
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
