"""The LogGP fit on synthetic measurements from known parameters: it must recover them, find the
protocol step, and write a machine file the machine loader accepts with the same values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contend.bench import loggp
from contend.bench.results import RunResult

# A machine with a protocol switch at 8 KiB: eager below, a costlier rendezvous above.
L, O_S, O_R, GAP, G, O = 400.0, 150.0, 900.0, 800.0, 0.12, 0.02
N = 16
SIZES = [2**k for k in range(21)]
STEP_AT = 8192
RENDEZVOUS_EXTRA = 7000.0  # ns added to the round trip above the step


def one_way(s: float) -> float:
    return O_S + L + (s - 1) * G + O_R + (RENDEZVOUS_EXTRA / 2 if s >= STEP_AT else 0)


def loggp_run(sizes=SIZES) -> RunResult:
    rows = []
    for s in sizes:
        prtt1 = 2 * one_way(s)
        gap = GAP + (s - 1) * G
        delay = max(prtt1, 2 * gap)
        o_s = O_S + (s - 1) * O
        rows.append(dict(pattern="loggp", metric="loggp", bytes=s, rank=0, peer=1, prtt1_ns=prtt1,
                         prttn_ns=prtt1 + (N - 1) * gap, prttd_ns=prtt1 + (N - 1) * (o_s + delay),
                         delay_ns=delay, n=N, o_r_ns=O_R + (s - 1) * O, t_p50_ns=prtt1 / 2))
    meta = {"pattern": "loggp", "ranks": 2, "nodes": 1, "hosts": ["h"], "mpi_library": "MPICH Version: 5.0.2",
            "started": "2026-01-01T00:00:00Z", "loadavg_1min": 0.1}
    return RunResult(meta=meta, results=pd.DataFrame(rows), tallies=pd.DataFrame())


def pingpong_run(sizes=SIZES) -> RunResult:
    rows = [dict(pattern="pingpong", metric="latency", bytes=s, rank=0, peer=1, t_p50_ns=one_way(s)) for s in sizes]
    return RunResult(meta={"pattern": "pingpong"}, results=pd.DataFrame(rows), tallies=pd.DataFrame())


def test_netgauge_equations_recover_overheads_and_gap():
    table = loggp.netgauge_table(loggp_run())
    assert np.allclose(table["o_s_ns"], O_S + (table["bytes"] - 1) * O)
    assert np.allclose(table["gap_ns"], GAP + (table["bytes"] - 1) * G)


def test_fit_recovers_parameters_and_the_step():
    fit = loggp.fit_loggp(loggp_run())
    assert fit.step == (4096, 8192) and fit.S == 8191
    assert fit.o_s == pytest.approx(O_S) and fit.o_r == pytest.approx(O_R)
    assert fit.L == pytest.approx(L) and fit.g == pytest.approx(GAP)
    assert fit.O == pytest.approx(O)
    assert fit.G_stream == pytest.approx(G)
    # G makes the model exact at the largest size, where the rendezvous extra is spread over 1 MiB
    assert fit.round_trip([SIZES[-1]])[0] == pytest.approx(2 * one_way(SIZES[-1]))
    assert fit.round_trip([1])[0] == pytest.approx(2 * one_way(1))


def test_compare_flags_the_sizes_a_line_cannot_follow():
    fit = loggp.fit_loggp(loggp_run())
    table = loggp.compare(fit, pingpong_run())
    eager = table[table["bytes"] <= 1024]
    assert (eager["error_pct"].abs() < 1).all()
    assert table.loc[table["bytes"] == 8192, "error_pct"].iloc[0] < -10
    assert set(table["regime"]) == {"eager", "rendezvous"}


def test_refine_step_narrows_to_the_threshold():
    measured = []

    def measure(sizes):
        measured.append(list(sizes))
        return [2 * one_way(s) for s in sizes]

    low, high = loggp.refine_step(4096, 8192, measure, rounds=3)
    assert (low, high) == (8191, 8192)
    assert len(measured) == 3


def test_best_line_error_is_zero_on_a_line_and_large_on_a_step():
    sizes = np.array(SIZES, dtype=float)
    assert loggp.best_line_error(sizes, 1000 + 0.5 * sizes) < 1e-6
    stepped = np.array([2 * one_way(s) for s in SIZES])
    assert loggp.best_line_error(sizes, stepped) > 0.2


def test_machine_file_round_trips_through_the_machine_loader(tmp_path):
    machine = pytest.importorskip("contend.machine")
    fit = loggp.fit_loggp(loggp_run())
    table = loggp.compare(fit, pingpong_run())
    path = loggp.write_machine(loggp.machine_toml(fit, table, loggp_run().meta, "synthetic"), tmp_path / "m.toml")
    loaded = machine.load_machine(path)
    assert loaded.name == "synthetic" and loaded.source == "measured"
    params = loaded.params  # picoseconds, picoseconds per byte
    assert params["L"] == round(L * 1000) and params["o"] == round((O_S + O_R) / 2 * 1000)
    assert params["g"] == round(GAP * 1000) and params["S"] == 8191
    assert params["G"] == round(fit.G * 1000) and params["O"] == round(O * 1000)
    assert loaded.document["fit"]["within_10pct"] is False
    assert loaded.document["fit"]["protocol_step"] == [4096, 8192]
    assert loaded.document["fit"]["rendezvous"]["max_error_pct"] < 1


def test_a_run_without_loggp_rows_is_a_user_error():
    from contend.errors import UserError

    with pytest.raises(UserError, match="no loggp results"):
        loggp.fit_loggp(pingpong_run())


def test_a_second_line_above_the_step_follows_what_one_line_cannot():
    fit = loggp.fit_loggp(loggp_run())
    table = loggp.compare(fit, pingpong_run())
    intercept, slope = loggp.rendezvous_line(fit)
    assert slope == pytest.approx(2 * G) and intercept == pytest.approx(2 * one_way(1) + RENDEZVOUS_EXTRA, rel=1e-3)
    assert np.abs(loggp.two_line_errors(fit, table)).max() < 1
    assert table["error_pct"].abs().max() > 10
