"""Engine vs libcontend-throttle on the same scenarios (contend.experiments.throttle_agreement: Luo et al.
2012's Figure 1 and Figure 2 microbenchmarks and the overlapped all-to-all, 4 ranks as two nodes of 2
on this host), per policy (token 1, token 2, rate, proxy with one server per node): the counters that
the policy's rules fix agree exactly.

- Grants: every send of the scenario that leaves its node is admitted once, whatever the timing, on
  both sides (in the all-to-all each rank's node-local send, one of three, is not: the library leaves
  it alone as the engine does, counted in ops_local).
- Tokens in use: never more than the pool on either side; exactly the pool when a node offers at least
  that many sends at once (the engine: its ranks send at once; the library: where one rank alone fills
  it, since on a busy host the ranks of a node need not have their cores at the same time).
- Waits: what the rules fix, exactly: none where the pool covers every send a node can have in flight;
  otherwise at most one per send on each side. Beyond that timing decides them, so each side has a
  spread over the library's runs (each run's twin starts its origins' rounds as the run did; the
  all-to-all's, whose 4 busy ranks share the host's 2 cores, shares them in the model) and every
  case's must overlap within TOLERANCE (test_waits_agree_within_the_spread; docs/measurements.md,
  "Engine vs library").

A run of MPI is a second or two; the harness counts its own messages apart (MPI_Pcontrol), so one run
per case gives the library's counters of exactly the scenario's rounds.
"""

from __future__ import annotations

import pytest

from contend.experiments.throttle_agreement import (POLICIES, RANKS, RANKS_PER_NODE, SCENARIOS,
                                                    TOLERANCE, compare, engine_policy, library_counters,
                                                    overlap, round_skews, run_engine, spread, twin_model)

ROUNDS = 4


def in_flight_per_rank(scenario) -> int:
    """The most sends leaving its node that one rank can have in flight at once."""
    return RANKS - RANKS_PER_NODE if scenario.pattern == "alltoall" else scenario.window


def in_flight_per_node(scenario) -> int:
    """The most sends leaving a node that it can have in flight at once in the scenario."""
    return RANKS_PER_NODE * in_flight_per_rank(scenario)  # one-way: the origins' node


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_library_and_engine_counters_agree(built, tmp_path, scenario, policy):
    s, table = SCENARIOS[scenario], POLICIES[policy]
    got = compare(s, table, ROUNDS, tmp_path)
    engine, library = got["engine"], got["library"]
    every, leaving = s.sends(ROUNDS + 1)  # the timed rounds and the warm-up round
    seen = f"engine {engine}, library {library}"

    assert engine["messages"] == every + s.barrier_messages(ROUNDS + 1), seen
    assert engine["grants"] == library["grants"] == leaving, seen
    assert library["local"] == every - leaving, seen

    for run in got["runs"]:
        assert all(0 <= row["waits"] <= row["ops"] for row in run), run
    assert 0 <= engine["waits"] <= engine["grants"], seen

    if table["policy"] == "adaptive":
        pool = table["tokens"]  # the most the limit may reach
        for side, counters in (("engine", engine), ("library", library)):
            assert 1 <= counters["max_in_use"] <= pool, f"{side}: {seen}"
        for run in got["runs"]:
            for row in run:  # the node's limit stayed within 1 .. the ceiling, from one per rank
                assert 1 <= row["limit_min"] <= row["limit_final"] <= row["limit_max"] <= pool, row
                assert row["limit_min"] <= RANKS_PER_NODE <= row["limit_max"] and row["escapes"] == 0, row
            for node in {row["node"] for row in run}:
                members = [row for row in run if row["node"] == node]
                # the limit moves only after binding rounds, and a round binds only if sends waited
                # (docs/models.md): a node whose sends never waited kept its limit
                if sum(row["waits"] for row in members) == 0:
                    assert members[0]["limit_adjustments"] == 0, members
                    assert members[0]["limit_min"] == members[0]["limit_max"] == RANKS_PER_NODE, members
    elif table["policy"] == "token":
        pool = table["tokens"]
        for side, counters in (("engine", engine), ("library", library)):
            offered = in_flight_per_node(s)
            expected = min(pool, offered)
            if side == "engine" or min(pool, in_flight_per_rank(s)) == expected:
                assert counters["max_in_use"] == expected, f"{side}: {seen}"
            else:  # the pool fills only if the node's ranks inject at once: on a busy host, not certain
                assert 1 <= counters["max_in_use"] <= expected, f"{side}: {seen}"
            if offered <= pool:  # a send never finds the pool short (the harness's own waits: apart)
                assert counters["waits"] == 0, f"{side}: {seen}"
        assert all(row["escapes"] == 0 for run in got["runs"] for row in run), got["runs"]
    else:
        assert engine["max_in_use"] == library["max_in_use"] == 0, seen


