"""`contend goal convert` of contend's own traces and of OTF2 (engine/src/replay/ctrace.rs): real runs of
native/trace/test/replay.c under `contend trace` (4 ranks) become the schedules one would write by hand,
and with --cpu-scale 0 (every measured computation gap left out) simulate to docs/models.md's closed
forms; sub-communicator collectives land on the right world ranks; every send has its receive; an mpi4py
program converts whole; an OTF2 archive written with the otf2 package converts to its hand-computed
schedule; bad rank files are one clear error."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from contend.native import mpi
from contend.cli import main


def _sibling(name: str):
    """A test module next to this one (pytest imports tests in importlib mode: no plain imports)."""
    spec = importlib.util.spec_from_file_location(f"_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_convert, _trace = _sibling("test_goal_convert"), _sibling("test_trace")
O, hop, rank_blocks, ranks_of, simulate = (_convert.O, _convert.hop, _convert.rank_blocks, _convert.ranks_of,
                                           _convert.simulate)
MPI4PY_PROGRAM, write_otf2 = _trace.MPI4PY_PROGRAM, _trace.write_otf2

RANKS = 4
CONTEXT = 2**31  # collectives' tags (docs/models.md): never an application's
UNADMITTED = 2**19  # on a collective's tag: one libcontend-throttle.so passes to MPI whole (docs/formats.md)
SPINNING = 2**18  # with it: one whose receivers MPICH makes spin on shared memory (Barrier, Bcast, Reduce, Allreduce)


def traced(built, directory: Path, program: list[str]) -> Path:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", "-o", str(directory), "--timeout", "120", "--", str(built.mpiexec), "-n",
                     str(RANKS), *program])
    assert code == 0, err.getvalue()[-3000:]
    return directory


@pytest.fixture(scope="module")
def replay_traces(built, tmp_path_factory):
    """Each mode of trace-replay, traced once."""
    binary = str(mpi.build_dir(built) / "trace-replay")
    root = tmp_path_factory.mktemp("replay")
    return {mode: traced(built, root / mode, [binary, mode]) for mode in ("pingpong", "ring", "split", "rma")}


def convert(capsys, trace: Path, out: Path, *options: str) -> tuple[str, str]:
    assert main(["goal", "convert", str(trace), "-o", str(out), *options]) == 0
    return capsys.readouterr()


def messages(goal: Path) -> tuple[Counter, Counter]:
    """Sends and receives as (src, dst, bytes, tag), counted."""
    sends, recvs = Counter(), Counter()
    for rank, block in rank_blocks(goal).items():
        for line in block:
            if m := re.match(r"l\d+: send (\d+)b to (\d+) tag (\d+)$", line):
                sends[(rank, int(m[2]), int(m[1]), int(m[3]))] += 1
            elif m := re.match(r"l\d+: recv (\d+)b from (\d+) tag (\d+)$", line):
                recvs[(int(m[2]), rank, int(m[1]), int(m[3]))] += 1
    return sends, recvs


def test_pingpong_converts_to_the_hand_written_schedule(capsys, tmp_path, replay_traces):
    out = tmp_path / "pp.goal"
    convert(capsys, replay_traces["pingpong"], out, "--cpu-scale", "0")
    blocks = rank_blocks(out)
    chain = lambda ops: [f"l{i}: {op}" + ("" if i == 0 else f"\nl{i} requires l{i - 1}") for i, op in enumerate(ops)]
    expect0 = "\n".join(chain(["send 1000b to 1 tag 5", "recv 1000b from 1 tag 5"] * 3)).split("\n")
    expect1 = "\n".join(chain(["recv 1000b from 0 tag 5", "send 1000b to 0 tag 5"] * 3)).split("\n")
    assert blocks == {0: expect0, 1: expect1, 2: [], 3: []}
    # three round trips; rank 1 ends when its last answer's send overhead is paid
    assert ranks_of(capsys, out) == [6 * hop(1000), 5 * hop(1000) + O, 0, 0]
    # measured computation is kept otherwise: the same operations, with calcs between them
    timed = tmp_path / "timed.goal"
    convert(capsys, replay_traces["pingpong"], timed)
    ops = lambda block: [line.split(": ", 1)[1] for line in block if ": " in line]
    timed_ops = ops(rank_blocks(timed)[0])
    assert [op for op in timed_ops if not op.startswith("calc")] == ops(expect0)
    assert any(op.startswith("calc") for op in timed_ops)


def test_ring_of_isend_irecv_waitall(capsys, tmp_path, replay_traces):
    out = tmp_path / "ring.goal"
    convert(capsys, replay_traces["ring"], out, "--cpu-scale", "0")
    for r, block in rank_blocks(out).items():
        assert block == [f"l0: recv 4096b from {(r + 3) % 4} tag 9", f"l1: send 4096b to {(r + 1) % 4} tag 9",
                         "l1 irequires l0"]
    assert ranks_of(capsys, out) == [hop(4096)] * RANKS


def test_bcast_on_a_split_communicator_lands_on_world_ranks(capsys, tmp_path, replay_traces):
    """MPI_Comm_split(rank % 2, key -rank): members [2, 0] and [3, 1]; the Bcast's root is sub-rank 1,
    world 0 and 1: one message each, 0 -> 2 and 1 -> 3, each in its communicator's own context; then
    the world's barrier."""
    out = tmp_path / "split.goal"
    convert(capsys, replay_traces["split"], out, "--cpu-scale", "0")
    sends, recvs = messages(out)
    assert sends == recvs
    bcasts = sorted(key for key in sends if key[2] == 256)
    assert [(src, dst) for src, dst, _, _ in bcasts] == [(0, 2), (1, 3)]
    tags = [tag for _, _, _, tag in bcasts]
    assert tags[0] != tags[1] and min(tags) > CONTEXT  # not the world's context
    barrier = [key for key in sends if key[2] == 0]
    # MPICH's point-to-point barrier (the default `mpich` algorithms): passed to MPI whole, waits yield
    assert barrier and all(tag == CONTEXT + UNADMITTED for *_, tag in barrier)
    assert simulate(capsys, out)["deadlock"] is None


