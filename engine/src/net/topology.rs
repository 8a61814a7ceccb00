//! Network topologies: nodes, routers and the directed links between them, numbered densely.
//!
//! A [`Topology`] keeps only its parameters, never a list of links: a link's id is computed from
//! (router, port) and decoded back by [`Topology::link`], so memory is O(dimensions) at any machine
//! size and routing needs no tables. Link ids are `0..num_links()` without holes:
//!
//! - `0..N`: the injection link of node `i` (node → its router), id `i`;
//! - `N..2N`: the ejection link of node `i` (its router → node), id `N + i`;
//! - `2N..`: the network links, laid out per shape as [`TopologySpec`] describes.
//!
//! A message between two different nodes crosses its source's injection link first and its
//! destination's ejection link last; a message within one node crosses no link.


use crate::spec_error::SpecError;
/// Index of a directed link, in `0..Topology::num_links()`.
pub type LinkId = u32;

/// What a link connects, so that each class can have its own nominal bandwidth and latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkClass {
    /// Node to its router (the NIC's way into the network).
    Injection,
    /// Router to a node.
    Ejection,
    /// Router to router: torus and mesh links, fat-tree links, dragonfly links within a group.
    Local,
    /// Dragonfly link between two groups.
    Global,
}

/// An end of a link: a compute node or a router (switch).
///
/// Routers are numbered per shape: torus and mesh, the router of node `i` is `i`; fat tree,
/// `level·k^(n−1) + w` (level 0 holds the leaf switches, `w` as in [`TopologySpec::FatTree`]);
/// dragonfly, `group·a + router`; crossbar, the single switch `0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vertex {
    Node(u32),
    Router(u32),
}

/// One directed link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub class: LinkClass,
    /// Bandwidth as a fraction of the class's nominal bandwidth (1.0 except the oversubscribed
    /// leaf links of a fat tree).
    pub capacity: f64,
    pub from: Vertex,
    pub to: Vertex,
}

/// The shape and size of a network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologySpec {
    /// n-dimensional torus, one router per node; node `x0 + d0·(x1 + d1·(x2 + …))`. Each dimension
    /// of size `n ≥ 3` has, per router, a link to each neighbour (`+` and `−`); a dimension of size
    /// 2 has one link each way between the two routers (counted as `+` links); size 1, none.
    /// Network link ids: per dimension in order, first its `+` links, then its `−` links.
    Torus { dims: Vec<u32> },
    /// As [`TopologySpec::Torus`] without the wrap-around links: `n − 1` links each way per line.
    Mesh { dims: Vec<u32> },
    /// k-ary n-tree (Petrini and Vanneschi): `k^n` nodes, `n` levels of `k^(n−1)` switches. Leaf
    /// switch `w` (level 0) holds nodes `w·k .. w·k + k`. Switch `w` of level `l < n − 1` has `k`
    /// up-links; up-link `j` goes to switch `w` of level `l + 1` with base-k digit `l` of `w`
    /// replaced by `j`; each has a down-link back. Network link ids: up-links by (level, switch,
    /// port), then down-links by (lower level, upper switch, port).
    ///
    /// `oversubscription = r` models an r:1 leaf level (r times more bandwidth down to the nodes
    /// than up into the tree): the links between levels 0 and 1, both directions, get capacity
    /// `1/r`; the tree keeps all its links and paths. `r = 1` is full bisection bandwidth.
    FatTree { k: u32, levels: u32, oversubscription: u32 },
    /// Dragonfly (Kim, Dally, Scott, Abts): `g` groups of `a` routers, `p` nodes per router, `h`
    /// global ports per router, all-to-all local links within a group. Global arrangement
    /// ("absolute", consecutive): group `i` numbers its ports `q = 0 .. a·h`, port `q` on router
    /// `q / h`. With `m = g − 1` and `c = ⌊a·h / m⌋`, port `q = c'·m + t` (`c' < c`) joins the
    /// `t`-th other group `j` of `i` (ascending, skipping `i`) and lands on port `c'·m + t'` of `j`,
    /// `t'` being `i`'s index among `j`'s other groups. So every pair of groups is joined by `c ≥ 1`
    /// parallel global links; ports `q ≥ c·m` stay unused. Requires `g ≤ a·h + 1`.
    /// Network link ids: local links by (router, other router), then global links by (group, port).
    Dragonfly { a: u32, p: u32, h: u32, g: u32 },
    /// Star: every node has an injection and an ejection link to one switch; no network links.
    Crossbar { nodes: u32 },
}

impl TopologySpec {
    /// Short name of the shape, for messages ("torus", "mesh", "fat tree", "dragonfly", "crossbar").
    pub fn kind(&self) -> &'static str {
        match self {
            TopologySpec::Torus { .. } => "torus",
            TopologySpec::Mesh { .. } => "mesh",
            TopologySpec::FatTree { .. } => "fat tree",
            TopologySpec::Dragonfly { .. } => "dragonfly",
            TopologySpec::Crossbar { .. } => "crossbar",
        }
    }
}

/// Every kind of topology with the sizes it takes, in the order of its compact form: `dims` is a
/// list, the others one number each; those of [`OPTIONAL_SIZES`] may be left out.
pub const TOPOLOGY_KINDS: [(&str, &[&str]); 5] = [
    ("torus", &["dims"]),
    ("mesh", &["dims"]),
    ("fattree", &["k", "levels", "oversubscription"]),
    ("dragonfly", &["a", "p", "h", "g"]),
    ("crossbar", &["nodes"]),
];

