"""Fast unit tests of the bias card's statistics (judgelab/bias_card/card.py), each checked against an
independent computation: statsmodels' cluster-robust OLS, Wilson's interval written out, McNemar's test
by hand, the power equation solved with brentq, the regression built from the documented cues.  They
call the card's functions directly (no CLI, no fixtures) so that a mutation run of card.py stays short."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import binomtest, chi2, norm
from scipy.stats import t as student_t

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import _finish, card_view, judge_card
from judgelab.bias_card.metrics import CARD_COLUMNS, JUDGE_METRICS, METRICS, PANEL_METRICS, CardRow, _guard
from judgelab.bias_card.prepare import _first_row_per_pair, _prepare
from judgelab.bias_card.rows_benchmark import arena_hard_pair_scores, judgebench_pair_correct
from judgelab.bias_card.rows_logit import _logit_rows
from judgelab.bias_card.rows_share import _order_gap_row, _position_row, _share_row
from judgelab.datasets.features import markdown_score, word_count
from judgelab.stats.clustered import (
    _bootstrap_totals,
    _share_stats,
    binomial_mde,
    cluster_ratio_ci,
    design_effect,
    ratio_cluster_variance,
)
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.mcnemar import mcnemar_mde
from tests.helpers.bias_card_logs import LONG, SHORT, Call, both_orders, break_everywhere, lengths, table

S = CardSettings(n_resamples=200)
Z95 = norm.ppf(0.975)


def wilson_by_hand(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval written out (Wilson 1927)."""
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def mde_by_hand(n: int, p0: float, alpha: float, power: float) -> float:
    """Cohen's h solving the two-sided one-sample normal power equation, mapped back to p1."""
    za = norm.ppf(1 - alpha / 2)

    def gap(h: float) -> float:
        return norm.sf(za - h * math.sqrt(n)) + norm.cdf(-za - h * math.sqrt(n)) - power

    h = brentq(gap, 1e-9, 10.0, xtol=1e-12)
    return math.sin(min(math.pi / 2, math.asin(math.sqrt(p0)) + h / 2)) ** 2 - p0


def by_metric(rows: list[dict]) -> dict[str, dict]:
    return {r["metric"]: r for r in rows}


# --------------------------------------------------------------------------------------------- clustered variance


def test_ratio_cluster_variance_equals_statsmodels_cr0_cluster_variance_of_the_mean():
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(9), [1, 2, 3, 4, 5, 6, 7, 8, 4])
    y = rng.random(len(g))
    cn, cd = np.bincount(g, weights=y), np.bincount(g).astype(float)
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": g, "use_correction": False})
    assert ratio_cluster_variance(cn, cd) == pytest.approx(fit.bse[0] ** 2, rel=1e-10)
    # a ratio with non-count denominators: sum(u^2) / D^2, u = cn - r cd
    cn, cd = np.array([1.0, 3.0, 2.0]), np.array([2.0, 2.0, 4.0])
    r = 6 / 8
    assert ratio_cluster_variance(cn, cd) == pytest.approx(((1 - 2 * r) ** 2 + (3 - 2 * r) ** 2 + (2 - 4 * r) ** 2) / 64)


