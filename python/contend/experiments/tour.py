"""The demo tour: short experiments on the built-in presets, each returning a ``Finding`` to report.

Every experiment calls ``contend.simulate`` like a user would; the tour only chooses inputs and
collects numbers. ``run_tour`` writes its plots and sample outputs into a directory; rendering the
findings (terminal, HTML, JSON) is the job of ``contend.commands.demo``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from contend.atomic import atomic_path
from contend.simulation.chrome_trace import write_chrome_trace
from contend.report.findings import Finding
from contend.machine.file import load_machine, preset_names
from contend.machine.quantities import format_bytes
from contend.simulation.records import write_records_parquet
from contend.report import plots
from contend.simulation.result import parameters_ns
from contend.simulation.simulate import simulate

REFERENCE_MACHINE = "loggops-reference"


# The reference answers measured on LogGOPSim v1 (engine/tests/reference.rs), L=3000 o=1500 g=1000 G=6 O=0 S=65535:
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
    shown = [1, 512, 32768, 2**21]  # the table's columns; the plot has every size
    series, rows = {}, []
    for collective in collectives:
        times = [_us(simulate(collective=collective, ranks=ranks, bytes=s, machine=machine).makespan)
                 for s in sizes]
        series[collective] = (sizes, times)
        rows.append([collective] + [round(times[sizes.index(s)], 2) for s in shown])
    plots.line_plot(out / "sizes.png", series, title=f"{ranks} ranks on {machine}",
                    xlabel="message size (bytes)", ylabel="makespan (us)")
    return Finding(
        "sizes", f"Collectives across message sizes ({ranks} ranks, {machine})",
        "Makespan of generated collectives as the message size grows from 1 byte to 2 MiB. Latency-bound "
        "algorithms (binomial, recursive doubling, Bruck) win for small messages; bandwidth terms take over "
        "for large ones, where rendezvous (size > S) also adds synchronisation.",
        ["collective"] + [f"{format_bytes(s)} (us)" for s in shown], rows, plot="sizes.png",
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
        "Every preset machine file on the same collective (L, o, g and G in ns). The presets' numbers and "
        "their sources (or the word 'estimate') are in python/contend/machine/presets/*.toml.",
        ["machine", "L", "o", "g", "G/byte", "S (bytes)", "8 B (us)", "1 MiB (us)"], rows,
    )


def incast_delay_split(out: Path, machine: str = "qdr-ib-fattree", ranks: int = 16) -> Finding:
    threshold = load_machine(machine).params["S"]
    sizes = [64, 1024, threshold, 4 * threshold]
    parts = ("ideal", "nic_queue", "target_queue", "late_receiver")
    split = {part: [] for part in parts}
    rows = []
    for size in sizes:
        result = simulate(collective="incast", ranks=ranks, bytes=size, machine=machine, records=True)
        means = {part: float(result.records[part].mean()) / 1000 for part in parts}
        for part in parts:
            split[part].append(means[part])
        rows.append([size, round(_us(result.makespan), 2)] + [round(means[p], 3) for p in parts])
    plots.stacked_bars(out / "delay-split.png", [format_bytes(s) for s in sizes], split,
                       title=f"{ranks - 1}-into-1 incast on {machine}: mean delay per message", ylabel="us")
    return Finding(
        "incast", f"Where a message's time goes: {ranks - 1}-into-1 incast ({machine}, times in us)",
        "The per-message records split each message's delay (completed - posted) into its ideal cost "
        "o + L + o + (s-1)max(O,G) and the time it waited: at the sender's NIC, at the busy target, or for a "
        "late receiver. In an incast almost all of it is queueing at the target.",
        ["bytes", "makespan", "ideal", "NIC queue", "target queue", "late receiver"], rows,
        plot="delay-split.png",
    )


def contention_diagnosed(out: Path, ranks: int = 8, size: int = 16384) -> Finding:
    """Tallent et al. 2014's case in miniature: gets from a Global-Arrays-like array, blocked vs block-cyclic."""
    from contend.experiments import onesided

    rows = []
    for layout in ("blocked", "cyclic"):
        diagnosis = onesided.diagnose_workload(onesided.global_array(ranks=ranks, layout=layout, size=size))[1]
        split, top = diagnosis.split(), diagnosis.call_sites().iloc[0]
        rows.append([layout, round(diagnosis.contention / 1000, 2), round(split["target"] / 1000, 2),
                     round(split["initiator"] / 1000, 2), top["call_site"], round(_us(diagnosis.run_time), 2)])
    return Finding(
        "diagnose", f"Contention diagnosed: {ranks} ranks read a distributed array with gets (times in us)",
        "contend diagnose splits each message's time beyond its ideal latency into initiator and target "
        "contention and names the call site. Under a blocked layout the ranks' gets pile up at one owner "
        "at a time (target contention, all at ga_get); block-cyclic spreads them (contend reproduce diagnose "
        "has the full case study).",
        ["layout", "contention", "target", "initiator", "top call site", "run time"], rows,
    )


