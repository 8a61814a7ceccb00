//! Memory contention caused by network traffic (NiMC, Groves 2016): the memory bandwidth of a node is
//! shared between the ranks' computation and the payload its NIC writes into memory
//! (docs/models.md, "Memory contention (NiMC)").
//!
//! - [`MemorySpec`]: a node's memory bandwidth, its NIC (offload or onload) and the mitigations
//!   (a cap on the incoming write rate, a core reserved for communication), valid by construction
//!   from [`MemoryParams`].
//! - [`MemorySim`]: during a run, each node's incoming writes as busy intervals of its NIC's
//!   write stream, and the calcs running on it, whose ends move later when a write lands during
//!   them. Ends only ever move later (writes only add busy time), which is what lets the LogGOPS
//!   core keep its "a calc completes when it starts" bookkeeping: an operation queued for the old
//!   end finds its CPU busy and waits for the new one. Each running calc keeps its progress at the
//!   node's last write (the past never changes), so a write costs O(running calcs + intervals
//!   ahead), not a walk from each calc's start.

use std::collections::VecDeque;
use std::ops::Deref;

use crate::spec_error::SpecError;
use crate::time::Time;

/// What the node's NIC costs the node's cores per received byte.
#[derive(Clone, Debug, PartialEq)]
pub enum NicKind {
    /// The NIC writes into memory without the CPU: only memory bandwidth is shared.
    Offload,
    /// Packet processing runs on the node's first core (`cpu_per_byte` ps of CPU per received
    /// byte) and pollutes the caches: every calc of the node runs `1 + pollution · W` times slower
    /// while the NIC writes at W GB/s.
    Onload { cpu_per_byte: f64, pollution: f64 },
}

/// The memory side of every node of a machine as given (the `[memory]` table). Bandwidths in bytes
/// per second.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryParams {
    /// Ranks `r` with equal `r / ranks_per_node` share a node (with a network, its placement).
    pub ranks_per_node: u32,
    /// B: what the memory delivers to the cores and the NIC together.
    pub bandwidth: f64,
    /// B_c <= B: the most the node's cores draw together (STREAM triad without network traffic).
    pub compute_bandwidth: f64,
    /// The rate at which the NIC writes incoming payload into memory.
    pub nic_bandwidth: f64,
    /// Mitigation (a): a cap on the node's incoming write rate.
    pub throttle: Option<f64>,
    /// phi in [0, 1): the cores always keep at least phi · B_c (the NIC's writes yield).
    pub floor: f64,
    pub nic: NicKind,
    /// Mitigation (b): one core per node takes the onload processing; the application's work is
    /// spread over the other ranks_per_node - 1 cores.
    pub reserve_core: bool,
}

/// [`MemoryParams`] that passed [`MemorySpec::new`]; reads as its params.
#[derive(Clone, Debug, PartialEq)]
pub struct MemorySpec(MemoryParams);

impl Deref for MemorySpec {
    type Target = MemoryParams;

    fn deref(&self) -> &MemoryParams {
        &self.0
    }
}

impl MemorySpec {
    /// Checks the values; every error names its `[memory]` key.
    pub fn new(p: MemoryParams) -> Result<MemorySpec, SpecError> {
        let refuse = |key: &str, problem: String| Err(SpecError::new(format!("memory.{key}"), problem));
        if p.ranks_per_node == 0 {
            return refuse("ranks_per_node", "must be at least 1".into());
        }
        let bandwidths = [("bandwidth", Some(p.bandwidth)), ("compute_bandwidth", Some(p.compute_bandwidth)), ("nic_bandwidth", Some(p.nic_bandwidth)), ("throttle", p.throttle)];
        for (key, v) in bandwidths {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return refuse(key, format!("must be a finite bandwidth > 0, not {v}"));
            }
        }
        if p.compute_bandwidth > p.bandwidth {
            return refuse("compute_bandwidth", format!("must not exceed bandwidth ({} B/s > {} B/s)", p.compute_bandwidth, p.bandwidth));
        }
        if !(0.0..1.0).contains(&p.floor) {
            return refuse("floor", format!("expected a fraction in [0, 1), got {}", p.floor));
        }
        if p.reserve_core && p.ranks_per_node < 2 {
            return refuse("reserve_core", "needs at least 2 ranks per node".into());
        }
        if let NicKind::Onload { cpu_per_byte, pollution } = p.nic {
            for (key, v) in [("cpu_per_byte", cpu_per_byte), ("pollution", pollution)] {
                if !(v.is_finite() && v >= 0.0) {
                    return refuse(key, format!("must be a finite number >= 0, not {v}"));
                }
            }
            let share = cpu_per_byte * p.write_rate() * 1e-12;
            if share >= 1.0 {
                return refuse("cpu_per_byte", format!("the onload processing would need a whole core or more at the NIC's write rate ({share:.2} cores)"));
            }
        }
        Ok(MemorySpec(p))
    }
}

