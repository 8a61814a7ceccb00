//! Property tests of topologies and routing, over every pair of nodes of a zoo of small networks:
//! every route is a connected walk from injection to ejection of the right length and shape,
//! link numbering has no holes, d-mod-k spreads an all-to-all evenly, adaptive policies take the
//! less loaded links, and routes are reproducible. An ignored test measures routing speed.

use std::collections::HashMap;
use std::time::Instant;

use contend_engine::net::{route, LinkClass, LinkId, Routing, Topology, TopologySpec, Vertex};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

fn torus(dims: &[u32]) -> TopologySpec {
    TopologySpec::Torus { dims: dims.to_vec() }
}

fn mesh(dims: &[u32]) -> TopologySpec {
    TopologySpec::Mesh { dims: dims.to_vec() }
}

fn fat_tree(k: u32, levels: u32, oversubscription: u32) -> TopologySpec {
    TopologySpec::FatTree { k, levels, oversubscription }
}

fn dragonfly(a: u32, p: u32, h: u32, g: u32) -> TopologySpec {
    TopologySpec::Dragonfly { a, p, h, g }
}

fn zoo() -> Vec<Topology> {
    [
        torus(&[1]),
        torus(&[2]),
        torus(&[3]),
        torus(&[4, 4]),
        torus(&[2, 3, 4]),
        torus(&[5, 1, 3]),
        torus(&[3, 3, 2, 2]),
        mesh(&[1]),
        mesh(&[2]),
        mesh(&[4, 4]),
        mesh(&[3, 1, 5]),
        mesh(&[2, 3, 4]),
        fat_tree(2, 1, 1),
        fat_tree(2, 3, 1),
        fat_tree(3, 3, 2),
        fat_tree(4, 2, 1),
        fat_tree(2, 4, 3),
        dragonfly(1, 1, 1, 2),
        dragonfly(3, 1, 1, 1),
        dragonfly(2, 1, 1, 3),
        dragonfly(4, 2, 2, 9),
        dragonfly(4, 1, 2, 5),
        dragonfly(3, 2, 3, 2),
        dragonfly(2, 2, 3, 6),
        dragonfly(2, 1, 4, 3),
        TopologySpec::Crossbar { nodes: 1 },
        TopologySpec::Crossbar { nodes: 5 },
    ]
    .into_iter()
    .map(|spec| Topology::new(spec).unwrap())
    .collect()
}

fn path(t: &Topology, routing: Routing, src: u32, dst: u32, load: &[u32], rng: &mut u64) -> Vec<LinkId> {
    let mut out = Vec::new();
    route(t, routing, src, dst, load, rng, &mut out);
    out
}

fn random_load(t: &Topology, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..t.num_links()).map(|_| (splitmix(&mut state) % 4) as u32).collect()
}

fn network<'a>(t: &Topology, links: &'a [LinkId]) -> &'a [LinkId] {
    if links.is_empty() {
        links
    } else {
        assert!(links.len() >= 2, "{:?}: {links:?}", t.spec());
        &links[1..links.len() - 1]
    }
}

fn router(v: Vertex) -> u32 {
    match v {
        Vertex::Router(r) => r,
        Vertex::Node(n) => panic!("node {n} inside the network"),
    }
}

fn count_class(t: &Topology, links: &[LinkId], class: LinkClass) -> usize {
    links.iter().filter(|&&l| t.link(l).class == class).count()
}

