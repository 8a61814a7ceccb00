"""Reading and checking the records ``contend diagnose`` accepts (docs/formats.md, "Records"): engine
records (``contend sim --records``) and trace records (``contend trace``, OTF2 import), each checked
before any analysis so that a bad file gives one line naming the file and the problem."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from contend.errors import UserError
from contend.machine.quantities import MAX_I64
from contend.simulation.records import DELAY_COLUMNS, ID_COLUMNS, PROTOCOLS, TIME_COLUMNS
from contend.simulation.simulate import MAX_RANKS

SOURCES = ("engine", "trace")
_PS_PER_NS = 1000.0
# What the analysis reads of each source; anything else is kept as is.
ENGINE_REQUIRED = ("src", "dst", "bytes", "tag", "send_op", "posted", "injected", "arrived", "received",
                   "matched", "completed")
TRACE_REQUIRED = ("src", "dst", "bytes", "tag", "kind", "posted", "completed", "call_site")
# The engine's own split of the contention (its truth, compared with the diagnosis): all or none.
ENGINE_TRUTH = ("nic_queue", "target_queue", "link")
TRACE_TIMES = ("posted", "completed", "waited", "arrived", "received")
_STRINGS = ("kind", "call_site", "context")
# The integer columns of each source and the values each may hold (a collective region of a trace may
# name no peer: dst -1, checked per row in _frame). Checked on the Parquet column before any conversion,
# so that no value wraps around in int64 arithmetic or sizes an allocation (a rank index did both).
_INTEGERS = {
    "engine": ID_COLUMNS + TIME_COLUMNS + DELAY_COLUMNS,
    "trace": ("src", "dst", "bytes", "tag", "site_id") + TRACE_TIMES,
}
_RANGES = {"src": (0, MAX_RANKS - 1), "dst": (-1, MAX_RANKS - 1), "bytes": (0, MAX_I64),
           "protocol": (0, len(PROTOCOLS) - 1)}


@dataclass(frozen=True)
class RecordsInput:
    """A checked records file: ``frame`` in float ns, its ``source``, ``metadata`` (decoded JSON of the
    ``contend.*`` keys) and ``num_ranks``."""

    frame: Any
    source: str
    metadata: dict[str, Any]
    num_ranks: int


def load_records(path: str | os.PathLike) -> RecordsInput:
    """Read and check a records Parquet file of either source; UserError on anything malformed."""
    from contend.parquet import read_table

    name = os.fspath(path)
    table = read_table(path, "records file")
    raw = {key.decode(): value.decode() for key, value in (table.schema.metadata or {}).items()}
    if raw.get("contend.time_unit") != "ps":
        raise UserError(f"{name}: not a contend records file (no contend.time_unit = \"ps\" metadata)")
    metadata = {}
    for key, value in raw.items():
        if key.startswith("contend.") and key != "contend.time_unit":
            try:
                metadata[key.removeprefix("contend.")] = json.loads(value)
            except ValueError:
                if key == "contend.source":  # a bare word is fine for the source
                    metadata["source"] = value
                else:
                    raise UserError(f"{name}: metadata {key} is not JSON") from None
    source = metadata.get("source", "engine")
    if source not in SOURCES:
        raise UserError(f"{name}: contend.source is {source!r}; expected one of {', '.join(SOURCES)}")
    required = TRACE_REQUIRED if source == "trace" else ENGINE_REQUIRED
    missing = [column for column in required if column not in table.column_names]
    if missing:
        raise UserError(f"{name}: {source} records lack column(s) {', '.join(missing)}")
    truth = [column for column in ENGINE_TRUTH if column in table.column_names]
    if source == "engine" and truth and len(truth) < len(ENGINE_TRUTH):
        absent = [column for column in ENGINE_TRUTH if column not in truth]
        raise UserError(f"{name}: engine records have {', '.join(truth)} but lack {', '.join(absent)} "
                        f"(the engine's split of the delay comes whole)")
    _check_integers(table, source, name)
    num_ranks = _ranks(table, metadata, source, name)
    frame = _frame(table, source, name)
    return RecordsInput(frame=frame, source=source, metadata=metadata, num_ranks=num_ranks)


def _check_integers(table, source: str, name: str) -> None:
    """Every integer column of ``source`` present: integers, no nulls, within int64 and its range."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column in _INTEGERS[source]:
        if column not in table.column_names:
            continue
        values = table.column(column)
        if not pa.types.is_integer(values.type):
            raise UserError(f"{name}: column {column} must hold integers, not {values.type}")
        if values.null_count:
            raise UserError(f"{name}: column {column} has {values.null_count} missing value(s)")
        if len(values) == 0:
            continue
        low, high = _RANGES.get(column, (-MAX_I64 - 1, MAX_I64))
        extremes = pc.min_max(values)
        smallest, largest = extremes["min"].as_py(), extremes["max"].as_py()
        if smallest < low or largest > high:
            bad = smallest if smallest < low else largest
            raise UserError(f"{name}: column {column} holds {bad}; expected {low} <= value <= {high}")


