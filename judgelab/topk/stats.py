"""The study's statistics (paper 002, Table 2, Table 3, Sec. 6 Q3), from scipy.

* :func:`paired_comparison` -- two methods scored on the same units (oracles, or oracle x
  seed runs): mean difference, paired t-test (scipy.stats.ttest_rel) and a paired
  bootstrap CI at level 1 - alpha (95 % by default) of the mean difference (scipy.stats.bootstrap over units, percentile
  method, the same resampled units for both methods).
* :func:`spearman` -- Spearman's rho across judges (scipy.stats.spearmanr).

Wilson intervals for proportions are in :mod:`judgelab.topk.probes` and
:mod:`judgelab.topk.llmbar` (statsmodels).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from judgelab.stats.intervals import DEFAULT_ALPHA

#: Relative spread below which paired differences count as constant.  Recall means over the same
#: oracles differ in the last bits when the two rules pick the same items in a different order
#: (sums of the same floats in another order), and a t-test on such noise divides by a variance of
#: ~1e-33: Table 3 printed p = 4e-47 from four per-oracle differences equal to 16 digits.
CONSTANT_RTOL = 1e-9


def no_variance_reason(d: np.ndarray) -> str:
    """Why paired differences ``d`` carry no p-value, or "" when they vary.

    A paired t-test divides the mean difference by its standard error; when every difference is
    the same number (to :data:`CONSTANT_RTOL` of its size) that error is zero or float noise, so the
    statistic is undefined (0/0) or arbitrarily large: no p-value is the honest answer, with the
    reason, never 0.0 or 1e-47."""
    d = np.asarray(d, dtype=float)
    if d.size < 2:
        return f"{d.size} paired unit(s): a paired test needs at least 2"
    spread = float(np.ptp(d))
    if spread <= CONSTANT_RTOL * max(1.0, float(np.max(np.abs(d)))):
        return f"every one of the {d.size} paired differences equals {float(np.mean(d)):.6g}: no variance, no test"
    return ""


def paired_comparison(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 2000, seed: int = 0,
                      alpha: float = DEFAULT_ALPHA) -> dict[str, float | int | str]:
    """``a - b`` on paired units: mean, paired-bootstrap CI at level ``1 - alpha``, paired t statistic
    and p-value.

    ``status`` is ``ok`` when the test ran, else ``no_variance`` (:func:`no_variance_reason`, with
    ``reason``): then ``t`` and ``p`` are NaN, and the interval of a constant difference is that
    constant (every resample gives it) where there are units at all."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.shape} vs {b.shape}")
    d = a - b
    n = len(d)
    out: dict[str, float | int | str] = {
        "n": n, "mean_a": float(a.mean()) if n else np.nan, "mean_b": float(b.mean()) if n else np.nan,
        "delta": float(d.mean()) if n else np.nan, "ci_low": np.nan, "ci_high": np.nan, "t": np.nan, "p": np.nan,
        "status": "ok", "reason": ""}
    reason = no_variance_reason(d)
    if reason:
        out.update(status="no_variance", reason=reason)
        if n >= 2:
            out.update(ci_low=float(d.mean()), ci_high=float(d.mean()))
        return out
    from scipy import stats  # here: the topk query jobs import this module and compare nothing

    t = stats.ttest_rel(a, b)
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
                          n_resamples=n_resamples, confidence_level=1 - alpha, method="percentile",
                          random_state=np.random.default_rng(seed))
    out.update(t=float(t.statistic), p=float(t.pvalue), ci_low=float(res.confidence_interval.low),
               ci_high=float(res.confidence_interval.high))
    return out


def spearman(x: ArrayLike, y: ArrayLike) -> dict[str, float]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.all(x[ok] == x[ok][0]) or np.all(y[ok] == y[ok][0]):
        return {"rho": np.nan, "p": np.nan, "n": int(ok.sum())}
    from scipy import stats

    r = stats.spearmanr(x[ok], y[ok])
    return {"rho": float(r.statistic), "p": float(r.pvalue), "n": int(ok.sum())}
