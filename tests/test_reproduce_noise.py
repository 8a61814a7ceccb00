"""`contend reproduce noise --quick`: the talk's qualitative findings reappear and the report is whole;
the pieces behind it (looped broadcasts, the co-scheduled expectation) are right on small cases."""

from __future__ import annotations

import json

import pytest

import contend
from contend.cli import main
from contend.experiments.noise import SHAPES, coscheduled_time, looped_bcast_goal, shape_noise


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce") / "noise"
    assert main(["reproduce", "noise", "--quick", "-o", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text())


def test_longer_rarer_detours_slow_the_barrier_far_more_at_the_same_overhead(report):
    _, results = report
    barrier = results["shapes"]["dissemination"]
    top = max(barrier["no noise"], key=int)
    slowdown = {label: barrier[label][top] / barrier["no noise"][top] for label in SHAPES}
    assert slowdown["10 Hz x 2.5 ms"] > slowdown["100 Hz x 250 us"] > slowdown["1000 Hz x 25 us"] > 1
    assert slowdown["10 Hz x 2.5 ms"] >= 2 * slowdown["1000 Hz x 25 us"]


def test_faster_network_helps_without_noise_not_with_it(report):
    _, results = report
    network = results["network"]
    top = max(network["1x network, no noise"], key=int)
    quiet = network["1x network, no noise"][top] / network["10x network, no noise"][top]
    noisy = network["1x network, 100 Hz x 250 us"][top] / network["10x network, 100 Hz x 250 us"][top]
    assert quiet > 1.5 and noisy - 1 <= 0.25 * (quiet - 1)


def test_coscheduling_absorbs_most_of_the_slowdown(report):
    _, results = report
    quiet = results["shapes"]["dissemination"]["no noise"]
    for label in SHAPES:
        for ranks, together in results["coscheduling"][label].items():
            apart = results["shapes"]["dissemination"][label][ranks]
            assert quiet[ranks] <= together < apart


def test_the_report_is_complete(report):
    out, results = report
    assert all(results["checks"].values()) and all(f["ok"] for f in results["findings"])
    page = (out / "index.html").read_text()
    for image in ("shapes-dissemination.png", "shapes-binomial-bcast.png", "network.png", "coscheduling.png",
                  "pipelining.png"):
        assert (out / image).read_bytes()[:4] == b"\x89PNG" and f'src="{image}"' in page
    assert "Ours beside Hoefler 2011" in page and "16x" in page and "32x" in page
    assert results["beckman"]["slowdown"] and results["ferreira"]["by_ranks"]
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("ranks", [2, 5, 8, 13])
def test_one_looped_broadcast_is_the_generated_broadcast(tmp_path, ranks):
    path = tmp_path / "one.goal"
    path.write_text(looped_bcast_goal(ranks, 1, rotate=False))
    looped = contend.simulate(path)
    assert looped.ranks.tolist() == contend.simulate(collective="binomial-bcast", ranks=ranks, bytes=1).ranks.tolist()


def test_rotating_root_makes_every_rank_root_once(tmp_path):
    ranks = 6
    path = tmp_path / "rot.goal"
    path.write_text(looped_bcast_goal(ranks, ranks, rotate=True))
    blocks = path.read_text().split("rank ")[1:]
    assert [block.count("recv") for block in blocks] == [ranks - 1] * ranks
    r = contend.simulate(path, records=True)
    assert r.deadlock is None and len(r.records) == ranks * (ranks - 1)
    assert sorted(r.records.groupby("tag")["dst"].nunique()) == [ranks - 1] * ranks


def test_coscheduled_expectation_matches_a_dense_sweep_of_phases():
    noise = shape_noise("1000Hz", "25us", phase="coscheduled")
    base = contend.simulate(collective="dissemination", ranks=8, bytes=1).makespan
    window = coscheduled_time("dissemination", 8, 1, noise, 200, base)
    grid = 2000  # phases evenly over the whole period
    dense = sum(contend.simulate(collective="dissemination", ranks=8, bytes=1,
                                 noise={"kind": "periodic", "frequency": "1000Hz", "duration": "25us",
                                        "phase": f"{(k + 0.5) * 1e6 / grid:.3f}ns"}).makespan
                for k in range(grid)) / grid
    assert base < window == pytest.approx(dense, rel=0.01)
