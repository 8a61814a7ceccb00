//! What the ranks of one node share beyond the LogGOPS model: the NIC, whose injection rate falls
//! under congestion ([`crate::nic`]), and admission control in front of it ([`crate::policy`]).
//! See docs/models.md, "NIC congestion and admission control". The memory bandwidth a node's
//! computation shares with its incoming network traffic is in [`memory`] ("Memory contention (NiMC)").
//! The CPU cores the ranks of a node share, when they are fewer than its ranks, are [`CoreSpec`]
//! ("Shared cores").

pub mod memory;

use crate::nic::NicSpec;
use crate::policy::AdmissionSpec;
use crate::spec_error::SpecError;
use crate::time::Time;

/// The node-level models of a simulation, valid by construction ([`NodeSpec::new`]). Ranks `r`
/// with equal `r / ranks_per_node` share a node (with a network, its placement decides instead).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub(crate) ranks_per_node: u32,
    /// Congestion curves of the NIC; None: every rank keeps its own LogGOPS NIC.
    pub(crate) nic: Option<NicSpec>,
    pub(crate) policy: Option<AdmissionSpec>,
    /// Cores the node's ranks share; None: a core per rank.
    pub(crate) cores: Option<CoreSpec>,
    /// How long a rank waiting in a token pool's line takes to see its tokens (0: at once).
    pub(crate) handoff: Time,
}

/// A node's ranks share `per_node` cores; a core passing from one rank to another costs `switch`
/// (the yield and context switch of a rank that waits, measured by `contend bench fit`); a rank
/// waiting in a spinning receive gives its core up only at the scheduler's ticks, every `quantum`
/// (0: it yields like any other).
#[derive(Clone, Debug, PartialEq)]
pub struct CoreSpec {
    pub(crate) per_node: u32,
    pub(crate) switch: Time,
    pub(crate) quantum: Time,
    /// Every rank of the run shares the `per_node` cores, whatever node it is on: one host (whose
    /// nodes, if any, are emulated: a throttle's ranks per node, namespaces).
    pub(crate) one_host: bool,
    /// Per rank, the one core of its node it runs on (the kernel keeps a task on its CPU's run
    /// queue between load balances); empty: any core of its node.
    pub(crate) core_of: Vec<u32>,
}

impl CoreSpec {
    /// `per_node` must be at least 1 (its error names `cores.per_node`).
    pub fn new(per_node: u32, switch: Time, quantum: Time) -> Result<CoreSpec, SpecError> {
        if per_node == 0 {
            return Err(SpecError::new("cores.per_node", "must be at least 1"));
        }
        Ok(CoreSpec { per_node, switch, quantum, one_host: false, core_of: Vec::new() })
    }

    /// The same cores, shared by every rank of the run (one host).
    pub fn on_one_host(self) -> CoreSpec {
        CoreSpec { one_host: true, ..self }
    }

    /// The same cores, rank r running only on core `core_of[r]` of its node (below `per_node`; its
    /// error names `cores.placement`). Ranks the list does not reach run on any core.
    pub fn pinned(self, core_of: Vec<u32>) -> Result<CoreSpec, SpecError> {
        if let Some((r, &c)) = core_of.iter().enumerate().find(|&(_, &c)| c >= self.per_node) {
            return Err(SpecError::new("cores.placement", format!("rank {r} on core {c}: a node has cores 0..{}", self.per_node - 1)));
        }
        Ok(CoreSpec { core_of, ..self })
    }

    /// Whether the placement puts two ranks of one node (`node_of`, per rank) on one core.
    pub(crate) fn pins_two_on_a_core(&self, node_of: &[u32]) -> bool {
        let mut seen = std::collections::HashSet::new();
        self.core_of.iter().zip(node_of).any(|(&c, &n)| !seen.insert((n, c)))
    }
}

impl NodeSpec {
    /// `ranks_per_node` must be at least 1 (its error names `node.ranks_per_node`: the table it
    /// came from is the reader's to say).
    pub fn new(ranks_per_node: u32, nic: Option<NicSpec>, admission: Option<AdmissionSpec>) -> Result<NodeSpec, SpecError> {
        if ranks_per_node == 0 {
            return Err(SpecError::new("node.ranks_per_node", "must be at least 1"));
        }
        Ok(NodeSpec { ranks_per_node, nic, policy: admission, cores: None, handoff: 0 })
    }

    /// The same node, a rank waiting in its token pool's line taking `handoff` to see its tokens
    /// once they are back: it sees them at its next poll, as the native library's waiters do (its
    /// error names `throttle.handoff_ns`: only the ranks of a token pool wait in line).
    pub fn with_handoff(self, handoff: Time) -> Result<NodeSpec, SpecError> {
        let ranks_wait_in_line = matches!(self.policy, Some(AdmissionSpec::Token(_)) | Some(AdmissionSpec::Adaptive(_)));
        if handoff > 0 && !ranks_wait_in_line {
            return Err(SpecError::new("throttle.handoff_ns", "applies to policies token and adaptive only (their ranks wait in line)"));
        }
        Ok(NodeSpec { handoff, ..self })
    }

    /// The same node, its ranks sharing `cores`.
    pub fn with_cores(self, cores: CoreSpec) -> NodeSpec {
        NodeSpec { cores: Some(cores), ..self }
    }

    /// Whether the NIC or admission model applies (`NodeSim`); cores alone need neither.
    pub(crate) fn shares_the_nic(&self) -> bool {
        self.nic.is_some() || self.policy.is_some()
    }
}
