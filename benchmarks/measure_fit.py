"""Fit this machine (`contend bench fit`) and print the ping-pong table, predicted vs measured, as Markdown.

    python benchmarks/measure_fit.py [--out DIR] [--iters N] [--repeats R]

Writes DIR/this-host.toml (+ .loggp.parquet, .pingpong.parquet, .png). Run on a quiet machine: the
load average is recorded in the file; another job can slow any sample by 2-6x.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

from contend.cli import main as contend


def markdown(machine: dict) -> str:
    fit, loggops = machine["fit"], machine["loggops"]
    engine = fit.get("pingpong_engine_ns")
    header = ("| size (B) | measured RTT (us) | median RTT (us) | model RTT (us) |"
              + (" contend sim (us) |" if engine else "") + " error |")
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    for i, size in enumerate(fit["pingpong_bytes"]):
        cells = [str(size)] + [f"{fit[key][i] / 1e3:.3f}" for key in
                               ("pingpong_measured_ns", "pingpong_median_ns", "pingpong_predicted_ns")]
        cells += [f"{engine[i] / 1e3:.3f}"] if engine else []
        cells.append(f"{fit['pingpong_error_pct'][i]:+.1f}%")
        rows.append("| " + " | ".join(cells) + " |")
    sets = [("eager", loggops)] + ([(f"above S={loggops['S']}", loggops["rendezvous"])] if "rendezvous" in loggops else [])
    summary = [f"{name}: " + ", ".join(f"{k}={costs[k]}" for k in ("L", "o", "g", "G", "O")) for name, costs in sets]
    return "\n".join([*summary, f"o_s={loggops['o_s']}, o_r={loggops['o_r']}, step {fit['protocol_step']}",
                      f"Load average: {fit['loadavg_1min']}", f"Max error: {fit['max_error_pct']}% "
                      f"(parameter run: {fit['parameter_run_max_error_pct']}%, one cost set at best: "
                      f"{fit['one_line_max_error_pct']}%)", "", *rows, "", f"Note: {fit['note']}"])


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="fit-this-host", help="directory for the machine file and runs")
    parser.add_argument("--iters", default="300", help="round trips per size and run")
    parser.add_argument("--repeats", default="9", help="runs of each measurement (see contend bench fit --help)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "this-host.toml"
    code = contend(["bench", "fit", "-o", str(target), "--iters", args.iters, "--repeats", args.repeats])
    if code not in (0, 1):  # 1: the fit missed its 10% check; the table shows where
        return code
    print(markdown(tomllib.loads(target.read_text())))
    return code


if __name__ == "__main__":
    sys.exit(run())
