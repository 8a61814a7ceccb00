"""The ``[nic]`` table of a machine file: NIC congestion curves (docs/models.md, "NIC congestion and
admission control"), validated into the engine's ``params["node"]["nic"]``.

The ranks of a node share one NIC, whose injection rate is the nominal one (``g + (s-1)G`` per
message) times ``concurrency(cores with messages in the NIC) x outstanding(messages it holds)``::

    [nic]
    ranks_per_node = 32                               # unless [topology] gives it
    concurrency = [[20, 1.0], [32, 0.6]]              # [cores injecting at once, factor]
    outstanding = [[32, 1.0], [64, 0.5], [256, 0.25]] # [messages held by the node's NIC, factor]

    [[nic.class]]                                     # optional: other curves for small messages
    up_to = "64B"
    outstanding = [[1024, 1.0]]

Curves are piecewise linear between their points and constant beyond them; a curve left out is 1.
The table's own curves apply to the messages larger than every class.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from contend.errors import UserError
from contend.machine.quantities import parse_bytes
from contend.machine.size_classes import MAX_BYTES, class_places, sorted_by_size
from contend.machine.tomlfile import Where, reject_unknown_keys

KEYS = ("ranks_per_node", "concurrency", "outstanding", "class")
CLASS_KEYS = ("up_to", "concurrency", "outstanding")


def nic_classes(table: Mapping[str, Any], where: Where, places: dict[str, str]) -> list[dict[str, Any]]:
    """The engine's size classes from a ``[nic]`` table (its NicSpec judges the curves' values);
    ``where`` locates the table's keys for errors, ``places`` receives where the engine's keys of
    the classes are written."""
    if not isinstance(table, dict):
        raise UserError(f"{where('')}: must be a table")
    reject_unknown_keys(table, KEYS, where)
    written = table.get("class", [])
    if not isinstance(written, list) or not all(isinstance(entry, dict) for entry in written):
        raise UserError(f"{where('class')}: expected [[nic.class]] tables, got {written!r}")
    classes, entries = [], []
    for number, entry in enumerate(written):
        at = where.entry("class", number)
        reject_unknown_keys(entry, CLASS_KEYS, at)
        if "up_to" not in entry:
            raise UserError(f"{at()}: needs up_to (the largest message size of the class)")
        classes.append({"up_to": parse_bytes(entry["up_to"], at("up_to")),
                        **{key: curve(entry.get(key), lambda k=key: at(k)) for key in ("concurrency", "outstanding")}})
        entries.append(at)
    classes, entries = sorted_by_size(classes, entries, "nic.class")
    # The table's own curves: the last class, which takes every larger message.
    classes.append({"up_to": MAX_BYTES, **{key: curve(table.get(key), lambda k=key: where(k))
                                           for key in ("concurrency", "outstanding")}})
    places.update(class_places("nic", [*entries, where], CLASS_KEYS))
    return classes


def curve(points: Any, where: Callable[[], str]) -> list[list[float]]:
    """A curve ``[[x, factor], ...]`` as numbers (the engine's Curve checks their values)."""
    if points is None:
        return [[0.0, 1.0]]
    if not isinstance(points, list):
        raise UserError(f"{where()}: expected a list of [x, factor] points, got {points!r}")
    for number, point in enumerate(points, start=1):
        if (not isinstance(point, list) or len(point) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in point)):
            raise UserError(f"{where()}: point {number} must be [x, factor] (two numbers), got {point!r}")
    return [[float(x), float(factor)] for x, factor in points]


def knee(points: list[list[float]], tolerance: float) -> float:
    """The largest x of the curve's points whose factor is within ``tolerance`` of its best: where
    congestion starts (the threshold a preset builds in, which ``contend tune`` should recover)."""
    best = max(f for _, f in points)
    return max(x for x, f in points if f >= (1 - tolerance) * best)
