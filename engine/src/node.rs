//! What the ranks of one node share beyond the LogGOPS model: the NIC, whose injection rate falls
//! under congestion ([`crate::nic`]), and admission control in front of it ([`crate::policy`]).
//! See docs/models.md, "NIC congestion and admission control". The memory bandwidth a node's
//! computation shares with its incoming network traffic is in [`memory`] ("Memory contention (NiMC)").

pub mod memory;

use crate::nic::NicSpec;
use crate::policy::AdmissionSpec;
use crate::spec_error::SpecError;

/// The node-level models of a simulation, valid by construction ([`NodeSpec::new`]). Ranks `r`
/// with equal `r / ranks_per_node` share a node (with a network, its placement decides instead).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub(crate) ranks_per_node: u32,
    /// Congestion curves of the NIC; None: every rank keeps its own LogGOPS NIC.
    pub(crate) nic: Option<NicSpec>,
    pub(crate) policy: Option<AdmissionSpec>,
}

impl NodeSpec {
    /// `ranks_per_node` must be at least 1 (its error names `node.ranks_per_node`: the table it
    /// came from is the reader's to say).
    pub fn new(ranks_per_node: u32, nic: Option<NicSpec>, admission: Option<AdmissionSpec>) -> Result<NodeSpec, SpecError> {
        if ranks_per_node == 0 {
            return Err(SpecError::new("node.ranks_per_node", "must be at least 1"));
        }
        Ok(NodeSpec { ranks_per_node, nic, policy: admission })
    }
}
