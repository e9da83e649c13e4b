"""The study's paired tests and Spearman's rho (:mod:`judgelab.topk.stats`).

* The level of :func:`paired_comparison`'s interval: its ends are the ``alpha / 2`` and
  ``1 - alpha / 2`` percentiles of the paired bootstrap distribution of the mean difference (scipy's,
  drawn with the same generator and read off here with NumPy), so the interval is at level
  ``1 - alpha``; the mean and the paired t-test do not depend on the level.
* The t statistic and p-value equal R's on Student's sleep data and the formula by hand; t, the mean
  difference and the interval change sign with the order of the methods, p does not.
* No p-value without variance: no unit, one unit, or differences equal to within 1e-9 of their size give
  NaN with the reason, without a warning.
* :func:`spearman` equals scipy's documented example, changes sign with the order, leaves out
  non-finite and None pairs, and is NaN (without scipy's warning) below three pairs or for a
  constant side.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.topk.stats import no_variance_reason, paired_comparison, spearman


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


# Cushny & Peebles' sleep data (Student 1908); R: t.test(extra ~ group, data = sleep, paired = TRUE)
# gives t = -4.0621, df = 9, p-value = 0.002833: group 1 slept less, so a - b and t are negative
SLEEP_1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
SLEEP_2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])


def test_the_paired_t_test_equals_r_on_students_sleep_data_and_its_sign_follows_a_minus_b():
    r = paired_comparison(SLEEP_1, SLEEP_2, n_resamples=200)
    assert r["status"] == "ok" and r["reason"] == "" and r["n"] == 10
    assert r["t"] == pytest.approx(-4.0621, abs=1e-4) and r["p"] == pytest.approx(0.002833, abs=1e-6)
    assert (r["mean_a"], r["mean_b"], r["delta"]) == pytest.approx((0.75, 2.33, -1.58))
    assert r["ci_low"] < r["delta"] < r["ci_high"] < 0
    # by hand: t = mean(d) / (sd(d) / sqrt(n)) on d = a - b
    d = SLEEP_1 - SLEEP_2
    assert r["t"] == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(d.size)), rel=1e-12)
    # swapping the methods negates the difference, t and the interval, and keeps p
    s = paired_comparison(SLEEP_2, SLEEP_1, n_resamples=200)
    assert (s["t"], s["delta"], s["p"]) == pytest.approx((-r["t"], -r["delta"], r["p"]), rel=1e-12)
    assert (s["mean_a"], s["mean_b"]) == (r["mean_b"], r["mean_a"])
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((-r["ci_high"], -r["ci_low"]), rel=1e-12)


def test_the_defaults_are_2000_resamples_from_seed_0():
    """The published tables call it with the defaults: changing them would move every interval."""
    a, b = _paired(n=12)
    assert paired_comparison(a, b) == paired_comparison(a, b, n_resamples=2000, seed=0, alpha=DEFAULT_ALPHA)
    assert paired_comparison(a, b) != paired_comparison(a, b, seed=1)
    assert paired_comparison(a, b) != paired_comparison(a, b, n_resamples=2001)


def test_booleans_are_read_as_zero_and_one():
    """Per-unit hits of two methods may come as booleans (numpy cannot subtract those)."""
    a = np.array([True, True, False, True, True, False, True, True])
    b = np.array([False, True, False, False, True, False, False, True])
    got = paired_comparison(a, b, n_resamples=99)
    assert got == paired_comparison(a.astype(float), b.astype(float), n_resamples=99)
    assert got["status"] == "ok" and got["delta"] == pytest.approx(3 / 8) and got["t"] > 0


def test_single_precision_scores_are_compared_in_double_precision():
    """float32 scores (as a parquet column or a torch tensor holds them) give what their float64 copy gives:
    a float32 mean rounds to 24 bits."""
    a, b = (x.astype(np.float32) for x in _paired(seed=5, n=12))
    assert float(a.mean()) != float(a.astype(float).mean())  # the data tell the two precisions apart
    assert float(b.mean()) != float(b.astype(float).mean())
    got = paired_comparison(a, b, n_resamples=99)
    assert got == paired_comparison(a.astype(float), b.astype(float), n_resamples=99)
    assert got["mean_a"] == float(np.mean(a, dtype=float)) and got["mean_b"] == float(np.mean(b, dtype=float))


def _same(got: dict, want: dict) -> None:
    """Equal dicts, key order included, NaN equal to NaN."""
    assert list(got) == list(want)
    for k, v in want.items():
        assert (isinstance(v, float) and np.isnan(v) and np.isnan(got[k])) or got[k] == v, (k, got[k], v)


@pytest.mark.filterwarnings("error")  # no "mean of empty slice" either
def test_no_unit_one_unit_and_a_constant_difference_give_no_test_and_say_why():
    nan = float("nan")
    _same(paired_comparison(np.array([]), np.array([])),
          {"n": 0, "mean_a": nan, "mean_b": nan, "delta": nan, "ci_low": nan, "ci_high": nan, "t": nan, "p": nan,
           "status": "no_variance", "reason": "0 paired unit(s): a paired test needs at least 2"})
    _same(paired_comparison(np.array([0.5]), np.array([0.25])),
          {"n": 1, "mean_a": 0.5, "mean_b": 0.25, "delta": 0.25, "ci_low": nan, "ci_high": nan, "t": nan, "p": nan,
           "status": "no_variance", "reason": "1 paired unit(s): a paired test needs at least 2"})
    # two units suffice for an interval: that of a constant difference is the constant
    _same(paired_comparison(np.array([0.5, 1.0]), np.array([0.25, 0.75])),
          {"n": 2, "mean_a": 0.75, "mean_b": 0.5, "delta": 0.25, "ci_low": 0.25, "ci_high": 0.25, "t": nan,
           "p": nan, "status": "no_variance",
           "reason": "every one of the 2 paired differences equals 0.25: no variance, no test"})


def test_samples_of_different_lengths_are_refused_by_name():
    with pytest.raises(ValueError, match=r"paired samples differ in length: \(3,\) vs \(2,\)"):
        paired_comparison(np.zeros(3), np.zeros(2))


def test_the_constant_tolerance_is_1e_9_of_the_largest_difference_but_at_least_1e_9():
    assert no_variance_reason(np.array([0.0, 1e-9])) != ""  # the bound itself counts as constant
    assert no_variance_reason(np.array([0.0, 1.5e-9])) == ""  # differences below 1 in size: 1e-9 absolute
    assert no_variance_reason(np.array([10.0, 10.0 + 5e-9])) != ""  # above 1: relative to the largest
    assert no_variance_reason(np.array([-10.0, -10.0 - 1.5e-8])) == ""  # |d|, not d
    assert no_variance_reason(np.array([0.25, 0.25, 0.25])) == (
        "every one of the 3 paired differences equals 0.25: no variance, no test")


def test_integer_differences_do_not_wrap_around():
    """The spread of int64 differences at both ends of their range overflows in integers (to -2**63)."""
    assert no_variance_reason(np.array([-(2**62), 2**62])) == ""


def test_spearman_equals_scipys_documented_example_and_its_sign_follows_the_order():
    # scipy.stats.spearmanr's docstring: spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    # gives statistic=0.8207826816681233, pvalue=0.08858700531354381
    x, y = [1, 2, 3, 4, 5], [5, 6, 7, 8, 7]
    r = spearman(x, y)
    assert list(r) == ["rho", "p", "n"] and r["n"] == 5
    assert r["rho"] == pytest.approx(0.8207826816681233, rel=1e-12)
    assert r["p"] == pytest.approx(0.08858700531354381, rel=1e-9)
    # by hand: Pearson's r of the mid-ranks (the tie of the two 7s shares ranks 3 and 4)
    assert r["rho"] == pytest.approx(np.corrcoef([1, 2, 3, 4, 5], [1, 2, 3.5, 5, 3.5])[0, 1], rel=1e-12)
    rev = spearman(x, [-v for v in y])
    assert (rev["rho"], rev["p"]) == pytest.approx((-r["rho"], r["p"]), rel=1e-12)
    assert spearman([1, 2, 3], [3, 2, 1])["rho"] == pytest.approx(-1.0)


def test_spearman_leaves_out_the_pairs_with_a_non_finite_value():
    x = [1, 2, np.nan, 3, 4, 5, 9]
    y = [5, 6, 1, 7, 8, 7, np.inf]
    _same(spearman(x, y), spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]))
    # a missing value given as None (a list from JSON, an object column) is left out like NaN
    _same(spearman([1, 2, None, 3, 4, 5], [5, 6, 1, 7, 8, 7]), spearman(x, y))
    _same(spearman([1, 2, 6, 3, 4, 5], [5, 6, None, 7, 8, 7]), spearman(x, y))


@pytest.mark.filterwarnings("error")  # never scipy's ConstantInputWarning
def test_spearman_of_fewer_than_three_pairs_or_a_constant_side_is_nan():
    nan = float("nan")
    assert np.isfinite(spearman([1, 2, 3], [1, 3, 2])["rho"])  # three pairs suffice
    _same(spearman([1, 2], [2, 1]), {"rho": nan, "p": nan, "n": 2})
    _same(spearman([1, 2, np.nan, 4], [2, 1, 3, np.nan]), {"rho": nan, "p": nan, "n": 2})
    _same(spearman([1, 1, 1, 1], [1, 2, 3, 4]), {"rho": nan, "p": nan, "n": 4})
    _same(spearman([1, 2, 3, 4], [5, 5, 5, 5]), {"rho": nan, "p": nan, "n": 4})
    _same(spearman([7, 7, 7, np.nan], [1, 2, 3, 4]), {"rho": nan, "p": nan, "n": 3})