impl MemoryParams {
    /// W, the node's incoming write rate while its NIC writes (bytes/s):
    /// `min(nic_bandwidth, throttle, B - phi · B_c)`.
    pub fn write_rate(&self) -> f64 {
        let cap = self.throttle.unwrap_or(f64::INFINITY);
        self.nic_bandwidth.min(cap).min(self.bandwidth - self.floor * self.compute_bandwidth)
    }

    /// The cores' bandwidth while the NIC writes at `w` bytes/s: `min(B_c, B - w)`.
    pub fn compute_bandwidth_during(&self, w: f64) -> f64 {
        self.compute_bandwidth.min(self.bandwidth - w)
    }

    /// kappa: the factor on every calc's CPU time (R / (R - 1) with a reserved core, else 1).
    pub fn cpu_stretch(&self) -> f64 {
        if self.reserve_core {
            self.ranks_per_node as f64 / (self.ranks_per_node - 1) as f64
        } else {
            1.0
        }
    }
}

/// What the memory model did during a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryStats {
    /// Payload bytes the NIC of each node wrote into its memory (messages between nodes).
    pub bytes_written: Vec<u64>,
    /// Time the NICs spent writing, summed over nodes.
    pub write_busy: Time,
    /// Time calcs lost to the incoming writes (beyond their duration without any), summed.
    pub calc_delay: Time,
}

/// A running calc whose end moved later: the simulator sets the CPU's clock to `end` (and the
/// timeline span `span`, if recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extension {
    pub rank: u32,
    pub cpu: u8,
    pub end: Time,
    pub span: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Running {
    rank: u32,
    cpu: u8,
    /// The calc's progress is known up to `at`: the fraction `left` of it remains.
    at: Time,
    left: f64,
    /// Durations of the whole calc at the two constant states: NIC idle, NIC writing (ps).
    idle: f64,
    writing: f64,
    end: Time,
    span: Option<u32>,
}

#[derive(Default)]
struct NodeMemory {
    /// Disjoint busy intervals of the NIC's write stream, in time order.
    busy: VecDeque<(Time, Time)>,
    busy_end: Time,
    running: Vec<Running>,
}

/// The memory model's state during a run.
pub struct MemorySim {
    model: MemorySpec,
    node_of: Vec<u32>,
    /// Lowest rank of each node: the core that takes an onload NIC's processing.
    first_rank: Vec<u32>,
    nodes: Vec<NodeMemory>,
    write_ps_per_byte: f64,
    /// Memory time per byte of one rank's calc (its 1/R share of the cores' bandwidth), NIC idle
    /// and NIC writing.
    mem_idle: f64,
    mem_writing: f64,
    /// Slowdown of calcs while the NIC writes (cache pollution), and the share of the first
    /// core taken by onload processing.
    pollution: f64,
    cpu_share: f64,
    kappa: f64,
    extended: Vec<Extension>,
    stats: MemoryStats,
}

impl MemorySim {
    /// `node_of[r]`: the node of rank r.
    pub fn new(model: &MemorySpec, node_of: Vec<u32>) -> MemorySim {
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let mut first_rank = vec![u32::MAX; nodes];
        for (r, &n) in node_of.iter().enumerate() {
            first_rank[n as usize] = first_rank[n as usize].min(r as u32);
        }
        let w = model.write_rate();
        let per_rank = model.ranks_per_node as f64 * 1e12;
        let (pollution, cpu_share) = match model.nic {
            NicKind::Onload { cpu_per_byte, pollution } if !model.reserve_core => (1.0 + pollution * w * 1e-9, cpu_per_byte * w * 1e-12),
            _ => (1.0, 0.0),
        };
        MemorySim {
            write_ps_per_byte: 1e12 / w,
            mem_idle: per_rank / model.compute_bandwidth,
            mem_writing: per_rank / model.compute_bandwidth_during(w),
            pollution,
            cpu_share,
            kappa: model.cpu_stretch(),
            model: model.clone(),
            first_rank,
            nodes: (0..nodes).map(|_| NodeMemory::default()).collect(),
            stats: MemoryStats { bytes_written: vec![0; nodes], ..MemoryStats::default() },
            node_of,
            extended: Vec::new(),
        }
    }

