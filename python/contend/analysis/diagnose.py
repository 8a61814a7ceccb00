"""Contention diagnosis of per-message records: the method of Tallent et al. 2014, docs/models.md
"Diagnosis".

Each message's ideal delivery comes from the LogGOPS parameters (and the network, if any); the time
it spent beyond that on its way (waiting at the sender, a slower transfer, waiting at the busy
destination) is its contention. The overlapping messages at the initiator's out-link (same ``src``) and
at the target's in-link (same ``dst``) during its transfer say which end it contended at. Contention is
attributed to call sites (on engine records: the send's op index) with the sending rank as context, and
to target ranks over time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from contend.engine import engine, user_errors
from contend.errors import UserError

CLASSES = ("initiator", "target")
# Topologies whose route length has a closed form; fat trees and dragonflies search the link graph.
# The hot-target grid is ranks x bins floats, in memory and in the JSON: at most 2^27 (1 GiB).
MAX_GRID_CELLS = 2**27


@dataclass(frozen=True)
class Diagnosis:
    """Per-operation diagnosis (``messages``: a DataFrame, one row per message, or per get pairing a
    request with its reply, or per traced operation) and the run's totals (ns, float)."""

    messages: Any  # pandas DataFrame: src, dst, bytes, kind, call_site, context, start, finish, ideal,
    #                contention, initiator_demand, target_demand, class (+ the engine's truth if known)
    num_ranks: int
    run_time: float
    bins: np.ndarray  # time-bin edges (ns) of ``hot_targets``
    source: str = "engine"
    blocked: float = 0.0  # t_blocked, summed over ranks (ns)
    sync: float = 0.0  # t_sync, summed over ranks (ns)
    warnings: tuple[str, ...] = ()

    @property
    def contention(self) -> float:
        """Contention summed over operations (ns); overlapping operations each count."""
        return float(self.messages["contention"].sum())

    @property
    def contention_time(self) -> float:
        """t_contention as rank time (ns): per waiting rank, the time covered by the last
        ``contention`` ns of each of its operations (what it would not have waited without
        contention), so that overlapping operations count once."""
        ops = self.messages
        return _union_per_rank(ops["waiter"].to_numpy(), (ops["completed"] - ops["contention"]).to_numpy(),
                               ops["completed"].to_numpy())

    def outstanding(self) -> np.ndarray:
        """Per operation, the time-averaged number of operations of its initiator between start and
        completed (its own included): how many it kept outstanding."""
        return _demand(self.messages, "src", "start", "completed") + 1.0

    def share(self, total: float) -> float:
        """``total`` (summed over ranks) as a share of the ranks' run time, P * T."""
        return total / (self.num_ranks * self.run_time) if self.run_time > 0 else 0.0

    def split(self) -> dict[str, float]:
        """Contention time by class, initiator / target."""
        by_class = self.messages.groupby("class", observed=False)["contention"].sum()
        return {name: float(by_class.get(name, 0.0)) for name in CLASSES}

    def truth(self) -> dict[str, float] | None:
        """The engine's own contention by end (``nic_queue`` at the initiator; ``target_queue`` and
        ``link`` at the target), or None for trace records."""
        if "truth_initiator" not in self.messages:
            return None
        return {name: float(self.messages[f"truth_{name}"].sum()) for name in CLASSES}

    def call_sites(self):
        """Contention per call site, largest first: contention, operations, share of the total,
        initiator / target time, the operation kinds, and the ranks and calling contexts that
        contributed most."""
        import pandas as pd

        frame = self.messages[self.messages["contention"] > 0]
        rows = []
        for site, group in frame.groupby("call_site", sort=False):
            by_class = group.groupby("class", observed=False)["contention"].sum()
            by_rank = group.groupby("src")["contention"].sum().sort_values(ascending=False)
            by_context = group.groupby("context")["contention"].sum().sort_values(ascending=False)
            rows.append({"call_site": str(site), "kind": ", ".join(sorted(set(group["kind"]))),
                         "contention": float(group["contention"].sum()), "messages": len(group),
                         **{name: float(by_class.get(name, 0.0)) for name in CLASSES},
                         "top_ranks": [int(r) for r in by_rank.index[:5]],
                         "top_contexts": [str(c) for c in by_context.index[:3]]})
        table = pd.DataFrame(rows, columns=["call_site", "kind", "contention", "messages", *CLASSES,
                                            "top_ranks", "top_contexts"])
        total = self.contention
        table["share"] = table["contention"] / total if total > 0 else 0.0
        return table.sort_values("contention", ascending=False, kind="stable").reset_index(drop=True)

    def targets(self):
        """Contention per destination rank, largest first."""
        by_dst = self.messages.groupby("dst")["contention"].sum().sort_values(ascending=False)
        return by_dst[by_dst > 0]

    def hot_targets(self) -> np.ndarray:
        """Contention (ns) per destination rank (rows) and time bin (columns of ``bins``): each
        operation's contention is spread evenly over its delivery, start..finish."""
        start, end = self.messages["start"].to_numpy(), self.messages["finish"].to_numpy()
        end = np.maximum(end, start + 1e-9)  # an instant delivery still lands in one bin
        dst, contention = self.messages["dst"].to_numpy(), self.messages["contention"].to_numpy()
        grid = np.zeros((self.num_ranks, len(self.bins) - 1))
        for column, (low, high) in enumerate(zip(self.bins[:-1], self.bins[1:])):
            inside = np.clip(np.minimum(end, high) - np.maximum(start, low), 0.0, None) / (end - start)
            grid[:, column] = np.bincount(dst, weights=contention * inside, minlength=self.num_ranks)
        return grid

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        sites = self.call_sites().head(top)
        targets = self.targets().head(top)
        return {
            "source": self.source,
            "messages": len(self.messages),
            "ranks": self.num_ranks,
            "run_time_ns": self.run_time,
            "contention_ns": self.contention,
            "t_contention_ns": self.contention_time,
            "t_contention_share": self.share(self.contention_time),
            "t_blocked_ns": self.blocked,
            "t_blocked_share": self.share(self.blocked),
            "t_sync_ns": self.sync,
            "t_sync_share": self.share(self.sync),
            "split_ns": self.split(),
            "engine_truth_ns": self.truth(),
            "call_sites": sites.to_dict(orient="records"),
            "targets": [{"rank": int(r), "contention": float(c)} for r, c in targets.items()],
            "hot_targets": {"bins_ns": self.bins.tolist(), "contention_ns": self.hot_targets().tolist()},
            "recommendations": [r.to_dict() for r in self.recommendations()],
            "warnings": list(self.warnings),
        }

    def recommendations(self):
        """Advice with its evidence (analysis/recommend.py)."""
        from contend.analysis.recommend import recommend

        return recommend(self)


