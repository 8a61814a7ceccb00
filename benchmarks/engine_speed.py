"""Engine speed and memory: events per second, peak memory, GOAL parse speed and bytes per op.

Run with `make bench` (or `.venv/bin/python benchmarks/engine_speed.py [--quick]`). Each case runs in
its own process (`contend-engine-bench`, built from engine/src/bin/bench.rs) so peak RSS is its own.
The 2^20-rank cases run three times (median and spread reported: the machine is shared and noisy);
the 2^23-rank dissemination barrier (about 580 M events) runs once. Then all-to-all exchanges of
1 KiB and 64 KiB over an 8x8x8 torus and a 1024-node fat tree with link contention, under the flow
model and the packet model (256-byte and 4 KiB packets), each cut off after two minutes (the flow
model is too slow for the dense 64 KiB cases; see docs/models.md, "Links").

The baseline is LogGOPSim v1's event loop on this kind of machine, as measured on a machine of this
kind outside the repository (binomial 2^20: 0.86 M events/s, 658 MiB; dissemination 2^20: 0.70 M
events/s, 7.4 GiB): it cannot be rebuilt here, so the ratio is against those figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich import box
from rich.console import Console

from contend.report.terminal import Table

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "target" / "release" / "contend-engine-bench"
LOGGOPSIM = {  # (events/s, peak RSS bytes) LogGOPSim v1 measured on this kind of machine
    ("binomial-bcast", 1 << 20): (0.86e6, 658 * 2**20),
    ("dissemination", 1 << 20): (0.70e6, 7.4 * 2**30),
    ("binomial-bcast", 1 << 23): (0.55e6, 5.0 * 2**30),
}


def probe(*args: str, timeout: float | None = None) -> dict:
    out = subprocess.run([str(PROBE), *args], check=True, capture_output=True, text=True, timeout=timeout).stdout
    return json.loads(out) if out.strip() else {}


NETWORK_CASES = [  # (label, ranks, topology): all-to-all over links, 10 GB/s, 100 ns per hop
    ("torus 8x8x8", 512, "torus:8x8x8"),
    ("fat tree 32:2", 1024, "fattree:32:2"),
]
# Link sharing models: the flow model, and the packet model with 256-byte packets (the default of
# machine files) and with 4 KiB packets (an InfiniBand MTU): its cost is one event per packet and link.
SHARING = [("flow", 256), ("packet", 256), ("packet", 4096)]
NETWORK_TIMEOUT_S = 120


def network_table(console: Console) -> Table:
    """All-to-all with link contention: wall time, or how long it ran before the cut-off."""
    table = Table(title=f"all-to-all with link contention, 512 ranks on the torus, 1024 on the fat tree (cut off "
                        f"after {NETWORK_TIMEOUT_S} s; M events/s, M packet events/s)",
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("topology", "bytes", "sharing", "wall s", "M ev/s", "M pkt/s", "makespan ns"):
        table.add_column(col, justify="left" if col in ("topology", "sharing") else "right", no_wrap=True)
    for label, ranks, topo in NETWORK_CASES:
        for size in (1024, 65536):
            for sharing, packet in SHARING:
                name = "flow" if sharing == "flow" else f"pkt {packet}"
                with console.status(f"alltoall {size} B on {label}, {name}"):
                    try:
                        r = probe("net", "alltoall-linear", str(ranks), str(size), topo, sharing, str(packet),
                                  timeout=NETWORK_TIMEOUT_S)
                    except subprocess.TimeoutExpired:
                        table.add_row(label, str(size), name, f"> {NETWORK_TIMEOUT_S}", "", "", "-")
                        continue
                secs = r["sim_seconds"]
                table.add_row(label, str(size), name, f"{secs:.1f}",
                              f"{r['events_per_second'] / 1e6:.2f}",
                              f"{r['packet_events'] / secs / 1e6:.1f}" if r["packet_events"] else "",
                              str(r["makespan_ns"]))
    return table


def repeat(times: int, *args: str) -> list[dict]:
    return [probe(*args) for _ in range(times)]


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    med = statistics.median(values)
    return f"±{(max(values) - min(values)) / 2 / med * 100:.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 2^23-rank case and the 2^20 GOAL dissemination file")
    parser.add_argument("--json", type=Path, help="also write all measurements to this file")
    parser.add_argument("--no-network", action="store_true", help="skip the all-to-all cases with link contention")
    args = parser.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "contend-engine", "--bin", "contend-engine-bench"], cwd=ROOT, check=True)
    console = Console(width=80)
    console.print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores; > 1 means another job competes)")
    rows: list[tuple[str, list[dict]]] = []
    P20 = 1 << 20
    with tempfile.TemporaryDirectory(prefix="contend-bench-") as tmp:
        for pattern in ("dissemination", "binomial-bcast"):
            with console.status(f"{pattern}, 2^20 ranks, generated"):
                rows.append((f"{pattern} 2^20 generated", repeat(3, "gen", pattern, str(P20), "1")))
            if pattern == "dissemination" and args.quick:
                continue
            path = Path(tmp) / f"{pattern}.goal"
            with console.status(f"writing {pattern} 2^20 as GOAL text"):
                probe("write", pattern, str(P20), "1", str(path))
            with console.status(f"{pattern}, 2^20 ranks, from GOAL text ({path.stat().st_size / 1e6:.0f} MB)"):
                rows.append((f"{pattern} 2^20 GOAL", repeat(3, "goal", str(path))))
            path.unlink()
        if not args.quick:
            with console.status("binomial-bcast, 2^23 ranks, generated"):
                rows.append(("binomial-bcast 2^23 generated", repeat(1, "gen", "binomial-bcast", str(1 << 23), "1")))
            with console.status("dissemination, 2^23 ranks, generated (about 580 M events)"):
                rows.append(("dissemination 2^23 generated", repeat(1, "gen", "dissemination", str(1 << 23), "1")))

    # Two tables, speed and memory, so that each fits a terminal of 80 columns.
    speed = Table(title="contend engine speed (L=3000 o=1500 g=1000 G=6 O=0 S=65535, 1 byte; makespan in ns)",
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("case", "events", "sim s", "M events/s", "vs LGS", "makespan"):
        speed.add_column(col, justify="right" if col != "case" else "left", no_wrap=True)
    memory = Table(title="memory: peak RSS, LogGOPSim's over it, GOAL parse MB/s, B per op stored and at peak",
                   box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("case", "peak RSS", "LGS", "parse", "store", "peak"):
        memory.add_column(col, justify="right" if col != "case" else "left", no_wrap=True)
    for name, runs in rows:
        first = runs[0]
        eps = [r["events_per_second"] for r in runs]
        med = statistics.median(eps)
        pattern, scale = name.split()[0], name.split()[1]
        ranks = 1 << int(scale.split("^")[1])
        base = LOGGOPSIM.get((pattern, ranks))
        rss = max(r["peak_rss_bytes"] for r in runs)
        parse = [r["parse_mb_per_second"] for r in runs if "parse_mb_per_second" in r]
        label = name.replace("binomial-bcast", "binomial").replace(" generated", " gen")
        speed.add_row(label, f"{first['events'] / 1e6:.1f} M", f"{statistics.median(r['sim_seconds'] for r in runs):.2f}",
                      f"{med / 1e6:.1f} {spread(eps)}", f"{med / base[0]:.0f}x" if base else "", str(first["makespan_ns"]))
        memory.add_row(label, f"{rss / 2**20:.0f} MiB", f"{base[1] / rss:.0f}x" if base else "",
                       f"{statistics.median(parse):.0f} {spread(parse)}" if parse else "",
                       f"{first['store_bytes_per_op']:.1f}" if "store_bytes_per_op" in first else "",
                       f"{rss / first['ops']:.0f}" if "ops" in first else "")
    console.print(speed)
    console.print(memory)
    if not (args.quick or args.no_network):
        console.print(network_table(console))
    console.print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({name: runs for name, runs in rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