    pub fn model(&self) -> &MemorySpec {
        &self.model
    }

    pub fn node_of(&self, rank: u32) -> u32 {
        self.node_of[rank as usize]
    }

    /// A calc of `cpu_ps` CPU time and `mem` bytes of memory traffic starts at `t` on `rank`'s
    /// CPU `cpu`: returns when it ends under the writes known so far (`span`: its timeline entry).
    pub fn calc(&mut self, rank: u32, cpu: u8, t: Time, cpu_ps: Time, mem: u64, span: Option<u32>) -> Time {
        let d = cpu_ps as f64 * self.kappa;
        let m = mem as f64;
        let idle = d.max(m * self.mem_idle);
        if idle == 0.0 {
            return t;
        }
        let first = self.first_rank[self.node_of[rank as usize] as usize] == rank;
        let cpu_time = if first { d / (1.0 - self.cpu_share) } else { d };
        let writing = self.pollution * cpu_time.max(m * self.mem_writing);
        let node = self.node_of[rank as usize] as usize;
        self.prune(node, t);
        let end = self.finish(node, t, 1.0, idle, writing);
        self.stats.calc_delay += end.saturating_sub(t + idle.round() as Time);
        self.nodes[node].running.push(Running { rank, cpu, at: t, left: 1.0, idle, writing, end, span });
        end
    }

    /// `bytes` of a message between nodes reach `rank` at `t`: the NIC writes them after what it
    /// is writing already. Running calcs of the node whose end moves are left in
    /// [`MemorySim::take_extended`].
    pub fn incoming(&mut self, t: Time, rank: u32, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let node = self.node_of[rank as usize] as usize;
        self.stats.bytes_written[node] += bytes;
        let length = (bytes as f64 * self.write_ps_per_byte).round() as Time;
        if length == 0 {
            return;
        }
        // Bring every running calc's progress up to now (the intervals before now are final), so
        // that the intervals behind can go.
        for i in 0..self.nodes[node].running.len() {
            let c = self.nodes[node].running[i];
            if c.end > t && c.at < t {
                let left = self.progress(node, c.at, c.left, c.idle, c.writing, t);
                let r = &mut self.nodes[node].running[i];
                (r.at, r.left) = (t, left);
            }
        }
        self.prune(node, t);
        let n = &mut self.nodes[node];
        let start = n.busy_end.max(t);
        n.busy_end = start + length;
        self.stats.write_busy += length;
        match n.busy.back_mut() {
            Some(last) if last.1 == start => last.1 = start + length,
            _ => n.busy.push_back((start, start + length)),
        }
        for i in 0..self.nodes[node].running.len() {
            let c = self.nodes[node].running[i];
            if c.end <= t {
                continue;
            }
            let end = self.finish(node, c.at, c.left, c.idle, c.writing).max(c.end);
            if end != c.end {
                self.stats.calc_delay += end - c.end;
                self.nodes[node].running[i].end = end;
                self.extended.push(Extension { rank: c.rank, cpu: c.cpu, end, span: c.span });
            }
        }
    }

    /// The calcs whose end moved since the last call (hand the vector back with
    /// [`MemorySim::give_back`] to reuse its memory).
    pub fn take_extended(&mut self) -> Vec<Extension> {
        std::mem::take(&mut self.extended)
    }

    pub fn give_back(&mut self, mut extended: Vec<Extension>) {
        extended.clear();
        self.extended = extended;
    }

    /// The fraction of a calc (durations `idle`, `writing`) left at `until`, if `left` of it was
    /// left at `from` (clamped at 0): progress advances at 1/idle outside the node's busy
    /// intervals and 1/writing inside.
    fn progress(&self, node: usize, from: Time, mut left: f64, idle: f64, writing: f64, until: Time) -> f64 {
        let mut t = from;
        for &(a, b) in &self.nodes[node].busy {
            if b <= t {
                continue;
            }
            if a >= until {
                break;
            }
            if a > t {
                left -= (a - t) as f64 / idle;
                t = a;
            }
            let b = b.min(until);
            left -= (b - t) as f64 / writing;
            t = b;
        }
        left -= (until - t) as f64 / idle;
        left.max(0.0)
    }

