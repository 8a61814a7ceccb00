//! Routing: the links a message crosses from one node to another, under each topology's policies.
//!
//! [`route`] appends the whole path (injection link, network links, ejection link) to a caller's
//! buffer, so routing allocates nothing once the buffer has grown. A route costs O(path length),
//! plus O(k) per level climbed by fat-tree adaptive routing (which reads the flow count of each
//! candidate up-link) and O(c) per dragonfly group left, `c` being the number of parallel global
//! links between two groups (1 in a dragonfly of maximal size, `g = a·h + 1`). Random choices
//! draw from splitmix64 on the caller's state: the same loads and state give the same route.

use super::topology::{Dragonfly, FatTree, Grid, LinkId, Shape, Topology, TopologySpec};

/// A routing policy. Each applies to some topologies only ([`Routing::valid_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Routing {
    /// Torus and mesh: correct the lowest dimension first, then the next; the shorter way round
    /// a torus ring, `+` when both ways are equally long.
    DimensionOrder,
    /// Torus and mesh, minimal adaptive (as Blue Gene's dynamic routing, decided per message when
    /// it starts): at each router, among the dimensions not yet corrected, step along the one whose
    /// outgoing link (the shorter way round; `+` on a tie) has the fewest flows; ties go to the lower
    /// dimension. Same length as dimension-order.
    GridAdaptive,
    /// Fat tree, static: going up from level `l`, take up-port `j` = base-k digit `l` of the
    /// destination (the usual d-mod-k); the way down is then unique.
    DModK,
    /// Fat tree, adaptive: at each level the up-link with the fewest flows; ties go to the
    /// d-mod-k port, then to the next ports after it in cyclic order.
    FatTreeAdaptive,
    /// Dragonfly, static: local, global, local (each hop only if needed); among the parallel
    /// global links of fewest hops, a hash of (src, dst) picks one, so a pair always takes the
    /// same path. Crossbar: its single path.
    Minimal,
    /// Dragonfly: minimally to a random intermediate group (neither the source's nor the
    /// destination's), then minimally to the destination; at most 2 global and 5 network links.
    /// Within a group, or with fewer than 3 groups, the minimal path.
    Valiant,
    /// Dragonfly, UGAL-local style: draws a Valiant path and takes it only if
    /// `(load + 1) × hops` is smaller than the minimal path's, where `load` is the largest flow
    /// count on the path's links up to and including its first global link (the part of the
    /// path whose queues the source router would feel through back-pressure) and `hops` counts
    /// network links. Ties go to the minimal path. Within a group, or with fewer than 3 groups,
    /// the minimal path.
    Ugal,
}

const GRID: &[Routing] = &[Routing::DimensionOrder, Routing::GridAdaptive];
const FAT_TREE: &[Routing] = &[Routing::DModK, Routing::FatTreeAdaptive];
const DRAGONFLY: &[Routing] = &[Routing::Minimal, Routing::Valiant, Routing::Ugal];
const CROSSBAR: &[Routing] = &[Routing::Minimal];

