"""Simulation against the emulated fabric (root): incast 2, 3, 4 -> 1 and neighbour vs random pairs,
measured and simulated with a machine file calibrated from other runs (one flow, 1-byte round trips).

    python benchmarks/fabric_vs_sim.py [--out DIR] [--repeats 5] [--topology line|ring] [--nodes 5]

Builds the fabric (removed again at the end, also on failure, Ctrl-C or SIGTERM), measures, writes
DIR/fabric.toml (the calibrated machine file), DIR/fabric_vs_sim.json and DIR/fabric_vs_sim.png, and
prints the table as rich text and as Markdown. Exit 0 when every row is within 15%, 1 when one is not.
About 15 s per repetition on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only
import matplotlib.pyplot as plt  # noqa: E402
from rich import box  # noqa: E402
from rich.console import Console  # noqa: E402

from contend.atomic import atomic_path  # noqa: E402
from contend.errors import UserError  # noqa: E402
from contend.report.plots import save_figure  # noqa: E402
from contend.experiments.fabric_check import TOLERANCE, Check, Settings, run_check  # noqa: E402
from contend.report.terminal import Table  # noqa: E402

PREFIX = "ctdv-"  # never the user's fabric (ctd-) nor the tests' (ctdt-)


def _cells(row) -> list[str]:
    error = f"{100 * row.error:+.1f}%"
    worst = "" if row.worst_member_error is None else f"{100 * row.worst_member_error:+.1f}%"
    return [row.label, row.unit, f"{row.measured:.3f}", f"{row.low:.3f} .. {row.high:.3f}", f"{row.simulated:.3f}",
            error, worst, "yes" if row.within else "NO"]


HEADER = ["case", "quantity", "measured (median)", "range over runs", "simulated", "error", "worst sender",
          "within 15%"]
# The terminal tables, one per quantity (its unit in the title) so that each fits 80 columns.
SHORT_HEADER = ["case", "median", "range", "model", "error", "worst", "ok"]


def rich_tables(check: Check) -> list[Table]:
    tables = []
    for unit in dict.fromkeys(row.unit for row in check.rows):
        table = Table(title=f"{unit}: measured ({check.settings.repeats} runs) vs simulated",
                      box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for column in SHORT_HEADER:
            if column == "case":  # words wrap here, numbers never do
                table.add_column(column, ratio=1)
            else:
                table.add_column(column, justify="right", no_wrap=True)
        for row in (r for r in check.rows if r.unit == unit):
            cells = _cells(row)
            del cells[1]  # the unit: the title's
            cells[2] = f"{row.low:.3f}..{row.high:.3f}"
            cells[4] = f"[{'green' if row.within else 'red'}]{cells[4]}[/]"
            table.add_row(*cells)
        tables.append(table)
    return tables


def markdown(check: Check) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in check.rows]
    return "\n".join(lines)


def plot(check: Check, path: Path) -> None:
    """Measured (bar, whiskers: the runs' range) and simulated side by side, one panel per quantity."""
    panels = [("Gbit/s per sender", "incast: senders' bandwidth"),
              ("ms per message", "pairs ping-pong: half round trip"),
              ("x", "slowdown of random pairs")]
    figure, axes = plt.subplots(1, len(panels), figsize=(15, 5), gridspec_kw={"width_ratios": [6, 3, 2]})
    for ax, (unit, title) in zip(axes, panels):
        rows = [r for r in check.rows if r.unit == unit]
        xs = range(len(rows))
        width = 0.38
        ax.bar([x - width / 2 for x in xs], [r.measured for r in rows], width, label="measured (median of runs)",
               yerr=[[r.measured - r.low for r in rows], [r.high - r.measured for r in rows]], capsize=3)
        ax.bar([x + width / 2 for x in xs], [r.simulated for r in rows], width, label="contend (simulated)")
        for x, r in zip(xs, rows):
            ax.annotate(f"{100 * r.error:+.0f}%", (x + width / 2, r.simulated), ha="center", va="bottom",
                        fontsize=8)
        ax.set_xticks(list(xs), [r.label.replace(", ", "\n").replace(" (seed", "\n(seed") for r in rows], fontsize=7)
        ax.set(title=title, ylabel=unit)
        ax.legend(fontsize=8)
    figure.suptitle(f"Emulated fabric ({check.fabric.topology} of {check.fabric.nodes}, {check.fabric.link}) "
                    f"vs simulation (machine file calibrated on one flow and 1-byte round trips)", fontsize=10)
    save_figure(figure, path, dpi=110)


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="fabric-vs-sim", help="directory for the machine file, JSON and plot")
    parser.add_argument("--repeats", type=int, default=Settings.repeats, help="runs of every measurement")
    parser.add_argument("--topology", choices=("line", "ring"), default="line")
    parser.add_argument("--nodes", type=int, default=5, help="nodes (at least 5 for 4 -> 1)")
    parser.add_argument("--link", default="1gbit", help="tbf rate of every link")
    parser.add_argument("--pair-iters", type=int, default=Settings.pair_iters,
                        help="timed round trips per pairs run (more lets pairs drift out of phase)")
    args = parser.parse_args()
    if args.nodes < 4:
        parser.error("--nodes: the pairs need 4 nodes")
    # SIGTERM (timeout, kill) ends the script through its finally blocks, which take the fabric down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(repeats=args.repeats, pair_iters=args.pair_iters,
                        incasts=tuple(n for n in Settings.incasts if n < args.nodes))
    console = Console(width=80)
    try:
        with console.status("building the fabric") as status:
            check = run_check(settings, nodes=args.nodes, topology=args.topology, link=args.link,
                              machine_path=out / "fabric.toml", prefix=PREFIX, progress=status.update)
    except UserError as exc:  # not root, a fabric already up, a failed run: the fabric is down again
        console.print(f"[red]error:[/] {exc}")
        return 2
    console.print(f"Emulated fabric: {check.fabric.topology} of {check.fabric.nodes}, {check.fabric.link}; "
                  f"'model' is contend's simulation, 'worst' the sender furthest from it, 'ok' within "
                  f"{100 * TOLERANCE:.0f}%")
    for table in rich_tables(check):
        console.print(table)
    cal = check.calibration
    console.print(f"calibration: one flow {cal.link_Bps * 8 / 1e9:.4f} Gbit/s, o {cal.o:.0f} ns, g {cal.gap:.0f} ns, "
                  f"1-byte one-way {cal.one_way:.0f} ns, hop latency {cal.hop_latency:.0f} ns, MTU {cal.mtu}; "
                  f"load average {min(check.loads):.2f} .. {max(check.loads):.2f}")
    with atomic_path(out / "fabric_vs_sim.json") as temporary:
        temporary.write_text(json.dumps(check.to_dict(), indent=1))
    plot(check, out / "fabric_vs_sim.png")
    print(markdown(check))
    console.print(f"wrote {out / 'fabric.toml'}, {out / 'fabric_vs_sim.json'}, {out / 'fabric_vs_sim.png'}")
    return 0 if all(abs(r.error) <= TOLERANCE for r in check.rows) else 1


if __name__ == "__main__":
    sys.exit(run())
