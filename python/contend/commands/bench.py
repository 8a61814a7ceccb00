"""``contend bench``: run the native MPI benchmarks, and fit a machine file from measurements."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Iterator

from contend.atomic import beside, check_writable
from contend.native.bench.registry import BENCHMARKS, FIT_ITERS, PATTERN_OPTIONS, benchmark
from contend.errors import UserError
from contend.commands.options import add_fabric_prefix
from contend.machine.quantities import bounded_number, parse_bandwidth, parse_count

# pandas, pyarrow, matplotlib and rich load inside the actions: `contend sim` should not wait for them.


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="run native MPI benchmarks; fit LogGP parameters into a machine file",
        description="Measure this machine with contend's native MPI benchmarks (see docs/measure.md).")
    actions = parser.add_subparsers(dest="bench_command", metavar="ACTION")
    actions.required = True

    listing = actions.add_parser("list", help="list the benchmarks")
    listing.set_defaults(func=run_list)

    run = actions.add_parser("run", help="run one benchmark: Parquet, table and plot")
    run.add_argument("name", metavar="NAME", help="benchmark (see `contend bench list`)")
    run.add_argument("--np", metavar="N", help="number of ranks (default: the benchmark's, or the whole fabric)")
    run.add_argument("--sizes", metavar="LIST", help="message sizes: 1,8,4KiB or a power-of-two range 1:1MiB")
    run.add_argument("--iters", metavar="N", help="timed repetitions per size (default 200)")
    run.add_argument("--warmup", metavar="N", help="untimed repetitions per size (default 10)")
    run.add_argument("--fabric", action="store_true", help="run on the emulated fabric that is up")
    add_fabric_prefix(run)
    run.add_argument("--timeout", metavar="S", default="600", help="stop the run after S seconds (default 600)")
    run.add_argument("-o", "--output", metavar="FILE.parquet", help="results (default NAME.parquet)")
    run.add_argument("--plot", metavar="FILE.png", help="plot (default: the output with .png)")
    specific = run.add_argument_group("pattern options (only where they apply)")
    specific.add_argument("--window", metavar="W", help="messages in flight per peer (msgrate, incast, outcast, put, get)")
    specific.add_argument("--mode", help="pairs: nn or random partner; nicrate, outstanding: send or put")
    specific.add_argument("--seed", metavar="N", help="pairs --mode random: seed of the pairing")
    specific.add_argument("--dims", metavar="AxBxC", help="hops: topology map of the ranks")
    specific.add_argument("--dim", metavar="D", help="hops: dimension to pair along (0 = x)")
    specific.add_argument("--hops", metavar="N", help="hops: distance between partners")
    specific.add_argument("--prtt-n", dest="prtt_n", metavar="N", help="loggp: messages per parametrised round trip")
    specific.add_argument("--duration", metavar="S", help="noise: seconds of selfish-detour loop")
    specific.add_argument("--threshold", metavar="NS", help="noise: detour threshold in ns")
    specific.add_argument("--max-detours", dest="max_detours", metavar="N", help="noise: detours kept per rank")
    specific.add_argument("--pin", choices=("0", "1"), help="noise: 1 pins each rank to its own CPU")
    specific.add_argument("--pause", metavar="S",
                          help="pingpong: seconds rank 0 rests after each round trip (a shaped link's bucket refills)")
    specific.add_argument("--active", metavar="LIST",
                          help="nicrate, outstanding: ranks per node injecting at once, e.g. 1,2 or 1:8")
    specific.add_argument("--windows", metavar="LIST",
                          help="nicrate, outstanding, randomaccess: operations in flight per rank, e.g. 1:32")
    specific.add_argument("--messages", metavar="N", help="nicrate, outstanding: messages per rank per round")
    specific.add_argument("--table", metavar="N", help="randomaccess: 64-bit words of the table per rank")
    run.set_defaults(func=run_run)

    show = actions.add_parser("show", help="print the table of a stored run")
    show.add_argument("file", metavar="FILE.parquet")
    show.add_argument("--plot", metavar="FILE.png", help="also draw its plot")
    show.set_defaults(func=run_show)

    fit = actions.add_parser(
        "fit", help="measure LogGP parameters and write a machine file",
        description="Measure L, o_s, o_r, g, G by parametrised round trips (2 ranks, shared memory or with "
                    "--fabric two nodes of the emulated fabric), "
                    "find the eager threshold, fit costs for messages up to it and above it, check the fit "
                    "against an independent ping-pong (and `contend sim` when the engine is built) and "
                    "write a machine file. Exits 1 when the check misses 10% at some size (the file is "
                    "written all the same), 2 on bad input.")
    fit.add_argument("-o", "--output", metavar="FILE.toml", default="this-host.toml",
                     help="machine file to write (default this-host.toml); runs and plot go beside it")
    fit.add_argument("--name", default="this-host", help="machine name in the file")
    fit.add_argument("--sizes", metavar="LIST", default="1:1MiB", help="sizes to measure (default 1:1MiB)")
    fit.add_argument("--iters", metavar="N", default=str(FIT_ITERS),
                     help=f"round trips per size and run (default {FIT_ITERS})")
    fit.add_argument("--repeats", metavar="R", default="9",
                     help="runs of each measurement, alternating; those in the machine's most common state "
                          "are combined by their median (default 9)")
    fit.add_argument("--no-refine", action="store_true", help="do not narrow the eager threshold")
    fit.add_argument("--timeout", metavar="S", default="600", help="stop each run after S seconds")
    fit.add_argument("--fabric", action="store_true",
                     help="measure between nodes 0 and 1 of the emulated fabric that is up, not on shared memory")
    add_fabric_prefix(fit)
    fit.set_defaults(func=run_fit)

    nimc = actions.add_parser(
        "nimc", help="triad bandwidth while another core injects memory traffic (NiMC): sweep, table, plot, data",
        description="A STREAM-like triad pinned to one core, sampled every --interval, while the other core "
                    "injects traffic into this node's memory: stores into an MPI window on the triad's rank "
                    "(put), MPI_Put into it through libcontend-throttle.so (rma, with --mitigations), loopback TCP received into a buffer (tcp), a memcpy (reference), a spin without "
                    "memory traffic (control), nothing (baseline). Rounds of interleaved runs; slowdown against "
                    "each round's baseline; per-sample features for `contend nimc train` (docs/measure.md).")
    nimc.add_argument("--sources", default="spin,memcpy,put,tcp",
                      help="sources besides the baseline (default spin,memcpy,put,tcp)")
    nimc.add_argument("--rates", default="0,1GB,2GB,max",
                      help="bytes/s for memcpy, put, tcp: decimal units or max (default 0,1GB,2GB,max)")
    nimc.add_argument("--mitigations", default="none", metavar="LIST",
                      help="for the rma source, NiMC mitigations of libcontend-throttle.so to run it under, each "
                           "once per rate: none, throttle (--memory-throttle), reserve-core (default none)")
    nimc.add_argument("--memory-throttle", metavar="BW",
                      help="the throttle mitigation's cap on the traffic into the triad's node (e.g. 1GB/s)")
    nimc.add_argument("--repeats", metavar="R", default="3", help="rounds (default 3)")
    nimc.add_argument("--duration", metavar="S", default="3", help="seconds per run (default 3)")
    nimc.add_argument("--interval", metavar="S", default="0.1", help="seconds per triad sample (default 0.1)")
    nimc.add_argument("--period", metavar="S", default="1",
                      help="traffic in bursts, one every S seconds, so each run holds its own baseline between "
                           "bursts (default 1; 0: continuous)")
    nimc.add_argument("--on", metavar="S", help="seconds of each burst (default half the period)")
    nimc.add_argument("--chunk", default="1MiB", help="bytes per injected chunk (default 1MiB)")
    nimc.add_argument("--region", default="256MiB", help="bytes of the landing buffer (default 256MiB)")
    nimc.add_argument("--seed", metavar="N", default="1", help="seed of the order within rounds (default 1)")
    nimc.add_argument("--nice", metavar="N", default="-20",
                      help="nice value for both ranks while they run, so other jobs on a shared machine do not "
                           "take their cores (default -20, needs root or CAP_SYS_NICE; 0 leaves it)")
    nimc.add_argument("-o", "--output", metavar="DIR", default="nimc-data",
                      help="directory for the data, table and plot (default nimc-data)")
    nimc.add_argument("--json", action="store_true", help="print the slowdown table as JSON")
    nimc.set_defaults(func=run_nimc)


def run_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from contend.report.terminal import Table

    from contend.native.bench.tables import sizes_text

    table = Table(title="contend bench: benchmarks")
    for column in ("name", "what it measures", "ranks", "default sizes", "options"):
        table.add_column(column, no_wrap=column == "name")  # names are what one types: never cut
    for b in BENCHMARKS.values():
        ranks = f"{b.default_ranks} (min {b.min_ranks}{', even' if b.even_ranks else ''})"
        sizes = sizes_text(b.default_sizes)
        options = " ".join(PATTERN_OPTIONS[o] for o in b.options)
        table.add_row(b.name, b.summary, ranks, sizes, options)
    Console().print(table)
    return 0


@contextlib.contextmanager
def _progress_bar(label: str) -> Iterator:
    """A rich progress bar advanced by the harness's progress lines."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--timeout: expected seconds, got {text!r}") from None
    if not 0 < value <= 86400:
        raise UserError(f"--timeout: expected 0 < S <= 86400, got {text}")
    return value


