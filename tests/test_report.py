"""Reports: HTML page, tables, plots, and the demo tour's checks."""

from __future__ import annotations

import html
import json

from rich.console import Console

import contend
from contend.commands.demo import write_html
from contend.experiments import tour
from contend.report.html import HtmlPage
from contend.report.plots import line_plot, stacked_bars
from contend.report.tables import result_table, rows_table


def test_html_page_escapes_and_writes(tmp_path):
    page = HtmlPage("a <b> & c")
    page.heading("h", anchor="x")
    page.paragraph("1 < 2")
    page.table(["name", "value", "ok"], [["<i>", 1234, True], ["y", 0.5, False]])
    page.image("p.png", "plot")
    path = tmp_path / "index.html"
    page.write(path)
    text = path.read_text()
    assert "a &lt;b&gt; &amp; c" in text and "1 &lt; 2" in text and "&lt;i&gt;" in text
    assert "<td>1,234</td>" in text and 'class="good">yes' in text and 'src="p.png"' in text


def test_plots_are_png(tmp_path):
    line_plot(tmp_path / "l.png", {"a": ([1, 2, 4], [1.0, 2.0, 3.0])}, title="t", xlabel="x", ylabel="y")
    stacked_bars(tmp_path / "b.png", ["x", "y"], {"p": [1, 2], "q": [3, 4]}, title="t", ylabel="y")
    for name in ("l.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "l.png"]


def test_tables_render():
    console = Console(record=True, width=120)
    result = contend.simulate(collective="binomial-bcast", ranks=4, bytes=1, machine="loggops-reference")
    console.print(result_table(result))
    console.print(rows_table("rows", ["a", "b"], [["x", 1], ["y", 2.5]]))
    text = console.export_text()
    assert "12,000 ns" in text and "binomial-bcast, 4 ranks" in text and "2.5" in text


def test_tour_checks_and_report(tmp_path):
    findings = [tour.reference_answers(tmp_path), tour.deadlock_caught(tmp_path), tour.sample_outputs(tmp_path)]
    assert all(f.ok for f in findings), [f.title for f in findings if not f.ok]
    assert (tmp_path / "deadlock.goal").exists()
    assert json.loads((tmp_path / "bcast-p8.trace.json").read_text())["traceEvents"]
    assert len(contend.read_records(tmp_path / "bcast-p8.parquet")) == 7
    write_html(findings, tmp_path / "index.html", 1.0)
    page = (tmp_path / "index.html").read_text()
    for finding in findings:
        assert html.escape(finding.title) in page


def test_ordering_defect_step_small():
    finding = tour.ordering_defect(None, largest_exponent=17)
    assert finding.ok
    assert [row[1] for row in finding.rows] == [16 * 6000, 17 * 6000]


def test_contention_step_names_the_get_site_and_block_cyclic_lowers_it():
    from contend.experiments.onesided import GA_SITE

    finding = tour.contention_diagnosed(None)  # the demo's size: 8 ranks, 16 KiB gets
    (blocked, cyclic) = finding.rows
    assert [blocked[0], cyclic[0]] == ["blocked", "cyclic"]
    assert blocked[1] > cyclic[1] >= 0 and blocked[2] == blocked[1], "all of it target contention"
    assert blocked[4] == cyclic[4] == GA_SITE


def test_demo_writes_a_complete_report(capsys, tmp_path):
    from contend.cli import main

    out = tmp_path / "report"
    assert main(["demo", "-o", str(out)]) == 0
    assert "report:" in capsys.readouterr().out
    page = (out / "index.html").read_text()
    assert page.count("<img") >= 2
    for image in ("sizes.png", "ranks.png", "delay-split.png"):
        assert (out / image).read_bytes()[:4] == b"\x89PNG" and f'src="{image}"' in page
    results = json.loads((out / "results.json").read_text())
    assert all(finding["ok"] for finding in results["findings"])
    assert not [p.name for p in out.iterdir() if ".tmp" in p.name], "no temporary files left"
