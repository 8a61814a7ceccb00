"""Before/after: two builds of the engine on `make bench`'s plain LogGOPS cases, in the same run.

    git worktree add /tmp/before REV && (cd /tmp/before && cargo build --release -p contend-engine)
    .venv/bin/python benchmarks/engine_ab.py /tmp/before/target/release/contend-engine-bench \\
        target/release/contend-engine-bench [--repeats 7] [--instructions]

For a change to the engine's core that must not make it slower. Two figures per case:
- wall time: the four 2^20-rank cases of `benchmarks/engine_speed.py` (dissemination and binomial
  broadcast, generated and read from GOAL text), each build run `--repeats` times in interleaved pairs
  (the order alternating), so the machine's drift hits both alike; the medians in seconds, their spread
  (half the range, in percent of the median: before/after), the ratio of the medians ("a/b"), the median
  of the per-pair ratios ("pairs"), the ratio of the CPU times ("CPU") and the load average are printed. On a shared host a few
  percent is below the noise;
- `--instructions`: the instructions each build executes (valgrind's cachegrind without its cache
  model), which no load changes: dissemination 2^16 and binomial broadcast 2^20 generated, and
  dissemination 2^16 and binomial broadcast 2^18 from GOAL text. Needs valgrind; minutes per case.

Every run's finish digest (a hash of every rank's finish time) and event count must be equal across
the builds, or the table says DIFFER.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from contend.report.terminal import Table

R20 = str(1 << 20)
WALL = {  # label: (pattern, ranks, from GOAL text); diss = dissemination, binom = binomial broadcast
    "diss 2^20": ("dissemination", R20, False),
    "binom 2^20": ("binomial-bcast", R20, False),
    "diss 2^20 GOAL": ("dissemination", R20, True),
    "binom 2^20 GOAL": ("binomial-bcast", R20, True),
}
COUNTED = {
    "dissemination 2^16": ("dissemination", str(1 << 16), False),
    "binomial 2^20": ("binomial-bcast", R20, False),
    "dissemination 2^16 GOAL": ("dissemination", str(1 << 16), True),
    "binomial 2^18 GOAL": ("binomial-bcast", str(1 << 18), True),
}


def fail(problem: str) -> NoReturn:
    print(f"engine_ab: error: {problem}", file=sys.stderr)
    sys.exit(2)


def run(command: list[str]) -> subprocess.CompletedProcess:
    """A command's output, or one line naming the command and its last words and exit code 2."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        fail(f"{' '.join(command[:3])}: exit code {done.returncode}: {last}")
    return done


def arguments(binary: str, case: tuple[str, str, bool], work: Path) -> list[str]:
    """The bench binary's arguments for a case, writing its GOAL file once (with `binary`)."""
    pattern, ranks, goal = case
    if not goal:
        return ["gen", pattern, ranks, "1"]
    path = work / f"{pattern}-{ranks}.goal"
    if not path.exists():
        run([binary, "write", pattern, ranks, "1", str(path)])
    return ["goal", str(path)]


def timed(binary: str, args: list[str]) -> tuple[float, float, tuple]:
    """Simulation seconds, the process's CPU seconds, and what must not change (digest, events)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        out = json.loads(run([binary, *args]).stdout)
        seconds, result = float(out["sim_seconds"]), (out["finish_digest"], out["events"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        fail(f"{binary}: its output is not the JSON of contend-engine-bench")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, result


def instructions(binary: str, args: list[str]) -> int:
    done = run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", binary, *args])
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if not found:
        fail("no instruction count in valgrind's output")
    return int(found.group(1).replace(",", ""))


def spread(values: list[float]) -> str:
    """Half the range, in percent of the median."""
    return f"{(max(values) - min(values)) / 2 / statistics.median(values) * 100:.0f}"


def wall_table(before: str, after: str, repeats: int, work: Path, console: Console) -> Table:
    runs = {name: {"b": [], "a": [], "cb": [], "ca": [], "same": set()} for name in WALL}
    loads = [os.getloadavg()[0]]
    for i in range(repeats):
        for name, case in WALL.items():
            args = arguments(before, case, work)
            order = [("b", before), ("a", after)] if i % 2 == 0 else [("a", after), ("b", before)]
            for tag, binary in order:
                seconds, cpu, result = timed(binary, args)
                runs[name][tag].append(seconds)
                runs[name]["c" + tag].append(cpu)
                runs[name]["same"].add(result)
        loads.append(os.getloadavg()[0])
        console.print(f"repetition {i + 1}/{repeats}, load average {loads[-1]:.2f}")
    table = Table(title=f"wall time (s), {repeats} interleaved pairs, load average {min(loads):.1f}-{max(loads):.1f}")
    for column in ("case", "before", "after", "spread", "a/b", "pairs", "CPU", "results"):
        table.add_column(column, justify="left" if column in ("case", "results") else "right", no_wrap=True)
    for name, r in runs.items():
        b, a = statistics.median(r["b"]), statistics.median(r["a"])
        pair = statistics.median(x / y for x, y in zip(r["a"], r["b"]))
        table.add_row(name, f"{b:.3f}", f"{a:.3f}", f"{spread(r['b'])}/{spread(r['a'])}%", f"{a / b:.3f}",
                      f"{pair:.3f}", f"{statistics.median(r['ca']) / statistics.median(r['cb']):.3f}",
                      "same" if len(r["same"]) == 1 else "DIFFER")
    return table


def instruction_table(before: str, after: str, work: Path) -> Table:
    table = Table(title="instructions executed (cachegrind)")
    for column in ("case", "before", "after", "after/before"):
        table.add_column(column, justify="left" if column == "case" else "right")
    for name, case in COUNTED.items():
        args = arguments(before, case, work)
        b, a = instructions(before, args), instructions(after, args)
        table.add_row(name, f"{b / 1e6:,.1f} M", f"{a / 1e6:,.1f} M", f"{a / b:.4f}")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the old build's contend-engine-bench")
    parser.add_argument("after", help="the new build's contend-engine-bench")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    for binary in (args.before, args.after):
        if not os.access(binary, os.X_OK):
            parser.error(f"{binary}: not an executable")
    if args.instructions and not shutil.which("valgrind"):
        parser.error("--instructions needs valgrind")
    console = Console(width=80)
    with tempfile.TemporaryDirectory(prefix="contend-ab-") as tmp:
        work = Path(tmp)
        if args.instructions:
            console.print(instruction_table(args.before, args.after, work))
        console.print(wall_table(args.before, args.after, args.repeats, work, console))
    return 0


if __name__ == "__main__":
    sys.exit(main())
