"""Prediction against reality on this host: real MPI programs traced, converted, simulated and compared
with their measured time between MPI_Init and MPI_Finalize (docs/measure.md says how; docs/measurements.md,
"Prediction against reality", what it measured).

    python benchmarks/predict.py --machine shm.toml [--runs 5] [--ranks 2,4] [--programs halo,...]
        [--fabric | --fabric-only] [--fabric-machine FILE] [--fifo] [--timeout S] [--out DIR]
        [--extrapolate-from P]
    python benchmarks/predict.py --replay-only --out DIR [--machine M] [--fabric-machine M]

Programs (native/apps, built by `contend native build`; mpi4py's demos from its sdist, downloaded once into contend's cache):

    halo          app-halo: a periodic ring, Irecv/Isend/Waitall of the halos around a relaxation sweep,
                  an Allreduce every 10 iterations; 100,000 cells per rank (weak scaling)
    halo-strong   the same with 400,000 cells in all, split over the ranks (strong scaling: what
                  extrapolation, which copies the traced ranks' work, does not model)
    halo-net      app-halo bound by the network: 50 iterations of 64 KiB halos around 20,000 cells
                  (for slow links, e.g. --link 100mbit, where the wire and not the 2 cores sets the time)
    putflush      app-putflush: MPI_Put to the next rank + MPI_Win_flush + MPI_Barrier per iteration
    putflush-net  the same bound by the network: 100 iterations of 64 KiB puts, 2,000 doubles of work
    osu_latency   mpi4py's demo/osu_latency.py (blocking ping-pong, 0 B..64 KiB; 2 ranks only)
    osu_allgather mpi4py's demo/osu_allgather.py (Allgather, 1 B..16 KiB, 300 iterations per size)

Each program at each rank count: `contend predict`'s runs (untraced and traced alternating, the traces kept
in DIR/traces, every traced run converted and simulated on the machine) between two host checks (the
machine file's 1-byte round trip measured again: contend.analysis.host_check), and a second prediction with
this host's noise measured just before (contend noise measure --mpi -n N --per-core, N at most the
machine's [cores] per_node, whose model already shares the cores among the ranks). On shared memory
with --machine (from `contend bench fit`); with --fabric (root) also on an emulated star of 4 nodes (one
rank per node, 1 Gbit/s links or --link; prefix ctdp-, removed afterwards, also on failure), whose machine
file is calibrated first from one flow, 1-byte round trips and ping-pongs within tbf's burst (token-bucket
links; contend.experiments.fabric_machine), with the [cores] of --machine if it has them (the nodes are
namespaces of this host: every rank shares its cores), unless --fabric-machine gives one. --fifo runs every rank under chrt -f 1 (root; at most one rank per core) and
measures no noise. --extrapolate-from P (e.g. --ranks 4,8 --extrapolate-from 2): trace at P ranks only,
convert each trace with `--ranks N` (K = N/P copies of the traced job, weak scaling), simulate, and
compare with N-rank untraced runs (no host noise is measured for those rows); on the fabric the star then
has max(N, 4) nodes, still one rank per node. DIR/predict.json keeps the runs (written before the predictions too), so
--replay-only predicts them again, e.g. with another machine. Prints the results as three tables that fit
80 columns (measured, simulated, errors) and as one Markdown table. The anchor: LogGOPSim's trace replay, <2% average error (Hoefler et al., 2010); targets here 10%
(shared memory) and 15% (fabric).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from rich import box
from rich.console import Console

from contend.native import mpi
from contend.atomic import atomic_path
from contend.errors import UserError
from contend.report.terminal import Table
from contend.analysis.predict import Measured, fifo_command, measure_runs, predict_traces
from contend.analysis.host_check import HostCheck, measure as measure_probe, probe_of
from contend.machine.file import load_machine

PREFIX = "ctdp-"  # never the user's fabric (ctd-) nor another benchmark's or test's
TARGETS = {"shm": 10.0, "shm-fifo": 10.0, "fabric": 15.0, "fabric-fifo": 15.0}
NOISE_SECONDS = 5
T = TypeVar("T")
ANCHOR = "LogGOPSim trace replay (Hoefler, Schneider, Lumsdaine 2010): <2% average error"


def demo_dir() -> Path:
    from contend.native.mpi4py_sdist import mpi4py_sdist

    return mpi4py_sdist() / "demo"


def programs(build: Path) -> dict[str, tuple[Callable[[int], list[str]], tuple[int, ...]]]:
    """name -> (program argv at N ranks, rank counts it runs at)."""
    demo = demo_dir()
    python = sys.executable

    def osu(name: str, call: str) -> list[str]:
        return [python, "-c", f"import sys; sys.path.insert(0, {str(demo)!r}); import {name}; {name}.{call}"]

    def fixed(argv: list[str]) -> Callable[[int], list[str]]:
        return lambda n: argv

    return {
        "halo": (fixed([str(build / "app-halo"), "300", "100000", "1024", "10"]), (2, 4, 8)),
        "halo-net": (fixed([str(build / "app-halo"), "50", "20000", "8192", "10"]), (2, 4, 8)),
        "halo-strong": (lambda n: [str(build / "app-halo"), "300", str(400000 // n), "1024", "10"], (2, 4, 8)),
        "putflush": (fixed([str(build / "app-putflush"), "300", "65536", "20000"]), (2, 4, 8)),
        "putflush-net": (fixed([str(build / "app-putflush"), "100", "65536", "2000"]), (2, 4, 8)),
        "osu_latency": (fixed(osu("osu_latency", "osu_latency(skip=100, loop=1000, skip_large=10, loop_large=100, "
                                                 "MAX_MSG_SIZE=1 << 16)")), (2,)),
        "osu_allgather": (fixed(osu("osu_allgather", "osu_allgather(skip=50, loop=300, skip_large=10, "
                                                     "loop_large=100, MAX_MSG_SIZE=1 << 14)")), (2, 4, 8)),
    }


def host_checked(machine: str, built, timeout_s: float, console: Console, label: str,
                 runs: Callable[[], T]) -> tuple[T, dict | None]:
    """``runs()`` between two measurements of the machine file's probe (contend.analysis.host_check), on the
    fabric ``built`` or on shared memory; the check's summary (None when the file records no probe)."""
    probe = probe_of(load_machine(machine))
    if probe is None:
        return runs(), None
    console.print(f"  {label}: host check")
    check = HostCheck(probe, measure_probe(probe, built, timeout_s))
    result = runs()
    check.after_ns = measure_probe(probe, built, timeout_s)
    console.print(f"  {label}: {check.describe(machine)}")
    return result, check.summary()


