"""Big tables in slices: the card's per-judge tables share the table's memory when the judge's rows
are contiguous, and parquet is written a slice of rows at a time, reading back as the whole frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from judgelab import io
from judgelab.bias_card.codes import category_codes, column_strings, is_any, judge_tables, per_unique


def _frame(order: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"judge": pd.Categorical(order), "x": np.arange(len(order), dtype=float),
                         "v": [str(i % 3) for i in range(len(order))]})


@pytest.mark.parametrize("storage", ["category", "str"])
def test_judge_tables_equal_groupby_and_slice_contiguous_judges(storage):
    t = _frame(["b"] * 4 + ["a"] * 3 + ["c"] * 2 + ["d", "c"])  # c is split: taken, not sliced
    t.loc[9, "judge"] = None  # a row without a judge belongs to none (as in groupby)
    t = t.astype({"judge": storage}) if storage == "str" else t
    got = list(judge_tables(t))
    want = list(t.groupby("judge", sort=True, observed=True))
    assert [j for j, _ in got] == [j for j, _ in want] == ["a", "b", "c"]
    for (_, g), (_, w) in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(g, w)
    x = t["x"].to_numpy()
    assert np.shares_memory(dict(got)["b"]["x"].to_numpy(), x)  # contiguous: a view, no copy
    assert np.shares_memory(dict(got)["a"]["x"].to_numpy(), x)  # (the first judge in sorted order too)
    assert not np.shares_memory(dict(got)["c"]["x"].to_numpy(), x)
    assert list(judge_tables(t.iloc[:0])) == []


def test_parquet_written_in_slices_reads_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "PARQUET_ROWS", 4)
    n = 11
    df = pd.DataFrame({"pair_id": pd.Categorical([f"p{i % 5}" for i in range(n)]), "x": np.arange(n),
                       "late": [None] * 6 + ["s"] * 5,  # empty in the first slice: keeps its type
                       "verdict": ["A", "B", "", "tie"] * 2 + ["A"] * 3, "simulated": [False] * n})
    io.write_table(df, tmp_path / "t.parquet", provenance={"config_hash": "h1"})
    meta = pq.ParquetFile(tmp_path / "t.parquet")
    assert meta.metadata.num_row_groups == 3 and b"judgelab_provenance" in meta.schema_arrow.metadata
    back = io.read_table(tmp_path / "t.parquet")
    want = df.assign(config_hash="h1")
    assert back["pair_id"].dtype == "category" and back["late"].isna().sum() == 6
    pd.testing.assert_frame_equal(back.astype(object), want.astype(object).where(want.notna(), np.nan))
    io.write_table(df.iloc[:0], tmp_path / "empty.parquet")
    assert len(io.read_table(tmp_path / "empty.parquet")) == 0


@pytest.mark.parametrize("storage", ["category", "object", "str"])
def test_codes_and_per_unique_read_missing_values_as_empty(storage):
    col = pd.Series(["x", None, "yy", "x"], dtype=storage if storage != "str" else "str")
    codes, uniq = category_codes(col)
    assert codes[1] == -1 and codes[0] == codes[3] >= 0 and sorted(map(str, uniq)) == ["x", "yy"]
    seen: list[str] = []
    got = per_unique(col, lambda v: seen.append(v) or v.upper(), str)
    assert got.tolist() == ["X", "", "YY", "X"] and "" in seen
    t = pd.DataFrame({"c": col})
    assert column_strings(t, "c").tolist() == ["x", "", "yy", "x"]
    absent = column_strings(t, "nope")
    assert absent.tolist() == ["", "", "", ""] and absent.dtype == "<U1"
    assert is_any(np.array(["A", "tie", "", "B"]), ("A", "B")).tolist() == [True, False, False, True]
