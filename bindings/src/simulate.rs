//! Simulations: the parameters dict as the engine's models and options, the run without the GIL,
//! and the entry points for a GOAL file, a generated collective and the stencil.

use std::path::Path;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::schedule::cache::read_goal_cached;
use contend_engine::schedule::stencil::{Checkpoint, Stencil};
use contend_engine::schedule::Program;
use contend_engine::sim::{simulate, Costs, CpuScale, Execution, Options, Params, Scenario, Stopped};
use contend_engine::time::PS_PER_NS;

use crate::goal::{collective, goal_err};
use crate::memory::memory_from;
use crate::network::network_from;
use crate::node::node_from;
use crate::noise::noise_from;
use crate::results::result_dict;
use crate::spec_error::spec_err;

/// Reads {"L", "o", "g", "G", "O", "S"} (integers, ps and bytes) and an optional "rendezvous" dict
/// of L, o, g, G, O for messages larger than S.
fn params_from(d: &Bound<'_, PyDict>) -> PyResult<Params> {
    fn get(d: &Bound<'_, PyDict>, k: &str, what: &str) -> PyResult<u64> {
        let v = d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("missing parameter {what}{k}")))?;
        let v: u64 = v.extract().map_err(|_| PyValueError::new_err(format!("parameter {what}{k} must be a non-negative integer")))?;
        if k != "S" && v > contend_engine::time::MAX_INPUT_PS {
            return Err(PyValueError::new_err(format!("parameter {what}{k} = {v} ps is too large")));
        }
        Ok(v)
    }
    let rendezvous = match d.get_item("rendezvous")? {
        Some(r) if !r.is_none() => {
            let r = r.cast::<PyDict>().map_err(|_| PyValueError::new_err("parameter rendezvous must be a dict of L, o, g, G, O"))?;
            let w = "rendezvous.";
            Some(Costs { L: get(r, "L", w)?, o: get(r, "o", w)?, g: get(r, "g", w)?, G: get(r, "G", w)?, O: get(r, "O", w)? })
        }
        _ => None,
    };
    Ok(Params { L: get(d, "L", "")?, o: get(d, "o", "")?, g: get(d, "g", "")?, G: get(d, "G", "")?, O: get(d, "O", "")?, S: get(d, "S", "")?, unit: PS_PER_NS, rendezvous })
}

/// The entry `key` of the parameters as a dict; None when it is absent or None (that model is off).
pub(crate) fn optional_dict<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => {
            Ok(Some(v.cast_into::<PyDict>().map_err(|_| PyValueError::new_err(format!("{key} must be a dict")))?))
        }
        _ => Ok(None),
    }
}

/// Everything a simulation takes from the `params` dict besides the program: the scenario (LogGOPS
/// costs and the optional network, noise, node and memory models) and how to run it.
struct Models {
    scenario: Scenario,
    /// The event loop and the threads that share it (same results either way).
    execution: Execution,
    threads: usize,
    /// Calc durations scaled (a faster or slower CPU).
    cpu_scale: CpuScale,
    /// Trace the critical path (where the time goes).
    critical_path: bool,
}

fn models_from(py: Python<'_>, params: &Bound<'_, PyDict>) -> PyResult<Models> {
    let execution = match params.get_item("execution")? {
        None => Execution::Chosen,
        Some(v) => match v.extract::<String>().as_deref() {
            Ok("chosen") => Execution::Chosen,
            Ok("time-ordered") => Execution::TimeOrdered,
            Ok("windowed") => Execution::Windowed,
            _ => return Err(PyValueError::new_err("execution must be chosen, time-ordered or windowed")),
        },
    };
    let threads = match params.get_item("threads")? {
        None => 0,
        Some(v) => v.extract::<usize>().map_err(|_| PyValueError::new_err("threads must be a non-negative integer"))?,
    };
    let cpu_scale = match params.get_item("cpu_scale")? {
        None => CpuScale::default(),
        Some(v) => CpuScale::new(v.extract::<f64>().map_err(|_| PyValueError::new_err("cpu_scale must be a number"))?).map_err(PyValueError::new_err)?,
    };
    let critical_path = match params.get_item("critical_path")? {
        None => false,
        Some(v) => v.extract::<bool>().map_err(|_| PyValueError::new_err("critical_path must be true or false"))?,
    };
    Ok(Models {
        scenario: Scenario {
            params: params_from(params)?,
            network: network_from(params)?,
            noise: noise_from(py, params)?,
            node: node_from(params)?,
            memory: memory_from(params)?,
        },
        execution,
        threads,
        cpu_scale,
        critical_path,
    })
}

