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
    burst = "128KiB"               # optional, with peak_bandwidth: every link a token bucket (tc's tbf)
    peak_bandwidth = "2Gbit/s"     # what a link carries while its bucket holds tokens (flow sharing)
"""

from __future__ import annotations

from functools import cache
from typing import Any, Callable, Mapping

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.quantities import parse_bandwidth, parse_bytes
from contend.machine.tomlfile import did_you_mean, reject_unknown_keys

COMMON_KEYS = ("kind", "routing", "ranks_per_node", "placement", "link_bandwidth", "injection_bandwidth",
               "global_bandwidth", "hop_latency", "packet", "seed", "sharing", "burst", "peak_bandwidth")


@cache
def topology_sizes() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, int]]:
    """The engine's topology kinds (engine/src/net/topology.rs, TOPOLOGY_KINDS): per kind the sizes
    it needs and those it may leave out, and the value a size left out takes."""
    kinds, optional = engine().topology_kinds()
    defaults = dict(optional)
    required = {kind: tuple(k for k in sizes if k not in defaults) for kind, sizes in kinds}
    left_out = {kind: tuple(k for k in sizes if k in defaults) for kind, sizes in kinds}
    return required, {kind: keys for kind, keys in left_out.items() if keys}, defaults


def network_params(table: Mapping[str, Any], where: Callable[[str], str]) -> dict[str, Any]:
    """The engine's ``params["network"]`` from a ``[topology]`` table; ``where(key)`` locates a key
    ("file:line: [topology] key") for error messages."""
    if not isinstance(table, dict):
        raise UserError(f"{where()}: must be a table")
    size_keys, optional_keys, defaults = topology_sizes()
    all_size_keys = tuple(dict.fromkeys(k for keys in (*size_keys.values(), *optional_keys.values()) for k in keys))
    # Keys of no topology first: a misspelt kind is reported as such, not as a missing one.
    reject_unknown_keys(table, COMMON_KEYS + all_size_keys, where)
    if "kind" not in table:
        raise UserError(f"{where()}: needs kind ({', '.join(size_keys)})")
    kind = table["kind"]
    if not isinstance(kind, str) or kind not in size_keys:
        raise UserError(f"{where('kind')}: unknown topology {kind!r}{did_you_mean(str(kind), size_keys)}; "
                        f"known: {', '.join(size_keys)}")
    reject_unknown_keys(table, ("kind",) + size_keys[kind] + optional_keys.get(kind, ()) + COMMON_KEYS[1:],
                        where, f"key of a {kind} topology")
    network: dict[str, Any] = {"topology": kind}
    for key in size_keys[kind]:
        if key not in table:
            raise UserError(f"{where()}: a {kind} needs {', '.join(size_keys[kind])}")
    if kind in ("torus", "mesh"):
        dims = table["dims"]
        if not (isinstance(dims, list) and dims and all(_is_count(d, 1) and d < 2**32 for d in dims)):
            raise UserError(f"{where('dims')}: expected a list of positive sizes such as [8, 8, 8], got {dims!r}")
        network["dims"] = dims
    else:
        for key in size_keys[kind]:
            network[key] = _count(table, key, where, minimum=1)
    for key in optional_keys.get(kind, ()):
        network[key] = _count(table, key, where, minimum=1, default=defaults[key])
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
    network.update(_bucket(table, where))
    return network


def _bucket(table: Mapping[str, Any], where: Callable[..., str]) -> dict[str, Any]:
    """Token-bucket links (docs/models.md, "Links"): ``burst`` and ``peak_bandwidth`` together, or
    neither; the engine checks the peak against the links' bandwidths."""
    given = [key for key in ("burst", "peak_bandwidth") if key in table]
    if not given:
        return {}
    if len(given) == 1:
        other = "peak_bandwidth" if given[0] == "burst" else "burst"
        raise UserError(f"{where(given[0])}: needs {other} too (a token bucket has a depth and a peak rate)")
    burst = parse_bytes(table["burst"], where("burst"))
    if burst < 1:
        raise UserError(f"{where('burst')}: a bucket holds at least 1 byte")
    return {"burst_bytes": burst, "peak_bandwidth": _bandwidth(table, "peak_bandwidth", where)}


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
