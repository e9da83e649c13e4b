"""Signed bias scores with bootstrap confidence intervals.

Paper 003's definition: on pairs whose expected verdict is a tie, with a *target*
side fixed per bias type (the markdown response, the longer response, slot A...),

    b = P(judge prefers target) - P(judge prefers the other side)   in [-1, 1].

A tie or a missing verdict counts in the denominator and for neither side, so a
judge that fails to parse often cannot look unbiased by omission.  The 95% CI is a
percentile bootstrap over pairs (scipy.stats.bootstrap, 2,000 resamples by default,
as in the paper).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.stats.intervals import DEFAULT_ALPHA


@dataclass(frozen=True)
class BiasEstimate:
    b: float
    ci_low: float
    ci_high: float
    n: int

    def covers(self, value: float) -> bool:
        return self.ci_low <= value <= self.ci_high


def preference_signs(verdicts: pd.Series | np.ndarray, targets: pd.Series | np.ndarray) -> np.ndarray:
    """+1 where the verdict picks the target slot, -1 the other slot, 0 for tie/none."""
    v = np.asarray(verdicts, dtype=object)
    t = np.asarray(targets, dtype=object)
    if v.shape != t.shape:
        raise ValueError("verdicts and targets must have the same length")
    picked = np.isin(v, ["A", "B"])
    return np.where(picked & (v == t), 1.0, np.where(picked, -1.0, 0.0))


def bias_score(
    verdicts: pd.Series | np.ndarray,
    targets: pd.Series | np.ndarray,
    *,
    groups: pd.Series | np.ndarray | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
) -> BiasEstimate:
    """Signed bias score with a bootstrap CI at level ``1 - alpha``.

    ``b`` is always the paper's pooled score over rows (pairs).  ``groups`` (e.g. question
    ids, when mirrored or swapped rows of one question share calls) makes the bootstrap a
    cluster bootstrap: whole groups are resampled and each resample's score is again the
    pooled one, sum of signs over number of rows.  (The mean of group means would be a
    different estimand whenever groups differ in size; for equal sizes, such as every pair
    shown in both orders, the two coincide, resample by resample.)  ``n`` counts the
    independent units: groups when given, else rows.
    """
    s = preference_signs(verdicts, targets)
    if groups is not None:
        if len(np.asarray(groups)) != len(s):
            raise ValueError("groups must have one entry per verdict")
        by = pd.Series(s).groupby(np.asarray(groups), sort=True)
        sums, counts = by.sum().to_numpy(), by.count().to_numpy().astype(float)
    else:
        sums, counts = s, np.ones_like(s)
    n = len(sums)
    if n == 0:
        return BiasEstimate(float("nan"), float("nan"), float("nan"), 0)
    b = float(sums.sum() / counts.sum())
    if n < 2 or np.all(sums / counts == b):
        return BiasEstimate(b, b, b, n)
    from scipy import stats  # here: the rules that import this module and bootstrap nothing skip scipy.stats

    res = stats.bootstrap((sums, counts), _pooled, paired=True, vectorized=True, n_resamples=n_resamples,
                          confidence_level=1 - alpha, method="percentile",
                          random_state=np.random.default_rng(seed))
    return BiasEstimate(b, float(res.confidence_interval.low), float(res.confidence_interval.high), n)


def _pooled(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pooled score of a resample of groups: its rows' signs summed over its rows."""
    return sums.sum(axis=axis) / counts.sum(axis=axis)
