"""Contention diagnosis of per-message records: the method of Tallent et al. (seed 000), docs/models.md
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
from typing import Any, Mapping

import numpy as np

from contend.errors import UserError

CLASSES = ("initiator", "target")
# Ideal wire times for the topologies whose route length is known without the engine's router.
_ROUTED_KINDS = ("crossbar", "torus", "mesh")


@dataclass(frozen=True)
class Diagnosis:
    """Per-message diagnosis (``messages``: a DataFrame) and the run's totals (ns, float)."""

    messages: Any  # pandas DataFrame: the records plus ideal_transfer, contention, blocked, class, demands
    num_ranks: int
    run_time: float
    bins: np.ndarray  # time-bin edges (ns) of ``hot_targets``

    @property
    def contention(self) -> float:
        return float(self.messages["contention"].sum())

    @property
    def blocked(self) -> float:
        return float(self.messages["blocked"].sum())

    def share(self, total: float) -> float:
        """``total`` (summed over ranks) as a share of the ranks' run time, P * T."""
        return total / (self.num_ranks * self.run_time) if self.run_time > 0 else 0.0

    def split(self) -> dict[str, float]:
        """Contention time by class, initiator / target."""
        by_class = self.messages.groupby("class", observed=False)["contention"].sum()
        return {name: float(by_class.get(name, 0.0)) for name in CLASSES}

    def call_sites(self):
        """Contention per call site (send op), largest first: contention, messages, share of the total,
        initiator / target time, and the sending ranks (contexts) that contributed most."""
        import pandas as pd

        frame = self.messages[self.messages["contention"] > 0]
        rows = []
        for site, group in frame.groupby("send_op"):
            by_class = group.groupby("class", observed=False)["contention"].sum()
            by_rank = group.groupby("src")["contention"].sum().sort_values(ascending=False)
            rows.append({"call_site": f"send op {site}", "send_op": int(site),
                         "contention": float(group["contention"].sum()), "messages": len(group),
                         **{name: float(by_class.get(name, 0.0)) for name in CLASSES},
                         "top_ranks": [int(r) for r in by_rank.index[:5]]})
        table = pd.DataFrame(rows, columns=["call_site", "send_op", "contention", "messages", *CLASSES,
                                            "top_ranks"])
        total = self.contention
        table["share"] = table["contention"] / total if total > 0 else 0.0
        return table.sort_values("contention", ascending=False, kind="stable").reset_index(drop=True)

    def targets(self):
        """Contention per destination rank, largest first."""
        by_dst = self.messages.groupby("dst")["contention"].sum().sort_values(ascending=False)
        return by_dst[by_dst > 0]

    def hot_targets(self) -> np.ndarray:
        """Contention (ns) per destination rank (rows) and time bin (columns of ``bins``): each
        message's contention is spread evenly over its delivery, posted..received."""
        start, end = self.messages["posted"].to_numpy(), self.messages["received"].to_numpy()
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
            "messages": len(self.messages),
            "ranks": self.num_ranks,
            "run_time_ns": self.run_time,
            "t_contention_ns": self.contention,
            "t_contention_share": self.share(self.contention),
            "t_blocked_ns": self.blocked,
            "t_blocked_share": self.share(self.blocked),
            "split_ns": self.split(),
            "call_sites": sites.to_dict(orient="records"),
            "targets": [{"rank": int(r), "contention": float(c)} for r, c in targets.items()],
            "hot_targets": {"bins_ns": self.bins.tolist(), "contention_ns": self.hot_targets().tolist()},
        }


