//! The network model: the "network" entry of the parameters as a `NetworkSpec`, and its links.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use contend_engine::net::{LinkBucket, Network, NetworkSpec, Placement, Sharing, TopologySpec};

use crate::results::le_bytes;
use crate::spec_error::spec_err;
use crate::simulate::optional_dict;

/// Reads the optional "network" entry of the parameters (see docs/formats.md, machine files):
/// topology kind and sizes, routing, placement, ranks per node, bandwidths in bytes per second,
/// hop latency in ps, packet size in bytes. None: LogGOPS only.
pub(crate) fn network_from(d: &Bound<'_, PyDict>) -> PyResult<Option<NetworkSpec>> {
    let Some(n) = optional_dict(d, "network")? else { return Ok(None) };
    let err = |k: &str, what: &str| PyValueError::new_err(format!("network {k}: {what}"));
    let int = |k: &str| -> PyResult<u64> {
        n.get_item(k)?.ok_or_else(|| err(k, "missing"))?.extract::<u64>().map_err(|_| err(k, "must be a non-negative integer"))
    };
    let small = |k: &str| -> PyResult<u32> { u32::try_from(int(k)?).map_err(|_| err(k, "too large")) };
    let float = |k: &str| -> PyResult<f64> {
        n.get_item(k)?.ok_or_else(|| err(k, "missing"))?.extract::<f64>().map_err(|_| err(k, "must be a number"))
    };
    let kind: String = n.get_item("topology")?.ok_or_else(|| err("topology", "missing"))?.extract().map_err(|_| err("topology", "must be a name"))?;
    // The kind's sizes by name; the engine knows which a kind takes.
    let size = |k: &'static str| -> Result<Option<Vec<u32>>, String> {
        let Some(v) = n.get_item(k).map_err(|e| e.to_string())?.filter(|v| !v.is_none()) else { return Ok(None) };
        if k == "dims" {
            v.extract::<Vec<u32>>().map(Some).map_err(|_| "dims: must be a list of sizes".into())
        } else {
            v.extract::<u32>().map(|x| Some(vec![x])).map_err(|_| format!("{k}: must be a non-negative integer below 2^32"))
        }
    };
    let topology = TopologySpec::from_sizes(&kind, size).map_err(|e| PyValueError::new_err(format!("network {e}")))?;
    let placement = match n.get_item("placement")? {
        None => Placement::Block,
        Some(p) => match p.extract::<String>() {
            Ok(name) => Placement::parse(&name).map_err(|e| err("placement", &e))?,
            Err(_) => Placement::Explicit(p.extract::<Vec<u32>>().map_err(|_| err("placement", "must be block, cyclic or a list of node numbers"))?),
        },
    };
    let routing = match n.get_item("routing")? {
        Some(r) if !r.is_none() => Some(r.extract::<String>().map_err(|_| err("routing", "must be a name"))?),
        _ => None,
    };
    let sharing = match n.get_item("sharing")? {
        Some(m) if !m.is_none() => Sharing::parse(&m.extract::<String>().map_err(|_| err("sharing", "must be a name"))?).map_err(|e| err("sharing", &e))?,
        _ => Sharing::Flow,
    };
    // Token-bucket links: both keys or neither (the Python side checks the machine file).
    let bucket = match (n.get_item("burst_bytes")?.filter(|v| !v.is_none()), n.get_item("peak_bandwidth")?.filter(|v| !v.is_none())) {
        (None, None) => None,
        (Some(_), Some(_)) => Some(LinkBucket { burst_bytes: int("burst_bytes")?, peak_bandwidth: float("peak_bandwidth")? }),
        _ => return Err(err("burst_bytes", "burst_bytes and peak_bandwidth go together")),
    };
    Ok(Some(NetworkSpec {
        topology,
        routing,
        placement,
        ranks_per_node: small("ranks_per_node")?,
        link_bandwidth: float("link_bandwidth")?,
        injection_bandwidth: float("injection_bandwidth")?,
        global_bandwidth: float("global_bandwidth")?,
        hop_latency: int("hop_latency")?,
        packet_bytes: int("packet_bytes")?,
        seed: int("seed")?,
        sharing,
        bucket,
    }))
}

/// The links of the network in `params["network"]` as columns: class (0 injection, 1 ejection,
/// 2 local, 3 global), from/to vertex kind (0 node, 1 router) and id, capacity factor; plus
/// `coordinates`: per node its coordinates (torus and mesh; empty otherwise).
#[pyfunction]
fn network_links(py: Python<'_>, params: &Bound<'_, PyDict>, ranks: u32) -> PyResult<Py<PyDict>> {
    use contend_engine::net::{LinkClass, Vertex};
    let spec = network_from(params)?.ok_or_else(|| PyValueError::new_err("no network in the parameters"))?;
    let net = Network::new(&spec, ranks).map_err(spec_err)?;
    let topo = net.topology();
    let n = topo.num_links();
    let (mut class, mut from_kind, mut from_id, mut to_kind, mut to_id, mut capacity) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let split = |v: Vertex| match v {
        Vertex::Node(i) => (0u8, i),
        Vertex::Router(i) => (1u8, i),
    };
    for l in 0..n {
        let link = topo.link(l);
        class.push(match link.class {
            LinkClass::Injection => 0u8,
            LinkClass::Ejection => 1,
            LinkClass::Local => 2,
            LinkClass::Global => 3,
        });
        let (fk, fi) = split(link.from);
        let (tk, ti) = split(link.to);
        from_kind.push(fk);
        from_id.push(fi);
        to_kind.push(tk);
        to_id.push(ti);
        capacity.push(link.capacity);
    }
    let d = PyDict::new(py);
    d.set_item("class", PyBytes::new(py, &class))?;
    d.set_item("from_kind", PyBytes::new(py, &from_kind))?;
    d.set_item("from_id", le_bytes(py, &from_id, u32::to_le_bytes))?;
    d.set_item("to_kind", PyBytes::new(py, &to_kind))?;
    d.set_item("to_id", le_bytes(py, &to_id, u32::to_le_bytes))?;
    d.set_item("capacity", le_bytes(py, &capacity, f64::to_le_bytes))?;
    let coordinates: Vec<Vec<u32>> = match topo.spec() {
        TopologySpec::Torus { .. } | TopologySpec::Mesh { .. } => (0..topo.num_nodes()).map(|i| topo.coordinates(i)).collect(),
        _ => Vec::new(),
    };
    d.set_item("coordinates", coordinates)?;
    d.set_item("num_nodes", topo.num_nodes())?;
    d.set_item("node_of_rank", (0..ranks).map(|r| net.node_of(r)).collect::<Vec<u32>>())?;
    d.set_item("diameter", topo.diameter())?;
    Ok(d.unbind())
}

/// Checks a link sharing model's name (`flow`, `packet`).
#[pyfunction]
fn check_sharing(name: &str) -> PyResult<()> {
    Sharing::parse(name).map(|_| ()).map_err(PyValueError::new_err)
}

/// Checks a placement's name (`block`, `cyclic`).
#[pyfunction]
fn check_placement(name: &str) -> PyResult<()> {
    Placement::parse(name).map(|_| ()).map_err(PyValueError::new_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(network_links, m)?)?;
    m.add_function(wrap_pyfunction!(check_sharing, m)?)?;
    m.add_function(wrap_pyfunction!(check_placement, m)?)?;
    Ok(())
}
