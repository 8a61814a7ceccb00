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

SOURCES = ("engine", "trace")
_PS_PER_NS = 1000.0
# What the analysis reads of each source; anything else is kept as is.
ENGINE_REQUIRED = ("src", "dst", "bytes", "tag", "send_op", "posted", "injected", "arrived", "received",
                   "matched", "completed")
TRACE_REQUIRED = ("src", "dst", "bytes", "tag", "kind", "posted", "completed", "call_site")
TRACE_TIMES = ("posted", "completed", "waited", "arrived", "received")
_STRINGS = ("kind", "call_site", "context")


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
    import pyarrow.parquet as pq

    name = os.fspath(path)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{name}: not a readable records file ({_first_line(exc)})") from None
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
    frame = _frame(table, source, name)
    num_ranks = _ranks(frame, metadata, source, name)
    return RecordsInput(frame=frame, source=source, metadata=metadata, num_ranks=num_ranks)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _frame(table, source: str, name: str):
    """The table as a DataFrame in float ns, after checking nulls, types and time order."""
    import pandas as pd
    import pyarrow as pa

    from contend.records import records_frame

    if source == "engine":
        return records_frame({column: table.column(column).to_numpy() for column in table.column_names})
    columns = {}
    for column in table.column_names:
        values = table.column(column)
        if values.null_count and column in TRACE_REQUIRED + ("context", "site_id"):
            raise UserError(f"{name}: column {column} has {values.null_count} missing value(s)")
        if column in _STRINGS:
            if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                    or pa.types.is_dictionary(values.type)):
                raise UserError(f"{name}: column {column} must hold strings, not {values.type}")
            columns[column] = values.to_pandas().to_numpy(dtype=object)
        elif column in TRACE_TIMES + ("src", "dst", "bytes", "tag", "site_id"):
            if not pa.types.is_integer(values.type):
                raise UserError(f"{name}: column {column} must hold integers, not {values.type}")
            array = values.to_numpy().astype(np.int64) if not values.null_count else \
                values.to_pandas().to_numpy()
            columns[column] = array / _PS_PER_NS if column in TRACE_TIMES else array
        else:
            columns[column] = values.to_pandas().to_numpy()
    frame = pd.DataFrame(columns)
    # MPI's names are accepted too: MPI_Isend, MPI_Get_c (large-count forms) -> isend, get
    frame["kind"] = frame["kind"].str.lower().str.removeprefix("mpi_").str.replace(r"_c$", "", regex=True)
    if "context" not in frame:
        frame["context"] = ""
    if "site_id" not in frame:
        frame["site_id"] = pd.factorize(frame["call_site"])[0].astype(np.int64)
    late = frame.index[frame["completed"] < frame["posted"]]
    if len(late):
        row = int(late[0])
        raise UserError(f"{name}: row {row}: completed ({frame['completed'][row]:.0f} ns) is before posted "
                        f"({frame['posted'][row]:.0f} ns); {len(late)} such row(s)")
    from contend.analysis.trace_ops import is_region

    # a collective region may name no peer (dst -1); every operation must
    negative = frame.index[(frame["bytes"] < 0) | (frame["src"] < 0)
                           | ((frame["dst"] < 0) & ~is_region(frame["kind"].to_numpy()))]
    if len(negative):
        raise UserError(f"{name}: row {int(negative[0])}: negative src, dst or bytes")
    return frame


def _ranks(frame, metadata: dict[str, Any], source: str, name: str) -> int:
    """``contend.ranks`` (required for traces), checked against the ranks the rows name."""
    seen = int(max(frame["src"].max(), frame["dst"].max()) + 1) if len(frame) else 0
    declared = metadata.get("ranks")
    workload = metadata.get("workload")
    if declared is None and isinstance(workload, dict) and "ranks" in workload:
        declared = workload["ranks"]  # engine records of a generated collective say it there
    if declared is None:
        if source == "trace":
            raise UserError(f"{name}: trace records lack the contend.ranks metadata (the number of ranks)")
        return seen
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 1:
        raise UserError(f"{name}: contend.ranks is {declared!r}; expected a positive integer")
    if seen > declared:
        raise UserError(f"{name}: records name rank {seen - 1} but the metadata says {declared} rank(s) "
                        "(mismatched rank counts)")
    return declared
