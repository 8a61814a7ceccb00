"""``Finding``: one step of an experiment (the demo tour, a reproduction), ready to be reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Finding:
    """An explanation, a table, whether its check passed, optionally a plot and files beside the report."""

    slug: str
    title: str
    summary: str
    columns: list[str]
    rows: list[list[Any]]
    ok: bool = True
    plot: str | None = None
    files: list[tuple[str, str]] = field(default_factory=list)
