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
from scipy import stats


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
    confidence: float = 0.95,
) -> BiasEstimate:
    """Signed bias score with a bootstrap CI.

    ``groups`` (e.g. pair ids when each pair is shown in both orders) makes the
    bootstrap resample whole groups, keeping position-mirrored verdicts together.
    """
    s = preference_signs(verdicts, targets)
    if groups is not None:
        s = pd.Series(s).groupby(np.asarray(groups), sort=True).mean().to_numpy()
    n = len(s)
    if n == 0:
        return BiasEstimate(float("nan"), float("nan"), float("nan"), 0)
    b = float(s.mean())
    if n < 2 or np.all(s == s[0]):
        return BiasEstimate(b, b, b, n)
    res = stats.bootstrap((s,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                          method="percentile", random_state=np.random.default_rng(seed))
    return BiasEstimate(b, float(res.confidence_interval.low), float(res.confidence_interval.high), n)
