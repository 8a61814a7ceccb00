"""The tracer (native/trace, libcontend-trace.so) and `contend trace` end to end under real MPI (4 ranks
on this host): every operation a program issued is in the trace (from C and from mpi4py, whose calls
are the large-count entry points), every message is paired with its receive, bytes sent = bytes
received, clocks on one host agree within the estimate's own error bound, call sites name the right
source line; bad traces (truncated, mismatched, missing rank files, missing symbols, a full buffer) give
one clear line and exit 2, or a warning. OTF2 import: a trace written with the otf2 writer comes back
as the hand-computed records. No timing is asserted."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from contend.native import mpi
from contend.cli import main

RANKS = 4
SEND_KINDS = ("send", "isend", "ssend", "issend")
RECV_KINDS = ("recv", "irecv")
MPI4PY_PROGRAM = Path(__file__).with_name("trace_mpi4py.py")
INCAST_SOURCE = Path(__file__).resolve().parents[1] / "native" / "trace" / "test" / "incast.c"


def trace(capsys, directory: Path, library, program: list[str], *options: str, ranks: int = RANKS):
    """`contend trace` of the program: (exit code, the program's JSON lines, stderr)."""
    code = main(["trace", "-o", str(directory), *options, "--timeout", "300", "--",
                 str(library.mpiexec), "-n", str(ranks), *program])
    out, err = capsys.readouterr()
    return code, program_lines(out), err


def program_lines(out: str) -> list[dict]:
    """The ranks' JSON objects (their lines may arrive interleaved through the launcher)."""
    return [json.loads(text) for text in re.findall(r"\{[^{}]*\}", out)]


def records(directory: Path) -> pd.DataFrame:
    return pd.read_parquet(directory / "records.parquet")


def metadata(directory: Path) -> dict:
    import pyarrow.parquet as pq

    raw = pq.read_schema(directory / "records.parquet").metadata
    return {k.decode(): v.decode() for k, v in raw.items()}


def check_messages(frame: pd.DataFrame) -> None:
    """Every send has its receive (same message number, same ends, tag and size), none left over."""
    two_sided = frame[frame["kind"].isin(SEND_KINDS + RECV_KINDS)]
    assert (two_sided["message"] >= 0).all(), two_sided[two_sided["message"] < 0].head()
    ends = two_sided.groupby("message")
    assert (ends.size() == 2).all()
    assert (ends["src"].nunique() == 1).all() and (ends["dst"].nunique() == 1).all()
    assert (ends["tag"].nunique() == 1).all() and (ends["bytes"].nunique() == 1).all()
    sends = two_sided[two_sided["kind"].isin(SEND_KINDS)]
    receives = two_sided[two_sided["kind"].isin(RECV_KINDS)]
    assert sends["bytes"].sum() == receives["bytes"].sum()
    assert (sends["src"] == sends["rank"]).all() and (receives["dst"] == receives["rank"]).all()


def check_times(frame: pd.DataFrame) -> None:
    assert (frame["completed"] >= frame["posted"]).all()
    assert (frame["waited"] >= frame["posted"]).all() and (frame["waited"] <= frame["completed"]).all()


@pytest.fixture(scope="module")
def c_stress(built, tmp_path_factory):
    directory = tmp_path_factory.mktemp("c-stress")
    program = [str(mpi.build_dir(built) / "trace-stress"), "60", "11"]
    argv = ["trace", "-o", str(directory), "--timeout", "300", "--", str(built.mpiexec), "-n", str(RANKS),
            *program]
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()[-3000:]
    return directory, program_lines(out.getvalue()), err.getvalue()


def test_c_stress_records_every_operation_issued(c_stress):
    directory, lines, err = c_stress
    assert len(lines) == RANKS
    frame = records(directory)
    per_rank = frame.groupby(["rank", "kind"]).size()
    for line in lines:
        rank = line["rank"]
        for kind in ("send", "isend", "ssend", "issend", "recv", "irecv", "get", "accumulate",
                     "get_accumulate", "rput", "rget", "raccumulate", "rget_accumulate", "fetch_and_op",
                     "compare_and_swap"):
            assert per_rank.get((rank, kind), 0) == line[kind], (rank, kind)
        assert per_rank.get((rank, "put"), 0) == line["put"] + line["fence_put"] + line["pscw_put"]
    assert sum(line["sendrecv"] for line in lines) > 0  # Sendrecv(_replace): counted in send and recv above
    assert all(line["buffered_ready"] == 4 for line in lines)  # Bsend, Rsend, Ibsend, Irsend: in send, isend
    assert all(line["persistent"] == 10 for line in lines)  # 5 starts of a Send_init and a Recv_init each
    # the nonblocking collectives through their classic entry points, each completed by the one Waitall
    regions = pd.read_parquet(directory / "regions.parquet")
    nonblocking = ("igather", "iscatter", "ialltoallv", "iallgatherv", "igatherv", "iscatterv", "ireduce_scatter",
                   "ireduce_scatter_block", "iscan", "iexscan")
    assert all(line["nonblocking_collectives"] == len(nonblocking) for line in lines)
    per_rank_regions = regions.groupby(["rank", "kind"]).size()
    assert all(per_rank_regions.get((rank, kind), 0) == 1 for rank in range(RANKS) for kind in nonblocking)
    # the PSCW epoch: its put completed at Win_complete, its exposure ended by the Win_test that succeeded
    assert all(per_rank_regions.get((rank, kind), 0) == 1 for rank in range(RANKS)
               for kind in ("win_post", "win_start", "win_complete", "win_wait"))
    assert lines[0]["all_sent"] == lines[0]["all_received"]
    sends = frame[frame["kind"].isin(SEND_KINDS)]
    assert sends["bytes"].sum() == lines[0]["all_sent"]
    check_messages(frame)
    check_times(frame)
    assert "warning" not in err


def test_clocks_on_one_host_agree_within_their_error_bound(c_stress):
    directory, _, _ = c_stress
    meta = metadata(directory)
    assert meta["contend.source"] == "trace" and meta["contend.time_unit"] == "ps"
    assert json.loads(meta["contend.ranks"]) == RANKS
    clock = json.loads(meta["contend.clock"])
    assert [c["rank"] for c in clock] == list(range(RANKS))
    assert clock[0]["offset_ns"] == 0
    for c in clock[1:]:  # one host, one CLOCK_MONOTONIC: the true offset is 0
        assert abs(c["offset_ns"]) <= c["error_ns"] + 1, c


def test_one_sided_ops_complete_at_their_flush_and_regions_are_kept(c_stress):
    directory, _, _ = c_stress
    frame = records(directory)
    one_sided = frame[frame["kind"].isin(("put", "get", "accumulate", "get_accumulate", "fetch_and_op",
                                          "compare_and_swap"))]
    assert len(one_sided) > 0 and (one_sided["src"] == one_sided["rank"]).all()
    assert (one_sided["completed"] > one_sided["returned"]).all()  # completed by a later flush or fence
    regions = pd.read_parquet(directory / "regions.parquet")
    kinds = set(regions["kind"])
    assert {"barrier", "wait", "win_flush", "win_flush_all", "win_flush_local", "fence", "win_lock_all",
            "win_unlock_all", "allreduce"} <= kinds
    assert set(frame[frame["src"] == frame["dst"]]["kind"]) >= {"barrier", "fence"}


def test_mpi4py_large_count_entry_points_are_traced(built, tmp_path, capsys):
    code, lines, err = trace(capsys, tmp_path / "py", built, [sys.executable, str(MPI4PY_PROGRAM), "8"])
    assert code == 0, err[-3000:]
    frame = records(tmp_path / "py")
    per_rank = frame.groupby(["rank", "kind"]).size()
    assert len(lines) == RANKS
    for line in lines:
        for kind, count in line.items():
            if kind != "rank":
                assert per_rank.get((line["rank"], kind), 0) == count, (line["rank"], kind)
    check_messages(frame)
    check_times(frame)


@pytest.fixture(scope="module")
def incast(built, tmp_path_factory):
    """The incast program, copied (so its binary can be removed later) and traced."""
    import contextlib
    import io

    directory = tmp_path_factory.mktemp("incast")
    binary = directory / "trace-incast"
    shutil.copy(mpi.build_dir(built) / "trace-incast", binary)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", "-o", str(directory / "t"), "--depth", "2", "--timeout", "300", "--",
                     str(built.mpiexec), "-n", str(RANKS), str(binary), "5", "1024"])
    assert code == 0, err.getvalue()[-3000:]
    return directory, binary


