//! What a run simulates besides the schedule: the LogGOPS parameters and the optional models, as
//! the typed specs of their own modules. [`crate::sim::simulate`] takes one [`Scenario`] and checks
//! here, in one place, that its models fit the program and each other (each spec checked its own
//! values when it was made).

use crate::net::{Network, NetworkSpec};
use crate::node::memory::MemorySpec;
use crate::node::NodeSpec;
use crate::noise::Noise;
use crate::sim::params::Params;
use crate::spec_error::SpecError;

/// The parameters and models of a simulation; `None`: that model is off (exact LogGOPS).
#[derive(Clone, Debug)]
pub struct Scenario {
    pub params: Params,
    /// Links between nodes replace L and G there (docs/models.md, "Network").
    pub network: Option<NetworkSpec>,
    /// Detours that stretch every rank's CPU work (docs/models.md, "Noise").
    pub noise: Option<Noise>,
    /// NIC congestion and admission control (docs/models.md).
    pub node: Option<NodeSpec>,
    /// Memory bandwidth shared with incoming network traffic (docs/models.md, "Memory contention
    /// (NiMC)").
    pub memory: Option<MemorySpec>,
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

    pub fn with_node(self, node: NodeSpec) -> Scenario {
        Scenario { node: Some(node), ..self }
    }

    pub fn with_memory(self, memory: MemorySpec) -> Scenario {
        Scenario { memory: Some(memory), ..self }
    }

    /// The network of `ranks` ranks, if the scenario has one, after checking that the models fit
    /// together; the error names the key or the model at fault.
    pub(crate) fn check(&self, ranks: u32) -> Result<Option<Network>, SpecError> {
        if self.memory.is_some() && self.node.as_ref().is_some_and(|node| node.cores.is_some()) {
            return Err(SpecError::combination("memory", "cores", "memory: the memory model does not combine with shared cores yet (give one or the other)"));
        }
        if self.memory.is_some() && self.noise.is_some() {
            return Err(SpecError::combination("memory", "noise", "memory: the memory model does not combine with noise yet (give one or the other)"));
        }
        let network = self.network.as_ref().map(|spec| Network::new(spec, ranks)).transpose()?;
        if network.is_some() && self.node.as_ref().is_some_and(|node| node.nic.is_some()) {
            return Err(SpecError::combination("nic", "topology", "NIC congestion curves with a network topology are not supported (give one or the other)"));
        }
        Ok(network)
    }
}

/// Why [`crate::sim::simulate`] returned no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The scenario does not fit the program or its models do not combine (the error says which key).
    Invalid(SpecError),
    /// The progress callback asked to stop.
    Cancelled,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Invalid(why) => write!(f, "{why}"),
            Stopped::Cancelled => f.write_str("cancelled"),
        }
    }
}
