"""Plots for network-induced memory contention: triad slowdown against the injected rate per source,
and a detector's feature importances."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contend.report.plots import pyplot, save_figure

_COLOURS = {"spin": "#7f7f7f", "memcpy": "#d95f02", "put": "#1b9e77", "tcp": "#7570b3", "none": "#000000"}


def slowdown_figure(path: str | os.PathLike, table: pd.DataFrame, title: str) -> None:
    """Median slowdown (%) against the median injected rate (GB/s), one line per source, bars from the
    fastest to the slowest run: ``table`` is ``contend.bench.nimc.slowdown_table``."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    for source, group in table.groupby("source", sort=False):
        if source == "none":
            continue
        x = group["injected_GBps"].to_numpy(float)
        y = group["slowdown_pct"].to_numpy(float)
        spread = np.vstack([y - group["slowdown_min"].to_numpy(float), group["slowdown_max"].to_numpy(float) - y])
        axes.errorbar(x, y, yerr=spread, marker="o", capsize=3, color=_COLOURS.get(source), label=source)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set(xlabel="injected into this node's memory (GB/s, measured)",
             ylabel="triad slowdown vs baseline (%)", title=title)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
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
