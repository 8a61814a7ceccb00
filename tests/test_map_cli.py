"""`contend map` end to end on a small torus with a 3D stencil, and the placement files it writes read back
as MPICH, Open MPI, Slurm and the engine would read them (contend.mapping.formats)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contend.cli import main
from contend.machine.file import load_machine, loggops_params
from contend.mapping import formats

TORUS = """[machine]
name = "small-torus"

[loggops]
L = "1us"
o = "1us"
g = "1us"
G = "425MB/s"
O = "0ns"
S = 1200

[topology]
kind = "torus"
dims = [4, 4, 2]
ranks_per_node = 2      # two ranks per node: the rankfile's slots 0 and 1
placement = [0, 1,      # a placement of another job: replaced in the copy
  2]  # its end
link_bandwidth = "425MB/s"
hop_latency = "50ns"
"""
NODES = 32
PER_NODE = 2
STENCIL = (4, 4, 4)  # 64 ranks, periodic: every rank sends to its six neighbours
RANKS = 64
HALO = 4096


def stencil_goal(path: Path, dims=STENCIL, size=HALO) -> Path:
    """A 3D halo exchange on a periodic process grid: rank r = x + X (y + Y z) sends `size` bytes to each of
    its six neighbours (tag = direction) and receives from the six."""
    x_, y_, z_ = dims

    def rank(x, y, z):
        return x % x_ + x_ * (y % y_ + y_ * (z % z_))

    lines = [f"num_ranks {x_ * y_ * z_}"]
    steps = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))
    for r in range(x_ * y_ * z_):
        x, y, z = r % x_, r // x_ % y_, r // (x_ * y_)
        lines.append(f"rank {r} {{")
        for tag, (dx, dy, dz) in enumerate(steps):
            lines.append(f"s{tag}: send {size}b to {rank(x + dx, y + dy, z + dz)} tag {tag}")
            lines.append(f"r{tag}: recv {size}b from {rank(x - dx, y - dy, z - dz)} tag {tag}")
        lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def job(tmp_path):
    machine = tmp_path / "torus.toml"
    machine.write_text(TORUS)
    return stencil_goal(tmp_path / "stencil.goal"), machine


def run_map(capsys, *argv):
    code = main(["map", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expand_machinefile(text: str) -> list[str]:
    """The host of each rank as MPICH's Hydra reads `-f`: each host:count line hands count consecutive ranks
    to host."""
    hosts = []
    for line in text.splitlines():
        host, count = line.rsplit(":", 1)
        hosts += [host] * int(count)
    return hosts


def test_map_writes_every_file_and_each_reproduces_the_chosen_placement(job, tmp_path, capsys, monkeypatch):
    goal, machine = job
    out = tmp_path / "out"
    monkeypatch.setenv("COLUMNS", "80")
    code, stdout, stderr = run_map(capsys, goal, "--machine", machine, "--method", "block,random,topo", "--seed", "3",
                                   "-o", out)
    assert (code, stderr) == (0, "")
    summary = json.loads((out / "mapping.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == summary["files"] == sorted(
        ["mapping.json", "placement.toml", "machine.toml", "machinefile", "rankfile", "slurm-hosts"])
    assert [m["method"] for m in summary["methods"]] == ["block", "random", "topo"]
    best = min(summary["methods"], key=lambda m: (m["objective"]["hop_bytes"], m["objective"]["max_link_load"]))
    assert summary["best"] == best["method"]
    placement = np.asarray(best["placement"])
    assert len(placement) == RANKS and np.bincount(placement, minlength=NODES).max() <= PER_NODE
    assert summary["bytes"] == RANKS * 6 * HALO and summary["ranks"] == RANKS and summary["nodes"] == NODES
    hosts = [f"node{n}" for n in placement]

    # the engine's placement list, as a snippet and inside a copy of the machine file (its comments kept)
    assert formats.read_placement(out / "placement.toml", RANKS, NODES, PER_NODE).tolist() == placement.tolist()
    copy = load_machine(out / "machine.toml")
    assert copy.network["placement"] == placement.tolist()
    assert "two ranks per node" in (out / "machine.toml").read_text()
    # MPICH: host:count lines, consecutive ranks of one host coalesced, and no two neighbouring lines alike
    machinefile = (out / "machinefile").read_text()
    assert expand_machinefile(machinefile) == hosts
    line_hosts = [line.rsplit(":", 1)[0] for line in machinefile.splitlines()]
    assert all(a != b for a, b in zip(line_hosts, line_hosts[1:]))
    # Open MPI: every rank once, in order, on its host, each host's slots 0, 1, ... distinct
    rows = [line.split() for line in (out / "rankfile").read_text().splitlines()]
    assert [row[0] for row in rows] == ["rank"] * RANKS
    assert [row[1] for row in rows] == [f"{r}={h}" for r, h in enumerate(hosts)]
    slots = {}
    for rank, row in enumerate(rows):
        slots.setdefault(hosts[rank], []).append(int(row[2].removeprefix("slot=")))
    assert all(s == list(range(len(s))) and len(s) <= PER_NODE for s in slots.values())
    # Slurm: one host per rank
    assert (out / "slurm-hosts").read_text().splitlines() == hosts

    # the objective written is the objective of that placement
    from contend.mapping.graph import CommGraph
    from contend.mapping.objective import evaluate

    again = evaluate(CommGraph.from_goal(goal), loggops_params(load_machine(machine)), placement)
    assert again.hop_bytes == best["objective"]["hop_bytes"]
    assert again.max_link_load == pytest.approx(best["objective"]["max_link_load"])
    assert best["objective"]["makespan_ns"] > 0

    # the table: every method, the chosen one marked, 80 columns
    lines = stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert any(line.split("│")[1].strip() == f"{summary['best']} *" for line in lines if line.count("│") > 2)


def test_json_is_mapping_json_and_apply_prints_each_launcher(job, tmp_path, capsys):
    goal, machine = job
    out = tmp_path / "out"
    code, stdout, _ = run_map(capsys, goal, "--machine", machine, "--method", "topo", "--json", "-o", out)
    assert code == 0
    assert stdout == (out / "mapping.json").read_text()
    assert json.loads(stdout)["best"] == "topo"
    code, stdout, _ = run_map(capsys, goal, "--machine", machine, "--method", "block", "--apply", "-o", out)
    assert code == 0
    launch = stdout.splitlines()[-3:]
    assert launch == [f"mpiexec -f {out}/machinefile -n {RANKS} PROGRAM",
                      f"mpirun --rankfile {out}/rankfile -n {RANKS} PROGRAM",
                      f"SLURM_HOSTFILE={out}/slurm-hosts srun --distribution=arbitrary -n {RANKS} PROGRAM"]
    assert json.loads((out / "mapping.json").read_text())["best"] == "block"  # the second run replaced it


def test_a_placement_file_is_scored_beside_the_methods(job, tmp_path, capsys):
    goal, machine = job
    first = tmp_path / "first"
    assert run_map(capsys, goal, "--machine", machine, "--method", "topo", "-o", first)[0] == 0
    second = tmp_path / "second"
    assert run_map(capsys, goal, "--machine", machine, "--method", "block", "--placement",
                   first / "placement.toml", "--no-simulate", "-o", second)[0] == 0
    summary = json.loads((second / "mapping.json").read_text())
    scored = {m["method"]: m for m in summary["methods"]}
    topo = json.loads((first / "mapping.json").read_text())["methods"][0]
    assert scored["file"]["placement"] == topo["placement"]
    assert scored["file"]["objective"]["hop_bytes"] == topo["objective"]["hop_bytes"]
    assert scored["file"]["objective"]["makespan_ns"] is None
    assert summary["best"] == "block"  # --method named one: that one is written


def test_hosts_name_the_nodes(job, tmp_path, capsys):
    goal, machine = job
    names = tmp_path / "hosts"
    names.write_text("# the cluster\n" + "".join(f"c{i:03d}.example  # rack {i // 8}\n" for i in range(NODES)))
    out = tmp_path / "out"
    assert run_map(capsys, goal, "--machine", machine, "--method", "block", "--hosts", names, "-o", out)[0] == 0
    assert expand_machinefile((out / "machinefile").read_text()) == [f"c{r // 2:03d}.example" for r in range(RANKS)]


def test_a_collective_maps_too(job, tmp_path, capsys):
    _, machine = job
    out = tmp_path / "out"
    code, _, _ = run_map(capsys, "--collective", "alltoall-pairwise", "--ranks", "16", "--bytes", "1KiB",
                         "--machine", machine, "--method", "block,cyclic", "-o", out)
    assert code == 0
    summary = json.loads((out / "mapping.json").read_text())
    assert summary["workload"]["collective"] == "alltoall-pairwise"
    assert summary["bytes"] == 16 * 15 * 1024


def test_records_give_the_schedule_s_graph_and_the_machine_copy_runs(job, tmp_path, capsys):
    """The records of the stencil's simulation carry its messages: the same pairs and bytes as the GOAL.
    The simulation runs on the machine file `contend map` wrote: the engine takes it as it is."""
    goal, machine = job
    first = tmp_path / "first"
    assert run_map(capsys, goal, "--machine", machine, "--method", "block", "-o", first)[0] == 0
    records = tmp_path / "stencil.parquet"
    assert main(["sim", str(goal), "--machine", str(first / "machine.toml"), "--records", str(records), "--json"]) == 0
    simulated = json.loads(capsys.readouterr().out)
    by_goal = json.loads((first / "mapping.json").read_text())
    assert simulated["makespan"] == pytest.approx(by_goal["methods"][0]["objective"]["makespan_ns"])
    second = tmp_path / "second"
    assert run_map(capsys, records, "--machine", machine, "--method", "block", "-o", second)[0] == 0
    by_records = json.loads((second / "mapping.json").read_text())
    assert (by_records["pairs"], by_records["bytes"]) == (by_goal["pairs"], by_goal["bytes"]) == \
        (RANKS * 6, RANKS * 6 * HALO)
    assert by_records["methods"][0]["objective"]["hop_bytes"] == by_goal["methods"][0]["objective"]["hop_bytes"]
    assert by_records["methods"][0]["objective"]["makespan_ns"] is None  # records: no schedule to simulate


def test_a_trace_directory_maps_as_its_schedule(job, tmp_path, capsys):
    """A liballprof trace set (tests/data) maps with the graph and the makespan of its GOAL conversion."""
    _, machine = job
    trace = Path(__file__).parent / "data" / "liballprof" / "sphot"
    goal = tmp_path / "sphot.goal"
    assert main(["goal", "convert", str(trace), "-o", str(goal)]) == 0
    capsys.readouterr()
    summaries = []
    for source in (trace, goal):
        out = tmp_path / f"out-{source.name}"
        assert run_map(capsys, source, "--machine", machine, "--method", "block,topo", "-o", out)[0] == 0
        summaries.append(json.loads((out / "mapping.json").read_text()))
    by_trace, by_goal = summaries
    assert by_trace["workload"] == {"trace": str(trace)}
    assert by_trace["ranks"] == 4 and by_trace["pairs"] > 0
    assert [m["objective"] for m in by_trace["methods"]] == [m["objective"] for m in by_goal["methods"]]


# --- bad input: one line, exit 2, nothing written ------------------------------------------------------

ERRORS = {
    "more ranks than the machine holds": (lambda d: [stencil_goal(d / "big.goal", (4, 4, 8))],
                                          "big.goal: 128 ranks do not fit on small-torus's 32 nodes"),
    "placement with a node twice too many": (lambda d: ["GOAL", "--placement", _text(d / "p", "0 0 0" + " 1" * 61)],
                                             "p:1: rank 2 is one rank too many on node 0"),
    "placement with a node out of range": (lambda d: ["GOAL", "--placement", _text(d / "p", "\n".join(
        map(str, range(31))) + "\n32\n" + "0\n" * 32)], "p:32: rank 31 on node 32, but the machine has nodes 0..31"),
    "placement of the wrong length": (lambda d: ["GOAL", "--placement", _text(d / "p", "0 1\n2 3\n")],
                                      "p:2: lists 4 nodes for 64 ranks"),
    "unknown method": (lambda d: ["GOAL", "--method", "topo,tpoo"], "--method: unknown method 'tpoo'"),
    "missing input": (lambda d: [d / "nothing.goal"], "nothing.goal: no such file or directory"),
    "hosts file with a name twice": (lambda d: ["GOAL", "--hosts", _text(d / "h", "a\nb\na\n")],
                                     "h:3: host 'a' is listed twice (also line 1)"),
    "job without messages": (lambda d: [_text(d / "calc.goal", "num_ranks 2\nrank 0 {\nc: calc 5\n}\nrank 1 {\n"
                                                  "c: calc 5\n}\n")], "calc.goal: no two ranks exchange a message"),
    "machine without a network": (lambda d: ["GOAL", "--machine", "loggopsim-default"], "has no [topology] table"),
}


def _text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(case, job, tmp_path, capsys):
    goal, machine = job
    inputs = tmp_path / "in"
    inputs.mkdir()
    make, message = ERRORS[case]
    argv = [goal if a == "GOAL" else a for a in make(inputs)]
    if "--machine" not in argv:
        argv += ["--machine", machine]
    before = sorted(tmp_path.rglob("*"))
    code, stdout, stderr = run_map(capsys, *argv, "-o", tmp_path / "out")
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("contend: error: ") and message in stderr, stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_an_output_that_cannot_be_a_directory_is_refused_before_any_work(job, tmp_path, capsys):
    goal, machine = job
    blocker = _text(tmp_path / "file", "x")
    for out in (blocker, blocker / "out"):
        code, _, stderr = run_map(capsys, goal, "--machine", machine, "-o", out)
        assert code == 2 and stderr.count("\n") == 1 and str(blocker) in stderr
    assert blocker.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["file", "stencil.goal",
                                                                                          "torus.toml"]


# --- the formats on their own ---------------------------------------------------------------------------

def test_machinefile_coalesces_only_consecutive_ranks_of_a_host():
    placement = np.array([0, 0, 1, 3, 3, 0, 2, 1])
    assert formats.machinefile(placement, formats.default_hosts(4)) == \
        "node0:2\nnode1:1\nnode3:2\nnode0:1\nnode2:1\nnode1:1\n"
    assert formats.rankfile(placement, list("abcd")).splitlines()[5] == "rank 5=a slot=2"


def test_placement_file_reads_plain_lists_and_the_toml_snippet(tmp_path):
    snippet = _text(tmp_path / "p.toml", formats.placement_toml(np.arange(40) // 2))
    assert formats.read_placement(snippet, 40, 20, 2).tolist() == (np.arange(40) // 2).tolist()
    plain = _text(tmp_path / "p.txt", "# rank order\n3, 2  # two\n1\n\n0\n")
    assert formats.read_placement(plain, 4, 4, 1).tolist() == [3, 2, 1, 0]
    with pytest.raises(ValueError, match=r"p.txt:2: rank 1 is one rank too many on node 3 \(ranks 0 are there\)"):
        formats.read_placement(_text(tmp_path / "p.txt", "3\n3\n"), 2, 4, 1)
    with pytest.raises(ValueError, match=r"p.txt:1: expected a node number, got '1.5'"):
        formats.read_placement(_text(tmp_path / "p.txt", "1.5\n"), 1, 4, 1)
    with pytest.raises(ValueError, match=r"p.txt:2: more than 1 nodes for 1 ranks"):
        formats.read_placement(_text(tmp_path / "p.txt", "0\n1\n"), 1, 4, 1)


def test_hosts_file_needs_one_name_per_node(tmp_path):
    with pytest.raises(ValueError, match=r"h:2: lists 2 hosts, but the machine has 3 nodes"):
        formats.read_hosts(_text(tmp_path / "h", "a\nb\n"), 3)
    with pytest.raises(ValueError, match=r"h:3: more hosts than the machine's 2 nodes"):
        formats.read_hosts(_text(tmp_path / "h", "a\nb\nc\n"), 2)
    with pytest.raises(ValueError, match=r"h:1: expected one host name"):
        formats.read_hosts(_text(tmp_path / "h", "a:4\n"), 1)
