//! Flow-level link sharing: max-min fair rates for the messages crossing a network.
//!
//! Each message between nodes is a flow of `bytes` over a path of directed links. At any moment every
//! flow gets its max-min fair rate (progressive filling: the most constrained link fixes the rate of
//! its flows, which are then removed, and so on). Rates change only when a flow starts or ends; the
//! owner calls [`FlowNet::settle`] before a change to advance every flow's remaining bytes, and
//! [`FlowNet::reallocate`] after the changes of one instant to get the new rates. Per-link statistics
//! (bytes carried, busy time, peak concurrent flows) are kept as flows come and go.
//!
//! Links may be token buckets (tc's tbf, a shaper): such a link carries up to its peak rate while its
//! bucket holds tokens and its sustained rate once the bucket is empty; the bucket fills at the
//! sustained rate less what the link carries, up to its depth. A bucket that empties changes the
//! rates between flow starts and ends: [`FlowNet::next_bucket_empty`] says when.

use crate::time::Time;

/// A flow's handle (index into the flow table; reused after the flow ends).
pub type FlowId = u32;

#[derive(Clone, Debug, Default)]
struct Flow {
    /// Range of this flow's links in `FlowNet::paths`.
    path_start: u32,
    path_len: u32,
    remaining: f64,
    /// Bytes per picosecond.
    rate: f64,
    active: bool,
}

/// Per-link totals over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    pub bytes: Vec<u64>,
    /// Picoseconds during which at least one flow crossed the link.
    pub busy: Vec<Time>,
    pub peak_flows: Vec<u32>,
}

/// The links' token buckets (all links have one, of the same depth).
struct Buckets {
    /// Bytes per picosecond each link carries once its bucket is empty (`FlowNet::capacity` is its peak).
    sustained: Vec<f64>,
    /// Bytes a full bucket holds.
    depth: f64,
    tokens: Vec<f64>,
    /// Bytes per picosecond through each link at the current rates.
    used: Vec<f64>,
    /// When the first bucket empties at the current rates.
    empties: Option<Time>,
}

/// Tokens below this many bytes count as none: the fluid clock rounds to picoseconds.
const NO_TOKENS: f64 = 1e-6;
/// A link drains its bucket when it carries more than its sustained rate by this fraction of it:
/// progressive filling's sums round, and a link that carries exactly its sustained rate may come
/// out a few ulps above it, which would empty its bucket in some 10^22 ps.
const DRAINS: f64 = 1e-9;

impl Buckets {
    /// The rate link `l` offers now.
    #[inline]
    fn capacity(&self, l: usize, peak: f64) -> f64 {
        if self.tokens[l] > NO_TOKENS { peak } else { self.sustained[l] }
    }
}

pub struct FlowNet {
    /// Capacity of each link in bytes per picosecond (with token buckets: its peak).
    capacity: Vec<f64>,
    buckets: Option<Buckets>,
    flows: Vec<Flow>,
    free: Vec<FlowId>,
    paths: Vec<u32>,
    /// Active flows on each link (`link_flows[l].len()`, kept as a plain count for routing).
    on_link: Vec<u32>,
    link_flows: Vec<Vec<FlowId>>,
    /// Time up to which remaining bytes are accounted.
    now: Time,
    active: Vec<FlowId>,
    stats: LinkStats,
    /// Scratch for progressive filling.
    left: Vec<f64>,
    unfixed: Vec<u32>,
    fixed: Vec<bool>,
    heap: std::collections::BinaryHeap<Share>,
}

/// A link's equal share among its unfixed flows, ordered smallest first for the heap.
#[derive(Clone, Copy, PartialEq)]
struct Share {
    share: f64,
    link: u32,
}

impl Eq for Share {}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap. Ties by link id keep the order deterministic.
        other.share.total_cmp(&self.share).then(other.link.cmp(&self.link))
    }
}

impl FlowNet {
    /// `capacity[l]`: bytes per picosecond of link l (all positive).
    pub fn new(capacity: Vec<f64>) -> FlowNet {
        let n = capacity.len();
        FlowNet {
            capacity,
            buckets: None,
            flows: Vec::new(),
            free: Vec::new(),
            paths: Vec::new(),
            on_link: vec![0; n],
            link_flows: vec![Vec::new(); n],
            now: 0,
            active: Vec::new(),
            stats: LinkStats { bytes: vec![0; n], busy: vec![0; n], peak_flows: vec![0; n] },
            left: vec![0.0; n],
            unfixed: vec![0; n],
            fixed: Vec::new(),
            heap: std::collections::BinaryHeap::new(),
        }
    }

