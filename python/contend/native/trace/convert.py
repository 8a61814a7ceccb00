"""A trace directory's rank files as trace records (docs/formats.md, "Records from real traces"): one
row per call on the corrected global clock, in integer picoseconds.

- Messages: every send and every receive is a row, with ``src`` the sender and ``dst`` the receiver on
  both; the k-th send from s to d with tag t and the k-th receive at d from s with tag t (MPI keeps
  them in order) share a ``message`` number, so each message has both ends. A send or receive
  without a partner keeps ``message = -1`` and is counted in a warning.
- One-sided operations: one row each, ``src`` the initiator, ``dst`` the target, ``completed`` the
  flush / unlock / fence / Win_complete (or, for the R forms, Wait) that completed it.
- Collectives are regions (``src = dst =`` the rank) in the records, as ``contend diagnose`` expects;
  ``regions.parquet`` holds every region, the Waits and window synchronisations too.
- A receive's ``bytes`` is its message's (the tracer keeps only the posted count, an upper bound);
  an unpaired receive keeps that bound.
- ``waited``: the entry of the Wait or flush whose return completed the operation (the call's own entry
  for blocking calls), so blocked time can be told from the operation's start.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from contend.errors import UserError
from contend.native.trace import clock as clocks
from contend.native.trace.files import (COMPLETERS, FLAG_FREED, FLAG_UNTRACKED, KINDS, RankTrace, is_region,
                                 read_directory)
from contend.native.trace.symbols import symbolize

SENDS = ("send", "isend", "ssend", "issend")
RECVS = ("recv", "irecv")
# Regions contend diagnose knows as synchronisation (the others stay in regions.parquet only).
DIAGNOSED_REGIONS = ("barrier", "bcast", "allreduce", "reduce", "alltoall", "allgather", "gather", "scatter",
                     "fence")
CONTEXT_SEPARATOR = " <- "


@dataclass
class Converted:
    records: object  # pandas DataFrame, int64 ps times
    regions: object
    ranks: int
    clock: list[dict]
    counts: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _rank_frame(trace: RankTrace, correction: clocks.Correction, origin_ns: int):
    """One rank's records as columns (global ns since origin), with raw return addresses."""
    import pandas as pd

    rows = trace.records
    kind_names = np.array([KINDS[int(k)] for k in rows["kind"]], dtype=object)

    def to_global(values):
        values = np.asarray(values, dtype=np.int64)
        known = values >= 0
        out = np.full(len(values), -1, dtype=np.int64)
        out[known] = correction.to_global_ns(trace.to_ns(values[known])) - origin_ns
        return out

    return pd.DataFrame({
        "rank": np.full(len(rows), trace.rank, dtype=np.int64),
        "seq": np.arange(len(rows), dtype=np.int64),
        "kind": kind_names,
        "kind_code": rows["kind"].astype(np.int64),
        "peer": rows["peer"].astype(np.int64),
        "bytes": rows["bytes"].astype(np.int64),
        # the message tag; other records use the field for their communicator's or window's id
        "tag": np.where(rows["kind"] <= 5, rows["tag"], -1).astype(np.int64),
        "flags": rows["flags"].astype(np.int64),
        "posted": to_global(rows["posted"]),
        "returned": to_global(rows["returned"]),
        "completed": to_global(rows["completed"]),
        "completed_local": rows["completed"].astype(np.int64),
        "depth": rows["depth"].astype(np.int64),
        "frames": list(rows["frames"]),
    })


def _site_names(traces: list[RankTrace], frame) -> tuple[list[str], list[str], list[str]]:
    """call_site and context strings of each row, via addr2line on the distinct addresses."""
    lookups, keys_per_rank = [], []
    for trace in traces:
        table = trace.addresses
        objects = [trace.object_name(int(n)) for n in table["name"]]
        resolved = {int(a): (obj, int(a) - int(b) - 1) for a, b, obj in zip(table["address"], table["bias"], objects)}
        keys_per_rank.append(resolved)
        lookups.extend(resolved.values())
    names, warnings = symbolize(lookups)
    call_sites, contexts = [], []
    by_rank = dict(zip([t.rank for t in traces], keys_per_rank))
    for rank, depth, frames in zip(frame["rank"], frame["depth"], frame["frames"]):
        resolved = by_rank[int(rank)]
        labels = []
        for address in frames[:max(int(depth), 1)]:
            key = resolved.get(int(address))
            labels.append(names[key] if key else f"{int(address):#x} in an unknown object")
        call_sites.append(labels[0])
        contexts.append(CONTEXT_SEPARATOR.join(reversed(labels)))  # outermost first
    return call_sites, contexts, warnings


