//! Inline token throttling: each node has a pool of tokens; a message takes one token (or one per
//! `size_per_token` bytes) before it is injected and gives them back when its send completes.
//! Requests that cannot be served wait in a FIFO of tickets: the head is served first, always, so
//! no task starves (a later small request never overtakes an earlier large one).
//!
//! Luo et al. 2012's Algorithm 1 thresholds act as a count-based predictor on the same tickets: a message
//! is admitted only while a new core would not make CCT[size] or more cores active, fewer than
//! NRCT[size] messages are in flight on the node, and its task has fewer than
//! CRCT[active cores][size] in flight.

use std::collections::VecDeque;

use crate::spec_error::SpecError;
use crate::time::Time;

/// The Algorithm 1 thresholds for messages of at most `up_to` bytes (the last class: all larger).
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    pub up_to: u64,
    /// Concurrency congestion threshold: cores that may have messages in flight at once.
    pub cct: u32,
    /// Node rate congestion threshold: messages in flight per node.
    pub nrct: u32,
    /// Core rate congestion threshold: (active cores, messages in flight per core), by increasing
    /// cores; the entry with the most cores not above the active count applies (the first below it).
    pub crct: Vec<(u32, u32)>,
}

impl Thresholds {
    fn crct_at(&self, active: u32) -> u32 {
        let i = self.crct.partition_point(|&(cores, _)| cores <= active);
        self.crct[i.saturating_sub(1)].1
    }
}

/// A token pool and/or thresholds, valid by construction ([`TokenSpec::new`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TokenSpec {
    /// Tokens per node (None: only the thresholds limit).
    tokens: Option<u64>,
    /// A message takes ceil(bytes / size_per_token) tokens (at least 1, at most the pool); 0: one.
    size_per_token: u64,
    thresholds: Vec<Thresholds>,
}

impl TokenSpec {
    /// Checks the values (a zero count would stop every message); errors name the `[throttle]`
    /// key, `throttle.class.<position>.<key>` for a class of thresholds.
    pub fn new(tokens: Option<u64>, size_per_token: u64, thresholds: Vec<Thresholds>) -> Result<TokenSpec, SpecError> {
        if tokens == Some(0) {
            return Err(SpecError::new("throttle.tokens", "expected an integer >= 1, got 0 (a pool needs at least 1 token to admit a message)"));
        }
        if tokens.is_none() && thresholds.is_empty() {
            return Err(SpecError::new("throttle", "the token policy needs tokens, [[throttle.class]] thresholds or both"));
        }
        if size_per_token > 0 && tokens.is_none() {
            return Err(SpecError::new("throttle.size_per_token", "size_per_token needs a token pool (tokens)"));
        }
        for (i, t) in thresholds.iter().enumerate() {
            let key = |k: &str| format!("throttle.class.{i}.{k}");
            if i > 0 && t.up_to <= thresholds[i - 1].up_to {
                return Err(SpecError::new(key("up_to"), "threshold classes must be in increasing up_to"));
            }
            for (name, value) in [("cct", t.cct), ("nrct", t.nrct)] {
                if value == 0 {
                    return Err(SpecError::new(key(name), "0 is out of range: at least 1 (0 would stop every message)"));
                }
            }
            if t.crct.is_empty() || t.crct.iter().any(|&(_, m)| m == 0) || t.crct.windows(2).any(|w| w[1].0 <= w[0].0) {
                return Err(SpecError::new(key("crct"), format!("expected [[active cores, messages >= 1], ...] in increasing cores, got {:?}", t.crct)));
            }
        }
        Ok(TokenSpec { tokens, size_per_token, thresholds })
    }
}

struct Ticket<T> {
    task: u32,
    size: u64,
    need: u64,
    asked: Time,
    payload: T,
}

/// The pools and ticket lines of all nodes, and what is in flight per node and per task.
pub struct TokenPool<T> {
    spec: TokenSpec,
    /// Tokens each node may have in use: the pool, or less under the adaptive policy.
    limit: Vec<u64>,
    used: Vec<u64>,
    in_flight: Vec<u32>,
    active: Vec<u32>,
    per_task: Vec<u32>,
    tickets: Vec<VecDeque<Ticket<T>>>,
    /// Requests granted later than they asked. One parked and granted at the same instant (a
    /// release simultaneous with it, ordered after it among the instant's events) did not wait:
    /// which of two simultaneous events goes first is the simulator's choice, not the policy's.
    pub waits: u64,
    /// The most tokens in use on any node, right after a grant (what the library reports as
    /// max_in_use: compared in tests/test_throttle_agreement.py).
    pub max_used: u64,
}

