//! Memory contention caused by network traffic (docs/models.md, "Memory contention (NiMC)"):
//! hand-computed cases exact to the picosecond, offload delay proportional to the incoming volume,
//! onload larger, the throttle cap, the reserved core's constant factor, bytes in = bytes out,
//! determinism, nothing changes where the model has nothing to act on, malformed `mem` syntax.

use contend_engine::node::memory::{MemoryParams, MemorySpec, NicKind};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::stencil::{Checkpoint, Stencil};
use contend_engine::schedule::writer::write_goal;
use contend_engine::schedule::{OpKind, Program};
use contend_engine::sim::{simulate, Options, Params, Scenario, SimResult};

const NS: u64 = 1000;
const GB: f64 = 1e9;

/// L = 100 ns and nothing else: a message sent at 0 reaches its destination at 100 ns.
fn params() -> Params {
    Params { L: 100 * NS, o: 0, g: 0, G: 0, O: 0, S: 1 << 40, unit: NS, rendezvous: None }
}

/// B = B_c = 64 GB/s (15.625 ps per byte), the NIC writes at 32 GB/s, one rank per node.
fn offload() -> MemoryParams {
    MemoryParams {
        ranks_per_node: 1,
        bandwidth: 64.0 * GB,
        compute_bandwidth: 64.0 * GB,
        nic_bandwidth: 32.0 * GB,
        throttle: None,
        floor: 0.0,
        nic: NicKind::Offload,
        reserve_core: false,
    }
}

fn run<P: Program>(prog: &P, memory: Option<&MemoryParams>) -> SimResult {
    let opts = Options { records: true, timeline: true, ..Options::default() };
    let memory = memory.map(|p| MemorySpec::new(p.clone()).unwrap());
    let r = simulate(prog, &Scenario { memory, ..Scenario::new(params()) }, &opts, |_| true).unwrap();
    assert!(r.deadlock.is_none(), "deadlock: {:?}", r.deadlock);
    r
}

/// The end of rank 0's first calc (its timeline span).
fn calc_end(r: &SimResult) -> u64 {
    let tl = r.timeline.as_ref().unwrap();
    (0..tl.rank.len()).find(|&i| tl.rank[i] == 0 && tl.cpu[i] == 0).map(|i| tl.end[i]).expect("a calc on rank 0")
}

/// Rank 0 computes `calc <cpu> mem <mem>` while writer i (rank i + 1, a node of its own) sends it
/// `size_i` bytes at `start_i` ns, arriving L = 100 ns later; rank 0 receives them on its second
/// CPU, so that only memory couples them to the calc.
fn calc_under_writes(cpu: u64, mem: u64, writes: &[(u64, u64)]) -> impl Program {
    let mut text = format!("num_ranks {}\nrank 0 {{\nc: calc {cpu} mem {mem}\n", writes.len() + 1);
    for (i, &(_, size)) in writes.iter().enumerate() {
        text += &format!("r{i}: recv {size}b from {} tag 0 cpu 1\n", i + 1);
    }
    text += "}\n";
    for (i, &(start, size)) in writes.iter().enumerate() {
        text += &format!("rank {} {{\nw: calc {start}\ns: send {size}b to 0 tag 0\ns requires w\n}}\n", i + 1);
    }
    parse_goal(text.as_bytes(), "test.goal").unwrap()
}

#[test]
fn a_calc_without_traffic_takes_the_longer_of_its_cpu_and_memory_times() {
    // 65536 B at 64 GB/s = 1024 ns, above the CPU's 1000 ns; 4 ranks per node share B_c.
    let r = run(&calc_under_writes(1000, 65536, &[]), Some(&offload()));
    assert_eq!(calc_end(&r), 1_024_000);
    let r = run(&calc_under_writes(2000, 65536, &[]), Some(&offload()));
    assert_eq!(calc_end(&r), 2_000_000);
    let shared = MemoryParams { ranks_per_node: 4, ..offload() };
    let text = "num_ranks 4\nrank 0 {\ncalc 10 mem 65536\n}\nrank 1 {\n}\nrank 2 {\n}\nrank 3 {\n}\n";
    let r = run(&parse_goal(text.as_bytes(), "t.goal").unwrap(), Some(&shared));
    assert_eq!(r.makespan, 4 * 1_024_000, "a rank's share is B_c / ranks_per_node");
}

#[test]
fn one_message_during_a_calc_slows_it_by_its_bytes_over_the_bandwidth() {
    // 16384 B land at 32 GB/s in [200, 712) ns, leaving 32 GB/s to the calc: 12800 B before,
    // 16384 B during, 36352 B after at 64 GB/s: ends at 712 + 568 = 1280 ns = 1024 + 16384 / 64 GB/s.
    let r = run(&calc_under_writes(0, 65536, &[(100, 16384)]), Some(&offload()));
    assert_eq!(calc_end(&r), 1_280_000);
    let m = r.memory.as_ref().unwrap();
    assert_eq!((m.bytes_written.clone(), m.write_busy, m.calc_delay), (vec![16384, 0], 512_000, 256_000));
    // Without the model the same schedule is plain LogGOPS.
    assert_eq!(calc_end(&run(&calc_under_writes(0, 65536, &[(100, 16384)]), None)), 0);
}

