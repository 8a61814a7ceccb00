//! Windowed execution (`contend_engine::sim::window`) against the time-ordered loop: for every
//! generated pattern, rank counts on both sides of powers of two, eager sizes with and without
//! per-byte costs, each kind of noise and none (ranks in step: simultaneous events everywhere) and
//! LogGOPS parameters where simultaneous events are common (g > o + L, O > 0, L = 0), every rank's
//! finish time, the event and requeue counts and the detour time charged must be identical.
//! Windows are forced (`Execution::Windowed`) where the engine would choose time order for speed,
//! on one thread and shared by two and three (the ranks split in blocks, uneven for most counts);
//! rendezvous messages keep the time-ordered loop either way, and are checked to give the same
//! result regardless.

use contend_engine::noise::pattern::Pattern as NoisePattern;
use contend_engine::noise::random::{Durations, RandomNoise};
use contend_engine::noise::{Noise, Phase};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::Program;
use contend_engine::sim::{simulate, Execution, Options, Params, Scenario, SimResult, Stopped};

const NS: u64 = 1000;

fn run<P: Program>(prog: &P, par: &Params, noise: Option<&Noise>, execution: Execution) -> SimResult {
    run_on(prog, par, noise, execution, 1)
}

fn run_on<P: Program>(prog: &P, par: &Params, noise: Option<&Noise>, execution: Execution, threads: usize) -> SimResult {
    let opts = Options { execution, threads, ..Options::default() };
    simulate(prog, &Scenario { noise: noise.cloned(), ..Scenario::new(*par) }, &opts, |_| true).unwrap()
}

fn same<P: Program>(prog: &P, par: &Params, noise: Option<&Noise>, what: &str) {
    same_on(prog, par, noise, &[1, 2, 3], what);
}

fn same_on<P: Program>(prog: &P, par: &Params, noise: Option<&Noise>, threads: &[usize], what: &str) {
    let ordered = run(prog, par, noise, Execution::TimeOrdered);
    assert!(!ordered.windowed, "{what}");
    for &n in threads {
        let windowed = run_on(prog, par, noise, Execution::Windowed, n);
        let what = format!("{what}, {n} threads");
        assert_eq!(windowed.finish, ordered.finish, "{what}");
        assert_eq!(windowed.makespan, ordered.makespan, "{what}");
        // Not the requeue counts: the time-ordered loop queues a rank's sends that wait for one CPU
        // one at a time (docs/models.md, "Waiting operations"), windows queue them all.
        assert_eq!(
            (windowed.events, windowed.ops, windowed.messages, windowed.noise),
            (ordered.events, ordered.ops, ordered.messages, ordered.noise),
            "{what}"
        );
        assert_eq!(windowed.deadlock, ordered.deadlock, "{what}");
    }
}

fn noises() -> Vec<(&'static str, Option<Noise>)> {
    let detours = NoisePattern::new(9_000 * NS, &[(500 * NS, 700 * NS), (4_000 * NS, 300 * NS), (4_300 * NS, 100 * NS)]).unwrap();
    vec![
        ("no noise", None),
        ("periodic", Some(Noise::periodic(5_000 * NS, 700 * NS, Phase::Independent, 3).unwrap())),
        ("periodic per byte", Some(Noise::periodic(5_000 * NS, 700 * NS, Phase::Independent, 4).unwrap().with_per_byte(true))),
        ("trace", Some(Noise::replay(vec![detours], Phase::Independent, 5).unwrap())),
        ("random", Some(Noise::random(RandomNoise::new(300_000.0, Durations::Fixed(900 * NS), 6).unwrap(), Phase::Independent).unwrap())),
        ("co-scheduled", Some(Noise::periodic(5_000 * NS, 700 * NS, Phase::CoScheduled(100 * NS), 0).unwrap())),
    ]
}

