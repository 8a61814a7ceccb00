//! Speed and memory probe of the engine, one measurement per process so that peak RSS is its own.
//!
//! ```text
//! contend-engine-bench gen PATTERN RANKS BYTES      simulate a generated collective
//! contend-engine-bench goal FILE                   parse a GOAL file, then simulate it
//! contend-engine-bench write PATTERN RANKS BYTES FILE
//! ```
//! Prints one JSON object. Parameters: L=3000 o=1500 g=1000 G=6 O=0 S=65535 (ns).

use std::path::Path;
use std::time::Instant;

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::read_goal_file;
use contend_engine::schedule::writer::write_goal_file;
use contend_engine::sim::{simulate, Options, Params, SimResult};

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
        "\"ranks\": {}, \"events\": {}, \"sim_seconds\": {:.4}, \"events_per_second\": {:.0}, \"makespan_ns\": {}, \"deadlock\": {}",
        r.num_ranks,
        r.events,
        secs,
        r.events as f64 / secs,
        r.makespan / 1000,
        r.deadlock.is_some()
    )
}

fn collective(args: &[String]) -> Collective {
    let pattern = Pattern::from_name(&args[0]).unwrap_or_else(|e| fail(&e));
    let ranks: u32 = args[1].parse().unwrap_or_else(|_| fail("RANKS must be an integer"));
    let bytes: u64 = args[2].parse().unwrap_or_else(|_| fail("BYTES must be an integer"));
    Collective::new(pattern, ranks, bytes, 0, 0).unwrap_or_else(|e| fail(&e))
}

fn fail(msg: &str) -> ! {
    eprintln!("contend-engine-bench: {msg}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") if args.len() == 4 => {
            let c = collective(&args[1..]);
            let t0 = Instant::now();
            let r = simulate(&c, &params(), &Options::default());
            let secs = t0.elapsed().as_secs_f64();
            println!("{{\"source\": \"generated\", \"pattern\": \"{}\", {}, \"peak_rss_bytes\": {}}}", args[1], sim_json(&r, secs), peak_rss_bytes());
        }
        Some("goal") if args.len() == 2 => {
            let path = Path::new(&args[1]);
            let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or_else(|e| fail(&format!("{}: {e}", args[1])));
            let t0 = Instant::now();
            let prog = read_goal_file(path).unwrap_or_else(|e| fail(&e.to_string()));
            let parse = t0.elapsed().as_secs_f64();
            let rss_after_parse = peak_rss_bytes();
            let t1 = Instant::now();
            let r = simulate(&prog, &params(), &Options::default());
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
        Some("write") if args.len() == 5 => {
            let c = collective(&args[1..4]);
            write_goal_file(&c, Path::new(&args[4])).unwrap_or_else(|e| fail(&format!("{}: {e}", args[4])));
        }
        _ => fail("usage: gen PATTERN RANKS BYTES | goal FILE | write PATTERN RANKS BYTES FILE"),
    }
}
