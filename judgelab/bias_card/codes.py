"""Integer codes of a verdict table's columns, the card's working form of its strings."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd


def category_codes(col: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """(code per row, -1 where missing; the values the codes index) of a column: a category column's
    own codes and categories (no copy: one byte a row for a handful of values, where
    ``pd.factorize`` would write eight), else ``pd.factorize``'s."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), col.cat.categories
    return pd.factorize(col, use_na_sentinel=True)


def per_unique(col: pd.Series, fn: Callable[[str], object], dtype: npt.DTypeLike) -> np.ndarray:
    """fn over the distinct values of a column only (missing as ""), broadcast back to the rows.

    Responses, labels and families repeat across the two orders and across pairs, and
    pandas' (Arrow) strings convert slowly to Python objects row by row: factorizing and
    evaluating once per distinct value keeps a million-row log fast.
    """
    codes, uniq = category_codes(col)
    vals = [fn("" if pd.isna(x) else str(x)) for x in uniq] + [fn("")]
    return np.asarray(vals, dtype=dtype)[codes]  # code -1 (missing) picks the last entry



def column_strings(t: pd.DataFrame, c: str) -> np.ndarray:
    if c not in t.columns:
        return np.full(len(t), "", dtype="<U1")
    return per_unique(t[c], str, str)


def judge_tables(table: pd.DataFrame) -> Iterator[tuple[Any, pd.DataFrame]]:
    """(judge, its rows) in sorted judge order, as ``groupby("judge")`` gives them; a judge whose
    rows are contiguous (one file per judge, as logs come) as a slice of ``table``, which pandas'
    copy-on-write does not copy (a judge of ten million rows would otherwise be copied whole)."""
    codes, uniq = pd.factorize(table["judge"], sort=True)
    n = len(uniq)
    if not n:
        return
    rows = np.flatnonzero(codes >= 0)
    first, last = np.zeros(n, np.int64), np.zeros(n, np.int64)
    first[codes[rows[::-1]]] = rows[::-1]  # the last assignment wins: the first row of each judge
    last[codes[rows]] = rows
    count = np.bincount(codes[rows], minlength=n)
    del rows
    for k, judge in enumerate(uniq):
        if last[k] - first[k] + 1 == count[k]:
            yield judge, table.iloc[first[k]:last[k] + 1]
        else:
            yield judge, table.iloc[np.flatnonzero(codes == k)]


def is_any(arr: np.ndarray, values: Sequence[Any]) -> np.ndarray:
    """``np.isin(arr, values)`` for a few values, as one comparison per value: ``np.isin`` sorts a
    string array (a copy and an index per row, ~30 bytes a row) where this holds one byte a row."""
    arr = np.asarray(arr)
    out = np.zeros(len(arr), bool)
    for v in values:
        out |= arr == v
    return out
