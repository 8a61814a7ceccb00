//! Which point-to-point algorithm a traced collective becomes.
//!
//! The default follows MPICH 3.x's selection for intra-communicators (the `MPIR_*_intra_auto`
//! functions and their `MPIR_CVAR_*_MSG_SIZE` defaults); the `schedgen` preset reproduces
//! LogGOPSim's Schedgen; the user may fix the algorithm per collective. docs/models.md has the
//! table, including where contend has no generator for MPICH's choice and uses the nearest one.

use super::event::CollKind;
use super::event::CollKind as C;
use crate::schedule::collectives::Pattern;
use crate::schedule::collectives::Pattern as P;

/// MPICH 3.x defaults (MPIR_CVAR_...): bytes thresholds of the selection.
const BCAST_SHORT_MSG_SIZE: u64 = 12288;
const BCAST_LONG_MSG_SIZE: u64 = 524288;
const BCAST_MIN_PROCS: u32 = 8;
const ALLREDUCE_SHORT_MSG_SIZE: u64 = 2048;
const ALLGATHER_SHORT_MSG_SIZE: u64 = 81920;
const ALLGATHER_LONG_MSG_SIZE: u64 = 524288;
const ALLTOALL_SHORT_MSG_SIZE: u64 = 256;
const ALLTOALL_MEDIUM_MSG_SIZE: u64 = 32768;
/// MPICH 4's shared-memory release-gather collectives: messages up to its buffer (the default of
/// `MPIR_CVAR_BCAST_INTRANODE_BUFFER_TOTAL_SIZE`) go through it.
const RELEASE_GATHER_MAX: u64 = 32768;
/// MPICH uses its release-gather buffers on a communicator only from the call that brings the
/// communicator's count of them to this (`MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD`); the calls before go
/// through point-to-point algorithms.
const RELEASE_GATHER_FROM: u64 = 5;
/// The cells of MPICH's shared-memory broadcast buffer (`MPIR_CVAR_BCAST_INTRANODE_NUM_CELLS`): a root
/// reuses a cell once every reader has copied out of it, so it runs at most this many broadcasts ahead.
pub const BCAST_CELLS: u64 = 4;

/// Where the default choices come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// MPICH 3.x's default selection by size and communicator size.
    Mpich,
    /// Schedgen's fixed choices: dissemination barrier (1 byte), binomial bcast and reduce,
    /// dissemination allreduce and allgather, linear alltoall.
    Schedgen,
    /// MPICH 4 when every rank of the communicator is on one node (shared memory): blocking
    /// Barrier, Bcast, Reduce and Allreduce of small messages through its release-gather buffers
    /// (see [`Algorithms::release_gather`]), a flat tree below the default radix (the ranks gather
    /// into rank 0, which releases them: linear gather and linear broadcast); the rest as `Mpich`.
    MpichShm,
}

/// The algorithm selection: a preset and the user's per-collective choices.
#[derive(Clone, Debug)]
pub struct Algorithms {
    pub preset: Preset,
    overrides: Vec<(CollKind, Pattern)>,
}

/// How one collective call of one rank is generated: a pattern over the communicator's ranks with
/// `bytes` per message of the pattern, or linear exchanges with per-peer sizes (v-variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Pattern(Pattern, u64),
    /// Two patterns, the second after the first (MPICH's large broadcast: scatter, then allgather).
    Phases((Pattern, u64), (Pattern, u64)),
    /// Every member sends its sizes to every other (alltoallv, allgatherv) or to / from the root
    /// (gatherv, scatterv), all at once.
    Linear,
    /// Nothing to exchange (a communicator of one rank).
    Nothing,
}

/// The collective names users give (`KIND=PATTERN`).
pub fn kind_from_name(name: &str) -> Option<CollKind> {
    use CollKind::*;
    Some(match name {
        "barrier" => Barrier,
        "bcast" => Bcast,
        "reduce" => Reduce,
        "allreduce" => Allreduce,
        "gather" => Gather,
        "scatter" => Scatter,
        "allgather" => Allgather,
        "alltoall" => Alltoall,
        "reduce_scatter" | "reduce-scatter" => ReduceScatter,
        "scan" => Scan,
        "exscan" => Exscan,
        _ => return None,
    })
}

