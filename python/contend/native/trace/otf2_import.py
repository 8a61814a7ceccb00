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
from array import array
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


class _Archive:
    """An open OTF2 archive with its ranks: positions in the largest communicator (MPI_COMM_WORLD)."""

    def __init__(self, trace):
        self.trace = trace
        self.resolution = float(trace.timer_resolution or 1)
        self.comms = list(trace.definitions.comms)
        self.world = max(self.comms, key=lambda c: len(c.group.members)) if self.comms else None
        self.groups = list(trace.definitions.location_groups)
        self.ranks = len(self.world.group.members) if self.world is not None else len(self.groups)

    def world_rank(self, location) -> int:
        if self.world is not None:
            try:
                return int(self.world.rank(location))
            except (ValueError, KeyError, IndexError):
                pass
        return self.groups.index(location.group)

    def peer(self, comm, rank) -> int:
        """The world rank of `rank` of `comm`; -1 when the trace cannot say."""
        try:
            return self.world_rank(comm.location(int(rank)))
        except (ValueError, KeyError, IndexError, AttributeError):
            return -1


@contextlib.contextmanager
def _opened(name: str):
    """The archive of an anchor file; the otf2 library's own errors become one UserError."""
    try:
        import otf2
    except ImportError:
        raise UserError("trace import: the otf2 package is not installed (pip install otf2)") from None
    if not os.path.isfile(name):
        raise UserError(f"{name}: no such OTF2 anchor file")
    try:
        with _quiet_library(), otf2.reader.open(name) as trace:
            yield _Archive(trace)
    except UserError:
        raise
    except Exception as exc:  # the otf2 library's own errors: a corrupt or partial archive
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{name}: not a readable OTF2 trace ({first})") from None


def import_otf2(path: str | os.PathLike) -> Imported:
    """Read an OTF2 anchor file into trace records (UserError for an unreadable or malformed trace)."""
    import pandas as pd

    name = os.fspath(path)
    rows: list[dict] = []
    warnings: list[str] = []
    with _opened(name) as archive:
        trace = archive.trace
        to_ps = 1e12 / archive.resolution
        ranks = archive.ranks
        world_rank, peer = archive.world_rank, archive.peer
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


# --- OTF2 as the tracer's records, for `contend goal convert` -------------------------------------

_SYNC_KINDS = {"MPI_WIN_FENCE": "fence", "MPI_WIN_FLUSH": "win_flush", "MPI_WIN_FLUSH_ALL": "win_flush_all",
               "MPI_WIN_FLUSH_LOCAL": "win_flush_local", "MPI_WIN_FLUSH_LOCAL_ALL": "win_flush_local_all",
               "MPI_WIN_LOCK": "win_lock", "MPI_WIN_UNLOCK": "win_unlock", "MPI_WIN_LOCK_ALL": "win_lock_all",
               "MPI_WIN_UNLOCK_ALL": "win_unlock_all"}


_AT_RETURN = -2  # a blocking call's completion: its own return, known at its Leave


@dataclass
class RankCalls:
    """One rank's MPI calls in the tracer's record layout (``files.RECORD``, ns stamps), with the
    communicator table words (docs/formats.md "Trace files"): what the engine's ctrace reader reads."""

    name: str
    records: np.ndarray
    comm_words: list[int]


