"""libcontend-throttle.so under real MPI (4 ranks on this host): every byte of every wrapped kind of
operation (nonblocking, blocking and persistent sends, one-sided ops, the throttled collectives) arrives
under the token policy with 1-2 tokens per node (so ranks queue and the progress path runs), with
size-proportional tokens, with emulated nodes, and under the rate policy; from C and from mpi4py (the
large-count entry points); the node's pool grants in FIFO order; a dependency cycle ends through the stall escape; bad
configuration stops every rank before the program runs. Counters come from the library itself
(CONTEND_THROTTLE_STATS), so "throttled" is measured, not assumed. No timing is asserted."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from contend.native import mpi, libthrottle

RANKS = 4
PER_NODE = 2  # the runs that share a pool emulate two nodes of 2 (the library leaves traffic within a node alone)
TIMEOUT_S = 120
MPI4PY_PROGRAM = Path(__file__).with_name("throttle_mpi4py.py")
NO_ESCAPE_MS = 10000  # the strict runs: a stall escape there would be a bug, not a slow host


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for key in list(os.environ):
        if key.startswith(libthrottle.PREFIX):
            monkeypatch.delenv(key)


def shared_segments() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob("contend-throttle-*")}


def run(library, program, variables, ranks=RANKS):
    """The program on `ranks` ranks under the library: (exit code, stdout lines as JSON, stderr)."""
    argv, env = mpi.launch_command(library, ranks, libthrottle.preload(program, mpi.throttle_library(library),
                                                                    variables))
    finished = mpi.run_streaming(argv, env, lambda line: None, TIMEOUT_S)
    assert not finished.timed_out, f"no end within {TIMEOUT_S} s: {finished.stderr[-2000:]}"
    lines = [json.loads(line) for line in finished.lines if line.startswith("{")]
    return finished.returncode, lines, finished.stderr


def stress(library, tmp_path, variables, *args, program=None, ranks=RANKS):
    stats = tmp_path / "stats.jsonl"
    before = shared_segments()
    program = program or [str(mpi.build_dir(library) / "throttle-stress"), *args]
    code, lines, stderr = run(library, program, {**variables, "CONTEND_THROTTLE_STATS": str(stats)}, ranks)
    assert code == 0, stderr[-3000:]
    summary = lines[-1]
    assert summary["verified"] and summary["errors"] == 0, summary
    assert shared_segments() <= before, "the pool's shared memory was left in /dev/shm"
    rows = libthrottle.read_stats(stats)
    assert [row["rank"] for row in rows] == list(range(ranks))
    return summary, rows, stderr


def c_stress(library, tmp_path, variables, messages=1000, ops=1000, blocking=400, rounds=30, collectives=150):
    summary, rows, stderr = stress(library, tmp_path, variables, "--messages", str(messages), "--ops", str(ops),
                                   "--blocking", str(blocking), "--rounds", str(rounds),
                                   "--collectives", str(collectives))
    # Every send and one-sided op went through the library, per rank: the nonblocking sends; the blocking
    # sends and blocking // 2 Sendrecv rounds; 16 persistent sends started `rounds` times; RANKS - 1 sends
    # per collective call; then the one-sided writes, 16 fence puts and ops // 4 + 1 reads.
    one_sided = ops + 16 + ops // 4 + 1
    counted = {"sends": messages, "blocking": blocking, "sendrecvs": blocking // 2, "persistent": 16 * rounds,
               "collectives": collectives, "one_sided": one_sided}
    assert {key: summary[key] for key in counted} == {key: RANKS * n for key, n in counted.items()}, summary
    every = messages + blocking + blocking // 2 + 16 * rounds + collectives * (RANKS - 1) + one_sided
    for row, off in zip(rows, summary["off_node"]):
        # admitted: exactly those whose peer is on another node (the program says which, per kind); the
        # rest left alone as node-local, none lost
        sends, blocking_sends, sendrecvs, persistent, collective_sends, one_sided_ops = off
        assert row["ops"] == sum(off) and row["ops"] + row["ops_local"] == every, (row, off)
        assert row["ops_one_sided"] == one_sided_ops and row["ops_blocking"] == blocking_sends + sendrecvs, row
        assert row["ops_persistent"] == persistent and row["collectives"] == collectives, row
        assert row["ops_large_count"] > 0  # MPI_Isend_c, MPI_Put_c, ... from C too
        if row["ranks_on_node"] > 1:  # both kinds of peer were there
            assert row["ops_local"] > 0 and row["ops"] > 0, row
    return rows, stderr


@pytest.mark.parametrize("tokens", [1, 2])
def test_c_stress_under_a_tiny_node_pool(built, tmp_path, tokens):
    rows, stderr = c_stress(built, tmp_path, libthrottle.settings("token", tokens=tokens, ranks_per_node=PER_NODE,
                                                                   stall_ms=NO_ESCAPE_MS))
    assert "stall escape" not in stderr
    for row in rows:
        assert row["policy"] == "token" and row["pool_tokens"] == tokens and row["ranks_on_node"] == PER_NODE
        assert row["escapes"] == 0 and row["max_in_use"] <= tokens, row  # the pool was never exceeded
        assert row["waits"] > 100 and row["polls"] > 0, row  # ranks really queued and progressed
        assert row["tokens"] == row["ops"]  # one token per message
        # FIFO: while a rank waited, the other rank of its node was served at most once
        assert row["max_ahead"] <= PER_NODE - 1 and row["max_served_meanwhile"] <= PER_NODE - 1, row
    assert max(row["max_in_use"] for row in rows) == tokens


def test_c_stress_with_size_proportional_tokens_and_emulated_nodes(built, tmp_path):
    variables = libthrottle.settings("token", tokens=4, size_per_token=16384, ranks_per_node=PER_NODE,
                                  stall_ms=NO_ESCAPE_MS)
    rows, _ = c_stress(built, tmp_path, variables, messages=600, ops=600, blocking=200, rounds=10, collectives=60)
    assert [row["node"].rsplit("#", 1)[1] for row in rows] == ["0", "0", "1", "1"]
    assert len({row["node"] for row in rows}) == 2
    for row in rows:
        assert row["ranks_on_node"] == 2 and row["escapes"] == 0 and row["max_in_use"] <= 4, row
        assert row["tokens"] > row["ops"]  # messages over 16 KiB took more than one token
        assert row["max_served_meanwhile"] <= 1  # one other rank on the node


def test_c_stress_under_the_rate_policy(built, tmp_path):
    gap_ns = 20000
    rows, _ = c_stress(built, tmp_path, libthrottle.settings("rate", gap_ns=gap_ns, ranks_per_node=PER_NODE))
    for row in rows:
        assert row["policy"] == "rate" and row["tokens"] == 0
        assert row["min_gap_ns"] >= gap_ns and row["waits"] > 100, row


def test_c_stress_under_the_adaptive_policy(built, tmp_path):
    # A ceiling of 6 tokens for 2 ranks a node: the limit starts at 2 (one per rank) and may go from 1 to 6.
    rows, stderr = c_stress(built, tmp_path, libthrottle.settings("adaptive", tokens=6, ranks_per_node=PER_NODE,
                                                                   stall_ms=NO_ESCAPE_MS))
    assert "stall escape" not in stderr
    for row in rows:
        assert row["policy"] == "adaptive" and row["pool_tokens"] == 6 and row["ranks_on_node"] == PER_NODE, row
        assert row["escapes"] == 0 and row["max_in_use"] <= 6, row  # never more in use than the pool
        assert 1 <= row["limit_min"] <= row["limit_final"] <= row["limit_max"] <= 6, row
        assert row["limit_adjustments"] > 0 and row["limit_min"] < row["limit_max"], row  # the limit moved
        assert row["tokens"] == row["ops"] and row["waits"] > 0, row  # one token per message
        assert row["max_ahead"] <= PER_NODE - 1 and row["max_served_meanwhile"] <= PER_NODE - 1, row  # FIFO


@pytest.mark.parametrize("variables", [
    libthrottle.settings("token", tokens=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS),
    libthrottle.settings("token", tokens=2, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS),
    libthrottle.settings("rate", gap_ns=20000, ranks_per_node=PER_NODE),
    libthrottle.settings("adaptive", tokens=2, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS),
], ids=["token1", "token2", "rate", "adaptive"])
def test_mpi4py_goes_through_the_large_count_calls(built, tmp_path, variables):
    # 500 nonblocking sends, 200 blocking sends and 100 Sendrecv rounds, 16 persistent sends started 10
    # times, 60 collective calls and 400 one-sided writes per rank
    program = [sys.executable, str(MPI4PY_PROGRAM), "500", "400", "100000", "1", "200", "10", "60"]
    summary, rows, _ = stress(built, tmp_path, variables, program=program)
    assert summary["messages"] == RANKS * 500 and summary["one_sided"] == RANKS * 400
    assert summary["blocking"] == RANKS * 200 and summary["persistent"] == RANKS * 160
    for row, off in zip(rows, summary["off_node"]):
        sends, blocking_sends, sendrecvs, persistent, collective_sends, one_sided = off
        # admitted: at least those whose peer is on another node; left alone: the rest of them
        assert row["ops"] >= sum(off) and row["ops_large_count"] == row["ops"], (row, off)
        assert row["ops"] + row["ops_local"] >= 500 + 300 + 160 + 60 * (RANKS - 1) + 400 and row["ops_local"] > 0, row
        # mpi4py's own blocking sends (its pickled allreduce at the end) count too
        assert row["ops_blocking"] >= blocking_sends + sendrecvs and row["ops_persistent"] == persistent, row
        # the 60 calls, and the two each that mpi4py's pickled alltoall and allgather make
        assert row["collectives"] == 60 + 4, row
        assert row["escapes"] == 0 and row["waits"] > 0, row
        if row["policy"] != "rate":
            assert row["max_in_use"] <= row["pool_tokens"] and row["max_served_meanwhile"] <= RANKS - 1, row


SELF_SENDS = """
import json
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
dup = world.Dup()
got = []
for comm in (world, dup, MPI.COMM_SELF):
    me = comm.Get_rank()
    sends = [comm.Isend(np.full(8, k, np.int64), dest=me, tag=k) for k in range(4)]
    for k in range(4):
        data = np.zeros(8, np.int64)
        comm.Recv(data, source=me, tag=k)
        got.append(bool((data == k).all()))
    MPI.Request.Waitall(sends)
    comm.Barrier()
