//! Units: durations and per-byte costs in the engine's grammar (engine/src/time.rs).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use contend_engine::time::{parse_per_byte as engine_per_byte, parse_time as engine_time};

/// Parses a duration (`3000` = ns, `3us`, `80ps`) into picoseconds.
#[pyfunction]
fn parse_time(text: &str) -> PyResult<u64> {
    engine_time(text).map_err(PyValueError::new_err)
}

/// Parses a per-byte cost (`6`, `6ns`, `12.5GB/s`) into picoseconds per byte.
#[pyfunction]
fn parse_per_byte(text: &str) -> PyResult<u64> {
    engine_per_byte(text).map_err(PyValueError::new_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    m.add_function(wrap_pyfunction!(parse_per_byte, m)?)?;
    Ok(())
}
