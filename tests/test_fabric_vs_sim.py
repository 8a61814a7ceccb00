"""Simulation against the emulated fabric: the benchmarks' GOAL twins, the calibrated machine file, and
(root) a brief measured-vs-simulated check of incast 3 -> 1 and neighbour vs random pairs."""

from __future__ import annotations

import pytest

from contend.native import fabric
from contend.experiments import native_twins
from contend.experiments.fabric_check import TOLERANCE, Settings, run_check
from contend.experiments.fabric_machine import Calibration, HostTables, LatencySample, machine_toml
from contend.machine.file import parse_machine

PREFIX = fabric.TEST_PREFIX
LINK_Bps = 0.95e9 / 8
pytestmark = pytest.mark.usefixtures("isolated_fabric")


def machine(topology: str, nodes: int, o_s: float = 12000, o_r: float = 9000, one_way: float = 11000):
    cal = Calibration(fabric.Fabric(PREFIX, nodes, 1, "1gbit", topology), (LINK_Bps,),
                      (LatencySample(o_s, o_r, 9500, one_way),), 1500)
    return cal, parse_machine(machine_toml(cal, "a test"), "fabric.toml")


def test_the_machine_file_describes_the_fabric_and_says_where_each_number_comes_from():
    cal, line = machine("line", 5)
    assert line.network["topology"] == "mesh" and line.network["dims"] == [5]
    assert line.network["ranks_per_node"] == 1 and line.network["packet_bytes"] == 1  # veth: no store-and-forward
    assert line.document["measured"]["mtu"] == 1500
    assert line.network["link_bandwidth"] == line.network["injection_bandwidth"] == pytest.approx(LINK_Bps)
    # o_s + o_r exceed the one-way time (TCP): o is half of it, the hop latency 0, as the fit does
    assert cal.o == 5500 and line.params["o"] == 5_500_000 and line.network["hop_latency"] == 0
    for line_text in machine_toml(cal, "a test").splitlines():
        if line_text.split("=")[0].strip() in ("L", "o", "g", "G", "O", "S", "link_bandwidth", "hop_latency"):
            assert "# measured" in line_text or "# not charged" in line_text or "not measured" in line_text
    _, ring = machine("ring", 4, o_s=2000, o_r=3000, one_way=20000)
    assert ring.network["topology"] == "torus" and ring.params["o"] == 2_500_000
    hop_ns = (20000 - 5000 - 4 * 8e9 / 0.95e9) / 3  # (one way - 2o - 4 one-byte link times) / 3 links
    assert ring.network["hop_latency"] == pytest.approx(hop_ns * 1000, abs=100)  # written to 0.1 ns


def test_measured_bursts_make_the_links_token_buckets_of_the_fabric_s_burst():
    from dataclasses import replace

    cal, _ = machine("star", 4)
    assert "burst_bytes" not in machine("star", 4)[1].network
    # Three runs' slopes (one-way time from 16 to 64 KiB): 240 us (204.8 MB/s), twice and three times
    # the flow's rate: the median is the peak, and a slope below the flow's rate counts as the flow's.
    bursty = replace(cal, bursts_Bps=(48 * 1024 / 240e-6, 2 * LINK_Bps, 3 * LINK_Bps))
    star = parse_machine(machine_toml(bursty, "a test"), "fabric.toml")
    assert star.network["burst_bytes"] == fabric.TBF_BURST_BYTES
    assert star.network["peak_bandwidth"] == pytest.approx(2 * LINK_Bps, rel=1e-4)
    assert replace(cal, bursts_Bps=(LINK_Bps / 2,)).peak_Bps == LINK_Bps
    # A message of the burst's size passes at the peak: twice as fast as without buckets.
    plain = machine("star", 4)[1]
    size = fabric.TBF_BURST_BYTES
    with_buckets = native_twins.simulate_pairs(star, [1, 0], size, iters=1, warmup=0)[0]
    without = native_twins.simulate_pairs(plain, [1, 0], size, iters=1, warmup=0)[0]
    assert with_buckets < without * 0.6
    # This host's cores (a `bench fit` machine's [cores]): every rank of the fabric shares them.
    cored = parse_machine(machine_toml(cal, "a test", HostTables("host.toml", {"per_node": 2, "switch": "3.6us"}, {})),
                          "f.toml")
    assert cored.node["cores"] == {"per_node": 2, "switch": 3_600_000, "quantum": 0, "one_host": True}
    assert cored.mpi == {"collective_entry": 0} and "[mpi]" not in cored.document
    # and its MPI library's costs, the same in every namespace
    host = HostTables("host.toml", {"per_node": 2}, {"collective_entry": "161.0ns"})
    assert parse_machine(machine_toml(cal, "a test", host), "f.toml").mpi == {"collective_entry": 161}


