"""Network-induced memory contention measured here (Groves 2016): runs of the native ``nimc`` pattern,
interleaved sweeps of sources and rates, per-interval features and labels, slowdown tables.

One run: a triad pinned to one core, sampled every ``interval`` seconds, while the other core injects
traffic from one source at one rate (docs/measure.md, "Network-induced memory contention"). A sweep runs
rounds; every round holds every (source, rate) once, in a shuffled order, so slow drifts of a shared
machine spread over all of them, and each run's slowdown is taken against the baseline of its own round:
the spin control when the sweep has it, else ``none``. Why the spin: on a shared machine an idle second
core does not stay idle, other jobs take it and bring their own memory traffic (measured here: the
``none`` runs were the noisiest of all); a spinning rank holds the core without touching memory.

The NiMC mitigations (Groves 2016) are measured on the ``rma`` source, whose bytes go through the one-sided
calls of libcontend-throttle.so: every ``rma`` run is under the library (the two ranks emulating two nodes),
unmitigated (policy none), with ``throttle`` (memory_throttle: the traffic into the triad's node capped) or
with ``reserve-core`` (the ranks pinned away from one CPU: on two CPUs, both share the other one).
"""

from __future__ import annotations

import json
import os
import random
from contend.atomic import scratch_directory
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from contend.atomic import atomic_path
from contend.errors import UserError
from contend.parquet import read_frame

SOURCES = ("none", "spin", "memcpy", "put", "tcp", "rma")
BASELINES = ("spin", "none")  # the first one a round has is its baseline
PACED = ("memcpy", "put", "tcp", "rma")  # the sources that take a rate
NETWORK = ("put", "tcp", "rma")  # traffic arriving as a network would bring it: the detector's positive class
MITIGATIONS = ("none", "throttle", "reserve-core")  # applied to the sources that go through the library
THROUGH_LIBRARY = ("rma",)
MAX_RATE = -1.0  # bytes/s meaning "unpaced"

_META_KEY = b"contend.nimc"


@dataclass(frozen=True)
class Plan:
    """One run of a sweep."""

    round: int
    source: str
    rate_Bps: float  # MAX_RATE: unpaced; 0 for none and spin
    mitigation: str = "none"

    @property
    def label(self) -> str:
        text = f"{self.source}@{rate_text(self.rate_Bps)}" if self.source in PACED else self.source
        return text if self.mitigation == "none" else f"{text}+{self.mitigation}"


def rate_text(rate: float) -> str:
    """A rate as the tables show it.

    >>> rate_text(-1), rate_text(0), rate_text(2e9), rate_text(5e8)
    ('max', '0', '2GB/s', '500MB/s')
    """
    if rate < 0:
        return "max"
    if rate == 0:
        return "0"
    if rate >= 1e9:
        return f"{rate / 1e9:g}GB/s"
    return f"{rate / 1e6:g}MB/s"


