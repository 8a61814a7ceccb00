"""Results: JSON lines to pandas, Parquet and back, and the sanity checks catching what they should."""

from __future__ import annotations

import json

import pytest

from contend.native.bench import sanity
from contend.native.bench.results import parse_lines, read_run, write_run


def lines(*, sent=(64, 0), received=(0, 64), hosts=("a",), node_of_rank=(0, 0), p50=900.0, bandwidth=7e7,
          end=True, pattern="pingpong"):
    records = [
        {"type": "meta", "pattern": pattern, "mpi_library": "MPICH Version: 5.0.2", "ranks": 2,
         "nodes": len(hosts), "ranks_per_node": 2, "hosts": list(hosts), "node_of_rank": list(node_of_rank),
         "loadavg_1min": 0.2, "started": "2026-01-01T00:00:00Z"},
        {"type": "result", "pattern": pattern, "metric": "latency", "bytes": 64, "rank": 0, "peer": 1,
         "window": 1, "samples": 8, "t_min_ns": 800.0, "t_p50_ns": p50, "t_p90_ns": 950.0, "t_p99_ns": 990.0,
         "t_max_ns": 1000.0, "t_mean_ns": 910.0, "t_tmean_ns": 905.0, "bandwidth_Bps": bandwidth, "msg_rate": 1.1e6},
        {"type": "progress", "done": 1, "total": 1},
    ]
    for rank in range(2):
        records.append({"type": "tally", "rank": rank, "node": node_of_rank[rank], "host": hosts[node_of_rank[rank]],
                        "bytes_sent": sent[rank], "bytes_received": received[rank], "messages_sent": int(sent[rank] > 0),
                        "messages_received": int(received[rank] > 0), "rma_bytes": 0, "verified": -1})
    if end:
        records.append({"type": "end", "elapsed_s": 0.01})
    return [json.dumps(r) + "\n" for r in records]


def test_parse_joins_meta_and_host_onto_rows():
    run = parse_lines(lines(), {"mpi_flavor": "mpich"})
    row = run.results.iloc[0]
    assert row["host"] == "a" and row["node"] == 0 and row["ranks"] == 2
    assert run.meta["mpi_flavor"] == "mpich" and run.complete
    assert sanity.problems(run) == []


def test_parquet_round_trip_keeps_rows_meta_and_tallies(tmp_path):
    run = parse_lines(lines())
    path = write_run(run, tmp_path / "r.parquet")
    back = read_run(path)
    assert back.meta == run.meta
    assert back.results.equals(run.results)
    assert back.tallies.equals(run.tallies)
    assert [p.name for p in tmp_path.iterdir()] == ["r.parquet"]  # no temporary left, no detours file


def test_a_column_whose_strings_are_not_utf8_is_a_user_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contend.errors import UserError

    path = write_run(parse_lines(lines()), tmp_path / "r.parquet")
    table = pq.read_table(path)
    at = table.column_names.index("metric")
    damaged = pa.array([b"lat\xffency"] * table.num_rows, type=pa.binary()).cast(pa.string(), safe=False)
    pq.write_table(table.set_column(at, "metric", damaged), path)
    with pytest.raises(UserError, match=r"r\.parquet: damaged column data"):
        read_run(path)


@pytest.mark.parametrize("p50, bandwidth, column", [(-5.0, 7e7, "t_p50_ns"), (1e308, 7e7, "t_p50_ns"),
                                                      (float("inf"), 7e7, "t_p50_ns"), (900.0, 1e308, "bandwidth_Bps")])
def test_a_number_no_clock_measured_is_a_user_error(tmp_path, p50, bandwidth, column):
    from contend.errors import UserError

    path = write_run(parse_lines(lines(p50=p50, bandwidth=bandwidth)), tmp_path / "r.parquet")
    with pytest.raises(UserError, match=rf"r\.parquet: row 1: {column} is .*, not a (time|rate)"):
        read_run(path)
    # a quantity the row does not measure (NaN) is not an error
    assert read_run(write_run(parse_lines(lines(p50=float("nan"))), tmp_path / "nan.parquet")).results.shape[0] == 1


def test_malformed_output_is_reported_with_its_line():
    with pytest.raises(ValueError, match="line 2"):
        parse_lines(['{"type":"meta"}\n', "not json\n"])


@pytest.mark.parametrize(
    "change, complaint",
    [
        (dict(received=(0, 32)), "bytes sent 64 != bytes received 32"),
        (dict(p50=2000.0), "percentiles out of order"),
        (dict(end=False), "did not finish"),
        (dict(hosts=("a", "a"), node_of_rank=(0, 1)), "distinct nodes"),
        (dict(bandwidth=1e15), "faster than a memory copy"),
        (dict(sent=(0, 0), received=(0, 0)), "no bytes moved"),
    ],
)
def test_sanity_catches(change, complaint):
    problems = sanity.problems(parse_lines(lines(**change)))
    assert any(complaint in p for p in problems), problems


def test_fabric_runs_are_bounded_by_the_link_and_placed_k_per_node():
    run = parse_lines(lines(hosts=("ctd-node0", "ctd-node1"), node_of_rank=(0, 1), bandwidth=2e8),
                      {"fabric": {"link": "1gbit", "link_Bps": 1.25e8, "burst_bytes": 16, "ppn": 1,
                                  "host_prefix": "ctd-node"}})
    problems = sanity.problems(run)
    assert any("faster than the 1gbit link" in p for p in problems), problems
    placed_two_per_node = parse_lines(lines(hosts=("ctd-node0", "ctd-node1"), node_of_rank=(0, 1)),
                                      {"fabric": {"link": "1gbit", "link_Bps": 1.25e8, "ppn": 2,
                                                  "host_prefix": "ctd-node"}})
    assert any("expected [0, 0]" in p for p in sanity.problems(placed_two_per_node))


def test_copy_bandwidth_is_a_real_memory_speed():
    speed = sanity.copy_bandwidth(1 << 20)
    assert 1e8 < speed < 1e12  # between 100 MB/s and 1 TB/s on anything that runs this


def test_median_of_runs_takes_medians_per_row_and_adds_tallies():
    from contend.native.bench.results import median_of_runs

    runs = [parse_lines(lines(p50=p50)) for p50 in (850.0, 900.0, 950.0)]
    runs[2].results.loc[0, "t_p50_ns"] = 5000.0  # one disturbed run does not move the median
    combined = median_of_runs(runs)
    assert float(combined.results.loc[0, "t_p50_ns"]) == 900.0
    assert combined.results.loc[0, "host"] == "a" and combined.meta["runs"] == 3
    assert int(combined.tallies.set_index("rank").loc[0, "bytes_sent"]) == 3 * 64
    assert sanity.check_accounting(combined) == []
