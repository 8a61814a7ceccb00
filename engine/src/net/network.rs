//! A network attached to the simulator: topology, routing, placement and link sharing together.
//!
//! A message of `s` bytes between different nodes starts when the sender's overhead `o` is paid and
//! crosses its path (injection link, network links, ejection link) under one of two sharing models:
//! - [`Sharing::Flow`]: a fluid flow at its max-min fair rate ([`super::flow`]); its last byte
//!   reaches the destination `head` later, where `head = Σ over the path's links (hop_latency +
//!   min(packet, s) / bandwidth)` is the time the first packet needs to cross the path (Bhatele and Kale
//!   2009's `(Lf/B)·D`, plus router and wire delay). Uncontended: `head + s / min bandwidth on the path`.
//! - [`Sharing::Packet`]: packets forwarded store-and-forward with round-robin service at every link
//!   ([`super::packet`]). Uncontended: one packet time less than the flow model (the last packet
//!   does not wait for itself).
//!
//! Messages within one node do not touch the network.

use super::flow::{FlowId, FlowNet, LinkStats};
use super::packet::PacketNet;
use super::{route, LinkClass, Placement, RankMap, Routing, Topology, TopologySpec};
use crate::spec_error::SpecError;
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
    pub sharing: Sharing,
    /// Every link a token bucket (flow sharing only); None: links of one rate.
    pub bucket: Option<LinkBucket>,
}

/// Links shaped as token buckets (tc's tbf): a link carries up to `peak_bandwidth` (times its
/// capacity factor) while its bucket holds tokens, its nominal bandwidth once the bucket is empty;
/// the bucket holds `burst_bytes` and fills at the nominal bandwidth less what the link carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkBucket {
    pub burst_bytes: u64,
    /// Bytes per second, at least every nominal bandwidth.
    pub peak_bandwidth: f64,
}

impl LinkBucket {
    /// Picoseconds for `bytes` alone on a link of `sustained` and `peak` bytes per picosecond whose
    /// bucket is full: at the peak until the bucket runs out (it drains at peak - sustained), then
    /// at the sustained rate.
    pub fn alone(&self, bytes: u64, sustained: f64, peak: f64) -> Time {
        let burst = self.burst_bytes as f64;
        let at_peak = if peak > sustained { burst * peak / (peak - sustained) } else { f64::INFINITY };
        let bytes = bytes as f64;
        let t = if bytes <= at_peak { bytes / peak } else { burst / (peak - sustained) + (bytes - at_peak) / sustained };
        t.ceil() as Time
    }
}

impl NetworkSpec {
    /// The routing policy the spec names, or the topology's default; errors when it does not apply.
    pub fn routing_policy(&self) -> Result<Routing, String> {
        match &self.routing {
            Some(name) => Routing::parse(name, &self.topology),
            None => Ok(Routing::default_for(&self.topology)),
        }
    }
}

/// How messages in flight share links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Fluid max-min fair rates, recomputed whenever a message starts or ends: exact shares, cost
    /// growing with the number of messages in flight.
    Flow,
    /// Packets with round-robin service at every link: shares exact to within a packet, cost
    /// proportional to packets x links crossed.
    Packet,
}

impl Sharing {
    pub fn parse(name: &str) -> Result<Sharing, String> {
        match name {
            "flow" => Ok(Sharing::Flow),
            "packet" => Ok(Sharing::Packet),
            _ => Err(format!("unknown link sharing model '{name}' (flow, packet)")),
        }
    }
}

enum Links {
    Flow(FlowNet),
    Packet(PacketNet),
}

/// A message's flow once started.
#[derive(Clone, Copy, Debug)]
pub struct Started {
    pub flow: FlowId,
    /// When it entered the network (not before the network's own clock).
    pub at: Time,
    /// Time for the first packet to cross the path.
    pub head: Time,
    /// Time to send all bytes alone on the path: bytes / slowest link (with buckets: full ones).
    pub alone: Time,
}

