"""Mapping on the emulated fabric: the rank wrapper's placement (with a stand-in `ip`, no root needed),
app-halo's DISTANCE, the experiment's graph, placements and objective on the calibrated machine's
line and ring, and (root) a small run of the experiment. No measured time is asserted, nor that the
mapping is faster when measured: that is the experiment's number to report."""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter

import numpy as np
import pytest

from contend.native import fabric, mpi
from contend.analysis import predict
from contend.errors import UserError
from contend.experiments import mapping_fabric
from contend.experiments.fabric_machine import Calibration, LatencySample, machine_toml
from contend.machine.file import load_machine, loggops_params, parse_machine
from contend.mapping.graph import CommGraph
from contend.mapping.objective import evaluate
from contend.simulation.simulate import simulate

LINK_Bps = 0.95e9 / 8


def calibrated(topology: str, nodes: int):
    cal = Calibration(fabric.Fabric("x-", nodes, 1, "1gbit", topology), (LINK_Bps,),
                      (LatencySample(12000, 9000, 9500, 11000),), 1500)
    return parse_machine(machine_toml(cal, "a test"), "fabric.toml")


@pytest.fixture
def fake_ip(tmp_path, monkeypatch):
    """An `ip` first on PATH that prints its arguments instead of entering a namespace."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ip").write_text('#!/bin/sh\necho "$@"\n')
    (bin_dir / "ip").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _enter(wrapper, rank: int) -> subprocess.CompletedProcess:
    return subprocess.run([str(wrapper), "prog", "arg"], env={**os.environ, "PMI_RANK": str(rank)},
                          capture_output=True, text=True)


def test_the_wrapper_puts_each_rank_in_the_node_the_placement_names(fake_ip, tmp_path):
    built = fabric.Fabric("ctdx-", 4, 2, "1gbit", "line")
    wrapper = fabric.write_rank_wrapper(built, tmp_path, [3, 0, 3, 1, 2])
    for rank, node in enumerate([3, 0, 3, 1, 2]):
        done = _enter(wrapper, rank)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[:3] == ["netns", "exec", f"ctdx-n{node}"]
        assert f"ctdx-node{node} prog arg" in done.stdout
    beyond = _enter(wrapper, 5)
    assert beyond.returncode == 2 and "rank 5 has no node" in beyond.stderr
    block = fabric.write_rank_wrapper(built, tmp_path)  # no placement: rank r on node r // ppn
    assert [_enter(block, r).stdout.split()[2] for r in range(8)] == [f"ctdx-n{r // 2}" for r in range(8)]
    assert _enter(block, 8).returncode == 2


@pytest.mark.parametrize("placement, message", [
    ([0, 4], r"rank 1 on node 4, but the fabric has nodes 0\.\.3"),
    ([1, -1], r"rank 1 on node -1"),
    ([2, 0, 2], r"ranks 0, 2 on node 2, more than the fabric's 1 per node"),
])
def test_a_bad_placement_is_refused_before_anything_is_written(tmp_path, placement, message):
    with pytest.raises(UserError, match=message):
        fabric.write_rank_wrapper(fabric.Fabric("ctdx-", 4, 1, "1gbit", "ring"), tmp_path, placement)
    assert not (tmp_path / "contend-fabric-rank").exists()


def test_app_halo_with_distance_half_exchanges_with_one_partner_only(built, tmp_path):
    program = [str(mpi.build_dir(built) / "app-halo"), "2", "16", "8", "1", "2"]
    predict.traced_run([str(built.mpiexec), "-n", "4", *program], tmp_path / "t", 4096, 120)
    goal = tmp_path / "halo.goal"
    predict.convert(tmp_path / "t", goal)
    sends, rank = Counter(), None
    for line in goal.read_text().splitlines():
        if line.startswith("rank "):
            rank = int(line.split()[1])
        found = re.search(r"send (\d+)b to (\d+)", line)
        if found and int(found.group(1)) == 8 * 8:  # the halos; the allreduces send one double
            sends[(rank, int(found.group(2)))] += 1
    assert sends == {(r, (r + 2) % 4): 2 * 2 for r in range(4)}  # 2 iterations x both halos


def test_app_halo_refuses_a_distance_that_is_a_multiple_of_the_ranks(built):
    done = subprocess.run([str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-halo"), "1", "16", "8", "1",
                           "4"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "DISTANCE (4) must not be a multiple of the ranks (2)" in done.stderr


def halo_graph(settings: mapping_fabric.Settings) -> CommGraph:
    """What app-halo sends: every iteration, one halo to each neighbour (here both are the partner)."""
    ranks = np.arange(settings.nodes)
    src = np.concatenate([ranks, ranks])
    dst = np.concatenate([(ranks - settings.distance) % settings.nodes, (ranks + settings.distance) % settings.nodes])
    return CommGraph.from_pairs(settings.nodes, src, dst, np.full(len(src), settings.iterations * settings.halo * 8))


@pytest.mark.parametrize("topology", ["line", "ring"])
@pytest.mark.parametrize("nodes", [4, 6, 8])
def test_topo_puts_partners_one_link_apart_where_block_puts_them_half_the_nodes_apart(topology, nodes):
    settings = mapping_fabric.Settings(nodes=nodes, topology=topology, iterations=3, halo=16)
    graph = halo_graph(settings)
    where = mapping_fabric.placements(graph, settings)
    assert where["default"].tolist() == list(range(nodes))
    assert sorted(where["mapped"].tolist()) == list(range(nodes))  # one rank per node
    params = loggops_params(calibrated(topology, nodes))
    default, mapped = (evaluate(graph, params, where[name]) for name in ("default", "mapped"))
    assert mapped.hop_bytes == graph.total_bytes  # every partner one router link away: the optimum
    assert default.hop_bytes == graph.total_bytes * (nodes // 2)
    # block: nodes/2 pairs on the busiest link each way; mapped: one rank's bytes on any link
    sent = 2 * 3 * 16 * 8
    assert (default.max_link_load, mapped.max_link_load) == (nodes // 2 * sent, sent)


def test_the_calibrated_line_simulates_the_pairs_faster_when_mapped(tmp_path):
    """The same schedule, placed both ways: on a line of 8 the block placement's middle link carries
    four pairs each way, the mapped one's links one each."""
    nodes, size = 8, 1 << 20
    lines = [f"num_ranks {nodes}"]
    for r in range(nodes):
        partner = (r + nodes // 2) % nodes
        lines.append(f"rank {r} {{\nl0: send {size}b to {partner} tag 1\nl1: recv {size}b from {partner} tag 1\n}}")
    goal = tmp_path / "pairs.goal"
    goal.write_text("\n".join(lines) + "\n")
    machine = calibrated("line", nodes)
    where = mapping_fabric.placements(CommGraph.from_goal(goal), mapping_fabric.Settings(nodes=nodes))
    times = {name: simulate(goal, machine=machine.placed(nodes_of_ranks)).makespan
             for name, nodes_of_ranks in where.items()}
    alone = size / LINK_Bps * 1e9
    assert times["mapped"] == pytest.approx(alone, rel=0.02)
    assert times["default"] == pytest.approx(4 * alone, rel=0.02)


@pytest.mark.parametrize("changes, message", [
    ({"topology": "star"}, "needs hops: line or ring"),
    ({"nodes": 5}, "an even number of at least 4"),
    ({"nodes": 2}, "an even number of at least 4"),
    ({"repeats": 0}, r"--repeats: expected 1\.\.100, got 0"),
    ({"halo": 1 << 23}, r"--halo: expected 1\.\.4194304"),
    ({"method": "nearest"}, "--method: expected one of block, "),
])
def test_bad_settings_are_one_line_errors(changes, message):
    with pytest.raises(UserError, match=message):
        mapping_fabric.Settings(**changes).check()


@pytest.mark.fabric
def test_a_small_mapping_experiment_on_the_fabric(built, tmp_path, isolated_fabric):
    settings = mapping_fabric.Settings(nodes=4, repeats=2, iterations=5, halo=8192)
    result = mapping_fabric.run_experiment(settings, tmp_path, prefix=isolated_fabric)
    assert parse_machine((tmp_path / "fabric.toml").read_text()).network["dims"] == [4]
    outputs = []
    for name in mapping_fabric.PLACEMENTS:
        placed = result["placements"][name]
        assert placed["ranks"] == 4
        for key in ("untraced_ns", "traced_ns", "predicted_ns"):  # every run completed and was simulated
            assert len(placed[key]) == 2 and all(v > 0 for v in placed[key])
        outputs += placed["outputs"]
    # the program computed the same thing wherever its ranks ran
    assert len(set(outputs)) == 1 and outputs[0].startswith("app-halo: 4 ranks, 5 iterations, residual ")
    # the graph came from the trace: 5 iterations of 2 halos of 64 KiB per rank (no allreduce before the 10th)
    assert result["graph"] == {"bytes": 4 * 5 * 2 * 8192 * 8, "pairs": 4, "messages": 4 * 5 * 2}
    default, mapped = result["placements"]["default"], result["placements"]["mapped"]
    assert mapped["hop_bytes"] < default["hop_bytes"]
    assert mapped["makespan_ns"] <= default["makespan_ns"]  # one schedule, simulated under both
    assert np.isfinite(result["gain"]["measured"])  # reported, whichever way it goes


def test_a_placement_needs_a_machine_with_a_network():
    with pytest.raises(UserError, match=r"a placement needs a network, and this machine has no \[topology\]"):
        load_machine("loggopsim-default").placed([0, 1])


def test_predict_placement_without_the_fabric_is_one_line(fails_cleanly, tmp_path):
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--placement", str(tmp_path / "p"), "--", "mpiexec",
                   "-n", "2", "true"], r"--placement places the ranks on the emulated fabric: give --fabric too")


