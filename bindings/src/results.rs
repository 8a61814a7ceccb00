//! Results out: the simulation's result as a dict, record and timeline columns as little-endian
//! bytes with a numpy dtype string each.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use contend_engine::record::{Records, Timeline};
use contend_engine::schedule::{OpKind, ANY};
use contend_engine::sim::{CriticalPath, Deadlock, Pending, SimResult, Split};

pub(crate) fn le_bytes<T: Copy, const N: usize>(py: Python<'_>, v: &[T], to: fn(T) -> [u8; N]) -> Py<PyBytes> {
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
    for (k, v) in [("computation", s.computation), ("overhead", s.overhead), ("wire", s.wire), ("late_partner", s.late_partner), ("contention", s.contention), ("cores", s.cores), ("noise", s.noise)] {
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

pub(crate) fn result_dict<'py>(py: Python<'py>, r: &SimResult, wall: f64) -> PyResult<Bound<'py, PyDict>> {
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
    d.set_item("admission_grants", r.admission_grants)?;
    d.set_item("admission_max_in_use", r.admission_max_in_use)?;
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