def diagnose(records, params: Mapping[str, Any], num_ranks: int | None = None, bins: int = 20) -> Diagnosis:
    """Diagnose a records DataFrame (float ns, ``contend.records``) under engine-unit LogGOPS ``params``
    in ns (``contend.result.parameters_ns``)."""
    if len(records) == 0:
        raise UserError("diagnose: the records hold no messages")
    frame = records.copy()
    ranks = int(max(frame["src"].max(), frame["dst"].max()) + 1) if num_ranks is None else num_ranks
    frame["ideal_transfer"] = ideal_transfer(frame, params, ranks)
    # Waiting to start (sender's CPU / NIC busy), a transfer slower than alone, waiting at the busy
    # destination: all three are time the message lost to other messages.
    excess = np.maximum(0.0, (frame["arrived"] - frame["injected"]) - frame["ideal_transfer"])
    frame["initiator_wait"] = frame["injected"] - frame["posted"]
    frame["transfer_excess"] = excess
    frame["target_wait"] = frame["received"] - frame["arrived"]
    frame["contention"] = frame["initiator_wait"] + frame["transfer_excess"] + frame["target_wait"]
    frame["blocked"] = frame["matched"] - frame["received"]  # waiting for the receive: synchronisation
    frame["initiator_demand"] = _demand(frame, "src")
    frame["target_demand"] = _demand(frame, "dst")
    frame["class"] = _classify(frame)
    start, end = float(frame["posted"].min()), float(frame["completed"].max())
    edges = np.linspace(start, end if end > start else start + 1.0, bins + 1)
    return Diagnosis(messages=frame, num_ranks=ranks, run_time=end - start, bins=edges)


def ideal_transfer(frame, params: Mapping[str, Any], ranks: int) -> np.ndarray:
    """Ideal injected -> arrived of each message: ``o + L`` in LogGOPS (the engine charges ``(s-1)G``
    at the receiver), ``o + head + s / B`` over a network (docs/models.md, "Links")."""
    size = frame["bytes"].to_numpy(dtype=np.float64)
    large = size > params["S"]
    rendezvous = params.get("rendezvous") or params
    o = np.where(large, rendezvous["o"], params["o"]).astype(np.float64)
    latency = np.where(large, rendezvous["L"], params["L"]).astype(np.float64)
    ideal = o + latency
    network = params.get("network")
    if network is None:
        return ideal
    if network["topology"] not in _ROUTED_KINDS:
        raise UserError(f"diagnose: ideal latency over a {network['topology']} network is not implemented "
                        f"(only {', '.join(_ROUTED_KINDS)}); give a --machine without a [topology]")
    from contend.network import NetworkLayout

    layout = NetworkLayout.of(_engine_params(params), ranks)
    src, dst = frame["src"].to_numpy(), frame["dst"].to_numpy()
    node_src, node_dst = layout.node_of_rank[src], layout.node_of_rank[dst]
    if layout.is_grid:
        pairs = {(int(a), int(b)) for a, b in zip(src, dst)}
        hops_of = {pair: layout.hops(*pair) for pair in pairs}
        hops = np.array([hops_of[(int(a), int(b))] for a, b in zip(src, dst)], dtype=np.float64)
    else:
        hops = np.zeros(len(frame))  # a crossbar: injection link straight onto the ejection link
    injection, link = float(network["injection_bandwidth"]) / 1e9, float(network["link_bandwidth"]) / 1e9
    slowest = np.where(hops > 0, min(injection, link), injection)  # bytes per ns
    packet = np.minimum(float(network["packet_bytes"]), size)
    hop = float(network["hop_latency"])
    head = 2 * (hop + packet / injection) + hops * (hop + packet / link)
    wire = o + head + size / slowest
    return np.where(node_src != node_dst, wire, ideal)  # within a node the LogGOPS costs stay


def _engine_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's units back from the file's ns: the network layout needs only the topology."""
    network = dict(params["network"])
    network["hop_latency"] = int(round(network["hop_latency"] * 1000))
    return {"network": network}


def _demand(frame, end: str) -> np.ndarray:
    """Time-averaged number of other messages in flight (injected..arrived) at the same ``end`` (src:
    the initiator's out-link, dst: the target's in-link) during each message's own transfer."""
    demand = np.zeros(len(frame))
    for _, group in frame.groupby(end):
        begin, finish = group["injected"].to_numpy(), group["arrived"].to_numpy()
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
    """Target when the target's in-link saw more demand than the initiator's out-link; on a tie, where
    the message waited longer (at the destination, or at the sender and on the way)."""
    import pandas as pd

    initiator, target = frame["initiator_demand"].to_numpy(), frame["target_demand"].to_numpy()
    waited_at_target = frame["target_wait"] > frame["initiator_wait"] + frame["transfer_excess"]
    is_target = np.where(target != initiator, target > initiator, waited_at_target)
    return pd.Categorical.from_codes(is_target.astype(np.int8), categories=list(CLASSES))
