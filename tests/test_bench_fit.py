"""`contend bench fit` on this machine (pip MPICH, 2 ranks, shared memory), briefly: the machine file is
whole, loads, holds physically sane parameters, and - when the engine is built - `contend sim` reads it
back to exactly the model's closed form: 2 (2o + L + (s-1) max(O, G)) per ping-pong round trip."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pandas as pd
import pytest

from contend.bench import loggp, sanity
from contend.bench.results import RunResult, read_run
from contend.cli import main

PS = 1000  # the engine keeps times in integer picoseconds


def engine_works() -> bool:
    try:
        from contend import _engine  # noqa: F401
    except ImportError:
        return False
    return True


def test_fit_writes_a_sane_machine_file(tmp_path, capsys):
    target = tmp_path / "here.toml"
    code = main(["bench", "fit", "-o", str(target), "--sizes", "1,1KiB,16KiB,1MiB", "--iters", "30",
                 "--repeats", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    machine = tomllib.loads(target.read_text())
    assert machine["machine"]["source"] == "measured"
    fit = machine["fit"]
    values = {k: float(machine["loggops"][k].removesuffix("ns")) for k in ("L", "o", "o_s", "o_r", "g", "G", "O")}
    assert values["L"] >= 0 and values["o_s"] >= 0 and values["o_r"] > 0 and values["g"] > 0
    assert values["o"] == pytest.approx((values["o_s"] + values["o_r"]) / 2, abs=0.002)
    assert 0 <= values["O"] <= values["G"]
    assert 1 / values["G"] * 1e9 < sanity.copy_bandwidth(1 << 20) * sanity.COPY_MARGIN  # bytes/s
    assert 1 <= machine["loggops"]["S"] <= 1 << 20
    assert fit["pingpong_bytes"] == [1, 1024, 16384, 1 << 20]
    assert all(t > 0 for t in fit["pingpong_measured_ns"])
    for suffix in (".loggp.parquet", ".pingpong.parquet"):
        run = read_run(target.with_suffix(suffix))
        assert not sanity.check_accounting(run) and not sanity.check_rows(run)
    assert target.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert "ping-pong round trip: measured vs the fitted model" in out
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    if engine_works():
        assert "pingpong_engine_ns" in fit and "predictions by contend sim" in out


@pytest.mark.skipif(not engine_works(), reason="`contend sim` is not built (make build)")
def test_the_engine_reads_a_fitted_file_to_the_closed_form(tmp_path):
    netgauge = pd.DataFrame({"bytes": [1, 1 << 20], "o_s_ns": [150.0, 150.0], "o_r_ns": [901.0, 901.0],
                             "gap_ns": [800.0, 90000.0], "prtt1_ns": [3000.0, 260000.0]})
    fit = loggp.LogGPFit(L=347.25, o_s=150.0, o_r=901.0, g=800.0, G=0.1234, O=0.02, S=8191, step=(4096, 8192),
                         netgauge=netgauge)
    sizes = [1, 1024, 8191, 8192, 65536, 1 << 20]
    rows = pd.DataFrame({"bytes": sizes, "t_p50_ns": fit.round_trip(sizes) / 2})
    table = loggp.compare(fit, RunResult(meta={}, results=rows, tallies=pd.DataFrame()))
    path = loggp.write_machine(loggp.machine_toml(fit, table, {"hosts": ["h"]}), tmp_path / "m.toml")
    engine = loggp.engine_round_trips(path, sizes)
    assert engine is not None
    rounded = dict(o=round(fit.o * PS) / PS, L=round(fit.L * PS) / PS, G=round(fit.G * PS) / PS)
    for size, simulated in zip(sizes, engine):
        expected = 2 * (2 * rounded["o"] + rounded["L"] + (size - 1) * rounded["G"])
        assert simulated == pytest.approx(expected, abs=0.002), size
    out = subprocess.run([sys.executable, "-m", "contend.cli", "sim", "--collective", "pingpong", "--ranks", "2",
                          "--bytes", "1", "--machine", str(path), "--json"], capture_output=True, text=True)
    assert json.loads(out.stdout)["params"]["S"] == 8191
