"""``contend reproduce PAPER``: re-run a paper's experiments in the simulator and report ours beside
theirs (plots, results.json, an HTML page and terminal tables)."""

from __future__ import annotations

import argparse
import json
import time

from contend.atomic import atomic_path, output_directory

PAPERS = {
    "topology": "Bhatele and Kale 2009, 'Effects of Contention on Message Latencies in Large Supercomputers': "
                "latency by hops, nearest-neighbour vs random pairs, controlled contention, on BG/P-like "
                "and XT3-like tori",
    "noise": "Hoefler 2011, 'Characterizing the Influence of System Noise on Large-Scale Parallel Applications': "
             "noise shape vs intensity from 2^4 to 2^20 ranks, network speed, co-scheduling, the pipelining "
             "error of looped broadcasts, and Beckman's and Ferreira's injection results",
    "congestion": "Luo, Panda, Ibrahim, Iancu, 'Congestion Avoidance on Manycore HPC Systems': concurrency and rate "
                  "congestion (Figures 1, 2), thresholds tuned, all-to-all and RandomAccess with token and proxy "
                  "throttling, on InfiniBand-like and Gemini-like presets",
    "diagnose": "Tallent et al. 2014, 'Diagnosing Network Bottlenecks: One-sided Message Contention': diagnose against "
                "the engine's truth on a moving hot spot, an incast and a control, and the Global-Arrays case "
                "study in miniature (blocked vs block-cyclic gets)",
    "nimc": "Groves, Grant, Arnold, 'NiMC: network-induced memory contention': STREAM under RDMA writes on offload "
            "and onload nodes, a LAMMPS-like stencil with uncoordinated in-memory checkpoints against process count, "
            "throttling and core reservation",
    "mapping": "Bhatele and Kale 2009's remedy for contention, topology-aware mapping: a 3D stencil, an OpenAtom-like "
               "pattern, a 2D transpose and random pairs on the BG/P-like and XT3-like tori, under block, random "
               "and mapped placements (hop-bytes, link loads, simulated time)",
}
# The experiments module of each paper (its run_reproduction) and what its report says first.
EXPERIMENTS = {"topology": "contend.experiments.topology", "noise": "contend.experiments.noise",
               "congestion": "contend.experiments.congestion", "diagnose": "contend.experiments.diagnosis",
               "nimc": "contend.experiments.nimc", "mapping": "contend.experiments.mapping"}
INTRODUCTIONS = {
    "topology": "Latency is per message: from the send being ready to the data being available at the receiver, "
                "the mean over the benchmark's messages.",
    "noise": "A collective starts at time 0 on every rank; its time is the makespan (the last rank done). Noise "
             "stretches CPU work (calc and o) as docs/models.md ('Noise') defines; periodic detours, each rank at a "
             "seeded phase unless co-scheduled.",
    "congestion": "Two nodes; a node's throughput is its bytes sent over the makespan. The presets' NIC curves are shaped "
                  "after Figures 1 and 2 of Luo et al. 2012 (docs/models.md, 'NIC congestion and admission control'), so Figures 1 "
                  "and 2 check that the engine carries the shapes through; the all-to-all, RandomAccess and tuning are the "
                  "consequences.",
    "diagnose": "Gets are emulated as a request to the owner's data server and the data reply (the engine is "
                "two-sided); diagnose pairs them by the records' site names and sees only their timestamps, the "
                "engine's per-message delay split is the truth. Machine: LogGOPS L 1 us, o 300 ns, g 100 ns, "
                "G 0.1 ns/B, no network.",
    "nimc": "A node's memory bandwidth is shared between its ranks' calcs and the payload its NIC writes into memory "
            "(docs/models.md, 'Memory contention (NiMC)'); the presets westmere-offload, sandybridge-offload and "
            "sandybridge-onload carry Table I of Groves 2016 and STREAM numbers, and say which values are estimates.",
    "mapping": "A placement puts rank r on a node; block (rank r on node r) is the default. Hop-bytes: each "
               "message's bytes times the network links of its route under the machine's routing, summed. The "
               "patterns' assumptions (the OpenAtom-like one is ours, derived from the poster's description) are in "
               "the second section and in python/contend/mapping/patterns.py.",
}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="reproduce a paper's experiments in the simulator",
        description="Re-run a paper's experiments on the presets and write plots, results.json and "
        "DIR/index.html with our numbers beside the paper's. Papers: "
        + "; ".join(f"{name}: {text}" for name, text in PAPERS.items()) + ". Exit code 1 if a qualitative "
        "finding of the paper does not reappear.",
    )
    parser.add_argument("paper", choices=sorted(PAPERS), help="which paper")
    parser.add_argument("-o", "--output", metavar="DIR", help="report directory (default reproduce-PAPER)")
    parser.add_argument("--quick", action="store_true", help="smaller machines, fewer sizes and ranks (seconds)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import importlib

    from rich.console import Console

    from contend.report.findings import findings_page, print_findings

    out = output_directory(args.output or f"reproduce-{args.paper}", "-o")
    console = Console()
    started = time.perf_counter()
    experiments = importlib.import_module(EXPERIMENTS[args.paper])
    findings, results = experiments.run_reproduction(
        out, quick=args.quick, progress=lambda step: console.print(f"[dim]running: {step}[/dim]"))
    elapsed = time.perf_counter() - started
    results["wall_seconds"]["total"] = round(elapsed, 3)
    print_findings(console, findings)

    with atomic_path(out / "results.json") as temporary:
        temporary.write_text(json.dumps({**results, "findings": [vars(f) for f in findings]}, indent=1),
                             encoding="utf-8")
    findings_page(
        f"contend reproduce {args.paper}: {PAPERS[args.paper]}",
        f"Generated in {elapsed:.1f} s by `contend reproduce {args.paper}{' --quick' if args.quick else ''}`. "
        f"{INTRODUCTIONS[args.paper]} Raw numbers and wall times: results.json.",
        findings,
    ).write(out / "index.html")
    failed = [f.title for f in findings if not f.ok]
    console.print(f"\nreport: {out / 'index.html'} ({elapsed:.1f} s)")
    if failed:
        console.print(f"[bold red]not reproduced: {'; '.join(failed)}[/bold red]")
        return 1
    return 0
