//! Topology-aware mapping: what a placement of ranks on nodes costs, and local refinement of it.
//!
//! - [`traffic`]: the communication graph of a GOAL schedule (bytes and messages per ordered pair).
//! - [`loads`]: each pair's bytes laid on the links of its route (link loads, hops).
//! - [`refine`]: swaps of ranks between nodes that lower hop-bytes, then the busiest link's load.
//!
//! Routes here are those of an idle network ([`IdleRoutes`]): the engine's routing with no flows in
//! flight, so adaptive policies take the route they would choose alone.

pub mod loads;
pub mod refine;
pub mod traffic;

use crate::net::{route, LinkId, NetworkSpec, Routing, Topology, TopologySpec};

/// The engine's routes between nodes on an idle network. Random choices (Valiant, and UGAL's
/// candidate detour) draw from a state derived from the network's seed and the pair of nodes, so
/// a pair of nodes always takes the same route, whatever else is routed.
pub struct IdleRoutes {
    topo: Topology,
    routing: Routing,
    seed: u64,
    /// No flows on any link (what adaptive policies read).
    idle: Vec<u32>,
    /// Whether the route's length is [`Topology::hops`] (every policy but Valiant and UGAL, which
    /// may leave the minimal path).
    minimal: bool,
    /// Torus and mesh: every node's coordinates (node-major), so that a hop count costs no
    /// division; empty otherwise.
    coords: Vec<u32>,
    sizes: Vec<u32>,
    wrap: bool,
}

impl IdleRoutes {
    /// The topology and routing policy of `spec`; errors name the faulty setting.
    pub fn new(spec: &NetworkSpec) -> Result<IdleRoutes, String> {
        let topo = Topology::new(spec.topology.clone()).map_err(|e| e.problem)?;
        let routing = spec.routing_policy()?;
        let idle = if matches!(routing, Routing::GridAdaptive | Routing::FatTreeAdaptive | Routing::Ugal) {
            vec![0; topo.num_links() as usize]
        } else {
            Vec::new()
        };
        let minimal = !matches!(routing, Routing::Valiant | Routing::Ugal);
        let (sizes, wrap) = match &spec.topology {
            TopologySpec::Torus { dims } => (dims.clone(), true),
            TopologySpec::Mesh { dims } => (dims.clone(), false),
            _ => (Vec::new(), false),
        };
        let coords = if sizes.is_empty() { Vec::new() } else { (0..topo.num_nodes()).flat_map(|n| topo.coordinates(n)).collect() };
        Ok(IdleRoutes { topo, routing, seed: spec.seed, idle, minimal, coords, sizes, wrap })
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Appends the links from node `a` to node `b` (injection, network, ejection; nothing when
    /// `a == b`). O(path length), see [`crate::net::routing`].
    pub fn path(&self, a: u32, b: u32, out: &mut Vec<LinkId>) {
        let mut rng = self.seed ^ ((a as u64) << 32 | b as u64).wrapping_mul(0x9E3779B97F4A7C15);
        route(&self.topo, self.routing, a, b, &self.idle, &mut rng, out);
    }

    /// Network links (injection and ejection not counted) on the route from `a` to `b`.
    /// O(dimensions) for minimal policies; O(path length) otherwise, using `scratch`.
    pub fn hops(&self, a: u32, b: u32, scratch: &mut Vec<LinkId>) -> u32 {
        if !self.coords.is_empty() {
            // Torus and mesh routes are minimal under both policies.
            let d = self.sizes.len();
            let (x, y) = (&self.coords[a as usize * d..][..d], &self.coords[b as usize * d..][..d]);
            return (0..d)
                .map(|i| {
                    let apart = x[i].abs_diff(y[i]);
                    if self.wrap { apart.min(self.sizes[i] - apart) } else { apart }
                })
                .sum();
        }
        if self.minimal || a == b {
            return self.topo.hops(a, b);
        }
        scratch.clear();
        self.path(a, b, scratch);
        scratch.len() as u32 - 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Placement, Sharing};

    pub(crate) fn spec(topology: TopologySpec, routing: Option<&str>) -> NetworkSpec {
        NetworkSpec {
            topology,
            routing: routing.map(str::to_string),
            placement: Placement::Block,
            ranks_per_node: 1,
            link_bandwidth: 1e9,
            injection_bandwidth: 1e9,
            global_bandwidth: 1e9,
            hop_latency: 0,
            packet_bytes: 64,
            seed: 3,
            sharing: Sharing::Flow,
            bucket: None,
        }
    }

    #[test]
    fn hops_are_the_route_network_links_under_every_policy() {
        let shapes = [
            TopologySpec::Torus { dims: vec![4, 3, 2] },
            TopologySpec::Mesh { dims: vec![3, 4] },
            TopologySpec::FatTree { k: 2, levels: 3, oversubscription: 2 },
            TopologySpec::Dragonfly { a: 2, p: 2, h: 2, g: 4 },
            TopologySpec::Crossbar { nodes: 4 },
        ];
        for shape in shapes {
            for &routing in Routing::valid_for(&shape) {
                let routes = IdleRoutes::new(&spec(shape.clone(), Some(routing.name()))).unwrap();
                let n = routes.topology().num_nodes();
                let (mut path, mut scratch) = (Vec::new(), Vec::new());
                for a in 0..n {
                    for b in 0..n {
                        path.clear();
                        routes.path(a, b, &mut path);
                        let network = path.len().saturating_sub(2) as u32;
                        assert_eq!(routes.hops(a, b, &mut scratch), network, "{shape:?} {routing:?} {a}->{b}");
                        // The same pair, the same route.
                        let mut again = Vec::new();
                        routes.path(a, b, &mut again);
                        assert_eq!(again, path);
                    }
                }
            }
        }
    }
}
