"""`contend goal convert --ranks N`: a trace of P ranks extrapolated to N = K * P (engine/src/replay/
extrapolate.rs, docs/models.md "Extrapolating a trace"). Parity with Schedgen's `--traces-extr K` on
LogGOPSim's sample traces; hand-checkable traces stay K independent copies except in world collectives;
contend's own traces of real runs extrapolate whole; bad rank counts are one clear error."""

from __future__ import annotations

import importlib.util
import json
import re
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


_convert = _sibling("test_goal_convert")
DATA, SCHEDGEN, O = _convert.DATA, _convert.SCHEDGEN, _convert.O
convert, hop, rank_blocks, ranks_of = _convert.convert, _convert.hop, _convert.rank_blocks, _convert.ranks_of

# (sample, Schedgen's GOAL with --traces-extr K, ranks, contend's options); tests/data/liballprof/README.md
PARITY = [
    ("simple", "simple-x2.goal", 8, []),
    ("simple", "simple-x4.goal", 16, []),
    ("vladimir", "vladimir-x2.goal", 8, []),
    ("vladimir", "vladimir-x4.goal", 16, []),
    ("sphot", "sphot-nocolls-x2.goal", 8, ["--no-collectives"]),
]


@pytest.mark.parametrize("sample,reference,ranks,options", PARITY)
def test_same_finish_times_as_schedgens_extrapolation(capsys, tmp_path, sample, reference, ranks, options):
    out = tmp_path / "app.goal"
    summary = convert(capsys, DATA / sample, out, "--algorithms", "schedgen", "--ranks", str(ranks), *options)
    assert re.match(rf"wrote .*: {ranks} ranks, ", summary)
    ours = ranks_of(capsys, out)
    assert len(ours) == ranks
    assert ours == ranks_of(capsys, SCHEDGEN / reference)
    # every copy's work is the trace's: with world collectives the copies wait on each other, and the
    # trace's own makespan is a lower bound
    traced = tmp_path / "traced.goal"
    convert(capsys, DATA / sample, traced, "--algorithms", "schedgen", *options)
    assert max(ours) >= max(ranks_of(capsys, traced))


def test_a_ring_stays_independent_rings(capsys, tmp_path):
    """The 4-rank ring of Isend/Irecv/Waitall as 3 copies: each copy's ranks pass messages only among
    themselves, and every rank finishes as in the trace, one message after its 1 us of computation."""
    out = tmp_path / "ring.goal"
    convert(capsys, DATA / "hand" / "ring", out, "--ranks", "12")
    blocks = rank_blocks(out)
    assert sorted(blocks) == list(range(12))
    for r, block in blocks.items():
        base = r - r % 4
        assert block == ["l0: calc 1000", f"l1: recv 64b from {base + (r + 3) % 4} tag 1", "l1 requires l0",
                         f"l2: send 64b to {base + (r + 1) % 4} tag 1", "l2 irequires l1"]
    assert ranks_of(capsys, out) == [1000 + hop(64)] * 12


def test_a_sub_communicator_stays_in_its_copy(capsys, tmp_path):
    """MPI_Comm_split's [2, 0] and [3, 1] become [6, 4] and [7, 5] in copy 1: its broadcasts go 6 -> 4
    and 7 -> 5, in contexts of their own (Schedgen leaves sub-communicator collectives out)."""
    out = tmp_path / "sub.goal"
    convert(capsys, DATA / "hand" / "subcomm", out, "--ranks", "8")
    blocks = rank_blocks(out)
    peer = lambda r: re.search(r"(?:to|from) (\d+) tag (\d+)", blocks[r][1]).groups()
    assert [peer(r)[0] for r in range(8)] == ["2", "3", "0", "1", "6", "7", "4", "5"]
    tags = {peer(r)[1] for r in range(8)}
    assert len(tags) == 4  # four communicators, four contexts
    assert ranks_of(capsys, out) == [3000 + hop(1000), 3000 + hop(1000), 3000 + O, 3000 + O] * 2


def test_one_copy_is_the_trace(capsys, tmp_path):
    plain, same = tmp_path / "plain.goal", tmp_path / "same.goal"
    convert(capsys, DATA / "vladimir", plain)
    convert(capsys, DATA / "vladimir", same, "--ranks", "4")
    assert same.read_text() == plain.read_text()


