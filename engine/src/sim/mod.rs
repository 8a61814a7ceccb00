//! The simulator: an event queue and the LogGOPS endpoint model (LogGOPSim v1 semantics).
//!
//! [`simulate`] runs a program under a [`Scenario`] (`scenario`: parameters and the optional
//! models' specs) with [`Options`] (`params`) and answers a [`SimResult`] (`result`). `loggops` is
//! the core; the optional models live beside it in `loggops/` (node, flows, noise, memory), each
//! with its own state, and act on it only through the handle it lends them (`loggops/handle.rs`:
//! schedule, resume, complete). `window` and `parallel` run the
//! events window by window, on one thread or several.

pub mod cpu_scale;
pub mod critical;
pub mod hosts;
pub mod handoff;
pub mod loggops;
pub mod matching;
mod parallel;
pub mod params;
pub mod queue;
pub mod result;
pub mod scenario;
pub mod window;

pub use cpu_scale::CpuScale;
pub use critical::{Activity, CriticalPath, Split, Step};
pub use loggops::{simulate, PROGRESS_EVERY};
pub use params::{Costs, Execution, Options, Params};
pub use result::{Deadlock, Pending, SimResult};
pub use scenario::{Scenario, Stopped};
