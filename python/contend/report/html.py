"""A static, self-contained HTML report: headings, paragraphs, tables and images beside the page."""

from __future__ import annotations

import html
import os
from typing import Any, Sequence

from contend.atomic import atomic_path

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; }
code, pre { background: #f6f6f6; padding: 0.1rem 0.3rem; }
.bad { color: #b00; } .good { color: #070; }
"""


class HtmlPage:
    """Builds one page in order; ``write`` saves it atomically. All text is escaped."""

    def __init__(self, title: str):
        self.title = title
        self._parts: list[str] = [f"<h1>{html.escape(title)}</h1>"]

    def heading(self, text: str, anchor: str = "") -> None:
        ident = f' id="{html.escape(anchor)}"' if anchor else ""
        self._parts.append(f"<h2{ident}>{html.escape(text)}</h2>")

    def paragraph(self, text: str) -> None:
        self._parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
        self._parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def image(self, source: str, caption: str) -> None:
        """An image referenced by a path relative to the page (written beside it)."""
        self._parts.append(f'<figure><img src="{html.escape(source)}" alt="{html.escape(caption)}">'
                           f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def link(self, target: str, text: str) -> None:
        self._parts.append(f'<p><a href="{html.escape(target)}">{html.escape(text)}</a></p>')

    def render(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head><body>\n"
                + "\n".join(self._parts) + "\n</body></html>\n")

    def write(self, path: str | os.PathLike) -> None:
        with atomic_path(path) as temporary:
            temporary.write_text(self.render(), encoding="utf-8")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return f'<td class="{"good" if value else "bad"}">{"yes" if value else "no"}</td>'
    if isinstance(value, int):
        return f"<td>{value:,}</td>"
    if isinstance(value, float):
        return f"<td>{value:,.6g}</td>"
    return f'<td class="text">{html.escape(str(value))}</td>'
