"""The level of :func:`judgelab.topk.stats.paired_comparison`'s interval: its ends are the
``alpha / 2`` and ``1 - alpha / 2`` percentiles of the paired bootstrap distribution of the mean
difference (scipy's, drawn with the same generator and read off here with NumPy), so the interval
is at level ``1 - alpha``; the mean and the paired t-test do not depend on the level."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.topk.stats import paired_comparison


def _paired(seed: int = 2, n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    return a, a - 0.3 + rng.normal(scale=0.5, size=n)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.3])
def test_the_interval_ends_are_the_bootstrap_percentiles_at_alpha_over_two(alpha):
    a, b = _paired()
    got = paired_comparison(a, b, n_resamples=500, seed=4, alpha=alpha)
    dist = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True, n_resamples=500,
                           random_state=np.random.default_rng(4)).bootstrap_distribution
    want = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(tuple(want), rel=1e-12)
    assert got["ci_low"] < got["delta"] < got["ci_high"]


def test_a_larger_alpha_narrows_the_interval_and_leaves_the_test_alone():
    a, b = _paired()
    wide, narrow = (paired_comparison(a, b, n_resamples=500, seed=4, alpha=x) for x in (0.05, 0.3))
    assert wide["ci_low"] < narrow["ci_low"] < narrow["ci_high"] < wide["ci_high"]
    assert (wide["delta"], wide["t"], wide["p"]) == (narrow["delta"], narrow["t"], narrow["p"])
    assert paired_comparison(a, b, n_resamples=500, seed=4) == paired_comparison(a, b, n_resamples=500, seed=4,
                                                                                 alpha=DEFAULT_ALPHA)