other = (world.rank + 1) % world.size
MPI.Request.Waitall([world.Isend(np.ones(4), dest=other), world.Irecv(np.zeros(4))])
errors = world.allreduce(got.count(False))
if world.rank == 0:  # one line: the ranks' output would interleave
    print(json.dumps({"verified": errors == 0, "errors": errors}))
"""


def test_sends_to_the_task_itself_are_not_throttled(built, tmp_path):
    """Four Isends of a task to itself (on the world, a duplicate and MPI_COMM_SELF) before it receives
    them: they never reach the NIC, and a token they held could only come back through the stall
    escape (each one a full stall_ms). They pass untouched; the one send to another rank (another node: one rank per node) is
    throttled."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=1, stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables, program=[sys.executable, "-c", SELF_SENDS],
                                   ranks=2)
    assert "stall escape" not in stderr
    for row in rows:  # and the blocking sends of mpi4py's pickled world.allreduce
        assert row["ops"] == 1 + row["ops_blocking"] and row["tokens"] == row["ops"] and row["escapes"] == 0, row
        assert row["ops_local"] == 3 * 4, row  # the sends to itself: seen, left alone


REORDERED = """
import json
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
PER_NODE = 2
expected = {"admitted": 0, "local": 0}
ok = []
# Communicators whose ranks are not the world's (reversed, then rotated: the second may reuse the first's
# freed handle), a window on each: one Isend and one Put to comm rank c + 1. Which of them leave the node
# depends on the translation to world ranks.
for order in (lambda r: world.size - 1 - r, lambda r: (r + 1) % world.size):
    comm = world.Split(0, order(world.rank))
    c, n = comm.rank, comm.size
    dest = (c + 1) % n
    dest_world = comm.Get_group().Translate_ranks([dest], world.Get_group())[0]
    leaves = dest_world // PER_NODE != world.rank // PER_NODE
    expected["admitted" if leaves else "local"] += 2
    win = MPI.Win.Allocate(8, disp_unit=1, comm=comm)
    win.Lock_all()
    win.Put(np.full(8, c, np.uint8), dest)
    win.Unlock_all()
    got = np.zeros(8, np.int64)
    request = comm.Irecv(got, source=(c - 1) % n)
    comm.Isend(np.full(8, c, np.int64), dest=dest).Wait()
    request.Wait()
    ok.append(bool((got == (c - 1) % n).all()))
    comm.Barrier()
    win.Free()
    comm.Free()
errors = world.allreduce(ok.count(False))
expected = world.gather(expected)
if world.rank == 0:
    print(json.dumps({"verified": errors == 0, "errors": errors, "expected": expected}))
"""


