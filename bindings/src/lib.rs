//! Python bindings of the engine (`contend._engine`): converts arguments and results, nothing else.
//!
//! Simulations run without the GIL and report progress through an optional callback.
//! Times cross the boundary as integer picoseconds; record and timeline columns as little-endian
//! bytes with a numpy dtype string each, so Python builds arrays without copying element by element.

mod convert;
mod ideal;
mod map;

use std::path::Path;
use std::time::Instant;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use contend_engine::net::{Network, NetworkSpec, Placement, Sharing, TopologySpec};
use contend_engine::nic::{Curve, NicCurves, SizeClass};
use contend_engine::node::memory::{MemoryModel, NicKind};
use contend_engine::node::NodeModel;
use contend_engine::policy::{PolicySpec, Thresholds, TokenSpec};
use contend_engine::noise::random::{Durations, RandomNoise};
use contend_engine::noise::trace::{read_trace_file, TraceError};
use contend_engine::noise::{Noise, Phase};
use contend_engine::record::{Records, Timeline};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::stencil::{Checkpoint, Stencil};
use contend_engine::schedule::cache::read_goal_cached;
use contend_engine::schedule::goal::{read_goal_file, GoalError as EngineGoalError};
use contend_engine::schedule::writer::write_goal_file;
use contend_engine::schedule::{OpKind, Program, ANY};
use contend_engine::sim::{simulate_with_memory, Costs, CpuScale, CriticalPath, Deadlock, Split, Execution, Options, Params, Pending, SimResult};
use contend_engine::time::{parse_per_byte as engine_per_byte, parse_time as engine_time, PS_PER_NS};

create_exception!(_engine, GoalError, PyValueError, "A malformed GOAL schedule; the message starts with path:line:col.");
create_exception!(_engine, NoiseTraceError, PyValueError, "A malformed noise trace; the message starts with path:line.");

fn trace_err(e: TraceError) -> PyErr {
    NoiseTraceError::new_err(e.to_string())
}

fn goal_err(e: EngineGoalError) -> PyErr {
    if e.line == 0 && e.message.starts_with("cannot read") {
        PyOSError::new_err(e.to_string())
    } else {
        GoalError::new_err(e.to_string())
    }
}

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

/// Names of the generated collectives and patterns.
#[pyfunction]
fn collectives() -> Vec<&'static str> {
    Pattern::ALL.iter().map(|p| p.name()).collect()
}

/// Reads {"L", "o", "g", "G", "O", "S"} (integers, ps and bytes) and an optional "rendezvous" dict
/// of L, o, g, G, O for messages larger than S.
fn params_from(d: &Bound<'_, PyDict>) -> PyResult<Params> {
    fn get(d: &Bound<'_, PyDict>, k: &str, what: &str) -> PyResult<u64> {
        let v = d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("missing parameter {what}{k}")))?;
        let v: u64 = v.extract().map_err(|_| PyValueError::new_err(format!("parameter {what}{k} must be a non-negative integer")))?;
        if k != "S" && v > contend_engine::time::MAX_INPUT_PS {
            return Err(PyValueError::new_err(format!("parameter {what}{k} = {v} ps is too large")));
        }
        Ok(v)
    }
    let rendezvous = match d.get_item("rendezvous")? {
        Some(r) if !r.is_none() => {
            let r = r.cast::<PyDict>().map_err(|_| PyValueError::new_err("parameter rendezvous must be a dict of L, o, g, G, O"))?;
            let w = "rendezvous.";
            Some(Costs { L: get(r, "L", w)?, o: get(r, "o", w)?, g: get(r, "g", w)?, G: get(r, "G", w)?, O: get(r, "O", w)? })
        }
        _ => None,
    };
    Ok(Params { L: get(d, "L", "")?, o: get(d, "o", "")?, g: get(d, "g", "")?, G: get(d, "G", "")?, O: get(d, "O", "")?, S: get(d, "S", "")?, unit: PS_PER_NS, rendezvous })
}

/// The entry `key` of the parameters as a dict; None when it is absent or None (that model is off).
fn optional_dict<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => {
            Ok(Some(v.cast_into::<PyDict>().map_err(|_| PyValueError::new_err(format!("{key} must be a dict")))?))
        }
        _ => Ok(None),
    }
}

