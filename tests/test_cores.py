"""Shared cores (docs/models.md, "Shared cores"): a node's ranks taking turns on fewer cores.

Closed forms: a ping-pong of two ranks on one core, each message waiting for the core to pass to its
receiver (the critical path counts that wait in its cores part); a barrier of two ranks spinning on one core, two scheduler ticks; with a core for every rank
the model changes nothing; two ranks that spin beside two that work leave them half of the cores (the
kernel's fair share). And the errors of the [cores] table and of --cores.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from contend.errors import UserError
from contend.machine.cores import parse_cores
from contend.machine.file import parse_machine
from contend.simulation.simulate import simulate

L, O = 3000, 1500  # ns
SWITCH, QUANTUM = 4000, 1_000_000  # ns
# Context tags of a collective whose receivers spin (engine/src/schedule/mod.rs, SPINNING_TAGS).
SPINNING = 2**31 + 2**19 + 2**18


def pingpong(rounds: int) -> str:
    ops = {0: [], 1: []}
    for i in range(rounds):
        ops[0] += [f"s{i}: send 8b to 1", f"r{i}: recv 8b from 1"]
        ops[1] += [f"r{i}: recv 8b from 0", f"s{i}: send 8b to 0"]
    return "num_ranks 2\n" + "".join(
        f"rank {r} {{\n" + "".join(f"{op}\n{op.split(':')[0]} requires {prev.split(':')[0]}\n" if k else f"{op}\n"
                                   for k, (op, prev) in enumerate(zip(lines, [""] + lines))) + "}\n"
        for r, lines in ops.items())


def run(tmp_path, text: str, cores: str, ranks_per_node: int = 2, g: int = 0, **options):
    path = tmp_path / "s.goal"
    path.write_text(text)
    return simulate(path, L=L, o=O, g=g, G=0, cores=cores, ranks_per_node=ranks_per_node, **options)


@pytest.mark.parametrize("switch", [0, 2000, SWITCH])
def test_a_ping_pong_on_one_core_waits_for_the_core_each_way(tmp_path, switch):
    # Each message: o at the sender, then the core passes to the receiver (max(L, switch) after the
    # sender's o), then o there: 2 (2o + max(L, switch)) a round trip.
    r = run(tmp_path, pingpong(5), f"1:{switch}ns")
    assert r.makespan == 5 * 2 * (2 * O + max(L, switch))


def pingpong_computing(rounds: int, calc_ns: int) -> str:
    """A ping-pong whose rank 1 computes ``calc_ns`` before each reply."""
    ops = {0: [], 1: []}
    for i in range(rounds):
        ops[0] += [f"s{i}: send 8b to 1", f"r{i}: recv 8b from 1"]
        ops[1] += [f"r{i}: recv 8b from 0", f"c{i}: calc {calc_ns}", f"s{i}: send 8b to 0"]
    return "num_ranks 2\n" + "".join(
        f"rank {r} {{\n" + "".join(f"{op}\n{op.split(':')[0]} requires {prev.split(':')[0]}\n" if k else f"{op}\n"
                                   for k, (op, prev) in enumerate(zip(lines, [""] + lines))) + "}\n"
        for r, lines in ops.items())


@pytest.mark.parametrize("calc", [0, 20_000, 2_000_000])
def test_a_rank_waiting_on_a_shared_core_takes_its_share_of_it(tmp_path, calc):
    # Rank 0 waits (polls and yields) while rank 1 computes on their one core; having taken the core
    # from rank 1, it passes it back only after a turn as long as rank 1's work (the kernel's fair
    # share): each round trip 2 (2o + switch + calc), the computation paid twice (this host: 9.1 +
    # 2.0 calc us for calc from 5 us to 2 ms, docs/measurements.md). Steady rounds: 20 less 10.
    def makespan(rounds):
        return run(tmp_path, pingpong_computing(rounds, calc), f"1:{SWITCH}ns").makespan
    assert makespan(20) - makespan(10) == 10 * 2 * (2 * O + SWITCH + calc)
    # With a core each the computation is paid once.
    assert run(tmp_path, pingpong_computing(10, calc), "none").makespan == 10 * (2 * (2 * O + L) + calc)


def test_a_core_per_rank_changes_nothing(tmp_path):
    text = pingpong(5)
    plain = run(tmp_path, text, "none")
    assert run(tmp_path, text, f"2:{SWITCH}ns:{QUANTUM}ns").ranks.tolist() == plain.ranks.tolist()
    assert plain.makespan == 5 * 2 * (2 * O + L)
    # Two nodes of one rank each: a core each, whatever the switch.
    assert run(tmp_path, text, f"1:{SWITCH}ns", ranks_per_node=1).makespan == plain.makespan


def test_a_barrier_of_two_ranks_spinning_on_one_core_takes_two_ticks(tmp_path):
    # Rank 1 arrives (sends to rank 0) and rank 0 releases it, as MPICH's shared-memory barrier does;
    # both receivers spin. Rank 0 computes first and spins from 1000 ns: rank 1 gets the core at the
    # first tick (Q), computes, sends and spins; rank 0 sees its arrival at the second tick (2Q).
    tag = SPINNING
    text = ("num_ranks 2\nrank 0 {\nc: calc 1000\nr: recv 0b from 1 tag %d\nr requires c\ns: send 0b to 1 tag %d\n"
            "s requires r\n}\nrank 1 {\nc: calc 1000\ns: send 0b to 0 tag %d\ns requires c\nr: recv 0b from 0 tag %d\n"
            "r requires s\n}\n") % (tag, tag + 1, tag, tag + 1)
    r = run(tmp_path, text, f"1:{SWITCH}ns:{QUANTUM}ns")
    switch_back = 2 * QUANTUM + SWITCH + O  # rank 0 handles the arrival after the second tick
    assert r.ranks.tolist()[0] == switch_back + O
    assert r.ranks.tolist()[1] == switch_back + O + max(L, SWITCH) + O
    # Without a quantum the same receivers yield: the core passes as soon as it is free.
    yielding = run(tmp_path, text, f"1:{SWITCH}ns")
    assert yielding.makespan < QUANTUM


def flat_barriers(iterations: int, calc_ns: int) -> str:
    """Four ranks, each iteration a calc and then MPICH's shared-memory barrier: ranks 1..3 arrive at
    rank 0, which releases them; every receive spins."""
    ops = {r: [] for r in range(4)}
    for i in range(iterations):
        tag = SPINNING + 2 * i
        for r in range(4):
            ops[r].append((f"c{i}", f"calc {calc_ns}", [f"b{i - 1}" if r else f"x{i - 1}_3"] if i else []))
        for p in (1, 2, 3):
            ops[0].append((f"g{i}_{p}", f"recv 0b from {p} tag {tag}", [f"c{i}"]))
        for p in (1, 2, 3):
            ops[0].append((f"x{i}_{p}", f"send 0b to {p} tag {tag + 1}", [f"g{i}_{q}" for q in (1, 2, 3)]))
            ops[p] += [(f"a{i}", f"send 0b to 0 tag {tag}", [f"c{i}"]), (f"b{i}", f"recv 0b from 0 tag {tag + 1}",
                                                                          [f"a{i}"])]
    if iterations:  # rank 0's next calc waits for all its releases
        for i in range(1, iterations):
            ops[0] = [(n, op, deps + ([f"x{i - 1}_1", f"x{i - 1}_2"] if n == f"c{i}" else [])) for n, op, deps in ops[0]]
    return "num_ranks 4\n" + "".join(
        f"rank {r} {{\n" + "".join(f"{n}: {op}\n" + "".join(f"{n} requires {d}\n" for d in deps) for n, op, deps in body)
        + "}\n" for r, body in ops.items())


def test_four_ranks_on_two_cores_take_two_ticks_a_barrier(tmp_path):
    # Between two ticks one pair of ranks runs: rank 0 releases the others of barrier k and arrives
    # at k + 1 while its core-mate does the same, the other pair in the next: each barrier after a
    # computation costs exactly two ticks once under way (the host's, docs/measurements.md). A rank's
    # own sends, its NIC's gap (g > o) apart, do not give its core to the preempted spinner.
    def makespan(iterations):
        return run(tmp_path, flat_barriers(iterations, 30_000), f"2:{SWITCH}ns:{QUANTUM}ns", ranks_per_node=4,
                   g=2 * O).makespan
    ten, twenty = makespan(10), makespan(20)
    assert twenty - ten == 10 * 2 * QUANTUM
    assert 2 * 10 * QUANTUM <= ten < 2 * 10 * QUANTUM + QUANTUM


def test_the_cores_table_and_its_errors():
    machine = parse_machine('[loggops]\nL = 1\no = 1\ng = 1\nG = 0\nO = 0\nS = 100\n'
                            '[cores]\nper_node = 2\nswitch = "3.8us"\nquantum = "4ms"\n', "m.toml")
    assert machine.node["cores"] == {"per_node": 2, "switch": 3_800_000, "quantum": 4_000_000_000, "one_host": True}
    assert machine.node["ranks_per_node"] == 2**32 - 1  # a host: every rank on it
    with_nodes = parse_machine('[loggops]\nL = 1\no = 1\ng = 1\nG = 0\nO = 0\nS = 100\n'
                               '[cores]\nper_node = 2\nranks_per_node = 4\n', "m.toml")
    assert with_nodes.node["ranks_per_node"] == 4 and "one_host" not in with_nodes.node["cores"]
    base = "[loggops]\nL = 1\no = 1\ng = 1\nG = 0\nO = 0\nS = 100\n"
    for table, message in [("[cores]\nswitch = 1\n", "m.toml:8: [cores]: needs per_node"),
                           ("[cores]\nper_node = 0\n", "m.toml:9: [cores] per_node: expected an integer >= 1, got 0"),
                           ("[cores]\nper_node = 2\nswich = 1\n", "swich"),
                           ("[cores]\nper_node = 2\nquantum = \"-1ms\"\n", "must not be negative")]:
        with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_machine(base + table, "m.toml")


def test_the_cores_option_and_its_errors():
    assert parse_cores("2") == {"per_node": 2, "switch": 0, "quantum": 0}
    assert parse_cores("2:3.8us:4ms") == {"per_node": 2, "switch": 3_800_000, "quantum": 4_000_000_000}
    assert parse_cores("none") is None
    for bad in ("0", "2:3.8us:4ms:1", "x", "2:fast", "2:1us:-4ms"):
        with pytest.raises(UserError):
            parse_cores(bad)


def test_the_critical_path_counts_waiting_for_a_core(tmp_path):
    # Each message waits for the core to pass to its receiver: the switch beyond L, 10 times.
    switch = L + 2000
    r = run(tmp_path, pingpong(5), f"1:{switch}ns", critical_path=True)
    path = r.critical_path
    assert path.length_ps == r.makespan * 1000
    assert path.split == {"computation": 0, "overhead": 5 * 4 * O, "wire": 5 * 2 * L, "late_partner": 0,
                          "contention": 0, "cores": 5 * 2 * (switch - L), "noise": 0}
    assert [s["activity"] for s in path.first_steps[:4]] == ["send overhead", "transit", "core wait",
                                                             "receive overhead"]


def test_the_memory_model_does_not_combine_with_shared_cores(tmp_path):
    with pytest.raises(UserError, match="memory model does not combine with shared cores"):
        run(tmp_path, pingpong(1), "1", memory={"ranks_per_node": 2, "bandwidth": 1e10, "compute_bandwidth": 1e10,
                                                 "nic": "offload", "nic_bandwidth": 1e9, "throttle": None,
                                                 "reserve_core": False, "floor": 0.0})


def test_cli_cores_errors_are_one_line(tmp_path):
    path = tmp_path / "s.goal"
    path.write_text(pingpong(1))
    done = subprocess.run([sys.executable, "-m", "contend.cli", "sim", str(path), "--cores", "2:soon"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--cores: switch" in done.stderr
    done = subprocess.run([sys.executable, "-m", "contend.cli", "sim", str(path), "--cores", "1:4us"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "ranks_per_node" in done.stderr


def test_a_result_shows_its_cores_in_ns(tmp_path):
    from contend.report.tables import describe_cores

    r = run(tmp_path, pingpong(1), "1:3us:4ms")
    node = r.to_dict()["params"]["node"]
    assert node["cores"] == {"per_node": 1, "switch": 3000, "quantum": 4_000_000}
    assert describe_cores(node, r.num_ranks) == "1 per node of 2 ranks; switch 3 us, quantum 4 ms"
    assert describe_cores({**node, "ranks_per_node": 1}, r.num_ranks) == "1 per node of 1 ranks: a core per rank"
    assert describe_cores({**node, "cores": {**node["cores"], "one_host": True}}, r.num_ranks) == \
        "1 for all 2 ranks (one host); switch 3 us, quantum 4 ms"


def test_a_host_s_cores_give_tune_no_nodes(tmp_path, capsys):
    """A machine file of one host (`bench fit`'s: [cores] without ranks_per_node) puts every rank on one
    node; `contend tune` sweeps NIC concurrency per node and must not take that for a node size."""
    from contend.cli import main

    host = tmp_path / "host.toml"
    host.write_text('[loggops]\nL = 1\no = 1\ng = 1\nG = 0\nO = 0\nS = 100\n[cores]\nper_node = 2\n')
    assert main(["tune", "--machine", str(host), "-o", str(tmp_path / "t")]) == 2
    assert "says nothing of its nodes" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


def test_a_host_s_cores_stay_shared_by_every_rank_when_a_throttle_emulates_nodes(tmp_path):
    """A host file's [cores] (no ranks_per_node: `bench fit`'s) is the host's: `--ranks-per-node 1` for a
    throttle makes each rank its own node for the policy, and the two ranks still share the one core;
    `--cores 1` alone is per node, so there each rank has its own."""
    host = tmp_path / "host.toml"
    host.write_text(f'[loggops]\nL = {L}\no = {O}\ng = 0\nG = 0\nO = 0\nS = 65535\n'
                    f'[cores]\nper_node = 1\nswitch = "{SWITCH}ns"\n')
    path = tmp_path / "s.goal"
    path.write_text(pingpong(5))
    shared = simulate(path, machine=str(host), throttle="rate:1ns", ranks_per_node=1)
    assert shared.makespan == 5 * 2 * (2 * O + max(L, SWITCH))
    assert simulate(path, machine=str(host), cores="1", ranks_per_node=1).makespan == 5 * 2 * (2 * O + L)


def test_ranks_pinned_to_one_core_take_turns_on_it_whatever_the_other_cores(tmp_path):
    """[cores] placement: the kernel keeps each task on its CPU. Two ranks pinned to core 0 of two
    ping-pong as on one core; placed on cores 0 and 1, or left to any core, each has its own. Two
    pairs on two cores: each pair on its own core takes the one-core time; split over the cores,
    each core holds a rank of each pair, which wait for each other's turns."""
    def machine(placement: str) -> str:
        path = tmp_path / f"m{len(placement)}{placement.count('1')}.toml"
        path.write_text(f'[loggops]\nL = "{L}ns"\no = "{O}ns"\ng = 0\nG = 0\nO = 0\nS = 65535\n'
                        f'[cores]\nper_node = 2\nswitch = "{SWITCH}ns"\n' + (f"placement = {placement}\n" if placement else ""))
        return str(path)

    one_core = 5 * 2 * (2 * O + max(L, SWITCH))
    path = tmp_path / "s.goal"
    path.write_text(pingpong(5))
    assert simulate(path, machine=machine("[0, 0]")).makespan == one_core
    assert simulate(path, machine=machine("[0, 1]")).makespan == 5 * 2 * (2 * O + L)
    assert simulate(path, machine=machine("")).makespan == 5 * 2 * (2 * O + L)
    pairs = "num_ranks 4\n" + pingpong(5).split("\n", 1)[1] + pingpong(5).split("\n", 1)[1].replace(
        "rank 0 {", "rank 2 {").replace("rank 1 {", "rank 3 {").replace("to 1", "to 3").replace(
        "from 1", "from 3").replace("to 0", "to 2").replace("from 0", "from 2")
    path.write_text(pairs)
    assert simulate(path, machine=machine("[0, 0, 1, 1]")).makespan == one_core
    assert simulate(path, machine=machine("[0, 1, 0, 1]")).makespan > one_core
    with pytest.raises(UserError, match=r"placement: expected a list of core numbers below per_node \(2\)"):
        parse_machine('[loggops]\nL = 1\no = 1\ng = 1\nG = 0\nO = 0\nS = 100\n[cores]\nper_node = 2\n'
                      'placement = [0, 2]\n', "m.toml")