/// Every route of every pair under every policy is a connected walk from `src`'s injection link
/// to `dst`'s ejection link, through network links only; none within one node.
#[test]
fn every_route_is_a_connected_walk() {
    let mut rng = 1;
    for t in zoo() {
        let load = random_load(&t, 5);
        for &routing in Routing::valid_for(t.spec()) {
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    let p = path(&t, routing, src, dst, &load, &mut rng);
                    let ctx = format!("{:?} {routing:?} {src}->{dst}: {p:?}", t.spec());
                    if src == dst {
                        assert!(p.is_empty(), "{ctx}");
                        continue;
                    }
                    assert!(p.iter().all(|&l| l < t.num_links()), "{ctx}");
                    assert_eq!(p[0], t.injection(src), "{ctx}");
                    assert_eq!(*p.last().unwrap(), t.ejection(dst), "{ctx}");
                    let links: Vec<_> = p.iter().map(|&l| t.link(l)).collect();
                    assert_eq!(
                        (links[0].class, links[0].from),
                        (LinkClass::Injection, Vertex::Node(src)),
                        "{ctx}"
                    );
                    let last = links[links.len() - 1];
                    assert_eq!((last.class, last.to), (LinkClass::Ejection, Vertex::Node(dst)), "{ctx}");
                    for pair in links.windows(2) {
                        assert_eq!(pair[0].to, pair[1].from, "{ctx}");
                    }
                    for l in &links[1..links.len() - 1] {
                        assert!(matches!(l.class, LinkClass::Local | LinkClass::Global), "{ctx}");
                    }
                }
            }
        }
    }
}

/// Minimal policies take exactly `hops` network links; `diameter` is the largest of them.
#[test]
fn minimal_routes_have_hops_links_and_diameter_is_their_maximum() {
    let mut rng = 2;
    for t in zoo() {
        let load = random_load(&t, 6);
        let minimal = [Routing::DimensionOrder, Routing::GridAdaptive, Routing::DModK, Routing::FatTreeAdaptive, Routing::Minimal];
        for &routing in Routing::valid_for(t.spec()).iter().filter(|r| minimal.contains(r)) {
            let mut longest = 0;
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    let p = path(&t, routing, src, dst, &load, &mut rng);
                    let hops = t.hops(src, dst);
                    assert_eq!(network(&t, &p).len() as u32, hops, "{:?} {routing:?} {src}->{dst}", t.spec());
                    assert_eq!(t.hops(dst, src), hops, "{:?} symmetric", t.spec());
                    longest = longest.max(hops);
                }
            }
            assert_eq!(t.diameter(), longest, "{:?}", t.spec());
        }
    }
}

/// Links are numbered without holes: each network link is used by some route of an all-to-all
/// (under some policy: parallel dragonfly links may serve only random choices), and no two links
/// of a grid or fat tree join the same routers in the same direction.
#[test]
fn every_link_is_reachable_and_distinct() {
    let mut rng = 3;
    for t in zoo() {
        let mut used = vec![false; t.num_links() as usize];
        for &routing in Routing::valid_for(t.spec()) {
            for round in 0..4 {
                let load = random_load(&t, round);
                for src in 0..t.num_nodes() {
                    for dst in (0..t.num_nodes()).filter(|&d| d != src) {
                        for l in path(&t, routing, src, dst, &load, &mut rng) {
                            used[l as usize] = true;
                        }
                    }
                }
            }
        }
        let multi = t.num_nodes() > 1;
        assert!(
            used.iter().all(|&u| u == multi),
            "{:?}: unused {:?}",
            t.spec(),
            (0..t.num_links()).filter(|&l| !used[l as usize]).collect::<Vec<_>>()
        );
        if !matches!(t.spec(), TopologySpec::Dragonfly { .. }) {
            let mut ends: Vec<_> =
                (0..t.num_links()).map(|l| format!("{:?}", (t.link(l).from, t.link(l).to))).collect();
            ends.sort();
            let before = ends.len();
            ends.dedup();
            assert_eq!(ends.len(), before, "{:?}", t.spec());
        }
    }
}