/// Reads the optional "network" entry of the parameters (see docs/formats.md, machine files):
/// topology kind and sizes, routing, placement, ranks per node, bandwidths in bytes per second,
/// hop latency in ps, packet size in bytes. None: LogGOPS only.
fn network_from(d: &Bound<'_, PyDict>) -> PyResult<Option<NetworkSpec>> {
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
    let topology = match kind.as_str() {
        "torus" | "mesh" => {
            let dims: Vec<u32> = n.get_item("dims")?.ok_or_else(|| err("dims", "missing"))?.extract().map_err(|_| err("dims", "must be a list of sizes"))?;
            if kind == "torus" { TopologySpec::Torus { dims } } else { TopologySpec::Mesh { dims } }
        }
        "fattree" => TopologySpec::FatTree { k: small("k")?, levels: small("levels")?, oversubscription: small("oversubscription")? },
        "dragonfly" => TopologySpec::Dragonfly { a: small("a")?, p: small("p")?, h: small("h")?, g: small("g")? },
        "crossbar" => TopologySpec::Crossbar { nodes: small("nodes")? },
        other => return Err(err("topology", &format!("unknown kind '{other}' (torus, mesh, fattree, dragonfly, crossbar)"))),
    };
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
    }))
}

/// Reads the optional "noise" entry of the parameters (built by contend.noise.settings): kind
/// (periodic, random, trace) and its values in ps / Hz, "phase" (None: independent phases, else
/// the co-scheduled phase in ps), "seed", "per_byte". Trace files are read here. None: no noise.
fn noise_from(py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<Option<Noise>> {
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

/// `[[a, b], ...]` as pairs; None if an entry is not a pair.
fn pairs<T: Copy>(v: Vec<Vec<T>>) -> Option<Vec<(T, T)>> {
    v.into_iter().map(|p| (p.len() == 2).then(|| (p[0], p[1]))).collect()
}

/// Reads the optional "node" entry of the parameters (built by contend.nic and contend.admission):
/// "ranks_per_node", "nic" (None or a list of size classes {up_to, concurrency, outstanding} with
/// curves as [[x, factor], ...]) and "policy" (None or {kind: token | rate | proxy, ...}).
fn node_from(d: &Bound<'_, PyDict>) -> PyResult<Option<NodeModel>> {
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
                other => return Err(err("policy", &format!("unknown kind '{other}' (token, rate, proxy)"))),
            })
        }
    };
    Ok(Some(NodeModel { ranks_per_node, nic, policy }))
}

/// Reads the optional "memory" entry of the parameters (built by contend.memory): bandwidths in
/// bytes per second ("bandwidth", "compute_bandwidth", "nic_bandwidth", "throttle" or None),
/// "floor", "ranks_per_node", "nic" ("offload" | "onload"), "cpu_per_byte" (ps per byte),
/// "pollution" (slowdown per GB/s), "reserve_core". None: no memory model.
fn memory_from(d: &Bound<'_, PyDict>) -> PyResult<Option<MemoryModel>> {
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
    let model = MemoryModel {
        ranks_per_node: item("ranks_per_node")?.ok_or_else(|| err("ranks_per_node", "missing"))?.extract().map_err(|_| err("ranks_per_node", "must be a positive integer"))?,
        bandwidth: float("bandwidth")?,
        compute_bandwidth: float("compute_bandwidth")?,
        nic_bandwidth: float("nic_bandwidth")?,
        throttle: item("throttle")?.map(|v| v.extract::<f64>()).transpose().map_err(|_| err("throttle", "must be a number"))?,
        floor: item("floor")?.map(|v| v.extract::<f64>()).transpose().map_err(|_| err("floor", "must be a number"))?.unwrap_or(0.0),
        nic,
        reserve_core: item("reserve_core")?.map(|v| v.extract::<bool>()).transpose().map_err(|_| err("reserve_core", "must be true or false"))?.unwrap_or(false),
    };
    model.validate().map_err(PyValueError::new_err)?;
    Ok(Some(model))
}

fn collective(name: &str, ranks: i64, size: i64, root: i64, seed: u64) -> PyResult<Collective> {
    let pattern = Pattern::from_name(name).map_err(PyValueError::new_err)?;
    if ranks < 1 || ranks > u32::MAX as i64 {
        return Err(PyValueError::new_err(format!("ranks must be at least 1, not {ranks}")));
    }
    if size < 0 {
        return Err(PyValueError::new_err(format!("bytes must not be negative, not {size}")));
    }
    if root < 0 || root >= ranks {
        return Err(PyValueError::new_err(format!("root {root} out of range for {ranks} ranks")));
    }
    Collective::new(pattern, ranks as u32, size as u64, root as u32, seed).map_err(PyValueError::new_err)
}