impl Routing {
    /// The name machine files use: "dimension-order", "d-mod-k", "adaptive" (torus, mesh, fat
    /// tree), "minimal", "valiant", "ugal".
    pub fn name(self) -> &'static str {
        match self {
            Routing::DimensionOrder => "dimension-order",
            Routing::DModK => "d-mod-k",
            Routing::GridAdaptive | Routing::FatTreeAdaptive => "adaptive",
            Routing::Minimal => "minimal",
            Routing::Valiant => "valiant",
            Routing::Ugal => "ugal",
        }
    }

    /// The policies that apply to `spec`, the default first.
    pub fn valid_for(spec: &TopologySpec) -> &'static [Routing] {
        match spec {
            TopologySpec::Torus { .. } | TopologySpec::Mesh { .. } => GRID,
            TopologySpec::FatTree { .. } => FAT_TREE,
            TopologySpec::Dragonfly { .. } => DRAGONFLY,
            TopologySpec::Crossbar { .. } => CROSSBAR,
        }
    }

    /// The default policy of `spec`: static and deterministic (dimension-order, d-mod-k,
    /// minimal).
    pub fn default_for(spec: &TopologySpec) -> Routing {
        Routing::valid_for(spec)[0]
    }

    /// Reads a policy name (case and `_`/`-` insensitive; aliases "dor", "dmodk", and "adaptive"
    /// meaning UGAL on a dragonfly) and checks that it applies to `spec`.
    pub fn parse(name: &str, spec: &TopologySpec) -> Result<Routing, String> {
        let valid = Routing::valid_for(spec);
        let choices = || valid.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ");
        let routing = match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "dimension-order" | "dor" => Routing::DimensionOrder,
            "d-mod-k" | "dmodk" => Routing::DModK,
            "adaptive" if matches!(spec, TopologySpec::Dragonfly { .. }) => Routing::Ugal,
            "adaptive" if matches!(spec, TopologySpec::Torus { .. } | TopologySpec::Mesh { .. }) => Routing::GridAdaptive,
            "adaptive" => Routing::FatTreeAdaptive,
            "minimal" => Routing::Minimal,
            "valiant" => Routing::Valiant,
            "ugal" => Routing::Ugal,
            _ => {
                return Err(format!(
                    "unknown routing '{name}'; a {} takes one of: {}",
                    spec.kind(),
                    choices()
                ))
            }
        };
        if !valid.contains(&routing) {
            return Err(format!(
                "routing '{name}' does not apply to a {}; use one of: {}",
                spec.kind(),
                choices()
            ));
        }
        Ok(routing)
    }
}

/// splitmix64: one well-mixed 64-bit draw from `state`, which it advances.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// Appends to `out` the links from node `src` to node `dst`: `src`'s injection link, the network
/// links in order, `dst`'s ejection link; nothing when `src == dst`. Consecutive links share a
/// vertex. `load[l]` is the number of flows now on link `l`; only [`Routing::GridAdaptive`],
/// [`Routing::FatTreeAdaptive`] and [`Routing::Ugal`] read it, and need `load.len() == topo.num_links()`. `rng` is advanced
/// by [`Routing::Valiant`] and [`Routing::Ugal`] only. Deterministic in (loads, rng state).
/// Panics if a node is out of range or `routing` does not apply to the topology.
/// Cost: see the module documentation; no allocation beyond growing `out`.
pub fn route(
    topo: &Topology,
    routing: Routing,
    src: u32,
    dst: u32,
    load: &[u32],
    rng: &mut u64,
    out: &mut Vec<LinkId>,
) {
    let n = topo.num_nodes();
    assert!(src < n && dst < n, "route {src} -> {dst} out of range ({n} nodes)");
    assert!(
        Routing::valid_for(topo.spec()).contains(&routing),
        "routing {} does not apply to a {}",
        routing.name(),
        topo.spec().kind()
    );
    if src == dst {
        return;
    }
    out.push(topo.injection(src));
    match &topo.shape {
        Shape::Grid(grid) if routing == Routing::GridAdaptive => grid_adaptive(grid, src, dst, load, out),
        Shape::Grid(grid) => dimension_order(grid, src, dst, out),
        Shape::FatTree(tree) => {
            let adaptive = (routing == Routing::FatTreeAdaptive).then_some(load);
            fat_tree(tree, src, dst, adaptive, out)
        }
        Shape::Dragonfly(df) => dragonfly(df, routing, src, dst, load, rng, out),
        Shape::Crossbar => {}
    }
    out.push(topo.ejection(dst));
}