#[allow(non_snake_case)]
fn params(L: u64, o: u64, g: u64, O: u64) -> Params {
    Params { L: L * NS, o: o * NS, g: g * NS, G: 6 * NS, O: O * NS, S: 65535, unit: NS, rendezvous: None }
}

#[test]
#[allow(non_snake_case)]
fn every_pattern_gives_the_time_ordered_result() {
    let machines = [params(3000, 1500, 1000, 0), params(500, 200, 4000, 2), params(0, 1000, 1000, 0)];
    for (name, noise) in noises() {
        for (m, par) in machines.iter().enumerate() {
            for pattern in Pattern::ALL {
                for ranks in [2u32, 7, 16, 33, 128] {
                    for bytes in [1u64, 1000, 70_000] {
                        let Ok(c) = Collective::new(pattern, ranks, bytes, 0, 11) else { continue };
                        same(&c, par, noise.as_ref(), &format!("{name}, machine {m}, {pattern:?}, {ranks} ranks, {bytes} B"));
                    }
                }
            }
        }
    }
}

#[test]
fn a_million_ranks_give_the_time_ordered_result() {
    // The scale of the noise benchmark, where windows hold a million events each: noisy, and in
    // step (every window then a single run of simultaneous events per time).
    let noise = Noise::periodic(1_000_000 * NS, 25_000 * NS, Phase::Independent, 1).unwrap();
    let c = Collective::new(Pattern::Dissemination, 1 << 20, 1, 0, 0).unwrap();
    same_on(&c, &Params::loggopsim_defaults(), Some(&noise), &[1, 2], "dissemination, 2^20 ranks");
    same_on(&c, &Params::loggopsim_defaults(), None, &[1, 2], "dissemination, 2^20 ranks, no noise");
}

#[test]
fn the_engine_chooses_windows_for_scattered_ranks_only() {
    let c = Collective::new(Pattern::Dissemination, 64, 1, 0, 0).unwrap();
    let par = Params::loggopsim_defaults();
    for (name, noise) in noises() {
        let chosen = run(&c, &par, noise.as_ref(), Execution::Chosen);
        let scattered = noise.as_ref().is_some_and(|n| n.phase() == Phase::Independent);
        assert_eq!(chosen.windowed, scattered, "{name}");
        assert!(run(&c, &par, noise.as_ref(), Execution::Windowed).windowed, "{name}");
        // Threads share windows only: asked for, or chosen (0) for blocks of 2^14 ranks or more.
        assert_eq!(run_on(&c, &par, noise.as_ref(), Execution::Chosen, 0).threads, 1, "{name}");
        assert_eq!(run_on(&c, &par, noise.as_ref(), Execution::Chosen, 3).threads, if scattered { 3 } else { 1 }, "{name}");
    }
    let wide = Collective::new(Pattern::Dissemination, 1 << 15, 1, 0, 0).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (name, noise) in noises() {
        let scattered = noise.as_ref().is_some_and(|n| n.phase() == Phase::Independent);
        let chosen = run_on(&wide, &par, noise.as_ref(), Execution::Chosen, 0);
        assert_eq!(chosen.threads, if scattered { cores.min(2) } else { 1 }, "{name}");
    }
}

