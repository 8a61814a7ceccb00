"""Memory contention (NiMC) through the Python API and the CLI (docs/models.md, "Memory contention
(NiMC)"): the [memory] table and the presets, hand-computed cases exact, the mitigations' options,
bytes in = bytes out, nothing changes without the table, and bad tables or `calc ... mem` syntax as
one line naming file and line, exit code 2."""

from __future__ import annotations

import json
import re

import pytest

from contend.cli import main
from contend.errors import UserError
from contend.machine.file import load_machine, parse_machine
from contend.simulation.simulate import simulate

BASE = '[loggops]\nL = "100ns"\no = "0ns"\ng = "0ns"\nG = "0ns"\nO = "0ns"\nS = 1000000\n'
MEMORY = '[memory]\nbandwidth = "64GB/s"\nnic_bandwidth = "32GB/s"\n'
# Rank 0 moves 65536 B through memory while rank 1 (another node) writes 16384 B into it from 200 ns.
ONE_WRITE = ("num_ranks 2\nrank 0 {\n  c: calc 0 mem 65536\n  r: recv 16384b from 1 tag 0 cpu 1\n}\n"
             "rank 1 {\n  w: calc 100\n  s: send 16384b to 0 tag 0\n  s requires w\n}\n")


def files(tmp_path, machine: str, goal: str = ONE_WRITE):
    (tmp_path / "m.toml").write_text(machine)
    (tmp_path / "s.goal").write_text(goal)
    return tmp_path / "m.toml", tmp_path / "s.goal"


def calc_end(result) -> float:
    tl = result.timeline
    return float(tl[(tl["rank"] == 0) & (tl["kind"] == "calc")]["end"].max())


def test_one_write_during_a_calc_costs_its_bytes_over_the_bandwidth(tmp_path):
    machine, goal = files(tmp_path, BASE + MEMORY)
    r = simulate(goal, machine=str(machine), timeline=True)
    # 1024 ns alone; the 16384 B write takes 16384 B / 64 GB/s = 256 ns from it.
    assert calc_end(r) == 1280
    assert r.memory == {"bytes_written": [16384, 0], "write_busy": 512, "calc_delay": 256}
    assert sum(r.memory["bytes_written"]) == 16384  # bytes in = bytes out
    plain = simulate(goal, machine=str(machine), memory="none", timeline=True)
    assert calc_end(plain) == 0 and plain.memory is None


def test_throttle_and_reserved_core_options(tmp_path):
    machine, goal = files(tmp_path, BASE + MEMORY, ONE_WRITE.replace("w: calc 100", "w: calc 800"))
    # Arriving at 900 ns: the last 7936 B go at 32 GB/s (248 ns), or at 48 GB/s under a 16 GB/s cap.
    assert calc_end(simulate(goal, machine=str(machine), timeline=True)) == 1148
    capped = simulate(goal, machine=str(machine), memory_throttle="16GB/s", timeline=True)
    assert calc_end(capped) == pytest.approx(1065.333, abs=0.001) and capped.memory["write_busy"] == 1024
    machine, goal = files(tmp_path, BASE + MEMORY.replace("[memory]\n", "[memory]\nranks_per_node = 4\n"),
                          "num_ranks 4\nrank 0 {\n  calc 3000\n}\nrank 1 {\n}\nrank 2 {\n}\nrank 3 {\n}\n")
    assert simulate(goal, machine=str(machine), reserve_core=True).makespan == 4000  # 3000 x 4/3
    with pytest.raises(UserError, match="no \\[memory\\] table"):
        simulate(goal, machine="loggopsim-default", reserve_core=True)