pub struct Network {
    topo: Topology,
    routing: Routing,
    ranks: RankMap,
    links: Links,
    /// Bytes per picosecond of each link (with buckets: once its bucket is empty).
    capacity: Vec<f64>,
    /// With buckets: each link's peak, bytes per picosecond.
    bucket: Option<(LinkBucket, Vec<f64>)>,
    hop_latency: Time,
    packet_bytes: u64,
    rng: u64,
    path: Vec<u32>,
    changed: Vec<FlowId>,
}

impl Network {
    /// Builds the network for a job of `ranks` ranks; errors name the faulty `[topology]` key
    /// (ranks that do not fit: the shape's first size).
    pub fn new(spec: &NetworkSpec, ranks: u32) -> Result<Network, SpecError> {
        for (name, v) in [("link_bandwidth", spec.link_bandwidth), ("injection_bandwidth", spec.injection_bandwidth), ("global_bandwidth", spec.global_bandwidth)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(SpecError::new(format!("topology.{name}"), format!("{name} must be a positive bandwidth, not {v}")));
            }
        }
        if let Some(b) = &spec.bucket {
            if spec.sharing != Sharing::Flow {
                return Err(SpecError::new("topology.burst", "token-bucket links need sharing = \"flow\" (the packet model has none)"));
            }
            if b.burst_bytes == 0 {
                return Err(SpecError::new("topology.burst", "a bucket holds at least 1 byte"));
            }
            let fastest = spec.link_bandwidth.max(spec.injection_bandwidth).max(spec.global_bandwidth);
            if !(b.peak_bandwidth.is_finite() && b.peak_bandwidth >= fastest) {
                return Err(SpecError::new("topology.peak_bandwidth", format!("must be at least the fastest link's bandwidth ({} MB/s), not {} MB/s", fastest / 1e6, b.peak_bandwidth / 1e6)));
            }
        }
        if spec.packet_bytes == 0 {
            return Err(SpecError::new("topology.packet", "packet size must be at least 1 byte"));
        }
        let topo = Topology::new(spec.topology.clone())?;
        if spec.sharing == Sharing::Packet && topo.num_links() as usize >= PacketNet::MAX_LINKS {
            return Err(SpecError::new("topology.sharing", format!("the packet model handles fewer than {} links; this network has {} (use sharing = \"flow\")", PacketNet::MAX_LINKS, topo.num_links())));
        }
        let routing = spec.routing_policy().map_err(|e| SpecError::new("topology.routing", e))?;
        let ranks = RankMap::new(spec.placement.clone(), ranks, topo.num_nodes(), spec.ranks_per_node).map_err(|e| match e.key.as_str() {
            "topology" => SpecError { key: format!("topology.{}", spec.topology.size_keys()[0]), ..e },
            _ => e,
        })?;
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
        let bucket = spec.bucket.map(|b| (b, (0..topo.num_links()).map(|l| b.peak_bandwidth * topo.link(l).capacity / 1e12).collect::<Vec<f64>>()));
        let links = match (spec.sharing, &bucket) {
            (Sharing::Flow, Some((b, peak))) => Links::Flow(FlowNet::new(peak.clone()).with_buckets(capacity.clone(), b.burst_bytes)),
            (Sharing::Flow, None) => Links::Flow(FlowNet::new(capacity.clone())),
            (Sharing::Packet, _) => Links::Packet(PacketNet::new(capacity.clone(), spec.packet_bytes, spec.hop_latency)),
        };
        Ok(Network {
            links,
            topo,
            routing,
            ranks,
            capacity,
            bucket,
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

    /// The time up to which the links are accounted.
    pub fn now(&self) -> Time {
        match &self.links {
            Links::Flow(f) => f.now(),
            Links::Packet(p) => p.now(),
        }
    }

    /// Whether rates need [`Network::reallocate`] after starts and finishes (the flow model).
    pub fn is_fluid(&self) -> bool {
        matches!(self.links, Links::Flow(_))
    }

    /// Starts a message of `bytes` from rank `src` to rank `dst` at time `t`.
    pub fn start(&mut self, t: Time, src: u32, dst: u32, bytes: u64) -> Started {
        // An event from a CPU that ran behind (see docs/models.md) cannot start a flow in the past.
        let t = t.max(self.now());
        if let Links::Flow(f) = &mut self.links {
            f.settle(t);
        }
        self.path.clear();
        let (a, b) = (self.ranks.node_of(src), self.ranks.node_of(dst));
        let load = match &self.links {
            Links::Flow(f) => f.load(),
            Links::Packet(p) => p.load(),
        };
        route(&self.topo, self.routing, a, b, load, &mut self.rng, &mut self.path);
        let packet = self.packet_bytes.min(bytes.max(1)) as f64;
        let mut head = 0;
        let mut alone = 0;
        for &l in &self.path {
            let c = self.capacity[l as usize];
            // A bucketed link's first packet goes at the peak: a message finds tokens for one packet.
            let (first, whole) = match &self.bucket {
                Some((b, peak)) => (peak[l as usize], b.alone(bytes, c, peak[l as usize])),
                None => (c, (bytes as f64 / c).ceil() as Time),
            };
            head += self.hop_latency + (packet / first).ceil() as Time;
            alone = alone.max(whole);
        }
        let flow = match &mut self.links {
            Links::Flow(f) => f.start(&self.path, bytes),
            Links::Packet(p) => p.start(t, &self.path, bytes),
        };
        Started { flow, at: t, head, alone }
    }

    /// Flow model: ends a flow at time `t` (its last byte has left).
    pub fn finish(&mut self, t: Time, flow: FlowId) {
        let Links::Flow(f) = &mut self.links else { unreachable!("only flows finish") };
        f.settle(t.max(f.now()));
        f.finish(flow);
    }

    /// Flow model: new fair rates after the starts and finishes of one instant; returns the flows
    /// whose completion time changed, with that time.
    pub fn reallocate(&mut self, out: &mut Vec<(FlowId, Time)>) {
        let Links::Flow(f) = &mut self.links else { unreachable!("only flows are reallocated") };
        self.changed.clear();
        f.reallocate(&mut self.changed);
        out.extend(self.changed.iter().map(|&id| (id, f.completion(id))));
    }

    /// Flow model with token buckets: when a bucket runs out at the current rates (then
    /// [`Network::bucket_empties`]).
    pub fn next_bucket_empty(&self) -> Option<Time> {
        match &self.links {
            Links::Flow(f) => f.next_bucket_empty(),
            Links::Packet(_) => None,
        }
    }

    /// Flow model: a bucket runs out at `t`; the rates must be reallocated.
    pub fn bucket_empties(&mut self, t: Time) {
        let Links::Flow(f) = &mut self.links else { unreachable!("only flows have buckets") };
        f.settle(t.max(f.now()));
    }

    /// Packet model: time of the next link event, if any.
    pub fn next_packet_event(&mut self) -> Option<Time> {
        match &mut self.links {
            Links::Packet(p) => p.next_time(),
            Links::Flow(_) => None,
        }
    }

    /// Packet model: processes the next link event; returns the message it delivered, if any, with
    /// the time its last packet reaches the destination.
    pub fn packet_step(&mut self) -> Option<(FlowId, Time)> {
        let Links::Packet(p) = &mut self.links else { unreachable!("only packets step") };
        p.step()
    }

    /// Link events processed by the packet model (0 for the flow model).
    pub fn packet_events(&self) -> u64 {
        match &self.links {
            Links::Packet(p) => p.events_processed(),
            Links::Flow(_) => 0,
        }
    }

    pub fn stats(&self) -> &LinkStats {
        match &self.links {
            Links::Flow(f) => f.stats(),
            Links::Packet(p) => p.stats(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
}