/// Torus and mesh: the path corrects dimension 0 first, then 1, …; within a dimension it keeps
/// one direction, one coordinate step per link; its length is Σ min(|d|, n − |d|) on a torus
/// (ties towards +) and the Manhattan distance on a mesh.
#[test]
fn dimension_order_follows_dimensions_and_distances() {
    let mut rng = 4;
    for t in zoo() {
        let wrap = match t.spec() {
            TopologySpec::Torus { .. } => true,
            TopologySpec::Mesh { .. } => false,
            _ => continue,
        };
        let dims = match t.spec() {
            TopologySpec::Torus { dims } | TopologySpec::Mesh { dims } => dims.clone(),
            _ => unreachable!(),
        };
        for src in 0..t.num_nodes() {
            for dst in 0..t.num_nodes() {
                let (cs, cd) = (t.coordinates(src), t.coordinates(dst));
                let expected: u32 = (0..dims.len())
                    .map(|i| {
                        let d = cs[i].abs_diff(cd[i]);
                        if wrap {
                            d.min(dims[i] - d)
                        } else {
                            d
                        }
                    })
                    .sum();
                let p = path(&t, Routing::DimensionOrder, src, dst, &[], &mut rng);
                let net = network(&t, &p);
                assert_eq!(net.len() as u32, expected, "{:?} {src}->{dst}", t.spec());
                let mut last_dim = 0;
                let mut direction: Option<(usize, bool)> = None;
                for &l in net {
                    let link = t.link(l);
                    let (a, b) = (t.coordinates(router(link.from)), t.coordinates(router(link.to)));
                    let changed: Vec<usize> = (0..dims.len()).filter(|&i| a[i] != b[i]).collect();
                    assert_eq!(changed.len(), 1, "{:?} {src}->{dst}", t.spec());
                    let i = changed[0];
                    let n = dims[i];
                    let plus = b[i] == (a[i] + 1) % n;
                    assert!(plus || b[i] == (a[i] + n - 1) % n);
                    assert!(wrap || b[i].abs_diff(a[i]) == 1, "a mesh never wraps");
                    assert!(i >= last_dim, "{:?} {src}->{dst}: dimension {i} after {last_dim}", t.spec());
                    if let Some((d, dir)) = direction.filter(|&(d, _)| d == i) {
                        assert_eq!(dir, plus, "{:?} {src}->{dst}: turned in dimension {d}", t.spec());
                    }
                    let forward = (cd[i] + n - cs[i]) % n;
                    if wrap && 2 * forward == n {
                        assert!(plus, "{:?} {src}->{dst}: ties go +", t.spec());
                    }
                    direction = Some((i, plus));
                    last_dim = i;
                }
            }
        }
    }
}

/// Fat tree: 2 × (level of the lowest common ancestor) network links, all up then all down, one
/// level per link. The ancestor's level is the highest base-k digit in which the nodes differ.
#[test]
fn fat_tree_routes_climb_to_the_common_ancestor() {
    let mut rng = 5;
    for t in zoo() {
        let TopologySpec::FatTree { k, levels, .. } = *t.spec() else { continue };
        let switches = k.pow(levels - 1);
        let load = random_load(&t, 7);
        for &routing in Routing::valid_for(t.spec()) {
            for src in 0..t.num_nodes() {
                for dst in (0..t.num_nodes()).filter(|&d| d != src) {
                    let (cs, cd) = (t.coordinates(src), t.coordinates(dst));
                    let top = (0..levels as usize).rev().find(|&i| cs[i] != cd[i]).unwrap() as u32;
                    let p = path(&t, routing, src, dst, &load, &mut rng);
                    let net = network(&t, &p);
                    assert_eq!(net.len() as u32, 2 * top);
                    for (step, &l) in net.iter().enumerate() {
                        let link = t.link(l);
                        let (from, to) = (router(link.from) / switches, router(link.to) / switches);
                        let up = (step as u32) < top;
                        assert_eq!(to, if up { from + 1 } else { from - 1 }, "{:?} {src}->{dst}", t.spec());
                    }
                }
            }
        }
    }
}

