"""Every table the CLI prints, at 80 and 40 columns behind a pipe: no line wider than the terminal, no
"…", and every number of the command's JSON output (or of the data the table shows) whole in the text."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from rich.console import Console

from contend.native.bench.results import parse_lines, write_run
from contend.cli import main
from contend.report.terminal import Table

WIDTHS = (80, 40)
DATA = Path(__file__).parent / "data"


def assert_fits(text: str, width: int, numbers=()) -> None:
    assert text.strip(), "nothing printed"
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width} columns: {line!r}"
    assert "…" not in text
    missing = [n for n in numbers if n not in text]
    assert not missing, f"not whole in the output: {missing}\n{text}"


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """Run `contend ARGS` in tmp_path as behind a pipe of the given width; its exit code and stdout."""
    monkeypatch.chdir(tmp_path)

    def run(width: int | None, *args: str) -> tuple[int, str]:
        monkeypatch.setenv("COLUMNS", str(width))
        code = main(list(args))
        return code, capsys.readouterr().out

    return run


def rendered(renderable, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def test_a_number_is_never_cut_at_any_width():
    """The rule itself: rich would cut these cells with "…" (or fold them) when the columns' least widths
    do not fit; from 120 columns down to 20 every number stays whole."""
    table = Table(title="wide")
    for name in ("call site", "kind", "contention ns", "share", "ops", "initiator", "target", "top ranks"):
        table.add_column(name, justify="left" if name in ("call site", "kind", "top ranks") else "right")
    numbers = ["235,622,192", "100.0%", "63", "1,234,567,890.125", "18,000"]
    table.add_row("send op 0", "send", numbers[0], numbers[1], numbers[2], numbers[3], f"{numbers[4]} ns (18 us)", "63, 62, 61")
    for width in range(120, 19, -1):
        text = rendered(table, width)
        assert_fits(text, width, numbers)
    assert "┃" in rendered(table, 200) and "┃" not in rendered(table, 80), "borders go before the rows do"
    empty = Table(title="no rows")
    for name in ("a long header", "another long header", "and one more"):
        empty.add_column(name, justify="right")
    for width in (80, 30, 20):
        assert_fits(rendered(empty, width), width, ["no rows", "another"])
    pairs = Table(title="key and value", show_header=False)
    pairs.add_column("key")
    pairs.add_column("value")
    pairs.add_row("contention summed over operations", "235,622,192 ns (100.0% of contention)")
    lines = [line.rstrip() for line in rendered(pairs, 20).splitlines()]
    assert lines == ["key and value", "contention summed", "over operations", "  235,622,192 ns",
                     "  (100.0% of", "  contention)"], "too narrow for key and value side by side: stacked"


def test_the_issue_reproduction_through_a_real_pipe(tmp_path):
    """`contend diagnose incast.parquet | cat` showed "235,6…": rich assumes 80 columns behind a pipe."""
    records = tmp_path / "incast.parquet"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    subprocess.run([sys.executable, "-m", "contend.cli", "sim", "--collective", "gather", "--ranks", "64", "--bytes",
                    "64KiB", "--machine", "xt3-torus", "--records", str(records)], check=True, env=env,
                   capture_output=True)
    out = subprocess.run([sys.executable, "-m", "contend.cli", "diagnose", str(records), "--json", str(tmp_path / "d.json")],
                         check=True, env=env, capture_output=True, text=True).stdout
    totals = json.loads((tmp_path / "d.json").read_text())
    assert_fits(out, 80, [f"{totals['contention_ns']:,.0f}", "235,622,192"])


SIMULATIONS = {
    "network, outputs": ["--collective", "gather", "--ranks", "64", "--bytes", "64KiB", "--machine", "xt3-torus",
                         "--records", "r.parquet", "--timeline", "t.json", "--links", "l.parquet"],
    "NIC, token throttle, noise": ["--collective", "alltoall-linear", "--ranks", "8", "--bytes", "4KiB", "--machine",
                                   "ib-congestion", "--throttle", "token:2", "--noise", "periodic:1kHz:10us"],
    "rate throttle": ["--collective", "alltoall-linear", "--ranks", "8", "--bytes", "4KiB", "--machine",
                      "ib-congestion", "--throttle", "rate:1us"],
    "memory": ["--collective", "incast", "--ranks", "32", "--bytes", "1MiB", "--machine", "sandybridge-onload",
               "--memory-throttle", "1GB/s", "--reserve-core"],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", SIMULATIONS)
def test_sim_table_says_which_models_were_on_and_what_it_wrote(cli, width, case):
    args = SIMULATIONS[case]
    code, out = cli(width, "sim", *args, "--json")
    assert code == 0
    summary = json.loads(out)
    code, out = cli(width, "sim", *args)
    assert code == 0
    numbers = [f"{summary[key]:,}" for key in ("makespan", "num_ranks", "ops", "messages", "events")]
    params = summary["params"]
    if summary["busiest_link"]:
        numbers.append(f"{summary['busiest_link']['bytes']:,}")
    if "memory" in summary:
        numbers.append(f"{sum(summary['memory']['bytes_written']):,}")
    assert_fits(out, width, numbers)
    flat = " ".join(re.sub("[\u2500-\u257f]", " ", out).split())  # a row's text, wherever it wrapped
    for model in ("network", "NIC", "throttle", "noise", "memory"):
        assert f"{model} " in flat
    assert ("torus 8x8x16" in flat) == ("network" in params)
    assert ("congestion curves (1 size class), 32 ranks per NIC" in flat) == ("node" in params)
    if case == "NIC, token throttle, noise":
        assert f"token, 2 tokens per node; {summary['admission_waits']:,} sends waited" in flat
        assert "periodic 1000 Hz x 10 us" in flat
    if case == "rate throttle":
        assert "rate, a send at most every 1,000 ns (1 us) per rank" in flat
    if case == "memory":
        assert "onload NIC" in flat and "throttle 1 GB/s, reserved core" in flat
    else:
        assert "memory off" in flat
    written = "records r.parquet; timeline t.json; links l.parquet" if case == "network, outputs" else "none"
    assert f"files written {written}" in flat


@pytest.mark.parametrize("width", WIDTHS)
def test_diagnose_tables(cli, width):
    assert cli(width, "sim", "--collective", "gather", "--ranks", "64", "--bytes", "64KiB", "--machine",
               "xt3-torus", "--records", "incast.parquet")[0] == 0
    code, out = cli(width, "diagnose", "incast.parquet", "--json", "d.json")
    assert code == 0
    result = json.loads(Path("d.json").read_text())
    site = result["call_sites"][0]
    numbers = [f"{result[key]:,.0f}" for key in ("contention_ns", "run_time_ns", "t_contention_ns", "t_blocked_ns")]
    numbers += [f"{site['contention']:,.0f}", f"{site['target']:,.0f}", f"{site['share']:.1%}", str(site["messages"])]
    numbers += [f"{target['contention']:,.0f}" for target in result["targets"]]
    assert_fits(out, width, numbers)


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_list(cli, width):
    from contend.native.bench import BENCHMARKS

    code, out = cli(width, "bench", "list")
    assert code == 0
    assert_fits(out, width, [b.name for b in BENCHMARKS.values()] + ["8B..256KiB", "1B..1MiB"])


def _stored_run(path: Path, pattern: str, results: list[dict]) -> Path:
    meta = {"type": "meta", "pattern": pattern, "ranks": 4, "nodes": 2, "hosts": ["node-a", "node-b"],
            "node_of_rank": [0, 0, 1, 1], "mpi_library": "MPICH Version: 4.3.0 Release Date: unreleased",
            "loadavg_1min": 1.25}
    lines = [json.dumps(meta)] + [json.dumps({"type": "result", "pattern": pattern, **r}) for r in results]
    write_run(parse_lines(lines + ['{"type": "end", "elapsed_s": 0.5}']), path)
    return path


BENCH_RUNS = {
    "pingpong": [{"metric": "latency", "bytes": b, "rank": 0, "peer": 1, "t_p50_ns": t, "t_min_ns": t - 31,
                  "t_p99_ns": t * 3 + 7, "bandwidth_Bps": b / t * 1e9, "msg_rate": 1e9 / t}
                 for b, t in ((1, 812), (65536, 123456), (1048576, 98765432))],
    "nicrate": [{"metric": "send", "bytes": 4096, "rank": r, "peer": -1, "active": 2, "window": 16,
                 "bandwidth_Bps": 2.5e9 + r * 1e8, "msg_rate": 610000 + r, "rank_min_Bps": 1.1e9,
                 "rank_max_Bps": 1.3e9} for r in (0, 2)],
    "noise": [{"metric": "detour", "bytes": 0, "rank": r, "peer": -1, "resolution_ns": 20, "detours": 1234 + r,
               "overhead_pct": 1.5 + r, "t_p50_ns": 2345, "t_max_ns": 17448400} for r in (0, 1)],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("pattern", BENCH_RUNS)
def test_bench_show(cli, tmp_path, width, pattern):
    from contend.native.bench.tables import us

    run = _stored_run(tmp_path / f"{pattern}.parquet", pattern, BENCH_RUNS[pattern])
    code, out = cli(width, "bench", "show", str(run.name))
    assert code == 0
    rows = BENCH_RUNS[pattern]
    if pattern == "pingpong":
        numbers = [us(r[k]) for r in rows for k in ("t_p50_ns", "t_min_ns", "t_p99_ns")] + ["64 KiB", "1 MiB"]
    elif pattern == "nicrate":  # the nodes' mean and slowest throughput, the ranks' spread
        numbers = ["2.60 GB/s", "2.50 GB/s", "x1.18", "16", "4 KiB"]
    else:
        numbers = [us(17448400), us(2345), "1234", "1235", "1.50", "2.50"]
    assert_fits(out, width, numbers)


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_nimc_and_fit_tables(width):
    from contend.native.bench.tables import fit_table, nimc_table

    row = {"source": "put", "rate_target": "2.00 GB/s", "runs": 3, "injected_GBps": 1.987, "injected_on_GBps": 3.912,
           "triad_GBps": 12.345, "slowdown_pct": 23.456, "slowdown_min": -1.25, "slowdown_max": 47.75,
           "paired_pct": 31.5, "paired_min": 12.25, "paired_max": 44.75, "paired_mean": 29.0, "paired_ci_low": 17.5,
           "paired_ci_high": 40.5, "cpu_share": 0.97, "loadavg": 3.25, "verified": False}
    text = rendered(nimc_table(pd.DataFrame([row]), period=1.0, on=0.5), width)
    assert_fits(text, width, ["3.91", "12.3", "+23.5", "-1.2..+47.8", "+31.5", "+29.0 [+17.5, +40.5]", "0.97",
                              "3.25", "NO"])
    # with the mitigations' columns and three-digit slowdowns: still tables at 80 columns, not a line per cell
    mitigated = pd.DataFrame([row, {**row, "source": "rma", "mitigation": "reserve-core", "rate_target": "1.5GB/s",
                                    "slowdown_min": -125.25, "slowdown_max": 147.75, "paired_ci_low": -117.5,
                                    "wall_slowdown_pct": -155.5}])
    mitigated.loc[0, ["mitigation", "rate_target", "wall_slowdown_pct"]] = ["none", "500MB/s", 1.5]
    text = rendered(nimc_table(mitigated, period=1.0, on=0.5), width)
    assert_fits(text, width, ["reserve-core", "-125.2..+147.8", "+29.0 [-117.5, +40.5]", "-155.5", "+1.5"])
    if width == 80:
        lines = text.splitlines()
        for header in (["source", "mitigation", "rate", "vs spin %", "min..max %"],
                       ["source", "mitigation", "rate", "median", "mean [95% CI]"],
                       ["source", "mitigation", "rate", "runs", "per wall s %", "CPU share", "checked"]):
            assert any(all(word in line for word in header) for line in lines), f"no table headed {header}"
    fit = pd.DataFrame({"bytes": [8, 65536], "regime": ["eager", "rendezvous"], "measured_ns": [1234.0, 56789.0],
                        "predicted_ns": [1300.0, 99999.0], "engine_ns": [1301.0, 100001.0], "error_pct": [5.3, 76.1]})
    assert_fits(rendered(fit_table(fit), width), width, ["1.234", "56.789", "99.999", "100.001", "+5.3", "+76.1"])


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")  # 10 trees: fast, not good
@pytest.mark.parametrize("width", WIDTHS)
def test_nimc_train_and_detect(cli, width):
    samples = str(DATA / "nimc_samples.parquet")
    code, out = cli(width, "nimc", "train", samples, "-o", "m.model", "--trees", "10")
    assert code == 0
    metrics = json.loads(Path("m.model.json").read_text())["metrics"]
    held = metrics["held_out"]
    assert_fits(out, width, [f"{metrics['oob_accuracy']:.3f}", f"{held['run_accuracy']:.3f}",
                             f"{held['slowdown_mae']:.2f}", "m.model.png"])
    code, out = cli(width, "nimc", "detect", "m.model", samples, "--json")
    summary = json.loads(out)
    code, out = cli(width, "nimc", "detect", "m.model", samples)
    assert code == 0
    numbers = [f"{summary['flagged']} of {summary['samples']}", f"{summary['slowdown_predicted_median']:+.1f}%"]
    numbers += [f"{run['slowdown_predicted']:+.1f}" for run in summary["runs"]]
    assert_fits(out, width, numbers)


@pytest.mark.parametrize("width", WIDTHS)
def test_predict_table(width):
    """`contend predict`'s table (its own test runs a short real ping-pong): runs of seconds whose range
    spans four orders of magnitude, predicted with noise; every number whole."""
    from contend.commands.predict import table

    def spread(median_ms, low_ms, high_ms):
        return {"median_ns": median_ms * 1e6, "min_ns": low_ms * 1e6, "max_ns": high_ms * 1e6, "runs": 5}

    summary = {"ranks": 1024, "untraced": spread(16434.804, 0.672, 16902.47), "traced": spread(15096.021, 515.9, 123456.789),
               "predicted": spread(116.29, 74.73, 216.49), "noisy": spread(5641.27, 2912.5, 7697.42),
               "tracing_overhead_pct": 4661.2, "error_pct": -99.3, "error_vs_traced_pct": -98.9, "error_noisy_pct": -65.7}
    text = rendered(table([("mpiexec -n 1024 ./app-halo 300 100000 1024 10", summary)]), width)
    assert_fits(text, width, ["1024", "16434.804", "0.672..16902.470", "515.900..123456.789", "116.290", "5641.270",
                              "2912.500..7697.420", "+4661.2", "-99.3", "-98.9", "-65.7"])


@pytest.mark.parametrize("width", WIDTHS)
def test_tune_quick(cli, width):
    code, out = cli(width, "tune", "--machine", "ib-congestion", "--quick", "--workers", "1", "-o", "tuned")
    assert code == 0
    tuned = json.loads(Path("tuned/tune.json").read_text())
    crct = [" ".join(f"[{c},{d}]" for c, d in pairs) for pairs in tuned["crct"].values()]
    assert_fits(out, width, [f"tokens per node: {tuned['tokens']}", *tuned["cct"], *crct])


@pytest.mark.parametrize("width", WIDTHS)
def test_whatif(cli, width):
    code, out = cli(width, "whatif", "--collective", "dissemination", "--ranks", "64", "--bytes", "8", "--vary",
                    "network=0.1x,10x", "--vary", "noise=none,random:1kHz:10us-40us", "--workers", "1", "-o", "w")
    assert code == 0
    runs = json.loads(Path("w/whatif.json").read_text())["runs"]
    assert_fits(out, width, [f"{round(run['makespan_ns']):,}" for run in runs]
                + [f"{run['relative']:.4g}x" for run in runs] + ["random:1kHz:10us-40us"])


@pytest.mark.parametrize("width", WIDTHS)
def test_noise_show_and_goal_check(cli, width):
    trace = "contend-noise 1\nresolution_ns 20\nthreshold_ns 200\nduration_ns 205147023\nrank 0\n" + "".join(
        f"{start} {length}\n" for start, length in ((759103, 29123), (4341659, 14842088), (20759138, 7787982)))
    Path("h.noise").write_text(trace + "end 3\n")
    code, out = cli(width, "noise", "show", "h.noise", "--json")
    assert code == 0, out
    summary = json.loads(out)
    code, out = cli(width, "noise", "show", "h.noise")
    assert code == 0
    assert_fits(out, width, [f"{summary['overhead_pct']:.3f}%", "1us - 10us", ">= 10ms"]
                + [str(r["count"]) for r in summary["distribution"]])
    assert cli(width, "goal", "write", "--collective", "binomial-bcast", "--ranks", "1024", "--bytes", "8",
               "-o", "b.goal")[0] == 0
    code, out = cli(width, "goal", "check", "b.goal", "--json")
    counts = json.loads(out)
    code, out = cli(width, "goal", "check", "b.goal")
    assert code == 0
    assert_fits(out, width, [f"{v:,}" for v in counts.values() if isinstance(v, int)])


@pytest.mark.parametrize("width", WIDTHS)
def test_trace_summary_and_findings(width, tmp_path):
    from contend.commands.trace import _summary
    from contend.experiments import tour
    from contend.report.findings import print_findings
    from contend.report.tables import _cell

    converted = SimpleNamespace(ranks=4, counts={"MPI_Isend": 123456, "MPI_Wait": 7890, "messages": 123456,
                                                 "dropped": 12},
                                clock=[{"error_ns": 2345.0}])
    text = rendered(_summary(converted, Path("trace-dir/records.parquet"), Path("trace-dir/regions.json")), width)
    assert_fits(text, width, ["123456", "7890", "12", "2.3 us"])
    findings = [tour.reference_answers(tmp_path), tour.deadlock_caught(tmp_path)]
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    print_findings(console, findings)
    numbers = [_cell(v) for f in findings for row in f.rows for v in row
               if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert numbers
    assert_fits(console.export_text(), width, numbers)
