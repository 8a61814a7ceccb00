"""The three contention benchmarks of Bhatele and Kale 2009, simulated on the BG/P-like and XT3-like tori.

Bhatele and Kale 2009 measured them with MPI on ANL's Blue Gene/P and PSC's XT3; here the same schedules run on the
presets ``bgp-torus`` and ``xt3-torus`` (flow-level link contention, docs/models.md "Links"):

- I, no contention: a master sends to every other rank in turn and gets a reply; latency against the
  hops between master and rank.
- II, random contention: all ranks in pairs exchange at once, partners one hop apart (NN) or random.
- III, controlled contention: partners n = 1..8 hops apart along z only, so every z line of the torus
  carries the same pattern and n messages share each link at n = 8.

Latency is per message, from the send being ready to the data being available at the receiver
(records: completed - posted), the mean over the messages of the benchmark. ``run_reproduction``
returns the findings to report and the raw numbers (``results.json``).
"""

from __future__ import annotations

import dataclasses
import math
from contend.atomic import scratch_directory
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from contend.report.findings import Finding
from contend.machine.file import Machine, load_machine, loggops_params
from contend.simulation.layout import NetworkLayout
from contend.machine.quantities import format_bytes
from contend.report import plots
from contend.report.heatmap import link_heatmap
from contend.simulation.simulate import simulate

MACHINES = {"bgp-torus": "BG/P-like", "xt3-torus": "XT3-like"}
Z = 2  # the torus dimension Benchmark III sends along (Bhatele and Kale 2009's Z)


@dataclass(frozen=True)
class Scale:
    """How much to simulate: message sizes of Benchmarks II and III, sizes of Benchmark I, partner
    distances of Benchmark III, seeds of the random pairs, and the torus (None: the preset's)."""

    sizes: tuple[int, ...]
    hop_sizes: tuple[int, ...]
    distances: tuple[int, ...]
    seeds: tuple[int, ...]
    dims: tuple[int, ...] | None


FULL = Scale(sizes=tuple(4**k for k in range(1, 11)), hop_sizes=(8, 1024, 65536),
             distances=tuple(range(1, 9)), seeds=(0, 1, 2), dims=None)
# A quarter of the rack, z kept at 16 so that partners can still be 8 hops apart.
QUICK = Scale(sizes=(16, 1024, 65536, 2**20), hop_sizes=(8, 65536), distances=(1, 2, 4, 8), seeds=(0,),
              dims=(4, 4, 16))

# What Bhatele and Kale 2009 (a one-page poster) says, in its words where it gives a number.
PAPER = {
    "hops": ("latency grows with hops for small messages, without contention", "Benchmark I, findings 1 and 3",
             "yes; no number given"),
    "diameter": ("the effect is larger on larger tori (larger diameter)", "Benchmark I, finding 2",
                 "yes; no number given"),
    "double": ("contention can double message latency", "Benchmark II, finding 1", "about 2x"),
    "ratio:bgp-torus": ("random / NN latency, large messages, Blue Gene/P", "Benchmark II, finding 2", "1.75x"),
    "ratio:xt3-torus": ("random / NN latency, large messages, XT3", "Benchmark II, finding 2", "2.25x"),
    "xt3-faster": ("XT3's absolute latencies are lower than BG/P's", "Benchmark II, finding 3", "yes; no number given"),
    "eight": ("8 hops vs 1 hop apart (controlled contention)", "Benchmark III, finding 2",
              "as much as 8x; machine and size not given"),
}


@dataclass
class Torus:
    """A preset (possibly resized) and its layout for a job on every node."""

    name: str
    machine: Machine
    layout: NetworkLayout

    @property
    def ranks(self) -> int:
        return len(self.layout.node_of_rank)


def torus(name: str, dims: Sequence[int] | None = None) -> Torus:
    """The preset ``name``, its torus replaced by ``dims`` if given, with one job on all its nodes."""
    machine = load_machine(name)
    if dims is not None:
        machine = dataclasses.replace(machine, network={**machine.network, "dims": list(dims)})
    network = machine.network
    ranks = math.prod(network["dims"]) * network["ranks_per_node"]
    return Torus(name, machine, NetworkLayout.of(loggops_params(machine), ranks))


