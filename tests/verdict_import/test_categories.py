"""The importer's category columns: chunks dictionary-encoded with their own narrow index types,
unified into one pandas Categorical equal to encoding the whole column at once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from judgelab.verdict_import.importer import _categorical, _narrow


@pytest.mark.parametrize("seed", range(5))
def test_chunks_with_mixed_index_types_unify_to_the_whole_columns_categorical(seed):
    rng = np.random.default_rng(seed)
    values = [f"v{i}" for i in range(40_000)] + ["é", ""]
    chunks, whole = [], []
    widths = []
    for n_distinct in (3, 200, 0, 1):  # int8, int16, int32 (33,000 distinct values) and int8 indices
        col = ([None if rng.random() < 0.1 else values[int(k)] for k in rng.integers(0, n_distinct, 500)]
               if n_distinct else [*values[:33_000], None])
        arr = _narrow(pa.array(col, pa.large_string()).dictionary_encode())
        width = arr.indices.type.bit_width
        assert width == (8 if len(arr.dictionary) < 128 else 16 if len(arr.dictionary) < 32768 else 32)
        widths.append(width)
        chunks.append(arr)
        whole += col
    assert widths == [8, 16, 32, 8]
    got = _categorical(chunks, "c")
    want = pd.Series(pd.Categorical(whole, categories=sorted({v for v in whole if v is not None})), name="c")
    assert not chunks  # the chunks are let go as they are read
    pd.testing.assert_series_equal(got.astype(object), want.astype(object))
    assert list(got.cat.categories) == list(want.cat.categories)  # sorted as the strings sort
    assert (got.isna() == pd.Series([v is None for v in whole])).all()


def test_no_chunk_and_all_null_chunks():
    assert len(_categorical([], "c")) == 0
    nulls = _narrow(pa.array([None, None], pa.large_string()).dictionary_encode())
    got = _categorical([nulls, nulls], "c")
    assert got.isna().all() and len(got) == 4 and len(got.cat.categories) == 0


def test_kept_chunks_have_one_owner():
    """The rows take the chunks a file's reader hands over and empty its list: the frame's column by
    column conversion then frees each column's chunks (a second reference would keep every chunk
    alive until the import returns: 0.8 GB more at ten million pairs)."""
    from judgelab.verdict_import.importer import FEATURE_TABLE_COLUMNS, _Rows

    rows = _Rows(texts=False)
    chunk = rows.encode({c: pa.array(["x", None], pa.large_string()) if c not in (
        "preference", "correct", "simulated", "source_row", "repeat", "words_a", "words_b", "markdown_a",
        "markdown_b", "has_text_a", "has_text_b") else pa.array([1, 0]).cast(
        {"correct": pa.bool_(), "simulated": pa.bool_(), "has_text_a": pa.bool_(), "has_text_b": pa.bool_()}.get(
            c, pa.float64())) for c in FEATURE_TABLE_COLUMNS})
    handed = [chunk, chunk]
    rows.append(handed)
    assert handed == [] and rows.n == 4
    df = rows.frame()
    assert len(df) == 4 and not rows.chunks and df["judge"].isna().tolist() == [False, True] * 2
    assert df["words_a"].dtype == np.float32 and df["repeat"].dtype == np.int32
