//! Link contention: hand-solvable cases of the network model (docs/models.md, "Links"). The flow
//! model is exact to the picosecond up to one rounding per flow; the packet model to within a
//! packet time per message.

use contend_engine::net::{LinkBucket, Network, NetworkSpec, Placement, Sharing, TopologySpec};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::sim::{simulate, Options, Params, Scenario, SimResult};

const NS: u64 = 1000;
/// 1 GB/s = 1e-3 bytes per picosecond.
const GBPS: f64 = 1e9;

fn params() -> Params {
    // L and G must not matter between nodes of a network; o, g, O stay at the endpoints.
    Params { L: 123_456 * NS, o: 1000 * NS, g: 500 * NS, G: 77 * NS, O: 0, S: u64::MAX >> 8, unit: NS, rendezvous: None }
}

fn spec(topology: TopologySpec, hop_latency: u64, packet: u64, sharing: Sharing) -> NetworkSpec {
    NetworkSpec {
        topology,
        routing: None,
        placement: Placement::Block,
        ranks_per_node: 1,
        link_bandwidth: GBPS,
        injection_bandwidth: GBPS,
        global_bandwidth: GBPS,
        hop_latency,
        packet_bytes: packet,
        seed: 1,
        sharing,
        bucket: None,
    }
}

fn run<P: contend_engine::schedule::Program>(prog: &P, net: &NetworkSpec, records: bool) -> SimResult {
    let r = simulate(prog, &Scenario::new(params()).with_network(net.clone()), &Options { records, timeline: false, ..Options::default() }, |_| true).unwrap();
    assert!(r.deadlock.is_none());
    r
}

#[test]
fn n_flows_into_one_link_each_get_a_fair_share() {
    let o = params().o;
    for n in [1u64, 2, 3, 4, 7] {
        let s = 1_000_000u64;
        let net = spec(TopologySpec::Crossbar { nodes: n as u32 + 1 }, 0, 1, Sharing::Flow);
        let c = Collective::new(Pattern::Gather, n as u32 + 1, s, 0, 0).unwrap();
        let r = run(&c, &net, true);
        // All n flows start at o and share the root's ejection link: each ends at o + n·s/B;
        // the first packet (1 byte) needs 1 ns on each of its 2 links; then the root pays o per message.
        let head = 2 * NS;
        let transfer = n * s * NS; // n·s bytes at 1 byte/ns
        let expect = o + transfer + head + n * o;
        assert!(r.makespan.abs_diff(expect) <= n, "n={n}: {} vs {expect}", r.makespan);
        let rec = r.records.unwrap();
        for k in 0..rec.len() {
            // Alone a flow takes s/B; the rest of its transfer time is link contention.
            assert!(rec.link[k].abs_diff((n - 1) * s * NS) <= n, "link delay {}", rec.link[k]);
            let parts = rec.ideal[k] + rec.nic_queue[k] + rec.link[k] + rec.target_queue[k] + rec.late_receiver[k] + rec.noise[k];
            assert_eq!(parts, rec.completed[k] - rec.posted[k]);
        }
        let links = r.links.unwrap();
        assert_eq!(links.bytes[(n + 1 + 0) as usize], n * s, "the root's ejection link carried every byte");
        assert_eq!(links.peak_flows[(n + 1) as usize], n as u32);
    }
}

#[test]
fn n_packet_streams_into_one_link_each_get_a_fair_share_within_a_packet() {
    let o = params().o;
    let packet = 1000u64; // 1 us per packet at 1 GB/s
    let tx = packet * NS;
    for n in [1u64, 2, 3, 4, 7] {
        let s = 1_000_000u64;
        let net = spec(TopologySpec::Crossbar { nodes: n as u32 + 1 }, 0, packet, Sharing::Packet);
        let c = Collective::new(Pattern::Gather, n as u32 + 1, s, 0, 0).unwrap();
        let r = run(&c, &net, true);
        let rec = r.records.unwrap();
        // Every sender's first packet crosses its injection link (tx); from then on the root's
        // ejection link is never idle and serves the n messages in turn: the last packet arrives
        // at o + tx + n·s/B, the others within one round (n packets) before.
        let last = o + tx + n * s * NS;
        assert_eq!(*rec.arrived.iter().max().unwrap(), last, "n={n}");
        for k in 0..rec.len() {
            assert!(rec.arrived[k] + n * tx > last, "n={n}: message {k} arrived {} before the last round", last - rec.arrived[k]);
            // Contention: the fluid (n-1)·s/B to within the last round.
            assert!(rec.link[k].abs_diff((n - 1) * s * NS) <= n * tx, "n={n}: link delay {}", rec.link[k]);
            let parts = rec.ideal[k] + rec.nic_queue[k] + rec.link[k] + rec.target_queue[k] + rec.late_receiver[k] + rec.noise[k];
            assert_eq!(parts, rec.completed[k] - rec.posted[k]);
        }
        let links = r.links.unwrap();
        assert_eq!(links.bytes[(n + 1) as usize], n * s, "the root's ejection link carried every byte");
        assert_eq!(links.busy[(n + 1) as usize], n * s * NS, "busy exactly while sending");
        assert_eq!(links.peak_flows[(n + 1) as usize], n as u32);
    }
}

