"""``contend tune``: derive Luo et al. 2012's congestion thresholds and a token count from NIC sweeps (which
they found by hand, Section 7), and write them as a machine file's ``[throttle]`` and as a
configuration of the native throttle library.

The rule, with tolerance X (default 5%), for each message size s swept:

- CCT[s]: the largest number of active cores (blocking, one message per core) whose node throughput
  is within X of the best over all core counts.
- NRCT[s]: with all cores of the node active, the largest outstanding count per core D whose
  throughput is within X of the best over D; NRCT = cores x D (messages per node).
- CRCT[c][s]: for c in {1, CCT[s], all cores}, the largest D within X of the best at c cores.
- tokens: min over sizes of min(NRCT[s], CCT[s] x CRCT[CCT[s]][s]): a one-token-per-message pool
  that keeps both the active cores and the messages in flight at or below their thresholds.

Largest-within-X (not the arg max) because below the knee a flat curve's maximum is noise: the
threshold is where the loss starts, and a little slack costs nothing there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from contend.analysis.nicsweep import concurrency_points, core_steps, outstanding_points, sweep

DEFAULT_TOLERANCE = 0.05


@dataclass(frozen=True)
class TuneScale:
    sizes: tuple[int, ...]
    core_step: int
    max_outstanding: int
    count: int


FULL = TuneScale(sizes=(64, 1024, 8192), core_step=4, max_outstanding=64, count=64)
QUICK = TuneScale(sizes=(1024,), core_step=4, max_outstanding=16, count=16)


@dataclass
class Tuned:
    """Thresholds per size (sorted), the token count and the sweep behind them."""

    ranks_per_node: int
    tolerance: float
    cct: dict[int, int] = field(default_factory=dict)
    nrct: dict[int, int] = field(default_factory=dict)
    crct: dict[int, list[list[int]]] = field(default_factory=dict)
    tokens: int = 0
    table: Any = None

    def throttle_table(self) -> dict[str, Any]:
        """The ``[throttle]`` table: a token pool and one threshold class per size swept (the
        largest class also takes every larger message)."""
        sizes = sorted(self.cct)
        classes = [{"up_to": s, "cct": self.cct[s], "nrct": self.nrct[s], "crct": self.crct[s]} for s in sizes[:-1]]
        last = sizes[-1]
        classes.append({"cct": self.cct[last], "nrct": self.nrct[last], "crct": self.crct[last]})
        return {"policy": "token", "tokens": self.tokens, "ranks_per_node": self.ranks_per_node, "class": classes}

    def engine_policy(self) -> dict[str, Any]:
        from contend.machine.admission import policy_params
        from contend.machine.tomlfile import Where

        return policy_params(self.throttle_table(), Where("tuned", None, ("throttle",), "[throttle]"))

    def to_dict(self) -> dict[str, Any]:
        return {"ranks_per_node": self.ranks_per_node, "tolerance": self.tolerance,
                "cct": self.cct, "nrct": self.nrct, "crct": self.crct, "tokens": self.tokens}


def largest_within(xs, ys, tolerance: float) -> int:
    """The largest x whose y is within ``tolerance`` of the best y."""
    best = max(ys)
    return int(max(x for x, y in zip(xs, ys) if y >= (1 - tolerance) * best))


def tune(machine: Any, ranks_per_node: int, scale: TuneScale = FULL, tolerance: float = DEFAULT_TOLERANCE,
         progress=None, workers: int | None = None, sweeper: Callable[[list], Any] | None = None) -> Tuned:
    """Sweep on ``machine`` (simulated; or with ``sweeper(points)``, e.g. ``real_sweeper``, which
    returns the sweep table of those points) and derive the thresholds."""
    import pandas as pd

    if sweeper is None:
        def sweeper(points):
            return sweep(machine, points, workers=workers, progress=progress)
    rpn = ranks_per_node
    first = concurrency_points(rpn, scale.sizes, scale.core_step, scale.count) + \
        outstanding_points(rpn, scale.sizes, [1, rpn], scale.max_outstanding, scale.count)
    table = sweeper(first)
    out = Tuned(ranks_per_node=rpn, tolerance=tolerance)
    conc = table[table.experiment == "concurrency"]
    for s in scale.sizes:
        rows = conc[conc["size"] == s]
        out.cct[s] = largest_within(rows.active_cores, rows.throughput_Bps, tolerance)
    # The CRCT row at CCT cores needs its own sweep, now that CCT is known.
    second = [p for s in scale.sizes if out.cct[s] not in (1, rpn)
              for p in outstanding_points(rpn, [s], [out.cct[s]], scale.max_outstanding, scale.count)]
    if second:
        table = pd.concat([table, sweeper(second)], ignore_index=True)
    outs = table[table.experiment == "outstanding"]
    for s in scale.sizes:
        best_d = {}
        for c in sorted({1, out.cct[s], rpn}):
            rows = outs[(outs["size"] == s) & (outs.active_cores == c)]
            best_d[c] = largest_within(rows.outstanding, rows.throughput_Bps, tolerance)
        out.nrct[s] = rpn * best_d[rpn]
        out.crct[s] = [[c, best_d[c]] for c in sorted(best_d)]
    out.tokens = min(min(out.nrct[s], out.cct[s] * dict(map(tuple, out.crct[s]))[out.cct[s]]) for s in scale.sizes)
    out.table = table
    return out


def real_sweeper(ranks: int, progress=None) -> Callable[[list], Any]:
    """A sweeper that measures the points with the native suite on this host (``ranks`` ranks, the two
    halves standing for two nodes): one ``nicrate`` run for the concurrency points, one ``outstanding``
    run per active-core count; the sweep table of ``contend.native.bench.nic.sweep_table``."""
    from contend.native.bench.nic import sweep_table
    from contend.native.bench.runner import run_benchmark

    def measure(points: list) -> Any:
        runs = []
        conc = [p for p in points if p.experiment == "concurrency"]
        groups = []
        if conc:
            groups.append(("nicrate", sorted({p.size for p in conc}), {
                "active": ",".join(str(c) for c in sorted({p.cores for p in conc})), "windows": "1",
                "messages": max(p.count for p in conc)}))
        outs = [p for p in points if p.experiment == "outstanding"]
        for cores in sorted({p.cores for p in outs}):
            mine = [p for p in outs if p.cores == cores]
            groups.append(("outstanding", sorted({p.size for p in mine}), {
                "active": str(cores), "windows": ",".join(str(w) for w in sorted({p.outstanding for p in mine})),
                "messages": max(p.count for p in mine)}))
        for k, (name, sizes, options) in enumerate(groups):
            runs.append(run_benchmark(name, ranks=ranks, sizes=sizes, options=options))
            if progress:
                progress(k + 1, len(groups))
        return sweep_table(runs)

    return measure


def steps(ranks_per_node: int, scale: TuneScale) -> list[int]:
    """The core counts the concurrency sweep visits."""
    return core_steps(ranks_per_node, scale.core_step)
