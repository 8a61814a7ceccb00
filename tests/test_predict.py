"""contend predict: a real 2-rank ping-pong measured untraced and traced, converted, simulated and
reported; the summary's arithmetic on known values; bad invocations. No time is asserted against
another (machine-dependent): only that each is there, positive and consistent with the runs."""

from __future__ import annotations

import json
import os
import shutil
import statistics

import pytest

from contend.native import mpi
from contend.cli import main
from contend.analysis.predict import Measured

MACHINE = """[machine]
name = "test-host"
description = "round figures for the test"
source = "tests/test_predict.py"

[loggops]
L = "500ns"
o = "600ns"
g = "700ns"
G = "0.1ns"
O = "0ns"
S = 65535
"""

ROUNDS = 200
RUNS = 2


@pytest.fixture
def machine(tmp_path):
    path = tmp_path / "host.toml"
    path.write_text(MACHINE)
    return path


def pingpong(built) -> list[str]:
    return [str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-pingpong"), str(ROUNDS), "8"]


def test_a_traced_pingpong_is_measured_converted_simulated_and_reported(built, machine, tmp_path, capsys):
    report = tmp_path / "predict.json"
    keep = tmp_path / "kept"
    code = main(["predict", "--machine", str(machine), "--runs", str(RUNS), "--json", str(report),
                 "--keep", str(keep), "--timeout", "120", "--noise", "periodic:1kHz:25us", "--", *pingpong(built)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(report.read_text())
    assert result["ranks"] == 2
    for kind in ("untraced", "traced", "predicted", "noisy"):
        values = result[f"{kind}_ns"]
        assert len(values) == RUNS and all(v > 0 for v in values)
        assert result[kind] == {"median_ns": statistics.median(values), "min_ns": min(values),
                                "max_ns": max(values), "runs": RUNS}
    # the prediction is the schedule's makespan plus the time outside the traced calls: never less
    assert len(result["schedule_ns"]) == RUNS
    assert all(p >= s > 0 for p, s in zip(result["predicted_ns"], result["schedule_ns"]))
    # every message of the ping-pong is in the schedule: 2 operations per round on each rank at least
    assert result["operations"] >= 4 * ROUNDS
    assert sorted(p.name for p in (keep / "traces").iterdir()) == [f"run-{k}" for k in range(1, RUNS + 1)]
    # both ranks ran on this host: MPICH's shared-memory collectives, unless extrapolated or chosen
    from contend.native.trace.replay import algorithms_of
    kept = keep / "traces" / "run-1"
    assert algorithms_of(kept, "auto") == "mpich-shm"
    assert algorithms_of(kept, "auto", extrapolated=True) == "mpich"
    assert algorithms_of(kept, "schedgen") == "schedgen"
    # the table names the program and the error column
    assert "app-pingpong" in out and "error %" in out and "with noise" in out
    # where the last schedule's time goes: its parts sum to its makespan, and a ping-pong is
    # overhead and wire first of all
    path = result["critical_path"]
    assert abs(sum(path["split"].values()) - result["schedule_ns"][-1]) < 1e-3 * result["schedule_ns"][-1]
    assert path["split"]["overhead"] > 0 and path["split"]["wire"] > 0
    assert "where the predicted time goes" in out

    # the kept trace predicts again on its own, against its own time, the same schedule and machine
    again = tmp_path / "again.json"
    assert main(["predict", "--machine", str(machine), "--trace", str(keep / "traces" / f"run-{RUNS}"),
                 "--json", str(again), "--html", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    alone = json.loads(again.read_text())
    assert alone["traced_ns"] == [result["traced_ns"][-1]]
    assert alone["predicted_ns"] == [result["predicted_ns"][-1]]
    assert alone["untraced"]["runs"] == 0 and alone["error_pct"] is None
    assert alone["noisy"]["runs"] == 0  # no --noise this time
    # the page: the same summary beside it, the runs and where the time goes drawn
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["critical-path.png", "index.html",
                                                                       "predict.json", "runs.png"]
    assert json.loads((tmp_path / "report" / "predict.json").read_text()) == alone
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Predicted against measured" in page and "Where the predicted time goes" in page


def rate_throttled_pingpong(built, machine, tmp_path, capsys, gap_ns: int, rounds: int) -> tuple[dict, str]:
    """`contend predict --throttle rate:GAP --ranks-per-node 1` of a 2-rank ping-pong, one run: its JSON
    and its table."""
    report = tmp_path / "throttled.json"
    command = [str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-pingpong"), str(rounds), "8"]
    code = main(["predict", "--machine", str(machine), "--runs", "1", "--json", str(report), "--timeout", "120",
                 "--throttle", f"rate:{gap_ns}ns", "--ranks-per-node", "1", "--", *command])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(report.read_text()), out


def test_a_throttled_run_and_its_prediction_both_keep_the_gap(built, machine, tmp_path, capsys):
    """--throttle rate:GAP, one rank per node: the library spaces each rank's sends of the 20-round
    ping-pong at least GAP apart, so the measured (throttled) run and its prediction both last at least
    19 gaps; the unthrottled prediction of the same trace is shorter. A lower bound from the rule, on
    any CPU."""
    gap_ns, rounds = 200_000, 20
    result, out = rate_throttled_pingpong(built, machine, tmp_path, capsys, gap_ns, rounds)
    assert result["throttle"] == {"kind": "rate", "gap": gap_ns * 1000, "ranks_per_node": 1}
    least = (rounds - 1) * gap_ns
    assert result["untraced"]["min_ns"] >= least and result["predicted"]["min_ns"] >= least, result
    assert all(plain < predicted for plain, predicted in zip(result["plain_ns"], result["predicted_ns"])), result
    assert result["tracing_overhead_pct"] is None  # throttled against unthrottled runs: not the tracer's cost
    assert "throttled" in out


@pytest.mark.fabric
@pytest.mark.usefixtures("isolated_fabric")
def test_a_throttled_run_on_the_fabric_and_its_prediction_both_keep_the_gap(built, tmp_path, capsys):
    """--fabric --throttle rate:GAP: each rank is a node of the fabric, a pool of its own (the library
    tells it by its namespace's host name, the model by the machine's placement), so the throttled run
    and its prediction both last at least 19 gaps of the 20-round ping-pong; the unthrottled prediction of
    the same trace is shorter."""
    from contend.experiments.fabric_machine import Calibration, LatencySample, machine_toml
    from contend.native import fabric

    gap_ns, rounds = 200_000, 20
    built_fabric = fabric.Fabric(fabric.TEST_PREFIX, 2, 1, "1gbit", "star")
    (tmp_path / "fabric.toml").write_text(machine_toml(
        Calibration(built_fabric, (1e9 / 8,), (LatencySample(12000, 9000, 9500, 11000),), 1500), "a test"))
    report = tmp_path / "throttled.json"
    with fabric.session(2, 1, "1gbit", "star", fabric.TEST_PREFIX):
        code = main(["predict", "--machine", str(tmp_path / "fabric.toml"), "--fabric", "--fabric-prefix",
                     fabric.TEST_PREFIX, "--runs", "1", "--timeout", "120", "--json", str(report),
                     "--throttle", f"rate:{gap_ns}ns", "--", "mpiexec", "-n", "2",
                     str(mpi.build_dir(built) / "app-pingpong"), str(rounds), "8"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(report.read_text())
    assert result["throttle"] == {"kind": "rate", "gap": gap_ns * 1000, "ranks_per_node": None}
    least = (rounds - 1) * gap_ns
    assert result["untraced"]["min_ns"] >= least and result["predicted"]["min_ns"] >= least, result
    assert all(plain < predicted for plain, predicted in zip(result["plain_ns"], result["predicted_ns"])), result
    assert "throttled" in out


def test_the_callers_library_variables_do_not_reach_the_throttled_runs(built, machine, tmp_path, capsys, monkeypatch):
    """--throttle and --ranks-per-node are the library's whole configuration, as in `contend throttle`: a
    CONTEND_THROTTLE_CONFIG or _NODE left in the caller's environment would change the policy run (here the
    library would refuse to start). The runs keep the gap of --throttle, one rank per node."""
    monkeypatch.setenv("CONTEND_THROTTLE_CONFIG", str(tmp_path / "absent.conf"))
    monkeypatch.setenv("CONTEND_THROTTLE_NODE", "one")
    gap_ns, rounds = 200_000, 5
    result, _ = rate_throttled_pingpong(built, machine, tmp_path, capsys, gap_ns, rounds)
    assert result["untraced"]["min_ns"] >= (rounds - 1) * gap_ns


@pytest.mark.parametrize("spec, per_node, pattern", [
    ("proxy:100", "1", r"--throttle proxy:100 --ranks-per-node 1: libcontend-throttle.so cannot run it: "
                       r"CONTEND_THROTTLE_SERVERS=100: out of range, expected 1 to 64$"),
    ("rate:2s", "1", r"cannot run it: CONTEND_THROTTLE_GAP_NS=2000000000: out of range"),
    ("token:1", "2000000", r"cannot run it: CONTEND_THROTTLE_RANKS_PER_NODE=2000000: out of range"),
])
def test_a_policy_the_library_refuses_is_one_line_before_any_run(built, fails_cleanly, tmp_path, spec, per_node,
                                                                  pattern):
    ran = tmp_path / "ran"
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--runs", "1", "--throttle", spec,
                   "--ranks-per-node", per_node, "--", "sh", "-c", f"touch {ran}"], pattern)
    assert not ran.exists()


def test_more_ranks_than_cores_on_a_machine_without_cores_is_a_warning(built, machine, tmp_path, capsys):
    """One rank more than this host's cores, and a machine file without [cores]: the model gives each
    rank a core of its own, which the user is told; with [cores] nothing is said."""
    import os

    ranks = len(os.sched_getaffinity(0)) + 1
    command = [str(built.mpiexec), "-n", str(ranks), str(mpi.build_dir(built) / "app-pingpong"), "5", "8"]
    code = main(["predict", "--machine", str(machine), "--runs", "1", "--timeout", "120", "--", *command])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"{ranks} ranks ran on this host's {ranks - 1} cores, and the machine has no [cores]" in err
    shared = tmp_path / "shared.toml"
    shared.write_text(machine.read_text() + f"\n[cores]\nper_node = {ranks - 1}\n")
    code = main(["predict", "--machine", str(shared), "--runs", "1", "--timeout", "120", "--", *command])
    err = capsys.readouterr().err
    assert code == 0 and "[cores]" not in err, err


def test_a_policy_on_one_node_is_a_warning(built, machine, tmp_path, capsys):
    """Both ranks on one node: nothing leaves it, so neither the library nor the model throttles anything
    (the prediction is the plain one), which the user is told."""
    report = tmp_path / "one-node.json"
    command = [str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-pingpong"), "5", "8"]
    code = main(["predict", "--machine", str(machine), "--runs", "1", "--json", str(report), "--timeout", "120",
                 "--throttle", "token:1", "--ranks-per-node", "2", "--", *command])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ("contend: warning: predict: --ranks-per-node 2 puts all 2 ranks on one node: the policy "
                   "throttles nothing (messages within a node are left alone)\n")
    result = json.loads(report.read_text())
    assert result["predicted_ns"] == result["plain_ns"]


def test_the_summary_is_the_runs_arithmetic():
    m = Measured(untraced_ns=[100, 120, 90], traced_ns=[110, 130, 100], predicted_ns=[99, 117, 150], ranks=4)
    s = m.summary()
    assert s["untraced"] == {"median_ns": 100, "min_ns": 90, "max_ns": 120, "runs": 3}
    assert s["predicted"]["median_ns"] == 117
    assert s["tracing_overhead_pct"] == pytest.approx(10.0)
    assert s["error_pct"] == pytest.approx(17.0)
    # run by run against its own traced time: -10%, -10%, +50%: the median -10%
    assert s["error_vs_traced_pct"] == pytest.approx(-10.0)


def test_the_table_shows_the_tracer_cost_only_beside_an_unthrottled_row():
    """Throttled runs against unthrottled traced runs are not the tracer's cost: no such column when every
    row is throttled; beside an unthrottled row, a throttled one shows "-" there."""
    from rich.console import Console

    from contend.commands.predict import table

    def text(*rows):
        console = Console(width=200, record=True, file=open(os.devnull, "w"))
        console.print(table(list(rows)))
        return console.export_text()

    plain = Measured(untraced_ns=[100], traced_ns=[110], predicted_ns=[99], ranks=2).summary()
    throttled = {**Measured(untraced_ns=[300], traced_ns=[110], predicted_ns=[280], plain_ns=[99], ranks=2).summary(),
                 "throttle": {"kind": "token", "tokens": 1, "ranks_per_node": 1}}
    alone = text(("p", throttled))
    assert "tracer %" not in alone and "throttled" in alone and "-6.7" in alone  # 280 against 300
    both = text(("p", plain), ("p", throttled))
    assert "tracer %" in both and "+10.0" in both  # 110 against 100
    assert "tracer %" in text(("p", plain)) and "throttled" not in text(("p", plain))


@pytest.mark.parametrize("args, pattern", [
    (["predict", "--", "mpiexec", "-n", "2", "true"], r"--machine is required"),
    (["predict", "--machine", "loggopsim-default"], r"either a launch command after -- or --trace"),
    (["predict", "--machine", "loggopsim-default", "--trace", "x", "--", "true"], r"not both"),
    (["predict", "--machine", "loggopsim-default", "--runs", "0", "--", "true"], r"--runs"),
    (["predict", "--machine", "no-such-machine", "--", "true"], r"unknown machine"),
    (["predict", "--machine", "loggopsim-default", "--timeout", "0", "--", "true"], r"--timeout"),
    (["predict", "--machine", "loggopsim-default", "--html", "/dev/null", "--", "true"],
     r"--html: '/dev/null' exists and is not a directory"),
    (["predict", "--machine", "loggopsim-default", "--noise", "bogus", "--", "true"], r"--noise"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "rate:1us", "--", "true"], r"--throttle needs --ranks-per-node"),
    (["predict", "--machine", "loggopsim-default", "--ranks-per-node", "2", "--", "true"], r"give --throttle too"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "rate:1us", "--ranks-per-node", "1", "--trace", "x"],
     r"--throttle applies to runs"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "rate:1us", "--ranks-per-node", "1", "--fabric",
      "--", "mpiexec", "-n", "2", "true"], r"on the emulated fabric its nodes share the pools .*leave out --ranks-per-node"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "token:0", "--ranks-per-node", "1", "--", "true"],
     r"--throttle token:0: tokens"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "none", "--ranks-per-node", "1", "--", "true"],
     r"--throttle none: give a policy"),
    (["predict", "--machine", "loggopsim-default", "--throttle", "rate:1us", "--ranks-per-node", "0", "--", "true"],
     r"--ranks-per-node"),
])
def test_bad_invocations_exit_2_with_one_line(fails_cleanly, args, pattern):
    fails_cleanly(args, pattern)


def test_a_directory_without_rank_files_is_one_line(fails_cleanly, tmp_path):
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--trace", str(tmp_path)], r"no rank-NNNNN.ctrace")


def test_a_program_that_fails_is_one_line(built, fails_cleanly, tmp_path):
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--runs", "1", "--timeout", "60", "--",
                   str(built.mpiexec), "-n", "2", str(mpi.build_dir(built) / "app-pingpong"), "zero"],
                  r"untraced run exited with code")


