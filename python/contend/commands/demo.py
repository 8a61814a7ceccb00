"""``contend demo``: a short tour of the simulator on the built-in presets, with an HTML report."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from contend.atomic import atomic_path, output_directory


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="run a short tour and write an HTML report",
        description="Run a short tour of contend's simulator on the built-in machine presets: reference "
        "answers, collectives across sizes and scales, eager versus rendezvous, a deadlock caught, and "
        "LogGOPSim v1's ordering defect avoided. Writes DIR/index.html, plots, JSON and sample outputs.",
    )
    parser.add_argument("-o", "--output", metavar="DIR", default="demo-report", help="report directory")
    parser.add_argument("--full", action="store_true", help="include the 2^21..2^23-rank broadcasts (slower)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from contend.experiments.tour import run_tour
    from contend.report.findings import print_findings

    out = output_directory(args.output, "-o")
    console = Console()
    started = time.perf_counter()
    findings = run_tour(out, full=args.full, progress=lambda step: console.print(f"[dim]running: {step}[/dim]"))
    elapsed = time.perf_counter() - started

    print_findings(console, findings)

    with atomic_path(out / "results.json") as temporary:
        temporary.write_text(json.dumps({"seconds": elapsed, "findings": [vars(f) for f in findings]}, indent=1,
                                        default=str), encoding="utf-8")
    write_html(findings, out / "index.html", elapsed)
    failed = [f.title for f in findings if not f.ok]
    console.print(f"\nreport: {out / 'index.html'} ({elapsed:.1f} s)")
    if failed:
        console.print(f"[bold red]failed checks: {'; '.join(failed)}[/bold red]")
        return 1
    return 0


def write_html(findings, path: Path, elapsed: float) -> None:
    from contend.report.findings import findings_page

    findings_page(
        "contend demo: simulating contention in the LogGOPS model",
        f"A tour of contend's simulator, generated in {elapsed:.1f} s by `contend demo`. Times are in the "
        "GOAL unit, ns, unless a column says us. Raw numbers: results.json.",
        findings,
    ).write(path)
