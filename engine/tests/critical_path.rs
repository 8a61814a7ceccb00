#![allow(non_snake_case)]
//! The critical path's split against closed forms (docs/models.md, "Where the time goes"), and
//! its invariant: the parts sum to the makespan exactly, on every generated pattern.

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::Program;
use contend_engine::node::{CoreSpec, NodeSpec};
use contend_engine::schedule::SPINNING_TAGS;
use contend_engine::sim::{simulate, Activity, CpuScale, CriticalPath, Options, Params, Scenario, SimResult, Split};

const NS: u64 = 1000;

fn params(L: u64, o: u64, g: u64, G: u64, O: u64) -> Params {
    Params { L, o, g, G, O, S: 65535, unit: NS, rendezvous: None }
}

fn traced<P: Program + Sync>(prog: &P, par: &Params) -> (SimResult, CriticalPath) {
    let mut r = simulate(prog, &Scenario::new(*par), &Options { critical_path: true, records: true, ..Options::default() }, |_| true).unwrap();
    assert!(r.deadlock.is_none());
    let path = r.critical_path.take().expect("a finished run has its path");
    assert_eq!(path.split.total(), r.makespan);
    // Tracing changes no time.
    let plain = simulate(prog, &Scenario::new(*par), &Options::default(), |_| true).unwrap();
    assert_eq!(plain.finish, r.finish);
    (r, path)
}

fn goal(text: &str) -> impl Program + Sync {
    parse_goal(text.as_bytes(), "test.goal").unwrap()
}

/// A few parameter sets, g at most o (so a rank's sends are spaced by o): (L, o, g, G, O) in ps.
const SETS: [(u64, u64, u64, u64, u64); 4] =
    [(3_000_000, 1_500_000, 1_000_000, 6_000, 0), (2_500_000, 1_500_000, 1_000_000, 6_000, 0), (1_000, 7_777, 3_000, 13, 5), (5_000_000, 300_000, 300_000, 0, 2_000)];

#[test]
fn pingpong_is_overheads_and_wire() {
    for (L, o, g, G, O) in SETS {
        let par = params(L, o, g, G, O);
        for bytes in [1u64, 1000] {
            let (r, path) = traced(&Collective::new(Pattern::Pingpong, 2, bytes, 0, 0).unwrap(), &par);
            let e = bytes - 1;
            // Each way: the send's o, L, the receive's o + e·O; the rest of e·max(O, G) is the bytes' G.
            assert_eq!(path.split, Split { overhead: 2 * (2 * o + e * O), wire: 2 * (L + e * (O.max(G) - O)), ..Split::default() });
            assert_eq!(r.makespan, 2 * (2 * o + L + e * O.max(G)));
            assert_eq!(path.ops, 4);
            // Send overhead, transit, receive overhead, each way.
            assert_eq!(path.steps.len(), 6);
            assert_eq!(r.records.unwrap().critical, vec![true, true]);
        }
    }
}

#[test]
fn binomial_broadcast_is_log_p_hops() {
    for (L, o, g, G, O) in SETS {
        let par = params(L, o, g, G, O);
        for (ranks, k) in [(8u32, 3u64), (64, 6)] {
            for bytes in [1u64, 512] {
                let (r, path) = traced(&Collective::new(Pattern::BinomialBcast, ranks, bytes, 0, 0).unwrap(), &par);
                let e = bytes - 1;
                let hop = 2 * o + L + e * O.max(G);
                assert_eq!(r.makespan, k * hop);
                assert_eq!(path.split, Split { overhead: k * (2 * o + e * O), wire: k * (L + e * (O.max(G) - O)), ..Split::default() });
                assert_eq!(path.ops, 2 * k);
                assert_eq!(r.records.unwrap().critical.iter().filter(|&&c| c).count() as u64, k);
            }
        }
    }
}