def mean_latency_ns(records) -> float:
    """Mean message latency: from the send being ready to the data being available (ns)."""
    return float((records["completed"] - records["posted"]).mean())


# --- Benchmark I: no contention -------------------------------------------------------------------

def ping_each_goal(ranks: int, size: int) -> str:
    """Rank 0 sends to ranks 1, 2, ... in turn, each send after the previous reply has arrived."""
    master = []
    for r in range(1, ranks):
        master.append(f"  s{r}: send {size}b to {r}\n  a{r}: recv {size}b from {r}\n")
        if r > 1:
            master.append(f"  s{r} requires a{r - 1}\n")
    blocks = [f"rank 0 {{\n{''.join(master)}}}\n"]
    blocks += [f"rank {r} {{\n  q: recv {size}b from 0\n  p: send {size}b to 0\n  p requires q\n}}\n"
               for r in range(1, ranks)]
    return f"num_ranks {ranks}\n" + "".join(blocks)


def latency_by_hops(t: Torus, size: int, workdir: Path) -> dict[int, float]:
    """Benchmark I at one size: mean latency (ns) of the master's messages by hops to the receiver."""
    path = workdir / f"ping-each-{t.name}-{size}.goal"
    path.write_text(ping_each_goal(t.ranks, size), encoding="utf-8")
    records = simulate(path, machine=t.machine, records=True).records
    sent = records[records["src"] == 0]
    hops = t.layout.hops(np.zeros(len(sent), dtype=np.int64), sent["dst"].to_numpy())
    latency = (sent["completed"] - sent["posted"]).to_numpy()
    return {int(h): float(latency[hops == h].mean()) for h in np.unique(hops)}


# --- Benchmark II: random contention --------------------------------------------------------------

def pairs_latency(t: Torus, pattern: str, size: int, seeds: Sequence[int]) -> float:
    """Benchmark II at one size: mean latency (ns) of all pairs exchanging at once, over ``seeds``."""
    runs = seeds if pattern == "random-pairs" else (0,)  # neighbour pairs do not depend on the seed
    return float(np.mean([mean_latency_ns(simulate(collective=pattern, ranks=t.ranks, bytes=size,
                                                   machine=t.machine, seed=s, records=True).records)
                          for s in runs]))


def mean_partner_hops(t: Torus, pattern: str, seed: int = 0) -> float:
    records = simulate(collective=pattern, ranks=t.ranks, bytes=1, machine=t.machine, seed=seed, records=True).records
    return float(np.mean(t.layout.hops(records["src"].to_numpy(), records["dst"].to_numpy())))


# --- Benchmark III: controlled contention ---------------------------------------------------------

