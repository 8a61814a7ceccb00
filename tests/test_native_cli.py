"""`contend bench` / `contend native` on bad input: exit 2, one clear line, nothing left running."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from contend.native.bench.registry import BENCHMARKS
from contend.native import mpi
from contend.cli import main
from contend.errors import UserError


def fails_cleanly(capsys, args, pattern):
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err
    assert mpi.running_benchmarks(os.getpid()) == []


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["bench", "run", "nosuch"], r"unknown benchmark 'nosuch'; known: pingpong"),
        (["bench", "run", "pingpong", "--sizes", "1,zz"], r"--sizes: expected a byte count"),
        (["bench", "run", "pingpong", "--sizes", "2GiB"], r"larger than the 1 GiB limit"),
        (["bench", "run", "pingpong", "--sizes", "8:1"], r"1 <= LOW <= HIGH"),
        (["bench", "run", "pairs", "--np", "3"], r"--np must be even"),
        (["bench", "run", "pingpong", "--np", "1"], r"needs at least 2 ranks"),
        (["bench", "run", "pingpong", "--hops", "2"], r"--hops does not apply to pingpong"),
        (["bench", "run", "pingpong", "--iters", "-3"], r"--iters"),
        (["bench", "run", "pingpong", "--fabric", "--fabric-prefix", "ctdcli-"], r"no fabric is up"),
        (["bench", "run", "hops", "--np", "4", "--dims", "3x3"], r"--dims has 9 positions but there are 4 ranks"),
        (["bench", "show", "missing.parquet"], r"missing.parquet: no such file"),
        (["bench", "fit", "-o", "/nonexistent/dir/m.toml"], r"directory '/nonexistent/dir' does not exist"),
        (["bench", "fit", "--sizes", "1,2"], r"at least three sizes"),
    ],
)
def test_bad_input(capsys, args, pattern):
    fails_cleanly(capsys, args, pattern)


def test_no_mpi_found(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEND_MPICC", str(tmp_path / "nompicc"))
    fails_cleanly(capsys, ["bench", "run", "pingpong"], r"CONTEND_MPICC=.*nompicc: no such executable")
    monkeypatch.delenv("CONTEND_MPICC")
    with pytest.raises(UserError, match="no MPI found"):
        mpi.find_mpi({"PATH": str(tmp_path)}, venv_bin=tmp_path)


def test_a_compiler_that_fails_is_reported(capsys, monkeypatch, tmp_path):
    broken = tmp_path / "mpicc"
    broken.write_text("#!/bin/sh\necho 'mpicc: cannot work today' >&2\nexit 1\n")
    broken.chmod(0o755)
    (tmp_path / "mpiexec").symlink_to(broken)
    monkeypatch.setenv("CONTEND_MPICC", str(broken))
    fails_cleanly(capsys, ["native", "build"], r"building native/ with .*mpicc failed: .*cannot work today")


def test_a_run_past_its_timeout_is_stopped_and_leaves_nothing(capsys, tmp_path):
    output = tmp_path / "noise.parquet"
    fails_cleanly(capsys, ["bench", "run", "noise", "--duration", "60", "--timeout", "1", "-o", str(output)],
                  r"did not finish within 1 s and was stopped")
    assert not output.exists()


def test_native_build_and_info(capsys):
    assert main(["native", "build"]) == 0
    assert main(["native", "info"]) == 0
    out = capsys.readouterr().out
    # the binary's patterns are the registry's, one for one
    assert "flavor:  mpich" in out and f"patterns: {len(BENCHMARKS)}" in out and "throttle: " in out
    assert Path(re.search(r"bench:\s+(\S+)", out).group(1)).is_file()