#[test]
fn a_late_sender_is_waited_for() {
    // Rank 1 posts its receive at 0; rank 0 computes C first.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    let p = goal("num_ranks 2\nrank 0 {\nl1: calc 7000\nl2: send 8b to 1 tag 0\nl2 requires l1\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n");
    let (r, path) = traced(&p, &par);
    assert_eq!(r.makespan, 7000 * NS + 2 * o + L + 7 * G);
    assert_eq!(path.split, Split { late_partner: 7000 * NS, overhead: 2 * o, wire: L + 7 * G, ..Split::default() });
    // Scaled: the wait is the scaled calc.
    let mut s = simulate(&p, &Scenario::new(par), &Options { critical_path: true, cpu_scale: CpuScale::new(0.25).unwrap(), ..Options::default() }, |_| true).unwrap();
    assert_eq!(s.critical_path.take().unwrap().split.late_partner, 1750 * NS);
}

#[test]
fn only_the_imbalance_is_waiting() {
    // Both compute; rank 1 posts its receive after its own 3000 ns, rank 0 sends after 7000 ns.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    let p = goal("num_ranks 2\nrank 0 {\nl1: calc 7000\nl2: send 1b to 1 tag 0\nl2 requires l1\n}\nrank 1 {\nl1: calc 3000\nl2: recv 1b from 0 tag 0\nl2 requires l1\n}\n");
    let (r, path) = traced(&p, &par);
    assert_eq!(r.makespan, 7000 * NS + 2 * o + L);
    assert_eq!(path.split, Split { computation: 3000 * NS, late_partner: 4000 * NS, overhead: 2 * o, wire: L, ..Split::default() });
}

#[test]
fn a_rendezvous_sender_waits_for_a_late_receiver() {
    // Rank 0 sends 100 kB (rendezvous) and then computes D; rank 1 computes C before its receive:
    // the send completes at C, and rank 0 waited from its message's arrival (o + L) on.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    let p = goal("num_ranks 2\nrank 0 {\nl1: send 100000b to 1 tag 0\nl2: calc 900000\nl2 requires l1\n}\nrank 1 {\nl1: calc 50000\nl2: recv 100000b from 0 tag 0\nl2 requires l1\n}\n");
    let (r, path) = traced(&p, &par);
    assert_eq!(r.makespan, 950_000 * NS);
    assert_eq!(path.split, Split { computation: 900_000 * NS + o + L, late_partner: 50_000 * NS - o - L, ..Split::default() });
}

#[test]
fn every_pattern_sums_exactly() {
    let par = params(SETS[2].0, SETS[2].1, SETS[2].2, SETS[2].3, SETS[2].4);
    for pattern in Pattern::ALL {
        for ranks in [1u32, 2, 7, 16, 33] {
            for bytes in [0u64, 1, 4096, 100_000] {
                let Ok(c) = Collective::new(pattern, ranks, bytes, 0, 3) else { continue };
                let (r, path) = traced(&c, &par);
                assert!(path.ops <= r.ops, "{pattern:?}");
                let steps = &path.steps;
                assert!(steps.windows(2).all(|w| w[0].end == w[1].start), "{pattern:?} steps tile");
                assert_eq!(steps.first().map_or(0, |s| s.start), 0);
            }
        }
    }
}

/// Traced with `ranks_per_node` ranks of a node sharing `cores` (switch, quantum in ps).
fn traced_on_cores<P: Program + Sync>(prog: &P, par: &Params, ranks_per_node: u32, cores: CoreSpec) -> (SimResult, CriticalPath) {
    let scenario = Scenario::new(*par).with_node(NodeSpec::new(ranks_per_node, None, None).unwrap().with_cores(cores));
    let mut r = simulate(prog, &scenario, &Options { critical_path: true, ..Options::default() }, |_| true).unwrap();
    assert!(r.deadlock.is_none());
    let path = r.critical_path.take().expect("a finished run has its path");
    assert_eq!(path.split.total(), r.makespan);
    let plain = simulate(prog, &scenario, &Options::default(), |_| true).unwrap();
    assert_eq!(plain.finish, r.finish, "tracing changes no time");
    (r, path)
}

#[test]
fn a_ping_pong_on_one_core_waits_for_the_core_each_way() {
    // Each message: the sender's o, L on the wire, the core passing to its receiver (the switch
    // beyond L is the path's cores part), the receiver's o.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    for switch in [0, L / 2, L + 700_000, 3 * L] {
        let (r, path) = traced_on_cores(&Collective::new(Pattern::Pingpong, 2, 1, 0, 0).unwrap(), &par, 2, CoreSpec::new(1, switch, 0).unwrap());
        let waited = switch.saturating_sub(L);
        assert_eq!(r.makespan, 2 * (2 * o + L + waited));
        assert_eq!(path.split, Split { overhead: 4 * o, wire: 2 * L, cores: 2 * waited, ..Split::default() });
        let core_waits = path.steps.iter().filter(|s| s.activity == Activity::CoreWait).count();
        assert_eq!(core_waits, if waited > 0 { 2 } else { 0 });
    }
}

