"""contend.parquet: every way pyarrow fails on a damaged Parquet file a user gives is one UserError naming it."""

from __future__ import annotations

import pytest


def test_a_parquet_file_pyarrow_cannot_decode_is_one_line(tmp_path):
    """A records file with one flipped byte in its schema (found by the fuzz, seed 56): pyarrow raises
    ArrowNotImplementedError (a NotImplementedError, neither OSError nor ValueError) on it; every
    Parquet reader (contend.parquet) makes that one UserError naming the file."""
    from pathlib import Path

    from contend.errors import UserError
    from contend.parquet import read_schema, read_table

    damaged = Path(__file__).with_name("data") / "records-bad-bit-width.parquet"
    with pytest.raises(UserError, match=r"records-bad-bit-width\.parquet: not a readable records file \(Integers"):
        read_table(damaged, "records file")
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_text("hello")
    with pytest.raises(UserError, match=r"x\.parquet: not a readable bench result \("):
        read_schema(not_parquet, "bench result")


def test_damaged_pandas_metadata_is_one_line(tmp_path):
    """pyarrow's pandas conversion fails in Python on damaged pandas metadata (found by the fuzz:
    TypeError, AttributeError): read_frame makes it one UserError naming the file."""
    import json as json_module

    import pyarrow as pa
    import pyarrow.parquet as pq

    from contend.errors import UserError
    from contend.parquet import read_frame

    for damage in (5, ["a"]):
        path = tmp_path / "p.parquet"
        table = pa.table({"x": [1, 2]})
        pq.write_table(table.replace_schema_metadata({b"pandas": json_module.dumps({"columns": damage,
                                                                                   "column_indexes": 1})}), path)
        with pytest.raises(UserError, match=r"p\.parquet: not a readable samples file \("):
            read_frame(path, "samples file")