fn dimension_order(grid: &Grid, src: u32, dst: u32, out: &mut Vec<LinkId>) {
    let mut r = src;
    for i in 0..grid.dims.len() {
        let steps = grid.offset(i, grid.coordinate(r, i), grid.coordinate(dst, i));
        for _ in 0..steps.unsigned_abs() {
            let (link, next) = grid.step(r, i, steps > 0);
            out.push(link);
            r = next;
        }
    }
    debug_assert_eq!(r, dst);
}

fn grid_adaptive(grid: &Grid, src: u32, dst: u32, load: &[u32], out: &mut Vec<LinkId>) {
    let mut r = src;
    loop {
        let mut best: Option<(u32, LinkId, u32)> = None; // (flows, link, next router)
        for i in 0..grid.dims.len() {
            let steps = grid.offset(i, grid.coordinate(r, i), grid.coordinate(dst, i));
            if steps == 0 {
                continue;
            }
            let (link, next) = grid.step(r, i, steps > 0);
            let flows = load[link as usize];
            if best.is_none_or(|(f, _, _)| flows < f) {
                best = Some((flows, link, next));
            }
        }
        let Some((_, link, next)) = best else { break };
        out.push(link);
        r = next;
    }
    debug_assert_eq!(r, dst);
}

/// Up to the lowest common ancestor's level (d-mod-k or least-loaded ports), then down.
fn fat_tree(tree: &FatTree, src: u32, dst: u32, load: Option<&[u32]>, out: &mut Vec<LinkId>) {
    let top = tree.common_level(src, dst);
    let mut w = src / tree.k;
    for l in 0..top {
        let preferred = tree.digit(dst, l);
        let j = match load {
            None => preferred,
            Some(load) => {
                let mut best = (load[tree.up(l, w, preferred) as usize], preferred);
                for j in (1..tree.k).map(|step| (preferred + step) % tree.k) {
                    let flows = load[tree.up(l, w, j) as usize];
                    if flows < best.0 {
                        best = (flows, j);
                    }
                }
                best.1
            }
        };
        out.push(tree.up(l, w, j));
        w = tree.with_digit(w, l, j);
    }
    for l in (0..top).rev() {
        let j = tree.digit(dst, l + 1);
        out.push(tree.down(l, w, j));
        w = tree.with_digit(w, l, j);
    }
    debug_assert_eq!(w, dst / tree.k);
}

/// A dragonfly path between two routers of different groups: at most 5 network links.
struct Path {
    links: [LinkId; 5],
    len: usize,
    /// Index of the first global link.
    first_global: usize,
}

impl Path {
    fn new() -> Path {
        Path { links: [0; 5], len: 0, first_global: usize::MAX }
    }

    fn push(&mut self, link: LinkId) {
        self.links[self.len] = link;
        self.len += 1;
    }

    /// Leaves router `from`'s group for group `j` over one of the parallel global links with the
    /// fewest hops (counting the local hop on to `to` when given); ties drawn from `entropy`.
    /// Returns the router reached in group `j`.
    fn leave_group(&mut self, df: &Dragonfly, from: u32, j: u32, to: Option<u32>, entropy: &mut u64) -> u32 {
        let (mut fewest, mut ties) = (u32::MAX, 0u64);
        for c in 0..df.copies {
            let hops = df.copy_hops(from, j, c, to);
            if hops < fewest {
                (fewest, ties) = (hops, 1);
            } else if hops == fewest {
                ties += 1;
            }
        }
        let mut pick = if ties > 1 { splitmix64(entropy) % ties } else { 0 };
        let mut c = 0;
        loop {
            if df.copy_hops(from, j, c, to) == fewest {
                if pick == 0 {
                    break;
                }
                pick -= 1;
            }
            c += 1;
        }
        let (global, u, v) = df.global(from / df.a, j, c);
        if u != from {
            self.push(df.local(from, u));
        }
        self.first_global = self.first_global.min(self.len);
        self.push(global);
        v
    }

    /// Ends the path at router `to`, from router `at` of the same group.
    fn finish(&mut self, df: &Dragonfly, at: u32, to: u32) {
        if at != to {
            self.push(df.local(at, to));
        }
    }