def parse_rates(text: str) -> list[float]:
    """Rates for the paced sources: bytes per second with decimal units, or max.

    >>> parse_rates("0,500MB,2GB/s,max")
    [0.0, 500000000.0, 2000000000.0, -1.0]
    >>> parse_rates("fast")
    Traceback (most recent call last):
    contend.errors.UserError: --rates: bad rate 'fast' (want bytes/s like 0, 500MB, 2GB/s, or max)
    """
    scale = {"": 1, "B": 1, "k": 1e3, "kB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9}
    rates = []
    for item in text.split(","):
        item = item.strip()
        if item == "max":
            rates.append(MAX_RATE)
            continue
        body = item[:-2] if item.endswith("/s") else item
        digits = body.rstrip("kMGB")
        try:
            value = float(digits) * scale[body[len(digits):]]
        except (ValueError, KeyError):
            value = -1
        if value < 0 or value > 1e12:
            raise UserError(f"--rates: bad rate {item!r} (want bytes/s like 0, 500MB, 2GB/s, or max)")
        rates.append(value)
    return rates


def parse_sources(text: str) -> list[str]:
    """The sources of a sweep, checked.

    >>> parse_sources("none,put")
    ['none', 'put']
    >>> parse_sources("rdma")
    Traceback (most recent call last):
    contend.errors.UserError: --sources: unknown source 'rdma' (choose from none, spin, memcpy, put, tcp, rma)
    """
    sources = [s.strip() for s in text.split(",") if s.strip()]
    for s in sources:
        if s not in SOURCES:
            raise UserError(f"--sources: unknown source {s!r} (choose from {', '.join(SOURCES)})")
    if not sources:
        raise UserError("--sources: no source given")
    return sources


def parse_mitigations(text: str) -> list[str]:
    """The mitigations of a sweep, checked.

    >>> parse_mitigations("none,throttle")
    ['none', 'throttle']
    >>> parse_mitigations("offload")
    Traceback (most recent call last):
    contend.errors.UserError: --mitigations: unknown mitigation 'offload' (choose from none, throttle, reserve-core)
    """
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    for m in chosen:
        if m not in MITIGATIONS:
            raise UserError(f"--mitigations: unknown mitigation {m!r} (choose from {', '.join(MITIGATIONS)})")
    if not chosen:
        raise UserError("--mitigations: none given (none alone: no mitigation)")
    return chosen


def plan_sweep(sources: Sequence[str], rates: Sequence[float], repeats: int, seed: int = 1,
               mitigations: Sequence[str] = ("none",)) -> list[Plan]:
    """Rounds of runs: each round a ``none`` run, a ``spin`` run when asked for, and every paced source at
    every rate once (the ones through the library once per mitigation), all in a shuffled order.

    >>> [p.label for p in plan_sweep(["spin", "put"], [0, 1e9], 1, seed=3)]
    ['spin', 'put@0', 'none', 'put@1GB/s']
    >>> sorted(p.label for p in plan_sweep(["rma"], [-1], 1, mitigations=["none", "throttle"]))
    ['none', 'rma@max', 'rma@max+throttle']
    """
    shuffle = random.Random(seed)
    plans: list[Plan] = []
    for r in range(repeats):
        others = [Plan(r, s, rate, m) for s in sources if s in PACED for rate in rates
                  for m in (mitigations if s in THROUGH_LIBRARY else ("none",))]
        others += [Plan(r, s, 0.0) for s in ("none", "spin") if s == "none" or s in sources]
        shuffle.shuffle(others)
        plans += others
    return plans


def _injected_per_interval(intervals: pd.DataFrame, injected: dict[str, Any]) -> np.ndarray:
    """Bytes the interferer delivered within each triad sample, from its millisecond bins (a bin is
    counted in the sample holding its midpoint: an edge error of at most one bin per sample)."""
    bins = np.asarray(injected.get("bins", []), dtype=float)
    if intervals.empty:
        return np.zeros(0)
    if bins.size == 0:
        return np.zeros(len(intervals))
    width = float(injected.get("bin_ns", 1e6))
    cumulative = np.concatenate([[0.0], np.cumsum(bins)])
    start = intervals["start_ns"].to_numpy(float)
    end = start + intervals["duration_ns"].to_numpy(float)
    first = np.clip(np.floor(start / width + 0.5), 0, bins.size).astype(int)
    last = np.clip(np.floor(end / width + 0.5), 0, bins.size).astype(int)
    return cumulative[last] - cumulative[first]


REFERENCE_SAMPLES = 20  # the triad's recent speed: over its last 20 samples (2 s at the default interval)


def phases(start_ns: np.ndarray, duration_ns: np.ndarray, period_s: float, on_s: float) -> np.ndarray:
    """Where each sample lies in the burst cycle: "on" (wholly inside a burst), "off" (wholly between
    bursts) or "edge"; all "on" when the traffic is continuous (period 0).

    >>> list(phases(np.array([0, 0.3e9, 0.45e9, 0.6e9]), np.full(4, 0.1e9), 1.0, 0.5))
    ['on', 'on', 'edge', 'off']
    """
    if period_s <= 0:
        return np.full(len(start_ns), "on", dtype=object)
    period, on = period_s * 1e9, on_s * 1e9
    cycle = np.floor(start_ns / period) * period
    first, last = start_ns - cycle, start_ns + duration_ns - cycle
    inside_on = (first < on) & (last <= on)
    inside_off = (first >= on) & (last <= period)
    return np.where(inside_on, "on", np.where(inside_off, "off", "edge")).astype(object)


def intervals_of(run, plan: Plan, period_s: float = 0.0, on_s: float = 0.0) -> pd.DataFrame:
    """The run's triad samples with the derived features, the run's identity and the injected bytes."""
    frame = run.intervals.copy()
    if frame.empty:
        raise UserError(f"nimc {plan.label}: the run produced no triad samples (is --interval longer than "
                        f"--duration?)")
    frame["injected_bytes"] = _injected_per_interval(frame, run.injected)
    seconds = frame["duration_ns"] / 1e9
    frame["injected_Bps"] = frame["injected_bytes"] / seconds
    # CPU time the triad really had: perf's task clock, or the thread's CPU clock without perf
    cpu_ns = frame["task_clock_ns"].where(frame["task_clock_ns"] >= 0, frame["thread_cpu_ns"])
    frame["cpu_share"] = cpu_ns / frame["duration_ns"]
    frame["triad_cpu_Bps"] = frame["triad_bytes"] / cpu_ns * 1e9
    frame["ns_per_pass"] = frame["duration_ns"] / frame["passes"]
    if "core_rate" in frame:
        # The triad against the core's own speed (a cache-resident kernel timed beside each sample): a
        # slower CPU state slows both, so the ratio stays; memory contention slows the triad alone.
        # Unit: triad bytes per kernel iteration (about 28 here, quiet).
        frame["triad_vs_core"] = frame["triad_cpu_Bps"] / frame["core_rate"]
    # The triad against its own recent speed (causal: this sample and the ones before it), what a
    # running application can know about itself without a baseline run
    recent = frame["triad_cpu_Bps"].rolling(REFERENCE_SAMPLES, min_periods=1)
    frame["triad_rel_max"] = frame["triad_cpu_Bps"] / recent.max()
    frame["triad_rel_median"] = frame["triad_cpu_Bps"] / recent.median()
    frame["phase"] = phases(frame["start_ns"].to_numpy(float), frame["duration_ns"].to_numpy(float), period_s, on_s)
    if "cpu_triad_idle" in frame:  # others' work on the triad's core: busy time the triad did not have
        busy = 1 - frame["cpu_triad_idle"] - frame.get("cpu_triad_iowait", 0)
        frame["foreign_on_triad_core"] = (busy - frame["cpu_share"]).clip(lower=0)
    frame.insert(0, "source", plan.source)
    frame.insert(1, "rate_target_Bps", plan.rate_Bps)
    frame.insert(2, "round", plan.round)
    frame.insert(3, "mitigation", plan.mitigation)
    return frame


def library_settings(plan: Plan, memory_throttle_Bps: int | None, stats: Path) -> dict[str, str] | None:
    """The library's variables for a run through it (None for the other sources): two emulated nodes, so
    rank 1's puts land in another node; policy none, so the mitigation is the only thing it does."""
    from contend.native import libthrottle

    if plan.source not in THROUGH_LIBRARY:
        return None
    if plan.mitigation == "throttle" and not memory_throttle_Bps:
        raise UserError("--mitigations throttle needs --memory-throttle BW")
    return libthrottle.settings(
        "none", ranks_per_node=1, stats=stats,
        memory_throttle=memory_throttle_Bps if plan.mitigation == "throttle" else None,
        reserve_core=1 if plan.mitigation == "reserve-core" else None)


def library_summary(stats: Path) -> dict[str, Any]:
    """What the library did in the run, from its counters (rank 1 paces; both are pinned)."""
    from contend.native import libthrottle

    rows = libthrottle.read_stats(stats)
    if len(rows) != 2:
        raise UserError(f"nimc: the throttle library wrote counters for {len(rows)} of 2 ranks")
    interferer = rows[1]
    return {"library_paced_ops": interferer["target_ops"], "library_paced_bytes": interferer["target_bytes"],
            "library_wait_s": interferer["target_wait_ns"] / 1e9,
            "library_min_slack_ns": interferer["target_min_slack_ns"],
            "library_reserved_cpu": rows[0]["reserved_cpu"], "library_cpus": [row["cpus"] for row in rows]}


def measure(plan: Plan, *, duration_s: float, interval_s: float, chunk: int, region: int, nice: int = 0,
            period_s: float = 0.0, on_s: float = 0.0, memory_throttle_Bps: int | None = None,
            timeout_s: float = 300) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run one plan: its samples and its summary (whose ``verified`` says the data checks passed).
    With bursts (``period_s`` > 0) the summary's ``paired_slowdown_pct`` compares the run's samples
    between bursts with those inside them: a baseline taken within the same seconds."""
    from contend.native.bench.runner import run_benchmark

    options = {"mode": plan.source, "duration": f"{duration_s:g}", "interval": f"{interval_s:g}",
               "region": str(region), "nice": str(nice), "rate": "max" if plan.rate_Bps < 0 else str(int(plan.rate_Bps))}
    if period_s > 0:
        options.update(period=f"{period_s:g}", on=f"{on_s:g}")
    with scratch_directory("contend-nimc-") as scratch:
        stats = Path(scratch) / "throttle.jsonl"
        throttle = library_settings(plan, memory_throttle_Bps, stats)
        run = run_benchmark("nimc", ranks=2, sizes=[chunk], options=options, timeout_s=timeout_s, throttle=throttle)
        library = library_summary(stats) if throttle is not None else {}
    frame = intervals_of(run, plan, period_s, on_s)
    row = run.results.iloc[0]
    on_bw = frame.loc[frame["phase"] == "on", "triad_cpu_Bps"].median()
    on_wall = frame.loc[frame["phase"] == "on", "triad_Bps"].median()
    off_bw = frame.loc[frame["phase"] == "off", "triad_cpu_Bps"].median()
    summary = {
        "label": plan.label, "source": plan.source, "round": plan.round, "rate_target_Bps": plan.rate_Bps,
        "mitigation": plan.mitigation, "memory_throttle_Bps": memory_throttle_Bps if plan.mitigation == "throttle" else None,
        **library,
        "started": run.meta.get("started"), "loadavg_1min": run.meta.get("loadavg_1min"),
        "samples": int(len(frame)), "sent_bytes": int(run.injected.get("sent_bytes", -1)),
        "received_bytes": int(run.injected.get("received_bytes", -2)),
        "binned_bytes": int(np.sum(run.injected.get("bins", []))),
        "triad_verified": bool(row.get("triad_verified", 0)), "data_verified": bool(row.get("data_verified", 0)),
        "triad_Bps": float(frame["triad_Bps"].median()), "triad_cpu_Bps": float(frame["triad_cpu_Bps"].median()),
        "injected_Bps": float(run.injected.get("sent_bytes", 0)) / duration_s,
        "cpu_share": float(frame["cpu_share"].median()),
        "loadavg_intervals": float(frame["loadavg_1min"].median()),
        "software_counters": run.injected.get("software_counters"),
        "hardware_counters": run.injected.get("hardware_counters"),
        "triad_cpu": run.injected.get("triad_cpu"), "interferer_cpu": run.injected.get("interferer_cpu"),
        "chunk": chunk, "region": region, "duration_s": duration_s, "interval_s": interval_s,
        "nice": nice, "nice_granted": run.injected.get("nice_granted"), "period_s": period_s, "on_s": on_s,
        "on_cpu_Bps": float(on_bw), "off_cpu_Bps": float(off_bw), "on_wall_Bps": float(on_wall),
        "paired_slowdown_pct": float(100 * (off_bw / on_bw - 1)) if period_s > 0 else float("nan"),
        "injected_on_Bps": float(frame.loc[frame["phase"] == "on", "injected_Bps"].median()),
    }
    summary["verified"] = (summary["triad_verified"] and summary["data_verified"]
                           and summary["sent_bytes"] == summary["received_bytes"])
    return frame, summary


def label(frame: pd.DataFrame, summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Add the labels (``nimc``: network-like bytes landed during the run) and each sample's slowdown
    against the median bandwidth of its round's baseline run (per CPU second of the triad: time the
    triad was preempted by other jobs is not memory contention)."""
    frame = frame.copy()
    baseline = round_baselines(summaries)
    if frame.empty:
        return frame
    base = frame["round"].map(baseline)
    frame["baseline_cpu_Bps"] = base
    frame["slowdown_pct"] = 100 * (base / frame["triad_cpu_Bps"] - 1)
    sent = {s["run"]: s["sent_bytes"] for s in summaries}
    frame["nimc"] = frame["source"].isin(NETWORK) & (frame["run"].map(sent) > 0) & (frame["phase"] == "on")
    return frame


def mean_interval(values: Sequence[float], draws: int = 2000, seed: int = 1) -> tuple[float, float, float]:
    """Mean of ``values`` (NaNs dropped) and its 95% bootstrap interval (runs resampled); NaNs when
    fewer than two values.

    >>> mean_interval([2.0, 2.0, 2.0])
    (2.0, 2.0, 2.0)
    """
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if v.size < 2:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = rng.choice(v, (draws, v.size)).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(v.mean()), float(low), float(high)


def round_baselines(summaries: list[dict[str, Any]], key: str = "triad_cpu_Bps") -> dict[int, float]:
    """Per round, the median triad bandwidth (per CPU second; ``key="triad_Bps"``: per wall second) of its
    baseline run (``BASELINES``)."""
    baselines: dict[int, float] = {}
    for source in reversed(BASELINES):  # the preferred baseline overwrites the fallback
        baselines.update({s["round"]: s[key] for s in summaries if s["source"] == source})
    return baselines


def slowdown_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Per (source, mitigation, rate): the runs' median injected rate, triad bandwidth and slowdown against
    the baseline of their round (per CPU second, and per wall second: what a program sharing its core
    loses too), with the spread (min, max) over runs and the load they ran under."""
    runs = pd.DataFrame(summaries)
    if "mitigation" not in runs:  # sweeps from before the mitigations
        runs["mitigation"] = "none"
    base = pd.Series(round_baselines(summaries))
    # inside the bursts (all samples of continuous runs)
    during = runs["on_cpu_Bps"] if "on_cpu_Bps" in runs else runs["triad_cpu_Bps"]
    runs["slowdown_pct"] = 100 * (runs["round"].map(base) / during - 1)
    if "on_wall_Bps" in runs:
        wall_base = pd.Series(round_baselines(summaries, "triad_Bps"))
        runs["wall_slowdown_pct"] = 100 * (runs["round"].map(wall_base) / runs["on_wall_Bps"] - 1)
    else:
        runs["wall_slowdown_pct"] = float("nan")
    runs["bw_loss_pct"] = 100 * (1 - during / runs["round"].map(base))
    order = {s: i for i, s in enumerate(SOURCES)}
    mitigation_order = {m: i for i, m in enumerate(MITIGATIONS)}
    runs["rate_key"] = runs["rate_target_Bps"].where(runs["rate_target_Bps"] >= 0, np.inf)
    rows = []
    for (source, mitigation, _), group in runs.groupby(["source", "mitigation", "rate_key"], sort=False):
        rows.append({
            "source": source, "mitigation": mitigation,
            "rate_target": rate_text(float(group["rate_target_Bps"].iloc[0])),
            "runs": len(group),
            "injected_GBps": group["injected_Bps"].median() / 1e9,
            "triad_GBps": group["triad_cpu_Bps"].median() / 1e9,
            "triad_wall_GBps": group["triad_Bps"].median() / 1e9,
            "slowdown_pct": group["slowdown_pct"].median(),
            "slowdown_min": group["slowdown_pct"].min(), "slowdown_max": group["slowdown_pct"].max(),
            "bw_loss_pct": group["bw_loss_pct"].median(),
            "wall_slowdown_pct": group["wall_slowdown_pct"].median(),
            "injected_on_GBps": group["injected_on_Bps"].median() / 1e9 if "injected_on_Bps" in group else float("nan"),
            "paired_pct": group["paired_slowdown_pct"].median() if "paired_slowdown_pct" in group else float("nan"),
            "paired_min": group["paired_slowdown_pct"].min() if "paired_slowdown_pct" in group else float("nan"),
            "paired_max": group["paired_slowdown_pct"].max() if "paired_slowdown_pct" in group else float("nan"),
            **dict(zip(("paired_mean", "paired_ci_low", "paired_ci_high"),
                       mean_interval(group["paired_slowdown_pct"]) if "paired_slowdown_pct" in group
                       else (float("nan"),) * 3)),
            "cpu_share": group["cpu_share"].median(),
            "loadavg": group["loadavg_1min"].median(),
            "verified": bool(group["verified"].all()),
            "_order": (order.get(source, 99), float(group["rate_key"].iloc[0]), mitigation_order.get(mitigation, 9)),
        })
    table = pd.DataFrame(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)
    return table


def sweep(plans: Sequence[Plan], *, duration_s: float, interval_s: float, chunk: int, region: int, nice: int = 0,
          period_s: float = 0.0, on_s: float = 0.0, memory_throttle_Bps: int | None = None,
          progress: Callable[[int, int, Plan], None] | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run every plan in order; all samples (labelled) and the runs' summaries."""
    frames, summaries = [], []
    for number, plan in enumerate(plans):
        if progress is not None:
            progress(number, len(plans), plan)
        frame, summary = measure(plan, duration_s=duration_s, interval_s=interval_s, chunk=chunk, region=region,
                                 nice=nice, period_s=period_s, on_s=on_s, memory_throttle_Bps=memory_throttle_Bps,
                                 timeout_s=max(120.0, 10 * duration_s))
        summary["run"] = number
        frame.insert(0, "run", number)
        frames.append(frame)
        summaries.append(summary)
    if progress is not None:
        progress(len(plans), len(plans), plans[-1])
    return label(pd.concat(frames, ignore_index=True), summaries), summaries


# `contend tune --real --nimc`: the rates of rma traffic it tries, and how it runs them
TUNE_RATES = (0.5e9, 1e9, 2e9, 4e9, 8e9, MAX_RATE)
TUNE_RUN = {"duration_s": 2.0, "interval_s": 0.1, "chunk": 1 << 20, "region": 256 << 20, "nice": -20,
            "period_s": 1.0, "on_s": 0.5}


def largest_tolerated_rate(table: pd.DataFrame, tolerance: float) -> float | None:
    """The largest rate of unmitigated ``rma`` traffic at which the triad's slowdown inside bursts against
    its own samples between them (the median over rounds) stays within ``tolerance``, for that rate and
    every slower one; ``MAX_RATE`` when unpaced traffic stays within it too; None when even the slowest
    does not.

    >>> t = pd.DataFrame({"source": "rma", "mitigation": "none", "rate_target": ["1GB/s", "2GB/s", "max"],
    ...                   "paired_pct": [1.0, 4.0, 30.0]})
    >>> largest_tolerated_rate(t, 0.05), largest_tolerated_rate(t, 0.5), largest_tolerated_rate(t, 0.001)
    (2000000000.0, -1.0, None)
    """
    rows = table[(table["source"] == "rma") & (table["mitigation"] == "none")]
    by_rate = {_rate_of(text): pct for text, pct in zip(rows["rate_target"], rows["paired_pct"])}
    best = None
    for rate in sorted(by_rate, key=lambda r: np.inf if r < 0 else r):
        if not by_rate[rate] <= 100 * tolerance:  # NaN (no bursts) counts as not tolerated
            break
        best = rate
    return best


def _rate_of(text: str) -> float:
    return MAX_RATE if text == "max" else parse_rates(text.removesuffix("/s"))[0]


def tune_memory_throttle(repeats: int, tolerance: float, seed: int = 1,
                         progress: Callable[[int, int, Plan], None] | None = None) -> tuple[float | None, pd.DataFrame]:
    """Measure rma traffic at ``TUNE_RATES`` against the spin control, in bursts, ``repeats`` rounds; the
    largest tolerated rate (``largest_tolerated_rate``) and the slowdown table."""
    plans = plan_sweep(["spin", "rma"], TUNE_RATES, repeats, seed)
    _, summaries = sweep(plans, **TUNE_RUN, progress=progress)
    table = slowdown_table(summaries)
    return largest_tolerated_rate(table, tolerance), table


def _write_parquet(frame: pd.DataFrame, path: Path, meta: dict[str, Any]) -> None:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode()}
    with atomic_path(path) as temporary:
        pq.write_table(table.replace_schema_metadata(metadata), temporary)