def measure_setting(setting: str, names: list[str], ranks: list[int], machine: str, runs: int,
                    placement, built, out: Path, console: Console, timeout_s: float) -> list[dict]:
    """Every program at every rank count it runs at: the runs, their traces kept in out/traces/LABEL,
    between two host checks (on the fabric ``built``, if given)."""
    library = mpi.find_mpi()
    found = programs(mpi.build_dir(library))
    shared = shared_cores(machine)
    rows = []
    for name in names:
        argv, allowed = found[name]
        for n in ranks:
            if n not in allowed:
                continue
            command, _ = mpi.launch_command(library, n, argv(n), placement)
            if setting.endswith("-fifo"):
                command = fifo_command(command)
            label = f"{name}-{setting}-{n}"
            load = os.getloadavg()[0]
            row = {"program": name, "setting": setting, "ranks": n, "machine": machine,
                   "command": command, "loadavg_1min_before": load,
                   # ranks that cannot be preempted (-fifo) have no host noise to add
                   "noise": None if setting.endswith("-fifo") else host_noise(out / "noise" / f"{label}.noise",
                                                                               min(n, shared or n), console)}
            try:
                (measured, directories), check = host_checked(
                    machine, built, timeout_s, console, label,
                    lambda: measure_runs(command, runs, out / "traces" / label, timeout_s=timeout_s,
                                         progress=lambda text, label=label: console.print(f"  {label}: {text}")))
            except UserError as exc:
                console.print(f"  [red]{label}: {exc}[/red]")
                rows.append({**row, "failed": str(exc)})
                continue
            row.update(loadavg_1min_after=os.getloadavg()[0], untraced_ns=measured.untraced_ns,
                       traced_ns=measured.traced_ns, traces=[str(d) for d in directories], host_check=check)
            rows.append(row)
    return rows


def shared_cores(machine: str) -> int | None:
    """The cores the machine's ranks share (its [cores] per_node), None without the table."""
    from contend.machine.file import load_machine

    cores = (load_machine(machine).node or {}).get("cores")
    return cores["per_node"] if cores else None