fn le_bytes<T: Copy, const N: usize>(py: Python<'_>, v: &[T], to: fn(T) -> [u8; N]) -> Py<PyBytes> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&to(x));
    }
    PyBytes::new(py, &out).unbind()
}

fn records_dict<'py>(py: Python<'py>, r: &Records, dtypes: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let u4 = |d: &Bound<'py, PyDict>, k: &str, v: &[u32]| -> PyResult<()> {
        d.set_item(k, le_bytes(py, v, u32::to_le_bytes))?;
        dtypes.set_item(k, "<u4")
    };
    let u8_ = |d: &Bound<'py, PyDict>, k: &str, v: &[u64]| -> PyResult<()> {
        d.set_item(k, le_bytes(py, v, u64::to_le_bytes))?;
        dtypes.set_item(k, "<u8")
    };
    u4(&d, "src", &r.src)?;
    u4(&d, "dst", &r.dst)?;
    u8_(&d, "bytes", &r.bytes)?;
    d.set_item("tag", le_bytes(py, &r.tag, i64::to_le_bytes))?;
    dtypes.set_item("tag", "<i8")?;
    u4(&d, "send_op", &r.send_op)?;
    u4(&d, "recv_op", &r.recv_op)?;
    d.set_item("protocol", PyBytes::new(py, &r.protocol))?;
    dtypes.set_item("protocol", "|u1")?;
    for (k, v) in [
        ("posted", &r.posted),
        ("injected", &r.injected),
        ("arrived", &r.arrived),
        ("received", &r.received),
        ("matched", &r.matched),
        ("completed", &r.completed),
        ("ideal", &r.ideal),
        ("nic_queue", &r.nic_queue),
        ("link", &r.link),
        ("target_queue", &r.target_queue),
        ("late_receiver", &r.late_receiver),
        ("noise", &r.noise),
    ] {
        u8_(&d, k, v)?;
    }
    if !r.critical.is_empty() {
        d.set_item("critical", PyBytes::new(py, &r.critical.iter().map(|&c| c as u8).collect::<Vec<u8>>()))?;
        dtypes.set_item("critical", "|b1")?;
    }
    Ok(d)
}

fn timeline_dict<'py>(py: Python<'py>, t: &Timeline, dtypes: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rank", le_bytes(py, &t.rank, u32::to_le_bytes))?;
    d.set_item("cpu", le_bytes(py, &t.cpu, u32::to_le_bytes))?;
    d.set_item("kind", PyBytes::new(py, &t.kind))?;
    d.set_item("start", le_bytes(py, &t.start, u64::to_le_bytes))?;
    d.set_item("end", le_bytes(py, &t.end, u64::to_le_bytes))?;
    for (k, v) in [("rank", "<u4"), ("cpu", "<u4"), ("kind", "|u1"), ("start", "<u8"), ("end", "<u8")] {
        dtypes.set_item(k, v)?;
    }
    Ok(d)
}

fn kind_name(k: OpKind) -> &'static str {
    match k {
        OpKind::Send => "send",
        OpKind::Recv => "recv",
        OpKind::Calc => "calc",
    }
}

fn signed(v: u32) -> i64 {
    if v == ANY {
        -1
    } else {
        v as i64
    }
}

fn pending_list<'py>(py: Python<'py>, items: &[Pending]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for p in items {
        let d = PyDict::new(py);
        d.set_item("rank", p.rank)?;
        d.set_item("op", p.op)?;
        d.set_item("line", p.line)?;
        d.set_item("kind", kind_name(p.kind))?;
        d.set_item("peer", if p.kind == OpKind::Calc { None } else { Some(signed(p.peer)) })?;
        d.set_item("tag", if p.kind == OpKind::Calc { None } else { Some(signed(p.tag)) })?;
        d.set_item("bytes", p.bytes)?;
        list.append(d)?;
    }
    Ok(list)
}

fn deadlock_dict<'py>(py: Python<'py>, d: &Deadlock) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("count", d.count())?;
    out.set_item("unmatched_recv_count", d.unmatched_recv_count)?;
    out.set_item("unmatched_send_count", d.unmatched_send_count)?;
    out.set_item("never_started_count", d.never_started_count)?;
    out.set_item("unmatched_recvs", pending_list(py, &d.unmatched_recvs)?)?;
    out.set_item("unmatched_sends", pending_list(py, &d.unmatched_sends)?)?;
    out.set_item("never_started", pending_list(py, &d.never_started)?)?;
    Ok(out)
}

