"""Plots for reports, drawn with matplotlib's non-interactive backend and saved as PNG files."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from contend.atomic import atomic_path


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: reports are files
    import matplotlib.pyplot as plt

    return plt


def line_plot(
    path: str | os.PathLike,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = True,
    logy: bool = True,
    xticklabels: Sequence[str] | None = None,
    xbase: int = 2,
) -> None:
    """One line with markers per series (label -> (xs, ys)), saved atomically to ``path``. With
    ``xticklabels`` the x values are positions 0, 1, ... of those categories (linear axis)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    styles = ("-", "--", "-.", ":")  # lines that coincide (equal closed forms) stay visible
    for number, (label, (xs, ys)) in enumerate(series.items()):
        axes.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.4, linestyle=styles[number % len(styles)],
                  label=label)
    if xticklabels is not None:
        axes.set_xticks(range(len(xticklabels)), xticklabels, rotation=15, ha="right", fontsize="small")
    elif logx:
        axes.set_xscale("log", base=xbase)
    if logy:
        axes.set_yscale("log")
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize="small", ncol=2)
    save_figure(figure, path)


def stacked_bars(
    path: str | os.PathLike,
    categories: Sequence[str],
    parts: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
    rotation: float = 0,
) -> None:
    """Vertical bars, one per category, stacked from ``parts`` (name -> one value per category);
    ``rotation`` turns long category names (degrees)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    bottom = [0.0] * len(categories)
    for name, values in parts.items():
        axes.bar(categories, values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    if rotation:
        axes.set_xticks(range(len(categories)), categories, rotation=rotation, ha="right", fontsize="small")
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    axes.legend(fontsize="small")
    axes.grid(True, axis="y", alpha=0.3)
    save_figure(figure, path)


def grouped_bars(
    path: str | os.PathLike,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
) -> None:
    """Bars side by side within each category, one per group (name -> one value per category)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    width = 0.8 / max(len(groups), 1)
    for number, (name, values) in enumerate(groups.items()):
        axes.bar([k + (number - (len(groups) - 1) / 2) * width for k in range(len(categories))], values,
                 width=width, label=name)
    axes.set_xticks(range(len(categories)), categories)
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    axes.legend(fontsize="small", ncol=min(len(groups), 5))
    axes.grid(True, axis="y", alpha=0.3)
    save_figure(figure, path)


def save_figure(figure, path: str | os.PathLike, tight: bool = True, dpi: float | None = None) -> None:
    """Save ``figure`` as a PNG atomically and close it; ``tight=False`` for figures made with a
    constrained layout (the heatmap's panels and colour bar), which tight_layout would undo."""
    plt = pyplot()
    if tight:
        figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=dpi)
    plt.close(figure)