/// The sizes that may be left out, with the value they then take: a fat tree's `oversubscription`
/// (1, full bisection bandwidth).
pub const OPTIONAL_SIZES: [(&str, u32); 1] = [("oversubscription", 1)];

impl TopologySpec {
    /// The sizes this kind takes, as [`TOPOLOGY_KINDS`] lists them.
    pub fn size_keys(&self) -> &'static [&'static str] {
        let kind = match self {
            TopologySpec::Torus { .. } => "torus",
            TopologySpec::Mesh { .. } => "mesh",
            TopologySpec::FatTree { .. } => "fattree",
            TopologySpec::Dragonfly { .. } => "dragonfly",
            TopologySpec::Crossbar { .. } => "crossbar",
        };
        TOPOLOGY_KINDS.iter().find(|(k, _)| *k == kind).expect("every kind is listed").1
    }

    /// The spec of `kind` from its sizes (see [`TOPOLOGY_KINDS`]); `size(key)` gives one, None when
    /// it is not given. Errors start with the key. The sizes are checked when the [`Topology`] is built.
    pub fn from_sizes(kind: &str, size: impl Fn(&'static str) -> Result<Option<Vec<u32>>, String>) -> Result<TopologySpec, String> {
        let one = |key: &'static str, default: Option<u32>| -> Result<u32, String> {
            match size(key)? {
                Some(v) if v.len() == 1 => Ok(v[0]),
                Some(_) => Err(format!("{key}: expected one number")),
                None => default.ok_or_else(|| format!("{key}: missing")),
            }
        };
        let optional = |key: &str| OPTIONAL_SIZES.iter().find(|(k, _)| *k == key).map(|&(_, default)| default);
        let dims = || size("dims")?.ok_or_else(|| "dims: missing".to_string());
        Ok(match kind {
            "torus" => TopologySpec::Torus { dims: dims()? },
            "mesh" => TopologySpec::Mesh { dims: dims()? },
            "fattree" => TopologySpec::FatTree { k: one("k", None)?, levels: one("levels", None)?, oversubscription: one("oversubscription", optional("oversubscription"))? },
            "dragonfly" => TopologySpec::Dragonfly { a: one("a", None)?, p: one("p", None)?, h: one("h", None)?, g: one("g", None)? },
            "crossbar" => TopologySpec::Crossbar { nodes: one("nodes", None)? },
            other => {
                let kinds: Vec<&str> = TOPOLOGY_KINDS.iter().map(|(k, _)| *k).collect();
                return Err(format!("topology: unknown kind '{other}' ({})", kinds.join(", ")));
            }
        })
    }
}

/// The compact form of a topology: `torus:8x8x8`, `mesh:4x4`, `fattree:K:LEVELS[:OVERSUBSCRIPTION]`,
/// `dragonfly:A:P:H:G`, `crossbar:NODES`: the sizes of [`TOPOLOGY_KINDS`] in order.
///
/// ```
/// use contend_engine::net::TopologySpec;
/// assert_eq!("torus:8x8x8".parse(), Ok(TopologySpec::Torus { dims: vec![8, 8, 8] }));
/// assert_eq!("fattree:32:2".parse(), Ok(TopologySpec::FatTree { k: 32, levels: 2, oversubscription: 1 }));
/// assert!("ring:8".parse::<TopologySpec>().is_err() && "dragonfly:4:2:2".parse::<TopologySpec>().is_err());
/// ```
impl std::str::FromStr for TopologySpec {
    type Err = String;

    fn from_str(text: &str) -> Result<TopologySpec, String> {
        const FORMS: &str = "torus:AxBxC, mesh:AxB, fattree:K:LEVELS[:OVERSUBSCRIPTION], dragonfly:A:P:H:G or crossbar:NODES";
        let expected = |why: String| format!("expected {FORMS}; got '{text}' ({why})");
        let (kind, rest) = text.trim().split_once(':').ok_or_else(|| expected("no sizes".into()))?;
        let parts: Vec<&str> = rest.split(':').collect();
        let keys = TOPOLOGY_KINDS.iter().find(|(k, _)| *k == kind).map_or(&[][..], |(_, keys)| *keys);
        if parts.len() > keys.len() && !keys.is_empty() {
            return Err(expected(format!("a {kind} takes {}", keys.join(", "))));
        }
        let number = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("'{x}' is not a size"));
        TopologySpec::from_sizes(kind, |key| {
            let Some(i) = keys.iter().position(|k| *k == key) else { return Ok(None) };
            parts.get(i).map(|x| if key == "dims" { x.split('x').map(number).collect() } else { number(x).map(|n| vec![n]) }).transpose()
        })
        .map_err(expected)
    }
}

/// A validated topology. Memory O(dimensions); every query below is O(1) unless it says otherwise.
#[derive(Clone, Debug)]
pub struct Topology {
    spec: TopologySpec,
    nodes: u32,
    links: u32,
    routers: u32,
    pub(crate) shape: Shape,
}

/// The per-shape arithmetic of link ids, shared with routing.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    Grid(Grid),
    FatTree(FatTree),
    Dragonfly(Dragonfly),
    Crossbar,
}