def host_noise(path: Path, ranks: int, console: Console) -> str:
    """This host's CPU noise for ``ranks`` busy ranks, measured now (contend noise measure --mpi --per-core:
    rank r pinned to core r mod cores, so ranks beyond the cores share them): what the other jobs on the
    machine take from each rank, and the ranks' own oversubscription beyond the cores. A machine with
    [cores] models that oversubscription itself, so its rows measure no more ranks than its cores (the
    simulation's rank r replays trace r mod n). A noise spec for the simulation."""
    path.parent.mkdir(parents=True, exist_ok=True)
    console.print(f"  measuring this host's noise for {ranks} ranks ({NOISE_SECONDS} s)")
    done = subprocess.run([str(Path(sys.executable).parent / "contend"), "noise", "measure", "--mpi", "-n", str(ranks), "--per-core",
                           "--seconds", str(NOISE_SECONDS), "-o", str(path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    if done.returncode != 0:
        raise UserError(f"noise measure failed: {done.stderr.strip()}")
    return f"trace:{path}"


def measure_extrapolated(setting: str, names: list[str], traced: list[dict], ranks: list[int], runs: int,
                         placement, built, console: Console, timeout_s: float) -> list[dict]:
    """For every row traced at P ranks (``traced``), untraced runs at each N in ``ranks`` (N a multiple
    of P above it): rows whose prediction extrapolates the P-rank traces to N ranks (predict_rows)."""
    from contend.analysis.predict import untraced_span

    library = mpi.find_mpi()
    found = programs(mpi.build_dir(library))
    rows = []
    for source in traced:
        name, p = source["program"], source["ranks"]
        if name not in names or "traces" not in source:
            continue
        for n in ranks:
            if n <= p or n % p or n not in found[name][1]:
                continue
            command, _ = mpi.launch_command(library, n, found[name][0](n), placement)
            label = f"{name}-{setting}-{n}-from-{p}"
            row = {"program": name, "setting": setting, "ranks": n, "traced_ranks": p,
                   "machine": source["machine"], "command": command, "loadavg_1min_before": os.getloadavg()[0],
                   "noise": None, "traces": source["traces"], "traced_ns": []}
            def untraced(command=command, label=label) -> list[int]:
                spans = []
                for run in range(runs):
                    console.print(f"  {label}: run {run + 1}/{runs}: untraced")
                    spans.append(untraced_span(command, timeout_s, lambda line: None))
                return spans

            try:
                spans, check = host_checked(source["machine"], built, timeout_s, console, label, untraced)
            except UserError as exc:
                console.print(f"  [red]{label}: {exc}[/red]")
                rows.append({**row, "failed": str(exc)})
                continue
            row.update(loadavg_1min_after=os.getloadavg()[0], untraced_ns=spans, host_check=check)
            rows.append(row)
    return rows


def predict_rows(rows: list[dict], console: Console) -> None:
    """Convert and simulate every kept trace of every row; the summary joins the row."""
    for row in rows:
        if "traces" not in row:
            continue
        measured = Measured(untraced_ns=row["untraced_ns"], traced_ns=row["traced_ns"], ranks=row["ranks"])
        extrapolated = "traced_ranks" in row
        label = f"{row['program']}-{row['setting']}-{row['ranks']}" + (
            f"-from-{row['traced_ranks']}" if extrapolated else "")
        console.print(f"  {label}: converting and simulating {len(row['traces'])} traces")
        try:
            with tempfile.TemporaryDirectory(prefix="contend-predict-bench-") as scratch:
                # Copies of a job on one host are ranks of one node still: MPICH's shared-memory algorithms
                # (the default takes extrapolated copies for other nodes).
                one_host = extrapolated and row["setting"].startswith("shm")
                predict_traces([Path(d) for d in row["traces"]], row["machine"], Path(scratch), measured,
                               row.get("noise"), row["ranks"] if extrapolated else None,
                               algorithms="mpich-shm" if one_host else "auto")
        except UserError as exc:
            console.print(f"  [red]{label}: {exc}[/red]")
            measured.predicted_ns, measured.noisy_ns = [], []
            row["failed"] = str(exc)
        else:
            row.pop("failed", None)
        row.update(measured.summary())


def calibrate_fabric(built, path: Path, console: Console, host) -> None:
    """The fabric's machine file (as `contend fabric calibrate` writes it), with the host's tables
    (``fabric_machine.host_tables``) if given."""
    from contend.experiments.fabric_check import calibrated_machine

    _, text = calibrated_machine(built, 3, "benchmarks/predict.py", host,
                                 lambda text: console.print(f"  fabric calibration: {text}"))
    with atomic_path(path) as temporary:
        temporary.write_text(text)


def ms(spread: dict) -> str:
    """The median in ms, "-" when there were no runs."""
    return "-" if spread["median_ns"] is None else f"{spread['median_ns'] / 1e6:.2f}"


def ms_range(spread: dict) -> str:
    return "-" if spread["median_ns"] is None else f"{spread['min_ns'] / 1e6:.2f}..{spread['max_ns'] / 1e6:.2f}"


def pct(value) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def host_moved(row: dict) -> str:
    """How far the host's round trip was from the machine file's during the row's runs (host_check)."""
    check = row.get("host_check")
    return "-" if check is None else pct(check["change_pct"])


def shown(row: dict) -> dict:
    """A row as the tables show it: a failed prediction has no error."""
    return {**row, "error_pct": None} if row.get("failed") else row


# The terminal tables (the Markdown has every column in one), so that each fits 80 columns: measured,
# simulated, errors; short headings, LEGEND printed before them.
LEGEND = ("times in ms between MPI_Init and MPI_Finalize: median and range over the runs. predicted: each "
          "traced run simulated; noise: simulated with this host's noise. Errors against the untraced median "
          "(tracer: the traced median's; vs traced: each traced run's prediction against that run's own time); "
          "host: the 1-byte round trip around the row's runs against the machine file's (the larger of before "
          "and after; beyond 10% the file no longer describes the host)")


def rich_tables(rows: list[dict]) -> list[Table]:
    def table(title: str, header: list[str]) -> Table:
        out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        out.add_column("case", ratio=1)  # words wrap here, numbers never do
        for column in header:
            out.add_column(column, justify="right", no_wrap=True)
        return out

    measured = table("measured (ms)", ["untraced", "range", "traced", "range"])
    simulated = table("simulated (ms)", ["predicted", "range", "noise", "range"])
    errors = table("errors", ["tracer", "error", "vs traced", "noise", "target", "host"])
    for r in map(shown, rows):
        case = f"{r['program']}, {r['setting']}, {r['ranks']} ranks" + (
            f" (traced at {r['traced_ranks']})" if "traced_ranks" in r else "")
        measured.add_row(case, ms(r["untraced"]), ms_range(r["untraced"]), ms(r["traced"]), ms_range(r["traced"]))
        simulated.add_row(case, ms(r["predicted"]), ms_range(r["predicted"]), ms(r["noisy"]), ms_range(r["noisy"]))
        errors.add_row(case, pct(r["tracing_overhead_pct"]), pct(r["error_pct"]), pct(r["error_vs_traced_pct"]),
                       pct(r["error_noisy_pct"]), f"{TARGETS[r['setting']]:.0f}%", host_moved(r))
    return [measured, simulated, errors]


def markdown(rows: list[dict]) -> str:
    def spread(values: dict) -> str:
        return ms(values) if values["median_ns"] is None else f"{ms(values)} [{ms_range(values)}]"

    head = ["program", "setting", "ranks", "traced at", "untraced (ms)", "traced (ms)", "tracer", "predicted (ms)",
            "error", "vs traced", "with host noise (ms)", "error", "target", "host vs machine file"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "untraced" not in r:
            lines.append(f"| {r['program']} | {r['setting']} | {r['ranks']} | {r.get('traced_ranks', r['ranks'])} | "
                         f"failed: {r.get('failed')} |")
            continue
        r = shown(r)
        lines.append("| " + " | ".join([
            r["program"], r["setting"], str(r["ranks"]), str(r.get("traced_ranks", r["ranks"])), spread(r["untraced"]),
            spread(r["traced"]), pct(r["tracing_overhead_pct"]), spread(r["predicted"]), pct(r["error_pct"]),
            pct(r["error_vs_traced_pct"]), spread(r["noisy"]), pct(r["error_noisy_pct"]),
            f"{TARGETS[r['setting']]:.0f}%", host_moved(r)]) + " |")
    for key, what in (("error_pct", "without noise"), ("error_noisy_pct", "with this host's noise")):
        done = [r for r in rows if isinstance(r.get(key), float)]
        if done:
            within = sum(abs(r[key]) <= TARGETS[r["setting"]] for r in done)
            lines.append(f"\nMean |error| {what}: {statistics.mean(abs(r[key]) for r in done):.1f}% over {len(done)} "
                         f"rows, {within} within target.")
    lines.append(f"\nAnchor: {ANCHOR}.")
    return "\n".join(lines)


def save(out: Path, rows: list[dict]) -> None:
    with atomic_path(out / "predict.json") as path:
        path.write_text(json.dumps({"anchor": ANCHOR, "targets_pct": TARGETS, "rows": rows,
                                    # MPICH's settings the runs were made with, e.g. its progress throttle
                                    "mpich_cvars": {k: v for k, v in os.environ.items()
                                                    if k.startswith("MPIR_CVAR_")}},
                                   indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--machine", help="shared-memory machine file (contend bench fit)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--programs", default="halo,putflush,osu_latency,osu_allgather")
    parser.add_argument("--fabric", action="store_true", help="also on an emulated star of 4 nodes (root)")
    parser.add_argument("--fabric-only", action="store_true", help="only on the fabric")
    parser.add_argument("--fifo", action="store_true",
                        help="instead: every rank with real-time priority (chrt -f 1, root), at most 2 ranks")
    parser.add_argument("--link", default="1gbit", help="the fabric's link rate (default 1gbit)")
    parser.add_argument("--fabric-machine", help="the fabric's machine file (else calibrated first)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds each run may take (default 600)")
    parser.add_argument("--replay-only", action="store_true",
                        help="no runs: predict again from DIR/predict.json and the traces it lists")
    parser.add_argument("--extrapolate-from", type=int, metavar="P",
                        help="trace at P ranks only and predict the larger --ranks from those traces (--ranks N)")
    parser.add_argument("--out", default="predict-data")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the fabric's with-block removes it
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    if args.replay_only:
        rows = json.loads((out / "predict.json").read_text())["rows"]
        for row in rows:  # the machines given now replace the stored ones
            if row["setting"].startswith("shm") and args.machine:
                row["machine"] = args.machine
            if row["setting"].startswith("fabric") and args.fabric_machine:
                row["machine"] = args.fabric_machine
    else:
        if args.machine is None and not args.fabric_only:
            parser.error("--machine is required for the shared-memory runs")
        names = args.programs.split(",")
        ranks = [int(n) for n in args.ranks.split(",")]
        source = args.extrapolate_from
        if args.fifo and source and max(ranks) > (os.cpu_count() or 1):
            parser.error("--fifo: at most one rank per core (ranks of one priority spinning on a core starve)")

        def setting_rows(setting: str, machine: str, placement, built, most: int) -> list[dict]:
            """The setting's rows at the rank counts up to ``most``: traced there, or at P and extrapolated."""
            usable = [n for n in ranks if n <= most]
            traced = measure_setting(setting, names, [source] if source else usable, machine, args.runs, placement,
                                     built, out, console, args.timeout)
            if source:
                traced += measure_extrapolated(setting, names, traced, usable, args.runs, placement, built, console,
                                               args.timeout)
            return traced

        rows = []
        if not args.fabric_only:
            rows += setting_rows("shm-fifo" if args.fifo else "shm", args.machine, None, None, max(ranks))
        if args.fabric or args.fabric_only:
            from contend.experiments.fabric_machine import host_tables
            from contend.native import fabric

            nodes = max(ranks + [4]) if source else 4
            with fabric.session(nodes, 1, args.link, "star", PREFIX) as built, \
                    tempfile.TemporaryDirectory(prefix="contend-predict-bench-") as scratch:
                machine = args.fabric_machine or str(out / "fabric.toml")
                if not args.fabric_machine:
                    calibrate_fabric(built, Path(machine), console,
                                     None if args.machine is None else host_tables(args.machine))
                placement = mpi.Placement(fabric.write_rank_wrapper(built, Path(scratch)))
                rows += setting_rows("fabric-fifo" if args.fifo else "fabric", machine, placement, built, nodes)
        save(out, rows)  # the measurements stand on their own: --replay-only predicts them again
    predict_rows(rows, console)
    save(out, rows)
    good = [r for r in rows if "untraced" in r]
    terminal = Console(width=80)
    terminal.print(LEGEND)
    for shown_table in rich_tables(good):
        terminal.print(shown_table)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
