//! NIC congestion and admission control (docs/models.md, "NIC congestion and admission control"):
//! hand-computable cases exact to the picosecond, nothing changes without curves or a policy, no
//! message is lost under any policy, FIFO tickets never let a later request overtake an earlier one.

use contend_engine::nic::{stretched, Curve, NicClass, NicSpec};
use contend_engine::node::NodeSpec;
use contend_engine::policy::{AdmissionSpec, Thresholds, TokenSpec};
use contend_engine::record::Records;
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::Program;
use contend_engine::sim::{simulate, Options, Params, Scenario, SimResult};

const NS: u64 = 1000;

fn params(o: u64) -> Params {
    Params { L: 2000 * NS, o, g: 100 * NS, G: NS, O: 0, S: 65535, unit: NS, rendezvous: None }
}

fn curves(concurrency: &[(f64, f64)], outstanding: &[(f64, f64)]) -> NicSpec {
    NicSpec::new(vec![NicClass { up_to: u64::MAX, concurrency: concurrency.to_vec(), outstanding: outstanding.to_vec() }]).unwrap()
}

fn node(ranks_per_node: u32, nic: Option<NicSpec>, policy: Option<AdmissionSpec>) -> NodeSpec {
    NodeSpec::new(ranks_per_node, nic, policy).unwrap()
}

fn tokens(tokens: Option<u64>, size_per_token: u64, thresholds: Vec<Thresholds>) -> TokenSpec {
    TokenSpec::new(tokens, size_per_token, thresholds).unwrap()
}

fn run<P: Program>(prog: &P, par: &Params, model: Option<&NodeSpec>) -> SimResult {
    let opts = Options { records: true, timeline: false, ..Options::default() };
    let r = simulate(prog, &Scenario { node: model.cloned(), ..Scenario::new(*par) }, &opts, |_| true).unwrap();
    assert!(r.deadlock.is_none(), "deadlock: {:?}", r.deadlock);
    r
}

fn goal(text: &str) -> impl Program {
    parse_goal(text.as_bytes(), "test.goal").unwrap()
}

/// `k` ranks on node 0 each send `n` messages of `size` bytes, all at once, to rank k + r on node 1.
fn burst(k: u32, n: u32, size: u64) -> String {
    tagged_burst(k, n, size, 0)
}

/// `burst` with every message's tag `tag`.
fn tagged_burst(k: u32, n: u32, size: u64, tag: u32) -> String {
    let mut text = format!("num_ranks {}\n", 2 * k);
    for r in 0..k {
        text += &format!("rank {r} {{\n");
        for j in 0..n {
            text += &format!("  s{j}: send {size}b to {} tag {tag}\n", k + r);
        }
        text += "}\n";
    }
    for r in 0..k {
        text += &format!("rank {} {{\n", k + r);
        for j in 0..n {
            text += &format!("  r{j}: recv {size}b from {r} tag {tag}\n");
        }
        text += "}\n";
    }
    text
}

fn bytes_conserved(prog: &impl Program, r: &Records) {
    let mut sent = 0u64;
    let mut sends = 0usize;
    for rank in 0..prog.num_ranks() {
        for i in 0..prog.num_ops(rank) {
            let op = prog.op(rank, i);
            if op.kind == contend_engine::schedule::OpKind::Send {
                sent += op.size;
                sends += 1;
            }
        }
    }
    assert_eq!(r.len(), sends, "every message delivered once");
    assert_eq!(r.bytes.iter().sum::<u64>(), sent, "bytes sent = bytes received");
}

#[test]
fn without_curves_or_policy_nothing_changes() {
    let empty = node(4, None, None);
    for (pattern, ranks, size) in [(Pattern::AlltoallLinear, 16, 1024), (Pattern::RandomPairs, 32, 100_000), (Pattern::BinomialBcast, 64, 8)] {
        let c = Collective::new(pattern, ranks, size, 0, 1).unwrap();
        let plain = simulate(&c, &Scenario::new(params(1500 * NS)), &Options { records: true, timeline: false, ..Options::default() }, |_| true).unwrap();
        let with = run(&c, &params(1500 * NS), Some(&empty));
        assert_eq!((with.finish, with.events), (plain.finish, plain.events), "{pattern:?}");
        assert_eq!(with.records.unwrap().completed, plain.records.unwrap().completed);
    }
}

