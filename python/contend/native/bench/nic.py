"""The NIC sweeps (patterns ``nicrate`` and ``outstanding``, Figures 1 and 2 of Luo et al. 2012) as one tidy table.

``sweep_table`` is what ``contend tune`` derives throttling thresholds from, whether the sweep was
measured (here, ``source = "real"``) or simulated. Its columns, in this order (docs/formats.md):

- ``source``: ``"real"`` for sweeps measured by contend-bench
- ``experiment``: ``"concurrency"`` (nicrate: active cores swept) or ``"outstanding"`` (outstanding: messages
  in flight per core swept)
- ``size``: bytes per message
- ``active_cores``: ranks per node injecting at once
- ``outstanding``: messages in flight per active rank (the window)
- ``throughput_Bps``: a node's injection throughput in bytes/s (median round; mean over the nodes; the median
  over repeated runs)
- ``msg_rate``: a node's messages per second, the same way

>>> rows = pd.DataFrame({"pattern": ["nicrate"] * 4, "metric": ["send"] * 4, "bytes": [8] * 4,
...                      "active": [1, 1, 2, 2], "window": [1] * 4, "logical_node": [0, 1, 0, 1],
...                      "bandwidth_Bps": [8e6, 6e6, 4e6, 4e6], "msg_rate": [1e6, 0.75e6, 0.5e6, 0.5e6]})
>>> sweep_table(rows)[["experiment", "active_cores", "throughput_Bps"]].to_dict("records")
[{'experiment': 'concurrency', 'active_cores': 1, 'throughput_Bps': 7000000.0}, \
{'experiment': 'concurrency', 'active_cores': 2, 'throughput_Bps': 4000000.0}]
"""

from __future__ import annotations

from typing import Iterable, Union

import pandas as pd

from contend.native.bench.results import RunResult
from contend.errors import UserError

EXPERIMENTS = {"nicrate": "concurrency", "outstanding": "outstanding"}
SWEEP_COLUMNS = ("source", "experiment", "size", "active_cores", "outstanding", "throughput_Bps", "msg_rate")
POINT = ["bytes", "active", "window"]  # what identifies a point of a sweep in the result rows

Results = Union[RunResult, pd.DataFrame]


def node_points(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per point of one run (bytes, active, window): the nodes' mean throughput and message rate,
    the slowest and fastest node, and the per-rank spread (fastest / slowest active rank's throughput)."""
    grouped = rows.groupby(POINT, sort=True)
    points = grouped.agg(throughput_Bps=("bandwidth_Bps", "mean"), msg_rate=("msg_rate", "mean"),
                         node_min_Bps=("bandwidth_Bps", "min"), node_max_Bps=("bandwidth_Bps", "max"))
    if {"rank_min_Bps", "rank_max_Bps"} <= set(rows.columns):
        slowest = grouped["rank_min_Bps"].min()
        points["rank_spread"] = (grouped["rank_max_Bps"].max() / slowest).where(slowest > 0)
    return points.reset_index()


def _frames(results: Results | Iterable[Results]) -> list[pd.DataFrame]:
    if isinstance(results, (RunResult, pd.DataFrame)):
        results = [results]
    return [r.results if isinstance(r, RunResult) else r for r in results]


def sweep_table(results: Results | Iterable[Results]) -> pd.DataFrame:
    """The tidy sweep table (columns ``SWEEP_COLUMNS``) of nicrate and outstanding runs: a RunResult, its
    results DataFrame, or several of either (repeated runs are combined by the median of each point).
    Rows of other patterns are ignored; a UserError when nothing is left or one experiment mixes modes."""
    per_run = []
    for number, rows in enumerate(_frames(results)):
        rows = rows[rows["pattern"].isin(list(EXPERIMENTS))] if "pattern" in rows else rows.iloc[:0]
        for pattern, part in rows.groupby("pattern"):
            points = node_points(part)
            points["experiment"], points["run"] = EXPERIMENTS[pattern], number
            points["mode"] = part["metric"].iloc[0] if part["metric"].nunique() == 1 else None
            per_run.append(points)
    if not per_run:
        raise UserError("no nicrate or outstanding results to make a sweep table from")
    points = pd.concat(per_run, ignore_index=True)
    for experiment, part in points.groupby("experiment"):
        if part["mode"].isna().any() or part["mode"].nunique() > 1:
            raise UserError(f"the {experiment} runs mix --mode send and put: pass one mode's runs")
    table = (points.groupby(["experiment"] + POINT, sort=True)[["throughput_Bps", "msg_rate"]].median()
             .reset_index()
             .rename(columns={"bytes": "size", "active": "active_cores", "window": "outstanding"}))
    table["source"] = "real"
    for column in ("size", "active_cores", "outstanding"):
        table[column] = table[column].astype("int64")
    return table[list(SWEEP_COLUMNS)]