#[test]
fn work_waiting_for_a_busy_core_is_the_cores_part() {
    // Two ranks on one core compute 5000 and 3000 ns: rank 0 runs first (lowest rank), rank 1
    // waits for it and the switch, then finishes last.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    let switch = 400 * NS;
    let p = goal("num_ranks 2\nrank 0 {\nl1: calc 5000\n}\nrank 1 {\nl1: calc 3000\n}\n");
    let (r, path) = traced_on_cores(&p, &par, 2, CoreSpec::new(1, switch, 0).unwrap());
    assert_eq!(r.makespan, 8000 * NS + switch);
    assert_eq!(path.split, Split { computation: 3000 * NS, cores: 5000 * NS + switch, ..Split::default() });
    assert_eq!(path.steps.iter().map(|s| s.activity).collect::<Vec<_>>(), vec![Activity::CoreWait, Activity::Calc]);
}

#[test]
fn a_barrier_spinning_on_one_core_waits_two_ticks() {
    // Rank 1 arrives, rank 0 releases it; both receivers spin. Rank 0 computes first and spins:
    // rank 1 gets the core at the first tick, rank 0 sees its arrival at the second.
    let (L, o, g, G, O) = SETS[0];
    let par = params(L, o, g, G, O);
    let (switch, quantum) = (4000 * NS, 1_000_000 * NS);
    let tag = SPINNING_TAGS;
    let p = goal(&format!(
        "num_ranks 2\nrank 0 {{\nc: calc 1000\nr: recv 0b from 1 tag {tag}\nr requires c\ns: send 0b to 1 tag {}\ns requires r\n}}\n\
         rank 1 {{\nc: calc 1000\ns: send 0b to 0 tag {tag}\ns requires c\nr: recv 0b from 0 tag {}\nr requires s\n}}\n",
        tag + 1,
        tag + 1
    ));
    let (r, path) = traced_on_cores(&p, &par, 2, CoreSpec::new(1, switch, quantum).unwrap());
    let release = 2 * quantum + switch + o; // rank 0 handles the arrival after the second tick
    assert_eq!(r.makespan, release + o + switch.max(L) + o);
    // On the path: rank 1's wait for the first tick, its calc (rank 0 waits for it: a late
    // partner), its send, the wait for the second tick, rank 0's receive and release, the switch
    // back, rank 1's receive.
    let activities: Vec<Activity> = path.steps.iter().map(|s| s.activity).collect();
    use Activity::*;
    assert_eq!(activities, vec![CoreWait, Calc, SendOverhead, Transit, CoreWait, RecvOverhead, SendOverhead, Transit, CoreWait, RecvOverhead]);
    assert_eq!(path.steps[0].end, quantum + switch);
    assert_eq!(path.split.late_partner, 1000 * NS);
    assert_eq!(path.split.overhead, 4 * o);
    assert_eq!(path.split.wire, 2 * L);
    assert_eq!(path.split.cores, r.makespan - 1000 * NS - 4 * o - 2 * L);
}

#[test]
fn every_pattern_sums_exactly_on_shared_cores() {
    // Five ranks a node on two cores. The generators make no spinning receives: busy cores and
    // the switch show here, the tick in the barrier above.
    let par = params(SETS[2].0, SETS[2].1, SETS[2].2, SETS[2].3, SETS[2].4);
    for pattern in Pattern::ALL {
        for ranks in [2u32, 7, 16] {
            for bytes in [1u64, 100_000] {
                let Ok(c) = Collective::new(pattern, ranks, bytes, 0, 3) else { continue };
                let (r, path) = traced_on_cores(&c, &par, 5, CoreSpec::new(2, 777 * NS, 50_000 * NS).unwrap());
                assert!(path.ops <= r.ops, "{pattern:?}");
                assert!(path.steps.windows(2).all(|w| w[0].end == w[1].start), "{pattern:?} steps tile");
            }
        }
    }
}
