"""Terminal tables with rich: the summary of one simulation and generic row tables for the demo (each a
``contend.report.terminal.Table``, which never cuts a number)."""

from __future__ import annotations

from typing import Any, Sequence

from rich.markup import escape

from contend.report.terminal import Table

from contend.simulation.result import SimulationResult

# Up to this many ranks, the summary lists every rank's finish time.
PER_RANK_LIMIT = 16


def format_time(ns: int | float) -> str:
    """A time in ns with thousands separators and, above 1 us, a readable unit.

    >>> format_time(18000), format_time(1.5), format_time(2377278)
    ('18,000 ns (18 us)', '1.5 ns', '2,377,278 ns (2.377 ms)')
    """
    exact = f"{ns:,} ns" if isinstance(ns, int) else f"{ns:,.3f}".rstrip("0").rstrip(".") + " ns"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{exact} ({ns / scale:.4g} {unit})"
    return exact


def describe_workload(workload: dict[str, Any]) -> str:
    if "schedule" in workload:
        return f"GOAL schedule {workload['schedule']}"
    if "trace" in workload:
        return f"trace {workload['trace']}"
    if "records" in workload:
        return f"records {workload['records']}"
    text = f"{workload['collective']}, {workload['ranks']:,} ranks, {workload['bytes']:,} bytes"
    if workload.get("root"):
        text += f", root {workload['root']}"
    if workload.get("seed"):
        text += f", seed {workload['seed']}"
    return text


def describe_params(values: dict[str, Any]) -> str:
    """The LogGOPS parameters in ns (``SimulationResult.params``) on one line."""
    text = (f"L={values['L']} o={values['o']} g={values['g']} G={values['G']} O={values['O']} "
            f"(ns, ns/byte) S={values['S']} bytes")
    above = values.get("rendezvous")
    if above:
        text += (f"; above S: L={above['L']} o={above['o']} g={above['g']} G={above['G']} "
                 f"O={above['O']}")
    return text


def describe_network(network: dict[str, Any]) -> str:
    """The topology and its bandwidths, e.g. "torus 8x8x16, links 425 MB/s, injection 425 MB/s"."""
    from contend.machine.topology import topology_sizes

    kind = network["topology"]
    if "dims" in network:
        shape = "x".join(str(d) for d in network["dims"])
    else:
        size_keys, optional_keys, _ = topology_sizes()
        keys = size_keys[kind] + optional_keys.get(kind, ())
        shape = " ".join(f"{key}={network[key]}" for key in keys)
    buckets = (f", token buckets of {network['burst_bytes']:,} B at up to {network['peak_bandwidth'] / 1e6:,.4g} MB/s"
               if "burst_bytes" in network else "")
    return (f"{kind} {shape}, links {network['link_bandwidth'] / 1e6:,.4g} MB/s, injection "
            f"{network['injection_bandwidth'] / 1e6:,.4g} MB/s{buckets}, {network['ranks_per_node']} rank(s) per node")


def describe_busiest_link(link: dict[str, Any] | None) -> str:
    """One line about the link that carried the most bytes."""
    if link is None:
        return "no bytes crossed the network"
    return (f"link {link['link']} ({link['class']}, {link['from']} -> {link['to']}): {link['bytes']:,} bytes, "
            f"busy {format_time(link['busy_ns']).split(' (')[0]} ({link['utilisation']:.0%} of the makespan), "
            f"at most {link['peak_flows']} flows at once")


def describe_nic(node: dict[str, Any] | None) -> str:
    """The NIC congestion model: its size classes and the ranks sharing a NIC, or "off"."""
    if not node or not node.get("nic"):
        return "off (the machine has no \\[nic] curves)"
    classes = len(node["nic"])
    return f"congestion curves ({classes} size class{'es' if classes > 1 else ''}), {node['ranks_per_node']} ranks per NIC"


def describe_throttle(node: dict[str, Any] | None, waits: int) -> str:
    """The admission-control policy with its settings (``node`` in ns, as ``SimulationResult.params`` has it), or "off"."""
    policy = (node or {}).get("policy")
    if not policy:
        return "off"
    kind = policy["kind"]
    if kind == "rate":
        text = f"rate, a send at most every {format_time(policy['gap'])} per rank"
    else:
        text = f"{kind}, " + (f"{policy['servers']} servers per node, " if kind == "proxy" else "")
        text += f"{policy['tokens']} tokens per node" if "tokens" in policy else "no token pool"
        if policy.get("size_per_token"):
            text += f" ({policy['size_per_token']:,} bytes per token)"
        if policy.get("thresholds"):
            text += f", thresholds for {len(policy['thresholds'])} size class(es)"
    return f"{text}; {waits:,} sends waited"


