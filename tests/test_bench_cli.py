"""`contend bench list/run/show` end to end on the pip MPICH: Parquet, plot, table; and the Python
registry agreeing with the patterns compiled into contend-bench."""

from __future__ import annotations

import json
import subprocess

from contend.native import mpi
from contend.native.bench import BENCHMARKS
from contend.native.bench.results import read_run
from contend.cli import main


def test_registry_matches_the_native_pattern_table():
    binary = mpi.build_native(mpi.find_mpi())
    listed = [json.loads(line) for line in subprocess.run([str(binary), "--list"], capture_output=True,
                                                          text=True, check=True).stdout.splitlines()]
    assert [p["name"] for p in listed] == list(BENCHMARKS)
    for pattern in listed:
        bench = BENCHMARKS[pattern["name"]]
        assert (bench.summary, bench.min_ranks, bench.even_ranks) == (
            pattern["summary"], pattern["min_ranks"], pattern["even_ranks"])


def test_list_names_every_benchmark(capsys):
    assert main(["bench", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in BENCHMARKS)


def test_run_writes_parquet_and_plot_then_show_reads_them(capsys, tmp_path):
    output = tmp_path / "pp.parquet"
    code = main(["bench", "run", "pingpong", "--sizes", "1,64KiB", "--iters", "20", "-o", str(output)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "64 KiB" in out and "0->1" in out
    run = read_run(output)
    assert list(run.results["bytes"]) == [1, 65536] and run.meta["mpi_flavor"] == "mpich"
    png = output.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["bench", "show", str(output)]) == 0
    assert "64 KiB" in capsys.readouterr().out


def test_a_paused_pingpong_rests_after_every_round_trip(capsys, tmp_path):
    from contend.native.bench.runner import run_benchmark

    run = run_benchmark("pingpong", ranks=2, sizes=[1, 1024], iters=10, warmup=2, options={"pause": 0.01})
    # 2 sizes x (2 + 10) round trips, each followed by at least 10 ms asleep (nanosleep never returns early)
    assert run.meta["elapsed_s"] >= 2 * 12 * 0.01 and len(run.results) == 2
    assert main(["bench", "run", "pingpong", "--pause", "-1", "-o", str(tmp_path / "p.parquet")]) == 2
    assert "bad --pause '-1'" in capsys.readouterr().err
    assert not (tmp_path / "p.parquet").exists()


def test_noise_run_keeps_its_detours_beside_the_results(capsys, tmp_path):
    output = tmp_path / "noise.parquet"
    assert main(["bench", "run", "noise", "--np", "1", "--duration", "0.3", "--threshold", "50",
                 "-o", str(output)]) == 0
    run = read_run(output)
    detours = int(run.results["detours"].iloc[0])
    assert 0 < len(run.detours) == min(detours, 10000)  # at 50 ns something always shows; 10000 are kept
    assert "overhead %" in capsys.readouterr().out