def test_ratio_cluster_variance_needs_two_clusters_and_a_denominator():
    assert math.isnan(ratio_cluster_variance(np.array([3.0]), np.array([5.0])))
    assert ratio_cluster_variance(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(0.125)
    assert math.isnan(ratio_cluster_variance(np.array([0.0, 0.0]), np.array([0.0, 0.0])))
    # a denominator of one is a denominator
    assert ratio_cluster_variance(np.array([0.5, 0.0]), np.array([0.5, 0.5])) == pytest.approx(0.125)


def test_design_effect_is_clustered_over_binomial_variance_with_its_floor():
    iid = 0.25 / 100
    assert design_effect(0.5, 3 * iid, 100) == pytest.approx(3.0)
    assert design_effect(0.5, 0.6 * iid, 100) == pytest.approx(0.6)
    assert design_effect(0.5, 0.1 * iid, 100) == 0.5  # the default floor
    assert design_effect(0.5, 0.1 * iid, 100, floor=1.0) == 1.0
    assert design_effect(0.2, 0.16 / 50 * 2, 50) == pytest.approx(2.0)  # est (1 - est) / n, not 0.25 / n
    for est, var, n in ((0.0, 0.1, 10), (1.0, 0.1, 10), (0.5, NAN, 10), (0.5, 0.1, 0)):
        assert design_effect(est, var, n) == 1.0


NAN = float("nan")


def test_share_stats_effective_n_one_verdict_per_item_copies_and_anticorrelated_pairs():
    y = np.array([1.0] * 7 + [0.0] * 13)
    est, var, n_eff, k = _share_stats(y, np.arange(20), 0.5)
    assert (est, k) == (pytest.approx(0.35), 20) and n_eff == pytest.approx(20)  # CR0: design effect exactly 1
    assert var == pytest.approx(0.35 * 0.65 / 20)
    # five copies of each verdict inside its item: ten items' worth of evidence
    est, _, n_eff, k = _share_stats(np.repeat(y[:10], 5), np.repeat(np.arange(10), 5), 0.5)
    assert k == 10 and n_eff == pytest.approx(10)
    # one success and one failure per item: no between-item variance, the floor decides
    y2, g2 = np.array([1.0, 0.0] * 10), np.repeat(np.arange(10), 2)
    assert _share_stats(y2, g2, 0.5)[2] == pytest.approx(40)
    assert _share_stats(y2, g2, 1.0)[2] == pytest.approx(20)
    assert _share_stats(y2[:2], g2[:2], 0.5)[2] == pytest.approx(2)  # one item: design effect 1


def test_wilson_uses_student_t_on_items_minus_one_from_two_items():
    for k, z in ((0, Z95), (1, Z95), (2, student_t.ppf(0.975, 1)), (8, student_t.ppf(0.975, 7))):
        lo, hi = wilson_interval(0.3 * 40.0, 40.0, alpha=S.alpha, clusters=k)
        elo, ehi = wilson_by_hand(0.3, 40.0, z)
        assert (lo, hi) == (pytest.approx(elo, rel=1e-9), pytest.approx(ehi, rel=1e-9)), k
    lo, hi = wilson_interval(0.3 * 40.0, 40.0, alpha=0.2, clusters=5)
    elo, ehi = wilson_by_hand(0.3, 40.0, student_t.ppf(0.9, 4))
    assert (lo, hi) == (pytest.approx(elo), pytest.approx(ehi))


def test_binomial_mde_solves_the_power_equation_and_stays_a_probability():
    for n, p0, alpha, power in ((100, 0.5, 0.05, 0.8), (37, 0.3, 0.01, 0.9), (2, 0.5, 0.05, 0.8)):
        got = binomial_mde(n, p0, alpha, power)
        assert got == pytest.approx(mde_by_hand(n, p0, alpha, power), rel=1e-4)
    assert math.isnan(binomial_mde(1, 0.5, S.alpha, S.power)) and math.isnan(binomial_mde(0, 0.5, S.alpha, S.power))
    assert binomial_mde(3, 0.95, S.alpha, S.power) == pytest.approx(0.05)  # p1 capped at 1
    assert binomial_mde(100.6, 0.5, S.alpha, S.power) == binomial_mde(100, 0.5, S.alpha, S.power)  # whole trials


# --------------------------------------------------------------------------------------------- bootstrap


def test_bootstrap_totals_are_sums_of_k_resampled_clusters_whatever_the_chunk():
    k = 7
    cols = np.column_stack([np.ones(k), 10.0 ** np.arange(k)])
    tot = _bootstrap_totals(cols, 50, 3, 2_000_000)
    assert tot.shape == (50, 2) and (tot[:, 0] == k).all()
    # column 1 encodes how often each cluster was drawn (base 10 digits): k draws, each digit <= k
    digits = np.array([[int(t) // 10**j % 10 for j in range(k)] for t in tot[:, 1]])
    assert (digits.sum(axis=1) == k).all() and digits.std() > 0
    for cells in (1, k, 3 * k + 1, 10**9):
        again = _bootstrap_totals(cols, 50, 3, cells)
        assert np.array_equal(again, tot), cells
    assert not np.array_equal(_bootstrap_totals(cols, 50, 4, 2_000_000), tot)


def _ratio_ci(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, s: CardSettings
              ) -> tuple[float, float, float, float]:
    """The cluster bootstrap at the card settings' numbers, as the Arena-Hard row calls it."""
    return cluster_ratio_ci(num, den, clusters, alpha=s.alpha, n_resamples=s.n_resamples, seed=s.seed,
                            chunk_cells=s.chunk_cells)


def test_cluster_ratio_ci_is_the_percentile_interval_of_resampled_ratios():
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(30), 3)
    num, den = rng.integers(0, 2, 90).astype(float), np.ones(90)
    s = CardSettings(n_resamples=500, seed=5, alpha=0.1)
    est, lo, hi, var = _ratio_ci(num, den, g, s)
    cn, cd = np.bincount(g, weights=num), np.bincount(g, weights=den)
    tot = _bootstrap_totals(np.column_stack([cn, cd]), s.n_resamples, s.seed, s.chunk_cells)
    boot = tot[:, 0] / tot[:, 1]
    assert est == pytest.approx(num.sum() / 90)
    assert (lo, hi) == tuple(pytest.approx(q) for q in np.quantile(boot, [0.05, 0.95]))
    assert var == pytest.approx(np.var(boot))
    # resamples whose denominator is zero are dropped, not propagated
    est, lo, hi, var = _ratio_ci(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([0, 1]), s)
    assert est == 1.0 and (lo, hi) == (1.0, 1.0) and var == 0.0
    one = _ratio_ci(np.array([1.0, 2.0]), np.array([2.0, 2.0]), np.array([0, 0]), s)
    assert one[0] == 0.75 and all(math.isnan(x) for x in one[1:])
    assert all(math.isnan(x) for x in _ratio_ci(np.array([1.0]), np.array([0.0]), np.array([0]), s))


# --------------------------------------------------------------------------------------------- _finish


def fin(**kw) -> dict:
    return _finish(CardRow(**kw), S)


def test_finish_descriptive_rows_take_the_ci_half_width_as_mde():
    r = fin(metric="tie_rate", estimate=0.3, ci_low=0.2, ci_high=0.4)
    assert r["status"] == "descriptive" and r["estimable"] and r["mde"] == pytest.approx(0.1)
    assert not r["underpowered"]  # half-width 0.1 == threshold 0.10: not underpowered
    r = fin(metric="tie_rate", estimate=0.3, ci_low=0.1, ci_high=0.4)
    assert r["underpowered"] and r["status"] == "descriptive"
    r = fin(metric="tie_rate", estimate=0.3, ci_low=NAN, ci_high=0.4)
    assert r["underpowered"] and math.isnan(r["mde"])
    r = fin(metric="tie_rate", estimate=0.3, ci_low=0.2, ci_high=NAN)
    assert r["underpowered"] and math.isnan(r["mde"])
    r = fin(metric="tie_rate")
    assert r["status"] == "not estimable" and r["reason"] == "no estimate" and r["underpowered"]
    r = fin(metric="tie_rate", estimate=0.3, ci_low=0.2, ci_high=0.4, reason="why")
    assert r["status"] == "not estimable" and r["reason"] == "why" and not r["estimable"]


def _tested(**kw) -> dict:
    base = dict(metric="length_preference", estimate=0.7, ci_low=0.6, ci_high=0.8, se=0.05, null_value=0.5,
                test="binomial", p_value=0.001, mde=0.05, n=40, n_items=20)
    return fin(**{**base, **kw})


def test_finish_tested_rows_statuses_and_boundaries():
    r = _tested()
    assert r["status"] == "detected" and r["estimable"] and not r["underpowered"]
    assert type(r["n"]) is int and type(r["n_items"]) is int and type(r["underpowered"]) is bool
    assert _tested(identified=False)["status"] == "not identified"
    assert _tested(p_value=S.alpha)["status"] == "not detected"  # p must be below alpha
    assert _tested(ci_low=0.5)["status"] == "not detected"  # the CI must exclude the null (inclusive bounds)
    assert _tested(ci_low=0.3, ci_high=0.5)["status"] == "not detected"
    assert _tested(ci_low=0.2, ci_high=0.4)["status"] == "detected"  # excluded from above too
    assert _tested(ci_low=NAN)["status"] == "not detected" and _tested(ci_high=NAN)["status"] == "not detected"
    # not rejected: underpowered when the mde exceeds the threshold (0.10), or is unknown
    assert _tested(p_value=0.5, mde=0.1)["status"] == "not detected"
    r = _tested(p_value=0.5, mde=0.11)
    assert r["status"] == "underpowered" and r["underpowered"] and r["mde"] == 0.11
    assert _tested(p_value=0.5, mde=-0.11)["status"] == "underpowered"
    assert _tested(p_value=0.5, mde=NAN)["status"] == "underpowered"
    assert not _tested(mde=0.5)["underpowered"]  # rejected: a large mde does not matter


def test_finish_tested_rows_without_a_usable_se_or_p_value_are_not_estimable():
    for se, shown in ((0.0, "0"), (NAN, "nan"), (-0.1, "-0.1")):
        r = _tested(se=se)
        assert r["status"] == "not estimable" and r["underpowered"] and not r["estimable"]
        assert r["reason"] == f"standard error {shown}: the test has nothing to go on"
    assert _tested(p_value=NAN)["reason"] == "no p-value"
    assert _tested(reason="given", se=0.0)["reason"] == "given"  # the first reason stands
    assert _tested(estimate=NAN, se=0.0)["reason"] == "no estimate"
    r = _tested(identified=False, se=0.0)
    assert r["status"] == "not estimable"


# --------------------------------------------------------------------------------------------- _share_row


def test_share_row_binomial_test_on_independent_verdicts():
    succ = np.array([1] * 21 + [0] * 9 + [1, 1], dtype=bool)
    mask = np.array([True] * 30 + [False, False])
    r = _share_row("length_preference", mask, succ, np.arange(32), S, null=0.5, share_of=60, note="n",
                   identified=False)
    assert (r.estimate, r.n, r.n_items, r.share) == (pytest.approx(0.7), 30, 30, 0.5)
    assert (r.test, r.null_value, r.statistic, r.note, r.identified) == ("binomial", 0.5, 21.0, "n", False)
    assert r.p_value == pytest.approx(binomtest(21, 30, 0.5).pvalue)
    assert r.se == pytest.approx(math.sqrt(0.25 / 30))
    assert r.mde == pytest.approx(binomial_mde(30, 0.5, S.alpha, S.power))
    lo, hi = wilson_by_hand(0.7, 30, student_t.ppf(0.975, 29))
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi)) and r.reason == ""
    r3 = _share_row("length_preference", mask, succ, np.arange(32), S, null=0.3, share_of=0)
    assert r3.se == pytest.approx(math.sqrt(0.21 / 30)) and math.isnan(r3.share)
    assert r3.p_value == pytest.approx(binomtest(21, 30, 0.3).pvalue)
    assert r3.mde == pytest.approx(binomial_mde(30, 0.3, S.alpha, S.power))
    few = _share_row("length_preference", mask[:9], succ[:9], np.arange(9), S, null=0.5, share_of=9)
    assert few.reason == "fewer than 10 verdicts to test (9)"


def test_share_row_descriptive_and_empty():
    succ = np.array([1] * 6 + [0] * 14, dtype=bool)
    r = _share_row("tie_rate", np.ones(20, bool), succ, np.arange(20), S, null=None, share_of=20)
    assert r.test == "none" and math.isnan(r.null_value) and math.isnan(r.p_value) and math.isnan(r.mde)
    lo, hi = wilson_by_hand(0.3, 20, student_t.ppf(0.975, 19))
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert r.se == pytest.approx((hi - lo) / (2 * Z95)) and r.share == 1.0
    # one success and one failure per item: a tested share may gain from pairing (floor 0.5), a
    # descriptive one keeps the plain n (floor 1)
    y, g = np.array([1, 0] * 10, dtype=bool), np.repeat(np.arange(10), 2)
    d = _share_row("tie_rate", np.ones(20, bool), y, g, S, null=None, share_of=20)
    lo, hi = wilson_by_hand(0.5, 20, student_t.ppf(0.975, 9))
    assert (d.ci_low, d.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    t = _share_row("length_preference", np.ones(20, bool), y, g, S, null=0.5, share_of=20)
    assert t.se == pytest.approx(math.sqrt(0.25 / 40)) and t.p_value == pytest.approx(binomtest(20, 40).pvalue)
    e = _share_row("tie_rate", np.zeros(20, bool), y, g, S, null=0.5, share_of=40)
    assert e.reason == "no eligible verdicts" and e.share == 0.0 and math.isnan(e.estimate) and e.n == 0


# --------------------------------------------------------------------------------------------- position


def test_position_row_is_paper_003_b_with_its_score_test():
    shown = np.array(["A"] * 12 + ["B"] * 4 + ["tie"] * 4 + ["", ""])
    parsed = shown != ""
    r = _position_row(shown, parsed, np.arange(22), S, one_order=False)
    y = np.array([1.0] * 12 + [0.0] * 4 + [0.5] * 4)
    p = y.mean()
    n_eff = 20 / max(0.5, y.var() / (p * (1 - p)))  # one verdict per item: CR0 variance var(y) / n
    se_y = math.sqrt(0.25 / n_eff)
    zstat = (p - 0.5) / se_y
    assert (r.estimate, r.n, r.n_items, r.share) == (pytest.approx(0.4), 20, 20, pytest.approx(16 / 20))
    assert r.se == pytest.approx(2 * se_y) and r.statistic == pytest.approx(zstat)
    assert r.p_value == pytest.approx(2 * student_t.sf(zstat, 19))
    assert r.mde == pytest.approx(2 * binomial_mde(round(n_eff), 0.5, S.alpha, S.power))
    lo, hi = wilson_by_hand(p, n_eff, student_t.ppf(0.975, 19))
    assert (r.ci_low, r.ci_high) == (pytest.approx(2 * lo - 1), pytest.approx(2 * hi - 1))
    assert r.reason == "" and r.note == "" and r.identified and (r.test, r.null_value) == ("score", 0.0)
    # preferring the second slot is a negative b with the same two-sided p
    flip = np.where(shown == "A", "B", np.where(shown == "B", "A", shown))
    rf = _position_row(flip, parsed, np.arange(22), S, one_order=True)
    assert rf.estimate == pytest.approx(-0.4) and rf.p_value == pytest.approx(r.p_value)
    assert not rf.identified and rf.note == "only one presentation order recorded: b mixes position with gold"


def test_position_row_one_item_uses_the_normal_and_few_decisive_verdicts_are_not_tested():
    shown = np.array(["A"] * 7 + ["B"] * 2 + ["tie"] * 3)
    r = _position_row(shown, np.ones(12, bool), np.zeros(12, int), S, one_order=False)
    zstat = ((8.5 / 12) - 0.5) / math.sqrt(0.25 / 12)  # one item: design effect 1
    assert r.n_items == 1 and r.p_value == pytest.approx(2 * norm.sf(zstat))
    assert r.reason == "fewer than 10 decisive verdicts (9)"
    shown10 = np.array(["A"] * 7 + ["B"] * 3 + ["tie"] * 3)
    assert _position_row(shown10, np.ones(13, bool), np.arange(13), S, one_order=False).reason == ""
    e = _position_row(shown, np.zeros(12, bool), np.arange(12), S, one_order=False)
    assert e.reason == "no parsed verdict" and math.isnan(e.estimate)


# --------------------------------------------------------------------------------------------- order gap


def gap_pairs(only_swapped: int, only_stored: int, both: int) -> tuple[np.ndarray, np.ndarray]:
    ca = np.array([False] * only_swapped + [True] * only_stored + [True] * both)
    cb = np.array([True] * only_swapped + [False] * only_stored + [True] * both)
    return ca, cb


def test_order_gap_with_one_pair_per_item_is_mcnemars_uncorrected_test():
    ca, cb = gap_pairs(14, 4, 12)
    r = _order_gap_row(ca, cb, np.arange(30), S)
    assert r.estimate == pytest.approx(10 / 30) and (r.n, r.n_items) == (30, 30)
    assert r.statistic == pytest.approx((14 - 4) ** 2 / 18) and r.p_value == pytest.approx(chi2.sf(100 / 18, 1))
    assert r.se == pytest.approx(math.sqrt(18) / 30)
    assert (r.ci_low, r.ci_high) == (pytest.approx(1 / 3 - Z95 * r.se), pytest.approx(1 / 3 + Z95 * r.se))
    assert r.mde == pytest.approx(mcnemar_mde(30, 18 / 30, 0.05, 0.8))
    assert r.note == "discordant: 4 right only as stored, 14 only swapped" and r.reason == ""
    a = _order_gap_row(ca, cb, np.arange(30), CardSettings(alpha=0.01, power=0.9))
    assert a.mde == pytest.approx(mcnemar_mde(30, 18 / 30, 0.01, 0.9))
    assert a.ci_high - a.ci_low == pytest.approx(2 * norm.ppf(0.995) * a.se)  # the CI level is 1 - alpha


def test_order_gap_ci_is_clipped_to_minus_one_one():
    ca, cb = gap_pairs(10, 0, 0)
    r = _order_gap_row(ca, cb, np.arange(10), S)
    assert r.estimate == 1.0 and r.ci_high == 1.0 and r.ci_low == pytest.approx(1 - Z95 / math.sqrt(10))
    r = _order_gap_row(cb, ca, np.arange(10), S)
    assert r.estimate == -1.0 and r.ci_low == -1.0 and r.ci_high == pytest.approx(-1 + Z95 / math.sqrt(10))


def test_order_gap_design_effect_for_the_mde():
    # two items, each +1 -1 +1: sum d_i^2 = 2 over 6 discordant pairs, design effect at the 0.5 floor
    ca = np.array([False, True, False] * 2 + [True] * 4)
    cb = np.array([True, False, True] * 2 + [True] * 4)
    items = np.array([0, 0, 0, 1, 1, 1, 2, 3, 4, 5])
    r = _order_gap_row(ca, cb, items, S)
    assert r.mde == pytest.approx(mcnemar_mde(20, 0.6, 0.05, 0.8))
    assert r.reason == "fewer than 10 discordant pairs (6)"
    # one item: the design effect is at least 1
    r1 = _order_gap_row(ca, cb, np.zeros(10, int), S)
    assert r1.n_items == 1 and r1.mde == pytest.approx(mcnemar_mde(10, 0.6, 0.05, 0.8))
    # one item whose discordant pairs agree: sum d_i^2 = 16 over 8 discordant, design effect 2
    ca8, cb8 = gap_pairs(6, 2, 2)
    r2 = _order_gap_row(ca8, cb8, np.zeros(10, int), S)
    assert r2.mde == pytest.approx(mcnemar_mde(round(10 / 2), 0.8, 0.05, 0.8))
    assert r2.se == pytest.approx(4 / 10) and r2.statistic == pytest.approx(16 / 16)
    ca10, cb10 = gap_pairs(6, 4, 0)
    assert _order_gap_row(ca10, cb10, np.arange(10), S).reason == ""


def test_order_gap_without_evidence_is_not_tested():
    ca, cb = gap_pairs(1, 1, 3)
    r = _order_gap_row(ca, cb, np.zeros(5, int), S)  # +1 and -1 in one item cancel
    assert (r.se, r.statistic, r.p_value) == (0.0, 0.0, 1.0)
    assert r.reason == "no discordant pair, or every item's discordant pairs cancel"
    assert math.isnan(r.ci_low) and r.note == "discordant: 1 right only as stored, 1 only swapped"
    r = _order_gap_row(*gap_pairs(0, 0, 5), np.arange(5), S)
    assert r.reason.startswith("no discordant pair") and r.estimate == 0.0
    r = _order_gap_row(np.array([], bool), np.array([], bool), np.array([], int), S)
    assert r.reason == "no pair with gold recorded in both orders" and r.test == "mcnemar-cluster"


# --------------------------------------------------------------------------------------------- logit


def logit_table(n: int = 40, seed: int = 4, **kw) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    calls = []
    for i in range(n):
        ab, ba = (str(x) for x in rng.choice(["A", "B"], 2, p=[0.6, 0.4]))
        calls += both_orders(f"q{i // 2}", f"p{i}", ab, ba, gold=str(rng.choice(["A", "B"])),
                             response_a="# t\n- x\n" + " ".join(["w"] * int(rng.integers(3, 40))),
                             response_b=" ".join(["w"] * int(rng.integers(3, 40))), **kw)
    return table(calls)


def test_logit_rows_equal_a_regression_built_from_the_documented_cues():
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM

    t = logit_table()
    s = CardSettings(n_resamples=50, alpha=0.1, power=0.9)
    lg = _prepare(t, "lenient")
    rows = by_metric([r.__dict__ for r in _logit_rows(lg, np.ones(len(t), bool), s)])
    # the regression written out from the columns: picks the first shown ~ log2 length ratio (shown
    # first over second, clipped at +-3) + markdown difference + gold (+1 when gold is shown first)
    ab = (t["order"] == "AB").to_numpy()
    sign = np.where(ab, 1.0, -1.0)
    wa, wb = t["response_a"].map(word_count).to_numpy(float), t["response_b"].map(word_count).to_numpy(float)
    ma, mb = t["response_a"].map(markdown_score).to_numpy(float), t["response_b"].map(markdown_score).to_numpy(float)
    X = pd.DataFrame({"const": 1.0, "len": sign * np.clip(np.log2((wa + 1) / (wb + 1)), -3, 3), "md": sign * (ma - mb),
                      "gold": sign * np.where(t["expected_verdict"] == "A", 1.0, -1.0)})
    y = (t["verdict_shown"] == "A").to_numpy(float)
    fit = GLM(y, X, family=families.Binomial()).fit(cov_type="cluster",
                                                    cov_kwds={"groups": pd.factorize(t["item_id"])[0]})
    z = norm.ppf(0.95)
    for metric, col, others in (("length_controlled", "len", "md, gold"), ("markdown_controlled", "md", "len, gold")):
        r = rows[metric]
        b, se = fit.params[col], fit.bse[col]
        assert r["estimate"] == pytest.approx(b) and r["se"] == pytest.approx(se), metric
        assert (r["ci_low"], r["ci_high"]) == (pytest.approx(b - z * se), pytest.approx(b + z * se))
        assert r["p_value"] == pytest.approx(fit.pvalues[col]) and r["statistic"] == pytest.approx(b / se)
        assert r["mde"] == pytest.approx((norm.ppf(0.95) + norm.ppf(0.9)) * se)
        assert (r["n"], r["n_items"], r["test"], r["null_value"]) == (80, 20, "wald-cluster", 0.0)
        assert r["note"] == f"controls: position, {others}" and r["reason"] == ""


def logit_reasons(t: pd.DataFrame, mask: np.ndarray | None = None, s: CardSettings = S) -> list[str]:
    lg = _prepare(t, "lenient")
    return [r.reason for r in _logit_rows(lg, np.ones(len(t), bool) if mask is None else mask, s)]


def test_logit_rows_say_why_they_cannot_be_fitted():
    t = logit_table()
    mask = np.zeros(len(t), bool)
    mask[:9] = True
    assert logit_reasons(t, mask) == ["fewer than 10 decisive verdicts with response texts (9)"] * 2
    mask[:10] = True
    assert logit_reasons(t, mask)[0] != "fewer than 10 decisive verdicts with response texts (10)"
    one = t.copy()
    one["item_id"] = "q"
    assert logit_reasons(one) == ["one item: no clustered standard error"] * 2
    same = t.copy()
    same["verdict_shown"] = "B"
    assert logit_reasons(same) == ["every decisive verdict names the same slot: perfect separation"] * 2
    # markdown difference a multiple of the length ratio: collinear
    col = t.copy()
    col["response_a"], col["response_b"] = "# h\n" + " ".join(["w"] * 7), " ".join(["w"] * 3)
    reasons = logit_reasons(col)
    assert reasons == ["collinear regressors (len, md, gold)"] * 2
    # no markdown anywhere: the markdown row has no cue, the length row is fitted without it
    flat = t.copy()
    flat["response_a"] = flat["response_a"].str.replace("# t\n- x\n", "", regex=False)
    lg = _prepare(flat, "lenient")
    rows = _logit_rows(lg, np.ones(len(flat), bool), S)
    assert rows[1].reason == "no variation in this cue" and rows[1].n == 80 and rows[1].n_items == 20
    assert rows[0].reason == "" and rows[0].note == "controls: position, gold"
    # no gold: the regression has no gold column
    nog = t.copy()
    nog["expected_verdict"] = ""
    rows = _logit_rows(_prepare(nog, "lenient"), np.ones(len(nog), bool), S)
    assert rows[0].note == "controls: position, md" and rows[0].reason == ""


def test_logit_separation_is_not_estimable():
    # the verdict follows the length cue exactly: the first shown is picked when it is longer
    calls = []
    for i in range(30):
        kw = lengths(i)
        la, lb = len(kw["response_a"].split()), len(kw["response_b"].split())
        if la == lb:
            continue
        first = "A" if la > lb else "B"
        calls += both_orders(f"q{i}", f"p{i}", first, "B" if first == "A" else "A", **kw)
    t = table(calls)
    assert all("separation" in r for r in logit_reasons(t))
    ok = logit_table()
    se = _logit_rows(_prepare(ok, "lenient"), np.ones(len(ok), bool), S)[0].se
    capped = logit_reasons(ok, s=CardSettings(max_logit_se=se * 0.999))
    assert capped[0] == f"quasi-separation: standard error {se:.3g} > {se * 0.999:g}"
    assert logit_reasons(ok, s=CardSettings(max_logit_se=se))[0] == ""  # at the cap: kept


# --------------------------------------------------------------------------------------------- prepare


def test_prepare_builds_the_shown_frame_cues():
    calls = [Call("q0", "p0", "AB", "A", response_a=" ".join(["w"] * 63), response_b="w", gold="A"),
             Call("q0", "p0", "BA", "A", status="fallback", response_a=" ".join(["w"] * 63), response_b="w",
                  gold="A", label="B>>A"),
             Call("q1", "p1", "AB", "B", response_a="# h\n- x", response_b="plain", gold="B", label="A<<B"),
             Call("q1", "p1", "BA", "", status="unparsed", response_a="w w w", response_b="w", gold="", label="A>B")]
    t = table(calls)
    t.loc[2, "family_a"] = "openai"
    t.loc[3, "family_b"] = "openai"
    t.loc[3, "family_a"] = "openai"
    t.loc[1, "item_id"] = None  # a missing item falls back to its pair
    lg = _prepare(t, "lenient")
    assert lg.verdict.tolist() == ["A", "B", "B", ""] and lg.shown.tolist() == ["A", "A", "B", ""]
    assert lg.lenlr_shown[0] == 3.0 and lg.lenlr_shown[1] == -3.0  # log2(64 / 2) = 5 clipped at 3
    assert lg.lenlr_shown[3] == pytest.approx(-math.log2(4 / 2))  # BA: shown first is stored B
    assert lg.md_shown[2] == pytest.approx(markdown_score("# h\n- x") - markdown_score("plain"))
    assert lg.md_shown[2] > 0
    assert lg.gold_shown.tolist() == [1.0, -1.0, -1.0, 0.0]  # +1 when gold is the slot shown first
    assert lg.own.tolist() == ["", "", "A", ""] and lg.family == "openai"
    assert lg.strong.tolist() == [False, True, True, False] and lg.model_names(lg.model_b).tolist() == ["m2"] * 4
    assert lg.items[0] != lg.items[1] and lg.items[2] == lg.items[3]
    assert lg.pairs.tolist() == [0, 0, 1, 1] and lg.has_text.all()
    strict = _prepare(t, "strict")
    assert strict.verdict.tolist() == ["A", "", "B", ""] and strict.shown.tolist() == ["A", "", "B", ""]
    with pytest.raises(ValueError, match="unknown card view 'loose'"):
        _prepare(t, "loose")


def test_prepare_without_optional_columns():
    t = table(both_orders("q", "p", "A", "B"))[["judge", "pair_id", "order", "verdict", "verdict_shown"]]
    lg = _prepare(t, "lenient")
    assert lg.family == "unknown" and lg.own.tolist() == ["", ""] and not lg.strong.any()
    assert not lg.has_text.any() and lg.gold.tolist() == ["", ""] and lg.items.tolist() == lg.pairs.tolist()
    assert lg.model_names(lg.model_b).tolist() == ["", ""] and lg.wa.tolist() == [0.0, 0.0]


def test_first_row_per_pair_and_guard():
    pairs = np.array([0, 1, 0, 2, 1])
    assert _first_row_per_pair(pairs, np.array([True, True, True, False, True])).tolist() == [0, 1, -1]
    assert _first_row_per_pair(pairs, np.array([False, True, True, False, True])).tolist() == [2, 1, -1]
    assert _first_row_per_pair(np.array([], int), np.array([], bool)).tolist() == []
    assert [r.metric for r in _guard(("tie_rate",), lambda: CardRow("tie_rate", estimate=0.5))] == ["tie_rate"]

    def boom() -> CardRow:
        raise KeyError("x")

    rows = _guard(("a", "b"), boom)
    assert [(r.metric, r.reason) for r in rows] == [("a", "failed: KeyError: 'x'"), ("b", "failed: KeyError: 'x'")]


# --------------------------------------------------------------------------------------------- judge_card


def test_judge_card_accuracy_pairs_and_parse_counts():
    calls = []
    for i in range(12):  # gold A; AB right 9 of 12, BA right 6 of 12
        calls += both_orders(f"q{i}", f"p{i}", "A" if i < 9 else "B", "B" if i >= 6 else "tie")
    calls += [Call("q12", "p12", "AB", "", "unparsed"), Call("q13", "p13", "BA", "A")]
    t = table(calls)
    c = by_metric(judge_card(t, S))
    assert c["accuracy_AB"]["estimate"] == pytest.approx(9 / 13) and c["accuracy_AB"]["n"] == 13
    assert c["accuracy_BA"]["estimate"] == pytest.approx(6 / 13)
    assert c["accuracy_average"]["estimate"] == pytest.approx(15 / 26)
    assert c["accuracy_AB"]["null_value"] == 0.5 and c["accuracy_AB"]["test"] == "binomial"
    # pairs in both orders: 12; right in both: i in 6..8
    assert c["correct_both"]["estimate"] == pytest.approx(3 / 12) and c["correct_both"]["n"] == 12
    # same verdict in both orders (stored frame): shown A then B = A,A for i < 6 is not the case here
    va = np.array(["A"] * 9 + ["B"] * 3)
    vb = np.array(["tie"] * 6 + ["A"] * 6)
    assert c["positional_agreement_all"]["estimate"] == pytest.approx(float(np.mean(va == vb)))
    assert c["positional_agreement"]["n"] == 12 and c["positional_agreement"]["share"] == 1.0
    assert c["tie_rate"]["estimate"] == pytest.approx(6 / 26)
    assert c["parse_failures"]["estimate"] == pytest.approx(1 / 26)
    assert all(r["n_parsed"] == 25 and r["parsed_share"] == pytest.approx(25 / 26) for r in c.values())
    assert all(r["view"] == "lenient" for r in c.values())
    gap = c["accuracy_order_gap"]
    assert gap["estimate"] == pytest.approx((6 - 9) / 12) and gap["n"] == 12
    assert c["position_preference"]["n"] == 25 and c["position_preference"]["identified"]


def test_judge_card_notes_for_missing_gold_pairs_texts_and_family():
    calls = [Call(f"q{i}", f"p{i}", "AB", "A", gold="", response_a="", response_b="") for i in range(12)]
    t = table(calls, family="unknown")
    c = by_metric(judge_card(t, S))
    assert c["accuracy_AB"]["note"] == "no gold in this log" and c["accuracy_AB"]["reason"] == "no eligible verdicts"
    assert c["correct_both"]["note"] == "no pair was recorded in both orders"
    assert c["positional_agreement"]["note"] == "no pair was recorded in both orders"
    assert c["positional_agreement_all"]["note"] == "no pair was recorded in both orders"
    assert c["judgebench_accuracy"]["reason"] == "no pair was recorded in both orders"
    assert c["arena_hard_score"]["reason"] == "no pair was recorded in both orders"
    assert c["accuracy_order_gap"]["reason"] == "no pair with gold recorded in both orders"
    assert c["length_preference"]["note"] == "no response texts in this log"
    assert c["markdown_preference"]["note"] == "no response texts in this log"
    assert c["self_preference"]["note"] == "judge family unknown"
    assert c["position_preference"]["note"].startswith("only one presentation order")
    # both orders, gold present, texts and a family without own-family responses
    t2 = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")])
    c2 = by_metric(judge_card(t2, S))
    assert c2["correct_both"]["note"] == "" and c2["accuracy_AB"]["note"] == ""
    assert c2["length_preference"]["note"] == ("length ratio >= 1.2; judge share minus gold's (1.000 of these pairs "
                                               "have gold on the longer side); errors to the longer 0, away 0; "
                                               "quality controlled by gold labels")
    assert c2["markdown_preference"]["note"] == "markdown difference >= 0.25"  # no eligible pair: note kept
    assert c2["self_preference"]["note"] == "no pair with exactly one own-family response"
    assert c2["position_preference"]["note"] == ""
    t3 = t2.copy()
    t3["family_a"] = "openai"
    c3 = by_metric(judge_card(t3, S))
    # gold in the log: the own-family pick is read against gold's own share; gold is the own-family answer
    # in every pair and the judge agrees with gold, so nothing beyond gold is left (the raw share is 1)
    assert c3["self_preference"]["note"].endswith("quality controlled by gold labels")
    assert c3["self_preference"]["estimate"] == 0.0 and c3["self_preference"]["status"] == "not estimable"
    assert c3["self_preference"]["reason"].startswith("gold is on the cue side in every eligible pair")
    assert c3["self_preference"]["n"] == 24 and c3["self_preference"]["share"] == 1.0
    assert c3["self_share_raw"]["estimate"] == 1.0 and c3["self_share_raw"]["status"] == "descriptive"
    # the same picks without gold: confounded with answer quality, never a detection
    t3n = t3.assign(expected_verdict="")
    c3n = by_metric(judge_card(t3n, S))["self_preference"]
    assert c3n["status"] == "not identified" and c3n["estimate"] == 1.0
    assert c3n["note"].startswith("not identified: confounded with answer quality; no gold labels")
    t4 = t3.copy()
    t4["family"] = ""
    assert by_metric(judge_card(t4, S))["self_preference"]["note"] == "judge family unknown"


def test_length_and_markdown_margins_are_inclusive():
    def card(ra: str, rb: str, s: CardSettings = S) -> dict:
        calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", response_a=ra, response_b=rb)]
        return by_metric(judge_card(table(calls), s))

    five, six = " ".join(["w"] * 5), " ".join(["w"] * 6)
    assert card(six, five)["length_preference"]["n"] == 24  # 6 >= 1.2 x 5
    assert card(five, six)["length_preference"]["n"] == 24
    assert card(five, six)["length_preference"]["estimate"] == 0.0  # the judge names the shorter stored A
    assert card(six, five, CardSettings(n_resamples=50, length_margin=0.21))["length_preference"]["n"] == 0
    md = "# t\n" + five
    diff = markdown_score(md) - markdown_score(five)
    assert card(md, five, CardSettings(n_resamples=50, markdown_margin=diff))["markdown_preference"]["n"] == 24
    assert card(five, md, CardSettings(n_resamples=50, markdown_margin=diff))["markdown_preference"]["estimate"] == 0
    assert card(md, five, CardSettings(n_resamples=50, markdown_margin=diff + 1e-9))["markdown_preference"]["n"] == 0


def test_benchmark_rows_reasons_and_arena_hard_fields():
    calls = []
    for i in range(12):
        calls += both_orders(f"q{i // 3}", f"p{i}", "A", "B" if i % 3 else "tie", gold="", label="A>>B" if i % 2 else "")
    t = table(calls)
    t.loc[t.index % 4 == 0, "model_b"] = "m3"
    c = by_metric(judge_card(t, S))
    assert c["judgebench_accuracy"]["reason"] == "no gold in this log"
    ah = c["arena_hard_score"]
    num, den = arena_hard_pair_scores(t["verdict"].to_numpy()[::2], t["verdict"].to_numpy()[1::2],
                                      t["label"].str.contains(">>").to_numpy()[::2],
                                      t["label"].str.contains(">>").to_numpy()[1::2])
    assert ah["estimate"] == pytest.approx(num.sum() / den.sum()) and ah["n"] == 12 and ah["n_items"] == 4
    assert ah["share"] == 1.0 and ah["reason"] == "" and ah["se"] > 0 and ah["ci_low"] < ah["ci_high"]
    assert ah["se"] == pytest.approx(math.sqrt(ratio_cluster_variance(
        np.bincount(np.arange(12) // 3, weights=num), np.bincount(np.arange(12) // 3, weights=den))), rel=0.5)
    assert ah["note"].endswith("; pooled over 2 models") and ah["note"].startswith("lmarena/arena-hard-auto")
    one = t.copy()
    one["item_id"], one["model_b"] = "q", "m2"
    ah1 = by_metric(judge_card(one, S))["arena_hard_score"]
    assert ah1["reason"] == "one item: no cluster bootstrap interval" and ah1["status"] == "not estimable"
    assert ah1["note"] == "lmarena/arena-hard-auto show_result.py load_judgments; stored A is the baseline"
    nov = table([c for i in range(3) for c in both_orders(f"q{i}", f"p{i}", "A", "")])
    c = by_metric(judge_card(nov, S))
    assert c["arena_hard_score"]["reason"] == "no pair with a verdict in both games"
    assert c["judgebench_accuracy"]["estimate"] == 1.0  # one decisive right verdict and a missing one
    half = table([c for i in range(4) for c in both_orders(f"q{i}", f"p{i}", "A", "" if i % 2 else "B")])
    assert by_metric(judge_card(half, S))["arena_hard_score"]["share"] == 0.5


def test_arena_hard_pair_scores_weights_and_ties():
    num, den = arena_hard_pair_scores(np.array(["tie", "B", "A", "tie"]), np.array(["B", "B", "", "tie"]),
                                      np.array([False, True, False, False]), np.array([True, True, False, False]))
    assert num.tolist() == [0.5 + 3.0, 6.0, 0.0, 1.0] and den.tolist() == [4.0, 6.0, 0.0, 2.0]


# --------------------------------------------------------------------------------------------- bias_card


def test_bias_card_judges_views_family_and_simulated_flag():
    a = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")], judge="zeta", family="meta")
    b = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "A")], judge="alpha")
    a["simulated"] = "True"
    b["simulated"] = "0"
    card = bias_card(pd.concat([a, b], ignore_index=True), CardSettings(n_resamples=50))
    assert card["judge"].unique().tolist() == ["alpha", "zeta", "all judges"]  # the between-judge rows last
    assert card.groupby("judge")["family"].first().to_dict() == {"alpha": "openai", "zeta": "meta",
                                                                 "all judges": "panel"}
    # the between-judge rows are simulated when any judge is
    assert card.groupby("judge")["simulated"].first().to_dict() == {"alpha": False, "zeta": True, "all judges": True}
    b["simulated"] = "1"
    assert bias_card(b, CardSettings(n_resamples=50, views=("strict",)))["simulated"].all()
    nof = b.drop(columns=["family", "simulated"])
    card1 = bias_card(nof, CardSettings(n_resamples=50, views=("strict",)))
    assert (card1["family"] == "unknown").all() and not card1["simulated"].any()
    v = card_view(card, "strict")
    assert v.index.names == ["judge", "metric"] and len(v) == 2 * len(card1) + 1  # + the between-judge row
    assert v.loc[("alpha", "position_preference"), "estimate"] == 1.0
    one = card_view(card1, "strict")
    assert one.index.name == "metric" and one.loc["position_preference", "view"] == "strict"


def test_strict_view_of_a_judge_card_blanks_fallback_verdicts():
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B",
                                                       status_ab="fallback" if i < 3 else "ok")]
    strict = by_metric(judge_card(table(calls), S, view="strict"))
    assert strict["parse_failures"]["estimate"] == pytest.approx(3 / 24)
    assert strict["tie_rate"]["view"] == "strict" and strict["tie_rate"]["n_parsed"] == 21
    assert LONG != SHORT


# --------------------------------------------------------------------------------------------- edges


def test_one_verdict_is_one_trial():
    r = _share_row("length_preference", np.ones(1, bool), np.ones(1, bool), np.arange(1), S, null=0.5, share_of=1)
    assert r.statistic == 1.0 and r.p_value == 1.0 and math.isnan(r.mde)  # binomtest(1, 1): p = 1
    p = _position_row(np.array(["A"]), np.ones(1, bool), np.arange(1), S, one_order=False)
    assert p.estimate == 1.0 and math.isnan(p.mde) and p.p_value == pytest.approx(2 * norm.sf(1.0))


def test_prepare_reads_missing_texts_as_empty_and_clips_both_ways():
    calls = [Call("q0", "p0", "AB", "A", response_a="w", response_b=" ".join(["w"] * 63)),
             Call("q1", "p1", "AB", "A", response_a="w w", response_b="w")]
    t = table(calls)
    t.loc[1, "response_a"] = None
    t.loc[1, "response_b"] = None
    lg = _prepare(t, "lenient")
    assert lg.lenlr_shown[0] == -3.0 and lg.lenlr_shown[1] == 0.0
    assert lg.has_text.tolist() == [True, False] and lg.wa.tolist() == [1.0, 0.0] and lg.ma[1] == 0.0


def test_share_columns_of_the_card_rows():
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")]
    calls += both_orders("q12", "p12", "A", "A", response_a=SHORT, response_b=SHORT)  # no length cue
    calls += both_orders("q13", "p13", "tie", "")
    t = table(calls)
    t.loc[t["item_id"] == "q12", "family_b"] = "openai"
    c = by_metric(judge_card(t, S))
    for m in ("accuracy_AB", "accuracy_BA", "accuracy_average", "correct_both"):
        assert math.isnan(c[m]["share"]), m  # no denominator beyond the eligible verdicts
    n_dec = 26
    assert c["length_preference"]["n"] == 24 and c["length_preference"]["share"] == pytest.approx(24 / n_dec)
    assert c["self_preference"]["n"] == 2 and c["self_preference"]["share"] == pytest.approx(2 / n_dec)
    assert c["tie_rate"]["share"] == 1.0 and c["tie_rate"]["estimate"] == pytest.approx(1 / 28)
    assert c["positional_agreement"]["share"] == pytest.approx(13 / 14)
    notext = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", response_a="",
                                                              response_b="")])
    c = by_metric(judge_card(notext, S))
    assert c["length_preference"]["reason"] == "no eligible verdicts" and c["length_preference"]["n"] == 0
    assert c["length_controlled"]["reason"] == "fewer than 10 decisive verdicts with response texts (0)"