def test_peers_of_other_communicators_and_windows_are_placed_by_their_world_rank(built, tmp_path):
    """On communicators and windows that number the ranks otherwise (freed, then made again), a send or
    put is admitted exactly when its target's world rank is on another node: each rank's expected split,
    from the program's own translation, is the library's."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables, program=[sys.executable, "-c", REORDERED])
    assert "stall escape" not in stderr
    for row, want in zip(rows, summary["expected"]):  # besides mpi4py's pickled allreduce (blocking sends)
        assert row["ops"] - row["ops_blocking"] == want["admitted"] and row["ops_local"] >= want["local"], (row, want)
    # every rank had both kinds; reading the targets as world ranks would have split them otherwise
    assert all(want["admitted"] > 0 and want["local"] > 0 for want in summary["expected"]), summary


ATOMICS = """
import json
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
rank, size, per_node = world.rank, world.size, 2
ROUNDS = 300
i8 = MPI.INT64_T
win = MPI.Win.Allocate(8 * 8, disp_unit=8, comm=world)
memory = np.frombuffer(win.tomemory(), dtype=np.int64)
win.Lock(rank)
memory[:] = 0
win.Unlock(rank)
world.Barrier()
# Each round one target, every other rank in turn: Fetch_and_op adds 1 to slot 0, Get_accumulate adds
# rank + 1 to slots 1-2, Rget_accumulate 1 to slot 3 (completed by its Wait), Compare_and_swap puts
# rank + 1 into slot 4 if it is still 0; a flush now and then.
fetched, admitted, local = [], 0, 0
win.Lock_all()
for k in range(ROUNDS):
    t = (rank + 1 + k % (size - 1)) % size
    old, before, got, swapped = (np.zeros(n, np.int64) for n in (1, 2, 1, 1))
    win.Fetch_and_op(np.ones(1, np.int64), old, t, target_disp=0, op=MPI.SUM)
    win.Get_accumulate(np.full(2, rank + 1, np.int64), before, t, target=(1, 2, i8), op=MPI.SUM)
    win.Rget_accumulate(np.ones(1, np.int64), got, t, target=(3, 1, i8), op=MPI.SUM).Wait()
    win.Compare_and_swap(np.full(1, rank + 1, np.int64), np.zeros(1, np.int64), swapped, t, target_disp=4)
    if k % 5 == 4:
        win.Flush(t)
    fetched.append((t, old))
    leaves = t // per_node != rank // per_node
    admitted, local = admitted + 4 * leaves, local + 4 * (not leaves)
