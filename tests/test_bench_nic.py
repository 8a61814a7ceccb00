"""Luo et al. 2012's microbenchmarks, real (contend-bench on the pip MPICH, 4 ranks on this host's shared memory,
two halves standing for two nodes): nicrate (Figure 1), outstanding (Figure 2), the all-to-all
variants and randomaccess. Each runs at a tiny size: rows well formed and physically sane, every byte
accounted for and checked, the sweep table tidy, bad options refused with one line and exit 2, and
both sweeps also run under libcontend-throttle.so. Correctness only: no timing is asserted."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from contend.native import fabric, mpi, libthrottle
from contend.native.bench import sanity
from contend.native.bench.nic import SWEEP_COLUMNS, sweep_table
from contend.native.bench.results import read_run
from contend.native.bench.runner import run_benchmark
from contend.cli import main
from contend.errors import UserError

TINY = dict(ranks=4, iters=4, warmup=1, timeout_s=120)
MESSAGES = 4
# Not fabric.TEST_PREFIX: a prefix of its own, so this test never meets another session's test fabric.
FABRIC_PREFIX = "ctnict-"


def sane(run):
    problems = sanity.problems(run)
    assert not problems, problems
    return run


@pytest.fixture(scope="module")
def nicrate():
    return sane(run_benchmark("nicrate", sizes=[8, 1024], options={"messages": MESSAGES}, **TINY))


@pytest.fixture(scope="module")
def outstanding():
    return sane(run_benchmark("outstanding", sizes=[1024], options={"messages": MESSAGES, "windows": "1,2,4"},
                              **TINY))


def test_nicrate_sweeps_active_cores_with_one_row_per_node(nicrate):
    rows = nicrate.results
    # 2 sizes x active 1..2 (2 ranks per half of the host) x 2 nodes
    assert len(rows) == 8 and set(rows["active"]) == {1, 2} and set(rows["window"]) == {1}
    assert sorted(set(zip(rows["rank"], rows["peer"]))) == [(0, 2), (2, 0)]  # first ranks of the halves
    assert set(rows["logical_node"]) == {0, 1} and (rows["one_host"] == 1).all()
    assert (rows["metric"] == "send").all() and (rows["messages"] == MESSAGES).all()
    assert ((rows["rank_min_Bps"] > 0) & (rows["rank_min_Bps"] <= rows["rank_max_Bps"])).all()
    tallies = nicrate.tallies.set_index("rank")
    # local rank 0 injects at both active counts, local rank 1 only at 2; +1: the final checked message
    rounds = TINY["warmup"] + TINY["iters"]
    assert tallies.loc[0, "messages_sent"] == 2 * 2 * rounds * MESSAGES + 1
    assert tallies.loc[1, "messages_sent"] == 2 * 1 * rounds * MESSAGES + 1
    assert (tallies["bytes_sent"] == tallies["bytes_received"]).all()  # partners mirror each other
    assert (tallies["verified"] == 1).all()


def test_outstanding_sweeps_the_window_with_all_cores_active(outstanding):
    rows = outstanding.results
    assert sorted(set(rows["window"])) == [1, 2, 4] and set(rows["active"]) == {2} and len(rows) == 6
    # a window of W sends W messages at a time: the rounds' message count does not depend on W
    assert (outstanding.tallies["messages_sent"] == 3 * (TINY["warmup"] + TINY["iters"]) * MESSAGES + 1).all()


def test_put_mode_moves_and_checks_data_one_sided():
    run = sane(run_benchmark("nicrate", sizes=[256], options={"messages": MESSAGES, "mode": "put", "active": "2"},
                             **TINY))
    assert (run.results["metric"] == "put").all() and set(run.results["active"]) == {2}
    rounds = TINY["warmup"] + TINY["iters"]
    assert (run.tallies["rma_bytes"] == rounds * MESSAGES * 256 + 256).all()
    assert (run.tallies["bytes_sent"] == 0).all() and (run.tallies["verified"] == 1).all()


def test_round_times_say_when_each_injecting_rank_ran_each_round():
    run = sane(run_benchmark("outstanding", sizes=[1024], options={"messages": MESSAGES, "windows": "1,2",
                                                                      "mode": "put-oneway"},
                             round_times=True, **TINY))
    rounds = run.rounds
    # the first node's 2 ranks inject (one-way), every round of both windows, warm-up rounds negative
    assert set(rounds["rank"]) == {0, 1} and set(rounds["window"]) == {1, 2} and set(rounds["bytes"]) == {1024}
    assert sorted(set(rounds["round"])) == list(range(-TINY["warmup"], TINY["iters"]))
    assert len(rounds) == 2 * 2 * (TINY["warmup"] + TINY["iters"])
    assert (rounds["end_ns"] >= rounds["start_ns"]).all() and (rounds["start_ns"] > 0).all()
    # a round starts after the one before it ended, on the clock the host's ranks share
    for _, mine in rounds.groupby(["window", "rank"]):
        mine = mine.sort_values("round")
        assert (mine["start_ns"].to_numpy()[1:] >= mine["end_ns"].to_numpy()[:-1]).all()
    assert sane(run_benchmark("outstanding", sizes=[1024], options={"messages": MESSAGES}, **TINY)).rounds.empty


def test_round_times_only_where_there_are_rounds():
    with pytest.raises(UserError, match="pingpong has no rounds to time"):
        run_benchmark("pingpong", ranks=2, round_times=True)


def test_sweep_table_is_tidy_and_typed(nicrate, outstanding):
    table = sweep_table([nicrate, outstanding])
    assert tuple(table.columns) == SWEEP_COLUMNS
    assert set(table["source"]) == {"real"}
    concurrency = table[table["experiment"] == "concurrency"]
    assert sorted(zip(concurrency["size"], concurrency["active_cores"])) == [(8, 1), (8, 2), (1024, 1), (1024, 2)]
    assert list(table.loc[table["experiment"] == "outstanding", "outstanding"]) == [1, 2, 4]
    assert (table["throughput_Bps"] > 0).all() and (table["msg_rate"] > 0).all()
    # throughput is the node's bytes per second: size x message rate
    assert ((table["throughput_Bps"] - table["size"] * table["msg_rate"]).abs() <= 1e-6 * table["throughput_Bps"]).all()
    assert all(pd.api.types.is_integer_dtype(table[c]) for c in ("size", "active_cores", "outstanding"))
    again = sweep_table([nicrate, nicrate])  # repeated runs: the median of identical values is the value
    assert again.equals(sweep_table(nicrate))


def test_randomaccess_updates_verify_against_a_replay():
    run = sane(run_benchmark("randomaccess", sizes=[8, 16], options={"windows": "1,8", "table": 1024},
                             **{**TINY, "iters": 10}))
    rows = run.results
    assert len(rows) == 2 * 2 * 4 and (rows["metric"] == "updates").all()
    assert (rows["errors"] == 0).all() and (rows["table_words"] == 1024).all()
    assert (run.tallies["verified"] == 1).all()
    updates = (TINY["warmup"] + 10) * (1 + 8)  # per size: (warmup + iters) batches of each window
    assert (run.tallies["rma_bytes"] == updates * (8 + 16)).all()


# With 3 ranks: P - 1 = 2 messages (overlapped, pairwise; MPI_Alltoall counted by its contract) and
# ceil(log2 3) = 2 steps (Bruck)
@pytest.mark.parametrize("name, messages_per_exchange", [
    ("alltoall", 2), ("alltoall-pairwise", 2), ("alltoall-bruck", 2), ("alltoall-mpi", 2)])
def test_alltoall_variants_deliver_every_block(name, messages_per_exchange):
    # 3 ranks (not a power of two) and an odd block size: Bruck's packing and rotation both show errors
    run = sane(run_benchmark(name, ranks=3, sizes=[8, 1000], iters=4, warmup=1, timeout_s=120))
    assert sorted(run.results["rank"]) == [0, 0, 1, 1, 2, 2]
    assert (run.results["alltoall_ns"] > 0).all() and (run.tallies["verified"] == 1).all()
    exchanges = 2 * (1 + 4) + 1  # two sizes x (warmup + iterations), then the checked one
    assert (run.tallies["messages_sent"] == exchanges * messages_per_exchange).all()


def test_bruck_takes_log_steps():
    run = sane(run_benchmark("alltoall-bruck", ranks=4, sizes=[64], iters=3, warmup=1, timeout_s=120))
    # 2 steps (bits 1 and 2) per exchange, each carrying 2 of the 4 blocks
    assert (run.tallies["messages_sent"] == 2 * (1 + 3 + 1)).all()
    assert (run.tallies["bytes_sent"] == 2 * 2 * 64 * (1 + 3 + 1)).all()


@pytest.mark.parametrize("name, variables", [
    ("nicrate", libthrottle.settings("token", tokens=1, ranks_per_node=2)),
    ("outstanding", libthrottle.settings("rate", gap_ns=2000, ranks_per_node=2)),  # the halves as nodes
], ids=["nicrate-token", "outstanding-rate"])
def test_sweeps_run_under_the_throttle_library(tmp_path, name, variables):
    stats = tmp_path / "stats.jsonl"
    run = sane(run_benchmark(name, sizes=[1024], options={"messages": MESSAGES, "windows": "2"},
                             throttle={**variables, "CONTEND_THROTTLE_STATS": str(stats)}, **TINY))
    assert run.meta["throttle"]["CONTEND_THROTTLE_POLICY"] == variables["CONTEND_THROTTLE_POLICY"]
    counters = libthrottle.read_stats(stats)
    assert [row["rank"] for row in counters] == [0, 1, 2, 3]
    # every data Isend (to the partner on the other node) went through the library, counted; the harness's
    # own messages, counted apart (MPI_Pcontrol), went through it too: its blocking sends (the final checked
    # message is one of them, the only one in messages_sent) and its collectives' sends
    assert [row["ops"] + 1 for row in counters] == run.tallies["messages_sent"].tolist()
    assert all(row["ops_blocking"] == 0 and row["harness"]["ops_blocking"] >= 1 for row in counters)
    assert all(row["harness"]["collectives"] >= 1 and row["harness"]["ops"] > 1 for row in counters)
    if name == "nicrate":
        assert {row["node"].rsplit("#", 1)[1] for row in counters} == {"0", "1"}  # the host's two halves
        assert all(row["max_in_use"] <= 1 or row["escapes"] > 0 for row in counters)


def test_cli_run_writes_parquet_table_and_figure_shaped_plot(capsys, tmp_path):
    output = tmp_path / "nic.parquet"
    assert main(["bench", "run", "outstanding", "--np", "2", "--sizes", "8,1KiB", "--iters", "4",
                 "--windows", "1:4", "--messages", "4", "-o", str(output)]) == 0
    out = capsys.readouterr().out
    assert "node rate" in out and "in flight" in out
    run = read_run(output)
    assert sorted(set(run.results["window"])) == [1, 2, 4] and "rank_max_Bps" in run.results
    assert output.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["nicrate", "--windows", "0"], "bad --windows '0' (want an integer from 1 to 4096)"),
    (["outstanding", "--windows", "2,0"], "bad --windows '0'"),
    (["nicrate", "--np", "4", "--active", "3"], "--active 3 exceeds the 2 ranks per node"),
    (["nicrate", "--mode", "get"], "unknown --mode 'get' for nicrate (choose send or put or put-oneway)"),
    (["outstanding", "--windows", "8", "--messages", "4"], "--windows 8 exceeds --messages 4"),
    (["nicrate", "--np", "3"], "needs an even number of ranks, got 3"),
    (["randomaccess", "--sizes", "12"], "update size 12 must be a multiple of 8 bytes"),
    (["randomaccess", "--mode", "put"], "option --mode does not apply to randomaccess"),
])
def test_bad_options_give_one_line_and_exit_2(capsys, tmp_path, args, message):
    assert main(["bench", "run", *args, "--iters", "2", "-o", str(tmp_path / "never.parquet")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_harness_itself_exits_2_on_every_rank():
    library = mpi.find_mpi()
    binary = mpi.build_native(library)
    argv, env = mpi.launch_command(library, 4, [str(binary), "outstanding", "--windows", "0"])
    finished = mpi.run_streaming(argv, env, lambda line: None, 60)
    assert finished.returncode == 2
    assert finished.stderr.count("contend-bench: error: bad --windows '0'") == 1  # rank 0 says it once
    assert not any(json.loads(line).get("type") == "result" for line in finished.lines if line.startswith("{"))


@pytest.fixture
def nic_fabric():
    with fabric.session(2, 2, "200mbit", "star", FABRIC_PREFIX) as built:
        yield built
    assert fabric.our_namespaces(FABRIC_PREFIX) == [], "the test left namespaces behind"
    assert mpi.running_benchmarks(os.getpid()) == [], "the test left benchmark processes behind"


@pytest.mark.fabric
def test_nicrate_between_two_emulated_nodes(nic_fabric):
    run = sane(run_benchmark("nicrate", sizes=[1024], options={"messages": MESSAGES}, fabric=nic_fabric, **TINY))
    assert run.meta["nodes"] == 2 and run.meta["ranks_per_node"] == 2
    rows = run.results
    assert (rows["one_host"] == 0).all() and set(rows["active"]) == {1, 2}
    assert sorted(set(zip(rows["rank"], rows["peer"]))) == [(0, 2), (2, 0)]
    assert sorted(set(rows["host"])) == [f"{FABRIC_PREFIX}node0", f"{FABRIC_PREFIX}node1"]
    assert (run.tallies["verified"] == 1).all()


def test_tune_derives_thresholds_from_real_sweeps(tmp_path):
    """contend tune --real: the sweeps measured here (4 ranks: 2 per half), thresholds derived from them;
    with --nimc also the NiMC cap from a measured rma sweep; the configuration runs under contend throttle."""
    out = tmp_path / "tuned"
    assert main(["tune", "--machine", "ib-congestion", "--real", "4", "--quick", "--nimc", "-o", str(out)]) == 0
    table = pd.read_csv(out / "sweep.csv")
    assert set(table["source"]) == {"real"} and set(table["experiment"]) == {"concurrency", "outstanding"}
    assert (table["throughput_Bps"] > 0).all()
    tuned = json.loads((out / "tune.json").read_text())
    # Thresholds lie within what was swept: 1..2 active cores per node, 1..16 messages in flight per core.
    cct = tuned["cct"]["1024"]
    assert 1 <= cct <= 2 and 1 <= tuned["nrct"]["1024"] <= 2 * 16
    assert 1 <= tuned["tokens"] <= tuned["nrct"]["1024"]
    assert f"tokens = {tuned['tokens']}" in (out / "machine.toml").read_text()
    assert (out / "throttle.conf").read_text().count("tokens") >= 1
    # the NiMC sweep: every rate measured and checked; the cap is the rule's answer on its own table
    from contend.native.bench import nimc

    swept = pd.DataFrame(tuned["nimc"]["slowdown"])
    rma = swept[swept["source"] == "rma"]
    assert len(rma) == len(nimc.TUNE_RATES) and swept["verified"].all()
    tolerated = nimc.largest_tolerated_rate(swept, tuned["tolerance"])
    assert tuned["nimc"]["tolerated_Bps"] == tolerated
    cap = int(tolerated) if tolerated is not None and tolerated > 0 else 0
    assert tuned["nimc"]["memory_throttle_Bps"] == cap
    assert (f"memory_throttle = {cap}" in (out / "throttle.conf").read_text()) == (cap > 0)
    # the configuration runs as written: contend throttle --config, on the same two halves as nodes
    stats, stress = out / "counters.jsonl", mpi.build_dir(mpi.find_mpi()) / "throttle-stress"
    assert main(["throttle", "--config", str(out / "throttle.conf"), "--ranks-per-node", "2", "--stall", "10s",
                 "--stats", str(stats), "--", "mpiexec", "-n", "4", str(stress), "--messages", "50", "--ops", "50"]) == 0
    rows = libthrottle.read_stats(stats)
    assert {row["pool_tokens"] for row in rows} == {tuned["tokens"]} and all(row["tokens"] > 0 for row in rows)
    assert max(row["max_in_use"] for row in rows) <= tuned["tokens"] and sum(row["escapes"] for row in rows) == 0


@pytest.mark.parametrize("args, message", [
    (["--real", "3"], "NP must be even"),
    (["--real", "4", "--ranks-per-node", "2"], "give one of the two"),
    (["--nimc"], "--nimc: the NiMC sweep is measured on this host; give --real NP too"),
])
def test_tune_real_refuses_bad_arguments(tmp_path, capsys, args, message):
    assert main(["tune", "--machine", "ib-congestion", *args, "-o", str(tmp_path / "t")]) == 2
    assert message in capsys.readouterr().err
