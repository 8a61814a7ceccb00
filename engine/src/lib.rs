//! contend's engine: simulates parallel schedules under the LogGOPS model, exactly.
//!
//! - [`time`]: picosecond clock and unit parsing.
//! - [`schedule`]: GOAL reading and writing, compact op storage, collective generators.
//! - [`sim`]: the event queue and the LogGOPS endpoint model.
//! - [`net`]: network topologies, routing and placement of ranks on nodes.
//! - [`map`]: topology-aware mapping: communication graphs, link loads, refinement of a placement.
//! - [`noise`]: OS noise (detours) and how it stretches CPU work.
//! - [`nic`], [`policy`], [`node`]: NIC congestion curves, admission control, the node model.
//! - [`spec_error`]: why a model's spec was refused, with the machine-file key it concerns.
//! - [`record`]: per-message records and timelines, the ground truth for diagnosis.
//! - [`replay`]: traced MPI programs (liballprof, contend traces, OTF2) turned into GOAL schedules.
//! - [`prefetch`]: the cache hint the simulator's hot loops use.

pub mod map;
pub mod net;
pub mod nic;
pub mod node;
pub mod noise;
pub mod policy;
pub mod prefetch;
pub mod record;
pub mod replay;
pub mod schedule;
pub mod sim;
pub mod spec_error;
pub mod time;
pub mod u64_map;
