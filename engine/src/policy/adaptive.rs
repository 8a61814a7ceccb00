//! Adaptive (closed-loop) token throttling: the node's token limit follows the node's completion
//! rate while the program runs, with no sweep beforehand. The rule, its defaults and its limits are
//! stated once in docs/models.md ("Adaptive limit"); native/throttle/adaptive.c is the same rule in
//! the library, so a simulation predicts what the library does.
//!
//! Per node: a limit W (tokens, one per message), a round of max(W, MIN_ROUND) completions, and the
//! best completion rate seen since the last decrease. A round in which at least half the completions
//! found a send waiting for a token ("binding") compares its rate with the best: within the tolerance
//! the limit grows (doubling until the first decrease, then by one), below it the limit is
//! multiplied by `decrease`. Any other round changes nothing (the limit was not what held the node
//! back).

use super::tokens::{TokenPool, TokenSpec};
use crate::spec_error::SpecError;
use crate::time::Time;

/// The fewest completions a round has: on a real host a rate over fewer is mostly the clock's
/// jitter (the library's limit moved 30-117 times in a 1 ms run with rounds of 2; docs/models.md).
pub const MIN_ROUND: u64 = 16;

/// The rule's parameters (defaults: docs/models.md), valid by construction ([`AdaptiveSpec::new`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveSpec {
    /// The pool's maximum: the limit never exceeds it.
    pub max_tokens: u64,
    /// The limit at the start; None: the node's ranks (one message per core), at most `max_tokens`.
    pub initial: Option<u64>,
    /// The factor a congested round multiplies the limit by (0 < decrease < 1).
    pub decrease: f64,
    /// A round congests when its rate is below (1 - tolerance) times the best.
    pub tolerance: f64,
}

impl AdaptiveSpec {
    pub const DEFAULT_MAX_TOKENS: u64 = 1_000_000;
    pub const DEFAULT_DECREASE: f64 = 0.5;
    pub const DEFAULT_TOLERANCE: f64 = 0.05;

    /// The rule's parameters, checked: `initial` None starts at the node's ranks.
    pub fn new(max_tokens: u64, initial: Option<u64>, decrease: f64, tolerance: f64) -> Result<AdaptiveSpec, SpecError> {
        if max_tokens == 0 {
            return Err(SpecError::new("throttle.tokens", "expected an integer >= 1, got 0 (the most the adaptive limit may reach)"));
        }
        if initial.is_some_and(|i| i == 0 || i > max_tokens) {
            return Err(SpecError::new("throttle.initial", format!("must be from 1 to tokens ({max_tokens})")));
        }
        if !(decrease > 0.0 && decrease < 1.0) {
            return Err(SpecError::new("throttle.decrease", "must be between 0 and 1 (exclusive)"));
        }
        if !(0.0..1.0).contains(&tolerance) {
            return Err(SpecError::new("throttle.tolerance", "must be at least 0 and below 1"));
        }
        Ok(AdaptiveSpec { max_tokens, initial, decrease, tolerance })
    }

    /// Its pool: `max_tokens`, one token per message (valid: `max_tokens` >= 1 by construction).
    fn one_per_message(&self) -> TokenSpec {
        TokenSpec::new(Some(self.max_tokens), 0, vec![]).expect("max_tokens >= 1")
    }
}

impl Default for AdaptiveSpec {
    fn default() -> AdaptiveSpec {
        AdaptiveSpec {
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            initial: None,
            decrease: Self::DEFAULT_DECREASE,
            tolerance: Self::DEFAULT_TOLERANCE,
        }
    }
}

/// One node's controller.
#[derive(Clone, Debug)]
struct NodeLimit {
    limit: u64,
    slow_start: bool,
    /// Completions per ps of the best round since the last decrease (0: none yet).
    best: f64,
    /// When the round started (None before the node's first completion).
    start: Option<Time>,
    /// The round's length (the limit when it started, at least MIN_ROUND) and its completions so far.
    length: u64,
    done: u64,
    /// The round's completions that found a send of the node waiting.
    waited: u64,
}

