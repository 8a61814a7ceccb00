"""GOAL twins of the native ``incast`` and ``pairs`` benchmarks, simulated and timed as the harness times them.

To compare a simulation with a measurement, the simulated program must be the measured one: the same
windows, the same barriers between iterations, the same warm-up, the same partners, the same clock
points and the same statistic (the median of per-iteration samples). The generated collectives
``incast`` and ``random-pairs`` are one message per rank with their own random matching, so this module
writes the benchmarks' programs as GOAL instead (native/bench/fanin.c and pairs.c):

- incast: every iteration starts with a barrier; then each sender ``MPI_Isend``s a window of W messages
  to rank 0 and waits for them, while rank 0 posts all W x (P-1) receives and waits for them. The sample
  of sender p is (when its last message arrived at rank 0 - when rank 0 left the barrier) / W.
- pairs: a barrier, the warm-up round trips, a barrier, the timed round trips; a round trip is a
  blocking send and a blocking receive by the initiator (the lower rank of the pair), the mirror by
  its partner. The sample is half the initiator's round trip.

The barrier is a dissemination barrier of zero-byte messages (what MPICH runs on a few ranks).
"""

from __future__ import annotations

import math
from contend.atomic import scratch_directory
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from contend.machine.file import Machine
from contend.simulation.simulate import simulate

DATA_TAG = 1  # fanin.c's DATA; pairs use tag 0
BARRIER_TAG = 1000  # + the barrier's number, so no barrier message can match another's receive
HUB = 0


@dataclass(frozen=True)
class Op:
    rank: int
    index: int  # position in the rank's program: the records' send_op / recv_op


class GoalProgram:
    """A GOAL schedule being built: each rank's operations, each with the operations it requires (or
    irequires)."""

    def __init__(self, ranks: int):
        self.ranks = ranks
        self.lines: list[list[str]] = [[] for _ in range(ranks)]
        self._count = [0] * ranks

    def _add(self, rank: int, statement: str, after: Sequence[Op], started: Sequence[Op] = ()) -> Op:
        op = Op(rank, self._count[rank])
        self._count[rank] += 1
        self.lines[rank].append(f"l{op.index}: {statement}")
        self.lines[rank] += [f"l{op.index} requires l{dep.index}" for dep in after]
        self.lines[rank] += [f"l{op.index} irequires l{dep.index}" for dep in started]
        return op

    def send(self, rank: int, size: int, to: int, tag: int, after: Sequence[Op] = (),
             started: Sequence[Op] = ()) -> Op:
        """``after``: operations it requires (waits for their completion); ``started``: those it
        irequires (waits for their start)."""
        return self._add(rank, f"send {size}b to {to} tag {tag}", after, started)

    def recv(self, rank: int, size: int, source: int, tag: int, after: Sequence[Op] = ()) -> Op:
        return self._add(rank, f"recv {size}b from {source} tag {tag}", after)

    def calc(self, rank: int, ns: int, after: Sequence[Op] = ()) -> Op:
        return self._add(rank, f"calc {ns}", after)

    def text(self) -> str:
        blocks = [f"rank {r} {{\n" + "".join(f"{line}\n" for line in self.lines[r]) + "}\n"
                  for r in range(self.ranks)]
        return f"num_ranks {self.ranks}\n\n" + "\n".join(blocks)


def barrier(program: GoalProgram, number: int, after: Sequence[Sequence[Op]]) -> list[list[Op]]:
    """A dissemination barrier entered by each rank r after ``after[r]``; returns each rank's receives,
    whose completion is the rank leaving the barrier."""
    ranks, tag = program.ranks, BARRIER_TAG + number
    received: list[list[Op]] = [[] for _ in range(ranks)]
    for step in range(math.ceil(math.log2(ranks))):
        distance = 1 << step
        for r in range(ranks):
            previous = received[r][-1:] or list(after[r])
            program.send(r, 0, (r + distance) % ranks, tag, previous)
            received[r].append(program.recv(r, 0, (r - distance) % ranks, tag, list(after[r])))
    return received


