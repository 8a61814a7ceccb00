"""Every machine-file error is one line naming the file, the line and the key.

Each preset is mutated key by key (deleted, misspelt, the wrong type, an inline table, out of range)
and table by table (misspelt header); the error must point at the mutated line (a deleted key: its
table) and name the key, and a misspelt name must get the closest known one. Then the nested
cases the presets lack: [loggops.rendezvous], [[nic.class]], [[throttle.class]], dotted and quoted
keys, inline tables, and errors the engine finds when it builds the network.
"""

from __future__ import annotations

import json
import re

import pytest

from contend.cli import main
from contend.errors import UserError
from contend.machine.file import PRESET_DIR, TABLES, load_machine, preset_names
from contend.simulation.simulate import simulate
from contend.machine.tomlfile import key_lines, tomllib

FREE_TEXT = {"name", "description", "source"}  # any string is valid: no value is out of range


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"


def negated(value):
    """The value with every number made negative: out of range for every count, size and factor."""
    if isinstance(value, list):
        return [negated(v) for v in value]
    return -abs(value) - 1 if isinstance(value, int) else -abs(value) - 1.0


def out_of_range(key: str, value):
    """A value of the right type that no key of a machine file accepts, or None."""
    if isinstance(value, bool) or key in FREE_TEXT:
        return None
    if isinstance(value, str):
        return "-" + value if value[:1].isdigit() else "bogus"  # a negative quantity, an unknown name
    return negated(value)


def wrong_type(value):
    return "yes" if isinstance(value, bool) else True


def error_of(path) -> str | None:
    """The error of loading the machine and simulating a ping-pong on it (the engine checks the
    network when it builds it); None when both work."""
    try:
        simulate(collective="pingpong", ranks=2, bytes=8, machine=load_machine(path))
    except UserError as exc:
        return str(exc)
    return None


def located(message: str | None, path, lines: set[int], key: str) -> str | None:
    """Why ``message`` is not a one-line error at one of ``lines`` of ``path`` naming ``key``; None if it is."""
    if message is None:
        return "no error"
    if not message.isprintable():
        return f"more than one line or control characters: {message!r}"
    match = re.match(re.escape(str(path)) + r":(\d+): ", message)
    if not match or int(match.group(1)) not in lines:
        return f"not at {path}:{sorted(lines)}: {message}"
    if not re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", message):
        return f"does not name {key!r}: {message}"
    return None


