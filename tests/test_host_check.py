"""The host check of `contend predict`: which probe a machine file's records give, the arithmetic of the
verdict, damaged records as one line before any run, and a real 2-rank check against files that record
a round trip far from any this host can take (so the verdict does not depend on the host's speed)."""

from __future__ import annotations

import json

import pytest

from contend.analysis.host_check import TOLERANCE_PCT, HostCheck, Probe, probe_of
from contend.cli import main
from contend.errors import UserError
from contend.machine.file import load_machine, parse_machine
from contend.native import mpi

FIT = '[fit]\npingpong_bytes = [1, 8, 64]\npingpong_median_ns = [1500.0, 1510.0, 1600.0]\niters = 200\n'
FABRIC = "[measured]\none_way_1B_ns = [8000.0, 9000.0, 8500.0]\n"


def load_machine_text() -> str:
    from contend.machine.file import PRESET_DIR

    return (PRESET_DIR / "loggopsim-default.toml").read_text()


def machine_with(records: str):
    return parse_machine(load_machine_text() + "\n" + records, "host.toml")


def test_a_fit_gives_its_smallest_pingpong_and_a_fabric_calibration_its_loggp_runs():
    fit = probe_of(machine_with(FIT))
    assert (fit.pattern, fit.size, fit.iters, fit.recorded_ns, fit.statistic) == ("pingpong", 1, 200, 1500.0, "median")
    from contend.experiments.fabric_check import Settings

    fabric = probe_of(machine_with(FABRIC))
    assert (fabric.pattern, fabric.size, fabric.iters, fabric.warmup) == ("loggp", 1, Settings().latency_iters,
                                                                          Settings().warmup)
    assert fabric.recorded_ns == 2 * 8500.0  # the median run's one-way time, as a round trip
    # a fit written before it recorded its iterations took the command's default
    from contend.native.bench.registry import FIT_ITERS

    assert probe_of(machine_with(FIT.replace("iters = 200\n", ""))).iters == FIT_ITERS


def test_a_file_without_such_records_has_no_probe():
    assert probe_of(load_machine("loggopsim-default")) is None
    assert probe_of(machine_with('[fit]\nmethod = "by hand"\n')) is None


@pytest.mark.parametrize("records, pattern", [
    (FIT.replace("[1500.0, 1510.0, 1600.0]", '"fast"'), r"\[fit\] pingpong_median_ns: a list of positive numbers"),
    (FIT.replace("[1500.0, 1510.0, 1600.0]", "[1500.0, -1.0, 2.0]"), r"\[fit\] pingpong_median_ns"),
    (FIT.replace("[1, 8, 64]", "[1, true, 3]"), r"\[fit\] pingpong_bytes"),
    (FIT.replace("[1, 8, 64]", "[1.5, 8, 64]"), r"\[fit\] pingpong_bytes: sizes are whole bytes, not 1\.5"),
    (FIT.replace("[1500.0, 1510.0, 1600.0]", "[1500.0]"), r"\[fit\] pingpong_bytes and pingpong_median_ns: not one time"),
    (FIT.replace("iters = 200", "iters = 0"), r"\[fit\] iters: a positive whole number"),
    (FIT.replace("iters = 200", "iters = 2.5"), r"\[fit\] iters"),
    ("[measured]\none_way_1B_ns = []\n", r"\[measured\] one_way_1B_ns: no runs"),
    ("[measured]\none_way_1B_ns = 8000\n", r"\[measured\] one_way_1B_ns: a list"),
])
def test_damaged_records_are_named_with_their_file(records, pattern):
    with pytest.raises(UserError, match=r"^host\.toml: " + pattern):
        probe_of(machine_with(records))


def probe(recorded_ns: float) -> Probe:
    return Probe("pingpong", 1, 300, None, recorded_ns, "median", "[fit] pingpong_median_ns")


def test_the_verdict_takes_the_larger_change_with_its_sign():
    check = HostCheck(probe(1000.0), before_ns=1050.0, after_ns=880.0)
    assert check.changes_pct() == pytest.approx([5.0, -12.0])
    assert check.change_pct() == pytest.approx(-12.0)
    assert not check.holds()
    warning = check.warning("host.toml")
    assert "1,050 ns before the runs and 880 ns after them" in warning and "1,000 ns in host.toml (-12%)" in warning
    assert "\n" not in warning
    within = HostCheck(probe(1000.0), before_ns=1000.0 + 9.5 * TOLERANCE_PCT)
    assert within.holds() and within.warning("host.toml") is None
    assert within.summary()["after_ns"] is None and within.summary()["change_pct"] == pytest.approx(0.95 * TOLERANCE_PCT)


def test_damaged_records_are_one_line_before_any_run(fails_cleanly, tmp_path):
    """`true` is not an MPI program: the error can only come from the machine file, before the runs."""
    path = tmp_path / "host.toml"
    path.write_text(load_machine_text() + '\n[fit]\npingpong_bytes = [1]\npingpong_median_ns = ["fast"]\n')
    fails_cleanly(["predict", "--machine", str(path), "--runs", "1", "--", "true"],
                  rf"{path}: \[fit\] pingpong_median_ns: a list of positive numbers")


@pytest.mark.parametrize("recorded_ns, sign", [(1.0, 1), (10.0**9, -1)])
def test_a_host_far_from_its_file_is_a_warning_and_the_json_says_so(built, tmp_path, capsys, recorded_ns, sign):
    """No host takes a 1 ns or a 1 s round trip on shared memory: the check must find the file wrong,
    in the right direction, before and after the runs."""
    path = tmp_path / "host.toml"
    path.write_text(load_machine_text() + f"\n[fit]\npingpong_bytes = [1]\npingpong_median_ns = [{recorded_ns}]\n"
                    "iters = 50\n")
    report = tmp_path / "predict.json"
    command = [str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-pingpong"), "50", "8"]
    assert main(["predict", "--machine", str(path), "--runs", "1", "--timeout", "120", "--json", str(report),
                 "--html", str(tmp_path / "report"), "--", *command]) == 0
    out, err = capsys.readouterr()
    check = json.loads(report.read_text())["host_check"]
    assert check["recorded_ns"] == recorded_ns and check["bytes"] == 1 and check["pattern"] == "pingpong"
    assert check["before_ns"] > 0 and check["after_ns"] > 0
    assert check["holds"] is False and sign * check["change_pct"] > TOLERANCE_PCT
    assert "the machine file no longer describes the host" in err and str(path) in err
    assert "host check: 1-byte round trip (pingpong, median of 50)" in out
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Host check" in page and "[fit] pingpong_median_ns" in page and f"{check['change_pct']:+.1f}" in page
    # without the check: nothing measured, nothing said
    assert main(["predict", "--machine", str(path), "--runs", "1", "--timeout", "120", "--json", str(report),
                 "--no-host-check", "--", *command]) == 0
    out, err = capsys.readouterr()
    assert json.loads(report.read_text())["host_check"] is None
    assert "host check" not in out and "no longer describes" not in err