def late_receiver_goal(size: int, receivers: int = 3, delay_ns: int = 10000) -> str:
    """Rank 0 sends to ranks 1..n in turn (each send after the previous one completed); rank r computes
    r * delay before it posts its receive."""
    sends = "".join(f"  s{r}: send {size}b to {r}\n" for r in range(1, receivers + 1))
    chain = "".join(f"  s{r} requires s{r - 1}\n" for r in range(2, receivers + 1))
    blocks = [f"rank 0 {{\n{sends}{chain}}}\n"]
    for r in range(1, receivers + 1):
        blocks.append(f"rank {r} {{\n  w: calc {r * delay_ns}\n  v: recv {size}b from 0\n  v requires w\n}}\n")
    return f"num_ranks {receivers + 1}\n" + "".join(blocks)


def eager_versus_rendezvous(out: Path, machine: str = "qdr-ib-fattree") -> Finding:
    threshold = load_machine(machine).params["S"]
    rows, files = [], []
    for size in (threshold, threshold + 1):
        name = f"late-receivers-{size}.goal"
        with atomic_path(out / name) as temporary:
            temporary.write_text(late_receiver_goal(size), encoding="utf-8")
        files.append((name, f"the schedule with {size}-byte messages"))
        result = simulate(out / name, machine=machine, records=True)
        records = result.records
        last_send = float(records["injected"].max()) / 1000
        rows.append([size, "eager" if size <= threshold else "rendezvous", round(last_send, 2),
                     round(_us(result.ranks[0].item()), 2), round(_us(result.makespan), 2)])
    return Finding(
        "protocols", f"Eager versus rendezvous with late receivers ({machine}, S = {threshold} B, times in us)",
        "Rank 0 sends one message to each of ranks 1, 2, 3 in turn; rank r computes r x 10 us before it "
        "posts its receive. Eager messages (size <= S) leave at once and wait at the receiver, so rank 0 is "
        "done in microseconds. One byte more and the protocol is rendezvous: each send completes only when "
        "its receive is matched, so rank 0 is held up by every late receiver in turn. (In the LogGOPS model "
        "a receiver busy computing cannot process an arrival either, so the records count the wait as "
        "target queue.)",
        ["bytes", "protocol", "last send started", "rank 0 done", "makespan"], rows,
        ok=rows[1][3] > rows[0][3], files=files,
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
    rows = [[item["rank"], item["op"], item.get("line") or "", item.get("kind", ""), state] for state, item in items]
    return Finding(
        "deadlock", "A deadlocked schedule is caught, not hung",
        "deadlock.goal has two ranks that each wait for the other's message before sending theirs. The "
        "simulation ends, names every blocked operation, and `contend sim deadlock.goal` exits with code 3.",
        ["rank", "op", "line", "kind", "state"], rows, ok=deadlock is not None,
        files=[("deadlock.goal", "the deadlocked schedule")],
    )


# LogGOPSim v1's wrong answers for 1-byte binomial broadcasts, where it reported them (docs/models.md, "The tie rule").
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
    metadata = {"params": result.params, "workload": dict(result.workload)}
    write_records_parquet(result.record_columns, out / "bcast-p8.parquet", metadata)
    write_chrome_trace(result.timeline_columns, result.record_columns, out / "bcast-p8.trace.json", metadata)
    columns = ["src", "dst", "posted", "injected", "arrived", "completed", "nic_queue"]
    frame = result.records.sort_values(["posted", "src", "dst"])
    rows = [[_plain(v) for v in row] for row in frame[columns].itertuples(index=False)]
    return Finding(
        "records", "Per-message records and a Perfetto timeline (binomial broadcast, 8 ranks, 8 KiB, ns)",
        "Every message of a simulation can be kept: its times and the split of its delay (here only the "
        "sender's NIC queue is non-zero: the root sends its three messages one after the other). The run is "
        "saved as Parquet (exact integer picoseconds) and as a Chrome trace: open bcast-p8.trace.json in "
        "ui.perfetto.dev to see one track per rank, the CPU overheads and an arrow per message.",
        columns, rows,
        files=[("bcast-p8.parquet", "records (Parquet)"), ("bcast-p8.trace.json", "timeline (Chrome trace)")],
    )


def run_tour(out: Path, full: bool = False, progress: Callable[[str], None] = lambda step: None) -> list[Finding]:
    """Run every step, writing plots and sample files into ``out``; ``full`` goes to 2^23 ranks."""
    steps = [
        ("reference answers", reference_answers),
        ("collectives across sizes", sizes_sweep),
        ("scaling with ranks", ranks_sweep),
        ("machine presets", machines_compared),
        ("incast delay split", incast_delay_split),
        ("contention diagnosed", contention_diagnosed),
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


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (whole floats as ints) for tables and JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
