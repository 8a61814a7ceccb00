"""TOML input files (machine files): where each key is, error prefixes that name it, and unknown keys.

tomllib parses but keeps no positions, and an error about a value must name the line it is on
(``m.toml:12: [topology] link_bandwidth: ...``). ``key_lines`` scans text that tomllib has accepted
and maps every key path of the parsed document to its line, through dotted and quoted keys, inline
tables, arrays, arrays of tables and multi-line strings. ``Where`` turns a table's path into error
prefixes; ``reject_unknown_keys`` refuses keys a table does not know and names the closest known one.
"""

from __future__ import annotations

import bisect
import difflib
import re
import sys
from typing import Any, Iterable, Mapping, Union

from contend.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 / 3.10
    import tomli as tomllib

KeyPath = tuple[Union[str, int], ...]

_BLANK = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")
_SPACE = re.compile(r"[ \t]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_MULTILINE_BASIC = re.compile(r'"""(?:[^"\\]|\\.|"{1,2}(?!"))*"{3,5}', re.DOTALL)
_MULTILINE_LITERAL = re.compile(r"'''(?:[^']|'{1,2}(?!'))*'{3,5}", re.DOTALL)
_SCALAR = re.compile(r"[^,\]}\n#]*")  # numbers, booleans, dates (which may hold a space)


def key_lines(text: str) -> dict[KeyPath, int]:
    """The line (from 1) of every table header, key and array element of ``text``, valid TOML.

    Paths are those of the parsed document: names, and indices for array elements and arrays of
    tables. A table's path maps to its header line; a dotted key defines its prefixes where it first
    appears.

    >>> lines = key_lines('[a]\\nx = 1\\n[[a.b]]\\n"y z".w = [1,\\n  {v = 2}]\\n')
    >>> lines[("a",)], lines[("a", "x")], lines[("a", "b", 0)], lines[("a", "b", 0, "y z", "w", 1, "v")]
    (1, 2, 3, 5)
    """
    return _Scanner(text).document()


class _Scanner:
    """A recursive descent over TOML that tomllib has accepted: it records positions, checks nothing."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.newlines = [match.start() for match in re.finditer("\n", text)]
        self.found: dict[KeyPath, int] = {}
        self.arrays: dict[KeyPath, int] = {}  # array of tables (path without index) -> entries so far

    def mark(self, path: KeyPath, pos: int) -> None:
        self.found.setdefault(path, bisect.bisect_left(self.newlines, pos) + 1)

    def skip(self, pattern: re.Pattern) -> None:
        self.pos = pattern.match(self.text, self.pos).end()

    def document(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self.skip(_BLANK)
            if self.pos >= len(self.text):
                return self.found
            start = self.pos
            if self.text.startswith("[[", start):
                self.pos += 2
                table = self.header(self.key(), start, array=True)
                self.expect("]]")
            elif self.text[start] == "[":
                self.pos += 1
                table = self.header(self.key(), start, array=False)
                self.expect("]")
            else:
                self.key_value(table)

    def header(self, names: list[str], start: int, *, array: bool) -> KeyPath:
        """The path of a ``[table]`` or ``[[array]]`` header: a name that is an array of tables means
        its latest entry, except the last name of an ``[[array]]`` header, which adds an entry."""
        path: KeyPath = ()
        for number, name in enumerate(names, start=1):
            path += (name,)
            if path in self.arrays or (array and number == len(names)):
                if array and number == len(names):
                    self.mark(path, start)
                    self.arrays[path] = self.arrays.get(path, 0) + 1
                path += (self.arrays[path] - 1,)
            self.mark(path, start)
        return path

    def key_value(self, table: KeyPath) -> None:
        start = self.pos
        path = table
        for name in self.key():
            path += (name,)
            self.mark(path, start)
        self.expect("=")
        self.value(path)

    def key(self) -> list[str]:
        """A dotted key's names, unquoted."""
        names = []
        while True:
            self.skip(_SPACE)
            quoted = _BASIC.match(self.text, self.pos) or _LITERAL.match(self.text, self.pos)
            if quoted:
                names.append(tomllib.loads(f"k = {quoted.group()}")["k"])
            else:
                quoted = _BARE_KEY.match(self.text, self.pos)
                names.append(quoted.group())
            self.pos = quoted.end()
            self.skip(_SPACE)
            if not self.text.startswith(".", self.pos):
                return names
            self.pos += 1

    def expect(self, token: str) -> None:
        self.skip(_SPACE)
        self.pos += len(token)

    def value(self, path: KeyPath) -> None:
        self.skip(_SPACE)
        first = self.text[self.pos]
        if first == "[":
            self.pos += 1
            index = 0
            while True:
                self.skip(_BLANK)
                if self.text[self.pos] == "]":
                    self.pos += 1
                    return
                self.mark(path + (index,), self.pos)
                self.value(path + (index,))
                index += 1
                self.skip(_BLANK)
                if self.text[self.pos] == ",":
                    self.pos += 1
        elif first == "{":
            self.pos += 1
            while True:
                self.skip(_BLANK)
                if self.text[self.pos] == "}":
                    self.pos += 1
                    return
                self.key_value(path)
                self.skip(_BLANK)
                if self.text[self.pos] == ",":
                    self.pos += 1
        else:
            for pattern in (_MULTILINE_BASIC, _MULTILINE_LITERAL, _BASIC, _LITERAL, _SCALAR):
                match = pattern.match(self.text, self.pos)
                if match:
                    self.pos = match.end()
                    return


class Where:
    """Error prefixes for the keys of one table of a file: ``where("L")`` is ``m.toml:7: [loggops] L``
    (the key's line; the table's line for a key it lacks), ``where()`` is ``m.toml:5: [loggops]``.
    Without ``lines`` (a table that is not from a file) the prefixes name ``origin`` alone."""

    def __init__(self, origin: str, lines: Mapping[KeyPath, int] | None, path: KeyPath = (), label: str = ""):
        self.origin = origin
        self.lines = lines
        self.path = path
        self.label = label

    def line(self, *keys: str | int) -> str:
        """``file:line`` of the deepest part of this table's path + ``keys`` that the file has."""
        if self.lines is None:
            return self.origin
        path = self.path + keys
        for length in range(len(path), -1, -1):
            if path[:length] in self.lines:
                return f"{self.origin}:{self.lines[path[:length]]}"
        return f"{self.origin}:{max(1, max(self.lines.values(), default=1))}"

    def __call__(self, key: str = "") -> str:
        name = " ".join(filter(None, (self.label, shown(key))))
        return f"{self.line(key) if key else self.line()}: {name}" if name else self.line()

    def table(self, key: str) -> "Where":
        """The prefixes of the table under ``key`` (``[loggops.rendezvous]``)."""
        return Where(self.origin, self.lines, self.path + (key,), f"[{self._dotted(key)}]")

    def entry(self, key: str, index: int) -> "Where":
        """The prefixes of entry ``index`` (from 0) of the array of tables under ``key``."""
        return Where(self.origin, self.lines, self.path + (key, index), f"[[{self._dotted(key)}]] #{index + 1}")

    def _dotted(self, key: str) -> str:
        return ".".join(shown(name) for name in self.path + (key,) if isinstance(name, str))


def shown(name: str) -> str:
    """A key as messages print it: as written, or quoted and escaped if it holds a control character
    (a message is one line, and the terminal must not act on the file's bytes)."""
    return name if name.isprintable() else repr(name)


def reject_unknown_keys(table: Mapping[str, Any], known: Iterable[str], where, what: str = "key") -> None:
    """A UserError for the first key of ``table`` not in ``known``, with the closest known name;
    ``where(key)`` locates it."""
    known = tuple(known)
    for key in table:
        if key not in known:
            raise UserError(f"{where(key)}: unknown {what}{did_you_mean(key, known)}; known: {', '.join(known)}")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'kind'?)`` for the known name closest to ``name`` (case aside), else ``""``.

    >>> did_you_mean("topologyy", ["machine", "topology"]), did_you_mean("l", ["L", "o"]), did_you_mean("GG", ["g", "G"])
    (" (did you mean 'topology'?)", " (did you mean 'L'?)", " (did you mean 'G'?)")
    """
    known = [str(candidate) for candidate in known]
    close = difflib.get_close_matches(str(name), known, n=1)
    if not close:  # then with case aside: "l" is "L"
        by_lower: dict[str, str] = {}
        for candidate in known:
            by_lower.setdefault(candidate.lower(), candidate)
        close = [by_lower[match] for match in difflib.get_close_matches(str(name).lower(), list(by_lower), n=1)]
    return f" (did you mean {close[0]!r}?)" if close else ""