def otf2_calls(path: str | os.PathLike) -> tuple[list[RankCalls], list[str]]:
    """An OTF2 archive as per-rank records of the tracer's format, so one reader (the engine's) gives
    every trace the same meaning. Per MPI region (Enter to Leave, in program order): MpiSend/MpiRecv a
    blocking send (ssend in MPI_Ssend) or receive; MpiIsend/MpiIrecvRequest a nonblocking one, completed
    by the Wait/Test region around its MpiIsendComplete/MpiIrecv (which gives a receive's source, tag and
    size); MpiCollectiveEnd a collective on its communicator (bytes: what this rank sent, else received);
    RmaPut/RmaGet one-sided operations completed by the window synchronisation region around their
    RmaOpComplete; MPI_Win_* regions their synchronisation (a flush or unlock's target is its completed
    operations'). Completing regions get stamps unique per rank, as the tracer's. Communicators: the
    largest is MPI_COMM_WORLD (id 0), the others are numbered in definition order."""
    from contend.native.trace.files import KINDS, RECORD

    code = {name: number for number, name in KINDS.items()}
    name = os.fspath(path)
    warnings: list[str] = []
    with _opened(name) as archive:
        scale = 1e9 / archive.resolution
        others = [c for c in archive.comms if c is not archive.world]
        ids = {c: i + 1 for i, c in enumerate(others)}
        words: list[int] = []
        for comm in others:
            members = [archive.peer(comm, i) for i in range(len(comm.group.members))]
            if min(members, default=0) >= 0:
                words += [ids[comm], len(members), *members]
        # per rank, 8 int64 per record (kind, posted, returned, completed, bytes, peer, tag, site): no
        # Python object per record; a record is addressed as (its rank's array, its offset)
        rows: dict[int, array] = {r: array("q") for r in range(archive.ranks)}
        last_stamp = dict.fromkeys(rows, -1)
        calls = 0
        frames: dict = {}  # location -> the open MPI region: [name, enter, completed rows, targets]
        isends: dict = {}
        irecvs: dict = {}
        rma: dict = {}
        origin = None
        for location, event in archive.trace.events:
            kind = type(event).__name__
            time = int(event.time)
            origin = time if origin is None else origin
            ns = int(round((time - origin) * scale))
            me = archive.world_rank(location)
            mine = rows.setdefault(me, array("q"))
            frame = frames.get(location)
            if kind == "Enter":
                if _is_mpi(event.region) and frame is None:
                    calls += 1
                    frames[location] = [str(event.region.name).upper(), ns, [], [], calls, []]
                continue
            if kind == "Leave":
                if frame is None or str(event.region.name).upper() != frame[0]:
                    continue
                del frames[location]
                region, enter, completed, targets, site, made = frame
                sync = _SYNC_KINDS.get(region)
                completer = sync or ("wait" if region.startswith("MPI_WAIT") else
                                     "test" if region.startswith("MPI_TEST") and completed else None)
                returned = ns
                if completer:  # unique per rank, so an operation's completed names its completer
                    returned = max(ns, last_stamp[me] + 1)
                    last_stamp[me] = returned
                for buf, at in made:
                    buf[at + 2] = returned
                    if buf[at + 3] == _AT_RETURN:
                        buf[at + 3] = returned
                for buf, at in completed:
                    buf[at + 3] = returned
                if completer:
                    peer = targets[0] if targets and sync in ("win_flush", "win_flush_local", "win_unlock") else -1
                    if sync in ("win_flush", "win_flush_local", "win_unlock", "win_lock") and peer < 0:
                        completer = {"win_flush": "win_flush_all", "win_flush_local": "win_flush_local_all",
                                     "win_unlock": "win_unlock_all", "win_lock": "win_lock_all"}[sync]
                    mine.extend((code[completer], enter, returned, returned, 0, peer, -1, site))
                continue
            if frame is None:
                continue
            enter, site, made = frame[1], frame[4], frame[5]

            def record(kind_name, nbytes, peer, tag, completed=_AT_RETURN):
                row = (mine, len(mine))
                mine.extend((code[kind_name], enter, enter, completed, int(nbytes), int(peer), int(tag), site))
                made.append(row)
                return row

            if kind == "MpiSend":
                record("ssend" if frame[0] == "MPI_SSEND" else "send", event.msg_length,
                       archive.peer(event.communicator, event.receiver), event.msg_tag)
            elif kind == "MpiIsend":
                isends[(location, int(event.request_id))] = record(
                    "issend" if frame[0] == "MPI_ISSEND" else "isend", event.msg_length,
                    archive.peer(event.communicator, event.receiver), event.msg_tag, completed=-1)
            elif kind == "MpiRecv":
                record("recv", event.msg_length, archive.peer(event.communicator, event.sender), event.msg_tag)
            elif kind == "MpiIrecvRequest":
                irecvs[(location, int(event.request_id))] = record("irecv", 0, -1, -1, completed=-1)
            elif kind in ("MpiIsendComplete", "MpiIrecv"):
                row = (isends if kind == "MpiIsendComplete" else irecvs).pop((location, int(event.request_id)), None)
                if row is not None:
                    if kind == "MpiIrecv":
                        buf, at = row
                        buf[at + 4:at + 7] = array("q", (int(event.msg_length),
                                                         archive.peer(event.communicator, event.sender),
                                                         int(event.msg_tag)))
                    frame[2].append(row)
            elif kind in ("RmaPut", "RmaGet"):
                target = archive.peer(event.win.comm, event.remote)
                rma[(location, event.win, int(event.matching_id))] = record(
                    "put" if kind == "RmaPut" else "get", event.bytes, target, -1, completed=-1)
            elif kind in _RMA_COMPLETIONS:
                row = rma.pop((location, event.win, int(event.matching_id)), None)
                if row is not None:
                    frame[2].append(row)
                    frame[3].append(row[0][row[1] + 5])
            elif kind == "MpiCollectiveEnd":
                op = str(event.collective_op).rsplit(".", 1)[-1].lower()
                if op not in code:
                    warnings.append(f"{op} collectives are not converted (time in MPI)")
                    continue
                comm = event.communicator
                rooted = op in ("bcast", "reduce", "gather", "gatherv", "scatter", "scatterv")
                root = archive.peer(comm, event.root) if rooted else -1
                record(op, event.size_sent or event.size_received, root, 0 if comm is archive.world else
                       ids.get(comm, -1))
    if isends or irecvs or rma:
        warnings.append(f"{len(isends) + len(irecvs) + len(rma)} nonblocking or one-sided operation(s) never "
                        "completed in the trace")
    out = []
    for rank in range(archive.ranks):
        values = np.frombuffer(rows[rank], dtype=np.int64).reshape(-1, 8)
        table = np.zeros(len(values), dtype=RECORD)
        for column, field_name in enumerate(("kind", "posted", "returned", "completed", "bytes", "peer", "tag")):
            table[field_name] = values[:, column]
        table["frames"][:, 0] = values[:, 7]
        table["depth"] = 1
        out.append(RankCalls(name=f"{name} (rank {rank})", records=table, comm_words=words))
    return out, sorted(set(warnings))


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
