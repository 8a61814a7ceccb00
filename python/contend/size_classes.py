"""Checks shared by the machine-file tables that hold per-message-size classes (``[nic]`` and
``[throttle]``): known keys only, and classes ordered by their ``up_to`` size without repeats."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from contend.errors import UserError

# The class that takes every message larger than the others' up_to.
MAX_BYTES = 2**64 - 1


def reject_unknown_keys(table: Mapping[str, Any], known: Iterable[str], locate: Callable[[str], str]) -> None:
    """A UserError naming the first key of ``table`` not in ``known``; ``locate(key)`` prefixes it."""
    known = tuple(known)
    for key in table:
        if key not in known:
            raise UserError(f"{locate(key)}: unknown key {key!r}; known: {', '.join(known)}")


def sorted_by_size(classes: list[dict[str, Any]], where: str, name: str) -> list[dict[str, Any]]:
    """``classes`` sorted by ``up_to``; a UserError (at ``where``) if two ``[[name]]`` tables share one."""
    classes = sorted(classes, key=lambda c: c["up_to"])
    if any(a["up_to"] == b["up_to"] for a, b in zip(classes, classes[1:])):
        raise UserError(f"{where}: two [[{name}]] tables have the same up_to")
    return classes
