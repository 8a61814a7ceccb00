"""Engine vs libcontend-throttle's waits on the same scenarios, each side with its run-to-run spread.

    .venv/bin/python benchmarks/throttle_agreement.py [--repeats 5] [--rounds 8] [--json FILE]

Every scenario and policy of contend.experiments.throttle_agreement (Luo et al. 2012's Figure 1 and
Figure 2 microbenchmarks as one-way puts, and the overlapped all-to-all; 4 ranks as two nodes of 2 on
this host): the library ``--repeats`` times, each run beside its twin in the engine (started as the
run's origins started each round). tests/test_throttle_agreement.py holds what must
agree exactly (grants, tokens in use) and that every case's waits agree within the spread; this prints
waits per send for all of them: each side's median and range, and whether the ranges overlap or are at
most TOLERANCE apart. Not a test: waits depend on the host's timing; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from rich import box
from rich.console import Console

from contend.report.terminal import Table
from contend.experiments.throttle_agreement import (HOST_HANDOFF_NS, POLICIES, SCENARIOS, TOLERANCE,
                                                    library_handoff, overlap, spread, twin_model)


def span(values: list[float]) -> str:
    return f"{min(values):.2f}..{max(values):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="library runs per case")
    parser.add_argument("--rounds", type=int, default=8, help="timed rounds per run")
    parser.add_argument("--json", help="also write every case's waits per send to this file")
    args = parser.parse_args()
    load_before = os.getloadavg()
    title = f"waits per send: engine vs library, {args.repeats} runs and their twins, {args.rounds} rounds + 1"
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("scenario", "policy", "engine", "range", "library", "range", "agree"):
        table.add_column(column, justify="left" if column in ("scenario", "policy", "agree") else "right", no_wrap=True)
    out = []
    models = {name: twin_model(scenario) for name, scenario in SCENARIOS.items()}
    handoff_ns = library_handoff(models["figure1"])
    print(f"the library's waiters see their tokens {handoff_ns} ns after they come back (library_handoff; "
          f"the twins take {HOST_HANDOFF_NS} ns)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="contend-agree-") as scratch:
        for name, scenario in SCENARIOS.items():
            model = models[name]
            for policy, settings in POLICIES.items():
                got = spread(scenario, settings, args.rounds, Path(scratch), model, repeats=args.repeats)
                engine, library = got["engine"], got["library"]
                table.add_row(name, policy, f"{statistics.median(engine):.2f}", span(engine),
                              f"{statistics.median(library):.2f}", span(library),
                              "yes" if overlap(engine, library) else "no")
                out.append({"scenario": name, "policy": policy, "model": model, **got})
                paired = (f", each run beside its twin: at most {max(abs(e - w) for e, w in zip(engine, library)):.2f} apart"
                          if len(engine) == len(library) else "")
                print(f"{name} {policy}: engine {span(engine)}, library {span(library)}{paired}", file=sys.stderr)
    console = Console(width=80)
    console.print(table)
    console.print(f"agree: the ranges overlap or are at most {TOLERANCE} apart; load average (1, 5, 15 min) "
                  f"{', '.join(f'{x:.2f}' for x in load_before)} before, "
                  f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": args.rounds, "handoff_ns": handoff_ns,
                                               "twin_handoff_ns": HOST_HANDOFF_NS, "cases": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