def run_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from contend.native.bench import sanity
    from contend.native.bench.plot import plot_run
    from contend.native.bench.results import write_run
    from contend.native.bench.runner import run_benchmark
    from contend.native.bench.sizes import parse_sizes
    from contend.native.bench.tables import results_table

    bench = benchmark(args.name)
    if bench.plot == "nimc":
        raise UserError("nimc has its own action with its sweep and outputs: contend bench nimc --help")
    output = check_writable(args.output or f"{bench.name}.parquet", "-o")
    plot_path = args.plot or beside(output, output.stem + ".png")  # none beside a device
    plot_path = check_writable(plot_path, "--plot") if plot_path else None
    options = {key: getattr(args, key, None) for key in PATTERN_OPTIONS}  # nimc's options are its own action's
    on = _fabric(args)
    with _progress_bar(f"{bench.name}") as advance:
        run = run_benchmark(
            bench.name,
            ranks=parse_count(args.np, "--np", minimum=1, maximum=4096) if args.np else None,
            sizes=parse_sizes(args.sizes) if args.sizes else None,
            iters=parse_count(args.iters, "--iters", minimum=1, maximum=10**8) if args.iters else None,
            warmup=parse_count(args.warmup, "--warmup", maximum=10**8) if args.warmup else None,
            options=options,
            fabric=on,
            timeout_s=_seconds(args.timeout),
            progress=advance,
        )
    write_run(run, output)
    if plot_path is not None:
        plot_run(run, plot_path)
    console = Console()
    console.print(results_table(run))
    console.print(f"results: {output}  plot: {plot_path}")
    problems = sanity.problems(run)
    for problem in problems:
        console.print(f"[bold red]not sane:[/] {problem}")
    return 1 if problems else 0


