"""Where contend keeps what it can make again: ``$CONTEND_CACHE``, else ``$XDG_CACHE_HOME/contend``, else
``~/.cache/contend``. Parsed GOAL schedules go to its ``goal/`` (docs/formats.md, "Schedule cache");
deleting the directory only costs the time to make its files again."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(part: str | None = None) -> Path:
    root = os.environ.get("CONTEND_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = Path(xdg) / "contend" if xdg and os.path.isabs(xdg) else Path.home() / ".cache" / "contend"
    return Path(root) / part if part else Path(root)
