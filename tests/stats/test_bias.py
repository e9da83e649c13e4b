"""Signed bias scores and their bootstrap CIs at the edges (mutation-tested, issue 13)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.stats.bias import BiasEstimate, bias_score, preference_signs


def test_preference_signs_count_ties_and_missing_as_zero():
    v = ["A", "B", "tie", "", None, "A", "B", "C"]
    t = ["A", "A", "A", "B", "A", "B", "B", "C"]
    assert preference_signs(v, t).tolist() == [1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 1.0, 0.0]
    assert preference_signs(pd.Series(v), pd.Series(t)).dtype == float
    with pytest.raises(ValueError, match=r"^verdicts and targets must have the same length$"):
        preference_signs(["A"], ["A", "B"])


def test_covers_is_inclusive():
    e = BiasEstimate(0.1, -0.2, 0.3, 10)
    assert e.covers(-0.2) and e.covers(0.3) and e.covers(0.0)
    assert not e.covers(-0.2001) and not e.covers(0.3001)


def test_empty_and_degenerate_inputs():
    e = bias_score([], [])
    assert math.isnan(e.b) and math.isnan(e.ci_low) and math.isnan(e.ci_high) and e.n == 0
    assert bias_score(["A"], ["A"]) == BiasEstimate(1.0, 1.0, 1.0, 1)
    assert bias_score(["B"], ["A"]) == BiasEstimate(-1.0, -1.0, -1.0, 1)
    # every sign equal: no spread to resample
    assert bias_score(["A", "A", "A"], ["A", "A", "A"]) == BiasEstimate(1.0, 1.0, 1.0, 3)
    assert bias_score(["tie", "tie"], ["A", "B"]) == BiasEstimate(0.0, 0.0, 0.0, 2)
    # two different signs are resampled: the interval spans both
    e = bias_score(["A", "B"], ["A", "A"], n_resamples=200)
    assert e.b == 0.0 and e.ci_low == -1.0 and e.ci_high == 1.0 and e.n == 2


def _data(n: int = 60, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = rng.choice(["A", "B", "tie"], size=n, p=[0.5, 0.3, 0.2])
    t = rng.choice(["A", "B"], size=n)
    return v, t


def test_bootstrap_ci_is_the_percentile_bootstrap_of_the_signs():
    v, t = _data()
    s = preference_signs(v, t)
    for kw in ({}, {"n_resamples": 500, "seed": 7, "alpha": 0.2}):
        e = bias_score(v, t, **kw)
        ref = stats.bootstrap((s,), np.mean, n_resamples=kw.get("n_resamples", 2000),
                              confidence_level=1 - kw.get("alpha", 0.05), method="percentile",
                              random_state=np.random.default_rng(kw.get("seed", 0)))
        assert e.b == pytest.approx(s.mean())
        assert (e.ci_low, e.ci_high) == (ref.confidence_interval.low, ref.confidence_interval.high)
        assert e.n == len(s)
    wide, narrow = bias_score(v, t), bias_score(v, t, alpha=0.5)
    assert wide.ci_low < narrow.ci_low < narrow.b < narrow.ci_high < wide.ci_high
    assert bias_score(v, t, seed=1) != bias_score(v, t, seed=2)


def test_groups_resample_whole_groups():
    # pair p0 seen 3 times (all for the target), p1..p3 once against it: the paper's score is
    # over rows (0 here), whatever the grouping; the mean of group means (-0.5) is not it
    v = ["A", "A", "A", "B", "B", "B"]
    t = ["A", "A", "A", "A", "A", "A"]
    g = ["p0", "p0", "p0", "p1", "p2", "p3"]
    assert bias_score(v, t).b == pytest.approx(0.0)
    e = bias_score(v, t, groups=g, n_resamples=300)
    assert e.b == pytest.approx(0.0) and e.n == 4
    # the interval: percentiles of the pooled score (signs summed / rows) over resamples of whole groups
    sums, counts = np.array([3.0, -1.0, -1.0, -1.0]), np.array([3.0, 1.0, 1.0, 1.0])
    draw = np.random.default_rng(0).integers(0, 4, size=(300, 4))
    pooled = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    assert (e.ci_low, e.ci_high) == pytest.approx(tuple(np.percentile(pooled, [2.5, 97.5])))
    with pytest.raises(ValueError, match=r"^groups must have one entry per verdict$"):
        bias_score(v, t, groups=g[:-1])
    # groups of equal size (a pair in both orders): the pooled resample is the mean of the group
    # means, which enter the bootstrap in sorted group order, whatever the row order
    v, t = _data(40, seed=8)
    g = np.array([f"q{(7 * i) % 20:02d}" for i in range(40)])
    e = bias_score(v, t, groups=g, n_resamples=400, seed=3)
    means = pd.Series(preference_signs(v, t)).groupby(g).mean().sort_index().to_numpy()
    ref = stats.bootstrap((means,), np.mean, n_resamples=400, confidence_level=0.95, method="percentile",
                          random_state=np.random.default_rng(3))
    assert (e.ci_low, e.ci_high) == (ref.confidence_interval.low, ref.confidence_interval.high)
    # groups whose members all agree collapse to one constant sign: no resampling
    assert bias_score(["A", "A"], ["A", "A"], groups=["x", "x"]) == BiasEstimate(1.0, 1.0, 1.0, 1)
