//! Speed and memory probe of the engine, one measurement per process so that peak RSS is its own.
//!
//! ```text
//! contend-engine-bench gen PATTERN RANKS BYTES [NOISE]
//!     simulate a generated collective; with NOISE, under LogGOPSim's default parameters as
//!     benchmarks/noise_speed.py (independent phases, seed 0): the `--noise` spec of the command
//!     line (engine/src/noise/spec.rs: periodic:1kHz:25us, random:1kHz:25us, trace:FILE, none);
//!     with CONTEND_TIME_ORDERED=1 in the environment, always in time order, never windowed, and
//!     with CONTEND_WINDOWED=1 windowed wherever exact, also without noise (to compare the two
//!     loops); CONTEND_THREADS=N: windows shared by N threads (default 0: the engine chooses)
//! contend-engine-bench goal FILE [CACHE_DIR]       parse a GOAL file (through the cache in CACHE_DIR),
//!                                                  then simulate it
//! contend-engine-bench write PATTERN RANKS BYTES FILE
//! contend-engine-bench net PATTERN RANKS BYTES TOPOLOGY SHARING [PACKET]
//!     over a network: TOPOLOGY in the engine's compact form (torus:8x8x8, fattree:K:LEVELS,
//!     dragonfly:A:P:H:G, ...: engine/src/net/topology.rs); SHARING flow or packet; PACKET bytes
//!     (default 256)
//! ```
//! Networks: 10 GB/s links and injection, 100 ns per hop, one rank per node.
//! Prints one JSON object. Parameters: L=3000 o=1500 g=1000 G=6 O=0 S=65535 (ns), but see NOISE.

use std::path::Path;
use std::time::Instant;

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::cache::read_goal_cached;
use contend_engine::schedule::writer::write_goal_file;
use contend_engine::net::{NetworkSpec, Placement, Sharing};
use contend_engine::noise::spec::NoiseSpec;
use contend_engine::noise::Noise;
use contend_engine::sim::{simulate, Execution, Options, Params, Scenario, SimResult};

fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn params() -> Params {
    Params { L: 3_000_000, o: 1_500_000, g: 1_000_000, G: 6_000, O: 0, S: 65535, unit: 1_000, rendezvous: None }
}

fn sim_json(r: &SimResult, secs: f64) -> String {
    format!(
        "\"ranks\": {}, \"events\": {}, \"requeues\": {}, \"peak_queue\": {}, \"windowed\": {}, \"sim_seconds\": {:.4}, \"events_per_second\": {:.0}, \"makespan_ns\": {}, \"deadlock\": {}, \"finish_digest\": {}",
        r.num_ranks,
        r.events,
        r.requeues,
        r.peak_queue,
        r.windowed,
        secs,
        r.events as f64 / secs,
        r.makespan / 1000,
        r.deadlock.is_some(),
        // Every rank's finish time folded into one number: equal digests mean equal per-rank results
        // (to compare two builds of the engine).
        r.finish.iter().enumerate().fold(0u64, |acc, (k, &f)| acc.rotate_left(5) ^ f.wrapping_mul(k as u64 * 2 + 1))
    )
}

fn collective(args: &[String]) -> Collective {
    let pattern = Pattern::from_name(&args[0]).unwrap_or_else(|e| fail(&e));
    let ranks: u32 = args[1].parse().unwrap_or_else(|_| fail("RANKS must be an integer"));
    let bytes: u64 = args[2].parse().unwrap_or_else(|_| fail("BYTES must be an integer"));
    Collective::new(pattern, ranks, bytes, 0, 0).unwrap_or_else(|e| fail(&e))
}

/// The noise of `gen`'s optional NOISE argument: the engine's compact form (see the module doc).
fn noise(spec: &str) -> Option<Noise> {
    let spec = NoiseSpec::parse(spec).unwrap_or_else(|e| fail(&format!("NOISE: {e}")))?;
    Some(spec.build().unwrap_or_else(|e| fail(&format!("NOISE: {e}"))))
}

