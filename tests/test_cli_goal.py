"""`contend goal write` and `contend goal check`."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest

from contend.cli import main

COLLECTIVES = ["binomial-bcast", "binomial-reduce", "dissemination", "scatter", "gather", "alltoall-linear",
               "alltoall-pairwise", "alltoall-bruck", "allreduce-recdoub", "allreduce-ring",
               "allgather-recdoub", "allgather-ring", "allgather-bruck", "incast",
               "pingpong", "random-pairs", "neighbour-pairs"]


def check_json(capsys, path) -> dict:
    assert main(["goal", "check", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_write_then_check_then_simulate(capsys, tmp_path, collective):
    ranks = 2 if collective == "pingpong" else 8
    path = tmp_path / f"{collective}.goal"
    assert main(["goal", "write", "--collective", collective, "--ranks", str(ranks), "--bytes", "64", "-o", str(path)]) == 0
    assert "wrote" in capsys.readouterr().out
    summary = check_json(capsys, path)
    assert summary["num_ranks"] == ranks
    assert summary["ops"] == summary["sends"] + summary["recvs"] + summary["calcs"]
    assert summary["sends"] == summary["recvs"]  # every generated pattern is matched
    assert main(["sim", str(path), "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["sim", "--collective", collective, "--ranks", str(ranks), "--bytes", "64", "--json"]) == 0
    generated = json.loads(capsys.readouterr().out)
    assert from_file["makespan"] == generated["makespan"] and from_file["ranks"] == generated["ranks"]
    assert from_file["messages"] == summary["sends"]


def test_gzip_output(capsys, tmp_path):
    plain, packed = tmp_path / "b.goal", tmp_path / "b.goal.gz"
    for path in (plain, packed):
        assert main(["goal", "write", "--collective", "binomial-bcast", "--ranks", "16", "--bytes", "1", "-o", str(path)]) == 0
    capsys.readouterr()
    assert gzip.decompress(packed.read_bytes()).decode() == plain.read_text()
    assert check_json(capsys, packed)["num_ranks"] == 16
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.goal", "b.goal.gz"], "no temporary files left"


def test_check_prints_a_table(capsys, tmp_path):
    path = tmp_path / "s.goal"
    path.write_text("num_ranks 2 // two ranks\nrank 0 {\n  send 8b to 1 tag 3 /* a comment */\n}\n"
                    "rank 1 {\n  r: recv 8b from -1 tag -1\n  c: calc 100 cpu 1\n  c requires r\n}\n")
    assert main(["goal", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "num_ranks" in out
    summary = check_json(capsys, path)
    assert (summary["sends"], summary["recvs"], summary["calcs"], summary["cpus"]) == (1, 1, 1, 2)


def test_schedgen_any_tag(capsys):
    """A schedule as Schedgen v1 writes it (`schedgen -p trace` of the liballprof traces beside it): its
    any-tag receives carry tag 18446744073709551615. They match the sends of any tag, and the run gives
    LogGOPSim v1's per-rank times on the same file (txt2bin, then LogGOPSim, with and without -L 3000
    -o 1000 -g 500 -G 2)."""
    path = Path(__file__).parent / "data" / "schedgen-anytag.goal"
    assert "tag 18446744073709551615" in path.read_text()
    for options, ranks in (([], [360228, 364414]), (["-L", "3000", "-o", "1000", "-g", "500", "-G", "2"],
                                                     [358076, 362138])):
        assert main(["sim", str(path), "--json", *options]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["deadlock"] is None and result["ranks"] == ranks


def test_a_large_schedule_is_cached_and_a_changed_one_is_read_again(capsys, tmp_path, monkeypatch):
    """contend sim caches a large schedule's parse under $CONTEND_CACHE/goal: the cached run, an uncached
    one (--no-cache) and the generator agree; after the text changes (its mtime put back), the new text
    is what runs. (engine/tests/goal_cache.rs covers the entry's checks.)"""
    monkeypatch.setenv("CONTEND_CACHE", str(tmp_path / "cache"))

    def run(*options) -> dict:
        assert main(["sim", *options, "--json"]) == 0
        return {k: v for k, v in json.loads(capsys.readouterr().out).items() if k not in ("wall_seconds", "workload")}

    path = tmp_path / "big.goal"
    for size in (8, 9):
        assert main(["goal", "write", "--collective", "dissemination", "--ranks", "16384", "--bytes", str(size),
                     "-o", str(path)]) == 0
        capsys.readouterr()
        os.utime(path, (time.time() - 3600, time.time() - 3600))
        if size == 8:
            assert path.stat().st_size > 4 << 20  # the engine's MIN_SOURCE_BYTES
            time.sleep(2.2)  # its ctime (now) settles: the cache takes sources left alone for 2 s
            first = run(str(path))
            assert len(list((tmp_path / "cache" / "goal").glob("*.goalc"))) == 1
        else:
            changed = run(str(path))
    cached = run(str(path))  # would be the 8-byte run if the entry were used
    generated = run("--collective", "dissemination", "--ranks", "16384", "--bytes", "9")
    assert changed == cached == run("--no-cache", str(path)) == generated != first
