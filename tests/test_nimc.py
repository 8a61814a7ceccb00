"""Network-induced memory contention: the native ``nimc`` pattern on a short real run (data checks and
invariants, never speeds), the sample bookkeeping, and the random-forest detector on synthetic and
recorded samples (tests/data/nimc_samples.parquet: a real sweep of this machine, kept small), with its
error paths."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from contend.analysis import nimc as detector_module
from contend.native.bench import nimc
from contend.cli import main
from contend.errors import UserError

RECORDED = __import__("pathlib").Path(__file__).parent / "data" / "nimc_samples.parquet"
TRIAD_PASS_BYTES = 3 * 8 * (1 << 22)


# ---------- the real bench ----------

@pytest.fixture(scope="module")
def short_sweep(tmp_path_factory):
    """One round of every source at an unpaced and a paced rate, half a second each."""
    out = tmp_path_factory.mktemp("nimc") / "sweep"
    code = main(["bench", "nimc", "--sources", "spin,memcpy,put,tcp", "--rates", "max,1GB", "--repeats", "1",
                 "--duration", "0.6", "--interval", "0.1", "--period", "0.3", "--region", "64MiB", "-o", str(out)])
    return code, out


def test_short_real_run_moves_every_byte_it_claims(short_sweep):
    code, out = short_sweep
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["format"] == "contend-nimc-sweep"
    runs = {run["label"]: run for run in summary["runs"]}
    assert set(runs) == {"none", "spin", "memcpy@max", "memcpy@1GB/s", "put@max", "put@1GB/s", "tcp@max",
                         "tcp@1GB/s"}
    for label, run in runs.items():
        assert run["triad_verified"], label  # the triad's last pass recomputed element by element
        assert run["data_verified"] and run["sent_bytes"] == run["received_bytes"], label  # counted where it landed
        assert run["sent_bytes"] % run["chunk"] == 0, label
        assert run["binned_bytes"] <= run["sent_bytes"], label
        if run["source"] in ("put", "memcpy"):  # counted as written: every byte falls in a bin of the run
            assert run["binned_bytes"] == run["sent_bytes"], label
        if run["rate_target_Bps"] > 0:  # pacing never runs ahead of the rate in the bursts (an invariant)
            bursts_s = 2 * run["on_s"]  # two bursts of 0.15 s in 0.6 s
            assert run["sent_bytes"] <= run["rate_target_Bps"] * bursts_s + run["chunk"], label
    for label in ("none", "spin"):
        assert runs[label]["sent_bytes"] == 0
    for label in ("put@max", "tcp@max", "memcpy@max"):
        assert runs[label]["sent_bytes"] > 0, label
    assert runs["none"]["hardware_counters"]  # says what it found, counters or the reason there are none


def test_short_real_run_samples_are_consistent(short_sweep):
    _, out = short_sweep
    samples = nimc.read_samples(out)
    assert len(samples) > 0 and samples["run"].nunique() == 8
    assert (samples["triad_bytes"] == samples["passes"] * TRIAD_PASS_BYTES).all()
    assert (samples.groupby("run").size() <= 0.6 / 0.1).all()
    assert set(samples["phase"]) <= {"on", "off", "edge"}
    # between bursts at most the chunk in flight when a burst ended lands (put, memcpy: written by the
    # interferer itself; tcp drains its socket buffers after the burst, so it is not bounded this way)
    between = samples[(samples["phase"] == "off") & samples["source"].isin(["put", "memcpy"])]
    assert (between["injected_bytes"] <= 1 << 20).all()
    assert np.allclose(samples.groupby("run")["triad_rel_max"].max(), 1.0)  # against its own best so far
    assert np.allclose(samples["triad_Bps"], samples["triad_bytes"] / samples["duration_ns"] * 1e9)
    for column in [c for c in samples.columns if c.startswith("cpu_") and c[4:].split("_")[0] in ("all", "triad", "other")]:
        assert samples[column].between(0, 1).all(), column
    assert (samples["cpu_share"] <= 1.05).all() and (samples["cpu_share"] > 0).all()
    # labels: NiMC exactly where network-like bytes landed; slowdown 0 by definition for the baseline
    assert set(samples.loc[samples["nimc"], "source"]) <= {"put", "tcp"}
    assert (samples.loc[samples["nimc"], "phase"] == "on").all()
    assert not samples.loc[samples["source"].isin(["none", "spin", "memcpy"]), "nimc"].any()
    baseline = samples[samples["source"] == "spin"]  # the control is the baseline when the sweep has it
    assert abs(baseline["slowdown_pct"].median()) < 1e-9
    # the per-run files hold the same samples
    assert sum(len(pd.read_parquet(f)) for f in (out / "runs").glob("*.parquet")) == len(samples)
    table = pd.read_parquet(out / "slowdown.parquet")
    assert list(table["source"])[:2] == ["none", "spin"] and table["verified"].all()
    assert (out / "slowdown.png").stat().st_size > 0


def test_short_real_run_times_the_core_beside_every_sample(short_sweep):
    _, out = short_sweep
    samples = nimc.read_samples(out)
    assert (samples["core_rate"] > 0).all() and (samples["core_ns"] > 0).all()
    # four rounds take at least four times the fastest one (32768 iterations at core_rate)
    assert (samples["core_ns"] >= 4 * 32768 / samples["core_rate"] * 1e9 * (1 - 1e-9)).all()
    assert np.allclose(samples["triad_vs_core"],
                       samples["triad_cpu_Bps"] / samples["core_rate"])
    # the kernel runs between samples, never inside one: each sample starts after the previous ends
    for _, run in samples.groupby("run"):
        ends = (run["start_ns"] + run["duration_ns"]).to_numpy()[:-1]
        assert (run["start_ns"].to_numpy()[1:] >= ends).all()


def test_small_chunks_lapping_a_small_region_all_land(tmp_path):
    """Stress: 4 KiB chunks, unpaced, into a 1 MiB region that each source laps many times; every chunk
    is checked where it landed (the last lap's stamps, the TCP receiver's sequence) and none is lost."""
    out = tmp_path / "stress"
    assert main(["bench", "nimc", "--sources", "memcpy,put,tcp", "--rates", "max", "--repeats", "1",
                 "--duration", "0.3", "--period", "0", "--chunk", "4KiB", "--region", "1MiB", "-o", str(out)]) == 0
    runs = {run["source"]: run for run in json.loads((out / "summary.json").read_text())["runs"]}
    for source in ("memcpy", "put", "tcp"):
        run = runs[source]
        assert run["verified"] and run["sent_bytes"] == run["received_bytes"], source
        assert run["sent_bytes"] > 4 * (1 << 20), source  # lapped the region: the stamp check saw wrap-around


def test_the_mitigations_act_on_the_rma_source_through_the_library(tmp_path):
    """rma runs under libcontend-throttle.so: unmitigated every byte lands unpaced; with throttle the
    library paced every chunk and the bytes that landed are within the cap (the cap's own bound: at most
    cap x duration, plus the chunk in flight); with reserve-core both ranks ran on the CPUs left, which
    leave out the reserved one. Every chunk checked where it landed."""
    out, cap, duration, chunk = tmp_path / "mitigated", 50_000_000, 1.0, 1 << 20
    assert main(["bench", "nimc", "--sources", "rma", "--rates", "max", "--repeats", "1", "--duration", str(duration),
                 "--period", "0", "--region", "64MiB", "--mitigations", "none,throttle,reserve-core",
                 "--memory-throttle", "50MB/s", "-o", str(out)]) == 0
    runs = {run["mitigation"]: run for run in json.loads((out / "summary.json").read_text())["runs"]
            if run["source"] == "rma"}
    for run in runs.values():
        assert run["verified"] and run["sent_bytes"] == run["received_bytes"] > 0, run
    assert runs["none"]["library_paced_ops"] == 0 and runs["none"]["library_reserved_cpu"] == -1
    throttled = runs["throttle"]
    assert throttled["memory_throttle_Bps"] == cap and throttled["library_paced_bytes"] == throttled["sent_bytes"]
    assert throttled["library_min_slack_ns"] is None or throttled["library_min_slack_ns"] >= 0
    assert throttled["sent_bytes"] <= cap * (duration + 0.05) + chunk  # + the 50 ms common start
    reserved = runs["reserve-core"]
    if len(os.sched_getaffinity(0)) >= 2:
        cpu = reserved["library_reserved_cpu"]
        assert cpu == max(os.sched_getaffinity(0)) and str(cpu) not in ",".join(reserved["library_cpus"]).split(",")
        assert reserved["triad_cpu"] != cpu and reserved["interferer_cpu"] != cpu


def test_bench_run_points_nimc_to_its_own_action(capsys):
    assert main(["bench", "run", "nimc"]) == 2
    assert "contend bench nimc" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--rates", "fast"], "--rates: bad rate 'fast'"),
    (["--sources", "rdma"], "--sources: unknown source 'rdma'"),
    (["--duration", "0.1", "--interval", "0.5"], "--interval (0.5 s) is longer than --duration"),
    (["--chunk", "3000", "--region", "64MiB"], "--chunk 3000 must be at least 64 bytes and divide --region"),
    (["--repeats", "0"], "--repeats"),
    (["--period", "1", "--on", "2"], "--on (2 s) is longer than --period (1 s)"),
    (["--period", "0.1"], "--period (0.1 s) must hold at least two samples"),
    (["--sources", "rma", "--mitigations", "offload"], "--mitigations: unknown mitigation 'offload'"),
    (["--sources", "put", "--mitigations", "reserve-core"], "--mitigations: they act on the rma source only"),
    (["--sources", "rma", "--mitigations", "throttle"], "--memory-throttle: give it with the throttle mitigation"),
    (["--sources", "rma", "--memory-throttle", "1GB/s"], "--memory-throttle: give it with the throttle mitigation"),
    (["--sources", "rma", "--mitigations", "throttle", "--memory-throttle", "0B/s"],
     "--memory-throttle: a bandwidth must be positive"),
])
def test_bench_nimc_rejects_bad_arguments(capsys, tmp_path, argv, message):
    assert main(["bench", "nimc", "-o", str(tmp_path / "x")] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x" / "summary.json").exists()


def test_native_pattern_rejects_bad_modes_and_rank_counts():
    from contend.native.bench.runner import run_benchmark

    with pytest.raises(UserError, match="unknown --mode 'rdma' for nimc"):
        run_benchmark("nimc", ranks=2, options={"mode": "rdma"})
    with pytest.raises(UserError, match="exactly 2 ranks"):
        run_benchmark("nimc", ranks=3, options={"mode": "none", "duration": "0.05"})
    with pytest.raises(UserError, match="must be at least 64 bytes and divide --region"):
        run_benchmark("nimc", ranks=2, sizes=[3000], options={"mode": "put", "duration": "0.05"})


# ---------- bookkeeping ----------

def test_injected_bytes_are_attributed_to_the_sample_holding_each_bin():
    intervals = pd.DataFrame({"start_ns": [0.0, 3e6], "duration_ns": [3e6, 2e6]})
    bins = {"bin_ns": 1e6, "bins": [1, 2, 4, 8, 16, 32]}
    assert list(nimc._injected_per_interval(intervals, bins)) == [7, 24]  # bins 0-2, bins 3-4; bin 5 after


def test_slowdown_is_against_the_baseline_of_the_same_round():
    def run(r, source, bw, rate=0.0):
        return {"round": r, "source": source, "rate_target_Bps": rate, "triad_cpu_Bps": bw, "triad_Bps": bw,
                "on_cpu_Bps": bw, "injected_Bps": rate, "cpu_share": 1.0, "loadavg_1min": 1.0, "verified": True}
    # spin is the baseline; none only where a round has no spin
    table = nimc.slowdown_table([run(0, "spin", 20e9), run(0, "none", 5e9), run(0, "put", 16e9, 1e9),
                                 run(1, "none", 10e9), run(1, "put", 8e9, 1e9)])
    put = table[table["source"] == "put"].iloc[0]
    assert put["runs"] == 2 and put["slowdown_pct"] == pytest.approx(25.0)  # 20/16 and 10/8: both +25%
    assert put["bw_loss_pct"] == pytest.approx(20.0) and put["triad_GBps"] == pytest.approx(12.0)


# ---------- the detector ----------

def synthetic(runs: int = 16, per_run: int = 12, seed: int = 0) -> pd.DataFrame:
    """Samples where NiMC shows in the triad's bandwidth and the other core's softirq; noise elsewhere."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(runs):
        present = run % 2 == 1
        for _ in range(per_run):
            row = {f: rng.normal(0.5, 0.1) for f in detector_module.FEATURE_SETS["node"]}
            row["triad_cpu_Bps"] = rng.normal(18e9 if present else 23e9, 0.8e9)
            row["cpu_other_softirq"] = rng.normal(0.2 if present else 0.0, 0.03)
            row.update(run=run, source="put" if present else "spin", nimc=present, phase="on",
                       slowdown_pct=100 * (23e9 / row["triad_cpu_Bps"] - 1))
            rows.append(row)
    return pd.DataFrame(rows)