/// Torus or mesh.
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    pub wrap: bool,
    pub dims: Vec<Dim>,
}

/// One dimension of a grid and where its links are numbered.
#[derive(Clone, Debug)]
pub(crate) struct Dim {
    pub size: u32,
    /// Product of the sizes of the lower dimensions.
    pub stride: u32,
    /// Coordinates `x < plus` have a `+` link (to `x + 1`, wrapping).
    plus: u32,
    /// Coordinates `minus_from ≤ x < minus_from + minus` have a `−` link (to `x − 1`, wrapping).
    minus: u32,
    minus_from: u32,
    /// Lines along this dimension: nodes / size.
    lines: u32,
    plus_base: u32,
    minus_base: u32,
}

impl Grid {
    /// Coordinate of router (or node) `r` in dimension `i`.
    #[inline]
    pub fn coordinate(&self, r: u32, i: usize) -> u32 {
        let d = &self.dims[i];
        (r / d.stride) % d.size
    }

    /// The link leaving router `r` one step along dimension `i` (`plus`: towards `x + 1`), and the
    /// router it reaches. The link must exist.
    #[inline]
    pub fn step(&self, r: u32, i: usize, plus: bool) -> (LinkId, u32) {
        let d = &self.dims[i];
        let lower = r % d.stride;
        let x = (r / d.stride) % d.size;
        let upper = r / d.stride / d.size;
        if plus {
            debug_assert!(x < d.plus);
            let id = d.plus_base + (upper * d.plus + x) * d.stride + lower;
            let next = if x + 1 == d.size { r - x * d.stride } else { r + d.stride };
            (id, next)
        } else {
            debug_assert!(x >= d.minus_from && x - d.minus_from < d.minus);
            let id = d.minus_base + (upper * d.minus + x - d.minus_from) * d.stride + lower;
            let next = if x == 0 { r + (d.size - 1) * d.stride } else { r - d.stride };
            (id, next)
        }
    }

    /// Signed number of steps along dimension `i` from coordinate `x` to `y` under
    /// dimension-order routing: the shorter way round a torus, ties towards `+`.
    #[inline]
    pub fn offset(&self, i: usize, x: u32, y: u32) -> i64 {
        let n = self.dims[i].size as i64;
        let forward = (y as i64 - x as i64).rem_euclid(n);
        if !self.wrap {
            y as i64 - x as i64
        } else if forward <= n - forward {
            forward
        } else {
            forward - n
        }
    }

    /// (from router, to router) of network link `id`.
    fn decode(&self, id: LinkId) -> (u32, u32) {
        for (i, d) in self.dims.iter().enumerate() {
            for (base, span, first, plus) in
                [(d.plus_base, d.plus, 0, true), (d.minus_base, d.minus, d.minus_from, false)]
            {
                if id >= base && id - base < span * d.lines {
                    let idx = id - base;
                    let lower = idx % d.stride;
                    let x = first + (idx / d.stride) % span;
                    let upper = idx / d.stride / span;
                    let r = lower + d.stride * (x + d.size * upper);
                    return (r, self.step(r, i, plus).1);
                }
            }
        }
        unreachable!("link {id} is not a grid link")
    }
}

/// k-ary n-tree.
#[derive(Clone, Debug)]
pub(crate) struct FatTree {
    pub k: u32,
    pub levels: u32,
    /// Switches per level, `k^(levels−1)`.
    pub switches: u32,
    /// `k^0 ..= k^levels`.
    pow: Vec<u64>,
    up_base: u32,
    down_base: u32,
    oversubscription: u32,
}

impl FatTree {
    /// Base-k digit `l` of `x`.
    #[inline]
    pub fn digit(&self, x: u32, l: u32) -> u32 {
        ((x as u64 / self.pow[l as usize]) % self.k as u64) as u32
    }

    /// `w` with its base-k digit `l` replaced by `j`.
    #[inline]
    pub fn with_digit(&self, w: u32, l: u32, j: u32) -> u32 {
        let p = self.pow[l as usize];
        (w as u64 - self.digit(w, l) as u64 * p + j as u64 * p) as u32
    }

    /// Level of the lowest common ancestor of two nodes: the smallest `l` such that both lie
    /// below one switch of level `l` (0 when they share a leaf switch, or are the same node).
    #[inline]
    pub fn common_level(&self, src: u32, dst: u32) -> u32 {
        let mut l = 0;
        while src as u64 / self.pow[l as usize + 1] != dst as u64 / self.pow[l as usize + 1] {
            l += 1;
        }
        l
    }

    /// Up-link `j` of switch `w` at level `l`.
    #[inline]
    pub fn up(&self, l: u32, w: u32, j: u32) -> LinkId {
        self.up_base + (l * self.switches + w) * self.k + j
    }

    /// Down-link from switch `w` of level `l + 1` to its child with digit `l` equal to `j`.
    #[inline]
    pub fn down(&self, l: u32, w: u32, j: u32) -> LinkId {
        self.down_base + (l * self.switches + w) * self.k + j
    }

    fn capacity(&self, lower_level: u32) -> f64 {
        if lower_level == 0 {
            1.0 / self.oversubscription as f64
        } else {
            1.0
        }
    }
}

