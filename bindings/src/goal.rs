//! GOAL schedules: reading, summarising and writing them, and the generated collectives.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::{read_goal_file, GoalError as EngineGoalError};
use contend_engine::schedule::writer::write_goal_file;
use contend_engine::schedule::{OpKind, Program};

create_exception!(_engine, GoalError, PyValueError, "A malformed GOAL schedule; the message starts with path:line:col.");

pub(crate) fn goal_err(e: EngineGoalError) -> PyErr {
    if e.line == 0 && e.message.starts_with("cannot read") {
        PyOSError::new_err(e.to_string())
    } else {
        GoalError::new_err(e.to_string())
    }
}

/// Names of the generated collectives and patterns.
#[pyfunction]
fn collectives() -> Vec<&'static str> {
    Pattern::ALL.iter().map(|p| p.name()).collect()
}

/// A generated collective; the arguments converted to the engine's types, which checks them.
pub(crate) fn collective(name: &str, ranks: i64, size: i64, root: i64, seed: u64) -> PyResult<Collective> {
    let pattern = Pattern::from_name(name).map_err(PyValueError::new_err)?;
    let num_ranks = u32::try_from(ranks).map_err(|_| PyValueError::new_err(format!("ranks {ranks} out of range")))?;
    let size = u64::try_from(size).map_err(|_| PyValueError::new_err(format!("bytes must not be negative, not {size}")))?;
    let root = u32::try_from(root).map_err(|_| PyValueError::new_err(format!("root {root} out of range for {ranks} ranks")))?;
    Collective::new(pattern, num_ranks, size, root, seed).map_err(PyValueError::new_err)
}

/// Writes a generated collective as GOAL text (gzip when the path ends in .gz).
#[pyfunction]
#[pyo3(signature = (name, ranks, size, path, root=0, seed=0))]
fn write_goal(py: Python<'_>, name: &str, ranks: i64, size: i64, path: &str, root: i64, seed: u64) -> PyResult<()> {
    let c = collective(name, ranks, size, root, seed)?;
    py.detach(|| write_goal_file(&c, Path::new(path))).map_err(|e| PyOSError::new_err(format!("{path}: cannot write: {e}")))
}

/// Parses a GOAL file and summarises it (raises GoalError with path:line:col when malformed).
#[pyfunction]
fn goal_summary(py: Python<'_>, path: &str) -> PyResult<Py<PyDict>> {
    let prog = py.detach(|| read_goal_file(Path::new(path))).map_err(goal_err)?;
    let d = PyDict::new(py);
    let (mut sends, mut recvs, mut calcs, mut bytes, mut mem) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for r in 0..prog.num_ranks() {
        for i in 0..prog.num_ops(r) {
            let op = prog.op(r, i);
            match op.kind {
                OpKind::Send => {
                    sends += 1;
                    bytes += op.size;
                }
                OpKind::Recv => recvs += 1,
                OpKind::Calc => {
                    calcs += 1;
                    mem += op.mem();
                }
            }
        }
    }
    d.set_item("num_ranks", prog.num_ranks())?;
    d.set_item("ops", prog.total_ops())?;
    d.set_item("sends", sends)?;
    d.set_item("recvs", recvs)?;
    d.set_item("calcs", calcs)?;
    d.set_item("calc_memory_bytes", mem)?;
    d.set_item("bytes_sent", bytes)?;
    d.set_item("cpus", prog.num_cpus())?;
    d.set_item("nics", prog.num_nics())?;
    Ok(d.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GoalError", m.py().get_type::<GoalError>())?;
    // The tag bits a schedule's writer sets on a message admission control leaves alone (docs/formats.md).
    m.add("UNADMITTED_TAGS", contend_engine::schedule::UNADMITTED_TAGS)?;
    m.add("SPINNING_TAGS", contend_engine::schedule::SPINNING_TAGS)?;
    m.add_function(wrap_pyfunction!(collectives, m)?)?;
    m.add_function(wrap_pyfunction!(write_goal, m)?)?;
    m.add_function(wrap_pyfunction!(goal_summary, m)?)?;
    Ok(())
}
