"""The communication patterns of ``contend reproduce mapping``, as GOAL schedules and graphs.

A pattern is a list of steps; in each step every rank posts all its sends and receives of the step at
once (nonblocking; all-to-alls too), waits for them, then computes (a calc) before the next step. Each
step's messages carry the step's index as tag, so a fast rank's next step can never match a slow rank's
current one. The rank order is the application's: the default (block) placement puts rank r on node r,
so how an application numbers its ranks decides how good the default is.

- ``stencil``: a 3D halo exchange on a periodic process grid of the torus's shape, 6 neighbours, ranks in
  C order (the last coordinate fastest, as MPI_Cart_create numbers them), while the engine numbers the
  torus's nodes x fastest: the default lays the grid's last dimension along x (on a cube that only
  exchanges axes, and block is optimal).
- ``openatom``: after OpenAtom as Bhatele and Kale 2009's poster describes it ("multiple object graphs which
  communicate with each other along orthogonal dimensions"); the poster gives no structure or sizes
  beyond that sentence, so the rest is ours (the array names are OpenAtom's). Assumed: one object per rank; a 2D array of ``states x
  planes`` objects (wave-function planes, OpenAtom's GSpace/RealSpace) numbered state-major (a state's
  planes contiguous, as a Charm++ array enumerates them), then a 2D array of ``planes x chunks`` density
  objects (RhoR). One iteration: (1) the FFT transpose, an all-to-all among the planes of each state;
  (2) the density reduction, each state-plane object sending its plane's contribution to one chunk of that
  plane's density (chunk = state mod chunks); (3) the density multicast back along the same edges; (4) the
  orthonormalization, an all-to-all among the states of each plane (the pair calculators' traffic, folded
  onto the state-plane objects). A state talks along planes, a plane across states: orthogonal
  dimensions. Left out: the transpose back (the same edges as (1) once more) and the pair calculators
  as objects of their own.
- ``transpose``: a 2D FFT-like transpose on a ``rows x columns`` process grid (C order): an all-to-all
  within each row, then within each column.
- ``random``: every step a fresh random perfect matching; partners exchange. The union of the matchings
  has little structure for a placement to use (the control: most partners stay far apart whatever the
  placement; with few matchings per rank some structure remains, which a mapping finds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from contend.atomic import atomic_path
from contend.mapping.graph import CommGraph


@dataclass(frozen=True)
class Step:
    """The messages of one step (``src[i] -> dst[i]``, ``bytes[i]``), then ``calc_ns`` of computation."""

    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    calc_ns: int


@dataclass(frozen=True)
class Pattern:
    """``ranks`` ranks running ``steps`` in order; ``description`` says what it is, for reports."""

    name: str
    ranks: int
    steps: tuple[Step, ...]
    description: str

    def graph(self) -> CommGraph:
        """Bytes and messages between each pair of ranks, over all steps."""
        return CommGraph.from_pairs(self.ranks, *(np.concatenate([getattr(s, k) for s in self.steps])
                                                  for k in ("src", "dst", "bytes")))

    @property
    def messages(self) -> int:
        return sum(len(s.src) for s in self.steps)

    def goal(self) -> str:
        """The pattern as a GOAL schedule (docs/formats.md)."""
        blocks: list[list[str]] = [[] for _ in range(self.ranks)]
        for index, step in enumerate(self.steps):
            ops: list[list[str]] = [[] for _ in range(self.ranks)]
            for kind, me, peer in (("send", step.src, step.dst), ("recv", step.dst, step.src)):
                word = "to" if kind == "send" else "from"
                for k, (a, b, size) in enumerate(zip(me.tolist(), peer.tolist(), step.bytes.tolist())):
                    ops[a].append(f"{kind[0]}{index}_{k}: {kind} {size}b {word} {b} tag {index}")
            for rank, lines in enumerate(ops):
                labels = [line.split(":", 1)[0] for line in lines]
                block = blocks[rank]
                block += lines
                if index:
                    block += [f"{label} requires c{index - 1}" for label in labels]
                block.append(f"c{index}: calc {step.calc_ns}")
                block += [f"c{index} requires {label}" for label in labels]
                if index and not labels:
                    block.append(f"c{index} requires c{index - 1}")
        text = [f"num_ranks {self.ranks}\n"]
        for rank, block in enumerate(blocks):
            text.append(f"rank {rank} {{\n  " + "\n  ".join(block) + "\n}\n")
        return "".join(text)

    def write_goal(self, path: Path) -> Path:
        with atomic_path(path) as temporary:
            temporary.write_text(self.goal(), encoding="utf-8")
        return path


def _all_to_all(groups: np.ndarray, size: int, calc_ns: int) -> Step:
    """One step in which every rank of each row of ``groups`` sends ``size`` bytes to every other rank
    of its row, all messages posted at once (MPICH's all-to-all for medium messages; Charm++ objects
    send as they go), then ``calc_ns``."""
    n = groups.shape[1]
    src = np.repeat(groups, n, axis=1).ravel()
    dst = np.tile(groups, (1, n)).ravel()
    keep = src != dst
    return _step(src[keep], dst[keep], np.full(int(keep.sum()), size), calc_ns)


def _step(src, dst, nbytes, calc_ns: int) -> Step:
    return Step(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                np.asarray(nbytes, dtype=np.int64), int(calc_ns))


def stencil(dims: Sequence[int], size: int, iterations: int, calc_ns: int) -> Pattern:
    """3D halo exchange on a periodic ``dims`` grid, ranks in C order: ``size`` bytes to each of the
    6 neighbours (fewer where a dimension has fewer than 3 ranks), then ``calc_ns``, ``iterations`` times."""
    ranks = math.prod(dims)
    grid = np.arange(ranks).reshape(dims)
    src, dst = [], []
    for axis, extent in enumerate(dims):
        for shift in sorted({1 % extent, -1 % extent} - {0}):
            src.append(grid.ravel())
            dst.append(np.roll(grid, -shift, axis=axis).ravel())
    src, dst = np.concatenate(src), np.concatenate(dst)
    step = _step(src, dst, np.full(len(src), size), calc_ns)
    shape = "x".join(map(str, dims))
    return Pattern("stencil", ranks, (step,) * iterations,
                   f"3D stencil on a {shape} periodic grid (C order), {size} B to each neighbour, "
                   f"{iterations} iterations")


def openatom(states: int, planes: int, chunks: int, fft_bytes: int, density_bytes: int, ortho_bytes: int,
             iterations: int, calc_ns: int) -> Pattern:
    """The OpenAtom-like pattern of the module docstring: ``states x planes`` state-plane objects (ranks
    ``s * planes + p``), then ``planes x chunks`` density objects; ``states`` a multiple of ``chunks``."""
    if states % chunks:
        raise ValueError(f"{states} states do not split into {chunks} density chunks")
    state_plane = np.arange(states * planes).reshape(states, planes)
    density = states * planes + np.arange(planes * chunks).reshape(planes, chunks)
    transpose = _all_to_all(state_plane, fft_bytes, calc_ns)
    s, p = np.divmod(state_plane.ravel(), planes)
    chunk_of = density[p, s % chunks]
    reduce = _step(state_plane.ravel(), chunk_of, np.full(len(s), density_bytes), calc_ns)
    multicast = _step(chunk_of, state_plane.ravel(), np.full(len(s), density_bytes), calc_ns)
    ortho = _all_to_all(state_plane.T, ortho_bytes, calc_ns)
    ranks = states * planes + planes * chunks
    return Pattern("openatom", ranks, (transpose, reduce, multicast, ortho) * iterations,
                   f"OpenAtom-like: {states} states x {planes} planes and {planes} x {chunks} density objects; "
                   f"transpose {fft_bytes} B, density {density_bytes} B, orthonormalization {ortho_bytes} B per "
                   f"message, {iterations} iteration(s)")


def transpose(rows: int, columns: int, size: int, iterations: int, calc_ns: int) -> Pattern:
    """All-to-all within each row of a ``rows x columns`` grid (C order), then within each column."""
    grid = np.arange(rows * columns).reshape(rows, columns)
    steps = (_all_to_all(grid, size, calc_ns), _all_to_all(grid.T, size, calc_ns))
    return Pattern("transpose", rows * columns, steps * iterations,
                   f"2D transpose on a {rows}x{columns} grid: all-to-all in rows then columns, {size} B per "
                   f"message, {iterations} iteration(s)")


def random_pairs(ranks: int, size: int, steps: int, calc_ns: int, seed: int = 0) -> Pattern:
    """``steps`` fresh random perfect matchings (``ranks`` even); partners exchange ``size`` bytes."""
    if ranks % 2:
        raise ValueError(f"random pairs need an even number of ranks, not {ranks}")
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(steps):
        a, b = rng.permutation(ranks).reshape(2, -1)
        made.append(_step(np.concatenate([a, b]), np.concatenate([b, a]), np.full(ranks, size), calc_ns))
    return Pattern("random", ranks, tuple(made),
                   f"random pairs: {steps} fresh random matchings of {ranks} ranks, {size} B each way")
