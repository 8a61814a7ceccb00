//! The per-host state of the LogGOPS simulator, one cache line per host.
//!
//! Every event reads and writes its host's clocks (`nexto[cpu]`, `nextgs[nic]`, `nextgr[nic]`: when
//! each CPU and NIC is free), counts a started operation and looks at a match queue (and an arrival
//! that finds its receiver busy, at the receiver's wait list). Kept apart these cost several cache
//! misses per event once noise has pulled the ranks apart and
//! consecutive events belong to random hosts; kept together, one (which `Sim` prefetches). Hosts
//! with more CPUs and NICs than fit keep their other clocks in a second array.

use std::ops::{Index, IndexMut};

use crate::noise::FreeSpan;
use crate::prefetch::prefetch;
use crate::sim::matching::{Lists, EMPTY};
use crate::time::Time;

/// Clocks kept in a host's own record: one CPU and one NIC need 3 (more go to a second array).
const INLINE_CLOCKS: usize = 3;

/// `Host::waiting` of a host without a wait list.
pub const NO_WAITS: u32 = u32::MAX;

/// What events touch of one host.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Host {
    clocks: [Time; INLINE_CLOCKS],
    /// Operations started so far.
    pub started: u32,
    /// Its posted-receive and unexpected-message queues (`crate::sim::matching`).
    pub queues: Lists,
    /// Slot of the wait list of its CPU 0 and NIC 0 (arrivals waiting for them), or NO_WAITS.
    pub waiting: u32,
    /// Under noise: a stretch of its time known to hold no detour (`crate::noise::FreeSpan`).
    pub noise_free: FreeSpan,
}

/// One clock of one host: `nexto[cpu]` is index `cpu`, `nextgs[nic]` is `cpus + nic`, `nextgr[nic]`
/// is `cpus + nics + nic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    pub host: u32,
    pub index: u32,
}

/// Every host's state, all clocks 0 and queues empty to begin with.
pub struct Hosts {
    hosts: Vec<Host>,
    /// Clocks past INLINE_CLOCKS, `more` per host (none for most schedules).
    more_clocks: Vec<Time>,
    more: usize,
}

impl Hosts {
    pub fn new(hosts: usize, clocks_per_host: usize) -> Hosts {
        let more = clocks_per_host.saturating_sub(INLINE_CLOCKS);
        let empty = Host { clocks: [0; INLINE_CLOCKS], started: 0, queues: EMPTY, waiting: NO_WAITS, noise_free: FreeSpan::default() };
        Hosts { hosts: vec![empty; hosts], more_clocks: vec![0; hosts * more], more }
    }

    #[inline]
    pub fn get(&self, h: u32) -> &Host {
        &self.hosts[h as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, h: u32) -> &mut Host {
        &mut self.hosts[h as usize]
    }

    /// Starts loading host `h`'s record (a hint; nothing for a host out of range).
    #[inline]
    pub fn prefetch(&self, h: u32) {
        if let Some(host) = self.hosts.get(h as usize) {
            prefetch(host);
        }
    }
}

impl Index<Clock> for Hosts {
    type Output = Time;

    #[inline]
    fn index(&self, c: Clock) -> &Time {
        let i = c.index as usize;
        if i < INLINE_CLOCKS {
            &self.hosts[c.host as usize].clocks[i]
        } else {
            &self.more_clocks[c.host as usize * self.more + i - INLINE_CLOCKS]
        }
    }
}

impl IndexMut<Clock> for Hosts {
    #[inline]
    fn index_mut(&mut self, c: Clock) -> &mut Time {
        let i = c.index as usize;
        if i < INLINE_CLOCKS {
            &mut self.hosts[c.host as usize].clocks[i]
        } else {
            &mut self.more_clocks[c.host as usize * self.more + i - INLINE_CLOCKS]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_one_cache_line_and_clocks_past_it_are_kept_apart() {
        assert_eq!(std::mem::size_of::<Host>(), 64);
        // 4 CPUs and 2 NICs: 8 clocks per host, 5 of them outside the record.
        let mut hosts = Hosts::new(3, 8);
        for h in 0..3 {
            for i in 0..8 {
                hosts[Clock { host: h, index: i }] = (10 * h + i) as Time;
            }
        }
        for h in 0..3 {
            for i in 0..8 {
                assert_eq!(hosts[Clock { host: h, index: i }], (10 * h + i) as Time);
            }
        }
        assert_eq!(hosts.more_clocks.len(), 15);
    }
}
