//! Windowed execution (`contend_engine::sim::window`) against the time-ordered loop: for every
//! generated pattern, rank counts on both sides of powers of two, eager sizes with and without
//! per-byte costs, each kind of independent noise and LogGOPS parameters where simultaneous events
//! are common (g > o + L, O > 0, L = 0), every rank's finish time, the event and requeue counts and
//! the detour time charged must be identical. Rendezvous and co-scheduled noise take the
//! time-ordered loop either way; they are checked to give the same result regardless.

use contend_engine::noise::pattern::Pattern as NoisePattern;
use contend_engine::noise::random::{Durations, RandomNoise};
use contend_engine::noise::{Noise, Phase};
use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::schedule::Program;
use contend_engine::sim::{simulate_with_noise, Options, Params, SimResult};

const NS: u64 = 1000;

const PATTERNS: [Pattern; 14] = [
    Pattern::BinomialBcast,
    Pattern::BinomialReduce,
    Pattern::Dissemination,
    Pattern::Scatter,
    Pattern::Gather,
    Pattern::AlltoallLinear,
    Pattern::AlltoallPairwise,
    Pattern::AlltoallBruck,
    Pattern::AllreduceRecdoub,
    Pattern::AllreduceRing,
    Pattern::Incast,
    Pattern::Pingpong,
    Pattern::RandomPairs,
    Pattern::NeighbourPairs,
];

fn run<P: Program>(prog: &P, par: &Params, noise: &Noise, time_ordered: bool) -> SimResult {
    let opts = Options { time_ordered, ..Options::default() };
    simulate_with_noise(prog, par, &opts, None, Some(noise), |_| true).unwrap()
}

fn same<P: Program>(prog: &P, par: &Params, noise: &Noise, what: &str) {
    let windowed = run(prog, par, noise, false);
    let ordered = run(prog, par, noise, true);
    assert_eq!(windowed.finish, ordered.finish, "{what}");
    assert_eq!(
        (windowed.events, windowed.ops, windowed.messages, windowed.requeues, windowed.noise, windowed.deadlock.is_some()),
        (ordered.events, ordered.ops, ordered.messages, ordered.requeues, ordered.noise, ordered.deadlock.is_some()),
        "{what}"
    );
}

fn noises() -> Vec<(&'static str, Noise)> {
    let detours = NoisePattern::new(9_000 * NS, &[(500 * NS, 700 * NS), (4_000 * NS, 300 * NS), (4_300 * NS, 100 * NS)]).unwrap();
    vec![
        ("periodic", Noise::periodic(5_000 * NS, 700 * NS, Phase::Independent, 3).unwrap()),
        ("periodic per byte", Noise::periodic(5_000 * NS, 700 * NS, Phase::Independent, 4).unwrap().with_per_byte(true)),
        ("trace", Noise::replay(vec![detours], Phase::Independent, 5).unwrap()),
        ("random", Noise::random(RandomNoise::new(300_000.0, Durations::Fixed(900 * NS), 6).unwrap(), Phase::Independent).unwrap()),
        ("co-scheduled", Noise::periodic(5_000 * NS, 700 * NS, Phase::CoScheduled(100 * NS), 0).unwrap()),
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
            for pattern in PATTERNS {
                for ranks in [2u32, 7, 16, 33, 128] {
                    for bytes in [1u64, 1000, 70_000] {
                        let Ok(c) = Collective::new(pattern, ranks, bytes, 0, 11) else { continue };
                        same(&c, par, &noise, &format!("{name}, machine {m}, {pattern:?}, {ranks} ranks, {bytes} B"));
                    }
                }
            }
        }
    }
}

#[test]
fn a_million_ranks_give_the_time_ordered_result() {
    // The scale of the noise benchmark, where windows hold a million events each.
    let noise = Noise::periodic(1_000_000 * NS, 25_000 * NS, Phase::Independent, 1).unwrap();
    let c = Collective::new(Pattern::Dissemination, 1 << 20, 1, 0, 0).unwrap();
    same(&c, &Params::loggopsim_defaults(), &noise, "dissemination, 2^20 ranks");
}

#[test]
fn schedules_without_a_size_bound_take_the_time_ordered_loop() {
    // A GOAL schedule does not promise eager messages up front: same result by construction, and
    // calcs and simultaneous sends of one rank are covered here too.
    let text = "num_ranks 3\nrank 0 {\n l1: calc 100\n l2: send 8b to 1\n l3: send 8b to 2\n l2 requires l1\n l3 requires l1\n}\n\
                rank 1 {\n l1: recv 8b from 0\n l2: calc 50\n l2 requires l1\n}\nrank 2 {\n l1: recv 8b from 0\n}\n";
    let prog = parse_goal(text.as_bytes(), "t.goal").unwrap();
    let noise = Noise::periodic(300 * NS, 20 * NS, Phase::Independent, 2).unwrap();
    same(&prog, &params(3000, 1500, 1000, 0), &noise, "goal");
}