#[test]
fn offload_delay_is_proportional_to_the_incoming_volume_and_onload_is_larger() {
    let delay = |model: &MemoryParams, count: u64| {
        let writes: Vec<(u64, u64)> = (0..count).map(|i| (100 + 600 * i, 16384)).collect();
        let r = run(&calc_under_writes(0, 1 << 20, &writes), Some(model));
        calc_end(&r) - 16_384_000 // the calc alone: 2^20 B at 64 GB/s
    };
    for count in [1, 2, 4, 8] {
        assert_eq!(delay(&offload(), count), count * 256_000, "{count} writes of 16384 B");
    }
    let onload = MemoryParams { nic: NicKind::Onload { cpu_per_byte: 1.0, pollution: 1.0 / 32.0 }, ..offload() };
    for count in [1, 2, 4] {
        // Pollution 1 + 32/32 = 2 while writing: the memory-bound calc moves 32 GB/s / 2 = 16 GB/s,
        // 8192 B in a 512 ns write instead of 32768 B: 24576 B / 64 GB/s = 384 ns lost per write.
        assert_eq!(delay(&onload, count), count * 384_000, "{count} writes, onload");
    }
}

#[test]
fn the_throttle_caps_the_write_rate() {
    // A write that ends after the calc: its rate decides how much bandwidth the calc keeps.
    // Unthrottled: at 900 ns 57600 B are done, the last 7936 B at 32 GB/s take 248 ns.
    let prog = calc_under_writes(0, 65536, &[(800, 16384)]);
    let r = run(&prog, Some(&offload()));
    assert_eq!((calc_end(&r), r.memory.as_ref().unwrap().write_busy), (1_148_000, 512_000));
    // Capped at 16 GB/s: the write lasts 1024 ns and leaves 48 GB/s: 7936 B take 165.333 ns.
    let capped = MemoryParams { throttle: Some(16.0 * GB), ..offload() };
    let r = run(&prog, Some(&capped));
    assert_eq!((calc_end(&r), r.memory.as_ref().unwrap().write_busy), (1_065_333, 1_024_000));
}

#[test]
fn writes_to_one_node_queue_behind_each_other() {
    // Two messages at 200 ns: the NIC writes them one after the other, [200, 1224) ns at 32 GB/s.
    let r = run(&calc_under_writes(0, 65536, &[(100, 16384), (100, 16384)]), Some(&offload()));
    assert_eq!(r.memory.as_ref().unwrap().write_busy, 1_024_000);
    assert_eq!(calc_end(&r), 1_024_000 + 2 * 256_000);
}

#[test]
fn a_reserved_core_is_a_constant_cpu_factor_and_removes_onload_costs() {
    let onload = MemoryParams {
        ranks_per_node: 4,
        nic: NicKind::Onload { cpu_per_byte: 10.0, pollution: 1.0 / 32.0 },
        ..offload()
    };
    let reserved = MemoryParams { reserve_core: true, ..onload.clone() };
    // Rank 0 and rank 4 are on different nodes (4 per node); rank 4 writes into rank 0's node.
    let text = "num_ranks 5\nrank 0 {\nc: calc 3000\nr: recv 16384b from 4 tag 0 cpu 1\n}\nrank 1 {\n}\nrank 2 {\n}\nrank 3 {\n}\n\
                rank 4 {\nw: calc 100\ns: send 16384b to 0 tag 0\ns requires w\n}\n";
    let prog = parse_goal(text.as_bytes(), "t.goal").unwrap();
    // Reserved: 3000 ns x 4/3 = 4000 ns, whatever arrives.
    assert_eq!(calc_end(&run(&prog, Some(&reserved))), 4_000_000);
    // Not reserved: rank 0 is the node's first core, 10 ps/B x 32 GB/s = 32% of it busy with the
    // onload work, and pollution 2: during the 512 ns write it advances 512 x 0.68 / 2 = 174.08 ns.
    assert_eq!(calc_end(&run(&prog, Some(&onload))), 3_000_000 + 512_000 - 174_080);
}