def run_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from contend.native.bench.plot import plot_run
    from contend.native.bench.results import read_run
    from contend.native.bench.tables import results_table

    path = Path(args.file)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    run = read_run(path)
    plot = check_writable(args.plot, "--plot") if args.plot else None
    try:
        table = results_table(run)
        if plot is not None:
            plot_run(run, plot)
    except UserError:
        raise
    except (KeyError, TypeError, ValueError) as exc:  # each pattern's table and plot read their own columns
        raise UserError(f"{path}: a {run.pattern} run without what its table reads ({type(exc).__name__}: "
                        f"{exc})") from None
    Console().print(table)
    return 0


def _fabric(args: argparse.Namespace):
    """The emulated fabric that --fabric runs on (under --fabric-prefix), or None without --fabric."""
    from contend.native import fabric

    return fabric.require(args.fabric_prefix, "--fabric") if args.fabric else None


def run_fit(args: argparse.Namespace) -> int:
    import numpy as np
    from rich.console import Console
    from rich.markup import escape

    from contend.native.bench import loggp
    from contend.native.bench.plot import plot_fit
    from contend.native.bench.repeats import common_state
    from contend.native.bench.results import median_of_runs, write_run
    from contend.native.bench.runner import run_benchmark
    from contend.native.bench.sizes import parse_sizes
    from contend.native.bench.tables import fit_table

    target = check_writable(args.output, "-o")
    sizes = parse_sizes(args.sizes)
    if len(sizes) < 3 or min(sizes) < 1:
        raise UserError("--sizes: the fit needs at least three sizes, all at least 1 byte")
    iters = parse_count(args.iters, "--iters", minimum=5, maximum=10**7)
    repeats = parse_count(args.repeats, "--repeats", minimum=1, maximum=100)
    timeout = _seconds(args.timeout)
    stem = target.with_suffix("")
    console = Console()
    on = _fabric(args)

    def measure(name: str, these: list[int], label: str = "", cpus: str | None = None, times: int = iters):
        with _progress_bar(f"{name} ({len(these)} sizes){label}") as advance:
            return run_benchmark(name, ranks=2, sizes=these, iters=times, timeout_s=timeout, progress=advance,
                                 fabric=on, cpus=cpus)

    def pingpong_round_trips(these: list[int]) -> list[float]:
        return loggp.measured_round_trips(measure("pingpong", these))["measured_ns"].tolist()

    # Parameters and check alternate, so both see the same states of a shared machine; each keeps its
    # runs taken in the machine's most common state, combined by per-size medians.
    parameter_runs, check_runs = [], []
    for repeat in range(repeats):
        parameter_runs.append(measure("loggp", sizes, f" {repeat + 1}/{repeats}"))
        check_runs.append(measure("pingpong", sizes, f" {repeat + 1}/{repeats}"))
    kept_parameters, kept_checks = common_state([
        [loggp.netgauge_table(run)["round_trip_ns"] for run in parameter_runs],
        [loggp.measured_round_trips(run)["measured_ns"] for run in check_runs],
    ])
    parameters = median_of_runs([parameter_runs[i] for i in kept_parameters])
    check = median_of_runs([check_runs[i] for i in kept_checks])
    parameters.meta.update(repeats=repeats, runs=len(kept_parameters), check_runs=len(kept_checks))
    netgauge = loggp.netgauge_table(parameters)
    measured = loggp.measured_round_trips(check)
    step = (loggp.find_step(netgauge["bytes"].tolist(), netgauge["round_trip_ns"].tolist())
            or loggp.find_step(measured["bytes"].tolist(), measured["measured_ns"].tolist()))
    if step and not args.no_refine:
        step = loggp.refine_step(step[0], step[1], pingpong_round_trips)
    fit = loggp.fit_loggp(parameters, step)

    # On shared memory the host's ranks share its cores: round trips of the smallest size with both
    # ranks on one core against the check's say what passing a core between ranks costs, and barriers
    # there how long a rank spinning in a collective keeps its core.
    cores = None
    if on is None:
        first = str(min(os.sched_getaffinity(0)))
        runs = [measure("pingpong", sizes[:1], f" on one core {repeat + 1}/{repeats}", first) for repeat in range(repeats)]
        one_core = float(np.median([loggp.measured_round_trips(run)["measured_ns"].iloc[0] for run in runs]))
        barriers = [measure("barrier", [0], f" on one core {repeat + 1}/{repeats}", first, loggp.BARRIERS)
                    for repeat in range(repeats)]
        barrier = float(np.median([run.results["t_p50_ns"].iloc[0] for run in barriers]))
        cores = loggp.shared_cores(len(os.sched_getaffinity(0)), one_core, float(measured["measured_ns"].iloc[0]),
                                   fit.eager.L, sizes[0], barrier)

    # A collective's cost beyond its messages: 2-rank Allgathers against the Sendrecv that is their
    # exchange, the ranks placed as the check's were (unpinned).
    entry = loggp.collective_entry([measure("collective", [1], f" {repeat + 1}/{repeats}", times=loggp.COLLECTIVE_CALLS)
                                    for repeat in range(repeats)])

    table = loggp.compare(fit, check)
    loggp.write_machine(loggp.machine_toml(fit, table, parameters.meta, args.name, cores, entry), target)
    engine = loggp.engine_round_trips(target, table["bytes"].tolist())
    if engine is not None:  # the real check: the simulator reading the file we wrote
        table = loggp.compare(fit, check, engine)
        loggp.write_machine(loggp.machine_toml(fit, table, parameters.meta, args.name, cores, entry), target)
    write_run(parameters, stem.with_suffix(".loggp.parquet"))
    write_run(check, stem.with_suffix(".pingpong.parquet"))
    plot = plot_fit(table, stem.with_suffix(".png"))

    console.print(fit_table(table))
    for label, costs in (("eager", fit.eager), (f"above S={fit.S} B", fit.rendezvous)):
        if costs is not None:
            console.print(f"{label}: L={costs.L:.1f} ns  o={costs.o:.1f} ns  g={costs.g:.1f} ns  "
                          f"G={costs.G:.4f} ns/B  O={costs.O:.4f} ns/B")
    console.print(f"measured at the smallest size: o_s={fit.o_s:.1f} ns  o_r={fit.o_r:.1f} ns")
    if cores is not None:
        console.print(f"shared cores: {cores.per_node}, a switch between ranks {cores.switch_ns:.1f} ns "
                      f"({cores.bytes} B round trip {cores.one_core_ns:.1f} ns on one core, "
                      f"{cores.own_cores_ns:.1f} ns a core each), a quantum of {cores.quantum_ns / 1e6:.3f} ms "
                      f"(a barrier on one core {cores.barrier_ns / 1e6:.3f} ms)")
    console.print(f"entering a collective: {entry.entry_ns:.1f} ns beyond its messages (a {entry.bytes} B "
                  "Allgather of 2 ranks against its Sendrecv)")
    worst = float(table["error_pct"].abs().max())
    checked_by = "contend sim" if engine is not None else "the closed form (engine not built)"
    verdict = "within" if worst <= 100 * loggp.TOLERANCE else "NOT within"
    console.print(f"predictions by {checked_by} are {verdict} 10% of the measured ping-pong (worst {worst:.1f}%)")
    for note in loggp.fit_notes(fit, table):
        console.print(f"note: {escape(note)}")
    console.print(f"wrote {target}, {stem.with_suffix('.loggp.parquet')}, "
                  f"{stem.with_suffix('.pingpong.parquet')}, {plot}")
    # The file is written either way (the best fit of these measurements, [fit] says how far off); a
    # missed check is still a failure a script must see: exit 1 (bad input is 2).
    return 0 if worst <= 100 * loggp.TOLERANCE else 1