def preset_keys(name: str):
    """(table, key, value, line) of every key of a preset's tables, and the header line of each table."""
    text = (PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8")
    document, lines = tomllib.loads(text), key_lines(text)
    keys = [(table, key, value, lines[(table, key)])
            for table, content in document.items() for key, value in content.items()]
    return text, keys, {table: lines[(table,)] for table in document}


def with_line(text: str, number: int, replacement: str) -> str:
    """``text`` with line ``number`` (from 1) replaced; the other lines keep their numbers."""
    lines = text.split("\n")
    lines[number - 1] = replacement
    return "\n".join(lines)


MUTATIONS = ("delete", "misspell", "wrong type", "inline table", "out of range")


@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("preset", preset_names())
def test_every_key_of_every_preset(tmp_path, preset, mutation):
    text, keys, headers = preset_keys(preset)
    path = tmp_path / f"{preset}.toml"
    problems, checked = [], 0
    for table, key, value, line in keys:
        original = text.split("\n")[line - 1]
        after_equals = original.split("=", 1)[1]
        if mutation == "delete":
            path.write_text(with_line(text, line, "# deleted"), encoding="utf-8")
            message = error_of(path)
            if message is None:  # an optional key
                continue
            # A key the table needs is missing at its header; one that others depend on, at theirs.
            places = {headers[table]} | {n for t, _, _, n in keys if t == table and n != line}
            problem = located(message, path, places, key)
        elif mutation == "misspell":
            path.write_text(with_line(text, line, f"{key}{key[-1]} ={after_equals}"), encoding="utf-8")
            message = error_of(path)
            problem = located(message, path, {line}, key + key[-1])
            if problem is None and f"did you mean {key!r}" not in message:
                problem = f"no 'did you mean {key!r}': {message}"
        else:
            new = {"wrong type": wrong_type(value), "inline table": {"x": 1},
                   "out of range": out_of_range(key, value)}[mutation]
            if new is None:
                continue
            path.write_text(with_line(text, line, f"{key} = {toml_value(new)}"), encoding="utf-8")
            problem = located(error_of(path), path, {line}, key)
        checked += 1
        if problem is not None:
            problems.append(f"[{table}] {key} ({mutation}): {problem}")
    assert not problems, "\n".join(problems)
    assert checked or mutation == "delete"


@pytest.mark.parametrize("preset", preset_names())
def test_a_misspelt_table_is_one_line_exit_2_with_the_closest_name(tmp_path, capsys, preset):
    text, _, headers = preset_keys(preset)
    path = tmp_path / f"{preset}.toml"
    for table, line in headers.items():
        path.write_text(with_line(text, line, f"[{table}{table[-1]}]"), encoding="utf-8")
        code = main(["sim", "--machine", str(path), "--collective", "pingpong", "--ranks", "2", "--bytes", "8"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"contend: error: {path}:{line}: [{table}{table[-1]}]: unknown table "
                              f"(did you mean {table!r}?); known: {', '.join(TABLES)}"), err


BASE = '[loggops]\nL = "1us"\no = "1us"\ng = "1us"\nG = "1ns"\nO = "0"\nS = 100\n'  # lines 1-7
NODE = "[nic]\nranks_per_node = 2\n"  # lines 8-9


@pytest.mark.parametrize("text, line, pattern", [
    # tables below tables, arrays of tables and their keys
    (BASE + '[loggops.rendezvouz]\nL = "2us"\n', 8,
     r"\[loggops\] rendezvouz: unknown key \(did you mean 'rendezvous'\?\)"),
    (BASE + '[loggops.rendezvous]\nL = "2us"\ngg = "1us"\n', 10,
     r"\[loggops\.rendezvous\] gg: unknown key \(did you mean 'g'\?\); known: L, o, g, G, O"),
    (BASE + '[loggops.rendezvous]\nO = "-1ns"\n', 9, r"\[loggops\.rendezvous\] O: must not be negative"),
    (BASE + NODE + '[[nic.klass]]\nup_to = 64\n', 10, r"\[nic\] klass: unknown key \(did you mean 'class'\?\)"),
    (BASE + NODE + '[[nic.class]]\nup_to = 64\n[[nic.class]]\nup_to = 128\noutstandin = [[1, 1.0]]\n', 14,
     r"\[\[nic\.class\]\] #2 outstandin: unknown key \(did you mean 'outstanding'\?\)"),
    (BASE + NODE + '[[nic.class]]\nup_to = 64\n[[nic.class]]\nup_to = "big"\n', 13,
     r"\[\[nic\.class\]\] #2 up_to: expected a byte count"),
    (BASE + NODE + '[[nic.class]]\nup_to = 64\nconcurrency = [[1, 1.0],\n  [0, 2.0]]\n', 12,
     r"\[\[nic\.class\]\] #1 concurrency: point 2"),
    (BASE + NODE + '[[nic.class]]\noutstanding = [[1, 1.0]]\n', 10, r"\[\[nic\.class\]\] #1: needs up_to"),
    (BASE + NODE + '[[nic.class]]\nup_to = 64\noutstanding = [[1, 1.0], [2, inf]]\n', 12,
     r"\[\[nic\.class\]\] #1 outstanding: point 2: x must be a finite number"),
    (BASE + '[throttle]\nranks_per_node = 2\npolicy = "token"\n[[throttle.class]]\ncct = 1\nnrct = 0\ncrct = [[1, 1]]\n',
     13, r"\[\[throttle\.class\]\] #1 nrct: 0 is out of range"),
    (BASE + '[throttle]\nranks_per_node = 2\npolicy = "tokn"\ntokens = 2\n', 10,
     r"\[throttle\] policy: unknown policy 'tokn' \(did you mean 'token'\?\)"),
    (BASE + '[throttle]\nranks_per_node = 2\ntokens = 2\n', 8, r"\[throttle\]: needs policy"),
    (BASE + '[topology.extra]\nx = 1\n', 8, r"\[topology\] extra: unknown key"),
    # dotted, quoted and inline keys; multi-line values before the error keep the count right
    ('topology.kindd = "torus"\n' + BASE, 1, r"\[topology\] kindd: unknown key \(did you mean 'kind'\?\)"),
    (BASE + '[topology]\n"kind" = "torsu"\n', 9, r"\[topology\] kind: unknown topology 'torsu' \(did you mean 'torus'\?\)"),
    (BASE + 'rendezvous = {L = "2us", X = 2}  # an inline table\n', 8,
     r"\[loggops\.rendezvous\] X: unknown key; known: L, o, g, G, O"),
    ('[machine]\ndescription = """two\n# not a comment\nlines"""\nnam = "x"\n' + BASE, 5,
     r"\[machine\] nam: unknown key \(did you mean 'name'\?\)"),
    (BASE + '[noise]\nkind = "periodc"\n', 9, r"\[noise\] kind: .*got 'periodc' \(did you mean 'periodic'\?\)"),
    (BASE + '[noise]\nkind = "periodic"\nfrequency = "1kHz"\nduraton = "1us"\n', 11,
     r"\[noise\] duraton: unknown key \(did you mean 'duration'\?\)"),
    (BASE + '[noise]\nkind = "none"\nfrequency = "1kHz"\n', 10, r"\[noise\] frequency: unknown key for kind none"),
    (BASE + '[noise]\nkind = "trace"\ntrace = "absent.noise"\n', 10, r"\[noise\] trace: no trace file"),
    (BASE + '[memory]\nbandwidth = "10GB/s"\nnic = "onlaod"\n', 10, r"\[memory\] nic: .*\(did you mean 'onload'\?\)"),
    ('memory = 3\n' + BASE, 1, r"memory must be a table"),
    (BASE + '[mesured]\nx = 1\n', 8, r"\[mesured\]: unknown table \(did you mean 'measured'\?\)"),
    ('[machine]\nname = "x"\n', 2, r"missing \[loggops\] table"),
    (BASE.replace('S = 100\n', ''), 1, r"\[loggops\]: missing S"),
    (BASE + 'l = "1us"\n', 8, r"\[loggops\] l: unknown key \(did you mean 'L'\?\)"),
    (BASE + '"a\\u001bb" = 1\n', 8, r"\[loggops\] 'a\\x1bb': unknown key"),  # escaped: one line, no raw ESC
    # TOML syntax: line and column, also at the end of the file
    (BASE + '[topology\n', "8:10", r"Expected ']'"),
    (BASE + 'x = [1,\n', "9:1", r"Invalid value at the end of the file"),
])
def test_nested_and_unusual_keys_are_located(tmp_path, text, line, pattern):
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    message = error_of(path)
    assert message is not None and message.isprintable()
    assert re.match(re.escape(str(path)) + f":{line}: " + pattern, message), message


NETWORK = BASE + '[topology]\nkind = "torus"\ndims = [2, 2]\nlink_bandwidth = "1GB/s"\n'  # lines 8-11


@pytest.mark.parametrize("extra, ranks, line, pattern", [
    ('routing = "minimal"\n', 2, 12, r"\[topology\] routing: routing 'minimal' does not apply to a torus"),
    ('routing = "sideways"\n', 2, 12, r"\[topology\] routing: unknown routing 'sideways'"),
    ('placement = [0, 7]\n', 2, 12, r"\[topology\] placement: placement puts rank 1 on node 7"),
    ('placement = [0]\n', 2, 12, r"\[topology\] placement: placement lists 1 nodes for 2 ranks"),
    ('ranks_per_node = 1\n', 5, 10, r"\[topology\] dims: 5 ranks do not fit on 4 nodes"),
])
def test_what_the_engine_finds_in_the_network_points_at_the_key(tmp_path, capsys, extra, ranks, line, pattern):
    path = tmp_path / "m.toml"
    path.write_text(NETWORK + extra, encoding="utf-8")
    load_machine(path)  # valid as a file: the engine checks these when it builds the job's network
    code = main(["sim", "--machine", str(path), "--collective", "incast", "--ranks", str(ranks), "--bytes", "8"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert re.match(r"contend: error: " + re.escape(str(path)) + f":{line}: " + pattern, err), err


@pytest.mark.parametrize("kind, sizes, line, pattern", [  # the engine checks what a shape can be
    ("fattree", "k = 1\nlevels = 2\n", 10, r"\[topology\] k: fat tree radix k must be at least 2"),
    ("fattree", "k = 4\nlevels = 1\noversubscription = 2\n", 12, r"\[topology\] oversubscription: "),
    ("fattree", "k = 65536\nlevels = 3\n", 11, r"\[topology\] levels: fat tree 65536-ary 3-tree has more than"),
    ("torus", "dims = [65536, 65536, 2]\n", 10, r"\[topology\] dims: torus "),
    ("dragonfly", "a = 2\np = 1\nh = 1\ng = 9\n", 13, r"\[topology\] g: dragonfly g = 9 groups exceeds"),
])
def test_shapes_the_engine_refuses_point_at_the_size_key(tmp_path, kind, sizes, line, pattern):
    path = tmp_path / "m.toml"
    path.write_text(BASE + f'[topology]\nkind = "{kind}"\n{sizes}link_bandwidth = "1GB/s"\n', encoding="utf-8")
    message = error_of(path)
    assert message is not None and re.match(re.escape(str(path)) + f":{line}: " + pattern, message), message


def test_a_sharing_given_by_the_caller_is_not_blamed_on_the_file(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(NETWORK, encoding="utf-8")
    with pytest.raises(UserError, match=r"^sharing: unknown link sharing model 'cells'"):
        simulate(collective="pingpong", ranks=2, bytes=8, machine=path, sharing="cells")


@pytest.mark.parametrize("tables, line, pattern", [
    (NODE + '[topology]\nkind = "crossbar"\nnodes = 2\nlink_bandwidth = "1GB/s"\n', 8,
     r"\[nic\]: NIC congestion curves with a network topology are not supported"),
    ('[noise]\nkind = "periodic"\nfrequency = "1kHz"\nduration = "1us"\n[memory]\nbandwidth = "10GB/s"\n', 12,
     r"\[memory\]: memory: the memory model does not combine with noise"),
])
def test_tables_the_engine_does_not_combine_point_at_the_table(tmp_path, tables, line, pattern):
    path = tmp_path / "m.toml"
    path.write_text(BASE + tables, encoding="utf-8")
    message = error_of(path)
    assert message is not None and re.match(re.escape(str(path)) + f":{line}: " + pattern, message), message


def test_a_combination_with_what_the_caller_gave_is_not_blamed_on_the_file(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(BASE + '[memory]\nbandwidth = "10GB/s"\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"^collective pingpong: memory: the memory model does not combine"):
        simulate(collective="pingpong", ranks=2, bytes=8, machine=path, noise="periodic:1kHz:1us")


def test_a_dimension_too_large_for_the_engine_is_refused_at_its_key(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(BASE + '[topology]\nkind = "torus"\ndims = [4294967296]\nlink_bandwidth = "1GB/s"\n')
    with pytest.raises(UserError, match=re.escape(f"{path}:10: [topology] dims: expected a list of positive sizes")):
        load_machine(path)


def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "m.toml"
    path.write_bytes(b"[loggops]\nL = 1\no = \"\xc7\"\n")
    with pytest.raises(UserError, match=rf"^{re.escape(str(path))}:3: byte 0xc7 is not UTF-8 text$"):
        load_machine(str(path))


MPI_BASE = '[loggops]\nL = 1\no = 1\ng = 1\nG = 1\nO = 0\nS = 8\n'


@pytest.mark.parametrize("table,message", [
    ('[mpi]\ncollective_entry = "-1ns"\n', r"m\.toml:10: \[mpi\] collective_entry: must not be negative"),
    ('[mpi]\ncollective_entry = [1]\n', r"m\.toml:10: \[mpi\] collective_entry: expected a number or a string"),
    ('[mpi]\ncolective_entry = "1ns"\n', r"m\.toml:10: \[mpi\] colective_entry: unknown key \(did you mean "
                                         r"'collective_entry'\?\)"),
    ('[mpi]\ncollective_entry = "5 parsecs"\n', r"m\.toml:10: \[mpi\] collective_entry: "),
])
def test_the_mpi_table_names_its_key(table, message):
    from contend.machine.file import parse_machine

    with pytest.raises(UserError, match=message):
        parse_machine(MPI_BASE + "\n" + table, "m.toml")


def test_the_mpi_table_rounds_to_the_schedule_s_whole_ns():
    from contend.machine.file import parse_machine

    assert parse_machine(MPI_BASE, "m.toml").mpi == {"collective_entry": 0}
    assert parse_machine(MPI_BASE + '[mpi]\ncollective_entry = "190.6ns"\n', "m.toml").mpi == {"collective_entry": 191}
    assert parse_machine(MPI_BASE + '[mpi]\ncollective_entry = 0.2\n', "m.toml").mpi == {"collective_entry": 0}


def test_a_machine_name_too_long_for_a_file_is_an_unknown_machine():
    with pytest.raises(UserError, match="unknown machine 'a{300}': not a file"):
        load_machine("a" * 300)