def source_line(marker: str) -> int:
    for number, line in enumerate(INCAST_SOURCE.read_text().splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError(marker)


def test_call_sites_name_the_source_line(incast):
    directory, _ = incast
    frame = records(directory / "t")
    puts = frame[frame["kind"] == "put"]
    assert len(puts) == 2 * 5 * (RANKS - 1)
    into_zero = puts[puts["dst"] == 0]
    assert set(into_zero["src"]) == set(range(1, RANKS)) and len(into_zero) == 5 * (RANKS - 1)
    assert set(into_zero["call_site"]) == {f"main (incast.c:{source_line('/* INCAST */')})"}
    assert set(puts[puts["dst"] != 0]["call_site"]) == {f"main (incast.c:{source_line('/* RING */')})"}
    # depth 2: the caller of main (the C library) comes first in the context, outermost first
    assert all(context.endswith(site) and " <- " in context
               for context, site in zip(into_zero["context"], into_zero["call_site"]))


def test_missing_symbols_degrade_to_addresses_with_one_warning(incast, tmp_path, capsys):
    directory, binary = incast
    copy = tmp_path / "t"
    shutil.copytree(directory / "t", copy)
    binary.unlink()  # the executable is gone: its addresses cannot be symbolized
    assert main(["trace", "convert", str(copy)]) == 0
    err = capsys.readouterr().err
    assert len(re.findall(r"no symbols for \d+ address\(es\) in trace-incast", err)) == 1
    puts = records(copy).query("kind == 'put'")
    assert all(re.fullmatch(r"0x[0-9a-f]+ in trace-incast", site) for site in puts["call_site"])


def rank_file(directory: Path, rank: int) -> Path:
    return directory / f"rank-{rank:05d}.ctrace"


@pytest.mark.parametrize("damage, message", [
    ("truncate", r"rank-00001\.ctrace: truncated or corrupt: \d+ bytes, the header promises \d+"),
    ("short", r"rank-00002\.ctrace: truncated: 100 bytes, shorter than the 256-byte header"),
    ("missing", r"1 of 4 rank files missing \(rank-00003\.ctrace\)"),
    ("mismatch", r"mismatched rank counts in the rank files \(.*rank-00000\.ctrace: 5"),
    ("magic", r"rank-00000\.ctrace: not a contend trace file \(bad magic\)"),
    ("empty", r"no rank-NNNNN\.ctrace files"),
])
def test_bad_traces_are_one_clear_error(incast, tmp_path, capsys, damage, message):
    directory, _ = incast
    copy = tmp_path / "t"
    shutil.copytree(directory / "t", copy)
    (copy / "records.parquet").unlink()
    if damage == "truncate":
        data = rank_file(copy, 1).read_bytes()
        rank_file(copy, 1).write_bytes(data[:-50])
    elif damage == "short":
        rank_file(copy, 2).write_bytes(rank_file(copy, 2).read_bytes()[:100])
    elif damage == "missing":
        rank_file(copy, 3).unlink()
    elif damage == "mismatch":
        data = bytearray(rank_file(copy, 0).read_bytes())
        data[28:32] = (5).to_bytes(4, "little")  # the header's `ranks`
        rank_file(copy, 0).write_bytes(bytes(data))
    elif damage == "magic":
        data = bytearray(rank_file(copy, 0).read_bytes())
        data[0:4] = b"XXXX"
        rank_file(copy, 0).write_bytes(bytes(data))
    elif damage == "empty":
        for rank in range(RANKS):
            rank_file(copy, rank).unlink()
    assert main(["trace", "convert", str(copy)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (copy / "records.parquet").exists()


def test_a_full_buffer_keeps_the_first_records_and_counts_the_rest(built, tmp_path, capsys):
    code, _, err = trace(capsys, tmp_path / "small", built,
                         [str(mpi.build_dir(built) / "trace-incast"), "20", "64"], "--records", "30")
    assert code == 0, err
    assert re.search(r"operation\(s\) not recorded: the buffer of rank\(s\) .* filled", err)
    from contend.native.trace.files import read_rank

    headers = [read_rank(rank_file(tmp_path / "small", rank)).header for rank in range(RANKS)]
    # ranks 1..3 issue 40 puts, 40 flushes and more: 30 kept, the rest counted; rank 0 only a few calls
    assert all(int(h["records"]) == 30 and int(h["dropped"]) > 40 for h in headers[1:])
    assert int(headers[0]["records"]) < 30 and int(headers[0]["dropped"]) == 0
    counts = json.loads(metadata(tmp_path / "small")["contend.counts"])
    assert counts["dropped"] == sum(int(h["dropped"]) for h in headers)


def test_a_program_that_never_finalizes_still_leaves_its_trace(built, tmp_path, capsys):
    code = main(["trace", "-o", str(tmp_path / "t"), "--timeout", "300", "--", str(built.mpiexec), "-n",
                 str(RANKS), str(mpi.build_dir(built) / "trace-incast"), "3", "64", "exit"])
    err = capsys.readouterr().err
    if code != 0:  # the launcher may call that a failure: the rank files are there all the same
        assert "contend trace convert" in err
        assert main(["trace", "convert", str(tmp_path / "t")]) == 0
        err = capsys.readouterr().err
    assert re.search(r"rank\(s\) 0, 1, 2, 3 never called MPI_Finalize", err)
    puts = records(tmp_path / "t").query("kind == 'put'")
    assert len(puts) == 2 * 3 * (RANKS - 1)


SPAWNING = """
import sys
from mpi4py import MPI
CHILD = "from mpi4py import MPI; p = MPI.Comm.Get_parent(); w = MPI.COMM_WORLD; " \\
        "w.send(1, dest=(w.rank + 1) % w.size, tag=6); w.recv(tag=6); p.Barrier(); p.Disconnect()"
world = MPI.COMM_WORLD
children = world.Spawn(sys.executable, ["-c", CHILD], maxprocs=3)
world.send(world.rank, dest=(world.rank + 1) % world.size, tag=5)
world.recv(tag=5)
children.Barrier()
children.Disconnect()
"""


def test_processes_a_program_spawns_do_not_replace_its_ranks_files(built, tmp_path, capsys):
    # They inherit CONTEND_TRACE_DIR; their rank files used to replace the job's (rank-00000, ...)
    # and make the trace unreadable ("mismatched rank counts"), or, with as many ranks, wrong.
    code, _, err = trace(capsys, tmp_path / "spawn", built, [sys.executable, "-c", SPAWNING], ranks=2)
    assert code == 0, err[-3000:]
    assert "processes started by MPI_Comm_spawn are not traced" in err
    frame = records(tmp_path / "spawn")
    assert sorted(frame["rank"].unique()) == [0, 1]
    messages = frame[frame["kind"].isin(SEND_KINDS + RECV_KINDS)]
    assert sorted(messages["tag"]) == [5, 5, 5, 5]  # the job's own ring, none of the children's
    check_messages(frame)


def test_bad_command_lines(built, tmp_path, capsys):
    assert main(["trace", "--", "true"]) == 2
    assert "-o DIR is required" in capsys.readouterr().err
    assert main(["trace", "-o", str(tmp_path / "x"), "--depth", "9", "--", "true"]) == 2
    assert "--depth: 9 is out of range [1, 6]" in capsys.readouterr().err
    assert main(["trace", "-o", str(tmp_path / "x")]) == 2
    assert "give the command to trace" in capsys.readouterr().err
    assert main(["trace", "convert", str(tmp_path / "nowhere")]) == 2
    assert "no such trace directory" in capsys.readouterr().err
    # a program that is not traced leaves no rank files: the directory this run made goes again
    assert main(["trace", "-o", str(tmp_path / "made" / "deeper"), "--", "true"]) == 2
    assert "no rank-NNNNN.ctrace files" in capsys.readouterr().err
    assert not (tmp_path / "made").exists()


# --- OTF2 import -----------------------------------------------------------------------------------

def write_otf2(path: Path) -> Path:
    """Three ranks: rank 0 sends 64 bytes to rank 1 (tag 7), rank 1 Isends 32 bytes to rank 2 which
    Irecvs it, rank 2 gets 4096 bytes from rank 0 inside ga_get, flushed; then a barrier."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

    with otf2.writer.open(str(path), timer_resolution=10**9) as archive:
        d = archive.definitions
        node = d.system_tree_node("node")
        locations = [d.location(f"main {r}", group=d.location_group(f"rank {r}", system_tree_parent=node))
                     for r in range(3)]
        world = d.comm("MPI_COMM_WORLD", group=d.group("world", group_type=GroupType.COMM_LOCATIONS,
                                                       paradigm=Paradigm.MPI, members=locations))
        window = d.rma_win("win", comm=world)
        main_region = d.region("main", source_file="app.c", begin_line_number=10)
        ga_get = d.region("ga_get", source_file="ga.c", begin_line_number=120)
        mpi_region = {name: d.region(name, paradigm=Paradigm.MPI, region_role=RegionRole.POINT2POINT)
                      for name in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Get",
                                   "MPI_Win_flush", "MPI_Barrier")}
        w = [archive.event_writer_from_location(location) for location in locations]
        for r in range(3):
            w[r].enter(0, main_region)
        w[0].enter(100, mpi_region["MPI_Send"]); w[0].mpi_send(110, 1, world, 7, 64)
        w[0].leave(200, mpi_region["MPI_Send"])
        w[1].enter(50, mpi_region["MPI_Recv"]); w[1].mpi_recv(290, 0, world, 7, 64)
        w[1].leave(300, mpi_region["MPI_Recv"])
        w[1].enter(400, mpi_region["MPI_Isend"]); w[1].mpi_isend(401, 2, world, 3, 32, 77)
        w[1].leave(410, mpi_region["MPI_Isend"])
        w[1].enter(500, mpi_region["MPI_Wait"]); w[1].mpi_isend_complete(590, 77)
        w[1].leave(600, mpi_region["MPI_Wait"])
        w[2].enter(300, mpi_region["MPI_Irecv"]); w[2].mpi_irecv_request(301, 5)
        w[2].leave(310, mpi_region["MPI_Irecv"])
        w[2].enter(700, mpi_region["MPI_Wait"]); w[2].mpi_irecv(790, 1, world, 3, 32, 5)
        w[2].leave(800, mpi_region["MPI_Wait"])
        w[2].enter(1000, ga_get); w[2].enter(1005, mpi_region["MPI_Get"]); w[2].rma_get(1010, window, 0, 4096, 1)
        w[2].leave(1020, mpi_region["MPI_Get"])
        w[2].enter(1030, mpi_region["MPI_Win_flush"]); w[2].rma_op_complete_blocking(1990, window, 1)
        w[2].leave(2000, mpi_region["MPI_Win_flush"]); w[2].leave(2001, ga_get)
        for r in range(3):
            w[r].enter(3000, mpi_region["MPI_Barrier"]); w[r].mpi_collective_begin(3001)
            w[r].mpi_collective_end(3100 + r, CollectiveOp.BARRIER, world, 0xFFFFFFFF, 0, 0)
            w[r].leave(3101 + r, mpi_region["MPI_Barrier"]); w[r].leave(4000, main_region)
    return path / "traces.otf2"


def test_otf2_import_gives_the_hand_computed_records(tmp_path, capsys):
    anchor = write_otf2(tmp_path / "otf2")
    out = tmp_path / "records.parquet"
    assert main(["trace", "import", str(anchor), "-o", str(out)]) == 0
    frame = pd.read_parquet(out)
    ns = frame.assign(posted=frame["posted"] // 1000, completed=frame["completed"] // 1000,
                      waited=frame["waited"] // 1000)
    rows = {(r.kind, r.rank): r for r in ns.itertuples()}
    assert (rows["send", 0].src, rows["send", 0].dst, rows["send", 0].bytes, rows["send", 0].tag) == (0, 1, 64, 7)
    assert (rows["send", 0].posted, rows["send", 0].completed) == (100, 200)
    assert (rows["recv", 1].src, rows["recv", 1].posted, rows["recv", 1].completed) == (0, 50, 300)
    assert (rows["isend", 1].posted, rows["isend", 1].completed, rows["isend", 1].waited) == (400, 600, 500)
    assert (rows["irecv", 2].src, rows["irecv", 2].dst, rows["irecv", 2].bytes) == (1, 2, 32)
    assert (rows["irecv", 2].posted, rows["irecv", 2].completed, rows["irecv", 2].waited) == (300, 800, 700)
    get = rows["get", 2]
    assert (get.src, get.dst, get.bytes, get.posted, get.completed, get.waited) == (2, 0, 4096, 1005, 2000, 1030)
    assert get.call_site == "ga_get (ga.c:120)" and get.context == "main (app.c:10) <- ga_get (ga.c:120)"
    barriers = ns[ns["kind"] == "barrier"].sort_values("rank")
    assert list(barriers["completed"]) == [3101, 3102, 3103] and list(barriers["src"]) == [0, 1, 2]
    assert len(frame) == 8  # send, recv, isend, irecv, get, three barriers
    import pyarrow.parquet as pq

    meta = pq.read_schema(out).metadata
    assert meta[b"contend.source"] == b"trace" and meta[b"contend.ranks"] == b"3"


def test_a_bad_otf2_file_is_one_clear_error(tmp_path, capsys):
    bogus = tmp_path / "bogus.otf2"
    bogus.write_text("not an archive\n")
    assert main(["trace", "import", str(bogus), "-o", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "bogus.otf2: not a readable OTF2 trace" in err and "Traceback" not in err
    assert main(["trace", "import", str(tmp_path / "none.otf2"), "-o", str(tmp_path / "r.parquet")]) == 2
    assert "no such OTF2 anchor file" in capsys.readouterr().err
    assert not (tmp_path / "r.parquet").exists()


def test_diagnose_reads_a_trace_directory(incast, tmp_path, capsys):
    directory, _ = incast
    report = tmp_path / "d.json"
    assert main(["diagnose", str(directory / "t"), "--machine", "loggops-reference", "--json", str(report)]) == 0
    capsys.readouterr()
    diagnosis = json.loads(report.read_text())
    assert diagnosis["source"] == "trace" and diagnosis["ranks"] == RANKS
    assert {site["call_site"] for site in diagnosis["call_sites"]} <= {
        f"main (incast.c:{source_line('/* INCAST */')})", f"main (incast.c:{source_line('/* RING */')})"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["diagnose", str(empty), "--machine", "loggops-reference"]) == 2
    assert "a directory without records.parquet" in capsys.readouterr().err


def replay_trace(built, directory: Path, mode: str) -> list:
    """`contend trace` of native/trace/test/replay.c in one of its modes, read back per rank."""
    import contextlib
    import io

    from contend.native.trace.files import read_directory

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", "-o", str(directory), "--timeout", "120", "--", str(built.mpiexec), "-n",
                     str(RANKS), str(mpi.build_dir(built) / "trace-replay"), mode])
    assert code == 0, err.getvalue()[-3000:]
    return read_directory(directory)


def kinds_of(trace) -> list[str]:
    from contend.native.trace.files import KINDS

    return [KINDS[int(k)] for k in trace.records["kind"]]


def test_sub_communicators_are_recorded_with_their_world_ranks(built, tmp_path):
    # Comm_split by parity with key -rank: the even half is world (2, 0), the odd half (3, 1); the
    # Bcast's root is sub-rank 1, i.e. world 0 or 1.
    for trace in replay_trace(built, tmp_path / "split", "split"):
        rows = trace.records
        assert kinds_of(trace) == ["init", "comm_create", "bcast", "barrier", "finalize"]
        members = (2, 0) if trace.rank % 2 == 0 else (3, 1)
        new_id = int(rows["bytes"][1])
        assert new_id > 0 and trace.communicators == {new_id: members}
        assert int(rows["tag"][1]) == 0  # created from MPI_COMM_WORLD
        assert (int(rows["tag"][2]), int(rows["peer"][2]), int(rows["bytes"][2])) == (new_id, members[1], 256)
        assert int(rows["tag"][3]) == 0


def test_each_completion_names_its_completing_call_exactly(built, tmp_path):
    from contend.native.trace.files import COMPLETERS

    for mode, deferred, completer, completed in (("ring", ("irecv", "isend"), "wait", 2),
                                                 ("rma", ("put", "irecv"), None, 2)):
        for trace in replay_trace(built, tmp_path / mode, mode):
            rows, kinds = trace.records, kinds_of(trace)
            stamps = {int(r): i for i, r in enumerate(rows["returned"]) if int(rows["kind"][i]) in COMPLETERS}
            assert len(stamps) == sum(int(k) in COMPLETERS for k in rows["kind"])  # unique per rank
            done = [stamps[int(rows["completed"][i])] for i, k in enumerate(kinds) if k in deferred]
            assert len(done) == completed and all(j > i for i, j in zip(
                [i for i, k in enumerate(kinds) if k in deferred], done))
            if completer:
                assert {kinds[j] for j in done} == {completer}
            else:  # the put by its flush, the Test-polled receive by the one Test that completed it
                assert [kinds[j] for j in done] == ["win_flush", "test"]
                assert kinds.count("test") == 1


def test_every_deferred_operation_of_the_stress_program_names_its_completing_call(c_stress):
    """All eight Wait/Test calls, MPICH's shared built-in request for sends done in their call, flushes,
    unlocks and fences: each nonblocking or one-sided operation's completed is exactly one completing
    record's return, and those returns are unique per rank."""
    import numpy as np

    from contend.native.trace.files import COMPLETERS, KINDS, read_directory

    deferred = {"isend", "issend", "irecv", "put", "get", "accumulate", "get_accumulate", "rput", "rget"}
    directory, _, _ = c_stress
    for trace in read_directory(directory):
        rows = trace.records
        stamps = rows["returned"][np.isin(rows["kind"], COMPLETERS)]
        assert len(set(stamps.tolist())) == len(stamps)
        kinds = [KINDS[int(k)] for k in rows["kind"]]
        done = [int(c) for k, c in zip(kinds, rows["completed"]) if k in deferred]
        assert len(done) > 50 and set(done) <= set(stamps.tolist()), trace.path


def test_a_name_without_its_end_in_a_damaged_names_table_is_a_user_error():
    from pathlib import Path

    import numpy as np

    from contend.errors import UserError
    from contend.native.trace.files import RankTrace

    trace = RankTrace(Path("rank-00000.ctrace"), np.zeros(1)[0], np.zeros(0), np.zeros(0), b"libc.so\0main", {})
    assert trace.object_name(0) == "libc.so"
    with pytest.raises(UserError, match=r"rank-00000\.ctrace: the name at offset 8 of its names table has no end"):
        trace.object_name(8)
