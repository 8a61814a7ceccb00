"""A package's public names loaded on first use (PEP 562): importing the package costs nothing until a
name is used, so every ``contend`` command starts without numpy or pandas (tests/test_startup.py)."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy_names(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``names`` maps each public name to the module defining it. A
    name, once loaded, is kept in the package's namespace, so the lookup runs once per name."""
    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name]), name)
        vars(sys.modules[package])[name] = value
        return value

    return __getattr__