@pytest.mark.fabric
@pytest.mark.usefixtures("isolated_fabric")
def test_predict_runs_and_simulates_the_ranks_where_the_placement_puts_them(built, tmp_path, capsys):
    from contend.cli import main
    from contend.native.trace.files import read_directory

    placement = [0, 2, 1, 3]
    (tmp_path / "placement").write_text(" ".join(map(str, placement)) + "\n")
    (tmp_path / "fabric.toml").write_text(machine_toml(
        Calibration(fabric.Fabric(fabric.TEST_PREFIX, 4, 1, "1gbit", "line"), (LINK_Bps,),
                    (LatencySample(12000, 9000, 9500, 11000),), 1500), "a test"))
    program = [str(mpi.build_dir(built) / "app-halo"), "3", "64", "32", "1", "2"]
    with fabric.session(4, 1, "1gbit", "line", fabric.TEST_PREFIX):
        code = main(["predict", "--machine", str(tmp_path / "fabric.toml"), "--fabric", "--fabric-prefix",
                     fabric.TEST_PREFIX, "--placement",
                     str(tmp_path / "placement"), "--runs", "1", "--timeout", "60", "--keep", str(tmp_path / "kept"),
                     "--json", str(tmp_path / "p.json"), "--", "mpiexec", "-n", "4", *program])
        # a placement the machine cannot hold fails before any run
        (tmp_path / "small.toml").write_text((tmp_path / "fabric.toml").read_text().replace("dims = [4]", "dims = [3]"))
        assert main(["predict", "--machine", str(tmp_path / "small.toml"), "--fabric", "--fabric-prefix",
                     fabric.TEST_PREFIX, "--placement",
                     str(tmp_path / "placement"), "--", "mpiexec", "-n", "4", *program]) == 2
    assert code == 0, capsys.readouterr().err
    hosts = {t.rank: t.header["host"].decode() for t in read_directory(tmp_path / "kept" / "traces" / "run-1")}
    assert hosts == {rank: f"{fabric.TEST_PREFIX}node{node}" for rank, node in enumerate(placement)}
    from contend.native.trace.replay import algorithms_of
    assert algorithms_of(tmp_path / "kept" / "traces" / "run-1", "auto") == "mpich"  # four hosts
    import json
    result = json.loads((tmp_path / "p.json").read_text())
    assert result["ranks"] == 4 and len(result["predicted_ns"]) == 1 and result["predicted_ns"][0] > 0
