"""The contention diagnosis of Tallent et al. 2014 in the simulator: ``contend reproduce diagnose``.

- Truth: diagnose on workloads with known contention (a moving hot spot read with gets, an incast, a
  fan-out, both ends at once, an uncontended control; experiments/onesided.py) against the engine's own
  per-message split.
- Tallent et al. 2014's case study in miniature: Global-Arrays-like gets from a distributed array while all ranks
  sweep the same region, blocked distribution against block-cyclic with chunks of 1, 2, 4, 8 blocks;
  diagnose names the get call site and the reduction in contention and run time is reported.
- Ours beside Tallent et al. 2014's numbers.

``run_reproduction`` returns the findings and the raw numbers (results.json).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from contend.experiments import onesided
from contend.report.findings import Finding
from contend.report.plots import pyplot, save_figure


@dataclass(frozen=True)
class Scale:
    ranks: int  # compute ranks (plus as many data servers)
    size: int  # bytes per get
    chunks: tuple[int, ...]  # block-cyclic chunk sizes, in blocks
    seeds: int  # access orders averaged


FULL = Scale(ranks=16, size=16384, chunks=(1, 2, 4, 8), seeds=3)
QUICK = Scale(ranks=8, size=16384, chunks=(1, 4), seeds=1)


def run_reproduction(out: Path, quick: bool = False,
                     progress: Callable[[str], None] = lambda step: None) -> tuple[list[Finding], dict[str, Any]]:
    scale = QUICK if quick else FULL
    results: dict[str, Any] = {"quick": quick, "scale": asdict(scale), "machine": onesided.MACHINE,
                               "wall_seconds": {}}
    t0 = time.perf_counter()
    progress("workloads with known contention: hot spot, incast, control")
    truth_rows, truth_ok = _truth(results, scale)
    results["wall_seconds"]["truth"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    progress("Global-Arrays-like sweep: blocked vs block-cyclic")
    layouts = _case_study(out, results, scale)
    results["wall_seconds"]["case_study"] = round(time.perf_counter() - t0, 3)
    findings = [
        Finding("truth", "Diagnose against the engine's truth",
                "A moving hot spot read with gets and an incast (target contention), a fan-out of concurrent gets "
                "from one rank (initiator contention), both at once from two call sites (mixed), and a control "
                "where no two operations share an end. Each workload is simulated with records; diagnose sees only the timestamps, the engine knows "
                "where every message waited (nic_queue at the initiator, target_queue and link at the target; "
                "for a get, its request's and its reply's). A get is a request to the owner's data server and "
                "the data reply, paired by the records' site names. Required: the total and the initiator / "
                "target split within 10% of the engine's total; the control almost none (under 1% of ranks x "
                "run time).",
                ["workload", "ops", "truth total (us)", "diagnose (us)", "truth initiator / target (us)",
                 "diagnose initiator / target (us)", "t_contention share", "within 10%"], truth_rows,
                ok=truth_ok),
        _case_finding(layouts, scale),
        _comparison(layouts),
    ]
    return findings, results


def _truth(results: dict[str, Any], scale: Scale):
    rows, ok, raw = [], True, {}
    workloads = [onesided.hot_spot(ranks=scale.ranks, rounds=scale.ranks), onesided.incast(ranks=scale.ranks),
                 onesided.fan_out(ranks=scale.ranks), onesided.mixed(ranks=scale.ranks, rounds=scale.ranks // 2),
                 onesided.control(ranks=scale.ranks, rounds=scale.ranks)]
    for workload in workloads:
        _, diagnosis = onesided.diagnose_workload(workload)
        truth, split = diagnosis.truth(), diagnosis.split()
        total = sum(truth.values())
        agree = (abs(diagnosis.contention - total) <= 0.1 * total
                 and all(abs(split[end] - truth[end]) <= 0.1 * total for end in truth))
        share = diagnosis.share(diagnosis.contention_time)
        if workload.name == "control":
            agree = share < 0.01
        ok &= agree
        raw[workload.name] = {"truth_ns": truth, "split_ns": split, "contention_ns": diagnosis.contention,
                              "t_contention_share": share, "ops": len(diagnosis.messages)}
        rows.append([workload.name, len(diagnosis.messages), round(total / 1e3, 2),
                     round(diagnosis.contention / 1e3, 2),
                     f"{truth['initiator'] / 1e3:.2f} / {truth['target'] / 1e3:.2f}",
                     f"{split['initiator'] / 1e3:.2f} / {split['target'] / 1e3:.2f}", f"{share:.2%}",
                     "yes" if agree else "NO"])
    results["truth"] = raw
    return rows, ok


def _case_study(out: Path, results: dict[str, Any], scale: Scale) -> dict[str, dict[str, Any]]:
    """Mean run time and contention of each layout over the seeded access orders; writes the blocked
    run's records (with its site names) and its diagnose report beside the page."""
    from contend.simulation.records import write_records_parquet
    from contend.report.diagnosis import write_html

    layouts: dict[str, dict[str, Any]] = {}
    for layout, chunk in [("blocked", 1)] + [("cyclic", c) for c in scale.chunks]:
        runs = []
        for seed in range(scale.seeds):
            workload = onesided.global_array(ranks=scale.ranks, layout=layout, chunk=chunk, size=scale.size,
                                             seed=seed)
            result, diagnosis = onesided.diagnose_workload(workload)
            sites = diagnosis.call_sites()
            runs.append({"run_time_ns": float(result.makespan),
                         "contention_ns": diagnosis.contention,
                         # the compute ranks wait; the data servers only serve
                         "t_contention_share": diagnosis.contention_time / (scale.ranks * diagnosis.run_time),
                         "target_share": diagnosis.split()["target"] / diagnosis.contention
                         if diagnosis.contention > 0 else 0.0,
                         "top_site": str(sites["call_site"][0]) if len(sites) else "",
                         "top_site_share": float(sites["share"][0]) if len(sites) else 0.0})
            if seed == 0 and layout == "blocked":
                write_records_parquet(result.record_columns, out / "ga-blocked.parquet",
                                      {"params": result.params, "sites": workload.sites,
                                       "workload": {"name": workload.name, "ranks": workload.ranks}})
                write_html(diagnosis, out / "ga-blocked", "Global-Arrays-like sweep, blocked")
        mean = {key: sum(r[key] for r in runs) / len(runs) for key in runs[0] if key != "top_site"}
        mean["top_site"] = runs[0]["top_site"]
        layouts["blocked" if layout == "blocked" else f"block-cyclic {chunk}"] = mean
    blocked = layouts["blocked"]
    for values in layouts.values():
        values["contention_ratio"] = values["contention_ns"] / blocked["contention_ns"]
        values["run_time_ratio"] = values["run_time_ns"] / blocked["run_time_ns"]
    results["case_study"] = layouts
    _case_plot(layouts, out / "case_study.png")
    return layouts


