"""Every class of bad input to `contend sim` / `contend goal`: exit code 2, one line on stderr naming the
problem (file:line:column for GOAL files), no traceback, and no output file left behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import contend

COLLECTIVE = ["--collective", "scatter", "--ranks", "4", "--bytes", "8"]


MALFORMED_GOAL = {
    "missing num_ranks": ("rank 0 {\n}\n", 1),
    "unknown statement": ("num_ranks 1\nrank 0 {\n  jump 5\n}\n", 3),
    "undefined label": ("num_ranks 1\nrank 0 {\n  a: calc 5\n  a requires b\n}\n", 4),
    "rank out of range": ("num_ranks 2\nrank 0 {\n  send 4b to 7\n}\nrank 1 {\n}\n", 3),
    "negative number": ("num_ranks 1\nrank 0 {\n  calc -5\n}\n", 3),
    "huge number": ("num_ranks 1\nrank 0 {\n  calc 99999999999999999999999\n}\n", 3),
    "size without b": ("num_ranks 2\nrank 0 {\n  send 4 to 1\n}\nrank 1 {\n}\n", 3),
    "truncated file": ("num_ranks 2\nrank 0 {\n  calc 5\n", None),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_GOAL))
def test_malformed_goal_names_file_line_column(fails_cleanly, capsys, tmp_path, case):
    text, line = MALFORMED_GOAL[case]
    goal = tmp_path / "bad.goal"
    goal.write_text(text)
    records, trace = tmp_path / "r.parquet", tmp_path / "t.json"
    line_pattern = str(line) if line else r"\d+"
    where = rf"{re.escape(str(goal))}:{line_pattern}:\d+: \S"
    fails_cleanly(["sim", str(goal), "--records", str(records), "--timeline", str(trace)], where)
    fails_cleanly(["goal", "check", str(goal)], where)
    assert sorted(os.listdir(tmp_path)) == ["bad.goal"], "nothing half-written"


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["sim", "missing.goal"], r"error: missing\.goal: .*No such file"),
        (["goal", "check", "missing.goal"], r"error: missing\.goal: .*No such file"),
        (["sim"], r"give a GOAL file or --collective"),
        (["sim", "x.goal", *COLLECTIVE], r"not both"),
        (["sim", "--collective", "no-such-pattern", "--ranks", "4", "--bytes", "8"], r"unknown collective 'no-such-pattern'.*binomial-bcast"),
        (["sim", "--collective", "scatter", "--bytes", "8"], r"needs a rank count"),
        (["sim", "--collective", "scatter", "--ranks", "0", "--bytes", "8"], r"ranks: 0 is out of range"),
        (["sim", "--collective", "scatter", "--ranks", "-3", "--bytes", "8"], r"ranks: expected a non-negative integer"),
        (["sim", "--collective", "scatter", "--ranks", "2^40", "--bytes", "8"], r"ranks: \d+ is out of range"),
        (["sim", "--collective", "scatter", "--ranks", "four", "--bytes", "8"], r"ranks: expected"),
        (["sim", "--collective", "scatter", "--ranks", "4", "--bytes", "-1"], r"bytes: expected a byte count"),
        (["sim", "--collective", "scatter", "--ranks", "4", "--bytes", "8 parsecs"], r"bytes: expected a byte count"),
        (["sim", "--collective", "scatter", "--ranks", "4", "--bytes", "2^70"], r"bytes: .*too large|out of range"),
        (["sim", *COLLECTIVE, "--root", "4"], r"root: 4 is out of range \[0, 3\]"),
        (["sim", *COLLECTIVE, "-L", "3 fortnights"], r"parameter L: "),
        (["sim", *COLLECTIVE, "-o", "-1500"], r"parameter o: must not be negative"),
        (["sim", *COLLECTIVE, "-g", "99999999999999999999999s"], r"parameter g: "),
        (["sim", *COLLECTIVE, "-G", "12.5 furlongs/s"], r"parameter G: "),
        (["sim", *COLLECTIVE, "-O=-6ns"], r"parameter O: must not be negative"),
        (["sim", *COLLECTIVE, "-S", "-1"], r"parameter S: "),
        (["sim", *COLLECTIVE, "-S", "99999999999999999999999"], r"parameter S: "),
        (["sim", *COLLECTIVE, "--machine", "no-such-machine"], r"unknown machine 'no-such-machine'.*loggopsim-default"),
        (["sim", *COLLECTIVE, "--records", "/no/such/dir/r.parquet"], r"--records: directory '/no/such/dir' does not exist"),
        (["sim", *COLLECTIVE, "--timeline", "/no/such/dir/t.json"], r"--timeline: directory"),
        (["goal", "write", *COLLECTIVE, "-o", "/no/such/dir/x.goal"], r"-o: directory"),
        (["goal", "write", "--collective", "nope", "--ranks", "4", "--bytes", "8", "-o", "x.goal"], r"unknown collective"),
    ],
)
def test_bad_input(fails_cleanly, capsys, tmp_path, monkeypatch, args, pattern):
    monkeypatch.chdir(tmp_path)
    fails_cleanly(args, pattern)
    assert os.listdir(tmp_path) == [], "nothing written"


def test_bad_machine_files_name_file_and_key(fails_cleanly, capsys, tmp_path):
    good = {"L": '"3us"', "o": '"1.5us"', "g": '"1us"', "G": '"6ns"', "O": '"0ns"', "S": "65535"}

    def machine_file(**changes) -> Path:
        values = {**good, **changes}
        path = tmp_path / f"m{len(list(tmp_path.iterdir()))}.toml"
        body = "".join(f"{k} = {v}\n" for k, v in values.items() if v is not None)
        path.write_text(f'[machine]\nname = "m"\n\n[loggops]\n{body}')
        return path

    cases = [
        (machine_file(L='"3 lightyears"'), r"m\d\.toml:5: \[loggops\] L: "),
        (machine_file(G='"fast"'), r"m\d\.toml:8: \[loggops\] G: "),
        (machine_file(o='"-1us"'), r"m\d\.toml:6: \[loggops\] o: must not be negative"),
        (machine_file(S="-4"), r"m\d\.toml:10: \[loggops\] S: expected an integer number of bytes"),
        (machine_file(S='"lots"'), r"m\d\.toml:10: \[loggops\] S: "),
        (machine_file(g=None), r"m\d\.toml:4: \[loggops\]: missing g"),
        (machine_file(O="true"), r"m\d\.toml:9: \[loggops\] O: expected a number"),
    ]
    for path, pattern in cases:
        fails_cleanly(["sim", *COLLECTIVE, "--machine", str(path)], pattern)
    syntax = tmp_path / "syntax.toml"
    syntax.write_text('[loggops]\nL = "3us\n')
    fails_cleanly(["sim", *COLLECTIVE, "--machine", str(syntax)], r"syntax\.toml:2:\d+: ")
    missing_table = tmp_path / "empty.toml"
    missing_table.write_text('[machine]\nname = "x"\n')
    fails_cleanly(["sim", *COLLECTIVE, "--machine", str(missing_table)], r"empty\.toml:2: missing \[loggops\] table")


def test_console_script_prints_no_traceback(tmp_path):
    """The real entry point, in a fresh interpreter: exit 2, one line, for a malformed GOAL file."""
    goal = tmp_path / "bad.goal"
    goal.write_text("num_ranks 1\nrank 0 {\n  calc five\n}\n")
    env = {**os.environ, "PYTHONPATH": str(Path(contend.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-m", "contend.cli", "sim", str(goal), "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"contend: error: {goal}:3:") and done.stderr.count("\n") == 1


def test_a_run_larger_than_this_machine_s_memory_is_refused_before_it_starts(fails_cleanly):
    """2^31 - 1 ranks need 200 GiB of per-rank state at least; machines of this kind have 24 GiB. The
    allocator used to abort the process (SIGABRT), or the kernel kill it (with --cores)."""
    pattern = r"2147483647 ranks need at least 200\.0 GiB of simulator state .* GiB available"
    fails_cleanly(["sim", "--collective", "dissemination", "--ranks", "2147483647", "--bytes", "8"], pattern)
    fails_cleanly(["sim", "--collective", "dissemination", "--ranks", "2147483647", "--bytes", "8",
                   "--cores", "2:3.8us:4ms", "--ranks-per-node", "4"], pattern)