#[test]
fn one_message_over_d_hops() {
    let p = params();
    let (hop, packet, s) = (50 * NS, 256u64, 65536u64);
    for sharing in [Sharing::Flow, Sharing::Packet] {
        for d in 1..=8u64 {
            // Ping-pong between node 0 and node d of a 16-node ring.
            let text = format!(
                "num_ranks 16\nrank 0 {{\ns: send {s}b to {d}\nr: recv {s}b from {d}\n}}\n{}\n",
                (1..16).map(|r| if r == d { format!("rank {r} {{\nr: recv {s}b from 0\ns: send {s}b to 0\ns requires r\n}}") } else { format!("rank {r} {{\n}}") }).collect::<Vec<_>>().join("\n")
            );
            let g = parse_goal(text.as_bytes(), "pp.goal").unwrap();
            let r = run(&g, &spec(TopologySpec::Torus { dims: vec![16] }, hop, packet, sharing), false);
            // One way: o, then the first packet crosses d+2 links (injection, d hops, ejection), then
            // the bytes stream at the link rate, then the receiver pays o. Packets: the last packet
            // is the one that crosses the path, so one packet time less.
            let pipelined = if sharing == Sharing::Packet { packet * NS } else { 0 };
            let one_way = p.o + (d + 2) * (hop + packet * NS) + s * NS - pipelined + p.o;
            assert_eq!(r.makespan, 2 * one_way, "{sharing:?} d={d}");
        }
    }
}

#[test]
fn parking_lot_gets_max_min_shares_packet_by_packet() {
    // A line of 4 nodes (mesh 4), 1 byte/ns, 100-byte packets, 20 ns per hop. A: node 0 -> 3 crosses
    // links 0>1, 1>2, 2>3; B: 0 -> 1 shares 0>1 (and node 0's injection link) with A; C: 1 -> 2
    // shares 1>2; D and E: into node 3 from node 2, sharing 2>3 and node 3's ejection link with A.
    // Max-min: A, D, E get 1/3 at node 3; B and C then 2/3. Each sends 300 kB: D and E end when
    // 900 kB have crossed node 3's ejection link; B and C when they have sent 300 kB at 2/3.
    let text = "num_ranks 8\n\
        rank 0 {\na: send 300000b to 3\n}\nrank 1 {\nc: send 300000b to 6\n}\nrank 2 {\nd: send 300000b to 7\n}\n\
        rank 3 {\na: recv 300000b from 0\n}\nrank 4 {\nb: send 300000b to 5\n}\nrank 5 {\nb: recv 300000b from 4\n}\n\
        rank 6 {\nc: recv 300000b from 1\ne: send 300000b to 7\n}\nrank 7 {\nd: recv 300000b from 2\ne: recv 300000b from 6\n}\n";
    // Two ranks per node, placed explicitly: ranks 0,4 on node 0; 1,5 on node 1; 2,6 on node 2; 3,7 on node 3.
    let g = parse_goal(text.as_bytes(), "lot.goal").unwrap();
    for sharing in [Sharing::Flow, Sharing::Packet] {
        let mut net = spec(TopologySpec::Mesh { dims: vec![4] }, 20 * NS, 100, sharing);
        net.placement = Placement::Explicit(vec![0, 1, 2, 3, 0, 1, 2, 3]);
        net.ranks_per_node = 2;
        let r = run(&g, &net, true);
        let rec = r.records.unwrap();
        let transfer = |src: u32| {
            let k = (0..rec.len()).find(|&k| rec.src[k] == src).unwrap();
            rec.arrived[k] - rec.injected[k] - params().o
        };
        // A, D, E at 1/3 each: 900 us; B, C at 2/3: 450 us (plus the path's head, < 1 us).
        let tolerance = 2_000 * NS;
        for (src, want) in [(0, 900_000 * NS), (2, 900_000 * NS), (6, 900_000 * NS), (4, 450_000 * NS), (1, 450_000 * NS)] {
            let got = transfer(src);
            assert!(got.abs_diff(want) <= tolerance, "{sharing:?} rank {src}: {got} vs {want}");
        }
    }
}

