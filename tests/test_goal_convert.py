"""`contend goal convert`: liballprof traces to GOAL. Parity with LogGOPSim's Schedgen on its own sample
traces, hand-checkable traces against the closed forms of docs/models.md, and bad traces."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from contend.cli import main

DATA = Path(__file__).parent / "data" / "liballprof"
SCHEDGEN = DATA / "schedgen"
# LogGOPSim's defaults (the reference GOAL files were simulated with them there too)
L, O, G_GAP, G = 2500, 1500, 1000, 6
PARAMS = ["-L", str(L), "-o", str(O), "-g", str(G_GAP), "-G", str(G), "-O", "0", "-S", "65535"]
# A collective's tag bits: unadmitted (2^19) and spinning (2^18) (docs/formats.md).
UNADMITTED = 1 << 19


def hop(size: int) -> int:
    """docs/models.md, closed forms: one eager message, send start to receive completion."""
    return 2 * O + L + (max(size, 1) - 1) * G


def convert(capsys, trace: Path, out: Path, *options: str) -> str:
    assert main(["goal", "convert", str(trace), "-o", str(out), *options]) == 0
    return capsys.readouterr().out


def simulate(capsys, goal: Path) -> dict:
    code = main(["sim", str(goal), *PARAMS, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == (3 if result["deadlock"] else 0)
    return result


def ranks_of(capsys, goal: Path) -> list[int]:
    result = simulate(capsys, goal)
    assert result["deadlock"] is None
    return result["ranks"]


def rank_blocks(goal: Path) -> dict[int, list[str]]:
    """The statements of each rank block."""
    blocks, current = {}, None
    for line in goal.read_text().splitlines():
        if m := re.match(r"rank (\d+) \{", line):
            current = blocks.setdefault(int(m.group(1)), [])
        elif line == "}":
            current = None
        elif current is not None:
            current.append(line)
    return blocks


# (sample, Schedgen's GOAL, contend's options): Schedgen's algorithms, same leave-outs
PARITY = [
    ("simple", "simple.goal", []),
    ("vladimir", "vladimir.goal", []),
    ("sphot", "sphot-nop2p.goal", ["--no-p2p"]),
    ("sphot", "sphot-nocolls.goal", ["--no-collectives"]),
    ("sphot", "sphot-nops3.goal", ["--window", "0:3"]),  # Schedgen's --traces-nops 3
]


@pytest.mark.parametrize("sample,reference,options", PARITY)
def test_same_finish_times_as_schedgens_schedule(capsys, tmp_path, sample, reference, options):
    out = tmp_path / "app.goal"
    summary = convert(capsys, DATA / sample, out, "--algorithms", "schedgen", *options)
    assert re.match(r"wrote .*: 4 ranks, [\d,]+ records read, [\d,]+ ops written", summary)
    assert ranks_of(capsys, out) == ranks_of(capsys, SCHEDGEN / reference)


def test_sphot_schedgen_deadlocks_where_contend_is_right(capsys, tmp_path):
    """Schedgen's SPHOT schedule deadlocks: rank 0's MPI_ANY_TAG receives take the barrier's and the
    reductions' messages (Schedgen tags collectives 1000000 + n, in the application's tag space). MPI
    never matches collective traffic with a point-to-point receive; contend tags it from 2^31 up, which
    the any-tag wildcard does not match. Moving Schedgen's collective tags there gives exactly
    contend's conversion, rank by rank."""
    assert simulate(capsys, SCHEDGEN / "sphot.goal")["deadlock"] is not None
    out = tmp_path / "sphot.goal"
    convert(capsys, DATA / "sphot", out, "--algorithms", "schedgen")
    ours = ranks_of(capsys, out)
    moved = tmp_path / "schedgen-context.goal"
    text = (SCHEDGEN / "sphot.goal").read_text()
    moved.write_text(re.sub(r"tag (\d{7,})", lambda m: f"tag {int(m.group(1)) + 2**31}", text))
    assert ranks_of(capsys, moved) == ours
    # MPICH's default algorithms for these sizes are Schedgen's too (dissemination barrier of 0 bytes
    # instead of 1 costs the same: a 0-byte message costs a 1-byte one's).
    default = tmp_path / "mpich.goal.gz"  # gzip on the way
    convert(capsys, DATA / "sphot", default)
    assert ranks_of(capsys, default) == ours


def test_pingpong_is_the_hand_written_schedule(capsys, tmp_path):
    out = tmp_path / "pp.goal"
    convert(capsys, DATA / "hand" / "pingpong", out)
    assert rank_blocks(out) == {
        0: ["l0: calc 10000", "l1: send 1000b to 1 tag 7", "l1 requires l0", "l2: recv 1000b from 1 tag 7",
            "l2 requires l1", "l3: calc 5000", "l3 requires l2"],
        1: ["l0: recv 1000b from 0 tag 7", "l1: calc 3000", "l1 requires l0", "l2: send 1000b to 0 tag 7",
            "l2 requires l1"],
    }
    # rank 0: 10 us, a round trip around rank 1's 3 us, 5 us; rank 1 ends when its answer's o is paid
    assert ranks_of(capsys, out) == [10000 + 2 * hop(1000) + 3000 + 5000, 10000 + hop(1000) + 3000 + O]


