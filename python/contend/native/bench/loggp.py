"""LogGP parameters from measurements, and the machine file the simulation engine reads.

Method (Netgauge's parametrised round trips; the ``loggp`` pattern measures PRTT medians per size s):
    g(s)  = (PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)          gap of back-to-back messages
    o_s(s) = (PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d     send overhead (d > g(s): CPU-bound sender)
    o_r(s) = time of MPI_Recv of a message that has already arrived (timed directly)
    PRTT(1,0,s) = 2 (o_s + L + o_r) + 2 (s-1) G           the round trip of one message each way
S, the eager threshold, is where the round trip jumps more than its bytes explain (MPICH switches
protocol there); ``refine_step`` narrows it with extra ping-pongs between the two sizes around the jump.

Each side of S is its own regime with its own costs (the engine's ``[loggops.rendezvous]``), fitted the
same way: the line a + b (s-1) through the regime's PRTT(1,0,s) with the least squared relative error
gives G = b/2, and a = 2 (2o + L) is split into overhead and latency.
- eager (s <= S): o_s, o_r and g measured at the smallest size (g at least o_s: back-to-back sends each
  cost the sender o_s), o = (o_s + o_r)/2, L = a/2 - o_s - o_r;
  O is the slope of (o_s(s)+o_r(s))/2 over the eager sizes, capped at G.
- rendezvous (s > S): o stays the eager o (the per-call CPU cost), the handshake's extra time goes to
  L = a/2 - 2o (the sender waits for it; its overheads, measured, overlap with the copy), and the line
  is fitted with a >= 4o, so L >= 0: a rendezvous costs at least the calls an eager message costs; g and
  G_stream are the intercept and slope of g(s); O as for eager, over these sizes.
The engine's ping-pong is then exactly the fitted lines: RTT(s) = 2 (2o + L + (s-1) max(O, G)) with the
costs of the regime of s.

Round trips, fitted and checked, are trimmed means of their samples (``t_tmean_ns``), not medians: on a
shared virtual machine the round trips of one size fall into a fast and a slow mode, and when about
half are slow the median jumps between the modes from run to run (by 25-30%) while the trimmed mean
follows their mix.
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
from contend.native.bench.results import RunResult
from contend.errors import UserError

TOLERANCE = 0.10  # the accuracy the issue asks of the fitted ping-pong
STEP_GROWTH = 0.25  # a protocol step: the round trip grows by a quarter or more between neighbouring sizes...
STEP_BYTES = 2.0  # ...and by twice what the time per byte just above the jump explains


def netgauge_table(loggp_run: RunResult) -> pd.DataFrame:
    """Per size: the PRTT medians, the derived o_s, o_r, g(s), and ``round_trip_ns``, the trimmed mean
    of the PRTT(1,0,s) samples (all ns), sorted by size."""
    rows = loggp_run.results
    if rows.empty or "prtt1_ns" not in rows:
        raise UserError("no loggp results to fit (run the loggp benchmark)")
    t = rows[["bytes", "prtt1_ns", "prttn_ns", "prttd_ns", "delay_ns", "n", "o_r_ns"]].copy()
    t["round_trip_ns"] = 2 * rows["t_tmean_ns"]  # the loggp row's samples are PRTT(1,0,s) / 2
    t = t.sort_values("bytes").reset_index(drop=True)
    t["gap_ns"] = (t["prttn_ns"] - t["prtt1_ns"]) / (t["n"] - 1)
    t["o_s_ns"] = (t["prttd_ns"] - t["prtt1_ns"]) / (t["n"] - 1) - t["delay_ns"]
    return t


def find_step(sizes: Sequence[int], round_trips: Sequence[float]) -> tuple[int, int] | None:
    """The neighbouring sizes (low, high) between which the round trip jumps, or None.

    A jump: the time grows by more than a quarter between two neighbouring sizes, and by more than twice
    what the time per byte just above it (the next interval's slope) explains. Ties to noise are
    unlikely: both conditions must hold. The jump with the largest unexplained rise (relative to the
    time below it) wins. A quarter, not more: when this machine's eager copies are slow, the round trip
    rises only by a third where MPICH switches protocol, but its time per byte falls sixfold there.

    >>> find_step([1, 2048, 4096, 8192, 16384, 1048576], [2500, 2800, 3300, 11000, 13900, 260000])
    (4096, 8192)
    >>> find_step([1, 1024, 65536, 1048576], [2500, 2600, 30000, 260000]) is None
    True
    """
    s, y = np.asarray(sizes, dtype=float), np.asarray(round_trips, dtype=float)
    best, best_excess = None, 0.0
    for i in range(len(s) - 2):
        rise = y[i + 1] - y[i]
        explained = max((y[i + 2] - y[i + 1]) / (s[i + 2] - s[i + 1]), 0.0) * (s[i + 1] - s[i])
        if rise > STEP_GROWTH * y[i] and rise > STEP_BYTES * explained:
            if (rise - explained) / y[i] > best_excess:
                best, best_excess = (int(s[i]), int(s[i + 1])), (rise - explained) / y[i]
    return best


def refine_step(
    low: int, high: int, measure: Callable[[list[int]], list[float]], points: int = 33, rounds: int = 2
) -> tuple[int, int]:
    """Narrow (low, high) around a step: measure evenly spaced sizes, keep the two around the largest change.

    ``measure(sizes)`` returns round-trip times. The largest change between neighbouring sizes is the
    step (a noisy single sample moves a time by a fraction of the jump, never by all of it). A change,
    not a rise: when eager copies are slow, the largest eager messages take longer than the smallest
    rendezvous ones, and the round trip drops at the switch.
    """
    for _ in range(rounds):
        if high - low <= 1:
            break
        sizes = sorted(set(int(round(x)) for x in np.linspace(low, high, points)))
        changes = np.abs(np.diff(np.asarray(measure(sizes), dtype=float)))
        at = int(np.argmax(changes))
        low, high = sizes[at], sizes[at + 1]
    return low, high


def minimax_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """The line a + b*x (a, b >= 0) whose largest relative error |a + b*x - y| / y is smallest:
    (a, b, that error). Nested ternary searches (the largest relative error is convex in a and b).

    >>> a, b, error = minimax_line([0, 1, 2], [10, 20, 30])
    >>> round(a, 6), round(b, 6), round(error, 6)
    (10.0, 10.0, 0.0)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    # The flat line through the middle is off by less than 100%, so the best line is too:
    # a + b*x < 2y at every point bounds both searches.
    top_a = 2 * float(np.min(y))
    top_b = 2 * float(np.min(y[x > 0] / x[x > 0])) if (x > 0).any() else 0.0

    def worst(a: float, b: float) -> float:
        return float(np.max(np.abs(a + b * x - y) / y))

    def ternary(f: Callable[[float], float], lo: float, hi: float) -> float:
        for _ in range(60):  # (2/3)^60: 3e-11 of the range
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if f(m1) < f(m2):
                hi = m2
            else:
                lo = m1
        return (lo + hi) / 2

    def best_intercept(b: float) -> float:
        return ternary(lambda a: worst(a, b), 0.0, top_a)

    b = ternary(lambda b: worst(best_intercept(b), b), 0.0, top_b)
    a = best_intercept(b)
    return a, b, worst(a, b)


def relative_line(x: Sequence[float], y: Sequence[float], least: float = 0.0) -> tuple[float, float]:
    """The line a + b*x (a >= least, b >= 0) with the least sum of squared relative errors
    ((a + b*x - y) / y)^2. Relative, so that the microsecond round trips of small messages count as much
    as the long ones; least squares, so that one noisy size moves the line by a share of its error, not
    all of it. ``least`` is the smallest intercept that means something physically (a fixed cost).

    >>> [round(v, 6) for v in relative_line([0, 1, 2], [10, 20, 30])]
    [10.0, 10.0]
    >>> [round(v, 6) for v in relative_line([1, 2], [10, 30], least=4)]  # 20x - 10 crosses the floor
    [4.0, 8.153846]
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    least = float(least)
    w = 1 / y  # relative errors: each residual weighted by 1/y
    flat = (max(float(np.sum(w) / np.sum(w * w)), least), 0.0)
    if len(x) < 2 or np.ptp(x) == 0:  # no slope to fit: the best constant
        return flat
    b, a = np.polyfit(x, y, 1, w=w)
    if a >= least and b >= 0:
        return float(a), float(b)
    # The best line then lies on the border of what is allowed: flat (b = 0), or through the floor.
    floor = (least, max(float(np.sum(x * w * w * (y - least)) / np.sum(x * x * w * w)), 0.0))
    return min((flat, floor), key=lambda line: float(np.sum(((line[0] + line[1] * x - y) * w) ** 2)))


def _least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Intercept and slope of the least-squares line; a flat line through the mean for fewer than two x."""
    if len(x) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        return float(intercept), float(slope)
    return (float(np.mean(y)) if len(y) else 0.0), 0.0


@dataclass(frozen=True)
class Costs:
    """One regime's LogGOPS costs: L, o, g in ns, G, O in ns per byte."""

    L: float
    o: float
    g: float
    G: float
    O: float

    def round_trip(self, sizes: Sequence[int]) -> np.ndarray:
        """The engine's ping-pong round trip with these costs: 2 (2o + L + (s-1) max(O, G))."""
        s = np.asarray(sizes, dtype=float)
        return 2 * (2 * self.o + self.L + np.maximum(s - 1, 0) * max(self.O, self.G))


@dataclass
class LogGPFit:
    """Fitted costs for messages up to S bytes (``eager``) and above (``rendezvous``, None without a
    step), the overheads measured at the smallest size (ns), and what backs them."""

    o_s: float
    o_r: float
    eager: Costs
    rendezvous: Costs | None
    S: int
    step: tuple[int, int] | None
    netgauge: pd.DataFrame = field(repr=False)
    G_stream: float = 0.0  # per-byte gap of back-to-back messages above S (slope of g(s))
    notes: list[str] = field(default_factory=list)

    def round_trip(self, sizes: Sequence[int]) -> np.ndarray:
        """The engine's ping-pong round trip for each size, with the costs of its regime."""
        s = np.asarray(sizes, dtype=float)
        if self.rendezvous is None:
            return self.eager.round_trip(s)
        return np.where(s <= self.S, self.eager.round_trip(s), self.rendezvous.round_trip(s))


def _round_trip_lines(regimes: list[pd.DataFrame], least: Sequence[float] = (0.0, 0.0)) -> list[tuple[float, float]]:
    """(intercept, slope) of each regime's PRTT(1,0,s) in s-1, the intercept at least ``least`` of the
    regime. A regime with a single size has no slope of its own: it borrows another regime's (else 0) and
    passes through its one point (through the floor, if the borrowed slope would put it below)."""
    fitted = [relative_line(r["bytes"] - 1, r["round_trip_ns"], floor) if len(r) >= 2 else None
              for r, floor in zip(regimes, least)]
    borrowed = next((line[1] for line in fitted if line is not None), 0.0)
    lines = []
    for r, line, floor in zip(regimes, fitted, least):
        if line is None:
            x, y = float(r["bytes"].iloc[0]) - 1, float(r["round_trip_ns"].iloc[0])
            line = (y - borrowed * x, borrowed)
            if line[0] < floor and x > 0:
                line = (floor, max((y - floor) / x, 0.0))
        lines.append(line)
    return lines


def _cpu_per_byte(regime: pd.DataFrame, G: float, name: str, notes: list[str]) -> float:
    """O: the slope of (o_s(s)+o_r(s))/2 over the regime's sizes, capped at G (the ping-pong's slope is
    max(O, G), fitted as G)."""
    measured = _least_squares(regime["bytes"].to_numpy(float), ((regime["o_s_ns"] + regime["o_r_ns"]) / 2).to_numpy())[1]
    if measured > G:
        notes.append(f"{name} CPU per byte {measured:.4f} ns exceeds G; capped at G so the ping-pong slope stays G")
    return min(max(measured, 0.0), G)


def _split(intercept: float, o: float, name: str, notes: list[str]) -> tuple[float, float]:
    """(o, L) with 2 (2o + L) = intercept; when the overheads alone exceed it, o shrinks and L = 0."""
    L = intercept / 2 - 2 * o
    if L >= 0:
        return o, L
    notes.append(f"{name} L came out {L:.1f} ns: the overheads explain the whole round trip; L = 0 and "
                 f"o = {intercept / 4:.1f} ns, so the round trip stays as measured")
    return intercept / 4, 0.0


def fit_loggp(loggp_run: RunResult, step: tuple[int, int] | None = None) -> LogGPFit:
    """Fit eager and rendezvous costs to a loggp run. ``step`` (low, high) overrides the step found in it."""
    t = netgauge_table(loggp_run)
    if len(t) < 2:
        raise UserError("the loggp run needs at least two sizes to fit G")
    smallest = t.iloc[0]
    notes = []
    o_s, o_r = float(smallest["o_s_ns"]), float(smallest["o_r_ns"])
    if o_s < 0:
        notes.append(f"o_s measured {o_s:.1f} ns (below timer noise), set to 0")
        o_s = 0.0
    if step is None:
        step = find_step(t["bytes"].tolist(), t["round_trip_ns"].tolist())
    S = step[1] - 1 if step else int(t["bytes"].max())
    eager_rows, above_rows = t[t["bytes"] <= S], t[t["bytes"] > S]
    regimes = [eager_rows] + ([above_rows] if step and not above_rows.empty else [])
    a_eager, b_eager = _round_trip_lines(regimes)[0]

    G = b_eager / 2
    o, L = _split(a_eager, (o_s + o_r) / 2, "eager", notes)
    # PRTT(n,0,s) sends n messages back to back, each costing the sender o_s: their gap is at least o_s.
    # Less (even <= 0) is a disturbed median: a PRTT(1,0,s) inflated by another job lowers both.
    gap = float(smallest["gap_ns"])
    if gap < o_s or gap <= 0:
        notes.append(f"g measured {gap:.1f} ns, below o_s = {o_s:.1f} ns: the PRTT medians were disturbed "
                     f"(another job); g set to o_s")
    eager = Costs(L=L, o=o, g=max(gap, o_s), G=G, O=_cpu_per_byte(eager_rows, G, "eager", notes))

    streaming = above_rows if step else t
    g_above, G_stream = _least_squares(streaming["bytes"].to_numpy(float) - 1, streaming["gap_ns"].to_numpy())
    rendezvous = None
    if len(regimes) > 1:
        # A rendezvous message makes the calls an eager one makes and adds a handshake, so its round
        # trip's fixed part is at least the eager overheads, 2 (2o): L >= 0 with the same o. A line
        # through sizes whose time per byte grows (1 MiB copies leave the cache) or whose largest size
        # was slowed by another job would cross below that, down to 0, and o would come out 0.
        least = 4 * eager.o
        a_above, b_above = _round_trip_lines(regimes, (0.0, least))[1]
        if least > 0 and a_above == least:
            notes.append(f"the rendezvous round trips extrapolate to less than the per-call overheads at 0 "
                         f"bytes (2 x 2o = {least:.1f} ns): their line is held there, L = 0")
        G_above = b_above / 2
        if G_above == 0:
            notes.append("the rendezvous round trips do not grow with size (disturbed measurements): G = 0")
        o_above, L_above = eager.o, max(a_above / 2 - 2 * eager.o, 0.0)
        rendezvous = Costs(L=L_above, o=o_above, g=max(g_above, 0.0), G=G_above,
                           O=_cpu_per_byte(above_rows, G_above, "rendezvous", notes))
    return LogGPFit(o_s=o_s, o_r=o_r, eager=eager, rendezvous=rendezvous, S=S, step=step, netgauge=t,
                    G_stream=max(G_stream, 0.0), notes=notes)


def measured_round_trips(pingpong_run: RunResult) -> pd.DataFrame:
    """bytes, the measured round trip (2 x the trimmed mean of the one-way times) and, for the record,
    2 x their median, from a pingpong run."""
    rows = pingpong_run.results.sort_values("bytes")
    return pd.DataFrame({"bytes": rows["bytes"].astype(int).to_numpy(),
                         "measured_ns": 2 * rows["t_tmean_ns"].to_numpy(),
                         "median_ns": 2 * rows["t_p50_ns"].to_numpy()})


def compare(fit: LogGPFit, pingpong_run: RunResult, engine: Sequence[float] | None = None) -> pd.DataFrame:
    """Predicted vs measured round trip per size; ``engine`` adds the simulator's own predictions (its
    ping-pong makespan is one round trip), which the error is then taken from."""
    table = measured_round_trips(pingpong_run)
    table["predicted_ns"] = fit.round_trip(table["bytes"])
    if engine is not None:
        table["engine_ns"] = np.asarray(engine, dtype=float)
    column = "engine_ns" if engine is not None else "predicted_ns"
    table["error_pct"] = 100 * (table[column] - table["measured_ns"]) / table["measured_ns"]
    table["regime"] = np.where((table["bytes"] > fit.S) & (fit.rendezvous is not None), "rendezvous", "eager")
    return table


def parameter_run_error(fit: LogGPFit) -> float:
    """The largest relative error of the fitted round trip against the parameter run's own PRTT(1,0,s):
    what the model cannot follow, as opposed to what changed between the runs."""
    t = fit.netgauge
    return float(np.max(np.abs(fit.round_trip(t["bytes"]) - t["round_trip_ns"]) / t["round_trip_ns"]))


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


def _costs_toml(costs: Costs, o_comment: str) -> list[str]:
    return [
        f"L = {_ns(costs.L)}   # latency",
        f"o = {_ns(costs.o)}   # CPU overhead per message: {o_comment}",
        f"g = {_ns(costs.g)}   # gap per message",
        f"G = {_per_byte(costs.G)}   # time per byte (the ping-pong's slope)",
        f"O = {_per_byte(costs.O)}   # CPU overhead per byte",
    ]


def fit_notes(fit: LogGPFit, table: pd.DataFrame) -> list[str]:
    """What a reader of the fit should know: the fit's own notes, the protocol step, and how the check
    went (and, when it failed, whether the model or the machine's state is to blame)."""
    errors = table["error_pct"].abs()
    own_error = parameter_run_error(fit)
    notes = list(fit.notes)
    if fit.step:
        notes.append(f"the measured round trip jumps between {fit.step[0]} and {fit.step[1]} B (the MPI library "
                     f"switches protocol); messages above S = {fit.S} B use the [loggops.rendezvous] costs")
    if (errors <= 100 * TOLERANCE).all():
        notes.append("the model follows the measured ping-pong within 10% at every size")
    elif own_error <= TOLERANCE:
        worst = table.loc[errors.idxmax()]
        notes.append(f"the model follows the parameter run within {100 * own_error:.0f}% but is off by "
                     f"{worst['error_pct']:+.0f}% at {int(worst['bytes'])} B in the check: the machine's state "
                     f"changed between the runs; measure again")
    else:
        notes.append(f"even the parameter run's own round trips are up to {100 * own_error:.0f}% off the fitted "
                     f"lines: the round trip is not two straight lines here")
    return notes


# Barriers timed per run on one core (each lasts a few scheduler ticks).
BARRIERS = 20


@dataclass(frozen=True)
class SharedCores:
    """The host's cores as its ranks share them (docs/models.md, "Shared cores"): ``per_node`` cores;
    what a core passing from one rank to another costs, from round trips of ``bytes`` with both ranks
    pinned to one core against a core each; and the quantum, from barriers on one core."""

    per_node: int
    switch_ns: float
    one_core_ns: float
    own_cores_ns: float
    bytes: int
    quantum_ns: float
    barrier_ns: float


def shared_cores(per_node: int, one_core_ns: float, own_cores_ns: float, L_ns: float, size: int,
                 barrier_ns: float) -> SharedCores:
    """On one core a message waits for the core to pass to its receiver instead of crossing the wire
    (o + max(L, switch) + o each way, against o + L + o): switch = (one core - own cores) / 2 + L. A
    barrier of two ranks spinning on one core waits for two ticks (each rank's arrival is seen at the
    tick after it, the release likewise): quantum = barrier / 2."""
    switch = max(0.0, (one_core_ns - own_cores_ns) / 2 + L_ns)
    return SharedCores(per_node, switch, one_core_ns, own_cores_ns, size, barrier_ns / 2, barrier_ns)


# Calls of each kind timed per run of the collective benchmark (about a microsecond each).
COLLECTIVE_CALLS = 5000


@dataclass(frozen=True)
class CollectiveEntry:
    """What entering a collective costs beyond its messages (docs/models.md, "Replaying traces"): per
    run, the medians of a 2-rank MPI_Allgather and of the MPI_Sendrecv that is its one exchange, of
    ``bytes`` each (the ``collective`` benchmark); the entry is the median of their differences."""

    bytes: int
    allgather_ns: tuple[float, ...]
    sendrecv_ns: tuple[float, ...]

    @property
    def entry_ns(self) -> float:
        """Never negative: a difference below the runs' noise means no measurable entry."""
        return max(0.0, float(np.median(np.subtract(self.allgather_ns, self.sendrecv_ns))))


def collective_entry(runs: Sequence[RunResult]) -> CollectiveEntry:
    """The ``collective`` benchmark's runs at their smallest size."""
    def p50(run: RunResult, metric: str) -> float:
        rows = run.results[run.results["metric"] == metric].sort_values("bytes")
        return float(rows["t_p50_ns"].iloc[0])

    size = int(runs[0].results["bytes"].min())
    return CollectiveEntry(size, tuple(p50(r, "allgather") for r in runs), tuple(p50(r, "sendrecv") for r in runs))


def machine_toml(fit: LogGPFit, table: pd.DataFrame, meta: dict, name: str = "this-host",
                 cores: SharedCores | None = None, entry: CollectiveEntry | None = None) -> str:
    """The machine file text: [machine], [loggops] (and [loggops.rendezvous]) for the engine, [cores]
    and [mpi] when measured, [fit] for the record, including the per-size table of predicted vs
    measured round trips."""
    host = ",".join(meta.get("hosts", [])) or "this host"
    library = meta.get("mpi_library", "unknown MPI")
    errors = table["error_pct"].abs()
    outside = table.loc[errors > 100 * TOLERANCE, "bytes"].astype(int).tolist()
    lines = [
        "# Written by `contend bench fit`. [loggops] is what the simulator uses; [fit] records how.",
        "[machine]",
        f'name = "{name}"',
        f'description = "fitted by contend bench fit on {host} at {meta.get("started", "?")}, '
        f'{library.strip()}, shared memory"',
        'source = "measured"',
        "",
        "[loggops]   # messages of at most S bytes (eager)",
        *_costs_toml(fit.eager, "mean of o_s and o_r" if fit.eager.o == (fit.o_s + fit.o_r) / 2
                     else "a quarter of the round trip, which o_s + o_r exceed"),
        f"S = {fit.S}   # largest eager message in bytes",
        f"o_s = {_ns(fit.o_s)}   # send overhead, measured at the smallest size",
        f"o_r = {_ns(fit.o_r)}   # receive overhead, measured at the smallest size",
    ]
    if fit.rendezvous is not None:
        lines += ["", "[loggops.rendezvous]   # messages of more than S bytes",
                  *_costs_toml(fit.rendezvous, "as eager; the handshake is in L")]
    if cores is not None:
        lines += ["", "[cores]   # every rank on this host shares its cores",
                  f"per_node = {cores.per_node}",
                  f'switch = "{cores.switch_ns:.1f}ns"   # {cores.bytes} B round trip: {cores.one_core_ns:.1f} ns '
                  f"both ranks on one core, {cores.own_cores_ns:.1f} ns a core each",
                  f'quantum = "{cores.quantum_ns:.1f}ns"   # half a barrier of two ranks on one core '
                  f"({cores.barrier_ns:.1f} ns)"]
    if entry is not None:
        lines += ["", "[mpi]   # the MPI library's costs that replayed traces take (contend goal convert)",
                  f'collective_entry = "{entry.entry_ns:.1f}ns"   # {entry.bytes} B: a 2-rank Allgather '
                  f"{float(np.median(entry.allgather_ns)):.1f} ns against its one Sendrecv "
                  f"{float(np.median(entry.sendrecv_ns)):.1f} ns (medians of {len(entry.allgather_ns)} runs)"]
    lines += [
        "",
        "[fit]",
        'method = "Netgauge parametrised round trips (loggp pattern), one line per protocol regime (least '
        'squares in relative error), checked by an independent ping-pong; see docs/measure.md"',
        f"ranks = {meta.get('ranks', 2)}",
        *([f"iters = {meta['iters']}   # round trips per size and run"] if "iters" in meta else []),
        f"repeats = {meta.get('repeats', 1)}   # runs of each measurement, parameters and check alternating",
        f"runs = {meta.get('runs', 1)}   # parameter runs in the machine's most common state, combined by per-size medians",
        f"check_runs = {meta.get('check_runs', 1)}   # check runs in that state, combined the same way",
        f"loadavg_1min = {_toml_list(np.atleast_1d(meta.get('loadavg_1min', -1.0)).astype(float).tolist(), 2)}",
        f"G_stream = {_per_byte(fit.G_stream)}   # per-byte gap of back-to-back messages above S",
        f"protocol_step = {list(fit.step) if fit.step else []}   # sizes around the round-trip jump",
        f"within_10pct = {'false' if outside else 'true'}",
        f"max_error_pct = {float(errors.max()):.1f}   # of the check below",
        f"sizes_outside_10pct = {outside}",
        f"parameter_run_max_error_pct = {100 * parameter_run_error(fit):.1f}   # the fitted lines vs the parameter run",
        f"one_line_max_error_pct = {100 * minimax_line(table['bytes'] - 1, table['measured_ns'])[2]:.1f}"
        "   # the best a single cost set could do on the check",
        f"note = {json.dumps('; '.join(fit_notes(fit, table)))}",
        f"netgauge_bytes = {_toml_list(fit.netgauge['bytes'].astype(int).tolist())}",
        f"netgauge_o_s_ns = {_toml_list(fit.netgauge['o_s_ns'].astype(float).tolist())}",
        f"netgauge_o_r_ns = {_toml_list(fit.netgauge['o_r_ns'].astype(float).tolist())}",
        f"netgauge_gap_ns = {_toml_list(fit.netgauge['gap_ns'].astype(float).tolist())}",
        f"netgauge_prtt1_ns = {_toml_list(fit.netgauge['prtt1_ns'].astype(float).tolist())}   # medians",
        f"netgauge_round_trip_ns = {_toml_list(fit.netgauge['round_trip_ns'].astype(float).tolist())}"
        "   # PRTT(1,0,s), trimmed mean: what the lines are fitted to",
        "# the check: round trips of independent ping-pong runs vs the model (engine: `contend sim`)",
        f"pingpong_bytes = {_toml_list(table['bytes'].astype(int).tolist())}",
        f"pingpong_measured_ns = {_toml_list(table['measured_ns'].astype(float).tolist())}   # trimmed mean",
        f"pingpong_median_ns = {_toml_list(table['median_ns'].astype(float).tolist())}",
        f"pingpong_predicted_ns = {_toml_list(table['predicted_ns'].astype(float).tolist())}",
    ]
    if "engine_ns" in table:
        lines.append(f"pingpong_engine_ns = {_toml_list(table['engine_ns'].astype(float).tolist())}")
    lines.append(f"pingpong_error_pct = {_toml_list(table['error_pct'].astype(float).tolist())}")
    return "\n".join(lines) + "\n"


def write_machine(text: str, path: str | os.PathLike) -> Path:
    """Write the machine file whole or not at all."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)
    return Path(path)
