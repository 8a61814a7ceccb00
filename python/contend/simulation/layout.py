"""The shape of a simulated network, as reports need it: what each link joins, where each node sits.

The engine numbers links densely (``engine/src/net/topology.rs``): injection links of nodes ``0..N``,
then ejection links, then the network links of the shape. ``NetworkLayout`` holds the engine's
description of them (``contend._engine.network_links``) as numpy columns, plus the node coordinates of a
torus or mesh, so that a report can name a link ("router 12 -> router 13") and find its dimension and
direction; hops between two ranks come from the engine's routes, so there is no second model of the
topology.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from contend.engine import engine, user_errors

# The engine's link classes and vertex kinds, in the order of their codes.
LINK_CLASSES = ("injection", "ejection", "local", "global")
VERTEX_KINDS = ("node", "router")
GRID_KINDS = ("torus", "mesh")


@dataclass(frozen=True)
class NetworkLayout:
    """Links and nodes of one network for one job.

    Per link (index = link id): ``link_class`` (codes into ``LINK_CLASSES``), ``from_kind`` /
    ``to_kind`` (codes into ``VERTEX_KINDS``), ``from_id`` / ``to_id``, ``capacity`` (fraction of the
    class's nominal bandwidth). ``coordinates``: one row per node for a torus or mesh (routers are
    numbered like their nodes there), empty otherwise. ``node_of_rank``: where each rank runs.
    """

    kind: str
    dims: tuple[int, ...]
    num_nodes: int
    diameter: int
    link_class: np.ndarray = field(repr=False)
    from_kind: np.ndarray = field(repr=False)
    from_id: np.ndarray = field(repr=False)
    to_kind: np.ndarray = field(repr=False)
    to_id: np.ndarray = field(repr=False)
    capacity: np.ndarray = field(repr=False)
    coordinates: np.ndarray = field(repr=False)
    node_of_rank: np.ndarray = field(repr=False)
    params: Mapping[str, Any] = field(repr=False, compare=False)  # the engine's, for its routes

    @classmethod
    def of(cls, params: Mapping[str, Any], ranks: int) -> "NetworkLayout":
        """The layout of ``params["network"]`` (engine parameters) for a job of ``ranks`` ranks."""
        network = params.get("network")
        if network is None:
            raise ValueError("no network in the parameters")
        with user_errors("network"):
            raw = engine().network_links(dict(params), ranks)
        coordinates = np.asarray(raw["coordinates"], dtype=np.int64)
        return cls(
            kind=network["topology"],
            dims=tuple(network.get("dims") or ()),
            num_nodes=int(raw["num_nodes"]),
            diameter=int(raw["diameter"]),
            link_class=np.frombuffer(raw["class"], dtype="|u1"),
            from_kind=np.frombuffer(raw["from_kind"], dtype="|u1"),
            from_id=np.frombuffer(raw["from_id"], dtype="<u4"),
            to_kind=np.frombuffer(raw["to_kind"], dtype="|u1"),
            to_id=np.frombuffer(raw["to_id"], dtype="<u4"),
            capacity=np.frombuffer(raw["capacity"], dtype="<f8"),
            coordinates=coordinates.reshape(len(raw["coordinates"]), len(network.get("dims") or ())),
            node_of_rank=np.asarray(raw["node_of_rank"], dtype=np.int64),
            params=dict(params),
        )

    @property
    def num_links(self) -> int:
        return len(self.link_class)

    @property
    def is_grid(self) -> bool:
        return self.kind in GRID_KINDS

    def endpoint_names(self) -> tuple[list[str], list[str]]:
        """"node 3" / "router 12" for the two ends of every link."""
        def names(kinds: np.ndarray, ids: np.ndarray) -> list[str]:
            return [_vertex_name(k, i) for k, i in zip(kinds.tolist(), ids.tolist())]

        return names(self.from_kind, self.from_id), names(self.to_kind, self.to_id)

    def endpoint_name(self, link: int, end: str) -> str:
        """The name of one end ("from" or "to") of one link, as ``endpoint_names`` gives it."""
        kinds, ids = (self.from_kind, self.from_id) if end == "from" else (self.to_kind, self.to_id)
        return _vertex_name(int(kinds[link]), int(ids[link]))

    def grid_directions(self) -> tuple[np.ndarray, np.ndarray]:
        """For a torus or mesh: per link its dimension and direction (+1 towards higher coordinates,
        -1 lower); -1 and 0 for the injection and ejection links."""
        if not self.is_grid:
            raise ValueError(f"a {self.kind} has no grid dimensions")
        dimension = np.full(self.num_links, -1, dtype=np.int64)
        direction = np.zeros(self.num_links, dtype=np.int64)
        local = np.flatnonzero(self.link_class == LINK_CLASSES.index("local"))
        start = self.coordinates[self.from_id[local]]
        end = self.coordinates[self.to_id[local]]
        moved = np.argmax(start != end, axis=1)  # a grid link changes exactly one coordinate
        sizes = np.asarray(self.dims, dtype=np.int64)[moved]
        step = end[np.arange(len(local)), moved] - start[np.arange(len(local)), moved]
        if self.kind == "torus":
            step = np.where(np.mod(step, sizes) == 1, 1, -1)  # the wrap-around link is a +1 step
        dimension[local] = moved
        direction[local] = np.sign(step)
        return dimension, direction

    def hops(self, source_ranks: np.ndarray, destination_ranks: np.ndarray) -> np.ndarray:
        """Network links on the engine's route between each pair of ranks on an idle network (0 within
        a node), for any topology: the engine's own routing, not a count of coordinates."""
        nodes = self.node_of_rank.astype(np.uint32)
        src = nodes[np.asarray(source_ranks, dtype=np.int64)]
        dst = nodes[np.asarray(destination_ranks, dtype=np.int64)]
        with user_errors("network"):
            routed = engine().route_loads(dict(self.params), src, dst, np.zeros(len(src)))
        return np.frombuffer(routed["hops"], dtype="<u4").astype(np.int64)


def _vertex_name(kind: int, ident: int) -> str:
    return f"{VERTEX_KINDS[kind]} {ident}"
