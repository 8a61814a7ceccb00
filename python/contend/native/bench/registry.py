"""The benchmarks ``contend bench`` knows: one entry per pattern of the native harness.

The native table (``native/bench/patterns.c``) and this one must agree; a test checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contend.errors import UserError

KiB, MiB = 1024, 1024 * 1024
POWERS_OF_4 = tuple(4**k for k in range(11))  # 1 B .. 1 MiB
NIC_SIZES = (8, 256, 8 * KiB, 256 * KiB)  # Luo et al. 2012 sweeps 8 B .. 512 KiB; four sizes keep a sweep short
NIC_OPTIONS = ("active", "windows", "messages", "mode")
FIT_ITERS = 300  # `contend bench fit`: round trips per size and run, unless --iters says otherwise

# Harness options a benchmark may take besides sizes/iterations (CLI name -> harness flag).
PATTERN_OPTIONS = {
    "window": "--window",
    "mode": "--mode",
    "seed": "--seed",
    "dims": "--dims",
    "dim": "--dim",
    "hops": "--hops",
    "prtt_n": "--prtt-n",
    "duration": "--duration",
    "threshold": "--threshold",
    "max_detours": "--max-detours",
    "pin": "--pin",
    "pause": "--pause",
    "active": "--active",
    "windows": "--windows",
    "messages": "--messages",
    "table": "--table",
    "rate": "--rate",
    "interval": "--interval",
    "region": "--region",
    "nice": "--nice",
    "period": "--period",
    "on": "--on",
}


@dataclass(frozen=True)
class Benchmark:
    """A pattern of ``contend-bench`` and how ``contend bench run`` uses it by default."""

    name: str
    summary: str
    min_ranks: int
    even_ranks: bool
    default_ranks: int
    default_sizes: tuple[int, ...]
    # "latency" or "bandwidth" against size, "per_rank" latency, "noise" detours, "alltoall" time and
    # bandwidth against size, "concurrency" / "outstanding" node throughput against active cores /
    # messages in flight, "updates" updates/s against outstanding updates, "nimc" triad bandwidth against
    # injected traffic (its own command, `contend bench nimc`)
    plot: str
    options: tuple[str, ...] = ()  # keys of PATTERN_OPTIONS it accepts
    modes: tuple[str, ...] = ()  # values --mode takes, the default first

    def check_mode(self, mode: str) -> None:
        """A UserError when --mode is not one this benchmark knows.

        >>> benchmark("nicrate").check_mode("put")
        >>> benchmark("nicrate").check_mode("get")
        Traceback (most recent call last):
        contend.errors.UserError: unknown --mode 'get' for nicrate (choose send or put or put-oneway)
        """
        if mode not in self.modes:
            raise UserError(f"unknown --mode {mode!r} for {self.name} (choose {' or '.join(self.modes)})")

    def check_ranks(self, ranks: int) -> None:
        """A UserError when this benchmark cannot run on that many ranks."""
        if ranks < self.min_ranks:
            raise UserError(f"{self.name} needs at least {self.min_ranks} ranks, got --np {ranks}")
        if self.even_ranks and ranks % 2:
            raise UserError(f"{self.name} pairs ranks: --np must be even, got {ranks}")


_ALL = (
    Benchmark("pingpong", "ping-pong latency and bandwidth between ranks 0 and 1", 2, False, 2,
              POWERS_OF_4, "latency", ("pause",)),
    Benchmark("barrier", "MPI_Barrier of all ranks: its time on rank 0 (the size is ignored)", 2, False, 2,
              (0,), "latency"),
    Benchmark("collective", "a 2-rank MPI_Allgather against one MPI_Sendrecv: a collective's cost beyond its "
              "messages", 2, False, 2, (1,), "latency"),
    Benchmark("put", "one-sided put latency and bandwidth, passive target, flush", 2, False, 2,
              POWERS_OF_4, "latency", ("window",)),
    Benchmark("get", "one-sided get latency and bandwidth, passive target, flush", 2, False, 2,
              POWERS_OF_4, "latency", ("window",)),
    Benchmark("msgrate", "message rate and bandwidth of disjoint pairs streaming windows", 2, True, 2,
              POWERS_OF_4, "bandwidth", ("window",)),
    Benchmark("incast", "n-into-1: ranks 1..P-1 stream into rank 0, share per sender", 2, False, 4,
              (1 * KiB, 64 * KiB, 1 * MiB), "bandwidth", ("window",)),
    Benchmark("outcast", "1-into-n: rank 0 streams to ranks 1..P-1, share per receiver", 2, False, 4,
              (1 * KiB, 64 * KiB, 1 * MiB), "bandwidth", ("window",)),
    Benchmark("loggp", "LogGP parameters by parametrised round trips (Netgauge method)", 2, False, 2,
              POWERS_OF_4, "latency", ("prtt_n",)),
    Benchmark("master", "Bhatele-Kale Benchmark I: master to each rank in turn", 2, False, 4,
              (8, 1 * KiB, 64 * KiB), "per_rank"),
    Benchmark("pairs", "Bhatele-Kale Benchmark II: all pairs at once, neighbour or random", 2, True, 4,
              (8, 1 * KiB, 64 * KiB), "per_rank", ("mode", "seed"), ("nn", "random")),
    Benchmark("hops", "Bhatele-Kale Benchmark III: all pairs n hops apart on one dimension", 2, True, 4,
              (8, 1 * KiB, 64 * KiB), "per_rank", ("dims", "dim", "hops")),
    Benchmark("noise", "selfish-detour OS noise per rank", 1, False, 2, (0,), "noise",
              ("duration", "threshold", "max_detours", "pin")),
    Benchmark("alltoall", "overlapped all-to-all: every rank sends to all others at once", 2, False, 4,
              (1 * KiB, 64 * KiB), "alltoall"),
    Benchmark("alltoall-pairwise", "pairwise-exchange all-to-all: P-1 blocking steps, rank+k and rank-k", 2,
              False, 4, (8, 1 * KiB, 64 * KiB), "alltoall"),
    Benchmark("alltoall-bruck", "Bruck all-to-all: log2(P) steps of packed blocks (small messages)", 2, False,
              4, (8, 1 * KiB, 64 * KiB), "alltoall"),
    Benchmark("alltoall-mpi", "the MPI library's MPI_Alltoall", 2, False, 4, (8, 1 * KiB, 64 * KiB),
              "alltoall"),
    Benchmark("nicrate", "node injection throughput vs active cores per node x size (Luo et al. 2012, Fig. 1)", 2, False,
              4, NIC_SIZES, "concurrency", NIC_OPTIONS, ("send", "put", "put-oneway")),
    Benchmark("outstanding", "node injection throughput vs messages in flight per core x size (Luo et al. 2012, Fig. 2)",
              2, False, 4, NIC_SIZES, "outstanding", NIC_OPTIONS, ("send", "put", "put-oneway")),
    Benchmark("randomaccess", "GUPS-like random XOR updates by MPI_Accumulate, verified; updates/s", 2, False,
              4, (8, 16), "updates", ("windows", "table", "seed")),
    Benchmark("nimc", "STREAM triad on one core while another injects memory traffic (put, rma, tcp, memcpy, spin)",
              2, False, 2, (1 * MiB,), "nimc", ("mode", "duration", "rate", "interval", "region", "nice", "period", "on"),
              ("none", "spin", "memcpy", "put", "tcp", "rma")),
)

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in _ALL}


def benchmark(name: str) -> Benchmark:
    """The benchmark called name; a UserError listing the known ones otherwise.

    >>> benchmark("pingpong").default_ranks
    2
    """
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
