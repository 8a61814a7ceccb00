"""Where the time goes: the critical path's split through the API and the CLI. Closed forms with noise,
contention on links and at the NIC, the JSON, the records' column, the tables and the HTML bar; the
parts sum to the makespan exactly (ps) on every generated collective."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from contend.cli import main
from contend.simulation.critical_path import PARTS
from contend.engine import engine
from contend.simulation.simulate import simulate

REFERENCE = {"L": 3000, "o": 1500, "g": 1000, "G": 6, "O": 0, "S": 65535}
FLAGS = [f"-{k}={v}" for k, v in REFERENCE.items()]


def ps(ns) -> int:
    return round(ns * 1000)


def assert_exact(result):
    path = result.critical_path
    assert path is not None
    assert set(path.split_ps) == set(PARTS)
    assert path.length_ps == ps(result.makespan)
    assert abs(sum(path.shares.values()) - 1) < 1e-12 or result.makespan == 0
    return path


def test_pingpong_is_o_wire_o_each_way():
    r = simulate(collective="pingpong", ranks=2, bytes=1, **REFERENCE, critical_path=True)
    path = assert_exact(r)
    assert path.split == {"computation": 0, "overhead": 6000, "wire": 6000, "late_partner": 0, "contention": 0, "cores": 0,
                          "noise": 0}
    assert [s["activity"] for s in path.first_steps] == ["send overhead", "transit", "receive overhead"] * 2
    assert [s["rank"] for s in path.first_steps] == [0, 0, 1, 1, 1, 0]
    assert path.ops == 4


def test_binomial_broadcast_closed_form():
    # docs/models.md, "Closed forms": P=8, 128 KiB (eager threshold above): 3 hops of 2o + L + (s-1)G.
    r = simulate(collective="binomial-bcast", ranks=8, bytes=4096, **REFERENCE, critical_path=True)
    path = assert_exact(r)
    assert path.split_ps == {"computation": 0, "overhead": 3 * 2 * 1_500_000, "wire": 3 * (3_000_000 + 4095 * 6000),
                             "late_partner": 0, "contention": 0, "cores": 0, "noise": 0}


def test_late_sender_waits_the_senders_calc(tmp_path):
    goal = tmp_path / "late.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: calc 12345\nl2: send 1b to 1 tag 0\nl2 requires l1\n}\n"
                    "rank 1 {\nl1: recv 1b from 0 tag 0\n}\n")
    r = simulate(goal, **REFERENCE, critical_path=True)
    path = assert_exact(r)
    assert path.split == {"computation": 0, "overhead": 3000, "wire": 3000, "late_partner": 12345, "contention": 0, "cores": 0,
                          "noise": 0}
    # A CPU twice as fast: half the wait.
    assert simulate(goal, **REFERENCE, critical_path=True, cpu_scale=0.5).critical_path.split["late_partner"] == 6172.5


def test_noise_share_is_the_detours_on_the_path():
    # models.md/simulate's example: each overhead of the first message meets one 500 ns detour.
    noise = {"kind": "periodic", "period": "5us", "duration": "500ns", "phase": "1us"}
    r = simulate(collective="pingpong", ranks=2, bytes=1, L=3000, o=1500, noise=noise, critical_path=True)
    path = assert_exact(r)
    assert (r.makespan, r.noise_charged) == (13000, 1000)
    assert path.split["noise"] == 1000
    assert path.split["overhead"] == 4 * 1500 and path.split["wire"] == 2 * 3000


def test_noise_in_a_calc_chain(tmp_path):
    # One rank computes: every detour it meets is on the path, none elsewhere.
    goal = tmp_path / "chain.goal"
    goal.write_text("num_ranks 1\nrank 0 {\nl1: calc 20000\nl2: calc 13000\nl2 requires l1\n}\n")
    noise = {"kind": "periodic", "period": "3us", "duration": "250ns", "phase": "coscheduled"}
    r = simulate(goal, noise=noise, critical_path=True)
    path = assert_exact(r)
    assert r.noise_charged > 0
    assert path.split == {"computation": 33000, "overhead": 0, "wire": 0, "late_partner": 0, "contention": 0, "cores": 0,
                          "noise": r.noise_charged}


@pytest.mark.parametrize("machine, options", [
    ("bgp-torus", {}),
    ("xt3-torus", {"sharing": "packet"}),
    ("ib-congestion", {"ranks_per_node": 8}),
    ("ib-congestion", {"ranks_per_node": 8, "throttle": "token:1"}),
    ("ib-congestion", {"ranks_per_node": 8, "cores": "2:3us:1ms"}),  # and 8 ranks taking turns on 2 cores
    ("bgp-torus", {"cores": "1:3us", "ranks_per_node": 4, "noise": {"kind": "periodic", "period": "50us",
                                                                    "duration": "5us", "phase": "1us"}}),
])
def test_contention_shows_and_sums_exactly(machine, options):
    r = simulate(collective="alltoall-linear", ranks=16, bytes=4096, machine=machine, critical_path=True, **options)
    path = assert_exact(r)
    assert path.split_ps["contention"] > 0
    # Without sharing (LogGOPS), no contention.
    plain = simulate(collective="alltoall-linear", ranks=16, bytes=4096, critical_path=True)
    assert assert_exact(plain).split_ps["contention"] == 0


def test_memory_contention_sums_exactly():
    r = simulate(collective="alltoall-linear", ranks=8, bytes=65536, machine="sandybridge-onload", critical_path=True)
    assert_exact(r)


@pytest.mark.parametrize("name", engine().collectives())
def test_every_collective_sums_exactly(name):
    for ranks, size in ((2, 1), (7, 1000), (16, 70000)):
        if name in ("allreduce-recdoub", "allgather-recdoub") and ranks & (ranks - 1):
            continue  # powers of two only
        r = simulate(collective=name, ranks=ranks, bytes=size, **REFERENCE, critical_path=True, seed=5)
        path = assert_exact(r)
        assert 0 < path.ops <= r.ops
        steps = path.first_steps
        assert steps[0]["start"] == 0 and all(a["end"] == b["start"] for a, b in zip(steps, steps[1:]))


def test_tracing_changes_no_time():
    plain = simulate(collective="allreduce-ring", ranks=12, bytes=9000, machine="bgp-torus")
    traced = simulate(collective="allreduce-ring", ranks=12, bytes=9000, machine="bgp-torus", critical_path=True)
    assert (plain.ranks == traced.ranks).all() and plain.critical_path is None


def test_cli_json_records_and_table(tmp_path, capsys):
    records = tmp_path / "r.parquet"
    code = main(["sim", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1", *FLAGS, "--critical-path",
                 "--records", str(records), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    cp = out["critical_path"]
    assert cp["split"] == {"computation": 0, "overhead": 9000, "wire": 9000, "late_partner": 0, "contention": 0, "cores": 0,
                           "noise": 0}
    assert cp["shares"]["overhead"] == 0.5 and cp["ops"] == 6 and cp["steps"] == 9
    assert cp["first_steps"][0] == {"rank": 0, "op": 0, "activity": "send overhead", "start": 0, "end": 1500,
                                    "split": {"overhead": 1500}}
    table = pq.read_table(records)
    rows = table.to_pydict()
    on_path = {(s, d) for s, d, c in zip(rows["src"], rows["dst"], rows["critical"]) if c}
    assert on_path == {(0, 1), (1, 3), (3, 7)}
    assert json.loads(table.schema.metadata[b"contend.critical_path"]) == cp
    # Without the option: null, and no column.
    assert main(["sim", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["critical_path"] is None
    assert main(["sim", "--collective", "pingpong", "--ranks", "2", "--bytes", "1", *FLAGS, "--critical-path"]) == 0
    text = capsys.readouterr().out
    assert "where the time goes" in text and "waiting on a late partner" in text and "50.0%" in text


def test_deadlock_has_no_path(tmp_path, capsys):
    goal = tmp_path / "dead.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: recv 1b from 1 tag 0\n}\nrank 1 {\nl1: calc 5\n}\n")
    assert main(["sim", str(goal), "--critical-path", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["critical_path"] is None


def test_diagnose_html_draws_the_split(tmp_path, capsys):
    records = tmp_path / "r.parquet"
    assert main(["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4096", "--critical-path",
                 "--records", str(records)]) == 0
    html = tmp_path / "report"
    assert main(["diagnose", str(records), "--html", str(html)]) == 0
    capsys.readouterr()
    page = (html / "index.html").read_text()
    assert "Where the time goes" in page and "critical_path.png" in page
    assert (html / "critical_path.png").stat().st_size > 1000
    # Records without a path: no bar.
    plain = tmp_path / "p.parquet"
    assert main(["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4096", "--records", str(plain)]) == 0
    assert main(["diagnose", str(plain), "--html", str(tmp_path / "plain")]) == 0
    assert not (tmp_path / "plain" / "critical_path.png").exists()