class FakeFit:
    """What GLM(...).fit returns (the fit on distinct rows), with chosen fitted probabilities."""

    def __init__(self, se: float, mu: float = 0.5):
        self.params = pd.Series({"len": 0.3, "md": 0.2, "gold": 0.1, "const": 0.0})
        self.fittedvalues = np.full(80, mu)


def fake_glm(monkeypatch, fit) -> None:
    import statsmodels.genmod.generalized_linear_model as glm_mod

    class GLM:
        def __init__(self, *a, **k):
            pass

        def fit(self, **k):
            return fit()

    from judgelab.bias_card import rows_logit

    monkeypatch.setattr(glm_mod, "GLM", GLM)
    # the clustered SEs of the fake fit (on fake fitted probabilities the sandwich would explode)
    monkeypatch.setattr(rows_logit, "_cluster_sandwich", lambda x, *a: np.full(x.shape[1], 0.5))


@pytest.mark.parametrize("se", [0.0, NAN, -1.0])
def test_logit_row_with_an_unusable_cluster_se_is_not_estimable(monkeypatch, se):
    from judgelab.bias_card import rows_logit

    # columns const, len, md, gold: the sandwich (never a bad SE on real data) gives len a bad one
    monkeypatch.setattr(rows_logit, "_cluster_sandwich", lambda *a: np.array([0.5, se, 0.5, 0.5]))
    t = logit_table()
    rows = _logit_rows(_prepare(t, "lenient"), np.ones(len(t), bool), S)
    assert rows[0].reason == f"cluster-robust standard error {se:.3g}" and math.isnan(rows[0].statistic)
    assert rows[1].reason == "" and rows[1].statistic == pytest.approx(rows[1].estimate / 0.5)


