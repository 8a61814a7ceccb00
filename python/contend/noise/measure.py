"""``contend noise measure``: the selfish-detour loop of the native suite (``contend-bench noise``) on
one rank, one rank per core (pinned) or an MPI job, summarised and turned into a noise trace.

The loop reads the clock as fast as it can for T seconds; the fastest iteration of a calibration loop is
the clock's resolution, an iteration longer than the threshold (default 10 x the resolution) is a
detour, and a detour's stolen time is its length minus the resolution. The trace keeps the stolen times,
so replaying it in the engine costs exactly the measured overhead.
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contend.native.bench.results import RunResult
from contend.native.bench.runner import run_benchmark
from contend.errors import UserError
from contend.noise.trace import write_trace

# Detours kept per rank and second of measurement: far above the 5-10 thousand per second seen at the
# default threshold on a busy virtual machine. Beyond it the trace ends where keeping stopped.
KEPT_PER_SECOND = 100_000
MAX_KEPT = 10_000_000
# Decades of detour length for the distribution table (ns): below 1 us, 1-10 us, ..., 10 ms and more.
DECADES = (0.0, 1e3, 1e4, 1e5, 1e6, 1e7, math.inf)


def usable_cores() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass
class Measurement:
    """Per-rank statistics (one row per rank) and every kept detour (rank, start_ns, length_ns as
    measured: an iteration's whole length) of one selfish-detour run."""

    per_rank: pd.DataFrame
    detours: pd.DataFrame
    run: RunResult
    seconds: float
    pinned: bool

    @property
    def ranks(self) -> int:
        return len(self.per_rank)

    def trace_detours(self) -> tuple[pd.DataFrame, float]:
        """The detours as stolen time (length - resolution) up to the time every rank kept all of
        its detours, and that time: what the trace holds."""
        duration = float(self.per_rank["complete_ns"].min())
        resolution = self.per_rank.set_index("rank")["resolution_ns"]
        stolen = self.detours.assign(length_ns=self.detours["length_ns"] - self.detours["rank"].map(resolution))
        inside = stolen[(stolen["start_ns"] + stolen["length_ns"] <= duration) & (stolen["length_ns"] > 0)]
        return inside.reset_index(drop=True), duration


def measure(seconds: float, ranks: int = 1, *, pin: bool = False, threshold_ns: float | None = None,
            timeout_s: float | None = None) -> Measurement:
    """Run the selfish-detour loop for ``seconds`` on ``ranks`` ranks (pinned one per CPU if ``pin``)."""
    if not 0.01 <= seconds <= 3600:
        raise UserError(f"--seconds: expected 0.01 <= T <= 3600, got {seconds:g}")
    kept = min(MAX_KEPT, max(10_000, math.ceil(seconds * KEPT_PER_SECOND)))
    options: dict[str, Any] = {"duration": f"{seconds:g}", "max_detours": kept, "pin": 1 if pin else None,
                               "threshold": None if threshold_ns is None else f"{threshold_ns:g}"}
    run = run_benchmark("noise", ranks=ranks, options=options,
                        timeout_s=timeout_s if timeout_s is not None else seconds * 3 + 120)
    per_rank = run.results[["rank", "host", "cpu", "resolution_ns", "threshold_ns", "detours", "stolen_ns",
                            "duration_ns", "overhead_pct", "complete_ns"]].copy()
    per_rank["rank"] = per_rank["rank"].astype(int)
    per_rank["cpu"] = per_rank["cpu"].astype(int)
    per_rank["detours"] = per_rank["detours"].astype(np.int64)
    detours = run.detours if not run.detours.empty else pd.DataFrame({"rank": [], "start_ns": [], "length_ns": []})
    detours = detours[["rank", "start_ns", "length_ns"]].astype({"rank": int}).sort_values(["rank", "start_ns"])
    kept_counts = detours.groupby("rank").size()
    per_rank["kept"] = per_rank["rank"].map(kept_counts).fillna(0).astype(np.int64)
    per_rank["rate_per_s"] = per_rank["detours"] / (per_rank["duration_ns"] / 1e9)
    return Measurement(per_rank.sort_values("rank").reset_index(drop=True), detours.reset_index(drop=True), run,
                       seconds, pin)


def distribution(detours: pd.DataFrame, total_ns: float) -> list[dict[str, Any]]:
    """Detours by decade of length: count, share of all detours, time in them as a share of the
    measured time (their sum is the overhead)."""
    lengths = detours["length_ns"].to_numpy(dtype=float)
    rows = []
    for low, high in zip(DECADES, DECADES[1:]):
        inside = lengths[(lengths >= low) & (lengths < high)]
        rows.append({"from_ns": low, "to_ns": high, "count": int(inside.size),
                     "share": inside.size / lengths.size if lengths.size else 0.0,
                     "overhead_pct": 100 * float(inside.sum()) / total_ns if total_ns else 0.0})
    return rows


def summary(m: Measurement, trace_path: str | None = None) -> dict[str, Any]:
    """Everything ``contend noise measure --json`` prints: per rank, the distribution, the largest."""
    lengths = m.detours["length_ns"].to_numpy(dtype=float)
    total = float(m.per_rank["duration_ns"].sum())
    largest = m.detours.nlargest(10, "length_ns")
    percentiles = {f"p{p}": float(np.percentile(lengths, p)) if lengths.size else None for p in (50, 90, 99)}
    return {
        "host": platform.node(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": m.seconds,
        "ranks": m.ranks,
        "pinned": m.pinned,
        "loadavg_1min": m.run.meta.get("loadavg_1min"),
        "mpi_library": m.run.meta.get("mpi_library"),
        "resolution_ns": float(m.per_rank["resolution_ns"].min()),
        "threshold_ns": float(m.per_rank["threshold_ns"].max()),
        "detours": int(m.per_rank["detours"].sum()),
        "overhead_pct": 100 * float(m.per_rank["stolen_ns"].sum()) / total,
        "detour_ns": {**percentiles, "max": float(lengths.max()) if lengths.size else None,
                      "mean": float(lengths.mean()) if lengths.size else None},
        "per_rank": m.per_rank.to_dict(orient="records"),
        "distribution": distribution(m.detours, total),
        "largest": largest.to_dict(orient="records"),
        "trace": trace_path,
    }


def save_trace(m: Measurement, path: str | os.PathLike) -> int:
    """Write the measurement's noise trace (one block per rank); returns the number of detours in it."""
    detours, duration = m.trace_detours()
    comments = [f"contend noise measure on {platform.node()} at {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
                f"{m.ranks} rank(s){', pinned one per CPU' if m.pinned else ''}, {m.seconds:g} s, lengths = stolen time "
                "(iteration - resolution)",
                "cpus " + " ".join(str(c) for c in m.per_rank["cpu"])]
    write_trace(path, detours, m.ranks, duration, resolution_ns=float(m.per_rank["resolution_ns"].min()),
                threshold_ns=float(m.per_rank["threshold_ns"].max()), comments=comments)
    return len(detours)
