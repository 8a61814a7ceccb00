"""The ``[topology]`` table of a machine file, validated into the engine's network parameters.

Without the table a machine is the LogGOPS model alone. With it, messages between nodes cross links
that they share fairly (docs/models.md, "Links")::

    [topology]
    kind = "torus"                 # torus | mesh | fattree | dragonfly | crossbar
    dims = [8, 8, 8]               # torus, mesh; fattree: k, levels, oversubscription;
                                   # dragonfly: a, p, h, g; crossbar: nodes
    routing = "dimension-order"    # optional: the topology's default otherwise
    ranks_per_node = 4
    placement = "block"            # block | cyclic | a list of node numbers, one per rank
    link_bandwidth = "425MB/s"     # network links, per direction
    injection_bandwidth = "2GB/s"  # node <-> router links (default: link_bandwidth)
    global_bandwidth = "1GB/s"     # dragonfly links between groups (default: link_bandwidth)
    hop_latency = "100ns"          # router and wire delay of every link crossed
    packet = "256B"                # the first packet crosses each link in packet / bandwidth
    seed = 0                       # random choices of Valiant and UGAL routing
    sharing = "flow"               # flow: fluid max-min rates; packet: packets, round robin per link
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.quantities import parse_bandwidth, parse_bytes
from contend.machine.tomlfile import did_you_mean, reject_unknown_keys

SIZE_KEYS = {
    "torus": ("dims",),
    "mesh": ("dims",),
    "fattree": ("k", "levels"),
    "dragonfly": ("a", "p", "h", "g"),
    "crossbar": ("nodes",),
}
OPTIONAL_SIZE_KEYS = {"fattree": ("oversubscription",)}
COMMON_KEYS = ("kind", "routing", "ranks_per_node", "placement", "link_bandwidth", "injection_bandwidth",
               "global_bandwidth", "hop_latency", "packet", "seed", "sharing")
ALL_SIZE_KEYS = tuple(dict.fromkeys(k for keys in (*SIZE_KEYS.values(), *OPTIONAL_SIZE_KEYS.values()) for k in keys))


def network_params(table: Mapping[str, Any], where: Callable[[str], str]) -> dict[str, Any]:
    """The engine's ``params["network"]`` from a ``[topology]`` table; ``where(key)`` locates a key
    ("file:line: [topology] key") for error messages."""
    if not isinstance(table, dict):
        raise UserError(f"{where()}: must be a table")
    # Keys of no topology first: a misspelt kind is reported as such, not as a missing one.
    reject_unknown_keys(table, COMMON_KEYS + ALL_SIZE_KEYS, where)
    if "kind" not in table:
        raise UserError(f"{where()}: needs kind ({', '.join(SIZE_KEYS)})")
    kind = table["kind"]
    if not isinstance(kind, str) or kind not in SIZE_KEYS:
        raise UserError(f"{where('kind')}: unknown topology {kind!r}{did_you_mean(str(kind), SIZE_KEYS)}; "
                        f"known: {', '.join(SIZE_KEYS)}")
    reject_unknown_keys(table, ("kind",) + SIZE_KEYS[kind] + OPTIONAL_SIZE_KEYS.get(kind, ()) + COMMON_KEYS[1:],
                        where, f"key of a {kind} topology")
    network: dict[str, Any] = {"topology": kind}
    for key in SIZE_KEYS[kind]:
        if key not in table:
            raise UserError(f"{where()}: a {kind} needs {', '.join(SIZE_KEYS[kind])}")
    if kind in ("torus", "mesh"):
        dims = table["dims"]
        if not (isinstance(dims, list) and dims and all(_is_count(d, 1) and d < 2**32 for d in dims)):
            raise UserError(f"{where('dims')}: expected a list of positive sizes such as [8, 8, 8], got {dims!r}")
        network["dims"] = dims
    else:
        for key in SIZE_KEYS[kind]:
            network[key] = _count(table, key, where, minimum=1)
    if kind == "fattree":
        network["oversubscription"] = _count(table, "oversubscription", where, minimum=1, default=1)
    network["routing"] = table.get("routing")
    if network["routing"] is not None and not isinstance(network["routing"], str):
        raise UserError(f"{where('routing')}: expected a routing name")
    network["ranks_per_node"] = _count(table, "ranks_per_node", where, minimum=1, default=1)
    placement = table.get("placement", "block")
    if isinstance(placement, list):
        if not all(_is_count(n, 0) for n in placement):
            raise UserError(f"{where('placement')}: a placement list holds node numbers (integers >= 0)")
    elif not isinstance(placement, str):
        raise UserError(f"{where('placement')}: expected block, cyclic or a list of nodes, got {placement!r}")
    else:
        with user_errors(where("placement")):
            engine().check_placement(placement)
    network["placement"] = placement
    if "link_bandwidth" not in table:
        raise UserError(f"{where()}: link_bandwidth is required (e.g. \"425MB/s\")")
    link = _bandwidth(table, "link_bandwidth", where)
    network["link_bandwidth"] = link
    network["injection_bandwidth"] = _bandwidth(table, "injection_bandwidth", where) if "injection_bandwidth" in table else link
    network["global_bandwidth"] = _bandwidth(table, "global_bandwidth", where) if "global_bandwidth" in table else link
    latency = table.get("hop_latency", "0ns")
    with user_errors(where("hop_latency")):
        network["hop_latency"] = engine().parse_time(str(latency))
    packet = parse_bytes(table.get("packet", 256), where("packet"))
    if packet < 1:
        raise UserError(f"{where('packet')}: a packet holds at least 1 byte")
    network["packet_bytes"] = packet
    network["seed"] = _count(table, "seed", where, minimum=0, default=0)
    network["sharing"] = sharing_model(table.get("sharing", "flow"), where("sharing"))
    return network


NETWORK_ERROR = "network: "  # how the engine's errors about a network begin (bindings)
# What the engine's network errors are about (engine/src/net), in the order to try: the key of
# [topology] that an error names, so that it can point at the key's line. None: the table's size key.
_ENGINE_ERROR_KEYS = (
    (re.compile(r"^(link_bandwidth|injection_bandwidth|global_bandwidth) "), None),
    (re.compile(r"\bplacement\b"), "placement"),
    (re.compile(r"\brouting\b"), "routing"),
    (re.compile(r"packet model"), "sharing"),
    (re.compile(r"packet size"), "packet"),
    (re.compile(r"ranks do not fit"), ""),
    (re.compile(r"oversubscription"), "oversubscription"),
    (re.compile(r"radix k\b"), "k"),
    (re.compile(r"levels?\b"), "levels"),
    (re.compile(r"^dragonfly ([aphg]) \("), None),
    (re.compile(r"^dragonfly with g = .* needs h\b"), "h"),
    (re.compile(r"^dragonfly g = "), "g"),
    (re.compile(r"^(torus|mesh)\b"), "dims"),
    (re.compile(r"^crossbar\b"), "nodes"),
)


def engine_error_key(network: Mapping[str, Any], message: str) -> str | None:
    """The ``[topology]`` key that an engine error about ``network`` (engine parameters) is about,
    or None when the message is none of the engine's known ones."""
    for pattern, key in _ENGINE_ERROR_KEYS:
        match = pattern.search(message)
        if match:
            return match.group(1) if key is None else key or SIZE_KEYS[network["topology"]][0]
    return None


def sharing_model(name: Any, where: str) -> str:
    """A link sharing model's name, checked by the engine (its Sharing)."""
    if not isinstance(name, str):
        raise UserError(f"{where}: unknown link sharing model {name!r} (flow, packet)")
    with user_errors(where):
        engine().check_sharing(name)
    return name


def _is_count(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _count(table: Mapping[str, Any], key: str, where, *, minimum: int, default: int | None = None) -> int:
    value = table.get(key, default)
    if not _is_count(value, minimum) or value >= 2**32:
        raise UserError(f"{where(key)}: expected an integer >= {minimum}, got {value!r}")
    return value


def _bandwidth(table: Mapping[str, Any], key: str, where) -> float:
    return parse_bandwidth(table[key], where(key))
