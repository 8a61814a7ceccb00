"""Topology-aware mapping on the emulated fabric (root): pairs r <-> r + P/2 of app-halo on a line or ring
of P node namespaces, block placement against the one `contend map`'s topo method computes, measured and simulated
(``contend.experiments.mapping_fabric``).

    python benchmarks/mapping_fabric.py [--out DIR] [--repeats 5] [--nodes 8] [--topology line|ring]

Builds the fabric (removed again at the end, also on failure, Ctrl-C or SIGTERM), measures, writes
DIR/fabric.toml (the calibrated machine file), DIR/mapping_fabric.json and DIR/mapping_fabric.png, and
prints the table as rich text and as Markdown. Exit 0 when the measurements completed (whichever way
the gains go: they are reported, not judged), 2 on an error. About 6 s per repetition on an idle
2-core machine with 8 nodes.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only
import matplotlib.pyplot as plt  # noqa: E402
from rich import box  # noqa: E402
from rich.console import Console  # noqa: E402

from contend.atomic import atomic_path  # noqa: E402
from contend.errors import UserError  # noqa: E402
from contend.report.plots import save_figure  # noqa: E402
from contend.report.terminal import Table  # noqa: E402
from contend.experiments.mapping_fabric import PLACEMENTS, Settings, run_experiment  # noqa: E402

PREFIX = "ctdm-"  # never the user's fabric (ctd-), the tests' (ctdt-) nor fabric_vs_sim's (ctdv-)
HEADER = ["placement", "nodes of ranks 0..", "hops per byte", "busiest link (MiB)", "measured (median)", "range over runs", "traced",
          "predicted (median)", "range", "one schedule, simulated"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def _cells(result: dict, name: str) -> list[str]:
    p = result["placements"][name]
    return [name, " ".join(map(str, p["node_of_rank"])), f"{p['hops_per_byte']:.2f}", f"{p['max_link_load'] / 2**20:.1f}",
            _ms(p["untraced"]["median_ns"]), f"{_ms(p['untraced']['min_ns'])} .. {_ms(p['untraced']['max_ns'])}",
            _ms(p["traced"]["median_ns"]), _ms(p["predicted"]["median_ns"]),
            f"{_ms(p['predicted']['min_ns'])} .. {_ms(p['predicted']['max_ns'])}",
            _ms(p["makespan_ns"])]


def _gain_line(result: dict) -> str:
    gain = result["gain"]
    per = gain["measured_per_repetition"]
    return (f"gain default / mapped: measured {gain['measured']:.2f}x (per repetition {per['min']:.2f} .. "
            f"{per['max']:.2f}), predicted {gain['predicted']:.2f}x, one schedule simulated "
            f"{gain['simulated_same_schedule']:.2f}x, hop-bytes {gain['hop_bytes']:.2f}x, busiest link "
            f"{gain['max_link_load']:.2f}x")


def _title(result: dict) -> str:
    f, s = result["fabric"], result["settings"]
    return (f"Mapping on the emulated fabric ({f['topology']} of {f['nodes']}, {f['link']}), {result['program']}, "
            f"{s['repeats']} runs each, {result['date']}; times in ms between MPI_Init and MPI_Finalize")


# The terminal tables (the Markdown keeps HEADER), so that each fits 80 columns: the placements, their
# median times, the times' range over the runs; short headings, LEGEND printed before them.
LEGEND = ("times in ms between MPI_Init and MPI_Finalize. measured: the untraced runs; traced: the traced "
          "runs; predicted: each traced run simulated; one schedule: the first default run's schedule "
          "simulated under the placement")


def rich_tables(result: dict) -> list[Table]:
    def table(title: str, header: list[str]) -> Table:
        out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for column in header:
            if column in ("placement", "nodes of ranks 0.."):  # words wrap here, numbers never do
                out.add_column(column, ratio=1)
            else:
                out.add_column(column, justify="right", no_wrap=True)
        return out

    placements = table(_title(result).split(";")[0], ["placement", "nodes of ranks 0..", "hops/B", "busiest link MiB"])
    medians = table("medians (ms)", ["placement", "measured", "traced", "predicted", "one schedule"])
    ranges = table("range over the runs (ms)", ["placement", "measured", "predicted"])
    for name in PLACEMENTS:
        cells = _cells(result, name)
        placements.add_row(*cells[:4])
        medians.add_row(name, cells[4], cells[6], cells[7], cells[9])
        ranges.add_row(name, cells[5], cells[8])
    return [placements, medians, ranges]


def markdown(result: dict) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cells(result, name)) + " |" for name in PLACEMENTS]
    return "\n".join(lines + ["", _gain_line(result)])


def plot(result: dict, path: Path) -> None:
    """Measured and predicted medians (whiskers: the runs' range) per placement."""
    figure, ax = plt.subplots(figsize=(7, 4.5))
    width = 0.38
    for offset, key, label in ((-width / 2, "untraced", "measured (untraced runs)"),
                               (width / 2, "predicted", "contend (each traced run simulated)")):
        spreads = [result["placements"][name][key] for name in PLACEMENTS]
        medians = [s["median_ns"] / 1e6 for s in spreads]
        ax.bar([x + offset for x in range(len(PLACEMENTS))], medians, width, label=label, capsize=3,
               yerr=[[m - s["min_ns"] / 1e6 for m, s in zip(medians, spreads)],
                     [s["max_ns"] / 1e6 - m for m, s in zip(medians, spreads)]])
    ax.set_xticks(range(len(PLACEMENTS)), list(PLACEMENTS))
    ax.set(ylabel="ms between MPI_Init and MPI_Finalize")
    ax.set_title(_gain_line(result).replace(", one", ",\none"), fontsize=8)
    ax.legend(fontsize=8)
    figure.suptitle(_title(result).split(";")[0].replace(", app-halo", ",\napp-halo"), fontsize=9)
    save_figure(figure, path, dpi=110)


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mapping-fabric", help="directory for the machine file, JSON and plot")
    parser.add_argument("--repeats", type=int, default=Settings.repeats, help="runs of each placement")
    parser.add_argument("--nodes", type=int, default=Settings.nodes, help="nodes, even, at least 4")
    parser.add_argument("--topology", choices=("line", "ring"), default=Settings.topology)
    parser.add_argument("--link", default=Settings.link, help="tbf rate of every link")
    parser.add_argument("--iterations", type=int, default=Settings.iterations, help="app-halo iterations")
    parser.add_argument("--halo", type=int, default=Settings.halo, help="doubles per halo message")
    parser.add_argument("--method", default=Settings.method, help="the mapped placement's method (contend map's)")
    args = parser.parse_args()
    # SIGTERM (timeout, kill) ends the script through its finally blocks, which take the fabric down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(nodes=args.nodes, topology=args.topology, link=args.link, repeats=args.repeats,
                        iterations=args.iterations, halo=args.halo, method=args.method)
    console = Console(width=80)
    try:
        with console.status("building the fabric") as status, \
                tempfile.TemporaryDirectory(prefix="contend-mapping-fabric-") as work:
            result = run_experiment(settings, Path(work), progress=status.update, prefix=PREFIX)
            (out / "fabric.toml").write_text(result["machine_file"])
    except UserError as exc:  # not root, a fabric already up, a failed run: the fabric is down again
        console.print(f"[red]error:[/] {exc}")
        return 2
    console.print(LEGEND)
    for table in rich_tables(result):
        console.print(table)
    console.print(_gain_line(result))
    console.print(f"load average (1 min) during the runs: {result['loadavg_1min']['min']:.2f} .. "
                  f"{result['loadavg_1min']['max']:.2f}")
    with atomic_path(out / "mapping_fabric.json") as temporary:
        temporary.write_text(json.dumps(result, indent=1))
    plot(result, out / "mapping_fabric.png")
    print(markdown(result))
    console.print(f"wrote {out / 'fabric.toml'}, {out / 'mapping_fabric.json'}, {out / 'mapping_fabric.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
