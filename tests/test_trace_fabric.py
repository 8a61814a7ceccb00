"""A traced incast on the emulated fabric (needs root and iproute2): three nodes put 256 KiB messages into
node 0 over 1 Gbit/s shaped links, then the same puts around a ring that leaves node 0 out (the
control). `contend trace` records it; `contend diagnose DIR` must find target contention at rank 0 and
attribute it to the source line of the incast's MPI_Put in the program, compiled with -g here. The
fabric uses this file's own prefix, so it never meets another fabric. No timing is asserted: only
where the contention is and which line it is attributed to."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from contend.native import fabric, mpi
from contend.cli import main

PREFIX = "ctdtr-"
LINK = "1gbit"
RANKS = 4
SOURCE = Path(__file__).resolve().parents[1] / "native" / "trace" / "test" / "incast.c"
MACHINE = """[machine]
name = "fabric-1gbit"
description = "the emulated fabric's 1 Gbit/s shaped links, round figures"
source = "tests/test_trace_fabric.py"

[loggops]
L = "40us"
o = "5us"
g = "5us"
G = "8ns"
O = "0ns"
S = 65535
"""

pytestmark = pytest.mark.fabric


def line_of(marker: str) -> int:
    return next(n for n, text in enumerate(SOURCE.read_text().splitlines(), 1) if marker in text)


@pytest.fixture
def own_fabric():
    with fabric.session(RANKS, 1, LINK, "star", PREFIX) as built:
        yield built
    assert fabric.our_namespaces(PREFIX) == [], "the test left namespaces behind"
    assert mpi.running_benchmarks(os.getpid()) == []


def test_traced_incast_shows_target_contention_at_the_receivers_put_line(own_fabric, tmp_path, capsys):
    library = mpi.find_mpi()
    program = tmp_path / "incast"
    subprocess.run([str(library.mpicc), "-g", "-O0", "-o", str(program), str(SOURCE)], check=True)
    wrapper = fabric.write_rank_wrapper(own_fabric, tmp_path)
    argv, _ = mpi.launch_command(library, RANKS, [str(program), "30", "262144"], mpi.Placement(wrapper))
    assert main(["trace", "-o", str(tmp_path / "t"), "--timeout", "300", "--", *argv]) == 0
    (tmp_path / "fabric.toml").write_text(MACHINE)
    report = tmp_path / "diagnosis.json"
    assert main(["diagnose", str(tmp_path / "t"), "--machine", str(tmp_path / "fabric.toml"),
                 "--json", str(report)]) == 0
    capsys.readouterr()
    diagnosis = json.loads(report.read_text())
    sites = {site["call_site"]: site for site in diagnosis["call_sites"]}
    incast = sites[f"main (incast.c:{line_of('/* INCAST */')})"]
    ring = sites.get(f"main (incast.c:{line_of('/* RING */')})", {"target": 0.0, "contention": 0.0})
    assert incast["messages"] <= 3 * 30 and set(incast["top_ranks"]) <= {1, 2, 3}
    assert incast["target"] > incast["initiator"]  # contention at the receiver's in-link
    assert incast["target"] > 5 * ring["target"]    # the ring's targets each receive one flow
    assert diagnosis["targets"][0]["rank"] == 0     # the hot target is the incast's receiver
    assert diagnosis["split_ns"]["target"] >= incast["target"]
