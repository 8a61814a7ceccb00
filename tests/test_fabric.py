"""The emulated fabric (needs root, iproute2): shaped links share as physics says, ranks see one host
name per node, and nothing is ever left behind: not after `down`, not after a failed build, not after
a failed or stopped run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import contend
from contend.native import fabric, mpi
from contend.native.bench import sanity
from contend.native.bench.runner import run_benchmark
from contend.cli import main
from contend.errors import UserError

PREFIX = fabric.TEST_PREFIX
ISOLATED = ("--fabric-prefix", PREFIX)  # the CLI on the tests' fabric, never a user's
LINK = "1gbit"
LINK_Bps = 1e9 / 8
SHARE_TOLERANCE = 0.15

pytestmark = [pytest.mark.fabric, pytest.mark.usefixtures("isolated_fabric")]


@pytest.fixture
def star():
    with fabric.session(4, 1, LINK, "star", PREFIX) as built:
        yield built


def stream(built, name, ranks, **options):
    """Streams of 64 KiB messages, 128 in flight: long enough for TCP to settle at the shaped rate."""
    run = run_benchmark(name, ranks=ranks, sizes=[65536], iters=5, warmup=1, options={"window": 128, **options},
                        fabric=built, timeout_s=120)
    problems = sanity.problems(run)
    assert not problems, problems
    return run


def test_shaped_links_share_fairly_and_ranks_see_their_nodes(star):
    single = stream(star, "msgrate", 2)
    one_flow = float(single.results["bandwidth_Bps"].iloc[0])
    assert abs(one_flow / LINK_Bps - 1) < SHARE_TOLERANCE, f"one flow {one_flow * 8 / 1e9:.3f} Gbit/s"
    assert single.meta["hosts"] == [f"{PREFIX}node0", f"{PREFIX}node1"]

    incast = stream(star, "incast", 4)  # nodes 1, 2, 3 into node 0's link
    rates = incast.results.set_index("rank")["bandwidth_Bps"]
    assert sorted(rates.index) == [1, 2, 3]
    assert abs(rates.sum() / one_flow - 1) < SHARE_TOLERANCE, "together they should fill the one link"
    for rank, rate in rates.items():
        share = rate / rates.sum()
        assert abs(share * 3 - 1) < SHARE_TOLERANCE, f"sender {rank} got {share:.3f} of the link, not 1/3"
    assert incast.meta["hosts"] == [f"{PREFIX}node{i}" for i in range(4)]
    assert incast.meta["node_of_rank"] == [0, 1, 2, 3]

    pairs = stream(star, "msgrate", 4)  # 0 -> 2 and 1 -> 3: disjoint links, both at full speed
    for _, row in pairs.results.iterrows():
        assert abs(row["bandwidth_Bps"] / one_flow - 1) < SHARE_TOLERANCE, row.to_dict()


def test_k_ranks_per_node_share_a_host_name():
    with fabric.session(2, 2, LINK, "star", PREFIX) as built:
        run = run_benchmark("pairs", ranks=4, sizes=[8], iters=10, fabric=built, timeout_s=60)
    assert not sanity.problems(run), sanity.problems(run)
    assert run.meta["node_of_rank"] == [0, 0, 1, 1] and run.meta["ranks_per_node"] == 2
    assert run.meta["hosts"] == [f"{PREFIX}node0", f"{PREFIX}node1"]


def test_pairs_two_hops_apart_contend_on_a_line():
    """Bhatele's Benchmark III: on a line of routers, pairs 2 hops apart share the middle link."""

    def hops(built, n):
        return run_benchmark("hops", ranks=4, sizes=[1 << 20], iters=5, warmup=1, options={"hops": n},
                             fabric=built, timeout_s=120)

    # Both pings cross r1 -> r2 at once (and both pongs r2 -> r1): up to twice as slow. Less in practice,
    # as the pairs drift out of phase and tbf lets each message's first 128 KiB through as a burst
    # (measured x1.44..x1.79); without the shared link the ratio is 1. Four ranks on two cores also
    # wait for CPU time when other jobs run, which blurs the ratio: up to three measurements of both.
    slowdowns = []
    with fabric.session(4, 1, LINK, "line", PREFIX) as built:
        while len(slowdowns) < 3 and not any(x > 1.3 for x in slowdowns):
            near, far = hops(built, 1), hops(built, 2)  # (0,1),(2,3) on separate links; (0,2),(1,3) both cross r1-r2
            for run in (near, far):
                assert not sanity.problems(run), sanity.problems(run)
            assert sorted(zip(far.results["rank"], far.results["peer"])) == [(0, 2), (1, 3)]
            slowdowns.append(far.results["t_p50_ns"].mean() / near.results["t_p50_ns"].mean())
    assert max(slowdowns) > 1.3, f"pairs sharing a link should be clearly slower, got {slowdowns}"


def test_a_ring_routes_the_short_way_and_reaches_every_node():
    with fabric.session(4, 1, LINK, "ring", PREFIX) as built:
        run = run_benchmark("master", ranks=4, sizes=[8], iters=10, fabric=built, timeout_s=60)
        routes = {node: subprocess.run(["ip", "-n", f"{PREFIX}r0", "route", "get", f"10.77.{node}.2"],
                                       capture_output=True, text=True, check=True).stdout
                  for node in (1, 2, 3)}
    assert not sanity.problems(run), sanity.problems(run)
    assert sorted(run.results["rank"]) == [1, 2, 3]  # node 0 reached every node and back
    assert "dev east" in routes[1] and "dev east" in routes[2]  # the tie (2 hops either way) goes east
    assert "dev west" in routes[3]  # one hop west, not three east


