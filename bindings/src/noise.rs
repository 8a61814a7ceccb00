//! The noise model: the "noise" entry of the parameters as `Noise`, noise traces, and the stretch rule.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use contend_engine::noise::random::{Durations, RandomNoise};
use contend_engine::noise::trace::{read_trace_file, TraceError};
use contend_engine::noise::{Noise, Phase};

use crate::results::le_bytes;
use crate::simulate::optional_dict;

create_exception!(_engine, NoiseTraceError, PyValueError, "A malformed noise trace; the message starts with path:line.");

fn trace_err(e: TraceError) -> PyErr {
    NoiseTraceError::new_err(e.to_string())
}

/// Reads the optional "noise" entry of the parameters (built by contend.noise.settings): kind
/// (periodic, random, trace) and its values in ps / Hz, "phase" (None: independent phases, else
/// the co-scheduled phase in ps), "seed", "per_byte". Trace files are read here. None: no noise.
pub(crate) fn noise_from(py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<Option<Noise>> {
    let Some(n) = optional_dict(d, "noise")? else { return Ok(None) };
    let err = |k: &str, what: &str| PyValueError::new_err(format!("noise {k}: {what}"));
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> { n.get_item(k)?.ok_or_else(|| err(k, "missing")) };
    let time = |k: &str| -> PyResult<u64> { get(k)?.extract::<u64>().map_err(|_| err(k, "must be a non-negative integer (ps)")) };
    let phase = match n.get_item("phase")? {
        Some(p) if !p.is_none() => Phase::CoScheduled(p.extract::<u64>().map_err(|_| err("phase", "must be None or a time in ps"))?),
        _ => Phase::Independent,
    };
    let seed = match n.get_item("seed")? {
        Some(s) => s.extract::<u64>().map_err(|_| err("seed", "must be a non-negative integer"))?,
        None => 0,
    };
    let per_byte = match n.get_item("per_byte")? {
        Some(b) => b.extract::<bool>().map_err(|_| err("per_byte", "must be true or false"))?,
        None => false,
    };
    let kind: String = get("kind")?.extract().map_err(|_| err("kind", "must be a name"))?;
    let noise = match kind.as_str() {
        "periodic" => Noise::periodic(time("period")?, time("duration")?, phase, seed),
        "random" => {
            let rate: f64 = get("rate")?.extract().map_err(|_| err("rate", "must be a number (Hz)"))?;
            let distribution: String = get("distribution")?.extract().map_err(|_| err("distribution", "must be a name"))?;
            let durations = match distribution.as_str() {
                "fixed" => Durations::Fixed(time("duration")?),
                "exponential" => Durations::Exponential { mean: time("duration")? },
                "uniform" => Durations::Uniform { min: time("min")?, max: time("max")? },
                other => return Err(err("distribution", &format!("unknown '{other}' (fixed, exponential, uniform)"))),
            };
            RandomNoise::new(rate, durations, seed).and_then(|r| Noise::random(r, phase))
        }
        "trace" => {
            let files: Vec<String> = get("files")?.extract().map_err(|_| err("files", "must be a list of paths"))?;
            let mut patterns = Vec::new();
            for f in &files {
                let trace = py.detach(|| read_trace_file(Path::new(f))).map_err(trace_err)?;
                patterns.extend(trace.ranks);
            }
            Noise::replay(patterns, phase, seed)
        }
        other => return Err(err("kind", &format!("unknown '{other}' (periodic, random, trace)"))),
    };
    noise.map(|x| Some(x.with_per_byte(per_byte))).map_err(|e| PyValueError::new_err(format!("noise: {e}")))
}

/// Reads a noise trace file (raises NoiseTraceError with path:line when malformed): its header in
/// ps (resolution and threshold may be None) and per rank the detours' starts and lengths in ps
/// as little-endian u64 bytes.
#[pyfunction]
fn read_noise_trace(py: Python<'_>, path: &str) -> PyResult<Py<PyDict>> {
    let trace = py.detach(|| read_trace_file(Path::new(path))).map_err(trace_err)?;
    let d = PyDict::new(py);
    d.set_item("resolution_ps", trace.resolution)?;
    d.set_item("threshold_ps", trace.threshold)?;
    d.set_item("duration_ps", trace.duration)?;
    let ranks = PyList::empty(py);
    for p in &trace.ranks {
        let (starts, lengths): (Vec<u64>, Vec<u64>) = p.detours().unzip();
        let r = PyDict::new(py);
        r.set_item("starts", le_bytes(py, &starts, u64::to_le_bytes))?;
        r.set_item("lengths", le_bytes(py, &lengths, u64::to_le_bytes))?;
        ranks.append(r)?;
    }
    d.set_item("ranks", ranks)?;
    Ok(d.unbind())
}

/// When work of `work` ps that may start at `t` ends on `rank` under the noise in `params`
/// (the engine's own rule, for reports and tests).
#[pyfunction]
fn noise_stretch(py: Python<'_>, params: &Bound<'_, PyDict>, rank: u32, t: u64, work: u64) -> PyResult<u64> {
    let noise = noise_from(py, params)?.ok_or_else(|| PyValueError::new_err("no noise in the parameters"))?;
    Ok(noise.stretch(rank, t, work))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NoiseTraceError", m.py().get_type::<NoiseTraceError>())?;
    m.add_function(wrap_pyfunction!(read_noise_trace, m)?)?;
    m.add_function(wrap_pyfunction!(noise_stretch, m)?)?;
    Ok(())
}
