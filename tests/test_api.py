"""The Python API: contend.simulate and its result object."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import contend
from contend.errors import UserError

REFERENCE = dict(L=3000, o=1500, g=1000, G=6, O=0, S=65535)


def test_simulate_collective_reference():
    result = contend.simulate(collective="binomial-bcast", ranks=8, bytes=131072, **REFERENCE)
    assert result.makespan == 2377278
    assert isinstance(result.ranks, np.ndarray)
    assert result.ranks.tolist() == [1579352, 1584352, 1584352, 1589352, 2367278, 2372278, 2372278, 2377278]
    assert result.num_ranks == 8 and result.messages == 7 and result.finished
    assert result.records is None and result.timeline is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.makespan = 0


def test_parameters_as_strings_numbers_and_machines_agree():
    a = contend.simulate(collective="dissemination", ranks=16, bytes=1, machine="loggops-reference")
    b = contend.simulate(collective="dissemination", ranks=16, bytes="1", L="3us", o="1.5us", g="1us", G="6ns")
    c = contend.simulate(collective="dissemination", ranks="2^4", bytes=1, machine=contend.load_machine("loggops-reference"))
    assert a.makespan == b.makespan == c.makespan == 24000


def test_schedule_file(tmp_path):
    path = tmp_path / "two.goal"
    path.write_text("num_ranks 2\nrank 0 {\n  send 1b to 1\n}\nrank 1 {\n  recv 1b from 0\n}\n")
    result = contend.simulate(path, **REFERENCE)
    assert result.makespan == 6000 and result.ranks.tolist() == [1500, 6000]
    assert result.workload == {"schedule": str(path)}


def test_records_dataframe_in_ns():
    result = contend.simulate(collective="incast", ranks=5, bytes=1, records=True, timeline=True, **REFERENCE)
    records = result.records
    assert len(records) == 4 and set(records["dst"]) == {0}
    assert str(records["protocol"].dtype) == "category" and set(records["protocol"]) == {"eager"}
    assert records["posted"].dtype == np.float64
    split = records[["ideal", "nic_queue", "link", "target_queue", "late_receiver", "noise"]].sum(axis=1)
    assert np.allclose(split, records["completed"] - records["posted"])
    assert (records["ideal"] == 1500 + 3000 + 1500).all()  # o + L + o for one byte
    assert records["target_queue"].max() > 0  # four messages land on one busy receiver
    timeline = result.timeline
    assert set(timeline["kind"]) == {"send", "recv"}
    assert timeline["end"].max() == result.makespan


def test_params_are_in_ns_like_every_other_time():
    result = contend.simulate(collective="scatter", ranks=4, bytes=8, machine="sandybridge-onload", L="2.5us",
                              G="0.08ns")
    assert {k: result.params[k] for k in ("L", "o", "g", "G", "O", "S")} == {"L": 2500, "o": 400, "g": 250,
                                                                            "G": 0.08, "O": 0, "S": 12288}
    assert result.params["memory"]["cpu_per_byte"] == 0.00625  # the machine file's "6.25ps"
    assert result.params["memory"]["bandwidth"] == 102.4e9  # bytes per second, as given
    assert result.engine_params["L"] == 2_500_000 and result.engine_params["G"] == 80  # what the engine ran: ps
    assert result.engine_params["memory"]["cpu_per_byte"] == 6.25
    assert json.loads(result.to_json())["params"] == result.params


def test_to_json_round_trips():
    result = contend.simulate(collective="scatter", ranks=4, bytes=8, **REFERENCE)
    summary = json.loads(result.to_json())
    assert summary["makespan"] == result.makespan
    assert summary["ranks"] == result.ranks.tolist()
    assert summary["workload"]["collective"] == "scatter"


def test_deadlock_is_a_result_not_an_error(tmp_path):
    path = tmp_path / "dl.goal"
    path.write_text("num_ranks 2\nrank 0 {\n  recv 1b from 1\n}\nrank 1 {\n  recv 1b from 0\n}\n")
    result = contend.simulate(path)
    assert not result.finished
    assert result.deadlock.count == 2 and result.deadlock.ranks() == [0, 1]
    assert any("rank 1 op 0" in line for line in result.deadlock.describe())


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({}, "either a GOAL schedule file or a collective"),
        ({"schedule": "x.goal", "collective": "scatter"}, "not both"),
        ({"collective": "scatter", "ranks": 4}, "needs a rank count and a message size"),
        ({"collective": "bogus", "ranks": 4, "bytes": 1}, "unknown collective"),
        ({"collective": "scatter", "ranks": 4, "bytes": 1, "L": "-3us"}, "must not be negative"),
        ({"collective": "scatter", "ranks": 4, "bytes": 1, "S": 1.5}, "parameter S"),
        ({"collective": "scatter", "ranks": True, "bytes": 1}, "ranks: expected an integer"),
        ({"schedule": "missing.goal"}, "missing.goal"),
        ({"schedule": "x.goal", "ranks": 4}, "applies to generated collectives"),
    ],
)
def test_bad_arguments_raise_user_error(kwargs, message):
    with pytest.raises(UserError, match=message):
        contend.simulate(**kwargs)


def test_read_records_round_trip(tmp_path):
    from contend.simulation.records import write_records_parquet

    result = contend.simulate(collective="alltoall-bruck", ranks=8, bytes=16, records=True, **REFERENCE)
    path = tmp_path / "r.parquet"
    write_records_parquet(result.record_columns, path, {"workload": dict(result.workload)})
    again = contend.read_records(path)
    assert again.equals(result.records)
    not_parquet = tmp_path / "notes.parquet"
    not_parquet.write_text("hello")
    with pytest.raises(UserError, match="not a readable records file"):
        contend.read_records(not_parquet)
