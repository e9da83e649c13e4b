"""Table 3's building blocks at their edges: the correlation kernel on any stack of rows,
unmatched missing values, degenerate resamples, and the documented columns of every table.

The kernel (``_pearson_rows``) is what every rho and r of the study -- on the data and on
thousands of bootstrap resamples at once -- goes through, so it is checked against scipy
row by row, on a 1-D pair and on a 3-D stack, not only on the 2-D shape the tables use.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.scoring.metrics import (
    FLUCTUATION_COLUMNS,
    TABLE3_COLUMNS,
    _pearson_rows,
    correlation,
    correlation_tables,
)


def test_pearson_kernel_is_scipys_r_along_the_last_axis_of_any_shape():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 12))
    y = 0.5 * x + rng.normal(size=(2, 3, 12))
    r = _pearson_rows(x, y)
    assert r.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert r[i, j] == pytest.approx(stats.pearsonr(x[i, j], y[i, j]).statistic, abs=1e-12)
    assert float(_pearson_rows(x[0, 0], y[0, 0])) == pytest.approx(r[0, 0], abs=1e-12)


def test_a_value_missing_on_one_side_drops_the_pair():
    """``correlation`` pairs the jointly finite positions: a NaN on either side removes that item."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, np.nan, 5.0, 4.0, 6.0])
    x2 = np.array([np.nan, 2.0, 3.0, 4.0, 5.0, 6.0])
    both = np.isfinite(y)
    assert correlation(x, y, "r") == pytest.approx(stats.pearsonr(x[both], y[both]).statistic, abs=1e-12)
    assert correlation(x2, y, "r") == pytest.approx(stats.pearsonr(x2[1:][both[1:]], y[1:][both[1:]]).statistic,
                                                    abs=1e-12)
    assert correlation(x, y) == pytest.approx(stats.spearmanr(x[both], y[both]).statistic, abs=1e-12)


def test_degenerate_inputs_give_nan_silently():
    """A resample with constant scores or fewer than 3 pairs has no correlation: NaN, and no
    RuntimeWarning per resample (a run draws thousands)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(correlation([3, 3, 3, 3], [1, 2, 3, 4], "r"))
        assert np.isnan(correlation([1, 2, 3, 4], [2, 2, 2, 2]))
        assert np.isnan(correlation([1, 2], [2, 1], "r"))
        assert np.isnan(correlation([np.nan] * 4, [1, 2, 3, 4], "r"))


def _golds(gold) -> pd.DataFrame:
    return pd.DataFrame({"dataset": "d", "item_id": [f"i{i}" for i in range(len(gold))], "gold_source": "design",
                         "gold": np.asarray(gold, float)})


def _scores(variants: dict[str, list[int]]) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": "d", "item_id": f"i{i}", "judge": "j", "variant": v, "repeat": 0, "score": s}
                         for v, ys in variants.items() for i, s in enumerate(ys)])


@pytest.mark.parametrize("variants", [
    {"baseline": [1, 2, 3, 4, 5, 2], "letter": [2, 2, 3, 5, 4, 1]},  # full tables
    {"letter": [2, 2, 3, 5, 4, 1]},  # no baseline: no delta, no fluctuation rows
    {"baseline": [1, 2]},  # too few items: empty tables
])
def test_tables_have_the_documented_columns_in_order_whatever_the_input(variants):
    n = max(len(v) for v in variants.values())
    t3, fl = correlation_tables(_scores(variants), _golds([1, 2, 3, 4, 5, 3][:max(n, 2)]), n_boot=20)
    assert list(t3.columns) == TABLE3_COLUMNS
    assert list(fl.columns) == FLUCTUATION_COLUMNS
