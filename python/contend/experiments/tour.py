"""The demo tour: short experiments on the built-in presets, each returning a ``Finding`` to report.

Every experiment calls ``contend.simulate`` like a user would; the tour only chooses inputs and
collects numbers. ``run_tour`` writes its plots and sample outputs into a directory; rendering the
findings (terminal, HTML, JSON) is the job of ``contend.commands.demo``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from contend.atomic import atomic_path
from contend.chrome_trace import write_chrome_trace
from contend.machine import load_machine, preset_names
from contend.records import write_records_parquet
from contend.report import plots
from contend.result import parameters_ns
from contend.simulate import simulate

REFERENCE_MACHINE = "loggops-reference"


@dataclass
class Finding:
    """One step of the tour: an explanation, a table, optionally a plot and files beside the report."""

    slug: str
    title: str
    summary: str
    columns: list[str]
    rows: list[list[Any]]
    ok: bool = True
    plot: str | None = None
    files: list[tuple[str, str]] = field(default_factory=list)


# The reference answers measured on LogGOPSim v1 (loggops.md), L=3000 o=1500 g=1000 G=6 O=0 S=65535:
# (collective, ranks, bytes, makespan, per-rank finish times or None).
REFERENCE_CASES = (
    ("binomial-bcast", 8, 1, 18000, [4500, 9000, 9000, 13500, 9000, 13500, 13500, 18000]),
    ("binomial-bcast", 8, 131072, 2377278,
     [1579352, 1584352, 1584352, 1589352, 2367278, 2372278, 2372278, 2377278]),
    ("binomial-bcast", 64, 1, 36000, None),
    ("binomial-bcast", 1024, 1, 60000, None),
    ("binomial-bcast", 1024, 131072, 7924260, None),
    ("dissemination", 16, 1, 24000, [24000] * 16),
    ("dissemination", 16, 131072, 3169704, [3169704] * 16),
    ("dissemination", 1024, 1, 60000, None),
    ("dissemination", 1024, 131072, 7924260, None),
    ("scatter", 16, 1, 27000, None),
    ("scatter", 16, 1024, 112070, None),
    ("scatter", 1024, 1, 1539000, None),
    ("alltoall-linear", 16, 1, 45000, None),
    ("alltoall-linear", 16, 1024, 182070, None),
    ("binomial-bcast", 16, 65535, 1596816, None),
    ("binomial-bcast", 16, 65536, 1596840, None),
)


def reference_answers(out: Path) -> Finding:
    rows, ok = [], True
    for collective, ranks, size, expected, per_rank in REFERENCE_CASES:
        result = simulate(collective=collective, ranks=ranks, bytes=size, machine=REFERENCE_MACHINE)
        match = result.makespan == expected and (per_rank is None or result.ranks.tolist() == per_rank)
        ok &= match
        rows.append([collective, ranks, size, expected, result.makespan, match])
    return Finding(
        "reference", "Exact LogGOPS: LogGOPSim v1's answers reproduced",
        "Each row simulates a schedule whose answer was measured on LogGOPSim v1 (L=3000 o=1500 g=1000 G=6 "
        "O=0 S=65535, ns). contend must match to the nanosecond, per-rank finish times included where "
        "listed. The last two rows straddle the eager/rendezvous threshold S.",
        ["collective", "ranks", "bytes", "LogGOPSim v1 (ns)", "contend (ns)", "match"], rows, ok=ok,
    )


def sizes_sweep(out: Path, machine: str = "qdr-ib-fattree", ranks: int = 64) -> Finding:
    collectives = ("binomial-bcast", "dissemination", "allreduce-recdoub", "allreduce-ring",
                   "alltoall-bruck", "alltoall-pairwise", "alltoall-linear")
    sizes = [2**k for k in range(0, 22, 3)]
    series, rows = {}, []
    for collective in collectives:
        times = [_us(simulate(collective=collective, ranks=ranks, bytes=s, machine=machine).makespan)
                 for s in sizes]
        series[collective] = (sizes, times)
        rows.append([collective] + [round(t, 2) for t in times])
    plots.line_plot(out / "sizes.png", series, title=f"{ranks} ranks on {machine}",
                    xlabel="message size (bytes)", ylabel="makespan (us)")
    return Finding(
        "sizes", f"Collectives across message sizes ({ranks} ranks, {machine})",
        "Makespan of generated collectives as the message size grows from 1 byte to 2 MiB. Latency-bound "
        "algorithms (binomial, recursive doubling, Bruck) win for small messages; bandwidth terms take over "
        "for large ones, where rendezvous (size > S) also adds synchronisation.",
        ["collective"] + [f"{_size(s)} (us)" for s in sizes], rows, plot="sizes.png",
    )


def ranks_sweep(out: Path, machine: str = "aries-dragonfly", size: int = 8) -> Finding:
    limits = {"binomial-bcast": 4096, "dissemination": 4096, "allreduce-recdoub": 4096,
              "alltoall-bruck": 4096, "allreduce-ring": 1024}  # ring: 2(P-1) rounds of P messages
    series, rows = {}, []
    for collective, limit in limits.items():
        counts = [2**k for k in range(1, int(math.log2(limit)) + 1)]
        times = [_us(simulate(collective=collective, ranks=p, bytes=size, machine=machine).makespan) for p in counts]
        series[collective] = (counts, times)
        rows.append([collective, round(times[counts.index(16)], 2), round(times[counts.index(1024)], 2),
                     round(times[-1], 2), counts[-1]])
    plots.line_plot(out / "ranks.png", series, title=f"{size}-byte collectives on {machine}",
                    xlabel="ranks", ylabel="makespan (us)")
    return Finding(
        "ranks", f"Scaling with the number of ranks ({size} bytes, {machine})",
        "Logarithmic algorithms grow by one round per doubling; the ring allreduce grows linearly.",
        ["collective", "16 ranks (us)", "1024 ranks (us)", "largest (us)", "largest P"], rows, plot="ranks.png",
    )


def machines_compared(out: Path, collective: str = "allreduce-recdoub", ranks: int = 256) -> Finding:
    rows = []
    for name in preset_names():
        machine = load_machine(name)
        small = simulate(collective=collective, ranks=ranks, bytes=8, machine=machine)
        large = simulate(collective=collective, ranks=ranks, bytes=2**20, machine=machine)
        params = parameters_ns(machine.params)
        rows.append([name, params["L"], params["o"], params["g"], params["G"], params["S"],
                     round(_us(small.makespan), 2), round(_us(large.makespan), 1)])
    return Finding(
        "machines", f"The presets compared ({collective}, {ranks} ranks)",
        "Every preset machine file on the same collective. The presets' numbers and their sources (or the "
        "word 'estimate') are in python/contend/machines/*.toml.",
        ["machine", "L (ns)", "o (ns)", "g (ns)", "G (ns/B)", "S (B)", "8 B (us)", "1 MiB (us)"], rows,
    )


def eager_versus_rendezvous(out: Path, machine: str = "qdr-ib-fattree", ranks: int = 16) -> Finding:
    threshold = load_machine(machine).params["S"]
    sizes = [1024, threshold, threshold + 1, 4 * threshold]
    parts = ("ideal", "nic_queue", "target_queue", "late_receiver")
    split = {part: [] for part in parts}
    rows = []
    for size in sizes:
        result = simulate(collective="incast", ranks=ranks, bytes=size, machine=machine, records=True)
        records = result.records
        rendezvous = int((records["protocol"] == "rendezvous").sum())
        means = {part: float(records[part].mean()) / 1000 for part in parts}
        for part in parts:
            split[part].append(means[part])
        rows.append([size, "eager" if size <= threshold else "rendezvous", rendezvous,
                     round(_us(result.makespan), 2)] + [round(means[p], 3) for p in parts])
    plots.stacked_bars(out / "delay-split.png", [_size(s) for s in sizes], split,
                       title=f"{ranks - 1}-into-1 incast on {machine}: mean delay per message",
                       ylabel="us")
    return Finding(
        "protocols", f"Eager versus rendezvous ({ranks - 1}-into-1 incast, {machine}, S = {threshold} B)",
        "Messages of at most S bytes go eagerly; larger ones wait for the matching receive (rendezvous). "
        "The per-message records split each message's delay into its ideal cost and the time it queued at "
        "the sender's NIC, at the busy target, or waiting for a late receiver.",
        ["bytes", "protocol", "rendezvous msgs", "makespan (us)"] + [f"{p} (us)" for p in parts], rows,
        plot="delay-split.png",
    )


DEADLOCK_GOAL = """\
// Two ranks that both receive before they send: the textbook deadlock.
num_ranks 2
rank 0 {
  r: recv 8b from 1 tag 0
  s: send 8b to 1 tag 0
  s requires r
}
rank 1 {
  r: recv 8b from 0 tag 0
  s: send 8b to 0 tag 0
  s requires r
}
"""


def deadlock_caught(out: Path) -> Finding:
    path = out / "deadlock.goal"
    with atomic_path(path) as temporary:
        temporary.write_text(DEADLOCK_GOAL, encoding="utf-8")
    result = simulate(path)
    deadlock = result.deadlock
    items = [] if deadlock is None else [
        (state, item) for state, group in (("receive never matched", deadlock.unmatched_recvs),
                                           ("send never matched", deadlock.unmatched_sends),
                                           ("never started", deadlock.never_started)) for item in group
    ]
    rows = [[item["rank"], item["op"], item.get("label", ""), item.get("kind", ""), state] for state, item in items]
    return Finding(
        "deadlock", "A deadlocked schedule is caught, not hung",
        "deadlock.goal has two ranks that each wait for the other's message before sending theirs. The "
        "simulation ends, names every blocked operation, and `contend sim deadlock.goal` exits with code 3.",
        ["rank", "op", "label", "kind", "state"], rows, ok=deadlock is not None,
        files=[("deadlock.goal", "the deadlocked schedule")],
    )


# LogGOPSim v1's wrong answers for 1-byte binomial broadcasts (loggops.md), where it reported them.
V1_WRONG = {2**20: 181500, 2**23: 250500}


def ordering_defect(out: Path, largest_exponent: int = 20) -> Finding:
    rows, ok = [], True
    for exponent in range(16, largest_exponent + 1):
        ranks = 2**exponent
        result = simulate(collective="binomial-bcast", ranks=ranks, bytes=1, machine=REFERENCE_MACHINE)
        closed_form = exponent * 6000  # log2(P) * (2o + L) for 1-byte messages
        ok &= result.makespan == closed_form
        v1 = V1_WRONG.get(ranks, "correct" if exponent < 17 else "wrong (not recorded)")
        rows.append([f"2^{exponent}", closed_form, result.makespan, v1, round(result.wall_seconds, 3)])
    return Finding(
        "ordering", "LogGOPSim v1's ordering defect avoided",
        "LogGOPSim v1 orders the ready operations of a rank with an unstable sort; from 2^17 ranks on, a "
        "binomial broadcast gets wrong times (2^20 ranks: 181500 ns instead of 120000). contend breaks ties "
        "by a documented stable rule and matches the closed form log2(P)(2o+L) at every size.",
        ["ranks", "closed form (ns)", "contend (ns)", "LogGOPSim v1 (ns)", "engine wall (s)"], rows, ok=ok,
    )


def sample_outputs(out: Path) -> Finding:
    result = simulate(collective="binomial-bcast", ranks=8, bytes=8192, machine=REFERENCE_MACHINE,
                      records=True, timeline=True)
    metadata = {"params": parameters_ns(result.params), "workload": dict(result.workload)}
    write_records_parquet(result.record_columns, out / "bcast-p8.parquet", metadata)
    write_chrome_trace(result.timeline_columns, result.record_columns, out / "bcast-p8.trace.json", metadata)
    columns = ["src", "dst", "bytes", "protocol", "posted", "injected", "arrived", "completed", "ideal",
               "nic_queue", "target_queue", "late_receiver"]
    frame = result.records.sort_values(["posted", "src", "dst"])
    rows = [[_plain(v) for v in row] for row in frame[columns].itertuples(index=False)]
    return Finding(
        "records", "Per-message records and a Perfetto timeline (binomial broadcast, 8 ranks, 8 KiB)",
        "Every message of a simulation can be kept: times in ns and the split of its delay. The same run "
        "is saved as Parquet (exact integer picoseconds) and as a Chrome trace: open bcast-p8.trace.json "
        "in ui.perfetto.dev to see one track per rank, the CPU overheads and an arrow per message.",
        [c if c in ("src", "dst", "bytes", "protocol") else f"{c} (ns)" for c in columns], rows,
        files=[("bcast-p8.parquet", "records (Parquet)"), ("bcast-p8.trace.json", "timeline (Chrome trace)")],
    )


def run_tour(out: Path, full: bool = False, progress: Callable[[str], None] = lambda step: None) -> list[Finding]:
    """Run every step, writing plots and sample files into ``out``; ``full`` goes to 2^23 ranks."""
    steps = [
        ("reference answers", reference_answers),
        ("collectives across sizes", sizes_sweep),
        ("scaling with ranks", ranks_sweep),
        ("machine presets", machines_compared),
        ("eager versus rendezvous", eager_versus_rendezvous),
        ("deadlock", deadlock_caught),
        ("ordering defect", lambda o: ordering_defect(o, 23 if full else 20)),
        ("records and timeline", sample_outputs),
    ]
    findings = []
    for name, step in steps:
        progress(name)
        findings.append(step(out))
    return findings


def _us(ns: float) -> float:
    return ns / 1000


def _size(size: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (whole floats as ints) for tables and JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
