//! What a simulation is asked: the LogGOPS parameters and the options of a run.

use crate::sim::cpu_scale::CpuScale;
use crate::time::Time;

/// The per-message costs of the LogGOPS model, in picoseconds (G and O per byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_snake_case)]
pub struct Costs {
    pub L: Time,
    pub o: Time,
    pub g: Time,
    pub G: Time,
    pub O: Time,
}

/// LogGOPS parameters in picoseconds (G and O per byte) and the schedule's time unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_snake_case)]
pub struct Params {
    pub L: Time,
    pub o: Time,
    pub g: Time,
    pub G: Time,
    pub O: Time,
    /// Eager/rendezvous threshold: messages of at most S bytes are eager.
    pub S: u64,
    /// Picoseconds per schedule time unit (calc durations): 1000 for nanoseconds.
    pub unit: Time,
    /// Costs of rendezvous messages (more than S bytes) where they differ from the eager ones, as a
    /// real MPI's do when it switches protocol (a fitted machine file has them). `None`: LogGOPSim's
    /// single set of parameters for every message.
    pub rendezvous: Option<Costs>,
}

impl Params {
    /// LogGOPSim's defaults: L=2500 o=1500 g=1000 G=6 O=0 (ns), S=65535.
    pub fn loggopsim_defaults() -> Params {
        Params { L: 2_500_000, o: 1_500_000, g: 1_000_000, G: 6_000, O: 0, S: 65535, unit: 1_000, rendezvous: None }
    }

    /// The costs that apply to a message of `size` bytes.
    #[inline]
    pub fn costs(&self, size: u64) -> Costs {
        match self.rendezvous {
            Some(r) if size > self.S => r,
            _ => Costs { L: self.L, o: self.o, g: self.g, G: self.G, O: self.O },
        }
    }
}

/// What to collect besides finish times.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub records: bool,
    pub timeline: bool,
    /// Which event loop runs; the results are the same either way.
    pub execution: Execution,
    /// Threads that share windowed execution, each taking the events of a block of ranks
    /// (`run_in_parallel`); 0: the machine's cores, where the ranks are many enough to pay for it.
    /// The results are the same for any number.
    pub threads: usize,
    /// Calc durations multiplied by this factor (a faster or slower CPU).
    pub cpu_scale: CpuScale,
    /// Trace the critical path and split the makespan along it (`SimResult::critical_path`);
    /// O(operations) memory, and the run goes in time order.
    pub critical_path: bool,
}

/// The event loop of a simulation: time order, or windows (`crate::sim::window`), which give the
/// same results where they apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Execution {
    /// Windows where they are exact and the ranks are scattered (independent noise); else time
    /// order, which is faster for ranks in step.
    #[default]
    Chosen,
    /// Always time order (to check the windows against).
    TimeOrdered,
    /// Windows wherever they are exact, with or without noise (to check and measure them on
    /// ranks in step too).
    Windowed,
}
