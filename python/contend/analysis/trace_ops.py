"""Trace records as operations to diagnose (docs/models.md, "Diagnosis", trace records).

A real trace knows only when each call was made (``posted``) and when the operation was known complete
(``completed``): no split of the delay. Each two-sided message appears twice (the send at the sender,
the receive at the receiver) and is paired back into one operation; one-sided operations are one row
each; collective regions are synchronisation, not messages. Every operation gets its ideal latency from
the LogGP(S) parameters and ``contention = max(0, observed - ideal)``.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

SENDS = frozenset({"send", "isend", "ssend", "issend", "bsend", "ibsend", "rsend", "irsend"})
RECVS = frozenset({"recv", "irecv", "mrecv", "imrecv"})
# One-sided operations whose data goes initiator -> target (put-like) or comes back (get-like).
PUTS = frozenset({"put", "rput", "accumulate", "raccumulate"})
GETS = frozenset({"get", "rget", "get_accumulate", "rget_accumulate", "fetch_and_op", "compare_and_swap"})
REGIONS = frozenset({"barrier", "ibarrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
                     "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
                     "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "fence", "win_fence"})


def is_region(kinds) -> np.ndarray:
    """Collective / synchronisation regions: the names above or any kind ``collective:NAME``."""
    kinds = np.asarray(kinds, dtype=object)
    return np.array([k in REGIONS or k.startswith("collective") for k in kinds], dtype=bool)


def trace_ops(frame, params: Mapping[str, Any]):
    """(ops, regions, warnings): ``ops`` one row per operation with ``src`` (initiator), ``dst``
    (target), ``bytes``, ``kind``, ``call_site``, ``context``, ``start``, ``completed``, ``ideal``,
    ``observed``, ``waiter`` (the rank that waits for it); ``regions`` the collective rows."""
    import pandas as pd

    warnings: list[str] = []
    region = is_region(frame["kind"])
    regions, rows = frame[region], frame[~region]
    kind = rows["kind"]
    sends, recvs = rows[kind.isin(SENDS)], rows[kind.isin(RECVS)]
    paired, lone_sends, lone_recvs = _pair(sends, recvs)
    if len(lone_sends) or len(lone_recvs):
        warnings.append(f"{len(lone_sends)} send(s) and {len(lone_recvs)} receive(s) have no partner in the "
                        "trace; each is diagnosed alone from its own posted..completed")
    others = rows[~kind.isin(SENDS | RECVS)]
    unknown = sorted(set(others["kind"]) - PUTS - GETS)
    if unknown:
        warnings.append(f"unknown operation kind(s) {', '.join(unknown)}: treated as put-like (data to dst)")

    parts = []
    if len(paired):
        parts.append(_ops(paired, "start", params, "message", waiter="dst"))
    for lone, waiter in ((lone_sends, "src"), (lone_recvs, "dst")):
        if len(lone):
            parts.append(_ops(lone.assign(start=lone["posted"]), "start", params, "message",
                              waiter=waiter))
    if len(others):
        model = np.where(others["kind"].isin(GETS), "get", "put")
        parts.append(_ops(others.assign(start=others["posted"], model=model), "start", params,
                          None, waiter="src"))
    ops = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return ops, regions, warnings


def _pair(sends, recvs):
    """Match the k-th send from src to dst with tag t to the k-th receive of the same (MPI keeps
    messages of one sender, receiver and tag in order): (paired, lone sends, lone receives)."""
    key = ["src", "dst", "tag"]
    sends = sends.sort_values("posted", kind="stable").copy()
    recvs = recvs.sort_values("posted", kind="stable").copy()
    sends["nth"] = sends.groupby(key).cumcount()
    recvs["nth"] = recvs.groupby(key).cumcount()
    recvs = recvs.reset_index().rename(columns={"index": "recv_row"})
    sends = sends.reset_index().rename(columns={"index": "send_row"})
    carried = key + ["nth", "recv_row", "posted", "completed", "call_site"]
    carried += ["waited"] if "waited" in recvs else []  # the receiver's Wait: where it blocked
    merged = sends.drop(columns=["waited"], errors="ignore").merge(
        recvs[carried].rename(columns={"posted": "recv_posted", "completed": "recv_completed",
                                       "call_site": "recv_site"}), on=key + ["nth"], how="inner")
    # The message could move once the send was made (a receive posted late is accounted for by
    # diagnose: see late_receiver); it was done when the receive completed. The receiver was in the
    # call from the receive's posting (or its Wait's entry).
    merged["start"] = merged["posted"]
    merged["completed"] = merged["recv_completed"]
    merged["receiver_from"] = merged["waited"] if "waited" in merged else merged["recv_posted"]
    lone_sends = sends[~sends["send_row"].isin(merged["send_row"])]
    lone_recvs = recvs[~recvs["recv_row"].isin(merged["recv_row"])]
    return merged, lone_sends, lone_recvs


def _per_byte(params: Mapping[str, Any]) -> float:
    """The engine's streaming cost per byte, max(O, G)."""
    return max(float(params.get("G", 0.0)), float(params.get("O", 0.0)))


def _ops(rows, start: str, params: Mapping[str, Any], model, waiter: str):
    """Operation rows with their ideal latency (docs/models.md): a message ``2o + L + (s-1)·G``, a
    put-like ``o + L + (s-1)·G``, a get-like ``o + 2L + (s-1)·G`` (request and data reply), with the
    rendezvous costs above ``S`` and ``G`` the larger of G and O."""
    import pandas as pd

    size = rows["bytes"].to_numpy(dtype=np.float64)
    rendezvous = params.get("rendezvous") or params
    large = size > float(params.get("S", np.inf))
    o = np.where(large, float(rendezvous["o"]), float(params["o"]))
    latency = np.where(large, float(rendezvous["L"]), float(params["L"]))
    gap = np.where(large, _per_byte(rendezvous), _per_byte(params))
    streaming = np.maximum(size - 1.0, 0.0) * gap
    models = np.full(len(rows), model, dtype=object) if model else rows["model"].to_numpy(dtype=object)
    ideal = np.select([models == "message", models == "get"],
                      [2 * o + latency + streaming, o + 2 * latency + streaming], o + latency + streaming)
    begin = rows[start].to_numpy(dtype=np.float64)
    done = rows["completed"].to_numpy(dtype=np.float64)
    return pd.DataFrame({
        "src": rows["src"].to_numpy(), "dst": rows["dst"].to_numpy(), "bytes": rows["bytes"].to_numpy(),
        "kind": rows["kind"].to_numpy(dtype=object), "call_site": rows["call_site"].to_numpy(dtype=object),
        "context": rows["context"].to_numpy(dtype=object), "posted": rows["posted"].to_numpy(dtype=np.float64),
        "start": begin, "completed": done, "ideal": ideal, "observed": done - begin,
        # a message's receiving part of the ideal: what a receive posted after the arrival still costs
        "receive_cost": np.where(models == "message", o + streaming, 0.0),
        "waiter": rows[waiter].to_numpy(),
        # t_blocked counts from the Wait's entry when the trace has it, else from the call
        "blocked_from": _blocked_from(rows, begin),
        # a paired message's receive: when it was posted (NaN for everything else)
        "recv_posted": rows["recv_posted"].to_numpy(dtype=np.float64) if "recv_posted" in rows
        else np.full(len(rows), np.nan),
    })


def _blocked_from(rows, begin: np.ndarray) -> np.ndarray:
    if "receiver_from" in rows:
        return rows["receiver_from"].to_numpy(dtype=np.float64)
    return rows["waited"].to_numpy(dtype=np.float64) if "waited" in rows else begin
