"""``contend throttle`` on real MPI runs (2-4 ranks on this host): the README's examples, copied from
README.md as written, throttle (the library's own counters say so); the command ``contend diagnose``
recommends runs; and every broken invocation (a bad setting, a missing library, a rank the library
did not run in, a program that fails) ends with exit != 0 and one line, before or after the launch as
fits. No timing is asserted."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import tempfile
from pathlib import Path

import pytest

from contend.native import mpi, libthrottle
from contend.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path, built):
    """Run in tmp_path, with the found MPI's mpiexec first on PATH, nothing of the library's in the
    environment, and temporary files in a directory of this test (to see that none is left)."""
    for key in list(os.environ):
        if key.startswith(libthrottle.PREFIX):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", f"{built.mpiexec.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def app(path: Path, built, before: str = "") -> Path:
    """./app: the throttle stress program (every byte checked) with a small load; `before` runs first."""
    stress = mpi.build_dir(built) / "throttle-stress"
    path.write_text(f"#!/bin/sh\n{before}\nexec {stress} --messages 200 --ops 200 \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def readme_commands() -> list[list[str]]:
    """The `$ contend throttle ...` lines of the README's console blocks, as argv after `contend`."""
    lines = [line[2:] for line in README.read_text().splitlines() if line.startswith("$ contend throttle ")]
    return [shlex.split(line, comments=True)[1:] for line in lines]


def summary_row(out: str) -> list[str]:
    """The words of the table's `all` row."""
    return next(line.split() for line in out.splitlines() if line.split()[:1] == ["all"])


def test_the_readme_examples_throttle(built, tmp_path, capsys):
    commands = readme_commands()
    assert len(commands) == 3 and {c[c.index("--policy") + 1] for c in commands} == {"token", "rate", "proxy"}
    app(tmp_path / "app", built)
    for argv in commands:
        # The README's lines are for a cluster; this host is one node, whose own traffic the library
        # leaves alone: its ranks run as nodes of 2.
        argv = [argv[0], "--ranks-per-node", "2", *argv[1:]]
        assert main(argv) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert '"verified":true' in out  # the program's own output, every byte checked
        ranks = int(argv[argv.index("-n") + 1])
        assert f"throttle: {ranks} ranks" in out
        _, ops, tokens, waits, *_ = summary_row(out)
        assert int(ops) > 0 and int(waits) > 0, out
        if "--stats" in argv:  # the counters the library wrote, one line per rank
            rows = libthrottle.read_stats(tmp_path / argv[argv.index("--stats") + 1])
            assert [row["rank"] for row in rows] == list(range(ranks))
            assert all(row["world_size"] == ranks for row in rows)
            tokens_given = int(argv[argv.index("--tokens") + 1])
            for row in rows:
                assert row["policy"] == "token" and row["pool_tokens"] == tokens_given
                assert row["tokens"] == row["ops"] > 0 and row["waits"] > 0, row  # it granted and queued
                assert row["max_in_use"] <= tokens_given or row["escapes"] > 0, row
            assert int(tokens) == sum(row["tokens"] for row in rows)
    assert list((tmp_path / "tmp").iterdir()) == [], "the temporary counters file was left behind"


