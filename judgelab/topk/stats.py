"""The study's statistics (paper 002, Table 2, Table 3, Sec. 6 Q3), from scipy.

* :func:`paired_comparison` -- two methods scored on the same units (oracles, or oracle x
  seed runs): mean difference, paired t-test (scipy.stats.ttest_rel) and a paired
  bootstrap 95% CI of the mean difference (scipy.stats.bootstrap over units, percentile
  method, the same resampled units for both methods).
* :func:`spearman` -- Spearman's rho across judges (scipy.stats.spearmanr).

Wilson intervals for proportions are in :mod:`judgelab.topk.probes` and
:mod:`judgelab.topk.llmbar` (statsmodels).
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def paired_comparison(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 2000, seed: int = 0,
                      confidence: float = 0.95) -> dict[str, float]:
    """``a - b`` on paired units: mean, paired-bootstrap CI, paired t statistic and p-value."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.shape} vs {b.shape}")
    d = a - b
    n = len(d)
    out = {"n": n, "mean_a": float(a.mean()) if n else np.nan, "mean_b": float(b.mean()) if n else np.nan,
           "delta": float(d.mean()) if n else np.nan, "ci_low": np.nan, "ci_high": np.nan, "t": np.nan, "p": np.nan}
    if n < 2:
        return out
    if np.all(d == d[0]):
        out.update(ci_low=float(d[0]), ci_high=float(d[0]), p=1.0 if d[0] == 0 else 0.0)
        return out
    t = stats.ttest_rel(a, b)
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
                          n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(seed))
    out.update(t=float(t.statistic), p=float(t.pvalue), ci_low=float(res.confidence_interval.low),
               ci_high=float(res.confidence_interval.high))
    return out


def spearman(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.all(x[ok] == x[ok][0]) or np.all(y[ok] == y[ok][0]):
        return {"rho": np.nan, "p": np.nan, "n": int(ok.sum())}
    r = stats.spearmanr(x[ok], y[ok])
    return {"rho": float(r.statistic), "p": float(r.pvalue), "n": int(ok.sum())}
