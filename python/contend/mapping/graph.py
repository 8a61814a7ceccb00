"""The communication graph of a job: per ordered pair of ranks, the bytes and messages sent.

Every mapping method and objective reads this one type. Pairs are aggregated (one entry per ordered
``(src, dst)``, ``src != dst``) and sorted by ``(src, dst)``; messages a rank sends itself are left out,
since no placement changes their cost.
"""

from __future__ import annotations

import os
from contend.atomic import scratch_directory
from dataclasses import dataclass, field

import numpy as np

from contend.engine import engine, user_errors


@dataclass(frozen=True)
class CommGraph:
    """``ranks`` ranks; per directed pair ``src[i] -> dst[i]``: ``bytes[i]`` and ``messages[i]``."""

    ranks: int
    src: np.ndarray = field(repr=False)
    dst: np.ndarray = field(repr=False)
    bytes: np.ndarray = field(repr=False)
    messages: np.ndarray = field(repr=False)

    @classmethod
    def from_pairs(cls, ranks: int, src, dst, nbytes, messages=None) -> "CommGraph":
        """Aggregates one entry per message (or per pair) into the graph; ``messages`` defaults to one
        per entry. Raises ValueError for a rank outside ``0..ranks``."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        nbytes = np.asarray(nbytes, dtype=np.int64)
        messages = np.ones(len(src), dtype=np.int64) if messages is None else np.asarray(messages, dtype=np.int64)
        if not (len(src) == len(dst) == len(nbytes) == len(messages)):
            raise ValueError("src, dst, bytes and messages differ in length")
        if ranks < 1:
            raise ValueError(f"a job has at least one rank, not {ranks}")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= ranks):
            raise ValueError(f"a message names a rank outside 0..{ranks - 1}")
        apart = src != dst
        key = src[apart] * ranks + dst[apart]
        pairs, inverse = np.unique(key, return_inverse=True)
        return cls(
            ranks=int(ranks),
            src=pairs // ranks,
            dst=pairs % ranks,
            bytes=np.bincount(inverse, weights=nbytes[apart], minlength=len(pairs)).astype(np.int64),
            messages=np.bincount(inverse, weights=messages[apart], minlength=len(pairs)).astype(np.int64),
        )

    @classmethod
    def from_goal(cls, path: str | os.PathLike) -> "CommGraph":
        """Every send of a GOAL schedule (plain or gzip), summed per pair by the engine; UserError when
        the file is missing or malformed."""
        path = os.fspath(path)
        with user_errors(path):
            t = engine().goal_traffic(path)
        return cls.from_pairs(
            t["ranks"], *(np.frombuffer(t[k], dtype) for k, dtype in
                          (("src", "<u4"), ("dst", "<u4"), ("bytes", "<u8"), ("messages", "<u8"))))

    @classmethod
    def from_records(cls, path: str | os.PathLike) -> "CommGraph":
        """The messages of a records file (``contend sim --records`` or ``contend trace``, checked as
        ``contend diagnose`` checks it); collective rows (``src == dst``, or no peer) are left out."""
        from contend.analysis.diagnose_input import load_records

        records = load_records(path)
        frame = records.frame
        src, dst = frame["src"].to_numpy(np.int64), frame["dst"].to_numpy(np.int64)
        keep = (dst >= 0) & (src != dst)
        return cls.from_pairs(records.num_ranks, src[keep], dst[keep], frame["bytes"].to_numpy(np.int64)[keep])

    @classmethod
    def from_trace(cls, path: str | os.PathLike) -> "CommGraph":
        """The messages of a trace (a ``contend trace`` directory or any trace ``contend goal convert``
        reads), converted to a temporary GOAL schedule first."""
        from contend.native.trace.replay import convert_input

        with scratch_directory("contend-map-") as scratch:
            goal = os.path.join(scratch, "trace.goal")
            # Every one-sided operation a message: a mapping moves ranks off the host they shared.
            convert_input(os.fspath(path), goal, in_place=False)
            return cls.from_goal(goal)

    @classmethod
    def from_collective(cls, name: str, ranks: int, size: int, root: int = 0, seed: int = 0) -> "CommGraph":
        """The messages of a generated collective or pattern (``contend sim --collective``)."""
        from contend.simulation.simulate import collective_arguments

        name, ranks, size, root, seed = collective_arguments(name, ranks, size, root, seed)
        with scratch_directory("contend-map-") as scratch:
            goal = os.path.join(scratch, f"{name}.goal")
            with user_errors(f"collective {name}"):
                engine().write_goal(name, ranks, size, goal, root=root, seed=seed)
            return cls.from_goal(goal)

    @property
    def total_bytes(self) -> int:
        return int(self.bytes.sum())

    def undirected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The graph as partitioners want it: CSR ``(xadj, adjncy, weight)`` of the undirected graph,
        the weight of an edge being the bytes sent both ways (at least 1, as METIS requires)."""
        a = np.minimum(self.src, self.dst)
        b = np.maximum(self.src, self.dst)
        key, inverse = np.unique(a * self.ranks + b, return_inverse=True)
        weight = np.bincount(inverse, weights=self.bytes, minlength=len(key)).astype(np.int64)
        lo, hi = key // self.ranks, key % self.ranks
        rows = np.concatenate([lo, hi])
        cols = np.concatenate([hi, lo])
        both = np.concatenate([weight, weight])
        order = np.lexsort((cols, rows))
        xadj = np.zeros(self.ranks + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.ranks), out=xadj[1:])
        return xadj, cols[order], np.maximum(both[order], 1)
