"""The outputs of ``contend whatif``: the terminal table, ``whatif.json`` and the HTML report with the run
time against each axis (docs/formats.md, "contend whatif -o DIR")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contend.simulation.critical_path import LABELS, PARTS
from contend.report.terminal import Table

#: Lines per plot: one per combination of the other axes; more would be unreadable.
MAX_SERIES = 10
#: Bars of the critical-path plot, one per run; beyond this the runs' table has the split.
MAX_BARS = 24


def _relative(value: float | None) -> str:
    return "deadlock" if value is None else f"{value:.4g}x"


def whatif_table(result: Any) -> Table:
    """One row per run: the axes' values, the makespan, its ratio to the first run and (with the critical
    path) the part of it that took most of the run."""
    from contend.report.tables import describe_workload

    table = Table(title=f"contend whatif: {describe_workload(result.workload.to_dict())} on {result.machine}, "
                        f"{len(result.runs)} run(s); the first is the reference", title_justify="left")
    for axis in result.axes:
        table.add_column(axis.name)
    table.add_column("makespan (ns)", justify="right")
    table.add_column("vs first", justify="right")
    if result.critical_path:
        table.add_column("most of it")
    for run in result.runs:
        makespan = "deadlock" if run["deadlock"] else f"{round(run['makespan_ns']):,}"  # whole ns: JSON has ps
        table.add_row(*(run["settings"][axis.name] for axis in result.axes), makespan,
                      _relative(result.relative(run)), *([result.largest_part(run)] if result.critical_path else []))
    return table


def write_report(result: Any, directory: str | os.PathLike) -> list[str]:
    """``whatif.json``, ``index.html``, one ``axis-NAME.png`` per axis of two or more values and, with the
    critical path, ``critical-path.png`` into ``directory`` (an ``atomic_directory``); the names written."""
    from contend.atomic import atomic_path
    from contend.report.html import HtmlPage
    from contend.report.tables import describe_workload

    out = Path(directory)
    with atomic_path(out / "whatif.json") as tmp:
        tmp.write_text(json.dumps(result.to_dict(), indent=1), encoding="utf-8")
    written = ["whatif.json"]
    page = HtmlPage(f"What if: {describe_workload(result.workload.to_dict())} on {result.machine}")
    page.paragraph(f"{len(result.runs)} run(s), the cross product of the axes below; the first run (every axis at "
                   "its first value) is the reference of the ratios. docs/models.md, 'What-if axes', says how "
                   "each axis changes the model.")
    for axis in result.axes:
        if len(axis.values) < 2:
            continue
        name = f"axis-{axis.name}.png"
        page.heading(f"Run time against {axis.name}", anchor=axis.name)
        shown = _axis_plot(result, axis, out / name)
        if not shown:
            page.paragraph("Every run deadlocked: no run time to draw.")
            continue
        page.image(name, f"makespan against {axis.name}; one line per setting of the other axes")
        if shown < _series_count(result, axis):
            page.paragraph(f"{shown} of {_series_count(result, axis)} lines drawn; the table has every run.")
        written.append(name)
    finished = [run for run in result.runs if run.get("critical_path")]
    if finished and len(finished) <= MAX_BARS:
        page.heading("Where the time goes", anchor="critical-path")
        _split_bars(finished, result.axes, out / "critical-path.png")
        page.image("critical-path.png", "each run's makespan split along its critical path (docs/models.md, "
                   "'Where the time goes')")
        written.append("critical-path.png")
    page.heading("Runs", anchor="runs")
    parts = PARTS if result.critical_path else ()
    columns = [axis.name for axis in result.axes] + ["makespan (ns)", "vs first", "noise charged (ns)"]
    rows = [[run["settings"][axis.name] for axis in result.axes]
            + ["deadlock" if run["deadlock"] else run["makespan_ns"], _relative(result.relative(run)),
               run["noise_charged_ns"]]
            + [run["critical_path"]["split"][part] if run.get("critical_path") else "" for part in parts]
            for run in result.runs]
    page.table(columns + [f"{LABELS[part]} (ns)" for part in parts], rows)
    page.write(out / "index.html")
    return written + ["index.html"]


def _split_bars(runs: list[dict[str, Any]], axes: list[Any], path: Path) -> None:
    """One stacked bar per run: its critical path's parts in us."""
    from contend.report.plots import stacked_bars

    names = [", ".join(run["settings"][axis.name] for axis in axes) or "run" for run in runs]
    stacked_bars(path, names, {LABELS[part]: [run["critical_path"]["split"][part] / 1000 for run in runs]
                               for part in PARTS},
                 title="where the time goes (critical path)", ylabel="time (us)", rotation=30)


def _series_count(result: Any, axis: Any) -> int:
    return len(result.runs) // len(axis.values)


def _axis_plot(result: Any, axis: Any, path: Path) -> int:
    """The makespan against ``axis``, one line per setting of the other axes (at most MAX_SERIES);
    the number of lines drawn (0: every run deadlocked, nothing written)."""
    from contend.report.plots import line_plot

    others = [a.name for a in result.axes if a.name != axis.name]
    series: dict[str, tuple[list[float], list[float]]] = {}
    numbers = axis.numbers()
    for run in result.runs:
        if run["deadlock"]:
            continue
        label = ", ".join(f"{name}={run['settings'][name]}" for name in others) or "makespan"
        if label not in series and len(series) == MAX_SERIES:
            continue
        position = axis.labels.index(run["settings"][axis.name])
        xs, ys = series.setdefault(label, ([], []))
        xs.append(numbers[position] if numbers is not None else position)
        ys.append(run["makespan_ns"] / 1000)
    for label, (xs, ys) in series.items():  # a line runs left to right whatever order the values came in
        pairs = sorted(zip(xs, ys))
        series[label] = ([x for x, _ in pairs], [y for _, y in pairs])
    if not series:
        return 0
    positive = numbers is not None and min(numbers) > 0
    times = [y for _, ys in series.values() for y in ys]
    wide = min(times) > 0 and max(times) > 10 * min(times)  # lines a decade apart: a log scale shows both
    line_plot(path, series, title=f"run time against {axis.name}", xlabel=axis.name, ylabel="makespan (us)",
              logx=positive, logy=wide, xticklabels=None if numbers is not None else list(axis.labels),
              xbase=2 if axis.name in ("ranks", "ranks-per-node") else 10)
    return len(series)
