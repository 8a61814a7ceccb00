"""Inputs the fuzzer of issue 17 broke: each gives exit code 2 and one line on stderr naming the problem,
with no traceback and no file left behind. Engine records, noise specs, bench results, the Python API's
memory model, and the counts users give on the command line (trace records: tests/test_diagnose_trace.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import contend
from contend.cli import main
from contend.errors import UserError

COLLECTIVE = ["--collective", "incast", "--ranks", "4", "--bytes", "8"]


@pytest.fixture
def engine_records(tmp_path, capsys) -> Path:
    path = tmp_path / "engine.parquet"
    assert main(["sim", *COLLECTIVE, "--records", str(path)]) == 0
    capsys.readouterr()
    return path


def _replace_column(source: Path, target: Path, column: str, values: pa.Array) -> Path:
    table = pq.read_table(source)
    changed = table.set_column(table.column_names.index(column), column, values)
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), target)
    return target


@pytest.mark.parametrize("column, values, pattern", [
    ("bytes", lambda n: pa.array(["8"] * n), r"column bytes must hold integers, not string"),
    ("dst", lambda n: pa.array([2**64 - 1] * n, pa.uint64()), r"column dst holds 18446744073709551615; expected -1 <= value <= 2147483646"),
    ("dst", lambda n: pa.array([None] + [0] * (n - 1), pa.int64()), r"column dst has 1 missing value\(s\)"),
    ("dst", lambda n: pa.array([1e300] * n), r"column dst must hold integers, not double"),
    ("protocol", lambda n: pa.array([7] * n, pa.uint8()), r"column protocol holds 7; expected 0 <= value <= 1"),
    ("posted", lambda n: pa.array([2**64 - 1] * n, pa.uint64()), r"column posted holds 18446744073709551615; expected .* <= 9223372036854775807"),
])
def test_engine_records_with_bad_columns(fails_cleanly, capsys, tmp_path, engine_records, column, values, pattern):
    rows = pq.read_metadata(engine_records).num_rows
    bad = _replace_column(engine_records, tmp_path / "bad.parquet", column, values(rows))
    fails_cleanly(["diagnose", str(bad)], rf"bad\.parquet: {pattern}")


def test_engine_records_with_part_of_the_engines_split(fails_cleanly, capsys, tmp_path, engine_records):
    table = pq.read_table(engine_records)
    assert "target_queue" in table.column_names
    pq.write_table(table.drop(["target_queue"]), tmp_path / "bad.parquet")
    fails_cleanly(["diagnose", str(tmp_path / "bad.parquet")],
                  r"bad\.parquet: engine records have nic_queue, link but lack target_queue")


def test_counts_on_the_command_line_are_bounded_up_front(fails_cleanly, capsys, tmp_path, monkeypatch):
    """Each bad count: one line naming the option, the value and the range; nothing made (the trace
    directory is not created: the tracer's own check at run time is never reached)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.parquet"  # not made: the counts are checked before the file is read
    cases = [
        (["diagnose", str(path), "--bins", "2147483648"], r"--bins: 2147483648 is out of range \[1, 100000\]"),
        (["diagnose", str(path), "--bins", "0"], r"--bins: 0 is out of range \[1, 100000\]"),
        (["diagnose", str(path), "--top", "-1"], r"--top: expected a non-negative integer"),
        (["diagnose", str(path), "--top", "99999999999999999999"], r"--top: 99999999999999999999 is out of range \[1, 1000000\]"),
        (["trace", "-o", "t", "--records", "10000000000", "--", "true"], r"--records: 10000000000 is out of range \[1, \d+\]"),
        (["trace", "-o", "t", "--records", "0", "--", "true"], r"--records: 0 is out of range"),
        (["trace", "-o", "t", "--depth", "7", "--", "true"], r"--depth: 7 is out of range \[1, 6\]"),
        (["trace", "-o", "t", "--timeout", "inf", "--", "true"], r"--timeout: expected 1 <= value <= 604800, got inf"),
        (["trace", "-o", "t", "--timeout", "nan", "--", "true"], r"--timeout: expected 1 <= value <= 604800, got nan"),
    ]
    for args, pattern in cases:
        fails_cleanly(args, pattern)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("spec", ["periodic:1e-300Hz:1us", "periodic:0.0001Hz:1us"])
def test_a_noise_frequency_whose_period_is_too_long(fails_cleanly, capsys, spec):
    frequency = spec.split(":")[1]
    fails_cleanly(["sim", *COLLECTIVE, "--noise", spec],
                  rf"--noise \(frequency\): '{re.escape(frequency)}' is too low: one period is longer than")


def test_the_lowest_frequency_that_fits_still_runs(capsys):
    assert main(["sim", *COLLECTIVE, "--noise", "periodic:0.001Hz:1us", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_ranks"] == 4


def test_bench_show_on_parquet_that_is_not_a_bench_run(fails_cleanly, capsys, tmp_path, engine_records):
    fails_cleanly(["bench", "show", str(engine_records)],
                  r"engine\.parquet: not a contend bench result \(no contend\.meta metadata\)")
    table = pq.read_table(engine_records)
    for name, meta, pattern in [
        ("unknown.parquet", {"pattern": "teleport"}, r"unknown benchmark 'teleport'"),
        ("list.parquet", [1, 2], r"contend\.meta must be an object"),
        ("columns.parquet", {"pattern": "pingpong"}, r"no column\(s\) pattern, metric"),
    ]:
        path = tmp_path / name
        pq.write_table(table.replace_schema_metadata({b"contend.meta": json.dumps(meta).encode()}), path)
        fails_cleanly(["bench", "show", str(path)], rf"{name}: .*{pattern}")


def test_reserve_core_on_a_memory_model_without_ranks_per_node():
    """The user's engine memory dict is judged by the engine (it names the missing key), not a KeyError."""
    with pytest.raises(UserError, match=r"memory ranks_per_node: missing"):
        contend.simulate(collective="incast", ranks=4, bytes=8, machine="sandybridge-onload",
                         memory={"bandwidth": "10GB/s"}, reserve_core=True)
    with pytest.raises(UserError, match=r"reserve core: needs at least 2 ranks per node"):
        contend.simulate(collective="incast", ranks=4, bytes=8, machine="sandybridge-onload",
                         memory={"ranks_per_node": 1}, reserve_core=True)


def test_bench_show_on_a_run_that_lacks_its_patterns_columns(fails_cleanly, capsys, tmp_path):
    from contend.native.bench.results import parse_lines, write_run

    run = parse_lines([
        '{"type":"meta","pattern":"pingpong","ranks":2,"nodes":1,"hosts":["a"],"node_of_rank":[0,0]}',
        '{"type":"result","pattern":"pingpong","metric":"latency","bytes":8,"rank":0,"peer":1,"t_p50_ns":900}',
        '{"type":"end","elapsed_s":0.1}'])
    path = write_run(run, tmp_path / "run.parquet")
    fails_cleanly(["bench", "show", str(path), "--plot", str(tmp_path / "p.png")],
                  r"run\.parquet: a pingpong run without what its table reads \(KeyError: 't_min_ns'\)")
    assert sorted(os.listdir(tmp_path)) == ["run.parquet"]