def diagnose(records, params: Mapping[str, Any], num_ranks: int | None = None, bins: int = 20,
             source: str = "engine", sites: Sequence[Mapping[str, Any]] | None = None) -> Diagnosis:
    """Diagnose a records DataFrame (float ns, docs/formats.md "Records") under LogGOPS ``params`` in
    ns (``contend.simulation.result.parameters_ns``). ``source`` is "engine" or "trace"; ``sites`` (engine records
    only) names call sites by tag and pairs get requests with their replies (``contend.sites``)."""
    if len(records) == 0:
        raise UserError("diagnose: the records hold no messages")
    _check_params(params)
    # Python ints: a rank near 2^63 would wrap in int64 and then index past the grid (np.bincount)
    highest = max(int(records["src"].max()), int(records["dst"].max()))
    ranks = highest + 1 if num_ranks is None else int(num_ranks)
    if highest >= ranks or min(int(records["src"].min()), int(records["dst"].min())) < -1:
        raise UserError(f"diagnose: the records name rank {highest} of {ranks} rank(s)")
    if bins < 1:
        raise UserError(f"diagnose: {bins} time bins; at least 1")
    if ranks * bins > MAX_GRID_CELLS:
        raise UserError(f"diagnose: {ranks} rank(s) x {bins} time bin(s) of the hot-target grid; at most "
                        f"{MAX_GRID_CELLS} cells (give fewer --bins)")
    if source == "trace":
        ops, sync, warnings, (first, last) = _trace(records, params, ranks)
    else:
        ops, sync, warnings = _engine(records, params, ranks, sites or ())
        first, last = float(records["posted"].min()), float(records["completed"].max())
    ops["initiator_demand"] = _demand(ops, "src")
    ops["target_demand"] = _demand(ops, "dst")
    ops["class"] = _classify(ops)
    blocked = _union_per_rank(ops["waiter"].to_numpy(), ops["blocked_from"].to_numpy(),
                              ops["completed"].to_numpy())
    edges = np.linspace(first, last if last > first else first + 1.0, bins + 1)
    return Diagnosis(messages=ops, num_ranks=ranks, run_time=last - first, bins=edges, source=source,
                     blocked=blocked, sync=sync, warnings=tuple(warnings))


