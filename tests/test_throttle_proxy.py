"""The proxy policy of libcontend-throttle.so under real MPI (4 ranks on this host): server slots per node
drain the tasks' queues round robin (native/throttle/proxy.c). Puts and Gets in passive epochs the program
opened with MPI_MODE_NOCHECK are issued by a server for their owner; everything else is issued inline by
its owner holding a slot. Every byte arrives; no operation is lost (each one is dispatched by a slot, and
each proxied one issued exactly once, by a server of its own node); never more operations inject at once
than there are servers, nor more tokens are in use than stand behind them. Counters come from the library
(CONTEND_THROTTLE_STATS). No timing is asserted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from contend.native import mpi, libthrottle

RANKS = 4
PER_NODE = 2  # two emulated nodes of 2: the library leaves traffic within a node alone
TIMEOUT_S = 180
NO_ESCAPE_MS = 10000  # a stall escape in these runs would be a bug, not a slow host
MPI4PY_PROGRAM = Path(__file__).with_name("throttle_mpi4py.py")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for key in list(os.environ):
        if key.startswith(libthrottle.PREFIX):
            monkeypatch.delenv(key)


def stress(library, tmp_path, variables, program, ranks=RANKS):
    """The program under the library: its summary (every byte verified) and the ranks' counters."""
    stats = tmp_path / "stats.jsonl"
    before = {p.name for p in Path("/dev/shm").glob("contend-throttle-*")}
    argv, env = mpi.launch_command(library, ranks, libthrottle.preload(
        program, mpi.throttle_library(library), {**variables, "CONTEND_THROTTLE_STATS": str(stats)}))
    finished = mpi.run_streaming(argv, env, lambda line: None, TIMEOUT_S)
    assert not finished.timed_out, f"no end within {TIMEOUT_S} s: {finished.stderr[-2000:]}"
    assert finished.returncode == 0, finished.stderr[-3000:]
    summary = [json.loads(line) for line in finished.lines if line.startswith("{")][-1]
    assert summary["verified"] and summary["errors"] == 0, summary
    assert {p.name for p in Path("/dev/shm").glob("contend-throttle-*")} <= before, "shared memory left behind"
    rows = libthrottle.read_stats(stats)
    assert [row["rank"] for row in rows] == list(range(ranks))
    return summary, rows, finished.stderr


def c_stress(library, tmp_path, variables, *args, messages=1000, ops=1000, blocking=200, rounds=10, collectives=50):
    program = [str(mpi.build_dir(library) / "throttle-stress"), "--messages", str(messages), "--ops", str(ops),
               "--blocking", str(blocking), "--rounds", str(rounds), "--collectives", str(collectives), *args]
    summary, rows, stderr = stress(library, tmp_path, variables, program)
    # per rank (throttle/test/stress.c): the nonblocking sends; the blocking sends and blocking // 2
    # Sendrecv rounds; 16 persistent sends started `rounds` times; RANKS - 1 sends per collective call;
    # the one-sided writes, 16 fence puts and ops // 4 + 1 reads
    one_sided = ops + 16 + ops // 4 + 1
    assert summary["sends"] == RANKS * messages and summary["one_sided"] == RANKS * one_sided
    sends = messages + blocking + blocking // 2 + 16 * rounds + collectives * (RANKS - 1)
    for row, off in zip(rows, summary["off_node"]):  # admitted: those to another node; the rest left alone
        assert row["ops"] == sum(off) and row["ops"] + row["ops_local"] == sends + one_sided, (row, off)
        assert row["ops_one_sided"] == off[-1] and row["ops_local"] > 0, (row, off)
    return rows, stderr


def check_proxy(rows, servers, tokens=0, inline_first=True):
    """The proxy's invariants, per node: nothing lost, nothing issued twice, the bounds kept.
    inline_first: the program's first throttled operation is a two-sided one (so in the stress programs)."""
    for node in {row["node"] for row in rows}:
        members = [row for row in rows if row["node"] == node]
        proxy = [row["proxy"] for row in members]
        for row, p in zip(members, proxy):
            assert row["policy"] == "proxy" and p["servers"] == servers and p["tokens_behind"] == tokens, row
            assert row["ops"] == p["proxied"] + p["inline"] and p["escapes"] == 0, row
            # every operation went through its task's queue, or took a free slot directly when nothing
            # of the node was pending (an inline one: proxied ones always queue)
            assert p["queued"] + p["direct"] == row["ops"] and p["direct"] <= p["inline"], row
            # a queued ticket waits for at most one direct take per other rank of the node: those that
            # had checked that nothing was pending before it was queued
            assert 0 <= p["max_overtaken"] <= len(members) - 1, row
        first = proxy[0]
        assert all(p["node_dispatches"] == first["node_dispatches"] for p in proxy)  # one node, one view
        assert len(first["node_dispatches"]) == servers
        # every operation of the node was dispatched by one of its server slots, once
        assert sum(first["node_dispatches"]) == sum(row["ops"] for row in members)
        if inline_first:  # the node's first operation was inline: it found nothing pending and a slot free
            assert sum(p["direct"] for p in proxy) >= 1
        # every proxied operation was issued once, by a server of its own node
        assert sum(p["served"] for p in proxy) == sum(p["proxied"] for p in proxy)
        assert 1 <= first["node_max_injecting"] <= servers, first
        if tokens:
            assert all(row["pool_tokens"] == tokens and row["max_in_use"] <= tokens for row in members), members
            # one token per operation, taken by whoever injected it (a server, for proxied ones)
            assert sum(row["tokens"] for row in members) == sum(row["ops"] for row in members)
            assert all(row["escapes"] == 0 for row in members)