def test_ring_of_isend_irecv_waitall(capsys, tmp_path):
    """Each rank posts its receive, then sends (which may start once the receive has started), then
    waits for both: every rank finishes one message after its 1 us of computation."""
    out = tmp_path / "ring.goal"
    convert(capsys, DATA / "hand" / "ring", out)
    for r, block in rank_blocks(out).items():
        assert block == ["l0: calc 1000", f"l1: recv 64b from {(r + 3) % 4} tag 1", "l1 requires l0",
                         f"l2: send 64b to {(r + 1) % 4} tag 1", "l2 irequires l1"]
    assert ranks_of(capsys, out) == [1000 + hop(64)] * 4


def test_bcast_on_a_sub_communicator(capsys, tmp_path):
    """MPI_Comm_split(color = rank % 2, key = -rank): members [2, 0] and [3, 1], so the broadcasts' roots
    (rank 0 of each) are world ranks 2 and 3; each broadcast is one message in its own context, with
    the unadmitted bit (2^19: libcontend-throttle.so passes a broadcast to MPI whole); MPICH's
    point-to-point broadcast (the default algorithms) does not spin."""
    out = tmp_path / "sub.goal"
    convert(capsys, DATA / "hand" / "subcomm", out)
    blocks = rank_blocks(out)
    tag_a, tag_b = 2**31 + (1 << 20) + UNADMITTED, 2**31 + (2 << 20) + UNADMITTED
    assert blocks[0] == ["l0: calc 3000", f"l1: recv 1000b from 2 tag {tag_a}", "l1 requires l0"]
    assert blocks[2] == ["l0: calc 3000", f"l1: send 1000b to 0 tag {tag_a}", "l1 requires l0"]
    assert blocks[1] == ["l0: calc 3000", f"l1: recv 1000b from 3 tag {tag_b}", "l1 requires l0"]
    assert blocks[3] == ["l0: calc 3000", f"l1: send 1000b to 1 tag {tag_b}", "l1 requires l0"]
    assert ranks_of(capsys, out) == [3000 + hop(1000), 3000 + hop(1000), 3000 + O, 3000 + O]


def test_options_scale_and_overlap(capsys, tmp_path):
    out = tmp_path / "pp.goal"
    convert(capsys, DATA / "hand" / "pingpong", out, "--cpu-scale", "0.5", "--copy-time", "2ns")
    blocks = rank_blocks(out)
    # computation halves; each receive is followed by 2 ns per byte of copying
    assert blocks[0][0] == "l0: calc 5000" and "l3: calc 2000" in blocks[0] and "l4: calc 2500" in blocks[0]
    assert blocks[1][:3] == ["l0: recv 1000b from 0 tag 7", "l1: calc 2000", "l1 requires l0"]


def test_nbc_prepost_overlaps_the_computation_before_a_collective(capsys, tmp_path):
    """With 1 us of preposting, the broadcast starts 1 us into the 3 us before it, and that 1 us of
    computation runs beside it: the receivers finish 1 us earlier, the roots as before (their CPU
    sends first, then computes)."""
    out = tmp_path / "nb.goal"
    convert(capsys, DATA / "hand" / "subcomm", out, "--nbc-prepost", "1us")
    assert rank_blocks(out)[0] == ["l0: calc 2000", "l1: calc 1000", "l1 requires l0",
                                   f"l2: recv 1000b from 2 tag {2**31 + (1 << 20) + UNADMITTED}", "l2 requires l0"]
    assert ranks_of(capsys, out) == [2000 + hop(1000)] * 2 + [3000 + O] * 2


def test_collective_entry_is_work_before_each_collective(capsys, tmp_path):
    """--collective-entry 250ns: every member of each broadcast first spends 250 ns entering it (the
    schedule's calcs are whole ns), so every rank finishes 250 ns later; the computation before it
    is the trace's."""
    out = tmp_path / "entry.goal"
    convert(capsys, DATA / "hand" / "subcomm", out, "--collective-entry", "250.4ns")
    tag = 2**31 + (1 << 20) + UNADMITTED
    assert rank_blocks(out)[0] == ["l0: calc 3000", "l1: calc 250", "l1 requires l0",
                                   f"l2: recv 1000b from 2 tag {tag}", "l2 requires l1"]
    assert ranks_of(capsys, out) == [3250 + hop(1000)] * 2 + [3250 + O] * 2


@pytest.mark.parametrize("value,problem", [("-3ns", "must not be negative"), ("fast", "")])
def test_a_bad_collective_entry_is_refused(fails_cleanly, tmp_path, value, problem):
    fails_cleanly(["goal", "convert", str(DATA / "hand" / "subcomm"), "-o", str(tmp_path / "x.goal"),
                   f"--collective-entry={value}"], rf"contend: error: --collective-entry: .*{problem}")
    assert not (tmp_path / "x.goal").exists()


