"""Compare our ping-pong with HPC Challenge's on the same library and transport, as Markdown.

    python benchmarks/measure_hpcc.py [--repeats 5]

Needs Debian's `hpcc` (built on Debian's Open MPI) and `libopenmpi-dev`: our suite is built with
Debian's Open MPI mpicc for this (CONTEND_MPICC), which also shows that any mpicc works. Both run
2 ranks on this host's shared memory under the same mpirun. HPCC's numbers: one-way latency of 8-byte
messages (loop of round trips / 2, best of 5 loops) and bandwidth of 2,000,000-byte messages (best of
2 single round trips), averaged over the 2 ordered pairs of ranks. Ours: the median and the minimum of
individually timed round trips / 2, same sizes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HPCC_INPUT = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt")
OPEN_MPI_CC = "/usr/bin/mpicc.openmpi"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
LATENCY_BYTES, BANDWIDTH_BYTES = 8, 2_000_000


def hpcc_once(directory: Path) -> dict[str, float]:
    """One HPCC run with a tiny HPL (N=200 on a 1x2 grid: we only want its ping-pong)."""
    text = HPCC_INPUT.read_text()
    text = text.replace("1000         Ns", "200          Ns").replace("2            Ps", "1            Ps")
    (directory / "hpccinf.txt").write_text(text)
    (directory / "hpccoutf.txt").unlink(missing_ok=True)
    subprocess.run(["mpirun.openmpi", "--oversubscribe", "-n", "2", "hpcc"], cwd=directory, check=True,
                   capture_output=True, timeout=600, env={**os.environ, **ROOT_ENV})
    values = {}
    for line in (directory / "hpccoutf.txt").read_text().splitlines():
        key, _, value = line.partition("=")
        if "PingPong" in key:
            values[key.strip()] = float(value)
    return values


def ours_once() -> dict[str, float]:
    from contend.native.bench.runner import run_benchmark

    run = run_benchmark("pingpong", ranks=2, sizes=[LATENCY_BYTES, BANDWIDTH_BYTES], iters=1000, timeout_s=600)
    rows = run.results.set_index("bytes")
    return {
        "latency_p50_us": rows.loc[LATENCY_BYTES, "t_p50_ns"] / 1e3,
        "latency_min_us": rows.loc[LATENCY_BYTES, "t_min_ns"] / 1e3,
        "bandwidth_p50_GBs": BANDWIDTH_BYTES / rows.loc[BANDWIDTH_BYTES, "t_p50_ns"],
        "bandwidth_max_GBs": BANDWIDTH_BYTES / rows.loc[BANDWIDTH_BYTES, "t_min_ns"],
        "library": run.meta["mpi_library"],
        "load": run.meta["loadavg_1min"],
    }


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}..{max(values):.3f}]"


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each benchmark (alternating)")
    args = parser.parse_args()
    missing = [tool for tool in ("hpcc", "mpirun.openmpi") if not shutil.which(tool)]
    if missing or not Path(OPEN_MPI_CC).exists():
        print("needs Debian packages hpcc openmpi-bin libopenmpi-dev (apt-get install)", file=sys.stderr)
        return 2
    os.environ["CONTEND_MPICC"] = OPEN_MPI_CC
    hpcc, ours = [], []
    with tempfile.TemporaryDirectory(prefix="contend-hpcc-") as scratch:
        for _ in range(args.repeats):  # alternate, so both see the same background load
            hpcc.append(hpcc_once(Path(scratch)))
            ours.append(ours_once())
    h_lat = [r["AvgPingPongLatency_usec"] for r in hpcc]
    h_bw = [r["AvgPingPongBandwidth_GBytes"] for r in hpcc]
    o_lat, o_bw = [r["latency_p50_us"] for r in ours], [r["bandwidth_p50_GBs"] for r in ours]
    o_lat_min, o_bw_max = [r["latency_min_us"] for r in ours], [r["bandwidth_max_GBs"] for r in ours]
    lat_diff = 100 * (statistics.median(o_lat) - statistics.median(h_lat)) / statistics.median(h_lat)
    bw_diff = 100 * (statistics.median(o_bw) - statistics.median(h_bw)) / statistics.median(h_bw)
    print(f"Library: {ours[0]['library'].split(',')[0]}; {args.repeats} runs each, median [min..max]; "
          f"load {', '.join(str(r['load']) for r in ours)}")
    print()
    print("| quantity | HPCC (avg over pairs) | ours, median | ours, best | ours median vs HPCC |")
    print("|---|---|---|---|---|")
    print(f"| ping-pong latency, 8 B (us) | {spread(h_lat)} | {spread(o_lat)} | {spread(o_lat_min)} | {lat_diff:+.1f}% |")
    print(f"| ping-pong bandwidth, 2 MB (GB/s) | {spread(h_bw)} | {spread(o_bw)} | {spread(o_bw_max)} | {bw_diff:+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(run())
