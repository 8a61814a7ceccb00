"""``contend diagnose``: contention of each message, initiator vs target, by call site and target rank."""

from __future__ import annotations

import argparse
import contextlib
import json
import os

from contend.atomic import atomic_path, check_directory, check_writable
from contend.errors import UserError
from contend.machine.quantities import parse_count

# Table rows and plot bins beyond these are no longer read by anyone (diagnose() bounds ranks x bins too).
MAX_TOP, MAX_BINS = 10**6, 10**5


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "diagnose",
        help="attribute message contention to call sites and targets",
        description="Diagnose contention in per-message records (from `contend sim --records`, or a "
        "real trace from `contend trace`): each operation's time beyond its ideal latency (LogGOPS and "
        "network parameters from the file, or --machine), classed as initiator or target contention, by "
        "call site and target rank (docs/models.md, \"Diagnosis\"). Exit code 2 for bad input.",
    )
    parser.add_argument("records", metavar="FILE.parquet|DIR",
                        help="records written by contend sim --records, or contend trace (its DIR or records file)")
    parser.add_argument("--machine", metavar="NAME|FILE.toml",
                        help="ideal latencies from this machine instead of the parameters in the file")
    parser.add_argument("--sites", metavar="FILE.json",
                        help="name call sites of engine records by tag (and pair get requests with their "
                        "replies): a JSON list as the contend.sites metadata (docs/formats.md); replaces it")
    parser.add_argument("--top", default="10", metavar="N",
                        help=f"rows in the call-site and target tables (default 10, at most {MAX_TOP})")
    parser.add_argument("--bins", default="20", metavar="N",
                        help=f"time bins of the hot-target plot (default 20, at most {MAX_BINS}; ranks x bins at "
                             "most 2^27)")
    parser.add_argument("--json", metavar="FILE", help="write the diagnosis as JSON")
    parser.add_argument("--html", metavar="DIR", help="write an HTML report with plots into DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contend.analysis.diagnose import diagnose
    from contend.analysis.diagnose_input import load_records

    args.top = parse_count(args.top, "--top", minimum=1, maximum=MAX_TOP)
    args.bins = parse_count(args.bins, "--bins", minimum=1, maximum=MAX_BINS)
    if os.path.isdir(args.records):  # a `contend trace` directory: its records.parquet
        inside = os.path.join(args.records, "records.parquet")
        if not os.path.isfile(inside):
            raise UserError(f"{args.records}: a directory without records.parquet (contend trace convert "
                            f"{args.records} makes it from the rank files)")
        args.records = inside
    if not os.path.isfile(args.records):
        raise UserError(f"{args.records}: no such records file")
    if args.json is not None:
        check_writable(args.json, "--json")
    if args.html is not None:
        check_directory(args.html, "--html")
    loaded = load_records(args.records)
    metadata = loaded.metadata
    located = contextlib.nullcontext()
    if args.machine is not None:
        from contend.machine.file import load_machine, located_engine_errors, loggops_params
        from contend.simulation.result import parameters_ns

        machine = load_machine(args.machine)
        params = parameters_ns(loggops_params(machine))
        located = located_engine_errors(machine)
    elif isinstance(metadata.get("params"), dict):
        params = metadata["params"]
    else:
        raise UserError(f"{args.records}: no LogGOPS parameters in the file (contend.params); give --machine")
    if args.sites is not None:
        if loaded.source != "engine":
            raise UserError("--sites: trace records name their call sites themselves (call_site column)")
        sites = _sites(_read_json(args.sites), args.sites)
    else:
        sites = _sites(metadata.get("sites"), args.records) if loaded.source == "engine" else None
    with located:
        diagnosis = diagnose(loaded.frame, params, loaded.num_ranks, bins=args.bins, source=loaded.source,
                             sites=sites)
    import sys

    for warning in diagnosis.warnings:
        print(f"warning: {args.records}: {warning}", file=sys.stderr)

    if args.json is not None:
        with atomic_path(args.json) as temporary:
            temporary.write_text(json.dumps(diagnosis.to_dict(top=args.top)) + "\n", encoding="utf-8")
    if args.html is not None:
        from contend.report.diagnosis import write_html

        write_html(diagnosis, args.html, os.path.basename(args.records), top=args.top,
                   critical_path=_critical_path(metadata.get("critical_path"), args.records))
    from rich.console import Console

    from contend.report.diagnosis import summary_tables

    Console().print(*summary_tables(diagnosis, top=args.top))
    return 0


def _critical_path(data, path: str):
    """The ``contend.critical_path`` of records written by ``contend sim --critical-path``, if any."""
    if data is None:
        return None
    from contend.simulation.critical_path import CriticalPath

    try:
        return CriticalPath.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise UserError(f"{path}: contend.critical_path is not a critical path (docs/formats.md)") from None


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise UserError(f"{path}: not JSON ({exc})") from None


def _sites(sites, path: str):
    """``contend.sites`` of engine records: a list of {tag, site, kind?, reply_tag?} (docs/formats.md)."""
    if sites is None:
        return None
    if not isinstance(sites, list) or not all(isinstance(s, dict) and isinstance(s.get("tag"), int)
                                              and isinstance(s.get("site"), str) for s in sites):
        raise UserError(f"{path}: contend.sites must be a list of {{tag: int, site: str}} objects")
    for site in sites:
        if site.get("kind") == "get" and not isinstance(site.get("reply_tag"), int):
            raise UserError(f"{path}: contend.sites entry {site['site']!r} is a get without an int reply_tag")
    return sites