def native_random_partners(ranks: int, seed: int) -> list[int]:
    """The random perfect matching of ``pairs --mode random --seed`` (pairs.c's LCG, 32-bit unsigned).

    >>> native_random_partners(4, 1), native_random_partners(4, 2), native_random_partners(4, 3)
    ([3, 2, 1, 0], [2, 3, 0, 1], [1, 0, 3, 2])
    """
    mask = 0xFFFFFFFF
    order = list(range(ranks))
    state = (seed * 2654435761 + 1) & mask
    for i in range(ranks - 1, 0, -1):
        state = (state * 1103515245 + 12345) & mask
        j = (state >> 8) % (i + 1)
        order[i], order[j] = order[j], order[i]
    partner = [0] * ranks
    for i in range(0, ranks, 2):
        partner[order[i]], partner[order[i + 1]] = order[i + 1], order[i]
    return partner


def neighbour_partners(ranks: int) -> list[int]:
    """``pairs --mode nn``: 2i with 2i+1."""
    return [r ^ 1 for r in range(ranks)]


def _median(samples: Sequence[float]) -> float:
    return float(np.median(samples))  # the harness's p50: linear interpolation, like numpy's default


def _simulate(program: GoalProgram, machine: Machine | str | Path):
    """Simulates the program; returns when each receive completed, by (receiver, its op index), and when
    each send was ready to start, by (sender, its op index), in ns."""
    with scratch_directory("contend-twin-") as scratch:
        path = Path(scratch) / "twin.goal"
        path.write_text(program.text())
        result = simulate(schedule=path, machine=machine, records=True)
    if not result.finished:
        raise RuntimeError(f"the benchmark's twin deadlocked: {result.deadlock.describe()}")
    r = result.records
    completed = {(int(d), int(i)): float(t) for d, i, t in zip(r["dst"], r["recv_op"], r["completed"])}
    posted = {(int(s), int(i)): float(t) for s, i, t in zip(r["src"], r["send_op"], r["posted"])}
    return completed, posted


def simulate_incast(machine: Machine | str | Path, ranks: int, size: int, window: int, iters: int,
                    warmup: int) -> dict[int, float]:
    """Per sender (1..ranks-1): the median time per message (ns) of fanin.c's incast, simulated."""
    program = GoalProgram(ranks)
    left: list[list[Op]] = [[] for _ in range(ranks)]  # what each rank finished in the last iteration
    timed: list[tuple[list[Op], dict[int, list[Op]]]] = []
    for iteration in range(warmup + iters):
        exits = barrier(program, iteration, left)
        arrivals = {p: [program.recv(HUB, size, p, DATA_TAG, exits[HUB]) for _ in range(window)]
                    for p in range(1, ranks)}
        left = [[op for ops in arrivals.values() for op in ops]]
        left += [[program.send(p, size, HUB, DATA_TAG, exits[p]) for _ in range(window)] for p in range(1, ranks)]
        if iteration >= warmup:
            timed.append((exits[HUB], arrivals))
    completed, _ = _simulate(program, machine)
    samples: dict[int, list[float]] = {p: [] for p in range(1, ranks)}
    for exits, arrivals in timed:
        start = max(completed[(HUB, op.index)] for op in exits)
        for p, ops in arrivals.items():
            samples[p].append((max(completed[(HUB, op.index)] for op in ops) - start) / window)
    return {p: _median(s) for p, s in samples.items()}


def simulate_pairs(machine: Machine | str | Path, partner: Sequence[int], size: int, iters: int,
                   warmup: int) -> dict[int, float]:
    """Per initiator (the lower rank of each pair): the median half round trip (ns) of pairs.c, simulated."""
    ranks = len(partner)
    program = GoalProgram(ranks)
    last: list[list[Op]] = [[] for _ in range(ranks)]
    round_trips: dict[int, list[tuple[Op, Op]]] = {r: [] for r in range(ranks) if r < partner[r]}
    for phase, repeats in enumerate((warmup, iters)):
        exits = barrier(program, phase, last)
        last = [list(e) for e in exits]
        for _ in range(repeats):
            for r in range(ranks):
                peer = partner[r]
                if r < peer:
                    ping = program.send(r, size, peer, 0, last[r])
                    pong = program.recv(r, size, peer, 0, [ping])
                    if phase == 1:
                        round_trips[r].append((ping, pong))
                    last[r] = [pong]
                else:
                    ping = program.recv(r, size, peer, 0, last[r])
                    last[r] = [program.send(r, size, peer, 0, [ping])]
    completed, posted = _simulate(program, machine)
    return {r: _median([(completed[(r, pong.index)] - posted[(r, ping.index)]) / 2 for ping, pong in trips])
            for r, trips in round_trips.items()}