/// Patterns that compute what `kind` computes (the user may pick any of them).
fn fits(kind: CollKind, p: Pattern) -> bool {
    match kind {
        C::Barrier => matches!(p, P::Dissemination),
        C::Bcast => matches!(p, P::BinomialBcast | P::Scatter),
        C::Reduce => matches!(p, P::BinomialReduce | P::Gather),
        C::Allreduce | C::Scan | C::Exscan => matches!(p, P::Dissemination | P::AllreduceRecdoub | P::AllreduceRing),
        C::Gather => matches!(p, P::Gather | P::BinomialReduce),
        C::Scatter => matches!(p, P::Scatter | P::BinomialBcast),
        C::Allgather => matches!(p, P::Dissemination | P::AllgatherRecdoub | P::AllgatherRing | P::AllgatherBruck),
        C::Alltoall | C::ReduceScatter | C::ReduceScatterBlock => matches!(p, P::AlltoallLinear | P::AlltoallPairwise | P::AlltoallBruck),
        C::Gatherv | C::Scatterv | C::Allgatherv | C::Alltoallv => false,
    }
}

impl Algorithms {
    pub fn new(preset: Preset) -> Algorithms {
        Algorithms { preset, overrides: Vec::new() }
    }

    /// Fixes the algorithm of one collective: `spec` is `KIND=PATTERN`, e.g. `bcast=binomial-bcast`.
    pub fn choose(&mut self, spec: &str) -> Result<(), String> {
        let (k, p) = spec.split_once('=').ok_or_else(|| format!("'{spec}': expected COLLECTIVE=ALGORITHM"))?;
        let kind = kind_from_name(k.trim()).ok_or_else(|| {
            format!("'{k}': unknown collective (barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall, reduce_scatter, scan, exscan)")
        })?;
        let pattern = Pattern::from_name(p.trim())?;
        if !fits(kind, pattern) {
            return Err(format!("'{spec}': {} does not compute {k}", pattern.name()));
        }
        self.overrides.retain(|(kk, _)| *kk != kind);
        self.overrides.push((kind, pattern));
        Ok(())
    }

    /// Whether this blocking call of `kind` (`bytes` per rank, `p` ranks) goes through MPICH's
    /// release-gather buffers, where its ranks wait spinning; `counted` is its communicator's count
    /// of such calls so far, which the call advances. Only with `mpich-shm`, no algorithm chosen
    /// for `kind`, at most `RELEASE_GATHER_MAX` bytes, and not in a program of `threads_multiple`
    /// (MPICH then never uses them). A Barrier counts twice (MPICH runs it as the node's barrier
    /// and a 1-byte broadcast releasing it; its first part decides here); a 0-byte broadcast not at
    /// all (MPICH returns at once).
    pub fn release_gather(&self, kind: CollKind, p: u32, bytes: u64, threads_multiple: bool, counted: &mut u64) -> bool {
        let counts = match kind {
            C::Barrier => 2,
            C::Bcast if bytes > 0 => 1,
            C::Reduce | C::Allreduce => 1,
            _ => return false,
        };
        if self.preset != Preset::MpichShm || threads_multiple || p <= 1 || bytes > RELEASE_GATHER_MAX || self.chosen(kind).is_some() {
            return false;
        }
        *counted += counts;
        *counted + 1 - counts >= RELEASE_GATHER_FROM
    }

    /// The algorithm the user chose for `kind`, if any.
    fn chosen(&self, kind: CollKind) -> Option<Pattern> {
        self.overrides.iter().find(|(k, _)| *k == kind).map(|&(_, pat)| pat)
    }