def test_nodes_of_a_topology_share_the_host_s_cores_when_told_one_host(tmp_path):
    """Two nodes of a crossbar, one rank each, emulated on one host of one core (the fabric's
    namespaces): with one_host each message waits for the core to pass to its receiver; without,
    each node has its core and a message takes o, the link (8 bytes after a 1-byte head over 2 links
    at 1 byte/ns: 10 ns) and o."""
    table = ('[loggops]\nL = 0\no = "{o}ns"\ng = 0\nG = 0\nO = 0\nS = 65535\n'
             '[topology]\nkind = "crossbar"\nnodes = 2\nlink_bandwidth = "1GB/s"\npacket = 1\n'
             '[cores]\nper_node = 1\nswitch = "{switch}ns"\n').format(o=O, switch=SWITCH)
    path = tmp_path / "s.goal"
    path.write_text(pingpong(5))
    (tmp_path / "host.toml").write_text(table + "one_host = true\n")
    (tmp_path / "nodes.toml").write_text(table)
    assert simulate(path, machine=str(tmp_path / "host.toml")).makespan == 5 * 2 * (2 * O + max(10, SWITCH))
    assert simulate(path, machine=str(tmp_path / "nodes.toml")).makespan == 5 * 2 * (2 * O + 10)
    with pytest.raises(UserError, match=r"host.toml:16: \[cores\] one_host: expected true or false, got 'yes'"):
        (tmp_path / "host.toml").write_text(table + 'one_host = "yes"\n')
        parse_machine((tmp_path / "host.toml").read_text(), str(tmp_path / "host.toml"))


