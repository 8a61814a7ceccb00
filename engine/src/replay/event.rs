//! The normalized MPI call model: what one rank of a traced program did, call by call.
//!
//! Every trace reader (liballprof text traces, contend's own `rank-NNNNN.ctrace` files, OTF2)
//! turns its format into a stream of [`Call`]s per rank, in program order; the emitter
//! ([`super::emit`]) turns those streams into a GOAL schedule. The model is the contract between
//! the two: readers resolve everything format-specific (datatype sizes, communicator-relative peers,
//! clock units) so that the emitter sees only world ranks, bytes and nanoseconds.
//!
//! Conventions used throughout:
//! - **Ranks** named as peers (send destinations, receive sources, one-sided targets) are *world*
//!   ranks (rank in `MPI_COMM_WORLD`). Calls addressed to `MPI_PROC_NULL` are not communication:
//!   readers report them as [`Event::Other`].
//! - **Communicators** ([`CommId`]) and **windows** ([`WinId`]) are ids local to the rank: the same
//!   communicator may have different ids on different ranks (handles are pointers in some MPIs).
//!   Id [`WORLD`] is always `MPI_COMM_WORLD`; every other id must be introduced by a
//!   [`Event::CommCreate`] on that rank before it is used (an id may be reused after
//!   [`Event::CommFree`]). Collective roots are ranks *in the communicator*.
//! - **Requests** ([`ReqId`]) are ids local to the rank naming a nonblocking operation from its
//!   start call to the completion call that completed it; an id may be reused afterwards.
//! - **Bytes** are message payload sizes (count times datatype size), never element counts.
//! - **Tags** are application tags; `None` is `MPI_ANY_TAG`.

/// A rank-local communicator id. See the module conventions.
pub type CommId = u64;
/// A rank-local one-sided window id.
pub type WinId = u64;
/// A rank-local request id (a nonblocking operation between its start and its completion).
pub type ReqId = u64;
/// The id of `MPI_COMM_WORLD` on every rank.
pub const WORLD: CommId = 0;

/// One MPI call of one rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Entry time of the call in ns on the rank's own clock. Only differences between calls of the
    /// same rank are used, so clocks of different ranks need not agree.
    pub start: u64,
    /// Exit time in ns (>= `start`).
    pub end: u64,
    /// Where the call is in its trace (line number, or record number for binary traces), for
    /// error messages; 0 when unknown.
    pub line: u64,
    pub event: Event,
}

/// What a call did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A send (`MPI_Send`, `Ssend`, `Rsend`, `Bsend` and their `I` forms). Blocking when `req` is
    /// `None`: the call returns when the send buffer may be reused, and a synchronous send
    /// ([`SendMode::Synchronous`]) only once the receive has started.
    Send(Send),
    /// A receive (`MPI_Recv`, `MPI_Irecv`). Blocking when `req` is `None`.
    Recv(Recv),
    /// `MPI_Sendrecv` (and `Sendrecv_replace`): a send and a receive started together, both
    /// complete when the call returns. Their `req` fields are `None`.
    SendRecv(Send, Recv),
    /// A completion call (`MPI_Wait`, `Waitall`, `Waitany`, `Waitsome`, `Test`, `Testall`,
    /// `Testany`, `Testsome`) listing the requests it completed, in any order. A test that
    /// completed nothing lists none (it is then only time spent in MPI). Requests not listed stay
    /// pending.
    Complete(Vec<ReqId>),
    /// A collective operation on a communicator, blocking or (with `req`) nonblocking.
    Collective(Collective),
    /// A new communicator (`MPI_Comm_dup`, `Comm_split`, `Comm_create`, `Intercomm_merge`, ...):
    /// `members` are the world ranks of its members in communicator-rank order (this rank is one
    /// of them). The creating call's own synchronization is not modelled (it is time in MPI).
    CommCreate { comm: CommId, members: Vec<u32> },
    /// `MPI_Comm_free`: the id may be reused by a later [`Event::CommCreate`].
    CommFree { comm: CommId },
    /// A window for one-sided communication over the members of `comm` (`MPI_Win_create`,
    /// `Win_allocate`, ...). One-sided targets are resolved to world ranks by the reader.
    WinCreate { win: WinId, comm: CommId },
    /// `MPI_Win_free`.
    WinFree { win: WinId },
    /// A one-sided data movement (`MPI_Put`, `Get`, `Accumulate`, ... and their `R` forms when
    /// `req` is set). It completes at the target only at the next synchronization that covers it
    /// (fence, unlock, flush, complete), or at the completion of `req`.
    Rma(Rma),
    /// A one-sided synchronization call on a window.
    RmaSync { win: WinId, sync: RmaSync },
    /// Any other call (`MPI_Comm_rank`, `Probe`, `Init`, `Finalize`, calls to `MPI_PROC_NULL`,
    /// calls the reader does not model): no communication, its duration is time spent on the CPU.
    Other,
    /// A communicating call the reader cannot convert (the reason says why, e.g. a collective on a
    /// communicator the trace does not describe): treated as [`Event::Other`], and the converter
    /// warns once per reason.
    Skipped(&'static str),
}

/// How a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// `MPI_Send`/`Isend`: buffered or synchronous as the MPI library decides by size.
    Standard,
    /// `MPI_Ssend`/`Issend`: completes only once the matching receive has started.
    Synchronous,
    /// `MPI_Rsend`/`Irsend`: the receive is known to be posted already.
    Ready,
    /// `MPI_Bsend`/`Ibsend`: copied into a user buffer, completes locally.
    Buffered,
}