def _case_plot(layouts: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    names = list(layouts)
    positions = range(len(names))
    width = 0.38
    axes.bar([p - width / 2 for p in positions], [layouts[n]["contention_ratio"] for n in names], width,
             label="contention / blocked")
    axes.bar([p + width / 2 for p in positions], [layouts[n]["run_time_ratio"] for n in names], width,
             label="run time / blocked")
    axes.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="Tallent et al. 2014: contention about 50% lower")
    axes.axhline(0.8, color="grey", linestyle=":", linewidth=1, label="Tallent et al. 2014: run time up to 20% lower")
    axes.set_xticks(list(positions), names)
    axes.set_ylabel("ratio to the blocked distribution")
    axes.set_title("Global-Arrays-like gets: blocked vs block-cyclic")
    axes.legend(fontsize="small")
    axes.grid(True, axis="y", alpha=0.3)
    save_figure(figure, path)


def _case_finding(layouts: dict[str, dict[str, Any]], scale: Scale) -> Finding:
    blocked = layouts["blocked"]
    cyclic = [name for name in layouts if name != "blocked"]
    named = all(values["top_site"] == onesided.GA_SITE for values in layouts.values()
                if values["contention_ns"] > 0)
    lower = all(layouts[name]["contention_ratio"] < 1 and layouts[name]["run_time_ratio"] < 1 for name in cyclic)
    rows = [[name, round(v["run_time_ns"] / 1e3, 1), round(v["contention_ns"] / 1e3, 1),
             f"{v['t_contention_share']:.1%}", f"{v['target_share']:.0%}", v["top_site"],
             f"{v['contention_ratio']:.2f}", f"{v['run_time_ratio']:.2f}"] for name, v in layouts.items()]
    best = min(cyclic, key=lambda name: layouts[name]["contention_ratio"])
    return Finding(
        "case-study", "Tallent et al. 2014's case study in miniature: blocked vs block-cyclic",
        f"{scale.ranks} compute ranks (and {scale.ranks} data servers) sweep a distributed array of "
        f"{scale.ranks}x{scale.ranks} blocks of {scale.size // 1024} KiB: at step k all ranks get each block of "
        "region k in their own random order, computing 1 us after each get. Under the blocked distribution "
        "region k lies on one owner, a hot target that moves as the sweep moves; block-cyclic with chunks of c "
        "blocks spreads it over ranks / c owners. Diagnose names the get call site as the source "
        f"({onesided.GA_SITE}, {blocked['top_site_share']:.0%} of the contention under blocked, "
        f"{blocked['target_share']:.0%} of it at the target) and its advice is Tallent et al. 2014's: a block-cyclic "
        f"distribution. Block-cyclic lowers contention to {layouts[best]['contention_ratio']:.2f}x of blocked "
        f"({best}) and the run time to {layouts[best]['run_time_ratio']:.2f}x; larger chunks leave more. Mean "
        f"over {scale.seeds} access order(s). Records of the blocked run: ga-blocked.parquet "
        "(`contend diagnose ga-blocked.parquet`), its report: ga-blocked/index.html.",
        ["distribution", "run time (us)", "contention (us, summed)", "t_contention (compute ranks)", "at target",
         "top call site", "contention / blocked", "run time / blocked"],
        rows, ok=named and lower, plot="case_study.png",
        files=[("ga-blocked/index.html", "diagnose report of the blocked run"),
               ("ga-blocked.parquet", "its records, with the site names")],
    )