def test_logit_separation_signalled_by_statsmodels_or_by_fitted_probabilities(monkeypatch):
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    t = logit_table()
    lg, dec = _prepare(t, "lenient"), np.ones(len(t), bool)

    def raises():
        raise PerfectSeparationError("separated")

    def warns():
        warnings.warn("separated", PerfectSeparationWarning, stacklevel=1)
        return FakeFit(0.5)

    for fit, reason in ((raises, "perfect separation"), (warns, "perfect separation"),
                        (lambda: FakeFit(0.5, mu=1 - 1e-9), "quasi-separation: fitted probabilities at 0 or 1"),
                        (lambda: FakeFit(0.5, mu=1e-9), "quasi-separation: fitted probabilities at 0 or 1")):
        fake_glm(monkeypatch, fit)
        assert [r.reason for r in _logit_rows(lg, dec, S)] == [reason] * 2
    for mu in (1 - 1e-7, 1e-7):
        fake_glm(monkeypatch, lambda mu=mu: FakeFit(0.5, mu=mu))
        assert [r.reason for r in _logit_rows(lg, dec, S)] == ["", ""]


def test_rows_without_pairs_are_untested_with_no_null():
    c = by_metric(judge_card(table([Call(f"q{i}", f"p{i}", "AB", "A") for i in range(3)]), S))
    for m in ("judgebench_accuracy", "arena_hard_score"):
        assert c[m]["test"] == "none" and math.isnan(c[m]["null_value"]) and c[m]["status"] == "not estimable"
    nov = by_metric(judge_card(table([c for i in range(3) for c in both_orders(f"q{i}", f"p{i}", "A", "")]), S))
    assert nov["arena_hard_score"]["test"] == "none" and math.isnan(nov["arena_hard_score"]["null_value"])
    nog = by_metric(judge_card(table([c for i in range(3) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")]),
                               S))
    assert nog["judgebench_accuracy"]["test"] == "none" and math.isnan(nog["judgebench_accuracy"]["null_value"])


def test_judgebench_inconsistent_pairs_count_wrong_whatever_the_gold():
    for gold, other in (("A", "B"), ("B", "A")):
        ab, ba = np.array([gold, other, gold, "tie"]), np.array([other, gold, "tie", other])
        assert judgebench_pair_correct(ab, ba, np.array([gold] * 4)).tolist() == [False, False, True, False]


def test_card_columns_and_judges_without_verdicts():
    t = table([c for i in range(3) for c in both_orders(f"q{i}", f"p{i}", "A", "B")], judge="b")
    t["judge"] = pd.Categorical(t["judge"], categories=["a", "b"])  # "a" has no verdict
    card = bias_card(t, CardSettings(n_resamples=20))
    assert list(card.columns) == CARD_COLUMNS and set(card["judge"]) == {"b"} and len(card) == 2 * len(JUDGE_METRICS)


def test_judgebench_pair_without_gold_is_never_correct():
    none = np.array(["", "", "tie"])
    assert not judgebench_pair_correct(none, np.array(["", "A", "tie"]), np.array(["", "", ""])).any()


def test_resamples_with_a_zero_denominator_raise_no_numpy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0/0 and x/0 resamples are dropped silently, never printed
        for num in ([1.0, 0.0], [1.0, 1.0]):
            est, lo, hi, _ = _ratio_ci(np.array(num), np.array([1.0, 0.0]), np.array([0, 1]), S)
            assert est == sum(num) and lo <= hi
    # x / 0 is dropped like 0 / 0 (an infinite ratio would make the interval infinite or NaN)
    assert (lo, hi) == (1.0, 2.0)


def test_prepare_has_text_when_either_response_has_one_and_markdown_in_the_shown_frame():
    calls = [Call("q0", "p0", "AB", "A", response_a="", response_b="w"),
             Call("q0", "p0", "BA", "A", response_a="# h\n- x", response_b="plain")]
    lg = _prepare(table(calls), "lenient")
    assert lg.has_text.tolist() == [True, True]
    assert lg.md_shown[1] == pytest.approx(markdown_score("plain") - markdown_score("# h\n- x")) and lg.md_shown[1] < 0


def test_pairs_without_gold_say_so_and_the_judgebench_row_names_its_source():
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="" if i < 4 else "A")]
    c = by_metric(judge_card(table(calls), S))
    jb = c["judgebench_accuracy"]
    assert jb["n"] == 8 and jb["share"] == pytest.approx(8 / 12) and jb["estimate"] == 1.0
    assert jb["note"] == "ScalerLab/JudgeBench utils/metrics.py compute_final_metrics"
    nog = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")])
    c = by_metric(judge_card(nog, S))
    assert c["correct_both"]["note"] == "no gold in this log" and c["correct_both"]["reason"] == "no eligible verdicts"


