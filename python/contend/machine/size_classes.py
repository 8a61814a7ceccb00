"""What the machine-file tables that hold per-message-size classes (``[nic]`` and ``[throttle]``)
share: classes ordered by their ``up_to`` size without repeats, and where the engine's keys for
them are written."""

from __future__ import annotations

from typing import Any, Sequence

from contend.errors import UserError
from contend.machine.tomlfile import Where

# The class that takes every message larger than the others' up_to.
MAX_BYTES = 2**64 - 1


def sorted_by_size(classes: list[dict[str, Any]], places: Sequence[Where], name: str
                   ) -> tuple[list[dict[str, Any]], list[Where]]:
    """``classes`` sorted by ``up_to`` with their places (``places[i]`` locates class i's keys); a
    UserError if two ``[[name]]`` tables share one, at the later one's up_to."""
    order = sorted(range(len(classes)), key=lambda i: (classes[i]["up_to"], i))
    for a, b in zip(order, order[1:]):
        if classes[a]["up_to"] == classes[b]["up_to"]:
            raise UserError(f"{places[max(a, b)]('up_to')}: the same up_to as [[{name}]] #{min(a, b) + 1}")
    return [classes[i] for i in order], [places[i] for i in order]


def class_places(table: str, places: Sequence[Where], keys: Sequence[str]) -> dict[str, str]:
    """Where each key of the engine's classes is written: ``table.class.<position>.<key>`` (the
    engine's key, by position in the sorted list) to "file:line: [[table.class]] #n key"."""
    return {f"{table}.class.{i}.{key}": where(key) for i, where in enumerate(places) for key in keys}