@pytest.mark.parametrize("ranks,pattern", [
    ("6", r"error: cannot extrapolate to 6 ranks: not a multiple of the trace's 4 ranks$"),
    ("0", r"--ranks: 0 is out of range \[1, 2147483647\]"),
    ("2^31", r"--ranks: 2147483648 is out of range \[1, 2147483647\]"),
    ("x", r"--ranks: expected a non-negative integer"),
])
def test_bad_rank_counts(fails_cleanly, tmp_path, ranks, pattern):
    out = tmp_path / "app.goal"
    fails_cleanly(["goal", "convert", str(DATA / "vladimir"), "-o", str(out), "--ranks", ranks], pattern)
    assert not out.exists()


@pytest.fixture(scope="module")
def real_traces(built, tmp_path_factory):
    """native/trace/test/replay.c's split and one-sided modes, traced at 4 ranks."""
    ctrace = _sibling("test_goal_convert_ctrace")
    binary = str(mpi.build_dir(built) / "trace-replay")
    root = tmp_path_factory.mktemp("extrap")
    return {mode: ctrace.traced(built, root / mode, [binary, mode]) for mode in ("split", "rma")}


def test_a_contend_trace_extrapolates(capsys, tmp_path, real_traces):
    """A real run's trace at 4 ranks as 8: the split communicators' broadcasts stay in their copy (0 -> 2,
    1 -> 3, 4 -> 6, 5 -> 7), the world barrier joins the copies, the puts go to the right neighbour in
    the copy; every send has its receive and the schedule runs through."""
    messages = _sibling("test_goal_convert_ctrace").messages
    split, rma = tmp_path / "split.goal", tmp_path / "rma.goal"
    convert(capsys, real_traces["split"], split, "--cpu-scale", "0", "--ranks", "8")
    sends, recvs = messages(split)
    assert sends == recvs
    assert sorted((s, d) for s, d, size, _ in sends if size == 256) == [(0, 2), (1, 3), (4, 6), (5, 7)]
    barrier = [(s, d) for s, d, size, _ in sends if size == 0]
    assert any(s // 4 != d // 4 for s, d in barrier)
    assert len(ranks_of(capsys, split)) == 8
    # the puts as messages (their window is MPI's, on one host: by default they would be done in place)
    convert(capsys, real_traces["rma"], rma, "--cpu-scale", "0", "--ranks", "8", "--no-in-place")
    sends, recvs = messages(rma)
    assert sends == recvs
    puts = sorted((s, d) for s, d, size, _ in sends if size == 512)
    assert puts == [(r, r - r % 4 + (r + 1) % 4) for r in range(8)]
    assert len(ranks_of(capsys, rma)) == 8


def whatif_runs(capsys, trace: Path, out: Path, *vary: str) -> list[dict]:
    assert main(["whatif", str(trace), *(a for v in vary for a in ("--vary", v)), "--workers", "1",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    report = json.loads((out / "whatif.json").read_text())
    assert report["workload"] == {"trace": str(trace)}
    return report["runs"]


def test_whatif_ranks_axis_extrapolates_a_trace(capsys, tmp_path):
    """`contend whatif TRACE --vary ranks=...` converts the trace at each count: the ring's copies stay
    apart, so every count takes the traced time; vladimir's run at 16 ranks is what `goal convert
    --ranks 16` simulates to on the same machine."""
    runs = whatif_runs(capsys, DATA / "hand" / "ring", tmp_path / "ring", "ranks=4,8,12", "network=1x,10x")
    assert [(r["settings"]["ranks"], r["ranks"]) for r in runs][::2] == [("4", 4), ("8", 8), ("12", 12)]
    assert {r["makespan_ns"] for r in runs[::2]} == {runs[0]["makespan_ns"]}
    assert {r["makespan_ns"] for r in runs[1::2]} == {runs[1]["makespan_ns"]} and runs[1]["makespan_ns"] < runs[0]["makespan_ns"]
    runs = whatif_runs(capsys, DATA / "vladimir", tmp_path / "vladimir", "ranks=4,16")
    goal = tmp_path / "v16.goal"
    convert(capsys, DATA / "vladimir", goal, "--ranks", "16")
    assert main(["sim", str(goal), "--json"]) == 0
    assert runs[1]["makespan_ns"] == json.loads(capsys.readouterr().out)["makespan"]
    assert runs[1]["makespan_ns"] > runs[0]["makespan_ns"]  # its world collectives span 16 ranks


def test_whatif_refuses_counts_that_are_not_copies(fails_cleanly, tmp_path):
    fails_cleanly(["whatif", str(DATA / "hand" / "ring"), "--vary", "ranks=4,6", "-o", str(tmp_path / "out")],
                  r"error: cannot extrapolate to 6 ranks: not a multiple of the trace's 4 ranks$")
    assert not (tmp_path / "out").exists()