def test_put_flush_epoch_and_a_test_polled_receive(capsys, tmp_path, replay_traces):
    """Each rank puts 512 bytes into its right neighbour and flushes: the put is a message to the target
    (in the one-sided context, received by the target's passive side), and what follows the flush (the
    Irecv) requires it. The receive is completed by the one MPI_Test that found it done; every send has
    its receive. Done in place (the default here: MPI's window, one host), the put is no message."""
    out = tmp_path / "rma.goal"
    # its window is MPI's (Win_allocate) and all ranks on this host: the put is a message only when
    # the ranks stand for nodes (--no-in-place); by default it is the origin's work in its call
    convert(capsys, replay_traces["rma"], out, "--cpu-scale", "0", "--no-in-place")
    sends, recvs = messages(out)
    assert sends == recvs
    assert Counter((s, d, b, t) for s, d, b, t in sends if t == 3) == Counter(
        (r, (r + 1) % 4, 8, 3) for r in range(RANKS))
    puts = {(s, d) for s, d, b, t in sends if b == 512 and t >= CONTEXT}
    assert puts == {(r, (r + 1) % 4) for r in range(RANKS)}
    for r, block in rank_blocks(out).items():
        put = next(line.split(":")[0] for line in block if re.match(rf"l\d+: send 512b to {(r + 1) % 4} tag", line))
        receive = next(line.split(":")[0] for line in block if line.endswith(f"recv 8b from {(r + 3) % 4} tag 3"))
        assert f"{receive} requires {put}" in block
    assert simulate(capsys, out)["deadlock"] is None
    in_place = tmp_path / "in-place.goal"
    assert f"{RANKS} one-sided operations done in place" in convert(capsys, replay_traces["rma"], in_place)[0]
    assert not {(s, d) for s, d, b, t in messages(in_place)[0] if b == 512 and t >= CONTEXT}
    assert simulate(capsys, in_place)["deadlock"] is None


