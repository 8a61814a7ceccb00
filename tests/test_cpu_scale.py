"""cpu_scale: every calc's duration multiplied by a factor, rounded to the picosecond; overheads and
the network stay as they are. Closed forms through the API and the CLI, scale 1 changes nothing, and
bad factors are one error line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contend.cli import main
from contend.errors import UserError
from contend.simulation.simulate import simulate

LOGGOPS = {"L": 3000, "o": 1500, "g": 1000, "G": 6, "O": 0, "S": 65535}
# Rank 0 computes C ns then sends 8 bytes; rank 1 receives it and computes D ns.
C, D, BYTES = 1001, 500, 8
CHAIN = f"""num_ranks 2
rank 0 {{
l1: calc {C}
l2: send {BYTES}b to 1 tag 0
l2 requires l1
}}
rank 1 {{
l1: recv {BYTES}b from 0 tag 0
l2: calc {D}
l2 requires l1
}}
"""


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.goal"
    path.write_text(CHAIN)
    return path


def makespan_ps(result) -> int:
    return round(result.makespan * 1000)


def chain_closed_form_ps(scale: float) -> int:
    """Scaled calc, o, L, then the receive's o + (s-1)G (G is the receive's per-byte cost on one
    node), then the scaled calc; each calc rounded to the picosecond on its own, halves away from 0."""
    o, L, G = (LOGGOPS[k] * 1000 for k in ("o", "L", "G"))
    return scaled_ps(C, scale) + o + L + o + (BYTES - 1) * G + scaled_ps(D, scale)


def scaled_ps(ns: int, scale: float) -> int:
    return math.floor(ns * 1000 * scale + 0.5)


@pytest.mark.parametrize("scale", [1, 0.5, 2, 1 / 3, 1e-6, 7.25])
def test_chain_follows_the_closed_form_in_the_scaled_calc_time(chain, scale):
    r = simulate(chain, **LOGGOPS, cpu_scale=scale)
    assert makespan_ps(r) == chain_closed_form_ps(scale)
    assert r.params["cpu_scale"] == scale


def test_cli_scales_the_calcs(chain, capsys):
    assert main(["sim", str(chain), *[f"-{k}={v}" for k, v in LOGGOPS.items()], "--cpu-scale", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert round(out["makespan"] * 1000) == chain_closed_form_ps(0.5)
    assert out["params"]["cpu_scale"] == 0.5


@pytest.mark.parametrize("workload", [
    {"collective": "binomial-bcast", "ranks": 8, "bytes": 131072},
    {"collective": "allreduce-ring", "ranks": 6, "bytes": 4096},
    {"collective": "dissemination", "ranks": 16, "bytes": 1},
])
def test_scale_one_changes_nothing(workload):
    plain = simulate(**workload, **LOGGOPS)
    scaled = simulate(**workload, **LOGGOPS, cpu_scale=1)
    assert np.array_equal(plain.ranks, scaled.ranks)
    if workload["collective"] == "binomial-bcast":  # the reference answer of engine/tests/reference.rs
        assert plain.makespan == 2377278


def test_scale_one_changes_nothing_with_calcs_and_noise(chain):
    noise = {"kind": "periodic", "period": "700ns", "duration": "90ns", "phase": "independent"}
    plain = simulate(chain, **LOGGOPS, noise=noise)
    scaled = simulate(chain, **LOGGOPS, noise=noise, cpu_scale="1.0")
    assert plain.noise_charged > 0
    assert np.array_equal(plain.ranks, scaled.ranks) and plain.noise_charged == scaled.noise_charged


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "abc", "2e6", "1e-7"])
def test_bad_scales_are_one_error_line(chain, fails_cleanly, bad):
    fails_cleanly(["sim", str(chain), "--cpu-scale", bad], r"contend: error: cpu scale: expected")


def test_api_refuses_a_bad_scale(chain):
    with pytest.raises(UserError, match="cpu scale"):
        simulate(chain, cpu_scale=0)
    with pytest.raises(UserError, match="cpu scale"):
        simulate(chain, cpu_scale=[2])
