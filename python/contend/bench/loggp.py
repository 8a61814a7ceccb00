"""LogGP parameters from measurements, and the machine file the simulation engine reads.

Method (Netgauge's parametrised round trips; the ``loggp`` pattern measures PRTT medians per size s):
    g(s)  = (PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)          gap of back-to-back messages
    o_s(s) = (PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d     send overhead (d > g(s): CPU-bound sender)
    o_r(s) = time of MPI_Recv of a message that has already arrived (timed directly)
From the smallest size (1 B): o_s, o_r, g, and L = PRTT(1,0,1)/2 - o_s - o_r.
G, the time per byte of a long message, is the slope of the round trip between the smallest and the
largest size: G = (PRTT(1,0,max) - PRTT(1,0,1)) / (2 (max-1)), so the model is exact at both ends.
O, the CPU time per byte, is the slope of (o_s(s)+o_r(s))/2 over eager sizes, capped at G.
S, the eager threshold, is where the round trip jumps more than its bytes explain (MPICH switches
protocol there); ``refine_step`` narrows it with extra ping-pongs between the two sizes around the jump.

The engine's ping-pong (LogGOPSim v1 semantics) is a straight line in s:
    RTT(s) = 2 (2o + L + (s-1) max(O, G))
so a machine whose round trip has a step cannot be predicted everywhere by one line; the fit records
by how much (``best_line_error``) and what a second, rendezvous line would be.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from contend.atomic import atomic_path
from contend.bench.results import RunResult
from contend.errors import UserError

TOLERANCE = 0.10  # the accuracy the issue asks of the fitted ping-pong
STEP_GROWTH = 0.5  # a protocol step: the round trip grows by half or more between neighbouring sizes...
STEP_BYTES = 2.0  # ...and by twice what the time per byte just above the jump explains


def netgauge_table(loggp_run: RunResult) -> pd.DataFrame:
    """Per size: the PRTT medians and the derived o_s, o_r, g(s) (all ns), sorted by size."""
    rows = loggp_run.results
    if rows.empty or "prtt1_ns" not in rows:
        raise UserError("no loggp results to fit (run the loggp benchmark)")
    t = rows[["bytes", "prtt1_ns", "prttn_ns", "prttd_ns", "delay_ns", "n", "o_r_ns"]].copy()
    t = t.sort_values("bytes").reset_index(drop=True)
    t["gap_ns"] = (t["prttn_ns"] - t["prtt1_ns"]) / (t["n"] - 1)
    t["o_s_ns"] = (t["prttd_ns"] - t["prtt1_ns"]) / (t["n"] - 1) - t["delay_ns"]
    return t


def find_step(sizes: Sequence[int], round_trips: Sequence[float]) -> tuple[int, int] | None:
    """The neighbouring sizes (low, high) between which the round trip jumps, or None.

    A jump: the time grows by more than half between two neighbouring sizes, and by more than twice
    what the time per byte just above it (the next interval's slope) explains. Ties to noise are
    unlikely: both conditions must hold. The largest such jump wins.

    >>> find_step([1, 2048, 4096, 8192, 16384, 1048576], [2500, 2800, 3300, 11000, 13900, 260000])
    (4096, 8192)
    >>> find_step([1, 1024, 65536, 1048576], [2500, 2600, 30000, 260000]) is None
    True
    """
    s, y = np.asarray(sizes, dtype=float), np.asarray(round_trips, dtype=float)
    best, best_ratio = None, 1.0
    for i in range(len(s) - 2):
        rise = y[i + 1] - y[i]
        slope_above = max((y[i + 2] - y[i + 1]) / (s[i + 2] - s[i + 1]), 0.0)
        if rise > STEP_GROWTH * y[i] and rise > STEP_BYTES * slope_above * (s[i + 1] - s[i]):
            if y[i + 1] / y[i] > best_ratio:
                best, best_ratio = (int(s[i]), int(s[i + 1])), y[i + 1] / y[i]
    return best


def refine_step(
    low: int, high: int, measure: Callable[[list[int]], list[float]], points: int = 33, rounds: int = 2
) -> tuple[int, int]:
    """Narrow (low, high) around a step: measure evenly spaced sizes, keep the two around the largest rise.

    ``measure(sizes)`` returns round-trip times. The largest rise between neighbouring sizes is the
    step (a noisy single sample moves a time by a fraction of the jump, never by all of it).
    """
    for _ in range(rounds):
        if high - low <= 1:
            break
        sizes = sorted(set(int(round(x)) for x in np.linspace(low, high, points)))
        rises = np.diff(np.asarray(measure(sizes), dtype=float))
        at = int(np.argmax(rises))
        low, high = sizes[at], sizes[at + 1]
    return low, high


def best_line_error(sizes: Sequence[int], round_trips: Sequence[float]) -> float:
    """The smallest possible maximum relative error of any straight line a + b*s through the data.

    Nested ternary searches (the maximum of relative errors is convex in a and b).

    >>> round(best_line_error([1, 2, 3], [10, 20, 30]), 6)
    0.0
    """
    s, y = np.asarray(sizes, dtype=float), np.asarray(round_trips, dtype=float)

    def worst(a: float, b: float) -> float:
        return float(np.max(np.abs(a + b * s - y) / y))

    def ternary(f: Callable[[float], float], lo: float, hi: float) -> tuple[float, float]:
        for _ in range(100):
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if f(m1) < f(m2):
                hi = m2
            else:
                lo = m1
        x = (lo + hi) / 2
        return x, f(x)

    def best_for_slope(b: float) -> float:
        return ternary(lambda a: worst(a, b), -float(np.max(y)), 2 * float(np.max(y)))[1]

    smallest = float(np.min(s[s > 0])) if (s > 0).any() else 1.0
    return ternary(best_for_slope, 0.0, 2 * float(np.max(y)) / smallest)[1]


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 and np.ptp(x) > 0 else 0.0


@dataclass
class LogGPFit:
    """Fitted parameters (ns, ns per byte, bytes) and what backs them."""

    L: float
    o_s: float
    o_r: float
    g: float
    G: float
    O: float
    S: int
    step: tuple[int, int] | None
    netgauge: pd.DataFrame = field(repr=False)
    G_stream: float = 0.0  # per-byte gap of back-to-back messages (slope of g(s))
    notes: list[str] = field(default_factory=list)

    @property
    def o(self) -> float:
        return (self.o_s + self.o_r) / 2

    def round_trip(self, sizes: Sequence[int]) -> np.ndarray:
        """The engine's ping-pong round trip for each size (closed form of LogGOPSim v1, eager)."""
        s = np.asarray(sizes, dtype=float)
        return 2 * (2 * self.o + self.L + np.maximum(s - 1, 0) * max(self.O, self.G))


def fit_loggp(loggp_run: RunResult, step: tuple[int, int] | None = None) -> LogGPFit:
    """Fit LogGP parameters to a loggp run. ``step`` (low, high) overrides the step found in the run."""
    t = netgauge_table(loggp_run)
    if len(t) < 2:
        raise UserError("the loggp run needs at least two sizes to fit G")
    smallest, largest = t.iloc[0], t.iloc[-1]
    notes = []
    o_s, o_r = float(smallest["o_s_ns"]), float(smallest["o_r_ns"])
    if o_s < 0:
        notes.append(f"o_s measured {o_s:.1f} ns (below timer noise), set to 0")
        o_s = 0.0
    L = float(smallest["prtt1_ns"]) / 2 - o_s - o_r
    if L < 0:
        notes.append(f"L came out {L:.1f} ns: the overheads explain the whole round trip; set to 0")
        L = 0.0
    span = float(largest["bytes"]) - float(smallest["bytes"])
    G = (float(largest["prtt1_ns"]) - float(smallest["prtt1_ns"])) / (2 * span) if span > 0 else 0.0
    if step is None:
        step = find_step(t["bytes"].tolist(), t["prtt1_ns"].tolist())
    S = step[1] - 1 if step else int(largest["bytes"])
    eager = t[t["bytes"] <= S]
    O_measured = _slope(eager["bytes"].to_numpy(float), ((eager["o_s_ns"] + eager["o_r_ns"]) / 2).to_numpy())
    O = min(max(O_measured, 0.0), G)
    if O_measured > G:
        notes.append(f"CPU per byte {O_measured:.4f} ns exceeds G; capped at G so the ping-pong slope stays G")
    above = t[t["bytes"] > S] if step else t
    G_stream = max(_slope(above["bytes"].to_numpy(float), above["gap_ns"].to_numpy()), 0.0)
    return LogGPFit(L=L, o_s=o_s, o_r=o_r, g=max(float(smallest["gap_ns"]), 0.0), G=G, O=O, S=S,
                    step=step, netgauge=t, G_stream=G_stream, notes=notes)


def measured_round_trips(pingpong_run: RunResult) -> pd.DataFrame:
    """bytes, measured round trip (2 x median one-way) and load, from a pingpong run."""
    rows = pingpong_run.results.sort_values("bytes")
    return pd.DataFrame({"bytes": rows["bytes"].astype(int).to_numpy(),
                         "measured_ns": 2 * rows["t_p50_ns"].to_numpy()})


def compare(fit: LogGPFit, pingpong_run: RunResult, engine: Sequence[float] | None = None) -> pd.DataFrame:
    """Predicted vs measured round trip per size; ``engine`` adds the simulator's own predictions."""
    table = measured_round_trips(pingpong_run)
    table["predicted_ns"] = fit.round_trip(table["bytes"])
    if engine is not None:
        table["engine_ns"] = np.asarray(engine, dtype=float)
    column = "engine_ns" if engine is not None else "predicted_ns"
    table["error_pct"] = 100 * (table[column] - table["measured_ns"]) / table["measured_ns"]
    table["regime"] = np.where(table["bytes"] <= fit.S, "eager", "rendezvous")
    return table


def rendezvous_line(fit: LogGPFit) -> tuple[float, float] | None:
    """Intercept and slope (ns, ns/B) of the parameter run's round trips above S, fitted in relative
    terms (weights 1/RTT), or None without a step. What a model with a rendezvous cost would use."""
    above = fit.netgauge[fit.netgauge["bytes"] > fit.S] if fit.step else fit.netgauge.iloc[0:0]
    if len(above) < 2:
        return None
    y = above["prtt1_ns"].to_numpy(float)
    slope, intercept = np.polyfit(above["bytes"].to_numpy(float), y, 1, w=1 / y)
    return float(intercept), float(slope)


def two_line_errors(fit: LogGPFit, table: pd.DataFrame) -> np.ndarray | None:
    """Relative errors (%) of a two-regime model against the check: the LogGP line up to S, the
    rendezvous line above. Evidence for what a rendezvous cost in the engine would buy."""
    line = rendezvous_line(fit)
    if line is None:
        return None
    s = table["bytes"].to_numpy(float)
    predicted = np.where(s <= fit.S, fit.round_trip(s), line[0] + line[1] * s)
    return 100 * (predicted - table["measured_ns"].to_numpy()) / table["measured_ns"].to_numpy()


def engine_round_trips(machine_file: Path, sizes: Sequence[int]) -> list[float] | None:
    """The simulator's ping-pong makespan per size, through the ``contend sim`` command (run in this
    process); None when the engine is not built or refuses the file."""
    from contend.cli import main as contend  # the CLI imports this package: import at call time

    results = []
    for size in sizes:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            code = contend(["sim", "--collective", "pingpong", "--ranks", "2", "--bytes", str(size),
                            "--machine", str(machine_file), "--json"])
        if code != 0:
            return None
        results.append(float(json.loads(printed.getvalue())["makespan"]))
    return results


def _ns(value: float) -> str:
    return f'"{value:.3f}ns"'


def _per_byte(value: float) -> str:
    return f'"{value:.4f}ns"'


def _toml_list(values: Sequence[float], digits: int = 1) -> str:
    return "[" + ", ".join(f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in values) + "]"


def machine_toml(fit: LogGPFit, table: pd.DataFrame, meta: dict, name: str = "this-host") -> str:
    """The machine file text: [machine], [loggops] for the engine, [fit] for the record."""
    host = ",".join(meta.get("hosts", [])) or "this host"
    library = meta.get("mpi_library", "unknown MPI")
    within = bool((table["error_pct"].abs() <= 100 * TOLERANCE).all())
    outside = table.loc[table["error_pct"].abs() > 100 * TOLERANCE, "bytes"].astype(int).tolist()
    line_error = best_line_error(table["bytes"], table["measured_ns"])
    notes = list(fit.notes)
    if fit.step:
        notes.append(
            f"the measured round trip jumps between {fit.step[0]} and {fit.step[1]} B (a protocol switch of "
            f"the MPI library); the model's ping-pong is one straight line, so it cannot follow the jump: "
            f"even the best possible line is off by {100 * line_error:.0f}% somewhere in 1 B..1 MiB"
        )
    if within:
        notes.append("the model follows the measured ping-pong within 10% at every size")
    elif not fit.step:
        worst = table.loc[table["error_pct"].abs().idxmax()]
        notes.append(f"no protocol step found, yet the model is off by {worst['error_pct']:+.0f}% at "
                     f"{int(worst['bytes'])} B: the round trip is not a straight line here, or the machine "
                     f"changed between the runs (compare the load averages)")
    rendezvous, two_line = rendezvous_line(fit), two_line_errors(fit, table)
    lines = [
        "# Written by `contend bench fit`. [loggops] is what the simulator uses; [fit] records how.",
        "[machine]",
        f'name = "{name}"',
        f'description = "fitted by contend bench fit on {host} at {meta.get("started", "?")}, '
        f'{library.strip()}, shared memory"',
        'source = "measured"',
        "",
        "[loggops]",
        f"L = {_ns(fit.L)}   # latency",
        f"o = {_ns(fit.o)}   # CPU overhead per message: mean of o_s and o_r",
        f"o_s = {_ns(fit.o_s)}",
        f"o_r = {_ns(fit.o_r)}",
        f"g = {_ns(fit.g)}   # gap per message",
        f"G = {_per_byte(fit.G)}   # time per byte of a long message",
        f"O = {_per_byte(fit.O)}   # CPU overhead per byte",
        f"S = {fit.S}   # largest eager message in bytes",
        "",
        "[fit]",
        'method = "Netgauge parametrised round trips (loggp pattern), checked by an independent ping-pong; '
        'see docs/measure.md"',
        f"ranks = {meta.get('ranks', 2)}",
        f"runs = {meta.get('runs', 1)}   # each measurement repeated, combined by the median",
        f"loadavg_1min = {_toml_list(np.atleast_1d(meta.get('loadavg_1min', -1.0)).astype(float).tolist(), 2)}",
        f"G_stream = {_per_byte(fit.G_stream)}   # per-byte gap of back-to-back messages",
        f"protocol_step = {list(fit.step) if fit.step else []}   # sizes around the round-trip jump",
        f"within_10pct = {'true' if within else 'false'}",
        f"max_error_pct = {float(table['error_pct'].abs().max()):.1f}",
        f"sizes_outside_10pct = {outside}",
        f"best_line_max_error_pct = {100 * line_error:.1f}",
        f"note = {json.dumps('; '.join(notes))}",
        f"netgauge_bytes = {_toml_list(fit.netgauge['bytes'].astype(int).tolist())}",
        f"netgauge_o_s_ns = {_toml_list(fit.netgauge['o_s_ns'].astype(float).tolist())}",
        f"netgauge_o_r_ns = {_toml_list(fit.netgauge['o_r_ns'].astype(float).tolist())}",
        f"netgauge_gap_ns = {_toml_list(fit.netgauge['gap_ns'].astype(float).tolist())}",
        f"netgauge_prtt1_ns = {_toml_list(fit.netgauge['prtt1_ns'].astype(float).tolist())}",
        f"pingpong_bytes = {_toml_list(table['bytes'].astype(int).tolist())}",
        f"pingpong_measured_ns = {_toml_list(table['measured_ns'].astype(float).tolist())}",
        f"pingpong_predicted_ns = {_toml_list(table['predicted_ns'].astype(float).tolist())}",
    ]
    if "engine_ns" in table:
        lines.append(f"pingpong_engine_ns = {_toml_list(table['engine_ns'].astype(float).tolist())}")
    if rendezvous and two_line is not None:
        lines += [
            "",
            "[fit.rendezvous]   # round trips above S as their own line, RTT(s) = intercept + slope * s, for",
            "                   # a model with a rendezvous cost; max_error_pct: both lines vs the check",
            f"intercept = {_ns(rendezvous[0])}",
            f"slope = {_per_byte(rendezvous[1])}",
            f"max_error_pct = {float(np.abs(two_line).max()):.1f}",
        ]
    return "\n".join(lines) + "\n"


def write_machine(text: str, path: str | os.PathLike) -> Path:
    """Write the machine file whole or not at all."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)
    return Path(path)
