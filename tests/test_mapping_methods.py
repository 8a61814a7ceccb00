"""Placement methods (contend.mapping.methods): every method places every rank within the machine's
capacity, block and cyclic are the engine's own, the topology-aware bisection reaches the optimum on a
stencil shaped like the torus (also from a shuffled rank order) and never loses to block."""

import numpy as np
import pytest

from contend.errors import UserError
from contend.machine.file import loggops_params
from contend.mapping.graph import CommGraph
from contend.mapping.methods import METHODS, place, scotch_available
from contend.mapping.objective import evaluate
from contend.simulation.layout import NetworkLayout

NEEDS_SCOTCH = pytest.mark.skipif(not scotch_available(), reason="Scotch's scotch_gmap is not installed")


def machine(topology: dict, ranks_per_node: int = 1) -> dict:
    """Engine parameters of a preset torus with its network replaced by ``topology``."""
    params = loggops_params("bgp-torus")
    network = {key: value for key, value in params["network"].items() if key not in ("dims", "routing")}
    params["network"] = {**network, **topology, "ranks_per_node": ranks_per_node}
    return params


def torus(*dims: int, ranks_per_node: int = 1) -> dict:
    return machine({"topology": "torus", "dims": list(dims), "routing": "dimension-order"}, ranks_per_node)


MACHINES = {
    "torus": lambda c: torus(4, 4, 4, ranks_per_node=c),
    "fattree": lambda c: machine({"topology": "fattree", "k": 4, "levels": 3, "oversubscription": 1,
                                  "routing": "d-mod-k"}, c),
    "dragonfly": lambda c: machine({"topology": "dragonfly", "a": 4, "p": 2, "h": 2, "g": 8,
                                    "routing": "minimal"}, c),
}


def stencil(*dims: int, nbytes: int = 1000) -> CommGraph:
    """A periodic nearest-neighbour exchange on a process grid (first dimension fastest)."""
    shape = np.asarray(dims)
    ranks = int(shape.prod())
    coordinates = np.stack(np.unravel_index(np.arange(ranks), shape[::-1])[::-1], axis=1)
    strides = np.concatenate([[1], np.cumprod(shape)[:-1]])
    src, dst = [], []
    for d in range(len(dims)):
        for step in (1, -1):
            moved = coordinates.copy()
            moved[:, d] = (moved[:, d] + step) % shape[d]
            src.append(np.arange(ranks))
            dst.append(moved @ strides)
    src, dst = np.concatenate(src), np.concatenate(dst)
    return CommGraph.from_pairs(ranks, src, dst, np.full(len(src), nbytes))


def transpose(rows: int, columns: int, nbytes: int = 1000) -> CommGraph:
    """Alltoall within every row and within every column of a rows x columns process grid."""
    rank = np.arange(rows * columns).reshape(rows, columns)
    pairs = [(a, b) for line in [*rank, *rank.T] for a in line for b in line if a != b]
    src, dst = np.asarray(pairs).T
    return CommGraph.from_pairs(rows * columns, src, dst, np.full(len(src), nbytes))


def random_pairs(ranks: int, seed: int = 0, nbytes: int = 1000) -> CommGraph:
    order = np.random.default_rng(seed).permutation(ranks)[:ranks - ranks % 2]
    src, dst = order[0::2], order[1::2]
    return CommGraph.from_pairs(ranks, np.concatenate([src, dst]), np.concatenate([dst, src]),
                                np.full(len(order), nbytes))


def shuffled(graph: CommGraph, seed: int) -> CommGraph:
    """The same graph with its ranks renumbered at random."""
    name = np.random.default_rng(seed).permutation(graph.ranks)
    return CommGraph.from_pairs(graph.ranks, name[graph.src], name[graph.dst], graph.bytes)


def hop_bytes(graph: CommGraph, params: dict, method: str, seed: int = 0) -> int:
    return evaluate(graph, params, place(graph, params, method, seed=seed)).hop_bytes


def methods_here() -> list:
    return [pytest.param(m, marks=NEEDS_SCOTCH) if m == "scotch" else m for m in METHODS]