/// d-mod-k: in an all-to-all (every ordered pair), every up-link of a level carries the same
/// number of routes, and so does every down-link of a level.
#[test]
fn d_mod_k_spreads_an_all_to_all_evenly() {
    let mut rng = 6;
    for (k, levels) in [(2, 3), (3, 3), (4, 2), (2, 5), (4, 3), (5, 2)] {
        let t = Topology::new(fat_tree(k, levels, 1)).unwrap();
        let switches = k.pow(levels - 1);
        let mut count = vec![0u32; t.num_links() as usize];
        for src in 0..t.num_nodes() {
            for dst in (0..t.num_nodes()).filter(|&d| d != src) {
                for l in path(&t, Routing::DModK, src, dst, &[], &mut rng) {
                    count[l as usize] += 1;
                }
            }
        }
        let mut per_kind: HashMap<(u32, bool), Vec<u32>> = HashMap::new();
        for l in 2 * t.num_nodes()..t.num_links() {
            let link = t.link(l);
            let (from, to) = (router(link.from) / switches, router(link.to) / switches);
            per_kind.entry((from.min(to), to > from)).or_default().push(count[l as usize]);
        }
        assert_eq!(per_kind.len() as u32, 2 * (levels - 1));
        for ((level, up), counts) in per_kind {
            assert!(
                counts.iter().all(|&c| c == counts[0] && c > 0),
                "k={k} n={levels} level {level} up={up}: {counts:?}"
            );
        }
    }
}

/// Fat-tree adaptive: every up-link taken is a least loaded up-link of its switch; with all
/// loads equal, it is d-mod-k.
#[test]
fn fat_tree_adaptive_takes_least_loaded_up_links() {
    let mut rng = 7;
    for t in zoo() {
        let TopologySpec::FatTree { k, levels, .. } = *t.spec() else { continue };
        let switches = k.pow(levels - 1);
        let mut up_links: HashMap<u32, Vec<LinkId>> = HashMap::new();
        for l in 2 * t.num_nodes()..t.num_links() {
            let link = t.link(l);
            if router(link.to) > router(link.from) {
                up_links.entry(router(link.from)).or_default().push(l);
            }
        }
        assert!(up_links.values().all(|v| v.len() == k as usize));
        for seed in 0..4 {
            let load = random_load(&t, seed);
            let flat = vec![seed as u32; t.num_links() as usize];
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    let p = path(&t, Routing::FatTreeAdaptive, src, dst, &load, &mut rng);
                    for &l in network(&t, &p) {
                        let from = router(t.link(l).from);
                        if router(t.link(l).to) > from {
                            let least = up_links[&from].iter().map(|&u| load[u as usize]).min().unwrap();
                            assert_eq!(
                                load[l as usize],
                                least,
                                "{:?} {src}->{dst} level {}",
                                t.spec(),
                                from / switches
                            );
                        }
                    }
                    assert_eq!(
                        path(&t, Routing::FatTreeAdaptive, src, dst, &flat, &mut rng),
                        path(&t, Routing::DModK, src, dst, &flat, &mut rng)
                    );
                }
            }
        }
    }
}

/// Grid adaptive: every step is productive and leaves over the least-loaded productive link of its
/// router; with equal loads it is dimension-order.
#[test]
fn grid_adaptive_takes_the_least_loaded_productive_link() {
    let mut rng = 5;
    for spec in [TopologySpec::Torus { dims: vec![4, 3, 5] }, TopologySpec::Mesh { dims: vec![3, 4] }] {
        let (dims, wrap) = match &spec {
            TopologySpec::Torus { dims } => (dims.clone(), true),
            TopologySpec::Mesh { dims } => (dims.clone(), false),
            _ => unreachable!(),
        };
        let t = Topology::new(spec).unwrap();
        for seed in 0..4 {
            let load = random_load(&t, seed);
            let flat = vec![seed as u32; t.num_links() as usize];
            for src in 0..t.num_nodes() {
                for dst in 0..t.num_nodes() {
                    let p = path(&t, Routing::GridAdaptive, src, dst, &load, &mut rng);
                    let mut at = src;
                    for &l in network(&t, &p) {
                        // The productive links of `at`: one per dimension still to correct, the
                        // shorter way round (+ on a tie).
                        let (a, b) = (t.coordinates(at), t.coordinates(dst));
                        let wanted: Vec<Vec<u32>> = (0..a.len())
                            .filter(|&i| a[i] != b[i])
                            .map(|i| {
                                let n = dims[i];
                                let forward = (b[i] + n - a[i]) % n;
                                let plus = if wrap { forward <= n - forward } else { b[i] > a[i] };
                                let mut c = a.clone();
                                c[i] = if plus { (a[i] + 1) % n } else { (a[i] + n - 1) % n };
                                c
                            })
                            .collect();
                        let productive: Vec<LinkId> = (2 * t.num_nodes()..t.num_links())
                            .filter(|&m| {
                                let link = t.link(m);
                                match (link.from, link.to) {
                                    (Vertex::Router(f), Vertex::Router(to)) => f == at && wanted.contains(&t.coordinates(to)),
                                    _ => false,
                                }
                            })
                            .collect();
                        assert!(productive.contains(&l), "{:?} {src}->{dst}: step {l} not productive", t.spec());
                        let least = productive.iter().map(|&m| load[m as usize]).min().unwrap();
                        assert_eq!(load[l as usize], least, "{:?} {src}->{dst}", t.spec());
                        let Vertex::Router(next) = t.link(l).to else { unreachable!() };
                        at = next;
                    }
                    assert_eq!(at, dst);
                    assert_eq!(
                        path(&t, Routing::GridAdaptive, src, dst, &flat, &mut rng),
                        path(&t, Routing::DimensionOrder, src, dst, &flat, &mut rng)
                    );
                }
            }
        }
    }
}