#[test]
fn bytes_in_equal_bytes_out_and_runs_are_deterministic() {
    let checkpoints = [
        Checkpoint { writer: 3, target: 40, start: 2_000, bytes: 1 << 22 },
        Checkpoint { writer: 50, target: 9, start: 5_000, bytes: 1 << 21 },
    ];
    let prog = Stencil::new(64, 6, 4096, 3_000, 1 << 18, &checkpoints).unwrap();
    let model = MemoryParams { ranks_per_node: 8, nic: NicKind::Onload { cpu_per_byte: 5.0, pollution: 0.1 }, ..offload() };
    let a = run(&prog, Some(&model));
    let b = run(&prog, Some(&model));
    assert_eq!(a.finish, b.finish);
    assert_eq!(a.memory, b.memory);
    let mut sent_between_nodes = 0u64;
    for r in 0..prog.num_ranks() {
        for i in 0..prog.num_ops(r) {
            let op = prog.op(r, i);
            if op.kind == OpKind::Send && r / 8 != op.peer / 8 {
                sent_between_nodes += op.size;
            }
        }
    }
    let m = a.memory.as_ref().unwrap();
    assert_eq!(m.bytes_written.iter().sum::<u64>(), sent_between_nodes);
    assert_eq!(a.messages, b.messages);
    // The checkpoints slow the run; without them (and without the model) it is faster.
    let quiet = Stencil::new(64, 6, 4096, 3_000, 1 << 18, &[]).unwrap();
    assert!(run(&quiet, Some(&model)).makespan < a.makespan);
}

#[test]
fn an_offload_model_changes_nothing_without_memory_traffic() {
    // Calcs without `mem` under an offload NIC keep their LogGOPS durations whatever arrives.
    for pattern in [Pattern::BinomialBcast, Pattern::AlltoallLinear, Pattern::AllreduceRing] {
        let c = Collective::new(pattern, 32, 4096, 0, 0).unwrap();
        let model = MemoryParams { ranks_per_node: 4, ..offload() };
        let plain = simulate(&c, &Scenario::new(params()), &Options::default(), |_| true).unwrap();
        assert_eq!(run(&c, Some(&model)).finish, plain.finish, "{}", pattern.name());
    }
    let prog = Stencil::new(27, 3, 1024, 500, 0, &[]).unwrap();
    assert_eq!(run(&prog, Some(&offload())).finish, simulate(&prog, &Scenario::new(params()), &Options::default(), |_| true).unwrap().finish);
}

#[test]
fn mem_round_trips_through_the_writer() {
    let text = "num_ranks 1\nrank 0 {\na: calc 10 mem 5000000000000\nb: calc 3 cpu 1\nb requires a\n}\n";
    let prog = parse_goal(text.as_bytes(), "t.goal").unwrap();
    let mut out = Vec::new();
    write_goal(&prog, &mut out).unwrap();
    let back = parse_goal(out.as_slice(), "back.goal").unwrap();
    assert_eq!((back.op(0, 0).mem(), back.op(0, 0).size), (5_000_000_000_000, 10));
    assert_eq!(back.op(0, 1).mem(), 0);
    assert!(String::from_utf8(out).unwrap().contains("calc 10 mem 5000000000000"));
}

#[test]
fn malformed_mem_names_line_and_column() {
    let cases = [
        ("calc 10 mem x", "3:13", "expected a number for the memory traffic (bytes), found 'x'"),
        ("calc 10 mem", "3:9", "'mem' needs a value"),
        ("calc 10 mem 5 mem 6", "3:15", "'mem' given twice"),
        ("calc 10 mem -5", "3:13", "must not be negative"),
        ("send 8b to 0 mem 5", "3:14", "unexpected 'mem' (expected tag, cpu or nic)"),
        ("calc 10 tag 5", "3:9", "unexpected 'tag' (expected mem or cpu)"),
    ];
    for (line, at, message) in cases {
        let text = format!("num_ranks 1\nrank 0 {{\n{line}\n}}\n");
        let err = parse_goal(text.as_bytes(), "bad.goal").unwrap_err().to_string();
        assert!(err.starts_with(&format!("bad.goal:{at}:")), "{line}: {err}");
        assert!(err.contains(message), "{line}: {err}");
    }
}

#[test]
fn a_scenario_whose_models_do_not_fit_stops_before_it_starts() {
    // The Scenario's check is the one place these rules live; the run says which model is at fault.
    use contend_engine::noise::{Noise, Phase};
    use contend_engine::sim::Stopped;
    let c = Collective::new(Pattern::Dissemination, 4, 8, 0, 0).unwrap();
    let noise = Noise::periodic(1000 * NS, 10 * NS, Phase::Independent, 0).unwrap();
    let with_noise = Scenario { memory: Some(MemorySpec::new(offload()).unwrap()), noise: Some(noise), ..Scenario::new(params()) };
    let stopped = simulate(&c, &with_noise, &Options::default(), |_| true).err();
    let Some(Stopped::Invalid(why)) = stopped else { panic!("{stopped:?}") };
    assert_eq!((why.key.as_str(), why.combined_with.as_deref()), ("memory", Some("noise")));
    assert_eq!(why.to_string(), "memory: the memory model does not combine with noise yet (give one or the other)");
    // A model's own values are checked when its spec is made: no scenario holds a bad one.
    let no_ranks = MemorySpec::new(MemoryParams { ranks_per_node: 0, ..offload() }).unwrap_err();
    assert_eq!(no_ranks.to_string(), "memory.ranks_per_node: must be at least 1");
}
