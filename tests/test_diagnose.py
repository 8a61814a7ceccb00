"""`contend diagnose` on engine records: contention against the engine's own delay split (the truth),
initiator vs target, call sites, outputs, and bad input."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import contend
from contend.analysis.diagnose import diagnose
from contend.cli import main
from contend.simulation.records import write_records_parquet

CROSSBAR = """[machine]
name = "crossbar"
[loggops]
L = "1us"
o = "1us"
g = "500ns"
G = "1ns"
O = "0"
S = 1000000000
[topology]
kind = "crossbar"
nodes = 9
link_bandwidth = "1GB/s"
packet = 1
"""
TRUTH = ("nic_queue", "link", "target_queue")  # the engine's contention columns


@pytest.fixture
def machine(tmp_path):
    path = tmp_path / "crossbar.toml"
    path.write_text(CROSSBAR)
    return path


def run(machine, collective: str, ranks: int, size: int = 100_000):
    result = contend.simulate(collective=collective, ranks=ranks, bytes=size, machine=machine, records=True)
    return result, diagnose(result.records, result.params, result.num_ranks)


def truth(result) -> float:
    return float(result.records[list(TRUTH)].to_numpy().sum())


def test_incast_is_target_contention_matching_the_engine(machine):
    result, diagnosis = run(machine, "gather", 9)
    assert truth(result) > 0
    assert abs(diagnosis.contention - truth(result)) <= 0.1 * truth(result)
    split = diagnosis.split()
    assert split["target"] >= 0.9 * diagnosis.contention
    assert list(diagnosis.targets().index[:1]) == [0], "the root is the hot target"
    # The model's ideal agrees with the engine's: ideal transfer plus the receiver's o.
    messages = diagnosis.messages
    assert ((messages["ideal_transfer"] + 1000 - messages["ideal"]).abs() < 1e-6).all()


def test_uncontended_pingpong_shows_almost_none(machine):
    result, diagnosis = run(machine, "pingpong", 2)
    assert diagnosis.share(diagnosis.contention) < 0.02
    assert truth(result) == 0


def test_outcast_is_initiator_contention(machine):
    result, diagnosis = run(machine, "scatter", 9)
    assert abs(diagnosis.contention - truth(result)) <= 0.1 * truth(result)
    assert diagnosis.split()["initiator"] >= 0.9 * diagnosis.contention
    sites = diagnosis.call_sites()
    assert set(sites["call_site"]) == {f"send op {n}" for n in range(8)}, "one call site per send of the root"
    assert all(ranks == [0] for ranks in sites["top_ranks"])
    assert all(contexts == ["rank 0"] for contexts in sites["top_contexts"])


def test_cli_writes_summary_json_and_html(machine, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the call-site table on one line
    result, _ = run(machine, "gather", 9)
    records = tmp_path / "incast.parquet"
    write_records_parquet(result.record_columns, records,
                          {"params": result.params, "workload": dict(result.workload)})
    out_json, out_html = tmp_path / "d.json", tmp_path / "report"
    assert main(["diagnose", str(records), "--json", str(out_json), "--html", str(out_html)]) == 0
    out, _ = capsys.readouterr()
    assert "send op 0" in out and "target contention" in out
    summary = json.loads(out_json.read_text())
    assert abs(summary["contention_ns"] - truth(result)) <= 0.1 * truth(result)
    assert summary["split_ns"]["target"] == summary["contention_ns"]
    assert summary["engine_truth_ns"]["target"] == truth(result)
    # rank time: the root waits for the contention of overlapping messages once
    assert 0 < summary["t_contention_ns"] <= summary["run_time_ns"]
    assert summary["recommendations"][0]["advice"].startswith("Rank 0 is a fixed hot target")
    assert summary["targets"][0]["rank"] == 0
    hot = summary["hot_targets"]["contention_ns"]
    assert abs(sum(hot[0]) - summary["contention_ns"]) < 1.0 and sum(map(sum, hot[1:])) == 0
    assert {p.name for p in out_html.iterdir()} == {"index.html", "call_sites.png", "targets.png", "split.png"}


def fails_cleanly(capsys, args: list[str], pattern: str) -> None:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err


def test_bad_input_is_one_line_exit_2(capsys, tmp_path, machine):
    fails_cleanly(capsys, ["diagnose", str(tmp_path / "missing.parquet")], r"missing\.parquet: no such records file")
    text = tmp_path / "notes.parquet"
    text.write_text("not parquet")
    fails_cleanly(capsys, ["diagnose", str(text)], r"notes\.parquet: not a readable records file")
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    fails_cleanly(capsys, ["diagnose", str(foreign)], r"not a contend records file")
    result, _ = run(machine, "pingpong", 2)
    empty = tmp_path / "empty.parquet"
    columns = {name: values[:0] for name, values in result.record_columns.items()}
    write_records_parquet(columns, empty, {"params": result.params})
    fails_cleanly(capsys, ["diagnose", str(empty)], r"records hold no messages")
    bare = tmp_path / "bare.parquet"
    write_records_parquet(result.record_columns, bare, {})
    fails_cleanly(capsys, ["diagnose", str(bare)], r"no LogGOPS parameters in the file \(contend.params\); give --machine")
    assert main(["diagnose", str(bare), "--machine", str(machine)]) == 0
    capsys.readouterr()
    fails_cleanly(capsys, ["diagnose", str(bare), "--machine", "nonesuch"], r"unknown machine 'nonesuch'")
    mismatched = tmp_path / "mismatched.parquet"
    write_records_parquet(result.record_columns, mismatched,
                          {"params": result.params, "workload": {"ranks": 1}})
    fails_cleanly(capsys, ["diagnose", str(mismatched)], r"records name rank 1 but the metadata says 1 rank\(s\) "
                  r"\(mismatched rank counts\)")
    lacking = tmp_path / "lacking.parquet"
    columns = {k: v for k, v in result.record_columns.items() if k not in ("arrived", "matched")}
    write_records_parquet(columns, lacking, {"params": result.params})
    fails_cleanly(capsys, ["diagnose", str(lacking)], r"lacking\.parquet: engine records lack column\(s\) arrived, matched")
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(bare.read_bytes()[:200])
    fails_cleanly(capsys, ["diagnose", str(truncated)], r"truncated\.parquet: not a readable records file")
    notjson = tmp_path / "notjson.parquet"
    table = pq.read_table(bare)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"contend.params": b"{"}), notjson)
    fails_cleanly(capsys, ["diagnose", str(notjson)], r"metadata contend\.params is not JSON")


def test_ideal_over_a_torus_and_without_a_network_matches_the_engine(tmp_path):
    torus = tmp_path / "torus.toml"
    torus.write_text(CROSSBAR.replace('kind = "crossbar"\nnodes = 9', 'kind = "torus"\ndims = [4, 2]\n'
                                      'hop_latency = "50ns"').replace("packet = 1", "packet = 256"))
    for machine in (torus, None):
        params = {} if machine else {"L": 1000, "o": 1000, "g": 500, "G": 1}
        result = contend.simulate(collective="alltoall-linear", ranks=8, bytes=10_000, machine=machine,
                                  records=True, **params)
        diagnosis = diagnose(result.records, result.params, result.num_ranks)
        assert abs(diagnosis.contention - truth(result)) <= 1e-6 * truth(result)


FAT_TREE = 'kind = "fattree"\nk = 2\nlevels = 3\noversubscription = 2'
DRAGONFLY = 'kind = "dragonfly"\na = 2\np = 2\nh = 1\ng = 3\nglobal_bandwidth = "500MB/s"'


@pytest.mark.parametrize("topology", [FAT_TREE, DRAGONFLY], ids=["fattree", "dragonfly"])
def test_ideal_over_a_fat_tree_and_a_dragonfly_matches_the_engine(tmp_path, topology):
    """Minimal routes through the link graph (oversubscribed leaf up-links, slower global links): the
    ideal is the engine's uncontended time, so contention equals the truth and a ping-pong has none."""
    path = tmp_path / "net.toml"
    path.write_text(CROSSBAR.replace('kind = "crossbar"\nnodes = 9', topology)
                    .replace("packet = 1", 'packet = 256\nhop_latency = "50ns"\ninjection_bandwidth = "2GB/s"'))
    for collective, ranks in (("pingpong", 2), ("alltoall-linear", 8), ("random-pairs", 8)):
        result = contend.simulate(collective=collective, ranks=ranks, bytes=10_000, machine=path, records=True)
        diagnosis = diagnose(result.records, result.params, result.num_ranks)
        assert abs(diagnosis.contention - truth(result)) <= 1e-6 * max(1.0, truth(result)), collective
        if collective == "pingpong":
            assert diagnosis.contention == 0
        else:
            assert truth(result) > 0


