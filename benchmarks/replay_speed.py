"""Replay speed, whole process: GOAL text in, result out, each figure beside its target.

Run with `make bench` (or `.venv/bin/python benchmarks/replay_speed.py [--quick]`).

- GOAL replay against LogGOPSim v1: Schedgen-written dissemination and binomial-broadcast schedules of
  2^17 and 2^20 ranks (`--quick`: 2^17), `contend sim FILE` as a whole process (start-up, loading,
  simulation, output) against `LogGOPSim -f FILE.bin` given the binary schedule its `txt2bin` made
  beforehand (the conversion is not counted). Target: contend >= 20x faster. contend runs from its
  schedule cache (docs/formats.md, "Schedule cache"; the first run of a file parses the text and
  makes the entry, shown as "first run"); `--no-cache` runs beside it show the parse. Pairs are
  interleaved (contend, then LogGOPSim, `--repeats` times); the ratio is of the medians, with the range
  of the per-pair ratios. Peak RSS is each process's own (wait4).
  LogGOPSim's tools (schedgen, txt2bin, LogGOPSim) are looked for in $LOGGOPSIM_BIN, then
  /work/anchors/bin. Without them the files are contend's own (`contend goal write`: Schedgen's
  schedules, other labels) and the baseline is LogGOPSim's time measured on this kind of machine (PUBLISHED below), marked so.
- CLI start-up: `contend --help` and `contend sim` of a 2-rank schedule, after one untimed run (Python
  caches the compiled modules, as it does by default; PYTHONDONTWRITEBYTECODE is unset for the runs).
  Target < 0.3 s.
- Conversion (`contend goal convert`): >= 1 M trace records/s, on a liballprof trace set (a 16-rank ring
  of Isend/Irecv/Waitall) written here.
- Replay events/s on the largest schedule (>= 10^7 operations) and the store's bytes per operation,
  from the engine's probe (target/release/contend-engine-bench), targets >= 10 M events/s, <= 64 B.

The large files go to --work (default: a temporary directory; dissemination 2^20 is 1.6 GB of text
plus 1.8 GB for LogGOPSim's binary and 1.5 GB of cache entry) and are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich import box
from rich.console import Console

from contend.report.terminal import Table

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "target" / "release" / "contend-engine-bench"
TINY = ROOT / "tests" / "data" / "schedgen-anytag.goal"
# LogGOPSim v1 whole process on the same Schedgen files (binary given), as measured and published in
# the baseline where LogGOPSim cannot run here.
PUBLISHED = {("dissemination", 17): 5.12, ("binomial", 17): 0.29, ("binomial", 20): 5.4, ("dissemination", 20): 126.0}
SCHEDGEN = {"dissemination": "dissemination", "binomial": "binomialtreebcast"}
CONTEND_PATTERN = {"dissemination": "dissemination", "binomial": "binomial-bcast"}
TARGET_RATIO, TARGET_STARTUP_S, TARGET_RECORDS_S, TARGET_EVENTS_S, TARGET_BYTES_OP = 20, 0.3, 1e6, 10e6, 64


def contend_command() -> list[str]:
    found = shutil.which("contend")
    return [found] if found else [sys.executable, "-m", "contend.cli"]


def loggopsim_dir() -> Path | None:
    for place in (os.environ.get("LOGGOPSIM_BIN"), "/work/anchors/bin"):
        if place and all((Path(place) / tool).is_file() for tool in ("schedgen", "txt2bin", "LogGOPSim")):
            return Path(place)
    return None


CPU_SECONDS: dict[str, float] = {}  # user + system seconds of the last run of each command line


def timed(command: list[str], timeout: float = 3600) -> tuple[float, int, str]:
    """Wall seconds, peak RSS bytes and standard output of one process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        CPU_SECONDS[" ".join(command)] = usage.ru_utime + usage.ru_stime
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in (0, 3):
            raise RuntimeError(f"{' '.join(command)} exited with {child.returncode}")
        out.seek(0)
        return wall, usage.ru_maxrss * 1024, out.read().decode(errors="replace")


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    return f"{min(values):.2f}..{max(values):.2f}"


def settle(path: Path) -> None:
    """The cache takes files left alone for 2 s (docs/formats.md): wait that long after writing."""
    age = time.time() - path.stat().st_ctime
    if age < 2.2:
        time.sleep(2.2 - age)