def describe_cores(node: dict[str, Any] | None, ranks: int) -> str:
    """The cores a node's ranks share (``node`` in ns, as ``SimulationResult.params`` has it), or "off"."""
    cores = (node or {}).get("cores")
    if not cores:
        return "a core per rank (the machine has no \\[cores] table)"
    per_node = ranks if cores.get("one_host") else min(node["ranks_per_node"], ranks)
    text = f"{cores['per_node']:,} for all {ranks:,} ranks (one host)" if cores.get("one_host") else \
        f"{cores['per_node']:,} per node of {per_node:,} ranks"
    pinned = cores.get("placement")
    if per_node <= cores["per_node"] and not pinned:
        return text + ": a core per rank"
    readable = [format_time(cores[key]).split(" (")[-1].rstrip(")") for key in ("switch", "quantum")]
    placed = f", {len(pinned):,} of them pinned to a core each" if pinned else ""
    return f"{text}{placed}; switch {readable[0]}, quantum {readable[1]}"


def describe_memory(memory: dict[str, Any] | None) -> str:
    """The NiMC memory model's node and its mitigations, or "off"."""
    if memory is None:
        return "off (the machine has no \\[memory] table)"
    mitigations = [f"throttle {memory['throttle'] / 1e9:g} GB/s"] if memory.get("throttle") else []
    mitigations += ["reserved core"] if memory.get("reserve_core") else []
    return (f"{memory['nic']} NIC, {memory['compute_bandwidth'] / 1e9:g} of {memory['bandwidth'] / 1e9:g} GB/s "
            f"for compute, {memory['ranks_per_node']} ranks per node" + (f", {', '.join(mitigations)}" if mitigations else ""))


def result_table(result: SimulationResult, title: str = "simulation",
                 outputs: dict[str, str | None] | None = None) -> Table:
    """Makespan, per-rank spread, counts and engine speed of one simulation; which models were on, with
    their settings; and the files written (``outputs``: what each was asked as, e.g. {"records": path})."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value")
    stats = result.rank_statistics()
    params = result.params
    table.add_row("workload", describe_workload(dict(result.workload)))
    table.add_row("parameters", describe_params(result.params))
    table.add_row("makespan", format_time(result.makespan))
    table.add_row("rank finish min / median / max",
                  " / ".join(format_time(stats[k]).split(" (")[0] for k in ("min", "median", "max")))
    table.add_row("ranks / ops / messages", f"{result.num_ranks:,} / {result.ops:,} / {result.messages:,}")
    speed = result.events / result.wall_seconds if result.wall_seconds > 0 else float("inf")
    loop = "time order" if not result.windowed else "windows" + (f" on {result.threads} threads" if result.threads > 1 else "")
    table.add_row("events", f"{result.events:,} in {result.wall_seconds:.3f} s ({speed / 1e6:,.2f} M events/s, {loop})")
    network = params.get("network")
    table.add_row("network", describe_network(network) if network else "off (the machine has no \\[topology])")
    if network is not None:
        table.add_row("busiest link", describe_busiest_link(result.busiest_link()))
    table.add_row("NIC", describe_nic(params.get("node")))
    table.add_row("throttle", describe_throttle(params.get("node"), result.admission_waits))
    table.add_row("cores", describe_cores(params.get("node"), result.num_ranks))
    noise = result.engine_params.get("noise")
    if noise is not None:
        from contend.noise.settings import NoiseSettings

        table.add_row("noise", NoiseSettings.from_engine(noise).describe())
        table.add_row("detour time charged", f"{format_time(result.noise_charged).split(' (')[0]} over all ranks")
    else:
        table.add_row("noise", "off")
    table.add_row("memory", describe_memory(params.get("memory")))
    if result.memory is not None:
        table.add_row("memory writes", f"{sum(result.memory['bytes_written']):,} B into nodes; calcs delayed "
                                       f"{format_time(result.memory['calc_delay']).split(' (')[0]} in all")
    if result.deadlock is not None:
        table.add_row("deadlock", f"[red]{result.deadlock.count:,} blocked ops on ranks "
                                  f"{_rank_list(result.deadlock.ranks())}[/red]")
    if result.num_ranks <= PER_RANK_LIMIT:
        table.add_row("finish time per rank", " ".join(str(t) for t in result.ranks.tolist()))
    if outputs is not None:
        written = [f"{kind} {escape(path)}" for kind, path in outputs.items() if path is not None]
        table.add_row("files written", "; ".join(written) or "none")
    return table


def rows_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    """A plain table of already formatted rows."""
    table = Table(title=title, title_justify="left")
    first = rows[0] if rows else [None] * len(columns)
    for column, sample in zip(columns, first):
        numeric = isinstance(sample, (int, float)) and not isinstance(sample, bool)
        table.add_column(column, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    return table


def _cell(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


def _rank_list(ranks: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(r) for r in ranks[:limit])
    return shown + (f", ... ({len(ranks)} ranks)" if len(ranks) > limit else "")
