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

import functools
import itertools
import math
import shutil
import subprocess
from contend.atomic import scratch_directory
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pymetis

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.mapping.graph import CommGraph
from contend.mapping.objective import evaluate
from contend.simulation.layout import NetworkLayout

METHODS = ("block", "cyclic", "random", "sfc", "metis", "topo", "scotch")

# Rounds of swaps at most (they stop earlier when a round accepts none). After a bisection, rounds
# beyond the fourth gained nothing measurable (65,536-rank stencil: 1.2299 hops per byte after 4 or 20).
REFINE_ROUNDS = 4
SCOTCH_TIMEOUT_S = 600  # scotch_gmap maps 65,536 ranks in about 30 s; this only bounds a hung run
# Edge weights are scaled so that their sum stays below this: Scotch's Debian build (and METIS built
# with 32-bit indices) keeps weights in 32-bit integers, with room left for pulls (bytes x hops).
_WEIGHT_BUDGET = 2**28
# Bisections of at most this many ranks try every split.
_EXHAUSTIVE = 10
# topo runs up to _MAX_TRIALS bisections, fewer on large graphs: _TRIAL_EDGES // (2 x edges), at least one.
_MAX_TRIALS = 4
_TRIAL_EDGES = 2**18


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


def _metis_seed(seed: int) -> int:
    """METIS takes its seed as a C int: ours (any 64-bit count, and the bisections' derived ones)
    folded into its range."""
    return seed % (2**31 - 1)