def test_mpi4py_program_converts_with_every_message_matched(built, capsys, tmp_path):
    trace = traced(built, tmp_path / "py", [sys.executable, str(MPI4PY_PROGRAM), "6"])
    out = tmp_path / "py.goal"
    convert(capsys, trace, out)
    sends, recvs = messages(out)
    ends = lambda counter: Counter({(s, d, t): n for (s, d, _, t), n in counter.items()})
    assert sum(sends.values()) > 0 and ends(sends) == ends(recvs)
    assert simulate(capsys, out)["deadlock"] is None


@pytest.mark.parametrize("level, spinning", [("single", [False, False, True, True]),
                                             ("multiple", [False, False, False, False])])
def test_mpich_s_shared_memory_barriers_follow_its_threshold_and_thread_level(built, capsys, tmp_path, level,
                                                                              spinning):
    """With `--algorithms mpich-shm`, MPICH's first two barriers on a communicator are point-to-point
    (dissemination: two messages a rank on 4 ranks, waits that yield), the next ones flat release-gather
    barriers whose receivers spin; the tracer records the thread level MPI provided, and under
    MPI_THREAD_MULTIPLE no barrier goes through the buffers."""
    program = Path(__file__).with_name("trace_barriers_mpi4py.py")
    trace = traced(built, tmp_path / level, [sys.executable, str(program), level])
    out = tmp_path / f"{level}.goal"
    convert(capsys, trace, out, "--algorithms", "mpich-shm")
    sends, recvs = messages(out)
    assert sends == recvs
    senders, spins = {}, {}  # per barrier (the tag's sequence number)
    for (src, _, _, tag), n in sends.items():
        flags = tag % (1 << 20) - tag % (1 << 18)
        assert tag >= CONTEXT and flags in (UNADMITTED, UNADMITTED + SPINNING), tag
        k = tag % (1 << 18)
        senders.setdefault(k, Counter())[src] += n
        assert spins.setdefault(k, flags == UNADMITTED + SPINNING) == (flags == UNADMITTED + SPINNING)
    assert [spins[k] for k in sorted(spins)] == spinning
    # dissemination: 2 sends a rank; the flat barrier: 3 arrivals at rank 0, 3 releases from it
    flat, dissemination = Counter({0: 3, 1: 1, 2: 1, 3: 1}), Counter({r: 2 for r in range(RANKS)})
    assert [senders[k] for k in sorted(senders)] == [flat if s else dissemination for s in spinning]
    assert simulate(capsys, out)["deadlock"] is None


def test_otf2_converts_to_the_hand_computed_schedule(capsys, tmp_path):
    """test_trace.write_otf2's archive (ns ticks): the computation between calls is exact."""
    out = tmp_path / "otf2.goal"
    convert(capsys, write_otf2(tmp_path / "otf2"), out)
    blocks = rank_blocks(out)
    # rank 0 (also the passive target of rank 2's get): its send 200, then computation until 3000
    at = next(i for i, line in enumerate(blocks[0]) if line.endswith(": send 64b to 1 tag 7"))
    send, calc = blocks[0][at].split(":")[0], blocks[0][at + 1].split(":")[0]
    assert blocks[0][at + 1:at + 3] == [f"{calc}: calc 2800", f"{calc} requires {send}"]
    # Recv 50..300, Isend 400..410, Wait 500..600 completing it, then the barrier at 3000
    assert blocks[1][:9] == ["l0: recv 64b from 0 tag 7", "l1: calc 100", "l1 requires l0",
                             "l2: send 32b to 2 tag 3", "l2 requires l1", "l3: calc 90", "l3 irequires l2",
                             "l4: calc 2400", "l4 requires l3"]
    assert "l4 requires l2" in blocks[1]
    assert blocks[2][:3] == ["l0: recv 32b from 1 tag 3", "l1: calc 390", "l1 irequires l0"]
    sends, recvs = messages(out)
    assert sends == recvs
    assert simulate(capsys, out)["deadlock"] is None


