//! Local refinement of a placement: swap two ranks of different nodes when the swap lowers the
//! hop-bytes (bytes × network links of the route, summed over the pairs) or, at equal hop-bytes,
//! the load of the busiest link (then the number of links at that load).
//!
//! Every node keeps its number of ranks, so capacity holds if it held before. Each accepted swap
//! strictly lowers (hop-bytes, busiest load, links at that load), so the result is never worse than
//! the input and the search ends. A round visits every rank once, in an order drawn from the seed;
//! for rank `r` on node `a` the candidates are the ranks on the nodes at and next to the nodes of
//! `r`'s heaviest partners ([`PARTNERS`]); the swap with the largest drop in hop-bytes is taken.
//! Rounds stop when one accepts nothing.
//!
//! The change of a swap of `r` (on `a`) and `q` (on `b`) is computed from their partners only:
//! `Δ = C_r(b) − C_r(a) + C_q(a) − C_q(b) + (w_rq + w_qr)·(h(a,b) + h(b,a))`, where `C_x(n)` is
//! the hop-bytes of `x`'s pairs were `x` on node `n` and `h` counts network links. Cost per
//! candidate: O(degree) hop counts, O(degree × path length) for the link loads of a tie or an
//! accepted swap (plus O(log links) per link changed).

use super::IdleRoutes;
use crate::net::topology::Shape;
use crate::net::LinkId;

/// The heaviest partners of a rank whose nodes' neighbourhoods are searched.
pub const PARTNERS: usize = 8;
/// Candidates with no change in hop-bytes whose link loads are compared, per rank visited.
const TIES: usize = 4;
/// Nodes of a dragonfly group searched whole when the group is this small (else the router's).
const SMALL_GROUP: u32 = 64;

/// A refined placement and what it cost before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refinement {
    pub node_of_rank: Vec<u32>,
    pub hop_bytes_before: u128,
    pub hop_bytes: u128,
    pub max_load_before: u64,
    pub max_load: u64,
    pub swaps: u64,
    /// Rounds run (the last one accepted nothing unless the limit stopped the search).
    pub rounds: u32,
}

/// Refines `node_of_rank` for the pairs `src[i] -> dst[i]` of `bytes[i]` under `routes`, in at
/// most `rounds` rounds; deterministic for a `seed`. Errors on columns of different lengths, a
/// rank or node out of range.
pub fn refine(
    routes: &IdleRoutes,
    node_of_rank: &[u32],
    src: &[u32],
    dst: &[u32],
    bytes: &[u64],
    rounds: u32,
    seed: u64,
) -> Result<Refinement, String> {
    let ranks = node_of_rank.len();
    if src.len() != dst.len() || src.len() != bytes.len() {
        return Err(format!(
            "sources, destinations and bytes differ in length ({}, {}, {})",
            src.len(),
            dst.len(),
            bytes.len()
        ));
    }
    if let Some(i) = (0..src.len()).find(|&i| src[i] as usize >= ranks || dst[i] as usize >= ranks) {
        return Err(format!("pair {i} ({} -> {}) names a rank outside 0..{}", src[i], dst[i], ranks.max(1) - 1));
    }
    let nodes = routes.topology().num_nodes();
    if let Some(r) = node_of_rank.iter().position(|&n| n >= nodes) {
        return Err(format!(
            "placement puts rank {r} on node {}, but the topology has nodes 0..{}",
            node_of_rank[r],
            nodes - 1
        ));
    }
    let mut s = Search::new(routes, node_of_rank, src, dst, bytes);
    let (hop_bytes_before, max_load_before) = (s.hop_bytes, s.loads.max().0);
    let mut order: Vec<u32> = (0..ranks as u32).collect();
    let mut rng = seed;
    let (mut swaps, mut done) = (0, 0);
    while done < rounds {
        done += 1;
        shuffle(&mut order, &mut rng);
        let before = swaps;
        for &r in &order {
            swaps += s.visit(r) as u64;
        }
        if swaps == before {
            break;
        }
    }
    Ok(Refinement {
        hop_bytes_before,
        hop_bytes: s.hop_bytes,
        max_load_before,
        max_load: s.loads.max().0,
        swaps,
        rounds: done,
        node_of_rank: s.node_of,
    })
}

