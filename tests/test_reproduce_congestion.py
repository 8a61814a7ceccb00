"""`contend reproduce congestion --quick`: every finding of Luo et al. 2012 reappears, with the report's files."""

from __future__ import annotations

import json

from contend.cli import main


def test_quick_reproduction_writes_its_report(tmp_path, capsys):
    assert main(["reproduce", "congestion", "--quick", "-o", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert all(f["ok"] for f in results["findings"]), [f["title"] for f in results["findings"] if not f["ok"]]
    for name in ("index.html", "figure1.png", "figure2.png", "alltoall.png"):
        assert (tmp_path / name).stat().st_size > 0
    ib = results["alltoall"]["ib-congestion"]["1024"]
    assert ib["overlapped"] / ib["overlapped + ITT (tuned)"] >= 1.7
    assert results["tune"]["ib-congestion"]["cct"]["1024"] == 20
    for name in ("ib-congestion", "gemini-congestion"):
        loop = results["closed_loop"][name]["1024"]
        assert loop["adaptive_ns"] <= 1.1 * loop["tuned_ns"] < loop["untuned_ns"]
    assert "Closed loop" in (tmp_path / "index.html").read_text()
