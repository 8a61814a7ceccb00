"""How ``contend diagnose`` shows a ``Diagnosis``: a rich summary, and an HTML page with its plots."""

from __future__ import annotations

import os
from pathlib import Path

from contend.analysis.diagnose import CLASSES, Diagnosis
from contend.atomic import atomic_directory
from contend.simulation.critical_path import LABELS, PARTS
from contend.report.plots import pyplot, save_figure, stacked_bars


def summary_tables(diagnosis: Diagnosis, top: int = 10):
    """Rich renderables: the totals, the top call sites, the top targets."""
    from contend.report.terminal import Table

    totals = Table(title="Contention diagnosis", show_header=False)
    totals.add_row("records", diagnosis.source)
    totals.add_row("operations / ranks", f"{len(diagnosis.messages)} / {diagnosis.num_ranks}")
    totals.add_row("run time", f"{diagnosis.run_time:,.0f} ns")
    totals.add_row("t_contention", _with_share(diagnosis, diagnosis.contention_time))
    totals.add_row("contention summed over operations", f"{diagnosis.contention:,.0f} ns")
    totals.add_row("t_blocked", _with_share(diagnosis, diagnosis.blocked))
    totals.add_row("t_sync", _with_share(diagnosis, diagnosis.sync))
    split, truth = diagnosis.split(), diagnosis.truth()
    for name in CLASSES:
        share = split[name] / diagnosis.contention if diagnosis.contention > 0 else 0.0
        totals.add_row(f"  {name} contention", f"{split[name]:,.0f} ns ({share:.1%} of contention)")
    if truth is not None:
        totals.add_row("engine truth (initiator / target)",
                       f"{truth['initiator']:,.0f} / {truth['target']:,.0f} ns")

    sites = Table(title=f"Top call sites (of {len(diagnosis.call_sites())})")
    left = ("call site", "kind", "top ranks", "top contexts")
    for column in ("call site", "kind", "contention ns", "share", "ops", "initiator", "target", "top ranks",
                   "top contexts"):
        sites.add_column(column, justify="left" if column in left else "right")
    for row in diagnosis.call_sites().head(top).itertuples():
        sites.add_row(row.call_site, row.kind, f"{row.contention:,.0f}", f"{row.share:.1%}", str(row.messages),
                      f"{row.initiator:,.0f}", f"{row.target:,.0f}", ", ".join(map(str, row.top_ranks)),
                      "; ".join(row.top_contexts))

    targets = Table(title="Top targets")
    targets.add_column("rank", justify="right")
    targets.add_column("contention ns", justify="right")
    for rank, value in diagnosis.targets().head(top).items():
        targets.add_row(str(rank), f"{value:,.0f}")
    advice = Table(title="Recommendations", show_header=True)
    advice.add_column("advice")
    advice.add_column("evidence")
    for item in diagnosis.recommendations():
        advice.add_row(item.advice, item.evidence)
    return totals, sites, targets, advice


def _with_share(diagnosis: Diagnosis, total: float) -> str:
    return f"{total:,.0f} ns ({diagnosis.share(total):.2%} of ranks x run time)"


def write_html(diagnosis: Diagnosis, directory: str | os.PathLike, title: str, top: int = 20,
               critical_path=None) -> Path:
    """index.html with the totals, the call-site and target tables, and three PNGs beside it (four with
    the run's ``critical_path``, a ``CriticalPath``: the bar of its split); the directory appears
    complete or not at all."""
    with atomic_directory(directory, "--html") as out:
        _write_html(diagnosis, out, title, top, critical_path)
    return Path(directory) / "index.html"


