"""OTF2 traces (Score-P and others) as trace records, the same as ``contend trace`` writes (docs/formats.md,
"Records from real traces"), read with the ``otf2`` package.

OTF2 records an MPI call as an Enter/Leave pair of its region with the message events inside it:

- ``MpiSend`` / ``MpiRecv``: posted at the Enter of the enclosing MPI region, completed at its Leave;
- ``MpiIsend`` ... ``MpiIsendComplete``, ``MpiIrecvRequest`` ... ``MpiIrecv`` (same request id): posted at
  the Enter around the first event, completed at the Leave around the second (the Wait or Test);
- ``RmaPut`` / ``RmaGet`` ... ``RmaOpComplete*`` (same window and matching id): likewise, one row each;
- ``MpiCollectiveEnd``: a region row of its collective (``src = dst =`` the rank).

Ranks are positions in the largest communicator (MPI_COMM_WORLD); a peer is translated from its
communicator to that. The call site is the innermost non-MPI region around the call (with its source
file and line when the trace defines them), the context the region stack, outermost first.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from contend.errors import UserError

CONTEXT_SEPARATOR = " <- "
_RMA_COMPLETIONS = ("RmaOpCompleteBlocking", "RmaOpCompleteRemote", "RmaOpCompleteNonBlocking")


@dataclass
class Imported:
    records: object  # pandas DataFrame, int64 ps
    ranks: int
    warnings: list[str] = field(default_factory=list)


class _Frame:
    __slots__ = ("region", "enter", "rows")

    def __init__(self, region, enter):
        self.region, self.enter, self.rows = region, enter, []


def _region_label(region) -> str:
    name = str(region.name)
    source = getattr(region, "source_file", None)
    line = int(getattr(region, "begin_line_number", 0) or 0)
    if source is not None and str(source) and line > 0:
        return f"{name} ({os.path.basename(str(source))}:{line})"
    return name


def _is_mpi(region) -> bool:
    return str(region.name).upper().startswith("MPI_")


@contextlib.contextmanager
def _quiet_library():
    """Keeps standard error (fd 2) for our one-line message: the OTF2 C library prints its own
    "[OTF2] ... error" lines there when it meets a corrupt archive, and an exception raised in one of
    the binding's callbacks is printed there as a traceback; the exception we raise says it instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def import_otf2(path: str | os.PathLike) -> Imported:
    """Read an OTF2 anchor file into trace records (UserError for an unreadable or malformed trace)."""
    try:
        import otf2
    except ImportError:
        raise UserError("trace import: the otf2 package is not installed (pip install otf2)") from None
    import pandas as pd

    name = os.fspath(path)
    if not os.path.isfile(name):
        raise UserError(f"{name}: no such OTF2 anchor file")
    rows: list[dict] = []
    warnings: list[str] = []
    try:
        with _quiet_library(), otf2.reader.open(name) as trace:
            resolution = float(trace.timer_resolution or 1)
            to_ps = 1e12 / resolution
            comms = list(trace.definitions.comms)
            world = max(comms, key=lambda c: len(c.group.members)) if comms else None
            groups = list(trace.definitions.location_groups)
            ranks = len(world.group.members) if world is not None else len(groups)

            def world_rank(location) -> int:
                if world is not None:
                    try:
                        return int(world.rank(location))
                    except (ValueError, KeyError, IndexError):
                        pass
                return groups.index(location.group)

            def peer(comm, rank) -> int:
                try:
                    return world_rank(comm.location(int(rank)))
                except (ValueError, KeyError, IndexError, AttributeError):
                    return -1

            stacks: dict = {}
            isends: dict = {}
            irecvs: dict = {}
            rma: dict = {}
            first_time = None
            for location, event in trace.events:
                kind = type(event).__name__
                time = int(event.time)
                first_time = time if first_time is None else min(first_time, time)
                stack = stacks.setdefault(location, [])
                me = world_rank(location)
                if kind == "Enter":
                    stack.append(_Frame(event.region, time))
                    continue
                if kind == "Leave":
                    if not stack:
                        raise UserError(f"{name}: a Leave of {event.region.name} without its Enter on "
                                        f"location {location.name}")
                    frame = stack.pop()
                    for row, column in frame.rows:
                        row[column] = time
                    continue
                enclosing = stack[-1] if stack else None
                posted = enclosing.enter if enclosing is not None and _is_mpi(enclosing.region) else time
                user = [f for f in stack if not _is_mpi(f.region)]
                site = _region_label(user[-1].region) if user else "(no region)"
                context = CONTEXT_SEPARATOR.join(_region_label(f.region) for f in user) or site

                def add(**fields):
                    row = {"posted": posted, "completed": time, "waited": posted, "call_site": site,
                           "context": context, "rank": me, **fields}
                    rows.append(row)
                    return row

                def complete_at_leave(row):
                    if enclosing is not None:
                        enclosing.rows.append((row, "completed"))
                        if _is_mpi(enclosing.region):
                            row["waited"] = enclosing.enter

                if kind in ("MpiSend", "MpiIsend"):
                    row = add(src=me, dst=peer(event.communicator, event.receiver), bytes=int(event.msg_length),
                              tag=int(event.msg_tag), kind="send" if kind == "MpiSend" else "isend")
                    if kind == "MpiSend":
                        complete_at_leave(row)
                    else:
                        isends[(location, int(event.request_id))] = row
                elif kind == "MpiIsendComplete":
                    row = isends.pop((location, int(event.request_id)), None)
                    if row is not None:
                        row["completed"] = time
                        complete_at_leave(row)
                elif kind == "MpiIrecvRequest":
                    irecvs[(location, int(event.request_id))] = posted
                elif kind in ("MpiRecv", "MpiIrecv"):
                    started = posted
                    if kind == "MpiIrecv":
                        started = irecvs.pop((location, int(event.request_id)), posted)
                    row = add(src=peer(event.communicator, event.sender), dst=me, bytes=int(event.msg_length),
                              tag=int(event.msg_tag), kind="recv" if kind == "MpiRecv" else "irecv")
                    row["posted"] = started
                    complete_at_leave(row)
                elif kind in ("RmaPut", "RmaGet"):
                    row = add(src=me, dst=peer(event.win.comm, event.remote), bytes=int(event.bytes), tag=-1,
                              kind="put" if kind == "RmaPut" else "get")
                    rma[(location, event.win, int(event.matching_id))] = row
                elif kind in _RMA_COMPLETIONS:
                    row = rma.pop((location, event.win, int(event.matching_id)), None)
                    if row is not None:
                        row["completed"] = time
                        complete_at_leave(row)
                elif kind == "MpiCollectiveEnd":
                    op = str(event.collective_op).rsplit(".", 1)[-1].lower()  # CollectiveOp.BARRIER -> barrier
                    row = add(src=me, dst=me, bytes=int(event.size_sent), tag=-1, kind=op)
                    row["completed"] = time
                    complete_at_leave(row)
    except UserError:
        raise
    except Exception as exc:  # the otf2 library's own errors: a corrupt or partial archive
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{name}: not a readable OTF2 trace ({first})") from None
    if isends or rma:
        warnings.append(f"{len(isends) + len(rma)} nonblocking or one-sided operation(s) never completed in the "
                        "trace: their completed is their start")
    if not rows:
        raise UserError(f"{name}: the OTF2 trace holds no MPI messages or collectives")
    frame = pd.DataFrame(rows)
    unresolved = (frame["src"] < 0) | (frame["dst"] < 0)
    if unresolved.any():
        warnings.append(f"{int(unresolved.sum())} operation(s) whose peer is not in the trace's communicators "
                        "are left out")
        frame = frame[~unresolved]
    origin = first_time or 0
    for column in ("posted", "completed", "waited"):
        frame[column] = np.rint((frame[column].astype(np.int64) - origin) * to_ps).astype(np.int64)
    frame["completed"] = np.maximum(frame["completed"], frame["posted"])
    frame["site_id"] = pd.factorize(frame["call_site"])[0].astype(np.int64)
    for column in ("src", "dst", "bytes", "tag", "rank"):
        frame[column] = frame[column].astype(np.int64)
    columns = ["src", "dst", "bytes", "tag", "kind", "posted", "completed", "waited", "call_site", "context",
               "site_id", "rank"]
    frame = frame[columns].sort_values(["posted", "rank"], kind="stable").reset_index(drop=True)
    return Imported(records=frame, ranks=int(ranks), warnings=warnings)


def write_records(imported: Imported, path: str | os.PathLike, params: dict | None = None) -> None:
    """The imported records as a trace records Parquet file, written whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contend.atomic import atomic_path

    metadata = {"contend.time_unit": "ps", "contend.source": "trace", "contend.ranks": json.dumps(imported.ranks),
                "contend.clock": json.dumps({"from": "otf2"})}
    if params is not None:
        metadata["contend.params"] = json.dumps(params)
    table = pa.Table.from_pandas(imported.records, preserve_index=False).replace_schema_metadata(metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)
