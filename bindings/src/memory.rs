//! The memory model: the "memory" entry of the parameters as a `MemorySpec`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::node::memory::{MemoryParams, MemorySpec, NicKind};

use crate::simulate::optional_dict;
use crate::spec_error::spec_err;

/// Reads the optional "memory" entry of the parameters (built by contend.machine.memory): bandwidths in
/// bytes per second ("bandwidth", "compute_bandwidth", "nic_bandwidth", "throttle" or None),
/// "floor", "ranks_per_node", "nic" ("offload" | "onload"), "cpu_per_byte" (ps per byte),
/// "pollution" (slowdown per GB/s), "reserve_core". None: no memory model.
pub(crate) fn memory_from(d: &Bound<'_, PyDict>) -> PyResult<Option<MemorySpec>> {
    let Some(m) = optional_dict(d, "memory")? else { return Ok(None) };
    let err = |k: &str, what: &str| PyValueError::new_err(format!("memory {k}: {what}"));
    let item = |k: &str| -> PyResult<Option<Bound<'_, PyAny>>> { Ok(m.get_item(k)?.filter(|v| !v.is_none())) };
    let float = |k: &str| -> PyResult<f64> { item(k)?.ok_or_else(|| err(k, "missing"))?.extract::<f64>().map_err(|_| err(k, "must be a number")) };
    let nic: String = item("nic")?.map(|v| v.extract()).transpose().map_err(|_| err("nic", "must be a name"))?.unwrap_or_else(|| "offload".into());
    let nic = match nic.as_str() {
        "offload" => NicKind::Offload,
        "onload" => NicKind::Onload { cpu_per_byte: float("cpu_per_byte")?, pollution: float("pollution")? },
        other => return Err(err("nic", &format!("unknown kind '{other}' (offload, onload)"))),
    };
    let params = MemoryParams {
        ranks_per_node: item("ranks_per_node")?.ok_or_else(|| err("ranks_per_node", "missing"))?.extract().map_err(|_| err("ranks_per_node", "must be a positive integer"))?,
        bandwidth: float("bandwidth")?,
        compute_bandwidth: float("compute_bandwidth")?,
        nic_bandwidth: float("nic_bandwidth")?,
        throttle: item("throttle")?.map(|v| v.extract::<f64>()).transpose().map_err(|_| err("throttle", "must be a number"))?,
        floor: item("floor")?.map(|v| v.extract::<f64>()).transpose().map_err(|_| err("floor", "must be a number"))?.unwrap_or(0.0),
        nic,
        reserve_core: item("reserve_core")?.map(|v| v.extract::<bool>()).transpose().map_err(|_| err("reserve_core", "must be true or false"))?.unwrap_or(false),
    };
    Ok(Some(MemorySpec::new(params).map_err(spec_err)?))
}
