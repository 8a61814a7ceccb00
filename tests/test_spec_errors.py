"""The engine's model specs judge their own values and name the machine-file key at fault, as data:
Python points at that key's line (also for a class of [[nic.class]] after sorting), and the rules
Python states nowhere else (topology sizes, the default noise distribution) come from the engine."""

from __future__ import annotations

import re

import pytest

from contend.engine import engine
from contend.errors import UserError
from contend.machine.file import load_machine
from contend.machine.topology import topology_sizes
from contend.noise.settings import from_table

BASE = '[loggops]\nL = 1\no = 1\ng = 1\nG = 1\nO = 0\nS = 100\n'  # lines 1-7


@pytest.mark.parametrize("node, key", [
    ({"ranks_per_node": 2, "policy": {"kind": "token", "tokens": 0}}, "throttle.tokens"),
    ({"ranks_per_node": 2, "policy": {"kind": "rate", "gap": 0}}, "throttle.gap_ns"),
    ({"ranks_per_node": 2, "policy": {"kind": "proxy", "servers": 0}}, "throttle.servers"),
    ({"ranks_per_node": 2, "policy": {"kind": "token", "thresholds": [
        {"up_to": 64, "cct": 1, "nrct": 1, "crct": [[1, 1]]}, {"cct": 1, "nrct": 1, "crct": [[2, 1], [1, 1]]}]}},
     "throttle.class.1.crct"),
    ({"ranks_per_node": 0}, "node.ranks_per_node"),
    ({"ranks_per_node": 2, "nic": [{"up_to": 64, "concurrency": [[0, 1.0]]}, {"outstanding": [[1, 0.0]]}]},
     "nic.class.1.outstanding"),
])
def test_a_refused_spec_names_its_key_as_data(node, key):
    with pytest.raises(engine().SpecError) as caught:
        engine().check_specs({"node": node})
    assert caught.value.key == key and caught.value.problem and caught.value.combined_with is None


def test_a_memory_spec_names_its_key_and_a_combination_names_both_models():
    memory = {"ranks_per_node": 1, "bandwidth": 1e10, "compute_bandwidth": 2e10, "nic_bandwidth": 1e9}
    with pytest.raises(engine().SpecError) as caught:
        engine().check_specs({"memory": memory})
    assert caught.value.key == "memory.compute_bandwidth" and "must not exceed" in caught.value.problem
    params = {"L": 0, "o": 0, "g": 0, "G": 0, "O": 0, "S": 0, "memory": {**memory, "compute_bandwidth": 1e10},
              "noise": {"kind": "periodic", "period": 10**9, "duration": 10**6}}
    with pytest.raises(engine().SpecError) as caught:
        engine().simulate_collective("pingpong", 2, 8, params)
    assert (caught.value.key, caught.value.combined_with) == ("memory", "noise")


def test_a_class_refused_by_the_engine_is_located_after_sorting(tmp_path):
    # Written largest first: the engine sees the 64-byte class (lines 13-15) first.
    text = (BASE + '[nic]\nranks_per_node = 2\n'
            '[[nic.class]]\nup_to = 4096\noutstanding = [[1, 1.0]]\n'
            '[[nic.class]]\nup_to = 64\noutstanding = [[2, 1.0], [1, 0.5]]\n')
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_machine(path)
    assert re.match(re.escape(str(path)) + r":15: \[\[nic\.class\]\] #2 outstanding: point 2: ", str(caught.value)), \
        str(caught.value)


def test_the_table_own_curves_are_the_last_class(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(BASE + '[nic]\nranks_per_node = 2\nconcurrency = [[0, -1.0]]\n[[nic.class]]\nup_to = 64\n',
                    encoding="utf-8")
    with pytest.raises(UserError, match=re.escape(f"{path}:10: [nic] concurrency: point 1: ")):
        load_machine(path)


def test_topology_sizes_and_the_noise_default_come_from_the_engine():
    required, optional, defaults = topology_sizes()
    assert required["fattree"] == ("k", "levels") and optional == {"fattree": ("oversubscription",)}
    assert defaults == {"oversubscription": 1} and required["dragonfly"] == ("a", "p", "h", "g")
    settings = from_table({"kind": "random", "rate": "1kHz", "duration": "1us"}, lambda key: f"noise {key}")
    assert settings.distribution == engine().DEFAULT_NOISE_DISTRIBUTION == "exponential"