    /// When a calc of durations (`idle`, `writing`) with `left` of it remaining at `start` ends,
    /// walking the node's busy intervals as [`MemorySim::progress`] does.
    fn finish(&self, node: usize, start: Time, mut left: f64, idle: f64, writing: f64) -> Time {
        let mut t = start as f64;
        for &(a, b) in &self.nodes[node].busy {
            if b <= start {
                continue;
            }
            let (a, b) = (a as f64, b as f64);
            if a > t {
                let step = (a - t) / idle;
                if step >= left {
                    break;
                }
                left -= step;
                t = a;
            }
            let step = (b - t) / writing;
            if step >= left {
                return (t + left * writing).round() as Time;
            }
            left -= step;
            t = b;
        }
        (t + left * idle).round() as Time
    }

    /// Forgets finished calcs and the busy intervals no running or later calc can meet.
    fn prune(&mut self, node: usize, now: Time) {
        let n = &mut self.nodes[node];
        n.running.retain(|c| c.end > now);
        let horizon = n.running.iter().map(|c| c.at).min().unwrap_or(now).min(now);
        while n.busy.front().is_some_and(|&(_, b)| b <= horizon) {
            n.busy.pop_front();
        }
    }

    pub fn stats(&self) -> &MemoryStats {
        &self.stats
    }

    pub fn into_stats(self) -> MemoryStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(nic: NicKind) -> MemorySpec {
        MemorySpec::new(params(nic)).unwrap()
    }

    fn params(nic: NicKind) -> MemoryParams {
        MemoryParams {
            ranks_per_node: 1,
            bandwidth: 64e9,
            compute_bandwidth: 64e9,
            nic_bandwidth: 32e9,
            throttle: None,
            floor: 0.0,
            nic,
            reserve_core: false,
        }
    }

    #[test]
    fn a_calc_without_traffic_takes_the_longer_of_cpu_and_memory_time() {
        let mut m = MemorySim::new(&model(NicKind::Offload), vec![0]);
        // 65536 B at 64 GB/s = 1024 ns; the CPU part 1000 ns is hidden under it.
        assert_eq!(m.calc(0, 0, 0, 1_000_000, 65536, None), 1_024_000);
        assert_eq!(m.calc(0, 0, 2_000_000, 3_000_000, 65536, None), 5_000_000);
    }

    #[test]
    fn a_write_during_a_calc_costs_its_bytes_over_the_bandwidth() {
        let mut m = MemorySim::new(&model(NicKind::Offload), vec![0]);
        assert_eq!(m.calc(0, 0, 0, 0, 65536, Some(7)), 1_024_000);
        m.incoming(100_000, 0, 16384);
        let ext = m.take_extended();
        // Write of 16384 B at 32 GB/s: 512 ns at half the bandwidth; the calc loses 16384 / 64 GB/s.
        assert_eq!(ext, vec![Extension { rank: 0, cpu: 0, end: 1_280_000, span: Some(7) }]);
        assert_eq!(m.stats().calc_delay, 256_000);
        assert_eq!(m.stats().write_busy, 512_000);
    }

    #[test]
    fn writes_queue_behind_each_other_and_later_calcs_see_them() {
        let mut m = MemorySim::new(&model(NicKind::Offload), vec![0]);
        m.incoming(0, 0, 16384);
        m.incoming(0, 0, 16384);
        // Busy 0..1024 ns: a pure memory calc of 32768 B runs at 32 GB/s all along.
        assert_eq!(m.calc(0, 0, 0, 0, 32768, None), 1_024_000);
    }

    #[test]
    fn bad_models_are_refused() {
        let refused = |p: MemoryParams| MemorySpec::new(p).unwrap_err().to_string();
        let mut bad = params(NicKind::Offload);
        bad.compute_bandwidth = 65e9;
        assert!(refused(bad).contains("compute_bandwidth"));
        let mut bad = params(NicKind::Offload);
        bad.reserve_core = true;
        assert!(refused(bad).contains("reserve_core"));
        let bad = params(NicKind::Onload { cpu_per_byte: 100.0, pollution: 0.0 });
        assert!(refused(bad).contains("cores"));
    }
}