@pytest.mark.parametrize("senders", [1, 2, 3, 4])
def test_simulated_incast_gives_each_sender_an_equal_share_of_the_link(senders):
    _, line = machine("line", 5)
    times = native_twins.simulate_incast(line, senders + 1, 65536, 16, iters=3, warmup=1)
    assert sorted(times) == list(range(1, senders + 1))
    for t in times.values():
        share = 65536 / (t / 1e9) / LINK_Bps * senders
        assert 0.97 < share <= 1.0, share  # the endpoints' microseconds against milliseconds of bytes


def test_simulated_random_pairs_that_share_a_link_take_twice_as_long():
    _, line = machine("line", 4)
    _, ring = machine("ring", 5)
    size = 1 << 22

    def time(m, partners):
        return max(native_twins.simulate_pairs(m, partners, size, iters=2, warmup=1).values())

    alone = size / LINK_Bps * 1e9
    near = time(line, native_twins.neighbour_partners(4))
    assert near == pytest.approx(alone, rel=0.01)
    for seed in (1, 2):  # 0-3 1-2 and 0-2 1-3: on a line both pairs cross the link r1 -> r2
        assert time(line, native_twins.native_random_partners(4, seed)) / near == pytest.approx(2, rel=0.01)
    # On a ring of 5, 0-3 goes west over r4 and never meets 1-2; 0-2 and 1-3 still share r1 -> r2.
    assert time(ring, native_twins.native_random_partners(4, 1)) / near == pytest.approx(1, rel=0.01)
    assert time(ring, native_twins.native_random_partners(4, 2)) / near == pytest.approx(2, rel=0.01)


def _table(check) -> str:
    return "\n".join(f"{r.label}: measured {r.measured:.3f} simulated {r.simulated:.3f} ({100 * r.error:+.1f}%)"
                     for r in check.rows)


@pytest.mark.fabric
def test_incast_and_pairs_on_the_fabric_match_the_simulation_within_15_percent(tmp_path):
    # On this shared 2-core VM (load 2.7-5): with 3 repetitions 15 checks in a row stayed within 10.5%;
    # with 2, one of 27 missed 15%. So 3, and a second measurement when the first misses (as the fit test).
    settings = Settings(incasts=(3,), seeds=(2,), repeats=3)
    tables = []
    for _ in range(2):
        check = run_check(settings, nodes=4, topology="line", link="1gbit", machine_path=tmp_path / "fabric.toml",
                          prefix=PREFIX)
        tables.append(_table(check))
        if all(abs(row.error) <= TOLERANCE for row in check.rows):
            break
    assert parse_machine((tmp_path / "fabric.toml").read_text()).network["dims"] == [4]
    rows = {row.key: row for row in check.rows}
    assert set(rows) == {"incast-3-slowest", "incast-3-mean", "pairs-nn", "pairs-random-2", "ratio-2"}
    # Qualitative: three senders share one link; random pairs that share a link are clearly slower.
    assert 0.8 < rows["incast-3-mean"].measured * 3 / (check.calibration.link_Bps * 8e-9) < 1.25
    assert rows["ratio-2"].measured > 1.5
    assert all(abs(row.error) <= TOLERANCE for row in check.rows), "\n\n".join(tables)