impl<T> TokenPool<T> {
    pub fn new(spec: TokenSpec, nodes: usize, tasks: usize) -> TokenPool<T> {
        TokenPool {
            limit: vec![spec.tokens.unwrap_or(u64::MAX); nodes],
            spec,
            used: vec![0; nodes],
            in_flight: vec![0; nodes],
            active: vec![0; nodes],
            per_task: vec![0; tasks],
            tickets: (0..nodes).map(|_| VecDeque::new()).collect(),
            waits: 0,
            max_used: 0,
        }
    }

    /// Tokens a message of `size` bytes takes.
    pub fn need(&self, size: u64) -> u64 {
        match self.spec.tokens {
            Some(pool) if self.spec.size_per_token > 0 => size.div_ceil(self.spec.size_per_token).clamp(1, pool),
            _ => 1,
        }
    }

    fn fits(&self, node: u32, task: u32, size: u64, need: u64) -> bool {
        let n = node as usize;
        if self.used[n] + need > self.limit[n] {
            return false;
        }
        if self.spec.thresholds.is_empty() {
            return true;
        }
        let i = self.spec.thresholds.partition_point(|t| t.up_to < size).min(self.spec.thresholds.len() - 1);
        let th = &self.spec.thresholds[i];
        let mine = self.per_task[task as usize];
        let active_after = self.active[n] + (mine == 0) as u32;
        !(mine == 0 && self.active[n] >= th.cct) && self.in_flight[n] < th.nrct && mine < th.crct_at(active_after)
    }

    fn take(&mut self, node: u32, task: u32, need: u64) {
        let n = node as usize;
        self.used[n] += need;
        self.max_used = self.max_used.max(self.used[n]);
        self.in_flight[n] += 1;
        self.per_task[task as usize] += 1;
        if self.per_task[task as usize] == 1 {
            self.active[n] += 1;
        }
    }

    /// A message of `task` asks at `at` to be injected: its tokens if granted now (nobody waiting and
    /// they fit), else None and `payload` waits in line until [`TokenPool::serve`] hands it back.
    pub fn request(&mut self, node: u32, task: u32, size: u64, at: Time, payload: T) -> Option<u64> {
        let need = self.need(size);
        if self.tickets[node as usize].is_empty() && self.fits(node, task, size, need) {
            self.take(node, task, need);
            return Some(need);
        }
        self.tickets[node as usize].push_back(Ticket { task, size, need, asked: at, payload });
        None
    }

    /// Takes the tokens at once if they fit, without a ticket (the proxy's servers, which already
    /// serve the tasks in turn); None if they do not.
    pub fn try_take(&mut self, node: u32, task: u32, size: u64) -> Option<u64> {
        let need = self.need(size);
        self.fits(node, task, size, need).then(|| {
            self.take(node, task, need);
            need
        })
    }

    /// A message of `task` that held `tokens` completed: gives them back. The line waits for
    /// [`TokenPool::serve`] (at once, or after the waiters' handoff).
    pub fn give_back(&mut self, node: u32, task: u32, tokens: u64) {
        let n = node as usize;
        self.used[n] -= tokens;
        self.in_flight[n] -= 1;
        self.per_task[task as usize] -= 1;
        if self.per_task[task as usize] == 0 {
            self.active[n] -= 1;
        }
    }

    /// Grants the waiting tickets of `node` at `at`, head first, while they fit; appends (payload,
    /// tokens) of each grant to `granted`.
    pub fn serve(&mut self, node: u32, at: Time, granted: &mut Vec<(T, u64)>) {
        let n = node as usize;
        while let Some(head) = self.tickets[n].front() {
            if !self.fits(node, head.task, head.size, head.need) {
                break;
            }
            let t = self.tickets[n].pop_front().expect("head exists");
            self.waits += (at > t.asked) as u64;
            self.take(node, t.task, t.need);
            granted.push((t.payload, t.need));
        }
    }

    /// Sets the tokens `node` may have in use (at most the pool); those in use above it stay until released.
    pub fn set_limit(&mut self, node: u32, limit: u64) {
        self.limit[node as usize] = limit.min(self.spec.tokens.unwrap_or(u64::MAX));
    }

    /// Whether some request of `node` waits for its tokens.
    pub fn waiting(&self, node: u32) -> bool {
        !self.tickets[node as usize].is_empty()
    }