def _comparison(layouts: dict[str, dict[str, Any]]) -> Finding:
    blocked = layouts["blocked"]
    cyclic = {name: v for name, v in layouts.items() if name != "blocked"}
    best = min(cyclic, key=lambda name: cyclic[name]["contention_ratio"])
    worst = max(cyclic, key=lambda name: cyclic[name]["contention_ratio"])
    rows = [
        ["contention due to a get reading data (PIC, 64 nodes)", "100% (three call sites)",
         f"{blocked['top_site_share']:.0%} at {blocked['top_site']} (one call site)"],
        ["contention as a share of run time (PIC, 64 nodes)", "65%", f"{blocked['t_contention_share']:.0%} "
         "(of compute ranks x run time)"],
        ["block-cyclic reduces contention", "about 50%",
         f"{1 - cyclic[best]['contention_ratio']:.0%} ({best}) to {1 - cyclic[worst]['contention_ratio']:.0%} "
         f"({worst})"],
        ["block-cyclic reduces run time", "up to 20%",
         f"{1 - cyclic[best]['run_time_ratio']:.0%} ({best}) to {1 - cyclic[worst]['run_time_ratio']:.0%} ({worst})"],
        ["contention at the target (hot spot reading data)", "target", f"{blocked['target_share']:.0%} target"],
        ["measurement overhead", "1-5%", "not applicable (simulated; the real tracer's is measured by "
         "contend trace)"],
    ]
    return Finding(
        "comparison", "Ours beside Tallent et al. 2014 ('Diagnosing Network Bottlenecks')",
        "Tallent et al. 2014 is a poster on NWChem's Carbon 240 benchmark; its numbers are quoted from its text. Ours are "
        "a miniature on a LogGOPS machine without a network (contention at the NICs' in and out links only, "
        "as Tallent et al. 2014 defines network contention). Tallent et al. 2014 could not use the optimal block size; our chunk "
        "sweep shows how much the block size matters: a perfect spread (chunk 1) removes most contention, "
        "large chunks little.",
        ["finding (Tallent et al. 2014)", "theirs", "ours"], rows, ok=True,
    )
