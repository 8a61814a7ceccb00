//! A network attached to the simulator: topology, routing, placement and link sharing together.
//!
//! Timing of one message of `s` bytes between different nodes, started when the sender's overhead
//! `o` is paid: the message is a flow over its path (injection link, network links, ejection link)
//! that sends at its max-min fair rate ([`super::flow`]); its last byte reaches the destination
//! `head` later, where `head = Σ over the path's links (hop_latency + min(packet, s) / bandwidth)`
//! is the time the first packet needs to cross the path (the seed's `(Lf/B)·D`, plus router and
//! wire delay). Uncontended, a message therefore takes `head + s / min bandwidth on the path`.
//! Messages within one node do not touch the network.

use super::flow::{FlowId, FlowNet, LinkStats};
use super::{route, LinkClass, Placement, RankMap, Routing, Topology, TopologySpec};
use crate::time::Time;

/// A network as a machine file describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkSpec {
    pub topology: TopologySpec,
    /// A routing name valid for the topology; None: the topology's default.
    pub routing: Option<String>,
    pub placement: Placement,
    pub ranks_per_node: u32,
    /// Nominal bandwidths in bytes per second: network links (torus/mesh, fat tree, dragonfly
    /// intra-group), node injection and ejection links, dragonfly global links.
    pub link_bandwidth: f64,
    pub injection_bandwidth: f64,
    pub global_bandwidth: f64,
    /// Router and wire delay of every link a message crosses, in picoseconds.
    pub hop_latency: Time,
    /// Packet size: the head of a message crosses each link in packet / bandwidth.
    pub packet_bytes: u64,
    /// Seed of the random choices of Valiant and UGAL routing.
    pub seed: u64,
}

/// A message's flow once started.
#[derive(Clone, Copy, Debug)]
pub struct Started {
    pub flow: FlowId,
    /// Time for the first packet to cross the path.
    pub head: Time,
    /// Time to send all bytes alone on the path: bytes / slowest link.
    pub alone: Time,
}

pub struct Network {
    topo: Topology,
    routing: Routing,
    ranks: RankMap,
    flows: FlowNet,
    /// Bytes per picosecond of each link.
    capacity: Vec<f64>,
    hop_latency: Time,
    packet_bytes: u64,
    rng: u64,
    path: Vec<u32>,
    changed: Vec<FlowId>,
}

impl Network {
    /// Builds the network for a job of `ranks` ranks; errors name the faulty setting.
    pub fn new(spec: &NetworkSpec, ranks: u32) -> Result<Network, String> {
        for (name, v) in [("link_bandwidth", spec.link_bandwidth), ("injection_bandwidth", spec.injection_bandwidth), ("global_bandwidth", spec.global_bandwidth)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} must be a positive bandwidth, not {v}"));
            }
        }
        if spec.packet_bytes == 0 {
            return Err("packet size must be at least 1 byte".into());
        }
        let topo = Topology::new(spec.topology.clone())?;
        let routing = match &spec.routing {
            Some(name) => Routing::parse(name, &spec.topology)?,
            None => Routing::default_for(&spec.topology),
        };
        let ranks = RankMap::new(spec.placement.clone(), ranks, topo.num_nodes(), spec.ranks_per_node)?;
        let capacity: Vec<f64> = (0..topo.num_links())
            .map(|l| {
                let link = topo.link(l);
                let nominal = match link.class {
                    LinkClass::Injection | LinkClass::Ejection => spec.injection_bandwidth,
                    LinkClass::Local => spec.link_bandwidth,
                    LinkClass::Global => spec.global_bandwidth,
                };
                nominal * link.capacity / 1e12
            })
            .collect();
        Ok(Network {
            flows: FlowNet::new(capacity.clone()),
            topo,
            routing,
            ranks,
            capacity,
            hop_latency: spec.hop_latency,
            packet_bytes: spec.packet_bytes,
            rng: spec.seed,
            path: Vec::new(),
            changed: Vec::new(),
        })
    }

    /// The node rank `rank` runs on.
    pub fn node_of(&self, rank: u32) -> u32 {
        self.ranks.node_of(rank)
    }

    /// Whether two ranks share a node (their messages bypass the network).
    #[inline]
    pub fn same_node(&self, a: u32, b: u32) -> bool {
        self.ranks.node_of(a) == self.ranks.node_of(b)
    }

    /// The time up to which flows are accounted.
    pub fn now(&self) -> Time {
        self.flows.now()
    }

    /// Starts the flow of a message of `bytes` from rank `src` to rank `dst` at time `t`.
    pub fn start(&mut self, t: Time, src: u32, dst: u32, bytes: u64) -> Started {
        // An event from a CPU that ran behind (see docs/models.md) cannot start a flow in the past.
        self.flows.settle(t.max(self.flows.now()));
        self.path.clear();
        let (a, b) = (self.ranks.node_of(src), self.ranks.node_of(dst));
        route(&self.topo, self.routing, a, b, self.flows.load(), &mut self.rng, &mut self.path);
        let packet = self.packet_bytes.min(bytes.max(1)) as f64;
        let mut head = 0;
        let mut slowest = f64::INFINITY;
        for &l in &self.path {
            let c = self.capacity[l as usize];
            head += self.hop_latency + (packet / c).ceil() as Time;
            slowest = slowest.min(c);
        }
        let flow = self.flows.start(&self.path, bytes);
        Started { flow, head, alone: (bytes as f64 / slowest).ceil() as Time }
    }

    /// Ends a flow at time `t` (its last byte has left).
    pub fn finish(&mut self, t: Time, flow: FlowId) {
        self.flows.settle(t.max(self.flows.now()));
        self.flows.finish(flow);
    }

    /// New fair rates after the starts and finishes of one instant; returns the flows whose
    /// completion time changed, with that time.
    pub fn reallocate(&mut self, out: &mut Vec<(FlowId, Time)>) {
        self.changed.clear();
        self.flows.reallocate(&mut self.changed);
        out.extend(self.changed.iter().map(|&f| (f, self.flows.completion(f))));
    }

    pub fn stats(&self) -> &LinkStats {
        self.flows.stats()
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
}
