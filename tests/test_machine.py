"""Machine files: presets, units, precedence and validation."""

from __future__ import annotations

import pytest

from contend.errors import UserError
from contend.machine.file import load_machine, loggops_params, parse_machine, preset_names

PAPER_MACHINES = {"bgp-intrepid", "xt4-jaguar", "xe6-gemini", "qdr-ib-fattree", "aries-dragonfly", "bgq-mira"}


def test_presets_load_and_say_where_numbers_come_from():
    names = set(preset_names())
    assert {"loggopsim-default", "loggops-reference"} | PAPER_MACHINES <= names
    for name in names:
        machine = load_machine(name)
        assert machine.name == name
        assert machine.description and machine.source
        assert set(machine.params) == {"L", "o", "g", "G", "O", "S"}
        assert all(isinstance(v, int) and v >= 0 for v in machine.params.values())
        assert machine.params["L"] > 0 and machine.params["G"] > 0


def test_paper_presets_mark_their_estimates():
    for name in PAPER_MACHINES:
        text = open(load_machine(name).path, encoding="utf-8").read()
        assert "estimate" in text, f"{name}: say which numbers are estimates"


def test_loggopsim_default_values():
    assert load_machine("loggopsim-default").params == {
        "L": 2_500_000, "o": 1_500_000, "g": 1_000_000, "G": 6_000, "O": 0, "S": 65535}
    assert loggops_params() == {**load_machine("loggopsim-default").params, "rendezvous": None}


def test_units_and_numbers():
    machine = parse_machine(
        '[loggops]\nL = "3us"\no = 1500\ng = "0.5us"\nG = "12.5GB/s"\nO = "80ps"\nS = 4096\n', "inline.toml")
    assert machine.params == {"L": 3_000_000, "o": 1_500_000, "g": 500_000, "G": 80, "O": 80, "S": 4096}
    assert machine.name == "inline"  # taken from the file name when [machine] has none


def test_bandwidth_in_bits():
    assert loggops_params(G="10Gbit/s")["G"] == 800  # 1.25e9 bytes/s -> 800 ps per byte


def test_precedence_defaults_machine_overrides():
    params = loggops_params("loggops-reference", o="2us", S="64KiB")
    assert params["L"] == 3_000_000 and params["o"] == 2_000_000 and params["S"] == 65536
    assert loggops_params(L=3000.5)["L"] == 3_000_500


BASE = '[loggops]\nL = "1us"\no = "500ns"\ng = "2us"\nG = "0.1ns"\nO = "0"\nS = 8191\n'


def test_a_rendezvous_set_takes_units_and_inherits_what_it_leaves_out():
    machine = parse_machine(BASE + '\n[loggops.rendezvous]\nL = "3us"\nG = "12.5GB/s"\no = 700\n', "r.toml")
    assert machine.params == {"L": 1_000_000, "o": 500_000, "g": 2_000_000, "G": 100, "O": 0, "S": 8191}
    assert machine.rendezvous == {"L": 3_000_000, "o": 700_000, "g": 2_000_000, "G": 80, "O": 0}
    params = loggops_params(machine)
    assert params["rendezvous"] == machine.rendezvous
    assert params["L"] == 1_000_000 and params["S"] == 8191


def test_overrides_replace_the_base_set_only():
    machine = parse_machine(BASE + '[loggops.rendezvous]\nL = "3us"\n', "r.toml")
    params = loggops_params(machine, L="2us", o="1us", S=100)
    assert (params["L"], params["o"], params["S"]) == (2_000_000, 1_000_000, 100)
    assert params["rendezvous"] == {"L": 3_000_000, "o": 500_000, "g": 2_000_000, "G": 100, "O": 0}


def test_without_a_rendezvous_table_there_is_no_second_set():
    assert parse_machine(BASE, "r.toml").rendezvous is None
    assert loggops_params(parse_machine(BASE, "r.toml"))["rendezvous"] is None


@pytest.mark.parametrize(
    "table,message",
    [
        ('[loggops.rendezvous]\nL = "3us"\nS = 100\n', r"r\.toml:11: \[loggops\.rendezvous\] S: unknown key; known: L, o, g, G, O"),
        ('[loggops.rendezvous]\no_s = "3us"\n', r"r\.toml:10: \[loggops\.rendezvous\] o_s: unknown key"),
        ('[loggops.rendezvous]\nL = "3 lightyears"\n', r"r\.toml:10: \[loggops\.rendezvous\] L: "),
        ('[loggops.rendezvous]\nG = "-1ns"\n', r"r\.toml:10: \[loggops\.rendezvous\] G: must not be negative"),
        ('[loggops.rendezvous]\nO = true\n', r"r\.toml:10: \[loggops\.rendezvous\] O: expected a number"),
    ],
)
def test_rendezvous_validation_names_file_line_and_key(table, message):
    with pytest.raises(UserError, match=message):
        parse_machine(BASE + "\n" + table, "r.toml")


def test_a_rendezvous_key_that_is_not_a_table_is_an_error():
    with pytest.raises(UserError, match=r"r\.toml:8: \[loggops\] rendezvous: must be a table"):
        parse_machine(BASE + 'rendezvous = "fast"\n', "r.toml")


def test_record_tables_and_keys_are_kept():
    machine = parse_machine(
        '[machine]\nname = "t"\n[loggops]\nL = "1us"\no = "1us"\ng = "1us"\nG = "1ns"\nO = "0"\nS = 1\n'
        'o_s = "1us"\no_r = "2us"\n[fit]\nanything = [1, "x"]\n[measured]\nruns = 3\n', "t.toml")
    assert machine.document["fit"] == {"anything": [1, "x"]} and machine.document["measured"] == {"runs": 3}
    assert machine.loggops["o_r"] == "2us"


@pytest.mark.parametrize(
    "text,message",
    [
        ('[machine]\nname = 3\n[loggops]\n', r"m\.toml:2: \[machine\] name: expected a string"),
        ("machine = 1\n[loggops]\n", r"m\.toml:1: machine must be a table"),
        ('[loggops]\nL = "1us"\no = "1us"\ng = "1us"\nG = "1ns"\nO = "0"\nS = 1.5\n', r"m\.toml:7: \[loggops\] S"),
        ('[loggops]\nL = [1]\no = "1us"\ng = "1us"\nG = "1ns"\nO = "0"\nS = 1\n', r"m\.toml:2: \[loggops\] L: expected a number"),
        ("[loggops\n", r"m\.toml:1:\d+: "),
    ],
)
def test_validation_messages(text, message):
    with pytest.raises(UserError, match=message):
        parse_machine(text, "m.toml")


def test_unknown_override_and_unreadable_file(tmp_path):
    with pytest.raises(UserError, match="unknown LogGOPS parameter"):
        loggops_params(Q="1us")
    with pytest.raises(UserError, match="cannot read machine file"):
        load_machine(tmp_path / "absent.toml")
