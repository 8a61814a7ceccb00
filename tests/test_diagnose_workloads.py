"""`contend diagnose` on simulated workloads with known contention (experiments/onesided.py): a moving hot
spot read with gets, an incast, an uncontended control, and the Global-Arrays-like case study; each
checked against the engine's own per-message split (the truth)."""

from __future__ import annotations

import numpy as np
import pytest

from contend.analysis.diagnose import diagnose
from contend.analysis.diagnose_input import load_records
from contend.experiments import onesided


def agrees_with_truth(diagnosis) -> dict[str, float]:
    """Total and initiator/target split within 10% of the engine's total; returns the truth."""
    truth = diagnosis.truth()
    total = sum(truth.values())
    assert abs(diagnosis.contention - total) <= 0.1 * total
    split = diagnosis.split()
    for end in ("initiator", "target"):
        assert abs(split[end] - truth[end]) <= 0.1 * total, (end, split, truth)
    return truth


def test_moving_hot_spot_is_target_contention_at_the_moving_owner():
    workload = onesided.hot_spot(ranks=8, rounds=8)
    result, diagnosis = onesided.diagnose_workload(workload)
    gets = diagnosis.messages
    assert len(gets) == len(result.records) // 2 == 7 * 8, "each request paired with its reply into one get"
    assert (gets["kind"] == "get").all() and (gets["bytes"] == 4096).all()
    truth = agrees_with_truth(diagnosis)
    assert truth["target"] > 0.9 * sum(truth.values()) > 0
    sites = diagnosis.call_sites()
    assert list(sites["call_site"]) == ["read_hot (hotspot.c:31)"] and sites["share"][0] == 1.0
    # The hot target moves: rank k's data server (rank 8 + k) is the hottest in round k's time.
    grid = diagnosis.hot_targets()
    hottest = {int(np.argmax(column)) for column in grid.T if column.max() > 0}
    assert len(hottest) >= 4 and hottest <= set(range(8, 16))


def test_incast_matches_the_engine_on_records_and_as_a_trace(tmp_path):
    workload = onesided.incast(ranks=8, rounds=4)
    result, diagnosis = onesided.diagnose_workload(workload)
    truth = agrees_with_truth(diagnosis)
    assert truth["target"] == sum(truth.values()) > 0
    assert list(diagnosis.targets().index) == [0]
    assert diagnosis.call_sites()["call_site"][0] == "send_result (incast.c:42)"
    # The same run seen as a real trace sees it (posted / completed only): the trace method agrees.
    path = tmp_path / "incast-trace.parquet"
    onesided.trace_view(result, path, workload.sites)
    loaded = load_records(path)
    traced = diagnose(loaded.frame, loaded.metadata["params"], loaded.num_ranks, source="trace")
    assert traced.contention == pytest.approx(sum(truth.values()), rel=1e-9)
    assert traced.split()["target"] == pytest.approx(truth["target"], rel=1e-9)
    assert traced.call_sites()["call_site"][0] == "send_result (incast.c:42)"


def test_blocking_receive_loop_incast_as_a_trace_is_contention_not_sync(tmp_path):
    """Rank 0 receives with blocking receives one after the other: in the trace each receive is posted
    late, but only because rank 0 was still in the previous one, so the trace method counts the wait
    as contention, as the engine does."""

    workload = onesided.incast(ranks=8, rounds=2, blocking=True)
    result, diagnosis = onesided.diagnose_workload(workload)
    truth = agrees_with_truth(diagnosis)
    path = tmp_path / "loop.parquet"
    onesided.trace_view(result, path, workload.sites)
    frame = load_records(path).frame
    # as a tracer sees a loop of MPI_Recv: each receive is called when the previous one returns
    receives = frame[frame["kind"] == "irecv"].sort_values("completed")
    frame.loc[receives.index[1:], "posted"] = receives["completed"].to_numpy()[:-1]
    frame.loc[receives.index, "kind"] = "recv"
    assert (frame.loc[receives.index[1:], "posted"] > 0).all()
    traced = diagnose(frame, result.params, result.num_ranks, source="trace")
    ops = traced.messages
    assert (ops["recv_posted"] > ops["start"] + ops["ideal"]).sum() >= 10, "most receives were posted late"
    assert traced.contention == pytest.approx(truth["target"], rel=0.1) and traced.sync < 0.01 * traced.contention
    assert traced.split()["target"] == pytest.approx(traced.contention)


def test_hot_spot_as_a_trace_totals_the_same(tmp_path):
    """Seen as two-sided messages (requests and replies apart), the total still agrees with the truth;
    the replies' contention sits at their sender, the hot data server."""
    workload = onesided.hot_spot(ranks=6, rounds=6)
    result, diagnosis = onesided.diagnose_workload(workload)
    path = tmp_path / "hot-trace.parquet"
    onesided.trace_view(result, path, workload.sites)
    loaded = load_records(path)
    traced = diagnose(loaded.frame, loaded.metadata["params"], loaded.num_ranks, source="trace")
    total = sum(diagnosis.truth().values())
    assert total > 0 and traced.contention == pytest.approx(total, rel=1e-9)
    servers = traced.messages[traced.messages["src"] >= 6]
    assert servers["contention"].sum() > 0.5 * total


