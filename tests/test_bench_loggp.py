"""The LogGP fit on synthetic measurements from known parameters: it must recover both regimes' costs,
find the protocol step, and write a machine file the machine loader accepts with the same values."""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from contend.native.bench import loggp
from contend.native.bench.results import RunResult

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
                         delay_ns=delay, n=N, o_r_ns=O_R + (s - 1) * O, t_p50_ns=prtt1 / 2, t_tmean_ns=prtt1 / 2))
    meta = {"pattern": "loggp", "ranks": 2, "nodes": 1, "hosts": ["h"], "mpi_library": "MPICH Version: 5.0.2",
            "started": "2026-01-01T00:00:00Z", "loadavg_1min": 0.1}
    return RunResult(meta=meta, results=pd.DataFrame(rows), tallies=pd.DataFrame())


def pingpong_run(sizes=SIZES) -> RunResult:
    rows = [dict(pattern="pingpong", metric="latency", bytes=s, rank=0, peer=1, t_p50_ns=one_way(s),
                 t_tmean_ns=one_way(s)) for s in sizes]
    return RunResult(meta={"pattern": "pingpong"}, results=pd.DataFrame(rows), tallies=pd.DataFrame())


def collective_run(allgather_ns: float, sendrecv_ns: float) -> RunResult:
    rows = [dict(pattern="collective", metric=metric, bytes=1, rank=0, peer=1, t_p50_ns=t)
            for metric, t in (("allgather", allgather_ns), ("sendrecv", sendrecv_ns))]
    return RunResult(meta={"pattern": "collective"}, results=pd.DataFrame(rows), tallies=pd.DataFrame())


def test_netgauge_equations_recover_overheads_and_gap():
    table = loggp.netgauge_table(loggp_run())
    assert np.allclose(table["o_s_ns"], O_S + (table["bytes"] - 1) * O)
    assert np.allclose(table["gap_ns"], GAP + (table["bytes"] - 1) * G)


def test_fit_recovers_both_regimes_and_the_step():
    fit = loggp.fit_loggp(loggp_run())
    assert fit.step == (4096, 8192) and fit.S == 8191
    assert fit.o_s == pytest.approx(O_S) and fit.o_r == pytest.approx(O_R)
    eager, above = fit.eager, fit.rendezvous
    assert eager.o == pytest.approx((O_S + O_R) / 2) and eager.L == pytest.approx(L)
    assert eager.g == pytest.approx(GAP) and eager.G == pytest.approx(G) and eager.O == pytest.approx(O)
    # above S: the same per-call overhead, the handshake's extra time as latency
    assert above.o == pytest.approx(eager.o) and above.L == pytest.approx(L + RENDEZVOUS_EXTRA / 2)
    assert above.G == pytest.approx(G) and above.g == pytest.approx(GAP) and above.O == pytest.approx(O)
    assert fit.G_stream == pytest.approx(G)
    assert fit.round_trip(SIZES) == pytest.approx([2 * one_way(s) for s in SIZES])
    assert loggp.parameter_run_error(fit) < 1e-6


def test_the_check_follows_both_sides_of_the_step():
    fit = loggp.fit_loggp(loggp_run())
    table = loggp.compare(fit, pingpong_run())
    assert (table["error_pct"].abs() < 1e-6).all()
    assert table.loc[table["bytes"] <= 4096, "regime"].eq("eager").all()
    assert table.loc[table["bytes"] >= 8192, "regime"].eq("rendezvous").all()


def test_without_a_step_one_set_serves_every_size():
    sizes = [s for s in SIZES if s < STEP_AT]
    fit = loggp.fit_loggp(loggp_run(sizes))
    assert fit.step is None and fit.rendezvous is None and fit.S == sizes[-1]
    assert fit.eager.L == pytest.approx(L) and fit.eager.G == pytest.approx(G)


def test_a_regime_with_one_size_borrows_the_other_slope():
    fit = loggp.fit_loggp(loggp_run([1, 16384, 1 << 20]), step=(1, 16384))
    assert fit.S == 16383 and fit.eager.G == pytest.approx(G)
    assert fit.round_trip([1])[0] == pytest.approx(2 * one_way(1))


def test_overheads_larger_than_the_round_trip_keep_the_round_trip():
    run = loggp_run()
    run.results["o_r_ns"] += 5000  # o_s + o_r now exceed half the round trip: L would be negative
    fit = loggp.fit_loggp(run)
    assert fit.eager.L == 0 and fit.round_trip([1])[0] == pytest.approx(2 * one_way(1))
    assert any("overheads explain the whole round trip" in note for note in fit.notes)


