"""Plots of measured OS noise: the detour-length histogram, its CDF (by count and by stolen time) and
the detours over time, one colour per rank."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from contend.report.plots import pyplot, save_figure


def noise_figure(path: str | os.PathLike, detours: pd.DataFrame, title: str) -> None:
    """Three panels of ``detours`` (rank, start_ns, length_ns), saved as a PNG."""
    plt = pyplot()
    figure, (hist, cdf, timeline) = plt.subplots(1, 3, figsize=(15, 4.3), dpi=110)
    lengths_us = detours["length_ns"].to_numpy(dtype=float) / 1e3
    if lengths_us.size:
        low, high = max(lengths_us.min(), 1e-3), max(lengths_us.max(), 2e-3)
        bins = np.logspace(np.log10(low), np.log10(high) + 1e-9, 40)
        hist.hist(lengths_us, bins=bins, color="#2c7fb8")
        ordered = np.sort(lengths_us)
        cdf.plot(ordered, np.arange(1, ordered.size + 1) / ordered.size, label="detours")
        cdf.plot(ordered, np.cumsum(ordered) / ordered.sum(), label="stolen time")
        for rank, group in detours.groupby("rank"):
            timeline.scatter(group["start_ns"] / 1e9, group["length_ns"] / 1e3, s=3, label=f"rank {rank}")
    hist.set(xscale="log", yscale="log", xlabel="detour length (us)", ylabel="detours", title="histogram")
    cdf.set(xscale="log", xlabel="detour length (us)", ylabel="fraction at most this long", title="CDF", ylim=(0, 1.01))
    timeline.set(yscale="log", xlabel="time since start (s)", ylabel="detour length (us)", title="over time")
    if lengths_us.size:
        cdf.legend(fontsize="small")
        if detours["rank"].nunique() <= 8:
            timeline.legend(fontsize="small", markerscale=3)
    for axes in (hist, cdf, timeline):
        axes.grid(True, which="major", alpha=0.3)
    figure.suptitle(title)
    save_figure(figure, path)
