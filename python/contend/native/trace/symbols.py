"""Return addresses to ``function (file:line)``, after the run, with binutils' addr2line.

Each address is looked up in the object it lies in, at ``address - load bias - 1`` (the ELF virtual
address of the call instruction: a return address points just after it). That works the same for
position-independent executables, shared libraries and fixed-address executables. One addr2line per
object, all its addresses in one batch (``-a`` prints each address before its answer, so the answers
can be told apart; ``-i`` lists inlined frames, innermost first, and the innermost line is kept).
An address without symbols becomes ``0xOFFSET in OBJECT``, and the objects that lacked them are
reported in one warning: never an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from typing import Iterable

_UNKNOWN_FUNCTION = "??"


def symbolize(lookups: Iterable[tuple[str | None, int]], addr2line: str | None = None) -> tuple[dict, list[str]]:
    """({(object, offset): "function (file:line)" or "0xOFFSET in object"}, warnings).

    ``lookups`` are (object path or None when unknown, offset of the call instruction in it)."""
    tool = addr2line or shutil.which("addr2line")
    by_object: dict[str | None, set[int]] = defaultdict(set)
    for obj, offset in lookups:
        by_object[obj].add(int(offset))
    names: dict[tuple[str | None, int], str] = {}
    unresolved: dict[str, int] = defaultdict(int)
    warnings: list[str] = []
    if tool is None:
        warnings.append("addr2line (binutils) is not installed: call sites are shown as addresses")
    for obj, offsets in by_object.items():
        found = _addr2line(tool, obj, sorted(offsets)) if tool and obj and os.path.isfile(obj) else {}
        for offset in offsets:
            name = found.get(offset)
            if name is None:
                label = os.path.basename(obj) if obj else "an unknown object"
                name = f"{offset:#x} in {label}"
                unresolved[label] += 1
            names[(obj, offset)] = name
    if unresolved and tool:
        listed = ", ".join(f"{label} ({count})" for label, count in sorted(unresolved.items(),
                                                                             key=lambda kv: -kv[1])[:6])
        warnings.append(f"no symbols for {sum(unresolved.values())} address(es) in {listed}: shown as "
                        "0xOFFSET in OBJECT (build with -g and keep the binaries where they ran)")
    return names, warnings


def _addr2line(tool: str, obj: str, offsets: list[int]) -> dict[int, str]:
    """{offset: "function (file:line)"} for the offsets addr2line knows in obj."""
    try:
        done = subprocess.run([tool, "-a", "-f", "-C", "-i", "-e", obj], input="".join(f"{o:#x}\n" for o in offsets),
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    found: dict[int, str] = {}
    current, pair = None, []
    for line in done.stdout.splitlines():
        if line.startswith("0x") and not pair:
            try:
                current = int(line, 16)
                continue
            except ValueError:
                pass
        pair.append(line.strip())
        if len(pair) == 2:
            function, where = pair
            pair = []
            if current is None or current in found:
                continue  # an outer inlined frame: the innermost (first) line is the call's own
            if function != _UNKNOWN_FUNCTION or not where.startswith("??"):
                location = os.path.basename(where.split(" (discriminator")[0])
                found[current] = function if location.startswith("??") else f"{function} ({location})"
    return found