@pytest.mark.parametrize("damage, message", [
    ("truncate", r"rank-00001\.ctrace: truncated or corrupt: \d+ bytes, the header promises \d+"),
    ("kind", r"rank-00000\.ctrace:2: unknown record kind 77"),
    ("dropped", r"rank-00002\.ctrace: 5 operations were not recorded"),
    ("missing", r": 1 of 4 rank files missing \(first: rank-00003\.ctrace\)"),
])
def test_bad_rank_files_are_one_clear_error(fails_cleanly, tmp_path, replay_traces, damage, message):
    copy = tmp_path / "t"
    shutil.copytree(replay_traces["ring"], copy)
    rank_file = lambda rank: copy / f"rank-{rank:05d}.ctrace"
    data = bytearray(rank_file({"truncate": 1, "kind": 0, "dropped": 2, "missing": 3}[damage]).read_bytes())
    if damage == "truncate":
        rank_file(1).write_bytes(data[:-10])
    elif damage == "kind":
        data[256 + 96 + 40:256 + 96 + 42] = (77).to_bytes(2, "little")  # record 2's kind
        rank_file(0).write_bytes(bytes(data))
    elif damage == "dropped":
        data[48:56] = (5).to_bytes(8, "little")
        rank_file(2).write_bytes(bytes(data))
    else:
        rank_file(3).unlink()
    fails_cleanly(["goal", "convert", str(copy), "-o", str(tmp_path / "x.goal")], message)
    assert not (tmp_path / "x.goal").exists()


def test_a_bad_otf2_archive_is_one_clear_error(fails_cleanly, tmp_path):
    bogus = tmp_path / "bogus.otf2"
    bogus.write_text("not an archive\n")
    fails_cleanly(["goal", "convert", str(bogus), "-o", str(tmp_path / "x.goal")],
                  r"bogus\.otf2: not a readable OTF2 trace")
    assert not (tmp_path / "x.goal").exists()


def test_mpi4py_collectives_on_world_and_a_split_communicator(built, capsys, tmp_path):
    """tests/trace_collectives_mpi4py.py: mpi4py calls the large-count forms; Alltoallv keeps its
    per-peer sizes (rank j sends rank i (i + 1) * 2 doubles), the split's Bcast lands on 0 -> 2 and
    1 -> 3, the nonblocking collectives complete at their Wait."""
    from contend.native.trace.files import FLAG_LARGE_COUNT, KINDS, read_directory

    program = Path(__file__).with_name("trace_collectives_mpi4py.py")
    trace = traced(built, tmp_path / "coll", [sys.executable, str(program)])
    for rank_trace in read_directory(trace):
        kinds = [KINDS[int(k)] for k in rank_trace.records["kind"]]
        assert kinds == ["init", "comm_create", "bcast", "allreduce", "alltoallv", "scan", "ibarrier", "wait",
                         "iallreduce", "wait", "finalize"]
        flags = dict(zip(kinds, rank_trace.records["flags"]))
        assert all(int(flags[k]) & FLAG_LARGE_COUNT for k in ("bcast", "allreduce", "alltoallv", "scan", "iallreduce"))
    out = tmp_path / "coll.goal"
    convert(capsys, trace, out, "--cpu-scale", "0")
    sends, recvs = messages(out)
    assert sends == recvs
    alltoallv = {(s, d): b for (s, d, b, t) in sends if t == CONTEXT + 1}  # the world's second collective
    assert alltoallv == {(j, i): (i + 1) * 16 for j in range(RANKS) for i in range(RANKS) if i != j}
    # the first collective of each split communicator (its context's first tag), passed to MPI whole
    bcast = sorted((s, d, b) for (s, d, b, t) in sends if t >= CONTEXT + (1 << 20) and t % (1 << 20) == UNADMITTED)
    assert bcast == [(0, 2, 512), (1, 3, 512)]
    assert simulate(capsys, out)["deadlock"] is None