def run_nimc(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from contend.atomic import output_directory
    from contend.native.bench import nimc
    from contend.native.bench.sizes import parse_sizes
    from contend.native.bench.tables import nimc_table
    from contend.report.nimc import slowdown_figure

    sources = nimc.parse_sources(args.sources)
    rates = nimc.parse_rates(args.rates)
    mitigations = nimc.parse_mitigations(args.mitigations)
    if mitigations != ["none"] and "rma" not in sources:
        raise UserError("--mitigations: they act on the rma source only; add rma to --sources")
    if ("throttle" in mitigations) != (args.memory_throttle is not None):
        raise UserError("--memory-throttle: give it with the throttle mitigation, and only then")
    memory_throttle = None
    if args.memory_throttle is not None:
        bandwidth = parse_bandwidth(args.memory_throttle, "--memory-throttle")
        memory_throttle = max(1, round(bandwidth))
    repeats = parse_count(args.repeats, "--repeats", minimum=1, maximum=1000)
    duration = bounded_number(args.duration, "--duration", 0.05, 3600)
    interval = bounded_number(args.interval, "--interval", 0.001, 60)
    if interval > duration:
        raise UserError(f"--interval ({interval:g} s) is longer than --duration ({duration:g} s)")
    period = bounded_number(args.period, "--period", 0, 3600)
    on = bounded_number(args.on, "--on", 0.001, 3600) if args.on is not None else period / 2
    if period > 0 and on > period:
        raise UserError(f"--on ({on:g} s) is longer than --period ({period:g} s)")
    if 0 < period < 2 * interval:
        raise UserError(f"--period ({period:g} s) must hold at least two samples (--interval {interval:g} s)")
    chunk, region = parse_sizes(args.chunk)[0], parse_sizes(args.region)[0]
    if chunk < 64 or region % chunk or region > 16 << 30:
        raise UserError(f"--chunk {chunk} must be at least 64 bytes and divide --region {region} (at most 16GiB)")
    seed = parse_count(args.seed, "--seed", minimum=0, maximum=2**31 - 1)
    try:
        nice = int(args.nice)
    except ValueError:
        nice = 99
    if not -20 <= nice <= 19:
        raise UserError(f"--nice: expected an integer from -20 to 19, got {args.nice!r}")
    directory = output_directory(args.output, "-o")
    plans = nimc.plan_sweep(sources, rates, repeats, seed, mitigations)
    settings = {"sources": sources, "rates_Bps": rates, "mitigations": mitigations,
                "memory_throttle_Bps": memory_throttle, "repeats": repeats, "duration_s": duration,
                "interval_s": interval, "chunk": chunk, "region": region, "seed": seed, "nice": nice, "period_s": period, "on_s": on}

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("nimc", total=len(plans))

        def advance(done: int, total: int, plan) -> None:
            bar.update(task, completed=done, description=f"nimc round {plan.round + 1}/{repeats}: {plan.label}")

        samples, summaries = nimc.sweep(plans, duration_s=duration, interval_s=interval, chunk=chunk,
                                        region=region, nice=nice, period_s=period, on_s=on,
                                        memory_throttle_Bps=memory_throttle, progress=advance)
    table = nimc.slowdown_table(summaries)
    paths = nimc.write_sweep(directory, samples, summaries, table, settings)
    plot = directory / "slowdown.png"
    slowdown_figure(plot, table, f"triad slowdown under injected traffic ({repeats} rounds, {duration:g} s runs)",
                    paired=period > 0)

    console = Console()
    if args.json:
        print(json.dumps(table.to_dict(orient="records"), default=float))
    else:
        console.print(nimc_table(table, period, on))
    first = summaries[0]
    console.print(f"nice {nice}: {'granted' if first['nice_granted'] == 'yes' else 'not granted: ' + str(first['nice_granted'])}")
    console.print(f"counters: software {first['software_counters']}; hardware: {first['hardware_counters']}"
                  + ("" if first["hardware_counters"] == "perf_event_open" else " (this machine has none; not used)"))
    console.print(f"wrote {paths['samples']} ({len(samples)} samples), {paths['summary']}, {paths['slowdown']}, "
                  f"{directory / 'runs'}/, {plot}")
    bad = [s["label"] for s in summaries if not s["verified"]]
    for label in bad:
        console.print(f"[bold red]not verified:[/] {label}: triad or landed bytes did not check")
    return 1 if bad else 0
