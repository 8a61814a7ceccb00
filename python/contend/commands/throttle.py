"""``contend throttle``: run an MPI program with libcontend-throttle.so in every rank, then say what it
did from its counters.

    contend throttle --policy token --tokens 8 -- mpiexec -n 4 ./prog
    contend throttle --policy rate --gap 2us -- mpiexec -n 4 ./prog
    contend throttle --policy proxy --servers 8 --tokens 16 -- mpiexec -n 4 ./prog
    contend throttle --policy adaptive -- mpiexec -n 4 ./prog
    contend throttle --config throttle.conf --stats counters.jsonl -- mpiexec -n 4 ./prog
    contend throttle --policy none --memory-throttle 1GB/s --reserve-core -- mpiexec -n 4 ./prog

The configuration is checked before anything is launched, by the library's own rules (``throttle-check``,
built from native/throttle/config.c). The library goes into the ranks only (``env LD_PRELOAD=...``
before each program of the launch command), not into mpiexec. A run where some rank wrote no counters
(the library did not load there, or the rank never reached MPI_Finalize) is an error, not a success.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

from contend.commands.options import launch_words, run_timeout
from contend.errors import UserError

# option -> the library's variable suffix (docs/formats.md, "Throttle configuration")
OPTIONS = {"--policy": "POLICY", "--tokens": "TOKENS", "--gap": "GAP_NS", "--size-per-token": "SIZE_PER_TOKEN",
           "--stall": "STALL_MS", "--ranks-per-node": "RANKS_PER_NODE", "--config": "CONFIG", "--stats": "STATS",
           "--servers": "SERVERS", "--memory-throttle": "MEMORY_THROTTLE", "--reserve-core": "RESERVE_CORE"}
PS_PER = {"GAP_NS": 1000, "STALL_MS": 10**9}  # times are parsed in ps; the library keeps ns and ms
UNIT = {"GAP_NS": "ns", "STALL_MS": "ms"}
STATS = "CONTEND_THROTTLE_STATS"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "throttle", help="run an MPI program under libcontend-throttle.so and report what it did",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run COMMAND with libcontend-throttle.so preloaded into every rank (node-wide token "
        "pools, a per-task injection gap, or proxy servers draining per-task queues, docs/measure.md "
        "\"Throttling\"), then print its counters: "
        "operations, tokens granted, waits, time waited, stall escapes.\n\n"
        "  contend throttle --policy token --tokens 8 -- mpiexec -n 4 ./prog\n"
        "  contend throttle --policy rate --gap 2us -- mpiexec -n 4 ./prog\n"
        "  contend throttle --policy proxy --servers 8 --tokens 16 -- mpiexec -n 4 ./prog\n"
        "  contend throttle --policy adaptive -- mpiexec -n 4 ./prog\n"
        "  contend throttle --config throttle.conf -- mpiexec -n 4 ./prog\n\n"
        "Options override the --config file's keys. Exit code: the program's if it failed; 2 for a bad "
        "configuration or when the library did not run in every rank.")
    parser.add_argument("--policy", metavar="token|rate|proxy|adaptive|none", help="token: a pool of tokens per "
                        "node; rate: a least gap between a task's injections; proxy: server slots per node drain the "
                        "tasks' queues round robin; adaptive: a pool whose limit follows the node's completion rate "
                        "(docs/models.md \"Adaptive limit\"); none: loaded, not throttling")
    parser.add_argument("--tokens", metavar="N", help="token: tokens in each node's pool; proxy: tokens behind the "
                        "servers (default none); adaptive: the most its limit may reach (default 1000000)")
    parser.add_argument("--servers", metavar="K", help="proxy: server slots per node, so at most K operations "
                        "of a node inject at once")
    parser.add_argument("--gap", metavar="T", help="rate: least time between two injections of a task "
                        "(e.g. 2us; a bare number is ns)")
    parser.add_argument("--size-per-token", metavar="BYTES", help="token, proxy: a message takes ceil(bytes / "
                        "BYTES) tokens (default: one per message)")
    parser.add_argument("--stall", metavar="T", help="token, proxy, adaptive: the head of the line takes its tokens "
                        "(or a slot) anyway after this long without one coming back (default 100ms)")
    parser.add_argument("--ranks-per-node", metavar="K", help="emulate nodes: ranks r with the same r / K "
                        "share a pool (default: one pool per host)")
    parser.add_argument("--memory-throttle", metavar="BW", help="NiMC mitigation (a), any policy: one-sided "
                        "traffic into each node at most BW (e.g. 1GB/s), split evenly among the other nodes, "
                        "shared by each node's ranks (docs/measure.md)")
    parser.add_argument("--reserve-core", action="store_const", const="1", help="NiMC mitigation (b), any "
                        "policy: pin the ranks away from one CPU of each host, left for MPI's progress")
    parser.add_argument("--config", metavar="FILE", help="the library's configuration file (docs/formats.md)")
    parser.add_argument("--stats", metavar="FILE", help="keep the per-rank counters (JSON lines) in FILE "
                        "(replaced); default: a temporary file")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--timeout", default="3600", metavar="S",
                        help="end the run after S seconds (default 3600, at most a week)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the MPI launch command")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contend.native import mpi

    command = launch_words(args.command)
    if not command:
        raise UserError("throttle: give the launch command after --, e.g. contend throttle --policy token "
                        "--tokens 8 -- mpiexec -n 4 ./prog")
    args.timeout = run_timeout(args.timeout)
    given = _given(args)
    library_mpi = mpi.launcher_mpi(command[0])
    starts = mpi.program_starts(command, library_mpi.flavor)
    library, checker = mpi.throttle_library(library_mpi), mpi.throttle_checker(library_mpi)
    if not (library.is_file() and checker.is_file()):
        hint = "" if library_mpi.origin != "launcher" else f"CONTEND_MPICC={library_mpi.mpicc} "
        raise UserError(f"throttle: {library} is not built for {library_mpi.mpicc}: run `{hint}contend native "
                        "build`")
    variables = _variables(given)
    settings = _check(checker, variables, given)  # before anything is written or launched
    with _stats_file(variables.get(STATS)) as stats:
        code = _launch(command, starts, library, {**variables, STATS: str(stats)}, args.timeout)
        rows = _counters(stats)
    if code != 0:
        print(f"contend: throttle: the command exited with code {code}", file=sys.stderr)
        return code
    _expect_every_rank(rows, stats if args.stats else None)
    _report(settings, rows, args.json)
    return 0


def _given(args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """variable suffix -> (option, the text given), for the options given."""
    out = {}
    for option, suffix in OPTIONS.items():
        text = getattr(args, option[2:].replace("-", "_"))
        if text is not None:
            out[suffix] = (option, text)
    return out


def _variables(given: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The library's variables for the options given, in its units (the ranges are its to check)."""
    from contend.native import libthrottle
    from contend.engine import engine, user_errors
    from contend.machine.quantities import parse_bandwidth, parse_bytes, parse_count

    out = {}
    for suffix, (option, text) in given.items():
        if suffix in PS_PER:
            with user_errors(option):
                ps = engine().parse_time(text)
            if ps % PS_PER[suffix]:
                raise UserError(f"{option} {text}: the library counts whole {UNIT[suffix]}")
            value = str(ps // PS_PER[suffix])
        elif suffix in ("TOKENS", "RANKS_PER_NODE", "SERVERS"):
            value = str(parse_count(text, option))
        elif suffix == "SIZE_PER_TOKEN":
            value = str(parse_bytes(text, option))
        elif suffix == "MEMORY_THROTTLE":
            bandwidth = parse_bandwidth(text, option)
            if bandwidth != int(bandwidth):
                raise UserError(f"{option} {text}: the library counts whole bytes per second")
            value = str(int(bandwidth))
        elif suffix in ("CONFIG", "STATS"):
            value = str(Path(text).absolute())  # the ranks may start elsewhere (-wdir)
        else:
            value = text
        out[libthrottle.PREFIX + suffix] = value
    return out


@contextlib.contextmanager
def _stats_file(path: str | None):
    """The counters file, empty: --stats (checked by the library's rules; emptied, as the library
    appends), or a temporary file removed afterwards."""
    if path is None:
        fd, name = tempfile.mkstemp(prefix="contend-throttle-", suffix=".jsonl")
        os.close(fd)
        try:
            yield Path(name)
        finally:
            os.unlink(name)
        return
    Path(path).write_bytes(b"")
    yield Path(path)


def _environment() -> dict[str, str]:
    """This environment without CONTEND_THROTTLE_*: the command's options are the whole configuration."""
    from contend.native import mpi, libthrottle

    return libthrottle.environment({mpi.LAUNCHER_MARK: str(os.getpid())})


def _check(checker: Path, variables: dict[str, str], given: dict[str, tuple[str, str]]) -> dict:
    """The settings in force by the library's own rules, or its reason as a UserError in our words."""
    from contend.native import libthrottle

    settings = libthrottle.check(checker, variables)
    if isinstance(settings, str):
        raise UserError(_in_our_words(settings, variables, given))
    return settings


def _in_our_words(message: str, variables: dict[str, str], given: dict[str, tuple[str, str]]) -> str:
    """The library's message with its variables named as this command's options."""
    from contend.native import libthrottle

    for suffix, option in ((s, o) for o, s in OPTIONS.items()):
        variable = libthrottle.PREFIX + suffix
        if suffix in given and variable in variables:
            text = given[suffix][1]
            shown = text if text.isprintable() else repr(text)
            message = message.replace(f"{variable}={variables[variable]}", f"{option} {shown}")
            if suffix in ("CONFIG", "STATS"):  # file:line: names the file as given, not made absolute
                message = message.replace(variables[variable] + ":", shown + ":")
        message = message.replace(f"{variable}=", f"{option} ").replace(variable, option)
    return message


def _launch(command: list[str], starts: list[int], library: Path, variables: dict[str, str],
            timeout_s: float) -> int:
    """Run the command with the library and its variables before each program; the exit code."""
    from contend.native import mpi, libthrottle

    argv, previous = [], 0
    for start in starts:
        end = command.index(":", start) if ":" in command[start:] else len(command)
        argv += command[previous:start] + libthrottle.preload(command[start:end], library, variables)
        previous = end
    argv += command[previous:]
    finished = mpi.run_streaming(argv, _environment(), lambda line: sys.stdout.write(line), timeout_s)
    if finished.stderr:
        sys.stderr.write(finished.stderr)
    if finished.timed_out:
        raise UserError(f"throttle: the command ran longer than --timeout {timeout_s:g} s and was ended")
    return finished.returncode


def _counters(stats: Path) -> list[dict]:
    from contend.native import libthrottle

    try:
        return libthrottle.read_stats(stats)
    except (ValueError, KeyError) as exc:
        raise UserError(f"throttle: {stats}: unreadable counters ({exc})") from None


def _expect_every_rank(rows: list[dict], kept: Path | None) -> None:
    """Every rank of the job wrote its line, once: else the library did not run everywhere."""
    where = f" (counters in {kept})" if kept else ""
    if not rows:
        raise UserError("throttle: the library ran in no rank: no rank wrote counters (is the program an MPI "
                        "program of this MPI, and does it reach MPI_Finalize?)" + where)
    size = rows[0].get("world_size")
    if size is None:
        raise UserError("throttle: the library's counters have no world_size: it was built from older "
                        "sources; run `contend native build`")
    ranks = [row["rank"] for row in rows]
    missing = sorted(set(range(size)) - set(ranks))
    if missing or len(ranks) != size or any(row.get("world_size") != size for row in rows):
        shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
        raise UserError(f"throttle: the library did not run in every rank: counters from {len(set(ranks))} of "
                        f"{size} ranks (none from rank {shown or '?'}: the library was not loaded there, "
                        "the rank did not reach MPI_Finalize, or it wrote its counters elsewhere)" + where)


COUNTERS = ("ops", "tokens", "waits", "wait_ns", "escapes")
COLUMNS = ("ops", "tokens", "waits", "waited", "escapes", "max in use")


def _report(settings: dict, rows: list[dict], as_json: bool) -> None:
    """The counters per rank (per node beyond 16 ranks) and in all, as a table that never cuts a
    number (contend.report.terminal)."""
    total = {key: sum(row[key] for row in rows) for key in COUNTERS}
    total["max_in_use"] = max(row["max_in_use"] for row in rows)
    if as_json:
        print(json.dumps({"settings": settings, "ranks": rows, "total": total}))
        return
    from rich import box
    from rich.console import Console
    from rich.markup import escape

    from contend.report.terminal import Table

    behind = f", {settings['tokens']} tokens behind them" if settings.get("tokens") else ""
    title = {"token": f"token policy, {settings['tokens']} tokens per node",
             "rate": f"rate policy, at least {_duration(settings['gap_ns'])} between injections",
             "proxy": f"proxy policy, {settings.get('servers')} servers per node{behind}",
             "none": "policy none (loaded, not throttling)"}.get(settings["policy"]) or _adaptive_title(rows)
    nodes = list(dict.fromkeys(row["node"] for row in rows))
    per_node = len(rows) > 16
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["node"] if per_node else str(row["rank"]), []).append(row)
    heading = f"throttle: {len(rows)} ranks" + ("" if per_node or len(nodes) > 1 else f" on {nodes[0]}")
    table = Table(title=escape(f"{heading}; {title}"), title_justify="left", box=box.SIMPLE_HEAD)
    labels = ["node", "ranks"] if per_node else ["rank", "node"] if len(nodes) > 1 else ["rank"]
    for name in (*labels, *COLUMNS):
        table.add_column(name, justify="left" if name == "node" else "right")
    for label, members in groups.items():
        cells = [label, str(len(members))] if per_node else [label, members[0]["node"]][:len(labels)]
        table.add_row(*(escape(c) for c in cells), *_cells(members))
    table.add_row("[bold]all[/bold]", *[""] * (len(labels) - 1), *_cells(rows))
    if total["escapes"]:
        table.caption = "escapes: the pool was exceeded (see the warnings above); use more tokens or --stall"
    Console().print(table)
    local = sum(row.get("ops_local", 0) for row in rows)
    if settings["policy"] != "none" and total["ops"] == 0 and local:
        print(f"all {local} operations stayed within their node, which the library leaves alone (docs/measure.md); "
              "on one host, --ranks-per-node K emulates nodes")
    for line in _proxy_lines(rows):
        print(line)
    for line in _mitigations(settings, rows):
        Console().print(escape(line))