def test_logit_rows_that_cannot_be_fitted_keep_their_counts():
    t = logit_table()
    one = t.copy()
    one["item_id"] = "q"
    for r in _logit_rows(_prepare(one, "lenient"), np.ones(len(t), bool), S):
        assert (r.test, r.null_value, r.n, r.n_items) == ("wald-cluster", 0.0, 80, 1)
    flat = t.copy()
    flat["response_a"] = flat["response_a"].str.replace("# t\n- x\n", "", regex=False)
    r = _logit_rows(_prepare(flat, "lenient"), np.ones(len(flat), bool), S)[1]
    assert (r.test, r.null_value, r.metric) == ("wald-cluster", 0.0, "markdown_controlled")
    assert math.isnan(r.estimate) and math.isnan(r.se)


def test_two_items_are_enough_for_clustered_inference():
    # order gap: two items of +1 -1 +1, design effect at the 0.5 floor (one item would keep 1)
    ca = np.array([False, True, False] * 2)
    r = _order_gap_row(ca, ~ca, np.array([0, 0, 0, 1, 1, 1]), S)
    assert r.n_items == 2 and r.mde == pytest.approx(mcnemar_mde(12, 1.0, 0.05, 0.8))
    # position: two items, the p-value is Student's t on one df
    shown = np.array(["A"] * 8 + ["B"] * 4)
    p = _position_row(shown, np.ones(12, bool), np.repeat([0, 1], 6), S, one_order=False)
    assert p.n_items == 2 and p.p_value == pytest.approx(2 * student_t.sf(abs(p.statistic), 1))