def _check_params(params: Mapping[str, Any]) -> None:
    """What the ideal latencies read (contend.params, docs/formats.md): L, o, G and, when given, O, g, S,
    a ``rendezvous`` set (L, o; G, O optional) and the network's sizes, all non-negative numbers."""
    _check_numbers(params, "LogGOPS", required=("L", "o", "G"), optional=("O", "g", "S"))
    rendezvous = params.get("rendezvous")
    if rendezvous is not None:
        if not isinstance(rendezvous, Mapping):
            raise UserError("diagnose: the LogGOPS parameters' rendezvous must be an object or null; give --machine")
        _check_numbers(rendezvous, "rendezvous", required=("L", "o"), optional=("G", "O"))
    network = params.get("network")
    if network is not None:
        if not isinstance(network, Mapping) or not isinstance(network.get("topology"), str):
            raise UserError("diagnose: the parameters' network must be an object with a topology; give --machine")
        _check_numbers(network, "network", required=("packet_bytes", "hop_latency", "injection_bandwidth",
                                                       "link_bandwidth"), optional=("global_bandwidth",))


def _check_numbers(values: Mapping[str, Any], what: str, required: Sequence[str], optional: Sequence[str]) -> None:
    missing = [key for key in required if key not in values]
    if missing:
        raise UserError(f"diagnose: the {what} parameters lack {', '.join(missing)}; give --machine")
    for key in (*required, *optional):
        if key not in values:  # only optional ones by now
            continue
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise UserError(f"diagnose: the {what} parameter {key} is {value!r}; expected a non-negative "
                            "number; give --machine")


