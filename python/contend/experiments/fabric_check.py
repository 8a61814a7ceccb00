"""Simulation against reality: incasts and neighbour vs random pairs on the emulated fabric, measured and
simulated with a machine file calibrated from other measurements (``contend.experiments.fabric_machine``).

One repetition runs, in this order (so calibration and cases see the machine in the same state): the
calibration (one flow, 1-byte round trips), then every case. The machine file takes the medians of the
calibration runs; each case's measured value is the median over repetitions; the simulation runs the
benchmarks' GOAL twins (``contend.experiments.native_twins``) on that machine file.

Compared quantities:
- incast n -> 1: each sender's bandwidth, bytes / median time per message (the harness's
  ``bandwidth_Bps``): the slowest sender's (the time until node 0 has every message) and the mean over
  senders (the share each gets of node 0's link), with the error of the sender farthest off.
- pairs: the initiators' half round trips (the harness's ``t_p50_ns``), mean over pairs; and the ratio
  random / neighbour, taken within each repetition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean, median
from typing import Any, Callable

from contend.native import fabric as fabric_module
from contend.atomic import atomic_path
from contend.native.bench.results import RunResult
from contend.native.bench.runner import run_benchmark
from contend.experiments import native_twins
from contend.experiments.fabric_machine import (BURST_SIZES, Calibration, HostTables, burst_pause_s, calibrate,
                                                machine_toml)
from contend.machine.file import parse_machine

TOLERANCE = 0.15  # the bound we hold |simulated / measured - 1| to
KiB, MiB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """What to run. The defaults are the benchmark's; tests run fewer repetitions and cases."""

    incasts: tuple[int, ...] = (2, 3, 4)  # senders into node 0
    seeds: tuple[int, ...] = (1, 2)  # random matchings of 4 ranks that differ from the neighbours'
    repeats: int = 5
    incast_bytes: int = 64 * KiB
    window: int = 128  # 8 MiB per sender and iteration: long enough for TCP to settle at its share
    incast_iters: int = 5
    pair_bytes: int = 4 * MiB  # tbf's 128 KiB burst is then 3% of a message
    # One timed round trip right after the barrier: TCP's unfair sharing lets pairs drift out of phase
    # over successive round trips (until pings and pongs no longer meet), which the model does not have.
    pair_iters: int = 1
    warmup: int = 1
    latency_iters: int = 200
    timeout_s: float = 300
    # Ping-pongs at two sizes within the links' burst, whose slope is the rate a burst passes at (the
    # machine's token-bucket links, fabric_machine.burst_rate); () leaves the links one rate.
    burst_sizes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    pattern: str  # incast | pairs
    ranks: int
    options: dict[str, Any] = field(default_factory=dict)


def cases(settings: Settings) -> list[Case]:
    found = [Case(f"incast-{n}", f"incast {n} -> 1", "incast", n + 1, {"window": settings.window})
             for n in settings.incasts]
    if settings.seeds:
        kinds = [("pairs-nn", "neighbours", {"mode": "nn"})]
        kinds += [(f"pairs-random-{seed}", "random", {"mode": "random", "seed": seed}) for seed in settings.seeds]
        for key, kind, options in kinds:
            pairs = " ".join(f"{r}-{p}" for r, p in enumerate(_partners(options, 4)) if r < p)
            seed = f" (seed {options['seed']})" if "seed" in options else ""
            found.append(Case(key, f"pairs, {kind} {pairs}{seed}", "pairs", 4, options))
    return found


def _partners(options: dict[str, Any], ranks: int) -> list[int]:
    """The pairs of the pairs benchmark with these options, as the harness forms them."""
    if options["mode"] == "random":
        return native_twins.native_random_partners(ranks, options["seed"])
    return native_twins.neighbour_partners(ranks)


def _values(case: Case, run: RunResult) -> dict[int, float]:
    """Per sender (incast, bytes/s) or per initiator (pairs, ns), as the harness reports them."""
    rows = run.results
    if case.pattern == "pairs":  # the twin must pair the ranks as the harness did
        expected = _partners(case.options, case.ranks)
        if any(expected[int(r)] != int(p) for r, p in zip(rows["rank"], rows["peer"])):
            raise RuntimeError(f"{case.label}: the harness paired {list(zip(rows['rank'], rows['peer']))}")
    column = "bandwidth_Bps" if case.pattern == "incast" else "t_p50_ns"
    return {int(r): float(v) for r, v in zip(rows["rank"], rows[column])}