def test_detector_separates_synthetic_classes_on_held_out_runs():
    frame = synthetic()
    detector = detector_module.train(frame, test_fraction=0.25, trees=60, seed=2)
    held = detector.metrics["held_out"]
    assert held["runs"] == 4 and held["accuracy"] == 1.0 and held["run_accuracy"] == 1.0
    assert detector.metrics["oob_accuracy"] > 0.95 and held["slowdown_r2"] > 0.8
    importance = detector.importances()["classifier (NiMC present)"]
    assert set(sorted(importance, key=importance.get)[-2:]) == {"triad_cpu_Bps", "cpu_other_softirq"}
    assert sum(importance.values()) == pytest.approx(1.0)


def test_split_never_puts_one_run_in_both_halves():
    frame = synthetic(runs=10)
    train_mask, test_mask = detector_module.split_runs(frame, 0.3, seed=5)
    assert not set(frame.run[train_mask]) & set(frame.run[test_mask])
    assert set(frame.nimc[test_mask]) == {True, False}


def test_model_round_trip_predicts_the_same(tmp_path):
    frame = synthetic()
    detector = detector_module.train(frame, test_fraction=0, trees=30)
    path = detector_module.save(detector, tmp_path / "m.model")
    schema = json.loads((tmp_path / "m.model.json").read_text())
    assert schema["format"] == "contend-nimc-model" and schema["features"] == detector.features
    loaded = detector_module.load(path)
    assert loaded.predict(frame).equals(detector.predict(frame))


