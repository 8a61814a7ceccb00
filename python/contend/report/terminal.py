"""The one rule for every table contend prints: a number is never cut.

Rich fits a table that is too wide by shrinking its wrappable columns, below their longest word if need
be, and then by cutting every column evenly with "…", numbers included: behind a pipe, at the 80 columns
rich assumes there, ``contend diagnose`` showed "235,6…". ``Table`` lays itself out instead: text wraps
at spaces, a right-justified column (numbers, a number with its unit) keeps each cell on one line, and
no column gets narrower than its longest word; when that does not fit, the table drops its borders, and
when even that does not fit, it prints vertically: one "column  value" line per cell, a blank line
between rows. Rich takes the width from the terminal, else from COLUMNS, else 80.
"""

from __future__ import annotations

from typing import Any, Iterable

import rich.table
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.text import Text

# Before going vertical: no borders, two spaces between columns, a rule under the header.
_COMPACT = {"box": box.SIMPLE_HEAD, "show_edge": False, "padding": (0, 0, 0, 1), "pad_edge": False}
# Measuring with this width gives a cell's true minimum and maximum (rich clamps to the width it is given).
_UNBOUNDED = 1 << 20


class Table(rich.table.Table):
    """A rich table that never truncates or folds a number: see the module's docstring."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.columns:
            yield from super().__rich_console__(console, options)
            return
        wide = options.update_width(_UNBOUNDED)
        for layout in ({}, _COMPACT):
            saved = {key: getattr(self, key) for key in layout}
            try:
                for key, value in layout.items():
                    setattr(self, key, value)
                lows, highs = zip(*(self._range(console, wide, column) for column in self.columns))
                budget = options.max_width - self._extra_width
                if sum(highs) <= budget:
                    yield from super().__rich_console__(console, options)
                    return
                if sum(lows) <= budget:
                    yield from self._with_widths(console, options, _share(budget, lows, highs))
                    return
            finally:
                for key, value in saved.items():
                    setattr(self, key, value)
        yield from self._vertical(console, options)

    def _range(self, console: Console, options: ConsoleOptions, column: rich.table.Column) -> tuple[int, int]:
        """The least and the natural width of a column, padding included."""
        header = Measurement.get(console, options, column.header) if self.show_header else Measurement(0, 0)
        cells = [Measurement.get(console, options, cell) for cell in column.cells] or [Measurement(1, 1)]
        unbroken = _unbroken(column)
        low = max([header.maximum if column.no_wrap else header.minimum]
                  + [c.maximum if unbroken else c.minimum for c in cells])
        high = max([header.maximum] + [c.maximum for c in cells])
        padding = self._get_padding_width(column._index)
        return low + padding, high + padding

    def _with_widths(self, console: Console, options: ConsoleOptions, widths: list[int]) -> RenderResult:
        """Render with fixed column widths, none less than its least (rich then cuts nothing), leaving
        the columns as they were."""
        saved = [column.width for column in self.columns]
        try:
            for column, total in zip(self.columns, widths):
                column.width = total - self._get_padding_width(column._index)
            yield from super().__rich_console__(console, options)
        finally:
            for column, fixed in zip(self.columns, saved):
                column.width = fixed

    def _vertical(self, console: Console, options: ConsoleOptions) -> Iterable[Any]:
        """One "column  value" line per cell, a blank line between rows; where the keys leave too little
        room for the values' longest words, each key stands on its own line and its value below it."""
        if self.title:
            yield _annotation(self.title, self.title_style or "table.title")
        # (key, value, whether the value stays on one line) per cell, as in the table
        cells = [[(column.header, cell, _unbroken(column)) for cell in column.cells] for column in self.columns]
        rows = [list(row) for row in zip(*cells)]
        if not self.show_header and len(self.columns) == 2:  # already one "key  value" per row
            records = [[(key, value, unbroken)] for (_, key, _), (_, value, unbroken) in rows]
        else:
            records = [[(key if self.show_header else "", value, unbroken) for key, value, unbroken in row]
                       for row in rows]
        wide = options.update_width(_UNBOUNDED)
        pairs = [pair for record in records for pair in record] or [(column.header, "", False)
                                                                     for column in self.columns]
        keys_width = max(Measurement.get(console, wide, key).maximum for key, _, _ in pairs)
        values = [Measurement.get(console, wide, value) for _, value, _ in pairs]
        values_width = max(m.maximum if unbroken else m.minimum for m, (_, _, unbroken) in zip(values, pairs))
        if keys_width + 1 + values_width <= options.max_width:
            grid = rich.table.Table.grid(padding=(0, 1))
            grid.add_column(style="bold", no_wrap=True)
            grid.add_column()
            for number, record in enumerate(records or [pairs]):  # no rows: the headers alone
                if number and len(record) > 1:
                    grid.add_row("", "")
                for key, value, _ in record:
                    grid.add_row(key, value)
            yield grid
        else:
            indent = 2 if values_width + 2 <= options.max_width else 0
            for number, record in enumerate(records or [pairs]):
                if number and len(record) > 1:
                    yield Text()
                for key, value, _ in record:
                    yield _annotation(key, "bold")
                    yield Padding(value, (0, 0, 0, indent))
        if self.caption:
            yield _annotation(self.caption, self.caption_style or "table.caption")


def _unbroken(column: rich.table.Column) -> bool:
    """Numbers, with their unit, stay on one line: a right-justified column is as wide as its cells."""
    return column.no_wrap or column.justify == "right"


def _annotation(text: Any, style: Any) -> Any:
    return Text.from_markup(text, style=style) if isinstance(text, str) else text


def _share(budget: int, lows: tuple[int, ...], highs: tuple[int, ...]) -> list[int]:
    """Column widths within ``budget``: the widest columns give up room first (as rich does), none below
    its least width; what rounding leaves goes to the columns still short of their natural width.

    >>> _share(20, (5, 5), (15, 5)), _share(14, (2, 2, 2), (10, 6, 2)), _share(30, (12, 4), (14, 40))
    ([15, 5], [6, 6, 2], [14, 16])
    """
    cap = max(highs)
    while sum(max(low, min(high, cap)) for low, high in zip(lows, highs)) > budget:
        cap -= 1
    widths = [max(low, min(high, cap)) for low, high in zip(lows, highs)]
    short = [index for index, (width, high) in enumerate(zip(widths, highs)) if width < high]
    for index in short[:budget - sum(widths)]:
        widths[index] += 1
    return widths