fn fail(msg: &str) -> ! {
    eprintln!("contend-engine-bench: {msg}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") if args.len() == 4 || args.len() == 5 => {
            let c = collective(&args[1..4]);
            let noise = args.get(4).and_then(|spec| noise(spec));
            let par = if args.len() == 5 { Params::loggopsim_defaults() } else { params() };
            let t0 = Instant::now();
            let execution = match (std::env::var_os("CONTEND_TIME_ORDERED"), std::env::var_os("CONTEND_WINDOWED")) {
                (Some(_), Some(_)) => fail("CONTEND_TIME_ORDERED and CONTEND_WINDOWED exclude each other"),
                (Some(_), None) => Execution::TimeOrdered,
                (None, Some(_)) => Execution::Windowed,
                (None, None) => Execution::Chosen,
            };
            let threads = std::env::var("CONTEND_THREADS").map_or(0, |t| t.parse().unwrap_or_else(|_| fail("CONTEND_THREADS must be an integer")));
            let opts = Options { execution, threads, ..Options::default() };
            let scenario = Scenario { noise, ..Scenario::new(par) };
            let r = simulate(&c, &scenario, &opts, |_| true).unwrap_or_else(|e| fail(&e.to_string()));
            let secs = t0.elapsed().as_secs_f64();
            println!(
                "{{\"source\": \"generated\", \"pattern\": \"{}\", \"noise\": \"{}\", {}, \"noise_charged_ps\": {}, \"peak_rss_bytes\": {}}}",
                args[1],
                args.get(4).map_or("none", String::as_str),
                sim_json(&r, secs),
                r.noise,
                peak_rss_bytes()
            );
        }
        Some("goal") if args.len() == 2 || args.len() == 3 => {
            let path = Path::new(&args[1]);
            let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or_else(|e| fail(&format!("{}: {e}", args[1])));
            let t0 = Instant::now();
            let cache = args.get(2).map(Path::new);
            let prog = read_goal_cached(path, cache).unwrap_or_else(|e| fail(&e.to_string()));
            let parse = t0.elapsed().as_secs_f64();
            let rss_after_parse = peak_rss_bytes();
            let t1 = Instant::now();
            let r = simulate(&prog, &Scenario::new(params()), &Options::default(), |_| true).unwrap_or_else(|e| fail(&e.to_string()));
            let secs = t1.elapsed().as_secs_f64();
            println!(
                "{{\"source\": \"goal\", \"file_bytes\": {file_bytes}, \"ops\": {}, \"parse_seconds\": {parse:.4}, \"parse_mb_per_second\": {:.1}, \"store_bytes_per_op\": {:.1}, \"peak_rss_after_parse_bytes\": {rss_after_parse}, {}, \"peak_rss_bytes\": {}}}",
                prog.total_ops(),
                file_bytes as f64 / 1e6 / parse,
                prog.heap_bytes() as f64 / prog.total_ops().max(1) as f64,
                sim_json(&r, secs),
                peak_rss_bytes()
            );
        }
        Some("net") if args.len() == 6 || args.len() == 7 => {
            let c = collective(&args[1..4]);
            let spec = NetworkSpec {
                topology: args[4].parse().unwrap_or_else(|e: String| fail(&format!("TOPOLOGY: {e}"))),
                routing: None,
                placement: Placement::Block,
                ranks_per_node: 1,
                link_bandwidth: 10e9,
                injection_bandwidth: 10e9,
                global_bandwidth: 10e9,
                hop_latency: 100_000,
                packet_bytes: args.get(6).map_or(256, |p| p.parse().unwrap_or_else(|_| fail("PACKET: bytes"))),
                seed: 1,
                sharing: Sharing::parse(&args[5]).unwrap_or_else(|e| fail(&e)),
                bucket: None,
            };
            let t0 = Instant::now();
            let scenario = Scenario::new(params()).with_network(spec.clone());
            let r = simulate(&c, &scenario, &Options::default(), |_| true).unwrap_or_else(|e| fail(&e.to_string()));
            let secs = t0.elapsed().as_secs_f64();
            println!("{{\"source\": \"network\", \"pattern\": \"{}\", \"topology\": \"{}\", \"sharing\": \"{}\", \"packet_bytes\": {}, \"bytes\": {}, \"packet_events\": {}, {}, \"peak_rss_bytes\": {}}}", args[1], args[4], args[5], spec.packet_bytes, args[3], r.packet_events, sim_json(&r, secs), peak_rss_bytes());
        }
        Some("write") if args.len() == 5 => {
            let c = collective(&args[1..4]);
            write_goal_file(&c, Path::new(&args[4])).unwrap_or_else(|e| fail(&format!("{}: {e}", args[4])));
        }
        _ => fail("usage: gen PATTERN RANKS BYTES [NOISE] | goal FILE [CACHE_DIR] | write PATTERN RANKS BYTES FILE | net PATTERN RANKS BYTES TOPOLOGY SHARING [PACKET]"),
    }
}