def test_few_trees_say_their_oob_caveat_in_the_metrics_not_on_stderr(tmp_path, capsys):
    with warnings.catch_warnings(record=True) as caught:  # pytest would record a warning, not print it
        warnings.simplefilter("always")
        assert main(["nimc", "train", str(RECORDED), "-o", str(tmp_path / "m.model"), "--trees", "10",
                     "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and not [str(w.message) for w in caught if "OOB" in str(w.message)]
    assert "use more --trees" in json.loads(out)["metrics"]["oob_caveat"]
    assert main(["nimc", "train", str(RECORDED), "-o", str(tmp_path / "n.model"), "--trees", "100", "--json"]) == 0
    assert "oob_caveat" not in json.loads(capsys.readouterr().out)["metrics"]


def test_samples_of_no_run_are_refused_not_left_out_of_the_summary(tmp_path, capsys, fails_cleanly):
    model = tmp_path / "m.model"
    assert main(["nimc", "train", str(RECORDED), "-o", str(model), "--trees", "20", "--json"]) == 0
    capsys.readouterr()
    samples = pd.read_parquet(RECORDED)
    samples["run"] = samples["run"].astype(object)
    samples.loc[samples.index[:3], "run"] = None
    samples.to_parquet(tmp_path / "s.parquet")
    fails_cleanly(["nimc", "detect", str(model), str(tmp_path / "s.parquet")],
                  r"s\.parquet: column 'run' has 3 missing value\(s\)$")


def test_recorded_sweep_trains_and_detects_through_the_cli(tmp_path, capsys):
    model = tmp_path / "here.model"
    assert main(["nimc", "train", str(RECORDED), "-o", str(model), "--trees", "100", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["format"] == "contend-nimc-model" and scores["metrics"]["held_out"]["runs"] >= 2
    assert 0 <= scores["metrics"]["oob_accuracy"] <= 1 and (tmp_path / "here.model.png").stat().st_size > 0
    predictions = tmp_path / "p.parquet"
    assert main(["nimc", "detect", str(model), str(RECORDED), "-o", str(predictions), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    samples = pd.read_parquet(RECORDED)
    assert summary["samples"] == len(samples) == len(pd.read_parquet(predictions))
    assert {r["run"] for r in summary["runs"]} == set(samples["run"])
    assert 0 <= summary["accuracy"] <= 1
    # the tables people read
    assert main(["nimc", "detect", str(model), str(RECORDED)]) == 0
    out = capsys.readouterr().out
    assert "samples flagged as NiMC" in out and "tcp" in out
    assert main(["nimc", "train", str(RECORDED), "-o", str(model), "--trees", "30", "--feature-set", "victim"]) == 0
    out = capsys.readouterr().out
    assert "out-of-bag accuracy" in out and "held-out accuracy, per run" in out and "triad_rel_max" in out


# ---------- bad inputs: one line naming the file, exit 2 ----------

def _write(frame: pd.DataFrame, path) -> str:
    frame.to_parquet(path)
    return str(path)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.iloc[0:0], "no samples to train on"),
    (lambda f: f.assign(nimc=False), "every sample has NiMC absent"),
    (lambda f: f.drop(columns="nimc"), "no 'nimc' column"),
    (lambda f: f.assign(nimc=np.where(f.nimc, "yes", "maybe")), "must be true/false"),
    (lambda f: f.drop(columns="cpu_other_softirq"), "missing feature column(s) cpu_other_softirq"),
    (lambda f: f.assign(triad_cpu_Bps=np.nan), "'triad_cpu_Bps' has missing or infinite values"),
])
def test_train_rejects_bad_data(tmp_path, capsys, change, message):
    data = _write(change(synthetic()), tmp_path / "bad.parquet")
    assert main(["nimc", "train", data, "-o", str(tmp_path / "m.model"), "--trees", "10"]) == 2
    err = capsys.readouterr().err
    assert message in err and data in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.model").exists()


def test_data_without_the_core_kernel_trains_without_its_features(tmp_path, capsys):
    old = pd.read_parquet(RECORDED)
    assert "core_rate" not in old  # recorded before the core kernel existed
    for feature_set in detector_module.FEATURE_SETS:
        chosen = detector_module.select_features(old, feature_set)
        assert not set(chosen) & set(detector_module.OPTIONAL)
    assert {"core_rate", "triad_vs_core"} <= set(detector_module.select_features(synthetic(), "victim"))
    # asked for by name, a missing column is an error naming it
    assert main(["nimc", "train", str(RECORDED), "--features", "triad_cpu_Bps,triad_vs_core",
                 "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "missing feature column(s) triad_vs_core" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m").exists()


def test_train_rejects_unknown_features_and_too_few_runs(tmp_path, capsys):
    data = _write(synthetic(runs=3), tmp_path / "few.parquet")
    assert main(["nimc", "train", data, "--features", "triad_cpu_Bps,l2_misses", "-o", str(tmp_path / "m")]) == 2
    assert "unknown feature(s) l2_misses" in capsys.readouterr().err
    assert main(["nimc", "train", data, "-o", str(tmp_path / "m")]) == 2
    assert "needs at least 2 runs with NiMC present" in capsys.readouterr().err
    assert main(["nimc", "train", str(tmp_path / "absent.parquet"), "-o", str(tmp_path / "m")]) == 2
    assert "absent.parquet: no such file" in capsys.readouterr().err


def test_detect_rejects_foreign_models_and_missing_features(tmp_path, capsys):
    import skops.io

    frame = synthetic()
    data = _write(frame, tmp_path / "s.parquet")
    model = detector_module.save(detector_module.train(frame, test_fraction=0, trees=30), tmp_path / "ok.model")
    not_ours = {
        "text.model": lambda p: p.write_text("hello"),
        "pickle.model": lambda p: p.write_bytes(pickle.dumps({"format": "contend-nimc-model", "version": 2})),
        "dict.model": lambda p: skops.io.dump({"some": "dict"}, p),
        "old.model": lambda p: skops.io.dump({"format": "contend-nimc-model", "version": 99}, p),
        "alien.model": lambda p: skops.io.dump(
            {"format": "contend-nimc-model", "version": 2, "features": ["l3_misses"]}, p),
        "swapped.model": lambda p: skops.io.dump({**skops.io.load(model, trusted=detector_module._TRUSTED),
                                                   "classifier": "a string"}, p),
    }
    expected = {"text.model": "not a contend nimc model", "pickle.model": "not a contend nimc model (BadZipFile",
                "dict.model": "no 'contend-nimc-model' header", "old.model": "version 99",
                "alien.model": "does not know: l3_misses", "swapped.model": "the classifier is not a RandomForestClassifier"}
    for name, make in not_ours.items():
        path = tmp_path / name
        make(path)
        assert main(["nimc", "detect", str(path), data]) == 2
        err = capsys.readouterr().err
        assert expected[name] in err and str(path) in err and len(err.strip().splitlines()) == 1, err
    missing = _write(frame.drop(columns=["triad_cpu_Bps"]), tmp_path / "missing.parquet")
    assert main(["nimc", "detect", str(model), missing]) == 2
    err = capsys.readouterr().err
    assert "missing.parquet: missing feature column(s) the model needs: triad_cpu_Bps" in err
    assert main(["nimc", "detect", str(model), str(tmp_path / "ok.model.json")]) == 2
    assert "ok.model.json: not a readable Parquet file of samples" in capsys.readouterr().err
    # the slowdown is summarised per run: a column of text is one line, not a traceback (found by the fuzz)
    text = _write(frame.assign(slowdown_pct=frame["slowdown_pct"].astype(str)), tmp_path / "text.parquet")
    assert main(["nimc", "detect", str(model), text]) == 2
    assert "text.parquet: column 'slowdown_pct' is not numeric" in capsys.readouterr().err


class _Marker:
    """Unpickling this creates a file: what a hostile model file would do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_model_file_is_loaded_without_running_any_code(tmp_path, capsys):
    """A pickle whose loading would create a marker file, alone or inside a skops file that asks to
    rebuild it: refused (exit 2, one line), and the marker never appears."""
    import zipfile

    import skops.io

    data = _write(synthetic(), tmp_path / "s.parquet")
    marker = tmp_path / "marker"
    hostile = tmp_path / "hostile.model"
    hostile.write_bytes(pickle.dumps({"format": "contend-nimc-model", "version": 2, "x": _Marker(marker)}))
    assert main(["nimc", "detect", str(hostile), data]) == 2
    assert "not a contend nimc model" in capsys.readouterr().err
    # skops keeps objects it cannot describe as pickles; it must refuse them rather than unpickle them
    wrapped = tmp_path / "wrapped.model"
    skops.io.dump({"format": "contend-nimc-model", "version": 2, "x": _Marker(marker)}, wrapped)
    assert zipfile.is_zipfile(wrapped)
    assert main(["nimc", "detect", str(wrapped), data]) == 2
    err = capsys.readouterr().err
    assert "not a contend nimc model (UntrustedTypesFoundException" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()


def _corrupt(detector, change) -> None:
    """Apply ``change(nodes)`` to the node records of the classifier's first tree."""
    tree = detector.classifier.estimators_[0].tree_
    state = tree.__getstate__()
    nodes = state["nodes"].copy()
    change(nodes)
    tree.__setstate__({**state, "nodes": nodes})


@pytest.mark.parametrize("change, message", [
    (lambda n: n["left_child"].__setitem__(0, 10**6), "a child index out of range"),
    (lambda n: n["right_child"].__setitem__(0, 0), "a child index out of range"),  # a cycle back to the root
    (lambda n: n["feature"].__setitem__(0, 10**6), "a split on a feature outside"),
    (lambda n: n["threshold"].__setitem__(0, np.nan), "a threshold or value that is not finite"),
])
def test_a_model_with_corrupt_trees_is_refused_not_walked(tmp_path, change, message):
    """Trees whose arrays pass the format, version and feature checks but point outside themselves (the
    fuzzer's SIGSEGV): exit 2, one line, no signal. In a fresh interpreter, so a crash shows as a signal."""
    import skops.io

    frame = synthetic()
    data = _write(frame, tmp_path / "s.parquet")
    detector = detector_module.train(frame, test_fraction=0, trees=10)
    header = detector_module.schema(detector)  # before: the importances walk the trees
    _corrupt(detector, change)
    model = tmp_path / "bad.model"
    skops.io.dump({**header, "classifier": detector.classifier, "regressor": detector.regressor}, model)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "contend.cli", "nimc", "detect", str(model), data],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"contend: error: {model}: the classifier's tree 0: {message}")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_load_average_record_does_not_stop_training_when_damaged():
    import pandas as pd

    from contend.analysis.nimc import _loadavg_median

    assert _loadavg_median(pd.DataFrame({"loadavg_1min": [1.0, 3.0, 2.0]})) == 2.0
    assert _loadavg_median(pd.DataFrame({"loadavg_1min": ["1.0", "x"]})) is None  # a string column
    assert _loadavg_median(pd.DataFrame({"loadavg_1min": [float("nan")]})) is None
    assert _loadavg_median(pd.DataFrame({"other": [1]})) is None
