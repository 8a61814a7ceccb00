//! What the ranks of one node share beyond the LogGOPS model: the NIC, whose injection rate falls
//! under congestion ([`crate::nic`]), and admission control in front of it ([`crate::policy`]).
//! See docs/models.md, "NIC congestion and admission control". The memory bandwidth a node's
//! computation shares with its incoming network traffic is in [`memory`] ("Memory contention (NiMC)").

pub mod memory;

use crate::nic::NicCurves;
use crate::policy::PolicySpec;

/// The node-level models of a simulation. Ranks `r` with equal `r / ranks_per_node` share a node
/// (with a network, its placement decides instead).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeModel {
    pub ranks_per_node: u32,
    /// Congestion curves of the NIC; None: every rank keeps its own LogGOPS NIC.
    pub nic: Option<NicCurves>,
    pub policy: Option<PolicySpec>,
}

impl NodeModel {
    /// Checks the model; `networked`: the simulation also has a network.
    pub fn validate(&self, networked: bool) -> Result<(), String> {
        if self.ranks_per_node == 0 {
            return Err("ranks_per_node must be at least 1".into());
        }
        if networked && self.nic.is_some() {
            return Err("NIC congestion curves with a network topology are not supported (give one or the other)".into());
        }
        self.policy.as_ref().map_or(Ok(()), PolicySpec::validate)
    }
}