#[test]
fn a_rate_rises_when_a_competing_flow_ends() {
    // Two senders into one receiver on a crossbar, 1 MB and 3 MB, starting together: the short one
    // ends after 2 MB have crossed the shared link; the long one then runs alone.
    let text = "num_ranks 3\nrank 0 {\na: recv 1000000b from 1\nb: recv 3000000b from 2\n}\nrank 1 {\ns: send 1000000b to 0\n}\nrank 2 {\ns: send 3000000b to 0\n}\n";
    let g = parse_goal(text.as_bytes(), "t.goal").unwrap();
    let r = run(&g, &spec(TopologySpec::Crossbar { nodes: 3 }, 0, 1, Sharing::Flow), true);
    let rec = r.records.unwrap();
    let o = params().o;
    let head = 2 * NS;
    let mut arrived: Vec<u64> = rec.arrived.clone();
    arrived.sort();
    assert!(arrived[0].abs_diff(o + 2_000_000 * NS + head) <= 2);
    assert!(arrived[1].abs_diff(o + 4_000_000 * NS + head) <= 2);
}

#[test]
fn a_reused_message_slot_ignores_the_stale_completion_of_its_previous_message() {
    // X (1 MB, rank 1) shares node 0's ejection link with W (100 kB, rank 2); when W ends X speeds up,
    // leaving its first completion event (at o + 2 ms) stale. Rank 0 then sends Y (2 MB) to rank 1 in
    // X's freed slot: Y must run its full 2 ms alone, not end at X's stale event (nor end twice).
    let text = "num_ranks 3\nrank 0 {\nx: recv 1000000b from 1\nw: recv 100000b from 2\ny: send 2000000b to 1\ny requires x\n}\n\
                rank 1 {\nx: send 1000000b to 0\ny: recv 2000000b from 0\n}\nrank 2 {\nw: send 100000b to 0\n}\n";
    let g = parse_goal(text.as_bytes(), "t.goal").unwrap();
    let r = run(&g, &spec(TopologySpec::Crossbar { nodes: 3 }, 0, 1, Sharing::Flow), false);
    let (o, head) = (params().o, 2 * NS);
    // X: 100 kB at half rate until W ends (o + 200 us), the other 900 kB alone; rank 0 receives it
    // (o) and sends Y (o), whose 2 MB cross alone; rank 1 receives it (o).
    let x_arrives = o + 1_100_000 * NS + head;
    let expect = x_arrives + o + o + 2_000_000 * NS + head + o;
    assert!(r.makespan.abs_diff(expect) <= 2, "{} vs {expect}", r.makespan);
}

#[test]
fn messages_within_a_node_keep_the_loggops_costs() {
    // Two ranks per node: a ping-pong inside node 0 never touches the network.
    let c = Collective::new(Pattern::Pingpong, 2, 1000, 0, 0).unwrap();
    let mut net = spec(TopologySpec::Crossbar { nodes: 1 }, 0, 1, Sharing::Flow);
    net.ranks_per_node = 2;
    let r = run(&c, &net, false);
    let p = params();
    assert_eq!(r.makespan, 2 * (2 * p.o + p.L + 999 * p.G));
    assert!(r.links.unwrap().bytes.iter().all(|&b| b == 0));
}

