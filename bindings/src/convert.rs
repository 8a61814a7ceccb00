//! `contend goal convert`: traced MPI runs to GOAL (engine/src/replay). Arguments in, summary out.

use std::path::Path;

use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::replay::algorithms::{Algorithms, Preset};
use contend_engine::replay::emit::{convert, ConvertError, Options};
use contend_engine::replay::ctrace::{self, CtraceSet, MemoryRank};
use contend_engine::replay::extrapolate::Extrapolated;
use contend_engine::replay::liballprof::{self, Liballprof};
use contend_engine::replay::{TraceError, TraceSet};
use contend_engine::schedule::writer::write_file_atomically;

/// The format of the trace at `path` (`liballprof`, `ctrace`: a `contend trace` directory), or None
/// when no reader takes it. Readers of other formats join here and in `open_traces`.
#[pyfunction]
fn trace_format(path: &str) -> Option<&'static str> {
    let path = Path::new(path);
    if liballprof::detect(path) {
        Some("liballprof")
    } else if ctrace::is_trace_dir(path) {
        Some("ctrace")
    } else {
        None
    }
}

/// The reader of each format `trace_format` names.
fn open_traces(format: &str, path: &Path) -> PyResult<Box<dyn TraceSet + Send + Sync>> {
    let located = |e: TraceError| PyValueError::new_err(e.to_string());
    match format {
        "liballprof" => Ok(Box::new(Liballprof::open(path).map_err(located)?)),
        "ctrace" => Ok(Box::new(CtraceSet::open_dir(path).map_err(located)?)),
        _ => Err(PyValueError::new_err(format!("unknown trace format '{format}'"))),
    }
}

/// Format `records`: per rank (name, records, communicator table words) in the ctrace record layout,
/// built by another reader (python/contend/trace/otf2_import.py `otf2_calls`), read by the ctrace
/// reader: one owner of what the records mean.
fn open_records(ranks: Vec<(String, Vec<u8>, Vec<i32>)>) -> PyResult<Box<dyn TraceSet + Send + Sync>> {
    let ranks = ranks
        .into_iter()
        .map(|(name, records, comm_words)| MemoryRank { name, records: std::sync::Arc::new(records), comm_words })
        .collect();
    Ok(Box::new(CtraceSet::from_memory(ranks).map_err(|e| PyValueError::new_err(e.to_string()))?))
}

/// Converts the trace `input` (of `format`, as `trace_format` says: a path; or `records`, see
/// `open_records`) into GOAL at `output` (gzip when it ends in .gz).
/// Trace problems raise ValueError("file:line: problem"); `progress(rank, ranks, records)` is called
/// now and then; `ranks` extrapolates the trace to that many ranks; `in_place` false makes every
/// one-sided operation a message. Returns {ranks, records, ops, in_place, warnings}.
#[pyfunction]
#[pyo3(signature = (input, output, format="liballprof", cpu_scale=1.0, p2p=true, collectives=true, nbc_prepost=0, window=None,
                    copy_per_byte=0.0, collective_entry=0, preset="mpich", algorithms=Vec::new(), progress=None, ranks=None, in_place=true))]
#[allow(clippy::too_many_arguments)]
fn convert_trace(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    output: &str,
    format: &str,
    cpu_scale: f64,
    p2p: bool,
    collectives: bool,
    nbc_prepost: u64,
    window: Option<(u64, u64)>,
    copy_per_byte: f64,
    collective_entry: u64,
    preset: &str,
    algorithms: Vec<String>,
    progress: Option<Py<PyAny>>,
    ranks: Option<u64>,
    in_place: bool,
) -> PyResult<Py<PyDict>> {
    let mut algos = Algorithms::new(match preset {
        "mpich" => Preset::Mpich,
        "schedgen" => Preset::Schedgen,
        "mpich-shm" => Preset::MpichShm,
        _ => return Err(PyValueError::new_err(format!("unknown algorithm preset '{preset}' (mpich, mpich-shm or schedgen)"))),
    });
    for spec in &algorithms {
        algos.choose(spec).map_err(|e| PyValueError::new_err(format!("algorithm {e}")))?;
    }
    for (what, x) in [("cpu scale", cpu_scale), ("copy time per byte", copy_per_byte)] {
        if !(x >= 0.0 && x.is_finite()) {
            return Err(PyValueError::new_err(format!("{what}: must be a finite number >= 0, not {x}")));
        }
    }
    let opts = Options { cpu_scale, p2p, collectives, nbc_prepost_ns: nbc_prepost, window, copy_ns_per_byte: copy_per_byte, collective_entry_ns: collective_entry, algorithms: algos, in_place };
    let traces = if format == "records" {
        open_records(input.extract()?)?
    } else {
        let path: String = input.extract()?;
        py.detach(|| open_traces(format, Path::new(&path)))?
    };
    // `ranks`: the trace extrapolated to that many ranks (engine/src/replay/extrapolate.rs).
    let traces: Box<dyn TraceSet + Send + Sync> = match ranks {
        Some(n) => Box::new(Extrapolated::new(traces, n).map_err(PyValueError::new_err)?),
        None => traces,
    };
    let ranks = traces.num_ranks();
    let mut failure: Option<PyErr> = None;
    let result = py.detach(|| {
        write_file_atomically(Path::new(output), |out| {
            convert(traces.as_ref(), &opts, out, &mut |rank, records| {
                Python::attach(|py| {
                    let outcome = py.check_signals().and_then(|_| match &progress {
                        Some(cb) => cb.call1(py, (rank + 1, ranks, records)).map(|_| ()),
                        None => Ok(()),
                    });
                    outcome.map_err(|e| failure = Some(e)).is_ok()
                })
            })
        })
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let summary = result.map_err(|e| match e {
        ConvertError::Trace(t) => PyValueError::new_err(t.to_string()),
        ConvertError::Io(io) => PyOSError::new_err(format!("{output}: cannot write: {io}")),
        ConvertError::Stopped => PyKeyboardInterrupt::new_err("stopped"),
    })?;
    let d = PyDict::new(py);
    d.set_item("ranks", summary.ranks)?;
    d.set_item("records", summary.records)?;
    d.set_item("ops", summary.ops)?;
    d.set_item("in_place", summary.in_place)?;
    d.set_item("warnings", summary.warnings)?;
    Ok(d.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_format, m)?)?;
    m.add_function(wrap_pyfunction!(convert_trace, m)?)?;
    Ok(())
}