def test_fan_out_is_initiator_and_mixed_splits_by_call_site():
    fan = onesided.diagnose_workload(onesided.fan_out(ranks=8))[1]
    truth = agrees_with_truth(fan)
    assert truth["initiator"] == sum(truth.values()) > 0
    assert fan.split()["initiator"] == pytest.approx(fan.contention)
    mixed = onesided.diagnose_workload(onesided.mixed(ranks=8, rounds=4))[1]
    truth = agrees_with_truth(mixed)
    assert min(truth.values()) > 0.2 * sum(truth.values()), "both ends contend"
    sites = mixed.call_sites().set_index("call_site")
    assert sites.loc["prefetch_all (fanout.c:20)", "initiator"] > 0.9 * sites.loc["prefetch_all (fanout.c:20)", "contention"]
    hot = sites.loc["read_hot (hotspot.c:31)"]
    assert hot["target"] == pytest.approx(hot["contention"]) and hot["contention"] > 0


def test_control_shows_almost_none():
    result, diagnosis = onesided.diagnose_workload(onesided.control(ranks=8, rounds=8))
    assert sum(diagnosis.truth().values()) < 1e-6
    assert diagnosis.share(diagnosis.contention) < 0.001
    assert len(diagnosis.messages) == 64


@pytest.mark.parametrize("chunk", [1, 4])
def test_global_array_block_cyclic_lowers_contention_and_names_the_get_site(chunk):
    blocked = onesided.diagnose_workload(onesided.global_array(ranks=8, layout="blocked", size=16384))[1]
    cyclic = onesided.diagnose_workload(onesided.global_array(ranks=8, layout="cyclic", chunk=chunk,
                                                              size=16384))[1]
    for diagnosis in (blocked, cyclic):
        agrees_with_truth(diagnosis)
        assert diagnosis.call_sites()["call_site"][0] == onesided.GA_SITE
    assert blocked.split()["target"] >= 0.9 * blocked.contention
    assert cyclic.contention < 0.7 * blocked.contention
    assert cyclic.run_time < blocked.run_time


def test_block_ownership():
    # 16 blocks on 4 ranks: blocked = 4 contiguous each; block-cyclic deals chunks round-robin
    assert [onesided.owner(b, 16, 4, "blocked") for b in range(16)] == [r for r in range(4) for _ in range(4)]
    assert [onesided.owner(b, 16, 4, "cyclic") for b in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [onesided.owner(b, 16, 4, "cyclic", chunk=2) for b in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_recommendations_follow_the_findings_with_their_numbers():
    import contend

    hot = onesided.diagnose_workload(onesided.global_array(ranks=8, layout="blocked", size=16384))[1]
    advice = hot.recommendations()[0]
    assert "block-cyclic" in advice.advice and onesided.GA_SITE in advice.advice
    assert "100% of the contention" in advice.evidence and "moves over the run" in advice.evidence
    incast = onesided.diagnose_workload(onesided.incast())[1]
    assert incast.recommendations()[0].advice.startswith("Rank 0 is a fixed hot target")
    quiet = onesided.diagnose_workload(onesided.control())[1]
    assert quiet.recommendations()[0].advice.startswith("Contention is negligible")
    assert "0.00% of ranks x run time" in quiet.recommendations()[0].evidence
    # An outcast (scatter): the root's queue of 8 sends is initiator contention; throttle to half
    result = contend.simulate(collective="scatter", ranks=9, bytes=100_000, L=1000, o=1000, g=500, G=1,
                              records=True)
    outcast = diagnose(result.records, result.params, result.num_ranks)
    advice = outcast.recommendations()[0]
    assert advice.advice.startswith("Initiator contention: throttle outstanding operations")
    assert "`contend throttle --policy token --tokens 3 -- mpiexec -n 9 ./app`" in advice.advice, advice.advice
    assert "rank 0 has 100% of it" in advice.evidence


def test_cli_names_sites_from_metadata_or_a_sites_file(tmp_path, capsys, monkeypatch):
    import json

    from contend.cli import main
    from contend.simulation.records import write_records_parquet

    monkeypatch.setenv("COLUMNS", "250")
    workload = onesided.hot_spot(ranks=4, rounds=4)
    result = onesided.simulate_workload(workload)
    bare = tmp_path / "hot.parquet"
    write_records_parquet(result.record_columns, bare, {"params": result.params})
    assert main(["diagnose", str(bare)]) == 0
    assert "read_hot" not in capsys.readouterr().out, "without names: send op N"
    sites = tmp_path / "sites.json"
    sites.write_text(json.dumps(workload.sites))
    out_json = tmp_path / "d.json"
    assert main(["diagnose", str(bare), "--sites", str(sites), "--json", str(out_json)]) == 0
    assert "read_hot (hotspot.c:31)" in capsys.readouterr().out
    summary = json.loads(out_json.read_text())
    assert summary["call_sites"][0]["kind"] == "get" and summary["messages"] == 12
    bad = tmp_path / "bad.json"
    bad.write_text('[{"tag": 10, "site": "x", "kind": "get"}]')
    assert main(["diagnose", str(bare), "--sites", str(bad)]) == 2
    assert "bad.json: contend.sites entry 'x' is a get without an int reply_tag" in capsys.readouterr().err
    bad.write_text("{")
    assert main(["diagnose", str(bare), "--sites", str(bad)]) == 2
    assert "bad.json: not JSON" in capsys.readouterr().err


def test_reproduce_diagnose_quick(tmp_path, capsys):
    import json

    from contend.cli import main

    out = tmp_path / "report"
    assert main(["reproduce", "diagnose", "--quick", "-o", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    study = results["case_study"]
    assert study["blocked"]["top_site"] == onesided.GA_SITE
    assert study["block-cyclic 1"]["contention_ratio"] < 0.5 and study["block-cyclic 1"]["run_time_ratio"] < 1
    assert all(f["ok"] for f in results["findings"])
    assert {"index.html", "case_study.png", "ga-blocked.parquet"} <= {p.name for p in out.iterdir()}
    assert (out / "ga-blocked" / "index.html").is_file()