/// Runs the simulation without the GIL. Every few million events it takes the GIL back to honour
/// Ctrl-C and to call `progress(operations_started, operations_total)` if given.
fn run<P: Program + Sync>(
    py: Python<'_>,
    prog: &P,
    models: Models,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let Models { scenario, execution, threads, cpu_scale, critical_path } = models;
    let opts = Options { records, timeline, execution, threads, cpu_scale, critical_path };
    let total: u64 = (0..prog.num_ranks()).map(|r| prog.num_ops(r) as u64).sum();
    let mut failure: Option<PyErr> = None;
    let (result, wall) = py.detach(|| {
        let t0 = Instant::now();
        let r = simulate(prog, &scenario, &opts, |done| {
            Python::attach(|py| {
                let outcome = py.check_signals().and_then(|_| match &progress {
                    Some(cb) => cb.call1(py, (done, total)).map(|_| ()),
                    None => Ok(()),
                });
                match outcome {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })
        });
        (r, t0.elapsed().as_secs_f64())
    });
    let result = match (result, failure) {
        (_, Some(e)) => return Err(e),
        (Err(Stopped::Invalid(why)), None) => return Err(spec_err(why)),
        (r, None) => r.expect("only a failed callback stops the run"),
    };
    if let Some(cb) = &progress {
        cb.call1(py, (total, total))?;
    }
    Ok(result_dict(py, &result, wall)?.unbind())
}

/// Simulates a GOAL file (plain or gzip) with LogGOPS parameters in picoseconds; `cache_dir`: where
/// parsed schedules are cached (engine/src/schedule/cache.rs), None for no cache.
#[pyfunction]
#[pyo3(signature = (path, params, records=false, timeline=false, progress=None, cache_dir=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_goal(
    py: Python<'_>,
    path: &str,
    params: &Bound<'_, PyDict>,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
    cache_dir: Option<&str>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let prog = py.detach(|| read_goal_cached(Path::new(path), cache_dir.map(Path::new))).map_err(goal_err)?;
    run(py, &prog, models, records, timeline, progress)
}

/// Simulates a generated collective or pattern.
#[pyfunction]
#[pyo3(signature = (name, ranks, size, params, root=0, seed=0, records=false, timeline=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_collective(
    py: Python<'_>,
    name: &str,
    ranks: i64,
    size: i64,
    params: &Bound<'_, PyDict>,
    root: i64,
    seed: u64,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let c = collective(name, ranks, size, root, seed)?;
    run(py, &c, models, records, timeline, progress)
}

/// Simulates the LAMMPS-like stencil of `contend reproduce nimc` (engine/src/schedule/stencil.rs):
/// `steps` of a halo exchange of `halo` bytes per direction and `calc <calc> mem <mem>`, with
/// checkpoints (writer, target, start in ns, bytes) on each rank's second CPU and NIC.
#[pyfunction]
#[pyo3(signature = (ranks, steps, halo, calc, mem, checkpoints, params, records=false, timeline=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_stencil(
    py: Python<'_>,
    ranks: u32,
    steps: u32,
    halo: u64,
    calc: u64,
    mem: u64,
    checkpoints: Vec<(u32, u32, u64, u64)>,
    params: &Bound<'_, PyDict>,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let checkpoints: Vec<Checkpoint> = checkpoints.into_iter().map(|(writer, target, start, bytes)| Checkpoint { writer, target, start, bytes }).collect();
    let s = Stencil::new(ranks, steps, halo, calc, mem, &checkpoints).map_err(|e| PyValueError::new_err(format!("stencil: {e}")))?;
    run(py, &s, models, records, timeline, progress)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate_goal, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_collective, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_stencil, m)?)?;
    Ok(())
}
