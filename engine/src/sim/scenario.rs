//! What a run simulates besides the schedule: the LogGOPS parameters and the optional models, as
//! the typed specs of their own modules. [`crate::sim::simulate`] takes one [`Scenario`] and checks
//! here, in one place, that its models fit the program and each other.

use crate::net::{Network, NetworkSpec};
use crate::node::memory::MemoryModel;
use crate::node::NodeModel;
use crate::noise::Noise;
use crate::sim::params::Params;

/// The parameters and models of a simulation; `None`: that model is off (exact LogGOPS).
#[derive(Clone, Debug)]
pub struct Scenario {
    pub params: Params,
    /// Links between nodes replace L and G there (docs/models.md, "Network").
    pub network: Option<NetworkSpec>,
    /// Detours that stretch every rank's CPU work (docs/models.md, "Noise").
    pub noise: Option<Noise>,
    /// NIC congestion and admission control (docs/models.md).
    pub node: Option<NodeModel>,
    /// Memory bandwidth shared with incoming network traffic (docs/models.md, "Memory contention
    /// (NiMC)").
    pub memory: Option<MemoryModel>,
}

impl Scenario {
    /// Plain LogGOPS with `params`, no optional model.
    pub fn new(params: Params) -> Scenario {
        Scenario { params, network: None, noise: None, node: None, memory: None }
    }

    pub fn with_network(self, network: NetworkSpec) -> Scenario {
        Scenario { network: Some(network), ..self }
    }

    pub fn with_noise(self, noise: Noise) -> Scenario {
        Scenario { noise: Some(noise), ..self }
    }

    pub fn with_node(self, node: NodeModel) -> Scenario {
        Scenario { node: Some(node), ..self }
    }

    pub fn with_memory(self, memory: MemoryModel) -> Scenario {
        Scenario { memory: Some(memory), ..self }
    }

    /// The network of `ranks` ranks, if the scenario has one, after checking that the models fit
    /// together; the error says which model does not.
    pub(crate) fn check(&self, ranks: u32) -> Result<Option<Network>, String> {
        if self.memory.is_some() && self.noise.is_some() {
            return Err("memory: the memory model does not combine with noise yet (give one or the other)".into());
        }
        if let Some(memory) = &self.memory {
            memory.validate()?;
        }
        let network = self.network.as_ref().map(|spec| Network::new(spec, ranks)).transpose().map_err(|e| format!("network: {e}"))?;
        if let Some(node) = &self.node {
            node.validate(network.is_some())?;
        }
        Ok(network)
    }
}

/// Why [`crate::sim::simulate`] returned no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The scenario does not fit the program or its models do not combine (the message says why).
    Invalid(String),
    /// The progress callback asked to stop.
    Cancelled,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Invalid(why) => f.write_str(why),
            Stopped::Cancelled => f.write_str("cancelled"),
        }
    }
}