/// Dragonfly: minimal paths are [local] global [local] (at most 3 network links, 1 global);
/// Valiant paths have at most 2 global and 5 network links and pass through a third group when
/// there is one; UGAL paths are one or the other, and minimal when nothing is loaded.
#[test]
fn dragonfly_path_shapes() {
    let mut rng = 8;
    for t in zoo() {
        let TopologySpec::Dragonfly { a, p, g, .. } = *t.spec() else { continue };
        let group = |r: u32| r / a;
        let idle = vec![0; t.num_links() as usize];
        let busy = random_load(&t, 9);
        for src in 0..t.num_nodes() {
            for dst in (0..t.num_nodes()).filter(|&d| d != src) {
                let ctx = format!("{:?} {src}->{dst}", t.spec());
                let (gs, gd) = (group(src / p), group(dst / p));
                let minimal = path(&t, Routing::Minimal, src, dst, &busy, &mut rng);
                let net = network(&t, &minimal);
                assert!(
                    net.len() <= 3 && count_class(&t, net, LinkClass::Global) == (gs != gd) as usize,
                    "{ctx}"
                );
                let classes: Vec<_> = net.iter().map(|&l| t.link(l).class).collect();
                if let Some(i) = classes.iter().position(|&c| c == LinkClass::Global) {
                    assert!(i <= 1 && classes.len() - i <= 2, "{ctx}: {classes:?}");
                }
                for &l in net.iter().filter(|&&l| t.link(l).class == LinkClass::Local) {
                    assert_eq!(group(router(t.link(l).from)), group(router(t.link(l).to)), "{ctx}");
                }
                let valiant = path(&t, Routing::Valiant, src, dst, &busy, &mut rng);
                let vnet = network(&t, &valiant);
                assert!(vnet.len() <= 5 && count_class(&t, vnet, LinkClass::Global) <= 2, "{ctx}");
                let groups: Vec<u32> = vnet.iter().map(|&l| group(router(t.link(l).to))).collect();
                if gs != gd && g >= 3 {
                    assert!(groups.iter().any(|&x| x != gs && x != gd), "{ctx}: {groups:?}");
                    assert_eq!(count_class(&t, vnet, LinkClass::Global), 2, "{ctx}");
                } else {
                    assert_eq!(vnet.len() as u32, t.hops(src, dst), "{ctx}");
                }
                let ugal = path(&t, Routing::Ugal, src, dst, &busy, &mut rng);
                let unet = network(&t, &ugal);
                let globals = count_class(&t, unet, LinkClass::Global);
                assert!((unet.len() <= 3 && globals <= 1) || (unet.len() <= 5 && globals == 2), "{ctx}");
                // Idle: the fewer network links, minimal on a tie (a path through a third group
                // can be shorter than the minimal one when that needs two local hops).
                let quiet = path(&t, Routing::Ugal, src, dst, &idle, &mut rng);
                let plain = path(&t, Routing::Minimal, src, dst, &idle, &mut rng);
                assert!(quiet == plain || quiet.len() < plain.len(), "{ctx}");
            }
        }
    }
}