fn split_dict<'py>(py: Python<'py>, s: &Split) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in [("computation", s.computation), ("overhead", s.overhead), ("wire", s.wire), ("late_partner", s.late_partner), ("contention", s.contention), ("noise", s.noise)] {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// The critical path in ps: its split, length and first steps (docs/formats.md, "critical_path").
fn critical_path_dict<'py>(py: Python<'py>, c: &CriticalPath) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("split_ps", split_dict(py, &c.split)?)?;
    d.set_item("ops", c.ops)?;
    d.set_item("steps_total", c.steps_total)?;
    let steps = PyList::empty(py);
    for s in &c.steps {
        let step = PyDict::new(py);
        step.set_item("rank", s.rank)?;
        step.set_item("op", if s.op == u32::MAX { None } else { Some(s.op) })?;
        step.set_item("activity", s.activity.name())?;
        step.set_item("start_ps", s.start)?;
        step.set_item("end_ps", s.end)?;
        step.set_item("split_ps", split_dict(py, &s.split)?)?;
        steps.append(step)?;
    }
    d.set_item("steps", steps)?;
    Ok(d)
}

fn result_dict<'py>(py: Python<'py>, r: &SimResult, wall: f64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("makespan_ps", r.makespan)?;
    d.set_item("ranks_ps", r.finish.clone())?;
    d.set_item("num_ranks", r.num_ranks)?;
    d.set_item("events", r.events)?;
    d.set_item("ops", r.ops)?;
    d.set_item("messages", r.messages)?;
    d.set_item("requeues", r.requeues)?;
    d.set_item("peak_queue", r.peak_queue)?;
    d.set_item("windowed", r.windowed)?;
    d.set_item("threads", r.threads)?;
    d.set_item("wall_seconds", wall)?;
    d.set_item("noise_ps", r.noise)?;
    d.set_item("admission_waits", r.admission_waits)?;
    match &r.memory {
        Some(m) => {
            let mem = PyDict::new(py);
            mem.set_item("bytes_written", m.bytes_written.clone())?;
            mem.set_item("write_busy_ps", m.write_busy)?;
            mem.set_item("calc_delay_ps", m.calc_delay)?;
            d.set_item("memory", mem)?;
        }
        None => d.set_item("memory", py.None())?,
    }
    d.set_item("deadlock", r.deadlock.as_ref().map(|x| deadlock_dict(py, x)).transpose()?)?;
    d.set_item("critical_path", r.critical_path.as_ref().map(|x| critical_path_dict(py, x)).transpose()?)?;
    let dtypes = PyDict::new(py);
    d.set_item("records", r.records.as_ref().map(|x| records_dict(py, x, &dtypes)).transpose()?)?;
    d.set_item("timeline", r.timeline.as_ref().map(|x| timeline_dict(py, x, &dtypes)).transpose()?)?;
    match &r.links {
        Some(l) => {
            let links = PyDict::new(py);
            links.set_item("bytes", le_bytes(py, &l.bytes, u64::to_le_bytes))?;
            links.set_item("busy", le_bytes(py, &l.busy, u64::to_le_bytes))?;
            links.set_item("peak_flows", le_bytes(py, &l.peak_flows, u32::to_le_bytes))?;
            dtypes.set_item("link_bytes", "<u8")?;
            dtypes.set_item("link_busy", "<u8")?;
            dtypes.set_item("link_peak_flows", "<u4")?;
            d.set_item("links", links)?;
        }
        None => d.set_item("links", py.None())?,
    }
    d.set_item("dtypes", dtypes)?;
    Ok(d)
}

/// Runs the simulation without the GIL. Every few million events it takes the GIL back to honour
/// Ctrl-C and to call `progress(operations_started, operations_total)` if given.
#[allow(clippy::too_many_arguments)]
/// Everything a simulation takes from the `params` dict besides the program: the LogGOPS costs and the
/// optional network, noise, node (NIC, admission control) and memory models.
struct Models {
    par: Params,
    network: Option<NetworkSpec>,
    noise: Option<Noise>,
    node: Option<NodeModel>,
    memory: Option<MemoryModel>,
    /// The event loop and the threads that share it (same results either way).
    execution: Execution,
    threads: usize,
    /// Calc durations scaled (a faster or slower CPU).
    cpu_scale: CpuScale,
    /// Trace the critical path (where the time goes).
    critical_path: bool,
}

