"""Rich tables of benchmark runs and fits, in the units people read: us, KiB, GB/s."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.console import Group

from contend.report.terminal import Table

from contend.native.bench.registry import benchmark
from contend.native.bench.results import RunResult


def size_text(n: float) -> str:
    """A byte count for a table.

    >>> size_text(8), size_text(65536), size_text(1048576), size_text(8191)
    ('8 B', '64 KiB', '1 MiB', '8191 B')
    """
    n = int(n)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def sizes_text(sizes) -> str:
    """A list of sizes, short when it is a geometric series, each written as ``--sizes`` takes it (no space
    between number and unit, so a wrapped table cell never parts them).

    >>> sizes_text([1, 4, 16, 64]), sizes_text([8, 1024]), sizes_text([0])
    ('1B..64B (x4)', '8B, 1KiB', '-')
    """
    sizes = [int(s) for s in sizes]
    if sizes == [0]:
        return "-"
    ratios = {b / a for a, b in zip(sizes, sizes[1:]) if a > 0}
    if len(sizes) > 3 and len(ratios) == 1:
        return f"{_joined(sizes[0])}..{_joined(sizes[-1])} (x{int(ratios.pop())})"
    return ", ".join(_joined(s) for s in sizes)


def _joined(n: float) -> str:
    return size_text(n).replace(" ", "")


def us(ns: float) -> str:
    return f"{ns / 1000:.3f}"


def rate_text(bytes_per_s: float) -> str:
    """Bandwidth in the unit that fits: GB/s, MB/s or kB/s (decimal, like links)."""
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.2f} {unit}"
    return f"{bytes_per_s / 1e3:.2f} kB/s"


def count_text(x: float) -> str:
    """A rate with k/M suffix.

    >>> count_text(527000), count_text(803), count_text(2.5e6)
    ('527k', '803', '2.50M')
    """
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def _nic_rows(table: Table, rows: pd.DataFrame) -> Table:
    """nicrate / outstanding: one row per point, the nodes' mean throughput, their range, the rank spread."""
    from contend.native.bench.nic import node_points

    for column in ("size", "active", "in flight", "node rate", "slowest node", "node msg/s", "rank spread"):
        table.add_column(column, justify="right")
    for _, p in node_points(rows).iterrows():
        spread = p.get("rank_spread")
        table.add_row(size_text(p["bytes"]), str(int(p["active"])), str(int(p["window"])),
                      rate_text(p["throughput_Bps"]), rate_text(p["node_min_Bps"]),
                      count_text(p["msg_rate"]), "-" if pd.isna(spread) else f"x{spread:.2f}")
    return table


def _update_rows(table: Table, rows: pd.DataFrame) -> Table:
    """randomaccess: one row per point, the ranks' updates/s added up, the slowest and fastest rank, and the
    table words that verification found wrong."""
    for column in ("size", "in flight", "updates/s", "slowest rank", "fastest rank", "p50 us", "wrong words"):
        table.add_column(column, justify="right")
    for (size, window), group in rows.groupby(["bytes", "window"]):
        table.add_row(size_text(size), str(int(window)), count_text(group["msg_rate"].sum()),
                      count_text(group["msg_rate"].min()), count_text(group["msg_rate"].max()),
                      us(group["t_p50_ns"].median()), str(int(group["errors"].sum())))
    return table


def _alltoall_rows(table: Table, rows: pd.DataFrame) -> Table:
    """All-to-all: per size, the slowest and fastest rank's median exchange (us), the ranks' effective
    bandwidth added up and the slowest rank's."""
    for column in ("size", "ranks", "slowest us", "fastest us", "bandwidth", "slowest rank"):
        table.add_column(column, justify="right")
    for size, group in rows.groupby("bytes"):
        table.add_row(size_text(size), str(len(group)), us(group["alltoall_ns"].max()),
                      us(group["alltoall_ns"].min()), rate_text(group["bandwidth_Bps"].sum()),
                      rate_text(group["bandwidth_Bps"].min()))
    return table