def test_a_disturbed_median_cannot_take_the_gap_below_the_send_overhead_unnoticed():
    run = loggp_run()
    smallest = run.results["bytes"] == 1
    run.results.loc[smallest, "prttd_ns"] += (N - 1) * 1000  # o_s 1150 ns, above the gap of 800 ns
    fit = loggp.fit_loggp(run)
    assert fit.o_s == pytest.approx(O_S + 1000) and fit.eager.g == fit.o_s
    run = loggp_run()
    run.results.loc[run.results["bytes"] == 1, "prtt1_ns"] += 20 * GAP  # inflated: gap and o_s below 0
    fit = loggp.fit_loggp(run)
    assert fit.o_s == 0 and fit.eager.g == 0  # nothing left to measure them by, and the notes say so:
    assert any("the PRTT medians were disturbed" in note for note in fit.notes)


def test_a_slowed_largest_size_cannot_take_the_rendezvous_overheads_to_zero():
    # Under load the 1 MiB round trips came out 4x slow: the line through 16 KiB and 1 MiB then
    # crosses zero bytes below zero, and the overheads came out 0 (a fitted rendezvous o = 0).
    run = loggp_run([1, 1024, 16384, 1 << 20])
    largest = run.results["bytes"] == 1 << 20
    run.results.loc[largest, ["prtt1_ns", "prttn_ns", "prttd_ns", "t_p50_ns", "t_tmean_ns"]] *= 4
    fit = loggp.fit_loggp(run, step=(1024, 16384))
    eager, above = fit.eager, fit.rendezvous
    assert eager.o == pytest.approx((O_S + O_R) / 2) and eager.L == pytest.approx(L)
    assert above.o == eager.o and above.L == 0  # the line is held at the per-call overheads, 2 x 2o
    assert fit.round_trip([1])[0] == pytest.approx(2 * one_way(1))
    measured = 2 * run.results.set_index("bytes")["t_tmean_ns"]  # the line lifted at 0 B, its slope less steep:
    assert fit.round_trip([16384])[0] > measured[16384] and 0 < fit.round_trip([1 << 20])[0] < measured[1 << 20]
    assert any("held there" in note for note in fit.notes)
    run.results.loc[largest, ["prtt1_ns", "t_p50_ns", "t_tmean_ns"]] = 1000.0  # 1 MiB below 16 KiB: flat
    fit = loggp.fit_loggp(run, step=(1024, 16384))
    assert fit.rendezvous.G == 0 and any("do not grow with size" in note for note in fit.notes)


def test_a_rendezvous_regime_with_one_size_passes_through_it_above_the_overheads():
    run = loggp_run([1, 1024, 1 << 20])
    # 1 MiB much faster than the eager slope says: borrowing it, the line would start below zero
    run.results.loc[run.results["bytes"] == 1 << 20, ["t_p50_ns", "t_tmean_ns"]] = 5000.0
    fit = loggp.fit_loggp(run, step=(1024, 1 << 20))
    assert fit.rendezvous.o == fit.eager.o and fit.rendezvous.L == 0 and fit.rendezvous.G > 0
    assert fit.round_trip([1 << 20])[0] == pytest.approx(10000.0)


def test_find_step_sees_a_small_jump_where_the_time_per_byte_falls():
    # This machine with slow eager copies: +35% at the switch, but 6x less time per byte above it.
    sizes = [1, 1024, 2048, 4096, 8192, 16384, 32768]
    assert loggp.find_step(sizes, [2624, 3000, 4257, 6314, 8532, 9784, 11978]) == (4096, 8192)
    assert loggp.find_step(sizes, [2624, 2700, 2800, 3000, 3400, 4200, 5800]) is None


def test_refine_step_narrows_to_the_threshold():
    measured = []

    def measure(sizes):
        measured.append(list(sizes))
        return [2 * one_way(s) for s in sizes]

    low, high = loggp.refine_step(4096, 8192, measure, rounds=3)
    assert (low, high) == (8191, 8192)
    assert len(measured) == 3


def test_refine_step_finds_a_drop_as_well():
    def slow_eager(sizes):  # eager time grows past the rendezvous time, which is lower at the switch
        return [1000 + s if s <= 6000 else 5000 + 0.1 * s for s in sizes]

    assert loggp.refine_step(4096, 8192, slow_eager, rounds=4) == (6000, 6001)


def test_relative_line_is_exact_on_a_line_and_never_negative():
    x = np.array([0.0, 10, 100, 1000])
    assert loggp.relative_line(x, 500 + 2 * x) == pytest.approx((500, 2))
    a, b = loggp.relative_line(x, [510.0, 505, 500, 495])  # flat within noise, sloping down
    assert b == 0 and 495 < a < 510
    a, b = loggp.relative_line([1.0, 2, 3], [5.0, 20, 35])  # 15x - 10: through the origin instead
    assert a == 0 and 5 < b < 15
    a, b = loggp.relative_line([1.0, 2, 3], [5.0, 20, 35], least=3)  # or through the floor given
    assert a == 3 and 2 / 3 < b < 15
    assert loggp.relative_line([7.0], [300.0]) == pytest.approx((300, 0))


