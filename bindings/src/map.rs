//! Topology-aware mapping (engine/src/map): the communication graph of a GOAL file, the link loads
//! of a placement, and local refinement of a placement. Columns cross the boundary as sequences
//! in (numpy arrays or lists) and little-endian bytes out.

use std::path::Path;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::map::loads::route_loads as engine_route_loads;
use contend_engine::map::refine::refine;
use contend_engine::map::traffic::Traffic;
use contend_engine::map::IdleRoutes;
use contend_engine::net::{NetworkSpec, Placement, RankMap};

use crate::goal::goal_err;
use crate::network::network_from;
use crate::results::le_bytes;

/// The network of `params` and its routes on an idle network.
fn routes_from(params: &Bound<'_, PyDict>) -> PyResult<(NetworkSpec, IdleRoutes)> {
    let spec = network_from(params)?
        .ok_or_else(|| PyValueError::new_err("no network in the parameters: mapping needs a machine with a [topology] table"))?;
    let routes = IdleRoutes::new(&spec).map_err(|e| PyValueError::new_err(format!("network: {e}")))?;
    Ok((spec, routes))
}

/// Every send of a GOAL file (plain or gzip) summed per ordered pair of ranks: {ranks, src, dst
/// (<u4 bytes), bytes, messages (<u8 bytes)}, sorted by (src, dst). Raises GoalError when malformed.
#[pyfunction]
fn goal_traffic(py: Python<'_>, path: &str) -> PyResult<Py<PyDict>> {
    let t = py.detach(|| Traffic::of_goal_file(Path::new(path))).map_err(goal_err)?;
    let d = PyDict::new(py);
    d.set_item("ranks", t.ranks)?;
    d.set_item("src", le_bytes(py, &t.src, u32::to_le_bytes))?;
    d.set_item("dst", le_bytes(py, &t.dst, u32::to_le_bytes))?;
    d.set_item("bytes", le_bytes(py, &t.bytes, u64::to_le_bytes))?;
    d.set_item("messages", le_bytes(py, &t.messages, u64::to_le_bytes))?;
    Ok(d.unbind())
}

/// Lays `weight[i]` on every link of the route from node `node_src[i]` to `node_dst[i]` under the
/// routing of `params["network"]` on an idle network: {link_bytes (<f8 bytes, per engine link id),
/// hops (<u4 bytes, network links per pair, 0 within a node)}.
#[pyfunction]
fn route_loads(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    node_src: Vec<u32>,
    node_dst: Vec<u32>,
    weight: Vec<f64>,
) -> PyResult<Py<PyDict>> {
    let (_, routes) = routes_from(params)?;
    let loads = py.detach(|| engine_route_loads(&routes, &node_src, &node_dst, &weight)).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("link_bytes", le_bytes(py, &loads.link, f64::to_le_bytes))?;
    d.set_item("hops", le_bytes(py, &loads.hops, u32::to_le_bytes))?;
    Ok(d.unbind())
}

/// Refines the placement `node_of_rank` of `ranks` ranks for the pairs `src -> dst` of `bytes` by
/// swapping ranks between nodes (engine/src/map/refine.rs), at most `rounds` rounds, deterministic
/// for a `seed`. The placement must fit the machine (ranks per node, node range). Returns the node
/// of each rank.
#[pyfunction]
#[pyo3(signature = (params, ranks, node_of_rank, src, dst, bytes, rounds=20, seed=0))]
#[allow(clippy::too_many_arguments)]
fn refine_placement(
    py: Python<'_>,
    params: &Bound<'_, PyDict>,
    ranks: u32,
    node_of_rank: Vec<u32>,
    src: Vec<u32>,
    dst: Vec<u32>,
    bytes: Vec<u64>,
    rounds: u32,
    seed: u64,
) -> PyResult<Vec<u32>> {
    let (spec, routes) = routes_from(params)?;
    let nodes = routes.topology().num_nodes();
    RankMap::new(Placement::Explicit(node_of_rank.clone()), ranks, nodes, spec.ranks_per_node)
        .map_err(|e| PyValueError::new_err(format!("placement: {}", e.problem)))?;
    let refined = py
        .detach(|| refine(&routes, &node_of_rank, &src, &dst, &bytes, rounds, seed))
        .map_err(PyValueError::new_err)?;
    Ok(refined.node_of_rank)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(goal_traffic, m)?)?;
    m.add_function(wrap_pyfunction!(route_loads, m)?)?;
    m.add_function(wrap_pyfunction!(refine_placement, m)?)?;
    Ok(())
}
