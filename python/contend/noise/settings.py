"""Noise settings: what ``[noise]`` in a machine file, ``contend sim --noise ...`` and
``contend.simulate(noise=...)`` say, checked, as the engine's parameters (docs/models.md, "Noise").

Three kinds of noise, each with a phase rule, a seed and whether it applies to per-byte CPU costs::

    [noise]
    kind = "periodic"        # one detour of `duration` every period
    frequency = "1000Hz"     # or period = "1ms"
    duration = "25us"
    phase = "independent"    # each rank its own seeded phase; "coscheduled" (all at 0) or a time
    seed = 0
    per_byte = false         # also stretch O, not only calc and o

    kind = "random"          # Poisson arrivals at `rate`; lengths fixed, exponential (mean) or
    rate = "1000Hz"          # uniform between min and max
    duration = "25us"
    distribution = "exponential"

    kind = "trace"           # replay traces of `contend noise measure`; rank r replays trace r mod n
    trace = "this-host.noise"   # or a list; relative to the machine file

On the command line: ``--noise periodic:1kHz:25us``, ``--noise random:1kHz:25us[:fixed|:exponential]``,
``--noise random:1kHz:10us-40us`` (uniform), ``--noise trace:FILE[,FILE...]``, ``--noise none``, with
``--noise-phase``, ``--noise-seed`` and ``--noise-per-byte``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.tomlfile import did_you_mean, reject_unknown_keys

KINDS = ("periodic", "random", "trace")
DISTRIBUTIONS = ("fixed", "exponential", "uniform")
INDEPENDENT, COSCHEDULED = "independent", "coscheduled"
PS_PER_S = 10**12
_KEYS = {
    "periodic": ("kind", "frequency", "period", "duration", "phase", "seed", "per_byte"),
    "random": ("kind", "rate", "duration", "distribution", "min", "max", "phase", "seed", "per_byte"),
    "trace": ("kind", "trace", "phase", "seed", "per_byte"),
}


@dataclass(frozen=True)
class NoiseSettings:
    """Checked noise settings; times in ps, rates in Hz. ``phase`` is ``"independent"`` or the
    co-scheduled phase in ps (all ranks share it). ``files`` are the traces of kind "trace"."""

    kind: str
    period: int | None = None
    duration: int | None = None
    rate: float | None = None
    distribution: str | None = None  # kind "random" only
    minimum: int | None = None
    maximum: int | None = None
    files: tuple[str, ...] = ()
    phase: str | int = INDEPENDENT
    seed: int = 0
    per_byte: bool = False

    def engine_params(self) -> dict[str, Any]:
        """The ``noise`` entry of the engine's parameters (see bindings ``noise_from``)."""
        common = {"kind": self.kind, "phase": None if self.phase == INDEPENDENT else self.phase,
                  "seed": self.seed, "per_byte": self.per_byte}
        if self.kind == "periodic":
            return {**common, "period": self.period, "duration": self.duration}
        if self.kind == "random":
            return {**common, "rate": self.rate, "distribution": self.distribution, "duration": self.duration,
                    "min": self.minimum, "max": self.maximum}
        return {**common, "files": list(self.files)}

    @classmethod
    def from_engine(cls, params: Mapping[str, Any]) -> "NoiseSettings":
        """The settings back from their ``engine_params()``."""
        phase = INDEPENDENT if params.get("phase") is None else params["phase"]
        common = {"phase": phase, "seed": params.get("seed", 0), "per_byte": params.get("per_byte", False)}
        if params["kind"] == "periodic":
            return cls("periodic", period=params["period"], duration=params["duration"], **common)
        if params["kind"] == "random":
            return cls("random", rate=params["rate"], distribution=params["distribution"], duration=params.get("duration"),
                       minimum=params.get("min"), maximum=params.get("max"), **common)
        return cls("trace", files=tuple(params["files"]), **common)

    def overhead(self) -> float | None:
        """Expected fraction of time in detours (None for traces: see the trace itself)."""
        if self.kind == "periodic":
            return self.duration / self.period
        if self.kind == "random":
            return self.rate * self._mean_duration() / PS_PER_S
        return None

    def _mean_duration(self) -> float:
        if self.distribution == "uniform":
            return (self.minimum + self.maximum) / 2
        return float(self.duration)

    def describe(self) -> str:
        """One line for tables: "periodic 1000 Hz x 25 us (2.5%), independent phases (seed 0)"."""
        if self.kind == "periodic":
            text = f"periodic {format_hz(PS_PER_S / self.period)} x {format_ps(self.duration)}"
        elif self.kind == "random":
            lengths = (f"{format_ps(self.minimum)}-{format_ps(self.maximum)} uniform" if self.distribution == "uniform"
                       else f"{format_ps(self.duration)} {self.distribution}")
            text = f"random {format_hz(self.rate)}, {lengths}"
        else:
            text = "trace " + ", ".join(os.path.basename(f) for f in self.files)
        overhead = self.overhead()
        if overhead is not None:
            text += f" ({100 * overhead:.3g}%)"
        if self.phase == INDEPENDENT:
            text += f", independent phases (seed {self.seed})"
        else:
            text += f", co-scheduled at phase {format_ps(self.phase)}"
        return text + (", on O too" if self.per_byte else "")

    def to_json(self) -> dict[str, Any]:
        """The settings in ns and Hz, as ``contend sim --json`` shows them."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "periodic":
            out.update(frequency_hz=PS_PER_S / self.period, period_ns=self.period / 1000, duration_ns=self.duration / 1000)
        elif self.kind == "random":
            out.update(rate_hz=self.rate, distribution=self.distribution)
            if self.distribution == "uniform":
                out.update(min_ns=self.minimum / 1000, max_ns=self.maximum / 1000)
            else:
                out.update(duration_ns=self.duration / 1000)
        else:
            out.update(files=list(self.files))
        out.update(phase=self.phase if self.phase == INDEPENDENT else {"coscheduled_ns": self.phase / 1000},
                   seed=self.seed, per_byte=self.per_byte, overhead=self.overhead())
        return out


def format_ps(ps: float) -> str:
    """A duration for people, as the engine's messages write it: "25 us", "2.5 ms", "800 ns".

    >>> format_ps(25_000_000), format_ps(2_500_000_000), format_ps(800_000), format_ps(0)
    ('25 us', '2.5 ms', '800 ns', '0 ns')
    """
    return engine().format_time(float(ps))


def format_hz(hz: float) -> str:
    """A frequency for people, as the engine's messages write it.

    >>> format_hz(1000.0), format_hz(2.5)
    ('1000 Hz', '2.5 Hz')
    """
    return engine().format_hz(float(hz))


def parse_frequency(text: Any, where: str) -> float:
    """A frequency in Hz: ``1000Hz``, ``1kHz``, ``10 Hz``, ``2.5`` (the engine's grammar).

    >>> parse_frequency("1kHz", "rate"), parse_frequency(10, "rate")
    (1000.0, 10.0)
    """
    with user_errors(where):
        return engine().parse_frequency(_frequency_text(text, where))


def _frequency_text(text: Any, where: str) -> str:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UserError(f"{where}: expected a frequency such as 1000Hz or 1kHz, got {text!r}")
    return str(text)


def _time_text(text: Any, where: str) -> str:
    """A table's time value as the engine's text (floats to its 1 ps resolution)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UserError(f"{where}: expected a time such as 25us, got {text!r}")
    return f"{text:.3f}" if isinstance(text, float) else str(text)


def parse_duration(text: Any, where: str) -> int:
    """A time with a unit (``25us``; bare numbers are ns), in ps; positive."""
    value = _time_text(text, where)
    with user_errors(where):
        return engine().parse_noise_duration(value)


def _period(frequency: Any, where: str) -> int:
    """The period of a frequency in ps, within the engine's range of times."""
    with user_errors(where):
        return engine().parse_period(_frequency_text(frequency, where))


def checked(settings: NoiseSettings, where: Callable[[str], str]) -> NoiseSettings:
    """``settings`` once the engine's model accepts them: its rules (a duration shorter than the
    period, at most 50% of the time in detours, no phase time for random noise) live there, in
    engine/src/noise; ``where(key)`` names the place a key came from in errors."""
    try:
        engine().check_noise(settings.engine_params())
    except engine().SpecError as exc:  # its key is the [noise] table's: noise.<key>
        raise UserError(f"{where(exc.key.partition('.')[2])}: {exc.problem}") from None
    return settings


def parse_phase(text: Any, where: str) -> str | int:
    """``independent``, ``coscheduled`` (phase 0) or a time: all ranks co-scheduled at that phase."""
    if isinstance(text, str) and text.strip() in (INDEPENDENT, COSCHEDULED):
        return INDEPENDENT if text.strip() == INDEPENDENT else 0
    if isinstance(text, (str, int)) and not isinstance(text, bool):
        if str(text).strip().startswith("-"):
            raise UserError(f"{where}: must not be negative, got {text!r}")
        with user_errors(where):
            return engine().parse_time(str(text))
    raise UserError(f"{where}: expected independent, coscheduled or a time, got {text!r}")


def _seed(value: Any, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise UserError(f"{where}: expected a non-negative integer, got {value!r}")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{where}: expected true or false, got {value!r}")
    return value


def from_table(table: Mapping[str, Any], where: Callable[[str], str], base: Path | None = None) -> NoiseSettings | None:
    """Settings from a ``[noise]`` table (or the same keys as a dict); ``where(key)`` names a key in
    errors (e.g. "m.toml:12: [noise] duration"); trace paths are relative to ``base``. None for
    ``kind = "none"``."""
    if not isinstance(table, Mapping):
        raise UserError(f"{where('')}: must be a table")
    # Keys of no kind first: a misspelt kind is reported as such, not as a missing one.
    reject_unknown_keys(table, tuple(dict.fromkeys(k for keys in _KEYS.values() for k in keys)), where)
    if "kind" not in table:
        raise UserError(f"{where('')}: needs kind ({', '.join(KINDS)} or none)")
    kind = table["kind"]
    if kind == "none":
        reject_unknown_keys(table, ("kind",), where, "key for kind none")
        return None
    if kind not in KINDS:
        raise UserError(f"{where('kind')}: expected one of {', '.join(KINDS)}, none; got {kind!r}"
                        f"{did_you_mean(str(kind), KINDS)}")
    reject_unknown_keys(table, _KEYS[kind], where, f"key for {kind} noise")

    def required(key: str) -> Any:
        if key not in table:
            raise UserError(f"{where('')}: {kind} noise needs {key}")
        return table[key]

    common = {
        "phase": parse_phase(table.get("phase", INDEPENDENT), where("phase")),
        "seed": _seed(table.get("seed", 0), where("seed")),
        "per_byte": _flag(table.get("per_byte", False), where("per_byte")),
    }
    if kind == "periodic":
        if ("frequency" in table) == ("period" in table):
            raise UserError(f"{where('')}: periodic noise needs either frequency or period")
        period = (_period(table["frequency"], where("frequency")) if "frequency" in table
                  else parse_duration(table["period"], where("period")))
        duration = parse_duration(required("duration"), where("duration"))
        return checked(NoiseSettings("periodic", period=period, duration=duration, **common), where)
    if kind == "random":
        rate = parse_frequency(required("rate"), where("rate"))
        distribution = table.get("distribution", engine().DEFAULT_NOISE_DISTRIBUTION)
        if distribution not in DISTRIBUTIONS:
            raise UserError(f"{where('distribution')}: expected one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
        if distribution == "uniform":
            low, high = (parse_duration(required(k), where(k)) for k in ("min", "max"))
            settings = NoiseSettings("random", rate=rate, distribution=distribution, minimum=low, maximum=high, **common)
        else:
            for key in ("min", "max"):
                if key in table:
                    raise UserError(f"{where(key)}: applies to distribution = \"uniform\" only")
            settings = NoiseSettings("random", rate=rate, distribution=distribution,
                                     duration=parse_duration(required("duration"), where("duration")), **common)
        return checked(settings, where)
    files = required("trace")
    files = [files] if isinstance(files, str) else files
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise UserError(f"{where('trace')}: expected a trace file or a list of them")
    resolved = tuple(str((base / f) if base is not None and not os.path.isabs(f) else Path(f)) for f in files)
    return checked(NoiseSettings("trace", files=_existing(resolved, where("trace")), **common), where)


def _existing(files: tuple[str, ...], where: str) -> tuple[str, ...]:
    """Trace files checked for existence here, where the error can name the key; the engine reads
    them when it simulates."""
    for path in files:
        if not os.path.isfile(path):
            raise UserError(f"{where}: no trace file {path!r}")
    return files


def parse_spec(spec: str, where: str = "--noise") -> NoiseSettings | None:
    """A command-line spec in the engine's grammar (engine/src/noise/spec.rs): ``periodic:FREQ:DURATION``,
    ``random:RATE:DURATION[:fixed|:exponential]``, ``random:RATE:MIN-MAX`` (uniform),
    ``trace:FILE[,FILE...]`` or ``none``.

    >>> parse_spec("periodic:1kHz:25us").describe()
    'periodic 1000 Hz x 25 us (2.5%), independent phases (seed 0)'
    """
    try:
        params = engine().parse_noise(spec)
    except engine().SpecError as exc:
        key = exc.key.partition(".")[2]
        raise UserError(f"{where} ({key}): {exc.problem}" if key else f"{where}: {exc.problem}") from None
    if params is None:
        return None
    settings = NoiseSettings.from_engine(params)
    if settings.kind == "trace":
        _existing(settings.files, f"{where} (trace)")
    return settings


def resolve(noise: Any, machine_noise: NoiseSettings | None, *, phase: Any = None, seed: Any = None,
            per_byte: bool | None = None) -> NoiseSettings | None:
    """The noise of a run: ``noise`` (a spec string, a table-like dict, "none"/False, or None for the
    machine's), then ``phase``, ``seed`` and ``per_byte`` replace its values."""
    if noise is None:
        chosen = machine_noise
    elif noise is False or noise == "none":
        chosen = None
    elif isinstance(noise, str):
        chosen = parse_spec(noise)
    elif isinstance(noise, Mapping):
        chosen = from_table(noise, lambda key: f"noise {key}".rstrip())
    else:
        raise UserError(f"noise: expected a spec such as 'periodic:1kHz:25us', a dict or None, got {noise!r}")
    overrides = {"phase": phase, "seed": seed, "per_byte": per_byte}
    given = {key: value for key, value in overrides.items() if value is not None}
    if chosen is None:
        if given:
            names = ", ".join(f"--noise-{key.replace('_', '-')}" for key in given)
            raise UserError(f"{names}: there is no noise to apply it to (give --noise or a machine with [noise])")
        return None
    if "phase" in given:
        given["phase"] = parse_phase(given["phase"], "--noise-phase")
    if "seed" in given:
        given["seed"] = _seed(given["seed"], "--noise-seed")
    if not given:
        return chosen  # checked when it was read

    def option(key: str) -> str:
        """The --noise-* option that gave ``key``, else the spec."""
        return f"--noise-{key.replace('_', '-')}" if key in given else "--noise"

    return checked(dataclasses.replace(chosen, **given), option)
