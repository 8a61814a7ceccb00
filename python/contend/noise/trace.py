"""Noise traces (docs/formats.md): the detours of a measurement written in the text format the engine
replays, and read back through the engine's own reader (one parser, in Rust)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from contend.atomic import atomic_path
from contend.engine import engine, user_errors

MAGIC, VERSION = "contend-noise", 1


@dataclass
class NoiseTrace:
    """A noise trace: header values in ns and the detours of every rank (rank, start_ns, length_ns)."""

    path: str
    duration_ns: float
    resolution_ns: float | None
    threshold_ns: float | None
    ranks: int
    detours: pd.DataFrame

    def overhead(self) -> pd.Series:
        """Fraction of the trace's time in detours, per rank."""
        busy = self.detours.groupby("rank")["length_ns"].sum().reindex(range(self.ranks), fill_value=0.0)
        return busy / self.duration_ns


def read_trace(path: str | os.PathLike) -> NoiseTrace:
    """Read and check a trace with the engine's reader (a UserError naming file:line when malformed)."""
    with user_errors(os.fspath(path)):
        raw = engine().read_noise_trace(os.fspath(path))
    frames = []
    for rank, columns in enumerate(raw["ranks"]):
        starts = np.frombuffer(columns["starts"], dtype="<u8") / 1000
        lengths = np.frombuffer(columns["lengths"], dtype="<u8") / 1000
        frames.append(pd.DataFrame({"rank": rank, "start_ns": starts, "length_ns": lengths}))
    optional = lambda key: None if raw[key] is None else raw[key] / 1000  # noqa: E731 - ps to ns or None
    return NoiseTrace(path=os.fspath(path), duration_ns=raw["duration_ps"] / 1000, resolution_ns=optional("resolution_ps"),
                      threshold_ns=optional("threshold_ps"), ranks=len(frames),
                      detours=pd.concat(frames, ignore_index=True))


def _number(ns: float) -> str:
    """ns with at most 3 decimals (the engine's picoseconds), no trailing zeros.

    >>> _number(28000.0), _number(21.5), _number(0.0004)
    ('28000', '21.5', '0')
    """
    return f"{ns:.3f}".rstrip("0").rstrip(".")


def write_trace(path: str | os.PathLike, detours: pd.DataFrame, ranks: int, duration_ns: float,
                resolution_ns: float | None = None, threshold_ns: float | None = None,
                comments: Sequence[str] = ()) -> None:
    """Write ``detours`` (rank, start_ns, length_ns; sorted per rank, not overlapping) of ``ranks``
    ranks over ``duration_ns`` as a trace file, whole or not at all."""
    lines = [f"{MAGIC} {VERSION}"] + [f"# {c}" for c in comments]
    for key, value in (("resolution_ns", resolution_ns), ("threshold_ns", threshold_ns), ("duration_ns", duration_ns)):
        if value is not None:
            lines.append(f"{key} {_number(value)}")
    by_rank = {rank: group for rank, group in detours.groupby("rank")} if not detours.empty else {}
    for rank in range(ranks):
        lines.append(f"rank {rank}")
        group = by_rank.get(rank)
        if group is not None:
            lines += [f"{_number(s)} {_number(l)}" for s, l in zip(group["start_ns"], group["length_ns"])]
    lines.append(f"end {len(detours)}")
    with atomic_path(path) as temporary:
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
