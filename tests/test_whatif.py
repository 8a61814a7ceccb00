"""contend whatif: each axis changes the model as docs/models.md ("What-if axes") says (closed forms where
there are some, the same run as contend sim with that setting elsewhere), Hoefler 2011's findings hold
on a generated application, and every bad axis is refused with one line before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contend.native import mpi
from contend import simulate
from contend.analysis.whatif import Workload, parse_axes, whatif
from contend.cli import main
from contend.machine.file import load_machine

# loggopsim-default, in ns: L=2500 o=1500 g=1000 G=6 O=0 S=65535
L, O_CPU, GAP, G = 2500, 1500, 1000, 6


def app_goal(ranks: int, iterations: int, calc_ns: int, size: int) -> str:
    """A bulk-synchronous application: every iteration a calc, then a dissemination exchange of ``size``
    bytes (each round waits for its send and receive)."""
    out = [f"num_ranks {ranks}\n"]
    rounds = (ranks - 1).bit_length()
    for r in range(ranks):
        out.append(f"rank {r} {{\n")
        last = None
        for i in range(iterations):
            out.append(f"c{i}: calc {calc_ns}\n" + (f"c{i} requires {last}\n" if last else ""))
            last = f"c{i}"
            for k in range(rounds):
                tag = i * 64 + k
                out.append(f"s{i}_{k}: send {size}b to {(r + (1 << k)) % ranks} tag {tag}\n"
                           f"r{i}_{k}: recv {size}b from {(r - (1 << k)) % ranks} tag {tag}\n"
                           f"s{i}_{k} requires {last}\nr{i}_{k} requires {last}\n"
                           f"j{i}_{k}: calc 0\nj{i}_{k} requires s{i}_{k}\nj{i}_{k} requires r{i}_{k}\n")
                last = f"j{i}_{k}"
        out.append("}\n")
    return "".join(out)


# A compute-bound exchange: rank 0 computes CALC, sends SIZE bytes to rank 1, which answers.
CALC, SIZE = 1_000_000, 1001
EXCHANGE = f"""num_ranks 2
rank 0 {{
c: calc {CALC}
s: send {SIZE}b to 1
r: recv {SIZE}b from 1
s requires c
r requires s
}}
rank 1 {{
r: recv {SIZE}b from 0
s: send {SIZE}b to 0
s requires r
}}
"""


def run_axes(tmp_path: Path, workload: Workload, *vary: str, machine: str = "loggopsim-default", workers: int = 1,
             critical_path: bool = False):
    m = load_machine(machine)
    return whatif(workload, m, parse_axes(list(vary), workload, m), workers=workers, critical_path=critical_path)


def makespans(result) -> dict[tuple, float]:
    return {tuple(run["settings"].values()): run["makespan_ns"] for run in result.runs}


@pytest.fixture
def exchange(tmp_path):
    path = tmp_path / "exchange.goal"
    path.write_text(EXCHANGE)
    return Workload(schedule=str(path))


def test_network_axis_changes_a_compute_bound_run_by_the_closed_form(tmp_path, exchange):
    # makespan = CALC + 2 hops, hop = 2o + L + e*G: only L and e*G scale with the network's speed
    result = run_axes(tmp_path, exchange, "network=1x,10x,0.1x")
    e = SIZE - 1
    hop = {f: 2 * O_CPU + (L + e * G) / f for f in (1, 10, 0.1)}
    assert makespans(result) == {("1x",): CALC + 2 * hop[1], ("10x",): CALC + 2 * hop[10],
                                 ("0.1x",): CALC + 2 * hop[0.1]}
    assert makespans(result)[("1x",)] - makespans(result)[("10x",)] == 2 * (L + e * G) * 0.9


def binomial_closed_form(ranks: int, hop: float, gap: float) -> float:
    """docs/models.md, "Closed forms": max over v of popcount(v) hops and (bitlen - popcount) gaps."""
    return max(bin(v).count("1") * hop + (v.bit_length() - bin(v).count("1")) * gap for v in range(1, ranks))


@pytest.mark.parametrize("ranks", [8, 13])
def test_overhead_axis_full_and_no_overlap_give_the_closed_forms(tmp_path, ranks):
    size = 1001
    e = size - 1
    result = run_axes(tmp_path, Workload(collective="binomial-bcast", ranks=ranks, bytes=size), "overhead=1x,0,g")
    expected = {}
    for label, (o, per_byte_o) in {"1x": (O_CPU, 0), "0": (0, 0), "g": (GAP, G)}.items():
        hop = 2 * o + L + e * max(per_byte_o, G)
        gap = max(o + e * per_byte_o, GAP + e * G)
        expected[(label,)] = binomial_closed_form(ranks, hop, gap)
    assert makespans(result) == expected
    assert expected[("0",)] < expected[("1x",)]  # the overlap potential is real here


def test_cpu_axis_divides_only_the_computation(tmp_path, exchange):
    result = run_axes(tmp_path, exchange, "cpu=1x,2x,0.5x")
    spans = makespans(result)
    assert spans[("1x",)] - spans[("2x",)] == CALC / 2
    assert spans[("0.5x",)] - spans[("1x",)] == CALC


def test_faster_network_helps_a_network_bound_run_not_a_noise_bound_one(tmp_path):
    """Hoefler 2011's finding ("Does the network speed matter?"): on the same application, 10x the
    network speed cuts the noiseless run by a quarter and leaves the run under heavy noise as it was."""
    path = tmp_path / "app.goal"
    path.write_text(app_goal(ranks=64, iterations=20, calc_ns=20_000, size=8))
    result = run_axes(tmp_path, Workload(schedule=str(path)), "noise=none,periodic:100Hz:1ms",
                      "network=1x,10x", workers=2, critical_path=True)
    spans = makespans(result)
    quiet_gain = 1 - spans[("none", "10x")] / spans[("none", "1x")]
    noisy_gain = 1 - spans[("periodic:100Hz:1ms", "10x")] / spans[("periodic:100Hz:1ms", "1x")]
    assert quiet_gain > 0.2, spans
    assert 0 <= noisy_gain < 0.01, spans
    assert spans[("periodic:100Hz:1ms", "1x")] > 5 * spans[("none", "1x")]  # noise-bound indeed
    # and the critical path says so: noise is most of the noisy runs, none of the quiet ones
    for run in result.runs:
        split = run["critical_path"]["split"]
        assert sum(split.values()) == pytest.approx(run["makespan_ns"], abs=1e-6)
        noisy = run["settings"]["noise"] != "none"
        assert result.largest_part(run).startswith("noise") == noisy, (run["settings"], split)
        assert (split["noise"] > 0) == noisy


def test_noise_of_one_shape_grows_with_ranks_unless_coscheduled(tmp_path):
    result = run_axes(tmp_path, Workload(collective="dissemination", ranks=2, bytes=1),
                      "ranks=16,256,4096", "noise=none,periodic:1kHz:25us", "noise-phase=independent,coscheduled")
    spans = makespans(result)
    quiet = {p: spans[(p, "none", "independent")] for p in ("16", "256", "4096")}
    assert spans[("256", "none", "coscheduled")] == quiet["256"]  # a phase of no noise changes nothing
    independent = [spans[(p, "periodic:1kHz:25us", "independent")] / quiet[p] for p in quiet]
    coscheduled = [spans[(p, "periodic:1kHz:25us", "coscheduled")] / quiet[p] for p in quiet]
    assert independent[0] < independent[1] < independent[2], independent
    # co-scheduled detours hit every rank at once: a run shorter than the period meets exactly the first
    # one, at phase 0, whatever the ranks; the slowdown does not grow
    for p in quiet:
        assert spans[(p, "periodic:1kHz:25us", "coscheduled")] == quiet[p] + 25_000
    assert coscheduled[2] < coscheduled[0] and coscheduled[2] < independent[2], coscheduled


def test_network_axis_scales_a_topology_as_a_machine_file_twice_as_fast_would(tmp_path):
    torus = Path(load_machine("bgp-torus").path).read_text()
    fast = tmp_path / "fast.toml"
    for old, new in (('L = "1us"', 'L = "500ns"'), ('g = "1us"', 'g = "500ns"'), ('G = "425MB/s"', 'G = "850MB/s"'),
                     ('link_bandwidth = "425MB/s"', 'link_bandwidth = "850MB/s"'),
                     ('injection_bandwidth = "2550MB/s"', 'injection_bandwidth = "5100MB/s"'),
                     ('hop_latency = "50ns"', 'hop_latency = "25ns"')):
        assert old in torus
        torus = torus.replace(old, new)
    fast.write_text(torus)
    work = Workload(collective="alltoall-linear", ranks=64, bytes=4096)
    spans = makespans(run_axes(tmp_path, work, "network=1x,2x", machine="bgp-torus"))
    args = {"collective": "alltoall-linear", "ranks": 64, "bytes": 4096}
    assert spans[("2x",)] == simulate(**args, machine=fast).makespan
    assert spans[("1x",)] == simulate(**args, machine="bgp-torus").makespan > spans[("2x",)]


def test_machine_placement_nic_throttle_axes_are_the_runs_contend_sim_makes(tmp_path):
    torus = Path(load_machine("bgp-torus").path).read_text().replace("ranks_per_node = 1 ", "ranks_per_node = 4 ")
    block, cyclic = tmp_path / "block.toml", tmp_path / "cyclic.toml"
    block.write_text(torus)
    cyclic.write_text(torus.replace('routing = "dimension-order"', 'routing = "dimension-order"\nplacement = "cyclic"'))
    result = run_axes(tmp_path, Workload(collective="neighbour-pairs", ranks=64, bytes=65536),
                      "placement=block,cyclic", "network=1x,2x", machine=str(block))
    spans = makespans(result)
    assert spans[("block", "1x")] == simulate(collective="neighbour-pairs", ranks=64, bytes=65536,
                                              machine=block).makespan
    assert spans[("cyclic", "1x")] == simulate(collective="neighbour-pairs", ranks=64, bytes=65536,
                                               machine=cyclic).makespan
    assert spans[("cyclic", "1x")] != spans[("block", "1x")]

    work = Workload(collective="alltoall-linear", ranks=64, bytes=1024)
    result = run_axes(tmp_path, work, "nic=on,off", "throttle=none,token:20", machine="ib-congestion")
    spans = makespans(result)
    args = {"collective": "alltoall-linear", "ranks": 64, "bytes": 1024}
    assert spans[("on", "token:20")] == simulate(**args, machine="ib-congestion", throttle="token:20").makespan
    assert spans[("on", "none")] == simulate(**args, machine="ib-congestion").makespan
    assert spans[("off", "none")] < spans[("on", "none")]  # the curves are what congests it
    result = run_axes(tmp_path, work, "ranks-per-node=8,32", "throttle=none,token:4", machine="ib-congestion")
    assert makespans(result) == {(str(n), t): simulate(**args, machine="ib-congestion", ranks_per_node=n,
                                                       throttle=t).makespan
                                 for n in (8, 32) for t in ("none", "token:4")}
    assert len(set(makespans(result).values())) == 4
    result = run_axes(tmp_path, work, "machine=loggopsim-default,ib-congestion", machine="ib-congestion")
    assert list(makespans(result).values()) == [simulate(**args, machine=m).makespan
                                                for m in ("loggopsim-default", "ib-congestion")]


def test_measured_noise_traces_are_the_noise_contend_sim_replays(tmp_path):
    a, b = tmp_path / "a.noise", tmp_path / "b.noise"  # two cores' traces: ranks replay them in turn
    for path, detours in ((a, "1000 30000\n400000 80000\nend 2\n"), (b, "20000 50000\nend 1\n")):
        path.write_text("contend-noise 1\nresolution_ns 20\nthreshold_ns 200\nduration_ns 1000000\nrank 0\n"
                        + detours)
    traces = f"trace:{a},{b}"
    work = Workload(collective="dissemination", ranks=16, bytes=8)
    result = run_axes(tmp_path, work, f"noise=none,{traces}", "noise-phase=independent,coscheduled")
    spans = makespans(result)
    args = {"collective": "dissemination", "ranks": 16, "bytes": 8}
    for phase in ("independent", "coscheduled"):
        assert spans[(traces, phase)] == simulate(
            **args, noise={"kind": "trace", "trace": [str(a), str(b)], "phase": phase}).makespan
    assert spans[("none", "independent")] == spans[("none", "coscheduled")] == simulate(**args).makespan
    assert spans[(traces, "independent")] > spans[("none", "independent")]


def test_workers_and_order_do_not_change_the_runs(tmp_path, exchange):
    one = run_axes(tmp_path, exchange, "network=1x,2x,4x", "overhead=1x,0", workers=1)
    two = run_axes(tmp_path, exchange, "network=1x,2x,4x", "overhead=1x,0", workers=2)
    assert one.to_dict() == two.to_dict()
    assert all("critical_path" not in run for run in one.runs)  # only when asked for: it costs time at scale
    assert [tuple(r["settings"].values()) for r in one.runs] == [
        (n, o) for n in ("1x", "2x", "4x") for o in ("1x", "0")]  # the first axis varies slowest


def test_cli_writes_table_json_and_report(tmp_path, capsys):
    goal = tmp_path / "exchange.goal"
    goal.write_text(EXCHANGE)
    out = tmp_path / "report"
    code = main(["whatif", str(goal), "--vary", "network=1x,10x", "--vary", "noise=none,periodic:1kHz:25us",
                 "--workers", "1", "--critical-path", "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert max(len(line) for line in printed.splitlines()) <= 80
    document = json.loads((out / "whatif.json").read_text())
    assert document["workload"] == {"schedule": str(goal)} and document["machine"] == "loggopsim-default"
    assert [a["name"] for a in document["axes"]] == ["network", "noise"]
    assert document["axes"][0]["numbers"] == [1.0, 10.0] and document["axes"][1]["numbers"] is None
    assert len(document["runs"]) == 4 and document["runs"][0]["relative"] == 1.0
    assert document["runs"][0]["makespan_ns"] == CALC + 2 * (2 * O_CPU + L + (SIZE - 1) * G)
    assert sorted(p.name for p in out.iterdir()) == ["axis-network.png", "axis-noise.png", "critical-path.png",
                                                      "index.html", "whatif.json"]
    assert sum(document["runs"][0]["critical_path"]["split"].values()) == document["runs"][0]["makespan_ns"]
    page = (out / "index.html").read_text()
    assert 'src="axis-network.png"' in page and "periodic:1kHz:25us" in page


def test_a_deadlocked_schedule_is_a_result_exit_3(tmp_path, capsys):
    goal = tmp_path / "dead.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nr: recv 8b from 1\n}\nrank 1 {\nr: recv 8b from 0\n}\n")
    code = main(["whatif", str(goal), "--vary", "network=1x,2x", "--workers", "1", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3 and "2 of 2 run(s) deadlocked" in err
    assert json.loads((tmp_path / "out" / "whatif.json").read_text())["runs"][0]["relative"] is None


def test_throttle_and_ranks_per_node_axes_give_a_machine_without_nodes_its_nodes(tmp_path):
    """loggopsim-default has no nodes; the two axes together are the runs `contend sim --throttle SPEC
    --ranks-per-node K` makes on it. A rate policy spaces the sends of ranks on different nodes; with all
    four ranks on one node nothing leaves a node and nothing is throttled."""
    goal = tmp_path / "app.goal"
    goal.write_text(app_goal(4, 3, 1000, 1024))
    result = run_axes(tmp_path, Workload(schedule=str(goal)), "throttle=none,rate:100us", "ranks-per-node=1,4")
    spans = makespans(result)
    assert spans == {(t, str(n)): simulate(str(goal), machine="loggopsim-default", throttle=t, ranks_per_node=n).makespan
                     for t in ("none", "rate:100us") for n in (1, 4)}
    assert spans[("rate:100us", "1")] >= 5 * 100_000 > spans[("none", "1")]  # 6 sends a rank: 5 gaps at least
    assert spans[("rate:100us", "4")] == spans[("none", "4")] == spans[("none", "1")]


def test_a_cores_axis_is_the_runs_contend_sim_makes(tmp_path):
    """Four ranks on one node: a core each, then two cores taken in turns (each message's receiver
    waiting for the core its sender ran on, 2 us a switch), then one."""
    goal = tmp_path / "app.goal"
    goal.write_text(app_goal(4, 3, 1000, 1024))
    result = run_axes(tmp_path, Workload(schedule=str(goal)), "cores=none,2:2us,1:2us", "ranks-per-node=4")
    spans = makespans(result)
    assert spans == {(c, "4"): simulate(str(goal), machine="loggopsim-default", cores=c, ranks_per_node=4).makespan
                     for c in ("none", "2:2us", "1:2us")}
    assert spans[("none", "4")] < spans[("2:2us", "4")] < spans[("1:2us", "4")]
    # Where the time goes: a core per rank waits for none; fewer cores, the more the path waits for one.
    traced = run_axes(tmp_path, Workload(schedule=str(goal)), "cores=none,2:2us,1:2us", "ranks-per-node=4",
                      critical_path=True)
    waited = {run["settings"]["cores"]: run["critical_path"]["split"]["cores"] for run in traced.runs}
    assert waited["none"] == 0 < waited["2:2us"] <= waited["1:2us"]
    assert all(abs(sum(run["critical_path"]["split"].values()) - run["makespan_ns"]) < 1e-6 * run["makespan_ns"]
               for run in traced.runs)


@pytest.mark.parametrize("vary, pattern", [
    (["network"], r"--vary 'network': expected AXIS=VALUES"),
    (["netwrok=1x"], r"unknown axis 'netwrok' \(did you mean 'network'\?\)"),
    (["network=1x", "network=2x"], r"--vary network: axis given twice"),
    (["network=1x,1x"], r"value '1x' given twice"),
    (["network=1x,,2x"], r"--vary network: empty value"),
    (["network="], r"--vary network: empty value"),
    (["network=fast"], r"--vary network: expected a factor .* got 'fast'"),
    (["network=0"], r"--vary network: expected a factor"),
    (["cpu=1e9x"], r"--vary cpu: expected a factor"),
    (["cpu=nanx"], r"--vary cpu: expected a factor"),
    (["overhead=-1x"], r"--vary overhead: expected 0 .* got '-1x'"),
    (["noise=periodic:1kHz"], r"--vary noise: expected periodic"),
    (["noise=trace:/nonexistent.noise"], r"no trace file"),
    (["noise-phase=sideways"], r"--vary noise-phase: cannot read duration 'sideways'"),
    (["noise-phase=coscheduled"], r"--vary noise-phase: there is no noise"),
    (["noise=random:1kHz:25us", "noise-phase=5us"], r"random noise is independent or coscheduled"),
    (["ranks=0"], r"--vary ranks: 0 is out of range"),
    (["machine=nonesuch"], r"unknown machine 'nonesuch'"),
    (["placement=block"], r"--vary placement: machine loggopsim-default has no network"),
    (["placement=diagonal"], r"--vary placement: expected block or cyclic"),
    (["nic=off"], r"--vary nic: machine loggopsim-default has no NIC congestion curves"),
    (["ranks-per-node=4"], r"--vary ranks-per-node: machine loggopsim-default has no nodes"),
    (["ranks-per-node=0"], r"--vary ranks-per-node: 0 is out of range"),
    (["throttle=token:0"], r"--vary throttle=token:0: tokens"),
    (["throttle=token:4"], r"--vary throttle: machine loggopsim-default does not say how many ranks"),
    (["cores=2"], r"--vary cores: machine loggopsim-default does not say how many ranks"),
    (["cores=0"], r"--vary cores: cores per node"),
    (["throttle=none", "ranks-per-node=4"], r"--vary ranks-per-node: machine loggopsim-default has no nodes"),
    (["network=" + ",".join(f"{k + 1}x" for k in range(70)), "cpu=" + ",".join(f"{k + 1}x" for k in range(70))],
     r"70 x 70 = 4,900 runs, more than 4,096"),
])
def test_bad_axes_fail_cleanly_and_write_nothing(tmp_path, fails_cleanly, vary, pattern):
    out = tmp_path / "out"
    argv = ["whatif", "--collective", "dissemination", "--ranks", "8", "--bytes", "8", "-o", str(out)]
    for spec in vary:
        argv += ["--vary", spec]
    fails_cleanly(argv, pattern)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, pattern", [
    (["whatif", "-o", "x"], r"give a GOAL file or --collective"),
    (["whatif", "--collective", "scatter", "--ranks", "8", "--bytes", "8", "--root", "5", "--vary", "ranks=4,8"],
     r"--vary ranks: root 5 is not a rank of 4 ranks"),
    (["whatif", "GOAL", "--collective", "dissemination", "--ranks", "8", "--bytes", "8"], r"one of the two"),
    (["whatif", "GOAL", "--vary", "ranks=4,8"], r"--vary ranks: a GOAL schedule has its own rank count; give "
                                                r"the application's trace instead .*vary the ranks of a --collective"),
    (["whatif", "GOAL", "--ranks", "4"], r"--ranks applies to --collective"),
    (["whatif", "GOAL", "--workers", "0"], r"--workers: 0 is out of range"),
    (["whatif", "GOAL", "--vary", "placement=block,cyclic", "--vary", "machine=bgp-torus,loggopsim-default"],
     r"machine loggopsim-default has no network"),
])
def test_bad_command_lines_fail_cleanly(tmp_path, fails_cleanly, argv, pattern):
    goal = tmp_path / "exchange.goal"
    goal.write_text(EXCHANGE)
    argv = [str(goal) if a == "GOAL" else a for a in argv] + ["-o", str(tmp_path / "out")]
    fails_cleanly(argv, pattern)
    assert not (tmp_path / "out").exists() and not (tmp_path / "x").exists()


def test_under_mpiexec_the_ranks_share_the_runs_and_rank_0_writes_the_same_report(tmp_path):
    argv = ["whatif", "--collective", "dissemination", "--ranks", "16", "--bytes", "8", "--vary", "network=1x,10x",
            "--vary", "noise=none,periodic:1kHz:25us", "--vary", "overhead=1x,0"]
    assert main([*argv, "--workers", "1", "-o", str(tmp_path / "local")]) == 0
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run([str(mpi.find_mpi().mpiexec), "-n", "2", sys.executable, "-m", "contend.cli", *argv,
                           "-o", str(tmp_path / "mpi")], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("contend whatif:") == 1  # one table: rank 0's
    local, shared = (json.loads((tmp_path / d / "whatif.json").read_text()) for d in ("local", "mpi"))
    assert shared == local and len(shared["runs"]) == 8


def test_whatif_on_a_traced_application(tmp_path, capsys):
    """SPHOT traced with liballprof on 4 ranks (tests/data/liballprof), converted by contend goal convert:
    compute-bound as traced, so a 10x network saves under 0.1% with or without noise, while noise of 10%
    intensity costs about 10%; on a CPU 100x faster the network starts to matter."""
    goal = tmp_path / "sphot.goal"
    assert main(["goal", "convert", str(Path(__file__).parent / "data" / "liballprof" / "sphot"), "-o", str(goal)]) == 0
    capsys.readouterr()
    result = run_axes(tmp_path, Workload(schedule=str(goal)), "cpu=1x,100x", "noise=none,periodic:100Hz:1ms",
                      "network=1x,10x", workers=2, critical_path=True)
    spans = makespans(result)
    for noise in ("none", "periodic:100Hz:1ms"):
        assert 0 < 1 - spans[("1x", noise, "10x")] / spans[("1x", noise, "1x")] < 0.001
        assert 1 - spans[("100x", noise, "10x")] / spans[("100x", noise, "1x")] > 0.05
    assert spans[("1x", "periodic:100Hz:1ms", "1x")] / spans[("1x", "none", "1x")] == pytest.approx(1.1, abs=0.02)
    assert all(result.largest_part(run).startswith("computation") for run in result.runs)


def test_under_mpiexec_a_failing_run_stops_every_rank_with_one_line(tmp_path):
    """Rank 0 alone has the one run, whose schedule is bad: rank 1 must not wait for it forever."""
    goal = tmp_path / "bad.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nr: recv 8b from 7\n}\nrank 1 {\n}\n")
    done = subprocess.run([str(mpi.find_mpi().mpiexec), "-n", "2", sys.executable, "-m", "contend.cli", "whatif",
                           str(goal), "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"contend: error: {goal}:3:17: rank 7 out of range (num_ranks is 2)"]
    assert not (tmp_path / "out").exists()


def test_overlap_potential_and_network_speed_of_a_program_traced_here(built, tmp_path, capsys):
    """native/trace/test/replay.c's ping-pong (three round trips of 1000 bytes) run under contend trace,
    converted without its measured computation (--cpu-scale 0): six hops, each 2o + L + 999 G, so full
    overlap (o = 0) and a 10x network give the closed forms on a real program's schedule."""
    trace = tmp_path / "trace"
    program = [str(mpi.build_dir(built) / "trace-replay"), "pingpong"]
    assert main(["trace", "-o", str(trace), "--timeout", "120", "--", str(built.mpiexec), "-n", "4", *program]) == 0
    goal = tmp_path / "pp.goal"
    assert main(["goal", "convert", str(trace), "-o", str(goal), "--cpu-scale", "0"]) == 0
    capsys.readouterr()
    result = run_axes(tmp_path, Workload(schedule=str(goal)), "overhead=1x,0", "network=1x,10x")
    wire = L + 999 * G
    assert makespans(result) == {("1x", "1x"): 6 * (2 * O_CPU + wire), ("1x", "10x"): 6 * (2 * O_CPU + wire / 10),
                                 ("0", "1x"): 6 * wire, ("0", "10x"): 6 * wire / 10}
