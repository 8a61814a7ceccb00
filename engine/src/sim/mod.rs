//! The simulator: an event queue and the LogGOPS endpoint model (LogGOPSim v1 semantics).

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
