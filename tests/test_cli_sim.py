"""`contend sim`: the JSON contract, LogGOPSim's reference answers through the CLI, units, machines,
records, timelines and deadlocks."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from contend.cli import main

REFERENCE_FLAGS = ["-L", "3000", "-o", "1500", "-g", "1000", "-G", "6", "-O", "0", "-S", "65535"]

# engine/tests/reference.rs: (collective, ranks, bytes, makespan, per-rank finish times or None)
REFERENCE_ANSWERS = [
    ("binomial-bcast", 8, 1, 18000, [4500, 9000, 9000, 13500, 9000, 13500, 13500, 18000]),
    ("binomial-bcast", 8, 131072, 2377278, [1579352, 1584352, 1584352, 1589352, 2367278, 2372278, 2372278, 2377278]),
    ("binomial-bcast", 64, 1, 36000, None),
    ("binomial-bcast", 1024, 1, 60000, None),
    ("binomial-bcast", 1024, 131072, 7924260, None),
    ("dissemination", 16, 1, 24000, [24000] * 16),
    ("dissemination", 16, 131072, 3169704, [3169704] * 16),
    ("dissemination", 1024, 1, 60000, None),
    ("dissemination", 1024, 131072, 7924260, None),
    ("scatter", 16, 1, 27000, None),
    ("scatter", 16, 1024, 112070, None),
    ("scatter", 1024, 1, 1539000, None),
    ("alltoall-linear", 16, 1, 45000, None),
    ("alltoall-linear", 16, 1024, 182070, None),
    ("binomial-bcast", 16, 65535, 1596816, None),
    ("binomial-bcast", 16, 65536, 1596840, None),
]


def sim_json(capsys, *args: str, expect: int = 0) -> dict:
    code = main(["sim", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == expect, err
    assert out.count("\n") == 1, "exactly one JSON object on one line"
    return json.loads(out)


def test_json_contract_fields_and_types(capsys):
    summary = sim_json(capsys, "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1", *REFERENCE_FLAGS)
    for key in ("makespan", "ranks", "events", "wall_seconds", "windowed", "ops", "messages", "num_ranks", "deadlock"):
        assert key in summary
    assert summary["makespan"] == 18000 and isinstance(summary["makespan"], int)
    assert summary["ranks"] == [4500, 9000, 9000, 13500, 9000, 13500, 13500, 18000]
    assert summary["num_ranks"] == 8 and summary["messages"] == 7 and summary["deadlock"] is None
    assert summary["events"] >= summary["ops"] > 0
    assert isinstance(summary["wall_seconds"], float)
    assert summary["time_unit"] == "ns"
    assert summary["params"] == {"L": 3000, "o": 1500, "g": 1000, "G": 6, "O": 0, "S": 65535, "rendezvous": None}


@pytest.mark.parametrize("collective,ranks,size,makespan,per_rank", REFERENCE_ANSWERS)
def test_reference_answers_through_the_cli(capsys, collective, ranks, size, makespan, per_rank):
    summary = sim_json(capsys, "--collective", collective, "--ranks", str(ranks), "--bytes", str(size), *REFERENCE_FLAGS)
    assert summary["makespan"] == makespan
    assert len(summary["ranks"]) == ranks and max(summary["ranks"]) == makespan
    if per_rank is not None:
        assert summary["ranks"] == per_rank


def test_goal_file_gives_the_same_answer_as_the_generator(capsys, tmp_path):
    path = tmp_path / "bcast.goal.gz"
    assert main(["goal", "write", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "131072",
                 "-o", str(path)]) == 0
    capsys.readouterr()
    summary = sim_json(capsys, str(path), *REFERENCE_FLAGS)
    assert summary["makespan"] == 2377278
    assert summary["ranks"] == [1579352, 1584352, 1584352, 1589352, 2367278, 2372278, 2372278, 2377278]
    assert summary["workload"] == {"schedule": str(path)}


def test_defaults_are_loggopsim_defaults(capsys):
    summary = sim_json(capsys, "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1")
    assert summary["params"] == {"L": 2500, "o": 1500, "g": 1000, "G": 6, "O": 0, "S": 65535, "rendezvous": None}
    assert summary["makespan"] == 3 * (2 * 1500 + 2500)


def test_units_are_accepted(capsys):
    plain = sim_json(capsys, "--collective", "scatter", "--ranks", "16", "--bytes", "1KiB", *REFERENCE_FLAGS)
    units = sim_json(capsys, "--collective", "scatter", "--ranks", "2^4", "--bytes", "1024",
                     "-L", "3us", "-o", "1.5us", "-g", "1000ns", "-G", "6000ps", "-O", "0ns", "-S", "65535")
    assert plain["makespan"] == units["makespan"] == 112070


def test_bandwidth_and_fractional_results(capsys):
    summary = sim_json(capsys, "--collective", "pingpong", "--ranks", "2", "--bytes", "2", "-G", "12.5GB/s",
                       "-L", "1.0005us")
    assert summary["params"]["G"] == 0.08  # 1e12 / 12.5e9 = 80 ps per byte
    assert summary["params"]["L"] == 1000.5
    assert isinstance(summary["makespan"], float)  # not a whole number of ns: reported as a float


def test_machine_preset_and_override(capsys):
    preset = sim_json(capsys, "--machine", "loggops-reference", "--collective", "binomial-bcast",
                      "--ranks", "8", "--bytes", "1")
    assert preset["makespan"] == 18000
    overridden = sim_json(capsys, "--machine", "loggops-reference", "-L", "2500", "--collective",
                          "binomial-bcast", "--ranks", "8", "--bytes", "1")
    assert overridden["params"]["L"] == 2500 and overridden["makespan"] == 16500


def test_machine_file_path(capsys, tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[machine]\nname = "m"\n[loggops]\nL = "3us"\no = "1.5us"\ng = "1us"\nG = "6ns"\n'
                    'O = "0ns"\nS = 65535\n[memory]\nbandwidth = "20GB/s"\n')
    summary = sim_json(capsys, "--machine", str(path), "--collective", "binomial-bcast", "--ranks", "8",
                       "--bytes", "1")
    assert summary["makespan"] == 18000


def test_machine_file_with_rendezvous_costs(capsys, tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('[loggops]\nL = "1us"\no = "500ns"\ng = "1us"\nG = "0.1ns"\nO = "0"\nS = 8191\n'
                    '[loggops.rendezvous]\nL = "3us"\nG = "0.08ns"\n')
    for size, costs in ((8191, (1000, 500, 0.1)), (8192, (3000, 500, 0.08))):
        summary = sim_json(capsys, "--machine", str(path), "--collective", "pingpong", "--ranks", "2",
                           "--bytes", str(size))
        L, o, G = costs  # a round trip: 2 (2o + L + (s-1) G) with the costs of the message's size
        assert summary["makespan"] == pytest.approx(2 * (2 * o + L + (size - 1) * G), abs=0.001)
    assert summary["params"]["rendezvous"] == {"L": 3000, "o": 500, "g": 1000, "G": 0.08, "O": 0}
    overridden = sim_json(capsys, "--machine", str(path), "-L", "2us", "--collective", "pingpong", "--ranks",
                          "2", "--bytes", "1")
    assert overridden["params"]["L"] == 2000 and overridden["params"]["rendezvous"]["L"] == 3000


def test_table_output(capsys):
    assert main(["sim", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1", *REFERENCE_FLAGS]) == 0
    out = capsys.readouterr().out
    assert "18,000 ns" in out
    assert "4500 9000 9000 13500 9000 13500 13500 18000" in out  # per-rank times for small P


DEADLOCK = """num_ranks 3
rank 0 {
  a: recv 8b from 1 tag 0
  b: send 8b to 1 tag 0
  b requires a
}
rank 1 {
  a: recv 8b from 0 tag 0
  b: send 8b to 0 tag 0
  b requires a
}
rank 2 {
  calc 100
}
"""


def test_deadlock_exits_3_and_names_blocked_ranks(capsys, tmp_path):
    path = tmp_path / "deadlock.goal"
    path.write_text(DEADLOCK)
    summary = sim_json(capsys, str(path), expect=3)
    deadlock = summary["deadlock"]
    assert deadlock["count"] == 4 and deadlock["ranks"] == [0, 1]
    assert {(i["rank"], i["op"]) for i in deadlock["unmatched_recvs"]} == {(0, 0), (1, 0)}
    assert {(i["rank"], i["op"], i["kind"]) for i in deadlock["never_started"]} == {(0, 1, "send"), (1, 1, "send")}
    assert main(["sim", str(path)]) == 3
    err = capsys.readouterr().err
    assert "deadlock" in err and "rank 0 op 0" in err and "rank 1 op 1" in err
    assert "Traceback" not in err


def goal_bytes_per_rank(text: str, kind: str) -> dict[int, int]:
    """Bytes each rank sends (kind 'send') or receives ('recv') according to a GOAL text."""
    totals, rank = {}, None
    for line in text.splitlines():
        header = re.match(r"\s*rank (\d+)", line)
        if header:
            rank = int(header.group(1))
        op = re.search(rf"\b{kind} (\d+)\s*b", line)
        if op:
            totals[rank] = totals.get(rank, 0) + int(op.group(1))
    return totals


@pytest.mark.parametrize("collective,size", [("alltoall-bruck", 100), ("binomial-reduce", 70000), ("incast", 4096)])
def test_records_parquet_invariants(capsys, tmp_path, collective, size):
    goal, records = tmp_path / "s.goal", tmp_path / "r.parquet"
    assert main(["goal", "write", "--collective", collective, "--ranks", "12", "--bytes", str(size), "-o", str(goal)]) == 0
    capsys.readouterr()
    summary = sim_json(capsys, str(goal), "--records", str(records), *REFERENCE_FLAGS)
    table = pq.read_table(records)
    expected = {"src", "dst", "bytes", "tag", "send_op", "recv_op", "protocol", "posted", "injected", "arrived",
                "received", "matched", "completed", "ideal", "nic_queue", "link", "target_queue",
                "late_receiver", "noise"}
    assert expected <= set(table.column_names)
    assert table.schema.metadata[b"contend.time_unit"] == b"ps"
    cols = {name: table.column(name).to_numpy() for name in table.column_names}
    assert len(cols["src"]) == summary["messages"]
    text = goal.read_text()
    sent = {int(r): int(cols["bytes"][cols["src"] == r].sum()) for r in np.unique(cols["src"])}
    received = {int(r): int(cols["bytes"][cols["dst"] == r].sum()) for r in np.unique(cols["dst"])}
    assert sent == goal_bytes_per_rank(text, "send")
    assert received == goal_bytes_per_rank(text, "recv")
    split = sum(cols[c].astype(np.int64) for c in ("ideal", "nic_queue", "link", "target_queue", "late_receiver", "noise"))
    assert np.array_equal(split, cols["completed"].astype(np.int64) - cols["posted"].astype(np.int64))
    assert np.all(cols["posted"] <= cols["injected"]) and np.all(cols["injected"] <= cols["arrived"])
    assert np.all(cols["arrived"] <= cols["received"]) and np.all(cols["completed"] >= cols["matched"])
    assert set(np.unique(cols["protocol"])) <= {0, 1}
    assert np.array_equal(cols["protocol"], (cols["bytes"] > 65535).astype(np.uint8))


def test_chrome_trace_is_valid_and_complete(capsys, tmp_path):
    trace = tmp_path / "t.json"
    summary = sim_json(capsys, "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1",
                       "--timeline", str(trace), *REFERENCE_FLAGS)
    document = json.loads(trace.read_text())
    events = document["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {r: f"rank {r}" for r in range(8)}
    slices = [e for e in events if e["ph"] == "X"]
    assert sum(e["name"] == "send overhead" for e in slices) == 7
    assert sum(e["name"] == "receive overhead" for e in slices) == 7
    assert all(e["dur"] == pytest.approx(1.5) for e in slices)  # o = 1500 ns = 1.5 us per overhead
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(summary["makespan"] / 1000)
    starts = [e for e in events if e["ph"] == "s"]
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(finishes) == 7
    for start in starts:
        finish = finishes[start["id"]]
        assert finish["pid"] == start["args"]["dst"] and start["pid"] == start["args"]["src"]
        assert finish["ts"] - start["ts"] == pytest.approx(4.5)  # o + L, no queueing in a broadcast


def test_chrome_trace_shows_calc_on_its_cpu(capsys, tmp_path):
    goal, trace = tmp_path / "c.goal", tmp_path / "c.json"
    goal.write_text("num_ranks 2\nrank 0 {\n  calc 500 cpu 1\n  send 4b to 1\n}\nrank 1 {\n  recv 4b from 0\n}\n")
    summary = sim_json(capsys, str(goal), "--timeline", str(trace), *REFERENCE_FLAGS)
    assert summary["makespan"] == 1500 + 3000 + 1500 + 3 * 6  # the calc runs beside the send, on CPU 1
    events = json.loads(trace.read_text())["traceEvents"]
    calc = [e for e in events if e["ph"] == "X" and e["name"] == "calc"]
    assert [(e["pid"], e["tid"], e["ts"], e["dur"]) for e in calc] == [(0, 1, 0, 0.5)]
    threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(0, 0), (0, 1), (1, 0)} <= threads


def test_large_deadlock_is_capped_but_counted(capsys, tmp_path):
    ranks = 300  # a ring in which every rank receives before it sends
    path = tmp_path / "ring.goal"
    path.write_text(f"num_ranks {ranks}\n" + "".join(
        f"rank {r} {{\n  r: recv 1b from {(r - 1) % ranks}\n  s: send 1b to {(r + 1) % ranks}\n  s requires r\n}}\n"
        for r in range(ranks)))
    deadlock = sim_json(capsys, str(path), expect=3)["deadlock"]
    assert deadlock["count"] == 2 * ranks
    assert deadlock["totals"] == {"unmatched_recvs": ranks, "unmatched_sends": 0, "never_started": ranks}
    assert len(deadlock["unmatched_recvs"]) == len(deadlock["never_started"]) == 100
    assert deadlock["unmatched_recvs"][0]["line"] == 3  # where rank 0's receive is in the file
    assert main(["sim", str(path)]) == 3
    err = capsys.readouterr().err
    assert f"{2 * ranks} operation(s) blocked" in err and "... 290 more: receive never matched" in err
