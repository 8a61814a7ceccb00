"""The ``[memory]`` table of a machine file: a node's memory bandwidth shared between its ranks'
computation and the payload its NIC writes into memory (docs/models.md, "Memory contention (NiMC)"),
validated into the engine's ``params["memory"]``::

    [memory]
    ranks_per_node = 16               # unless [topology], [nic] or [throttle] gives it (else 1)
    bandwidth = "102.4GB/s"           # B: what memory gives the cores and the NIC together
    compute_bandwidth = "73.4GB/s"    # B_c <= B: the cores' most (STREAM triad); default B
    nic = "onload"                    # offload (default) | onload
    nic_bandwidth = "3.2GB/s"         # rate at which the NIC writes incoming payload; default 1/G
    cpu_per_byte = "6.25ps"           # onload: CPU time per received byte, on the node's first core
    pollution = 0.323                 # onload: calcs run 1 + pollution x W(GB/s) times slower while
                                      #   the NIC writes at W
    throttle = "1GB/s"                # mitigation (a): cap on the incoming write rate
    reserve_core = false              # mitigation (b): a core per node takes the onload work
    floor = 0.0                       # the cores keep at least floor x B_c (the NIC yields)

Calcs carry their memory traffic in GOAL (``calc 1000 mem 65536``). Without this table every
result is the LogGOPS one.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from contend.errors import UserError
from contend.machine.quantities import parse_bandwidth
from contend.machine.tomlfile import did_you_mean, reject_unknown_keys

KEYS = ("ranks_per_node", "bandwidth", "compute_bandwidth", "nic", "nic_bandwidth", "cpu_per_byte",
        "pollution", "throttle", "reserve_core", "floor")
ONLOAD_KEYS = ("cpu_per_byte", "pollution")
NIC_KINDS = ("offload", "onload")
_PER_BYTE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ps|ns|)\s*$")


def memory_params(table: Mapping[str, Any], where: Callable[[str], str], ranks_per_node: int | None,
                  per_byte_gap_ps: int) -> dict[str, Any]:
    """The engine's memory model from a ``[memory]`` table, in the engine's units (its MemorySpec
    judges the values). ``where(key)`` locates a key for errors;
    ``ranks_per_node`` is another table's, if any; ``per_byte_gap_ps`` the machine's G, whose
    bandwidth is the NIC's write rate unless ``nic_bandwidth`` is given."""
    if not isinstance(table, dict):
        raise UserError(f"{where('')}: must be a table")
    reject_unknown_keys(table, KEYS, where)
    if "bandwidth" not in table:
        raise UserError(f"{where('')}: needs bandwidth (the node's memory bandwidth, e.g. \"85.3GB/s\")")
    nic = table.get("nic", "offload")
    if nic not in NIC_KINDS:
        raise UserError(f"{where('nic')}: expected \"offload\" or \"onload\", got {nic!r}"
                        f"{did_you_mean(str(nic), NIC_KINDS)}")
    if nic == "offload":
        for key in ONLOAD_KEYS:
            if key in table:
                raise UserError(f"{where(key)}: applies to nic = \"onload\" only")
    bandwidth = parse_bandwidth(table["bandwidth"], where("bandwidth"))
    compute = parse_bandwidth(table["compute_bandwidth"], where("compute_bandwidth")) \
        if "compute_bandwidth" in table else bandwidth
    if "nic_bandwidth" in table:
        nic_bandwidth = parse_bandwidth(table["nic_bandwidth"], where("nic_bandwidth"))
    elif per_byte_gap_ps > 0:
        nic_bandwidth = 1e12 / per_byte_gap_ps
    else:
        raise UserError(f"{where('')}: needs nic_bandwidth (the machine's G is 0, so it cannot be derived)")
    if "ranks_per_node" in table:
        ranks_per_node = _integer(table, "ranks_per_node", where, minimum=1)
    reserve = table.get("reserve_core", False)
    if not isinstance(reserve, bool):
        raise UserError(f"{where('reserve_core')}: expected true or false, got {reserve!r}")
    out: dict[str, Any] = {
        "ranks_per_node": ranks_per_node or 1,
        "bandwidth": bandwidth,
        "compute_bandwidth": compute,
        "nic_bandwidth": nic_bandwidth,
        "throttle": parse_bandwidth(table["throttle"], where("throttle")) if "throttle" in table else None,
        "floor": _number(table, "floor", where),
        "nic": nic,
        "reserve_core": reserve,
    }
    if nic == "onload":
        out["cpu_per_byte"] = per_byte_ps(table.get("cpu_per_byte", 0), where("cpu_per_byte"))
        out["pollution"] = _number(table, "pollution", where)
    return out


def per_byte_ps(value: Any, what: str) -> float:
    """A CPU time per byte in ps (float): ``"6.25ps"``, ``"0.5ns"``, or a number of ns."""
    if isinstance(value, bool):
        raise UserError(f"{what}: expected a time per byte such as \"6.25ps\", got {value!r}")
    if isinstance(value, (int, float)):
        value = str(value)
    match = _PER_BYTE.match(str(value))
    if not match:
        raise UserError(f"{what}: expected a time per byte such as \"6.25ps\" or \"0.5ns\", got {value!r}")
    return float(match.group(1)) * (1.0 if match.group(2) == "ps" else 1000.0)


def with_mitigations(memory: Mapping[str, Any], throttle: Any = None, reserve_core: bool | None = None) -> dict:
    """A copy of an engine memory model with the mitigations replaced: ``throttle`` a bandwidth
    (``"1GB/s"``, bytes/s as a number) or ``"none"``; ``reserve_core`` True or False."""
    out = dict(memory)
    if throttle is not None:
        if throttle == "none":
            out["throttle"] = None
        else:
            out["throttle"] = float(throttle) if isinstance(throttle, (int, float)) and not isinstance(
                throttle, bool) else parse_bandwidth(throttle, "memory throttle")
            if out["throttle"] <= 0:
                raise UserError(f"memory throttle: must be positive, got {throttle!r}")
    if reserve_core is not None:
        # a user's engine dict may lack ranks_per_node or hold a wrong type: the engine names that
        ranks_per_node = out.get("ranks_per_node")
        if reserve_core and type(ranks_per_node) is int and ranks_per_node < 2:
            raise UserError("reserve core: needs at least 2 ranks per node")
        out["reserve_core"] = bool(reserve_core)
    return out


def _integer(table, key, where, *, minimum):
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < 2**32:
        raise UserError(f"{where(key)}: expected an integer >= {minimum}, got {value!r}")
    return value


def _number(table, key, where) -> float:
    value = table.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where(key)}: expected a number, got {value!r}")
    return float(value)
