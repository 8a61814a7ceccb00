"""Engine vs libcontend-throttle's counters on the same scenarios, with the library's run-to-run spread.

    .venv/bin/python benchmarks/throttle_agreement.py [--repeats 5] [--rounds 8] [--json FILE]

Every scenario and policy of contend.experiments.throttle_agreement (Luo et al. 2012's Figure 1 and
Figure 2 microbenchmarks and the overlapped all-to-all, 4 ranks as two nodes of 2 on this host): the
engine once (it is deterministic), the library ``--repeats`` times. tests/test_throttle_agreement.py
holds what must agree exactly (grants, tokens in use); this shows what timing decides, the waits, as
waits per send: the engine's, and the library's median and range over its runs (a run's counters
cover its warm-up round and the harness's few messages too). "inside" says whether the engine's
figure lies within the library's range. Not a test: waits depend on the host's timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from contend.experiments.throttle_agreement import POLICIES, SCENARIOS, run_engine, run_library


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="library runs per case")
    parser.add_argument("--rounds", type=int, default=8, help="timed rounds per run")
    parser.add_argument("--json", help="also write every run's counters to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    table = Table(title=f"waits per send: engine vs library ({args.repeats} runs, {args.rounds} rounds)")
    for column in ("scenario", "policy", "grants e/l", "engine", "library median", "range", "inside"):
        table.add_column(column, justify="left" if column in ("scenario", "policy", "inside") else "right")
    out = []
    with tempfile.TemporaryDirectory(prefix="contend-agree-") as scratch:
        for scenario in SCENARIOS.values():
            for name, policy in POLICIES.items():
                engine = run_engine(scenario, policy, args.rounds + 1)  # + the warm-up round
                runs = [run_library(scenario, policy, args.rounds, Path(scratch)) for _ in range(args.repeats)]
                rates = [sum(r["waits"] for r in run) / sum(r["ops"] for r in run) for run in runs]
                mine = engine["waits"] / engine["grants"]
                grants = f"{engine['grants']}/{sum(r['ops'] for r in runs[0])}"
                table.add_row(scenario.name, name, grants, f"{mine:.2f}", f"{statistics.median(rates):.2f}",
                              f"{min(rates):.2f}..{max(rates):.2f}",
                              "yes" if min(rates) <= mine <= max(rates) else "no")
                out.append({"scenario": scenario.name, "policy": name, "engine": engine, "library_runs": runs})
                print(f"{scenario.name} {name}: engine {mine:.2f}, library {', '.join(f'{r:.2f}' for r in rates)}",
                      file=sys.stderr)
    console = Console(width=80)
    console.print(table)
    console.print(f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": args.rounds, "cases": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
