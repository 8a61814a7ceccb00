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
    header = "| size (B) | measured RTT (us) | model RTT (us) |" + (" contend sim (us) |" if engine else "") + " error |"
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    predicted = engine or fit["pingpong_predicted_ns"]
    for i, size in enumerate(fit["pingpong_bytes"]):
        measured = fit["pingpong_measured_ns"][i]
        cells = [str(size), f"{measured / 1e3:.3f}", f"{fit['pingpong_predicted_ns'][i] / 1e3:.3f}"]
        cells += [f"{engine[i] / 1e3:.3f}"] if engine else []
        cells.append(f"{100 * (predicted[i] - measured) / measured:+.1f}%")
        rows.append("| " + " | ".join(cells) + " |")
    summary = ", ".join(f"{k}={loggops[k]}" for k in ("L", "o", "o_s", "o_r", "g", "G", "O", "S"))
    return "\n".join([f"Parameters: {summary}", f"Load average: {fit['loadavg_1min']}", "", *rows, "",
                      f"Note: {fit['note']}"])


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="fit-this-host", help="directory for the machine file and runs")
    parser.add_argument("--iters", default="300", help="round trips per size and run")
    parser.add_argument("--repeats", default="5", help="runs of each measurement (median)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "this-host.toml"
    code = contend(["bench", "fit", "-o", str(target), "--iters", args.iters, "--repeats", args.repeats])
    if code != 0:
        return code
    print(markdown(tomllib.loads(target.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(run())