# One-sided traffic's tags (engine/src/replay/emit.rs): context 2047; the origin's data admitted, the
# replies and the epochs' synchronization not.
RMA_DATA = CONTEXT + (2047 << 20)
RMA_GET_ACCUMULATE, RMA_REPLY = RMA_DATA + 2, RMA_DATA + UNADMITTED + 2
RMA_POST, RMA_DONE = RMA_DATA + UNADMITTED + 3, RMA_DATA + UNADMITTED + 4
RMA_ACK = RMA_DATA + UNADMITTED + (1 << 18) + 5  # a put's acknowledgement, spinning (docs/formats.md)
# tests/trace_rma_mpi4py.py's blocking/nonblocking pairs, in its order
PAIRS = ("gather", "scatter", "alltoallv", "allgatherv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
         "gatherv", "scatterv")


def test_mpi4py_atomics_pscw_and_nonblocking_collectives(built, capsys, tmp_path):
    """tests/trace_rma_mpi4py.py: every nonblocking collective becomes the messages of its blocking form
    (the same senders, receivers and sizes, v-forms' sizes per member included); each rank's atomics on
    its right neighbour are a message there and one back of their size (Fetch_and_op and
    Compare_and_swap 8 bytes, Get_accumulate 32, Rget_accumulate 16), its Raccumulate and PSCW put a
    message there; the PSCW epoch is a post to the left neighbour and a complete to the right one. Nothing
    is left out with a warning, and the schedule runs to its end."""
    from contend.native.trace.files import KINDS, read_directory

    program = Path(__file__).with_name("trace_rma_mpi4py.py")
    trace = traced(built, tmp_path / "rma", [sys.executable, str(program)])
    one_sided = {"put", "fetch_and_op", "compare_and_swap", "get_accumulate", "raccumulate", "rget_accumulate"}
    pscw = {"win_post", "win_start", "win_complete", "win_wait"}
    for rank_trace in read_directory(trace):
        rows = rank_trace.records
        kinds = [KINDS[int(k)] for k in rows["kind"]]
        pairs = ["init"] + [kind for name in PAIRS for kind in (name, "i" + name, "wait")]
        assert kinds[:len(pairs)] == pairs
        right = (rank_trace.rank + 1) % RANKS
        ops = [(kind, int(rows["bytes"][i]), int(rows["peer"][i])) for i, kind in enumerate(kinds) if kind in one_sided]
        assert ops == [("fetch_and_op", 8, right), ("compare_and_swap", 8, right), ("get_accumulate", 32, right),
                       ("raccumulate", 16, right), ("rget_accumulate", 16, right), ("put", 16, right)]
        assert [kind for kind in kinds if kind in pscw] == ["win_post", "win_start", "win_complete", "win_wait"]
    # The window is MPI's (Win.Allocate) and every rank on this host: MPI does the data movement in
    # place, so by default only the epoch's synchronization is messages; --no-in-place (ranks standing
    # for nodes) makes every operation one.
    in_place = tmp_path / "in-place.goal"
    printed = "".join(convert(capsys, trace, in_place, "--cpu-scale", "0"))
    assert f"{6 * RANKS} one-sided operations done in place" in printed, printed
    assert {t for (*_, t) in messages(in_place)[0] if t >= RMA_DATA} == {RMA_POST, RMA_DONE}
    out = tmp_path / "rma.goal"
    printed = "".join(convert(capsys, trace, out, "--cpu-scale", "0", "--no-in-place"))
    assert "time(s) in all" not in printed, printed  # no call left out or repaired
    sends, recvs = messages(out)
    assert sends == recvs
    world = Counter()
    for (s, d, b, t), n in sends.items():
        if CONTEXT <= t < CONTEXT + (1 << 20):
            world[(t % (1 << 18), s, d, b)] += n
    for k, name in enumerate(PAIRS):
        blocking = Counter({(s, d, b): n for (seq, s, d, b), n in world.items() if seq == 2 * k})
        nonblocking = Counter({(s, d, b): n for (seq, s, d, b), n in world.items() if seq == 2 * k + 1})
        assert blocking and nonblocking == blocking, name
    ialltoallv = {(s, d): b for (seq, s, d, b) in world if seq == 2 * PAIRS.index("alltoallv") + 1}
    # rank r sends member j 2 (r + 1) + j doubles
    assert ialltoallv == {(r, j): (2 * (r + 1) + j) * 8 for r in range(RANKS) for j in range(RANKS) if r != j}
    rma = Counter({key: n for key, n in sends.items() if key[3] >= RMA_DATA})
    expected = Counter()
    for r in range(RANKS):
        right, left = (r + 1) % RANKS, (r - 1) % RANKS
        for size in (8, 8, 32, 16):  # fetch_and_op, compare_and_swap, get_accumulate, rget_accumulate
            expected[(r, right, size, RMA_GET_ACCUMULATE)] += 1
            expected[(right, r, size, RMA_REPLY)] += 1
        expected[(r, right, 16, RMA_DATA)] += 2  # raccumulate, the PSCW put
        expected[(right, r, 0, RMA_ACK)] += 2  # and the target's acknowledgement of each
        expected[(r, left, 0, RMA_POST)] += 1
        expected[(r, right, 0, RMA_DONE)] += 1
    assert rma == expected
    assert simulate(capsys, out)["deadlock"] is None