def test_sim_cli_reports_memory_and_its_options(tmp_path, capsys):
    machine, goal = files(tmp_path, BASE + MEMORY)
    assert main(["sim", str(goal), "--machine", str(machine), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["memory"]["calc_delay"] == 256 and summary["params"]["memory"]["nic"] == "offload"
    assert main(["sim", str(goal), "--machine", str(machine), "--json", "--memory-throttle", "16GB/s"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["write_busy"] == 1024
    assert main(["sim", str(goal), "--machine", str(machine), "--json", "--no-memory"]) == 0
    assert "memory" not in json.loads(capsys.readouterr().out)


def test_presets_carry_the_papers_numbers_and_say_which_are_estimates():
    onload, offload = load_machine("sandybridge-onload"), load_machine("sandybridge-offload")
    assert onload.memory["compute_bandwidth"] == 73.4e9 and onload.memory["nic"] == "onload"
    assert offload.memory["bandwidth"] == 85.3e9 and offload.memory["nic"] == "offload"
    # The calibration: the triad under writes at the NIC's rate is Groves 2016's 36.1 GB/s.
    m = onload.memory
    assert m["compute_bandwidth"] / (1 + m["pollution"] * m["nic_bandwidth"] / 1e9) == pytest.approx(36.1e9, rel=1e-4)
    for name in ("sandybridge-onload", "sandybridge-offload", "westmere-offload"):
        text = open(load_machine(name).path, encoding="utf-8").read()
        assert "estimate" in text and "Groves 2016" in text


def test_without_memory_traffic_an_offload_model_changes_nothing():
    plain = simulate(collective="allreduce-ring", ranks=32, bytes="64KiB", machine="qdr-ib-fattree")
    memory = load_machine("sandybridge-offload").memory
    modelled = simulate(collective="allreduce-ring", ranks=32, bytes="64KiB", machine="qdr-ib-fattree", memory=memory)
    assert modelled.ranks.tolist() == plain.ranks.tolist()
    # Only ranks 15 and 31 send to another node (16 per node): 2 (P - 1) blocks of 64 KiB / P each.
    assert modelled.memory["bytes_written"] == [2 * 31 * 2048, 2 * 31 * 2048]


@pytest.mark.parametrize("table,pattern", [
    ('[memory]\nnic_bandwidth = "1GB/s"\n', r"m\.toml:\d+: \[memory\]: needs bandwidth"),
    ('[memory]\nbandwidth = "fast"\n', r"m\.toml:\d+: \[memory\] bandwidth: expected a bandwidth"),
    ('[memory]\nbandwidth = "10GB/s"\ncompute_bandwidth = "20GB/s"\n', r"m\.toml:\d+: .*must not exceed"),
    ('[memory]\nbandwidth = "10GB/s"\nnic = "smart"\n', r"m\.toml:\d+: \[memory\] nic: expected"),
    ('[memory]\nbandwidth = "10GB/s"\npollution = 0.3\n', r"m\.toml:\d+: \[memory\] pollution: applies to nic"),
    ('[memory]\nbandwidth = "10GB/s"\nbandwith = "1GB/s"\n', r"m\.toml:\d+: \[memory\] bandwith: unknown key"),
    ('[memory]\nbandwidth = "10GB/s"\nreserve_core = true\n', r"m\.toml:\d+: \[memory\] reserve_core: needs at least 2"),
    ('[memory]\nbandwidth = "10GB/s"\nfloor = 1.5\n', r"m\.toml:\d+: \[memory\] floor: expected a fraction"),
    ('[memory]\nbandwidth = "10GB/s"\nnic = "onload"\ncpu_per_byte = "2ns"\npollution = 0.1\nnic_bandwidth = "1GB/s"\n',
     r"m\.toml:\d+: \[memory\] cpu_per_byte: .*whole core"),
    ('[memory]\nbandwidth = "10GB/s"\nnic = "onload"\ncpu_per_byte = "fast"\n', r"cpu_per_byte: expected a time per byte"),
])
def test_bad_memory_tables_name_file_and_line(tmp_path, capsys, table, pattern):
    machine, goal = files(tmp_path, BASE.replace('G = "0ns"', 'G = "1ns"') + table)
    assert main(["sim", str(goal), "--machine", str(machine)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err


@pytest.mark.parametrize("statement,column,message", [
    ("calc 10 mem x", 15, "expected a number for the memory traffic"),
    ("calc 10 mem", 11, "'mem' needs a value"),
    ("calc 10 mem 5 mem 6", 17, "'mem' given twice"),
    ("send 8b to 0 mem 5", 16, r"unexpected 'mem' \(expected tag, cpu or nic\)"),
])
def test_bad_calc_mem_syntax_names_file_line_and_column(tmp_path, capsys, statement, column, message):
    machine, goal = files(tmp_path, BASE + MEMORY, f"num_ranks 1\nrank 0 {{\n  {statement}\n}}\n")
    assert main(["sim", str(goal), "--machine", str(machine)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(rf"s\.goal:3:{column}: {message}", err), err


def test_goal_check_counts_memory_traffic(tmp_path, capsys):
    _, goal = files(tmp_path, BASE + MEMORY)
    assert main(["goal", "check", str(goal), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["calc_memory_bytes"] == 65536 and summary["calcs"] == 2


def test_an_unknown_table_beside_memory_is_an_error():
    with pytest.raises(UserError, match=r"t\.toml:\d+: \[power\]: unknown table; known: machine"):
        parse_machine(BASE + MEMORY + '[power]\nprofile = "x"\n', "t.toml")