#[test]
fn one_node_k_cores_factor_f_gives_f_times_nominal_throughput() {
    // o = 0: every message is in the NIC at time 0, which then injects them back to back.
    for (k, f) in [(1u32, 1.0), (4, 0.5), (8, 0.3), (3, 0.25)] {
        let (n, size) = (5u32, 4096u64);
        let prog = goal(&burst(k, n, size));
        let model = node(k, Some(curves(&[(0.0, 1.0)], &[(0.0, f)])), None);
        let r = run(&prog, &params(0), Some(&model));
        let rec = r.records.unwrap();
        let nominal = 100 * NS + (size - 1) * NS;
        let last_injected = rec.arrived.iter().max().unwrap() - 2000 * NS;
        assert_eq!(last_injected, (k * n) as u64 * stretched(nominal, f), "k={k} f={f}");
        // throughput = f x nominal (to the rounding of one message time)
        let throughput = (k * n) as f64 * size as f64 / last_injected as f64;
        let nominal_rate = size as f64 / nominal as f64;
        assert!((throughput / nominal_rate - f).abs() < 1e-6, "k={k} f={f}");
        bytes_conserved(&prog, &rec);
    }
}

#[test]
fn factor_follows_the_load_at_each_service_start() {
    // One rank, n messages at once: the first starts alone at the idle NIC (1 held); the i-th
    // (i >= 1) starts when the one before is done and sees n - i held; one active core: 0.8.
    let n = 6u64;
    let out = [(1.0, 1.0), (2.0, 1.0), (6.0, 0.25)];
    let prog = goal(&burst(1, n as u32, 1000));
    let model = node(1, Some(curves(&[(1.0, 0.8)], &out)), None);
    let r = run(&prog, &params(0), Some(&model));
    let curve = Curve::new(out.to_vec()).unwrap();
    let nominal = 100 * NS + 999 * NS;
    let expected: u64 = stretched(nominal, 0.8 * curve.at(1.0)) + (1..n).map(|i| stretched(nominal, 0.8 * curve.at((n - i) as f64))).sum::<u64>();
    assert_eq!(r.records.unwrap().arrived.iter().max().unwrap() - 2000 * NS, expected);
}

#[test]
fn token_pool_keeps_the_nic_below_its_knee() {
    // 8 cores x 16 messages; more than 8 messages held costs 4x. Eight tokens keep the NIC at 8.
    let nic = curves(&[(0.0, 1.0)], &[(8.0, 1.0), (16.0, 0.25)]);
    let prog = goal(&burst(8, 16, 2048));
    let free = run(&prog, &params(200 * NS), Some(&node(8, Some(nic.clone()), None)));
    let spec = tokens(Some(8), 0, vec![]);
    let model = node(8, Some(nic), Some(AdmissionSpec::token(spec)));
    let throttled = run(&prog, &params(200 * NS), Some(&model));
    assert!(throttled.admission_waits > 0);
    let speedup = free.makespan as f64 / throttled.makespan as f64;
    assert!(speedup > 2.5, "speedup {speedup}");
    bytes_conserved(&prog, &throttled.records.unwrap());
}

#[test]
fn every_policy_delivers_every_byte() {
    let nic = curves(&[(2.0, 1.0), (8.0, 0.5)], &[(4.0, 1.0), (32.0, 0.3)]);
    let thresholds = vec![
        Thresholds { up_to: 1024, cct: 3, nrct: 6, crct: vec![(1, 4), (3, 2)] },
        Thresholds { up_to: u64::MAX, cct: 2, nrct: 2, crct: vec![(1, 2)] },
    ];
    let policies = [
        None,
        Some(AdmissionSpec::token(tokens(Some(3), 0, vec![]))),
        Some(AdmissionSpec::token(tokens(Some(4), 1000, vec![]))),
        Some(AdmissionSpec::token(tokens(None, 0, thresholds.clone()))),
        Some(AdmissionSpec::token(tokens(Some(5), 0, thresholds))),
        Some(AdmissionSpec::rate(3000 * NS).unwrap()),
        Some(AdmissionSpec::proxy(2, None).unwrap()),
        Some(AdmissionSpec::proxy(3, Some(tokens(Some(2), 0, vec![]))).unwrap()),
    ];
    let mut par = params(300 * NS);
    par.S = 4096; // some rendezvous messages: their tokens come back at the match
    for pattern in [Pattern::AlltoallLinear, Pattern::RandomPairs, Pattern::Incast, Pattern::AlltoallPairwise, Pattern::AlltoallBruck] {
        for size in [8u64, 3000, 10_000] {
            let c = Collective::new(pattern, 16, size, 0, 7).unwrap();
            for nic in [None, Some(nic.clone())] {
                for policy in &policies {
                    let model = node(4, nic.clone(), policy.clone());
                    let r = run(&c, &par, Some(&model));
                    bytes_conserved(&c, &r.records.unwrap());
                }
            }
        }
    }
}