def _frame(table, source: str, name: str):
    """The checked table as a DataFrame in float ns, after checking strings, time order and signs."""
    import pandas as pd
    import pyarrow as pa

    from contend.simulation.records import records_frame

    integers = {column: table.column(column).to_numpy().astype(np.int64)
                for column in _INTEGERS[source] if column in table.column_names}
    if source == "engine":
        frame = records_frame({column: integers.get(column, table.column(column).to_numpy())
                               for column in table.column_names})
        return _check_rows(frame, name)
    columns = {}
    for column in table.column_names:
        values = table.column(column)
        if column in _STRINGS:
            if values.null_count:
                raise UserError(f"{name}: column {column} has {values.null_count} missing value(s)")
            if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                    or pa.types.is_dictionary(values.type)):
                raise UserError(f"{name}: column {column} must hold strings, not {values.type}")
            columns[column] = values.to_pandas().to_numpy(dtype=object)
        elif column in integers:
            columns[column] = integers[column] / _PS_PER_NS if column in TRACE_TIMES else integers[column]
        else:
            columns[column] = values.to_pandas().to_numpy()
    frame = pd.DataFrame(columns)
    # MPI's names are accepted too: MPI_Isend, MPI_Get_c (large-count forms) -> isend, get
    frame["kind"] = frame["kind"].str.lower().str.removeprefix("mpi_").str.replace(r"_c$", "", regex=True)
    if "context" not in frame:
        frame["context"] = ""
    if "site_id" not in frame:
        frame["site_id"] = pd.factorize(frame["call_site"])[0].astype(np.int64)
    return _check_rows(frame, name)


def _check_rows(frame, name: str):
    """Time order, and a peer for every operation but a trace's collective regions (dst -1)."""
    late = frame.index[frame["completed"] < frame["posted"]]
    if len(late):
        row = int(late[0])
        raise UserError(f"{name}: row {row}: completed ({frame['completed'][row]:.0f} ns) is before posted "
                        f"({frame['posted'][row]:.0f} ns); {len(late)} such row(s)")
    from contend.analysis.trace_ops import is_region

    regions = is_region(frame["kind"].to_numpy()) if "kind" in frame else np.zeros(len(frame), dtype=bool)
    negative = frame.index[(frame["dst"] < 0) & ~regions]
    if len(negative):
        row = int(negative[0])
        kind = frame["kind"][row] if "kind" in frame else "message"
        raise UserError(f"{name}: row {row}: dst {frame['dst'][row]} for a {kind}; only a collective region "
                        "may name no peer")
    return frame


def _ranks(table, metadata: dict[str, Any], source: str, name: str) -> int:
    """``contend.ranks`` (required for traces), checked against the ranks the rows name. The rows'
    ranks are already within [0, MAX_RANKS) (``_check_integers``), so ``seen`` cannot overflow."""
    import pyarrow.compute as pc

    seen = max(pc.max(table.column("src")).as_py(), pc.max(table.column("dst")).as_py()) + 1 \
        if table.num_rows else 0
    declared = metadata.get("ranks")
    workload = metadata.get("workload")
    if declared is None and isinstance(workload, dict) and "ranks" in workload:
        declared = workload["ranks"]  # engine records of a generated collective say it there
    if declared is None:
        if source == "trace":
            raise UserError(f"{name}: trace records lack the contend.ranks metadata (the number of ranks)")
        return seen
    if isinstance(declared, bool) or not isinstance(declared, int) or not 1 <= declared <= MAX_RANKS:
        raise UserError(f"{name}: contend.ranks is {declared!r}; expected an integer in [1, {MAX_RANKS}]")
    if seen > declared:
        raise UserError(f"{name}: records name rank {seen - 1} but the metadata says {declared} rank(s) "
                        "(mismatched rank counts)")
    return declared
