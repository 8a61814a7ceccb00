"""Admission control in the engine: the ``[throttle]`` table of a machine file and ``contend sim
--throttle``, validated into the engine's ``params["node"]["policy"]``; and the configuration file of
the native throttle library (docs/formats.md), which ``contend tune`` writes.

Keys shared with the native library's configuration keep its names and meaning (policy, tokens,
size_per_token, gap_ns, stall_ms, servers); the engine adds Algorithm 1 of Luo et al. 2012
thresholds::

    [throttle]
    policy = "token"        # token | rate | proxy | adaptive | none
    tokens = 20             # token (and proxy, behind the servers): tokens per node; adaptive: the
                            #   most the limit may reach (default 1000000)
    size_per_token = 0      # a message takes ceil(bytes / size_per_token) tokens; 0: one per message
    gap_ns = 2000           # rate: least time between two injections of a task
    servers = 8             # proxy: servers per node
    stall_ms = 100          # token, proxy: native library only (the engine has no stall escape)
    handoff_ns = 0          # token, adaptive (engine only): how long a rank waiting in line takes to
                            #   see its tokens once they are back (the library's poll loop)
    ranks_per_node = 32     # when neither [topology] nor [nic] gives it

    [[throttle.class]]      # Algorithm 1 thresholds for messages of at most up_to bytes (the last
    up_to = "4KiB"          #   class also takes every larger message)
    cct = 20                # concurrency congestion threshold: cores active at once
    nrct = 32               # node rate congestion threshold: messages in flight per node
    crct = [[1, 32], [20, 1]]   # [active cores, messages in flight per core]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from contend.atomic import atomic_path
from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.quantities import parse_bytes, parse_count
from contend.machine.size_classes import MAX_BYTES, class_places, sorted_by_size
from contend.machine.tomlfile import Where, did_you_mean, reject_unknown_keys

POLICIES = ("token", "rate", "proxy", "adaptive", "none")
KEYS = ("policy", "tokens", "size_per_token", "gap_ns", "servers", "stall_ms", "handoff_ns", "ranks_per_node",
        "class")
APPLIES = {"token": {"tokens", "size_per_token", "stall_ms", "handoff_ns", "class"}, "rate": {"gap_ns"},
           "proxy": {"servers", "tokens", "size_per_token", "stall_ms", "class"},
           "adaptive": {"tokens", "stall_ms", "handoff_ns"}, "none": set()}
CLASS_KEYS = ("up_to", "cct", "nrct", "crct")


def policy_params(table: Mapping[str, Any], where: Where, places: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The engine's policy from a ``[throttle]`` table (None for policy "none"); the engine's
    AdmissionSpec judges the values. ``where`` locates its keys ("file:line: [throttle] key") for
    errors, ``places`` receives where the engine's keys of its classes are written."""
    if not isinstance(table, dict):
        raise UserError(f"{where('')}: must be a table")
    reject_unknown_keys(table, KEYS, where)
    if "policy" not in table:
        raise UserError(f"{where('')}: needs policy ({', '.join(POLICIES)})")
    policy = table["policy"]
    if policy not in POLICIES:
        raise UserError(f"{where('policy')}: unknown policy {policy!r}{did_you_mean(str(policy), POLICIES)}; "
                        f"known: {', '.join(POLICIES)}")
    for key in table:
        if key not in APPLIES[policy] | {"policy", "ranks_per_node"}:
            raise UserError(f"{where(key)}: {key} does not apply to policy {policy!r}")
    if policy == "none":
        return None
    if policy == "rate":
        if "gap_ns" not in table:
            raise UserError(f"{where('')}: policy 'rate' needs gap_ns")
        return {"kind": "rate", "gap": _count(table, "gap_ns", where, below=2**64 // 1000) * 1000}
    out: dict[str, Any] = {"kind": policy}
    if "handoff_ns" in table:
        out["handoff"] = _count(table, "handoff_ns", where, below=2**64 // 1000) * 1000
    if policy == "adaptive":  # docs/models.md "Adaptive limit": the rule's constants need no setting
        return {**out, **({"tokens": _count(table, "tokens", where)} if "tokens" in table else {})}
    for key in ("tokens", "size_per_token"):
        if key in table:
            out[key] = _count(table, key, where)
    if "class" in table:
        out["thresholds"] = _thresholds(table["class"], where, {} if places is None else places)
    if policy == "proxy":
        if "servers" not in table:
            raise UserError(f"{where('')}: policy 'proxy' needs servers")
        out["servers"] = _count(table, "servers", where, below=2**32)
    return out


def _thresholds(classes: Any, where: Where, places: dict[str, str]) -> list[dict[str, Any]]:
    if not isinstance(classes, list) or not classes or not all(isinstance(entry, dict) for entry in classes):
        raise UserError(f"{where('class')}: expected [[throttle.class]] tables, got {classes!r}")
    out, entries = [], []
    for number, entry in enumerate(classes):
        at = where.entry("class", number)
        reject_unknown_keys(entry, CLASS_KEYS, at)
        for key in ("cct", "nrct", "crct"):
            if key not in entry:
                raise UserError(f"{at()}: needs {key}")
        crct = entry["crct"]
        if (not isinstance(crct, list)
                or not all(isinstance(p, list) and len(p) == 2 and all(_is_int(v, 0) and v < 2**32 for v in p)
                           for p in crct)):
            raise UserError(f"{at('crct')}: expected [[active cores, messages], ...], got {crct!r}")
        cls = {"up_to": parse_bytes(entry["up_to"], at("up_to")) if "up_to" in entry else MAX_BYTES,
               "cct": parse_count(entry["cct"], at("cct"), maximum=2**32 - 1),
               "nrct": parse_count(entry["nrct"], at("nrct"), maximum=2**32 - 1),
               "crct": crct}
        out.append(cls)
        entries.append(at)
    out, entries = sorted_by_size(out, entries, "throttle.class")
    places.update(class_places("throttle", entries, CLASS_KEYS))
    return out


def parse_spec(spec: str) -> dict[str, Any] | None:
    """``--throttle``: ``token:TOKENS[:SIZE_PER_TOKEN]``, ``rate:GAP`` (a time, bare numbers ns),
    ``proxy:SERVERS[:TOKENS]``, ``adaptive[:TOKENS]`` (TOKENS: the most its limit may reach) or ``none``.

    >>> parse_spec("token:20"), parse_spec("rate:2us"), parse_spec("proxy:8:16"), parse_spec("adaptive")
    ({'kind': 'token', 'tokens': 20}, {'kind': 'rate', 'gap': 2000000}, {'kind': 'proxy', 'servers': 8, 'tokens': 16}, {'kind': 'adaptive'})
    """
    where = f"--throttle {spec}"
    kind, *values = spec.split(":")
    if kind == "none" and not values:
        return None
    if kind == "token" and 1 <= len(values) <= 2:
        out = {"kind": "token", "tokens": parse_count(values[0], f"{where}: tokens")}
        if len(values) == 2:
            out["size_per_token"] = parse_bytes(values[1], f"{where}: size per token")
    elif kind == "rate" and len(values) == 1:
        with user_errors(f"{where}: gap"):
            out = {"kind": "rate", "gap": engine().parse_time(values[0])}
    elif kind == "proxy" and 1 <= len(values) <= 2:
        out = {"kind": "proxy", "servers": parse_count(values[0], f"{where}: servers", maximum=2**32 - 1)}
        if len(values) == 2:
            out["tokens"] = parse_count(values[1], f"{where}: tokens")
    elif kind == "adaptive" and len(values) <= 1:
        out = {"kind": "adaptive", **({"tokens": parse_count(values[0], f"{where}: tokens")} if values else {})}
    else:
        raise UserError(f"{where}: expected token:TOKENS[:SIZE_PER_TOKEN], rate:GAP, proxy:SERVERS[:TOKENS], "
                        "adaptive[:TOKENS] or none")
    # The engine's AdmissionSpec judges the values, here once rather than in every run.
    try:
        engine().check_specs({"node": {"ranks_per_node": 1, "policy": out}})
    except engine().SpecError as exc:
        raise UserError(f"{where}: {exc.key.rsplit('.', 1)[-1]}: {exc.problem}") from None
    return out


def library_values(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The native library's settings (``contend.native.libthrottle.settings``' keywords, policy first) for
    an engine policy as ``parse_spec`` gives it, so that a real run and its simulation apply one policy.
    Algorithm 1 thresholds are the engine's alone: refused.

    >>> library_values(parse_spec("rate:2us")), library_values(parse_spec("proxy:8:16"))
    ({'policy': 'rate', 'gap_ns': 2000}, {'policy': 'proxy', 'servers': 8, 'tokens': 16})
    """
    if policy.get("thresholds"):
        raise UserError("throttle: Algorithm 1 thresholds ([[throttle.class]]) exist in the engine only")
    out: dict[str, Any] = {"policy": policy["kind"]}
    for key in ("servers", "tokens", "size_per_token"):
        if key in policy:
            out[key] = policy[key]
    if "gap" in policy:
        out["gap_ns"] = -(-policy["gap"] // 1000)  # ps to the library's whole ns, never shorter
    return out


def native_config(tokens: int, size_per_token: int = 0, comment: str = "", memory_throttle: int = 0) -> str:
    """The text of a native throttle configuration (docs/formats.md) for the token policy, with the NiMC
    cap (bytes/s into each node) when given."""
    lines = ["# contend throttle configuration"] + [f"# {line}" for line in comment.splitlines()]
    lines += ["policy = token", f"tokens = {tokens}"]
    if size_per_token:
        lines.append(f"size_per_token = {size_per_token}")
    if memory_throttle:
        lines.append(f"memory_throttle = {memory_throttle}")
    return "\n".join(lines) + "\n"


def write_native_config(path: str | Path, text: str) -> None:
    with atomic_path(Path(path)) as temporary:
        temporary.write_text(text, encoding="utf-8")


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _count(table: Mapping[str, Any], key: str, where, below: int = 2**63) -> int:
    value = table[key]
    if not _is_int(value, 0) or value >= below:
        raise UserError(f"{where(key)}: expected an integer >= 0, got {value!r}")
    return value