    /// Links that are token buckets of `depth` bytes, full at the start: `capacity` (as given to
    /// [`FlowNet::new`]) is each link's peak rate, `sustained` its rate once the bucket is empty (at
    /// most the peak).
    pub fn with_buckets(mut self, sustained: Vec<f64>, depth: u64) -> FlowNet {
        let n = self.capacity.len();
        assert_eq!(sustained.len(), n, "a sustained rate per link");
        let depth = depth as f64;
        self.buckets = Some(Buckets { sustained, depth, tokens: vec![depth; n], used: vec![0.0; n], empties: None });
        self
    }

    /// When a link's bucket runs out at the current rates (the rates must then be reallocated:
    /// [`FlowNet::settle`] to that time, then [`FlowNet::reallocate`]); None without buckets or
    /// while none is draining.
    pub fn next_bucket_empty(&self) -> Option<Time> {
        self.buckets.as_ref().and_then(|b| b.empties)
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// The time up to which remaining bytes are accounted.
    pub fn now(&self) -> Time {
        self.now
    }

    pub fn active_flows(&self) -> usize {
        self.active.len()
    }

    /// Advances every active flow to time `t` at its current rate (and the links' busy time).
    pub fn settle(&mut self, t: Time) {
        debug_assert!(t >= self.now);
        let dt = (t - self.now) as f64;
        if dt > 0.0 {
            for &f in &self.active {
                let flow = &mut self.flows[f as usize];
                flow.remaining = (flow.remaining - flow.rate * dt).max(0.0);
            }
            for (l, &n) in self.on_link.iter().enumerate() {
                if n > 0 {
                    self.stats.busy[l] += t - self.now;
                }
            }
            if let Some(b) = &mut self.buckets {
                for l in 0..b.tokens.len() {
                    b.tokens[l] = (b.tokens[l] + (b.sustained[l] - b.used[l]) * dt).clamp(0.0, b.depth);
                }
            }
        }
        self.now = t;
    }

    /// Starts a flow of `bytes` over `path` at the current time; call [`reallocate`] before asking
    /// for completion times.
    pub fn start(&mut self, path: &[u32], bytes: u64) -> FlowId {
        let id = self.free.pop().unwrap_or_else(|| {
            self.flows.push(Flow::default());
            self.flows.len() as FlowId - 1
        });
        let path_start = self.paths.len() as u32;
        self.paths.extend_from_slice(path);
        for &l in path {
            let l = l as usize;
            self.on_link[l] += 1;
            self.link_flows[l].push(id);
            self.stats.bytes[l] += bytes;
            self.stats.peak_flows[l] = self.stats.peak_flows[l].max(self.on_link[l]);
        }
        self.flows[id as usize] = Flow { path_start, path_len: path.len() as u32, remaining: bytes as f64, rate: 0.0, active: true };
        self.active.push(id);
        id
    }

    /// Ends a flow (finished or not) at the current time.
    pub fn finish(&mut self, id: FlowId) {
        let f = &mut self.flows[id as usize];
        debug_assert!(f.active);
        f.active = false;
        let (s, n) = (f.path_start as usize, f.path_len as usize);
        for k in s..s + n {
            let l = self.paths[k] as usize;
            self.on_link[l] -= 1;
            let flows = &mut self.link_flows[l];
            let at = flows.iter().position(|&x| x == id).expect("flow on its link");
            flows.swap_remove(at);
        }
        let pos = self.active.iter().position(|&a| a == id).expect("active flow");
        self.active.swap_remove(pos);
        self.free.push(id);
        if self.active.is_empty() {
            self.paths.clear();
        }
    }

    /// Active flows on each link (what adaptive routing looks at).
    pub fn load(&self) -> &[u32] {
        &self.on_link
    }

    /// Max-min fair rates for all active flows (progressive filling); appends to `changed` the
    /// flows whose rate changed. A heap holds each busy link's equal share among its unfixed flows;
    /// the smallest share fixes the rate of that link's unfixed flows, which leave every link of
    /// their path (raising, never lowering, those links' shares, so stale heap entries are simply
    /// re-pushed when popped). O(total path length x log links).
    pub fn reallocate(&mut self, changed: &mut Vec<FlowId>) {
        self.heap.clear();
        for (l, flows) in self.link_flows.iter().enumerate() {
            if !flows.is_empty() {
                let capacity = self.buckets.as_ref().map_or(self.capacity[l], |b| b.capacity(l, self.capacity[l]));
                self.left[l] = capacity;
                self.unfixed[l] = flows.len() as u32;
                self.heap.push(Share { share: capacity / flows.len() as f64, link: l as u32 });
            }
        }
        if self.fixed.len() < self.flows.len() {
            self.fixed.resize(self.flows.len(), false);
        }
        for &f in &self.active {
            self.fixed[f as usize] = false;
        }
        while let Some(Share { share, link }) = self.heap.pop() {
            let l = link as usize;
            if self.unfixed[l] == 0 {
                continue;
            }
            let current = self.left[l] / self.unfixed[l] as f64;
            if current > share {
                self.heap.push(Share { share: current, link });
                continue;
            }
            let rate = current.max(0.0);
            for k in 0..self.link_flows[l].len() {
                let f = self.link_flows[l][k];
                if self.fixed[f as usize] {
                    continue;
                }
                self.fixed[f as usize] = true;
                let flow = &mut self.flows[f as usize];
                if flow.rate != rate {
                    flow.rate = rate;
                    changed.push(f);
                }
                let (s, n) = (flow.path_start as usize, flow.path_len as usize);
                for j in s..s + n {
                    let m = self.paths[j] as usize;
                    self.left[m] -= rate;
                    self.unfixed[m] -= 1;
                }
            }
        }
        self.drain_buckets();
    }

    /// The links' rates under the new shares (what progressive filling left of each busy link's
    /// capacity is what it does not carry), and when the first draining bucket runs out.
    fn drain_buckets(&mut self) {
        let Some(b) = &mut self.buckets else { return };
        for (l, flows) in self.link_flows.iter().enumerate() {
            b.used[l] = if flows.is_empty() { 0.0 } else { (b.capacity(l, self.capacity[l]) - self.left[l]).max(0.0) };
        }
        b.empties = (0..b.tokens.len())
            .filter(|&l| b.tokens[l] > NO_TOKENS && b.used[l] > b.sustained[l] * (1.0 + DRAINS))
            .map(|l| self.now.saturating_add((b.tokens[l] / (b.used[l] - b.sustained[l])).ceil() as Time))
            .min();
    }

    /// Current rate of a flow in bytes per picosecond.
    pub fn rate(&self, id: FlowId) -> f64 {
        self.flows[id as usize].rate
    }

    /// When the flow will have sent its last byte at its current rate (rounded up to a picosecond).
    pub fn completion(&self, id: FlowId) -> Time {
        let f = &self.flows[id as usize];
        if f.remaining <= 0.0 {
            return self.now;
        }
        // Saturating: a rate of 0 (a link with nothing left) never completes, not before now.
        self.now.saturating_add((f.remaining / f.rate).ceil() as Time)
    }

    /// The active flows, for rescheduling after a reallocation.
    pub fn active(&self) -> &[FlowId] {
        &self.active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs flows that all start at 0 to completion; returns each one's finish time.
    fn run(capacity: Vec<f64>, flows: &[(Vec<u32>, u64)]) -> Vec<Time> {
        let mut net = FlowNet::new(capacity);
        let ids: Vec<FlowId> = flows.iter().map(|(p, b)| net.start(p, *b)).collect();
        let mut done = vec![0; flows.len()];
        let mut left: Vec<usize> = (0..flows.len()).collect();
        let mut changed = Vec::new();
        net.reallocate(&mut changed);
        while !left.is_empty() {
            let (k, t) = left.iter().enumerate().map(|(k, &i)| (k, net.completion(ids[i]))).min_by_key(|&(_, t)| t).unwrap();
            net.settle(t);
            let i = left.swap_remove(k);
            done[i] = t;
            net.finish(ids[i]);
            net.reallocate(&mut changed);
        }
        done
    }

    #[test]
    fn n_flows_into_one_link_share_it_equally() {
        // Link 0 carries 1 byte/ps; 4 flows of 1000 bytes all cross it: each gets 1/4.
        let flows: Vec<(Vec<u32>, u64)> = (1..=4).map(|i| (vec![i, 0], 1000)).collect();
        let mut cap = vec![1.0; 5];
        cap[0] = 1.0;
        let mut net = FlowNet::new(cap.clone());
        for (p, b) in &flows {
            net.start(p, *b);
        }
        let mut changed = Vec::new();
        net.reallocate(&mut changed);
        assert_eq!(changed.len(), 4);
        for &f in net.active() {
            assert!((net.rate(f) - 0.25).abs() < 1e-12);
        }
        assert_eq!(run(cap, &flows), vec![4000; 4]);
    }

    #[test]
    fn parking_lot_gets_max_min_shares() {
        // Links 0,1,2 of capacity 1. Flow A crosses all three; B uses link 0, C link 1, D and E link 2.
        // Max-min: link 2 has 3 flows -> A, D, E get 1/3; then B and C get 2/3 each.
        let mut net = FlowNet::new(vec![1.0; 3]);
        let a = net.start(&[0, 1, 2], 1 << 20);
        let b = net.start(&[0], 1 << 20);
        let c = net.start(&[1], 1 << 20);
        let d = net.start(&[2], 1 << 20);
        let e = net.start(&[2], 1 << 20);
        net.reallocate(&mut Vec::new());
        for (f, want) in [(a, 1.0 / 3.0), (b, 2.0 / 3.0), (c, 2.0 / 3.0), (d, 1.0 / 3.0), (e, 1.0 / 3.0)] {
            assert!((net.rate(f) - want).abs() < 1e-12, "{f}: {} vs {want}", net.rate(f));
        }
    }

    #[test]
    fn rates_rise_when_a_flow_leaves() {
        // Two flows share a link of 1 byte/ps: 1000 and 3000 bytes. The short one ends at 2000 ps;
        // the long one then has 2000 bytes left at full rate: ends at 4000 ps.
        assert_eq!(run(vec![1.0], &[(vec![0], 1000), (vec![0], 3000)]), vec![2000, 4000]);
    }

    /// Settles to the earlier of the flow's completion and a bucket running out until the flow is done;
    /// returns when it was.
    fn finish_with_buckets(net: &mut FlowNet, id: FlowId) -> Time {
        loop {
            net.reallocate(&mut Vec::new());
            let done = net.completion(id);
            match net.next_bucket_empty() {
                Some(te) if te < done => net.settle(te),
                _ => {
                    net.settle(done);
                    net.finish(id);
                    net.reallocate(&mut Vec::new());
                    return done;
                }
            }
        }
    }

    #[test]
    fn a_token_bucket_link_runs_at_its_peak_until_the_bucket_is_empty_and_refills_while_idle() {
        // Peak 2 bytes/ps, sustained 1, a bucket of 1000 bytes: at the peak the bucket drains at
        // 1 byte/ps, so it empties after 1000 ps and 2000 bytes; the other 3000 go at 1 byte/ps.
        let mut net = FlowNet::new(vec![2.0]).with_buckets(vec![1.0], 1000);
        let a = net.start(&[0], 5000);
        assert_eq!(finish_with_buckets(&mut net, a), 4000);
        // Idle for 500 ps: 500 tokens. The next 2000 bytes go at the peak for 500 ps (1000 bytes),
        // then at 1 byte/ps: done 1500 ps after they start.
        net.settle(4500);
        let b = net.start(&[0], 2000);
        assert_eq!(finish_with_buckets(&mut net, b), 6000);
        // Idle long enough to fill (no more than the depth): 1500 bytes pass at the peak alone.
        net.settle(20_000);
        let c = net.start(&[0], 1500);
        assert_eq!(finish_with_buckets(&mut net, c), 20_750);
    }

    #[test]
    fn a_bucket_carrying_its_sustained_rate_give_or_take_rounding_does_not_drain() {
        // Link 0 (a bucket: peak 2, sustained 0.3) carries flows held to 0.1 and 0.2 by links 1 and
        // 2: 0.1 + 0.2 rounds to 0.30000000000000004, a few ulps above 0.3. Its bucket would empty in
        // 10^22 ps, past the end of time (it once wrapped around to before now, and the simulation
        // spun there).
        let mut net = FlowNet::new(vec![2.0, 0.1, 0.2]).with_buckets(vec![0.3, 0.1, 0.2], 1_000_000);
        net.settle(7);
        let (a, b) = (net.start(&[1, 0], 1000), net.start(&[2, 0], 1000));
        net.reallocate(&mut Vec::new());
        assert!(net.rate(a) + net.rate(b) > 0.3, "the case needs the rounding");
        assert_eq!(net.next_bucket_empty(), None);
        assert_eq!((net.completion(a), net.completion(b)), (10_007, 5_007));
    }

    #[test]
    fn a_bucket_that_is_not_the_bottleneck_does_not_drain() {
        // Link 0 (peak 2, sustained 1) in series with link 1 (peak and sustained 0.5): the flow runs
        // at 0.5, below link 0's sustained rate, so neither bucket drains.
        let mut net = FlowNet::new(vec![2.0, 0.5]).with_buckets(vec![1.0, 0.5], 1000);
        let a = net.start(&[0, 1], 1000);
        net.reallocate(&mut Vec::new());
        assert_eq!(net.next_bucket_empty(), None, "0.5 byte/ps drains neither bucket");
        assert_eq!(finish_with_buckets(&mut net, a), 2000);
    }

    #[test]
    fn link_statistics() {
        let mut net = FlowNet::new(vec![1.0, 1.0]);
        let a = net.start(&[0, 1], 100);
        let b = net.start(&[0], 50);
        net.reallocate(&mut Vec::new());
        net.settle(100);
        net.finish(b);
        net.reallocate(&mut Vec::new());
        net.settle(150);
        net.finish(a);
        let s = net.stats();
        assert_eq!(s.bytes, vec![150, 100]);
        assert_eq!(s.peak_flows, vec![2, 1]);
        assert_eq!(s.busy, vec![150, 150]);
    }
}
