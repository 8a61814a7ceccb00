"""PNG plots of benchmark runs and fits (matplotlib, no display needed)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: works without a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from contend.native.bench.registry import benchmark  # noqa: E402
from contend.native.bench.results import RunResult  # noqa: E402
from contend.native.bench.tables import size_text  # noqa: E402
from contend.report.plots import save_figure  # noqa: E402


def _series_label(rank: int, peer: int, metric: str) -> str:
    return f"{metric} {rank}->{peer}" if peer >= 0 else f"{metric} rank {rank}"


def _sweep_label(size: int, other: str, value: int, others: int) -> str:
    return f"{size_text(size)}" + (f", {other} {value}" if others > 1 else "")


def plot_nic(run: RunResult, path: str | os.PathLike) -> Path:
    """Figure 1 of Luo et al. 2012 or 2 from a nicrate or outstanding run: node injection throughput (top) and
    message rate (bottom) against active cores or messages in flight per core, one line per size."""
    from contend.native.bench.nic import node_points

    kind = benchmark(run.pattern).plot
    x, other, other_name = (("active", "window", "W") if kind == "concurrency" else ("window", "active", "active"))
    points = node_points(run.results)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    for (size, fixed), group in points.groupby(["bytes", other]):
        group = group.sort_values(x)
        label = _sweep_label(size, other_name, int(fixed), points[other].nunique())
        top.plot(group[x], group["throughput_Bps"] / 1e6, marker="o", label=label)
        bottom.plot(group[x], group["msg_rate"], marker="o", label=label)
    top.set(ylabel="node throughput (MB/s)", yscale="log")
    bottom.set(ylabel="node messages/s", yscale="log",
               xlabel="active cores per node" if kind == "concurrency" else "outstanding messages per core")
    if kind == "outstanding":
        bottom.set_xscale("log", base=2)
    meta = run.meta
    one_host = "one_host" in run.results and bool(run.results["one_host"].any())
    nodes = "2 halves of one host" if one_host else f"{meta.get('nodes')} nodes"
    where = "fabric" if meta.get("fabric") else "shared memory"
    top.set_title(f"{run.pattern}: {meta.get('ranks')} ranks on {nodes}, {where}"
                  f"{', throttled' if meta.get('throttle') else ''}")
    for axes in (top, bottom):
        axes.grid(True, which="both", alpha=0.3)
    top.legend(fontsize="small", title="message size")
    save_figure(figure, path, dpi=110)
    return Path(path)


def plot_run(run: RunResult, path: str | os.PathLike) -> Path:
    """Latency or bandwidth against size (one line per rank pair), latency per rank, detours, the NIC
    sweeps (plot_nic), or updates/s against outstanding updates."""
    kind = benchmark(run.pattern).plot
    if kind in ("concurrency", "outstanding"):
        return plot_nic(run, path)
    rows = run.results
    figure, axes = plt.subplots(figsize=(7, 4.5))
    if kind == "updates":
        for size, group in rows.groupby("bytes"):
            total = group.groupby("window")["msg_rate"].sum()
            axes.plot(total.index, total.values, marker="o", label=size_text(size))
        axes.set(xlabel="outstanding updates per rank", ylabel="updates/s, all ranks", yscale="log")
        axes.set_xscale("log", base=2)
    elif kind == "noise":
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
            if kind in ("bandwidth", "alltoall"):
                axes.plot(group["bytes"], group["bandwidth_Bps"] / 1e9, marker="o",
                          label=_series_label(rank, peer, metric))
            else:
                axes.plot(group["bytes"], group["t_p50_ns"] / 1e3, marker="o",
                          label=_series_label(rank, peer, metric))
        axes.set(xlabel="message size (B)", xscale="log", yscale="log",
                 ylabel="bandwidth (GB/s)" if kind in ("bandwidth", "alltoall") else "median time per message (us)")
    axes.set_title(f"{run.pattern}: {run.meta.get('ranks')} ranks, {run.meta.get('nodes')} node(s)")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    axes.grid(True, which="both", alpha=0.3)
    save_figure(figure, path, dpi=110)
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
    save_figure(figure, path, dpi=110)
    return Path(path)
