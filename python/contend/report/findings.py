"""``Finding``: one step of an experiment (the demo tour, a reproduction), ready to be reported; findings
on the terminal and as an HTML page: one layout for the demo and the reproductions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from contend.report.html import HtmlPage
from contend.report.tables import rows_table


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


def print_findings(console, findings: Sequence[Finding]) -> None:
    """Each finding's table and summary; a failed check says so in red."""
    for finding in findings:
        console.print()
        console.print(rows_table(finding.title, finding.columns, finding.rows))
        console.print(f"[dim]{finding.summary}[/dim]")
        if not finding.ok:
            console.print("[bold red]check failed[/bold red]")


def findings_page(title: str, introduction: str, findings: Sequence[Finding]) -> HtmlPage:
    """A page with one section per finding: heading, summary, plot, table, links to its files."""
    page = HtmlPage(title)
    page.paragraph(introduction)
    for finding in findings:
        page.heading(finding.title + ("" if finding.ok else " (CHECK FAILED)"), anchor=finding.slug)
        page.paragraph(finding.summary)
        if finding.plot:
            page.image(finding.plot, finding.title)
        page.table(finding.columns, finding.rows)
        for name, description in finding.files:
            page.link(name, f"{name}: {description}")
    return page
