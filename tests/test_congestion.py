"""NIC congestion and admission control through the Python API and CLI (docs/models.md, "NIC
congestion and admission control"): Luo et al. 2012's shapes on the presets, tuned throttling of the
overlapped all-to-all, tune recovering the presets' built-in thresholds, no cost below the
thresholds, every byte delivered under every policy, and bad configuration as one clean line."""

from __future__ import annotations

import re

import pytest

from contend.machine.admission import parse_spec
from contend.analysis.nicsweep import Point, concurrency_points, core_steps, outstanding_points, run_point, sweep
from contend.analysis.tune import QUICK, tune
from contend.cli import main
from contend.machine.file import load_machine
from contend.machine.nic import knee
from contend.simulation.simulate import simulate

PRESETS = {"ib-congestion": 32, "gemini-congestion": 48}


@pytest.fixture(scope="module")
def tuned():
    return {name: tune(name, rpn, QUICK, workers=1) for name, rpn in PRESETS.items()}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_tune_recovers_the_presets_thresholds_within_one_sweep_step(tuned, name):
    machine = load_machine(name)
    curves = machine.node["nic"][-1]
    rpn = PRESETS[name]
    built_cct, built_nrct = knee(curves["concurrency"], 0.05), knee(curves["outstanding"], 0.05)
    t = tuned[name]
    (size,) = QUICK.sizes
    steps = core_steps(rpn, QUICK.core_step)
    i = steps.index(min(steps, key=lambda c: abs(c - built_cct)))
    assert steps[max(0, i - 1)] <= t.cct[size] <= steps[min(len(steps) - 1, i + 1)], (t.cct, built_cct)
    # outstanding is swept in powers of two per core: one step is a factor of two
    assert built_nrct / 2 <= t.nrct[size] <= built_nrct * 2, (t.nrct, built_nrct)
    assert (name, t.cct[size], t.nrct[size]) in {("ib-congestion", 20, 32), ("gemini-congestion", 40, 96)}


def test_seed_shapes_reappear_on_the_infiniband_like_preset():
    table = sweep("ib-congestion", concurrency_points(32, [1024], 4, 16) + outstanding_points(32, [1024], [32], 16, 16),
                  workers=1)
    conc = table[table.experiment == "concurrency"].set_index("active_cores").throughput_Bps
    assert conc.idxmax() == 20  # Figure 1: best with 20 cores, falling beyond
    assert conc[32] < 0.75 * conc[20]
    out = table[table.experiment == "outstanding"].set_index("outstanding").throughput_Bps
    assert out.idxmax() == 1  # Figure 2: blocking is best
    assert 0.4 < out[2] / out[1] < 0.65  # two outstanding: about half
    assert out[16] < 0.35 * out[1]  # several times worse asymptotically


def test_tuned_tokens_speed_up_the_overlapped_alltoall_at_least_1_7x(tuned):
    policy = tuned["ib-congestion"].engine_policy()
    free = simulate(collective="alltoall-linear", ranks=64, bytes=1024, machine="ib-congestion", records=True)
    throttled = simulate(collective="alltoall-linear", ranks=64, bytes=1024, machine="ib-congestion",
                         throttle=policy, records=True)
    assert free.makespan / throttled.makespan >= 1.7
    assert throttled.admission_waits > 0
    for r in (free, throttled):
        assert len(r.records) == 64 * 63 and int(r.records["bytes"].sum()) == 64 * 63 * 1024


@pytest.mark.parametrize("point", [Point("concurrency", 32, 16, 1, 1024, 16), Point("outstanding", 32, 8, 2, 1024, 16),
                                   Point("concurrency", 32, 4, 1, 64, 16)])
def test_throttling_costs_at_most_a_few_percent_below_the_thresholds(tuned, point):
    policy = tuned["ib-congestion"].engine_policy()
    free = run_point("ib-congestion", point)
    throttled = run_point("ib-congestion", Point(**{**vars(point), "throttle": policy}))
    assert throttled["throughput_Bps"] >= 0.97 * free["throughput_Bps"]


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("size", [256, 1024, 4096])
def test_adaptive_reaches_within_10_percent_of_tuned_without_the_thresholds(tuned, name, size):
    rpn = PRESETS[name]
    run = lambda throttle: simulate(collective="alltoall-linear", ranks=2 * rpn, bytes=size, machine=name,
                                    throttle=throttle, records=True)
    free, best, adaptive = run(None), run(tuned[name].engine_policy()), run("adaptive")
    assert adaptive.makespan <= 1.1 * best.makespan
    assert adaptive.makespan < 0.75 * free.makespan  # it did throttle: congestion costs at least 1.3x here
    assert adaptive.admission_waits > 0
    assert len(adaptive.records) == 2 * rpn * (2 * rpn - 1) and int(adaptive.records["bytes"].sum()) == len(adaptive.records) * size


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("experiment,cores,outstanding,size", [("concurrency", 0.5, 1, 1024), ("outstanding", 0.25, 2, 1024),
                                                               ("concurrency", 0.125, 1, 64), ("concurrency", 0.625, 1, 1024)])
