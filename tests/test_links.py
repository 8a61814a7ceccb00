"""Per-link statistics: bytes on links against hand counts, the links table and its Parquet file, the
busiest-link summary, the heatmap, and bad output paths (exit 2, nothing written)."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

import contend
from contend.cli import main
from contend.simulation.links import LINK_COLUMNS
from contend.report.heatmap import grid_panels

ENDPOINTS = """[machine]
name = "net"
[loggops]
L = "1us"
o = "1us"
g = "1us"
G = "1ns"
O = "0"
S = 1000000
"""
PNG = b"\x89PNG\r\n\x1a\n"


def machine(tmp_path, topology: str):
    path = tmp_path / "net.toml"
    path.write_text(ENDPOINTS + "[topology]\n" + topology + 'link_bandwidth = "1GB/s"\n')
    return path


def one_message(tmp_path, ranks: int, destination: int, size: int):
    path = tmp_path / "one.goal"
    blocks = [f"rank 0 {{\n  send {size}b to {destination}\n}}\n"]
    blocks += [f"rank {r} {{\n" + (f"  recv {size}b from 0\n" if r == destination else "") + "}\n"
               for r in range(1, ranks)]
    path.write_text(f"num_ranks {ranks}\n" + "".join(blocks))
    return path


def test_a_crossbar_incast_loads_each_sender_link_and_the_root_link_with_all(tmp_path):
    size = 1000
    result = contend.simulate(collective="incast", ranks=4, bytes=size,
                              machine=machine(tmp_path, 'kind = "crossbar"\nnodes = 4\n'))
    links = result.links.set_index("link")
    assert list(result.links.columns) == list(LINK_COLUMNS) and len(links) == 8  # 4 injection + 4 ejection
    injection, ejection = links[links["class"] == "injection"], links[links["class"] == "ejection"]
    assert injection["bytes"].tolist() == [0, size, size, size]
    assert ejection["bytes"].tolist() == [3 * size, 0, 0, 0]
    root = ejection.iloc[0]
    assert (root["from"], root["to"], root["peak_flows"]) == ("router 0", "node 0", 3)
    # Three flows share the root's link at 1 byte/ns: each sender's link is busy as long as the root's.
    assert root["busy_ns"] == pytest.approx(3 * size, abs=0.01)
    assert injection["busy_ns"].tolist()[1:] == pytest.approx([3 * size] * 3, abs=0.01)
    assert root["utilisation"] == pytest.approx(root["busy_ns"] / result.makespan)
    assert result.busiest_link()["link"] == 4 and result.busiest_link()["bytes"] == 3 * size


@pytest.mark.parametrize("destination, hops, sign", [(1, 1, +1), (3, 3, +1), (4, 4, +1), (6, 2, -1)])
def test_a_torus_message_loads_exactly_its_path(tmp_path, destination, hops, sign):
    size = 4096
    result = contend.simulate(one_message(tmp_path, 8, destination, size),
                              machine=machine(tmp_path, 'kind = "torus"\ndims = [8]\n'))
    loaded = result.links[result.links["bytes"] > 0]
    assert len(loaded) == hops + 2 and set(loaded["bytes"]) == {size}
    assert loaded["class"].value_counts()[["injection", "local", "ejection"]].tolist() == [1, hops, 1]
    routers = [(int(a.split()[1]), int(b.split()[1])) for a, b in
               zip(loaded.loc[loaded["class"] == "local", "from"], loaded.loc[loaded["class"] == "local", "to"])]
    assert sorted(routers) == sorted(((i * sign) % 8, (i * sign + sign) % 8) for i in range(hops))
    # The heatmap puts the bytes on the routers the message leaves, in its direction's panel.
    panel = grid_panels(result.links["bytes"].to_numpy(dtype=float), result.network)[(0, sign)]
    assert sorted(np.flatnonzero(panel[0] == size).tolist()) == sorted(a for a, _ in routers)


def test_without_a_network_there_are_no_links():
    result = contend.simulate(collective="pingpong", ranks=2, bytes=8)
    assert result.links is None and result.network is None and result.busiest_link() is None
    assert result.to_dict()["busiest_link"] is None


def test_cli_writes_the_links_parquet_and_heatmap(capsys, tmp_path):
    path = machine(tmp_path, 'kind = "torus"\ndims = [4, 4]\n')
    links, heatmap = tmp_path / "links.parquet", tmp_path / "load.png"
    code = main(["sim", "--collective", "random-pairs", "--ranks", "16", "--bytes", "64KiB", "--machine", str(path),
                 "--links", str(links), "--heatmap", str(heatmap), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["outputs"]["links"] == str(links) and summary["busiest_link"]["bytes"] > 0
    table = pq.read_table(links)
    assert table.column_names == list(LINK_COLUMNS)
    assert table.num_rows == 16 + 16 + 4 * 16  # injection, ejection, 4 directions per router
    types = {field.name: str(field.type) for field in table.schema}
    assert types["link"] == "uint32" and types["bytes"] == "uint64" and types["peak_flows"] == "uint32"
    assert types["busy_ns"] == types["utilisation"] == "double" and types["class"].startswith("dictionary")
    metadata = table.schema.metadata
    assert json.loads(metadata[b"contend.workload"])["collective"] == "random-pairs"
    assert json.loads(metadata[b"contend.makespan_ns"]) == summary["makespan"]
    assert int(table.column("bytes").to_numpy().max()) == summary["busiest_link"]["bytes"]
    assert heatmap.read_bytes()[:8] == PNG
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_the_table_names_the_busiest_link_and_strips_draw_other_topologies(capsys, tmp_path):
    from rich.console import Console

    from contend.report.tables import result_table

    path = machine(tmp_path, 'kind = "crossbar"\nnodes = 4\n')
    console = Console(record=True, width=200)
    console.print(result_table(contend.simulate(collective="incast", ranks=4, bytes=1000, machine=path)))
    text = console.export_text()
    assert "crossbar nodes=4, links 1,000 MB/s" in text
    assert "link 4 (ejection, router 0 -> node 0): 3,000 bytes, busy 3,000 ns" in text
    heatmap = tmp_path / "strips.png"
    assert main(["sim", "--collective", "incast", "--ranks", "4", "--bytes", "1000", "--machine", str(path),
                 "--heatmap", str(heatmap), "--heatmap-metric", "utilisation"]) == 0
    assert "busiest link" in capsys.readouterr().out
    assert heatmap.read_bytes()[:8] == PNG


@pytest.mark.parametrize("option, target, pattern", [
    ("--links", "missing/links.parquet", "--links: directory .* does not exist"),
    ("--heatmap", "missing/load.png", "--heatmap: directory .* does not exist"),
    ("--links", ".", "--links: .* is a directory"),
])
def test_bad_link_output_paths_exit_2(capsys, tmp_path, monkeypatch, option, target, pattern):
    path = machine(tmp_path, 'kind = "crossbar"\nnodes = 4\n')
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["sim", "--collective", "incast", "--ranks", "4", "--bytes", "8", "--machine", str(path),
                 "--records", "r.parquet", option, target])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and re.search(pattern, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "nothing written"


@pytest.mark.parametrize("option", ["--links", "--heatmap"])
def test_link_outputs_need_a_network(capsys, tmp_path, option):
    code = main(["sim", "--collective", "incast", "--ranks", "4", "--bytes", "8", option, str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and f"{option}: the machine has no network" in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())
