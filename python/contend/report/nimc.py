"""Plots for network-induced memory contention: triad slowdown against the injected rate per source,
and a detector's feature importances."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contend.report.plots import pyplot, save_figure

_COLOURS = {"spin": "#7f7f7f", "memcpy": "#d95f02", "put": "#1b9e77", "tcp": "#7570b3", "none": "#000000",
            "rma": "#e7298a", "rma+throttle": "#66a61e", "rma+reserve-core": "#e6ab02"}


def _series(table: pd.DataFrame) -> pd.Series:
    """A line per source and mitigation (``rma+throttle``)."""
    mitigation = table["mitigation"] if "mitigation" in table else pd.Series("none", index=table.index)
    return table["source"].where(mitigation == "none", table["source"] + "+" + mitigation)


def slowdown_figure(path: str | os.PathLike, table: pd.DataFrame, title: str, paired: bool = False) -> None:
    """Median slowdown (%) against the median injected rate (GB/s), one line per source, bars from the
    fastest to the slowest run: ``table`` is ``contend.native.bench.nimc.slowdown_table``. Left: against the
    round's spin run; right (bursts): samples inside bursts against those between them in the same run."""
    plt = pyplot()
    panels = [("slowdown", "injected_GBps", "vs the round's spin control")]
    if paired:
        panels = [("slowdown", "injected_on_GBps", "vs the round's spin control"),
                  ("paired", "injected_on_GBps", "inside vs between bursts, same run")]
    figure, axes_list = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.6), dpi=110, squeeze=False)
    for axes, (kind, rate, subtitle) in zip(axes_list[0], panels):
        column = "slowdown_pct" if kind == "slowdown" else "paired_pct"
        low, high = ("slowdown_min", "slowdown_max") if kind == "slowdown" else ("paired_min", "paired_max")
        for source, group in table.groupby(_series(table), sort=False):
            if source in ("none", "spin") and kind == "paired":
                continue
            x = group[rate].fillna(0).to_numpy(float)
            y = group[column].to_numpy(float)
            spread = np.vstack([y - group[low].to_numpy(float), group[high].to_numpy(float) - y])
            axes.errorbar(x, y, yerr=spread, marker="o", capsize=3, color=_COLOURS.get(source), label=source)
        axes.axhline(0, color="black", linewidth=0.8)
        axes.set(xlabel="injected into this node's memory (GB/s, measured" + (", in bursts)" if paired else ")"),
                 ylabel="triad slowdown (%)", title=subtitle)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    figure.suptitle(title)
    save_figure(figure, path)


def importance_figure(path: str | os.PathLike, importances: dict[str, dict[str, float]], title: str) -> None:
    """Horizontal bars of feature importance, one panel per model (``{"classifier": {feature: value}}``)."""
    plt = pyplot()
    panels = [(name, values) for name, values in importances.items() if values]
    figure, axes_list = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 0.32 * max(
        len(v) for _, v in panels) + 1.6), dpi=110, squeeze=False)
    for axes, (name, values) in zip(axes_list[0], panels):
        ordered = sorted(values.items(), key=lambda item: item[1])
        axes.barh([k for k, _ in ordered], [v for _, v in ordered], color="#2c7fb8")
        axes.set(xlabel="mean decrease in impurity", title=name)
        axes.grid(True, axis="x", alpha=0.3)
    figure.suptitle(title)
    save_figure(figure, path)
