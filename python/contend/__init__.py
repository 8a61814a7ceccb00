"""contend: measure, simulate, diagnose and avoid contention in parallel programs."""

from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

# The public names, loaded on first use (PEP 562): every `contend` command imports this package, and
# must not pay for numpy before it needs it (tests/test_startup.py).
_PUBLIC = {
    "Machine": "contend.machine",
    "load_machine": "contend.machine",
    "preset_names": "contend.machine",
    "read_records": "contend.records",
    "SimulationResult": "contend.result",
    "simulate": "contend.simulate",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'contend' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(types.ModuleType):
    """``contend.simulate`` names both a module and the function it defines; the function is the
    public one. Importing the module binds its name on the package, which would hide the function:
    that binding is skipped (the module stays reachable in ``sys.modules``)."""

    def __setattr__(self, name: str, value) -> None:
        if name in _PUBLIC and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