/// Dragonfly with the consecutive global arrangement.
#[derive(Clone, Debug)]
pub(crate) struct Dragonfly {
    pub a: u32,
    pub p: u32,
    h: u32,
    pub g: u32,
    /// Parallel global links between each pair of groups, `⌊a·h / (g − 1)⌋` (0 when g = 1).
    pub copies: u32,
    local_base: u32,
    global_base: u32,
}

impl Dragonfly {
    /// The local link from router `r` to router `s` of the same group (`r ≠ s`).
    #[inline]
    pub fn local(&self, r: u32, s: u32) -> LinkId {
        let (rho, sigma) = (r % self.a, s % self.a);
        self.local_base + r * (self.a - 1) + if sigma < rho { sigma } else { sigma - 1 }
    }

    /// Copy `c` of the global links from group `i` to group `j` (`i ≠ j`): its id, the router it
    /// leaves and the router it reaches.
    #[inline]
    pub fn global(&self, i: u32, j: u32, c: u32) -> (LinkId, u32, u32) {
        let m = self.g - 1;
        let t = if j < i { j } else { j - 1 };
        let t_back = if i < j { i } else { i - 1 };
        let (q, q_back) = (c * m + t, c * m + t_back);
        let id = self.global_base + i * self.copies * m + q;
        (id, i * self.a + q / self.h, j * self.a + q_back / self.h)
    }

    /// Network hops from router `from` over copy `c` of the links to group `j`, counting the local
    /// hop to the link's router, the global hop, and (when `to` is given) the local hop on to `to`.
    #[inline]
    pub fn copy_hops(&self, from: u32, j: u32, c: u32, to: Option<u32>) -> u32 {
        let (_, u, v) = self.global(from / self.a, j, c);
        (from != u) as u32 + 1 + to.map_or(0, |t| (v != t) as u32)
    }

    /// Minimal network hops between routers `r` and `s`. O(copies) across groups.
    fn router_hops(&self, r: u32, s: u32) -> u32 {
        if r == s {
            0
        } else if r / self.a == s / self.a {
            1
        } else {
            (0..self.copies).map(|c| self.copy_hops(r, s / self.a, c, Some(s))).min().unwrap_or(0)
        }
    }

    /// Largest minimal hop count between two routers. O(g² · copies · log copies).
    fn diameter(&self) -> u32 {
        let mut best = (self.a > 1) as u32;
        let (mut from, mut to, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..self.g {
            for j in (0..self.g).filter(|&j| j != i) {
                from.clear();
                to.clear();
                pairs.clear();
                for c in 0..self.copies {
                    let (_, u, v) = self.global(i, j, c);
                    from.push(u);
                    to.push(v);
                    pairs.push((u, v));
                }
                for v in [&mut from, &mut to] {
                    v.sort_unstable();
                    v.dedup();
                }
                pairs.sort_unstable();
                pairs.dedup();
                // A router pair with neither end on a link of this group pair needs 3 hops; if
                // one side has a link on every router, a pair not directly joined needs 2.
                let a = self.a as usize;
                let d = if from.len() < a && to.len() < a {
                    3
                } else if pairs.len() < a * a {
                    2
                } else {
                    1
                };
                best = best.max(d);
            }
        }
        best
    }

    fn decode(&self, id: LinkId) -> (LinkClass, u32, u32) {
        if id < self.global_base {
            let idx = id - self.local_base;
            let r = idx / (self.a - 1);
            let e = idx % (self.a - 1);
            let rho = r % self.a;
            let sigma = if e < rho { e } else { e + 1 };
            (LinkClass::Local, r, r - rho + sigma)
        } else {
            let idx = id - self.global_base;
            let m = self.g - 1;
            let (i, q) = (idx / (self.copies * m), idx % (self.copies * m));
            let t = q % m;
            let j = if t < i { t } else { t + 1 };
            let (_, u, v) = self.global(i, j, q / m);
            (LinkClass::Global, u, v)
        }
    }
}

/// `value` as a 32-bit id; the error names `key`, the size that made it too large.
fn checked_u32(value: u64, what: &str, spec: &TopologySpec, key: &str) -> Result<u32, SpecError> {
    u32::try_from(value)
        .map_err(|_| size_error(key, format!("{} has {value} {what}; at most {} fit a 32-bit id", spec.kind(), u32::MAX)))
}

/// `2·nodes + network`, checked to fit a link id.
fn total_links(nodes: u32, network: u64, spec: &TopologySpec, key: &str) -> Result<u32, SpecError> {
    checked_u32(2 * nodes as u64 + network, "links", spec, key)
}

/// An error about the size `key` of the `[topology]` table.
fn size_error(key: &str, problem: impl Into<String>) -> SpecError {
    SpecError::new(format!("topology.{key}"), problem)
}

impl Topology {
    /// Validates `spec` and lays out its links. Errors name the offending parameter: no or zero
    /// dimensions, `k < 2`, zero levels or oversubscription, oversubscription of a one-level tree,
    /// zero dragonfly parameters, `h = 0` or `g > a·h + 1` with several groups, more nodes, routers
    /// or links than a 32-bit id holds. O(dimensions) (O(levels) for a fat tree).
    pub fn new(spec: TopologySpec) -> Result<Topology, SpecError> {
        let (nodes, links, routers, shape) = match &spec {
            TopologySpec::Torus { dims } | TopologySpec::Mesh { dims } => {
                let wrap = matches!(spec, TopologySpec::Torus { .. });
                Self::grid(&spec, dims, wrap)?
            }
            &TopologySpec::FatTree { k, levels, oversubscription } => {
                Self::fat_tree(&spec, k, levels, oversubscription)?
            }
            &TopologySpec::Dragonfly { a, p, h, g } => Self::dragonfly(&spec, a, p, h, g)?,
            &TopologySpec::Crossbar { nodes } => {
                if nodes == 0 {
                    return Err(size_error("nodes", "crossbar needs at least 1 node"));
                }
                (nodes, total_links(nodes, 0, &spec, "nodes")?, 1, Shape::Crossbar)
            }
        };
        Ok(Topology { spec, nodes, links, routers, shape })
    }