/// A random GOAL schedule: `messages` sends, each with its receive (a wildcard source or tag now and
/// then), calcs of 0 to 3000 ns (some with zero duration), receives and calcs on `cpus` CPUs,
/// messages on two NICs, and dependencies (requires and irequires) on earlier operations of the same rank. Some
/// schedules deadlock: both loops must then stop in the same state.
fn random_goal(ranks: u32, messages: u32, max_bytes: u64, cpus: u64, seed: u64) -> String {
    let mut state = seed;
    let mut next = move |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut ops: Vec<Vec<String>> = vec![Vec::new(); ranks as usize];
    for _ in 0..messages {
        let (src, dst) = (next(ranks as u64) as usize, next(ranks as u64) as usize);
        let (bytes, tag, nic) = (1 + next(max_bytes), next(3), next(2));
        ops[src].push(format!("send {bytes}b to {dst} tag {tag} cpu 0 nic {nic}"));
        let from = if next(8) == 0 { -1 } else { src as i64 };
        let tag = if next(8) == 0 { -1 } else { tag as i64 };
        ops[dst].push(format!("recv {bytes}b from {from} tag {tag} cpu {} nic {nic}", next(cpus)));
        let calc = ops[next(ranks as u64) as usize].len();
        let r = next(ranks as u64) as usize;
        if calc % 2 == 0 {
            ops[r].push(format!("calc {} cpu {}", next(4) * 1000 * (next(2)), next(cpus)));
        }
    }
    let mut text = format!("num_ranks {ranks}\n");
    for (r, list) in ops.iter().enumerate() {
        text += &format!("rank {r} {{\n");
        for (i, op) in list.iter().enumerate() {
            text += &format!("  l{i}: {op}\n");
        }
        for i in 1..list.len() {
            match next(4) {
                0 => text += &format!("  l{i} requires l{}\n", next(i as u64)),
                1 => text += &format!("  l{i} irequires l{}\n", next(i as u64)),
                _ => {}
            }
        }
        text += "}\n";
    }
    text
}

#[test]
fn random_goal_schedules_give_the_time_ordered_result() {
    // Both loops on schedules with calcs, two NICs, wildcards and dependencies; eager messages on
    // one CPU per rank run windowed; a rendezvous message, or a second CPU, keeps the time-ordered
    // loop (where the comparison holds by construction).
    let noise = Noise::periodic(3_000 * NS, 400 * NS, Phase::Independent, 8).unwrap();
    let (mut windowed, mut deadlocked) = (0, 0);
    for seed in 0..60 {
        let (ranks, messages) = (2 + seed as u32 % 9, 10 + 7 * seed as u32);
        let max_bytes = if seed % 10 == 9 { 100_000 } else { 2_000 };
        let cpus = if seed % 5 == 4 { 2 } else { 1 };
        let text = random_goal(ranks, messages, max_bytes, cpus, seed);
        let prog = parse_goal(text.as_bytes(), "random.goal").unwrap();
        for par in [params(3000, 1500, 1000, 1), params(100, 50, 500, 0)] {
            same(&prog, &par, Some(&noise), &format!("seed {seed}:\n{text}"));
            let r = run(&prog, &par, Some(&noise), Execution::Chosen);
            deadlocked += r.deadlock.is_some() as u32;
            assert_eq!(r.windowed, cpus == 1 && max_bytes < 65535, "seed {seed}");
            windowed += r.windowed as u32;
        }
    }
    assert_eq!(windowed, 96); // 48 one-CPU eager schedules, two machines each
    assert!(deadlocked > 10, "only {deadlocked} deadlocked runs"); // both loops stop in the same state
}

#[test]
fn a_run_shared_by_threads_stops_when_progress_says_so() {
    // The threads stop at the end of a window and the run returns nothing, as a single loop does.
    let noise = Noise::periodic(5_000 * NS, 700 * NS, Phase::Independent, 3).unwrap();
    let c = Collective::new(Pattern::Dissemination, 4096, 1, 0, 0).unwrap();
    let opts = Options { threads: 2, ..Options::default() };
    let mut calls = 0;
    let stopped = simulate(&c, &Scenario::new(params(3000, 1500, 1000, 0)).with_noise(noise.clone()), &opts, |_| {
        calls += 1;
        calls < 3
    });
    assert_eq!(stopped.err(), Some(Stopped::Cancelled));
    assert_eq!(calls, 3);
    let done = simulate(&c, &Scenario::new(params(3000, 1500, 1000, 0)).with_noise(noise.clone()), &opts, |_| true).unwrap();
    assert_eq!(done.threads, 2);
}