def _pair_messages(frame, warnings: list[str]) -> np.ndarray:
    """A message number shared by each send and its receive; -1 for a lone end."""
    message = np.full(len(frame), -1, dtype=np.int64)
    sends = frame[frame["kind"].isin(SENDS)]
    recvs = frame[frame["kind"].isin(RECVS)]
    queues: dict = {}
    ordered_sends = sends.sort_values(["rank", "seq"], kind="stable")
    for index, key in zip(ordered_sends.index, zip(ordered_sends["src"], ordered_sends["dst"], ordered_sends["tag"])):
        queues.setdefault(key, []).append(index)
    ordered_recvs = recvs.sort_values(["rank", "seq"], kind="stable")
    taken: dict = {}
    number = 0
    lone_recvs = 0
    positions = {index: i for i, index in enumerate(frame.index)}
    for index, key in zip(ordered_recvs.index, zip(ordered_recvs["src"], ordered_recvs["dst"], ordered_recvs["tag"])):
        queue = queues.get(key)
        k = taken.get(key, 0)
        if queue is None or k >= len(queue):
            lone_recvs += 1
            continue
        taken[key] = k + 1
        message[positions[queue[k]]] = number
        message[positions[index]] = number
        number += 1
    lone_sends = len(sends) - number
    if lone_sends or lone_recvs:
        warnings.append(f"{lone_sends} send(s) and {lone_recvs} receive(s) found no partner in the trace "
                        "(message = -1)")
    return message


def _waited(frame) -> np.ndarray:
    """Entry of the call that completed each operation: the Wait / Test / flush / unlock / fence record
    that returned at the very instant (same local clock reading, unique per rank) the operation was
    completed."""
    waited = frame["posted"].to_numpy().copy()
    key = ["rank", "completed_local"]
    completers = frame.loc[frame["kind_code"].isin(COMPLETERS) & (frame["completed_local"] >= 0), key + ["posted"]]
    completers = completers.drop_duplicates(key).rename(columns={"posted": "completer_entry"})
    deferred = frame["kind"].isin(("isend", "issend", "irecv", "put", "get", "accumulate", "get_accumulate",
                                   "rput", "rget", "raccumulate", "rget_accumulate", "fetch_and_op",
                                   "compare_and_swap")).to_numpy()
    rows = frame.loc[deferred, key].assign(row=np.flatnonzero(deferred))
    joined = rows.merge(completers, on=key, how="inner")
    waited[joined["row"].to_numpy()] = joined["completer_entry"].to_numpy()
    return waited