def _engine(frame, params: Mapping[str, Any], ranks: int, sites: Sequence[Mapping[str, Any]]):
    """Engine records as operations: each message's contention from its timestamps; messages of a get
    site paired (request + reply) into one get."""
    import pandas as pd

    frame = frame.copy()
    frame["ideal_transfer"] = ideal_transfer(frame, params, ranks)
    # Waiting to start (sender's CPU / NIC busy), a transfer slower than alone, waiting at the busy
    # destination: all three are time the message lost to other messages.
    frame["initiator_wait"] = frame["injected"] - frame["posted"]
    frame["transfer_excess"] = np.maximum(0.0, (frame["arrived"] - frame["injected"]) - frame["ideal_transfer"])
    frame["target_wait"] = frame["received"] - frame["arrived"]
    frame["contention"] = frame["initiator_wait"] + frame["transfer_excess"] + frame["target_wait"]
    # Waiting for the receive to be posted (synchronisation): from when the receiver had processed the
    # arrival (received + its o + (s-1)G, the ideal's receiving part) until the match.
    receiving = frame["ideal"] - frame["ideal_transfer"] if "ideal" in frame else 0.0
    frame["late"] = np.maximum(0.0, frame["matched"] - frame["received"] - receiving)
    frame["kind"] = "send"
    frame["call_site"] = "send op " + frame["send_op"].astype(str)
    frame["context"] = "rank " + frame["src"].astype(str)
    frame["start"], frame["finish"], frame["waiter"] = frame["posted"], frame["received"], frame["dst"]
    frame["blocked_from"] = frame["posted"]
    frame["begin"], frame["end"] = frame["injected"], frame["arrived"]
    frame["tie_target"] = frame["target_wait"] > frame["initiator_wait"] + frame["transfer_excess"]
    if "nic_queue" in frame:
        frame["truth_initiator"] = frame["nic_queue"]
        frame["truth_target"] = frame["target_queue"] + frame["link"]
    warnings: list[str] = []
    routing = (params.get("network") or {}).get("routing")
    if routing in ("valiant", "ugal"):
        warnings.append(f"{routing} routing: the ideal is the minimal route, so detours count as contention")
    gets = []
    for site in sites:
        tag, name = int(site["tag"]), str(site["site"])
        if site.get("kind", "send") == "get":
            reply_tag = int(site["reply_tag"])
            get, frame, lone = _pair_gets(frame, tag, reply_tag, name)
            gets.append(get)
            if lone:
                warnings.append(f"site {name}: {lone} request(s) or reply(ies) without a partner, kept as messages")
        else:
            chosen = frame["tag"] == tag
            frame.loc[chosen, "call_site"] = name
            frame.loc[chosen, "kind"] = str(site.get("kind", "send"))
    ops = pd.concat([frame, *gets], ignore_index=True) if gets else frame.reset_index(drop=True)
    return ops, float(ops["late"].sum()), warnings


def _pair_gets(frame, tag: int, reply_tag: int, name: str):
    """Pair the k-th request (tag, initiator -> target) with the k-th reply (reply_tag, target ->
    initiator); returns (gets, the other messages, number left unpaired)."""
    import pandas as pd

    requests = frame[frame["tag"] == tag].sort_values("posted", kind="stable")
    replies = frame[frame["tag"] == reply_tag].sort_values("posted", kind="stable")
    requests = requests.assign(nth=requests.groupby(["src", "dst"]).cumcount())
    replies = replies.assign(nth=replies.groupby(["src", "dst"]).cumcount())
    pair = requests.reset_index().merge(replies.reset_index(), left_on=["src", "dst", "nth"],
                                        right_on=["dst", "src", "nth"], suffixes=("", "_r"))
    get = pd.DataFrame({
        "src": pair["src"], "dst": pair["dst"], "bytes": pair["bytes_r"], "tag": pair["tag"], "kind": "get",
        "call_site": name, "context": "rank " + pair["src"].astype(str),
        "posted": pair["posted"], "completed": pair["completed_r"],
        "ideal": pair["ideal"] + pair["ideal_r"] if "ideal" in pair else np.nan,
        # the request loses time at the initiator (out) and the target (in); the reply at the target
        # (out: its CPU / NIC serving other gets) and back at the initiator (in)
        "contention": pair["contention"] + pair["contention_r"],
        "late": pair["late"] + pair["late_r"],
        "start": pair["posted"], "finish": pair["received_r"], "waiter": pair["src"],
        "blocked_from": pair["posted"],
        "begin": pair["injected"], "end": pair["arrived_r"],
        "tie_target": (pair["target_wait"] + pair["initiator_wait_r"] + pair["transfer_excess_r"])
        > (pair["initiator_wait"] + pair["transfer_excess"] + pair["target_wait_r"]),
    })
    if "truth_initiator" in pair:
        get["truth_initiator"] = pair["nic_queue"] + pair["target_queue_r"]
        get["truth_target"] = pair["target_queue"] + pair["link"] + pair["nic_queue_r"] + pair["link_r"]
    used = set(pair["index"]) | set(pair["index_r"])
    lone = len(requests) + len(replies) - 2 * len(pair)
    return get, frame.drop(index=list(used)), lone