@pytest.fixture(scope="module")
def host(built, tmp_path_factory):
    """This host now: each scenario's twin model."""
    return {"model": {name: twin_model(s) for name, s in SCENARIOS.items()},
            "scratch": tmp_path_factory.mktemp("host")}


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_waits_agree_within_the_spread(host, scenario, policy):
    """Waits per send over 5 library runs, each beside its twin; the two intervals overlap or are at
    most TOLERANCE apart. Timing decides waits, so this is no equality; a case apart by more fails."""
    s = SCENARIOS[scenario]
    got = spread(s, POLICIES[policy], 8, host["scratch"], host["model"][scenario], repeats=5)
    assert overlap(got["engine"], got["library"]), f"{scenario} {policy} (tolerance {TOLERANCE}): {got}"


def test_round_skews_are_each_origin_s_start_after_the_round_s_first():
    import pandas as pd

    rounds = pd.DataFrame({"rank": [0, 1, 0, 1], "round": [-1, -1, 0, 0],
                           "start_ns": [1_000, 1_250, 9_000, 8_000], "end_ns": [2_000, 2_000, 9_500, 9_500]})
    assert round_skews(rounds, 2) == [[0, 250], [1_000, 0]]
    with pytest.raises(RuntimeError, match="expected the start of 3 rounds"):
        round_skews(rounds, 3)
    with pytest.raises(RuntimeError, match="for each of 2 origins"):
        round_skews(rounds[rounds["rank"] == 0], 2)


def test_a_twin_origin_that_starts_late_puts_alone_at_the_end():
    """Figure 1 under one token, 1 round: origins in lock step wait at every put but the first; one
    that starts a whole round late waits at none (each puts alone, as a late real origin does)."""
    s, table = SCENARIOS["figure1"], POLICIES["token1"]
    together = run_engine(s, table, 1, skews=[[0, 0]])
    apart = run_engine(s, table, 1, skews=[[0, 10**9]])
    assert together["grants"] == apart["grants"] == 2 * s.messages
    assert together["waits"] >= 2 * s.messages - 2 and apart["waits"] == 0, (together, apart)


def engine_counters(tmp_path, goal: str, throttle: dict, ranks_per_node: int):
    from contend.simulation.simulate import simulate

    path = tmp_path / "case.goal"
    path.write_text(goal)
    r = simulate(path, ranks_per_node=ranks_per_node, throttle=throttle)
    return r.admission_grants, r.admission_waits, r.admission_max_in_use