@dataclass
class Measurements:
    flow_runs: list[RunResult] = field(default_factory=list)
    loggp_runs: list[RunResult] = field(default_factory=list)
    burst_runs: list[RunResult] = field(default_factory=list)
    values: dict[str, list[dict[int, float]]] = field(default_factory=dict)  # case -> per repetition
    loads: list[float] = field(default_factory=list)


def measure(settings: Settings, built: fabric_module.Fabric,
            progress: Callable[[str], None] = lambda _: None) -> Measurements:
    """Runs every repetition on the fabric ``built``."""
    found = Measurements()

    def run(name: str, ranks: int, sizes: list[int], iters: int, options: dict | None = None) -> RunResult:
        result = run_benchmark(name, ranks=ranks, sizes=sizes, iters=iters, warmup=settings.warmup,
                               options=options, fabric=built, timeout_s=settings.timeout_s)
        found.loads.append(float(result.meta.get("loadavg_1min", float("nan"))))
        return result

    for repeat in range(settings.repeats):
        progress(f"repetition {repeat + 1}/{settings.repeats}: calibration")
        found.flow_runs.append(run("incast", 2, [settings.incast_bytes], settings.incast_iters,
                                   {"window": settings.window}))
        found.loggp_runs.append(run("loggp", 2, [1], settings.latency_iters))
        if settings.burst_sizes:
            found.burst_runs.append(run("pingpong", 2, list(settings.burst_sizes), settings.latency_iters,
                                        {"pause": burst_pause_s(built)}))
        for case in cases(settings):
            progress(f"repetition {repeat + 1}/{settings.repeats}: {case.label}")
            size, iters = ((settings.incast_bytes, settings.incast_iters) if case.pattern == "incast"
                           else (settings.pair_bytes, settings.pair_iters))
            found.values.setdefault(case.key, []).append(_values(case, run(case.pattern, case.ranks, [size], iters,
                                                                           case.options)))
    return found


def simulate_case(case: Case, settings: Settings, machine) -> dict[int, float]:
    """The case's twin on the machine: per sender bytes/s (incast) or per initiator ns (pairs)."""
    if case.pattern == "incast":
        times = native_twins.simulate_incast(machine, case.ranks, settings.incast_bytes, settings.window,
                                             settings.incast_iters, settings.warmup)
        return {p: settings.incast_bytes * 1e9 / t for p, t in times.items()}
    return native_twins.simulate_pairs(machine, _partners(case.options, case.ranks), settings.pair_bytes,
                                       settings.pair_iters, settings.warmup)


@dataclass(frozen=True)
class Row:
    """One compared quantity: measured (median, min and max over repetitions) and simulated."""

    key: str
    label: str
    unit: str
    measured: float
    low: float
    high: float
    simulated: float
    # mean of senders: the error of the sender farthest from the simulation (its median over repetitions)
    worst_member_error: float | None = None

    @property
    def error(self) -> float:
        return self.simulated / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE


def _in_unit(case: Case, value: float) -> float:
    return value * 8 / 1e9 if case.pattern == "incast" else value / 1e6  # Gbit/s or ms


def _row(key: str, label: str, unit: str, per_repeat: list[float], simulated: float,
         worst: float | None = None) -> Row:
    return Row(key, label, unit, median(per_repeat), min(per_repeat), max(per_repeat), simulated, worst)