def _mitigations(settings: dict, rows: list[dict]) -> list[str]:
    """What the NiMC mitigations did, one line each (none when not configured)."""
    lines = []
    if settings.get("memory_throttle"):
        paced = sum(row["target_ops"] for row in rows)
        moved = sum(row["target_bytes"] for row in rows)
        gaps = [row["target_min_slack_ns"] for row in rows if row["target_min_slack_ns"] is not None]
        lines.append(f"memory throttle: {settings['memory_throttle'] / 1e9:g} GB/s into each node "
                     f"({rows[0]['target_share_Bps'] / 1e9:g} GB/s from each other node); {paced} one-sided ops, "
                     f"{moved} bytes paced, {sum(row['target_waits'] for row in rows)} waits, "
                     f"{_duration(sum(row['target_wait_ns'] for row in rows))} waited"
                     + (f"; least slack between paced starts {_duration(min(gaps))}" if gaps else ""))
    if settings.get("reserve_core"):
        reserved = sorted({row["reserved_cpu"] for row in rows})
        cpus = sorted({row["cpus"] for row in rows})
        lines.append(f"reserve core: CPU {', '.join(map(str, reserved))} left for communication; the ranks ran "
                     f"on CPUs {'; '.join(cpus)}")
    return lines


def _cells(rows: list[dict]) -> list[str]:
    ops, tokens, waits, wait_ns, escapes = (sum(row[key] for row in rows) for key in COUNTERS)
    in_use = max(row["max_in_use"] for row in rows)
    # tokens and the pool mean nothing under the other policies
    token = rows[0]["policy"] in ("token", "adaptive") or (rows[0]["policy"] == "proxy" and rows[0]["pool_tokens"] > 0)
    return [str(ops), str(tokens) if token else "-", str(waits), _duration(wait_ns), str(escapes),
            str(in_use) if token else "-"]