/// splitmix64 (as the engine's other seeded choices).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

fn shuffle(v: &mut [u32], rng: &mut u64) {
    for i in (1..v.len()).rev() {
        let j = (splitmix64(rng) % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Link loads with their maximum and how many links carry it, kept under point updates by a
/// segment tree of (max, count). O(log links) per update.
struct Loads {
    load: Vec<u64>,
    tree: Vec<(u64, u32)>,
    leaves: usize,
}

impl Loads {
    fn new(load: Vec<u64>) -> Loads {
        let leaves = load.len().next_power_of_two().max(1);
        let mut tree = vec![(0, 0); 2 * leaves];
        for (i, &l) in load.iter().enumerate() {
            tree[leaves + i] = (l, 1);
        }
        for i in (1..leaves).rev() {
            tree[i] = Loads::join(tree[2 * i], tree[2 * i + 1]);
        }
        Loads { load, tree, leaves }
    }

    fn join(a: (u64, u32), b: (u64, u32)) -> (u64, u32) {
        match a.0.cmp(&b.0) {
            std::cmp::Ordering::Greater => a,
            std::cmp::Ordering::Less => b,
            std::cmp::Ordering::Equal => (a.0, a.1 + b.1),
        }
    }

    /// The busiest link's load and the number of links carrying it.
    fn max(&self) -> (u64, u32) {
        self.tree[1]
    }

    fn add(&mut self, link: LinkId, delta: i64) {
        let l = &mut self.load[link as usize];
        *l = l.checked_add_signed(delta).expect("a link's load stays non-negative");
        let mut i = self.leaves + link as usize;
        self.tree[i] = (*l, 1);
        while i > 1 {
            i /= 2;
            self.tree[i] = Loads::join(self.tree[2 * i], self.tree[2 * i + 1]);
        }
    }

    /// Whether applying the merged `changes` (link, delta) lowers (busiest load, links at it).
    fn improved_by(&self, changes: &[(LinkId, i64)]) -> bool {
        let (max, count) = self.max();
        let (mut lowered, mut raised) = (0u32, 0u32);
        for &(link, delta) in changes {
            let old = self.load[link as usize];
            let new = old.saturating_add_signed(delta);
            if new > max {
                return false;
            }
            lowered += (old == max && new < max) as u32;
            raised += (old < max && new == max) as u32;
        }
        // The maximum drops when every link at it is lowered and none rises to it; otherwise
        // fewer links must be left at it.
        lowered > 0 && (lowered == count && raised == 0 || raised < lowered)
    }
}

struct Search<'a> {
    routes: &'a IdleRoutes,
    node_of: Vec<u32>,
    /// Per rank, its partners sorted by rank: `peer`, bytes sent to it, bytes received from it.
    adj_start: Vec<usize>,
    peer: Vec<u32>,
    w_out: Vec<u64>,
    w_in: Vec<u64>,
    /// Per rank, up to [`PARTNERS`] indices into its adjacency, heaviest first.
    top_start: Vec<usize>,
    top: Vec<usize>,
    /// Ranks of each node (`slots[slot_start[n]..slot_start[n + 1]]`) and each rank's slot.
    slot_start: Vec<usize>,
    slots: Vec<u32>,
    slot_of: Vec<usize>,
    hop_bytes: u128,
    loads: Loads,
    scratch: Vec<LinkId>,
    path: Vec<LinkId>,
    changes: Vec<(LinkId, i64)>,
    candidates: Vec<u32>,
}

impl<'a> Search<'a> {
    fn new(routes: &'a IdleRoutes, node_of_rank: &[u32], src: &[u32], dst: &[u32], bytes: &[u64]) -> Search<'a> {
        let ranks = node_of_rank.len();
        // Both ends of every pair with bytes, as (rank, peer, out, in), merged per (rank, peer).
        let mut ends: Vec<(u32, u32, u64, u64)> = Vec::with_capacity(2 * src.len());
        for i in 0..src.len() {
            if src[i] != dst[i] && bytes[i] > 0 {
                ends.push((src[i], dst[i], bytes[i], 0));
                ends.push((dst[i], src[i], 0, bytes[i]));
            }
        }
        ends.sort_unstable_by_key(|&(r, p, _, _)| (r, p));
        let mut adj_start = vec![0; ranks + 1];
        let (mut peer, mut w_out, mut w_in) = (Vec::new(), Vec::new(), Vec::new());
        for run in ends.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
            adj_start[run[0].0 as usize + 1] += 1;
            peer.push(run[0].1);
            w_out.push(run.iter().map(|e| e.2).sum());
            w_in.push(run.iter().map(|e| e.3).sum());
        }
        for r in 0..ranks {
            adj_start[r + 1] += adj_start[r];
        }
        let mut top_start = vec![0; ranks + 1];
        let mut top = Vec::new();
        for r in 0..ranks {
            let mut mine: Vec<usize> = (adj_start[r]..adj_start[r + 1]).collect();
            mine.sort_by_key(|&e| (std::cmp::Reverse(w_out[e] + w_in[e]), peer[e]));
            mine.truncate(PARTNERS);
            top.extend(mine);
            top_start[r + 1] = top.len();
        }
        let nodes = routes.topology().num_nodes() as usize;
        let mut slot_start = vec![0; nodes + 1];
        for &n in node_of_rank {
            slot_start[n as usize + 1] += 1;
        }
        for n in 0..nodes {
            slot_start[n + 1] += slot_start[n];
        }
        let mut fill = slot_start.clone();
        let (mut slots, mut slot_of) = (vec![0; ranks], vec![0; ranks]);
        for (r, &n) in node_of_rank.iter().enumerate() {
            slots[fill[n as usize]] = r as u32;
            slot_of[r] = fill[n as usize];
            fill[n as usize] += 1;
        }
        let mut load = vec![0u64; routes.topology().num_links() as usize];
        let (mut hop_bytes, mut path) = (0u128, Vec::new());
        for i in 0..src.len() {
            path.clear();
            routes.path(node_of_rank[src[i] as usize], node_of_rank[dst[i] as usize], &mut path);
            for &l in &path {
                load[l as usize] += bytes[i];
            }
            hop_bytes += bytes[i] as u128 * path.len().saturating_sub(2) as u128;
        }
        Search {
            routes,
            node_of: node_of_rank.to_vec(),
            adj_start,
            peer,
            w_out,
            w_in,
            top_start,
            top,
            slot_start,
            slots,
            slot_of,
            hop_bytes,
            loads: Loads::new(load),
            scratch: Vec::new(),
            path,
            changes: Vec::new(),
            candidates: Vec::new(),
        }
    }

    fn hops(&mut self, a: u32, b: u32) -> u128 {
        self.routes.hops(a, b, &mut self.scratch) as u128
    }

    /// Hop-bytes of `r`'s pairs were `r` on node `at` (its partners where they are).
    fn cost(&mut self, r: u32, at: u32) -> u128 {
        let mut c = 0;
        for e in self.adj_start[r as usize]..self.adj_start[r as usize + 1] {
            let n = self.node_of[self.peer[e] as usize];
            if self.w_out[e] > 0 {
                c += self.w_out[e] as u128 * self.hops(at, n);
            }
            if self.w_in[e] > 0 {
                c += self.w_in[e] as u128 * self.hops(n, at);
            }
        }
        c
    }

    /// Bytes `r` sends to `q` and receives from it.
    fn between(&self, r: u32, q: u32) -> (u64, u64) {
        let range = self.adj_start[r as usize]..self.adj_start[r as usize + 1];
        match self.peer[range.clone()].binary_search(&q) {
            Ok(i) => (self.w_out[range.start + i], self.w_in[range.start + i]),
            Err(_) => (0, 0),
        }
    }

    /// Nodes at and next to `node` (one network link away on a grid; the same leaf switch of a
    /// fat tree; the same router, or small group, of a dragonfly), appended to `candidates`.
    fn near(&mut self, node: u32) {
        let out = &mut self.candidates;
        out.push(node);
        match &self.routes.topology().shape {
            Shape::Grid(grid) => {
                for d in &grid.dims {
                    let x = (node / d.stride) % d.size;
                    if x + 1 < d.size {
                        out.push(node + d.stride);
                    } else if grid.wrap && d.size > 1 {
                        out.push(node - x * d.stride);
                    }
                    if x > 0 {
                        out.push(node - d.stride);
                    } else if grid.wrap && d.size > 1 {
                        out.push(node + (d.size - 1) * d.stride);
                    }
                }
            }
            Shape::FatTree(tree) => out.extend((node / tree.k * tree.k..).take(tree.k as usize)),
            Shape::Dragonfly(df) => {
                let span = if df.a * df.p <= SMALL_GROUP { df.a * df.p } else { df.p };
                out.extend((node / span * span..).take(span as usize));
            }
            Shape::Crossbar => {}
        }
    }

    /// The links whose load changes if `r` (on `a`) and `q` (on `b`) swap, with the change,
    /// merged per link into `changes`.
    fn swap_changes(&mut self, r: u32, q: u32) {
        let (a, b) = (self.node_of[r as usize], self.node_of[q as usize]);
        self.changes.clear();
        for (x, from, to, other) in [(r, a, b, q), (q, b, a, r)] {
            for e in self.adj_start[x as usize]..self.adj_start[x as usize + 1] {
                let p = self.peer[e];
                if p == other {
                    continue;
                }
                let n = self.node_of[p as usize];
                for (w, old, new) in [(self.w_out[e], (from, n), (to, n)), (self.w_in[e], (n, from), (n, to))] {
                    if w > 0 {
                        self.lay(old, -(w as i64));
                        self.lay(new, w as i64);
                    }
                }
            }
        }
        let (wo, wi) = self.between(r, q);
        for (w, old, new) in [(wo, (a, b), (b, a)), (wi, (b, a), (a, b))] {
            if w > 0 {
                self.lay(old, -(w as i64));
                self.lay(new, w as i64);
            }
        }
        self.changes.sort_unstable_by_key(|c| c.0);
        let mut merged = 0;
        for i in 0..self.changes.len() {
            if merged > 0 && self.changes[merged - 1].0 == self.changes[i].0 {
                self.changes[merged - 1].1 += self.changes[i].1;
            } else {
                self.changes[merged] = self.changes[i];
                merged += 1;
            }
        }
        self.changes.truncate(merged);
        self.changes.retain(|c| c.1 != 0);
    }

    fn lay(&mut self, (from, to): (u32, u32), delta: i64) {
        self.path.clear();
        self.routes.path(from, to, &mut self.path);
        self.changes.extend(self.path.iter().map(|&l| (l, delta)));
    }

    /// Looks for a swap of `r` that improves the placement and makes it; whether it did.
    fn visit(&mut self, r: u32) -> bool {
        let a = self.node_of[r as usize];
        let (start, end) = (self.adj_start[r as usize], self.adj_start[r as usize + 1]);
        if self.peer[start..end].iter().all(|&p| self.node_of[p as usize] == a) {
            return false; // r loads no link: moving it cannot help; a partner's visit may still
        }
        let here = self.cost(r, a);
        self.candidates.clear();
        for t in self.top_start[r as usize]..self.top_start[r as usize + 1] {
            let n = self.node_of[self.peer[self.top[t]] as usize];
            self.near(n);
        }
        let mut nodes = std::mem::take(&mut self.candidates);
        nodes.sort_unstable();
        nodes.dedup();
        let (mut best, mut best_q) = (0i128, None);
        let mut ties = Vec::new();
        for &b in nodes.iter().filter(|&&b| b != a) {
            let there = self.cost(r, b);
            let round_trip = self.hops(a, b) + self.hops(b, a);
            for s in self.slot_start[b as usize]..self.slot_start[b as usize + 1] {
                let q = self.slots[s];
                let (wo, wi) = self.between(r, q);
                let gain_q = self.cost(q, a) as i128 - self.cost(q, b) as i128;
                let delta = there as i128 - here as i128 + gain_q + ((wo + wi) as u128 * round_trip) as i128;
                if delta < best {
                    (best, best_q) = (delta, Some(q));
                } else if delta == 0 && best_q.is_none() && ties.len() < TIES {
                    ties.push(q);
                }
            }
        }
        self.candidates = nodes;
        let chosen = match best_q {
            Some(q) => {
                self.swap_changes(r, q);
                Some(q)
            }
            None => ties.into_iter().find(|&q| {
                self.swap_changes(r, q);
                self.loads.improved_by(&self.changes)
            }),
        };
        let Some(q) = chosen else { return false };
        // `changes` holds the chosen swap's link loads.
        for i in 0..self.changes.len() {
            let (link, delta) = self.changes[i];
            self.loads.add(link, delta);
        }
        self.hop_bytes = (self.hop_bytes as i128 + best) as u128;
        let b = self.node_of[q as usize];
        let (sr, sq) = (self.slot_of[r as usize], self.slot_of[q as usize]);
        self.slots.swap(sr, sq);
        self.slot_of.swap(r as usize, q as usize);
        self.node_of[r as usize] = b;
        self.node_of[q as usize] = a;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::spec;
    use super::*;
    use crate::net::TopologySpec;

    /// A periodic 3D stencil on a `dims` grid of ranks (x fastest), `w` bytes to each neighbour.
    fn stencil(dims: [u32; 3], w: u64) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
        let mut pairs = Vec::new();
        let stride = [1, dims[0], dims[0] * dims[1]];
        for r in 0..dims.iter().product::<u32>() {
            for i in 0..3 {
                let x = (r / stride[i]) % dims[i];
                for y in [(x + 1) % dims[i], (x + dims[i] - 1) % dims[i]] {
                    pairs.push((r, r - x * stride[i] + y * stride[i]));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        pairs.retain(|&(r, p)| r != p);
        let (src, dst): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
        let bytes = vec![w; src.len()];
        (src, dst, bytes)
    }

    fn torus(dims: &[u32]) -> IdleRoutes {
        IdleRoutes::new(&spec(TopologySpec::Torus { dims: dims.to_vec() }, None)).unwrap()
    }

    fn permuted(n: u32, seed: u64) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n).collect();
        let mut rng = seed;
        shuffle(&mut v, &mut rng);
        v
    }

    #[test]
    fn block_stencil_on_its_torus_is_optimal_and_stays() {
        let routes = torus(&[4, 4, 4]);
        let (src, dst, bytes) = stencil([4, 4, 4], 100);
        let block: Vec<u32> = (0..64).collect();
        let out = refine(&routes, &block, &src, &dst, &bytes, 10, 1).unwrap();
        let total: u128 = bytes.iter().map(|&b| b as u128).sum();
        assert_eq!(out.hop_bytes_before, total);
        assert_eq!(out.hop_bytes, total);
        assert_eq!(out.node_of_rank, block);
        assert_eq!((out.swaps, out.rounds), (0, 1));
    }

    #[test]
    fn a_permuted_stencil_is_recovered_deterministically() {
        let routes = torus(&[4, 4, 4]);
        let (src, dst, bytes) = stencil([4, 4, 4], 10);
        let total: u128 = bytes.iter().map(|&b| b as u128).sum();
        let start = permuted(64, 7);
        let out = refine(&routes, &start, &src, &dst, &bytes, 100, 5).unwrap();
        assert!(out.hop_bytes_before > 2 * total);
        assert!(out.hop_bytes >= total && out.hop_bytes < out.hop_bytes_before, "{out:?}");
        assert_eq!(refine(&routes, &start, &src, &dst, &bytes, 100, 5).unwrap(), out);
        // Capacity: still one rank per node.
        let mut nodes = out.node_of_rank.clone();
        nodes.sort_unstable();
        assert_eq!(nodes, (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn refinement_never_worsens_and_keeps_node_counts() {
        let routes = IdleRoutes::new(&spec(TopologySpec::FatTree { k: 4, levels: 3, oversubscription: 1 }, None)).unwrap();
        // Random pairs, two ranks per node on half of the nodes.
        let mut rng = 11;
        let ranks = 64u32;
        let src: Vec<u32> = (0..400).map(|_| (splitmix64(&mut rng) % ranks as u64) as u32).collect();
        let dst: Vec<u32> = (0..400).map(|_| (splitmix64(&mut rng) % ranks as u64) as u32).collect();
        let bytes: Vec<u64> = (0..400).map(|_| splitmix64(&mut rng) % 1000).collect();
        let start: Vec<u32> = permuted(ranks, 3).iter().map(|&r| r / 2).collect();
        for seed in 0..4 {
            let out = refine(&routes, &start, &src, &dst, &bytes, 20, seed).unwrap();
            assert!(out.hop_bytes <= out.hop_bytes_before);
            assert!(out.hop_bytes < out.hop_bytes_before || out.max_load <= out.max_load_before);
            let count = |v: &[u32]| {
                let mut c = vec![0; 64];
                v.iter().for_each(|&n| c[n as usize] += 1);
                c
            };
            assert_eq!(count(&out.node_of_rank), count(&start));
            // The reported hop-bytes are those of the placement returned.
            let again = refine(&routes, &out.node_of_rank, &src, &dst, &bytes, 0, 0).unwrap();
            assert_eq!(again.hop_bytes_before, out.hop_bytes);
            assert_eq!(again.max_load_before, out.max_load);
        }
    }

    #[test]
    fn ties_in_hop_bytes_go_to_the_lighter_busiest_link() {
        // A crossbar: every placement has 0 hop-bytes, so only link loads decide. Ranks 0 and 1
        // on node 0 send 10 bytes each to ranks 2 and 3 on node 1: node 0's injection link
        // carries 20. Pairing each sender with its receiver on one node loads no link at all.
        let routes = IdleRoutes::new(&spec(TopologySpec::Crossbar { nodes: 4 }, None)).unwrap();
        let out = refine(&routes, &[0, 0, 1, 1], &[0, 1], &[2, 3], &[10, 10], 10, 0).unwrap();
        assert_eq!((out.hop_bytes_before, out.hop_bytes), (0, 0));
        assert_eq!((out.max_load_before, out.max_load), (20, 0));
        let n = &out.node_of_rank;
        assert!(n[0] == n[2] && n[1] == n[3] && n[0] != n[1], "{n:?}");
    }

    #[test]
    fn bad_input_is_refused() {
        let routes = torus(&[4]);
        assert!(refine(&routes, &[0, 1], &[0], &[1, 0], &[1], 1, 0).unwrap_err().contains("differ in length"));
        assert_eq!(
            refine(&routes, &[0, 1], &[0], &[2], &[1], 1, 0).unwrap_err(),
            "pair 0 (0 -> 2) names a rank outside 0..1"
        );
        assert_eq!(
            refine(&routes, &[0, 4], &[0], &[1], &[1], 1, 0).unwrap_err(),
            "placement puts rank 1 on node 4, but the topology has nodes 0..3"
        );
    }
}