def _write_html(diagnosis: Diagnosis, out: Path, title: str, top: int, critical_path) -> None:
    from contend.report.html import HtmlPage

    sites = diagnosis.call_sites().head(top)
    _call_sites_plot(sites, out / "call_sites.png")
    _hot_targets_plot(diagnosis, out / "targets.png")
    _split_plot(diagnosis, out / "split.png")

    page = HtmlPage(f"Contention diagnosis: {title}")
    split = diagnosis.split()
    page.paragraph(f"{len(diagnosis.messages)} operations ({diagnosis.source} records) on {diagnosis.num_ranks} "
                   f"ranks over {diagnosis.run_time:,.0f} ns. t_contention "
                   f"{_with_share(diagnosis, diagnosis.contention_time)} (summed over operations "
                   f"{diagnosis.contention:,.0f} ns); "
                   f"t_blocked {_with_share(diagnosis, diagnosis.blocked)}; "
                   f"t_sync {_with_share(diagnosis, diagnosis.sync)}; initiator {split['initiator']:,.0f} ns, "
                   f"target {split['target']:,.0f} ns.")
    if critical_path is not None:
        critical_path.bar(out / "critical_path.png", "Where the time goes: the makespan along the critical path")
        page.heading("Where the time goes")
        page.table(["part", "ns", "share"], [[LABELS[k], critical_path.split[k], f"{critical_path.shares[k]:.1%}"]
                                             for k in PARTS])
        page.image("critical_path.png", f"The makespan split along the critical path ({critical_path.ops:,} "
                                        "operations; docs/models.md, \"Where the time goes\")")
    page.heading("Recommendations")
    page.table(["advice", "evidence"], [[r.advice, r.evidence] for r in diagnosis.recommendations()])
    page.image("split.png", "Initiator vs target contention" + (", beside the engine's truth"
                                                                  if diagnosis.truth() else ""))
    page.heading("Call sites")
    page.table(["call site", "kind", "contention ns", "share", "ops", "initiator ns", "target ns", "top ranks",
                "top contexts"],
               [[r.call_site, r.kind, round(r.contention), f"{r.share:.1%}", r.messages, round(r.initiator),
                 round(r.target), ", ".join(map(str, r.top_ranks)), "; ".join(r.top_contexts)]
                for r in sites.itertuples()])
    page.image("call_sites.png", "Contention by call site, initiator vs target")
    page.heading("Targets")
    page.table(["rank", "contention ns"], [[rank, round(v)] for rank, v in diagnosis.targets().head(top).items()])
    page.image("targets.png", "Contention by target rank over time")
    page.write(out / "index.html")


def _hot_targets_plot(diagnosis: Diagnosis, path: Path) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    edges = diagnosis.bins / 1e3
    image = axes.imshow(diagnosis.hot_targets() / 1e3, aspect="auto", origin="lower", cmap="magma",
                        extent=(edges[0], edges[-1], -0.5, diagnosis.num_ranks - 0.5))
    figure.colorbar(image, ax=axes, label="contention (us)")
    axes.set_title("Contention by target rank over time")
    axes.set_xlabel("time (us)")
    axes.set_ylabel("target rank")
    save_figure(figure, path)


def _split_plot(diagnosis: Diagnosis, path: Path) -> None:
    """Initiator vs target contention, and the engine's own split beside it when the records have one."""
    columns = {"diagnosis": diagnosis.split()}
    truth = diagnosis.truth()
    if truth is not None:
        columns["engine truth"] = truth
    stacked_bars(path, list(columns), {name: [columns[c][name] / 1e3 for c in columns] for name in CLASSES},
                 title="Initiator vs target contention", ylabel="contention (us)")


def _call_sites_plot(sites, path: Path) -> None:
    """Horizontal bars (call-site names are long), largest on top, initiator and target stacked."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.45 * max(1, len(sites))), dpi=110)
    names = list(sites["call_site"])[::-1]
    left = [0.0] * len(names)
    for name in CLASSES:
        values = list(sites[name] / 1e3)[::-1]
        axes.barh(names, values, left=left, label=name)
        left = [a + b for a, b in zip(left, values)]
    axes.set_title("Contention by call site")
    axes.set_xlabel("contention (us, summed over operations)")
    axes.legend(fontsize="small")
    axes.grid(True, axis="x", alpha=0.3)
    save_figure(figure, path)