/// UGAL takes the Valiant path exactly when `(load + 1) × hops` says so: with the minimal
/// path's global link loaded by more than 5 × its own cost, it always detours.
#[test]
fn ugal_detours_around_a_hot_global_link() {
    let t = Topology::new(dragonfly(4, 2, 2, 9)).unwrap();
    let mut rng = 9;
    let mut load = vec![0; t.num_links() as usize];
    for src in 0..t.num_nodes() {
        for dst in (0..t.num_nodes()).filter(|&d| d / 8 != src / 8) {
            let minimal = path(&t, Routing::Minimal, src, dst, &load, &mut rng);
            let hot = *minimal.iter().find(|&&l| t.link(l).class == LinkClass::Global).unwrap();
            load[hot as usize] = 100;
            let ugal = path(&t, Routing::Ugal, src, dst, &load, &mut rng);
            assert!(!ugal.contains(&hot), "{src}->{dst}");
            assert_eq!(count_class(&t, &ugal, LinkClass::Global), 2);
            load[hot as usize] = 0;
        }
    }
}

/// The same loads and rng state give the same route; different states spread Valiant routes.
#[test]
fn routes_are_reproducible() {
    for t in zoo() {
        let load = random_load(&t, 10);
        for &routing in Routing::valid_for(t.spec()) {
            let mut distinct = std::collections::HashSet::new();
            for seed in 0..16u64 {
                let (mut r1, mut r2) = (seed, seed);
                let all = |rng: &mut u64| -> Vec<Vec<LinkId>> {
                    (0..t.num_nodes())
                        .flat_map(|s| (0..t.num_nodes()).map(move |d| (s, d)))
                        .map(|(s, d)| path(&t, routing, s, d, &load, rng))
                        .collect()
                };
                let first = all(&mut r1);
                assert_eq!(first, all(&mut r2), "{:?} {routing:?}", t.spec());
                assert_eq!(r1, r2);
                distinct.insert(first);
            }
            let TopologySpec::Dragonfly { g, .. } = *t.spec() else {
                assert_eq!(distinct.len(), 1, "{:?} {routing:?}", t.spec());
                continue;
            };
            match routing {
                Routing::Minimal => assert_eq!(distinct.len(), 1, "{:?}", t.spec()),
                Routing::Valiant if g >= 4 => assert!(distinct.len() > 1, "{:?}", t.spec()),
                _ => {}
            }
        }
    }
}

/// Routing speed: an all-to-all (every ordered pair) on an 8x8x8 torus and on 1024-node fat
/// trees, plus a dragonfly. Run with `cargo test --release --test routing -- --ignored --nocapture`.
#[test]
#[ignore]
fn routing_speed() {
    let cases = [
        (torus(&[8, 8, 8]), Routing::DimensionOrder),
        (fat_tree(4, 5, 1), Routing::DModK),
        (fat_tree(4, 5, 1), Routing::FatTreeAdaptive),
        (fat_tree(32, 2, 1), Routing::DModK),
        (fat_tree(32, 2, 1), Routing::FatTreeAdaptive),
        (dragonfly(8, 4, 4, 33), Routing::Minimal),
        (dragonfly(8, 4, 4, 33), Routing::Ugal),
    ];
    for (spec, routing) in cases {
        let t = Topology::new(spec).unwrap();
        let load = random_load(&t, 11);
        let (mut out, mut rng, mut links) = (Vec::new(), 12u64, 0usize);
        let start = Instant::now();
        for src in 0..t.num_nodes() {
            for dst in 0..t.num_nodes() {
                out.clear();
                route(&t, routing, src, dst, &load, &mut rng, &mut out);
                links += out.len();
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let routes = t.num_nodes() as f64 * t.num_nodes() as f64;
        println!(
            "{:?} {routing:?}: {routes} routes, {links} links in {:.1} ms ({:.0} ns/route)",
            t.spec(),
            secs * 1e3,
            secs * 1e9 / routes
        );
    }
}