def _trace(frame, params: Mapping[str, Any], ranks: int):
    """Trace records as operations (analysis/trace_ops.py); t_sync from the collective regions."""
    from contend.analysis.trace_ops import trace_ops

    ops, regions, warnings = trace_ops(frame, params)
    if len(ops) == 0:
        raise UserError("diagnose: the records hold no messages (only collective regions)")
    if params.get("network") is not None:
        warnings.append("the machine's [topology] is not used for trace records: ideal latencies are LogGP")
    sites = ops["call_site"].astype(str)
    raw = sites.str.fullmatch(r"0x[0-9a-fA-F]+")
    if raw.any():
        warnings.append(f"{int(sites[raw].nunique())} of {int(sites.nunique())} call site(s) are unsymbolized "
                        "addresses (0x...): the tracer found no symbols for them (build with -g, keep the binary)")
    late, late_sync = _late_receivers(ops)
    ops["late"] = late
    # A receive posted late still costs its own completion (the receiving part of the ideal).
    ops["contention"] = np.maximum(0.0, ops["observed"] - ops["ideal"] - late
                                   - np.where(late > 0, ops["receive_cost"], 0.0))
    ops["finish"] = ops["completed"]
    ops["begin"], ops["end"] = ops["start"], ops["completed"]
    ops["tie_target"] = False  # no delay split: equal demand counts as initiator contention
    sync = late_sync + _union_per_rank(regions["src"].to_numpy(), regions["posted"].to_numpy(),
                                       regions["completed"].to_numpy())
    return ops, sync, warnings, (float(frame["posted"].min()), float(frame["completed"].max()))


def _late_receivers(ops) -> tuple[np.ndarray, float]:
    """Per paired message, the time its receive was posted late while its receiver was not busy with
    other communication (docs/models.md: a late receiver, synchronisation); and the receivers' rank
    time of it. A receive posted after ``send posted + ideal`` leaves a window W; the part of W the
    receiver spent in other operations (e.g. the previous receive of a blocking loop, queued behind
    the same in-link) stays contention, the rest is the receiver's lateness."""
    late = np.zeros(len(ops))
    receive = ops["recv_posted"].to_numpy()
    window_from = ops["start"].to_numpy() + ops["ideal"].to_numpy()
    lateish = np.isfinite(receive) & (receive > window_from)
    if not lateish.any():
        return late, 0.0
    waiter, busy_from, busy_to = (ops["waiter"].to_numpy(), ops["blocked_from"].to_numpy(),
                                  ops["completed"].to_numpy())
    sync = 0.0
    for rank in np.unique(waiter[lateish]):
        covered = _coverage(busy_from[waiter == rank], busy_to[waiter == rank])
        mine = np.flatnonzero(lateish & (waiter == rank))
        low, high = window_from[mine], receive[mine]
        late[mine] = (high - low) - (covered(high) - covered(low))
        # the rank's lateness as time: the union of its windows, less what other operations covered
        merged = _merge(low, high)
        sync += float(sum((b - a) - (covered(b) - covered(a)) for a, b in merged))
    return np.maximum(late, 0.0), sync


def _merge(start: np.ndarray, end: np.ndarray) -> list[tuple[float, float]]:
    """Intervals merged into disjoint ones, in order (touching ones join)."""
    merged: list[tuple[float, float]] = []
    for a, b in sorted(zip(start.tolist(), end.tolist())):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _coverage(start: np.ndarray, end: np.ndarray):
    """F(t): time before t covered by at least one interval (vectorised, piecewise linear)."""
    merged = _merge(start, end)
    if not merged:
        return lambda t: np.zeros_like(np.asarray(t, dtype=np.float64))
    points = np.array([p for interval in merged for p in interval])
    lengths = np.array([b - a for a, b in merged])
    # cumulative covered time at each interval's start and end
    at_end = np.cumsum(lengths)
    cumulative = np.array([v for start_, end_ in zip(at_end - lengths, at_end) for v in (start_, end_)])
    return lambda t: np.interp(t, points, cumulative)


