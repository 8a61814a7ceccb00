"""`contend diagnose` on trace records (docs/formats.md, "Records" from real traces): no delay split, only
posted / completed; hand-computed ideal latencies, contention, classes, t_blocked, t_sync, and bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import contend
from contend.analysis.diagnose import diagnose
from contend.analysis.diagnose_input import load_records
from contend.cli import main
from contend.errors import UserError

PARAMS = {"L": 1000.0, "o": 500.0, "g": 0.0, "G": 1.0, "O": 0.0, "S": 1_000_000, "rendezvous": None}
INCAST_SITE = "incast_step (incast.c:42)"
RECV_SITE = "collect (incast.c:57)"


def incast_rows() -> list[dict]:
    """Ranks 1..4 send 1000 B to rank 0 at t=0; rank 0's receives complete 1 us apart after the first's
    ideal 2o + L + 999 G = 2999 ns: contention 0, 1000, 2000, 3000 ns, all at the target. Rank 5 puts
    100 B to 6 in exactly its ideal (o + L + 99 G = 1599 ns) and gets 100 B from 7 in 3599 ns, 1000 ns
    over its ideal (o + 2L + 99 G = 2599 ns) while its put is in flight: initiator contention. Ranks 0
    and 1 then sit in a barrier: 2000 + 1000 ns of synchronisation."""
    ns = 1000  # records are in ps
    rows = []
    for k, sender in enumerate(range(1, 5)):
        rows.append(dict(src=sender, dst=0, bytes=1000, tag=7, kind="isend", posted=0, completed=100 * ns,
                         call_site=INCAST_SITE, context=f"main (incast.c:90) <- rank {sender}", site_id=1))
        rows.append(dict(src=sender, dst=0, bytes=1000, tag=7, kind="irecv", posted=0,
                         completed=(2999 + 1000 * k) * ns, call_site=RECV_SITE, context="main (incast.c:95)",
                         site_id=2))
    rows.append(dict(src=5, dst=6, bytes=100, tag=-1, kind="put", posted=0, completed=1599 * ns,
                     call_site="0x4011f0", context="", site_id=3))
    rows.append(dict(src=5, dst=7, bytes=100, tag=-1, kind="get", posted=0, completed=3599 * ns,
                     call_site="ga_get (fock.c:120)", context="fock_build (fock.c:300)", site_id=4))
    rows.append(dict(src=0, dst=0, bytes=0, tag=-1, kind="barrier", posted=10_000 * ns, completed=12_000 * ns,
                     call_site="MPI_Barrier (incast.c:99)", context="", site_id=5))
    rows.append(dict(src=1, dst=1, bytes=0, tag=-1, kind="barrier", posted=11_000 * ns, completed=12_000 * ns,
                     call_site="MPI_Barrier (incast.c:99)", context="", site_id=5))
    return rows


def write_trace(path, rows, ranks=8, params=PARAMS, drop=(), **extra) -> None:
    columns = {name: [row[name] for row in rows] for name in rows[0] if name not in drop}
    types = {"kind": pa.string(), "call_site": pa.string(), "context": pa.string()}
    table = pa.table({name: pa.array(values, type=types.get(name, pa.int64())) for name, values in columns.items()})
    metadata = {"contend.time_unit": "ps", "contend.source": "trace", "contend.clock": json.dumps("offsets")}
    if ranks is not None:
        metadata["contend.ranks"] = json.dumps(ranks)
    if params is not None:
        metadata["contend.params"] = json.dumps(params)
    metadata.update({f"contend.{k}": json.dumps(v) for k, v in extra.items()})
    pq.write_table(table.replace_schema_metadata(metadata), path)


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.parquet"
    write_trace(path, incast_rows())
    return path


def test_hand_computed_trace(trace):
    loaded = load_records(trace)
    assert loaded.source == "trace" and loaded.num_ranks == 8
    diagnosis = diagnose(loaded.frame, loaded.metadata["params"], loaded.num_ranks, source="trace")
    ops = diagnosis.messages
    assert len(ops) == 6, "4 paired messages, a put and a get; the barrier is a region"
    messages = ops[ops["kind"] == "isend"].sort_values("completed")
    assert list(messages["ideal"]) == [2999.0] * 4
    assert list(messages["contention"]) == [0.0, 1000.0, 2000.0, 3000.0]
    assert set(messages["call_site"]) == {INCAST_SITE}, "a message is attributed to its send's call site"
    put, get = ops[ops["kind"] == "put"].iloc[0], ops[ops["kind"] == "get"].iloc[0]
    assert (put["ideal"], put["contention"]) == (1599.0, 0.0)
    assert (get["ideal"], get["contention"]) == (2599.0, 1000.0)
    assert get["class"] == "initiator" and get["initiator_demand"] == pytest.approx(1599 / 3599)
    assert diagnosis.split() == {"initiator": 1000.0, "target": 6000.0}
    assert diagnosis.contention == 7000.0
    # as rank time: rank 0 waits 2999..5999 beyond its receives' ideal (overlaps count once), rank 5 1000 ns
    assert diagnosis.contention_time == 4000.0
    assert diagnosis.run_time == 12_000.0
    # t_blocked: rank 0 waits 0..5999 for its receives, rank 5 0..3599 for its put and get.
    assert diagnosis.blocked == 5999.0 + 3599.0
    assert diagnosis.sync == 3000.0
    assert diagnosis.share(diagnosis.sync) == 3000.0 / (8 * 12_000.0)
    sites = diagnosis.call_sites()
    assert list(sites["call_site"]) == [INCAST_SITE, "ga_get (fock.c:120)"]
    assert sites["top_contexts"][0][0].startswith("main (incast.c:90) <- rank ")
    assert list(diagnosis.targets().index) == [0, 7]
    assert diagnosis.truth() is None


def test_blocked_counts_from_the_wait_when_the_trace_has_it(tmp_path):
    path = tmp_path / "waited.parquet"
    write_trace(path, [dict(row, waited=row["completed"] - 100_000) for row in incast_rows()])
    loaded = load_records(path)
    diagnosis = diagnose(loaded.frame, PARAMS, loaded.num_ranks, source="trace")
    # 100 ns in each receive's Wait at rank 0 (4), in the put's and the get's flush at rank 5 (2)
    assert diagnosis.blocked == pytest.approx(600.0)
    assert diagnosis.contention == 7000.0 and diagnosis.sync == 3000.0


def test_cli_on_a_trace_names_the_source_line(trace, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    out_json = tmp_path / "d.json"
    assert main(["diagnose", str(trace), "--json", str(out_json), "--html", str(tmp_path / "html")]) == 0
    out, err = capsys.readouterr()
    assert INCAST_SITE in out
    assert err.startswith("warning: ") and "1 of 3 call site(s) are unsymbolized addresses" in err
    summary = json.loads(out_json.read_text())
    assert summary["source"] == "trace" and summary["contention_ns"] == 7000.0
    assert summary["call_sites"][0]["call_site"] == INCAST_SITE
    assert summary["call_sites"][0]["target"] == 6000.0
    assert summary["t_sync_ns"] == 3000.0 and summary["engine_truth_ns"] is None
    assert INCAST_SITE in (tmp_path / "html" / "index.html").read_text()


def test_unpaired_and_unknown_operations_degrade_with_a_warning(tmp_path, capsys):
    rows = incast_rows()[1:]  # the first send is missing: its receive stands alone
    rows[1] = dict(rows[1], kind="MPI_Isend_c")  # MPI's spelling and the large-count form are the same kind
    rows.append(dict(rows[-3], kind="fetch_and_add"))
    path = tmp_path / "partial.parquet"
    write_trace(path, rows)
    assert main(["diagnose", str(path)]) == 0
    _, err = capsys.readouterr()
    assert "0 send(s) and 1 receive(s) have no partner" in err
    assert "unknown operation kind(s) fetch_and_add: treated as put-like" in err
    assert "1 of 4 call site(s) are unsymbolized addresses (0x...)" in err


def fails_cleanly(capsys, args, pattern: str) -> None:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err


def test_bad_trace_records_are_one_line_exit_2(trace, tmp_path, capsys):
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(trace.read_bytes()[: trace.stat().st_size // 2])
    fails_cleanly(capsys, ["diagnose", str(truncated)], r"truncated\.parquet: not a readable records file")
    cases = {
        "mismatched": (dict(ranks=4), r"records name rank 7 but the metadata says 4 rank\(s\) \(mismatched rank counts\)"),
        "noranks": (dict(ranks=None), r"trace records lack the contend\.ranks metadata"),
        "noparams": (dict(params=None), r"no LogGOPS parameters in the file \(contend\.params\); give --machine"),
        "nokind": (dict(drop=("kind", "call_site")), r"trace records lack column\(s\) kind, call_site"),
        "badparams": (dict(params={"L": 1.0}), r"the LogGOPS parameters lack o, G; give --machine"),
    }
    for name, (options, pattern) in cases.items():
        path = tmp_path / f"{name}.parquet"
        write_trace(path, incast_rows(), **options)
        fails_cleanly(capsys, ["diagnose", str(path)], pattern)
    backwards = tmp_path / "backwards.parquet"
    write_trace(backwards, [dict(incast_rows()[0], posted=5000, completed=10)])
    fails_cleanly(capsys, ["diagnose", str(backwards)], r"row 0: completed \(0 ns\) is before posted \(5 ns\)")
    nopeer = tmp_path / "nopeer.parquet"
    write_trace(nopeer, incast_rows()[:-1] + [dict(incast_rows()[-1], dst=-1)] + [dict(incast_rows()[0], dst=-1)])
    fails_cleanly(capsys, ["diagnose", str(nopeer)], r"nopeer\.parquet: row 12: dst -1 for a isend; only a collective region may name no peer")
    regions_only = tmp_path / "regions.parquet"
    write_trace(regions_only, incast_rows()[-2:])
    fails_cleanly(capsys, ["diagnose", str(regions_only)], r"only collective regions")


def test_blocking_receive_loop_is_contention_and_a_late_receiver_is_sync(tmp_path):
    """Two receivers, ideal of a 1000 B message 2999 ns (receiving part o + 999 G = 1499 ns).
    Rank 0 receives from 1, 2, 3 (all sent at 0) with blocking receives one after the other, completing
    2 us apart: each receive is posted late only because rank 0 was in the previous one (its window
    W = [send + ideal, receive posted] is covered), so message k waited k x 2 us - ideal: contention
    0, 2000, 4000 ns. Rank 4 computes until 10 us before receiving rank 5's message: W = [2999, 10000]
    is not covered by any operation of rank 4, a late receiver: 7001 ns of t_sync, no contention."""
    ns = 1000
    rows = []
    for k, sender in enumerate((1, 2, 3)):
        rows.append(dict(src=sender, dst=0, bytes=1000, tag=0, kind="send", posted=0, completed=100 * ns,
                         call_site="send_part (loop.c:10)", context="", site_id=1))
        rows.append(dict(src=sender, dst=0, bytes=1000, tag=0, kind="recv",
                         posted=(0 if k == 0 else 999 + 2000 * k) * ns, completed=(2999 + 2000 * k) * ns,
                         call_site="gather_loop (loop.c:20)", context="", site_id=2))
    rows.append(dict(src=5, dst=4, bytes=1000, tag=0, kind="send", posted=0, completed=100 * ns,
                     call_site="send_late (late.c:5)", context="", site_id=3))
    rows.append(dict(src=5, dst=4, bytes=1000, tag=0, kind="recv", posted=10_000 * ns, completed=11_000 * ns,
                     call_site="recv_late (late.c:9)", context="", site_id=4))
    path = tmp_path / "loop.parquet"
    write_trace(path, rows)
    loaded = load_records(path)
    diagnosis = diagnose(loaded.frame, PARAMS, loaded.num_ranks, source="trace")
    ops = diagnosis.messages.set_index("src")
    assert list(ops.loc[[1, 2, 3], "contention"]) == [0.0, 2000.0, 4000.0]
    assert list(ops.loc[[1, 2, 3], "late"]) == [0.0, 0.0, 0.0]
    assert (ops.loc[5, "late"], ops.loc[5, "contention"]) == (7001.0, 0.0)
    assert diagnosis.sync == 7001.0
    assert diagnosis.split() == {"initiator": 0.0, "target": 6000.0}


def run_cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter, so that a native crash shows as a signal, not a dead test run."""
    env = {**os.environ, "PYTHONPATH": str(Path(contend.__file__).parents[1])}
    return subprocess.run([sys.executable, "-m", "contend.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_a_rank_near_2_63_is_refused_before_it_reaches_numpy(tmp_path):
    """dst = 2^63 - 1 once wrapped max(src, dst) + 1 negative, passed the rank check and made np.bincount
    write past its array (SIGABRT), leaving the --json temporary behind."""
    directory = tmp_path / "t"
    directory.mkdir()
    rows = incast_rows()
    rows[3] = dict(rows[3], dst=2**63 - 1)  # a receive: paired and binned like any other
    write_trace(directory / "records.parquet", rows)
    done = run_cli(["diagnose", str(directory), "--json", str(tmp_path / "d.json")], tmp_path)
    assert done.returncode == 2, done
    assert done.stderr == (f"contend: error: {directory / 'records.parquet'}: column dst holds 9223372036854775807; "
                           "expected -1 <= value <= 2147483646\n")
    assert sorted(os.listdir(tmp_path)) == ["t"] and os.listdir(directory) == ["records.parquet"]


def test_diagnose_api_refuses_ranks_outside_the_grid():
    """diagnose() on a DataFrame of the caller's (no file checks before it): the same guard."""
    frame = pd.DataFrame(incast_rows())
    frame.loc[3, "dst"] = 2**63 - 1
    for column in ("posted", "completed"):
        frame[column] = frame[column] / 1000
    with pytest.raises(UserError, match=r"the records name rank 9223372036854775807 of 8 rank\(s\)"):
        diagnose(frame, PARAMS, 8, source="trace")


@pytest.mark.parametrize("options, pattern", [
    (dict(ranks=4294967296), r"contend\.ranks is 4294967296; expected an integer in \[1, 2147483647\]"),
    (dict(ranks="4294967296"), r"contend\.ranks is '4294967296'; expected an integer in \[1, 2147483647\]"),
    (dict(ranks=2**31 - 1), r"diagnose: 2147483647 rank\(s\) x 20 time bin\(s\) of the hot-target grid; at most 134217728 cells"),
    (dict(params={**PARAMS, "rendezvous": {"G": 1.0}}), r"diagnose: the rendezvous parameters lack L, o; give --machine"),
    (dict(params={**PARAMS, "rendezvous": "fast"}), r"rendezvous must be an object or null"),
    (dict(params={**PARAMS, "L": "1us"}), r"the LogGOPS parameter L is '1us'; expected a non-negative number"),
    (dict(params={**PARAMS, "S": None}), r"the LogGOPS parameter S is None; expected a non-negative number"),
    (dict(params={**PARAMS, "network": {"topology": "torus"}}), r"the network parameters lack packet_bytes"),
])
def test_trace_metadata_that_does_not_hold(capsys, tmp_path, options, pattern):
    path = tmp_path / "t.parquet"
    write_trace(path, incast_rows(), **options)
    fails_cleanly(capsys, ["diagnose", str(path), "--json", str(tmp_path / "d.json")], pattern)
    assert os.listdir(tmp_path) == ["t.parquet"]


def test_trace_records_with_strings_in_numeric_columns(capsys, tmp_path):
    path = tmp_path / "t.parquet"
    write_trace(path, incast_rows())
    table = pq.read_table(path)
    strings = pa.array([str(size) for size in table.column("bytes").to_pylist()])
    pq.write_table(table.set_column(table.column_names.index("bytes"), "bytes", strings)
                   .replace_schema_metadata(table.schema.metadata), path)
    fails_cleanly(capsys, ["diagnose", str(path)], r"column bytes must hold integers, not string")