def test_a_failed_build_removes_what_it_built(monkeypatch):
    def broken(self):
        raise subprocess.CalledProcessError(2, ["ip", "link", "add", "cable"], "", "RTNETLINK answers: pretend")

    monkeypatch.setattr(fabric._Builder, "routers", broken)
    with pytest.raises(UserError, match="building the fabric failed at `ip link add cable`: RTNETLINK"):
        fabric.up(3, 1, LINK, "ring", PREFIX)
    assert fabric.our_namespaces(PREFIX) == [] and fabric.current(PREFIX) is None


def test_failed_and_stopped_runs_leave_nothing_and_down_removes_all(capsys):
    assert main(["fabric", "up", "--nodes", "2", "--ppn", "1", "--link", LINK, *ISOLATED]) == 0
    try:
        assert main(["fabric", "up", "--nodes", "2", *ISOLATED]) == 2
        assert "already up" in capsys.readouterr().err
        assert main(["bench", "run", "hops", "--fabric", "--np", "2", "--dims", "3", *ISOLATED]) == 2  # the harness refuses
        assert "--dims has 3 positions" in capsys.readouterr().err
        assert main(["bench", "run", "noise", "--fabric", "--duration", "60", "--timeout", "2", *ISOLATED]) == 2
        assert "was stopped" in capsys.readouterr().err
        assert mpi.running_benchmarks(os.getpid()) == []
        assert main(["fabric", "status", *ISOLATED]) == 0
        assert f"namespaces {PREFIX}n0, {PREFIX}n1, {PREFIX}sw" in capsys.readouterr().out
    finally:
        assert main(["fabric", "down", *ISOLATED]) == 0
    assert "removed 3 namespaces" in capsys.readouterr().out
    assert main(["fabric", "down", *ISOLATED]) == 0
    assert "nothing was up" in capsys.readouterr().out


def test_calibrate_writes_a_machine_of_token_bucket_links_sharing_the_host_s_cores(tmp_path, capsys):
    host = tmp_path / "host.toml"
    host.write_text('[loggops]\nL = 0\no = 400\ng = 500\nG = 0\nO = 0\nS = 8191\n'
                    '[cores]\nper_node = 2\nswitch = "3.6us"\nquantum = "4ms"\n[mpi]\ncollective_entry = "190ns"\n')
    out = tmp_path / "fabric.toml"
    assert main(["fabric", "calibrate", "-o", str(out), *ISOLATED]) == 2
    assert "no fabric is up" in capsys.readouterr().err and not out.exists()
    with fabric.session(2, 1, LINK, "star", PREFIX):
        assert main(["fabric", "calibrate", "-o", str(out), "--machine", str(host), "--repeats", "1", *ISOLATED]) == 0
    machine = contend.load_machine(out)
    network = machine.network
    # One flow at the shaped rate (TCP/IP headers not counted); within the burst tbf holds nothing back,
    # so the measured ping-pongs' slope beats the shaped rate (the peak is never set below it).
    assert 0.85 * LINK_Bps < network["link_bandwidth"] <= LINK_Bps
    assert network["burst_bytes"] == fabric.TBF_BURST_BYTES
    [burst_Gbit_s] = machine.document["measured"]["burst_Gbit_s"]
    assert burst_Gbit_s * 1e9 / 8 > LINK_Bps
    assert network["peak_bandwidth"] == pytest.approx(burst_Gbit_s * 1e9 / 8, rel=1e-4)
    assert network["packet_bytes"] == 1 and network["ranks_per_node"] == 1
    assert machine.node["cores"] == {"per_node": 2, "switch": 3_600_000, "quantum": 4_000_000_000, "one_host": True}
    assert machine.mpi == {"collective_entry": 190}  # the host's MPI library, in every namespace
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--nodes", "1"], "--nodes: 1 is out of range"),
        (["--nodes", "2", "--link", "fast"], "--link: expected a rate"),
        (["--nodes", "2", "--topology", "torus"], "--topology: expected one of star, line, ring"),
        (["--nodes", "2", "--ppn", "0"], "--ppn: 0 is out of range"),
        (["--nodes", "2", "--queue", "soon"], "--queue: expected a time like 10ms or 500us"),
        (["--nodes", "2", "--queue", "5s"], "--queue: expected a time"),
        (["--nodes", "2", "--queue", "10us"], "--queue: 10us is outside 50us..1000ms"),
    ],
)
def test_bad_fabric_input(capsys, args, pattern):
    assert main(["fabric", "up", *ISOLATED] + args) == 2
    err = capsys.readouterr().err
    assert pattern in err and err.count("\n") == 1


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv (util-linux) to drop root")
def test_not_root_is_told_so():
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "contend.cli",
         "fabric", "up", "--nodes", "2", *ISOLATED],
        capture_output=True, text=True, cwd="/tmp",
        env={**os.environ, "HOME": "/tmp", "PYTHONPATH": str(Path(contend.__file__).parents[1])},
    )
    assert done.returncode == 2, done.stderr
    assert "needs root" in done.stderr and "Traceback" not in done.stderr
