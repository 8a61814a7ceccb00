"""Parquet files a user hands to contend, read whole or by their schema. pyarrow fails on a damaged or
foreign file in many ways (OSError, ValueError, NotImplementedError, MemoryError: all ArrowException
or OSError); each is one UserError naming the file and what it should have been."""

from __future__ import annotations

import os
from typing import Any

from contend.errors import UserError


def _unreadable(path: str | os.PathLike, what: str, exc: BaseException) -> UserError:
    text = str(exc).strip()
    return UserError(f"{os.fspath(path)}: not a readable {what} ({text.splitlines()[0] if text else type(exc).__name__})")


def read_table(path: str | os.PathLike, what: str) -> Any:
    """The whole file as a pyarrow Table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, what, exc) from None


def read_schema(path: str | os.PathLike, what: str) -> Any:
    """The file's schema (with its metadata), without reading its columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, what, exc) from None