    fn minimal(df: &Dragonfly, s: u32, d: u32, entropy: &mut u64) -> Path {
        let mut path = Path::new();
        let v = path.leave_group(df, s, d / df.a, Some(d), entropy);
        path.finish(df, v, d);
        path
    }

    /// Needs at least 3 groups, `s` and `d` in different groups.
    fn valiant(df: &Dragonfly, s: u32, d: u32, rng: &mut u64) -> Path {
        let (gs, gd) = (s / df.a, d / df.a);
        let mut via = (splitmix64(rng) % (df.g as u64 - 2)) as u32;
        for skipped in [gs.min(gd), gs.max(gd)] {
            via += (via >= skipped) as u32;
        }
        let mut path = Path::new();
        let v = path.leave_group(df, s, via, None, rng);
        let v = path.leave_group(df, v, gd, Some(d), rng);
        path.finish(df, v, d);
        path
    }

    /// `(load + 1) × hops`, the UGAL cost (see [`Routing::Ugal`]).
    fn cost(&self, load: &[u32]) -> u64 {
        let exit = self.links[..=self.first_global].iter().map(|&l| load[l as usize]).max().unwrap_or(0);
        (exit as u64 + 1) * self.len as u64
    }
}

fn dragonfly(
    df: &Dragonfly,
    routing: Routing,
    src: u32,
    dst: u32,
    load: &[u32],
    rng: &mut u64,
    out: &mut Vec<LinkId>,
) {
    let (s, d) = (src / df.p, dst / df.p);
    if s == d {
        return;
    }
    if s / df.a == d / df.a {
        out.push(df.local(s, d));
        return;
    }
    let mut pair = ((src as u64) << 32) | dst as u64;
    let path = match routing {
        Routing::Minimal => Path::minimal(df, s, d, &mut pair),
        _ if df.g < 3 => Path::minimal(df, s, d, &mut pair),
        Routing::Valiant => Path::valiant(df, s, d, rng),
        _ => {
            let minimal = Path::minimal(df, s, d, &mut pair);
            let valiant = Path::valiant(df, s, d, rng);
            if valiant.cost(load) < minimal.cost(load) {
                valiant
            } else {
                minimal
            }
        }
    };
    out.extend_from_slice(&path.links[..path.len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::{LinkClass, Vertex};

    fn topo(spec: TopologySpec) -> Topology {
        Topology::new(spec).unwrap()
    }

    fn path(t: &Topology, routing: Routing, src: u32, dst: u32, load: &[u32], seed: u64) -> Vec<LinkId> {
        let (mut out, mut rng) = (Vec::new(), seed);
        route(t, routing, src, dst, load, &mut rng, &mut out);
        out
    }

    fn routers(t: &Topology, links: &[LinkId]) -> Vec<u32> {
        links[1..]
            .iter()
            .map(|&l| match t.link(l).from {
                Vertex::Router(r) => r,
                Vertex::Node(n) => panic!("node {n} inside a path"),
            })
            .collect()
    }

    #[test]
    fn parse_names_aliases_and_errors() {
        let torus = TopologySpec::Torus { dims: vec![4] };
        let tree = TopologySpec::FatTree { k: 2, levels: 2, oversubscription: 1 };
        let df = TopologySpec::Dragonfly { a: 2, p: 1, h: 1, g: 3 };
        assert_eq!(Routing::parse("DOR", &torus), Ok(Routing::DimensionOrder));
        assert_eq!(Routing::parse("d_mod_k", &tree), Ok(Routing::DModK));
        assert_eq!(Routing::parse("adaptive", &tree), Ok(Routing::FatTreeAdaptive));
        assert_eq!(Routing::parse("adaptive", &df), Ok(Routing::Ugal));
        assert_eq!(Routing::parse("adaptive", &torus), Ok(Routing::GridAdaptive));
        assert_eq!(Routing::parse("minimal", &TopologySpec::Crossbar { nodes: 2 }), Ok(Routing::Minimal));
        for spec in [&torus, &tree, &df] {
            for &r in Routing::valid_for(spec) {
                assert_eq!(Routing::parse(r.name(), spec), Ok(r));
            }
        }
        assert_eq!(
            Routing::parse("valiant", &torus).unwrap_err(),
            "routing 'valiant' does not apply to a torus; use one of: dimension-order, adaptive"
        );
        assert_eq!(
            Routing::parse("west-first", &tree).unwrap_err(),
            "unknown routing 'west-first'; a fat tree takes one of: d-mod-k, adaptive"
        );
        assert_eq!(Routing::default_for(&df), Routing::Minimal);
    }

    #[test]
    fn torus_goes_the_short_way_ties_plus() {
        let t = topo(TopologySpec::Torus { dims: vec![8] });
        // 1 -> 6: 3 steps down (1, 0, 7, 6); 0 -> 4: a tie, so up.
        assert_eq!(routers(&t, &path(&t, Routing::DimensionOrder, 1, 6, &[], 0)), vec![1, 0, 7, 6]);
        assert_eq!(routers(&t, &path(&t, Routing::DimensionOrder, 0, 4, &[], 0)), vec![0, 1, 2, 3, 4]);
        assert!(path(&t, Routing::DimensionOrder, 5, 5, &[], 0).is_empty());
    }

    #[test]
    fn fat_tree_adaptive_avoids_the_loaded_port() {
        let t = topo(TopologySpec::FatTree { k: 4, levels: 2, oversubscription: 1 });
        let mut load = vec![0; t.num_links() as usize];
        let static_path = path(&t, Routing::DModK, 0, 7, &load, 0);
        assert_eq!(path(&t, Routing::FatTreeAdaptive, 0, 7, &load, 0), static_path);
        // d-mod-k takes port 7 mod 4 = 3; load it and port 0, the next in cyclic order is free.
        load[static_path[1] as usize] = 2;
        let avoid = path(&t, Routing::FatTreeAdaptive, 0, 7, &load, 0);
        let up = |p: &[LinkId]| t.link(p[1]).to;
        assert_ne!(avoid[1], static_path[1]);
        assert_eq!(up(&avoid), Vertex::Router(4));
        load[avoid[1] as usize] = 1;
        assert_eq!(up(&path(&t, Routing::FatTreeAdaptive, 0, 7, &load, 0)), Vertex::Router(5));
    }

    #[test]
    fn ugal_leaves_a_loaded_minimal_path() {
        let t = topo(TopologySpec::Dragonfly { a: 4, p: 1, h: 2, g: 9 });
        let mut load = vec![0; t.num_links() as usize];
        let minimal = path(&t, Routing::Minimal, 0, 4, &load, 7);
        assert_eq!(path(&t, Routing::Ugal, 0, 4, &load, 7), minimal);
        let global = *minimal.iter().find(|&&l| t.link(l).class == LinkClass::Global).unwrap();
        load[global as usize] = 10;
        let detour = path(&t, Routing::Ugal, 0, 4, &load, 7);
        assert_eq!(detour.iter().filter(|&&l| t.link(l).class == LinkClass::Global).count(), 2);
        assert!(!detour.contains(&global));
    }

    #[test]
    fn same_seed_same_route() {
        let t = topo(TopologySpec::Dragonfly { a: 4, p: 2, h: 2, g: 9 });
        let load = vec![0; t.num_links() as usize];
        let a = path(&t, Routing::Valiant, 3, 60, &load, 42);
        assert_eq!(a, path(&t, Routing::Valiant, 3, 60, &load, 42));
        assert!((0..20).any(|seed| path(&t, Routing::Valiant, 3, 60, &load, seed) != a));
    }
}
