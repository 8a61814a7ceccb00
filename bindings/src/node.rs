//! The node model: the "node" entry of the parameters (NIC curves, admission policy) as a `NodeModel`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::nic::{Curve, NicCurves, SizeClass};
use contend_engine::node::NodeModel;
use contend_engine::policy::{AdaptiveSpec, PolicySpec, Thresholds, TokenSpec};

use crate::simulate::optional_dict;

/// `[[a, b], ...]` as pairs; None if an entry is not a pair.
fn pairs<T: Copy>(v: Vec<Vec<T>>) -> Option<Vec<(T, T)>> {
    v.into_iter().map(|p| (p.len() == 2).then(|| (p[0], p[1]))).collect()
}

/// Reads the optional "node" entry of the parameters (built by contend.nic and contend.admission):
/// "ranks_per_node", "nic" (None or a list of size classes {up_to, concurrency, outstanding} with
/// curves as [[x, factor], ...]) and "policy" (None or {kind: token | rate | proxy | adaptive, ...}).
pub(crate) fn node_from(d: &Bound<'_, PyDict>) -> PyResult<Option<NodeModel>> {
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
            for (i, c) in classes.try_iter()?.enumerate() {
                let c = c?;
                let c = c.cast::<PyDict>().map_err(|_| err("nic", "each size class must be a dict"))?;
                let curve = |k: &str| -> PyResult<Curve> {
                    let points: Vec<Vec<f64>> = item(c, k)?.map(|v| v.extract()).transpose().map_err(|_| err(k, "must be [[x, factor], ...]"))?.unwrap_or_else(|| vec![vec![0.0, 1.0]]);
                    let points = pairs(points).ok_or_else(|| err(k, "must be [[x, factor], ...]"))?;
                    Curve::new(points).map_err(|e| err(&format!("nic class {} {k}", i + 1), &e))
                };
                let up_to: u64 = item(c, "up_to")?.map(|v| v.extract()).transpose().map_err(|_| err("up_to", "must be bytes"))?.unwrap_or(u64::MAX);
                out.push(SizeClass { up_to, concurrency: curve("concurrency")?, outstanding: curve("outstanding")? });
            }
            Some(NicCurves::new(out).map_err(|e| err("nic", &e))?)
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
        Ok(TokenSpec { tokens, size_per_token, thresholds })
    };
    let policy = match item(&n, "policy")? {
        None => None,
        Some(p) => {
            let p = p.cast::<PyDict>().map_err(|_| err("policy", "must be a dict"))?;
            let kind: String = item(p, "kind")?.ok_or_else(|| err("policy", "missing kind"))?.extract().map_err(|_| err("policy", "kind must be a name"))?;
            Some(match kind.as_str() {
                "token" => PolicySpec::Token(tokens_of(p)?),
                "rate" => PolicySpec::Rate { gap: item(p, "gap")?.ok_or_else(|| err("gap", "missing"))?.extract().map_err(|_| err("gap", "must be ps"))? },
                "proxy" => PolicySpec::Proxy {
                    servers: item(p, "servers")?.ok_or_else(|| err("servers", "missing"))?.extract().map_err(|_| err("servers", "must be an integer"))?,
                    tokens: if item(p, "tokens")?.is_some() || item(p, "thresholds")?.is_some() { Some(tokens_of(p)?) } else { None },
                },
                "adaptive" => {
                    let d = AdaptiveSpec::default();
                    let int = |k: &str, default: u64| -> PyResult<u64> { item(p, k)?.map_or(Ok(default), |v| v.extract().map_err(|_| err(k, "must be a positive integer"))) };
                    let frac = |k: &str, default: f64| -> PyResult<f64> { item(p, k)?.map_or(Ok(default), |v| v.extract().map_err(|_| err(k, "must be a number"))) };
                    PolicySpec::Adaptive(AdaptiveSpec {
                        max_tokens: int("tokens", d.max_tokens)?,
                        initial: item(p, "initial")?.map(|v| v.extract().map_err(|_| err("initial", "must be a positive integer"))).transpose()?,
                        decrease: frac("decrease", d.decrease)?,
                        tolerance: frac("tolerance", d.tolerance)?,
                    })
                }
                other => return Err(err("policy", &format!("unknown kind '{other}' (token, rate, proxy, adaptive)"))),
            })
        }
    };
    Ok(Some(NodeModel { ranks_per_node, nic, policy }))
}
