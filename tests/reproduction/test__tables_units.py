"""The table reader and cell helpers the reproduction extractors share (``judgelab/reproduction/_tables.py``).

* Without a list of the run's outputs any file under the root is read, CSV or parquet alike (the
  same frame back from either format); each file is read once.
* A file missing from disk, or outside the run's outputs, is a FileNotFoundError naming the path.
* A ``simulated`` cell reads as every table's boolean column: text and 0/1 to a bool, empty to None,
  anything else an error naming the column.
* A row's ``reason`` cell: stripped text, else the default (no cell, blank text, a non-text cell, or a
  row that is no mapping at all).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.reproduction._tables import TableReader, flag, reason_of

FRAME = pd.DataFrame({"judge": ["gpt-4o", "sim-b"], "value": [0.25, 0.75], "simulated": [False, True]})


@pytest.mark.parametrize("name", ["t.csv", "t.parquet"])
def test_without_an_output_list_any_file_under_the_root_is_read_in_its_format(tmp_path, name):
    path = tmp_path / "tables" / name
    path.parent.mkdir()
    if name.endswith(".parquet"):
        FRAME.to_parquet(path)
        path.with_suffix(".csv").write_text("not,the,parquet\n1,2,3\n")  # a same-stem CSV must not be read instead
    else:
        FRAME.to_csv(path, index=False)
    reader = TableReader(tmp_path)
    assert reader.available is None
    got = reader.read(f"tables/{name}")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), FRAME)
    # read once: a change on disk after the first read does not reach the reader
    path.unlink()
    assert reader.read(f"tables/{name}") is got


def test_a_parquet_table_is_not_parsed_as_text(tmp_path):
    # a parquet file read as CSV fails or gives other columns: only the parquet reader gives the frame back
    path = tmp_path / "x.parquet"
    FRAME.to_parquet(path)
    assert list(TableReader(tmp_path, [path]).read("x.parquet").columns) == list(FRAME.columns)


def test_a_file_not_on_disk_or_not_among_the_outputs_names_its_path(tmp_path):
    written = tmp_path / "a.csv"
    FRAME.to_csv(written, index=False)
    with pytest.raises(FileNotFoundError, match=r"b\.csv was not written by this run"):
        TableReader(tmp_path).read("b.csv")
    with pytest.raises(FileNotFoundError, match=r"a\.csv is not among this run's outputs"):
        TableReader(tmp_path, []).read("a.csv")
    # listed but gone: the disk decides
    with pytest.raises(FileNotFoundError, match=r"b\.csv was not written by this run"):
        TableReader(tmp_path, [tmp_path / "b.csv"]).read("b.csv")


@pytest.mark.parametrize(("cell", "expected"), [
    (True, True), (False, False), ("True", True), ("false", False), (1, True), (0, False),
    (None, None), (math.nan, None), ("", None),
])
def test_a_simulated_cell_reads_as_a_boolean_or_none(cell, expected):
    assert flag(cell) is expected


def test_a_simulated_cell_that_is_no_boolean_names_the_column():
    with pytest.raises(InputError, match=r"^column 'simulated', row 1: 'maybe' is not a boolean"):
        flag("maybe")


def test_the_reason_cell_or_the_default():
    assert reason_of(pd.Series({"reason": "  set not downloaded \n"})) == "set not downloaded"
    assert reason_of({"reason": "x"}, "d") == "x"
    # no cell, a blank one, a non-text one: the default, and the documented default text
    assert reason_of(pd.Series({"value": 1.0})) == "empty cell"
    assert reason_of({"reason": "   "}, "d") == "d"
    assert reason_of({"reason": math.nan}, "d") == "d"
    assert reason_of({"reason": 3}, "d") == "d"
    # a row that is no mapping (no .get): the default, not an AttributeError
    assert reason_of(("reason", "x"), "d") == "d"
    assert reason_of(None) == "empty cell"
