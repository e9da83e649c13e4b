"""Raw win rate with an item-clustered confidence interval.

The win rate is AlpacaEval's ``AbsoluteScoringRule.describe_head2head`` (``metrics/helpers.py``):
the mean of ``preference - 1`` over the verdicts that state one (``0`` read as the tie 1.5,
``null`` dropped), times 100.  Against a baseline it is the model's mean preference against
it; in free battles it is the mean over all the model's games, whoever the opponent.

The interval is the normal interval of a ratio estimator with cluster-robust variance over
items: verdicts on one instruction (two games of one pair, several judges) are not independent,
so the variance is ``G/(G-1) * sum_g (S_g - n_g p)^2 / n^2`` over the ``G`` items (``S_g`` the
summed preference and ``n_g`` the verdicts of item ``g``).  A closed form, not a bootstrap,
because 200 models need it at once; it is the sandwich estimator statsmodels computes for an
intercept-only regression with ``cov_type="cluster"`` (the tests check that).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from judgelab.stats.intervals import DEFAULT_ALPHA, normal_critical


@dataclass(frozen=True)
class WinRate:
    n: int
    win_rate: float
    ci_low: float
    ci_high: float
    status: str


@functools.cache
def _z(alpha: float) -> float:
    """The normal quantile of the interval, once per level: 10,000 models would otherwise compute
    it 10,000 times."""
    return normal_critical(alpha)


def clustered_mean(y: np.ndarray, cluster: np.ndarray, alpha: float = DEFAULT_ALPHA) -> WinRate:
    """Mean of ``y`` (in [0, 1]) in percent with its item-clustered normal interval."""
    n = len(y)
    if n == 0:
        return WinRate(0, np.nan, np.nan, np.nan, "not estimable: no usable verdict")
    p = float(np.mean(y))
    _, inv = np.unique(cluster, return_inverse=True)
    g = int(inv.max()) + 1
    if g < 2:
        return WinRate(n, 100 * p, np.nan, np.nan, "no interval: all verdicts on one item")
    resid = np.bincount(inv, y - p, minlength=g)
    se = float(np.sqrt(g / (g - 1) * np.sum(resid**2)) / n)
    z = _z(float(alpha))
    lo, hi = max(0.0, p - z * se), min(1.0, p + z * se)
    return WinRate(n, 100 * p, 100 * lo, 100 * hi, "ok")


def win_rates(model: np.ndarray, y: np.ndarray, item: np.ndarray, n_models: int,
              alpha: float = DEFAULT_ALPHA) -> list[WinRate]:
    """One :class:`WinRate` per model code (games of other codes ignored)."""
    order = np.argsort(model, kind="stable")
    bounds = np.searchsorted(model[order], np.arange(n_models + 1))
    out = []
    for m in range(n_models):
        idx = order[bounds[m]:bounds[m + 1]]
        out.append(clustered_mean(y[idx], item[idx], alpha))
    return out
