"""Checks shared by the machine-file tables that hold per-message-size classes (``[nic]`` and
``[throttle]``): classes ordered by their ``up_to`` size without repeats."""

from __future__ import annotations

from typing import Any, Sequence

from contend.errors import UserError

# The class that takes every message larger than the others' up_to.
MAX_BYTES = 2**64 - 1


def sorted_by_size(classes: list[dict[str, Any]], places: Sequence[str], name: str) -> list[dict[str, Any]]:
    """``classes`` sorted by ``up_to``; a UserError if two ``[[name]]`` tables share one, at the later
    one's place (``places[i]`` locates class i's up_to)."""
    order = sorted(range(len(classes)), key=lambda i: (classes[i]["up_to"], i))
    for a, b in zip(order, order[1:]):
        if classes[a]["up_to"] == classes[b]["up_to"]:
            raise UserError(f"{places[max(a, b)]}: the same up_to as [[{name}]] #{min(a, b) + 1}")
    return [classes[i] for i in order]