def write_samples(frame: pd.DataFrame, path: str | os.PathLike, meta: dict[str, Any] | None = None) -> Path:
    """Samples (and predictions) as one Parquet file, whole or not at all."""
    _write_parquet(frame, Path(path), meta or {})
    return Path(path)


def write_sweep(directory: str | os.PathLike, samples: pd.DataFrame, summaries: list[dict[str, Any]],
                table: pd.DataFrame, settings: dict[str, Any]) -> dict[str, Path]:
    """The sweep's files (docs/formats.md, "nimc data"): every file whole or not at all."""
    directory = Path(directory)
    (directory / "runs").mkdir(parents=True, exist_ok=True)
    for summary in summaries:
        run = samples[samples["run"] == summary["run"]]
        name = f"{summary['run']:03d}-{summary['label'].replace('/', '').replace('@', '-')}.parquet"
        _write_parquet(run, directory / "runs" / name, summary)
    paths = {"samples": directory / "intervals.parquet", "summary": directory / "summary.json",
             "slowdown": directory / "slowdown.parquet"}
    _write_parquet(samples, paths["samples"], {"settings": settings, "runs": len(summaries)})
    _write_parquet(table, paths["slowdown"], {"settings": settings})
    with atomic_path(paths["summary"]) as temporary:
        temporary.write_text(json.dumps({"format": "contend-nimc-sweep", "version": 1, "settings": settings,
                                         "runs": summaries, "slowdown": table.to_dict(orient="records")},
                                        indent=1, default=float))
    return paths


def read_samples(path: str | os.PathLike) -> pd.DataFrame:
    """Samples from a sweep directory (its intervals.parquet) or a Parquet file of samples."""
    path = Path(path)
    if path.is_dir():
        path = path / "intervals.parquet"
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    return read_frame(path, "Parquet file of samples")