    fn grid(spec: &TopologySpec, sizes: &[u32], wrap: bool) -> Result<(u32, u32, u32, Shape), SpecError> {
        let kind = spec.kind();
        if sizes.is_empty() {
            return Err(size_error("dims", format!("{kind} needs at least one dimension")));
        }
        if let Some(i) = sizes.iter().position(|&n| n == 0) {
            return Err(size_error("dims", format!("{kind} dimension {i} has size 0; every size must be at least 1")));
        }
        let nodes = sizes
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n as u64).filter(|&v| v <= u32::MAX as u64))
            .map(|v| v as u32)
            .ok_or_else(|| {
                size_error("dims", format!("{kind} has more than {} nodes; at most that many fit a 32-bit id", u32::MAX))
            })?;
        let mut dims = Vec::with_capacity(sizes.len());
        let (mut stride, mut next) = (1u64, 2 * nodes as u64);
        for &size in sizes {
            let (plus, minus, minus_from) = match (wrap, size) {
                (_, 1) => (0, 0, 0),
                (true, 2) => (2, 0, 0),
                (true, _) => (size, size, 0),
                (false, _) => (size - 1, size - 1, 1),
            };
            let lines = nodes as u64 / size as u64;
            let plus_base = next;
            let minus_base = plus_base + plus as u64 * lines;
            next = minus_base + minus as u64 * lines;
            let fits = |v: u64| checked_u32(v, "links", spec, "dims");
            dims.push(Dim {
                size,
                stride: stride as u32,
                plus,
                minus,
                minus_from,
                lines: lines as u32,
                plus_base: fits(plus_base)?,
                minus_base: fits(minus_base)?,
            });
            stride *= size as u64;
        }
        let links = checked_u32(next, "links", spec, "dims")?;
        Ok((nodes, links, nodes, Shape::Grid(Grid { wrap, dims })))
    }

    fn fat_tree(spec: &TopologySpec, k: u32, levels: u32, r: u32) -> Result<(u32, u32, u32, Shape), SpecError> {
        if k < 2 {
            return Err(size_error("k", format!("fat tree radix k must be at least 2, not {k}")));
        }
        if levels == 0 {
            return Err(size_error("levels", "fat tree needs at least 1 level"));
        }
        if r == 0 {
            return Err(size_error("oversubscription", "fat tree oversubscription must be at least 1 (1 = full bisection), not 0"));
        }
        if r > 1 && levels < 2 {
            return Err(size_error(
                "oversubscription",
                format!("fat tree oversubscription {r}:1 needs at least 2 levels (1 level is a single switch)"),
            ));
        }
        let mut pow = vec![1u64];
        for _ in 0..levels {
            let next = pow[pow.len() - 1] * k as u64;
            if next > u32::MAX as u64 {
                return Err(size_error(
                    "levels",
                    format!(
                        "fat tree {k}-ary {levels}-tree has more than {} nodes (k^levels); at most that \
                         many fit a 32-bit id",
                        u32::MAX
                    ),
                ));
            }
            pow.push(next);
        }
        let nodes = pow[levels as usize] as u32;
        let switches = pow[levels as usize - 1] as u32;
        let per_direction = (levels - 1) as u64 * nodes as u64;
        let links = total_links(nodes, 2 * per_direction, spec, "levels")?;
        let routers = checked_u32(levels as u64 * switches as u64, "switches", spec, "levels")?;
        let up_base = 2 * nodes;
        let down_base = up_base + per_direction as u32;
        let tree = FatTree { k, levels, switches, pow, up_base, down_base, oversubscription: r };
        Ok((nodes, links, routers, Shape::FatTree(tree)))
    }

    fn dragonfly(
        spec: &TopologySpec,
        a: u32,
        p: u32,
        h: u32,
        g: u32,
    ) -> Result<(u32, u32, u32, Shape), SpecError> {
        for (name, value, meaning) in
            [("a", a, "routers per group"), ("p", p, "nodes per router"), ("g", g, "groups")]
        {
            if value == 0 {
                return Err(size_error(name, format!("dragonfly {name} ({meaning}) must be at least 1")));
            }
        }
        if g > 1 && h == 0 {
            return Err(size_error("h", format!("dragonfly with g = {g} groups needs h >= 1 global links per router")));
        }
        if g as u64 > a as u64 * h as u64 + 1 {
            return Err(size_error(
                "g",
                format!(
                    "dragonfly g = {g} groups exceeds a*h + 1 = {}: some pairs of groups would have no \
                     global link",
                    a as u64 * h as u64 + 1
                ),
            ));
        }
        let routers = checked_u32(g as u64 * a as u64, "routers", spec, "g")?;
        let nodes = checked_u32(routers as u64 * p as u64, "nodes", spec, "p")?;
        let copies = if g > 1 { ((a as u64 * h as u64) / (g as u64 - 1)) as u32 } else { 0 };
        let local = routers as u64 * (a as u64 - 1);
        let global = g as u64 * copies as u64 * (g as u64).saturating_sub(1);
        let links = total_links(nodes, local + global, spec, "g")?;
        let local_base = 2 * nodes;
        let global_base = local_base + local as u32;
        let df = Dragonfly { a, p, h, g, copies, local_base, global_base };
        Ok((nodes, links, routers, Shape::Dragonfly(df)))
    }

    /// The specification this topology was built from.
    pub fn spec(&self) -> &TopologySpec {
        &self.spec
    }

    /// Number of compute nodes; nodes are `0..num_nodes()`.
    pub fn num_nodes(&self) -> u32 {
        self.nodes
    }

    /// Number of directed links, injection and ejection links included; ids are `0..num_links()`.
    pub fn num_links(&self) -> u32 {
        self.links
    }

    /// Number of routers (switches); see [`Vertex`] for their numbering.
    pub fn num_routers(&self) -> u32 {
        self.routers
    }

    /// The injection link of `node` (its id is `node`).
    #[inline]
    pub fn injection(&self, node: u32) -> LinkId {
        debug_assert!(node < self.nodes);
        node
    }

    /// The ejection link of `node` (its id is `num_nodes() + node`).
    #[inline]
    pub fn ejection(&self, node: u32) -> LinkId {
        debug_assert!(node < self.nodes);
        self.nodes + node
    }

    /// The router `node` hangs off.
    fn router_of(&self, node: u32) -> u32 {
        match &self.shape {
            Shape::Grid(_) => node,
            Shape::FatTree(t) => node / t.k,
            Shape::Dragonfly(d) => node / d.p,
            Shape::Crossbar => 0,
        }
    }

    /// Class, capacity and ends of link `id`. Panics if `id >= num_links()`. O(1), O(dimensions)
    /// for a grid.
    pub fn link(&self, id: LinkId) -> Link {
        assert!(id < self.links, "link {id} out of range ({} links)", self.links);
        let n = self.nodes;
        let endpoint = |class, from, to| Link { class, capacity: 1.0, from, to };
        if id < n {
            return endpoint(LinkClass::Injection, Vertex::Node(id), Vertex::Router(self.router_of(id)));
        }
        if id < 2 * n {
            return endpoint(
                LinkClass::Ejection,
                Vertex::Router(self.router_of(id - n)),
                Vertex::Node(id - n),
            );
        }
        let (class, capacity, from, to) = match &self.shape {
            Shape::Grid(grid) => {
                let (r, s) = grid.decode(id);
                (LinkClass::Local, 1.0, r, s)
            }
            Shape::FatTree(t) => {
                let up = id < t.down_base;
                let idx = id - if up { t.up_base } else { t.down_base };
                let (l, w, j) = (idx / (t.switches * t.k), (idx / t.k) % t.switches, idx % t.k);
                let (lower, upper) = if up {
                    (l * t.switches + w, (l + 1) * t.switches + t.with_digit(w, l, j))
                } else {
                    (l * t.switches + t.with_digit(w, l, j), (l + 1) * t.switches + w)
                };
                let (from, to) = if up { (lower, upper) } else { (upper, lower) };
                (LinkClass::Local, t.capacity(l), from, to)
            }
            Shape::Dragonfly(d) => {
                let (class, r, s) = d.decode(id);
                (class, 1.0, r, s)
            }
            Shape::Crossbar => unreachable!("a crossbar has no network links"),
        };
        Link { class, capacity, from: Vertex::Router(from), to: Vertex::Router(to) }
    }

    /// Coordinates of `node`, least significant first: torus and mesh, one per dimension
    /// (`node = x0 + d0·(x1 + d1·…)`); fat tree, its `n` base-k digits (digit 0 is its port on
    /// the leaf switch); dragonfly, `[slot on router, router in group, group]`; crossbar,
    /// `[node]`. Panics if `node >= num_nodes()`. O(dimensions).
    pub fn coordinates(&self, node: u32) -> Vec<u32> {
        assert!(node < self.nodes, "node {node} out of range ({} nodes)", self.nodes);
        match &self.shape {
            Shape::Grid(grid) => (0..grid.dims.len()).map(|i| grid.coordinate(node, i)).collect(),
            Shape::FatTree(t) => (0..t.levels).map(|l| t.digit(node, l)).collect(),
            Shape::Dragonfly(d) => vec![node % d.p, (node / d.p) % d.a, node / d.p / d.a],
            Shape::Crossbar => vec![node],
        }
    }

    /// Network links (injection and ejection not counted) on a minimal route from `src` to `dst`:
    /// the length of the route that dimension-order, d-mod-k, fat-tree adaptive and dragonfly
    /// minimal routing take. 0 for the same node or the same router. (On a dragonfly, "minimal"
    /// is the usual local-global-local path over a direct global link; a path through a third
    /// group can occasionally be shorter.) Panics on a node out of range. O(dimensions),
    /// O(levels) for a fat tree, O(copies) across dragonfly groups.
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        assert!(
            src < self.nodes && dst < self.nodes,
            "nodes {src}, {dst} out of range ({} nodes)",
            self.nodes
        );
        match &self.shape {
            Shape::Grid(grid) => (0..grid.dims.len())
                .map(|i| {
                    grid.offset(i, grid.coordinate(src, i), grid.coordinate(dst, i)).unsigned_abs() as u32
                })
                .sum(),
            Shape::FatTree(t) => 2 * t.common_level(src, dst),
            Shape::Dragonfly(d) => d.router_hops(src / d.p, dst / d.p),
            Shape::Crossbar => 0,
        }
    }

    /// The largest [`Topology::hops`] over all pairs of nodes. O(dimensions) except a dragonfly:
    /// O(g² · copies · log copies).
    pub fn diameter(&self) -> u32 {
        match &self.shape {
            Shape::Grid(grid) => {
                grid.dims.iter().map(|d| if grid.wrap { d.size / 2 } else { d.size - 1 }).sum()
            }
            Shape::FatTree(t) => 2 * (t.levels - 1),
            Shape::Dragonfly(d) => d.diameter(),
            Shape::Crossbar => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(spec: TopologySpec) -> Topology {
        Topology::new(spec).unwrap()
    }

    fn torus(dims: &[u32]) -> Topology {
        topo(TopologySpec::Torus { dims: dims.to_vec() })
    }

    fn mesh(dims: &[u32]) -> Topology {
        topo(TopologySpec::Mesh { dims: dims.to_vec() })
    }

    fn error(spec: TopologySpec) -> String {
        Topology::new(spec).unwrap_err().problem
    }

    #[test]
    fn link_counts_match_hand_counts() {
        // 16 nodes × 4 directions + 16 injection + 16 ejection.
        assert_eq!(torus(&[4, 4]).num_links(), 16 * 4 + 32);
        // Size 2: one link each way per pair, so 4 pairs of routers × 2 directions per dimension.
        assert_eq!(torus(&[2, 2]).num_links(), 8 + 8);
        assert_eq!(torus(&[5, 1]).num_links(), 5 * 2 + 10);
        // Mesh 4x4: per dimension 4 lines × 3 edges × 2 directions.
        assert_eq!(mesh(&[4, 4]).num_links(), 2 * 24 + 32);
        assert_eq!(mesh(&[1]).num_links(), 2);
        // 2-ary 3-tree: 8 nodes; 3 levels of 4 switches; 2 levels × 4 switches × 2 up-links, as
        // many down-links; plus 8 + 8.
        assert_eq!(
            topo(TopologySpec::FatTree { k: 2, levels: 3, oversubscription: 1 }).num_links(),
            16 + 16 + 16
        );
        assert_eq!(topo(TopologySpec::FatTree { k: 2, levels: 3, oversubscription: 1 }).num_routers(), 12);
        // Dragonfly a=2 p=1 h=1 g=3: 6 nodes, 6 routers with 1 local link each, 2 global links
        // out of each group (one per other group).
        assert_eq!(topo(TopologySpec::Dragonfly { a: 2, p: 1, h: 1, g: 3 }).num_links(), 12 + 6 + 6);
        // g = 2 with a·h = 4: four parallel global links each way.
        assert_eq!(topo(TopologySpec::Dragonfly { a: 2, p: 3, h: 2, g: 2 }).num_links(), 24 + 4 + 8);
        assert_eq!(topo(TopologySpec::Crossbar { nodes: 5 }).num_links(), 10);
    }

    #[test]
    fn torus_links_join_neighbours() {
        let t = torus(&[3, 2]);
        let ends: Vec<_> = (12..t.num_links()).map(|id| (t.link(id).from, t.link(id).to)).collect();
        assert_eq!(ends.len(), 6 * 2 + 6);
        // Node 4 = (1, 1): +x to (2, 1) = 5, -x to (0, 1) = 3, and one link to (1, 0) = 1 in y.
        for to in [5, 3, 1] {
            assert_eq!(ends.iter().filter(|&&e| e == (Vertex::Router(4), Vertex::Router(to))).count(), 1);
        }
        assert_eq!(ends.iter().filter(|&&(from, _)| from == Vertex::Router(4)).count(), 3);
        assert_eq!(t.coordinates(4), vec![1, 1]);
    }

    #[test]
    fn endpoint_links_touch_their_node() {
        let t = topo(TopologySpec::Dragonfly { a: 3, p: 2, h: 1, g: 4 });
        for node in 0..t.num_nodes() {
            let inj = t.link(t.injection(node));
            assert_eq!(
                (inj.class, inj.from, inj.to),
                (LinkClass::Injection, Vertex::Node(node), Vertex::Router(node / 2))
            );
            let ej = t.link(t.ejection(node));
            assert_eq!(
                (ej.class, ej.from, ej.to),
                (LinkClass::Ejection, Vertex::Router(node / 2), Vertex::Node(node))
            );
        }
    }

    #[test]
    fn fat_tree_oversubscription_thins_leaf_links_both_ways() {
        let t = topo(TopologySpec::FatTree { k: 2, levels: 3, oversubscription: 4 });
        let mut thin = 0;
        for id in 16..t.num_links() {
            let l = t.link(id);
            let (Vertex::Router(a), Vertex::Router(b)) = (l.from, l.to) else { panic!("{l:?}") };
            let touches_leaf = a < 4 || b < 4;
            assert_eq!(l.capacity, if touches_leaf { 0.25 } else { 1.0 }, "{l:?}");
            thin += touches_leaf as u32;
        }
        assert_eq!(thin, 16);
    }

    #[test]
    fn dragonfly_global_links_pair_every_group() {
        for (a, h, g) in [(4, 2, 9), (2, 1, 3), (4, 2, 5), (3, 3, 2), (2, 3, 6)] {
            let t = topo(TopologySpec::Dragonfly { a, p: 1, h, g });
            let mut per_pair = vec![0u32; (g * g) as usize];
            let mut per_router = vec![0u32; (a * g) as usize];
            for id in 0..t.num_links() {
                let l = t.link(id);
                if l.class == LinkClass::Global {
                    let (Vertex::Router(u), Vertex::Router(v)) = (l.from, l.to) else { panic!() };
                    assert_ne!(u / a, v / a);
                    per_pair[(u / a * g + v / a) as usize] += 1;
                    per_router[u as usize] += 1;
                }
            }
            let copies = a * h / (g - 1);
            for i in 0..g {
                for j in (0..g).filter(|&j| j != i) {
                    assert_eq!(per_pair[(i * g + j) as usize], copies, "a={a} h={h} g={g} {i}->{j}");
                }
            }
            assert!(per_router.iter().all(|&n| n <= h));
        }
    }

    #[test]
    fn hops_and_diameter_by_hand() {
        let t = torus(&[8, 8, 8]);
        assert_eq!(t.hops(0, 4 + 8 * 5), 4 + 3);
        assert_eq!(t.diameter(), 12);
        assert_eq!(mesh(&[4, 3]).diameter(), 5);
        assert_eq!(mesh(&[4, 3]).hops(0, 11), 5);
        let ft = topo(TopologySpec::FatTree { k: 4, levels: 3, oversubscription: 1 });
        assert_eq!((ft.hops(0, 3), ft.hops(0, 4), ft.hops(0, 63), ft.diameter()), (0, 2, 4, 4));
        // Full dragonfly a=4 h=2 g=9: one global link per pair of groups.
        let df = topo(TopologySpec::Dragonfly { a: 4, p: 2, h: 2, g: 9 });
        assert_eq!((df.hops(0, 1), df.hops(0, 2), df.diameter()), (0, 1, 3));
        // Group 0's port 0 (router 0) reaches group 1's port 0 (router 0): one hop.
        assert_eq!(df.hops(0, 8), 1);
        // Two groups of one router each, joined directly.
        assert_eq!(topo(TopologySpec::Dragonfly { a: 1, p: 4, h: 1, g: 2 }).diameter(), 1);
        assert_eq!(topo(TopologySpec::Crossbar { nodes: 3 }).diameter(), 0);
    }

    #[test]
    fn coordinates_per_shape() {
        assert_eq!(torus(&[4, 3, 2]).coordinates(4 * 3 + 4 + 3), vec![3, 1, 1]);
        let ft = topo(TopologySpec::FatTree { k: 3, levels: 3, oversubscription: 1 });
        assert_eq!(ft.coordinates(2 + 3 + 9 * 2), vec![2, 1, 2]);
        let df = topo(TopologySpec::Dragonfly { a: 4, p: 2, h: 2, g: 9 });
        assert_eq!(df.coordinates(8 * 5 + 2 * 3 + 1), vec![1, 3, 5]);
    }

    #[test]
    fn invalid_specs_are_refused_with_reasons() {
        let torus_err = |dims: Vec<u32>| error(TopologySpec::Torus { dims });
        assert!(torus_err(vec![]).contains("at least one dimension"));
        assert!(torus_err(vec![4, 0]).contains("dimension 1 has size 0"));
        assert!(torus_err(vec![65536, 65536]).contains("nodes"));
        assert!(torus_err(vec![1 << 16, 1 << 15]).contains("links"));
        assert!(error(TopologySpec::Mesh { dims: vec![0] }).starts_with("mesh"));
        let ft = |k, levels, oversubscription| error(TopologySpec::FatTree { k, levels, oversubscription });
        assert!(ft(1, 3, 1).contains("at least 2, not 1"));
        assert!(ft(4, 0, 1).contains("at least 1 level"));
        assert!(ft(4, 2, 0).contains("oversubscription"));
        assert!(ft(4, 1, 2).contains("at least 2 levels"));
        assert!(ft(2, 32, 1).contains("nodes"));
        assert!(ft(2, 31, 1).contains("links"));
        let df = |a, p, h, g| error(TopologySpec::Dragonfly { a, p, h, g });
        assert!(df(0, 1, 1, 1).contains("a (routers per group)"));
        assert!(df(1, 0, 1, 1).contains("p (nodes per router)"));
        assert!(df(1, 1, 1, 0).contains("g (groups)"));
        assert!(df(4, 1, 0, 2).contains("h >= 1"));
        assert!(df(4, 1, 2, 10).contains("exceeds a*h + 1 = 9"));
        assert!(df(1 << 16, 1 << 16, 1, 1).contains("nodes"));
        assert!(error(TopologySpec::Crossbar { nodes: 0 }).contains("at least 1 node"));
        // The limits themselves are accepted.
        assert!(Topology::new(TopologySpec::Dragonfly { a: 4, p: 1, h: 2, g: 9 }).is_ok());
        assert!(Topology::new(TopologySpec::Dragonfly { a: 3, p: 2, h: 0, g: 1 }).is_ok());
    }
}
