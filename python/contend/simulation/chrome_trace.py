"""Timelines as Chrome trace event JSON, the format Perfetto (ui.perfetto.dev) and chrome://tracing open.

Layout: one process per rank ("rank 3"), one thread per CPU ("cpu 0"); a complete ("X") event for every
calc, send overhead and receive overhead; a flow arrow per message from the sender's send overhead to
the receiver's receive overhead, carrying src, dst, bytes, tag and protocol. Timestamps are in
microseconds as the format requires (fractions keep the engine's picoseconds).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from contend.atomic import atomic_path
from contend.simulation.records import PROTOCOLS, TIMELINE_KINDS

_PS_PER_US = 1e6
_CHUNK = 10_000  # events per encoder call
_SLICE_NAMES = {"calc": "calc", "send": "send overhead", "recv": "receive overhead"}


def write_chrome_trace(
    timeline: Mapping[str, np.ndarray],
    records: Mapping[str, np.ndarray] | None,
    path: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
) -> int:
    """Write the trace atomically; returns the number of trace events written.

    ``timeline`` and ``records`` are the engine's integer-ps columns; without records no flows are drawn.
    """
    encoder = json.JSONEncoder(separators=(",", ":"))
    count = 0
    with atomic_path(path) as temporary, open(temporary, "w", encoding="utf-8") as out:
        out.write('{"displayTimeUnit": "ns", "otherData": ')
        out.write(json.dumps(dict(metadata or {})))
        out.write(', "traceEvents": [\n')
        for chunk in _chunks(_events(timeline, records), _CHUNK):
            # One encode call per chunk keeps the work in the C encoder; strip the list's brackets.
            out.write((",\n" if count else "") + encoder.encode(chunk)[1:-1].replace("},{", "},\n{"))
            count += len(chunk)
        out.write("\n]}\n")
    return count


def _chunks(events: Iterator[dict], size: int) -> Iterator[list[dict]]:
    chunk = []
    for event in events:
        chunk.append(event)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _events(timeline: Mapping[str, np.ndarray], records: Mapping[str, np.ndarray] | None) -> Iterator[dict]:
    slices = pd.DataFrame({name: np.asarray(timeline[name]) for name in ("rank", "cpu", "kind", "start", "end")})
    yield from _names(slices)
    for rank, cpu, kind, start, end in slices.itertuples(index=False):
        yield {
            "ph": "X", "cat": "cpu", "name": _SLICE_NAMES[TIMELINE_KINDS[kind]],
            "pid": int(rank), "tid": int(cpu), "ts": start / _PS_PER_US, "dur": (end - start) / _PS_PER_US,
        }
    if records is not None and len(records.get("src", ())):
        yield from _flows(slices, records)


def _names(slices: pd.DataFrame) -> Iterator[dict]:
    """Metadata events naming and ordering the processes (ranks) and threads (CPUs)."""
    for rank in np.unique(slices["rank"]):
        yield {"ph": "M", "name": "process_name", "pid": int(rank), "args": {"name": f"rank {rank}"}}
        yield {"ph": "M", "name": "process_sort_index", "pid": int(rank), "args": {"sort_index": int(rank)}}
    for rank, cpu in slices[["rank", "cpu"]].drop_duplicates().itertuples(index=False):
        yield {"ph": "M", "name": "thread_name", "pid": int(rank), "tid": int(cpu), "args": {"name": f"cpu {cpu}"}}


def _flows(slices: pd.DataFrame, records: Mapping[str, np.ndarray]) -> Iterator[dict]:
    """One flow (start "s", finish "f") per message.

    A message's send overhead starts at ``injected`` on the sender and its receive overhead at
    ``received`` on the receiver; joining on (rank, start) finds the CPU each end is drawn on.
    """
    messages = pd.DataFrame({name: np.asarray(records[name]) for name in
                             ("src", "dst", "bytes", "tag", "protocol", "injected", "received")})
    sends = _cpu_by_start(slices, TIMELINE_KINDS.index("send")).rename(columns={"rank": "src", "start": "injected", "cpu": "send_cpu"})
    recvs = _cpu_by_start(slices, TIMELINE_KINDS.index("recv")).rename(columns={"rank": "dst", "start": "received", "cpu": "recv_cpu"})
    messages = messages.merge(sends, how="left", on=["src", "injected"])
    messages = messages.merge(recvs, how="left", on=["dst", "received"])
    for number, row in enumerate(messages.itertuples(index=False)):
        args = {"src": int(row.src), "dst": int(row.dst), "bytes": int(row.bytes), "tag": int(row.tag),
                "protocol": PROTOCOLS[row.protocol]}
        common = {"cat": "message", "name": f"{row.bytes}b tag {row.tag}", "id": number}
        yield {**common, "ph": "s", "pid": int(row.src), "tid": _cpu(row.send_cpu),
               "ts": row.injected / _PS_PER_US, "args": args}
        yield {**common, "ph": "f", "bp": "e", "pid": int(row.dst), "tid": _cpu(row.recv_cpu),
               "ts": row.received / _PS_PER_US}


def _cpu_by_start(slices: pd.DataFrame, kind: int) -> pd.DataFrame:
    chosen = slices[slices["kind"] == kind][["rank", "start", "cpu"]]
    return chosen.drop_duplicates(subset=["rank", "start"])


def _cpu(value: Any) -> int:
    """The joined CPU, or CPU 0 when no overhead slice matched (e.g. o = 0 on a zero-length slice)."""
    return 0 if pd.isna(value) else int(value)