def test_the_engine_counts_each_send_once(tmp_path):
    # Rank 0 posts 4 sends to rank 1 (another node) at once, under a gap far above every cost: sends 2-4
    # each wait (once, though 3 and 4 are held again while the ones before them go).
    burst = "num_ranks 2\nrank 0 {\n" + "".join(f"s{i}: send 8b to 1\n" for i in range(4)) + "}\n" \
        "rank 1 {\n" + "".join(f"r{i}: recv 8b from 0\n" for i in range(4)) + "}\n"
    assert engine_counters(tmp_path, burst, {"kind": "rate", "gap": 10**9}, 1) == (4, 3, 0)
    # Ranks 0 and 1 of node 0 each send one message to node 1 at once, one token per node: one waits.
    pair = "num_ranks 4\nrank 0 {\ns: send 8b to 2\n}\nrank 1 {\ns: send 8b to 3\n}\n" \
        "rank 2 {\nr: recv 8b from 0\n}\nrank 3 {\nr: recv 8b from 1\n}\n"
    assert engine_counters(tmp_path, pair, {"kind": "token", "tokens": 1}, 2) == (2, 1, 1)
    assert engine_counters(tmp_path, pair, {"kind": "token", "tokens": 2}, 2) == (2, 0, 2)
    # Without a policy nothing is admitted, so nothing is counted.
    assert engine_counters(tmp_path, pair, None, 2) == (0, 0, 0)


TRACED_PROGRAM = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mine, left, right, shared, got = np.full(512, rank, float), np.empty(512), np.empty(512), np.empty(64), np.empty(8)
exposed = np.zeros(8)
win = MPI.Win.Create(exposed, comm=comm)
win.Lock_all()
for step in range(20):
    MPI.Request.Waitall([comm.Irecv(left, (rank - 1) % size, 0), comm.Irecv(right, (rank + 1) % size, 1),
                         comm.Isend(mine, (rank + 1) % size, 0), comm.Isend(mine, (rank - 1) % size, 1)])
    assert left[0] == (rank - 1) % size and right[0] == (rank + 1) % size
    win.Put(np.full(8, float(step)), (rank + 1) % size)
    win.Get(got, (rank - 1) % size)
    win.Flush_all()
    total = np.empty(1)
    comm.Allreduce(np.array([mine.sum()]), total)
    shared[:] = step if rank == step % size else -1
    comm.Bcast(shared, root=step % size)
    assert shared[0] == step
    comm.Barrier()
win.Unlock_all()
win.Free()
"""


def test_a_traced_program_s_admitted_sends_are_the_library_s(built, tmp_path):
    """A program of the field (per step an mpi4py ring exchange, a put to the next rank and a get from the
    one before in a passive epoch, an allreduce, a broadcast and a barrier; 4 ranks as 2 nodes of 2)
    traced, converted and replayed under token 1, and run under the library with the same policy: both
    admit exactly the ring sends, puts and gets that leave their node (one of each rank's two ring sends,
    its put or its get: half of them), and neither the collectives' messages, which MPICH makes below
    the PMPI layer, nor a get's reply or the epoch's synchronization."""
    import sys

    from contend.cli import main
    from contend.native import libthrottle
    from contend.simulation.simulate import simulate

    program = tmp_path / "ring.py"
    program.write_text(TRACED_PROGRAM)
    launch = ["--", str(built.mpiexec), "-n", str(RANKS), sys.executable, str(program)]
    assert main(["trace", "-o", str(tmp_path / "trace"), "--timeout", "120", *launch]) == 0
    # the host's ranks stand for two nodes: their window is not shared between them (--no-in-place)
    assert main(["goal", "convert", str(tmp_path / "trace"), "-o", str(tmp_path / "ring.goal"), "--no-in-place"]) == 0
    table = POLICIES["token1"]
    engine = simulate(tmp_path / "ring.goal", ranks_per_node=RANKS_PER_NODE, throttle=engine_policy(table))
    stats = tmp_path / "counters.jsonl"
    assert main(["throttle", "--policy", "token", "--tokens", "1", "--ranks-per-node", str(RANKS_PER_NODE),
                 "--stats", str(stats), "--timeout", "120", *launch]) == 0
    library = library_counters(libthrottle.read_stats(stats))
    leaving = 20 * RANKS * 4 // 2  # 2 ring sends, a put and a get per rank and step; half leave the node
    assert engine.admission_grants == library["grants"] == leaving, (engine.admission_grants, library)
    assert library["local"] == leaving  # the other half stay within the node, left alone on both sides