def compare(settings: Settings, found: Measurements, machine) -> list[Row]:
    rows = []
    pair_times: dict[str, tuple[list[float], float]] = {}  # case -> (measured per repetition, simulated), ms
    for case in cases(settings):
        sim = {m: _in_unit(case, v) for m, v in simulate_case(case, settings, machine).items()}
        runs = [{m: _in_unit(case, v) for m, v in run.items()} for run in found.values[case.key]]
        if case.pattern == "pairs":
            pair_times[case.key] = ([mean(run.values()) for run in runs], mean(sim.values()))
            rows.append(_row(case.key, case.label, "ms per message", *pair_times[case.key]))
            continue
        # The model's senders share the link equally and finish together; TCP's do not, and a sender is
        # timed to its own last message, so the slowest sender is the incast's completion.
        unit = "Gbit/s per sender"
        rows.append(_row(f"{case.key}-slowest", f"{case.label}, slowest sender", unit,
                         [min(run.values()) for run in runs], min(sim.values())))
        senders = {m: median(run[m] for run in runs) for m in sim}
        worst = max((sim[m] / value - 1 for m, value in senders.items()), key=abs)
        rows.append(_row(f"{case.key}-mean", f"{case.label}, mean of senders", unit,
                         [mean(run.values()) for run in runs], mean(sim.values()), worst))
    neighbours, neighbours_sim = pair_times.get("pairs-nn", ([], 0.0))
    for seed in settings.seeds:  # the slowdown of random pairs, measured within each repetition
        random, random_sim = pair_times[f"pairs-random-{seed}"]
        rows.append(_row(f"ratio-{seed}", f"random (seed {seed}) / neighbours", "x",
                         [r / n for r, n in zip(random, neighbours)], random_sim / neighbours_sim))
    return rows


@dataclass
class Check:
    settings: Settings
    fabric: fabric_module.Fabric
    calibration: Calibration
    machine_text: str
    rows: list[Row]
    loads: list[float]
    runs: dict[str, list[dict[int, float]]]  # case -> per repetition: per sender bytes/s or per initiator ns

    def to_dict(self) -> dict[str, Any]:
        cal = self.calibration
        return {
            "settings": asdict(self.settings),
            "fabric": self.fabric.describe(),
            "calibration": {"link_Gbit_s": cal.link_Bps * 8 / 1e9, "o_ns": cal.o, "g_ns": cal.gap,
                            "one_way_1B_ns": cal.one_way, "hop_latency_ns": cal.hop_latency, "mtu": cal.mtu},
            "machine_file": self.machine_text,
            "rows": [{**asdict(r), "error_pct": 100 * r.error, "within_15pct": r.within} for r in self.rows],
            "all_within_15pct": all(r.within for r in self.rows),
            "loadavg_1min": {"min": min(self.loads), "max": max(self.loads)},
            "runs": self.runs,
        }


def calibrated_machine(built: fabric_module.Fabric, repeats: int, who: str,
                       host: HostTables | None = None,
                       progress: Callable[[str], None] = lambda _: None) -> tuple[Calibration, str]:
    """The fabric's machine file (text) from ``repeats`` of each calibration run, its links token
    buckets whose peak the ping-pongs within the burst give; ``who`` names the command in its source
    line, ``host`` as ``fabric_machine.machine_toml`` takes it."""
    settings = Settings(incasts=(), seeds=(), repeats=repeats, burst_sizes=BURST_SIZES)
    found = measure(settings, built, progress)
    cal = calibrate(built, found.flow_runs, found.loggp_runs, found.burst_runs)
    how = (f"{who}: one flow {settings.window} x {settings.incast_bytes} B; loggp at 1 B, {settings.latency_iters} "
           f"round trips; ping-pongs of {' and '.join(map(str, BURST_SIZES))} B")
    return cal, machine_toml(cal, how, host)


def run_check(settings: Settings, *, nodes: int, topology: str, link: str, machine_path: Path,
              prefix: str = fabric_module.DEFAULT_PREFIX,
              progress: Callable[[str], None] = lambda _: None) -> Check:
    """Builds the fabric (its namespaces named ``prefix``...), measures,
    tears it down (also on failure), calibrates, writes the machine file to ``machine_path``, simulates
    and compares."""
    with fabric_module.session(nodes, 1, link, topology, prefix) as built:
        found = measure(settings, built, progress)
        calibration = calibrate(built, found.flow_runs, found.loggp_runs)
    how = (f"one flow: incast 1 sender, {settings.window} x {settings.incast_bytes} B, "
           f"{settings.incast_iters} iterations; loggp at 1 B, {settings.latency_iters} round trips")
    text = machine_toml(calibration, how)
    with atomic_path(machine_path) as temporary:
        temporary.write_text(text)
    machine = parse_machine(text, str(machine_path))
    progress("simulating")
    return Check(settings, built, calibration, text, compare(settings, found, machine), found.loads, found.values)