win.Unlock_all()
world.Barrier()
# Slot 0 of each target counted its Fetch_and_ops, and each returned a distinct old value: 0 .. n-1.
olds = world.gather([(t, int(old[0])) for t, old in fetched], root=0)
senders = [r for r in range(size) if r != rank for k in range(ROUNDS) if (r + 1 + k % (size - 1)) % size == rank]
win.Lock(rank)
ok = [int(memory[0]) == len(senders), (memory[1:3] == sum(r + 1 for r in senders)).all(),
      int(memory[3]) == len(senders), int(memory[4]) in {r + 1 for r in senders}]
win.Unlock(rank)
win.Free()
errors = world.allreduce(ok.count(False))
expected = world.gather({"admitted": admitted, "local": local})
if rank == 0:
    for target in range(size):
        values = sorted(v for rank_olds in olds for t, v in rank_olds if t == target)
        errors += values != list(range(len(values)))
    print(json.dumps({"verified": errors == 0, "errors": errors, "expected": expected}))
"""


def test_fetching_one_sided_calls_are_admitted_and_exact_under_one_token(built, tmp_path):
    """Fetch_and_op, Compare_and_swap, Get_accumulate and Rget_accumulate (mpi4py: the `_c` forms of the
    last two) under one token per node of 2, 300 rounds of each per rank in a lock_all epoch: each is
    admitted exactly when its target is on the other node (the library's count is the program's), their
    tokens come back (at a flush, the request's Wait, or the library's own flush_local) without one stall
    escape, and no update is lost: the sums are exact and every Fetch_and_op saw a distinct old value."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables, program=[sys.executable, "-c", ATOMICS])
    assert "stall escape" not in stderr
    for row, want in zip(rows, summary["expected"]):
        assert row["ops_one_sided"] == want["admitted"] > 0 and row["ops_local"] >= want["local"] > 0, (row, want)
        assert row["ops_large_count"] >= 300 and row["escapes"] == 0 and row["waits"] > 0, row


