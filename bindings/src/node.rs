//! The node model: the "node" entry of the parameters (NIC curves, admission policy) as a `NodeSpec`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::nic::{NicClass, NicSpec};
use contend_engine::node::{CoreSpec, NodeSpec};
use contend_engine::policy::{AdaptiveSpec, AdmissionSpec, Thresholds, TokenSpec};

use crate::simulate::optional_dict;
use crate::spec_error::spec_err;

/// `[[a, b], ...]` as pairs; None if an entry is not a pair.
fn pairs<T: Copy>(v: Vec<Vec<T>>) -> Option<Vec<(T, T)>> {
    v.into_iter().map(|p| (p.len() == 2).then(|| (p[0], p[1]))).collect()
}

/// Reads the optional "node" entry of the parameters (built by contend.machine.nic and .admission):
/// "ranks_per_node", "nic" (None or a list of size classes {up_to, concurrency, outstanding} with
/// curves as [[x, factor], ...]), "policy" (None or {kind: token | rate | proxy | adaptive, ..., handoff: ps})
/// and "cores" (None or {per_node, switch, quantum (ps), one_host, placement (per rank its core)}: built
/// by contend.machine.cores).
pub(crate) fn node_from(d: &Bound<'_, PyDict>) -> PyResult<Option<NodeSpec>> {
    let Some(n) = optional_dict(d, "node")? else { return Ok(None) };
    let err = |k: &str, what: &str| PyValueError::new_err(format!("{k}: {what}"));
    fn item<'py>(d: &Bound<'py, PyDict>, k: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(d.get_item(k)?.filter(|v| !v.is_none()))
    }
    let ranks_per_node: u32 = item(&n, "ranks_per_node")?.ok_or_else(|| err("ranks_per_node", "missing"))?.extract().map_err(|_| err("ranks_per_node", "must be a positive integer"))?;
    let nic = match item(&n, "nic")? {
        None => None,
        Some(classes) => {
            let mut out = Vec::new();
            for c in classes.try_iter()? {
                let c = c?;
                let c = c.cast::<PyDict>().map_err(|_| err("nic", "each size class must be a dict"))?;
                let points = |k: &str| -> PyResult<Vec<(f64, f64)>> {
                    let points: Vec<Vec<f64>> = item(c, k)?.map(|v| v.extract()).transpose().map_err(|_| err(k, "must be [[x, factor], ...]"))?.unwrap_or_else(|| vec![vec![0.0, 1.0]]);
                    pairs(points).ok_or_else(|| err(k, "must be [[x, factor], ...]"))
                };
                let up_to: u64 = item(c, "up_to")?.map(|v| v.extract()).transpose().map_err(|_| err("up_to", "must be bytes"))?.unwrap_or(u64::MAX);
                out.push(NicClass { up_to, concurrency: points("concurrency")?, outstanding: points("outstanding")? });
            }
            Some(NicSpec::new(out).map_err(spec_err)?)
        }
    };
    let tokens_of = |p: &Bound<'_, PyDict>| -> PyResult<TokenSpec> {
        let tokens: Option<u64> = item(p, "tokens")?.map(|v| v.extract()).transpose().map_err(|_| err("tokens", "must be an integer"))?;
        let size_per_token: u64 = item(p, "size_per_token")?.map(|v| v.extract()).transpose().map_err(|_| err("size_per_token", "must be an integer"))?.unwrap_or(0);
        let mut thresholds = Vec::new();
        if let Some(list) = item(p, "thresholds")? {
            for t in list.try_iter()? {
                let t = t?;
                let t = t.cast::<PyDict>().map_err(|_| err("thresholds", "each class must be a dict"))?;
                let get = |k: &str| -> PyResult<u32> { item(t, k)?.ok_or_else(|| err(k, "missing"))?.extract().map_err(|_| err(k, "must be a positive integer")) };
                thresholds.push(Thresholds {
                    up_to: item(t, "up_to")?.map(|v| v.extract()).transpose().map_err(|_| err("up_to", "must be bytes"))?.unwrap_or(u64::MAX),
                    cct: get("cct")?,
                    nrct: get("nrct")?,
                    crct: pairs(item(t, "crct")?.ok_or_else(|| err("crct", "missing"))?.extract::<Vec<Vec<u32>>>().map_err(|_| err("crct", "must be [[cores, messages], ...]"))?)
                        .ok_or_else(|| err("crct", "must be [[cores, messages], ...]"))?,
                });
            }
        }
        TokenSpec::new(tokens, size_per_token, thresholds).map_err(spec_err)
    };
    let mut handoff = 0;
    let policy = match item(&n, "policy")? {
        None => None,
        Some(p) => {
            let p = p.cast::<PyDict>().map_err(|_| err("policy", "must be a dict"))?;
            handoff = item(p, "handoff")?.map(|v| v.extract()).transpose().map_err(|_| err("handoff", "must be ps"))?.unwrap_or(0);
            let kind: String = item(p, "kind")?.ok_or_else(|| err("policy", "missing kind"))?.extract().map_err(|_| err("policy", "kind must be a name"))?;
            Some(match kind.as_str() {
                "token" => AdmissionSpec::token(tokens_of(p)?),
                "rate" => AdmissionSpec::rate(item(p, "gap")?.ok_or_else(|| err("gap", "missing"))?.extract().map_err(|_| err("gap", "must be ps"))?).map_err(spec_err)?,
                "proxy" => AdmissionSpec::proxy(
                    item(p, "servers")?.ok_or_else(|| err("servers", "missing"))?.extract().map_err(|_| err("servers", "must be an integer"))?,
                    if item(p, "tokens")?.is_some() || item(p, "thresholds")?.is_some() { Some(tokens_of(p)?) } else { None },
                )
                .map_err(spec_err)?,
                "adaptive" => {
                    let d = AdaptiveSpec::default();
                    let int = |k: &str, default: u64| -> PyResult<u64> { item(p, k)?.map_or(Ok(default), |v| v.extract().map_err(|_| err(k, "must be a positive integer"))) };
                    let frac = |k: &str, default: f64| -> PyResult<f64> { item(p, k)?.map_or(Ok(default), |v| v.extract().map_err(|_| err(k, "must be a number"))) };
                    let initial = item(p, "initial")?.map(|v| v.extract().map_err(|_| err("initial", "must be a positive integer"))).transpose()?;
                    let spec = AdaptiveSpec::new(int("tokens", d.max_tokens)?, initial, frac("decrease", d.decrease)?, frac("tolerance", d.tolerance)?);
                    AdmissionSpec::adaptive(spec.map_err(spec_err)?)
                }
                other => return Err(err("policy", &format!("unknown kind '{other}' (token, rate, proxy, adaptive)"))),
            })
        }
    };
    let spec = NodeSpec::new(ranks_per_node, nic, policy).and_then(|s| s.with_handoff(handoff)).map_err(spec_err)?;
    Ok(Some(match item(&n, "cores")? {
        None => spec,
        Some(c) => {
            let c = c.cast::<PyDict>().map_err(|_| err("cores", "must be a dict"))?;
            let per_node: u32 = item(c, "per_node")?.ok_or_else(|| err("per_node", "missing"))?.extract().map_err(|_| err("per_node", "must be a positive integer"))?;
            let switch: u64 = item(c, "switch")?.map(|v| v.extract()).transpose().map_err(|_| err("switch", "must be ps"))?.unwrap_or(0);
            let quantum: u64 = item(c, "quantum")?.map(|v| v.extract()).transpose().map_err(|_| err("quantum", "must be ps"))?.unwrap_or(0);
            let one_host: bool = item(c, "one_host")?.map(|v| v.extract()).transpose().map_err(|_| err("one_host", "must be a bool"))?.unwrap_or(false);
            let placement: Vec<u32> = item(c, "placement")?.map(|v| v.extract()).transpose().map_err(|_| err("placement", "must be a list of core numbers"))?.unwrap_or_default();
            let cores = CoreSpec::new(per_node, switch, quantum).and_then(|c| c.pinned(placement)).map_err(spec_err)?;
            spec.with_cores(if one_host { cores.on_one_host() } else { cores })
        }
    }))
}
