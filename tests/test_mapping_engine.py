"""The mapping engine: communication graphs (contend.mapping.graph), the objective of a placement
(contend.mapping.objective) and the engine's refinement of a placement, against closed forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.file import loggops_params
from contend.mapping.graph import CommGraph
from contend.mapping.objective import evaluate, link_loads

RING_TRACE = Path(__file__).parent / "data" / "liballprof" / "hand" / "ring"


def torus(dims, ranks_per_node=1, **network):
    """bgp-torus's parameters on a torus of ``dims``."""
    params = loggops_params("bgp-torus")
    params["network"] = {**params["network"], "dims": list(dims), "ranks_per_node": ranks_per_node, **network}
    return params


def write_stencil(path: Path, dims, halo: int, steps: int = 1) -> int:
    """A periodic 3D halo exchange on a process grid of ``dims`` (x fastest, as torus nodes are
    numbered): ``steps`` times, every rank sends ``halo`` bytes to each of its 6 neighbours. Returns
    the bytes sent."""
    nx, ny, nz = dims
    ranks = nx * ny * nz
    lines, sent = [f"num_ranks {ranks}"], 0
    for r in range(ranks):
        x, y, z = r % nx, r // nx % ny, r // (nx * ny)
        lines.append(f"rank {r} {{")
        for step in range(steps):
            for i, (dx, dy, dz) in enumerate([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]):
                peer = (x + dx) % nx + nx * ((y + dy) % ny) + nx * ny * ((z + dz) % nz)
                back = (x - dx) % nx + nx * ((y - dy) % ny) + nx * ny * ((z - dz) % nz)
                lines.append(f"s{step}_{i}: send {halo}b to {peer} tag {i}")
                lines.append(f"r{step}_{i}: recv {halo}b from {back} tag {i}")
                sent += halo
        lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    return sent


def swapped(ranks: int, pairs: int, seed: int) -> np.ndarray:
    """Block placement with ``pairs`` disjoint pairs of ranks exchanged."""
    place = np.arange(ranks)
    chosen = np.random.default_rng(seed).permutation(ranks)[: 2 * pairs].reshape(pairs, 2)
    place[chosen[:, 0]], place[chosen[:, 1]] = chosen[:, 1], chosen[:, 0]
    return place


def refine(graph: CommGraph, params, place, rounds=20, seed=0) -> np.ndarray:
    with user_errors("refine"):
        return np.asarray(engine().refine_placement(params, graph.ranks, place, graph.src, graph.dst, graph.bytes,
                                                    rounds, seed))


def test_stencil_on_its_torus_costs_one_hop_per_byte(tmp_path):
    sent = write_stencil(tmp_path / "s.goal", (4, 4, 4), 1000, steps=2)
    graph = CommGraph.from_goal(tmp_path / "s.goal")
    assert graph.ranks == 64 and len(graph.src) == 64 * 6
    assert graph.total_bytes == sent == engine().goal_summary(str(tmp_path / "s.goal"))["bytes_sent"]
    assert set(graph.messages.tolist()) == {2}
    objective = evaluate(graph, torus((4, 4, 4)), np.arange(64))
    assert objective.hop_bytes == objective.bytes == sent
    assert objective.hops_per_byte == 1.0
    # Every network link carries one neighbour's halo each way per step, injection links 6 halos.
    assert objective.max_link_load == 6 * 2 * 1000


def test_graph_bytes_are_the_sends_of_the_schedule(tmp_path):
    for name, ranks in (("alltoall-linear", 6), ("allreduce-ring", 8), ("random-pairs", 16)):
        graph = CommGraph.from_collective(name, ranks, 100, seed=3)
        goal = tmp_path / f"{name}.goal"
        engine().write_goal(name, ranks, 100, str(goal), seed=3)
        assert graph.total_bytes == engine().goal_summary(str(goal))["bytes_sent"] > 0
        assert graph.ranks == ranks and (graph.src != graph.dst).all()
    engine().write_goal("random-pairs", 16, 100, str(tmp_path / "pairs.goal.gz"), seed=3)
    gzipped = CommGraph.from_goal(tmp_path / "pairs.goal.gz")
    assert np.array_equal(gzipped.bytes, graph.bytes) and np.array_equal(gzipped.dst, graph.dst)


def test_records_and_traces_give_the_same_graph(tmp_path):
    from contend.simulation.records import write_records_parquet
    from contend.simulation.simulate import simulate

    write_stencil(tmp_path / "s.goal", (2, 3, 2), 64)
    from_goal = CommGraph.from_goal(tmp_path / "s.goal")
    result = simulate(tmp_path / "s.goal", records=True)
    write_records_parquet(result.record_columns, tmp_path / "records.parquet", {"params": {}})
    from_records = CommGraph.from_records(tmp_path / "records.parquet")
    for column in ("src", "dst", "bytes", "messages"):
        assert np.array_equal(getattr(from_records, column), getattr(from_goal, column)), column
    ring = CommGraph.from_trace(RING_TRACE)
    assert (ring.ranks, ring.src.tolist(), ring.dst.tolist(), ring.bytes.tolist()) == (
        4, [0, 1, 2, 3], [1, 2, 3, 0], [64] * 4)