/// The limits of all nodes, and what they did.
pub struct Adaptive {
    spec: AdaptiveSpec,
    nodes: Vec<NodeLimit>,
    /// Limit changes (all nodes).
    pub adjustments: u64,
    /// The smallest and largest limit any node had.
    pub min_limit: u64,
    pub max_limit: u64,
}

impl Adaptive {
    /// `node_of[task]` places the tasks on nodes.
    pub fn new(spec: AdaptiveSpec, node_of: &[u32]) -> Adaptive {
        let mut ranks = vec![0u64; node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0)];
        for &n in node_of {
            ranks[n as usize] += 1;
        }
        let nodes: Vec<NodeLimit> = ranks
            .iter()
            .map(|&r| {
                let limit = spec.initial.unwrap_or(r).clamp(1, spec.max_tokens);
                NodeLimit { limit, slow_start: true, best: 0.0, start: None, length: limit.max(MIN_ROUND), done: 0, waited: 0 }
            })
            .collect();
        let (min_limit, max_limit) = (nodes.iter().map(|n| n.limit).min().unwrap_or(1), nodes.iter().map(|n| n.limit).max().unwrap_or(1));
        Adaptive { nodes, adjustments: 0, min_limit, max_limit, spec }
    }

    /// The pool the limits act on: one token per message, `max_tokens` in all, each node at its
    /// initial limit.
    pub fn pool<T>(&self, tasks: usize) -> TokenPool<T> {
        let mut pool = TokenPool::new(self.spec.one_per_message(), self.nodes.len(), tasks);
        for (node, n) in self.nodes.iter().enumerate() {
            pool.set_limit(node as u32, n.limit);
        }
        pool
    }

    /// A message of `node` completed at `t` (gave back its token); `waiting`: some send of the node
    /// waits for a token now. Returns the node's new limit when it changes. The node's first
    /// completion only starts the first round.
    pub fn completed(&mut self, node: u32, t: Time, waiting: bool) -> Option<u64> {
        let s = &self.spec;
        let n = &mut self.nodes[node as usize];
        let Some(start) = n.start else {
            n.start = Some(t); // the first completion starts the first round
            return None;
        };
        n.done += 1;
        n.waited += waiting as u64;
        if n.done < n.length {
            return None;
        }
        let rate = n.done as f64 / (t - start).max(1) as f64;
        let old = n.limit;
        // Binding: the limit held the node back through the round, not for a moment (two tasks
        // meeting on the pool make a wait of a few hundred ns on a real host at any limit).
        if 2 * n.waited >= n.done {
            if n.best == 0.0 {
                n.best = rate; // the first round, and the first after a decrease, only measure
            } else if rate >= (1.0 - s.tolerance) * n.best {
                n.best = n.best.max(rate);
                n.limit = if n.slow_start { 2 * n.limit } else { n.limit + 1 }.min(s.max_tokens);
            } else {
                n.limit = ((n.limit as f64 * s.decrease) as u64).max(1);
                n.slow_start = false;
                n.best = 0.0;
            }
        }
        n.start = Some(t);
        n.length = n.limit.max(MIN_ROUND);
        n.done = 0;
        n.waited = 0;
        (n.limit != old).then(|| {
            self.adjustments += 1;
            self.min_limit = self.min_limit.min(n.limit);
            self.max_limit = self.max_limit.max(n.limit);
            n.limit
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `rounds` binding rounds whose rate is `rate(limit)` completions per ps; the limits after each.
    fn run(a: &mut Adaptive, rounds: usize, rate: impl Fn(u64) -> f64) -> Vec<u64> {
        let mut t: Time = 0;
        a.completed(0, t, true);
        let mut limit = a.nodes[0].limit;
        let mut out = Vec::new();
        for _ in 0..rounds {
            let step = (1.0 / rate(limit)).round() as Time;
            for _ in 0..limit.max(MIN_ROUND) {
                t += step;
                if let Some(l) = a.completed(0, t, true) {
                    limit = l;
                }
            }
            out.push(limit);
        }
        out
    }

    #[test]
    fn doubles_then_halves_at_the_knee_then_grows_by_one() {
        let mut a = Adaptive::new(AdaptiveSpec { initial: Some(1), ..AdaptiveSpec::default() }, &[0]);
        // Full rate up to 20 in flight, 40% less beyond (a knee as in the InfiniBand-like preset).
        // The first round, and the first after the decrease, only measure.
        let limits = run(&mut a, 10, |w| if w <= 20 { 1e-3 } else { 0.6e-3 });
        assert_eq!(limits, vec![1, 2, 4, 8, 16, 32, 16, 16, 17, 18]);
        assert_eq!((a.min_limit, a.max_limit, a.adjustments), (1, 32, 8));
    }

    #[test]
    fn a_round_nobody_waited_in_changes_nothing() {
        let mut a = Adaptive::new(AdaptiveSpec::default(), &[0, 1, 1, 1, 1]);
        assert_eq!((a.nodes[0].limit, a.nodes[1].limit), (1, 4)); // one per rank of the node
        a.completed(1, 0, false);
        for t in 1..=3 * MIN_ROUND {
            assert_eq!(a.completed(1, t * 1000, false), None);
        }
        assert_eq!(a.nodes[1].limit, 4);
        assert_eq!(a.completed(0, 0, true), None); // nodes are independent
    }

    #[test]
    fn a_round_binds_when_half_its_completions_found_a_send_waiting() {
        // Rounds of MIN_ROUND completions at one rate: a binding round measures, the next grows.
        let round = |a: &mut Adaptive, t: &mut Time, waiting: u64| {
            let mut out = None;
            for k in 0..MIN_ROUND {
                *t += 1000;
                out = a.completed(0, *t, k < waiting).or(out);
            }
            out
        };
        let mut a = Adaptive::new(AdaptiveSpec::default(), &[0, 0]);
        let mut t = 0;
        a.completed(0, t, false);
        for _ in 0..3 {
            assert_eq!(round(&mut a, &mut t, MIN_ROUND / 2 - 1), None); // a moment's waits: not binding
        }
        assert_eq!(round(&mut a, &mut t, MIN_ROUND / 2), None); // binding: the first only measures
        assert_eq!(round(&mut a, &mut t, MIN_ROUND), Some(4)); // as fast: the limit doubles
    }

    #[test]
    fn never_beyond_the_pool_nor_below_one() {
        let mut a = Adaptive::new(AdaptiveSpec { max_tokens: 5, ..AdaptiveSpec::default() }, &[0; 3]);
        assert_eq!(run(&mut a, 3, |_| 1e-3), vec![3, 5, 5]);
        let mut b = Adaptive::new(AdaptiveSpec::default(), &[0]);
        // Ever slower rounds: every comparison after the first congests, but the limit stays at 1.
        let limits = run(&mut b, 6, |w| 1e-3 / (w as f64 * 4.0));
        assert!(limits.iter().all(|&l| l >= 1), "{limits:?}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        let d = AdaptiveSpec::default();
        let key = |r: Result<AdaptiveSpec, SpecError>| r.unwrap_err().key;
        assert_eq!(key(AdaptiveSpec::new(0, None, d.decrease, d.tolerance)), "throttle.tokens");
        assert_eq!(key(AdaptiveSpec::new(5, Some(0), d.decrease, d.tolerance)), "throttle.initial");
        assert_eq!(key(AdaptiveSpec::new(5, Some(6), d.decrease, d.tolerance)), "throttle.initial");
        assert_eq!(key(AdaptiveSpec::new(5, None, 1.0, d.tolerance)), "throttle.decrease");
        assert_eq!(key(AdaptiveSpec::new(5, None, d.decrease, 1.0)), "throttle.tolerance");
        assert_eq!(AdaptiveSpec::new(d.max_tokens, None, d.decrease, d.tolerance), Ok(d));
    }
}