SEND_THEN_RECEIVE = """
import json
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
r = world.rank  # node 0: ranks 0 and 1, one token; node 1: ranks 2 and 3, relays
N = 1 << 17  # node 0's messages: 1 MiB, past any eager threshold, so no send is over when its call returns
ok = []
if r < 2:
    # Each sends to node 1, then waits for a reply that node 1 sends only once the other rank of node 0
    # has sent too: whichever asks for node 0's token second finds it held by a rank in a receive.
    to, back = (2, 3) if r == 0 else (3, 2)
    for k in range(3):
        request = world.isend({"k": k, "from": r, "pad": bytes(8 * N)}, dest=to, tag=k)
        ok.append(world.recv(source=back, tag=k) == {"k": k, "from": back})  # MPI_Mprobe + MPI_Mrecv
        request.wait()
        request, data = world.Isend(np.full(N, k), dest=to, tag=10 + k), np.zeros(4, int)
        world.Recv(data, source=back, tag=10 + k)  # MPI_Recv_c
        request.Wait()
        ok.append(bool((data == k).all()))
        request = world.Isend(np.full(N, k), dest=to, tag=20 + k)
        world.Probe(source=back, tag=20 + k)
        world.Recv(data, source=back, tag=20 + k)
        request.Wait()
        ok.append(bool((data == k).all()))
else:
    # rank 2 answers rank 1 once rank 0's message is in, rank 3 answers rank 0 once rank 1's is
    source, dest = (0, 1) if r == 2 else (1, 0)
    for k in range(3):
        got = world.recv(source=source, tag=k)
        ok.append((got["k"], got["from"], len(got["pad"])) == (k, source, 8 * N))
        world.isend({"k": k, "from": r}, dest=dest, tag=k).wait()
        for tag in (10 + k, 20 + k):
            data = np.zeros(N, int)
            world.Recv(data, source=source, tag=tag)
            ok.append(bool((data == k).all()))
            world.Isend(np.full(4, k), dest=dest, tag=tag).Wait()
errors = world.allreduce(ok.count(False))
if world.rank == 0:  # one line: the ranks' output would interleave
    print(json.dumps({"verified": errors == 0, "errors": errors}))
"""


def test_a_task_blocked_in_a_receive_gives_back_the_tokens_of_its_finished_sends(built, tmp_path):
    """The two ranks of node 0 Isend 1 MiB to node 1, then receive (comm.recv: MPI_Mprobe + Mrecv;
    MPI_Recv; MPI_Probe) a reply node 1 sends only once both have sent, then Wait. With one token per
    node, the second sender waits for the first's token, whose send finishes once node 1 has received it
    (a send that MPI finished inside its call gives its token back at once); the first must hand it back
    while it waits for its reply, as in a Wait. It used to keep it inside MPI, and every round ended
    through the stall escape."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables,
                                   program=[sys.executable, "-c", SEND_THEN_RECEIVE], ranks=2 * PER_NODE)
    assert "stall escape" not in stderr
    for row in rows:
        assert row["ops"] == 9 + row["ops_blocking"] and row["tokens"] == row["ops"] and row["escapes"] == 0, row
    # in each of the 9 exchanges the second sender of node 0 waited for the first's token
    assert sum(row["waits"] for row in rows[:PER_NODE]) >= 9, rows


BLOCKING_WHILE_HOLDING = """
import json
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
other = (world.rank + world.size // 2) % world.size  # on the other node
n, ok = 1 << 18, []  # 2 MiB of float64: above the eager limit
for k in range(5):
    bufs = [np.zeros(n) for _ in range(2)]
    recvs = [world.Irecv(bufs[t], source=other, tag=t) for t in range(2)]
    world.Barrier()
    first = world.Isend(np.full(n, 10.0 * k + world.rank), dest=other, tag=0)  # holds the one token
    world.Send(np.full(n, 100.0 * k + world.rank), dest=other, tag=1)  # MPI_Send_c, while first holds it
    MPI.Request.Waitall(recvs)
    first.Wait()
    ok.append(bool((bufs[0] == 10.0 * k + other).all() and (bufs[1] == 100.0 * k + other).all()))
errors = world.allreduce(ok.count(False))
if world.rank == 0:
    print(json.dumps({"verified": errors == 0, "errors": errors}))
"""


def test_a_blocking_send_while_the_task_holds_tokens_needs_no_escape(built, tmp_path):
    """Each rank Isends 2 MiB to its partner on the other node, then MPI_Send's 2 MiB more while the first
    send holds the node's one token: the blocking send waits in line polling the task's own operations
    (the first send completes as its receive was posted) and holds its token only until it returns,
    while the node's other rank, waiting for that token, still progresses the receive it needs. No
    stall escape, every byte."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables,
                                   program=[sys.executable, "-c", BLOCKING_WHILE_HOLDING], ranks=2 * PER_NODE)
    assert "stall escape" not in stderr
    for row in rows:  # 5 Isends and 5 Sends, and the blocking sends of mpi4py's pickled allreduce
        assert row["ops"] == 5 + row["ops_blocking"] and row["ops_blocking"] >= 5, row
        assert row["escapes"] == 0 and row["max_in_use"] <= 1, row
    assert sum(row["waits"] for row in rows) > 0


