"""Cluster-robust statistics of shares and ratios from per-item totals, on plain numbers.

The bias card's verdicts are clustered by item (the two orders of a pair, repeated calls): a share's
variance is the variance of a ratio of cluster totals, and its binomial test runs on the effective n
this design effect gives.  The minimum detectable effect of such a test is here too, and the
percentile cluster bootstrap of a ratio of cluster totals.  Everything takes arrays and numbers,
never the card's settings, so that any study can use it."""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache

import numpy as np
import pandas as pd

from judgelab.stats.intervals import normal_critical

NAN = float("nan")


def _n_distinct(codes: np.ndarray) -> int:
    """Distinct values of an array; of non-negative integer codes by counting (np.unique sorts or hashes)."""
    codes = np.asarray(codes)
    if codes.dtype.kind in "iu" and len(codes) and codes.min() >= 0:
        return int(np.count_nonzero(np.bincount(codes)))
    return len(np.unique(codes))


def _cluster_codes(clusters: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniq = pd.factorize(np.asarray(clusters))
    return codes, len(uniq)


def ratio_cluster_variance(cn: np.ndarray, cd: np.ndarray) -> float:
    """Cluster-robust (linearised, CR0) variance of sum(cn) / sum(cd) from per-cluster totals.

    The delta-method variance of a ratio of cluster totals, sum(u_i^2) / D^2 with
    u_i = cn_i - r cd_i: the variance a cluster bootstrap estimates, without drawing
    resamples (O(items)).  CR0, so that one verdict per item gives a design effect of
    exactly 1; the small-sample correction is the t critical value of :func:`judgelab.stats.intervals.wilson_interval` with ``clusters``.
    NaN with fewer than two clusters: one item has no between-item variance to estimate.
    """
    k = len(cn)
    den = float(np.sum(cd))
    if k < 2 or den == 0:
        return NAN
    r = float(np.sum(cn)) / den
    u = cn - r * cd
    return float(np.dot(u, u) / den**2)


#: lower bound of the design effect with two or more items: the two orders of a pair can be
#: negatively correlated (a consistent judge picks A, then B), which makes the paired design
#: more efficient than independent verdicts; the floor keeps a noisy variance estimate from
#: shrinking n_eff away.  With one item the design effect is 1 (no clustered variance exists).
DEFF_FLOOR = 0.5


def design_effect(est: float, var_cluster: float, n: int, floor: float = DEFF_FLOOR) -> float:
    """Clustered over binomial variance (>= floor); 1 where either is unavailable or zero."""
    iid = est * (1 - est) / n if n else NAN
    if math.isnan(var_cluster) or not iid > 0:
        return 1.0
    return max(floor, var_cluster / iid)


def _share_stats(y: np.ndarray, clusters: np.ndarray, floor: float) -> tuple[float, float, float, int]:
    """(mean, cluster-robust variance, effective n, items) of a [0, 1] outcome clustered by item."""
    codes, k = _cluster_codes(clusters)
    n = len(y)
    cn = np.bincount(codes, weights=y, minlength=k)
    cd = np.bincount(codes, minlength=k).astype(float)
    est = float(cn.sum() / n)
    var = ratio_cluster_variance(cn, cd)
    return est, var, n / design_effect(est, var, n, floor), k


def _cohen_h(n: int, alpha: float, power: float) -> float:
    """The Cohen's h a two-sided one-sample z test on ``n`` trials detects with ``power``: the root of
    Phi(h sqrt(n) - z) + Phi(-h sqrt(n) - z) = power, z = Phi^-1(1 - alpha / 2) -- statsmodels'
    ``NormalIndPower().solve_power(nobs1=n, ratio=0)`` equation, solved with ``scipy.special``'s
    ``ndtr`` because statsmodels goes through scipy's distribution machinery (20 ms a call: most of
    a small card's time).  ``tests/bias_card/test_multiplicity.py`` checks the two agree."""
    from scipy.optimize import brentq
    from scipy.special import ndtr, ndtri

    z, root_n = normal_critical(alpha), math.sqrt(n)

    def gap(h: float) -> float:
        return float(ndtr(h * root_n - z) + ndtr(-h * root_n - z)) - power

    if gap(0.0) >= 0:  # power at most alpha: no effect at all is already rejected that often
        return 0.0
    hi = (z + float(ndtri(power)) + 1.0) / root_n
    while gap(hi) < 0:
        hi *= 2
    return float(brentq(gap, 0.0, hi, xtol=1e-12))


@lru_cache(maxsize=4096)
def _binomial_mde(n: int, p0: float, alpha: float, power: float) -> float:
    if n < 2:
        return NAN
    # h = 2 asin(sqrt(p1)) - 2 asin(sqrt(p0)), so asin(sqrt(p1)) = asin(sqrt(p0)) + h / 2
    h = _cohen_h(n, alpha, power)
    p1 = math.sin(min(math.pi / 2, math.asin(math.sqrt(p0)) + h / 2)) ** 2
    return float(p1 - p0)


def binomial_mde(n: float, p0: float, alpha: float, power: float) -> float:
    """Smallest p - p0 a two-sided test on n trials detects (Cohen's h, statsmodels power)."""
    return _binomial_mde(int(n), float(p0), alpha, power)


def _bootstrap_totals(cols: np.ndarray, n_resamples: int, seed: int, chunk_cells: int) -> np.ndarray:
    """(n_resamples, m) column totals of cluster resamples of the (k, m) per-cluster totals.

    Drawn in chunks of at most ``chunk_cells`` indices so that memory stays bounded for
    a million items.
    """
    k, m = cols.shape
    col = [np.ascontiguousarray(cols[:, j]) for j in range(m)]
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, m))
    chunk = max(1, min(n_resamples, chunk_cells // max(k, 1)))
    for start in range(0, n_resamples, chunk):
        r = min(chunk, n_resamples - start)
        idx = rng.integers(0, k, size=(r, k), dtype=np.int32)
        for j in range(m):  # contiguous 1-d gathers, summed along the last axis: the fast path
            out[start:start + r, j] = np.take(col[j], idx).sum(axis=1)
    return out


def cluster_ratio_ci(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, *, alpha: float,
                     n_resamples: int, seed: int, chunk_cells: int) -> tuple[float, float, float, float]:
    """(estimate, low, high, bootstrap variance) of sum(num)/sum(den), resampling whole clusters.

    The interval is the percentile interval at level ``1 - alpha`` (:data:`judgelab.stats.intervals.DEFAULT_ALPHA`
    says why alpha names the level) of ``n_resamples`` resamples
    drawn from ``seed`` in chunks of at most ``chunk_cells`` indices (:func:`_bootstrap_totals`).
    Hand-written because the statistic is a ratio of cluster totals whose resampled
    denominator can be zero; scipy.stats.bootstrap has no cluster resampling and fails
    on such resamples, here they are dropped (nan-percentiles).  With one cluster the
    interval is NaN: a percentile bootstrap over one item would have zero width.
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    if den.sum() == 0:
        return NAN, NAN, NAN, NAN
    codes, k = _cluster_codes(clusters)
    # the two views of a judge without fallback verdicts resample the same totals: drawn once
    memo_key = (hashlib.sha1(b"".join(np.ascontiguousarray(a).tobytes() for a in (num, den, codes))).hexdigest(),
                len(num), n_resamples, seed, chunk_cells, alpha)
    if memo_key in _RATIO_MEMO:
        return _RATIO_MEMO[memo_key]
    out = _cluster_ratio_ci(num, den, codes, k, alpha=alpha, n_resamples=n_resamples, seed=seed,
                            chunk_cells=chunk_cells)
    if len(_RATIO_MEMO) >= 8:
        _RATIO_MEMO.pop(next(iter(_RATIO_MEMO)))
    _RATIO_MEMO[memo_key] = out
    return out


#: the last few :func:`cluster_ratio_ci` answers, by a hash of their inputs and settings
_RATIO_MEMO: dict[tuple, tuple[float, float, float, float]] = {}


def _cluster_ratio_ci(num: np.ndarray, den: np.ndarray, codes: np.ndarray, k: int, *, alpha: float,
                      n_resamples: int, seed: int, chunk_cells: int) -> tuple[float, float, float, float]:
    cn = np.bincount(codes, weights=num, minlength=k)
    cd = np.bincount(codes, weights=den, minlength=k)
    est = float(cn.sum() / cd.sum())
    if k < 2:
        return est, NAN, NAN, NAN
    tot = _bootstrap_totals(np.column_stack([cn, cd]), n_resamples, seed, chunk_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(tot[:, 1] != 0, tot[:, 0] / tot[:, 1], NAN)  # x / 0 dropped like 0 / 0, not inf
    a = alpha / 2
    lo, hi = np.nanquantile(boot, [a, 1 - a])
    return est, float(lo), float(hi), float(np.nanvar(boot))
