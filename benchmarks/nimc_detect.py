"""Network-induced memory contention on this machine, end to end: measure, train, evaluate.

    .venv/bin/python benchmarks/nimc_detect.py [--repeats 6] [--duration 2] [-o nimc-detect] [--data DIR]

1. `contend bench nimc`: rounds of interleaved runs (baseline, spin, memcpy, put and tcp at 0, 1 GB/s,
   2 GB/s and unpaced), a triad sample every 100 ms; prints the slowdown table (medians, min..max over
   rounds, load average). With --data DIR it reuses a sweep made before instead.
2. `contend nimc train` with each feature set (victim: the triad's own timing and software counters;
   node: plus the /proc/stat split of both cores and the load; counters: node without any triad
   timing), holding out 30% of the runs of each class: out-of-bag accuracy and R² on the training
   runs, accuracy per sample and per run (majority of the samples inside bursts) and R² on the
   held-out runs, the top features; then the node set on TCP traffic alone (the onload case).
   The target is a held-out accuracy of at least 0.9. The importance plot of the node set is drawn.
Takes about 5 minutes for 6 rounds on a quiet machine (longer on a busy one).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from rich.console import Console

from contend.analysis import nimc
from contend.native.bench.nimc import read_samples
from contend.native.bench.tables import nimc_table
from contend.report.nimc import importance_figure

TARGET = 0.9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", default="6")
    parser.add_argument("--duration", default="2")
    parser.add_argument("-o", "--output", default="nimc-detect")
    parser.add_argument("--data", help="a sweep directory made before (skips the measurement)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data) if args.data else out / "sweep"
    print(f"load average before: {os.getloadavg()}")
    if not args.data:
        contend = [sys.executable, "-m", "contend.cli"]
        subprocess.run(contend + ["bench", "nimc", "--repeats", args.repeats, "--duration", args.duration,
                                  "-o", str(data)], check=True)
    else:  # the table `contend bench nimc` printed when it made the sweep (no period: continuous traffic)
        settings = json.loads((data / "summary.json").read_text())["settings"]
        Console().print(nimc_table(pd.read_parquet(data / "slowdown.parquet"), settings.get("period_s", 0.0),
                                   settings.get("on_s", 0.0)))
    print(f"load average after measuring: {os.getloadavg()}")

    everything = read_samples(data)
    samples = everything[everything["source"].isin(nimc.DEFAULT_SOURCES)]
    print(f"\n{len(samples)} samples in {samples['run'].nunique()} runs (sources {', '.join(nimc.DEFAULT_SOURCES)}); "
          f"sample load average median {samples['loadavg_1min'].median():.2f}, "
          f"max {samples['loadavg_1min'].max():.2f}")
    results = {}
    # the three feature sets on all network-like sources, then the node set on TCP alone (the onload
    # case: traffic the node's CPU handles, as Groves 2016's onload NICs)
    evaluations = [(feature_set, samples) for feature_set in nimc.FEATURE_SETS]
    evaluations.append(("node, tcp only", everything[everything["source"].isin(["none", "spin", "tcp"])]))
    for name, these in evaluations:
        feature_set = name.split(",")[0]
        detector = nimc.train(these, feature_set=feature_set, test_fraction=0.3, seed=args.seed, where=str(data))
        m = detector.metrics
        held = m["held_out"]
        results[name] = m
        verdict = "meets" if held["run_accuracy"] >= TARGET and held["accuracy"] >= TARGET else "below"
        print(f"\n[{name}] {len(detector.features)} features; training {m['train']['runs']} runs / "
              f"{m['train']['samples']} samples, held out {held['runs']} runs / {held['samples']} samples")
        print(f"  out-of-bag accuracy {m['oob_accuracy']:.3f}   out-of-bag R² (slowdown) {m['oob_slowdown_r2']:.3f}")
        print(f"  held-out accuracy: per sample {held['accuracy']:.3f}, per run {held['run_accuracy']:.3f} "
              f"({verdict} the {TARGET} target)   held-out R² {held['slowdown_r2']:.3f}, "
              f"MAE {held['slowdown_mae']:.2f} points")
        print("  held-out accuracy by source: " + ", ".join(
            f"{s} {a:.2f}" for s, a in held.get("accuracy_by_source", {}).items()))
        ranked = sorted(detector.importances()["classifier (NiMC present)"].items(), key=lambda kv: -kv[1])[:5]
        print("  top classifier features: " + ", ".join(f"{k} {v:.3f}" for k, v in ranked))
        if name == "node":
            nimc.save(detector, out / "node.model")
            importance_figure(out / "importance.png", detector.importances(),
                              f"NiMC forests on this machine: feature importance ({feature_set} features)")
    (out / "scores.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {out / 'scores.json'}, {out / 'node.model'}, {out / 'importance.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
