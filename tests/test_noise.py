"""OS noise end to end: `contend noise measure` writes traces the engine replays exactly, `contend sim
--noise` and `[noise]` tables are checked, bad traces and settings stop with file:line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

import contend
from contend.cli import main
from contend.noise import read_trace, write_trace
from contend.noise.measure import usable_cores

LOGGOPS = '[loggops]\nL = "3us"\no = "1.5us"\ng = "1us"\nG = "6ns"\nO = "0"\nS = 65535\n'


def fails_cleanly(capsys, argv, *expected):
    """Exit code 2 and one line on stderr that contains every expected fragment."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in expected:
        assert fragment in err, err
    return err


def replayed_end(trace, rank: int, start_ns: float, work_ns: float) -> float:
    """Reference rule, independent of the engine: walk the cyclic trace; the work advances outside
    detours, a detour in progress delays it, one starting when it is done does not count."""
    rows = trace.detours[trace.detours["rank"] == rank]
    cycle = trace.duration_ns
    now, left = start_ns, work_ns
    k = int(start_ns // cycle)
    while True:
        for s, length in zip(rows["start_ns"] + k * cycle, rows["length_ns"]):
            end = s + length
            if end <= now:
                continue
            if s > now:
                if s >= now + left:
                    return now + left
                left -= s - now
            now = end
        if now + left <= (k + 1) * cycle:
            return now + left
        left -= (k + 1) * cycle - now
        now, k = (k + 1) * cycle, k + 1


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One short real measurement (0.3 s, threshold 100 ns: detours always show)."""
    out = tmp_path_factory.mktemp("noise") / "vm.noise"
    assert main(["noise", "measure", "--seconds", "0.3", "--threshold", "100", "-o", str(out), "--json"]) == 0
    return out


def test_measure_reports_resolution_overhead_and_distribution(measured, capsys):
    assert main(["noise", "measure", "--seconds", "0.2", "--threshold", "100", "-o", str(measured.with_name("b.noise")),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0 < result["resolution_ns"] < result["threshold_ns"] == 100
    assert result["detours"] > 0 and 0 < result["overhead_pct"] < 100
    assert sum(row["count"] for row in result["distribution"]) == len(read_trace(measured.with_name("b.noise")).detours) \
        or result["per_rank"][0]["complete_ns"] < result["per_rank"][0]["duration_ns"]
    assert sum(row["overhead_pct"] for row in result["distribution"]) > 0
    lengths = [d["length_ns"] for d in result["largest"]]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] == result["detour_ns"]["max"]
    assert result["replay"][0]["elapsed_s"] > 1.0
    png = measured.with_name("b.png").read_bytes()
    assert png[:4] == b"\x89PNG"


def test_measured_trace_loads_and_replays_exactly(measured):
    trace = read_trace(measured)
    assert trace.ranks == 1 and len(trace.detours) > 0 and trace.resolution_ns > 0
    assert (trace.detours["start_ns"] + trace.detours["length_ns"] <= trace.duration_ns).all()
    # One calc on a rank whose trace starts with the calc (co-scheduled at phase 0), lengths crossing
    # many detours and the trace's end: the engine's end equals the reference walk to the picosecond.
    for work in (1_000, 123_456, trace.duration_ns * 0.7, trace.duration_ns * 2.5):
        work = round(work)
        goal = measured.with_name(f"calc{work}.goal")
        goal.write_text(f"num_ranks 1\nrank 0 {{\n  calc {work}\n}}\n")
        r = contend.simulate(goal, noise={"kind": "trace", "trace": str(measured), "phase": "coscheduled"})
        assert r.makespan == pytest.approx(replayed_end(trace, 0, 0, work), abs=1e-3)
        assert r.noise_charged == pytest.approx(r.makespan - work, abs=1e-3)


@pytest.mark.skipif(usable_cores() < 2, reason="needs two cores")
def test_per_core_pins_one_loop_per_core_and_mpi_gives_one_trace_per_rank(tmp_path, capsys):
    out = tmp_path / "cores.noise"
    assert main(["noise", "measure", "--seconds", "0.1", "--per-core", "-o", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(r["cpu"] for r in result["per_rank"]) == list(range(usable_cores()))
    assert read_trace(out).ranks == usable_cores()
    assert main(["noise", "measure", "--seconds", "0.1", "--mpi", "-n", "3", "-o", str(out)]) == 0
    assert "3 rank(s)" in capsys.readouterr().out and read_trace(out).ranks == 3


def test_measure_bad_arguments_exit_2(capsys, tmp_path):
    fails_cleanly(capsys, ["noise", "measure", "-n", "2", "-o", str(tmp_path / "x.noise")], "-n: ", "--mpi")
    fails_cleanly(capsys, ["noise", "measure", "--seconds", "0", "-o", str(tmp_path / "x.noise")], "--seconds")
    fails_cleanly(capsys, ["noise", "measure", "-o", str(tmp_path / "no" / "x.noise")], "-o: directory")
    assert not list(tmp_path.iterdir())


BAD_TRACES = {
    "unsorted": ("contend-noise 1\nduration_ns 1000\n500 10\n100 10\nend 2\n", ":4: detour at 100 ns starts before"),
    "overlapping": ("contend-noise 1\nduration_ns 1000\n500 10\n505 10\nend 2\n", ":4: detour at 505 ns starts before"),
    "negative": ("contend-noise 1\nduration_ns 1000\n-5 10\nend 1\n", ":3: start_ns -5 is negative"),
    "truncated": ("contend-noise 1\nduration_ns 1000\n5 10\n20 1", ":4: truncated"),
    "cut-count": ("contend-noise 1\nduration_ns 1000\n5 10\nend 7\n", ":4: the file holds 1 detours but its end line"),
    "half-line": ("contend-noise 1\nduration_ns 1000\n5 10\n20\nend 2\n", ":4: expected a detour 'start_ns length_ns'"),
    "not-a-trace": ("5 10\n", ":1: not a contend noise trace"),
    "past-the-end": ("contend-noise 1\nduration_ns 1000\n995 10\nend 1\n", ":3: detour ends at 1005 ns, after duration_ns"),
}


@pytest.mark.parametrize("name", sorted(BAD_TRACES))
def test_bad_traces_name_file_and_line_and_write_nothing(capsys, tmp_path, name):
    text, message = BAD_TRACES[name]
    path = tmp_path / f"{name}.noise"
    path.write_text(text)
    records = tmp_path / "r.parquet"
    fails_cleanly(capsys, ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "1", "--noise",
                           f"trace:{path}", "--records", str(records)], f"{path}{message}")
    assert not records.exists() and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    fails_cleanly(capsys, ["noise", "show", str(path)], f"{path}{message}")


def test_missing_trace_says_so(capsys, tmp_path):
    fails_cleanly(capsys, ["noise", "show", str(tmp_path / "none.noise")], "none.noise: cannot read noise trace")


@pytest.mark.parametrize("table,line,message", [
    ('kind = "sometimes"\n', 9, '[noise] kind: expected one of periodic, random, trace'),
    ('kind = "periodic"\nfrequency = "1kHz"\nduration = "2ms"\n', 11, "[noise] duration: detours of 2 ms every 1 ms"),
    ('kind = "periodic"\nfrequency = "1kHz"\n', 8, "periodic noise needs duration"),
    ('kind = "periodic"\nperiod = "1ms"\nfrequency = "1kHz"\nduration = "1us"\n', 8, "either frequency or period"),
    ('kind = "periodic"\nfrequency = "fast"\nduration = "1us"\n', 10, "[noise] frequency: expected a frequency"),
    ('kind = "periodic"\nfrequency = "1kHz"\nduration = "-1us"\n', 11, "[noise] duration: must not be negative"),
    ('kind = "random"\nrate = "1kHz"\nduration = "1us"\njitter = 2\n', 12, "[noise] jitter: unknown key"),
    ('kind = "random"\nrate = "10kHz"\nduration = "90us"\n', 10, "take 90% of the time (at most 50%)"),
    ('kind = "random"\nrate = "1kHz"\nduration = "1us"\nphase = "3us"\n', 12, "random noise is independent or coscheduled"),
    ('kind = "periodic"\nfrequency = "1kHz"\nduration = "1us"\nphase = "sometime"\n', 12, "[noise] phase:"),
    ('kind = "trace"\ntrace = 5\n', 10, "[noise] trace: expected a trace file"),
])
def test_bad_noise_tables_name_file_line_and_key(capsys, tmp_path, table, line, message):
    machine = tmp_path / "m.toml"
    machine.write_text(LOGGOPS + "[noise]\n" + table)
    fails_cleanly(capsys, ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "1", "--machine",
                           str(machine)], f"{machine}:{line}", message)


@pytest.mark.parametrize("argv,message", [
    (["--noise", "periodic:1kHz"], "--noise: expected periodic:FREQ:DURATION"),
    (["--noise", "periodic:1kHz:1ms"], "must be shorter than the period"),
    (["--noise", "random:1kHz:3us:gauss"], "--noise (distribution)"),
    (["--noise", "random:1kHz:40us-30us"], "must not be below min"),
    (["--noise", "periodic:1kHz:1us", "--noise-phase", "later"], "--noise-phase"),
    (["--noise", "random:1kHz:1us", "--noise-phase", "5us"], "random noise is independent or coscheduled"),
    (["--noise-seed", "4"], "no noise to apply it to"),
    (["--noise", "periodic:1kHz:1us", "--noise-seed", "-4"], "--noise-seed"),
])
def test_bad_noise_options_exit_2(capsys, argv, message):
    fails_cleanly(capsys, ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "1", *argv], message)


@pytest.mark.parametrize("spec,table", [
    ("periodic:200kHz:700ns", {"kind": "periodic", "frequency": "200kHz", "duration": "700ns"}),
    ("random:1kHz:25us:fixed", {"kind": "random", "rate": "1kHz", "duration": "25us", "distribution": "fixed"}),
    ("random:2kHz:10us-40us", {"kind": "random", "rate": "2kHz", "distribution": "uniform", "min": "10us", "max": "40us"}),
])
def test_a_spec_and_its_table_are_the_same_noise(spec, table):
    """The command line's spec (parsed by the engine) and a [noise] table (read by Python) meet in
    the same settings."""
    from contend.noise.settings import from_table, parse_spec

    assert parse_spec(spec) == from_table(table, lambda key: key)


def test_the_engine_names_the_key_a_rule_is_about():
    """The rules live in the engine; its error names the key, which Python places."""
    from contend.errors import UserError
    from contend.noise.settings import from_table

    with pytest.raises(UserError, match=r"^where rate: 1000 Hz of detours averaging 600 us take 60% of the time"):
        from_table({"kind": "random", "rate": "1kHz", "duration": "600us", "distribution": "fixed"},
                   lambda key: f"where {key}")


def sim_json(capsys, *argv) -> dict:
    assert main(["sim", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_machine_noise_applies_and_the_command_line_replaces_it(capsys, tmp_path):
    trace = tmp_path / "t.noise"
    trace.write_text("contend-noise 1\nduration_ns 10000\n100 2000\nend 1\n")
    machine = tmp_path / "m.toml"
    machine.write_text(LOGGOPS + '[noise]\nkind = "trace"\ntrace = "t.noise"\nphase = "coscheduled"\n')
    run = ["--collective", "pingpong", "--ranks", "2", "--bytes", "1", "--machine", str(machine)]
    quiet = sim_json(capsys, *run, "--noise", "none")
    noisy = sim_json(capsys, *run)  # the trace is found beside the machine file
    assert quiet["makespan"] == 12000 and quiet["noise_charged"] == 0 and "noise" not in quiet["params"]
    assert noisy["makespan"] == 14000 and noisy["noise_charged"] == 2000  # rank 0's first o meets the detour
    assert noisy["params"]["noise"]["kind"] == "trace"
    # Phase 5 us: the detour falls at 5.1-7.1 us, inside rank 1's receive overhead (4.5-6 us without
    # noise), so rank 1 answers at 8 us instead of 6 and finishes at 9.5 us; rank 0 at 14 us.
    shifted = sim_json(capsys, *run, "--noise-phase", "5us")
    assert shifted["ranks"] == [14000, 9500]


def test_same_seed_same_result_and_the_seed_matters(capsys):
    run = ["--collective", "dissemination", "--ranks", "64", "--bytes", "1", "--noise", "random:20kHz:5us"]
    first = sim_json(capsys, *run, "--noise-seed", "5")
    assert sim_json(capsys, *run, "--noise-seed", "5")["ranks"] == first["ranks"]
    assert sim_json(capsys, *run, "--noise-seed", "6")["ranks"] != first["ranks"]
    assert first["makespan"] > sim_json(capsys, *run[:-2])["makespan"]


def test_independent_noise_runs_windowed_with_the_records_result():
    # Windowed execution (docs/models.md, "Noise", Cost) takes plain eager runs under independent noise;
    # asking for records keeps the time-ordered loop, whose finish times must be the same.
    noise = {"kind": "periodic", "frequency": "20kHz", "duration": "5us"}
    windowed = contend.simulate(collective="dissemination", ranks=1000, bytes=8, noise=noise)
    ordered = contend.simulate(collective="dissemination", ranks=1000, bytes=8, noise=noise, records=True)
    assert windowed.windowed and not ordered.windowed
    assert np.array_equal(windowed.ranks, ordered.ranks) and windowed.noise_charged == ordered.noise_charged > 0
    assert (windowed.events, windowed.messages) == (ordered.events, ordered.messages)
    for quiet in (contend.simulate(collective="dissemination", ranks=1000, bytes=8),
                  contend.simulate(collective="dissemination", ranks=1000, bytes=8,
                                   noise=dict(noise, phase="coscheduled")),
                  contend.simulate(collective="dissemination", ranks=1000, bytes=100_000, noise=noise)):
        assert not quiet.windowed  # in step, or rendezvous: time order


@pytest.mark.parametrize("noise", ["periodic:20kHz:5us", "random:20kHz:5us", "none"])
def test_threads_sharing_the_windows_give_the_same_result(noise):
    # Windows shared by 2 and 3 threads (blocks of ranks, the last one short) against time order;
    # the result says how the engine ran.
    run = dict(collective="dissemination", ranks=1001, bytes=8, noise=noise)
    ordered = contend.simulate(**run, execution="time-ordered")
    assert not ordered.windowed and ordered.threads == 1
    for threads in (1, 2, 3):
        shared = contend.simulate(**run, execution="windowed", threads=threads)
        assert shared.windowed and shared.threads == threads
        assert np.array_equal(shared.ranks, ordered.ranks)
        assert (shared.events, shared.messages, shared.noise_charged) == (ordered.events, ordered.messages,
                                                                          ordered.noise_charged)


def test_bad_threads_or_execution_are_user_errors(capsys):
    from contend.errors import UserError

    with pytest.raises(UserError, match="execution must be one of"):
        contend.simulate(collective="dissemination", ranks=8, bytes=1, execution="fast")
    with pytest.raises(UserError, match="threads"):
        contend.simulate(collective="dissemination", ranks=8, bytes=1, threads=0)
    for bad in ("0", "x", "65"):
        assert main(["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "1", "--threads", bad]) == 2
        err = capsys.readouterr().err
        assert "threads" in err and "Traceback" not in err and err.count("\n") == 1


def test_records_split_the_delay_with_the_noise_column():
    r = contend.simulate(collective="dissemination", ranks=256, bytes=8, records=True,
                         noise={"kind": "periodic", "frequency": "20kHz", "duration": "5us"})
    records = r.records
    parts = records[["ideal", "nic_queue", "link", "target_queue", "late_receiver", "noise"]].sum(axis=1)
    assert np.allclose(parts, records["completed"] - records["posted"])
    assert records["noise"].sum() > 0 and (records["noise"] >= 0).all()
    quiet = contend.simulate(collective="dissemination", ranks=256, bytes=8, records=True)
    assert np.array_equal(records["ideal"], quiet.records["ideal"])  # the cost with no waiting is the same


def test_show_summarises_a_written_trace(capsys, tmp_path):
    import pandas as pd

    path = tmp_path / "w.noise"
    detours = pd.DataFrame({"rank": [0, 0, 1], "start_ns": [10.0, 500.5, 7.0], "length_ns": [40.0, 2000.0, 1.5]})
    write_trace(path, detours, ranks=3, duration_ns=10_000, resolution_ns=20.5, comments=["hand made"])
    assert main(["noise", "show", str(path), "--json", "--plot", str(tmp_path / "w.png")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["ranks"], shown["detours"], shown["resolution_ns"]) == (3, 3, 20.5)
    assert [r["overhead_pct"] for r in shown["per_rank"]] == pytest.approx([20.4, 0.015, 0.0])
    assert (tmp_path / "w.png").read_bytes()[:4] == b"\x89PNG"
