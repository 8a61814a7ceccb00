"""The ``[cores]`` table of a machine file and the ``--cores`` option: a node's ranks sharing fewer
cores than there are ranks (docs/models.md, "Shared cores"), validated into the engine's
``params["node"]["cores"]``::

    [cores]
    per_node = 2          # cores the ranks of a node share
    switch = "3.8us"      # a core passing from one rank to another (bench fit measures it)
    ranks_per_node = 4    # unless [topology], [nic] or [throttle] gives it

On the command line: ``--cores 2`` or ``--cores 2:3.8us`` (``none``: a core per rank).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.quantities import parse_count
from contend.machine.tomlfile import reject_unknown_keys

KEYS = ("per_node", "switch", "ranks_per_node")
MAX_CORES = 2**32 - 1


def _switch_ps(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{where}: expected a time such as 3.8us, got {value!r}")
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    if text.strip().startswith("-"):
        raise UserError(f"{where}: must not be negative, got {value!r}")
    with user_errors(where):
        return engine().parse_time(text)


def cores_params(table: Mapping[str, Any], where: Callable[[str], str]) -> dict[str, int]:
    """The engine's ``cores`` entry from a ``[cores]`` table; ``where(key)`` locates a key."""
    reject_unknown_keys(table, KEYS, where)
    if "per_node" not in table:
        raise UserError(f"{where('')}: needs per_node (how many cores the ranks of a node share)")
    per_node = table["per_node"]
    if isinstance(per_node, bool) or not isinstance(per_node, int) or not 1 <= per_node <= MAX_CORES:
        raise UserError(f"{where('per_node')}: expected an integer >= 1, got {per_node!r}")
    switch = _switch_ps(table["switch"], where("switch")) if "switch" in table else 0
    return {"per_node": per_node, "switch": switch}


def parse_cores(text: str, what: str = "--cores") -> dict[str, int] | None:
    """``PER_NODE[:SWITCH]`` (``2``, ``2:3.8us``) as the engine's ``cores`` entry; ``none``: None."""
    if text.strip() == "none":
        return None
    per_node, _, switch = text.partition(":")
    out = {"per_node": parse_count(per_node.strip(), f"{what} cores per node", minimum=1, maximum=MAX_CORES),
           "switch": 0}
    if switch:
        out["switch"] = _switch_ps(switch.strip(), f"{what} switch")
    return out
