//! Schedules: what each rank does, as a dependency graph of send, recv and calc operations.
//!
//! A schedule reaches the simulator through the [`Program`] trait, implemented both by the compact
//! store of a parsed GOAL file ([`store::GoalProgram`]) and by the collective generators
//! ([`collectives::Collective`]), which compute every operation from its (rank, index) on demand so
//! that memory stays O(ranks).

pub mod cache;
pub mod collectives;
pub mod goal;
pub mod stencil;
pub mod store;
pub mod writer;

/// Wildcard peer or tag (`-1` in GOAL): matches any source or any tag below [`CONTEXT_TAGS`].
pub const ANY: u32 = u32::MAX;

/// Tags from 2^31 up carry traffic of another MPI context (collectives and one-sided operations
/// converted from traces): MPI never matches it with an application's point-to-point receive, so
/// the any-tag wildcard does not match these tags; only the exact tag does.
pub const CONTEXT_TAGS: u32 = 1 << 31;

/// Context tags with this bit set as well carry messages that libcontend-throttle.so does not
/// admit: those MPI makes below the PMPI layer (the collectives the library passes to MPI whole, a
/// get's reply, the synchronization of one-sided epochs). Admission control leaves them alone as
/// the library does; they still leave their node (docs/models.md, "Admission control").
pub const UNADMITTED_TAGS: u32 = CONTEXT_TAGS | 1 << 19;

/// Unadmitted context tags with this bit set as well carry the messages of collectives whose
/// receivers wait spinning, holding their core, instead of yielding it while they poll: MPICH's
/// shared-memory Barrier, Bcast, Reduce and Allreduce. Only shared cores read it (docs/models.md,
/// "Shared cores").
pub const SPINNING_TAGS: u32 = UNADMITTED_TAGS | 1 << 18;

/// Whether a receive of this tag waits spinning (see [`SPINNING_TAGS`]).
#[inline]
pub fn spins(tag: u32) -> bool {
    tag & SPINNING_TAGS == SPINNING_TAGS && tag != ANY
}

/// Whether admission control applies to a message with this tag (see [`UNADMITTED_TAGS`]).
#[inline]
pub fn admitted(tag: u32) -> bool {
    tag & UNADMITTED_TAGS != UNADMITTED_TAGS || tag == ANY
}

/// The three operation kinds. The discriminant order is the order in which operations that become
/// ready together are issued (sends, then receives, then computation), as in LogGOPSim v1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum OpKind {
    Send = 0,
    Recv = 1,
    Calc = 2,
}

/// One operation of one rank. A calc's memory traffic (bytes, the GOAL `mem` extension) is kept in
/// its otherwise unused `peer` (high 32 bits) and `tag` (low 32 bits), so it costs no storage:
/// read it with [`Op::mem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    /// Destination (send) or source (recv, may be [`ANY`]); calc: high half of its memory bytes.
    pub peer: u32,
    /// Bytes for send/recv; duration in schedule time units for calc.
    pub size: u64,
    /// Message tag (may be [`ANY`]); calc: low half of its memory bytes.
    pub tag: u32,
    pub cpu: u8,
    pub nic: u8,
}

impl Op {
    pub fn send(peer: u32, size: u64, tag: u32) -> Op {
        Op { kind: OpKind::Send, peer, size, tag, cpu: 0, nic: 0 }
    }
    pub fn recv(peer: u32, size: u64, tag: u32) -> Op {
        Op { kind: OpKind::Recv, peer, size, tag, cpu: 0, nic: 0 }
    }
    pub fn calc(duration: u64) -> Op {
        Op { kind: OpKind::Calc, peer: 0, size: duration, tag: 0, cpu: 0, nic: 0 }
    }
    /// A calc of `duration` that moves `mem` bytes through memory.
    pub fn calc_mem(duration: u64, mem: u64) -> Op {
        Op { kind: OpKind::Calc, peer: (mem >> 32) as u32, size: duration, tag: mem as u32, cpu: 0, nic: 0 }
    }
    /// Bytes of memory traffic of a calc (0 for send and recv, and for a calc without `mem`).
    #[inline]
    pub fn mem(&self) -> u64 {
        if self.kind == OpKind::Calc {
            (self.peer as u64) << 32 | self.tag as u64
        } else {
            0
        }
    }
}

/// A schedule as the simulator reads it. Operations are addressed by (rank, index in the rank's
/// program order). Dependencies: "A requires B" (A starts after B completes) and "A irequires B"
/// (A starts after B starts). Dependents are listed in the order their statements were written,
/// which decides the issue order of operations that become ready together.
pub trait Program: Sync {
    fn num_ranks(&self) -> u32;
    /// CPUs per host (1 + the largest cpu index used).
    fn num_cpus(&self) -> u32;
    /// NICs per host (1 + the largest nic index used).
    fn num_nics(&self) -> u32;
    fn num_ops(&self, rank: u32) -> u32;
    fn op(&self, rank: u32, index: u32) -> Op;
    /// Number of requires + irequires statements naming `index` as the dependent.
    fn dep_count(&self, rank: u32, index: u32) -> u32;
    /// Appends the operations without dependencies, in program order.
    fn roots(&self, rank: u32, out: &mut Vec<u32>);
    /// Appends the operations that require `index` (wait for its completion).
    fn after_done(&self, rank: u32, index: u32, out: &mut Vec<u32>);
    /// Appends the operations that irequire `index` (wait for its start).
    fn after_start(&self, rank: u32, index: u32, out: &mut Vec<u32>);
    /// An upper bound on the bytes of any message, if known without simulating (at most one pass
    /// over the operations).
    fn max_message_bytes(&self) -> Option<u64> {
        None
    }
    /// Where the operation comes from, for error reports (a GOAL line number), if known.
    fn source_line(&self, _rank: u32, _index: u32) -> Option<u32> {
        None
    }
}
