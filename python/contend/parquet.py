"""Parquet files a user hands to contend, read whole, by their schema, or as pandas. pyarrow fails on a
damaged or foreign file in many ways (OSError, ValueError, NotImplementedError, MemoryError: all
ArrowException or OSError; and in its pandas conversion, any Python error); each is one UserError
naming the file and what it should have been."""

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


def to_frame(table: Any, path: str | os.PathLike, what: str) -> Any:
    """``table`` as a pandas DataFrame. A file's pandas metadata (how it was written from pandas) can be
    damaged too; pyarrow's pandas_compat then fails in Python with whatever its code meets (TypeError,
    KeyError, AttributeError, ...), so any exception here is the file's."""
    try:
        return table.to_pandas()
    except Exception as exc:  # noqa: BLE001 - see above: every one means damaged metadata
        raise _unreadable(path, what, exc) from None


def read_frame(path: str | os.PathLike, what: str) -> Any:
    """The whole file as a pandas DataFrame."""
    return to_frame(read_table(path, what), path, what)
