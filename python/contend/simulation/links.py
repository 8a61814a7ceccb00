"""Per-link statistics of a simulation over a network: the links table and its Parquet file.

The engine counts, per directed link, the bytes it carried, the time it had at least one flow
(``busy``, integer ps) and the largest number of flows it carried at once. ``links_frame`` joins them
with the link's class and ends (``contend.simulation.layout``) into one row per link:

``link`` (id), ``class`` (injection / ejection / local / global), ``from``, ``to`` ("node 3",
"router 12"), ``bytes``, ``busy_ns``, ``peak_flows``, ``utilisation`` (busy time / makespan).

``contend sim --links FILE.parquet`` writes the same columns; the schema metadata holds the run's
parameters, workload and makespan as JSON under ``contend.*``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

import numpy as np

from contend.atomic import atomic_path
from contend.simulation.layout import LINK_CLASSES, NetworkLayout

LINK_COLUMNS = ("link", "class", "from", "to", "bytes", "busy_ns", "peak_flows", "utilisation")
# The engine's column names and where their dtypes are in the result's ``dtypes``.
ENGINE_DTYPE_KEYS = {"bytes": "link_bytes", "busy": "link_busy", "peak_flows": "link_peak_flows"}

_PS_PER_NS = 1000.0


def engine_link_columns(raw: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """The ``links`` buffers of an engine result as numpy arrays (bytes, busy in ps, peak_flows)."""
    buffers = raw.get("links")
    if buffers is None:
        return None
    dtypes = raw["dtypes"]
    return {name: np.frombuffer(buffers[name], dtype=dtypes[key]) for name, key in ENGINE_DTYPE_KEYS.items()}


def links_frame(columns: Mapping[str, np.ndarray], layout: NetworkLayout, makespan_ns: float):
    """One row per link, in link id order (see the module docstring for the columns)."""
    import pandas as pd  # imported on use: the CLI starts faster without it

    busy_ns = np.asarray(columns["busy"]) / _PS_PER_NS
    starts, ends = layout.endpoint_names()
    return pd.DataFrame({
        "link": np.arange(layout.num_links, dtype=np.uint32),
        "class": pd.Categorical.from_codes(layout.link_class.astype(np.int8), categories=list(LINK_CLASSES)),
        "from": starts,
        "to": ends,
        "bytes": np.asarray(columns["bytes"]),
        "busy_ns": busy_ns,
        "peak_flows": np.asarray(columns["peak_flows"]),
        "utilisation": busy_ns / makespan_ns if makespan_ns > 0 else np.zeros_like(busy_ns),
    })


def busiest_link(columns: Mapping[str, np.ndarray], layout: NetworkLayout, makespan_ns: float) -> dict[str, Any] | None:
    """The link that carried the most bytes (ties: the lowest id) as plain values, in the columns of
    ``links_frame``; None when no link carried anything. Reads one link, not the whole table."""
    carried = np.asarray(columns["bytes"])
    if carried.size == 0 or int(carried.max()) == 0:
        return None
    link = int(np.argmax(carried))
    busy_ns = int(columns["busy"][link]) / _PS_PER_NS
    return {
        "link": link,
        "class": LINK_CLASSES[int(layout.link_class[link])],
        "from": layout.endpoint_name(link, "from"),
        "to": layout.endpoint_name(link, "to"),
        "bytes": int(carried[link]),
        "busy_ns": busy_ns,
        "peak_flows": int(columns["peak_flows"][link]),
        "utilisation": busy_ns / makespan_ns if makespan_ns > 0 else 0.0,
    }


def write_links_parquet(frame, path: str | os.PathLike, metadata: Mapping[str, Any]) -> None:
    """Write the links table to Parquet atomically; ``metadata`` goes to the schema as JSON."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_metadata = dict(table.schema.metadata or {})
    schema_metadata.update({f"contend.{key}".encode(): json.dumps(value).encode() for key, value in metadata.items()})
    table = table.replace_schema_metadata(schema_metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)
