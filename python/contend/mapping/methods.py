"""Placement methods: which node each rank of a communication graph runs on.

Every method returns ``node_of_rank`` (int64, one node per rank) that holds at most ``ranks_per_node``
ranks on any node, for the machine of the engine parameters (``params["network"]``):

- ``block``, ``cyclic``: the engine's own placements (``engine/src/net/placement.rs``), over the
  job's ``ceil(R / c)`` nodes.
- ``random``: the block allocation's slots shuffled (seeded).
- ``sfc``: nodes of a torus or mesh ordered along a Morton (Z-order) curve of their coordinates,
  consecutive ranks filling consecutive nodes; block order on other shapes.
- ``metis``: METIS k-way partition of the graph into the job's nodes (exact capacity), part i on
  node i: few bytes between nodes, no idea where the nodes are.
- ``topo``: recursive bisection of the graph (METIS, two parts sized to the two halves of the
  topology) matched to a recursive bisection of the machine's nodes, then the engine's swap
  refinement (``refine_placement``).
- ``scotch``: Scotch's own mapping onto a target architecture (``scotch_gmap``), when installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pymetis

from contend.errors import UserError
from contend.mapping.graph import CommGraph
from contend.network import NetworkLayout

METHODS = ("block", "cyclic", "random", "sfc", "metis", "topo", "scotch")

SCOTCH_TIMEOUT_S = 600  # scotch_gmap maps 65,536 vertices in seconds; this only bounds a hung run
# METIS keeps weights in 32-bit integers: edge weights are scaled so that their sum stays below this.
_WEIGHT_BUDGET = 2**28


def place(graph: CommGraph, params: Mapping[str, Any], method: str, seed: int = 0) -> np.ndarray:
    """The node of each rank of ``graph`` under ``method`` (one of METHODS) on the machine of
    ``params`` (engine parameters with a network). Deterministic for a seed. Raises UserError for an
    unknown method, a machine without a network, or more ranks than the machine holds."""
    if method not in METHODS:
        raise UserError(f"unknown mapping method '{method}'; use one of {', '.join(METHODS)}")
    machine = _Machine.of(params, graph.ranks)
    return np.asarray(_PLACERS[method](graph, machine, seed), dtype=np.int64)


def scotch_available() -> bool:
    """Whether Scotch's ``scotch_gmap`` (Debian package ``scotch``) is on the PATH."""
    return shutil.which("scotch_gmap") is not None


@dataclass(frozen=True)
class _Machine:
    """What the methods need of the machine: its params (placement reset to block), size, capacity
    and node coordinates (a grid's; empty otherwise)."""

    params: dict[str, Any]
    ranks: int
    num_nodes: int
    per_node: int
    kind: str
    dims: tuple[int, ...]
    coordinates: np.ndarray

    @classmethod
    def of(cls, params: Mapping[str, Any], ranks: int) -> "_Machine":
        if params.get("network") is None:
            raise UserError("mapping needs a machine with a network topology ([topology] in the machine file)")
        # The machine's own placement (maybe a list for another job) plays no part in choosing one.
        params = {**params, "network": {**params["network"], "placement": "block"}}
        layout = NetworkLayout.of(params, 1)
        per_node = int(params["network"]["ranks_per_node"])
        if ranks > layout.num_nodes * per_node:
            raise UserError(f"the graph has {ranks} ranks but the machine holds at most "
                            f"{layout.num_nodes * per_node} ({layout.num_nodes} nodes x {per_node} ranks per node)")
        return cls(params, ranks, layout.num_nodes, per_node, layout.kind, layout.dims,
                   layout.coordinates if layout.is_grid else np.zeros((0, 0), dtype=np.int64))

    @property
    def is_grid(self) -> bool:
        return len(self.coordinates) > 0

    @property
    def wraps(self) -> np.ndarray:
        """Per grid dimension: whether it is a ring (a torus dimension of at least 3)."""
        return np.asarray([self.kind == "torus" and d >= 3 for d in self.dims])

    def engine_placement(self, name: str) -> np.ndarray:
        """The engine's placement ``name`` (block or cyclic) of this job."""
        params = {**self.params, "network": {**self.params["network"], "placement": name}}
        return NetworkLayout.of(params, self.ranks).node_of_rank


