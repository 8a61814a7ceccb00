"""The output of one benchmark run: parsed from the harness's JSON lines, kept as pandas, stored as Parquet.

A run is four things (nimc runs add their triad samples and injected bytes, kept by ``contend.native.bench.nimc``;
nicrate and outstanding runs asked for it their rounds' times, for ``contend.experiments.throttle_agreement``): ``meta`` (library, ranks, nodes, host names, options; plus what the launcher adds,
such as the fabric), ``results`` (one row per measured quantity), ``tallies`` (bytes and messages each
rank really moved) and ``detours`` (noise runs only). One Parquet file holds the results as rows and
meta and tallies as file metadata; detours, when there are any, go to ``<name>.detours.parquet``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from contend.atomic import atomic_path, beside
from contend.errors import UserError
from contend.parquet import read_frame, read_table, to_frame

# Meta fields copied onto every result row, so a table of many runs still says where each row came from.
META_COLUMNS = ("mpi_library", "ranks", "nodes", "ranks_per_node", "loadavg_1min", "started")
_META_KEY = b"contend.meta"
_TALLIES_KEY = b"contend.tallies"


@dataclass
class RunResult:
    """One run of one benchmark."""

    meta: dict[str, Any]
    results: pd.DataFrame
    tallies: pd.DataFrame
    detours: pd.DataFrame = field(default_factory=pd.DataFrame)
    complete: bool = True  # the harness wrote its closing line
    intervals: pd.DataFrame = field(default_factory=pd.DataFrame)  # nimc: one row per triad sample
    injected: dict[str, Any] = field(default_factory=dict)  # nimc: the interferer's bytes per bin
    # nicrate, outstanding with round times: when each injecting rank started and ended each round
    rounds: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def pattern(self) -> str:
        return str(self.meta.get("pattern", ""))


def parse_lines(lines: Iterable[str], extra_meta: dict[str, Any] | None = None) -> RunResult:
    """Build a RunResult from the harness's stdout lines (blank lines ignored).

    >>> run = parse_lines([
    ...     '{"type":"meta","pattern":"pingpong","ranks":2,"nodes":1,"hosts":["a"],"node_of_rank":[0,0]}',
    ...     '{"type":"result","pattern":"pingpong","metric":"latency","bytes":8,"rank":0,"peer":1,"t_p50_ns":900}',
    ...     '{"type":"tally","rank":0,"node":0,"host":"a","bytes_sent":8,"bytes_received":8}',
    ...     '{"type":"end","elapsed_s":0.1}'])
    >>> int(run.results.loc[0, "t_p50_ns"]), run.results.loc[0, "host"], run.complete
    (900, 'a', True)
    """
    meta: dict[str, Any] = {}
    rows: dict[str, list[dict[str, Any]]] = {"result": [], "tally": [], "detour": [], "interval": [], "round": []}
    injected: dict[str, Any] = {}
    complete = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"harness output line {number} is not JSON ({exc}): {line[:80]!r}") from None
        kind = record.pop("type", None)
        if kind == "meta":
            meta = record
        elif kind in rows:
            rows[kind].append(record)
        elif kind == "injected":
            injected = record
        elif kind == "end":
            complete = True
            meta["elapsed_s"] = record.get("elapsed_s")
    meta.update(extra_meta or {})
    results = pd.DataFrame(rows["result"])
    if not results.empty:
        hosts, node_of_rank = meta.get("hosts", []), meta.get("node_of_rank", [])
        for key in META_COLUMNS:
            if key in meta:
                results[key] = meta[key]
        results["node"] = [node_of_rank[r] if r < len(node_of_rank) else -1 for r in results["rank"]]
        results["host"] = [hosts[n] if 0 <= n < len(hosts) else "" for n in results["node"]]
    return RunResult(
        meta=meta,
        results=results,
        tallies=pd.DataFrame(rows["tally"]),
        detours=pd.DataFrame(rows["detour"]),
        complete=complete,
        intervals=pd.DataFrame(rows["interval"]),
        injected=injected,
        rounds=pd.DataFrame(rows["round"]),
    )


def median_of_runs(runs: list[RunResult]) -> RunResult:
    """Several runs of one benchmark as one: per row key (metric, bytes, rank, peer) the median of each
    number over the runs; tallies added up. On a shared host the machine drifts between states over
    seconds; separate runs spread over that time, and their median is what a model should follow.
    """
    if len(runs) == 1:
        return runs[0]
    key = ["metric", "bytes", "rank", "peer"]
    rows = pd.concat([run.results for run in runs], ignore_index=True)
    numbers = [c for c in rows.columns if c not in key and pd.api.types.is_numeric_dtype(rows[c])]
    texts = [c for c in rows.columns if c not in key and c not in numbers]
    combined = rows.groupby(key, sort=False).agg({**{c: "median" for c in numbers}, **{c: "first" for c in texts}})
    tallies = pd.concat([run.tallies for run in runs]).groupby(["rank", "node", "host"], as_index=False).sum()
    meta = {**runs[0].meta, "runs": len(runs), "loadavg_1min": [run.meta.get("loadavg_1min") for run in runs]}
    return RunResult(meta=meta, results=combined.reset_index()[rows.columns], tallies=tallies,
                     complete=all(run.complete for run in runs))


def _detours_path(path: Path) -> Path | None:
    return beside(path, path.stem + ".detours.parquet")


def write_run(run: RunResult, path: str | os.PathLike) -> Path:
    """Store the run as Parquet at path (and its detours beside it), each file whole or not at all."""
    path = Path(path)
    table = pa.Table.from_pandas(run.results, preserve_index=False)
    metadata = dict(table.schema.metadata or {})
    metadata[_META_KEY] = json.dumps(run.meta).encode()
    metadata[_TALLIES_KEY] = run.tallies.to_json(orient="records").encode()
    with atomic_path(path) as temporary:
        pq.write_table(table.replace_schema_metadata(metadata), temporary)
    detours_path = _detours_path(path)
    if not run.detours.empty and detours_path is not None:
        with atomic_path(detours_path) as temporary:
            pq.write_table(pa.Table.from_pandas(run.detours, preserve_index=False), temporary)
    return path


# What every stored run has (docs/formats.md, "Benchmark results"); the tables read more per pattern.
_KEY_COLUMNS = ("pattern", "metric", "bytes", "rank", "peer")


def read_run(path: str | os.PathLike) -> RunResult:
    """Load a run stored by write_run; a UserError naming the file when it is Parquet but not a run."""
    from contend.native.bench.registry import benchmark

    path = Path(path)
    table = read_table(path, "contend bench result")
    metadata = table.schema.metadata or {}
    if _META_KEY not in metadata:
        raise UserError(f"{path}: not a contend bench result (no contend.meta metadata)")
    try:
        meta = json.loads(metadata[_META_KEY])
        tallies = json.loads(metadata.get(_TALLIES_KEY, b"[]"))
    except ValueError:
        raise UserError(f"{path}: not a contend bench result (its contend.meta or contend.tallies is not JSON)") from None
    if not isinstance(meta, dict) or not isinstance(tallies, list) or not all(isinstance(t, dict) for t in tallies):
        raise UserError(f"{path}: not a contend bench result (contend.meta must be an object, contend.tallies a "
                        "list of objects)")
    try:
        benchmark(str(meta.get("pattern")))
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
    missing = [column for column in _KEY_COLUMNS if column not in table.column_names]
    if missing:
        raise UserError(f"{path}: not a contend bench result (no column(s) {', '.join(missing)})")
    try:  # a string column with bytes that are not UTF-8 would fail only later, inside pandas
        table.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise UserError(f"{path}: damaged column data ({str(exc).splitlines()[0]})") from None
    results = to_frame(table, path, "contend bench result")
    _check_measurements(path, results)
    tallies = pd.DataFrame(tallies)
    detours_file = _detours_path(path)
    detours = read_frame(detours_file, "detours file") if detours_file and detours_file.is_file() else pd.DataFrame()
    return RunResult(meta=meta, results=results, tallies=tallies, detours=detours)


# What a 64-bit nanosecond clock can measure: a time below 2^63 ns, a rate of at most 2^63 per ns (bytes
# or messages). Bounds, not plausibility: a number beyond them was not measured (and would overflow the
# plots' log axes).
_CLOCK_NS = 2.0**63
_MEASURED = {"bandwidth_Bps": _CLOCK_NS * 1e9, "msg_rate": _CLOCK_NS * 1e9, "rank_min_Bps": _CLOCK_NS * 1e9,
             "rank_max_Bps": _CLOCK_NS * 1e9}


def _check_measurements(path: Path, results: pd.DataFrame) -> None:
    """Every measured number of the rows is absent (NaN: the row does not measure it) or in [0, bound)."""
    for column in results.columns:
        name = str(column)  # damaged pandas metadata can give columns names that are not strings
        time = (name.startswith("t_") and name.endswith("_ns")) or name == "alltoall_ns"
        bound = _CLOCK_NS if time else _MEASURED.get(name)
        if bound is None or not pd.api.types.is_numeric_dtype(results[column]):
            continue
        values = results[column].astype(float)
        bad = values.notna() & ~((values >= 0) & (values < bound))
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            what = "a time (0 to 2^63 ns)" if time else f"a rate (0 to {bound:.3g} per second)"
            raise UserError(f"{path}: row {row + 1}: {name} is {float(values.iloc[row])!r}, not {what} "
                            "measured with a 64-bit nanosecond clock")
