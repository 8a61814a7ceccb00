//! GOAL text writer for any [`Program`]: a parsed file or a generated collective.
//!
//! Every operation gets the label `l<index>`; after a rank's operations come its dependencies,
//! grouped per dependency in the program's own order, so reading the output back yields the same
//! program (same dependents in the same order, hence the same simulated times).

use std::io::{self, Write};

use super::{OpKind, Program, ANY};

fn peer_text(v: u32) -> String {
    if v == ANY {
        "-1".to_string()
    } else {
        v.to_string()
    }
}

/// Writes `prog` as GOAL text. Large outputs should be given a buffered writer.
pub fn write_goal<P: Program, W: Write>(prog: &P, out: &mut W) -> io::Result<()> {
    let cpus = prog.num_cpus() > 1;
    let nics = prog.num_nics() > 1;
    writeln!(out, "num_ranks {}", prog.num_ranks())?;
    let mut deps = Vec::new();
    for rank in 0..prog.num_ranks() {
        writeln!(out, "\nrank {rank} {{")?;
        let n = prog.num_ops(rank);
        for i in 0..n {
            let op = prog.op(rank, i);
            match op.kind {
                OpKind::Send | OpKind::Recv => {
                    let (verb, dir) = if op.kind == OpKind::Send { ("send", "to") } else { ("recv", "from") };
                    write!(out, "l{i}: {verb} {}b {dir} {} tag {}", op.size, peer_text(op.peer), peer_text(op.tag))?;
                    if cpus {
                        write!(out, " cpu {}", op.cpu)?;
                    }
                    if nics {
                        write!(out, " nic {}", op.nic)?;
                    }
                }
                OpKind::Calc => {
                    write!(out, "l{i}: calc {}", op.size)?;
                    if op.mem() > 0 {
                        write!(out, " mem {}", op.mem())?;
                    }
                    if cpus {
                        write!(out, " cpu {}", op.cpu)?;
                    }
                }
            }
            writeln!(out)?;
        }
        for i in 0..n {
            deps.clear();
            prog.after_done(rank, i, &mut deps);
            for a in &deps {
                writeln!(out, "l{a} requires l{i}")?;
            }
            deps.clear();
            prog.after_start(rank, i, &mut deps);
            for a in &deps {
                writeln!(out, "l{a} irequires l{i}")?;
            }
        }
        writeln!(out, "}}")?;
    }
    Ok(())
}

/// Writes `prog` to `path` (gzip-compressed when the name ends in `.gz`). The text goes to a
/// temporary file beside `path` that is renamed into place only when complete, so a failed or
/// interrupted write leaves nothing half-written.
pub fn write_goal_file<P: Program>(prog: &P, path: &std::path::Path) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let buffered = io::BufWriter::with_capacity(1 << 20, file);
        if path.extension().is_some_and(|e| e == "gz") {
            let mut gz = flate2::write::GzEncoder::new(buffered, flate2::Compression::fast());
            write_goal(prog, &mut gz)?;
            gz.finish()?.flush()?;
        } else {
            let mut out = buffered;
            write_goal(prog, &mut out)?;
            out.flush()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