def test_one_noisy_size_moves_the_line_by_a_share_of_its_error():
    x = np.array([2.0**k - 1 for k in range(13)])
    y = 2000 + 0.25 * x
    y[3] *= 1.2  # one size measured 20% slow
    a, b = loggp.relative_line(x, y)
    assert np.abs((a + b * x) / (2000 + 0.25 * x) - 1).max() < 0.03


def test_minimax_line_is_exact_on_a_line_and_balances_a_step():
    sizes = np.array(SIZES, dtype=float)
    a, b, error = loggp.minimax_line(sizes - 1, 1000 + 0.5 * (sizes - 1))
    assert (a, b) == pytest.approx((1000, 0.5)) and error < 1e-9
    stepped = np.array([2 * one_way(s) for s in SIZES])
    assert loggp.minimax_line(sizes - 1, stepped)[2] > 0.2


def test_machine_file_round_trips_through_the_machine_loader(tmp_path):
    machine = pytest.importorskip("contend.machine.file")
    fit = loggp.fit_loggp(loggp_run())
    table = loggp.compare(fit, pingpong_run())
    path = loggp.write_machine(loggp.machine_toml(fit, table, loggp_run().meta, "synthetic"), tmp_path / "m.toml")
    loaded = machine.load_machine(path)
    assert loaded.name == "synthetic" and loaded.source == "measured"
    params = loaded.params  # picoseconds, picoseconds per byte
    assert params["L"] == round(L * 1000) and params["o"] == round((O_S + O_R) / 2 * 1000)
    assert params["g"] == round(GAP * 1000) and params["S"] == 8191
    assert params["G"] == round(G * 1000) and params["O"] == round(O * 1000)
    assert loaded.rendezvous == {"L": round((L + RENDEZVOUS_EXTRA / 2) * 1000), "o": params["o"],
                                 "g": round(GAP * 1000), "G": round(G * 1000), "O": round(O * 1000)}
    record = loaded.document["fit"]
    assert record["within_10pct"] is True and record["max_error_pct"] == 0
    assert record["protocol_step"] == [4096, 8192] and record["one_line_max_error_pct"] > 10
    assert record["pingpong_bytes"] == SIZES and len(record["pingpong_error_pct"]) == len(SIZES)


def test_a_run_without_loggp_rows_is_a_user_error():
    from contend.errors import UserError

    with pytest.raises(UserError, match="no loggp results"):
        loggp.fit_loggp(pingpong_run())


@pytest.mark.parametrize("slower, code", [(1.0, 0), (1.5, 1)])
def test_bench_fit_exits_1_when_its_check_misses_10_percent(tmp_path, monkeypatch, capsys, slower, code):
    from contend.native.bench import runner
    from contend.cli import main

    def synthetic(name, sizes, **_):  # the check's ping-pongs `slower` than the parameters say
        if name == "loggp":
            return loggp_run(sizes)
        if name == "collective":
            return collective_run(1190.0, 1000.0)
        run = pingpong_run(sizes)
        run.results[["t_p50_ns", "t_tmean_ns"]] *= slower
        run.results["t_min_ns"] = run.results["t_max_ns"] = run.results["t_p50_ns"]
        return run

    monkeypatch.setattr(runner, "run_benchmark", synthetic)
    target = tmp_path / "m.toml"
    assert main(["bench", "fit", "-o", str(target), "--sizes", "1,1KiB,16KiB,1MiB", "--repeats", "1"]) == code
    out = capsys.readouterr().out
    assert ("NOT within 10%" in out) == (code == 1)
    machine = tomllib.loads(target.read_text())
    fit = machine["fit"]  # written either way, and says how far off it is
    assert fit["within_10pct"] is (code == 0)
    assert machine["mpi"]["collective_entry"] == "190.0ns"
    assert (fit["max_error_pct"] > 10) == (code == 1)


def test_collective_entry_reads_the_benchmark_s_rows():
    entry = loggp.collective_entry([collective_run(1150.0, 990.0), collective_run(1190.0, 1000.0),
                                    collective_run(1400.0, 1000.0)])
    assert (entry.bytes, entry.allgather_ns, entry.sendrecv_ns) == (1, (1150.0, 1190.0, 1400.0), (990.0, 1000.0, 1000.0))


def test_collective_entry_is_the_median_difference_and_never_negative():
    entry = loggp.CollectiveEntry(1, (1150.0, 1190.0, 1400.0), (990.0, 1000.0, 1000.0))
    assert entry.entry_ns == 190.0  # differences 160, 190, 400
    assert loggp.CollectiveEntry(1, (900.0,), (1000.0,)).entry_ns == 0.0