#[test]
fn fifo_tickets_never_let_a_later_request_overtake() {
    // Rank 0 asks for the whole pool (size-proportional tokens) while ranks 1..3 stream small
    // messages: every small message asked for after it is injected after it, and it completes.
    let mut text = String::from("num_ranks 8\nrank 0 {\n  c: calc 1500\n  big: send 40000b to 4\n  big requires c\n}\n");
    for r in 1..4 {
        text += &format!("rank {r} {{\n");
        for j in 0..20 {
            text += &format!("  s{j}: send 1000b to {}\n", 4 + r);
            if j > 0 {
                text += &format!("  s{j} requires s{}\n", j - 1);
            }
        }
        text += "}\n";
    }
    text += "rank 4 {\n  r: recv 40000b from 0\n}\n";
    for r in 5..8 {
        text += &format!("rank {r} {{\n");
        for j in 0..20 {
            text += &format!("  r{j}: recv 1000b from {}\n", r - 4);
        }
        text += "}\n";
    }
    let prog = goal(&text);
    let spec = tokens(Some(4), 10_000, vec![]);
    let nic = curves(&[(0.0, 1.0)], &[(0.0, 1.0)]);
    let model = node(4, Some(nic), Some(AdmissionSpec::token(spec)));
    let r = run(&prog, &params(100 * NS), Some(&model));
    let rec = r.records.unwrap();
    bytes_conserved(&prog, &rec);
    let big = (0..rec.len()).find(|&i| rec.src[i] == 0).unwrap();
    let later: Vec<usize> = (0..rec.len()).filter(|&i| rec.src[i] != 0 && rec.posted[i] > rec.posted[big]).collect();
    assert!(!later.is_empty());
    for i in later {
        assert!(rec.injected[i] >= rec.injected[big], "message {i} overtook the large request");
    }
}

#[test]
fn rate_gap_spaces_one_tasks_injections_exactly() {
    let prog = goal(&burst(1, 5, 64));
    let gap = 7000 * NS;
    let model = node(1, None, Some(AdmissionSpec::rate(gap).unwrap()));
    let r = run(&prog, &params(1000 * NS), Some(&model));
    let mut injected = r.records.unwrap().injected;
    injected.sort();
    assert_eq!(injected, (0..5).map(|i| i * gap).collect::<Vec<_>>());
}

#[test]
fn proxy_servers_bound_the_active_cores_at_the_nic() {
    // Two or more active cores halve the NIC's rate; one proxy server keeps it at one.
    let nic = curves(&[(1.0, 1.0), (2.0, 0.5)], &[(0.0, 1.0)]);
    let prog = goal(&burst(4, 8, 4096));
    let free = run(&prog, &params(0), Some(&node(4, Some(nic.clone()), None)));
    let model = node(4, Some(nic), Some(AdmissionSpec::proxy(1, None).unwrap()));
    let proxied = run(&prog, &params(0), Some(&model));
    let nominal = 100 * NS + 4095 * NS;
    // The single server hands one message at a time (busy g each) and the NIC runs at full rate.
    let last = proxied.records.as_ref().unwrap().arrived.iter().max().unwrap() - 2000 * NS;
    assert_eq!(last, 100 * NS + 32 * nominal);
    assert!(free.makespan > proxied.makespan);
    bytes_conserved(&prog, &proxied.records.unwrap());
}

#[test]
fn unadmitted_messages_pass_every_policy_untouched_but_still_use_the_nic() {
    use contend_engine::schedule::UNADMITTED_TAGS;
    // What libcontend-throttle.so never sees (collectives MPI makes below PMPI, get replies, epoch
    // synchronization) is not admitted: a run of such messages under any policy is the run without
    // one, with no grant or wait counted, and with curves they still queue at the shared NIC.
    let nic = curves(&[(1.0, 1.0), (2.0, 0.5)], &[(0.0, 1.0)]);
    let policies = [
        AdmissionSpec::token(tokens(Some(1), 0, Vec::new())),
        AdmissionSpec::rate(1_000_000 * NS).unwrap(),
        AdmissionSpec::proxy(1, Some(tokens(Some(1), 0, Vec::new()))).unwrap(),
    ];
    for curves in [None, Some(nic)] {
        let hidden = goal(&tagged_burst(4, 8, 4096, UNADMITTED_TAGS | 5));
        let free = run(&hidden, &params(0), Some(&node(4, curves.clone(), None)));
        for policy in &policies {
            let r = run(&hidden, &params(0), Some(&node(4, curves.clone(), Some(policy.clone()))));
            assert_eq!((r.finish.clone(), r.admission_grants, r.admission_waits), (free.finish.clone(), 0, 0), "{policy:?}");
            bytes_conserved(&hidden, &r.records.unwrap());
            // The same messages with an application tag are admitted, each once, and the policy
            // changes their times (slower without curves; with them one core at a time is faster).
            let seen = goal(&tagged_burst(4, 8, 4096, 5));
            let r = run(&seen, &params(0), Some(&node(4, curves.clone(), Some(policy.clone()))));
            assert_eq!(r.admission_grants, 32, "{policy:?}");
            assert_ne!(r.finish, free.finish, "{policy:?}");
        }
    }
}