def test_adaptive_costs_at_most_2_percent_below_the_thresholds(name, experiment, cores, outstanding, size):
    rpn = PRESETS[name]
    point = Point(experiment, rpn, int(cores * rpn), outstanding, size, 16)
    free = run_point(name, point)
    adaptive = run_point(name, Point(**{**vars(point), "throttle": "adaptive"}))
    assert adaptive["throughput_Bps"] >= 0.98 * free["throughput_Bps"]


def test_an_adaptive_ceiling_of_one_token_is_a_pool_of_one():
    # The limit can move nowhere: the run is exactly the token policy's with one token.
    run = lambda throttle: simulate(collective="alltoall-linear", ranks=16, bytes=1024, machine="ib-congestion",
                                    ranks_per_node=8, throttle=throttle)
    one, token = run("adaptive:1"), run("token:1")
    assert one.deadlock is None and one.makespan == token.makespan and one.admission_waits == token.admission_waits > 0


def test_a_machine_file_s_adaptive_table_is_the_throttle_option(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(BASE + '[throttle]\nranks_per_node = 4\npolicy = "adaptive"\ntokens = 3\n')
    machine = load_machine(path)
    assert machine.node["policy"] == parse_spec("adaptive:3") == {"kind": "adaptive", "tokens": 3}
    run = lambda **kw: simulate(collective="alltoall-linear", ranks=8, bytes=64, **kw)
    throttled = run(machine=path)
    assert throttled.makespan == run(machine=path, throttle="adaptive:3").makespan
    assert throttled.admission_waits > 0 and run(machine=path, throttle="none").admission_waits == 0


def test_a_waiter_takes_its_tokens_a_handoff_later_and_holds_its_place(tmp_path):
    """[throttle] handoff_ns (docs/models.md): ranks 0 and 1 of node 0 send at 0 under one token, rank 2
    after a calc of 1000 ns (L 1000, o 100, g 300 ns). Without a handoff rank 1 takes the token when rank
    0 gives it back (300), rank 2 finds it free at 1000: one wait, done at 1000 + o + L + o. With a
    handoff of 5000 rank 1 takes it at 5300; rank 2, asking meanwhile, waits behind it (FIFO) until
    rank 1's release (5600) and a handoff: two waits, done at 10600 + 1200."""
    goal = tmp_path / "line.goal"
    goal.write_text("num_ranks 6\nrank 0 {\ns: send 8b to 3\n}\nrank 1 {\ns: send 8b to 4\n}\n"
                    "rank 2 {\nc: calc 1000\ns: send 8b to 5\ns requires c\n}\n"
                    + "".join(f"rank {r} {{\nr: recv 8b from {r - 3}\n}}\n" for r in (3, 4, 5)))
    machine = tmp_path / "m.toml"
    base = '[machine]\nname = "x"\n[loggops]\nL = 1000\no = 100\ng = 300\nG = 0\nO = 0\nS = 100000\n'
    runs = {}
    for handoff in (0, 5000):
        machine.write_text(base + f'[throttle]\nranks_per_node = 3\npolicy = "token"\ntokens = 1\nhandoff_ns = {handoff}\n')
        r = simulate(goal, machine=machine)
        runs[handoff] = (r.makespan, r.admission_waits)
    assert runs == {0: (2200, 1), 5000: (11800, 2)}


@pytest.mark.parametrize("throttle", ["none", "token:4", "token:6:2KiB", "rate:2us", "proxy:2", "proxy:3:5", "adaptive",
                                      "adaptive:3"])
@pytest.mark.parametrize("collective,size", [("alltoall-linear", 1024), ("random-pairs", 20000), ("incast", 64)])
def test_every_policy_delivers_every_message(throttle, collective, size):
    r = simulate(collective=collective, ranks=16, bytes=size, machine="ib-congestion", ranks_per_node=4,
                 throttle=throttle, records=True, seed=3)
    expected = {"alltoall-linear": 16 * 15, "random-pairs": 16, "incast": 15}[collective]
    assert r.deadlock is None and len(r.records) == expected
    assert int(r.records["bytes"].sum()) == expected * size


def test_random_access_updates_all_arrive():
    row = run_point("gemini-congestion", Point("random-access", 48, 48, 4, 16, 32))
    assert row["msg_rate"] > 0


BASE = '[machine]\nname = "x"\n[loggops]\nL = 1\no = 1\ng = 1\nG = 1\nO = 0\nS = 10\n'


@pytest.mark.parametrize("extra,pattern", [
    ("[nic]\nranks_per_node = 2\nconcurrency = [[1, 1.0], [1, 0.5]]\n", r":12: \[nic\] concurrency: point 2"),
    ("[nic]\nranks_per_node = 2\noutstanding = [[1, 0]]\n", r":12: \[nic\] outstanding: point 1"),
    ("[nic]\nranks_per_node = 2\noutstanding = [3]\n", r":12: \[nic\] outstanding: point 1 must be \[x, factor\]"),
    ("[nic]\nconcurrency = [[1, 1.0]]\n", r":10: \[nic\]: needs ranks_per_node"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"tokens\"\n", r":12: \[throttle\] policy: unknown policy 'tokens'"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"token\"\ntokens = 0\n", r":13: \[throttle\] tokens: expected an integer >= 1"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"rate\"\ntokens = 3\n", r":13: \[throttle\] tokens: tokens does not apply"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"proxy\"\n", r":10: \[throttle\]: policy 'proxy' needs servers"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"adaptive\"\ngap_ns = 3\n", r":13: \[throttle\] gap_ns: gap_ns does not apply"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"adaptive\"\ntokens = 0\n", r":13: \[throttle\] tokens: expected an integer >= 1"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"rate\"\ngap_ns = 5\nhandoff_ns = 3\n", r":14: \[throttle\] handoff_ns: handoff_ns does not apply"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"token\"\ntokens = 1\nhandoff_ns = -3\n", r":14: \[throttle\] handoff_ns: expected an integer >= 0"),
    ("[nic]\nranks_per_node = 2\nspeed = 3\n", r":12: \[nic\] speed: unknown key; known: ranks_per_node"),
    ("[nic]\nranks_per_node = 2\n[[nic.class]]\nup_to = 64\nbogus = 1\n", r":14: \[\[nic\.class\]\] #1 bogus: unknown key; known"),
    ("[nic]\nranks_per_node = 2\n[[nic.class]]\nup_to = 64\n[[nic.class]]\nup_to = 64\n",
     r":15: \[\[nic\.class\]\] #2 up_to: the same up_to as \[\[nic\.class\]\] #1"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"token\"\n[[throttle.class]]\ncct = 1\nnrct = 1\ncrct = [[1, 1]]\nzz = 1\n",
     r":17: \[\[throttle\.class\]\] #1 zz: unknown key; known"),
    ("[throttle]\nranks_per_node = 2\npolicy = \"token\"\n[[throttle.class]]\ncct = 1\nnrct = 1\ncrct = [[1, 1]]\n"
     "[[throttle.class]]\ncct = 2\nnrct = 2\ncrct = [[1, 2]]\n", r":17: \[\[throttle\.class\]\] #2 up_to: the same up_to as \[\[throttle\.class\]\] #1"),
])
def test_bad_configuration_is_one_line_naming_file_and_line(tmp_path, capsys, extra, pattern):
    path = tmp_path / "m.toml"
    path.write_text(BASE + extra)
    code = main(["sim", "--machine", str(path), "--collective", "incast", "--ranks", "4", "--bytes", "8"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(re.escape(str(path)) + pattern, err), err


@pytest.mark.parametrize("spec", ["token:0", "proxy:0", "rate:0", "bogus:3", "token", "adaptive:0", "adaptive:2:3"])
def test_bad_throttle_options_exit_2(capsys, spec):
    code = main(["sim", "--machine", "ib-congestion", "--collective", "incast", "--ranks", "4", "--bytes", "8",
                 "--throttle", spec])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--throttle" in err, err


def test_tune_cli_writes_a_machine_and_a_native_config(tmp_path, capsys):
    assert main(["tune", "--machine", "ib-congestion", "--quick", "--workers", "1", "-o", str(tmp_path)]) == 0
    conf = (tmp_path / "throttle.conf").read_text()
    assert re.search(r"^policy = token$", conf, re.M) and re.search(r"^tokens = 20$", conf, re.M)
    machine = load_machine(tmp_path / "machine.toml")
    assert machine.node["policy"]["tokens"] == 20 and machine.node["policy"]["thresholds"][0]["cct"] == 20
    assert parse_spec("token:20") == {"kind": "token", "tokens": 20}
