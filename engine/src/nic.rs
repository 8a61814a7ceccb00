//! NIC congestion: a node's injection rate as a function of the cores injecting at once and of the
//! messages its NIC holds (docs/models.md, "NIC congestion and admission control").
//!
//! - [`Curve`]: a piecewise-linear factor of one variable, clamped at its ends.
//! - [`NicSpec`]: the concurrency and outstanding curves, optionally per message-size class.
//! - [`NicQueues`]: each node's NIC as one FIFO server whose rate is fixed when a message's service
//!   starts, by the curves at that moment.

use std::collections::VecDeque;

use crate::spec_error::SpecError;
use crate::time::Time;

/// A factor of one variable, given at points `(x, factor)` with x strictly increasing: linear
/// between points, constant before the first and after the last.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    points: Vec<(f64, f64)>,
}

impl Curve {
    /// Checks the points: at least one, x finite, >= 0 and strictly increasing, factors finite and > 0.
    pub fn new(points: Vec<(f64, f64)>) -> Result<Curve, String> {
        if points.is_empty() {
            return Err("a curve needs at least one [x, factor] point".into());
        }
        for (i, &(x, f)) in points.iter().enumerate() {
            if !(x.is_finite() && x >= 0.0 && f.is_finite() && f > 0.0) {
                return Err(format!("point {}: x must be a finite number >= 0 and the factor a finite number > 0, got [{x}, {f}]", i + 1));
            }
            if i > 0 && x <= points[i - 1].0 {
                return Err(format!("point {}: x = {x} must be larger than the previous point's", i + 1));
            }
        }
        Ok(Curve { points })
    }

    /// The factor at `x`, O(log points).
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.points;
        let i = p.partition_point(|&(px, _)| px <= x);
        if i == 0 {
            return p[0].1;
        }
        if i == p.len() {
            return p[i - 1].1;
        }
        let ((x0, y0), (x1, y1)) = (p[i - 1], p[i]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }
}

/// One class of message sizes as given: messages of at most `up_to` bytes (the last class takes
/// every larger message too) and the `[x, factor]` points of its curves.
#[derive(Clone, Debug, PartialEq)]
pub struct NicClass {
    pub up_to: u64,
    /// Factor by cores (ranks of the node) with messages in the NIC.
    pub concurrency: Vec<(f64, f64)>,
    /// Factor by messages in the NIC (queued or in service), node-wide.
    pub outstanding: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
struct SizeClass {
    up_to: u64,
    concurrency: Curve,
    outstanding: Curve,
}

/// The congestion curves of a machine's NICs (the `[nic]` table), valid by construction.
#[derive(Clone, Debug, PartialEq)]
pub struct NicSpec {
    classes: Vec<SizeClass>,
}

impl NicSpec {
    /// Classes in increasing `up_to`; at least one. Errors name `nic.class.<position>.<key>`.
    pub fn new(classes: Vec<NicClass>) -> Result<NicSpec, SpecError> {
        if classes.is_empty() {
            return Err(SpecError::new("nic", "no size class of NIC curves"));
        }
        let mut out: Vec<SizeClass> = Vec::with_capacity(classes.len());
        for (i, c) in classes.into_iter().enumerate() {
            let key = |k: &str| format!("nic.class.{i}.{k}");
            if out.last().is_some_and(|last| c.up_to <= last.up_to) {
                return Err(SpecError::new(key("up_to"), "size classes must be in increasing up_to"));
            }
            let concurrency = Curve::new(c.concurrency).map_err(|e| SpecError::new(key("concurrency"), e))?;
            let outstanding = Curve::new(c.outstanding).map_err(|e| SpecError::new(key("outstanding"), e))?;
            out.push(SizeClass { up_to: c.up_to, concurrency, outstanding });
        }
        Ok(NicSpec { classes: out })
    }

    fn class(&self, size: u64) -> &SizeClass {
        let i = self.classes.partition_point(|c| c.up_to < size);
        &self.classes[i.min(self.classes.len() - 1)]
    }

