"""Outputs that appear whole or not at all: write to a temporary file beside the target, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from contend.errors import UserError


def check_writable(target: str | os.PathLike, what: str) -> Path:
    """Fail early, before any long computation, when ``target`` cannot be created."""
    path = Path(target)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"{what}: directory {str(parent)!r} does not exist")
    if path.is_dir():
        raise UserError(f"{what}: {str(path)!r} is a directory")
    if not os.access(parent, os.W_OK):
        raise UserError(f"{what}: directory {str(parent)!r} is not writable")
    return path


def output_directory(target: str | os.PathLike, what: str) -> Path:
    """Create the report directory ``target`` (and its parents) if needed; fail early if it cannot be
    created or written to."""
    path = Path(target)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{what}: cannot create directory {str(path)!r} ({exc.strerror})") from None
    if not os.access(path, os.W_OK):
        raise UserError(f"{what}: directory {str(path)!r} is not writable")
    return path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's directory; rename it to ``target`` if the block succeeds.

    The temporary name keeps the target's suffixes (``.goal.gz`` stays ``.gz``) because some writers
    choose the format from the name. On any exception the temporary file is removed.
    """
    path = Path(target)
    suffix = "".join(path.suffixes)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(fd)
    try:
        yield Path(temporary)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600 files; outputs get the usual mode
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
