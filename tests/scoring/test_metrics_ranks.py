"""``rank_rows`` (counted average ranks) is scipy's ``rankdata(..., nan_policy="omit")`` exactly, in
every shape the bootstraps use: a flat vector, resamples x items, and a further leading axis."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgelab.scoring.metrics import rank_rows


@pytest.mark.parametrize("shape", [(9,), (40, 12), (3, 5, 7)])
def test_counted_ranks_are_scipys_exactly(shape):
    rng = np.random.default_rng(len(shape))
    for n_values in (1, 2, 5, 11):
        a = rng.integers(1, n_values + 1, shape).astype(float)
        a[rng.random(shape) < 0.25] = np.nan  # unparsed answers are not ranked
        want = stats.rankdata(a, axis=-1, nan_policy="omit")
        got = rank_rows(a)
        assert got.shape == a.shape
        np.testing.assert_array_equal(got, want)  # half-integers: exact in floating point


def test_a_row_with_nothing_to_rank_stays_nan_beside_ranked_rows():
    a = np.array([[np.nan, np.nan, np.nan], [2.0, 1.0, 2.0]])
    np.testing.assert_array_equal(rank_rows(a), [[np.nan] * 3, [2.5, 1.0, 2.5]])


def test_many_distinct_values_are_ranked_as_scipy_ranks_them():
    """Beyond 64 distinct values the counting gives way to scipy: still average ranks, NaN unranked."""
    rng = np.random.default_rng(7)
    a = np.round(rng.normal(size=(6, 150)), 2)  # about a hundred distinct values, with ties
    a[rng.random(a.shape) < 0.1] = np.nan
    assert len(np.unique(a[np.isfinite(a)])) > 64
    np.testing.assert_array_equal(rank_rows(a), stats.rankdata(a, axis=-1, nan_policy="omit"))
