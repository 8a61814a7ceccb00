//! Replaying traced MPI programs: trace readers produce a normalized per-rank stream of MPI calls
//! ([`event`]), and the emitter turns the streams of all ranks into a GOAL schedule.
//!
//! A trace reader implements [`TraceSet`]: it knows the rank count and opens one rank's calls at a
//! time as a streaming iterator, so a conversion holds one rank's state, never a whole trace.

pub mod algorithms;
pub mod balance;
pub mod ctrace;
pub mod emit;
pub mod event;
pub mod extrapolate;
pub mod liballprof;

pub use event::{Call, Event, TraceError};

/// One rank's calls in program order, read lazily.
pub type RankCalls = Box<dyn Iterator<Item = Result<Call, TraceError>> + Send>;

/// A traced run: one stream of calls per world rank.
pub trait TraceSet {
    /// Ranks in `MPI_COMM_WORLD`.
    fn num_ranks(&self) -> u32;
    /// The file (or other source) holding `rank`'s calls, as error messages name it.
    fn source(&self, rank: u32) -> String;
    /// Opens `rank`'s calls. May be called more than once per rank (each call restarts the stream).
    fn open(&self, rank: u32) -> Result<RankCalls, TraceError>;
    /// Whether the traces may hold one-sided operations: the converter then reads them once more
    /// first, to give each target its side of them.
    fn has_one_sided(&self) -> bool {
        true
    }
    /// Whether the traced program initialized MPI with `MPI_THREAD_MULTIPLE` (MPICH then runs no
    /// collective through its shared-memory buffers); false when the traces do not say.
    fn threads_multiple(&self) -> bool {
        false
    }
}

/// A boxed trace set is one (readers are chosen at run time, then wrapped, e.g. extrapolated).
impl<T: TraceSet + ?Sized> TraceSet for Box<T> {
    fn num_ranks(&self) -> u32 {
        (**self).num_ranks()
    }
    fn source(&self, rank: u32) -> String {
        (**self).source(rank)
    }
    fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
        (**self).open(rank)
    }
    fn has_one_sided(&self) -> bool {
        (**self).has_one_sided()
    }
    fn threads_multiple(&self) -> bool {
        (**self).threads_multiple()
    }
}

/// Calls already in memory, one vector per rank (`rank N` in messages): how tests and callers that
/// build a run's calls themselves hand them to the converter.
impl TraceSet for Vec<Vec<Call>> {
    fn num_ranks(&self) -> u32 {
        self.len() as u32
    }
    fn source(&self, rank: u32) -> String {
        format!("rank {rank}")
    }
    fn open(&self, rank: u32) -> Result<RankCalls, TraceError> {
        Ok(Box::new(self[rank as usize].clone().into_iter().map(Ok)))
    }
}