def test_a_send_cycle_finishes_through_the_stall_escape(built, tmp_path):
    """Pairs MPI_Issend to each other before either posts a receive: with one token per node (one rank
    per node, so the pairs' sends leave it) a rank's second send can only start if its first's token is
    given back, which needs that receive. The escape lets it through after stall_ms, says so on stderr,
    and every byte still arrives."""
    variables = libthrottle.settings("token", tokens=1, ranks_per_node=1, stall_ms=50)
    summary, rows, stderr = stress(built, tmp_path, variables, "--cycle", "--messages", "3",
                                   "--max-bytes", "100000")
    assert summary["sends"] == RANKS * 3
    assert sum(row["escapes"] for row in rows) > 0
    assert max(row["max_in_use"] for row in rows) > 1  # the pool was exceeded, as the warning says
    assert "ended by the stall escape" in stderr


def test_the_node_pool_grants_first_come_first_served(built):
    """Without MPI: 6 processes, 4 tokens, one asking for all 4 at once among five asking for one."""
    import subprocess

    done = subprocess.run([str(mpi.build_dir(built) / "throttle-pool-check"), "6", "3000", "4"],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    fifo, greedy = (json.loads(line) for line in done.stdout.splitlines())
    assert fifo["mode"] == "fifo" and fifo["out_of_order"] == 0
    assert fifo["max_in_use"] <= 4 and fifo["max_served_meanwhile"] <= 5
    assert fifo["big_waited"] > 0  # the big request really queued behind small ones
    assert greedy["mode"] == "greedy" and greedy["max_in_use"] <= 4


def test_the_library_s_adaptive_rule_gives_the_engine_s_answer(built):
    """The known case of engine/src/policy/adaptive.rs (doubles_then_halves_at_the_knee_then_grows_by_one):
    the library's controller, on a made-up clock, moves the limit exactly as the engine's does."""
    import subprocess

    done = subprocess.run([str(mpi.build_dir(built) / "throttle-adaptive-check")], capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["limits"] == [1, 2, 4, 8, 16, 32, 16, 16, 17, 18]
    assert (out["min"], out["max"], out["adjustments"]) == (1, 32, 8)
    assert out["free"] == out["limit"] == 18  # nothing in use: the free count is the limit


def test_a_configuration_file_with_environment_overrides(built, tmp_path):
    config = tmp_path / "throttle.conf"
    config.write_text("# written by hand\npolicy = token\ntokens = 2   # per node\nsize_per_token = 0\n")
    variables = {"CONTEND_THROTTLE_CONFIG": str(config), "CONTEND_THROTTLE_STALL_MS": str(NO_ESCAPE_MS)}
    _, rows, _ = stress(built, tmp_path, variables, "--messages", "200", "--ops", "200")
    assert {row["pool_tokens"] for row in rows} == {2} and {row["stall_ms"] for row in rows} == {NO_ESCAPE_MS}
    (tmp_path / "stats.jsonl").unlink()
    _, rows, _ = stress(built, tmp_path, {**variables, "CONTEND_THROTTLE_TOKENS": "3"}, "--messages", "200",
                        "--ops", "200")
    assert {row["pool_tokens"] for row in rows} == {3}


def write(tmp_path, text):
    path = tmp_path / "bad.conf"
    path.write_text(text)
    return str(path)


BAD = [
    ({}, "no policy: set CONTEND_THROTTLE_POLICY to token, rate, proxy, adaptive or none"),
    ({"CONTEND_THROTTLE_POLICY": "fast"}, "CONTEND_THROTTLE_POLICY=fast: unknown policy, expected token, rate, proxy, adaptive or none"),
    (libthrottle.settings("token", tokens=0), "CONTEND_THROTTLE_TOKENS=0: out of range, expected 1 to 1000000 (a pool "
                                           "of 0 tokens never grants one)"),
    (libthrottle.settings("token", tokens="8k"), "CONTEND_THROTTLE_TOKENS=8k: expected a whole number from 1 to"),
    (libthrottle.settings("token", tokens=-2), "CONTEND_THROTTLE_TOKENS=-2: expected a whole number"),
    (libthrottle.settings("token", tokens=""), "CONTEND_THROTTLE_TOKENS=: expected a whole number"),
    (libthrottle.settings("token"), "the token policy needs CONTEND_THROTTLE_TOKENS"),
    (libthrottle.settings("rate"), "the rate policy needs CONTEND_THROTTLE_GAP_NS"),
    (libthrottle.settings("rate", gap_ns="1.5"), "CONTEND_THROTTLE_GAP_NS=1.5: expected a whole number"),
    (libthrottle.settings("rate", gap_ns=100, tokens=4), "CONTEND_THROTTLE_TOKENS=4: applies to the token, proxy or "
                                                      "adaptive policy, not to rate"),
    (libthrottle.settings("none", gap_ns=100), "CONTEND_THROTTLE_GAP_NS=100: applies to the rate policy, not to none"),
    (libthrottle.settings("proxy"), "the proxy policy needs CONTEND_THROTTLE_SERVERS"),
    (libthrottle.settings("proxy", servers=65), "CONTEND_THROTTLE_SERVERS=65: out of range, expected 1 to 64"),
    (libthrottle.settings("token", tokens=2, servers=2), "CONTEND_THROTTLE_SERVERS=2: applies to the proxy policy, "
                                                      "not to token"),
    (libthrottle.settings("adaptive", size_per_token=4096), "CONTEND_THROTTLE_SIZE_PER_TOKEN=4096: applies to the "
                                                           "token or proxy policy, not to adaptive"),
    (libthrottle.settings("adaptive", tokens=0), "CONTEND_THROTTLE_TOKENS=0: out of range"),
    (libthrottle.settings("token", tokens=2, stall_ms=0), "CONTEND_THROTTLE_STALL_MS=0: out of range"),
    (libthrottle.settings("token", tokens=2, node="n1", ranks_per_node=2), "CONTEND_THROTTLE_NODE and "
                                                                       "CONTEND_THROTTLE_RANKS_PER_NODE are both set"),
    (libthrottle.settings("token", tokens=2, job="my job"), "CONTEND_THROTTLE_JOB=my job: character ' ' not allowed"),
    ({"CONTEND_THROTTLE_CONFIG": "/nonexistent/throttle.conf"},
     "CONTEND_THROTTLE_CONFIG=/nonexistent/throttle.conf: cannot read it: No such file or directory"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = token\n\ntokens 4\n")},
     "bad.conf:3: expected `key = value`, got 'tokens 4'"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = token\ntokenz = 4\n")},
     "bad.conf:2: unknown key 'tokenz'"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = token\ntokens = 0\n")},
     "bad.conf:2: tokens = 0: out of range"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = token\ntokens = 2\ntokens = 3\n")},
     "bad.conf:3: tokens given twice (first on line 2)"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = rate\ngap_ns = 100\nstall_ms = 5\n")},
     "bad.conf:3: stall_ms = 5: applies to the token, proxy or adaptive policy, not to rate"),
    # input bytes are shown escaped: a refusal stays one line
    (libthrottle.settings("token", tokens="1\n2"), "CONTEND_THROTTLE_TOKENS=1\\n2: expected a whole number"),
    ({"CONTEND_THROTTLE_CONFIG": lambda d: write(d, "policy = token\ntokens = 2\x1b\n")},
     "bad.conf:2: tokens = 2\\x1b: expected a whole number"),
    (libthrottle.settings("token", tokens=2, node="a\tb"),
     "CONTEND_THROTTLE_NODE=a\\tb: character '\\t' not allowed"),
    # the counters' place is checked at MPI_Init, not found wanting at MPI_Finalize
    (libthrottle.settings("token", tokens=2, stats="/nonexistent/stats.jsonl"),
     "CONTEND_THROTTLE_STATS=/nonexistent/stats.jsonl: its directory does not exist"),
    ({"CONTEND_THROTTLE_POLICY": "token", "CONTEND_THROTTLE_TOKENS": "2", "CONTEND_THROTTLE_STATS": str},
     "not a regular file"),  # the test's directory
]


@pytest.mark.parametrize("variables, message", BAD, ids=[m.split(":")[0][:40] for _, m in BAD])
def test_bad_configuration_stops_every_rank_before_the_program_runs(built, tmp_path, variables, message):
    variables = {k: v(tmp_path) if callable(v) else v for k, v in variables.items()}
    program = [str(mpi.build_dir(built) / "throttle-stress"), "--messages", "10", "--ops", "10"]
    code, lines, stderr = run(built, program, variables, ranks=2)
    assert code != 0
    assert lines == [], "the program must not have started"
    errors = stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("contend-throttle: error:"), stderr  # once, one line
    assert message in errors[0] and errors[0].endswith("; not starting"), stderr
    # throttle-check (contend throttle's check before a launch) is the same rules: the same words
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(libthrottle.PREFIX)}
    check = subprocess.run([str(mpi.build_dir(built) / "throttle-check")], env={**env, **variables},
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    assert check.returncode == 2 and check.stdout == ""
    assert f"contend-throttle: error: {check.stderr.strip()}; not starting" == errors[0]


def test_counters_name_any_node_in_valid_json_and_the_world_size(built, tmp_path):
    node = 'rack "7"\\n1'  # a quote and a backslash: escaped in the JSON line
    variables = libthrottle.settings("token", tokens=2, node=node.replace(" ", "_"), stall_ms=NO_ESCAPE_MS)
    _, rows, _ = stress(built, tmp_path, variables, "--messages", "20", "--ops", "20", ranks=2)
    assert [row["node"] for row in rows] == [node.replace(" ", "_")] * 2
    assert [row["world_size"] for row in rows] == [2, 2]


def test_ranks_of_a_node_that_disagree_on_the_pool_do_not_start(built):
    """Two ranks of one node given different pools (MPMD launch): refused, not silently merged."""
    stress_program = str(mpi.build_dir(built) / "throttle-stress")
    library = mpi.throttle_library(built)

    def rank(tokens):
        return ["-n", "1", *libthrottle.preload([stress_program], library, libthrottle.settings("token", tokens=tokens))]

    argv = [str(built.mpiexec), *rank(2), ":", *rank(3)]
    finished = mpi.run_streaming(argv, {**os.environ}, lambda line: None, TIMEOUT_S)
    assert finished.returncode != 0 and not any(line.startswith("{") for line in finished.lines)
    # whichever rank created the pool first, the other is refused
    assert re.search(r"^contend-throttle: error: node \S+: its pool has (2|3) tokens but this rank was given (3|2) "
                     r"\(the ranks of a node must agree\); not starting$", finished.stderr, re.M), finished.stderr


@pytest.mark.fabric
@pytest.mark.usefixtures("isolated_fabric")
def test_on_the_fabric_each_node_has_its_own_pool_by_host_name(built, tmp_path):
    """Node identity by default is the host name: on the emulated fabric (2 nodes x 2 ranks, each node
    its own namespace and host name) the ranks of a node share one pool and the nodes do not."""
    from contend.native import fabric
    from contend.native.bench import sanity
    from contend.native.bench.runner import run_benchmark

    stats = tmp_path / "stats.jsonl"
    with fabric.session(2, 2, "1gbit", "star", fabric.TEST_PREFIX) as built:
        run = run_benchmark("alltoall", ranks=4, sizes=[65536], iters=5, warmup=1, fabric=built, timeout_s=120,
                            throttle=libthrottle.settings("token", tokens=1, stall_ms=NO_ESCAPE_MS, stats=stats))
    assert not sanity.problems(run), sanity.problems(run)
    assert run.meta["throttle"]["CONTEND_THROTTLE_TOKENS"] == "1"
    rows = libthrottle.read_stats(stats)
    hosts = [f"{fabric.TEST_PREFIX}node{i}" for i in (0, 0, 1, 1)]
    assert [row["node"] for row in rows] == hosts and all(row["ranks_on_node"] == 2 for row in rows)
    for row in rows:  # 2 sends off the node per exchange, 6 exchanges; one token per node, never exceeded
        # (the harness's own messages, the checked exchange among them, are throttled too, counted apart)
        assert row["ops"] == 12 and row["ops_local"] == 6 and row["harness"]["ops"] > 0, row
        assert row["max_in_use"] <= 1 and row["escapes"] == 0, row


OPEN_MPI_CC = Path("/usr/bin/mpicc.openmpi")


@pytest.mark.skipif(not OPEN_MPI_CC.exists(), reason="Debian's Open MPI is not installed (apt-get install "
                                                     "openmpi-bin libopenmpi-dev)")
def test_open_mpi_build_throttles_too(monkeypatch, tmp_path):
    """Any mpicc: built against Open MPI (MPI 3.1 headers: no `_c` calls, handles are pointers)."""
    monkeypatch.setenv("CONTEND_MPICC", str(OPEN_MPI_CC))
    library = mpi.find_mpi()
    mpi.build_native(library)
    variables = libthrottle.settings("token", tokens=2, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, _ = stress(library, tmp_path, variables, "--messages", "300", "--ops", "300", "--blocking", "100",
                              "--rounds", "10", "--collectives", "20")
    assert summary["sends"] == RANKS * 300
    for row, off in zip(rows, summary["off_node"]):  # MPI 3: the collectives are Open MPI's own (collectives.c
        # needs MPI 4): every other operation to another node admitted, the rest left alone
        assert row["ops"] == sum(off) - off[4] and row["ops_large_count"] == 0, (row, off)
        assert row["ops"] + row["ops_local"] == 300 + 100 + 50 + 160 + 300 + 16 + 76, row
        assert row["collectives"] == 0 and row["ops_persistent"] == off[3], row
        assert row["max_in_use"] <= 2 and row["escapes"] == 0 and row["waits"] > 0, row
