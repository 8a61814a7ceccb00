"""Output places (docs/formats.md, "Output places"): devices and FIFOs are written in place and never
replaced; a write that fails (file too large, read-only place, a name longer than NAME_MAX, a file where a
directory is wanted) is one line on stderr and exit 2 with nothing half-written; so are a standard output
closed early, command-line errors and messages that quote control characters."""

from __future__ import annotations

import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import contend
from contend.atomic import atomic_path
from contend.cli import main
from contend.errors import UserError

COLLECTIVE = ["--collective", "incast", "--ranks", "16", "--bytes", "64KiB", "--machine", "qdr-ib-fattree"]
ENV = {**os.environ, "PYTHONPATH": str(Path(contend.__file__).parents[1])}


def cli(args: list[str], cwd: Path, file_size_limit: int | None = None) -> subprocess.CompletedProcess:
    """The real entry point in a fresh interpreter, optionally with `ulimit -f` (bytes)."""
    def limit():
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return subprocess.run([sys.executable, "-m", "contend.cli", *args], cwd=cwd, env=ENV, preexec_fn=limit,
                          capture_output=True, text=True, timeout=300)


def one_line_error(done: subprocess.CompletedProcess, pattern: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("contend: error: "), done.stderr
    assert re.search(pattern, done.stderr), done.stderr


def leftovers(directory: Path) -> list[str]:
    """Temporary files or directories of atomic writes: `.NAME.XXXXXXXX.tmp...`."""
    return sorted(p.name for p in directory.iterdir() if ".tmp" in p.name)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("records") / "incast.parquet"
    assert main(["sim", *COLLECTIVE, "--records", str(path), "--json"]) == 0
    return path


# devices and FIFOs


def test_a_character_device_is_written_in_place_not_replaced(tmp_path, capsys):
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a second /dev/null
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    assert main(["sim", *COLLECTIVE, "--records", str(device), "--timeline", str(device), "--json"]) == 0
    assert main(["goal", "write", *COLLECTIVE[:6], "-o", str(device)]) == 0  # the engine writes this one
    capsys.readouterr()
    assert stat.S_ISCHR(os.stat(device).st_mode) and os.stat(device).st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"], "no temporary or companion files beside it"


def _read_fifo_while(fifo: Path, write) -> bytes:
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    try:
        write()
    finally:
        reader.join(timeout=60)
    assert not reader.is_alive()
    return received[0]


def test_a_fifo_receives_the_whole_output(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = _read_fifo_while(fifo, lambda: main(["sim", *COLLECTIVE, "--records", str(fifo), "--json"]))
    capsys.readouterr()
    (tmp_path / "copy.parquet").write_bytes(data)  # what came through the FIFO is a complete Parquet file
    table = pq.read_table(tmp_path / "copy.parquet")
    assert table.num_rows == 15 and b"contend.params" in table.schema.metadata
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    goal = _read_fifo_while(fifo, lambda: main(["goal", "write", *COLLECTIVE[:6], "-o", str(fifo)]))
    assert goal.startswith(b"num_ranks 16")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.parquet", "pipe"]


def test_a_symbolic_link_is_followed_and_stays(tmp_path, capsys):
    real = tmp_path / "real.parquet"
    real.write_text("old")
    link = tmp_path / "link.parquet"
    link.symlink_to(real.name)
    assert main(["sim", *COLLECTIVE, "--records", str(link), "--json"]) == 0
    capsys.readouterr()
    assert link.is_symlink() and pq.read_table(real).num_rows == 15


# failed writes: one line, exit 2, nothing half-written


@pytest.mark.parametrize("option,name", [("--records", "big.parquet"), ("--timeline", "big.json")])
def test_a_file_too_large_is_one_line_and_leaves_nothing(tmp_path, option, name):
    done = cli(["sim", *COLLECTIVE, option, name, "--json"], tmp_path, file_size_limit=1024)
    one_line_error(done, rf"{re.escape(name)}: cannot write \(File too large\)")
    assert list(tmp_path.iterdir()) == []


def test_nimc_train_on_a_full_disk_leaves_nothing(tmp_path):
    data = Path(__file__).parent / "data" / "nimc_samples.parquet"
    done = cli(["nimc", "train", str(data), "-o", "m.model", "--trees", "100"], tmp_path, file_size_limit=1024)
    one_line_error(done, r"m\.model: cannot write \(File too large\)")
    assert list(tmp_path.iterdir()) == []


def test_an_html_report_on_a_full_disk_is_not_created(tmp_path, records):
    done = cli(["diagnose", str(records), "--html", "report"], tmp_path, file_size_limit=16 * 1024)
    one_line_error(done, r"report/\w+\.png: cannot write \(File too large\)")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "report").mkdir()  # an existing report directory is left as it was
    (tmp_path / "report" / "index.html").write_text("an earlier report")
    done = cli(["diagnose", str(records), "--html", "report"], tmp_path, file_size_limit=16 * 1024)
    one_line_error(done, r"report/\w+\.png: cannot write \(File too large\)")
    assert os.listdir(tmp_path / "report") == ["index.html"]
    assert (tmp_path / "report" / "index.html").read_text() == "an earlier report"


def test_an_html_report_into_an_existing_directory_keeps_its_files(tmp_path, records, capsys):
    report = tmp_path / "report"
    report.mkdir()
    (report / "notes.txt").write_text("mine")
    assert main(["diagnose", str(records), "--html", str(report)]) == 0
    capsys.readouterr()
    assert {p.name for p in report.iterdir()} == {"notes.txt", "index.html", "call_sites.png", "targets.png",
                                                  "split.png"}
    assert leftovers(tmp_path) == []


def test_a_directory_in_the_way_of_a_report_file_leaves_the_report_directory_as_it_was(fails_cleanly, tmp_path, records, capsys):
    report = tmp_path / "report"
    (report / "index.html").mkdir(parents=True)  # the report's page cannot go there
    fails_cleanly(["diagnose", str(records), "--html", str(report)],
                  r"report/index\.html: is a directory; the report needs that name for a file")
    assert os.listdir(report) == ["index.html"] and leftovers(tmp_path) == []


def test_an_existing_file_as_the_html_directory(fails_cleanly, tmp_path, records, capsys):
    existing = tmp_path / "report"
    existing.write_text("keep me")
    fails_cleanly(["diagnose", str(records), "--html", str(existing)], r"--html: .*report' exists and is "
                  r"not a directory")
    assert existing.read_text() == "keep me" and leftovers(tmp_path) == []


def test_a_report_under_proc_is_one_line(fails_cleanly, records, capsys):
    fails_cleanly(["diagnose", str(records), "--html", "/proc/contend-report"],
                  r"/proc/contend-report: cannot write|directory '/proc' is not writable")


def test_names_longer_than_name_max(fails_cleanly, tmp_path, records, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long = "a" * 256
    fails_cleanly(["sim", *COLLECTIVE, "--records", long + ".parquet"], r"--records: 'a+\.parquet': the "
                  r"name is longer than 255 bytes")
    fails_cleanly(["diagnose", str(records), "--html", long], r"--html: 'a+': the name is longer than 255")
    with pytest.raises(UserError, match=r"a+\.json: cannot write \(File name too long\)"):
        with atomic_path(long + ".json") as temporary:  # past the early check: the rename fails
            temporary.write_text("{}")
    # the longest name that fits: its temporary name is shortened to fit too
    fits = "a" * (255 - len(".parquet")) + ".parquet"
    assert main(["sim", *COLLECTIVE, "--records", fits, "--json"]) == 0
    capsys.readouterr()
    assert os.listdir(tmp_path) == [fits]


def _mounted(directory: Path, mount: str, args: list[str]) -> subprocess.CompletedProcess:
    """Run the CLI after the shell command ``mount`` (on "$1", ``directory``) in a private mount namespace,
    which disappears with the process; then list the directory as the CLI left it (on stdout, after the
    CLI's). Needs root and unshare(1)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount")
    script = f'{mount} || exit 99; d="$1"; shift; "$@"; code=$?; ls -A "$d"; exit $code'
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(directory), sys.executable, "-m",
                           "contend.cli", *args], cwd=directory.parent, env=ENV, capture_output=True, text=True,
                          timeout=300)
    if done.returncode == 99 or done.stderr.startswith("unshare:"):
        pytest.skip(f"cannot mount here: {done.stderr.strip()}")
    return done


def _read_only(directory: Path, args: list[str]) -> subprocess.CompletedProcess:
    """Run the CLI with ``directory`` read-only: chmod for a user; for root (which ignores modes) a
    read-only bind mount."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            return cli(args, directory.parent)
        finally:
            directory.chmod(0o755)
    return _mounted(directory, 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1"', args)


def test_a_full_file_system_leaves_no_report(tmp_path, records):
    """ENOSPC for real: a 64 KiB tmpfs, too small for the report's three PNGs."""
    place = tmp_path / "small"
    place.mkdir()
    done = _mounted(place, 'mount -t tmpfs -o size=64k tmpfs "$1"', ["diagnose", str(records), "--html",
                                                                      "small/report"])
    one_line_error(done, r"small/report/[\w.]+: cannot write \(No space left on device\)")
    assert done.stdout == "", "the file system holds nothing after the failure"


@pytest.mark.parametrize("command", ["sim", "diagnose", "trace convert"])
def test_a_read_only_place_is_one_line(tmp_path, records, command):
    place = tmp_path / "ro"
    place.mkdir()
    args = {"sim": ["sim", *COLLECTIVE, "--records", "ro/r.parquet"],
            "diagnose": ["diagnose", str(records), "--html", "ro/report", "--json", "ro/d.json"],
            "trace convert": ["trace", "convert", "ro"]}[command]
    done = _read_only(place, args)
    one_line_error(done, r"directory 'ro' is not writable")
    assert list(place.iterdir()) == []


def test_a_write_error_inside_a_writer_becomes_a_user_error(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(UserError, match=r"out\.json: cannot write \(No space left on device\)"):
        with atomic_path(target):
            raise OSError(28, "pyarrow's words", None)
    with pytest.raises(UserError, match=r"out\.json: cannot write \(File too large\)"):
        with atomic_path(target):
            raise OSError("Error writing bytes to file. Detail: [errno 27] File too large")  # as pyarrow says it
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.json"]


# stdout closed early, one-line messages


@pytest.mark.parametrize("json_output", [False, True])
def test_stdout_closed_early(tmp_path, json_output):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "contend.cli", "sim", "--collective", "incast", "--ranks", "16",
                               "--bytes", "1", *(["--json"] * json_output)], cwd=tmp_path, env=ENV, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "contend: error: standard output: closed before all of it was written\n"


def test_stdout_on_a_full_disk():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "contend.cli", "sim", "--collective", "incast", "--ranks", "16",
                               "--bytes", "1", "--json"], env=ENV, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "contend: error: standard output: cannot write (No space left on device)\n"


def test_control_characters_in_messages_are_escaped(fails_cleanly, tmp_path, capsys):
    goal = tmp_path / "bad.goal"
    goal.write_bytes(b"num_ranks 1\nrank 0 {\n  calc 5\x1b\x00\r\n}\n")
    err = fails_cleanly(["goal", "check", str(goal)], r"bad\.goal:3:9: unexpected character '\\x1b'")
    assert err[:-1].isprintable()
    err = fails_cleanly(["sim", str(tmp_path / "a\x1bb\rc.goal")], r"a\\x1bb\\rc\.goal: ")
    assert err[:-1].isprintable()


@pytest.mark.parametrize("args,pattern", [
    ([], r"the following arguments are required: COMMAND"),
    (["simulate"], r"argument COMMAND: invalid choice: 'simulate'"),
    (["sim", "--ranks"], r"^contend: error: sim: argument --ranks: expected one argument$"),
    (["sim", "--no-such-option"], r"^contend: error: unrecognized arguments: --no-such-option$"),
    (["diagnose", "x.parquet", "--top", "ten"], r"^contend: error: --top: expected a non-negative integer .*, "
                                                 r"got 'ten'$"),
    (["bench", "run"], r"^contend: error: bench run: the following arguments are required"),
    (["sim", *COLLECTIVE, "--heatmap-metric", "\x1b[31mred"], r"invalid choice: '\\x1b\[31mred'"),
])
def test_command_line_errors_are_one_line(fails_cleanly, capsys, args, pattern):
    err = fails_cleanly(args, pattern)
    assert "usage:" not in err


def test_a_scratch_directory_that_cannot_be_made_or_written_is_a_user_error(tmp_path, monkeypatch):
    import errno
    import tempfile

    from contend.atomic import scratch_directory
    from contend.errors import UserError

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(UserError, match="cannot make a temporary directory"):
        with scratch_directory("contend-test-"):
            pass
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UserError, match=r"x\.bin: cannot write \(File too large\)"):
        with scratch_directory("contend-test-") as scratch:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), f"{scratch}/x.bin")
    assert list(tmp_path.iterdir()) == []  # removed either way