def test_arena_hard_score_whose_pairs_all_score_alike_is_not_estimable():
    # every pair scores 0 for stored B: the bootstrap cannot vary, so its zero-width interval is no evidence
    calls = [c for i in range(6) for c in both_orders(f"q{i % 2}", f"p{i}", "A", "B", gold="")]
    ah = by_metric(judge_card(table(calls), S))["arena_hard_score"]
    assert ah["estimate"] == 0.0 and ah["se"] == 0.0 and ah["ci_low"] == ah["ci_high"] == 0.0
    assert ah["status"] == "not estimable" and not ah["estimable"]
    assert ah["reason"] == "every pair scores 0: the cluster bootstrap interval has zero width"
    # each pair 0.5 (the judge names the first-shown answer in both games, as on FastChat's real records)
    calls = [c for i in range(6) for c in both_orders(f"q{i}", f"p{i}", "A", "A", gold="")]
    ah = by_metric(judge_card(table(calls), S))["arena_hard_score"]
    assert ah["estimate"] == 0.5 and ah["status"] == "not estimable" and "zero width" in ah["reason"]
    # pairs that differ give a real interval, and the row is descriptive
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A" if i % 3 else "B", "B", gold="")]
    ah = by_metric(judge_card(table(calls), S))["arena_hard_score"]
    assert ah["ci_low"] < ah["estimate"] < ah["ci_high"] and ah["se"] > 0
    assert ah["status"] == "descriptive" and ah["reason"] == ""


