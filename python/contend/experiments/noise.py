"""The noise experiments of Hoefler 2011 ("Characterizing the Influence of System Noise on Large-Scale
Parallel Applications", the talk on LogGOPSim's noise injection), simulated in the engine:

- shape, not intensity: a 1-byte dissemination barrier and binomial broadcast under noise of the same
  overhead (2.5%) but different shape (1000 Hz x 25 us, 100 Hz x 250 us, 10 Hz x 2.5 ms), P = 2^4 .. 2^20;
- does the network speed matter: the barrier with L, g, G made 10x larger (0.1x network) and 10x smaller
  (10x network), with and without noise;
- co-scheduled versus independent noise (all ranks' detours at once, or each rank at its own phase);
- the pipelining error of looped broadcast benchmarks, with and without root rotation;
- beside the talk's figures: Beckman's BG/L allreduce (16x measured, 13x simulated at 32k processes) and
  Ferreira's Cray XT allreduce (32x measured, 30x simulated).

A collective starts at time 0 on every rank; its time is the makespan (the last rank done). Under
independent noise every sample is a new seed (new phases); co-scheduled noise is averaged over the
common phase (see ``coscheduled_time``). ``run_reproduction`` returns the findings and the raw numbers.
"""

from __future__ import annotations

import dataclasses
import math
from contend.atomic import scratch_directory
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from contend.report.findings import Finding
from contend.machine.file import load_machine
from contend.noise.settings import NoiseSettings, from_table
from contend.report import plots
from contend.simulation.simulate import simulate

MACHINE = "loggopsim-default"  # L=2500 o=1500 g=1000 G=6 (ns): the simulator's own defaults
SHAPES = {  # the same overhead, 2.5%, in three shapes
    "1000 Hz x 25 us": ("1000Hz", "25us"),
    "100 Hz x 250 us": ("100Hz", "250us"),
    "10 Hz x 2.5 ms": ("10Hz", "2.5ms"),
}
SPEEDS = {"0.1x network": 10.0, "1x network": 1.0, "10x network": 0.1}  # factor applied to L, g, G
NETWORK_SHAPE = "100 Hz x 250 us"
COLLECTIVES = {"dissemination": "dissemination barrier", "binomial-bcast": "binomial broadcast"}
BECKMAN = {"machine": "bgp-intrepid", "frequencies": ("1000Hz", "100Hz", "10Hz"),
           "durations": ("16us", "50us", "100us", "200us")}
FERREIRA = {"machine": "xt4-jaguar", "frequency": "10Hz", "duration": "2.5ms"}
ALLREDUCE = ("allreduce-recdoub", 8)  # an 8-byte allreduce, recursive doubling (Schedgen's)

# What the talk says (slides "Comparison of Simulations and Experiments", "Effect of Co-Scheduling
# Noise", "Does the Network Speed Matter?", "Absolute Pipelining Error", "Conclusions").
TALK = {
    "beckman": ("Beckman et al., allreduce on BG/L, 1000/100/10 Hz detours of 16-200 us",
                "16x slowdown measured at 32k processes, 13x simulated (LogGOPS parameters of BG/P)"),
    "ferreira": ("Ferreira et al., allreduce on Cray XT, 10 Hz detours of 2.5 ms (the slide says 2.5 us)",
                 "32x slowdown measured, 30x simulated"),
    "shape": ("overhead depends on noise shape rather than intensity", "Cray XT (0.02%) severely impacted, "
              "ZeptoOS (0.08%) shows nearly no propagation"),
    "network": ("does the network speed matter? (0.1x and 10x network: L, G, g scaled)",
                "noise bottleneck independent of network speed"),
    "coscheduling": ("effect of co-scheduling noise (Altix)", "co-scheduled noise slows far less (figure only)"),
    "pipelining": ("looped broadcast benchmarks, with and without root rotation",
                   "pipelining makes them report too little; root rotation does not fix it; the absolute "
                   "error grows with the number of processes"),
}


