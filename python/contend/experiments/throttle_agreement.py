"""The same admission scenarios run two ways: the native microbenchmarks under libcontend-throttle.so on
this host, and the engine with the same policy on a machine model of that shape; their counters side
by side (tests/test_throttle_agreement.py).

Shape: 4 ranks on this host, the two halves standing for two nodes of 2 ranks (the one-host layout of
contend-bench's nicrate and outstanding, ``CONTEND_THROTTLE_RANKS_PER_NODE=2`` for the library,
``ranks_per_node=2`` for the engine). Scenarios (Luo et al. 2012, Section 4 and 8):

- ``figure1``: every core of one node puts to its partner core on the other node, one put in flight per
  core (put and flush; nicrate --mode put-oneway --windows 1). Luo et al.'s microbenchmarks are
  one-sided (UPC); the targets of a passive epoch need not run, so they sleep and only the origins
  share this host's 2 cores: they inject at once whenever both have a core.
- ``figure2``: the same with ``window`` puts of 16 KiB in flight per core (outstanding --windows W, then
  flush).
- ``alltoall``: the overlapped all-to-all (contend-bench alltoall, every rank busy; the engine's twin
  posts every receive, sends to rank + 1, + 2 .. and waits for all, exchange after exchange, each after
  the harness's barrier: MPICH's shared-memory barrier, whose messages the policy leaves alone, as the
  library leaves MPI_Barrier's). Its 4 busy ranks share the host's 2 cores, in the twin as well (the
  engine's shared cores, docs/models.md: the barrier's ranks spin, the others yield).

The twins keep the rounds' barriers (the pause until the sleeping targets join: ROUND_PAUSE_NS, then
the origins' own, after which they start together: nicstream's injectors meet among themselves). A put
is modelled by one origin's measured cycle (put_model): o the whole cycle, g the part that holds the
token, so the engine gives a put's token back when the real origin does, before its next put.

Waits depend on timing, so each side has a spread over the library's repeated runs: each run writes
when each origin started each round (contend-bench's round times, one clock for the host's ranks), and
its twin starts each origin's rounds that much after the round's first origin, as the run did. Those
start skews decide the token waits of Figures 1 and 2: two origins inject in lock step around the pool
while both run, and the one that started first puts alone, without waiting, until the other starts
(and the other finishes alone). The all-to-all's twin shares its cores in the model instead
(HOST_CORES). Every case's waits agree within TOLERANCE (docs/measurements.md).

A policy is a ``[throttle]`` table (docs/formats.md), spelled once in ``POLICIES``: the engine reads it
through ``contend.machine.admission.policy_params``, the library as ``CONTEND_THROTTLE_*`` variables.

Counting. The benchmarks' harness sends a few messages of its own (its data check, collectives the
library runs itself); it counts them apart (``MPI_Pcontrol``, the counters' ``harness`` object), so the
library's counters of one run are its ``rounds`` timed rounds and its warm-up round, which the engine
simulates. Both admit only the messages that leave their node: in the all-to-all each rank has one
node-local peer of three, which neither throttles.
"""

from __future__ import annotations

from contend.atomic import scratch_directory
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    import pandas as pd

from contend.experiments.native_twins import GoalProgram, Op

RANKS = 4
RANKS_PER_NODE = 2
# The engine's model of this host's shared memory for sends: LogGP fit run 3 of docs/measurements.md (pip
# MPICH, 2 ranks), rounded. Grants and in-use maxima do not depend on it; waits do (puts: put_model).
HOST_MODEL = {"L": 160, "o": 470, "g": 640, "G": 0.098, "O": 0.051, "S": 8115}
# This host's cores as `contend bench fit` measured them (docs/measurements.md, "Shared cores"): 2, shared
# by all 4 ranks whatever node they stand for (one_host: both ranks of a node may run at once); a core
# passes between ranks in 3.6 us; a spinning rank keeps it to the next 4 ms tick.
HOST_CPUS = 2
HOST_CORES = f"{HOST_CPUS}:3.6us:4ms"
# How long a task waiting in the library's line takes to see tokens given back (its poll-and-yield
# loop): library_handoff measured 318-372 ns on this host (docs/measurements.md, 2026-11-27). The twins'
# waits hardly depend on it (the all-to-all's: the same from 100 ns to 3 us), but a measurement on a
# loaded host takes in the scheduler's delays (once 3 us and more), so the twins take this fit.
HOST_HANDOFF_NS = 350
# Policies as [throttle] tables: adding one to the comparison is one line.
POLICIES: dict[str, dict[str, Any]] = {
    "token1": {"policy": "token", "tokens": 1},
    "token2": {"policy": "token", "tokens": 2},
    "rate": {"policy": "rate", "gap_ns": 20000},
    "proxy": {"policy": "proxy", "servers": 1},
    # the closed loop: starts at one token per rank of the node (2), may go from 1 to 4
    "adaptive": {"policy": "adaptive", "tokens": 4},
}