    /// Messages in flight on `node` (admitted, not yet released).
    pub fn in_flight(&self, node: u32) -> u32 {
        self.in_flight[node as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(tokens: u64, size_per_token: u64) -> TokenPool<u32> {
        TokenPool::new(TokenSpec::new(Some(tokens), size_per_token, vec![]).unwrap(), 1, 4)
    }

    impl<T> TokenPool<T> {
        /// Gives back and serves the line at once.
        fn release(&mut self, node: u32, task: u32, tokens: u64, at: Time, granted: &mut Vec<(T, u64)>) {
            self.give_back(node, task, tokens);
            self.serve(node, at, granted);
        }
    }

    #[test]
    fn tickets_are_served_in_order_and_a_large_request_is_not_overtaken() {
        let mut p = pool(4, 100);
        assert_eq!(p.request(0, 0, 300, 0, 1), Some(3));
        assert_eq!(p.request(0, 1, 400, 0, 2), None); // needs the whole pool
        assert_eq!(p.request(0, 2, 50, 0, 3), None); // would fit, but a ticket is ahead of it
        let mut granted = Vec::new();
        p.release(0, 0, 3, 1, &mut granted);
        assert_eq!(granted, vec![(2, 4)]);
        granted.clear();
        p.release(0, 1, 4, 1, &mut granted);
        assert_eq!(granted, vec![(3, 1)]);
        assert_eq!(p.need(0), 1);
        assert_eq!(p.need(1_000_000), 4);
    }

    #[test]
    fn thresholds_limit_cores_node_and_core_counts() {
        let spec = |nrct| TokenSpec::new(None, 0, vec![Thresholds { up_to: u64::MAX, cct: 2, nrct, crct: vec![(1, 3), (2, 1)] }]).unwrap();
        let mut p: TokenPool<u32> = TokenPool::new(spec(10), 1, 4);
        assert_eq!(p.request(0, 0, 8, 0, 0), Some(1)); // one core active: up to 3 per core
        assert_eq!(p.request(0, 0, 8, 0, 1), Some(1));
        assert_eq!(p.request(0, 1, 8, 0, 2), Some(1)); // a second core may join (fewer than CCT = 2 active)
        let mut p2: TokenPool<u32> = TokenPool::new(spec(10), 1, 4);
        p2.request(0, 0, 8, 0, 0);
        p2.request(0, 1, 8, 0, 1);
        assert_eq!(p2.request(0, 2, 8, 0, 2), None); // a third core would reach CCT
        let mut p3: TokenPool<u32> = TokenPool::new(spec(10), 1, 4);
        p3.request(0, 0, 8, 0, 0);
        p3.request(0, 1, 8, 0, 1);
        assert_eq!(p3.request(0, 0, 8, 0, 2), None); // two cores active: CRCT[2] = 1 per core
        let mut p4: TokenPool<u32> = TokenPool::new(spec(2), 1, 4);
        p4.request(0, 0, 8, 0, 0);
        p4.request(0, 0, 8, 0, 1);
        assert_eq!(p4.request(0, 1, 8, 0, 2), None); // NRCT = 2 in flight on the node
        let mut granted = Vec::new();
        p4.release(0, 0, 1, 1, &mut granted);
        assert_eq!(granted, vec![(2, 1)]);
    }

    #[test]
    fn a_request_granted_at_the_instant_it_asked_did_not_wait() {
        let mut p = pool(1, 0);
        let mut granted = Vec::new();
        assert_eq!(p.request(0, 0, 8, 10, 1), Some(1));
        assert_eq!(p.request(0, 1, 8, 20, 2), None); // parked at 20, the release comes at 20
        p.release(0, 0, 1, 20, &mut granted);
        assert_eq!((granted.as_slice(), p.waits), (&[(2, 1)][..], 0));
        assert_eq!(p.request(0, 0, 8, 20, 3), None); // parked at 20, released at 25: waited
        granted.clear();
        p.release(0, 1, 1, 25, &mut granted);
        assert_eq!((granted.as_slice(), p.waits), (&[(3, 1)][..], 1));
    }

    #[test]
    fn zero_tokens_and_empty_specs_are_refused() {
        let zero = TokenSpec::new(Some(0), 0, vec![]).unwrap_err();
        assert!(zero.problem.contains("at least 1") && zero.key == "throttle.tokens");
        assert!(TokenSpec::new(None, 0, vec![]).is_err());
        let th = |cct| Thresholds { up_to: u64::MAX, cct, nrct: 1, crct: vec![(1, 1)] };
        assert_eq!(TokenSpec::new(None, 0, vec![th(0)]).unwrap_err().key, "throttle.class.0.cct");
    }
}