    /// The factor on the injection rate for a message of `size` bytes while `active` cores have
    /// `outstanding` messages in the NIC: concurrency(active) · outstanding(outstanding).
    pub fn factor(&self, size: u64, active: u32, outstanding: u32) -> f64 {
        let c = self.class(size);
        c.concurrency.at(active as f64) * c.outstanding.at(outstanding as f64)
    }
}

/// The time a NIC at `factor` of its nominal rate takes for work of `nominal` ps (exact at 1).
pub fn stretched(nominal: Time, factor: f64) -> Time {
    if factor == 1.0 {
        nominal
    } else {
        (nominal as f64 / factor).round() as Time
    }
}

/// Every node's NIC: a FIFO of the messages it holds (the front one in service) and, per injector
/// (a rank, or a proxy server), how many of them it put there.
#[derive(Debug)]
pub struct NicQueues {
    queues: Vec<VecDeque<u32>>,
    per_injector: Vec<u32>,
    active: Vec<u32>,
}

impl NicQueues {
    pub fn new(nodes: usize, injectors: usize) -> NicQueues {
        NicQueues { queues: vec![VecDeque::new(); nodes], per_injector: vec![0; injectors], active: vec![0; nodes] }
    }

    /// Appends message `id` of `injector` to `node`'s NIC; true if the NIC was idle (its service
    /// starts now).
    pub fn push(&mut self, node: u32, injector: u32, id: u32) -> bool {
        let q = &mut self.queues[node as usize];
        q.push_back(id);
        let count = &mut self.per_injector[injector as usize];
        *count += 1;
        if *count == 1 {
            self.active[node as usize] += 1;
        }
        q.len() == 1
    }

    /// (active injectors, messages held) of `node`, which its next service sees.
    pub fn load(&self, node: u32) -> (u32, u32) {
        (self.active[node as usize], self.queues[node as usize].len() as u32)
    }

    /// The message in service at `node`, if any.
    pub fn front(&self, node: u32) -> Option<u32> {
        self.queues[node as usize].front().copied()
    }

    /// The message in service at `node` has been injected: removes it.
    pub fn pop(&mut self, node: u32, injector: u32) {
        self.queues[node as usize].pop_front();
        let count = &mut self.per_injector[injector as usize];
        *count -= 1;
        if *count == 0 {
            self.active[node as usize] -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_interpolates_and_clamps() {
        let c = Curve::new(vec![(20.0, 1.0), (32.0, 0.4)]).unwrap();
        assert_eq!(c.at(0.0), 1.0);
        assert_eq!(c.at(20.0), 1.0);
        assert!((c.at(26.0) - 0.7).abs() < 1e-12);
        assert_eq!(c.at(32.0), 0.4);
        assert_eq!(c.at(1000.0), 0.4);
    }

    #[test]
    fn malformed_curves_are_refused() {
        assert!(Curve::new(vec![]).is_err());
        assert!(Curve::new(vec![(1.0, 0.0)]).unwrap_err().contains("factor"));
        assert!(Curve::new(vec![(2.0, 1.0), (2.0, 0.5)]).unwrap_err().contains("larger"));
        assert!(Curve::new(vec![(-1.0, 1.0)]).is_err());
    }

    #[test]
    fn classes_pick_by_size() {
        let flat = NicClass { up_to: 64, concurrency: vec![(0.0, 1.0)], outstanding: vec![(0.0, 1.0)] };
        let half = NicClass { up_to: 4096, concurrency: vec![(0.0, 1.0)], outstanding: vec![(0.0, 0.5)] };
        let n = NicSpec::new(vec![flat, half]).unwrap();
        assert_eq!(n.factor(64, 3, 100), 1.0);
        assert_eq!(n.factor(65, 3, 100), 0.5);
        assert_eq!(n.factor(1 << 20, 3, 100), 0.5);
    }

    #[test]
    fn a_refused_class_names_its_key() {
        let class = |up_to, outstanding| NicClass { up_to, concurrency: vec![(0.0, 1.0)], outstanding };
        let e = NicSpec::new(vec![class(64, vec![(0.0, 1.0)]), class(4096, vec![(1.0, 0.0)])]).unwrap_err();
        assert_eq!((e.key.as_str(), e.problem.starts_with("point 1:")), ("nic.class.1.outstanding", true));
        let e = NicSpec::new(vec![class(64, vec![(0.0, 1.0)]), class(64, vec![(0.0, 1.0)])]).unwrap_err();
        assert_eq!(e.key, "nic.class.1.up_to");
        assert_eq!(NicSpec::new(vec![]).unwrap_err().key, "nic");
    }

    #[test]
    fn queues_count_active_injectors() {
        let mut q = NicQueues::new(1, 3);
        assert!(q.push(0, 0, 10));
        assert!(!q.push(0, 0, 11));
        assert!(!q.push(0, 2, 12));
        assert_eq!(q.load(0), (2, 3));
        q.pop(0, 0);
        assert_eq!((q.load(0), q.front(0)), ((2, 2), Some(11)));
        q.pop(0, 0);
        assert_eq!(q.load(0), (1, 1));
    }
}