def _proxy_lines(rows: list[dict]) -> list[str]:
    """Per node, what the proxy's servers did: operations per server slot, the most injecting at once,
    and how many a server issued for their owner (the rest were issued inline, holding a slot)."""
    lines = []
    for node in dict.fromkeys(row["node"] for row in rows if "proxy" in row):
        members = [row["proxy"] for row in rows if row["node"] == node]
        first = members[0]
        proxied, ops = sum(p["proxied"] for p in members), sum(p["proxied"] + p["inline"] for p in members)
        escapes = sum(p["escapes"] for p in members)
        lines += [f"proxy on {node}: {first['servers']} servers, at most {first['node_max_injecting']} injecting at "
                  f"once; operations per server: {', '.join(map(str, first['node_dispatches']))}",
                  f"  {proxied} of {ops} issued by a server for their owner, the rest inline; queue wait "
                  f"{_duration(sum(p['queue_wait_ns'] for p in members))} in all"
                  + (f"; {escapes} stall escapes past the servers" if escapes else "")]
    return lines


def _adaptive_title(rows: list[dict]) -> str:
    """The nodes' limits: where they went (each rank reports its node's controller)."""
    nodes = {row["node"]: row for row in rows}.values()
    low, high = min(r["limit_min"] for r in nodes), max(r["limit_max"] for r in nodes)
    final = sorted({r["limit_final"] for r in nodes})
    return (f"adaptive policy, the node's limit from {low} to {high} tokens, "
            f"{sum(r['limit_adjustments'] for r in nodes)} adjustments, final {', '.join(map(str, final))}")


def _duration(ns: int) -> str:
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            value = ns / scale
            return f"{value:.{2 if value < 10 else 1 if value < 100 else 0}f} {unit}"
    return f"{ns} ns"
