"""What diagnosing costs beside simulating: `contend diagnose`'s analysis (engine records and the same run as
trace records) against the simulation that made the records, all in this one run (the machine is shared,
so only ratios within a run mean much).

Run with `.venv/bin/python benchmarks/diagnose_speed.py [--ranks P]`: an all-to-all of 4 KiB on P ranks
(P*(P-1) messages, default P=128: 16,256 messages) over a crossbar.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console

import contend
from contend.analysis.diagnose import diagnose
from contend.analysis.diagnose_input import load_records
from contend.experiments.onesided import trace_view
from contend.report.terminal import Table


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=128)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    result, simulate_s = timed(lambda: contend.simulate(collective="alltoall-linear", ranks=args.ranks, bytes=4096,
                                                        L=1000, o=300, g=100, G=0.1, records=True))
    params = result.params
    engine, engine_s = timed(lambda: diagnose(result.records, params, result.num_ranks))
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "trace.parquet"
        trace_view(result, path)
        loaded, load_s = timed(lambda: load_records(path))
        trace, trace_s = timed(lambda: diagnose(loaded.frame, params, loaded.num_ranks, source="trace"))
    table = Table(title=f"diagnose speed: alltoall-linear, {args.ranks} ranks, {len(result.records):,} messages "
                        f"(load average {load_before:.1f} -> {os.getloadavg()[0]:.1f})")
    for column in ("step", "seconds", "messages / s", "x simulate"):
        table.add_column(column, justify="left" if column == "step" else "right")
    count = len(result.records)
    for step, seconds in (("simulate (baseline)", simulate_s), ("diagnose engine records", engine_s),
                          ("load trace records", load_s), ("diagnose trace records", trace_s)):
        table.add_row(step, f"{seconds:.3f}", f"{count / seconds:,.0f}", f"{seconds / simulate_s:.2f}")
    Console().print(table)
    assert abs(engine.contention - trace.contention) <= 1e-6 * max(1.0, engine.contention)


if __name__ == "__main__":
    main()