#[test]
fn packet_and_flow_models_agree_on_dense_traffic_and_lose_nothing() {
    // All-to-all and random pairs of 16 KiB (1 KiB packets) over a torus, a fat tree and a dragonfly: every message
    // arrives once, the ejection links carry exactly the bytes sent between nodes, the links are never
    // busier than the run, and the two sharing models agree on the makespan.
    let topologies = [
        TopologySpec::Torus { dims: vec![4, 4] },
        TopologySpec::FatTree { k: 4, levels: 2, oversubscription: 1 },
        TopologySpec::Dragonfly { a: 2, p: 2, h: 1, g: 3 },
    ];
    for topology in topologies {
        for pattern in [Pattern::AlltoallLinear, Pattern::RandomPairs] {
            let mut makespans = Vec::new();
            for sharing in [Sharing::Flow, Sharing::Packet] {
                let net = spec(topology.clone(), 100 * NS, 1024, sharing);
                let nodes = Network::new(&net, 1).unwrap().topology().num_nodes();
                let c = Collective::new(pattern, nodes, 16384, 0, 7).unwrap();
                // Endpoint costs small beside the links, so the comparison is about the links.
                let par = Params { o: NS, g: NS / 2, ..params() };
                let r = simulate(&c, &Scenario::new(par).with_network(net.clone()), &Options { records: true, timeline: false, ..Options::default() }, |_| true).unwrap();
                assert!(r.deadlock.is_none());
                let rec = r.records.as_ref().unwrap();
                let sent: u64 = rec.bytes.iter().sum();
                assert_eq!(r.messages as usize, rec.len(), "{topology:?} {pattern:?} {sharing:?}");
                let links = r.links.as_ref().unwrap();
                let topo = Network::new(&net, nodes).unwrap();
                let ejected: u64 = (0..topo.topology().num_links())
                    .filter(|&l| topo.topology().link(l).class == contend_engine::net::LinkClass::Ejection)
                    .map(|l| links.bytes[l as usize])
                    .sum();
                assert_eq!(ejected, sent, "{topology:?} {pattern:?} {sharing:?}: bytes in = bytes out");
                assert!(links.busy.iter().all(|&b| b <= r.makespan));
                makespans.push(r.makespan as f64);
            }
            // Packets pipeline (one packet time less per message) and round robin is max-min only
            // on average, so: within 5% or three packet times (3 us here), whichever is larger.
            let gap = (makespans[1] - makespans[0]).abs();
            assert!(gap <= (0.05 * makespans[0]).max(3.0 * 1024.0 * NS as f64), "{topology:?} {pattern:?}: flow {} vs packet {}", makespans[0], makespans[1]);
        }
    }
}

/// Every link a token bucket of `burst` bytes with a peak of `peak` GB/s (sustained: 1 GB/s).
fn bucketed(nodes: u32, burst: u64, peak: f64) -> NetworkSpec {
    NetworkSpec { bucket: Some(LinkBucket { burst_bytes: burst, peak_bandwidth: peak * GBPS }), ..spec(TopologySpec::Crossbar { nodes }, 0, 1, Sharing::Flow) }
}

#[test]
fn a_message_through_token_bucket_links_bursts_at_the_peak_then_goes_at_the_sustained_rate() {
    let o = params().o;
    // Peak 2 GB/s, sustained 1 GB/s, buckets of 100,000 bytes: both links of the path drain at
    // 1 GB/s and run out together after 100 us, having passed 200,000 bytes at the peak.
    for (s, transfer) in [(50_000u64, 25_000 * NS), (200_000, 100_000 * NS), (1_000_000, 900_000 * NS)] {
        let g = parse_goal(format!("num_ranks 2\nrank 0 {{\nsend {s}b to 1\n}}\nrank 1 {{\nrecv {s}b from 0\n}}\n").as_bytes(), "one.goal").unwrap();
        let r = run(&g, &bucketed(2, 100_000, 2.0), true);
        // o, the first byte over the 2 links at the peak (0.5 ns each), the bytes, o.
        assert_eq!(r.makespan, o + NS + transfer + o, "{s} bytes");
        assert_eq!(r.records.unwrap().link[0], 0, "alone: no contention");
    }
}

#[test]
fn two_messages_into_one_bucket_share_its_peak_then_its_sustained_rate() {
    let o = params().o;
    // Two senders of 1 MB into node 2: they share its ejection link, 1 GB/s each at its 2 GB/s peak
    // (their injection links carry 1 GB/s, their sustained rate: those buckets stay full). The
    // ejection bucket drains at 1 GB/s: empty after 100 us (100 KB each), then 0.5 GB/s each for the
    // remaining 900 KB: 1800 us. Alone each would take 900 us: 1000 us of contention.
    let s = 1_000_000u64;
    let c = Collective::new(Pattern::Gather, 3, s, 0, 0).unwrap();
    let r = run(&c, &bucketed(3, 100_000, 2.0), true);
    let rec = r.records.unwrap();
    for k in 0..rec.len() {
        assert_eq!(rec.arrived[k], o + 1900 * 1000 * NS + NS, "message {k}");
        assert_eq!(rec.link[k], 1000 * 1000 * NS, "message {k}");
    }
}

#[test]
fn token_bucket_links_are_checked() {
    let mut b = bucketed(2, 100_000, 0.5);
    assert!(Network::new(&b, 2).err().unwrap().problem.contains("must be at least the fastest link"));
    b.bucket = Some(LinkBucket { burst_bytes: 0, peak_bandwidth: 2.0 * GBPS });
    assert!(Network::new(&b, 2).err().unwrap().problem.contains("at least 1 byte"));
    b.bucket = Some(LinkBucket { burst_bytes: 10, peak_bandwidth: 2.0 * GBPS });
    b.sharing = Sharing::Packet;
    assert_eq!(Network::new(&b, 2).err().unwrap().key, "topology.burst");
}