def test_spinners_beside_working_ranks_take_their_fair_half_of_the_cores(tmp_path):
    """4 ranks on 2 cores: ranks 0 and 1 spin from 10 us on, until ranks 2 and 3 have ping-ponged
    200 rounds with 100 us of computation each. The kernel's fair share (docs/models.md, "Shared
    cores") gives the workers the cores whenever they have had less of them than the spinners, so
    they run half the time, in stretches between ticks: twice their time alone, to within 10% (the
    switches and the ticks that end each stretch); not a tick a round (the rule without it: 200
    quanta and more: 18 times their time alone)."""
    rounds, calc = 200, 100_000
    text = ["num_ranks 4"]
    for r in (0, 1):
        text += [f"rank {r} {{", "c: calc 10000", f"w: recv 8b from {r + 2} tag {SPINNING}", "w requires c", "}"]
    for r in (2, 3):
        peer, ops, prev = 5 - r, [], None
        for i in range(rounds):
            pair = [f"s{i}: send 8b to {peer}", f"r{i}: recv 8b from {peer}"]
            for op in (pair if r == 2 else pair[::-1]) + [f"c{i}: calc {calc}"]:
                ops.append(op)
                if prev:
                    ops.append(f"{op.split(':')[0]} requires {prev}")
                prev = op.split(":")[0]
        ops += [f"end: send 8b to {r - 2} tag {SPINNING}", f"end requires {prev}"]
        text += [f"rank {r} {{", *ops, "}"]
    text = "\n".join(text) + "\n"
    alone = run(tmp_path, text, "none", ranks_per_node=4).makespan
    shared = run(tmp_path, text, f"2:{SWITCH}ns:{QUANTUM}ns", ranks_per_node=4).makespan
    assert alone > 20 * QUANTUM
    assert 1.9 * alone <= shared <= 2.2 * alone, (shared, alone)