@pytest.mark.parametrize("servers", [1, 2])
def test_c_stress_where_servers_issue_for_their_owners(built, tmp_path, servers):
    variables = libthrottle.settings("proxy", servers=servers, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    rows, stderr = c_stress(built, tmp_path, variables, "--nocheck")
    assert "stall escape" not in stderr
    check_proxy(rows, servers)
    proxy = [row["proxy"] for row in rows]
    assert all(p["proxied"] > 100 and p["inline"] > 1000 for p in proxy), proxy  # both paths, every rank
    if servers < PER_NODE:  # fewer slots than ranks: a rank issued operations of another rank
        assert sum(p["served_others"] for p in proxy) > 0
    assert all(p["staged_bytes"] > 0 for p in proxy)  # the Puts' data went through the segment


@pytest.mark.parametrize("tokens", [1, 2])
def test_c_stress_with_tokens_behind_the_servers(built, tmp_path, tokens):
    """The seed's "8 servers + ITT", scaled to this host: 2 servers with 1 or 2 tokens behind them."""
    variables = libthrottle.settings("proxy", servers=2, tokens=tokens, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    rows, stderr = c_stress(built, tmp_path, variables, "--nocheck")
    assert "stall escape" not in stderr
    check_proxy(rows, 2, tokens)
    assert max(row["max_in_use"] for row in rows) == tokens


def test_without_nocheck_every_operation_is_issued_inline(built, tmp_path):
    """MPI may grant a lock after the lock call has returned, so outside NOCHECK epochs a server's
    operation could land inside another origin's exclusive epoch: the owners issue everything."""
    rows, _ = c_stress(built, tmp_path, libthrottle.settings("proxy", servers=2, ranks_per_node=PER_NODE,
                                                             stall_ms=NO_ESCAPE_MS), messages=300, ops=300)
    check_proxy(rows, 2)
    assert all(row["proxy"]["proxied"] == 0 and row["proxy"]["staged_bytes"] == 0 for row in rows), rows


def test_each_emulated_node_serves_its_own_queues(built, tmp_path):
    variables = libthrottle.settings("proxy", servers=1, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    rows, _ = c_stress(built, tmp_path, variables, "--nocheck", messages=400, ops=400)
    assert [row["node"].rsplit("#", 1)[1] for row in rows] == ["0", "0", "1", "1"]
    assert all(row["ranks_on_node"] == 2 for row in rows)
    check_proxy(rows, 1)  # per node: served there == proxied there


@pytest.mark.parametrize("tokens", [0, 2])
def test_mpi4py_stress_under_the_proxy(built, tmp_path, tokens):
    """mpi4py on MPICH calls the large-count forms (MPI_Put_c, MPI_Get_c, MPI_Isend_c): proxied too."""
    variables = libthrottle.settings("proxy", servers=2, tokens=tokens or None, ranks_per_node=PER_NODE,
                                     stall_ms=NO_ESCAPE_MS)
    summary, rows, stderr = stress(built, tmp_path, variables,
                                   [sys.executable, str(MPI4PY_PROGRAM), "400", "300", "100000", "1", "--nocheck"])
    assert summary["messages"] == RANKS * 400 and summary["one_sided"] == RANKS * 300
    assert "stall escape" not in stderr
    check_proxy(rows, 2, tokens)
    for row in rows:
        assert row["ops_large_count"] == row["ops"] and row["proxy"]["proxied"] > 0, row


def test_a_send_cycle_under_the_proxy_finishes_through_the_stall_escape(built, tmp_path):
    """Pairs Issend to each other before either posts a receive, one token behind one server (one rank
    per node, so the pairs' sends leave it): the slot holder waits for a token only the receive gives
    back. The escapes let it through, and say so."""
    variables = libthrottle.settings("proxy", servers=1, tokens=1, ranks_per_node=1, stall_ms=50)
    summary, rows, stderr = stress(built, tmp_path, variables, [
        str(mpi.build_dir(built) / "throttle-stress"), "--cycle", "--messages", "3", "--max-bytes", "100000"])
    assert summary["sends"] == RANKS * 3
    assert sum(row["escapes"] + row["proxy"]["escapes"] for row in rows) > 0
    assert "ended by the stall escape" in stderr


WINDOWS = """
import json
import os
import numpy as np
from mpi4py import MPI
world = MPI.COMM_WORLD
half = world.Split(world.rank % 2, world.rank)  # {0, 2} and {1, 3}: half the node may serve each window
SLOTS = 64
PER_NODE = int(os.environ["CONTEND_THROTTLE_RANKS_PER_NODE"])
errors = expected = 0
def value(origin, target, k):
    return origin * 100000 + target * 1000 + k
for comm in (half, world, MPI.COMM_SELF):
    n, me = comm.size, comm.rank
    world_of = comm.Get_group().Translate_ranks(list(range(n)), world.Get_group())
    def leaves(target):  # ops to a task of this node are not the library's
        return world_of[target] // PER_NODE != world.rank // PER_NODE
    win = MPI.Win.Allocate(4 * SLOTS * n, disp_unit=4, comm=comm)  # the shadow keeps each rank's unit
    memory = np.frombuffer(win.tomemory(), dtype=np.int32)
    memory[:] = -1
    comm.Barrier()
    win.Lock_all(MPI.MODE_NOCHECK)
    for k in range(SLOTS):
        for target in range(n):
            win.Put(np.array([value(me, target, k)], np.int32), target, target=me * SLOTS + k)
        if k % 16 == 15:
            win.Flush_all()
    win.Flush_all()
    comm.Barrier()  # every Put is complete at its target
    reads = [(origin, target, k) for origin in range(n) for target in range(n) for k in (3, SLOTS - 1)]
    got = [np.zeros(1, np.int32) for _ in reads]
    for (origin, target, k), out in zip(reads, got):
        win.Get(out, target, target=origin * SLOTS + k)
    win.Unlock_all()
    errors += sum(int(out[0]) != value(o, t, k) for (o, t, k), out in zip(reads, got))
    comm.Barrier()
    win.Lock(me, MPI.LOCK_SHARED)
    errors += sum(int(memory[o * SLOTS + k]) != value(o, me, k) for o in range(n) for k in range(SLOTS))
    win.Unlock(me)
    win.Free()
    expected += SLOTS * sum(map(leaves, range(n))) + sum(leaves(t) for _, t, _ in reads)
errors = world.allreduce(errors)
expected = world.allreduce(expected)
if world.rank == 0:  # one line: the ranks' output would interleave
    print(json.dumps({"verified": errors == 0, "errors": errors, "proxied": expected}))
"""


def test_windows_on_part_of_the_node_are_served_by_their_members(built, tmp_path):
    """Windows on half the ranks (one of each node), on all of them and on one rank, with a displacement
    unit of 4: every NOCHECK Put and Get to another node goes by a server (a member of its window: the
    others cannot issue on it), and every value is where it belongs."""
    variables = libthrottle.settings("proxy", servers=2, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    summary, rows, _ = stress(built, tmp_path, variables, [sys.executable, "-c", WINDOWS])
    check_proxy(rows, 2, inline_first=False)  # only Puts and Gets, all proxied
    assert sum(row["proxy"]["proxied"] for row in rows) == summary["proxied"]


OPEN_MPI_CC = Path("/usr/bin/mpicc.openmpi")


@pytest.mark.skipif(not OPEN_MPI_CC.exists(), reason="Debian's Open MPI is not installed (apt-get install "
                                                     "openmpi-bin libopenmpi-dev)")
def test_open_mpi_build_proxies_too(monkeypatch, tmp_path):
    """Built against Open MPI, whose handles are pointers that differ between processes: a server finds
    the datatype and the window by what they are, not by the owner's handles."""
    monkeypatch.setenv("CONTEND_MPICC", str(OPEN_MPI_CC))
    library = mpi.find_mpi()
    mpi.build_native(library)
    variables = libthrottle.settings("proxy", servers=2, tokens=2, ranks_per_node=PER_NODE, stall_ms=NO_ESCAPE_MS)
    # collectives=0: with Open MPI's MPI 3.1 headers the library's collectives pass through to MPI
    rows, _ = c_stress(library, tmp_path, variables, "--nocheck", messages=300, ops=300, collectives=0)
    check_proxy(rows, 2, 2)
    assert all(row["proxy"]["proxied"] > 0 for row in rows), rows


def test_the_command_reports_each_nodes_servers():
    """`contend throttle` under the proxy: per node, its slots' dispatches (the node's view, not summed
    over its ranks), the most injecting, and its ranks' proxied and queued operations summed."""
    from contend.commands.throttle import _proxy_lines

    def row(node, proxied, inline, escapes=0):
        return {"node": node, "proxy": {"servers": 2, "node_max_injecting": 2, "node_dispatches": [7, 5],
                                        "proxied": proxied, "inline": inline, "queue_wait_ns": 2_000_000,
                                        "escapes": escapes}}
    lines = _proxy_lines([row("a", 3, 3), row("a", 1, 5, escapes=2), row("b", 0, 12)])
    assert lines == [
        "proxy on a: 2 servers, at most 2 injecting at once; operations per server: 7, 5",
        "  4 of 12 issued by a server for their owner, the rest inline; queue wait 4.00 ms in all; 2 stall "
        "escapes past the servers",
        "proxy on b: 2 servers, at most 2 injecting at once; operations per server: 7, 5",
        "  0 of 12 issued by a server for their owner, the rest inline; queue wait 2.00 ms in all"]