def _metis(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    parts = -(-machine.ranks // machine.per_node)  # the job's nodes, as block uses
    capacity = np.full(parts, machine.per_node)
    capacity[-1] = machine.ranks - machine.per_node * (parts - 1)
    if parts == 1:
        return np.zeros(machine.ranks, dtype=np.int64)
    csr = _Csr.of(graph)
    _, membership = pymetis.part_graph(parts, pymetis.CSRAdjacency(csr.xadj, csr.adjncy),
                                       eweights=csr.metis_weights(csr.weight),
                                       tpwgts=(capacity / machine.ranks).tolist(),
                                       options=pymetis.Options(seed=_metis_seed(seed)))
    part = _repair(np.asarray(membership, dtype=np.int64), capacity, csr.xadj, csr.adjncy, csr.weight)
    return part  # part i on node i: the job's nodes of the block allocation


def _repair(part: np.ndarray, capacity: np.ndarray, xadj: np.ndarray, adjncy: np.ndarray,
            weight: np.ndarray) -> np.ndarray:
    """METIS and Scotch balance within a few percent; this moves ranks out of overfull parts until
    every part holds at most its capacity: each time the rank whose move costs least (bytes to its
    part minus bytes to the part it joins) into the open part it is most connected to (any open
    part when it has no partner in one)."""
    part = part.copy()
    load = np.bincount(part, minlength=len(capacity))
    for p in np.flatnonzero(load > capacity):
        members = np.flatnonzero(part == p)
        for _ in range(int(load[p] - capacity[p])):
            open_parts = load < capacity
            best = None
            for v in members[part[members] == p]:
                span = slice(xadj[v], xadj[v + 1])
                joined, conn = np.unique(part[adjncy[span]], return_inverse=True)
                conn = np.bincount(conn, weights=weight[span], minlength=len(joined))
                own = conn[joined == p].sum()
                reachable = open_parts[joined]
                if reachable.any():
                    target = int(joined[reachable][np.argmax(conn[reachable])])
                    cost = own - conn[reachable].max()
                else:
                    target, cost = int(np.argmax(open_parts)), own
                if best is None or cost < best[0]:
                    best = (cost, v, target)
            _, v, target = best
            part[v] = target
            load[p] -= 1
            load[target] += 1
    return part


# --- topology-aware recursive bisection -----------------------------------------------------------

def _topo(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    """The best, in hop-bytes, of a few recursive bisections (METIS's seeds; its cuts tie often on
    regular graphs and the ties decide how well the pieces line up), of block (a graph already in
    the machine's order) and of ``metis`` (which groups ranks into nodes better where several share
    one), then the engine's swap refinement, which never makes it worse."""
    csr = _Csr.of(graph)
    trials = min(_MAX_TRIALS, max(1, _TRIAL_EDGES // max(1, len(csr.adjncy))))
    candidates = [_bisection(csr, machine, _MAX_TRIALS * seed + trial + 1) for trial in range(trials)]
    candidates += [machine.engine_placement("block"), _metis(graph, machine, seed)]
    start = min(candidates, key=lambda nodes: evaluate(graph, machine.params, nodes).hop_bytes)
    with user_errors("mapping"):
        refined = engine().refine_placement(machine.params, graph.ranks, start.tolist(), graph.src.tolist(),
                                            graph.dst.tolist(), graph.bytes.tolist(), REFINE_ROUNDS, seed)
    return np.asarray(refined, dtype=np.int64)


@dataclass
class _Region:
    """A box of the grid (``lo <= coordinate < hi`` per dimension) or, on other shapes, a range
    ``lo <= node < hi`` of the engine's node order, which follows the hierarchy (leaf switches,
    routers and groups hold consecutive nodes)."""

    lo: np.ndarray
    hi: np.ndarray

    @property
    def nodes(self) -> int:
        return math.prod((self.hi - self.lo).tolist())

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

    def links_out(self, dims: np.ndarray, wraps: np.ndarray) -> np.ndarray:
        """How many of the region's nodes have 0, 1, 2, ... network links leaving the region."""
        counts = np.ones(1, dtype=np.int64)
        for lo, hi, size, ring in zip(self.lo.tolist(), self.hi.tolist(), dims.tolist(), wraps.tolist()):
            x = np.arange(lo, hi)
            if ring:  # a segment of a ring loses a link at each end; the whole ring none
                out = ((x == lo) + (x == hi - 1)) * (hi - lo < size)
            else:
                out = (x == lo) * (lo > 0) + (x == hi - 1) * (hi < size)
            counts = np.convolve(counts, np.bincount(out, minlength=3))
        return counts


def _bisection(csr: _Csr, machine: _Machine, seed: int) -> np.ndarray:
    """Recursive bisection of the graph matched to a recursive bisection of the nodes
    (docs/models.md, "Placement methods").

    Regions of nodes are cut in two level by level, in scanline order (highest dimension slowest)
    so that each region but the first of a level follows a neighbour already cut; a region's ranks
    are bisected into parts sized to fill its lower half first, so a job smaller than the machine
    lands on a compact block of nodes. A rank's bytes to ranks outside its region pull it towards
    the half nearer to where those ranks are, as far as decided (terminal propagation). Among the
    dimensions whose cut crosses fewest links (the longest extent, a whole ring of a torus counting
    half since cutting it crosses two planes), the cheapest cut wins; ties go to the one whose
    halves look like the graph's (``mismatch``)."""
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
    level = [(np.arange(ranks), whole)]
    queue: list = []
    while level or queue:
        if not queue:
            # Each level's regions in scanline order (highest dimension slowest), so that every
            # region but the first has a neighbour already cut whose ranks pull its own.
            order = np.lexsort(np.array([r.lo for _, r in level]).T)
            queue, level = [level[i] for i in order][::-1], []
        members, region = queue.pop()
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
        unpulled: dict[int, np.ndarray] = {}
        for d in (d for d in cut_links if cut_links[d] == min(cut_links.values())):
            halves = region.halves(d)
            where = center[partner[outside], d]
            hops = [_ring_distance(h.center[d], where, dims[d], wraps[d]) * csr.weight[position[outside]]
                    for h in halves]
            pull = np.bincount(owner[outside], weights=hops[1] - hops[0], minlength=len(members))
            in_lower = min(len(members), halves[0].nodes * per_node)
            if in_lower == len(members):
                side = np.zeros(len(members), dtype=bool)
            elif not pull.any() and in_lower in unpulled:
                side = unpulled[in_lower]  # the same bisection as for another dimension
            else:
                side = _split(csr, inner, pull, in_lower, seed)
                if not pull.any():
                    unpulled[in_lower] = side
            # Cost of the choice: bytes cut inside (one hop at least) and the hops to the outside
            # it adds along d against the region as a whole, counting only partners nearer one
            # half than the other (a region beyond both ends of a ring segment, whose ranks could
            # be anywhere in it, would otherwise favour cutting the segment).
            cut = inner[2][side[inner[0]] != side[inner[1]]].sum() / 2
            before = _ring_distance(region.center[d], where, dims[d], wraps[d]) * csr.weight[position[outside]]
            after = np.where(side[owner[outside]], hops[1], hops[0])
            options.append((cut + ((after - before) * (hops[0] != hops[1])).sum(), d, halves, side))
        best = min(cost for cost, *_ in options)
        options = [o for o in options if o[0] - best <= 1e-9 * max(1.0, abs(best))]
        if len(options) > 1:
            # Nothing tells the dimensions apart (say, a segment of a ring and a whole ring twice
            # as long: both cuts cross as many links, and the neighbours lie beyond both): take the
            # one whose halves have as many nodes with 0, 1, 2, ... links leaving them as the
            # graph's halves have ranks with as many partners outside them, so that the cut the
            # nodes make is the one METIS found.
            def mismatch(option) -> float:
                _, _, halves, side = option
                leaving = side[inner[0]] != side[inner[1]]
                out = np.bincount(owner[outside], minlength=len(members)) + \
                    np.bincount(inner[0][leaving], minlength=len(members))
                total = 0
                for half, ranks_in in zip(halves, (~side, side)):
                    graph = np.bincount(out[ranks_in])
                    nodes = per_node * half.links_out(dims, wraps)
                    size = max(len(graph), len(nodes))
                    total += np.abs(np.pad(graph, (0, size - len(graph))) - np.pad(nodes, (0, size - len(nodes)))).sum()
                return total
            options.sort(key=mismatch)
        _, d, (lower, upper), side = options[0]
        local[members] = -1
        for half, part in ((lower, members[~side]), (upper, members[side])):
            if len(part):
                center[part] = half.center
                level.append((part, half))
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
    if n == 2:  # one rank each side: the pulls alone decide
        return np.arange(2) != int(np.argmax(pull))
    if n <= _EXHAUSTIVE:  # few enough to try every split (METIS is a heuristic, and slower here)
        splits = _all_splits(n, in_lower)
        cut = (splits[:, src] != splits[:, dst]) @ weight / 2
        return splits[int(np.argmin(cut + splits @ pull))]
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
    _, membership = pymetis.part_graph(2, pymetis.CSRAdjacency(xadj, adjncy), eweights=eweights,
                                       tpwgts=[lower, 1 - lower], options=pymetis.Options(seed=_metis_seed(seed), ncuts=4))
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


@functools.lru_cache(maxsize=None)
def _all_splits(n: int, in_lower: int) -> np.ndarray:
    """Every way to put ``in_lower`` of ``n`` ranks on the lower side (False), one per row."""
    splits = np.ones((math.comb(n, in_lower), n), dtype=bool)
    for row, lower in enumerate(itertools.combinations(range(n), in_lower)):
        splits[row, list(lower)] = False
    return splits


# --- Scotch ------------------------------------------------------------------------------------

def _scotch(graph: CommGraph, machine: _Machine, seed: int) -> np.ndarray:
    """Scotch's static mapping (``scotch_gmap``) of the graph onto the machine as a target
    architecture: ``torusXD``/``meshXD`` for grids, a tree-leaf (``tleaf``) of the hierarchy of a fat
    tree or a dragonfly, ``cmplt`` (all nodes alike) for a crossbar. Node numbers agree with the
    engine's (Scotch's grids number the first dimension fastest, as the engine does; tree-leaf
    vertices are numbered leaf by leaf, as the engine numbers nodes under switches and routers).

    Ranks per node: every source vertex weighs 1 and every target vertex is alike (the built-in
    architectures weigh their vertices equally), so Scotch spreads the ranks evenly over all the
    nodes, up to its load imbalance tolerance (``-b``, kept small); the few ranks over a node's
    capacity are then moved as METIS's are (``_repair``). A job smaller than the machine is thus
    spread over the whole machine."""
    if not scotch_available():
        raise UserError("method scotch needs Scotch's scotch_gmap on the PATH: install the Debian/Ubuntu "
                        "package scotch (apt-get install scotch; `make system-deps` does it)")
    csr = _Csr.of(graph)
    with scratch_directory("contend-scotch-") as tmp:
        source, target, mapping = (Path(tmp) / name for name in ("job.grf", "machine.tgt", "job.map"))
        source.write_text(_scotch_graph(csr))
        target.write_text(_scotch_target(machine) + "\n")
        try:
            # -Cd: deterministic (Scotch's fixed seed; ``seed`` does not change it), -cq: quality.
            run = subprocess.run(["scotch_gmap", "-Cd", "-cq", "-b0.01", source, target, mapping],
                                 capture_output=True, text=True, timeout=SCOTCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise UserError(f"scotch_gmap did not map {graph.ranks} ranks within {SCOTCH_TIMEOUT_S} s") from None
        if run.returncode != 0:
            problem = (run.stderr.strip().splitlines() or [f"exit code {run.returncode}"])[-1]
            raise UserError(f"scotch_gmap failed: {problem}")
        rows = np.loadtxt(mapping, dtype=np.int64, skiprows=1, ndmin=2)
    part = np.empty(graph.ranks, dtype=np.int64)
    part[rows[:, 0]] = rows[:, 1]
    return _repair(part, np.full(machine.num_nodes, machine.per_node), csr.xadj, csr.adjncy, csr.weight)


def _scotch_graph(csr: _Csr) -> str:
    """The graph in Scotch's source graph format (version 0, base 0, edge weights: flag 010)."""
    n = len(csr.xadj) - 1
    weights = csr.metis_weights(csr.weight)
    lines = ["0", f"{n} {len(csr.adjncy)}", "0 010"]
    for v in range(n):
        span = slice(csr.xadj[v], csr.xadj[v + 1])
        pairs = np.column_stack([weights[span], csr.adjncy[span]]).ravel()
        lines.append(" ".join(map(str, [csr.xadj[v + 1] - csr.xadj[v], *pairs.tolist()])))
    return "\n".join(lines) + "\n"


def _scotch_target(machine: _Machine) -> str:
    """The machine as a Scotch target architecture. Tree-leaf link costs are the network links
    between two nodes whose common ancestor is at that level, plus the injection and ejection
    links, so that nodes under one switch or router still cost something to reach."""
    network = machine.params["network"]
    if machine.is_grid:
        return f"{machine.kind}XD {len(machine.dims)} {' '.join(map(str, machine.dims))}"
    if machine.kind == "fattree":
        k, levels = network["k"], network["levels"]
        # Nodes apart below level l of the tree meet at a switch l levels up: 2·l network links.
        return "tleaf {} {}".format(levels, " ".join(f"{k} {2 * (levels - 1 - i) + 2}" for i in range(levels)))
    if machine.kind == "dragonfly":
        # Another group: local, global, local links at most; another router of the group: one link.
        return f"tleaf 3 {network['g']} 5 {network['a']} 3 {network['p']} 2"
    return f"cmplt {machine.num_nodes}"


_PLACERS = {
    "block": _block,
    "cyclic": _cyclic,
    "random": _random,
    "sfc": _sfc,
    "metis": _metis,
    "topo": _topo,
    "scotch": _scotch,
}