def test_the_c_stress_converts_whole_through_the_classic_entry_points(built, capsys, tmp_path):
    """native/trace/test/stress.c: every one-sided kind (Raccumulate, Rget_accumulate, Fetch_and_op and
    Compare_and_swap among them), a PSCW epoch ended by a Win_test loop and the nonblocking collectives,
    all through their classic (not `_c`) entry points: converted with no call left out, every message
    received, the schedule runs to its end."""
    trace = traced(built, tmp_path / "stress", [str(mpi.build_dir(built) / "trace-stress"), "60", "11"])
    out = tmp_path / "stress.goal"
    printed = "".join(convert(capsys, trace, out, "--no-in-place"))  # its windows are MPI's: every op a message
    assert "time(s) in all" not in printed, printed
    sends, recvs = messages(out)
    assert sends == recvs
    assert {t for (_, _, _, t) in sends} >= {RMA_GET_ACCUMULATE, RMA_REPLY, RMA_POST, RMA_DONE}
    assert simulate(capsys, out)["deadlock"] is None


def test_calls_without_an_algorithm_are_named_not_lost(built, capsys, tmp_path):
    """tests/trace_unconverted_mpi4py.py: Alltoallw, a neighborhood allgather, a nonblocking
    neighborhood alltoall and a persistent Allreduce are traced as calls the converter leaves out, each
    named in one warning with its count (their time counts as computation), and the rest converts and
    runs to its end."""
    from contend.native.trace.files import KINDS, read_directory

    program = Path(__file__).with_name("trace_unconverted_mpi4py.py")
    trace = traced(built, tmp_path / "unconverted", [sys.executable, str(program)])
    for rank_trace in read_directory(trace):
        kinds = [KINDS[int(k)] for k in rank_trace.records["kind"]]
        assert kinds.count("unconverted") == 4, kinds  # the persistent request's init once, its starts not
    out = tmp_path / "unconverted.goal"
    _, err = convert(capsys, trace, out, "--cpu-scale", "0")
    for name in ("MPI_Neighbor_allgather", "MPI_Ineighbor_alltoall", "MPI_Alltoallw", "MPI_Allreduce_init"):
        line = next(line for line in err.splitlines() if name + ":" in line)
        assert f"({RANKS} time(s) in all)" in line, line
    assert simulate(capsys, out)["deadlock"] is None
