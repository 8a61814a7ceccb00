"""`contend predict --html DIR`: predicted against measured time, run by run, and where the predicted
time goes, as a page a person can look at (docs/measure.md, "Prediction against reality")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

# The lists of a prediction's summary (contend.analysis.predict.Measured) and how the page names them.
SERIES = {"untraced": "measured, untraced", "traced": "measured, traced", "predicted": "predicted",
          "noisy": "predicted with --noise", "plain": "predicted without the policy"}


def write_report(label: str, summary: dict[str, Any], directory: str | os.PathLike) -> list[str]:
    """``predict.json``, ``index.html``, ``runs.png`` and (with a critical path) ``critical-path.png``
    into ``directory``, which appears complete or not at all; the names written."""
    from contend.atomic import atomic_directory

    with atomic_directory(directory, "--html") as out:
        return _write(label, summary, out)


def _write(label: str, summary: dict[str, Any], out: Path) -> list[str]:
    from contend.report.html import HtmlPage

    (out / "predict.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    written = ["predict.json"]
    page = HtmlPage(f"Prediction of {label}")
    page.paragraph(f"{summary['ranks']} ranks. Time between MPI_Init and MPI_Finalize, measured and predicted "
                   "(the traced runs converted and simulated on the machine); error: predicted median against "
                   "the untraced median, vs traced: each traced run's prediction against its own time (median).")
    page.heading("Predicted against measured", anchor="runs")
    shown = [key for key in SERIES if summary[key]["runs"]]
    page.table(["", "median (ms)", "min (ms)", "max (ms)", "runs"],
               [[SERIES[key], *(_ms(summary[key][f"{stat}_ns"]) for stat in ("median", "min", "max")),
                 summary[key]["runs"]] for key in shown])
    page.table(["error (%)", "vs traced (%)", "with --noise (%)"],
               [[_pct(summary["error_pct"]), _pct(summary["error_vs_traced_pct"]), _pct(summary["error_noisy_pct"])]])
    _runs_plot(summary, shown, out / "runs.png")
    page.image("runs.png", "each run's time: the measured runs and the predictions of the traced runs")
    written.append("runs.png")
    if summary.get("critical_path"):
        from contend.simulation.critical_path import LABELS, PARTS, CriticalPath

        path = CriticalPath.from_dict(summary["critical_path"])
        page.heading("Where the predicted time goes", anchor="critical-path")
        path.bar(out / "critical-path.png", "the last traced run's schedule along its critical path")
        page.image("critical-path.png", "its makespan split along the critical path (docs/models.md, "
                                        "'Where the time goes')")
        page.table(["part", "time (ms)", "share"],
                   [[LABELS[part], _ms(path.split[part]), f"{path.shares[part]:.1%}"] for part in PARTS])
        written.append("critical-path.png")
    check = summary.get("host_check")
    if check:
        page.heading("Host check", anchor="host-check")
        page.paragraph(f"The machine file's {check['bytes']}-byte round trip ({check['pattern']}, {check['statistic']}) "
                       "measured again before and after the runs; beyond "
                       f"{check['tolerance_pct']:.0f}% the file no longer describes the host (docs/measure.md).")
        page.table(["record", "recorded (ns)", "before (ns)", "after (ns)", "change (%)", "within"],
                   [[check["record"], f"{check['recorded_ns']:,.0f}", f"{check['before_ns']:,.0f}",
                     "-" if check["after_ns"] is None else f"{check['after_ns']:,.0f}", _pct(check["change_pct"]),
                     "yes" if check["holds"] else "no"]])
    for warning in summary.get("warnings", []):
        page.paragraph(f"warning: {warning}")
    page.write(out / "index.html")
    return written + ["index.html"]


def _runs_plot(summary: dict[str, Any], shown: list[str], path: Path) -> None:
    """One marker per run of each list, in ms, by run number (the lists side by side within a run)."""
    from contend.report.plots import pyplot, save_figure

    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 3.6), dpi=110)
    runs = max(summary[key]["runs"] for key in shown)
    top = max(summary[key]["max_ns"] for key in shown) / 1e6
    for k, (marker, key) in enumerate(zip("os^vD", shown)):
        values = [v / 1e6 for v in summary[f"{key}_ns"]]
        offset = (k - (len(shown) - 1) / 2) * 0.1
        axes.plot([run + offset for run in range(1, len(values) + 1)], values, marker, label=SERIES[key])
    axes.set_xticks(range(1, runs + 1))
    axes.set_xlim(0.5, runs + 0.5)
    axes.set_xlabel("run")
    axes.set_ylabel("time (ms)")
    axes.set_ylim(0, top * 1.15)
    axes.legend(fontsize="small")
    save_figure(figure, path)


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"
