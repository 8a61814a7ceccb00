//! A refused spec as a Python `SpecError` (a ValueError) whose `key`, `problem` and
//! `combined_with` are data: Python points at the machine-file line of the key.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use contend_engine::net::{OPTIONAL_SIZES, TOPOLOGY_KINDS};
use contend_engine::spec_error::SpecError as EngineSpecError;

use crate::memory::memory_from;
use crate::node::node_from;

create_exception!(_engine, SpecError, PyValueError, "A refused model spec: `key` (machine-file table.key), `problem`, `combined_with`.");

pub(crate) fn spec_err(e: EngineSpecError) -> PyErr {
    Python::attach(|py| {
        let err = SpecError::new_err(e.to_string());
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("key", &e.key)?;
            value.setattr("problem", &e.problem)?;
            value.setattr("combined_with", &e.combined_with)
        };
        set().map(|()| err).unwrap_or_else(|failed| failed)
    })
}

/// Makes the node and memory specs of `params` (as a simulation would), raising SpecError for
/// the first value a constructor refuses: a machine file's tables are checked when it is read.
#[pyfunction]
fn check_specs(params: &Bound<'_, PyDict>) -> PyResult<()> {
    node_from(params)?;
    memory_from(params)?;
    Ok(())
}

/// The topology kinds with the sizes each takes, and the sizes that may be left out with their
/// default: `([(kind, [size, ...]), ...], {size: default})`.
#[pyfunction]
fn topology_kinds() -> (Vec<(&'static str, Vec<&'static str>)>, Vec<(&'static str, u32)>) {
    let kinds = TOPOLOGY_KINDS.iter().map(|(kind, sizes)| (*kind, sizes.to_vec())).collect();
    (kinds, OPTIONAL_SIZES.to_vec())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SpecError", m.py().get_type::<SpecError>())?;
    m.add_function(wrap_pyfunction!(check_specs, m)?)?;
    m.add_function(wrap_pyfunction!(topology_kinds, m)?)?;
    Ok(())
}
