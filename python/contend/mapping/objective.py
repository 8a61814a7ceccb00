"""What a placement costs under a machine's routing (docs/models.md, "Mapping objective").

Routes are the engine's on an idle network (``route_loads``): hop-bytes weigh each pair's bytes by the
network links of its route, link loads lay each pair's bytes on every link of it (injection and
ejection included). With a schedule, the placement is also simulated for its makespan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from contend.cachedir import cache_dir
from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.mapping.graph import CommGraph
from contend.simulation.result import ps_to_ns


@dataclass(frozen=True)
class Objective:
    """``hop_bytes``: sum over pairs of bytes x network links crossed; ``bytes``: sum of the bytes;
    ``hops_per_byte``: their ratio (0 without bytes); ``max_link_load`` and ``mean_link_load``: bytes
    on the busiest link and on average over the links that carry any (0 when none does);
    ``makespan_ns``: the simulated makespan of the schedule under the placement, when one was given."""

    hop_bytes: int
    bytes: int
    hops_per_byte: float
    max_link_load: float
    mean_link_load: float
    makespan_ns: float | None = None


def _placed_pairs(graph: CommGraph, params: dict, node_of_rank) -> tuple[np.ndarray, dict]:
    """The placement as an int64 array, and the engine's routes of the graph's pairs under it."""
    nodes = np.asarray(node_of_rank, dtype=np.int64)
    if nodes.shape != (graph.ranks,):
        raise UserError(f"placement gives {nodes.size} nodes for {graph.ranks} ranks; give one node per rank")
    if nodes.size and nodes.min() < 0:
        raise UserError(f"placement puts rank {int(np.argmin(nodes))} on node {int(nodes.min())}; nodes are 0 or more")
    if not params.get("network"):
        raise UserError("no network in the machine: mapping needs a machine with a [topology] table")
    with user_errors("mapping"):
        routed = engine().route_loads(params, nodes[graph.src], nodes[graph.dst], graph.bytes.astype(np.float64))
    return nodes, routed


def link_loads(graph: CommGraph, params: dict, node_of_rank) -> np.ndarray:
    """Bytes laid on each link (indexed by the engine's link id) when ranks run on ``node_of_rank``."""
    return np.frombuffer(_placed_pairs(graph, params, node_of_rank)[1]["link_bytes"], "<f8")


def evaluate(graph: CommGraph, params: dict, node_of_rank, schedule: str | os.PathLike | None = None) -> Objective:
    """The objective of placing ``graph``'s ranks on ``node_of_rank`` on the machine of ``params`` (the
    engine parameters of ``loggops_params(machine)``); with ``schedule`` (a GOAL file) also its simulated
    makespan with ``network.placement`` set to the placement. UserError on a placement that does not fit
    the machine or a machine without a network."""
    nodes, routed = _placed_pairs(graph, params, node_of_rank)
    hops = np.frombuffer(routed["hops"], "<u4").astype(np.int64)
    loads = np.frombuffer(routed["link_bytes"], "<f8")
    hop_bytes = int((hops * graph.bytes).sum())
    total = graph.total_bytes
    used = loads[loads > 0]
    makespan = None
    if schedule is not None:
        path = os.fspath(schedule)
        placed = {**params, "network": {**params["network"], "placement": nodes.tolist()}}
        with user_errors(path):
            raw = engine().simulate_goal(path, placed, cache_dir=os.fspath(cache_dir("goal")))
        makespan = ps_to_ns(raw["makespan_ps"])
    return Objective(
        hop_bytes=hop_bytes,
        bytes=total,
        hops_per_byte=hop_bytes / total if total else 0.0,
        max_link_load=float(loads.max()) if loads.size else 0.0,
        mean_link_load=float(used.mean()) if used.size else 0.0,
        makespan_ns=makespan,
    )
