"""Where outputs go, and how they appear whole or not at all (docs/formats.md, "Output places").

- A new path, or an existing regular file: written to a temporary file beside it, then renamed over it.
  A symbolic link is followed: the file it names is replaced, the link stays.
- An existing path that is not a regular file or a directory (``/dev/null``, ``/dev/stdout``, a FIFO):
  written to in place, never replaced: the finished output is copied into it.
- A directory where a file is wanted (or a file where a report directory is wanted): refused.

Every ``OSError`` while creating, writing or renaming becomes a ``UserError`` naming the path, and no
temporary file or directory is left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from contend.errors import UserError


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[str]:
    """A temporary directory for intermediate files, removed afterwards. Making one, or writing in it,
    fails on a full disk or a file-size limit; that is a ``UserError`` naming it, not a traceback."""
    try:
        scratch = tempfile.TemporaryDirectory(prefix=prefix)
    except OSError as exc:  # tempfile found no directory it could write a probe file into
        raise UserError(f"cannot make a temporary directory ({exc.strerror or exc}): is TMPDIR or /tmp full "
                        "or not writable?") from None
    try:
        with scratch as path:
            yield path
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise
        raise UserError(f"{exc.filename or 'a temporary file'}: cannot write ({os.strerror(exc.errno)})") from None


def check_writable(target: str | os.PathLike, what: str) -> Path:
    """Fail early, before any long computation, when ``target`` cannot be created."""
    path = Path(target)
    kind = _existing_kind(path)
    if kind == "directory":
        raise UserError(f"{what}: {str(path)!r} is a directory")
    if kind == "special":  # written in place
        if not os.access(path, os.W_OK):
            raise UserError(f"{what}: {str(path)!r} is not writable")
        return path
    _check_new_name(_resolved(path), what)
    return path


def check_directory(target: str | os.PathLike, what: str) -> Path:
    """Fail early when the report directory ``target`` cannot be created (or added to)."""
    path = Path(target)
    kind = _existing_kind(path)
    if kind == "directory":
        if not os.access(path, os.W_OK):
            raise UserError(f"{what}: directory {str(path)!r} is not writable")
    elif kind is not None:
        raise UserError(f"{what}: {str(path)!r} exists and is not a directory")
    else:
        _check_new_name(path, what)
    return path


def output_directory(target: str | os.PathLike, what: str) -> Path:
    """Create the report directory ``target`` (and its parents) if needed; fail early if it cannot be
    created or written to."""
    path = Path(target)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{what}: cannot create directory {str(path)!r} ({_reason(exc)})") from None
    if not os.access(path, os.W_OK):
        raise UserError(f"{what}: directory {str(path)!r} is not writable")
    return path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write ``target`` through. If the block succeeds the temporary file is
    renamed to ``target``, or, when ``target`` is a device or FIFO, its bytes are copied into it (so
    writers that seek, or write through their own temporary and rename, work there too).

    The temporary name keeps the target's suffixes (``.goal.gz`` stays ``.gz``) because some writers
    choose the format from the name. On any exception the temporary file is removed.
    """
    path = Path(target)
    kind = _existing_kind(path)
    if kind == "directory":
        raise UserError(f"{path}: is a directory")
    in_place = kind == "special"
    final = path if in_place else _resolved(path)
    with _as_user_error(path):  # a device's temporary goes to the temporary directory, not /dev
        fd, temporary = tempfile.mkstemp(**_temporary_name(final), dir=None if in_place else final.parent)
        os.close(fd)
    try:
        with _as_user_error(path):
            yield Path(temporary)
            if in_place:
                with open(temporary, "rb") as source, open(path, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                os.unlink(temporary)
            else:
                os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600 files; outputs get the usual mode
                os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike, what: str) -> Iterator[Path]:
    """Yield an empty temporary directory to write a report into: beside ``target``, which it becomes if
    the block succeeds; or, when ``target`` is an existing directory, inside it, and its files are moved
    into ``target``. Otherwise it is removed and ``target`` is left as it was."""
    path = check_directory(target, what)
    existing = path.is_dir()
    with _as_user_error(path):
        temporary = Path(tempfile.mkdtemp(**_temporary_name(path), dir=path if existing else path.parent))
    try:
        with _as_user_error(path):
            try:
                yield temporary
            except UserError as exc:  # a file inside it failed: name it where the user will look for it
                raise UserError(str(exc).replace(str(temporary), str(path))) from None
            if existing:
                entries = sorted(temporary.iterdir())
                # os.replace cannot put anything over a directory: refuse before the first move, so the
                # report lands whole or not at all
                blocked = [path / e.name for e in entries if os.path.isdir(path / e.name)]
                if blocked:
                    raise UserError(f"{blocked[0]}: is a directory; the report needs that name for a file")
                for entry in entries:
                    os.replace(entry, path / entry.name)
                temporary.rmdir()
            else:
                os.chmod(temporary, 0o777 & ~_umask())  # mkdtemp makes 0700 directories
                os.rename(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def beside(target: str | os.PathLike, name: str) -> Path | None:
    """Where a companion file of ``target`` goes (``name`` in its directory); None when ``target`` is a
    device or FIFO, which has no "beside" (``-o /dev/null`` must not make ``/dev/null.json``)."""
    path = Path(target)
    return None if _existing_kind(path) == "special" else path.with_name(name)


def _existing_kind(path: Path) -> str | None:
    """None (nothing there, or a dangling link), "directory", "regular", or "special" (anything else)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return None  # cannot exist; _check_new_name says why
        raise UserError(f"{path}: {_reason(exc)}") from None
    if stat.S_ISDIR(mode):
        return "directory"
    return "regular" if stat.S_ISREG(mode) else "special"


def _resolved(path: Path) -> Path:
    """The path that will be replaced: the file a symbolic link names, so the link itself stays."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def _check_new_name(path: Path, what: str) -> None:
    parent = path.parent
    if not parent.is_dir():
        raise UserError(f"{what}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise UserError(f"{what}: directory {str(parent)!r} is not writable")
    limit = _name_max(parent)
    if len(os.fsencode(path.name)) > limit:
        raise UserError(f"{what}: {str(path)!r}: the name is longer than {limit} bytes")


def _temporary_name(path: Path) -> dict[str, str]:
    """mkstemp's prefix and suffix for a temporary beside ``path``: ``.NAME.XXXXXXXX.tmpSUFFIXES``, with
    NAME shortened so that a target name that fits the file system gives a temporary name that fits."""
    suffix = ".tmp" + "".join(path.suffixes)
    if len(os.fsencode(suffix)) > 64:  # dots inside a long name are not a format's suffix
        suffix = ".tmp" + path.suffix[:32]
    room = _name_max(path.parent) - len(os.fsencode(suffix)) - 8 - 2
    name = os.fsencode(path.name)[:max(room, 0)].decode(errors="ignore")
    return {"prefix": f".{name}.", "suffix": suffix}


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


@contextlib.contextmanager
def _as_user_error(path: Path) -> Iterator[None]:
    try:
        yield
    except UserError:
        raise
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({_reason(exc)})") from None


def _reason(exc: OSError) -> str:
    """The system's words for the error: pyarrow's OSErrors carry the errno only in their text."""
    if exc.errno:
        return os.strerror(exc.errno)
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    return os.strerror(int(found.group(1))) if found else str(exc)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
