"""The ``[cores]`` table of a machine file and the ``--cores`` option: a node's ranks sharing fewer
cores than there are ranks (docs/models.md, "Shared cores"), validated into the engine's
``params["node"]["cores"]``::

    [cores]
    per_node = 2          # cores the ranks of a node share
    switch = "3.8us"      # a core passing from one rank to another (bench fit measures it)
    quantum = "4ms"       # a rank spinning in a collective gives its core up only at the
                          #   scheduler's ticks, this far apart (default 0: it yields too)
    ranks_per_node = 4    # unless [topology], [nic] or [throttle] gives it; default: the machine
                          #   is one host (as `bench fit` writes): every rank shares the cores,
                          #   whatever nodes `--ranks-per-node` emulates for a throttle
    one_host = true       # every rank shares these per_node cores whatever node it is on, also
                          #   with a [topology]: nodes emulated on one host (the fabric's namespaces)
    placement = [0, 0, 1, 1]  # optional: per rank (in rank order) the one core of its node it runs
                          #   on, as the kernel keeps a task on its CPU; ranks beyond the list, any

On the command line: ``--cores 2``, ``--cores 2:3.8us`` or ``--cores 2:3.8us:4ms`` (``none``: a core
per rank).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from contend.engine import parse_quantity
from contend.errors import UserError
from contend.machine.quantities import parse_count
from contend.machine.tomlfile import reject_unknown_keys

KEYS = ("per_node", "switch", "quantum", "ranks_per_node", "one_host", "placement")
MAX_CORES = 2**32 - 1


def cores_params(table: Mapping[str, Any], where: Callable[[str], str]) -> dict[str, int]:
    """The engine's ``cores`` entry from a ``[cores]`` table; ``where(key)`` locates a key."""
    reject_unknown_keys(table, KEYS, where)
    if "per_node" not in table:
        raise UserError(f"{where('')}: needs per_node (how many cores the ranks of a node share)")
    per_node = table["per_node"]
    if isinstance(per_node, bool) or not isinstance(per_node, int) or not 1 <= per_node <= MAX_CORES:
        raise UserError(f"{where('per_node')}: expected an integer >= 1, got {per_node!r}")
    times = {key: parse_quantity(table[key], where(key)) if key in table else 0 for key in ("switch", "quantum")}
    one_host = table.get("one_host", False)
    if not isinstance(one_host, bool):
        raise UserError(f"{where('one_host')}: expected true or false, got {one_host!r}")
    placement = table.get("placement", [])
    if not (isinstance(placement, list) and all(_is_core(c, per_node) for c in placement)):
        raise UserError(f"{where('placement')}: expected a list of core numbers below per_node ({per_node}), one "
                        f"per rank, got {placement!r}")
    return {"per_node": per_node, **times, **({"one_host": True} if one_host else {}),
            **({"placement": placement} if placement else {})}


def _is_core(value: Any, per_node: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < per_node


def parse_cores(text: str, what: str = "--cores") -> dict[str, int] | None:
    """``PER_NODE[:SWITCH[:QUANTUM]]`` (``2``, ``2:3.8us``, ``2:3.8us:4ms``) as the engine's ``cores``
    entry; ``none``: None."""
    if text.strip() == "none":
        return None
    fields = [field.strip() for field in text.split(":")]
    if len(fields) > 3:
        raise UserError(f"{what}: expected PER_NODE[:SWITCH[:QUANTUM]], got {text!r}")
    out = {"per_node": parse_count(fields[0], f"{what}: cores per node", minimum=1, maximum=MAX_CORES),
           "switch": 0, "quantum": 0}
    for key, field in zip(("switch", "quantum"), fields[1:]):
        out[key] = parse_quantity(field, f"{what}: {key}")
    return out