def test_judgebench_row_in_the_card_counts_gold_b_and_inconsistent_pairs():
    calls = []
    for i in range(12):
        gold = "A" if i % 2 else "B"
        other = "B" if gold == "A" else "A"
        # shown verdicts; BA names the swapped slot: right in both (i < 6), right as stored only (i >= 6)
        calls += both_orders(f"q{i}", f"p{i}", gold, other if i < 6 else gold, gold=gold)
    jb = by_metric(judge_card(table(calls), S))["judgebench_accuracy"]
    assert jb["n"] == 12 and jb["share"] == 1.0 and jb["estimate"] == pytest.approx(0.5)


def test_a_failing_judgebench_score_leaves_the_arena_hard_row(monkeypatch):
    import judgelab.bias_card.rows_benchmark as rows_benchmark

    def boom(*a):
        raise ValueError("bad pair")

    monkeypatch.setattr(rows_benchmark, "judgebench_pair_correct", boom)
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A" if i % 3 else "B", "B")]
    c = by_metric(judge_card(table(calls), S))
    assert c["judgebench_accuracy"]["reason"] == "failed: ValueError: bad pair"
    assert c["arena_hard_score"]["reason"] == "" and c["arena_hard_score"]["estimate"] > 0


@pytest.mark.parametrize("fn, failing", [
    ("_share_row", {"accuracy_AB", "accuracy_BA", "accuracy_average", "correct_both", "judgebench_accuracy",
                    "positional_agreement", "positional_agreement_all", "length_share_raw", "markdown_share_raw",
                    "self_share_raw", "length_error_share", "markdown_error_share", "self_error_share", "tie_rate", "parse_failures", "human_accuracy", "human_kappa",
                    "ppi_win_rate", "ppi_share_A", "ppi_share_B", "ppi_share_tie"}),
    ("_benchmark_rows", {"judgebench_accuracy", "arena_hard_score"}),
    ("_order_gap_row", {"accuracy_order_gap"}),
    ("_position_row", {"position_preference"}),
    ("_logit_rows", {"length_controlled", "markdown_controlled"}),
])
def test_every_metric_keeps_its_row_when_its_statistic_fails(monkeypatch, fn, failing):
    def boom(*a, **k):
        raise RuntimeError("broken")

    break_everywhere(monkeypatch, fn, boom)
    rows = judge_card(logit_table(), S)
    assert sorted(r["metric"] for r in rows) == sorted(set(METRICS) - set(PANEL_METRICS))  # panel rows: bias_card
    assert {r["metric"] for r in rows if r["reason"] == "failed: RuntimeError: broken"} == failing


def test_a_pair_counts_whichever_order_is_stored_first():
    calls = [c for i in range(12) for c in reversed(both_orders(f"q{i}", f"p{i}", "A", "B"))]
    c = by_metric(judge_card(table(calls), S))
    assert c["correct_both"]["n"] == 12 and c["positional_agreement"]["n"] == 12


def test_length_and_markdown_preference_count_picks_of_either_stored_slot():
    def card(ra: str, rb: str, shown: tuple[str, str], s: CardSettings = S) -> dict:
        calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", *shown, response_a=ra, response_b=rb)]
        return by_metric(judge_card(table(calls), s))

    five, six = " ".join(["w"] * 5), " ".join(["w"] * 6)
    picks_a, picks_b = ("A", "B"), ("B", "A")  # shown verdicts naming stored A / stored B in both orders
    # the raw share (the bias row with gold is its excess over gold's share: gold is stored A here)
    assert card(six, five, picks_a)["length_share_raw"]["estimate"] == 1.0
    assert card(five, six, picks_b)["length_share_raw"]["estimate"] == 1.0
    assert card(five, six, picks_a)["length_share_raw"]["estimate"] == 0.0
    assert card(five, six, picks_b)["length_preference"]["estimate"] == 1.0  # gold is never the longer
    md = "# t\n" + five
    s = CardSettings(n_resamples=50, markdown_margin=markdown_score(md) - markdown_score(five))
    assert card(md, five, picks_a, s)["markdown_share_raw"]["estimate"] == 1.0
    assert card(five, md, picks_b, s)["markdown_share_raw"]["estimate"] == 1.0
    assert card(md, five, picks_b, s)["markdown_share_raw"]["estimate"] == 0.0
    assert card(md, five, picks_b, s)["markdown_preference"]["estimate"] == -1.0  # gold is always the formatted
    same = card(md, md, picks_a, s)["markdown_preference"]  # equally formatted: no markdown cue
    assert same["n"] == 0 and same["reason"] == "no eligible verdicts"
    pa = card(six, five, picks_a)
    assert pa["positional_agreement_all"]["share"] == 1.0 and pa["positional_agreement"]["share"] == 1.0