def _union_per_rank(rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """Sum over ranks of the time covered by at least one of the rank's intervals [start, end]."""
    import pandas as pd

    if len(rank) == 0:
        return 0.0
    order = np.lexsort((start, rank))
    ranks = pd.Series(rank[order])
    finish = pd.Series(end[order]).groupby(ranks.to_numpy()).cummax()
    # A new stretch starts where an interval begins after everything before it (same rank) has ended.
    covered_until = finish.groupby(ranks.to_numpy()).shift(1).fillna(-np.inf).to_numpy()
    return float(np.sum(np.clip(finish.to_numpy() - np.maximum(start[order], covered_until), 0.0, None)))


def ideal_transfer(frame, params: Mapping[str, Any], ranks: int) -> np.ndarray:
    """Ideal injected -> arrived of each message: ``o + L`` in LogGOPS (the engine charges ``(s-1)G``
    at the receiver); between nodes of a network, ``o`` plus the engine's own time of the message alone
    on its route (``network_transfer``: the first packet across every link, then the bytes at the
    slowest), on the minimal route (docs/models.md, "Diagnosis" and "Links")."""
    size = frame["bytes"].to_numpy(dtype=np.float64)
    large = size > params.get("S", np.inf)
    rendezvous = params.get("rendezvous") or params
    o = np.where(large, rendezvous["o"], params["o"]).astype(np.float64)
    latency = np.where(large, rendezvous["L"], params["L"]).astype(np.float64)
    ideal = o + latency
    if params.get("network") is None:
        return ideal
    with user_errors("diagnose"):
        alone = engine().network_transfer(_engine_params(params), ranks, frame["src"].to_numpy(dtype=np.uint32),
                                          frame["dst"].to_numpy(dtype=np.uint32),
                                          frame["bytes"].to_numpy(dtype=np.uint64))
    wire = np.frombuffer(alone, dtype="<u8").astype(np.float64) / 1000.0  # ps -> ns
    return np.where(wire > 0, o + wire, ideal)  # 0: within a node, where the LogGOPS costs stay


def _engine_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The network in the engine's units (hop latency in ps, not the file's ns). A dragonfly's ideal
    is its minimal route: Valiant and UGAL detours count as contention."""
    network = dict(params["network"])
    network["hop_latency"] = int(round(network["hop_latency"] * 1000))
    if network["topology"] == "dragonfly":
        network["routing"] = "minimal"
    return {"network": network}


def _demand(frame, end: str, begin_column: str = "begin", end_column: str = "end") -> np.ndarray:
    """Time-averaged number of other operations in flight (``begin``..``end``: injected..arrived for an
    engine message, posted..completed for a traced operation) at the same ``end`` (src: the initiator,
    dst: the target) during each operation's own flight."""
    demand = np.zeros(len(frame))
    for _, group in frame.groupby(end):
        begin, finish = group[begin_column].to_numpy(), group[end_column].to_numpy()
        # The integral of the number in flight, as a function of time, evaluated at each message's ends.
        times = np.concatenate([begin, finish])
        steps = np.concatenate([np.ones(len(begin)), -np.ones(len(finish))])
        order = np.argsort(times, kind="stable")
        times, level = times[order], np.cumsum(steps[order])
        area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])
        integral = np.interp(finish, times, area) - np.interp(begin, times, area)
        duration = finish - begin
        average = np.divide(integral, duration, out=np.ones(len(group)), where=duration > 0)
        demand[frame.index.get_indexer(group.index)] = np.maximum(0.0, average - 1.0)
    return demand


def _classify(frame):
    """Target when the target saw more demand than the initiator; on a tie, ``tie_target`` (engine: where
    the message waited longer, at the destination or at the sender and on the way; trace: initiator)."""
    import pandas as pd

    initiator, target = frame["initiator_demand"].to_numpy(), frame["target_demand"].to_numpy()
    is_target = np.where(target != initiator, target > initiator, frame["tie_target"].to_numpy(dtype=bool))
    return pd.Categorical.from_codes(is_target.astype(np.int8), categories=list(CLASSES))