def make_schedule(work: Path, pattern: str, log2: int, lgs: Path | None) -> tuple[Path, Path | None]:
    goal = work / f"{pattern}-{log2}.goal"
    if lgs is not None:
        subprocess.run([str(lgs / "schedgen"), "-p", SCHEDGEN[pattern], "-s", str(1 << log2), "-o", str(goal)],
                       check=True, capture_output=True, cwd=work)
        binary = goal.with_suffix(".bin")
        subprocess.run([str(lgs / "txt2bin"), "-i", str(goal), "-o", str(binary)], check=True, capture_output=True)
        return goal, binary
    subprocess.run([*contend_command(), "goal", "write", "--collective", CONTEND_PATTERN[pattern], "--ranks",
                    str(1 << log2), "--bytes", "1", "-o", str(goal)], check=True, capture_output=True)
    return goal, None


def replay_rows(console: Console, work: Path, sizes: list[int], repeats: int, lgs: Path | None, env_cache: Path):
    rows, probes = [], {}
    contend = contend_command()
    for log2 in sizes:
        for pattern in ("binomial", "dissemination"):
            label = f"{pattern} 2^{log2}"
            with console.status(f"{label}: writing the schedule"):
                goal, binary = make_schedule(work, pattern, log2, lgs)
                settle(goal)
            with console.status(f"{label}: first run (parse, cache entry)"):
                first, _, _ = timed([*contend, "sim", str(goal)])
            cached, no_cache, base, ratios, rss, base_rss = [], [], [], [], [], []
            for k in range(repeats):
                with console.status(f"{label}: pair {k + 1} of {repeats}"):
                    wall, peak, out = timed([*contend, "sim", str(goal), "--json"])
                    cached.append(wall)
                    rss.append(peak)
                    result = json.loads(out)
                    if binary is not None:
                        wall_lgs, peak_lgs, out_lgs = timed([str(lgs / "LogGOPSim"), "-f", str(binary), "-b"])
                        base.append(wall_lgs)
                        base_rss.append(peak_lgs)
                        ratios.append(wall_lgs / wall)
                    no_cache.append(timed([*contend, "sim", "--no-cache", str(goal)])[0])
            baseline = statistics.median(base) if base else PUBLISHED[(pattern, log2)]
            lgs_makespan = re.search(r"Maximum finishing time at host \d+: (\d+)", out_lgs).group(1) if base else ""
            ops = result["ops"]
            median = statistics.median(cached)
            rows.append({
                "schedule": label, "ops": f"{ops / 1e6:.1f} M", "text": f"{goal.stat().st_size / 1e6:.0f} MB",
                "first": f"{first:.2f}", "no_cache": f"{statistics.median(no_cache):.2f}", "cached": f"{median:.2f}",
                "cached_range": spread(cached), "loggopsim": f"{baseline:.2f}" + ("" if base else "*"),
                "loggopsim_range": spread(base), "speedup": f"{baseline / median:.1f}x",
                "speedup_range": f"{min(ratios):.1f}..{max(ratios):.1f}" if ratios else "",
                "peak_gib": f"{max(rss) / 2**30:.2f} / " + (f"{max(base_rss) / 2**30:.2f}" if base_rss else "-"),
                "makespan_ns": f"{result['makespan']} / {lgs_makespan or '-'}",
            })
            if PROBE.is_file():
                with console.status(f"{label}: engine probe"):
                    probes[label] = json.loads(timed([str(PROBE), "goal", str(goal), str(env_cache / "goal")])[2])
            for path in (goal, binary):
                if path is not None:
                    path.unlink()
    return rows, probes


# The replay tables: (title, [(key of a replay row, heading)]).
REPLAY_TABLES = [
    ("GOAL replay, whole process, wall s (medians): contend's first run (parse, cache entry), without its "
     "schedule cache, and from it; LogGOPSim v1 (LGS; * its published figure)",
     [("schedule", "schedule"), ("first", "first"), ("no_cache", "no cache"), ("cached", "contend"),
      ("loggopsim", "LGS"), ("speedup", "speed-up"), ("target", "target")]),
    ("the same runs: range over the interleaved pairs",
     [("schedule", "schedule"), ("cached_range", "contend s"), ("loggopsim_range", "LogGOPSim s"),
      ("speedup_range", "speed-up")]),
    ("the same schedules; peak memory and makespan: contend / LGS",
     [("schedule", "schedule"), ("ops", "ops"), ("text", "text"), ("peak_gib", "peak GiB"),
      ("makespan_ns", "makespan ns")]),
]


def startup_rows(repeats: int) -> list[list[str]]:
    rows = []
    for name, args in (("contend --help", ["--help"]), ("contend sim, 2 ranks", ["sim", str(TINY)])):
        timed([*contend_command(), *args])  # untimed: Python compiles and caches the modules it first imports
        walls, cpu = [], []
        for _ in range(max(repeats, 5)):
            walls.append(timed([*contend_command(), *args])[0])
            cpu.append(CPU_SECONDS[" ".join([*contend_command(), *args])])
        # CPU time beside the wall time: on a loaded machine the wall time also counts the waits
        rows.append([name, f"{statistics.median(walls):.3f} s", f"{spread(walls)}; CPU {statistics.median(cpu):.3f} s",
                     f"< {TARGET_STARTUP_S} s"])
    return rows