def test_the_command_diagnose_recommends_runs(built, tmp_path, capsys):
    import contend
    from contend.analysis.diagnose import diagnose
    from contend.simulation.result import parameters_ns

    result = contend.simulate(collective="scatter", ranks=4, bytes=100_000, L=1000, o=1000, g=500, G=1,
                              records=True)
    advice = diagnose(result.records, parameters_ns(result.params), result.num_ranks).recommendations()[0]
    command = re.search(r"`(contend throttle [^`]*)`", advice.advice).group(1)
    assert command.endswith(" -- mpiexec -n 4 ./app"), command
    app(tmp_path / "app", built)
    assert main(shlex.split(command)[1:]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert re.search(r"throttle: 4 ranks.*; token policy", out)
    # one host, one node: the library leaves its traffic alone, and says so
    assert re.search(r"all \d+ operations stayed within their node", out), out


def test_settings_options_and_a_config_file_are_one_configuration(built, tmp_path, capsys, monkeypatch):
    """The file gives the policy, options override its keys, the caller's CONTEND_THROTTLE_* do not
    count; --json gives the settings in force."""
    monkeypatch.setenv(f"{libthrottle.PREFIX}SIZE_PER_TOKEN", "4096")
    app(tmp_path / "app", built)
    (tmp_path / "throttle.conf").write_text("policy = token\ntokens = 3\n")
    code = main(["throttle", "--config", "throttle.conf", "--tokens", "2", "--stall", "10s",
                 "--ranks-per-node", "1", "--json", "--", "mpiexec", "-n", "2", "./app"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["settings"] == {"policy": "token", "tokens": 2, "size_per_token": 0, "stall_ms": 10000,
                                  "gap_ns": 0, "ranks_per_node": 1, "servers": 0, "memory_throttle": 0,
                                  "reserve_core": 0}
    assert [row["node"].rsplit("#", 1)[1] for row in report["ranks"]] == ["0", "1"]  # a pool each
    assert report["total"]["ops"] == sum(row["ops"] for row in report["ranks"]) > 0


def test_the_adaptive_policy_reports_where_the_nodes_limit_went(built, tmp_path, capsys):
    app(tmp_path / "app", built)
    assert main(["throttle", "--policy", "adaptive", "--tokens", "8", "--ranks-per-node", "2", "--stats",
                 "counters.jsonl", "--", "mpiexec", "-n", "4", "./app"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    rows = libthrottle.read_stats(tmp_path / "counters.jsonl")
    low, high = min(r["limit_min"] for r in rows), max(r["limit_max"] for r in rows)
    assert re.search(rf"adaptive policy, the node's limit from {low} to {high} tokens, \d+ adjustments, final", " ".join(out.split())), out
    assert 1 <= low <= high <= 8 and all(row["max_in_use"] <= 8 and row["tokens"] == row["ops"] for row in rows), rows
    _, ops, tokens, *_ = summary_row(out)
    assert int(ops) == int(tokens) == sum(row["ops"] for row in rows) > 0


def test_mpmd_parts_each_get_the_library(built, tmp_path, capsys):
    app(tmp_path / "app", built)
    code = main(["throttle", "--policy", "rate", "--gap", "1us", "--stats", "s.jsonl", "--", "mpiexec",
                 "-genv", "X", "1", "-n", "1", "./app", ":", "-n", "2", "./app"])
    assert code == 0, capsys.readouterr().err
    assert [row["rank"] for row in libthrottle.read_stats(tmp_path / "s.jsonl")] == [0, 1, 2]


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("contend: error: "), captured.err
    assert "verified" not in captured.out, "the program ran"
    return captured.err


BAD = [
    (["--policy", "fast"], "--policy fast: unknown policy, expected token, rate, proxy, adaptive or none"),
    (["--policy", "token"], "the token policy needs --tokens (or tokens in --config)"),
    (["--policy", "token", "--tokens", "0"], "--tokens 0: out of range, expected 1 to 1000000"),
    (["--policy", "token", "--tokens", "8k"], "--tokens: expected a non-negative integer"),
    (["--policy", "rate", "--gap", "2us", "--tokens", "2"],
     "--tokens 2: applies to the token, proxy or adaptive policy, not to rate"),
    (["--policy", "rate", "--gap", "0"], "--gap 0: out of range"),
    (["--policy", "rate", "--gap", "1.5ns"], "--gap 1.5ns: the library counts whole ns"),
    (["--policy", "none", "--stall", "1s"], "--stall 1s: applies to the token, proxy or adaptive policy, not to none"),
    ([], "no policy: set --policy to token, rate, proxy, adaptive or none (or policy in --config)"),
    (["--config", "missing.conf"], "--config missing.conf: cannot read it: No such file or directory"),
    (["--config", "bad.conf"], "error: bad.conf:2: tokens = 2\\x1b: expected a whole number from 1 to 1000000"),
    (["--policy", "token", "--tokens", "2", "--stats", "no/such/dir/s.jsonl"],
     "--stats no/such/dir/s.jsonl: its directory does not exist"),
    (["--policy", "token", "--tokens", "2", "--stats", "."], "--stats .: not a regular file"),
    (["--policy", "token", "--tokens", "0", "--stats", "kept.jsonl"], "--tokens 0: out of range"),  # kept as is
]


@pytest.mark.parametrize("options, message", BAD, ids=[m[:40] for _, m in BAD])
def test_a_bad_configuration_is_one_line_before_the_launch(built, tmp_path, capsys, options, message):
    app(tmp_path / "app", built)
    (tmp_path / "bad.conf").write_text("policy = token\ntokens = 2\x1b\n")
    (tmp_path / "kept.jsonl").write_text("earlier\n")
    assert main(["throttle", *options, "--", "mpiexec", "-n", "2", "./app"]) == 2
    assert message in one_line_error(capsys)
    # nothing new, nothing changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "bad.conf", "kept.jsonl", "tmp"]
    assert (tmp_path / "kept.jsonl").read_text() == "earlier\n" and not any((tmp_path / "tmp").iterdir())


@pytest.mark.parametrize("command, message", [
    (["mpiexec", "-n", "2", "-frobnicate", "./app"], "option -frobnicate is not one contend knows"),
    (["mpiexec", "-configfile", "x"], "programs launched from a file are not supported"),
    (["mpiexec", "-n", "2"], "no program to run"),
    (["no-such-launcher", "./app"], "no-such-launcher: no such launcher"),
    (["./app"], "./app: not the launcher of an MPI contend knows"),
])
def test_a_launch_command_it_cannot_read_is_one_line(built, tmp_path, capsys, command, message):
    app(tmp_path / "app", built)
    assert main(["throttle", "--policy", "token", "--tokens", "1", "--", *command]) == 2
    assert message in one_line_error(capsys)


def test_a_timeout_out_of_range_is_one_line(built, capsys):
    for value in ("0", "inf", "nan", "soon"):
        assert main(["throttle", "--policy", "none", "--timeout", value, "--", "mpiexec", "-n", "2", "./app"]) == 2
        assert "--timeout: expected " in one_line_error(capsys)


def test_a_missing_library_says_how_to_build_it(built, tmp_path, capsys, monkeypatch):
    native = tmp_path / "native"
    native.mkdir()
    (native / "Makefile").write_text("")  # sources there, nothing built
    monkeypatch.setenv("CONTEND_NATIVE_DIR", str(native))
    app(tmp_path / "app", built)
    assert main(["throttle", "--policy", "token", "--tokens", "1", "--", "mpiexec", "-n", "2", "./app"]) == 2
    err = one_line_error(capsys)
    assert "libcontend-throttle.so is not built" in err and "contend native build" in err


def test_a_rank_whose_counters_are_missing_is_an_error(built, tmp_path, capsys):
    """Rank 1's wrapper sends its counters elsewhere (as a job script that sets its own environment
    might): the job succeeds, but nothing shows the library ran there."""
    other = f"export {libthrottle.PREFIX}STATS={tmp_path}/other"
    app(tmp_path / "app", built, before=f'[ "$PMI_RANK" = 1 ] && {other}')
    code = main(["throttle", "--policy", "token", "--tokens", "1", "--stall", "10s", "--", "mpiexec", "-n", "3",
                 "./app"])
    captured = capsys.readouterr()
    assert code == 2 and '"verified":true' in captured.out, captured.err  # the program itself was fine
    assert captured.err.count("\n") == 1 and "did not run in every rank: counters from 2 of 3 ranks (none from " \
        "rank 1" in captured.err, captured.err


def test_an_mpi_program_without_the_library_is_an_error(built, tmp_path, capsys):
    """Every rank's wrapper clears LD_PRELOAD: the job succeeds unthrottled, which must not pass.
    (Clearing it in some ranks only hangs MPI_Init: the others' library waits in a collective for them;
    --timeout ends that.)"""
    app(tmp_path / "app", built, before="unset LD_PRELOAD")
    code = main(["throttle", "--policy", "token", "--tokens", "1", "--stall", "10s", "--", "mpiexec", "-n", "2",
                 "./app"])
    captured = capsys.readouterr()
    assert code == 2 and '"verified":true' in captured.out, captured.err
    assert captured.err.count("\n") == 1 and "the library ran in no rank" in captured.err, captured.err


def test_a_program_that_is_not_mpi_is_an_error(built, capsys):
    assert main(["throttle", "--policy", "none", "--", "mpiexec", "-n", "2", "true"]) == 2
    assert "the library ran in no rank" in capsys.readouterr().err


def test_a_failing_program_keeps_its_exit_code(built, capsys):
    assert main(["throttle", "--policy", "none", "--", "mpiexec", "-n", "2", "sh", "-c", "exit 3"]) == 3
    assert capsys.readouterr().err.strip() == "contend: throttle: the command exited with code 3"


def test_program_starts_in_launch_commands():
    assert mpi.program_starts(["mpiexec", "-n", "4", "./a", "-n", "x"], "mpich") == [3]
    assert mpi.program_starts(["mpiexec", "-genv", "A", "1", "-l", "--np=2", "a", ":", "-n", "1", "b"],
                              "mpich") == [6, 10]
    assert mpi.program_starts(["mpirun", "--oversubscribe", "--mca", "btl", "self", "-x", "V", "-n", "2", "a"],
                              "openmpi") == [9]


@pytest.mark.parametrize("big", [1234, 123456789012])
def test_the_table_fits_80_columns_and_never_cuts_a_number(capsys, big):
    """20 ranks on 2 nodes with long names: one line per node, every count whole, within 80 columns
    (a table, or a line per node when the table would not fit)."""
    from contend.commands.throttle import _report

    rows = [{"rank": r, "world_size": 20, "node": f"compute-node-with-a-long-name-{r // 10}", "policy": "token",
             "ops": big, "tokens": big, "waits": big, "wait_ns": 3_600 * 10**9, "escapes": 7, "max_in_use": 4}
            for r in range(20)]
    _report({"policy": "token", "tokens": 4, "gap_ns": 0}, rows, as_json=False)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert out.count(str(big * 10)) == 2 * 3 and out.count(str(big * 20)) == 3, out  # per node, and all
    words = " ".join(out.split())
    assert words.count("36000 s") == 2 and "72000 s" in words and "140" in out, out  # 10 and 20 ranks x 1 h
    assert words.count("escapes: the pool was exceeded") == 1, out