fn models_from(py: Python<'_>, params: &Bound<'_, PyDict>) -> PyResult<Models> {
    let execution = match params.get_item("execution")? {
        None => Execution::Chosen,
        Some(v) => match v.extract::<String>().as_deref() {
            Ok("chosen") => Execution::Chosen,
            Ok("time-ordered") => Execution::TimeOrdered,
            Ok("windowed") => Execution::Windowed,
            _ => return Err(PyValueError::new_err("execution must be chosen, time-ordered or windowed")),
        },
    };
    let threads = match params.get_item("threads")? {
        None => 0,
        Some(v) => v.extract::<usize>().map_err(|_| PyValueError::new_err("threads must be a non-negative integer"))?,
    };
    let cpu_scale = match params.get_item("cpu_scale")? {
        None => CpuScale::default(),
        Some(v) => CpuScale::new(v.extract::<f64>().map_err(|_| PyValueError::new_err("cpu_scale must be a number"))?).map_err(PyValueError::new_err)?,
    };
    let critical_path = match params.get_item("critical_path")? {
        None => false,
        Some(v) => v.extract::<bool>().map_err(|_| PyValueError::new_err("critical_path must be true or false"))?,
    };
    Ok(Models {
        par: params_from(params)?,
        network: network_from(params)?,
        noise: noise_from(py, params)?,
        node: node_from(params)?,
        memory: memory_from(params)?,
        execution,
        threads,
        cpu_scale,
        critical_path,
    })
}

