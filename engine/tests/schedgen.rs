//! The generators produce Schedgen's schedules: GOAL text written here the way Schedgen writes it
//! (including the duplicate `requires` lines of its binomial trees) simulates to the same times as
//! the generator, for random parameters, eager and rendezvous.

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::schedule::goal::parse_goal;
use contend_engine::sim::{simulate, Options, Params, Scenario};

fn schedgen_binomial_bcast_p5(s: u64) -> String {
    format!(
        "num_ranks 5\n\
         rank 0 {{\nl1: send {s}b to 1 tag 0\nl2: send {s}b to 2 tag 0\nl3: send {s}b to 4 tag 0\n}}\n\
         rank 1 {{\nl1: recv {s}b from 0 tag 0\nl2: send {s}b to 3 tag 0\nl2 requires l1\nl2 requires l1\n}}\n\
         rank 2 {{\nl1: recv {s}b from 0 tag 0\n}}\n\
         rank 3 {{\nl1: recv {s}b from 1 tag 0\n}}\n\
         rank 4 {{\nl1: recv {s}b from 0 tag 0\n}}\n"
    )
}

fn schedgen_binomial_reduce_p5(s: u64) -> String {
    format!(
        "num_ranks 5\n\
         rank 0 {{\nl1: recv {s}b from 1 tag 0\nl2: recv {s}b from 2 tag 0\nl3: recv {s}b from 4 tag 0\n}}\n\
         rank 1 {{\nl1: send {s}b to 0 tag 0\nl2: recv {s}b from 3 tag 0\nl1 requires l2\nl1 requires l2\n}}\n\
         rank 2 {{\nl1: send {s}b to 0 tag 0\n}}\n\
         rank 3 {{\nl1: send {s}b to 1 tag 0\n}}\n\
         rank 4 {{\nl1: send {s}b to 0 tag 0\n}}\n"
    )
}

/// Chain patterns as Schedgen writes them: per step a send (requiring the previous receive) and a
/// receive. `step(rank, k)` gives (to, from, bytes).
fn schedgen_chain(p: u32, steps: u32, step: impl Fn(u32, u32) -> (u32, u32, u64)) -> String {
    let mut t = format!("num_ranks {p}\n");
    for r in 0..p {
        t += &format!("rank {r} {{\n");
        let mut id = 0;
        let mut last_recv = None;
        for k in 0..steps {
            let (to, from, size) = step(r, k);
            id += 1;
            let send = id;
            t += &format!("l{send}: send {size}b to {to} tag 0\n");
            if let Some(l) = last_recv {
                t += &format!("l{send} requires l{l}\n");
            }
            id += 1;
            t += &format!("l{id}: recv {size}b from {from} tag 0\n");
            last_recv = Some(id);
        }
        t += "}\n";
    }
    t
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn check(text: &str, pattern: Pattern, ranks: u32, bytes: u64, rng: &mut Rng) {
    let schedgen = parse_goal(text.as_bytes(), "schedgen.goal").unwrap();
    let generated = Collective::new(pattern, ranks, bytes, 0, 0).unwrap();
    for _ in 0..40 {
        let par = Params {
            L: rng.below(5_000_000),
            o: rng.below(3_000_000),
            g: rng.below(3_000_000),
            G: rng.below(10_000),
            O: rng.below(3) * rng.below(5_000),
            S: [0, 100, 65535][rng.below(3) as usize],
            unit: 1000,
            rendezvous: None,
        };
        let a = simulate(&schedgen, &Scenario::new(par), &Options::default(), |_| true).unwrap();
        let b = simulate(&generated, &Scenario::new(par), &Options::default(), |_| true).unwrap();
        assert!(a.deadlock.is_none() && b.deadlock.is_none());
        assert_eq!(a.finish, b.finish, "{pattern:?} P={ranks} s={bytes} {par:?}");
    }
}

#[test]
fn binomial_trees_with_duplicate_requires() {
    let mut rng = Rng(9);
    for s in [1, 1000, 100_000] {
        check(&schedgen_binomial_bcast_p5(s), Pattern::BinomialBcast, 5, s, &mut rng);
        check(&schedgen_binomial_reduce_p5(s), Pattern::BinomialReduce, 5, s, &mut rng);
    }
}

#[test]
fn allreduce_ring_and_recursive_doubling() {
    let mut rng = Rng(10);
    for bytes in [300u64, 3001, 300_000] {
        let p = 3;
        let text = schedgen_chain(p, 2 * (p - 1), |r, _| ((r + 1) % p, (r + p - 1) % p, bytes / p as u64));
        check(&text, Pattern::AllreduceRing, p, bytes, &mut rng);
    }
    for bytes in [1000u64, 1001, 1 << 20] {
        let p = 4;
        // Reduce-scatter halves the size each step (masks 1, 2), allgather doubles it (masks 2, 1).
        let text = schedgen_chain(p, 4, |r, k| {
            let (mask, size) = match k {
                0 => (1, bytes / 2),
                1 => (2, bytes / 2 / 2),
                2 => (2, bytes / 2 / 2),
                _ => (1, bytes / 2 / 2 * 2),
            };
            (r ^ mask, r ^ mask, size)
        });
        check(&text, Pattern::AllreduceRecdoub, p, bytes, &mut rng);
    }
}

#[test]
fn dissemination_for_a_rank_count_that_is_not_a_power_of_two() {
    let mut rng = Rng(11);
    let p = 6u32;
    let text = schedgen_chain(p, 3, |r, k| ((r + (1 << k)) % p, (r + p - (1 << k)) % p, 64));
    check(&text, Pattern::Dissemination, p, 64, &mut rng);
}