def test_cue_preferences_without_gold_are_binomial_tests_against_a_half_over_decisive_verdicts():
    md = "# t\n" + " ".join(["w"] * 5)
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", response_a=md + " w w w",
                                                       response_b="w")]
    calls += both_orders("q12", "p12", "A", "B", response_a="w", response_b="w")  # no cue, still decisive
    t = table(calls).assign(expected_verdict="")  # with gold the rows are read against it (t-cluster)
    t.loc[t["item_id"] != "q12", "family_a"] = "openai"
    c = by_metric(judge_card(t, S))
    for m in ("length_preference", "markdown_preference", "self_preference"):
        assert (c[m]["test"], c[m]["null_value"], c[m]["n"]) == ("binomial", 0.5, 24), m
        assert c[m]["share"] == pytest.approx(24 / 26) and c[m]["estimate"] == 1.0, m


@pytest.mark.parametrize("family", ["", "unknown"])
def test_an_unknown_judge_family_matches_no_response(family):
    t = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")], family=family)
    t["family_a"] = family  # responses whose family is as unknown as the judge's
    c = by_metric(judge_card(t, S))
    sp = c["self_preference"]
    assert sp["n"] == 0 and sp["note"] == "judge family unknown" and sp["status"] == "not estimable"
    assert c["parse_failures"]["share"] == 1.0 and c["tie_rate"]["share"] == 1.0


def test_an_empty_log_leaves_every_row_not_estimable():
    rows = judge_card(table([]), S)
    assert sorted(r["metric"] for r in rows) == sorted(set(METRICS) - set(PANEL_METRICS))  # panel rows: bias_card
    assert all(r["status"] == "not estimable" and r["reason"] for r in rows)
    assert all(r["n_parsed"] == 0 and math.isnan(r["parsed_share"]) for r in rows)


def test_rows_without_a_note_have_an_empty_note_and_the_order_gap_tests_zero():
    c = by_metric(judge_card(table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")]), S))
    assert c["tie_rate"]["note"] == "" and c["parse_failures"]["note"] == ""
    ca, cb = gap_pairs(14, 4, 12)
    for r in (_order_gap_row(ca, cb, np.arange(30), S), _order_gap_row(ca[:0], cb[:0], np.arange(0), S)):
        assert r.null_value == 0.0
    # a single discordant pair is tested (and is too few), not taken for "no discordant pair"
    one = _order_gap_row(*gap_pairs(1, 0, 4), np.arange(5), S)
    assert one.statistic == 1.0 and one.p_value == pytest.approx(chi2.sf(1.0, 1))
    assert one.reason == "fewer than 10 discordant pairs (1)"


def test_order_gap_mde_of_a_single_pair_uses_one_pair():
    s = CardSettings(alpha=0.5)  # the only alpha at which one pair can detect anything
    r = _order_gap_row(np.array([False, True]), np.array([True, True]), np.arange(2), s)
    assert r.mde == pytest.approx(mcnemar_mde(2, 0.5, 0.5, 0.8))
    r1 = _order_gap_row(np.array([False]), np.array([True]), np.arange(1), s)
    assert r1.mde == pytest.approx(mcnemar_mde(1, 1.0, 0.5, 0.8)) and math.isfinite(r1.mde)


def test_logit_with_two_items_or_without_a_length_cue_is_fitted():
    t = logit_table()
    two = t.copy()
    two["item_id"] = np.where(np.arange(len(t)) % 4 < 2, "q0", "q1")
    rows = _logit_rows(_prepare(two, "lenient"), np.ones(len(t), bool), CardSettings(max_logit_se=1e9))
    assert [r.n_items for r in rows] == [2, 2] and "item" not in rows[0].reason and math.isfinite(rows[0].estimate)
    same_len = t.copy()
    same_len["response_a"] = np.where(np.arange(len(t)) % 3 == 0, "**w** w w w w", "w w w w w")  # 5 words each
    same_len["response_b"] = "w w w w w"
    rows = _logit_rows(_prepare(same_len, "lenient"), np.ones(len(t), bool), S)
    assert [r.metric for r in rows] == ["length_controlled", "markdown_controlled"]
    assert rows[0].reason == "no variation in this cue" and rows[1].reason == "" and math.isfinite(rows[1].estimate)


def test_fitted_probabilities_exactly_at_the_tolerance_are_kept(monkeypatch):
    t = logit_table()
    for mu in (1e-8, 1 - 1e-8):
        fake_glm(monkeypatch, lambda mu=mu: FakeFit(0.5, mu=mu))
        assert [r.reason for r in _logit_rows(_prepare(t, "lenient"), np.ones(len(t), bool), S)] == ["", ""]


def test_a_missing_item_is_its_pair():
    t = table([c for i in range(3) for c in both_orders(f"q{i}", f"p{i}", "A", "B")])
    t["item_id"] = t["item_id"].astype(object)
    t.loc[[1, 2, 3], "item_id"] = None  # pair p0's BA game and both games of p1
    items = _prepare(t, "lenient").items
    assert len({items[0], items[2], items[4]}) == 3  # q0, p1, q2: three clusters
    assert items[2] == items[3] and items[1] != items[2]  # p0's missing item is p0, not p1


def test_markdown_cue_is_a_difference_in_both_orders():
    a, b = "# h\n- x\n- y", "**w** w w"
    lg = _prepare(table(both_orders("q", "p", "A", "B", response_a=a, response_b=b)), "lenient")
    diff = markdown_score(a) - markdown_score(b)
    assert markdown_score(b) > 0 and lg.md_shown.tolist() == [pytest.approx(diff), pytest.approx(-diff)]


@pytest.mark.parametrize("distinct_lengths", [3, 40])
@pytest.mark.parametrize("models", [False, True])
def test_logit_on_distinct_rows_equals_statsmodels_cluster_fit_on_every_row(distinct_lengths, models):
    """The fit on distinct (covariates, outcome) rows with frequency weights and the hand-summed
    sandwich give statsmodels' GLM(...).fit(cov_type="cluster") on the full rows to 1e-9."""
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM

    from judgelab.bias_card.rows_logit import _model_term

    rng = np.random.default_rng(distinct_lengths + 7 * models)
    calls = []
    for i in range(300):
        ab, ba = (str(x) for x in rng.choice(["A", "B"], 2, p=[0.6, 0.4]))
        calls += both_orders(f"q{i // 3}", f"p{i}", ab, ba, gold=str(rng.choice(["A", "B"])),
                             response_a=" ".join(["w"] * int(rng.integers(3, 3 + distinct_lengths))),
                             response_b=("# t\n" if i % 4 == 0 else "") + " ".join(["w"] * 5))
    t = table(calls)
    lg = _prepare(t, "lenient")
    if models:  # three models behind the responses: the Bradley-Terry model term
        lg.models = np.array(["", "m1", "m2", "m3"])
        lg.model_a = np.repeat(rng.integers(1, 4, 300), 2)
        lg.model_b = np.repeat(rng.integers(1, 4, 300), 2)
    dec = np.isin(lg.verdict, ("A", "B"))
    rows = by_metric([r.__dict__ for r in _logit_rows(lg, dec, S, model_term=models)])
    X = pd.DataFrame({"const": 1.0, "len": lg.lenlr_shown[dec], "md": lg.md_shown[dec], "gold": lg.gold_shown[dec]})
    if models:
        X = pd.concat([X, _model_term(lg, dec)], axis=1)
    y = (lg.shown[dec] == "A").astype(float)
    fit = GLM(y, X, family=families.Binomial()).fit(cov_type="cluster",
                                                    cov_kwds={"groups": pd.factorize(lg.items[dec])[0]})
    if distinct_lengths == 3 and not models:  # few distinct rows: the frequency weights carry the fit
        assert len(np.unique(X.to_numpy(), axis=0)) < len(X) / 10
    for metric, col in (("length_controlled", "len"), ("markdown_controlled", "md")):
        r = rows[metric]
        assert r["reason"] == "", metric
        assert r["estimate"] == pytest.approx(fit.params[col], rel=1e-9, abs=0)
        assert r["se"] == pytest.approx(fit.bse[col], rel=1e-9, abs=0)
        assert r["p_value"] == pytest.approx(fit.pvalues[col], rel=1e-9, abs=1e-300)


def test_features_are_held_in_float32_only_where_exact():
    from judgelab.bias_card.prepare import _exact_float32

    words = np.array([0.0, 3.0, 2.0 ** 24, 17.0])
    assert _exact_float32(words).dtype == np.float32 and _exact_float32(np.array([0.25, 1.0])).dtype == np.float32
    odd = np.array([1.0, 0.1])  # 0.1 has no float32 twin: kept as it is
    assert _exact_float32(odd).dtype == np.float64 and _exact_float32(odd) is odd
    assert _exact_float32(np.array([2.0 ** 24 + 1])).dtype == np.float64