/// A point-to-point send.
#[derive(Clone, Debug, PartialEq)]
pub struct Send {
    /// Destination world rank.
    pub dest: u32,
    pub bytes: u64,
    pub tag: u32,
    /// The communicator the message travels on.
    pub comm: CommId,
    pub mode: SendMode,
    /// The request of a nonblocking send; `None` for a blocking one.
    pub req: Option<ReqId>,
}

/// A point-to-point receive.
#[derive(Clone, Debug, PartialEq)]
pub struct Recv {
    /// Source world rank as posted; `None` is `MPI_ANY_SOURCE`.
    pub source: Option<u32>,
    /// The world rank whose message it actually received, when the trace knows (from the status).
    pub matched: Option<u32>,
    /// Bytes posted (the buffer's size); the message may be shorter.
    pub bytes: u64,
    /// Tag as posted; `None` is `MPI_ANY_TAG`.
    pub tag: Option<u32>,
    /// The tag actually received, when the trace knows.
    pub matched_tag: Option<u32>,
    pub comm: CommId,
    /// The request of a nonblocking receive; `None` for a blocking one.
    pub req: Option<ReqId>,
}

/// Collective operations, blocking or nonblocking (the `I` forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollKind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatter,
    ReduceScatterBlock,
    Scan,
    Exscan,
}

/// A collective call of this rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    pub kind: CollKind,
    pub comm: CommId,
    /// Root as a rank of `comm` (bcast, reduce, gather(v), scatter(v)); `None` otherwise.
    pub root: Option<u32>,
    /// Bytes this rank contributes: the message of a bcast, the vector of a reduce, allreduce,
    /// scan and reduce-scatter, this rank's block of a gather or allgather, one block (per
    /// destination) of a scatter or alltoall. 0 for a barrier.
    pub bytes: u64,
    /// The v-variants' per-peer sizes as this rank knows them, indexed by rank in `comm`: bytes
    /// this rank sends to each member (scatterv at the root, alltoallv) and bytes it receives from
    /// each (gatherv at the root, allgatherv, alltoallv, reduce-scatter's block per member).
    /// Empty where not needed.
    pub send_counts: Vec<u64>,
    pub recv_counts: Vec<u64>,
    /// The request of a nonblocking collective; `None` for a blocking one.
    pub req: Option<ReqId>,
}

/// One-sided data movements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmaOp {
    /// Data moves from this rank to the target.
    Put,
    /// Data moves from the target to this rank: a request, then the reply carrying the data.
    Get,
    /// Data moves to the target and is combined there.
    Accumulate,
    /// `Get_accumulate`, `Fetch_and_op`, `Compare_and_swap`: data goes to the target and the old
    /// contents come back (`bytes` each way).
    GetAccumulate,
}

/// A one-sided operation of this rank (the origin).
#[derive(Clone, Debug, PartialEq)]
pub struct Rma {
    pub op: RmaOp,
    pub win: WinId,
    /// Target world rank.
    pub target: u32,
    /// Bytes moved (each way for [`RmaOp::GetAccumulate`]).
    pub bytes: u64,
    /// Request of `MPI_Rput`, `Rget`, ...: completing it completes the operation at the origin.
    pub req: Option<ReqId>,
    /// MPI does it in place: the target's memory is mapped at the origin (a window MPI allocated,
    /// both on one host), so the origin's loads and stores are the whole operation, no message.
    pub in_place: bool,
}

/// One-sided synchronization. Targets are world ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum RmaSync {
    /// `MPI_Win_fence`: collective over the window's group; every operation issued before it, by
    /// any member, is complete at its target after it.
    Fence,
    /// `MPI_Win_lock` (shared or exclusive): opens a passive-target epoch on `target`.
    Lock { target: u32, exclusive: bool },
    /// `MPI_Win_unlock`: operations on `target` of the epoch are complete at the target.
    Unlock { target: u32 },
    /// `MPI_Win_lock_all`.
    LockAll,
    /// `MPI_Win_unlock_all`: operations on every target complete.
    UnlockAll,
    /// `MPI_Win_flush`: operations on `target` complete at the target.
    Flush { target: u32 },
    /// `MPI_Win_flush_all`.
    FlushAll,
    /// `MPI_Win_flush_local`: operations on `target` complete at the origin (buffers reusable).
    FlushLocal { target: u32 },
    /// `MPI_Win_flush_local_all`.
    FlushLocalAll,
    /// `MPI_Win_post` to the origins in `group` (world ranks): exposure epoch opens.
    Post { group: Vec<u32> },
    /// `MPI_Win_start` towards the targets in `group`: waits for their post.
    Start { group: Vec<u32> },
    /// `MPI_Win_complete`: ends the access epoch; its operations complete at their targets.
    Complete,
    /// `MPI_Win_wait`: ends the exposure epoch once every origin of the post completed.
    Wait,
}

/// A trace problem located in a file: shown as `file:line: problem`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    /// 0 when the problem is not on one line (e.g. a missing file).
    pub line: u64,
    pub msg: String,
}

impl TraceError {
    pub fn new(file: impl Into<String>, line: u64, msg: impl Into<String>) -> TraceError {
        TraceError { file: file.into(), line, msg: msg.into() }
    }
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.msg)
        } else {
            write!(f, "{}: {}", self.file, self.msg)
        }
    }
}

impl std::error::Error for TraceError {}
