//! Link contention: hand-solvable cases of the network model (docs/models.md, "Links"), exact to
//! the picosecond up to one rounding per flow.

use contend_engine::net::{Network, NetworkSpec, Placement, TopologySpec};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::sim::{simulate_with_progress, Options, Params, SimResult};

const NS: u64 = 1000;
/// 1 GB/s = 1e-3 bytes per picosecond.
const GBPS: f64 = 1e9;

fn params() -> Params {
    // L and G must not matter between nodes of a network; o, g, O stay at the endpoints.
    Params { L: 123_456 * NS, o: 1000 * NS, g: 500 * NS, G: 77 * NS, O: 0, S: u64::MAX >> 8, unit: NS, rendezvous: None }
}

fn spec(topology: TopologySpec, hop_latency: u64, packet: u64) -> NetworkSpec {
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
    }
}

fn run<P: contend_engine::schedule::Program>(prog: &P, net: &NetworkSpec, records: bool) -> SimResult {
    let network = Network::new(net, prog.num_ranks()).unwrap();
    let r = simulate_with_progress(prog, &params(), &Options { records, timeline: false }, Some(network), |_| true).unwrap();
    assert!(r.deadlock.is_none());
    r
}

#[test]
fn n_flows_into_one_link_each_get_a_fair_share() {
    let o = params().o;
    for n in [1u64, 2, 3, 4, 7] {
        let s = 1_000_000u64;
        let net = spec(TopologySpec::Crossbar { nodes: n as u32 + 1 }, 0, 1);
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
fn one_flow_over_d_hops() {
    let p = params();
    let (hop, packet, s) = (50 * NS, 256u64, 65536u64);
    for d in 1..=8u64 {
        // Ping-pong between node 0 and node d of a 16-node ring.
        let text = format!(
            "num_ranks 16\nrank 0 {{\ns: send {s}b to {d}\nr: recv {s}b from {d}\n}}\n{}\n",
            (1..16).map(|r| if r == d { format!("rank {r} {{\nr: recv {s}b from 0\ns: send {s}b to 0\ns requires r\n}}") } else { format!("rank {r} {{\n}}") }).collect::<Vec<_>>().join("\n")
        );
        let g = parse_goal(text.as_bytes(), "pp.goal").unwrap();
        let r = run(&g, &spec(TopologySpec::Torus { dims: vec![16] }, hop, packet), false);
        // One way: o, then the first packet crosses d+2 links (injection, d hops, ejection), then
        // the bytes stream at the link rate, then the receiver pays o.
        let one_way = p.o + (d + 2) * (hop + packet * NS) + s * NS + p.o;
        assert_eq!(r.makespan, 2 * one_way, "d={d}");
    }
}

#[test]
fn a_rate_rises_when_a_competing_flow_ends() {
    // Two senders into one receiver on a crossbar, 1 MB and 3 MB, starting together: the short one
    // ends after 2 MB have crossed the shared link; the long one then runs alone.
    let text = "num_ranks 3\nrank 0 {\na: recv 1000000b from 1\nb: recv 3000000b from 2\n}\nrank 1 {\ns: send 1000000b to 0\n}\nrank 2 {\ns: send 3000000b to 0\n}\n";
    let g = parse_goal(text.as_bytes(), "t.goal").unwrap();
    let r = run(&g, &spec(TopologySpec::Crossbar { nodes: 3 }, 0, 1), true);
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
    let r = run(&g, &spec(TopologySpec::Crossbar { nodes: 3 }, 0, 1), false);
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
    let mut net = spec(TopologySpec::Crossbar { nodes: 1 }, 0, 1);
    net.ranks_per_node = 2;
    let r = run(&c, &net, false);
    let p = params();
    assert_eq!(r.makespan, 2 * (2 * p.o + p.L + 999 * p.G));
    assert!(r.links.unwrap().bytes.iter().all(|&b| b == 0));
}