def liballprof_trace(directory: Path, ranks: int, rounds: int) -> int:
    """A ring exchange (Isend, Irecv, Waitall per round) in liballprof's text format; returns the records."""
    directory.mkdir()
    for rank in range(ranks):
        right, left, t = (rank + 1) % ranks, (rank - 1) % ranks, 1000
        lines = ["# htor's PMPI Tracer 0.9 Output File", "", f"MPI_Init:-:1:2:{t}"]
        for _ in range(rounds):
            lines += [f"MPI_Isend:{t + 10}:5:1:1,8,8:{right}:0:6575616,{rank},{ranks}:6:{t + 20}",
                      f"MPI_Irecv:{t + 30}:7:1:1,8,8:{left}:0:6575616,{rank},{ranks}:8:{t + 40}",
                      f"MPI_Waitall:{t + 50}:2:6:0:{t + 60}"]
            t += 100
        lines.append(f"MPI_Finalize:{t}:-")
        (directory / f"pmpi-trace-rank-{rank}.txt").write_text("\n".join(lines) + "\n")
    return ranks * (3 * rounds + 2)


def conversion_row(work: Path) -> list[str]:
    contend = contend_command()
    traces = work / "liballprof"
    records = liballprof_trace(traces, 16, 65536)
    wall, _, _ = timed([*contend, "goal", "convert", str(traces / "pmpi-trace-rank-0.txt"), "-o", str(work / "c.goal")])
    shutil.rmtree(traces)
    (work / "c.goal").unlink(missing_ok=True)
    return ["contend goal convert", f"{records / wall / 1e6:.2f} M records/s", f"{records:,} records in {wall:.2f} s",
            f">= {TARGET_RECORDS_S / 1e6:.0f} M records/s"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2^17 ranks only")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved pairs per schedule (default 3)")
    parser.add_argument("--work", type=Path, help="directory for the large files (default: a temporary one)")
    parser.add_argument("--json", type=Path, help="also write the tables and the probes to this file")
    args = parser.parse_args()

    console = Console(width=80)
    lgs = loggopsim_dir()
    console.print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    console.print(f"LogGOPSim: {lgs or 'not found; baseline = LogGOPSim figures measured on this kind of machine'}")
    with tempfile.TemporaryDirectory(prefix="contend-replay-", dir=args.work) as tmp:
        work = Path(tmp)
        cache = work / "cache"
        os.environ["CONTEND_CACHE"] = str(cache)  # the runs' own cache, deleted with the rest
        # Python as users have it caches compiled modules; a host that turns that off would time the
        # compiling of every module at every start (about 50 ms here), which no user pays.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        startup = startup_rows(args.repeats)
        replay, probes = replay_rows(console, work, [17] if args.quick else [17, 20], args.repeats, lgs, cache)
        conversion = conversion_row(work)

    # Three narrow tables rather than one wide one: each fits a terminal of 80 columns.
    for title, columns in REPLAY_TABLES:
        table = Table(title=title, box=box.SIMPLE)
        for key, heading in columns:
            table.add_column(heading, justify="left" if key == "schedule" else "right", no_wrap=True)
        for row in replay:
            table.add_row(*(f">= {TARGET_RATIO}x" if key == "target" else row[key] for key, _ in columns))
        console.print(table)

    # What was measured, with its detail on a second line that may wrap between words.
    other = Table(title="start-up, conversion, replay rate, memory", box=box.SIMPLE)
    other.add_column("what (detail)")
    other.add_column("measured", justify="right", no_wrap=True)
    other.add_column("target", no_wrap=True)
    rows = [*startup, conversion]
    for label, p in probes.items():
        rows.append([f"replay {label}", f"{p['events_per_second'] / 1e6:.1f} M events/s",
                     f"{p['ops'] / 1e6:.1f} M ops, engine: {p['events'] / 1e6:.1f} M events in {p['sim_seconds']:.2f} s, "
                     f"load {p['parse_seconds']:.2f} s",
                     f">= {TARGET_EVENTS_S / 1e6:.0f} M events/s" if p["ops"] >= 1e7 else "(< 10^7 ops)"])
        rows.append([f"store {label}", f"{p['store_bytes_per_op']:.1f} B/op", f"peak RSS {p['peak_rss_bytes'] / 2**20:.0f} MiB",
                     f"<= {TARGET_BYTES_OP} B/op"])
    for what, measured, detail, target in rows:
        other.add_row(f"{what}\n  [dim]{detail}[/dim]", measured, target)
    console.print(other)
    console.print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"replay": replay, "startup": startup, "conversion": conversion,
                                         "probes": probes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
