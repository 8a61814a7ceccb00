"""The boundary to the Rust engine (``contend._engine``): load it, and turn its errors into user errors.

Everything the Python fronts ask of the simulator goes through ``engine()`` inside ``user_errors()``, so a
malformed GOAL file, a bad parameter or an unreadable path reaches the user as one ``UserError`` line.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Iterator

from contend.errors import UserError


def engine() -> ModuleType:
    """The compiled engine module; a UserError telling how to build it when it is missing."""
    try:
        from contend import _engine
    except ImportError as exc:  # a source checkout without `make build`
        raise UserError(f"the simulation engine is not built ({exc}); run `make build`") from None
    return _engine


@contextlib.contextmanager
def user_errors(context: str = "") -> Iterator[None]:
    """Re-raise the engine's GoalError / ValueError / OSError as a one-line UserError.

    GoalError and NoiseTraceError messages already read "path:line[:col]: problem" and pass through
    unchanged; ``context`` (e.g. "--collective") prefixes the others so the user knows which input was
    wrong.
    """
    try:
        yield
    except UserError:
        raise
    except OSError as exc:
        where = str(exc.filename) if exc.filename else context
        raise UserError(_with_context(where, exc.strerror if exc.filename else str(exc))) from None
    except ValueError as exc:  # GoalError and NoiseTraceError are ValueErrors whose text names file:line
        located = tuple(filter(None, (getattr(engine(), name, None) for name in ("GoalError", "NoiseTraceError"))))
        if located and isinstance(exc, located):
            raise UserError(str(exc)) from None
        raise UserError(_with_context(context, str(exc))) from None
    except OverflowError as exc:  # PyO3 raises it when a Python int does not fit the Rust integer
        raise UserError(_with_context(context, f"number too large ({exc})")) from None


def parse_quantity(value: object, where: str, per_byte: bool = False) -> int:
    """A time (ps) or, with ``per_byte``, a per-byte cost (ps per byte) as a machine file or the command
    line gives it: a number (ns, ns per byte) or a string with a unit, in the engine's grammar; never
    negative. ``where`` names it in the one-line error."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{where}: expected a number or a string with a unit, got {value!r}")
    text = f"{value:.3f}" if isinstance(value, float) else str(value)  # the engine's resolution is 1 ps
    if text.strip().startswith("-"):
        raise UserError(f"{where}: must not be negative, got {value!r}")
    with user_errors(where):
        return engine().parse_per_byte(text) if per_byte else engine().parse_time(text)


def _with_context(context: str, message: str) -> str:
    """Prefix ``context`` unless the engine's message already starts with it."""
    if not context or message.startswith(context):
        return message
    return f"{context}: {message}"
