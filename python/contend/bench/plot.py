"""PNG plots of benchmark runs and fits (matplotlib, no display needed)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: works without a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from contend.bench.registry import benchmark  # noqa: E402
from contend.bench.results import RunResult  # noqa: E402


def _series_label(rank: int, peer: int, metric: str) -> str:
    return f"{metric} {rank}->{peer}" if peer >= 0 else f"{metric} rank {rank}"


def plot_run(run: RunResult, path: str | os.PathLike) -> Path:
    """Latency or bandwidth against size (one line per rank pair), latency per rank, or detours."""
    kind = benchmark(run.pattern).plot
    rows = run.results
    figure, axes = plt.subplots(figsize=(7, 4.5))
    if kind == "noise":
        for rank, group in run.detours.groupby("rank") if not run.detours.empty else []:
            axes.scatter(group["start_ns"] / 1e9, group["length_ns"] / 1e3, s=4, label=f"rank {rank}")
        axes.set(xlabel="time since start (s)", ylabel="detour (us)", yscale="log")
    elif kind == "per_rank":
        for size, group in rows.groupby("bytes"):
            axes.plot(group["rank"], group["t_p50_ns"] / 1e3, marker="o", label=f"{int(size)} B")
        axes.set(xlabel="rank", ylabel="median one-way latency (us)", yscale="log")
    else:
        for (metric, rank, peer), group in rows.groupby(["metric", "rank", "peer"]):
            group = group.sort_values("bytes")
            if kind == "bandwidth":
                axes.plot(group["bytes"], group["bandwidth_Bps"] / 1e9, marker="o",
                          label=_series_label(rank, peer, metric))
            else:
                axes.plot(group["bytes"], group["t_p50_ns"] / 1e3, marker="o",
                          label=_series_label(rank, peer, metric))
        axes.set(xlabel="message size (B)", xscale="log", yscale="log",
                 ylabel="bandwidth (GB/s)" if kind == "bandwidth" else "median time per message (us)")
    axes.set_title(f"{run.pattern}: {run.meta.get('ranks')} ranks, {run.meta.get('nodes')} node(s)")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


def plot_fit(table: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Measured vs fitted ping-pong round trip, and the relative error."""
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=(2, 1))
    top.plot(table["bytes"], table["measured_ns"] / 1e3, "o-", label="measured")
    top.plot(table["bytes"], table["predicted_ns"] / 1e3, "s--", label="LogGP model")
    if "engine_ns" in table:
        top.plot(table["bytes"], table["engine_ns"] / 1e3, "x:", label="contend sim")
    top.set(xscale="log", yscale="log", ylabel="round trip (us)", title="ping-pong: measured vs fitted")
    top.legend()
    bottom.plot(table["bytes"], table["error_pct"], "o-")
    bottom.axhspan(-10, 10, alpha=0.15, color="green")
    bottom.set(xscale="log", xlabel="message size (B)", ylabel="error (%)")
    for axes in (top, bottom):
        axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)
