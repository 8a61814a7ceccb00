//! Why a model's spec was refused, as data: the machine-file key it concerns (so that a reader of a
//! machine file can point at the key's line) and the problem.

use std::fmt;

/// A refused spec. `key` names what is wrong as a machine file writes it: `table.key`
/// (`topology.link_bandwidth`, `throttle.tokens`, `memory.floor`); an entry of a list of tables
/// adds its position in the list the engine was given (`nic.class.0.concurrency`,
/// `throttle.class.1.crct`); a bare table (`nic`, `memory`) when the model as a whole does not
/// fit, with `combined_with` naming the other model when two do not combine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub key: String,
    pub problem: String,
    pub combined_with: Option<String>,
}

impl SpecError {
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> SpecError {
        SpecError { key: key.into(), problem: problem.into(), combined_with: None }
    }

    /// Models `key` and `other` do not combine.
    pub fn combination(key: &str, other: &str, problem: impl Into<String>) -> SpecError {
        SpecError { combined_with: Some(other.into()), ..SpecError::new(key, problem) }
    }
}

/// `key: problem` for a key in a table; a whole table's problem is a sentence that names it.
impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.contains('.') {
            write!(f, "{}: {}", self.key, self.problem)
        } else {
            f.write_str(&self.problem)
        }
    }
}

impl std::error::Error for SpecError {}

/// For callers that report errors as text.
impl From<SpecError> for String {
    fn from(e: SpecError) -> String {
        e.to_string()
    }
}