def _block(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    return machine.engine_placement("block")


def _cyclic(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    return machine.engine_placement("cyclic")


def _random(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    return machine.engine_placement("block")[np.random.default_rng(seed).permutation(machine.ranks)]


def _sfc(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    if not machine.is_grid:
        return machine.engine_placement("block")
    return _morton_order(machine.coordinates)[np.arange(machine.ranks) // machine.per_node]


def _morton_order(coordinates: np.ndarray) -> np.ndarray:
    """Nodes sorted by the Morton key of their coordinates (bits of the dimensions interleaved,
    lowest dimension in the lowest bit), so that nodes close on the curve are close on the grid."""
    key = np.zeros(len(coordinates), dtype=np.uint64)
    bits = int(coordinates.max(initial=0)).bit_length()
    dims = coordinates.shape[1]
    for bit in range(bits):
        for d in range(dims):
            key |= ((coordinates[:, d].astype(np.uint64) >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bit * dims + d)
    return np.argsort(key, kind="stable")


# --- METIS -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Csr:
    """The undirected graph with integer weights METIS accepts."""

    xadj: np.ndarray
    adjncy: np.ndarray
    weight: np.ndarray  # float bytes, both ways
    scale: float  # METIS weight = max(1, round(bytes * scale))

    @classmethod
    def of(cls, graph: CommGraph) -> "_Csr":
        xadj, adjncy, weight = graph.undirected()
        total = float(weight.sum())
        return cls(xadj, adjncy, weight.astype(np.float64), min(1.0, _WEIGHT_BUDGET / total) if total else 1.0)

    def metis_weights(self, weight: np.ndarray) -> np.ndarray:
        return np.maximum(1, np.rint(weight * self.scale)).astype(np.int64)

    def rows(self, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the edges leaving ``vertices``: the index of their source in ``vertices`` and the
        position of the edge in adjncy."""
        starts = self.xadj[vertices]
        counts = self.xadj[vertices + 1] - starts
        owner = np.repeat(np.arange(len(vertices)), counts)
        position = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(starts, counts)
        return owner, position


def _metis(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    parts = -(-machine.ranks // machine.per_node)  # the job's nodes, as block uses
    capacity = np.full(parts, machine.per_node)
    capacity[-1] = machine.ranks - machine.per_node * (parts - 1)
    if parts == 1:
        return np.zeros(machine.ranks, dtype=np.int64)
    csr = _Csr.of(graph)
    _, membership = pymetis.part_graph(parts, xadj=csr.xadj, adjncy=csr.adjncy,
                                       eweights=csr.metis_weights(csr.weight),
                                       tpwgts=(capacity / machine.ranks).tolist(),
                                       options=pymetis.Options(seed=seed))
    part = _repair(np.asarray(membership, dtype=np.int64), capacity, csr.xadj, csr.adjncy, csr.weight)
    return part  # part i on node i: the job's nodes of the block allocation


def _repair(part: np.ndarray, capacity: np.ndarray, xadj: np.ndarray, adjncy: np.ndarray,
            weight: np.ndarray) -> np.ndarray:
    """METIS balances within a few percent; this moves ranks out of overfull parts until every part
    holds at most its capacity: each time the rank whose move costs least (bytes to its part minus
    bytes to the part it joins) into the underfull part it is most connected to."""
    part = part.copy()
    load = np.bincount(part, minlength=len(capacity))
    for p in np.flatnonzero(load > capacity):
        members = np.flatnonzero(part == p)
        excess = int(load[p] - capacity[p])
        for _ in range(excess):
            best = None
            for v in members[part[members] == p]:
                nb = adjncy[xadj[v]:xadj[v + 1]]
                w = weight[xadj[v]:xadj[v + 1]]
                conn = np.bincount(part[nb], weights=w, minlength=len(capacity))
                room = np.flatnonzero(load < capacity)
                target = room[np.argmax(conn[room])]
                cost = conn[p] - conn[target]
                if best is None or cost < best[0]:
                    best = (cost, v, target)
            _, v, target = best
            part[v] = target
            load[p] -= 1
            load[target] += 1
    return part


# --- topology-aware recursive bisection -----------------------------------------------------------

def _topo(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    return _bisection(_Csr.of(graph), machine, seed)


@dataclass
class _Region:
    """A box of the grid (``lo <= coordinate < hi`` per dimension) or, on other shapes, a range
    ``lo <= node < hi`` of the engine's node order, which follows the hierarchy (leaf switches,
    routers and groups hold consecutive nodes)."""

    lo: np.ndarray
    hi: np.ndarray

    @property
    def nodes(self) -> int:
        return int(np.prod(self.hi - self.lo))

    @property
    def center(self) -> np.ndarray:
        return (self.lo + self.hi - 1) / 2

    def halves(self, d: int) -> tuple["_Region", "_Region"]:
        """The region cut in two along dimension ``d`` (the lower half the smaller if odd)."""
        mid = self.lo[d] + (self.hi[d] - self.lo[d]) // 2
        lower = _Region(self.lo.copy(), self.hi.copy())
        lower.hi[d] = mid
        upper = _Region(self.lo.copy(), self.hi.copy())
        upper.lo[d] = mid
        return lower, upper

    def border_nodes(self, dims: np.ndarray, wraps: np.ndarray) -> int:
        """Nodes of the region with a network neighbour outside it."""
        extent = self.hi - self.lo
        closed = np.where(wraps, extent == dims, (self.lo == 0) & (self.hi == dims))  # no link leaves
        ends = np.where(wraps, 2, (self.lo > 0).astype(np.int64) + (self.hi < dims))
        interior = np.where(closed, extent, np.maximum(extent - ends, 0))
        return self.nodes - int(np.prod(interior))


def _bisection(csr: _Csr, machine: _Machine, seed: int) -> np.ndarray:
    """Recursive bisection of the graph matched to a recursive bisection of the nodes.

    A region of nodes is cut in two along the dimension whose cut crosses fewest links (the longest
    extent, a full ring of a torus counting half since cutting it crosses two planes); its ranks are
    bisected by METIS into parts sized to fill the first half before the second, so a job smaller
    than the machine lands on a compact block of nodes. Regions are cut level by level, and a rank's
    bytes to ranks outside its region pull it towards the half nearer to where those ranks already
    are (terminal propagation: two anchor vertices, each bound to one half); ties between dimensions
    go to the one such pulls favour, which keeps sibling regions aligned."""
    ranks, per_node = machine.ranks, machine.per_node
    if machine.is_grid:
        dims = np.asarray(machine.dims, dtype=np.int64)
        wraps = machine.wraps
    else:
        dims = np.asarray([machine.num_nodes], dtype=np.int64)
        wraps = np.asarray([False])
    strides = np.concatenate([[1], np.cumprod(dims)[:-1]])
    whole = _Region(np.zeros(len(dims), dtype=np.int64), dims.copy())
    center = np.tile(whole.center, (ranks, 1))  # where each rank's region is, as far as decided
    node_of_rank = np.empty(ranks, dtype=np.int64)
    local = np.full(ranks, -1, dtype=np.int64)
    queue = [(np.arange(ranks), whole)]
    while queue:
        members, region = queue.pop(0)
        if region.nodes == 1:
            node_of_rank[members] = int(region.lo @ strides)
            continue
        extent = region.hi - region.lo
        # External edges of the region's ranks; per dimension, each rank's pull towards the lower
        # half: bytes x (hops to its outside partners from the upper half - from the lower half).
        local[members] = np.arange(len(members))
        owner, position = csr.rows(members)
        partner = csr.adjncy[position]
        inside = local[partner] >= 0
        outside = ~inside
        inner = (owner[inside], local[partner[inside]], csr.weight[position[inside]])
        cut_links = {d: region.nodes // extent[d] * (2 if wraps[d] and extent[d] == dims[d] else 1)
                     for d in np.flatnonzero(extent > 1)}
        options = []
        for d in (d for d in cut_links if cut_links[d] == min(cut_links.values())):
            halves = region.halves(d)
            where = center[partner[outside], d]
            hops = [_ring_distance(h.center[d], where, dims[d], wraps[d]) * csr.weight[position[outside]]
                    for h in halves]
            pull = np.bincount(owner[outside], weights=hops[1] - hops[0], minlength=len(members))
            in_lower = min(len(members), halves[0].nodes * per_node)
            if in_lower == len(members):
                side = np.zeros(len(members), dtype=bool)
            else:
                side = _split(csr, inner, pull, in_lower, seed)
            # Cost of the choice: bytes cut inside (one hop at least) and the hops to the outside
            # it adds along d (against the region as a whole, so that dimensions compare).
            cut = inner[2][side[inner[0]] != side[inner[1]]].sum() / 2
            before = _ring_distance(region.center[d], where, dims[d], wraps[d]) @ csr.weight[position[outside]]
            options.append((cut + hops[0].sum() + pull[side].sum() - before, d, halves, side))
        best = min(cost for cost, *_ in options)
        options = [o for o in options if o[0] - best <= 1e-9 * max(1.0, abs(best))]
        if len(options) > 1:
            # Nothing tells the dimensions apart (say, a segment of a ring against a whole ring
            # twice as long: both cuts cross as many links, and the neighbours all lie beyond
            # both): take the one whose halves have as many nodes on their border as the graph's
            # halves have ranks with partners outside them, so that the cut METIS found is the
            # one the nodes make.
            def mismatch(option) -> float:
                _, _, halves, side = option
                border = np.zeros(len(members), dtype=bool)
                border[owner[outside]] = True
                border[inner[0][side[inner[0]] != side[inner[1]]]] = True
                count = np.bincount(side, weights=border, minlength=2)
                return sum(abs(count[i] - per_node * h.border_nodes(dims, wraps)) for i, h in enumerate(halves))
            options.sort(key=mismatch)
        _, d, (lower, upper), side = options[0]
        local[members] = -1
        for half, part in ((lower, members[~side]), (upper, members[side])):
            if len(part):
                center[part] = half.center
                queue.append((part, half))
    return node_of_rank


def _ring_distance(a: float, b: np.ndarray, size: int, ring: bool) -> np.ndarray:
    apart = np.abs(b - a)
    return np.minimum(apart, size - apart) if ring else apart


def _split(csr: _Csr, inner: tuple[np.ndarray, np.ndarray, np.ndarray], pull: np.ndarray,
           in_lower: int, seed: int) -> np.ndarray:
    """Bisects ``n`` ranks (edges ``inner`` between them, in local numbers, sorted by source) into
    exactly ``in_lower`` ranks on the lower side (False) and the rest (True); ``pull`` > 0 draws a
    rank to the lower side. METIS sees the pulls as edges to two anchor vertices (terminal propagation),
    which a good cut puts on opposite sides; the side the pulls favour is the lower one."""
    n = len(pull)
    src, dst, weight = inner
    if n == 2:  # one rank each side (in_lower is 1): the edge between them is cut anyway
        side = np.ones(2, dtype=bool)
        side[int(np.argmax(pull))] = False
        return side
    pulled = np.rint(np.abs(pull) * csr.scale).astype(np.int64)
    ranks = np.flatnonzero(pulled)
    anchors = 2 if len(ranks) else 0  # isolated anchors would only upset METIS's balance
    anchor = np.where(pull[ranks] > 0, n, n + 1)
    rows = np.concatenate([src, ranks, anchor])
    order = np.argsort(rows, kind="stable")
    xadj = np.zeros(n + anchors + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n + anchors), out=xadj[1:])
    adjncy = np.concatenate([dst, anchor, ranks])[order]
    eweights = np.concatenate([csr.metis_weights(weight), pulled[ranks], pulled[ranks]])[order]
    total = n + anchors
    lower = (in_lower + anchors / 2) / total
    _, membership = pymetis.part_graph(2, xadj=xadj, adjncy=adjncy, eweights=eweights,
                                       tpwgts=[lower, 1 - lower], options=pymetis.Options(seed=seed, ncuts=4))
    side = np.asarray(membership[:n], dtype=bool)
    if pull[~side].sum() < pull[side].sum():  # the half the pulls favour is the lower side
        side = ~side
    # Exact sizes: move the ranks that cost least to move (bytes kept on their side, net of pulls).
    own = np.bincount(src, weights=weight * (side[src] == side[dst]), minlength=n)
    across = np.bincount(src, weights=weight, minlength=n) - own
    cost = own - across + np.where(side, -pull, pull)
    excess = int((~side).sum()) - in_lower
    movers = np.flatnonzero(side == (excess < 0))
    side[movers[np.argsort(cost[movers], kind="stable")[:abs(excess)]]] ^= True
    return side


_PLACERS = {
    "block": _block,
    "cyclic": _cyclic,
    "random": _random,
    "sfc": _sfc,
    "metis": _metis,
    "topo": _topo,
}