@pytest.mark.parametrize("throttle, pattern", [
    ([], r"predict: the untraced run of true did not report its time"),
    (["--throttle", "token:1", "--ranks-per-node", "1"], r"predict: libcontend-throttle.so did not run in the ranks of true "),
])
def test_a_program_without_mpi_is_named_in_one_line(built, fails_cleanly, throttle, pattern):
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--runs", "1", "--timeout", "60", *throttle, "--",
                   str(built.mpiexec), "-n", "2", "true"], pattern)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chrt") is None, reason="--fifo needs root and chrt")
def test_fifo_puts_every_program_of_the_launch_under_chrt(built):
    from contend.analysis.predict import fifo_command

    launcher = str(built.mpiexec)
    assert fifo_command([launcher, "-n", "2", "./prog", "-x", "1"]) == \
        [launcher, "-n", "2", "chrt", "-f", "1", "./prog", "-x", "1"]
    assert fifo_command([launcher, "-genv", "A", "1", "-n", "1", "./a", ":", "-n", "1", "./b"]) == \
        [launcher, "-genv", "A", "1", "-n", "1", "chrt", "-f", "1", "./a", ":", "-n", "1", "chrt", "-f", "1", "./b"]


def test_fifo_with_a_trace_is_one_line(fails_cleanly, tmp_path):
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--fifo", "--trace", str(tmp_path)],
                  r"--fifo and --fabric apply to runs")


def test_fabric_without_a_fabric_is_one_line(fails_cleanly):
    # a prefix no fabric is built under
    fails_cleanly(["predict", "--machine", "loggopsim-default", "--fabric", "--fabric-prefix", "ctdnone-", "--", "mpiexec", "-n", "2", "true"],
                  r"--fabric: no fabric is up")