@dataclass(frozen=True)
class Scale:
    """How much to simulate: rank counts of the sweeps (the network and co-scheduling sweeps stop at
    ``largest_coupled``), the sample budget (samples at P = min(max_samples, budget / P), at least 1),
    the looped broadcasts, and the sizes of the Beckman and Ferreira comparisons."""

    ranks: tuple[int, ...]
    largest_coupled: int
    budget: int
    max_samples: int
    phases: int
    pipeline_ranks: tuple[int, ...]
    loops: int
    beckman_ranks: int
    ferreira_ranks: int
    comparison_samples: int

    def samples(self, ranks: int) -> int:
        return max(1, min(self.max_samples, self.budget // ranks))


FULL = Scale(ranks=tuple(4**k for k in range(2, 11)), largest_coupled=2**20, budget=2**15, max_samples=8,
             phases=4, pipeline_ranks=tuple(2**k for k in range(2, 11)), loops=64, beckman_ranks=2**15,
             ferreira_ranks=2**13, comparison_samples=2)
QUICK = Scale(ranks=(2**4, 2**6, 2**8, 2**10, 2**12), largest_coupled=2**12, budget=2**11, max_samples=4,
              phases=4, pipeline_ranks=(4, 16, 64), loops=16, beckman_ranks=2**12, ferreira_ranks=2**11,
              comparison_samples=1)


def shape_noise(frequency: str, duration: str, seed: int = 0, phase: str = "independent") -> NoiseSettings:
    return from_table({"kind": "periodic", "frequency": frequency, "duration": duration, "phase": phase,
                       "seed": seed}, lambda key: f"noise {key}")


def network_params(factor: float) -> dict[str, float]:
    """L, g, G of the machine times ``factor`` (ns, ns/byte): 10 is a 10x slower network."""
    params = load_machine(MACHINE).params
    return {key: params[key] * factor / 1000 for key in ("L", "g", "G")}


def independent_time(pattern: str, ranks: int, size: int, noise: NoiseSettings | None, samples: int,
                     machine: str = MACHINE, **params: float) -> float:
    """Mean makespan (ns) over ``samples`` seeds of independent noise (one run without noise)."""
    seeds = range(samples) if noise is not None else range(1)
    runs = [simulate(collective=pattern, ranks=ranks, bytes=size, machine=machine, **params,
                     noise=dataclasses.replace(noise, seed=s) if noise is not None else False).makespan
            for s in seeds]
    return sum(runs) / len(runs)


def coscheduled_time(pattern: str, ranks: int, size: int, noise: NoiseSettings, phases: int, base: float,
                     **params: float) -> float:
    """Expected makespan (ns) when every rank's detours come at the same moment, over a uniformly
    random common phase. A phase whose detours miss the noiseless run [0, base) leaves it at ``base``
    exactly, so only the window of phases in which a detour meets it is sampled (``phases`` evenly
    spaced points), weighted by that window's share of the period."""
    period, duration = noise.period, noise.duration
    window = min(base * 1000 + duration, period)  # ps: first detour in [-duration, base)
    total = 0.0
    for j in range(phases):
        phase = round(-duration + (j + 0.5) * window / phases) % period
        total += simulate(collective=pattern, ranks=ranks, bytes=size, machine=MACHINE, **params,
                          noise=dataclasses.replace(noise, phase=phase)).makespan
    return base + (window / period) * (total / phases - base)


# --- the pipelining error of looped broadcasts ----------------------------------------------------

def looped_bcast_goal(ranks: int, loops: int, rotate: bool) -> str:
    """``loops`` binomial broadcasts of 1 byte, one after the other on every rank (a benchmark loop):
    broadcast i has root i mod P if ``rotate`` else 0 (vrank = (rank - root) mod P, children nearest
    first, Schedgen's tree); a rank starts broadcast i + 1 when its part of broadcast i is done (its
    receive and its sends issued). Tags are the loop index."""
    lines = [f"num_ranks {ranks}"]
    for rank in range(ranks):
        body = []
        for i in range(loops):
            root = i % ranks if rotate else 0
            v = (rank - root) % ranks
            ops = []
            if v:
                parent = (v - (1 << (v.bit_length() - 1)) + root) % ranks
                body.append(f"r{i}: recv 1b from {parent} tag {i}")
                ops.append(f"r{i}")
            step = 1 << v.bit_length() if v else 1
            c = 0
            while v + step < ranks:
                body.append(f"s{i}_{c}: send 1b to {(v + step + root) % ranks} tag {i}")
                if v:
                    body.append(f"s{i}_{c} requires r{i}")
                ops.append(f"s{i}_{c}")
                step, c = step * 2, c + 1
            if i:
                body += [f"{op} requires j{i - 1}" for op in ops]
            body.append(f"j{i}: calc 0")
            body += [f"j{i} requires {op}" for op in ops] or ([f"j{i} requires j{i - 1}"] if i else [])
        lines.append(f"rank {rank} {{\n  " + "\n  ".join(body) + "\n}")
    return "\n".join(lines) + "\n"


def pipelining(ranks: int, loops: int, workdir: Path) -> dict[str, float]:
    """One broadcast's latency and what a looped benchmark reports per broadcast (ns): at rank 0 and
    at the slowest rank, with root 0 and with a rotating root."""
    out = {"single": simulate(collective="binomial-bcast", ranks=ranks, bytes=1, machine=MACHINE).makespan}
    for rotate, label in ((False, "root 0"), (True, "rotating root")):
        path = workdir / f"loop-{ranks}-{int(rotate)}.goal"
        path.write_text(looped_bcast_goal(ranks, loops, rotate), encoding="utf-8")
        r = simulate(path, machine=MACHINE)
        out[f"{label}, rank 0"] = float(r.ranks[0]) / loops
        out[f"{label}, slowest rank"] = r.makespan / loops
    return out


# --- the reproduction ------------------------------------------------------------------------------

def run_reproduction(out: Path, quick: bool = False,
                     progress: Callable[[str], None] = lambda step: None) -> tuple[list[Finding], dict[str, Any]]:
    """Run every experiment, write the plots into ``out``; return the findings and the raw numbers
    (times in us, slowdowns as ratios to the noiseless run, wall times in s)."""
    scale = QUICK if quick else FULL
    results: dict[str, Any] = {"quick": quick, "machine": MACHINE, "scale": dataclasses.asdict(scale),
                               "wall_seconds": {}}
    coupled = [p for p in scale.ranks if p <= scale.largest_coupled]

    progress("noise shapes: dissemination barrier and binomial broadcast, 2^4 .. "
             f"2^{int(math.log2(scale.ranks[-1]))} ranks")
    shapes = _timed(results, "shapes", lambda: {
        pattern: {label: {p: independent_time(pattern, p, 1, shape_noise(*spec) if spec else None, scale.samples(p))
                          for p in scale.ranks}
                  for label, spec in [("no noise", None), *SHAPES.items()]}
        for pattern in COLLECTIVES})
    progress(f"network speed: the barrier with 0.1x and 10x networks, with and without {NETWORK_SHAPE} noise")
    network = _timed(results, "network", lambda: _network(shapes["dissemination"], coupled, scale))
    progress("co-scheduled noise: every rank's detours at once")
    cosched = _timed(results, "coscheduling", lambda: {
        label: {p: coscheduled_time("dissemination", p, 1, shape_noise(*spec), scale.phases,
                                    shapes["dissemination"]["no noise"][p]) for p in coupled}
        for label, spec in SHAPES.items()})
    progress(f"looped broadcasts: {scale.loops} per loop, with and without root rotation")
    with scratch_directory("contend-noise-") as temporary:
        loops = _timed(results, "pipelining", lambda: {p: pipelining(p, scale.loops, Path(temporary))
                                                       for p in scale.pipeline_ranks})
    progress(f"Beckman's grid: allreduce on {BECKMAN['machine']}, {scale.beckman_ranks} ranks")
    beckman = _timed(results, "beckman", lambda: _beckman(scale))
    progress(f"Ferreira's case: allreduce on {FERREIRA['machine']}, {scale.ferreira_ranks} ranks")
    ferreira = _timed(results, "ferreira", lambda: _ferreira(scale))

    results["shapes"] = {pattern: {label: _us_by_ranks(v) for label, v in by.items()} for pattern, by in shapes.items()}
    results["network"] = {label: _us_by_ranks(v) for label, v in network.items()}
    results["coscheduling"] = {label: _us_by_ranks(v) for label, v in cosched.items()}
    results["pipelining"] = {str(p): {k: round(v / 1000, 4) for k, v in row.items()} for p, row in loops.items()}
    results["beckman"], results["ferreira"] = beckman, ferreira

    findings = [
        _shape_finding(out, "dissemination", shapes["dissemination"], scale),
        _shape_finding(out, "binomial-bcast", shapes["binomial-bcast"], scale),
        _network_finding(out, network, coupled),
        _cosched_finding(out, cosched, shapes["dissemination"], coupled),
        _pipelining_finding(out, loops, scale),
        _beckman_finding(beckman),
    ]
    findings.insert(0, _comparison(findings, shapes, network, cosched, loops, beckman, ferreira, scale, coupled))
    results["checks"] = {f.slug: f.ok for f in findings}
    return findings, results


def _network(barrier: dict[str, dict[int, float]], ranks: list[int], scale: Scale) -> dict[str, dict[int, float]]:
    """The barrier at each network speed, without and with noise; the 1x runs are the shape sweep's."""
    out = {}
    for speed, factor in SPEEDS.items():
        for label, noise in (("no noise", None), (NETWORK_SHAPE, shape_noise(*SHAPES[NETWORK_SHAPE]))):
            out[f"{speed}, {label}"] = {p: barrier[label][p] if factor == 1.0 else independent_time(
                "dissemination", p, 1, noise, scale.samples(p), **network_params(factor)) for p in ranks}
    return out


def _beckman(scale: Scale) -> dict[str, Any]:
    pattern, size = ALLREDUCE
    p = scale.beckman_ranks
    base = independent_time(pattern, p, size, None, 1, machine=BECKMAN["machine"])
    grid = {}
    for frequency in BECKMAN["frequencies"]:
        for duration in BECKMAN["durations"]:
            noisy = independent_time(pattern, p, size, shape_noise(frequency, duration), scale.comparison_samples,
                                     machine=BECKMAN["machine"])
            grid[f"{frequency} x {duration}"] = round(noisy / base, 3)
    return {"ranks": p, "machine": BECKMAN["machine"], "collective": f"{pattern}, {size} B",
            "noiseless_us": round(base / 1000, 3), "slowdown": grid, "samples": scale.comparison_samples}


def _ferreira(scale: Scale) -> dict[str, Any]:
    pattern, size = ALLREDUCE
    noise = shape_noise(FERREIRA["frequency"], FERREIRA["duration"])
    by_ranks = {}
    for p in sorted({scale.ferreira_ranks // 16, scale.ferreira_ranks // 4, scale.ferreira_ranks}):
        base = independent_time(pattern, p, size, None, 1, machine=FERREIRA["machine"])
        noisy = independent_time(pattern, p, size, noise, max(scale.comparison_samples, 4 if p < 4096 else 1),
                                 machine=FERREIRA["machine"])
        by_ranks[str(p)] = {"noiseless_us": round(base / 1000, 3), "noisy_us": round(noisy / 1000, 3),
                            "slowdown": round(noisy / base, 3)}
    return {"ranks": scale.ferreira_ranks, "machine": FERREIRA["machine"], "collective": f"{pattern}, {size} B",
            "noise": noise.describe(), "by_ranks": by_ranks}


def _slowdowns(by_label: dict[str, dict[int, float]], base: dict[int, float]) -> dict[str, list[float]]:
    return {label: [v[p] / base[p] for p in base if p in v] for label, v in by_label.items()}


def _shape_finding(out: Path, pattern: str, by_label: dict[str, dict[int, float]], scale: Scale) -> Finding:
    base = by_label["no noise"]
    ranks = list(scale.ranks)
    slow = _slowdowns({k: v for k, v in by_label.items() if k != "no noise"}, base)
    plot = f"shapes-{pattern}.png"
    plots.line_plot(out / plot, {label: (ranks, values) for label, values in slow.items()},
                    title=f"{COLLECTIVES[pattern]}, 1 byte: slowdown under 2.5% noise of three shapes",
                    xlabel="ranks", ylabel="time with noise / time without")
    rows = [[p, round(base[p] / 1000, 2)] + [round(by_label[s][p] / 1000, 2) for s in SHAPES]
            + [round(slow[s][k], 2) for s in SHAPES] + [scale.samples(p)] for k, p in enumerate(ranks)]
    high, low = slow["1000 Hz x 25 us"][-1], slow["10 Hz x 2.5 ms"][-1]
    ok = low >= 2 * high and slow["10 Hz x 2.5 ms"][-1] > slow["10 Hz x 2.5 ms"][0]
    return Finding(
        f"shapes-{pattern}", f"Noise shape, not intensity: {COLLECTIVES[pattern]} (1 byte, {MACHINE})",
        f"Periodic noise taking 2.5% of every rank's time, each rank at its own phase (independent noise), in "
        f"three shapes. At {ranks[-1]:,} ranks the {COLLECTIVES[pattern]} is {low:.2f}x slower under 10 Hz x "
        f"2.5 ms detours but {high:.2f}x under 1000 Hz x 25 us: with many ranks some rank on every path is in "
        f"a detour, and a long one delays everybody behind it. Mean of the samples (seeds) shown; times in us.",
        ["ranks", "no noise (us)", *(f"{s} (us)" for s in SHAPES), *(f"{s} slowdown" for s in SHAPES), "samples"],
        rows, ok=ok, plot=plot)


def _network_finding(out: Path, network: dict[str, dict[int, float]], ranks: list[int]) -> Finding:
    plot = "network.png"
    plots.line_plot(out / plot, {label: (ranks, [v[p] / 1000 for p in ranks]) for label, v in network.items()},
                    title=f"dissemination barrier: network speed with and without {NETWORK_SHAPE} noise",
                    xlabel="ranks", ylabel="barrier time (us)")
    labels = list(network)
    rows = [[p] + [round(network[label][p] / 1000, 2) for label in labels] for p in ranks]
    p = ranks[-1]
    quiet = network["1x network, no noise"][p] / network["10x network, no noise"][p]
    noisy = network[f"1x network, {NETWORK_SHAPE}"][p] / network[f"10x network, {NETWORK_SHAPE}"][p]
    ok = noisy - 1 <= 0.25 * (quiet - 1)  # with noise, at most a quarter of the gain without
    return Finding(
        "network", f"Does the network speed matter? (dissemination barrier, {NETWORK_SHAPE} noise)",
        f"L, g and G multiplied by 10 (0.1x network) or by 0.1 (10x network); o stays, so even without noise a "
        f"10x network cannot make a round 10x shorter. At {p:,} ranks a 10x faster network makes the noiseless "
        f"barrier {quiet:.2f}x faster but the noisy one {noisy:.2f}x: the run is noise-bound, and the noise does "
        f"not care how fast the network is. Times in us.",
        ["ranks", *(f"{label} (us)" for label in labels)], rows, ok=ok, plot=plot)


def _cosched_finding(out: Path, cosched: dict[str, dict[int, float]], shapes: dict[str, dict[int, float]],
                     ranks: list[int]) -> Finding:
    base = shapes["no noise"]
    series = {}
    for label in SHAPES:
        series[f"{label}, independent"] = (ranks, [shapes[label][p] / base[p] for p in ranks])
        series[f"{label}, co-scheduled"] = (ranks, [cosched[label][p] / base[p] for p in ranks])
    plot = "coscheduling.png"
    plots.line_plot(out / plot, series, title="dissemination barrier: co-scheduled vs independent noise (2.5%)",
                    xlabel="ranks", ylabel="time with noise / time without")
    rows = [[p, round(base[p] / 1000, 2)] + [x for label in SHAPES for x in
                                             (round(shapes[label][p] / base[p], 2), round(cosched[label][p] / base[p], 2))]
            for p in ranks]
    p = ranks[-1]
    absorbed = {label: 1 - (cosched[label][p] - base[p]) / (shapes[label][p] - base[p]) for label in SHAPES}
    ok = all(a >= 0.5 for a in absorbed.values())
    return Finding(
        "coscheduling", "Co-scheduled versus independent noise (dissemination barrier)",
        "Co-scheduled: every rank's detours come at the same moment (one common phase; the expectation over "
        "that phase). Independent: each rank at its own phase. Co-scheduling absorbs "
        + ", ".join(f"{100 * a:.0f}% ({label})" for label, a in absorbed.items())
        + f" of the extra time at {p:,} ranks: a detour that stops everybody at once delays the barrier once, "
          "while independent detours add up along its log2(P) rounds.",
        ["ranks", "no noise (us)", *(f"{label} {kind}" for label in SHAPES for kind in ("independent", "co-scheduled"))],
        rows, ok=ok, plot=plot)


def _pipelining_finding(out: Path, loops: dict[int, dict[str, float]], scale: Scale) -> Finding:
    ranks = list(loops)
    labels = list(next(iter(loops.values())))
    plot = "pipelining.png"
    plots.line_plot(out / plot, {label: (ranks, [loops[p][label] / 1000 for p in ranks]) for label in labels},
                    title=f"binomial broadcast, 1 byte: one broadcast vs a loop of {scale.loops} (per broadcast)",
                    xlabel="ranks", ylabel="time per broadcast (us)", logy=False)
    rows = [[p] + [round(loops[p][label] / 1000, 3) for label in labels]
            + [round((loops[p]["single"] - loops[p][f"{kind}, slowest rank"]) / 1000, 3) for kind in ("root 0", "rotating root")]
            for p in ranks]
    errors = {kind: [loops[p]["single"] - loops[p][f"{kind}, slowest rank"] for p in ranks]
              for kind in ("root 0", "rotating root")}
    ok = all(all(e > 0 for e in v) and v[-1] > v[0] for v in errors.values())
    return Finding(
        "pipelining", "The pipelining error of looped broadcast benchmarks",
        f"A benchmark times {scale.loops} broadcasts in a loop and divides by {scale.loops}. A rank starts the next "
        "broadcast as soon as its part of the last one is done, so successive broadcasts overlap (pipeline) and the "
        "loop reports less than one broadcast takes, even at the slowest rank; rotating the root shifts the tree "
        "but the broadcasts still overlap. The last two columns are the absolute error (one broadcast minus the "
        "slowest rank's loop average), which grows with the number of ranks. No noise; us.",
        ["ranks", *(f"{label} (us)" for label in labels), "error root 0 (us)", "error rotating (us)"],
        rows, ok=ok, plot=plot)


def _beckman_finding(beckman: dict[str, Any]) -> Finding:
    frequencies, durations = BECKMAN["frequencies"], BECKMAN["durations"]
    grid = beckman["slowdown"]
    rows = [[f] + [grid[f"{f} x {d}"] for d in durations] for f in frequencies]
    ok = all(all(a <= b for a, b in zip(row[1:], row[2:])) for row in rows)
    return Finding(
        "beckman", f"Beckman's detour grid: allreduce on {beckman['machine']}, {beckman['ranks']:,} ranks",
        f"An {beckman['collective']} ({beckman['noiseless_us']} us without noise) under periodic noise of each "
        f"frequency and detour length of Beckman et al.'s injection study, independent phases; slowdown = time "
        f"with noise / without (mean of {beckman['samples']} sample(s)). Longer detours hurt more at every "
        "frequency.", ["frequency", *(f"{d} detours" for d in durations)], rows, ok=ok)


def _comparison(findings, shapes, network, cosched, loops, beckman, ferreira, scale, coupled) -> Finding:
    """The talk's statements and figures beside ours, with the parameters we used."""
    by_slug = {f.slug: f for f in findings}
    top = scale.ranks[-1]
    base = shapes["dissemination"]["no noise"]
    worst = max(beckman["slowdown"], key=beckman["slowdown"].get)
    f_at = ferreira["by_ranks"][str(ferreira["ranks"])]
    p = coupled[-1]
    rows = [
        [*TALK["beckman"], f"{beckman['slowdown'][worst]:.1f}x at {beckman['ranks']:,} ranks (worst of the grid: "
         f"{worst}); {min(beckman['slowdown'].values()):.2f}x at best",
         f"{beckman['machine']}, {beckman['collective']}, independent phases"],
        [*TALK["ferreira"], f"{f_at['slowdown']:.1f}x at {ferreira['ranks']:,} ranks ("
         + ", ".join(f"{v['slowdown']:.1f}x at {int(k):,}" for k, v in ferreira["by_ranks"].items()) + ")",
         f"{ferreira['machine']}, {ferreira['collective']}, {ferreira['noise']}"],
        [*TALK["shape"], "barrier at {:,} ranks: {}".format(top, ", ".join(
            f"{label} {shapes['dissemination'][label][top] / base[top]:.2f}x" for label in SHAPES)),
         f"{MACHINE}, 1 B dissemination, periodic 2.5%, independent"],
        [*TALK["network"], "at {:,} ranks with noise: {}".format(p, ", ".join(
            f"{s} {network[f'{s}, {NETWORK_SHAPE}'][p] / 1000:.1f} us" for s in SPEEDS)),
         f"{MACHINE} with L, g, G x10 and x0.1; {NETWORK_SHAPE}"],
        [*TALK["coscheduling"], "at {:,} ranks, co-scheduled / independent slowdown: {}".format(p, ", ".join(
            f"{label} {cosched[label][p] / base[p]:.2f}x / {shapes['dissemination'][label][p] / base[p]:.2f}x"
            for label in SHAPES)), f"{MACHINE}, 1 B dissemination"],
        [*TALK["pipelining"], "error (one broadcast - loop average, slowest rank) at {} and {:,} ranks: "
         "root 0 {:.1f} and {:.1f} us, rotating {:.1f} and {:.1f} us".format(
             min(loops), max(loops), *(loops[q]["single"] / 1000 - loops[q][f"{k}, slowest rank"] / 1000
                                       for k in ("root 0", "rotating root") for q in (min(loops), max(loops)))),
         f"{MACHINE}, binomial 1 B, {scale.loops} per loop"],
    ]
    checks = ["shapes-dissemination", "network", "coscheduling", "pipelining", "beckman"]
    return Finding(
        "comparison", "Ours beside Hoefler 2011 ('Characterizing the Influence of System Noise')",
        "The talk's figures and statements, and what contend's engine gives on the presets with the parameters "
        "listed (python/contend/machine/presets/; the talk does not list its BG/L or XT parameters or which of Beckman's "
        "detour settings gave 16x, so we show the whole grid). Our checks: the qualitative findings reappear ("
        + ", ".join(f"{slug}: {'yes' if by_slug[slug].ok else 'NO'}" for slug in checks) + ").",
        ["experiment", "the talk", "ours", "parameters"], rows, ok=all(by_slug[s].ok for s in checks))


def _timed(results: dict[str, Any], name: str, run: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = run()
    results["wall_seconds"][name] = round(time.perf_counter() - started, 3)
    return value


def _us_by_ranks(values: dict[int, float]) -> dict[str, float]:
    return {str(k): round(v / 1000, 4) for k, v in values.items()}
