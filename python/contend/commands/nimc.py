"""``contend nimc``: train a detector of network-induced memory contention on samples from
``contend bench nimc`` (``train``), and run it on other samples (``detect``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contend.atomic import beside, check_writable
from contend.errors import UserError
from contend.machine.quantities import parse_count

# pandas, scikit-learn, matplotlib and rich load inside the actions, as in the other commands.


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "nimc", help="detect network-induced memory contention with random forests (train, detect)",
        description="Random-forest classifier (is NiMC present) and regressor (slowdown) on per-sample features "
                    "recorded by `contend bench nimc`, as in Groves 2016 (docs/measure.md).")
    actions = parser.add_subparsers(dest="nimc_command", metavar="ACTION")
    actions.required = True

    train = actions.add_parser("train", help="fit the forests; out-of-bag and held-out-run scores; importances",
                               description="Fit on the runs of DATA (sweep directories or Parquet files of "
                                           "samples), holding out whole runs for testing.")
    train.add_argument("data", nargs="+", metavar="DATA", help="sweep directory or intervals Parquet file")
    train.add_argument("-o", "--output", metavar="MODEL", default="nimc.model",
                       help="model file (default nimc.model); its schema goes to MODEL.json, the importance "
                            "plot to MODEL.png")
    train.add_argument("--feature-set", default="node", help="victim, node (default) or counters (no triad timing)")
    train.add_argument("--features", metavar="LIST", help="explicit feature columns instead of a set")
    train.add_argument("--sources", default="none,spin,put,tcp",
                       help="sources to train on (default none,spin,put,tcp: memcpy is left out, see docs)")
    train.add_argument("--test-fraction", metavar="F", default="0.3",
                       help="fraction of the runs of each class held out for testing (default 0.3; 0: none)")
    train.add_argument("--trees", metavar="N", default="300", help="trees per forest (default 300)")
    train.add_argument("--seed", metavar="N", default="1", help="seed of the split and the forests (default 1)")
    train.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    train.set_defaults(func=run_train)

    detect = actions.add_parser("detect", help="run a trained detector on samples",
                                description="Per run (majority of its samples) and per sample: NiMC present or "
                                            "not, and the predicted slowdown. With labels in DATA, the accuracy.")
    detect.add_argument("model", metavar="MODEL")
    detect.add_argument("data", nargs="+", metavar="DATA")
    detect.add_argument("-o", "--output", metavar="FILE.parquet", help="per-sample predictions")
    detect.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    detect.set_defaults(func=run_detect)


def _load_samples(paths: list[str], sources: list[str] | None = None):
    import pandas as pd

    from contend.native.bench.nimc import read_samples

    frames = []
    for number, path in enumerate(paths):
        frame = read_samples(path)
        if sources is not None and "source" in frame:
            frame = frame[frame["source"].isin(sources)]
        if "run" in frame and len(paths) > 1:  # runs of different files stay different runs
            frame = frame.assign(run=frame["run"].astype(str).radd(f"{number}:"))
        frames.append(frame)
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files ({paths[0]}, ...)"
    return pd.concat(frames, ignore_index=True), where


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--test-fraction: expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise UserError(f"--test-fraction: expected 0 <= F < 1, got {text}")
    return value


def run_train(args: argparse.Namespace) -> int:
    from rich.console import Console
    from contend.report.terminal import Table

    from contend.analysis import nimc
    from contend.native.bench.nimc import parse_sources
    from contend.report.nimc import importance_figure

    target = check_writable(args.output, "-o")
    test_fraction = _fraction(args.test_fraction)
    trees = parse_count(args.trees, "--trees", minimum=10, maximum=10000)
    seed = parse_count(args.seed, "--seed", minimum=0, maximum=2**31 - 1)
    features = [f.strip() for f in args.features.split(",") if f.strip()] if args.features else None
    frame, where = _load_samples(args.data, parse_sources(args.sources))
    detector = nimc.train(frame, feature_set=args.feature_set, features=features, test_fraction=test_fraction,
                          trees=trees, seed=seed, where=where)
    nimc.save(detector, target)
    plot = beside(target, target.name + ".png")
    if plot is not None:
        importance_figure(plot, detector.importances(),
                          f"NiMC forests: feature importance ({detector.feature_set} features, "
                          f"{detector.metrics['train']['runs']} training runs)")
    metrics = detector.metrics
    if args.json:
        print(json.dumps({"model": str(target), **nimc.schema(detector)}))
        return 0
    console = Console()
    scores = Table(title=f"contend nimc train: {where}")
    for column in ("score", "value", "on"):
        scores.add_column(column, justify="right" if column == "value" else "left")
    train_on = f"{metrics['train']['runs']} training runs, {metrics['train']['samples']} samples"
    scores.add_row("out-of-bag accuracy (NiMC present)", f"{metrics['oob_accuracy']:.3f}", train_on)
    scores.add_row("out-of-bag R² (slowdown %)", f"{metrics['oob_slowdown_r2']:.3f}", train_on)
    held = metrics.get("held_out")
    if held:
        on = f"{held['runs']} held-out runs, {held['samples']} samples"
        scores.add_row("held-out accuracy, per sample", f"{held['accuracy']:.3f}", on)
        scores.add_row("held-out accuracy, per run (majority)", f"{held['run_accuracy']:.3f}", on)
        scores.add_row("held-out R² (slowdown %)", f"{held['slowdown_r2']:.3f}", on)
        scores.add_row("held-out mean abs. error (slowdown %)", f"{held['slowdown_mae']:.2f}", on)
        for source, accuracy in held.get("accuracy_by_source", {}).items():
            scores.add_row(f"  held-out accuracy, {source}", f"{accuracy:.3f}", "")
    scores.caption = metrics.get("oob_caveat")
    console.print(scores)
    top = Table(title="feature importance (mean decrease in impurity)")
    top.add_column("feature")
    for name in detector.importances():
        top.add_column(name, justify="right")
    importances = list(detector.importances().values())
    for feature in sorted(detector.features, key=lambda f: -importances[0][f]):
        top.add_row(feature, *(f"{values[feature]:.3f}" for values in importances))
    console.print(top)
    console.print(f"wrote {target}, {target.name}.json, {plot}")
    return 0


def run_detect(args: argparse.Namespace) -> int:
    from rich.console import Console
    from contend.report.terminal import Table

    from contend.analysis import nimc
    from contend.native.bench.nimc import write_samples

    detector = nimc.load(args.model)
    output = check_writable(args.output, "-o") if args.output else None
    frame, where = _load_samples(args.data)
    merged, summary = nimc.detect(detector, frame, where)
    if output is not None:
        write_samples(merged, output, {"model": str(args.model)})
    if args.json:
        print(json.dumps(summary, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
        return 0
    console = Console()
    if "runs" in summary:
        table = Table(title=f"contend nimc detect: {Path(args.model).name} on {where}")
        labelled = "truth" in summary["runs"][0]
        for column in ("run", "source", "rate", "samples", "flagged", "NiMC", "slowdown % (predicted)") + (
                ("truth", "slowdown % (measured)") if labelled else ()):
            table.add_column(column, justify="left" if column in ("run", "source", "rate", "NiMC", "truth") else "right")
        for run in summary["runs"]:
            rate = run.get("rate_target_Bps")
            row = [str(run["run"]), str(run.get("source", "")),
                   "" if rate is None else ("max" if rate < 0 else f"{rate / 1e9:g} GB/s"), str(run["samples"]),
                   f"{run['flagged']:.0%}", "yes" if run["nimc"] else "no", f"{run['slowdown_predicted']:+.1f}"]
            if labelled:
                row += ["yes" if run["truth"] else "no", f"{run['slowdown']:+.1f}"]
            table.add_row(*row)
        console.print(table)
    console.print(f"{summary['flagged']} of {summary['samples']} samples flagged as NiMC; median predicted "
                  f"slowdown {summary['slowdown_predicted_median']:+.1f}%"
                  + (f"; accuracy against the labels {summary['accuracy']:.3f}" if "accuracy" in summary else ""))
    if output is not None:
        console.print(f"wrote {output}")
    return 0