def results_table(run: RunResult) -> Table:
    """One row per result, columns chosen for the benchmark's kind."""
    kind = benchmark(run.pattern).plot if run.pattern else "latency"
    meta = run.meta
    where = f"{meta.get('fabric', {}).get('topology', '')} fabric" if meta.get("fabric") else "shared memory"
    library = " ".join(str(meta.get("mpi_library", "")).split())
    throttled = f", throttle {meta['throttle'].get('CONTEND_THROTTLE_POLICY')}" if meta.get("throttle") else ""
    table = Table(title=f"{run.pattern}: {meta.get('ranks')} ranks on {meta.get('nodes')} node(s), {where}, "
                        f"{library}{throttled}, load {meta.get('loadavg_1min', '?')}")
    rows = run.results
    if kind in ("concurrency", "outstanding"):
        return _nic_rows(table, rows)
    if kind == "updates":
        return _update_rows(table, rows)
    if kind == "alltoall" and "alltoall_ns" in rows:
        return _alltoall_rows(table, rows)
    if kind == "noise":
        for column in ("rank", "host", "resolution ns", "detours", "overhead %", "median detour us",
                       "max detour us"):
            table.add_column(column, justify="right")
        for _, r in rows.iterrows():
            table.add_row(str(r["rank"]), r["host"], f"{r['resolution_ns']:.0f}", f"{r['detours']:.0f}",
                          f"{r['overhead_pct']:.2f}", us(r["t_p50_ns"]), us(r["t_max_ns"]))
        return table
    show_metric, show_host = rows["metric"].nunique() > 1, rows["host"].nunique() > 1
    columns = ["size", "ranks"] + ["metric"] * show_metric + ["host"] * show_host
    for column in columns + ["p50 us", "min us", "p99 us", "bandwidth", "msg/s"]:
        table.add_column(column, justify="right")
    for _, r in rows.iterrows():
        pair = f"{r['rank']}->{r['peer']}" if r["peer"] >= 0 else str(r["rank"])
        cells = [size_text(r["bytes"]), pair] + [r["metric"]] * show_metric + [r["host"]] * show_host
        table.add_row(*cells, us(r["t_p50_ns"]), us(r["t_min_ns"]), us(r["t_p99_ns"]),
                      rate_text(r["bandwidth_Bps"]), count_text(r["msg_rate"]))
    return table


def fit_table(table: pd.DataFrame) -> Table:
    """Predicted vs measured ping-pong round trips."""
    out = Table(title="ping-pong round trip: measured vs the fitted model")
    has_engine = "engine_ns" in table
    for column in ["size", "regime", "measured us", "model us"] + (["engine us"] if has_engine else []) + ["error %"]:
        out.add_column(column, justify="right")
    for _, r in table.iterrows():
        error = f"{r['error_pct']:+.1f}"
        cells = [size_text(r["bytes"]), r["regime"], us(r["measured_ns"]), us(r["predicted_ns"])]
        cells += [us(r["engine_ns"])] if has_engine else []
        out.add_row(*cells, error if abs(r["error_pct"]) <= 10 else f"[bold red]{error}[/]")
    return out


def nimc_table(table: pd.DataFrame, period: float, on: float) -> Group:
    """``contend bench nimc``: one row per (source, rate) of ``contend.native.bench.nimc.slowdown_table``, in
    tables narrow enough for 80 columns: the bandwidths and the slowdown against the round's spin run;
    with bursts (``period`` > 0, ``on`` s each) the paired slowdown inside vs between them; the runs, the
    triad's CPU share, the load and the checks (with mitigations, also the slowdown per wall second)."""
    bursts = period > 0
    mitigated = "mitigation" in table and bool((table["mitigation"] != "none").any())
    keys = ["source", *(["mitigation"] if mitigated else []), "rate"]

    def narrow(title: str, columns: list[str]) -> Table:
        out = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in keys:
            out.add_column(name)
        for name in columns:
            out.add_column(name, justify="right", no_wrap=True)
        return out

    injected = "injected GB/s in bursts" if bursts else "injected GB/s"
    slowdown = narrow(f"contend bench nimc: triad GB/s per CPU second vs {injected}"
                      + (f" (bursts {on:g} s every {period:g} s)" if bursts else "")
                      + "; its slowdown vs the round's spin run, %",
                      ["injected", "triad", "vs spin %", "min..max %"])
    paired = narrow("the slowdown inside vs between bursts, same run, %", ["median", "min..max", "mean [95% CI]"])
    shown = [slowdown, paired] if bursts else [slowdown]
    runs = narrow("the runs: how many, the triad's share of its core, the load average, the checks",
                  ["runs", *(["per wall s %"] if mitigated else []), "CPU share", "load", "checked"])
    for row in table.to_dict(orient="records"):
        key = [row["source"], *([row["mitigation"]] if mitigated else []), row["rate_target"]]
        slowdown.add_row(*key, f"{row['injected_on_GBps'] if bursts else row['injected_GBps']:.2f}",
                         f"{row['triad_GBps']:.1f}", f"{row['slowdown_pct']:+.1f}",
                         f"{row['slowdown_min']:+.1f}..{row['slowdown_max']:+.1f}")
        if bursts:
            paired.add_row(*key, f"{row['paired_pct']:+.1f}", f"{row['paired_min']:+.1f}..{row['paired_max']:+.1f}",
                           f"{row['paired_mean']:+.1f} [{row['paired_ci_low']:+.1f}, {row['paired_ci_high']:+.1f}]")
        runs.add_row(*key, str(row["runs"]), *([f"{row['wall_slowdown_pct']:+.1f}"] if mitigated else []),
                     f"{row['cpu_share']:.2f}", f"{row['loadavg']:.2f}", "yes" if row["verified"] else "[bold red]NO[/]")
    return Group(*shown, runs)