# The pause that starts each round of the one-way streams: their barrier, which the targets, asleep,
# join within their 1 ms naps (native/bench/nicstream.c); far longer than any gap compared.
ROUND_PAUSE_NS = 200_000
BARRIER_TAG = 1000


@dataclass(frozen=True)
class Scenario:
    name: str
    pattern: str       # contend-bench's pattern
    size: int          # bytes per message
    window: int = 1    # messages in flight per core (figure1/figure2)
    messages: int = 16  # per core and round (figure1/figure2)

    @property
    def one_way(self) -> bool:
        """Figures 1 and 2: one node's cores put into the other's (passive targets, asleep)."""
        return self.pattern != "alltoall"

    @property
    def busy(self) -> int:
        """The ranks that run during the rounds (the others sleep): what shares this host's cores."""
        return RANKS_PER_NODE if self.one_way else RANKS

    @property
    def shares_cores(self) -> bool:
        """More busy ranks than this host's cores: the twin shares them (HOST_CORES)."""
        return self.busy > HOST_CPUS

    def native_options(self) -> dict[str, Any]:
        if self.pattern == "alltoall":
            return {}
        return {"messages": self.messages, "windows": self.window, "active": RANKS_PER_NODE, "mode": "put-oneway"}

    def node_of(self, rank: int) -> int:
        return rank // RANKS_PER_NODE

    def goal(self, rounds: int, skews: Sequence[Sequence[int]] | None = None) -> str:
        """The engine's twin of ``rounds`` rounds: a GOAL schedule. ``skews`` (one-way only): per round,
        how long after the round's first origin each origin started it, ns (round_skews)."""
        program = GoalProgram(RANKS)
        left: list[list[Op]] = [[] for _ in range(RANKS)]  # what each rank waits for before a round
        for k in range(rounds):
            if self.pattern == "alltoall":
                left = self._barrier(program, k, left)
                left = [self._exchange(program, r, left[r]) for r in range(RANKS)]
                continue
            start = self._round_start(program, k, left, None if skews is None else skews[k])
            for r in range(RANKS_PER_NODE):
                for _ in range(self.messages // self.window):
                    start[r] = self._batch(program, r, start[r])
            left = start
        return program.text()

    def _round_start(self, program: GoalProgram, k: int, left: list[list[Op]],
                     skew: Sequence[int] | None) -> list[list[Op]]:
        """The round's pause (the barrier the sleeping targets join), then the origins' own barrier
        (within their node: not admitted), from which they start together, or each ``skew[r]`` ns later."""
        origins = range(RANKS_PER_NODE)
        start: list[list[Op]] = [[] for _ in range(RANKS)]
        for r in origins:
            paused = [program.calc(r, ROUND_PAUSE_NS, left[r])]
            start[r] = [program.send(r, 0, q, BARRIER_TAG + k, paused) for q in origins if q != r]
            start[r] += [program.recv(r, 0, q, BARRIER_TAG + k, paused) for q in origins if q != r]
            if skew is not None and skew[r] > 0:
                start[r] = [program.calc(r, skew[r], start[r])]
        return start

    def _batch(self, program: GoalProgram, r: int, after: list[Op]) -> list[Op]:
        """nicstream's put batch: W puts to the partner on the other node, one after the other (the
        library admits a put inside its call: the next cannot start before it), then the flush (wait
        for all). A passive target takes no part; in GOAL its receives are posted from the start."""
        partner = r + RANKS_PER_NODE
        puts: list[Op] = []
        for _ in range(self.window):
            program.recv(partner, self.size, r, 1)
            puts.append(program.send(r, self.size, partner, 1, after, puts[-1:]))
        return puts

    def _barrier(self, program: GoalProgram, k: int, left: list[list[Op]]) -> list[list[Op]]:
        """The harness's MPI_Barrier before exchange ``k`` (native/bench/exchange.c): MPICH's
        release-gather barrier (the harness's collectives before it are far past MPICH's threshold):
        ranks 1.. note their arrival to rank 0 and spin until it releases them; never admitted (tags
        with the engine's spinning bits, which include the unadmitted ones, docs/formats.md)."""
        from contend.engine import engine

        tag = engine().SPINNING_TAGS + k
        arrived = [program.recv(0, 0, r, tag, left[0]) for r in range(1, RANKS)]
        released = [program.send(0, 0, r, tag, arrived) for r in range(1, RANKS)]
        others = [[program.recv(r, 0, 0, tag, [program.send(r, 0, 0, tag, left[r])])] for r in range(1, RANKS)]
        return [released] + others

    def _exchange(self, program: GoalProgram, r: int, after: list[Op]) -> list[Op]:
        recvs = [program.recv(r, self.size, (r - k) % RANKS, 1, after) for k in range(1, RANKS)]
        return recvs + [program.send(r, self.size, (r + k) % RANKS, 1, after) for k in range(1, RANKS)]

    def barrier_messages(self, rounds: int) -> int:
        """The twin's barrier messages of ``rounds`` rounds (never admitted: within node 0, or the
        all-to-all's, unadmitted)."""
        if self.one_way:
            return rounds * RANKS_PER_NODE * (RANKS_PER_NODE - 1)
        return rounds * 2 * (RANKS - 1)

    def sends(self, rounds: int) -> tuple[int, int]:
        """(all sends, sends that leave their node) of ``rounds`` rounds, over all ranks."""
        if self.pattern == "alltoall":
            peers = [(r, (r + k) % RANKS) for r in range(RANKS) for k in range(1, RANKS)]
            return rounds * len(peers), rounds * sum(self.node_of(a) != self.node_of(b) for a, b in peers)
        n = rounds * self.messages * RANKS_PER_NODE
        return n, n


# 256 puts a round (~20-50 us): the origins leave their own barrier microseconds apart. Figure 2's puts
# are of 16 KiB (a put cycle of ~190 ns): with 1 KiB (~60 ns) token 2 waited 0.05-0.17 a send against
# its twin's 0.00, at 16 KiB 0.00-0.03. Two origins a few tens of ns apart meet on the pool, where which
# atomic operation comes first decides; the twin, one cost per put, does not hold such races
# (docs/measurements.md, 2026-11-27).
SCENARIOS = {
    "figure1": Scenario("figure1", "nicrate", 1024, window=1, messages=256),
    "figure2": Scenario("figure2", "outstanding", 16384, window=4, messages=256),
    "alltoall": Scenario("alltoall", "alltoall", 1024),
}
# Waits per send: how far apart the two sides' intervals may be and still agree.
TOLERANCE = 0.1


def engine_policy(table: Mapping[str, Any]) -> dict[str, Any] | None:
    from contend.machine.admission import policy_params
    from contend.machine.tomlfile import Where

    return policy_params(dict(table), Where("throttle_agreement", None, ("throttle",), "[throttle]"))


def library_settings(table: Mapping[str, Any], stats: Path) -> dict[str, str]:
    from contend.native import libthrottle

    values = {key: value for key, value in table.items() if key != "policy"}
    return libthrottle.settings(table["policy"], ranks_per_node=RANKS_PER_NODE, stats=stats, **values)


def run_engine(scenario: Scenario, table: Mapping[str, Any], rounds: int,
               model: Mapping[str, float] | None = None, skews: Sequence[Sequence[int]] | None = None) -> dict[str, int]:
    """The engine's counters for ``rounds`` rounds: grants, waits, max_in_use, messages. ``model``:
    LogGP parameters instead of HOST_MODEL; ``skews``: a library run's round start skews (round_skews).
    Its waiters see their tokens HOST_HANDOFF_NS after they come back, as the library's do."""
    from contend.machine.cores import parse_cores
    from contend.simulation.simulate import simulate

    if table["policy"] in ("token", "adaptive"):
        table = {**table, "handoff_ns": HOST_HANDOFF_NS}
    with scratch_directory("contend-agree-") as scratch:
        path = Path(scratch) / f"{scenario.name}.goal"
        path.write_text(scenario.goal(rounds, skews), encoding="utf-8")
        r = simulate(path, ranks_per_node=RANKS_PER_NODE, throttle=engine_policy(table),
                     cores={**parse_cores(HOST_CORES), "one_host": True} if scenario.shares_cores else None,
                     **(model or HOST_MODEL))
    if r.deadlock is not None:
        raise RuntimeError(f"{scenario.name}: the engine's twin deadlocked")
    return {"grants": r.admission_grants, "waits": r.admission_waits, "max_in_use": r.admission_max_in_use,
            "messages": r.messages}


def twin_model(scenario: Scenario) -> dict[str, float]:
    """The twin's LogGP parameters: measured puts for the one-way streams, HOST_MODEL for sends."""
    return put_model(scenario) if scenario.one_way else dict(HOST_MODEL)


def library_handoff(model: Mapping[str, float], timeout_s: float = 120) -> int:
    """How long a task waiting in the library's line takes to see the tokens given back (ns): its
    poll-and-yield loop (native/throttle/admit.c); HOST_HANDOFF_NS is its fit for this host. Measured on
    Figure 1 under one token, where the two origins take turns: an origin asks o - g after giving its
    token back and gets it again after the other's turn, so its mean wait (wait_ns / waits) is
    2g + 2h - o, with o and g from ``model``, Figure 1's put_model."""
    from contend.native import libthrottle
    from contend.native.bench.runner import run_benchmark

    scenario = SCENARIOS["figure1"]
    with scratch_directory("contend-agree-") as scratch:
        stats = Path(scratch) / "handoff.jsonl"
        run_benchmark(scenario.pattern, ranks=RANKS, sizes=[scenario.size], iters=8, warmup=1,
                      options=scenario.native_options(), throttle=library_settings(POLICIES["token1"], stats),
                      timeout_s=timeout_s)
        rows = libthrottle.read_stats(stats)
    waits = sum(row["waits"] for row in rows)
    if not waits:  # the origins never met (one descheduled throughout): nothing to measure
        return 0
    wait = sum(row["wait_ns"] for row in rows) / waits
    return max(0, round((wait + model["o"] - 2 * model["g"]) / 2))


def put_model(scenario: Scenario, timeout_s: float = 120) -> dict[str, float]:
    """The twin's LogGP parameters for one-way puts, measured now with one origin alone, as the scenario
    puts and flushes. A put's token is held from its admission to the flush that completes it (or, in a
    window with the pool short, to the task's next admission, which flushes its own finished puts
    before it counts a wait): o is the whole cycle of one put with the library loaded under a pool that
    never runs short (admission, put, flush, give-back, loop), g the part of it that holds the token,
    the put and its flush alone (no library). The engine gives a send's tokens back at t + g, so the
    rest of the cycle, o - g, runs without them. L as HOST_MODEL; a put on shared memory is the
    origin's CPU copying, so no G, and it has no rendezvous, so no S."""
    from contend.native.bench.runner import run_benchmark

    def per_put(throttle: Mapping[str, str] | None) -> float:
        run = run_benchmark(scenario.pattern, ranks=RANKS, sizes=[scenario.size], iters=8, warmup=1,
                            options={**scenario.native_options(), "active": 1}, throttle=throttle,
                            timeout_s=timeout_s)
        return float(run.results["t_p50_ns"].iloc[0])

    held = per_put(None)
    with scratch_directory("contend-agree-") as scratch:
        uncongested = {"policy": "token", "tokens": scenario.window}  # one origin's window never waits
        cycle = per_put(library_settings(uncongested, Path(scratch) / "cycle.jsonl"))
    # o >= g: two noisy samples must not make the token outlast the cycle
    return {"L": HOST_MODEL["L"], "o": max(cycle, held), "g": held, "G": 0, "O": 0, "S": 2**40}


def waits_per_send(counters: Mapping[str, int]) -> float:
    return counters["waits"] / counters["grants"] if counters["grants"] else 0.0


@dataclass(frozen=True)
class LibraryRun:
    """One benchmark run under the library: its per-rank counters, and (one-way scenarios) when each
    origin started each round, as round_skews."""

    rows: list[dict]
    skews: list[list[int]] | None


def round_skews(rounds: pd.DataFrame, expected: int) -> list[list[int]]:
    """Per round (warm-up first), how long after the round's first origin each origin started it, ns,
    from a run's round times (RunResult.rounds; the host's ranks share one clock)."""
    starts = rounds.pivot(index="round", columns="rank", values="start_ns").sort_index()
    if starts.shape != (expected, RANKS_PER_NODE) or starts.isna().any().any():
        raise RuntimeError(f"expected the start of {expected} rounds for each of {RANKS_PER_NODE} origins, got "
                           f"{starts.shape[0]} rounds of {starts.shape[1]} ranks")
    return [[int(t - min(row)) for t in row] for row in starts.to_numpy().tolist()]


def run_library(scenario: Scenario, table: Mapping[str, Any], rounds: int, scratch: Path,
                timeout_s: float = 120) -> LibraryRun:
    """The library's per-rank counters of one benchmark run with ``rounds`` timed rounds (and one
    warm-up round, so the totals count ``rounds + 1`` rounds), and its origins' round skews."""
    from contend.native import libthrottle
    from contend.native.bench.runner import run_benchmark

    stats = scratch / f"{scenario.name}-{rounds}.jsonl"
    stats.unlink(missing_ok=True)
    run = run_benchmark(scenario.pattern, ranks=RANKS, sizes=[scenario.size], iters=rounds, warmup=1,
                        options=scenario.native_options(), throttle=library_settings(table, stats),
                        timeout_s=timeout_s, round_times=scenario.one_way)
    skews = round_skews(run.rounds, rounds + 1) if scenario.one_way else None
    return LibraryRun(libthrottle.read_stats(stats), skews)


def library_counters(rows: list[dict]) -> dict[str, int]:
    """The library's counters of one run, over its ranks: grants (operations admitted), local (left
    alone: node-local) and waits summed, max_in_use the nodes' maximum. They cover the timed and warm-up
    rounds only: the harness counts its own messages apart (MPI_Pcontrol)."""
    return {"grants": sum(row["ops"] for row in rows), "local": sum(row["ops_local"] for row in rows),
            "waits": sum(row["waits"] for row in rows), "max_in_use": max(row["max_in_use"] for row in rows)}


def compare(scenario: Scenario, table: Mapping[str, Any], rounds: int, scratch: Path) -> dict[str, Any]:
    """Both sides of one scenario under one policy, ``rounds`` timed rounds and one warm-up round: the
    engine's counters and the library's (and its run's per-rank rows). The engine's origins start each
    round together: what the rules fix (grants, the most tokens in use when the node's ranks inject at
    once) then holds exactly, while a run's own start skews may keep its origins apart (a loaded host:
    milliseconds), and an origin alone puts one at a time; the waits, which the skews decide, are
    spread's."""
    run = run_library(scenario, table, rounds, scratch)
    return {"engine": run_engine(scenario, table, rounds + 1),
            "library": library_counters(run.rows), "runs": [run.rows]}


def spread(scenario: Scenario, table: Mapping[str, Any], rounds: int, scratch: Path,
           model: Mapping[str, float], repeats: int = 3) -> dict[str, list[float]]:
    """Waits per send of ``rounds`` rounds (and the warm-up round) on both sides, over ``repeats``
    library runs, each beside its twin: the engine started with the run's round skews (the
    all-to-all's twin has none: every run's is the same)."""
    engine, library = [], []
    for _ in range(repeats):
        run = run_library(scenario, table, rounds, scratch)
        library.append(waits_per_send(library_counters(run.rows)))
        if run.skews is not None or not engine:
            engine.append(waits_per_send(run_engine(scenario, table, rounds + 1, model, run.skews)))
    return {"engine": engine, "library": library}


def overlap(a: list[float], b: list[float], tolerance: float = TOLERANCE) -> bool:
    """Whether the intervals [min, max] of a and b overlap or are at most ``tolerance`` apart."""
    return min(a) - tolerance <= max(b) and min(b) - tolerance <= max(a)