def partners_along(layout: NetworkLayout, distance: int, axis: int = Z) -> list[int]:
    """A perfect matching of the ranks in which partners sit ``distance`` hops apart along ``axis``.

    On a ring of n routers the steps z -> z + d form gcd(d, n) cycles of n / gcd(d, n) routers each;
    pairing neighbours along every cycle matches all routers when that length is even, which holds
    for every d <= n / 2 on a ring of 16.
    """
    size = layout.dims[axis]
    cycle = size // math.gcd(distance, size)
    if not (1 <= distance <= size // 2 and cycle % 2 == 0):
        raise ValueError(f"no perfect matching at distance {distance} on a ring of {size}")
    coordinates = layout.coordinates[layout.node_of_rank]
    rank_at = {tuple(c): r for r, c in enumerate(coordinates.tolist())}
    partner = [-1] * len(coordinates)
    for rank, point in enumerate(coordinates.tolist()):
        z = point[axis]
        start = z % math.gcd(distance, size)  # the smallest coordinate of z's cycle
        position = next(k for k in range(cycle) if (start + k * distance) % size == z)
        step = distance if position % 2 == 0 else -distance  # even positions pair forward
        other = list(point)
        other[axis] = (z + step) % size
        partner[rank] = rank_at[tuple(other)]
    return partner


def exchange_goal(partner: Sequence[int], size: int) -> str:
    """Every rank sends to its partner and receives from it, both at once."""
    blocks = [f"rank {r} {{\n  send {size}b to {p}\n  recv {size}b from {p}\n}}\n" for r, p in enumerate(partner)]
    return f"num_ranks {len(partner)}\n" + "".join(blocks)


def exchange_path(t: Torus, distance: int, size: int, workdir: Path) -> Path:
    path = workdir / f"z-pairs-{t.name}-{distance}-{size}.goal"
    path.write_text(exchange_goal(partners_along(t.layout, distance), size), encoding="utf-8")
    return path


def controlled_contention(t: Torus, distance: int, sizes: Sequence[int], workdir: Path) -> dict[str, Any]:
    """Benchmark III at one distance: mean latency (ns) per size, and the most flows any link carried at
    once (what sets the slowdown: the matching decides how many pairs share a link, see the report)."""
    latencies, peak = [], 0
    for size in sizes:
        result = simulate(exchange_path(t, distance, size, workdir), machine=t.machine, records=True)
        latencies.append(mean_latency_ns(result.records))
        peak = max(peak, int(result.links["peak_flows"].max()))
    return {"latency": latencies, "peak_flows": peak}


# --- the reproduction ------------------------------------------------------------------------------

def run_reproduction(out: Path, quick: bool = False,
                     progress: Callable[[str], None] = lambda step: None) -> tuple[list[Finding], dict[str, Any]]:
    """Run the three benchmarks on both presets; write plots into ``out``; return the findings and
    the raw numbers (latencies in us, wall times in s)."""
    scale = QUICK if quick else FULL
    tori = {name: torus(name, scale.dims) for name in MACHINES}
    results: dict[str, Any] = {"quick": quick, "scale": dataclasses.asdict(scale), "wall_seconds": {},
                               "machines": {name: {"dims": list(t.layout.dims), "ranks": t.ranks,
                                                   "diameter": t.layout.diameter} for name, t in tori.items()}}
    with scratch_directory("contend-topology-") as temporary:
        workdir = Path(temporary)
        progress("Benchmark I: latency by hops")
        one = _timed(results, "benchmark_1", lambda: {
            name: {size: latency_by_hops(t, size, workdir) for size in scale.hop_sizes} for name, t in tori.items()})
        smaller = {name: torus(name, _half_z(t.layout.dims)) for name, t in tori.items()}
        diameter = _timed(results, "benchmark_1_half_torus", lambda: {
            name: latency_by_hops(t, scale.hop_sizes[0], workdir) for name, t in smaller.items()})
        progress("Benchmark II: nearest-neighbour and random pairs")
        two = _timed(results, "benchmark_2", lambda: {
            name: {pattern: [pairs_latency(t, pattern, size, scale.seeds) for size in scale.sizes]
                   for pattern in ("neighbour-pairs", "random-pairs")} for name, t in tori.items()})
        progress("Benchmark III: partners 1..8 hops apart along z")
        three = _timed(results, "benchmark_3", lambda: {
            name: {d: controlled_contention(t, d, scale.sizes, workdir) for d in scale.distances}
            for name, t in tori.items()})
        progress("link heatmaps")
        files = _heatmaps(out, tori["bgp-torus"], scale, workdir)
    hops = {name: mean_partner_hops(t, "random-pairs") for name, t in tori.items()}

    results["benchmark_1"] = {n: {str(s): _us_by_key(v) for s, v in by_size.items()} for n, by_size in one.items()}
    results["benchmark_1_half_torus"] = {n: {"dims": list(smaller[n].layout.dims), "size": scale.hop_sizes[0],
                                             "latency_us": _us_by_key(v)} for n, v in diameter.items()}
    results["benchmark_2"] = {n: {"sizes": list(scale.sizes), "random_partner_mean_hops": hops[n],
                                  **{p: _us(v) for p, v in by_pattern.items()}} for n, by_pattern in two.items()}
    results["benchmark_3"] = {n: {"sizes": list(scale.sizes), **{str(d): _us(v["latency"]) for d, v in by_d.items()},
                                  "peak_flows": {str(d): v["peak_flows"] for d, v in by_d.items()}}
                              for n, by_d in three.items()}
    findings = [_hops_finding(out, name, tori[name], one[name]) for name in MACHINES]
    findings.append(_pairs_finding(out, two, scale, hops, files))
    findings += [_controlled_finding(out, name, three[name], scale) for name in MACHINES]
    comparison, checks = _comparison(one, diameter, two, three, scale, tori, smaller)
    findings.insert(0, comparison)
    results["checks"] = checks
    results["comparison"] = {"columns": comparison.columns, "rows": comparison.rows}
    return findings, results


def _half_z(dims: Sequence[int]) -> list[int]:
    """The torus with half as many routers along z: the same machine with a smaller diameter."""
    return [*dims[:Z], dims[Z] // 2, *dims[Z + 1:]]


def _heatmaps(out: Path, t: Torus, scale: Scale, workdir: Path) -> list[tuple[str, str]]:
    """Link load of random pairs and of 8-hop z pairs at the largest size on the BG/P-like torus."""
    size, farthest = scale.sizes[-1], scale.distances[-1]
    runs = {
        f"heatmap-random-pairs-{t.name}.png": (
            simulate(collective="random-pairs", ranks=t.ranks, bytes=size, machine=t.machine),
            f"random pairs, {format_bytes(size)}, {t.name}"),
        f"heatmap-z{farthest}-pairs-{t.name}.png": (
            simulate(exchange_path(t, farthest, size, workdir), machine=t.machine),
            f"pairs {farthest} hops apart along z, {format_bytes(size)}, {t.name}"),
    }
    for name, (result, title) in runs.items():
        link_heatmap(out / name, result.links, result.network, title=title)
    return [(name, f"link load (bytes per link): {title}") for name, (_, title) in runs.items()]


def _hops_finding(out: Path, name: str, t: Torus, by_size: dict[int, dict[int, float]]) -> Finding:
    sizes = list(by_size)
    hops = sorted(by_size[sizes[0]])
    plot = f"hops-{name}.png"
    plots.line_plot(out / plot, {format_bytes(s): (hops, [by_size[s][h] / 1000 for h in hops]) for s in sizes},
                    title=f"Benchmark I on {name}: no contention", xlabel="hops from the master",
                    ylabel="message latency (us)", logx=False)
    rows = [[h] + [round(by_size[s][h] / 1000, 3) for s in sizes] for h in hops]
    small = by_size[sizes[0]]
    grows = all(small[a] < small[b] for a, b in zip(hops, hops[1:]))
    return Finding(
        f"hops-{name}", f"Benchmark I on {name} ({MACHINES[name]}, {_shape(t.layout)}): latency by hops, no contention",
        f"The master (rank 0) sends to every other rank in turn and waits for the reply, so one message is in "
        f"the network at a time. Small messages take longer the farther they go: each hop adds the router "
        f"delay and one packet's time on the link (Bhatele and Kale 2009's (Lf/B)*D). For large messages the hops are lost "
        f"in the transfer time. {format_bytes(sizes[0])}: {small[hops[0]] / 1000:.3f} us at {hops[0]} hop(s), "
        f"{small[hops[-1]] / 1000:.3f} us at {hops[-1]}.",
        ["hops"] + [f"{format_bytes(s)} (us)" for s in sizes], rows, ok=grows, plot=plot,
    )


def _pairs_finding(out: Path, two, scale: Scale, hops: dict[str, float], files) -> Finding:
    series, rows = {}, []
    for name in MACHINES:
        for pattern, label in (("neighbour-pairs", "NN"), ("random-pairs", "random")):
            series[f"{name} {label}"] = (list(scale.sizes), [v / 1000 for v in two[name][pattern]])
    plots.line_plot(out / "pairs.png", series, title="Benchmark II: all pairs exchange at once",
                    xlabel="message size (bytes)", ylabel="message latency (us)")
    for k, size in enumerate(scale.sizes):
        row = [format_bytes(size)]
        for name in MACHINES:
            nn, rnd = two[name]["neighbour-pairs"][k], two[name]["random-pairs"][k]
            row += [_us_shown(nn), _us_shown(rnd), round(rnd / nn, 2)]
        rows.append(row)
    slower = all(two[n]["random-pairs"][-1] > two[n]["neighbour-pairs"][-1] for n in MACHINES)
    return Finding(
        "pairs", "Benchmark II: nearest-neighbour (NN) versus random partners",
        "All ranks are paired and every pair exchanges one message each way at once. NN partners are one hop "
        "apart (ranks 2i and 2i+1, neighbours along x); random partners are a seeded random matching "
        f"(mean of {len(scale.seeds)} seed(s); on average {hops['bgp-torus']:.1f} hops apart), whose routes "
        "share links. The ratio column is random / NN.",
        ["size"] + [f"{n} {c}" for n in MACHINES for c in ("NN (us)", "random (us)", "ratio")], rows,
        ok=slower, plot="pairs.png", files=files,
    )


def _controlled_finding(out: Path, name: str, runs: dict[int, dict[str, Any]], scale: Scale) -> Finding:
    distances = list(runs)
    by_distance = {d: run["latency"] for d, run in runs.items()}
    plot = f"z-pairs-{name}.png"
    plots.line_plot(out / plot, {f"{d} hop{'s' if d > 1 else ''}": (list(scale.sizes), [v / 1000 for v in by_distance[d]])
                                 for d in distances},
                    title=f"Benchmark III on {name}: partners n hops apart along z", xlabel="message size (bytes)",
                    ylabel="message latency (us)")
    near, far = by_distance[distances[0]], by_distance[distances[-1]]
    ratios = [f / n for f, n in zip(far, near)]
    rows = [[format_bytes(s)] + [_us_shown(by_distance[d][k]) for d in distances] + [round(ratios[k], 2)]
            for k, s in enumerate(scale.sizes)]
    rows.append(["most flows on a link"] + [runs[d]["peak_flows"] for d in distances] + [""])
    grows = all(r > 1 for r in ratios) and ratios[-1] > ratios[0]
    return Finding(
        f"z-pairs-{name}", f"Benchmark III on {name} ({MACHINES[name]}): controlled contention along z",
        f"Every rank's partner is n hops away along z (a perfect matching on each z ring), so messages only "
        f"use z links. How many pairs share a link depends on the matching as well as on n: on a ring of 16, "
        f"n = 1, 2, 4, 8 pair z with z + n in blocks of 2n, so n messages cross the middle link of a block; "
        f"other n cannot be matched in blocks and share less (last row), and their latency follows that "
        f"sharing, not the distance. At 8 hops (half the ring) both partners route the same way round "
        f"(ties go +), so every z+ link carries 8 messages and z- links none. {distances[-1]} hops vs "
        f"{distances[0]}: {ratios[0]:.2f}x at {format_bytes(scale.sizes[0])}, {ratios[-1]:.2f}x at "
        f"{format_bytes(scale.sizes[-1])}.",
        ["size"] + [f"{d} hop{'s' if d > 1 else ''} (us)" for d in distances] + [f"{distances[-1]} / {distances[0]}"],
        rows, ok=grows, plot=plot,
    )


def _comparison(one, diameter, two, three, scale: Scale, tori, smaller) -> tuple[Finding, dict[str, bool]]:
    """Bhatele and Kale 2009's findings beside ours, and the qualitative checks."""
    small = scale.hop_sizes[0]
    checks: dict[str, bool] = {}
    ours: dict[str, dict[str, str]] = {key: {} for key in PAPER}
    for name in MACHINES:
        by_hops = one[name][small]
        first, last = min(by_hops), max(by_hops)
        checks[f"hops:{name}"] = all(by_hops[a] < by_hops[b] for a, b in zip(sorted(by_hops), sorted(by_hops)[1:]))
        ours["hops"][name] = (f"{format_bytes(small)}: {by_hops[first] / 1000:.2f} us at {first} hop, "
                              f"{by_hops[last] / 1000:.2f} us at {last} (+{by_hops[last] / by_hops[first] - 1:.0%})")
        spread = {label: max(v.values()) - min(v.values()) for label, v in
                  ((_shape(tori[name].layout), by_hops), (_shape(smaller[name].layout), diameter[name]))}
        checks[f"diameter:{name}"] = list(spread.values())[0] > list(spread.values())[1]
        ours["diameter"][name] = "farthest - nearest: " + ", ".join(f"{v / 1000:.2f} us on {k}" for k, v in spread.items())
        nn, rnd = np.array(two[name]["neighbour-pairs"]), np.array(two[name]["random-pairs"])
        checks[f"random:{name}"] = bool(rnd[-1] > nn[-1])
        ours["double"][name] = f"up to {np.max(rnd / nn):.2f}x (random / NN)"
        ours[f"ratio:{name}"][name] = f"{rnd[-1] / nn[-1]:.2f}x at {format_bytes(scale.sizes[-1])}"
        near, far = (np.array(three[name][d]["latency"]) for d in (scale.distances[0], scale.distances[-1]))
        checks[f"eight:{name}"] = bool(np.all(far > near) and far[-1] / near[-1] > far[0] / near[0])
        ours["eight"][name] = (f"{far[0] / near[0]:.2f}x at {format_bytes(scale.sizes[0])}, "
                               f"{far[-1] / near[-1]:.2f}x at {format_bytes(scale.sizes[-1])}")
    ours["xt3-faster"] = {"xt3-torus": "NN, XT3-like vs BG/P-like: " + ", ".join(
        f"{format_bytes(scale.sizes[k])}: {two['xt3-torus']['neighbour-pairs'][k] / 1000:.3g} vs "
        f"{two['bgp-torus']['neighbour-pairs'][k] / 1000:.3g} us" for k in (0, -1))}
    rows = []
    for key, (claim, where, theirs) in PAPER.items():
        rows.append([claim, where, theirs] + [ours[key].get(name, "") for name in MACHINES])
    finding = Finding(
        "comparison", "Ours beside Bhatele and Kale 2009 ('Effects of Contention on Message Latencies')",
        "Bhatele and Kale 2009 is a one-page poster: its findings are quoted with the section they are in; where it gives no "
        "number we say so. Ours are simulated on the presets (their numbers are published figures or marked "
        "estimates, see python/contend/machine/presets/). Qualitative checks: small-message latency grows with hops; "
        "random pairs are slower than NN for large messages; 8 hops are slower than 1 hop, more so for larger "
        "messages.",
        ["finding (Bhatele and Kale 2009)", "where (poster)", "theirs", *(f"ours: {name}" for name in MACHINES)], rows,
        ok=all(checks.values()),
    )
    return finding, checks


def _timed(results: dict[str, Any], name: str, run: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = run()
    results["wall_seconds"][name] = round(time.perf_counter() - started, 3)
    return value


def _shape(layout: NetworkLayout) -> str:
    return f"{layout.kind} {'x'.join(map(str, layout.dims))}"


def _us_shown(ns: float) -> float:
    """ns as us with 4 significant digits: narrow table columns (results.json keeps more)."""
    return float(f"{ns / 1000:.4g}")


def _us(values: Sequence[float]) -> list[float]:
    return [round(v / 1000, 4) for v in values]


def _us_by_key(values: dict[int, float]) -> dict[str, float]:
    return {str(k): round(v / 1000, 4) for k, v in values.items()}