def test_window_keeps_a_range_of_collectives(capsys, tmp_path):
    out = tmp_path / "w.goal"
    convert(capsys, DATA / "simple", out, "--window", "1:2")
    full = tmp_path / "full.goal"
    convert(capsys, DATA / "simple", full)
    # 5 broadcasts in all, 2 kept: rank 0 sends 2 of its 10 messages
    count = lambda goal: sum(line.count(": send ") for line in rank_blocks(goal)[0])  # noqa: E731
    assert (count(full), count(out)) == (10, 4)


def copy_trace(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_truncated_trace(fails_cleanly, tmp_path):
    trace = copy_trace(DATA / "hand" / "pingpong", tmp_path / "pp")
    rank1 = trace / "pp-1.txt"
    text = rank1.read_text()
    rank1.write_text(text[: text.index("MPI_Send") + 20])
    fails_cleanly(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")],
                  r"contend: error: .*pp-1\.txt:5: the last line is cut off \(truncated trace\)")
    assert not (tmp_path / "x.goal").exists()
    rank1.write_text(text[: text.index("MPI_Finalize")])
    fails_cleanly(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")],
                  r"contend: error: .*pp-1\.txt:5: the trace ends before MPI_Finalize \(truncated\?\)")


def test_mixed_rank_counts(fails_cleanly, tmp_path):
    trace = copy_trace(DATA / "hand" / "pingpong", tmp_path / "pp")
    rank1 = trace / "pp-1.txt"
    rank1.write_text(rank1.read_text().replace("0,1,2", "0,1,4"))
    fails_cleanly(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")],
                  r"contend: error: .*pp-1\.txt:4: communicator of 4 ranks in a trace of 2 rank files \(mixed rank counts\?\)")


def test_unmatched_message(fails_cleanly, tmp_path):
    trace = copy_trace(DATA / "hand" / "pingpong", tmp_path / "pp")
    rank0 = trace / "pp-0.txt"
    rank0.write_text(rank0.read_text().replace("MPI_Recv:12", "MPI_Send:12:4096:1:7,8,8:1:9:0,0,2:12\nMPI_Recv:12"))
    fails_cleanly(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")],
                  r"contend: error: .*pp-0\.txt:6: rank 0 sends 1 message\(s\) to rank 1 with tag 9 that rank 1 never receives")
    assert not (tmp_path / "x.goal").exists()


def test_a_repair_is_stated(capsys, tmp_path):
    """A wait for a request the trace never started is ignored, and said so once, where it first happened."""
    trace = copy_trace(DATA / "hand" / "pingpong", tmp_path / "pp")
    rank1 = trace / "pp-1.txt"
    rank1.write_text(rank1.read_text().replace("MPI_Finalize", "MPI_Wait:24:77:0:24\nMPI_Wait:24:78:0:24\nMPI_Finalize"))
    assert main(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and re.fullmatch(
        r"contend: warning: .*pp-1\.txt:6: completion of a request never started: ignored \(2 time\(s\) in all\)", err[0]), err
    assert ranks_of(capsys, tmp_path / "x.goal") == [10000 + 2 * hop(1000) + 3000 + 5000, 10000 + hop(1000) + 3000 + O]


def test_collective_on_an_undescribed_communicator_is_left_out(capsys, tmp_path):
    """Without the lines naming MPI_Comm_split (the call and the comment) the broadcasts' communicator has no members: left out, as Schedgen
    does, with one warning; their time is computation."""
    trace = copy_trace(DATA / "hand" / "subcomm", tmp_path / "sub")
    for f in trace.iterdir():
        f.write_text("".join(line for line in f.read_text().splitlines(keepends=True) if "Comm_split" not in line))
    assert main(["goal", "convert", str(trace), "-o", str(tmp_path / "x.goal")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "sub-0.txt:3: collective on a communicator the trace does not describe: left out" in err[0], err
    assert all(block == ["l0: calc 4000"] for block in rank_blocks(tmp_path / "x.goal").values())


def test_not_a_trace(fails_cleanly, tmp_path):
    (tmp_path / "t-0.txt").write_text("hello\n")
    fails_cleanly(["goal", "convert", str(tmp_path), "-o", str(tmp_path / "x.goal")], r"not a trace contend can read")
    fails_cleanly(["goal", "convert", str(DATA / "simple"), "-o", str(tmp_path / "x.goal"), "--algorithm", "bcast=alltoall-linear"],
                  r"contend: error: algorithm 'bcast=alltoall-linear': alltoall-linear does not compute bcast")
    fails_cleanly(["goal", "convert", str(DATA / "simple"), "-o", str(tmp_path / "x.goal"), "--cpu-scale", "inf"],
                  r"contend: error: --cpu-scale: must be a finite number >= 0, not inf")