def convert(directory: str | os.PathLike) -> Converted:
    """Read a trace directory and build its records and regions (UserError on a bad trace)."""
    import pandas as pd

    traces = read_directory(directory)
    ranks = int(traces[0].header["ranks"])
    corrections = [clocks.correction(t) for t in traces]
    warnings: list[str] = []
    frames = [_rank_frame(t, c, 0) for t, c in zip(traces, corrections)]
    frame = pd.concat(frames, ignore_index=True)
    counts = {"records": int(len(frame)),
              "dropped": int(sum(int(t.header["dropped"]) for t in traces)),
              "untracked": int(sum(int(t.header["untracked"]) for t in traces))}
    if counts["dropped"]:
        full = [t.rank for t in traces if int(t.header["dropped"])]
        warnings.append(f"{counts['dropped']} operation(s) not recorded: the buffer of rank(s) "
                        f"{', '.join(map(str, full[:8]))} filled (raise CONTEND_TRACE_RECORDS)")
    unfinished = [t.rank for t in traces if int(t.header["at_finalize"]["rtt_ns"]) < 0]
    if unfinished:
        warnings.append(f"rank(s) {', '.join(map(str, unfinished[:8]))} never called MPI_Finalize: their "
                        "clocks are corrected by the first offset only")
    if len(frame) == 0:
        raise UserError(f"{directory}: the trace holds no MPI operations")
    backwards = int((frame["returned"] < frame["posted"]).sum())
    if backwards:
        warnings.append(f"{backwards} call(s) returned before they were entered: the time-stamp counter is not "
                        "synchronised between cores here; trace with CONTEND_TRACE_CLOCK=monotonic")
    origin = int(frame["posted"].min())
    for column in ("posted", "returned", "completed"):
        known = frame[column] >= 0
        frame.loc[known, column] = frame.loc[known, column] - origin
    unknown = frame["completed"] < 0
    if unknown.any():
        freed = int(((frame["flags"] & FLAG_FREED) != 0).sum())
        untracked = int(((frame["flags"] & FLAG_UNTRACKED) != 0).sum())
        warnings.append(f"{int(unknown.sum())} operation(s) with no known completion ({freed} freed requests, "
                        f"{untracked} beyond the tracer's tables, the rest never completed): their "
                        "completed is their return")
        frame.loc[unknown, "completed"] = frame.loc[unknown, "returned"]
    frame["completed"] = np.maximum(frame["completed"], frame["posted"])

    rank = frame["rank"].to_numpy()
    peer = frame["peer"].to_numpy()
    receiving = frame["kind"].isin(RECVS).to_numpy()
    region = is_region(frame["kind_code"].to_numpy())
    frame["src"] = np.where(receiving, peer, rank)
    frame["dst"] = np.where(receiving, rank, np.where(region, rank, peer))
    unresolved = (frame["src"] < 0) | (frame["dst"] < 0)
    if unresolved.any():
        warnings.append(f"{int(unresolved.sum())} operation(s) with an unknown peer (an intercommunicator "
                        "or a receive that never completed) are left out")
    frame = frame[~unresolved].reset_index(drop=True)
    call_sites, contexts, symbol_warnings = _site_names(traces, frame)
    warnings.extend(symbol_warnings)
    frame["call_site"] = call_sites
    frame["context"] = contexts
    frame["waited"] = _waited(frame)
    frame["message"] = _pair_messages(frame, warnings)
    # a receive's size is its message's (the tracer keeps the posted count, a bound, to save reading statuses)
    paired = frame["message"] >= 0
    sent = frame[paired & frame["kind"].isin(SENDS)].set_index("message")["bytes"]
    receiving_rows = paired & frame["kind"].isin(RECVS)
    frame.loc[receiving_rows, "bytes"] = frame.loc[receiving_rows, "message"].map(sent).to_numpy()
    sites = sorted(set(call_sites))
    site_ids = {site: i for i, site in enumerate(sites)}
    frame["site_id"] = np.array([site_ids[s] for s in call_sites], dtype=np.int64)

    ps = 1000
    regional = is_region(frame["kind_code"].to_numpy())
    kept = ~regional | frame["kind"].isin(DIAGNOSED_REGIONS).to_numpy()
    ops = frame[kept]
    records = pd.DataFrame({
        "src": ops["src"].astype(np.int64), "dst": ops["dst"].astype(np.int64),
        "bytes": ops["bytes"].astype(np.int64), "tag": ops["tag"].astype(np.int64),
        "kind": ops["kind"].astype(str),
        "posted": ops["posted"] * ps, "completed": ops["completed"] * ps, "waited": ops["waited"] * ps,
        "returned": ops["returned"] * ps,
        "call_site": ops["call_site"].astype(str), "context": ops["context"].astype(str),
        "site_id": ops["site_id"], "message": ops["message"], "rank": ops["rank"],
    }).sort_values(["posted", "rank"], kind="stable").reset_index(drop=True)
    reg = frame[regional]
    regions = pd.DataFrame({
        "rank": reg["rank"].astype(np.int64), "kind": reg["kind"].astype(str),
        "start": reg["posted"] * ps, "end": reg["completed"] * ps, "peer": reg["peer"],
        "bytes": reg["bytes"], "call_site": reg["call_site"].astype(str), "context": reg["context"].astype(str),
    }).sort_values(["start", "rank"], kind="stable").reset_index(drop=True)
    counts.update({kind: int(n) for kind, n in frame["kind"].value_counts().items()})
    counts["messages"] = int(frame["message"].max() + 1) if len(frame) else 0
    clock = [c.as_dict() for c in corrections]
    return Converted(records=records, regions=regions, ranks=ranks, clock=clock, counts=counts,
                     warnings=warnings)


def write(converted: Converted, directory: str | os.PathLike, params: dict | None = None) -> tuple[Path, Path]:
    """``DIR/records.parquet`` and ``DIR/regions.parquet``, each written whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contend.atomic import atomic_path

    directory = Path(directory)
    metadata = {"contend.time_unit": "ps", "contend.source": "trace", "contend.ranks": json.dumps(converted.ranks),
                "contend.clock": json.dumps(converted.clock), "contend.counts": json.dumps(converted.counts)}
    if params is not None:
        metadata["contend.params"] = json.dumps(params)
    paths = []
    for name, table in (("records.parquet", converted.records), ("regions.parquet", converted.regions)):
        arrow = pa.Table.from_pandas(table, preserve_index=False).replace_schema_metadata(metadata)
        path = directory / name
        with atomic_path(path) as temporary:
            pq.write_table(arrow, temporary)
        paths.append(path)
    return paths[0], paths[1]