    /// The plan for `kind` on a communicator of `p` ranks with `bytes` per rank (see
    /// [`super::event::Collective::bytes`]); `released`: the call goes through MPICH's
    /// release-gather buffers ([`Algorithms::release_gather`]).
    pub fn plan(&self, kind: CollKind, p: u32, bytes: u64, released: bool) -> Plan {
        if p <= 1 {
            return Plan::Nothing;
        }
        if matches!(kind, C::Gatherv | C::Scatterv | C::Allgatherv | C::Alltoallv) {
            return Plan::Linear;
        }
        let pof2 = p.is_power_of_two();
        let pattern = match self.chosen(kind) {
            // A power-of-two algorithm on another rank count falls back to the general one.
            Some(P::AllreduceRecdoub) if !pof2 => P::AllreduceRing,
            Some(P::AllgatherRecdoub) if !pof2 => P::AllgatherBruck,
            Some(pat) => pat,
            None => match (self.preset, kind) {
                (_, C::Barrier) if released => return Plan::Phases((P::Gather, 0), (P::Scatter, 0)),
                (_, C::Allreduce) if released => return Plan::Phases((P::Gather, bytes), (P::Scatter, bytes)),
                (_, C::Bcast) if released => P::Scatter,
                (_, C::Reduce) if released => P::Gather,
                (Preset::Schedgen, C::Barrier) => return Plan::Pattern(P::Dissemination, 1),
                (Preset::Schedgen, C::Allreduce | C::Allgather) => P::Dissemination,
                (Preset::Schedgen, C::Alltoall) => P::AlltoallLinear,
                (_, C::Barrier) => return Plan::Pattern(P::Dissemination, 0),
                (Preset::Schedgen, C::Bcast) => P::BinomialBcast,
                // MPICH: binomial below 12 KiB or 8 ranks; else the message scattered in P blocks
                // (binomially; contend's scatter is linear) and allgathered by recursive doubling
                // (P a power of two, below 512 KiB) or a ring.
                (_, C::Bcast) if bytes < BCAST_SHORT_MSG_SIZE || p < BCAST_MIN_PROCS => P::BinomialBcast,
                (_, C::Bcast) => {
                    let block = bytes.div_ceil(p as u64);
                    let gather = if bytes < BCAST_LONG_MSG_SIZE && pof2 { P::AllgatherRecdoub } else { P::AllgatherRing };
                    return Plan::Phases((P::Scatter, block), (gather, block));
                }
                // MPICH: binomial up to 2 KiB, else reduce-scatter + gather (not generated).
                (_, C::Reduce) => P::BinomialReduce,
                // MPICH: recursive doubling up to 2 KiB (dissemination has its rounds and sizes),
                // else reduce-scatter + allgather (allreduce-recdoub, the ring off powers of two).
                (_, C::Allreduce) if bytes <= ALLREDUCE_SHORT_MSG_SIZE => P::Dissemination,
                (_, C::Allreduce) if pof2 => P::AllreduceRecdoub,
                (_, C::Allreduce) => P::AllreduceRing,
                // MPICH: recursive doubling (power of two, total < 512 KiB), Bruck (total < 80
                // KiB), else ring.
                (_, C::Allgather) => {
                    let total = bytes.saturating_mul(p as u64);
                    if total < ALLGATHER_LONG_MSG_SIZE && pof2 {
                        P::AllgatherRecdoub
                    } else if total < ALLGATHER_SHORT_MSG_SIZE {
                        P::AllgatherBruck
                    } else {
                        P::AllgatherRing
                    }
                }
                // MPICH: Bruck for blocks up to 256 B on 8 ranks or more, all-at-once isend/irecv
                // up to 32 KiB, pairwise exchange above.
                (_, C::Alltoall) if bytes <= ALLTOALL_SHORT_MSG_SIZE && p >= 8 => P::AlltoallBruck,
                (_, C::Alltoall) if bytes <= ALLTOALL_MEDIUM_MSG_SIZE => P::AlltoallLinear,
                (_, C::Alltoall) => P::AlltoallPairwise,
                // MPICH: binomial trees (contend's scatter and gather are linear).
                (_, C::Gather) => P::Gather,
                (_, C::Scatter) => P::Scatter,
                // MPICH: recursive doubling.
                (_, C::Scan | C::Exscan) => P::Dissemination,
                // MPICH (commutative, long): pairwise exchange of the blocks.
                (_, C::ReduceScatter | C::ReduceScatterBlock) => P::AlltoallPairwise,
                (_, C::Gatherv | C::Scatterv | C::Allgatherv | C::Alltoallv) => unreachable!(),
            },
        };
        Plan::Pattern(pattern, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_selection_follows_the_size_cutoffs() {
        let a = Algorithms::new(Preset::Mpich);
        assert_eq!(a.plan(CollKind::Allreduce, 8, 2048, false), Plan::Pattern(Pattern::Dissemination, 2048));
        assert_eq!(a.plan(CollKind::Allreduce, 8, 2049, false), Plan::Pattern(Pattern::AllreduceRecdoub, 2049));
        assert_eq!(a.plan(CollKind::Allreduce, 6, 4096, false), Plan::Pattern(Pattern::AllreduceRing, 4096));
        assert_eq!(a.plan(CollKind::Allgather, 8, 1024, false), Plan::Pattern(Pattern::AllgatherRecdoub, 1024));
        assert_eq!(a.plan(CollKind::Allgather, 6, 1024, false), Plan::Pattern(Pattern::AllgatherBruck, 1024));
        assert_eq!(a.plan(CollKind::Allgather, 8, 65536, false), Plan::Pattern(Pattern::AllgatherRing, 65536));
        assert_eq!(a.plan(CollKind::Alltoall, 8, 256, false), Plan::Pattern(Pattern::AlltoallBruck, 256));
        assert_eq!(a.plan(CollKind::Alltoall, 4, 256, false), Plan::Pattern(Pattern::AlltoallLinear, 256));
        assert_eq!(a.plan(CollKind::Alltoall, 8, 32769, false), Plan::Pattern(Pattern::AlltoallPairwise, 32769));
        assert_eq!(a.plan(CollKind::Barrier, 5, 0, false), Plan::Pattern(Pattern::Dissemination, 0));
        assert_eq!(a.plan(CollKind::Bcast, 1, 10, false), Plan::Nothing);
        assert_eq!(a.plan(CollKind::Bcast, 8, 12287, false), Plan::Pattern(Pattern::BinomialBcast, 12287));
        assert_eq!(a.plan(CollKind::Bcast, 7, 1 << 20, false), Plan::Pattern(Pattern::BinomialBcast, 1 << 20));
        assert_eq!(
            a.plan(CollKind::Bcast, 8, 12288, false),
            Plan::Phases((Pattern::Scatter, 1536), (Pattern::AllgatherRecdoub, 1536))
        );
        assert_eq!(
            a.plan(CollKind::Bcast, 9, 524288, false),
            Plan::Phases((Pattern::Scatter, 58255), (Pattern::AllgatherRing, 58255))
        );
        assert_eq!(a.plan(CollKind::Alltoallv, 4, 0, false), Plan::Linear);
    }

    #[test]
    fn user_choices_are_checked_and_win() {
        let mut a = Algorithms::new(Preset::Mpich);
        a.choose("allreduce=allreduce-ring").unwrap();
        assert_eq!(a.plan(CollKind::Allreduce, 8, 8, false), Plan::Pattern(Pattern::AllreduceRing, 8));
        assert!(a.choose("bcast=alltoall-linear").unwrap_err().contains("does not compute"));
        assert!(a.choose("bcst=binomial-bcast").unwrap_err().contains("unknown collective"));
        a.choose("allgather=allgather-recdoub").unwrap();
        assert_eq!(a.plan(CollKind::Allgather, 6, 8, false), Plan::Pattern(Pattern::AllgatherBruck, 8));
        let shm = Algorithms::new(Preset::MpichShm);
        assert_eq!(shm.plan(CollKind::Barrier, 4, 0, true), Plan::Phases((Pattern::Gather, 0), (Pattern::Scatter, 0)));
        assert_eq!(shm.plan(CollKind::Allreduce, 4, 8, true), Plan::Phases((Pattern::Gather, 8), (Pattern::Scatter, 8)));
        assert_eq!(shm.plan(CollKind::Bcast, 4, 8, true), Plan::Pattern(Pattern::Scatter, 8));
        assert_eq!(shm.plan(CollKind::Reduce, 4, 32768, true), Plan::Pattern(Pattern::Gather, 32768));
        assert_eq!(shm.plan(CollKind::Reduce, 4, 32769, false), Plan::Pattern(Pattern::BinomialReduce, 32769));
        assert_eq!(shm.plan(CollKind::Alltoall, 4, 8, false), a.plan(CollKind::Alltoall, 4, 8, false));
        let s = Algorithms::new(Preset::Schedgen);
        assert_eq!(s.plan(CollKind::Barrier, 4, 0, false), Plan::Pattern(Pattern::Dissemination, 1));
        assert_eq!(s.plan(CollKind::Allreduce, 4, 1 << 20, false), Plan::Pattern(Pattern::Dissemination, 1 << 20));
    }

    #[test]
    fn release_gather_starts_at_mpich_s_threshold_per_communicator() {
        let shm = Algorithms::new(Preset::MpichShm);
        // Broadcasts, reduces and allreduces count once: the 5th call is the first through the buffers.
        for kind in [CollKind::Bcast, CollKind::Reduce, CollKind::Allreduce] {
            let mut counted = 0;
            let used: Vec<bool> = (0..6)
                .map(|_| shm.release_gather(kind, 4, 8, false, &mut counted))
                .collect();
            assert_eq!(used, [false, false, false, false, true, true], "{kind:?}");
        }
        // A barrier counts twice (barrier, then a 1-byte broadcast): from its 3rd call.
        let mut counted = 0;
        let used: Vec<bool> = (0..4)
            .map(|_| shm.release_gather(CollKind::Barrier, 4, 0, false, &mut counted))
            .collect();
        assert_eq!((used, counted), (vec![false, false, true, true], 8));
        // Mixed: after two broadcasts a barrier's first part is the 3rd call, its second the 4th.
        let mut counted = 2;
        assert!(!shm.release_gather(CollKind::Barrier, 4, 0, false, &mut counted));
        assert!(shm.release_gather(CollKind::Bcast, 4, 8, false, &mut counted));
        // Never with MPI_THREAD_MULTIPLE, above the buffer, on one rank, for a 0-byte broadcast,
        // for other collectives, with other presets, or when the user chose the algorithm.
        let mut counted = 10;
        assert!(!shm.release_gather(CollKind::Bcast, 4, 8, true, &mut counted));
        assert!(!shm.release_gather(
            CollKind::Allreduce,
            4,
            RELEASE_GATHER_MAX + 1,
            false,
            &mut counted
        ));
        assert!(!shm.release_gather(CollKind::Barrier, 1, 0, false, &mut counted));
        assert!(!shm.release_gather(CollKind::Bcast, 4, 0, false, &mut counted));
        assert!(!shm.release_gather(CollKind::Allgather, 4, 8, false, &mut counted));
        assert!(!Algorithms::new(Preset::Mpich).release_gather(
            CollKind::Bcast,
            4,
            8,
            false,
            &mut counted
        ));
        let mut chosen = Algorithms::new(Preset::MpichShm);
        chosen.choose("bcast=binomial-bcast").unwrap();
        assert!(!chosen.release_gather(CollKind::Bcast, 4, 8, false, &mut counted));
        assert_eq!(counted, 10, "calls that never use the buffers do not count");
        // Before the threshold the calls are mpich's point-to-point algorithms.
        assert_eq!(
            shm.plan(CollKind::Barrier, 4, 0, false),
            Plan::Pattern(Pattern::Dissemination, 0)
        );
        assert_eq!(
            shm.plan(CollKind::Bcast, 4, 8, false),
            Plan::Pattern(Pattern::BinomialBcast, 8)
        );
    }
}