def test_the_ideal_is_the_engines_for_empty_messages_and_dragonfly_routes(tmp_path):
    """The ideal is the engine's own time of a message alone (bindings/src/ideal.rs): an empty
    message's first packet is one byte on every link, and a dragonfly's minimal route is the one the
    engine takes, so contention equals the truth there too."""
    cases = {'kind = "torus"\ndims = [4, 4]': ("alltoall-linear", 0),
             'kind = "dragonfly"\na = 4\np = 2\nh = 2\ng = 5\nglobal_bandwidth = "500MB/s"': ("random-pairs", 3)}
    for topology, (collective, size) in cases.items():
        path = tmp_path / "net.toml"
        path.write_text(CROSSBAR.replace('kind = "crossbar"\nnodes = 9', topology)
                        .replace("packet = 1", 'packet = 256\nhop_latency = "50ns"\ninjection_bandwidth = "2GB/s"'))
        result = contend.simulate(collective=collective, ranks=16, bytes=size, machine=path, records=True)
        diagnosis = diagnose(result.records, result.params, result.num_ranks)
        assert truth(result) > 0 and abs(diagnosis.contention - truth(result)) <= 1e-6 * truth(result), topology


def test_engine_sync_is_the_late_receivers_wait(tmp_path):
    """Rank 1 posts its receive from rank 0 only after rank 2's message, which rank 2 sends after 50 us
    of computation: rank 0's message, processed on arrival, waits for its receive (t_sync); nothing
    contends. t_blocked is rank 1's time with a message outstanding (posted..completed, merged)."""
    schedule = tmp_path / "late.goal"
    schedule.write_text("num_ranks 3\nrank 0 {\n  send 1000b to 1\n}\nrank 1 {\n  l0: recv 8b from 2\n"
                        "  l1: recv 1000b from 0\n  l1 requires l0\n}\nrank 2 {\n  l0: calc 50000\n"
                        "  l1: send 8b to 1\n  l1 requires l0\n}\n")
    result = contend.simulate(schedule, L=1000, o=1000, g=500, G=1, records=True)
    diagnosis = diagnose(result.records, result.params, result.num_ranks)
    records = result.records.set_index("src")
    late = float(records["late_receiver"].sum())
    assert late > 45_000
    assert diagnosis.sync == late and diagnosis.contention == 0
    assert diagnosis.blocked == records["completed"].max() - records["posted"].min()