@pytest.mark.parametrize("method", methods_here())
@pytest.mark.parametrize("shape", list(MACHINES))
@pytest.mark.parametrize("ranks, per_node", [(64, 1), (128, 2), (45, 2)])
def test_every_method_places_every_rank_within_capacity(shape, method, ranks, per_node):
    params = MACHINES[shape](per_node)
    graph = stencil(ranks) if ranks == 45 else stencil(4, 4, ranks // 16)
    nodes = place(graph, params, method, seed=3)
    assert nodes.dtype == np.int64 and nodes.shape == (ranks,)
    assert nodes.min() >= 0 and nodes.max() < 64
    assert np.bincount(nodes).max() <= per_node
    # The engine takes it as an explicit placement.
    explicit = {**params, "network": {**params["network"], "placement": nodes.tolist()}}
    assert np.array_equal(NetworkLayout.of(explicit, ranks).node_of_rank, nodes)


@pytest.mark.parametrize("name", ["block", "cyclic"])
@pytest.mark.parametrize("ranks, per_node", [(64, 1), (7, 2), (45, 2), (100, 3)])
def test_block_and_cyclic_are_the_engines_placements(name, ranks, per_node):
    params = torus(4, 4, 8, ranks_per_node=per_node)
    # The machine's own placement (an explicit list here) does not change them.
    params["network"]["placement"] = list(range(128))
    engines = {**params, "network": {**params["network"], "placement": name}}
    expected = NetworkLayout.of(engines, ranks).node_of_rank
    assert np.array_equal(place(random_pairs(ranks), params, name), expected)


@pytest.mark.parametrize("dims", [(4, 4, 4), (4, 4, 8), (2, 4, 8), (8, 8, 16)])
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_topo_puts_every_neighbour_of_a_torus_shaped_stencil_one_hop_away(dims, seed):
    """The optimum: hop-bytes equal to the bytes, from the natural and from shuffled rank orders
    (8 x 8 x 16 is the BG/P-like and XT3-like presets' torus)."""
    graph = stencil(*dims)
    if seed is not None:
        graph = shuffled(graph, seed)
    objective = evaluate(graph, torus(*dims), place(graph, torus(*dims), "topo"))
    assert objective.hop_bytes == objective.bytes


PATTERNS = {
    "stencil": lambda ranks: stencil(4, 4, ranks // 16),
    "shuffled stencil": lambda ranks: shuffled(stencil(4, 4, ranks // 16), 5),
    "transpose": lambda ranks: transpose(16, ranks // 16),
    "random pairs": lambda ranks: random_pairs(ranks, 4),
}


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize("shape, per_node", [("torus", 1), ("torus", 2), ("fattree", 2), ("dragonfly", 1)])
def test_topo_never_has_more_hop_bytes_than_block_or_metis(shape, per_node, pattern):
    params = MACHINES[shape](per_node)
    graph = PATTERNS[pattern](64 * per_node)
    assert hop_bytes(graph, params, "topo") <= min(hop_bytes(graph, params, "block"), hop_bytes(graph, params, "metis"))


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_topo_never_has_more_hop_bytes_than_block_on_the_presets_torus(pattern):
    params = torus(8, 8, 16)
    graph = PATTERNS[pattern](1024)
    assert hop_bytes(graph, params, "topo") <= hop_bytes(graph, params, "block")


def test_metis_groups_a_shuffled_stencil_into_nodes_as_well_as_can_be():
    """METIS groups ranks into nodes (where the nodes are is not its concern). 4 ranks per node:
    at best a 2x2 square per node, each rank keeping 2 of its 6 neighbours, so 4 of every 6
    messages leave the node."""
    params = torus(4, 4, 2, ranks_per_node=4)
    graph = shuffled(stencil(4, 4, 8), 0)

    def between_nodes(method):
        nodes = place(graph, params, method)
        return int(graph.bytes[nodes[graph.src] != nodes[graph.dst]].sum())

    assert between_nodes("metis") == graph.total_bytes * 4 // 6 < between_nodes("block")


@NEEDS_SCOTCH
def test_scotch_maps_a_torus_shaped_stencil_onto_the_torus():
    graph = shuffled(stencil(4, 4, 8), 0)
    objective = evaluate(graph, torus(4, 4, 8), place(graph, torus(4, 4, 8), "scotch"))
    assert objective.hop_bytes == objective.bytes


def test_scotch_missing_is_a_user_error_saying_how_to_install_it(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert not scotch_available()
    with pytest.raises(UserError, match="scotch_gmap.*apt-get install scotch"):
        place(stencil(4, 4, 4), torus(4, 4, 4), "scotch")


@pytest.mark.parametrize("method", ["random", "metis", "topo"])
def test_a_seed_gives_one_placement(method):
    graph = shuffled(stencil(4, 4, 4), 1)
    params = torus(4, 4, 4)
    assert np.array_equal(place(graph, params, method, seed=7), place(graph, params, method, seed=7))
    # any 64-bit seed: METIS takes a C int, which ours is folded into (2^63 failed inside pymetis)
    big = place(graph, params, method, seed=2**64 - 1)
    assert np.array_equal(big, place(graph, params, method, seed=2**64 - 1)) and len(big) == 64


def test_a_job_smaller_than_the_machine_lands_on_a_compact_block():
    """16 ranks of a 4x4 stencil on a 4x4x4 torus: one plane of nodes, every neighbour one hop away."""
    graph = stencil(4, 4)
    params = torus(4, 4, 4)
    nodes = place(graph, params, "topo")
    objective = evaluate(graph, params, nodes)
    assert objective.hop_bytes == objective.bytes


def test_more_ranks_than_the_machine_holds_is_a_user_error_naming_both():
    with pytest.raises(UserError, match=r"130 ranks .* at most 128 \(64 nodes x 2 ranks per node\)"):
        place(random_pairs(130), torus(4, 4, 4, ranks_per_node=2), "topo")


def test_unknown_method_and_machine_without_network_are_user_errors():
    with pytest.raises(UserError, match="unknown mapping method 'best'; use one of block, cyclic"):
        place(stencil(4), torus(4, 4, 4), "best")
    with pytest.raises(UserError, match="needs a machine with a network"):
        place(stencil(4), loggops_params(), "block")
