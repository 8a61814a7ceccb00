"""The same admission scenarios run two ways: the native microbenchmarks under libcontend-throttle.so on
this host, and the engine with the same policy on a machine model of that shape; their counters side
by side (tests/test_throttle_agreement.py).

Shape: 4 ranks on this host, the two halves standing for two nodes of 2 ranks (the one-host layout of
contend-bench's nicrate and outstanding, ``CONTEND_THROTTLE_RANKS_PER_NODE=2`` for the library,
``ranks_per_node=2`` for the engine). Scenarios (Luo et al. 2012, Section 4 and 8):

- ``figure1``: every core of both nodes sends to its partner core on the other node, one message in
  flight per core (blocking; nicrate --windows 1).
- ``figure2``: the same with ``window`` messages in flight per core (outstanding --windows W).
- ``alltoall``: the overlapped all-to-all (contend-bench alltoall; the engine's twin posts every
  receive, sends to rank + 1, + 2 .. and waits for all, exchange after exchange).

A policy is a ``[throttle]`` table (docs/formats.md), spelled once in ``POLICIES``: the engine reads it
through ``contend.machine.admission.policy_params``, the library as ``CONTEND_THROTTLE_*`` variables.

Counting. The benchmarks' harness sends a few messages of its own (its data check, collectives the
library runs itself); it counts them apart (``MPI_Pcontrol``, the counters' ``harness`` object), so the
library's counters of one run are its ``rounds`` timed rounds and its warm-up round, which the engine
simulates. Both admit only the messages that leave their
node: in the all-to-all each rank has one node-local peer of three, which neither throttles.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from contend.experiments.native_twins import GoalProgram, Op

RANKS = 4
RANKS_PER_NODE = 2
# The engine's model of this host's shared memory: LogGP fit run 3 of docs/measurements.md (pip
# MPICH, 2 ranks), rounded. Grants and in-use maxima do not depend on it; waits do.
HOST_MODEL = {"L": 160, "o": 470, "g": 640, "G": 0.098, "O": 0.051, "S": 8115}
# Policies as [throttle] tables: adding one to the comparison is one line.
POLICIES: dict[str, dict[str, Any]] = {
    "token1": {"policy": "token", "tokens": 1},
    "token2": {"policy": "token", "tokens": 2},
    "rate": {"policy": "rate", "gap_ns": 20000},
    "proxy": {"policy": "proxy", "servers": 1},
    # the closed loop: starts at one token per rank of the node (2), may go from 1 to 4
    "adaptive": {"policy": "adaptive", "tokens": 4},
}


@dataclass(frozen=True)
class Scenario:
    name: str
    pattern: str       # contend-bench's pattern
    size: int          # bytes per message
    window: int = 1    # messages in flight per core (figure1/figure2)
    messages: int = 16  # per core and round (figure1/figure2)

    def native_options(self) -> dict[str, Any]:
        if self.pattern == "alltoall":
            return {}
        return {"messages": self.messages, "windows": self.window, "active": RANKS_PER_NODE}

    def node_of(self, rank: int) -> int:
        return rank // RANKS_PER_NODE

    def goal(self, rounds: int) -> str:
        """The engine's twin of ``rounds`` rounds: a GOAL schedule."""
        program = GoalProgram(RANKS)
        left: list[list[Op]] = [[] for _ in range(RANKS)]  # what each rank waits for before a batch
        for _ in range(rounds):
            if self.pattern == "alltoall":
                left = [self._exchange(program, r, left[r]) for r in range(RANKS)]
            else:
                for _ in range(self.messages // self.window):
                    left = [self._batch(program, r, left[r]) for r in range(RANKS)]
        return program.text()

    def _batch(self, program: GoalProgram, r: int, after: list[Op]) -> list[Op]:
        """nicstream's batch: W receives from the partner, W sends to it, wait for all."""
        partner = (r + RANKS_PER_NODE) % RANKS
        recvs = [program.recv(r, self.size, partner, 1, after) for _ in range(self.window)]
        return recvs + [program.send(r, self.size, partner, 1, after) for _ in range(self.window)]

    def _exchange(self, program: GoalProgram, r: int, after: list[Op]) -> list[Op]:
        recvs = [program.recv(r, self.size, (r - k) % RANKS, 1, after) for k in range(1, RANKS)]
        return recvs + [program.send(r, self.size, (r + k) % RANKS, 1, after) for k in range(1, RANKS)]

    def sends(self, rounds: int) -> tuple[int, int]:
        """(all sends, sends that leave their node) of ``rounds`` rounds, over all ranks."""
        if self.pattern == "alltoall":
            peers = [(r, (r + k) % RANKS) for r in range(RANKS) for k in range(1, RANKS)]
            return rounds * len(peers), rounds * sum(self.node_of(a) != self.node_of(b) for a, b in peers)
        n = rounds * self.messages * RANKS
        return n, n


SCENARIOS = {
    "figure1": Scenario("figure1", "nicrate", 1024, window=1),
    "figure2": Scenario("figure2", "outstanding", 1024, window=4),
    "alltoall": Scenario("alltoall", "alltoall", 1024),
}


def engine_policy(table: Mapping[str, Any]) -> dict[str, Any] | None:
    from contend.machine.admission import policy_params
    from contend.machine.tomlfile import Where

    return policy_params(dict(table), Where("throttle_agreement", None, ("throttle",), "[throttle]"))


def library_settings(table: Mapping[str, Any], stats: Path) -> dict[str, str]:
    from contend.native import libthrottle

    values = {key: value for key, value in table.items() if key != "policy"}
    return libthrottle.settings(table["policy"], ranks_per_node=RANKS_PER_NODE, stats=stats, **values)


def run_engine(scenario: Scenario, table: Mapping[str, Any], rounds: int) -> dict[str, int]:
    """The engine's counters for ``rounds`` rounds: grants, waits, max_in_use, messages."""
    from contend.simulation.simulate import simulate

    with tempfile.TemporaryDirectory(prefix="contend-agree-") as scratch:
        path = Path(scratch) / f"{scenario.name}.goal"
        path.write_text(scenario.goal(rounds), encoding="utf-8")
        r = simulate(path, ranks_per_node=RANKS_PER_NODE, throttle=engine_policy(table), **HOST_MODEL)
    if r.deadlock is not None:
        raise RuntimeError(f"{scenario.name}: the engine's twin deadlocked")
    return {"grants": r.admission_grants, "waits": r.admission_waits, "max_in_use": r.admission_max_in_use,
            "messages": r.messages}


def run_library(scenario: Scenario, table: Mapping[str, Any], rounds: int, scratch: Path,
                timeout_s: float = 120) -> list[dict]:
    """The library's per-rank counters of one benchmark run with ``rounds`` timed rounds (and one
    warm-up round, so the totals count ``rounds + 1`` rounds)."""
    from contend.native import libthrottle
    from contend.native.bench.runner import run_benchmark

    stats = scratch / f"{scenario.name}-{rounds}.jsonl"
    stats.unlink(missing_ok=True)
    run_benchmark(scenario.pattern, ranks=RANKS, sizes=[scenario.size], iters=rounds, warmup=1,
                  options=scenario.native_options(), throttle=library_settings(table, stats), timeout_s=timeout_s)
    return libthrottle.read_stats(stats)


def library_counters(rows: list[dict]) -> dict[str, int]:
    """The library's counters of one run, over its ranks: grants (operations admitted), local (left
    alone: node-local) and waits summed, max_in_use the nodes' maximum. They cover the timed and warm-up
    rounds only: the harness counts its own messages apart (MPI_Pcontrol)."""
    return {"grants": sum(row["ops"] for row in rows), "local": sum(row["ops_local"] for row in rows),
            "waits": sum(row["waits"] for row in rows), "max_in_use": max(row["max_in_use"] for row in rows)}


def compare(scenario: Scenario, table: Mapping[str, Any], rounds: int, scratch: Path) -> dict[str, Any]:
    """Both sides of one scenario under one policy, ``rounds`` timed rounds and one warm-up round: the
    engine's counters and the library's (and its run's per-rank rows)."""
    run = run_library(scenario, table, rounds, scratch)
    return {"engine": run_engine(scenario, table, rounds + 1), "library": library_counters(run), "runs": [run]}
