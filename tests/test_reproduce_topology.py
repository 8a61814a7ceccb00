"""`contend reproduce topology --quick`: Bhatele and Kale 2009's qualitative findings reappear, the report is whole;
the torus presets say where every number comes from."""

from __future__ import annotations

import json
import re
from importlib import resources

import numpy as np
import pytest

import contend
from contend.cli import main
from contend.experiments.topology import partners_along, torus

TORUS_PRESETS = ("bgp-torus", "xt3-torus")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce") / "topology"
    assert main(["reproduce", "topology", "--quick", "-o", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text())


def test_latency_grows_with_hops_for_small_messages(report):
    _, results = report
    for machine, by_size in results["benchmark_1"].items():
        smallest = by_size[min(by_size, key=int)]
        latencies = [smallest[h] for h in sorted(smallest, key=int)]
        assert all(a < b for a, b in zip(latencies, latencies[1:])), machine
        assert sorted(map(int, smallest)) == list(range(1, results["machines"][machine]["diameter"] + 1))


def test_random_pairs_are_slower_than_neighbours_for_large_messages(report):
    _, results = report
    for machine, pairs in results["benchmark_2"].items():
        assert pairs["random-pairs"][-1] > pairs["neighbour-pairs"][-1], machine


def test_eight_hops_are_slower_than_one_increasingly_with_size(report):
    _, results = report
    for machine, by_distance in results["benchmark_3"].items():
        ratios = [far / near for far, near in zip(by_distance["8"], by_distance["1"])]
        assert all(r > 1 for r in ratios) and ratios[-1] > ratios[0], (machine, ratios)
    # On the BG/P-like torus (links no faster than a node injects), 8 messages share every z+ link at
    # 8 hops and each link carries one message at 1 hop: close to 8x for large messages.
    bgp = results["benchmark_3"]["bgp-torus"]
    assert (bgp["peak_flows"]["1"], bgp["peak_flows"]["8"]) == (1, 8)
    assert bgp["8"][-1] / bgp["1"][-1] == pytest.approx(8, rel=0.05)


def test_the_report_is_complete(report):
    out, results = report
    assert all(results["checks"].values()) and all(f["ok"] for f in results["findings"])
    page = (out / "index.html").read_text()
    for image in ("pairs.png", "hops-bgp-torus.png", "z-pairs-xt3-torus.png"):
        assert (out / image).read_bytes()[:4] == b"\x89PNG" and f'src="{image}"' in page
    assert (out / "heatmap-random-pairs-bgp-torus.png").read_bytes()[:4] == b"\x89PNG"
    assert "Ours beside Bhatele and Kale 2009" in page and "1.75x" in page and "2.25x" in page
    assert set(results["wall_seconds"]) >= {"benchmark_1", "benchmark_2", "benchmark_3", "total"}
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name]


def test_bad_output_directory_exits_2(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["reproduce", "topology", "--quick", "-o", str(blocker / "report")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o: cannot create directory" in err


@pytest.mark.parametrize("distance", range(1, 9))
def test_partners_along_z_are_a_perfect_matching_n_hops_apart(distance):
    t = torus("bgp-torus", (2, 2, 16))
    partner = partners_along(t.layout, distance)
    coordinates = t.layout.coordinates[t.layout.node_of_rank]
    for rank, other in enumerate(partner):
        assert partner[other] == rank and other != rank
        assert (coordinates[rank][:2] == coordinates[other][:2]).all()
    assert (t.layout.hops(np.arange(len(partner)), np.asarray(partner)) == distance).all()


@pytest.mark.parametrize("name", TORUS_PRESETS)
def test_torus_presets_cite_or_estimate_every_number(name):
    machine = contend.load_machine(name)
    assert machine.network["topology"] == "torus" and machine.source
    text = resources.files("contend.machine").joinpath(f"presets/{name}.toml").read_text()
    table = ""
    for line in text.splitlines():
        header = re.match(r"^\[(.+)\]", line)
        table = header.group(1) if header else table
        number = re.match(r"^\w+\s*=\s*[^#]*\d", line)  # a key whose value holds a number
        if table in ("loggops", "topology") and number:
            assert re.search(r"#.*(published|estimate|Bhatele and Kale 2009)", line), line
