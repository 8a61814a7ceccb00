//! The noise model: the "noise" entry of the parameters as the engine's `NoiseSpec` (whose
//! constructor holds the rules), its compact form, noise traces, and the stretch rule.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use contend_engine::noise::random::Durations;
use contend_engine::noise::spec::{self, BuildError, NoiseKind, NoiseSpec};
use contend_engine::noise::trace::{read_trace_file, TraceError};
use contend_engine::noise::{Noise, Phase};

use crate::results::le_bytes;
use crate::simulate::optional_dict;
use crate::spec_error::spec_err;

create_exception!(_engine, NoiseTraceError, PyValueError, "A malformed noise trace; the message starts with path:line.");
fn trace_err(e: TraceError) -> PyErr {
    NoiseTraceError::new_err(e.to_string())
}

/// The `noise` dict of the parameters (built by contend.noise.settings `engine_params`) as a spec:
/// kind (periodic, random, trace) and its values in ps / Hz, "phase" (None: independent phases,
/// else the co-scheduled phase in ps), "seed", "per_byte".
fn spec_from(n: &Bound<'_, PyDict>) -> PyResult<NoiseSpec> {
    let err = |k: &str, what: &str| PyValueError::new_err(format!("noise {k}: {what}"));
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> { n.get_item(k)?.filter(|v| !v.is_none()).ok_or_else(|| err(k, "missing")) };
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
    let kind = match kind.as_str() {
        "periodic" => NoiseKind::Periodic { period: time("period")?, duration: time("duration")? },
        "random" => {
            let rate: f64 = get("rate")?.extract().map_err(|_| err("rate", "must be a number (Hz)"))?;
            let distribution: String = get("distribution")?.extract().map_err(|_| err("distribution", "must be a name"))?;
            let durations = match distribution.as_str() {
                "fixed" => Durations::Fixed(time("duration")?),
                "exponential" => Durations::Exponential { mean: time("duration")? },
                "uniform" => Durations::Uniform { min: time("min")?, max: time("max")? },
                other => return Err(err("distribution", &format!("unknown '{other}' (fixed, exponential, uniform)"))),
            };
            NoiseKind::Random { rate, durations }
        }
        "trace" => NoiseKind::Trace { files: get("files")?.extract().map_err(|_| err("files", "must be a list of paths"))? },
        other => return Err(err("kind", &format!("unknown '{other}' (periodic, random, trace)"))),
    };
    NoiseSpec::new(kind, phase, seed, per_byte).map_err(spec_err)
}

/// The spec as the `noise` dict of the parameters (the inverse of `spec_from`).
fn spec_dict<'py>(py: Python<'py>, spec: &NoiseSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match spec.kind() {
        NoiseKind::Periodic { period, duration } => {
            d.set_item("kind", "periodic")?;
            d.set_item("period", period)?;
            d.set_item("duration", duration)?;
        }
        NoiseKind::Random { rate, durations } => {
            d.set_item("kind", "random")?;
            d.set_item("rate", rate)?;
            let (distribution, duration, min, max) = match *durations {
                Durations::Fixed(d) => ("fixed", Some(d), None, None),
                Durations::Exponential { mean } => ("exponential", Some(mean), None, None),
                Durations::Uniform { min, max } => ("uniform", None, Some(min), Some(max)),
            };
            d.set_item("distribution", distribution)?;
            d.set_item("duration", duration)?;
            d.set_item("min", min)?;
            d.set_item("max", max)?;
        }
        NoiseKind::Trace { files } => {
            d.set_item("kind", "trace")?;
            d.set_item("files", files.clone())?;
        }
    }
    d.set_item("phase", match spec.phase() {
        Phase::Independent => None,
        Phase::CoScheduled(p) => Some(p),
    })?;
    d.set_item("seed", spec.seed())?;
    d.set_item("per_byte", spec.per_byte())?;
    Ok(d)
}

/// The optional "noise" entry of the parameters as the model, trace files read. None: no noise.
pub(crate) fn noise_from(py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<Option<Noise>> {
    let Some(n) = optional_dict(d, "noise")? else { return Ok(None) };
    let spec = spec_from(&n)?;
    let noise = py.detach(|| spec.build());
    noise.map(Some).map_err(|e| match e {
        BuildError::Trace(t) => trace_err(t),
        BuildError::Spec(s) => spec_err(s),
    })
}

/// The compact form of a noise spec (`periodic:1kHz:25us`, ...; engine/src/noise/spec.rs) as the
/// `noise` dict of the parameters, None for `none`. Raises SpecError (key `noise.<key>`).
#[pyfunction]
fn parse_noise<'py>(py: Python<'py>, text: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
    NoiseSpec::parse(text).map_err(spec_err)?.map(|spec| spec_dict(py, &spec)).transpose()
}

/// Checks a `noise` dict of the parameters against the model's rules. Raises SpecError (key `noise.<key>`).
#[pyfunction]
fn check_noise(noise: &Bound<'_, PyDict>) -> PyResult<()> {
    spec_from(noise).map(|_| ())
}

/// A frequency in Hz (`1kHz`, `1000Hz`, `2.5`).
#[pyfunction]
fn parse_frequency(text: &str) -> PyResult<f64> {
    spec::parse_frequency(text).map_err(PyValueError::new_err)
}

/// A positive duration of noise in ps (`25us`; bare numbers are ns).
#[pyfunction]
fn parse_noise_duration(text: &str) -> PyResult<u64> {
    spec::parse_duration(text).map_err(PyValueError::new_err)
}

/// A duration in ps for people ("25 us"), as the engine's messages write it.
#[pyfunction]
fn format_time(ps: f64) -> String {
    spec::format_time(ps)
}

/// A frequency for people ("1000 Hz"), as the engine's messages write it.
#[pyfunction]
fn format_hz(hz: f64) -> String {
    spec::format_hz(hz)
}

/// The period of a frequency in ps.
#[pyfunction]
fn parse_period(text: &str) -> PyResult<u64> {
    spec::parse_period(text).map_err(PyValueError::new_err)
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
    m.add("DEFAULT_NOISE_DISTRIBUTION", spec::DEFAULT_DISTRIBUTION)?;
    m.add_function(wrap_pyfunction!(parse_noise, m)?)?;
    m.add_function(wrap_pyfunction!(check_noise, m)?)?;
    m.add_function(wrap_pyfunction!(parse_frequency, m)?)?;
    m.add_function(wrap_pyfunction!(parse_noise_duration, m)?)?;
    m.add_function(wrap_pyfunction!(parse_period, m)?)?;
    m.add_function(wrap_pyfunction!(format_time, m)?)?;
    m.add_function(wrap_pyfunction!(format_hz, m)?)?;
    m.add_function(wrap_pyfunction!(read_noise_trace, m)?)?;
    m.add_function(wrap_pyfunction!(noise_stretch, m)?)?;
    Ok(())
}