def test_injection_and_ejection_links_carry_each_nodes_off_node_bytes():
    graph = CommGraph.from_collective("random-pairs", 32, 1000, seed=5)
    extra = CommGraph.from_collective("alltoall-linear", 32, 7)
    graph = CommGraph.from_pairs(32, np.concatenate([graph.src, extra.src]), np.concatenate([graph.dst, extra.dst]),
                                 np.concatenate([graph.bytes, extra.bytes]))
    params = torus((4, 4, 2), ranks_per_node=2)
    place = np.random.default_rng(2).permutation(np.repeat(np.arange(32), 2))[:32]
    assert np.bincount(place).max() <= 2
    loads = link_loads(graph, params, place)
    nodes = 32
    off = place[graph.src] != place[graph.dst]
    sent = np.bincount(place[graph.src][off], weights=graph.bytes[off], minlength=nodes)
    received = np.bincount(place[graph.dst][off], weights=graph.bytes[off], minlength=nodes)
    assert np.array_equal(loads[:nodes], sent)
    assert np.array_equal(loads[nodes:2 * nodes], received)
    # Every byte between nodes crosses its hops plus an injection and an ejection link.
    objective = evaluate(graph, params, place)
    assert loads.sum() == objective.hop_bytes + 2 * graph.bytes[off].sum()
    assert objective.max_link_load == loads.max()
    assert objective.mean_link_load == loads[loads > 0].mean()


def test_refinement_puts_a_permuted_stencil_back(tmp_path):
    write_stencil(tmp_path / "s.goal", (4, 4, 4), 100)
    graph = CommGraph.from_goal(tmp_path / "s.goal")
    params = torus((4, 4, 4))
    start = swapped(64, 12, seed=1)
    before = evaluate(graph, params, start)
    assert before.hop_bytes > graph.total_bytes
    refined = refine(graph, params, start)
    assert evaluate(graph, params, refined).hop_bytes == graph.total_bytes
    assert sorted(refined.tolist()) == list(range(64))


def test_refinement_never_worsens_and_is_deterministic():
    graph = CommGraph.from_collective("random-pairs", 64, 1000, seed=4)
    params = torus((4, 4, 4), ranks_per_node=2)
    start = np.random.default_rng(0).permutation(np.repeat(np.arange(64), 2))[:64]
    before = evaluate(graph, params, start)
    for seed in range(3):
        refined = refine(graph, params, start, seed=seed)
        after = evaluate(graph, params, refined)
        assert (after.hop_bytes, after.max_link_load) <= (before.hop_bytes, before.max_link_load)
        assert np.array_equal(np.bincount(refined, minlength=64), np.bincount(start, minlength=64))
        assert np.array_equal(refine(graph, params, start, seed=seed), refined)


def test_makespan_follows_the_placement(tmp_path):
    write_stencil(tmp_path / "s.goal", (4, 4, 2), 100_000)
    graph = CommGraph.from_goal(tmp_path / "s.goal")
    params = torus((4, 4, 2))
    block = evaluate(graph, params, np.arange(32), schedule=tmp_path / "s.goal")
    scattered = evaluate(graph, params, np.random.default_rng(3).permutation(32), schedule=tmp_path / "s.goal")
    assert block.makespan_ns is not None and scattered.hop_bytes > block.hop_bytes
    assert scattered.makespan_ns > block.makespan_ns


def test_bad_input_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="missing.goal"):
        CommGraph.from_goal(tmp_path / "missing.goal")
    (tmp_path / "bad.goal").write_text("num_ranks 2\nrank 0 {\n send 1b to 7\n}\n")
    with pytest.raises(UserError, match="bad.goal:3"):
        CommGraph.from_goal(tmp_path / "bad.goal")
    graph = CommGraph.from_collective("pingpong", 2, 8)
    with pytest.raises(UserError, match="no network"):
        evaluate(graph, loggops_params("loggopsim-default"), [0, 1])
    with pytest.raises(UserError, match="one node per rank"):
        evaluate(graph, torus((2, 2, 2)), [0, 1, 2])
    with pytest.raises(UserError, match="nodes 0..7"):
        evaluate(graph, torus((2, 2, 2)), [0, 8])
    with pytest.raises(UserError, match="more than 1 ranks per node"):
        refine(graph, torus((2, 2, 2)), [3, 3])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="not a trace"):
        CommGraph.from_trace(tmp_path / "empty")
    with pytest.raises(UserError, match="bad.goal: not a readable records file"):
        CommGraph.from_records(tmp_path / "bad.goal")
    with pytest.raises(UserError, match="unknown collective"):
        CommGraph.from_collective("no-such", 4, 8)
