//! Python bindings of the engine (`contend._engine`): converts arguments and results, nothing else.
//!
//! Simulations run without the GIL and report progress through an optional callback.
//! Times cross the boundary as integer picoseconds; record and timeline columns as little-endian
//! bytes with a numpy dtype string each, so Python builds arrays without copying element by element.

mod convert;
mod goal;
mod ideal;
mod map;
mod memory;
mod network;
mod node;
mod noise;
mod results;
mod simulate;
mod spec_error;
mod units;

use pyo3::prelude::*;

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    convert::register(m)?;
    map::register(m)?;
    goal::register(m)?;
    network::register(m)?;
    noise::register(m)?;
    simulate::register(m)?;
    spec_error::register(m)?;
    units::register(m)?;
    ideal::register(m)?;
    Ok(())
}