fn run<P: Program + Sync>(
    py: Python<'_>,
    prog: &P,
    models: Models,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let Models { par, network, noise, node, memory, execution, threads, cpu_scale, critical_path } = models;
    let opts = Options { records, timeline, execution, threads, cpu_scale, critical_path };
    if memory.is_some() && noise.is_some() {
        return Err(PyValueError::new_err("memory: the memory model does not combine with noise yet (give one or the other)"));
    }
    let network = network.map(|spec| Network::new(&spec, prog.num_ranks())).transpose().map_err(|e| PyValueError::new_err(format!("network: {e}")))?;
    if let Some(model) = &node {
        model.validate(network.is_some()).map_err(PyValueError::new_err)?;
    }
    let total: u64 = (0..prog.num_ranks()).map(|r| prog.num_ops(r) as u64).sum();
    let mut failure: Option<PyErr> = None;
    let (result, wall) = py.detach(|| {
        let t0 = Instant::now();
        let r = simulate_with_memory(prog, &par, &opts, network, noise.as_ref(), node.as_ref(), memory.as_ref(), |done| {
            Python::attach(|py| {
                let outcome = py.check_signals().and_then(|_| match &progress {
                    Some(cb) => cb.call1(py, (done, total)).map(|_| ()),
                    None => Ok(()),
                });
                match outcome {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })
        });
        (r, t0.elapsed().as_secs_f64())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let result = result.expect("only a failed callback stops the run");
    if let Some(cb) = &progress {
        cb.call1(py, (total, total))?;
    }
    Ok(result_dict(py, &result, wall)?.unbind())
}

/// Simulates a GOAL file (plain or gzip) with LogGOPS parameters in picoseconds; `cache_dir`: where
/// parsed schedules are cached (engine/src/schedule/cache.rs), None for no cache.
#[pyfunction]
#[pyo3(signature = (path, params, records=false, timeline=false, progress=None, cache_dir=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_goal(
    py: Python<'_>,
    path: &str,
    params: &Bound<'_, PyDict>,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
    cache_dir: Option<&str>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let prog = py.detach(|| read_goal_cached(Path::new(path), cache_dir.map(Path::new))).map_err(goal_err)?;
    run(py, &prog, models, records, timeline, progress)
}

/// Simulates a generated collective or pattern.
#[pyfunction]
#[pyo3(signature = (name, ranks, size, params, root=0, seed=0, records=false, timeline=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_collective(
    py: Python<'_>,
    name: &str,
    ranks: i64,
    size: i64,
    params: &Bound<'_, PyDict>,
    root: i64,
    seed: u64,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let c = collective(name, ranks, size, root, seed)?;
    run(py, &c, models, records, timeline, progress)
}

/// Simulates the LAMMPS-like stencil of `contend reproduce nimc` (engine/src/schedule/stencil.rs):
/// `steps` of a halo exchange of `halo` bytes per direction and `calc <calc> mem <mem>`, with
/// checkpoints (writer, target, start in ns, bytes) on each rank's second CPU and NIC.
#[pyfunction]
#[pyo3(signature = (ranks, steps, halo, calc, mem, checkpoints, params, records=false, timeline=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn simulate_stencil(
    py: Python<'_>,
    ranks: u32,
    steps: u32,
    halo: u64,
    calc: u64,
    mem: u64,
    checkpoints: Vec<(u32, u32, u64, u64)>,
    params: &Bound<'_, PyDict>,
    records: bool,
    timeline: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyDict>> {
    let models = models_from(py, params)?;
    let checkpoints: Vec<Checkpoint> = checkpoints.into_iter().map(|(writer, target, start, bytes)| Checkpoint { writer, target, start, bytes }).collect();
    let s = Stencil::new(ranks, steps, halo, calc, mem, &checkpoints).map_err(|e| PyValueError::new_err(format!("stencil: {e}")))?;
    run(py, &s, models, records, timeline, progress)
}

/// Writes a generated collective as GOAL text (gzip when the path ends in .gz).
#[pyfunction]
#[pyo3(signature = (name, ranks, size, path, root=0, seed=0))]
fn write_goal(py: Python<'_>, name: &str, ranks: i64, size: i64, path: &str, root: i64, seed: u64) -> PyResult<()> {
    let c = collective(name, ranks, size, root, seed)?;
    py.detach(|| write_goal_file(&c, Path::new(path))).map_err(|e| PyOSError::new_err(format!("{path}: cannot write: {e}")))
}

/// Parses a GOAL file and summarises it (raises GoalError with path:line:col when malformed).
#[pyfunction]
fn goal_summary(py: Python<'_>, path: &str) -> PyResult<Py<PyDict>> {
    let prog = py.detach(|| read_goal_file(Path::new(path))).map_err(goal_err)?;
    let d = PyDict::new(py);
    let (mut sends, mut recvs, mut calcs, mut bytes, mut mem) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for r in 0..prog.num_ranks() {
        for i in 0..prog.num_ops(r) {
            let op = prog.op(r, i);
            match op.kind {
                OpKind::Send => {
                    sends += 1;
                    bytes += op.size;
                }
                OpKind::Recv => recvs += 1,
                OpKind::Calc => {
                    calcs += 1;
                    mem += op.mem();
                }
            }
        }
    }
    d.set_item("num_ranks", prog.num_ranks())?;
    d.set_item("ops", prog.total_ops())?;
    d.set_item("sends", sends)?;
    d.set_item("recvs", recvs)?;
    d.set_item("calcs", calcs)?;
    d.set_item("calc_memory_bytes", mem)?;
    d.set_item("bytes_sent", bytes)?;
    d.set_item("cpus", prog.num_cpus())?;
    d.set_item("nics", prog.num_nics())?;
    Ok(d.unbind())
}

/// The links of the network in `params["network"]` as columns: class (0 injection, 1 ejection,
/// 2 local, 3 global), from/to vertex kind (0 node, 1 router) and id, capacity factor; plus
/// `coordinates`: per node its coordinates (torus and mesh; empty otherwise).
#[pyfunction]
fn network_links(py: Python<'_>, params: &Bound<'_, PyDict>, ranks: u32) -> PyResult<Py<PyDict>> {
    use contend_engine::net::{LinkClass, Vertex};
    let spec = network_from(params)?.ok_or_else(|| PyValueError::new_err("no network in the parameters"))?;
    let net = Network::new(&spec, ranks).map_err(|e| PyValueError::new_err(format!("network: {e}")))?;
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

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    convert::register(m)?;
    map::register(m)?;
    ideal::register(m)?;
    m.add("GoalError", m.py().get_type::<GoalError>())?;
    m.add("NoiseTraceError", m.py().get_type::<NoiseTraceError>())?;
    m.add_function(wrap_pyfunction!(read_noise_trace, m)?)?;
    m.add_function(wrap_pyfunction!(noise_stretch, m)?)?;
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    m.add_function(wrap_pyfunction!(parse_per_byte, m)?)?;
    m.add_function(wrap_pyfunction!(collectives, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_goal, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_collective, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_stencil, m)?)?;
    m.add_function(wrap_pyfunction!(write_goal, m)?)?;
    m.add_function(wrap_pyfunction!(goal_summary, m)?)?;
    m.add_function(wrap_pyfunction!(network_links, m)?)?;
    Ok(())
}
