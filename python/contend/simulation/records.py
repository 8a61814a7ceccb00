"""Per-message records and CPU timelines: pandas views and the Parquet file of ``contend sim --records``.

One record per message (records are the contract between simulation and analysis; docs/formats.md, "Records"):

- who and what: ``src``, ``dst``, ``bytes``, ``tag``, ``send_op``, ``recv_op`` (op index in the sender's /
  receiver's program), ``protocol`` (0 eager, 1 rendezvous);
- when: ``posted`` (send ready), ``injected`` (send started), ``arrived`` (at the destination),
  ``received`` (arrival processed), ``matched`` (with a receive), ``completed`` (data available);
- why: the delay split ``ideal + nic_queue + link + target_queue + late_receiver + noise``, which sums
  exactly to ``completed - posted``.

The Parquet file keeps the engine's exact integer picoseconds (schema metadata ``contend.time_unit =
"ps"``); the DataFrames of ``SimulationResult.records`` and ``read_records`` are in float ns.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

import numpy as np

from contend.atomic import atomic_path
from contend.errors import UserError

ID_COLUMNS = ("src", "dst", "bytes", "tag", "send_op", "recv_op", "protocol")
TIME_COLUMNS = ("posted", "injected", "arrived", "received", "matched", "completed")
DELAY_COLUMNS = ("ideal", "nic_queue", "link", "target_queue", "late_receiver", "noise")
RECORD_COLUMNS = ID_COLUMNS + TIME_COLUMNS + DELAY_COLUMNS
PROTOCOLS = ("eager", "rendezvous")

TIMELINE_COLUMNS = ("rank", "cpu", "kind", "start", "end")
TIMELINE_KINDS = ("calc", "send", "recv")  # kind 0: calc, 1: send overhead, 2: receive overhead

_PS_PER_NS = 1000.0


def _ordered(columns: Mapping[str, np.ndarray], canonical: tuple[str, ...]) -> list[str]:
    """Canonical columns first, then any the engine adds later, in its order."""
    return [c for c in canonical if c in columns] + [c for c in columns if c not in canonical]


def records_frame(columns: Mapping[str, np.ndarray]):
    """Engine record columns (integer ps) as a DataFrame: times and delays in float ns,
    ``protocol`` as a categorical ("eager" / "rendezvous")."""
    import pandas as pd  # imported on use: the CLI starts faster without it

    frame = {}
    for name in _ordered(columns, RECORD_COLUMNS):
        values = np.asarray(columns[name])
        if name in TIME_COLUMNS or name in DELAY_COLUMNS:
            frame[name] = values / _PS_PER_NS
        elif name == "protocol":
            frame[name] = pd.Categorical.from_codes(values.astype(np.int8), categories=list(PROTOCOLS))
        else:
            frame[name] = values
    return pd.DataFrame(frame)


def timeline_frame(columns: Mapping[str, np.ndarray]):
    """Engine timeline columns as a DataFrame: start/end in float ns, ``kind`` as calc / send / recv."""
    import pandas as pd

    frame = {}
    for name in _ordered(columns, TIMELINE_COLUMNS):
        values = np.asarray(columns[name])
        if name in ("start", "end"):
            frame[name] = values / _PS_PER_NS
        elif name == "kind":
            frame[name] = pd.Categorical.from_codes(values.astype(np.int8), categories=list(TIMELINE_KINDS))
        else:
            frame[name] = values
    return pd.DataFrame(frame)


def write_records_parquet(
    columns: Mapping[str, np.ndarray], path: str | os.PathLike, metadata: Mapping[str, Any]
) -> None:
    """Write engine record columns (exact integer ps) to Parquet, atomically.

    ``metadata`` (parameters, workload) is stored as JSON in the schema metadata under ``contend.*``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _ordered(columns, RECORD_COLUMNS)
    table = pa.table({name: np.asarray(columns[name]) for name in names})
    schema_metadata = {
        "contend.time_unit": "ps",
        "contend.protocol": json.dumps(list(PROTOCOLS)),
        **{f"contend.{key}": json.dumps(value) for key, value in metadata.items()},
    }
    table = table.replace_schema_metadata(schema_metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)


def read_records_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The ``contend.*`` metadata of a records file (``params``, ``workload``), decoded from JSON."""
    from contend.parquet import read_schema

    raw = read_schema(path, "records file").metadata or {}
    metadata = {}
    for key, value in raw.items():
        name = key.decode()
        if name.startswith("contend.") and name != "contend.time_unit":
            try:
                metadata[name.removeprefix("contend.")] = json.loads(value)
            except ValueError:
                raise UserError(f"{os.fspath(path)}: metadata {name} is not JSON") from None
    return metadata


def read_records(path: str | os.PathLike):
    """Read a records Parquet file written by ``contend sim --records`` as a DataFrame in float ns."""
    from contend.parquet import read_table

    table = read_table(path, "records file")
    unit = (table.schema.metadata or {}).get(b"contend.time_unit", b"").decode()
    if unit != "ps":
        raise UserError(f"{os.fspath(path)}: not a contend records file (no contend.time_unit metadata)")
    return records_frame({name: table.column(name).to_numpy() for name in table.column_names})
