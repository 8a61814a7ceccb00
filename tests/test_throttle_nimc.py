"""The library's NiMC mitigations under real MPI (4 ranks on this host, two emulated nodes of two):
the per-target-node rate of one-sided traffic (every byte arrives; the paced starts into a node are
never closer than the previous op's bytes at the node's share; the run cannot have moved the bytes
faster than the cap) and the core reservation (each rank's affinity, from /proc/self/status and the
library's counters, leaves one CPU out). Bad values are one line, exit 2. No timing is asserted beyond
the bound the cap itself guarantees (a slower host only makes the run longer)."""

from __future__ import annotations

import os

import pytest

from contend.cli import main
from contend.native import libthrottle, mpi
from tests.test_throttle import run

RANKS = 4
CAP = 20_000_000  # bytes/s into each node


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for key in list(os.environ):
        if key.startswith(libthrottle.PREFIX):
            monkeypatch.delenv(key)


def nimc_run(library, tmp_path, variables, *args):
    stats = tmp_path / "stats.jsonl"
    program = [str(mpi.build_dir(library) / "throttle-nimc"), *args]
    code, lines, stderr = run(library, program, {**variables, "CONTEND_THROTTLE_STATS": str(stats),
                                                 "CONTEND_THROTTLE_RANKS_PER_NODE": "2"})
    assert code == 0, stderr[-3000:]
    lines = sorted(lines, key=lambda line: line["rank"])
    assert [line["rank"] for line in lines] == list(range(RANKS))
    assert all(line["errors"] == 0 for line in lines), lines  # every byte where it belongs
    return lines, libthrottle.read_stats(stats)


@pytest.mark.parametrize("policy", [{"policy": "none"}, {"policy": "token", "tokens": 1, "stall_ms": 10000},
                                    {"policy": "rate", "gap_ns": 1000}], ids=["none", "token", "rate"])
def test_one_sided_traffic_into_one_node_is_paced_at_the_cap(built, tmp_path, policy):
    settings = libthrottle.settings(policy.pop("policy"), memory_throttle=CAP, **policy)
    lines, rows = nimc_run(built, tmp_path, settings, "--into-node", "1", "--ops", "300", "--max-bytes", "8192")
    origins = [line for line in lines if line["node"] == 0]
    for line, row in zip(lines, rows):
        assert row["memory_throttle"] == CAP and row["target_share_Bps"] == CAP  # two nodes: one other
        # the library paced exactly the ops into the other node (node 1 writes into itself: not paced)
        assert (row["target_ops"], row["target_bytes"]) == (line["remote_ops"], line["remote_bytes"]), (line, row)
    for row in rows[:2]:
        assert row["target_ops"] == 300 and row["target_waits"] > 0
        # starts into node 1 from node 0 (both ranks together): never closer than the previous op's
        # bytes at the share
        assert row["target_min_slack_ns"] >= 0 and row["target_min_gap_ns"] >= 1, row
    # what the cap guarantees whatever the load: node 0 cannot have moved its bytes into node 1 faster
    moved = sum(line["remote_bytes"] for line in origins)
    elapsed = max(line["last_ns"] for line in origins) - min(line["first_ns"] for line in origins)
    assert elapsed >= (moved - max(line["largest"] for line in origins)) / CAP * 1e9


def test_without_a_cap_nothing_is_paced(built, tmp_path):
    lines, rows = nimc_run(built, tmp_path, libthrottle.settings("none"), "--ops", "100")
    assert all(row["target_ops"] == 0 and row["target_share_Bps"] == 0 and row["reserved_cpu"] == -1
               for row in rows)


def allowed(text: str) -> set[int]:
    cpus = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="reserving a core needs two CPUs")
def test_reserve_core_pins_every_rank_away_from_one_cpu(built, tmp_path):
    mine = os.sched_getaffinity(0)
    lines, rows = nimc_run(built, tmp_path, libthrottle.settings("none", reserve_core=1), "--ops", "50")
    for line, row in zip(lines, rows):
        assert row["reserved_cpu"] == max(mine)  # the highest CPU the host's ranks may use
        # what the program itself sees right after MPI_Init, and the library at MPI_Finalize
        assert allowed(line["cpus"]) == allowed(row["cpus"]) == mine - {max(mine)}, (line, row)


def test_reserve_core_on_a_single_cpu_stops_every_rank(built, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    program = ["taskset", "-c", str(cpu), str(mpi.build_dir(built) / "throttle-nimc")]
    code, lines, stderr = run(built, program, libthrottle.settings("none", reserve_core=1))
    assert code != 0 and not lines
    assert stderr.count(f"may run only on CPU {cpu}, the one reserved for communication") == 1, stderr


def test_ranks_that_disagree_about_the_cap_stop(built, tmp_path):
    program = ["sh", "-c", f'[ "$PMI_RANK" = 0 ] && export CONTEND_THROTTLE_MEMORY_THROTTLE=1000; exec "$0"',
               str(mpi.build_dir(built) / "throttle-nimc")]
    code, lines, stderr = run(built, program, libthrottle.settings("none"))
    assert code != 0 and not lines
    assert "different memory_throttle values (0 to 1000 bytes/s" in stderr, stderr


@pytest.mark.parametrize("options, message", [
    (["--memory-throttle", "0B/s"], "--memory-throttle: a bandwidth must be positive, got '0B/s'"),
    (["--memory-throttle", "fast"], "--memory-throttle: expected a bandwidth such as 425MB/s"),
    (["--memory-throttle", "1.5B/s"], "--memory-throttle 1.5B/s: the library counts whole bytes per second"),
    (["--memory-throttle", "100TB/s"], "--memory-throttle 100TB/s: out of range, expected 1 to 10000000000000"),
    (["--config", "bad.conf"], "bad.conf:2: memory_throttle = 1GB: expected a whole number"),
    (["--config", "bad2.conf"], "bad2.conf:3: reserve_core = 2: out of range, expected 0 to 1"),
])
def test_bad_mitigation_values_are_one_line_before_the_launch(built, tmp_path, monkeypatch, capsys, options,
                                                              message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.conf").write_text("policy = none\nmemory_throttle = 1GB\n")
    (tmp_path / "bad2.conf").write_text("policy = none\n# mitigation b\nreserve_core = 2\n")
    args = options if options[0] == "--config" else ["--policy", "none", *options]
    assert main(["throttle", *args, "--", "mpiexec", "-n", "2", "./no-such-program"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("contend: error: ") and message in err, err


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="reserving a core needs two CPUs")
def test_contend_throttle_says_what_the_mitigations_did(built, tmp_path, capsys):
    program = str(mpi.build_dir(built) / "throttle-nimc")
    assert main(["throttle", "--policy", "none", "--memory-throttle", "20MB/s", "--reserve-core", "--ranks-per-node",
                 "2", "--stats", str(tmp_path / "s.jsonl"), "--", "mpiexec", "-n", "4", program, "--into-node", "1",
                 "--ops", "50"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the lines as the terminal may wrap them
    rows = libthrottle.read_stats(tmp_path / "s.jsonl")
    paced = sum(row["target_ops"] for row in rows)
    assert paced == 100 and f"{paced} one-sided ops, {sum(row['target_bytes'] for row in rows)} bytes paced" in out
    assert "memory throttle: 0.02 GB/s into each node (0.02 GB/s from each other node)" in out
    reserved = max(os.sched_getaffinity(0))
    assert f"reserve core: CPU {reserved} left for communication" in out
