//! Property tests: for hundreds of random (P, s, L, o, g, G, O), the engine equals the closed
//! forms of the LogGOPS model for eager messages (docs/models.md, "Closed forms"):
//!   hop = 2o + L + (s-1)max(O,G),  gap = max(o + (s-1)O, g + (s-1)G)
//!   binomial broadcast: max over 0<v<P of popcount(v)*hop + (bitlen(v)-popcount(v))*gap
//!   linear scatter:     (P-2)*gap + hop
//!   linear gather:      o + L + (P-2)*gap_r + o + (s-1)max(O,G) (all arrive at once; the root takes
//!                       them one by one), gap_r = max(o + (s-1)max(O,G), g + (s-1)G)
//!   dissemination:      ceil(log2 P) * (max(o+L, o+(s-1)O) + o + (s-1)max(O,G)),
//!                       valid while the NIC keeps up: g + (s-1)G <= that round time.

use contend_engine::schedule::collectives::{Collective, Pattern};
use contend_engine::sim::{simulate, Options, Params, Scenario};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random parameters in picoseconds, sometimes with sub-nanosecond per-byte costs.
fn random_case(rng: &mut Rng) -> (u32, u64, Params) {
    let ranks = 1 + rng.below(300) as u32;
    let s = match rng.below(3) {
        0 => 1,
        1 => 1 + rng.below(64),
        _ => 1 + rng.below(65535),
    };
    let par = Params {
        L: rng.below(10_000_000),
        o: rng.below(5_000_000),
        g: rng.below(5_000_000),
        G: rng.below(20_000),
        O: if rng.below(2) == 0 { 0 } else { rng.below(20_000) },
        S: 65535,
        unit: 1000,
        rendezvous: None,
    };
    (ranks, s, par)
}

fn hop_gap(s: u64, p: &Params) -> (u64, u64) {
    let e = s - 1;
    (2 * p.o + p.L + e * p.O.max(p.G), (p.o + e * p.O).max(p.g + e * p.G))
}

fn makespan(pattern: Pattern, ranks: u32, s: u64, par: &Params) -> u64 {
    let c = Collective::new(pattern, ranks, s, 0, 0).unwrap();
    let r = simulate(&c, &Scenario::new(*par), &Options::default(), |_| true).unwrap();
    assert!(r.deadlock.is_none());
    r.makespan
}

#[test]
fn binomial_broadcast_any_rank_count() {
    let mut rng = Rng(1);
    for _ in 0..400 {
        let (p, s, par) = random_case(&mut rng);
        let (hop, gap) = hop_gap(s, &par);
        let expect = (1..p).map(|v| v.count_ones() as u64 * hop + (32 - v.leading_zeros() - v.count_ones()) as u64 * gap).max().unwrap_or(0);
        assert_eq!(makespan(Pattern::BinomialBcast, p, s, &par), expect, "P={p} s={s} {par:?}");
    }
}

#[test]
fn linear_scatter() {
    let mut rng = Rng(2);
    for _ in 0..400 {
        let (p, s, par) = random_case(&mut rng);
        let (hop, gap) = hop_gap(s, &par);
        let expect = if p < 2 { 0 } else { (p as u64 - 2) * gap + hop };
        assert_eq!(makespan(Pattern::Scatter, p, s, &par), expect, "P={p} s={s} {par:?}");
    }
}

#[test]
fn linear_gather_serves_an_incast_one_by_one() {
    let mut rng = Rng(4);
    for _ in 0..400 {
        let (p, s, par) = random_case(&mut rng);
        let e = s - 1;
        let cpu = par.o + e * par.O.max(par.G);
        let gap_r = cpu.max(par.g + e * par.G);
        let root = if p < 2 { 0 } else { par.o + par.L + (p as u64 - 2) * gap_r + cpu };
        let sender = if p < 2 { 0 } else { par.o + e * par.O };
        assert_eq!(makespan(Pattern::Gather, p, s, &par), root.max(sender), "P={p} s={s} {par:?}");
    }
}

#[test]
fn dissemination_barrier() {
    let mut rng = Rng(3);
    let mut checked = 0;
    while checked < 300 {
        let (p, s, par) = random_case(&mut rng);
        let e = s - 1;
        let round = (par.o + par.L).max(par.o + e * par.O) + par.o + e * par.O.max(par.G);
        if par.g + e * par.G > round {
            continue; // outside the closed form's domain: the NIC, not the CPU, paces the rounds
        }
        let rounds = if p <= 1 { 0 } else { 32 - (p - 1).leading_zeros() } as u64;
        assert_eq!(makespan(Pattern::Dissemination, p, s, &par), rounds * round, "P={p} s={s} {par:?}");
        checked += 1;
    }
}

/// Separate rendezvous costs: a ping-pong round trip follows 2(2o + L + (s-1)max(O,G)) with the
/// eager costs up to S bytes and the rendezvous costs above; equal costs change nothing.
#[test]
fn pingpong_with_protocol_specific_costs() {
    use contend_engine::sim::Costs;
    let mut rng = Rng(4);
    for _ in 0..300 {
        let (_, s, mut par) = random_case(&mut rng);
        par.S = rng.below(70_000);
        let r = Costs { L: rng.below(10_000_000), o: rng.below(5_000_000), g: rng.below(5_000_000), G: rng.below(20_000), O: rng.below(20_000) };
        let plain = makespan(Pattern::Pingpong, 2, s, &par);
        par.rendezvous = Some(Costs { L: par.L, o: par.o, g: par.g, G: par.G, O: par.O });
        assert_eq!(makespan(Pattern::Pingpong, 2, s, &par), plain);
        par.rendezvous = Some(r);
        let k = par.costs(s);
        let e = s - 1;
        assert_eq!(makespan(Pattern::Pingpong, 2, s, &par), 2 * (2 * k.o + k.L + e * k.O.max(k.G)), "s={s} {par:?}");
        assert_eq!(k == r, s > par.S);
    }
}
