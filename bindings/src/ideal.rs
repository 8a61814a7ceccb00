//! The engine's uncontended transfer time of messages between ranks, for `contend diagnose`: what
//! a message costs on the network alone is the engine's own `head + alone` (engine/src/net/network.rs,
//! `Network::start`), not a second model of routes and timing in Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use contend_engine::net::{Network, Sharing};

use crate::network::network_from;
use crate::results::le_bytes;
use crate::spec_error::spec_err;

/// Per message `i` (rank `src[i]` to rank `dst[i]`, `bytes[i]` bytes), in ps, the time from its
/// entering the network to its last byte arriving when it is alone on an idle network (the network
/// of `params`, for a job of `ranks` ranks): the first packet's crossing of every link plus the
/// bytes at the route's slowest link. 0 within a node. Returned as <u8 bytes.
#[pyfunction]
fn network_transfer(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    ranks: u32,
    src: Vec<u32>,
    dst: Vec<u32>,
    bytes: Vec<u64>,
) -> PyResult<Py<PyBytes>> {
    let mut spec = network_from(params)?.ok_or_else(|| PyValueError::new_err("no network in the parameters"))?;
    if src.len() != dst.len() || src.len() != bytes.len() {
        return Err(PyValueError::new_err(format!(
            "sources, destinations and sizes differ in length ({}, {}, {})",
            src.len(),
            dst.len(),
            bytes.len()
        )));
    }
    if let Some(i) = (0..src.len()).find(|&i| src[i] >= ranks || dst[i] >= ranks) {
        return Err(PyValueError::new_err(format!("message {i} joins ranks {} and {} of {ranks}", src[i], dst[i])));
    }
    // Only flows can be ended one by one, which keeps the network idle for the next message; how
    // links are shared does not change a message's time alone.
    spec.sharing = Sharing::Flow;
    let mut net = Network::new(&spec, ranks).map_err(spec_err)?;
    let times = py.detach(|| {
        (0..src.len())
            .map(|i| {
                if net.same_node(src[i], dst[i]) {
                    return 0;
                }
                let started = net.start(0, src[i], dst[i], bytes[i]);
                net.finish(0, started.flow);
                started.head + started.alone
            })
            .collect::<Vec<u64>>()
    });
    Ok(le_bytes(py, &times, u64::to_le_bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(network_transfer, m)?)?;
    Ok(())
}
