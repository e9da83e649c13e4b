"""Unit tests of the bias card's building blocks (``judgelab.bias_card.card``), each against a hand
count on a table small enough to check by eye.  They are the mutation map's fast tests for the
module: each asserts a value that a broken line would change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card import card as C
from judgelab.bias_card import metrics as M
from judgelab.bias_card import prepare as P
from judgelab.bias_card import rows_benchmark as RB
from judgelab.bias_card import rows_cue as RC
from judgelab.bias_card import rows_human as RH
from judgelab.bias_card import rows_logit as RL
from judgelab.bias_card import rows_share as RS
from judgelab.stats import clustered as K
from judgelab.stats import gold_excess as GE
from judgelab.stats import multiplicity as MU
from judgelab.stats import sandwich as SW
from judgelab.stats.intervals import wilson_interval
from tests.helpers.bias_card_logs import break_everywhere

MIXED = "[[C]] for the second question, but [[A]] for the entire conversation"


def _strict_table(**extra: list) -> pd.DataFrame:
    """Seven answers: FastChat's rule and Position-Bias-Analyzer's on one text with two markers, in both
    orders; a recorded label (no published rule); a fallback; an empty text; a rule with a suffix."""
    t = pd.DataFrame({
        "parse_method": ["brackets", "brackets", "position_bias_analyzer", "recorded", "brackets", "brackets",
                         "brackets:custom"],
        "raw_text": [MIXED, MIXED, MIXED, MIXED, "[[B]]", "", "[[B]] and later [[A]]"],
        "order": ["AB", "BA", "AB", "BA", "AB", "AB", "BA"],
        "status": ["ok", "ok", "ok", "ok", "fallback", "ok", "ok"],
    })
    for k, v in extra.items():
        t[k] = v
    return t


# lenient verdicts as a lenient parser might have read them (the last marker), original frame and shown
LENIENT_VERDICT = np.array(["A", "B", "A", "B", "A", "B", "A"])
LENIENT_SHOWN = np.array(["A", "A", "A", "A", "A", "A", "B"])


def test_strict_verdicts_reread_each_ruled_row_with_its_own_rule_and_keep_the_rest():
    verdict, shown = P._strict_verdicts(_strict_table(), LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy())
    # FastChat: "[[A]]" anywhere wins -> shown A; as BA the pair's own frame is B
    # Position-Bias-Analyzer: the first marker, [[C]] -> tie
    # recorded: kept as recorded; fallback: unparsed; empty text: no verdict
    # "brackets:custom" is FastChat's rule: "[[A]]" occurs -> shown A, order BA -> B
    assert shown.tolist() == ["A", "A", "tie", "A", "", "", "A"]
    assert verdict.tolist() == ["A", "B", "tie", "B", "", "", "B"]


def test_strict_verdicts_widen_a_narrow_array_for_a_longer_reading():
    verdict, shown = P._strict_verdicts(_strict_table(), LENIENT_VERDICT.astype("<U1"), LENIENT_SHOWN.astype("<U1"))
    assert verdict[2] == "tie" and shown[2] == "tie"


def test_a_table_that_carries_the_rules_reading_is_not_read_again():
    """Imported without texts: ``strict_shown`` holds the rule's reading (slots as shown)."""
    t = _strict_table(strict_shown=["B", "B", "A", "B", "A", "", "tie"]).drop(columns="raw_text")
    verdict, shown = P._strict_verdicts(t, LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy())
    assert shown.tolist() == ["B", "B", "A", "A", "", "", "tie"]
    assert verdict.tolist() == ["B", "A", "A", "B", "", "", "tie"]
    # the reading wins over the text when both are there
    t2 = _strict_table(strict_shown=["B", "B", "A", "B", "A", "", "tie"])
    v2, s2 = P._strict_verdicts(t2, LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy())
    assert v2.tolist() == verdict.tolist() and s2.tolist() == shown.tolist()


@pytest.mark.parametrize("drop", [["parse_method"], ["raw_text"]])
def test_without_a_rule_or_a_text_only_the_fallbacks_are_blanked(drop):
    t = _strict_table().drop(columns=drop)
    verdict, shown = P._strict_verdicts(t, LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy())
    expected_v, expected_s = LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy()
    expected_v[4] = expected_s[4] = ""
    assert verdict.tolist() == expected_v.tolist() and shown.tolist() == expected_s.tolist()


def test_rows_without_a_published_rule_stay_as_recorded():
    t = _strict_table()
    t["parse_method"] = "recorded"
    verdict, shown = P._strict_verdicts(t, LENIENT_VERDICT.copy(), LENIENT_SHOWN.copy())
    assert verdict.tolist() == ["A", "B", "A", "B", "", "B", "A"]
    assert shown.tolist() == ["A", "A", "A", "A", "", "A", "B"]


def test_an_empty_table_returns_empty_views():
    t = _strict_table().iloc[:0]
    verdict, shown = P._strict_verdicts(t, np.array([], dtype=str), np.array([], dtype=str))
    assert len(verdict) == 0 and len(shown) == 0


def test_only_ruled_rows_are_read_again_when_the_rule_disagrees_with_the_lenient_reading():
    """A recorded row whose text a rule would read differently keeps its recorded verdict, and a
    ruled fallback row is not revived by the rule."""
    t = pd.DataFrame({"parse_method": ["recorded", "brackets", "brackets"], "raw_text": ["[[B]]", "[[B]]", "[[A]]"],
                      "order": ["AB", "AB", "AB"], "status": ["ok", "fallback", "ok"]})
    verdict, shown = P._strict_verdicts(t, np.array(["A", "A", "B"]), np.array(["A", "A", "B"]))
    assert verdict.tolist() == ["A", "", "A"] and shown.tolist() == ["A", "", "A"]


# ------------------------------------------------------------------------------------- model term

def _lg(model_a, model_b, order, models):
    from types import SimpleNamespace

    return SimpleNamespace(model_a=None if model_a is None else np.asarray(model_a), model_b=np.asarray(model_b),
                           order=np.asarray(order), models=np.asarray(models))


def test_model_term_columns_are_plus_one_shown_first_minus_one_shown_second():
    models = ["", "m1", "m2", "m3"]  # code 0 is "no model name"
    lg = _lg([1, 2, 3, 1, 0], [2, 3, 1, 3, 2], ["AB", "AB", "BA", "BA", "AB"], models)
    rows = np.array([True, True, True, True, False])
    x = RL._model_term(lg, rows)
    # shown first / second: (m1, m2), (m2, m3), (m1, m3) as BA of (m3, m1), (m3, m1) as BA of (m1, m3)
    assert list(x.columns) == ["model[m2]", "model[m3]"]  # m1, the first in sorted order, is the reference
    assert x["model[m2]"].tolist() == [-1.0, 1.0, 0.0, 0.0]
    assert x["model[m3]"].tolist() == [0.0, -1.0, -1.0, 1.0]
    assert x.index.tolist() == [0, 1, 2, 3]
    # the unnamed model is no column and no reference: with it, m1 stays the reference
    x5 = RL._model_term(lg, np.ones(5, bool))
    assert list(x5.columns) == ["model[m2]", "model[m3]"] and x5["model[m2]"].tolist()[-1] == -1.0


def test_model_term_without_model_names_or_with_one_model_has_a_row_per_verdict_and_no_column():
    lg = _lg(None, [1, 1, 1], ["AB", "BA", "AB"], ["", "m1"])
    x = RL._model_term(lg, np.array([True, False, True]))
    assert x.shape == (2, 0) and x.index.tolist() == [0, 1]
    one = _lg([1, 1, 1], [1, 1, 1], ["AB", "BA", "AB"], ["", "m1"])
    x1 = RL._model_term(one, np.ones(3, bool))
    assert x1.shape == (3, 0) and x1.index.tolist() == [0, 1, 2]


def test_quality_control_names_what_a_log_lacks():
    two = RC.QualityControl(gold=False, controlled=False, models=2)
    assert two.missing() == (f"{RC.CONFOUNDED}; no gold labels, no pairs built to differ only in the cue; "
                             "2 model(s) behind the responses, no model term")
    three = RC.QualityControl(gold=False, controlled=False, models=3)
    assert three.missing() == f"{RC.CONFOUNDED}; no gold labels, no pairs built to differ only in the cue"
    assert not two.model_term and three.model_term
    assert three.regression() == "model term (3 models)" and three.share() == ""
    assert RC.QualityControl(gold=True, controlled=False, models=3).regression() == "gold labels"
    assert RC.QualityControl(gold=True, controlled=True, models=0).share() == "controlled pairs"


def test_card_view_indexes_by_metric_for_one_judge_and_by_judge_and_metric_for_two():
    card = pd.DataFrame({"judge": ["j1", "j1", "j2", "j2", "j1"], "metric": ["a", "b", "a", "b", "a"],
                         "view": ["lenient"] * 4 + ["strict"], "estimate": [1.0, 2.0, 3.0, 4.0, 5.0]})
    two = C.card_view(card)
    assert list(two.index.names) == ["judge", "metric"] and two.loc[("j2", "b"), "estimate"] == 4.0
    one = C.card_view(card, "strict")
    assert list(one.index.names) == ["metric"] and one.loc["a", "estimate"] == 5.0
    assert C.card_view(card[card["judge"] == "j1"]).loc["b", "estimate"] == 2.0


# ------------------------------------------------------------------------- clustered statistics

S = C.CardSettings(n_resamples=200, seed=7)


@pytest.fixture(autouse=True)
def _fresh_memos():
    """The card memoises bootstrap answers and MDEs by their inputs: each test computes its own."""
    K._RATIO_MEMO.clear()
    K._binomial_mde.cache_clear()
    yield
    K._RATIO_MEMO.clear()
    K._binomial_mde.cache_clear()


def test_n_distinct_counts_codes_and_other_values():
    assert K._n_distinct(np.array([0, 2, 2, 5])) == 3
    assert K._n_distinct(np.array([3, 3, 3], dtype=np.uint8)) == 1
    assert K._n_distinct(np.array([-1, 2, 2])) == 2  # negative codes: not by counting
    assert K._n_distinct(np.array(["a", "b", "a"])) == 2
    assert K._n_distinct(np.array([], dtype=int)) == 0
    codes, k = K._cluster_codes(np.array(["q2", "q1", "q2"]))
    assert codes.tolist() == [0, 1, 0] and k == 2


def test_ratio_cluster_variance_by_hand():
    cn, cd = np.array([1.0, 2.0, 0.0]), np.array([2.0, 2.0, 1.0])
    r = 3.0 / 5.0
    u = cn - r * cd
    assert K.ratio_cluster_variance(cn, cd) == pytest.approx(float(u @ u) / 25.0, rel=1e-12)
    assert np.isnan(K.ratio_cluster_variance(np.array([1.0]), np.array([2.0])))  # one cluster
    assert np.isnan(K.ratio_cluster_variance(np.array([0.0, 0.0]), np.array([0.0, 0.0])))  # no denominator
    assert K.ratio_cluster_variance(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 0.0  # same ratio everywhere


def test_bootstrap_totals_equal_a_plain_loop_in_any_chunking():
    rng = np.random.default_rng(0)
    cols = rng.random((6, 2))
    draw = np.random.default_rng(5).integers(0, 6, size=(23, 6), dtype=np.int32)
    plain = np.stack([cols[draw[b]].sum(axis=0) for b in range(23)])
    assert np.allclose(K._bootstrap_totals(cols, 23, 5, 2_000_000), plain, rtol=1e-12)
    for chunk in (6, 7, 60, 137):  # 1, 1, 10 and 22 resamples per chunk
        assert np.allclose(K._bootstrap_totals(cols, 23, 5, chunk), plain, rtol=1e-12), chunk


def _ratio_ci(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, s: C.CardSettings
              ) -> tuple[float, float, float, float]:
    """The cluster bootstrap at the card settings' numbers, as the Arena-Hard row calls it."""
    return K.cluster_ratio_ci(num, den, clusters, alpha=s.alpha, n_resamples=s.n_resamples, seed=s.seed,
                              chunk_cells=s.chunk_cells)


def test_cluster_ratio_ci_is_the_percentile_interval_of_whole_cluster_resamples():
    num = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    den = np.ones(8)
    clusters = np.array(["a", "a", "b", "b", "c", "c", "d", "d"])
    est, lo, hi, var = _ratio_ci(num, den, clusters, S)
    cn, cd = np.array([1.0, 2.0, 1.0, 1.0]), np.full(4, 2.0)
    draw = np.random.default_rng(7).integers(0, 4, size=(200, 4), dtype=np.int32)
    boot = cn[draw].sum(axis=1) / cd[draw].sum(axis=1)
    assert est == 5 / 8
    assert (lo, hi) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), abs=1e-12)
    assert var == pytest.approx(float(np.var(boot)), rel=1e-12)
    # the level follows alpha
    s80 = C.CardSettings(n_resamples=200, seed=7, alpha=0.2)
    _, lo80, hi80, _ = _ratio_ci(num, den, clusters, s80)
    assert (lo80, hi80) == pytest.approx(tuple(np.quantile(boot, [0.1, 0.9])), abs=1e-12)
    # a second call answers from the memo, the same numbers
    assert _ratio_ci(num, den, clusters, S) == (est, lo, hi, var)


def test_cluster_ratio_ci_drops_resamples_with_no_denominator():
    num, den = np.array([1.0, 0.0, 3.0]), np.array([1.0, 0.0, 4.0])
    est, lo, hi, var = _ratio_ci(num, den, np.array([0, 1, 2]), S)
    draw = np.random.default_rng(7).integers(0, 3, size=(200, 3), dtype=np.int32)
    tn, td = num[draw].sum(axis=1), den[draw].sum(axis=1)
    assert (td == 0).any()
    boot = tn[td != 0] / td[td != 0]
    assert est == 4 / 5 and (lo, hi) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), abs=1e-12)
    assert var == pytest.approx(float(np.var(boot)), rel=1e-12)


def test_cluster_ratio_ci_without_denominator_or_with_one_cluster():
    assert all(np.isnan(_ratio_ci(np.ones(3), np.zeros(3), np.arange(3), S)))
    est, lo, hi, var = _ratio_ci(np.array([1.0, 0.0]), np.ones(2), np.array(["a", "a"]), S)
    assert est == 0.5 and np.isnan(lo) and np.isnan(hi) and np.isnan(var)


def test_the_ratio_memo_keeps_eight_answers_and_tells_settings_apart():
    for i in range(10):
        _ratio_ci(np.arange(4.0) + i, np.ones(4), np.arange(4), S)
    assert len(K._RATIO_MEMO) == 8
    a = _ratio_ci(np.arange(4.0), np.ones(4), np.arange(4), S)
    b = _ratio_ci(np.arange(4.0), np.ones(4), np.arange(4), C.CardSettings(n_resamples=200, seed=8))
    assert a[0] == b[0] and a[1:] != b[1:]


def test_design_effect_is_clustered_over_binomial_variance_with_a_floor():
    assert K.design_effect(0.5, 0.25 / 10 * 3, 10) == pytest.approx(3.0)
    assert K.design_effect(0.5, 0.25 / 10 * 0.2, 10) == 0.5  # the floor
    assert K.design_effect(0.5, 0.25 / 10 * 0.2, 10, floor=0.1) == pytest.approx(0.2)
    assert K.design_effect(0.5, NAN := float("nan"), 10) == 1.0
    assert K.design_effect(0.0, 0.3, 10) == 1.0 and K.design_effect(1.0, 0.3, 10) == 1.0  # no binomial variance
    assert K.design_effect(0.5, 0.3, 0) == 1.0 and np.isnan(NAN)
    assert K.DEFF_FLOOR == 0.5


def test_share_stats_by_hand():
    y = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    cl = np.array([0, 0, 1, 1, 2, 2])
    est, var, n_eff, k = K._share_stats(y, cl, 0.5)
    cn, cd = np.array([2.0, 0.0, 1.0]), np.full(3, 2.0)
    v = K.ratio_cluster_variance(cn, cd)
    assert est == 0.5 and k == 3 and var == pytest.approx(v)
    assert n_eff == pytest.approx(6 / max(0.5, v / (0.25 / 6)))


def test_wilson_uses_the_effective_n_the_level_and_students_t_on_clusters():
    from statsmodels.stats.proportion import proportion_confint

    s = C.CardSettings(alpha=0.1)
    assert wilson_interval(0.3 * 40.0, 40.0, alpha=s.alpha) == pytest.approx(
        proportion_confint(12, 40, alpha=0.1, method="wilson"))
    from scipy.stats import norm, t

    a = float(2 * norm.sf(t.ppf(0.95, 4)))
    assert wilson_interval(12.0, 40.0, alpha=s.alpha, clusters=5) == pytest.approx(
        proportion_confint(12, 40, alpha=a, method="wilson"))
    assert wilson_interval(12.0, 40.0, alpha=s.alpha, clusters=1) == wilson_interval(
        12.0, 40.0, alpha=s.alpha)


def test_binomial_mde_is_statsmodels_cohen_h_turned_into_a_proportion():
    from statsmodels.stats.power import NormalIndPower

    for n, p0, alpha, power in [(50, 0.5, 0.05, 0.8), (200, 0.3, 0.01, 0.9), (7, 0.9, 0.2, 0.5)]:
        h = NormalIndPower().solve_power(nobs1=n, ratio=0, alpha=alpha, power=power)
        p1 = np.sin(min(np.pi / 2, np.arcsin(np.sqrt(p0)) + h / 2)) ** 2
        assert K.binomial_mde(n, p0, alpha, power) == pytest.approx(p1 - p0, abs=1e-6)
    assert np.isnan(K.binomial_mde(1, 0.5, S.alpha, S.power))
    assert not np.isnan(K.binomial_mde(2, 0.5, S.alpha, S.power))
    # an effect beyond the scale is capped at p1 = 1
    assert K.binomial_mde(2, 0.99, S.alpha, S.power) == pytest.approx(0.01, abs=1e-12)
    # power at or below alpha: no effect needed
    assert K._cohen_h(30, 0.05, 0.05) == 0.0 and K._cohen_h(30, 0.05, 0.04) == 0.0
    assert K._cohen_h(30, 0.05, 0.06) > 0
    # n is floored to whole trials
    assert K.binomial_mde(50.9, 0.5, S.alpha, S.power) == K.binomial_mde(50, 0.5, S.alpha, S.power)


# ------------------------------------------------------------------------------- row decisions

def _tested(**kw) -> M.CardRow:
    base = dict(metric="position_preference", estimate=0.3, ci_low=0.1, ci_high=0.5, se=0.1, null_value=0.0,
                n=100, n_items=50, test="binomial", statistic=60.0, p_value=0.001, mde=0.15)
    base.update(kw)
    return M.CardRow(**base)


def test_row_reason_names_the_first_thing_missing():
    assert C._row_reason(_tested()) == ""
    assert C._row_reason(_tested(reason="mine", estimate=NAN_)) == "mine"
    assert C._row_reason(_tested(estimate=NAN_)) == "no estimate"
    assert C._row_reason(_tested(estimate=float("inf"))) == "no estimate"
    assert C._row_reason(_tested(se=0.0)) == "standard error 0: the test has nothing to go on"
    assert C._row_reason(_tested(se=NAN_)) == "standard error nan: the test has nothing to go on"
    assert C._row_reason(_tested(se=-0.5)) == "standard error -0.5: the test has nothing to go on"
    assert C._row_reason(_tested(p_value=NAN_)) == "no p-value"
    assert C._row_reason(_tested(test="none", se=NAN_, p_value=NAN_)) == ""


NAN_ = float("nan")


def test_in_family_only_rows_that_could_be_detected():
    assert C.in_family(_tested())
    assert not C.in_family(_tested(test="none"))
    assert not C.in_family(_tested(identified=False))
    assert not C.in_family(_tested(underpowered_reason="few labels"))
    assert not C.in_family(_tested(p_value=NAN_))


def test_adjust_p_values_holm_bh_and_none():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.04]
    assert MU.adjust_p_values(p, "holm") == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)
    assert MU.adjust_p_values(p, "bh") == pytest.approx(list(multipletests(p, method="fdr_bh")[1]), abs=1e-15)
    assert MU.adjust_p_values(p, "none") == p and MU.adjust_p_values([], "holm") == []
    # by hand: sorted 0.01, 0.03, 0.04, 0.04, 0.2 times 5, 4, 3, 2, 1 -> 0.05, 0.12, 0.12, 0.12 (running max), 0.2
    assert MU.adjust_p_values(p, "holm") == pytest.approx([0.05, 0.12, 0.12, 0.2, 0.12])
    assert MU.adjust_p_values([0.5, 0.6], "holm") == [1.0, 1.0]
    assert all(isinstance(x, float) for x in MU.adjust_p_values(p, "bh"))


def test_finish_decides_each_status():
    s = C.CardSettings()
    d = C._finish(_tested(), s)
    assert (d["status"], d["estimable"], d["underpowered"], d["reason"]) == ("detected", True, False, "")
    assert d["mde"] == 0.15 and np.isnan(d["p_adjusted"]) and d["test_family"] == "" and "underpowered_reason" not in d
    # the adjusted p-value decides when given
    assert C._finish(_tested(), s, 0.2)["status"] == "not detected"
    assert C._finish(_tested(p_value=0.2), s, 0.001)["status"] == "detected"
    assert C._finish(_tested(), s, 0.05)["status"] == "not detected"  # p = alpha is not below alpha
    # the interval must exclude the null too
    assert C._finish(_tested(ci_low=-0.1), s)["status"] == "not detected"
    assert C._finish(_tested(ci_low=0.0), s)["status"] == "not detected"  # the null on the boundary: inside
    assert C._finish(_tested(ci_high=0.0, ci_low=-0.2, estimate=-0.1), s)["status"] == "not detected"
    assert C._finish(_tested(ci_low=NAN_), s)["status"] == "not detected"
    assert C._finish(_tested(ci_high=NAN_), s)["status"] == "not detected"
    # not rejected: underpowered when the MDE exceeds the metric's threshold (0.2 for position), or is NaN
    nd = C._finish(_tested(p_value=0.5, mde=0.2), s)
    assert (nd["status"], nd["underpowered"]) == ("not detected", False)
    up = C._finish(_tested(p_value=0.5, mde=0.21), s)
    assert (up["status"], up["underpowered"]) == ("underpowered", True)
    assert C._finish(_tested(p_value=0.5, mde=-0.21), s)["status"] == "underpowered"
    assert C._finish(_tested(p_value=0.5, mde=NAN_), s)["status"] == "underpowered"
    # a detection is never underpowered, whatever its MDE
    assert C._finish(_tested(mde=0.9), s)["underpowered"] is False
    ni = C._finish(_tested(identified=False), s)
    assert (ni["status"], ni["estimable"]) == ("not identified", True)
    ne = C._finish(_tested(se=0.0, identified=False), s)
    assert (ne["status"], ne["estimable"], ne["underpowered"]) == ("not estimable", False, True)
    assert ne["reason"] == "standard error 0: the test has nothing to go on"
    ur = C._finish(_tested(underpowered_reason="3 labels"), s)
    assert (ur["status"], ur["underpowered"], ur["reason"]) == ("underpowered", True, "3 labels")
    ur2 = C._finish(_tested(se=0.0, underpowered_reason="3 labels"), s)
    assert ur2["status"] == "not estimable" and ur2["reason"].startswith("standard error")
    # alpha from the settings
    assert C._finish(_tested(p_value=0.07), C.CardSettings(alpha=0.1))["status"] == "detected"
    assert isinstance(C._finish(_tested(n=np.int64(4), n_items=np.int64(2)), s)["n"], int)


def test_finish_descriptive_rows_are_read_by_their_half_width():
    s = C.CardSettings()
    r = M.CardRow("tie_rate", estimate=0.2, ci_low=0.1, ci_high=0.3)  # threshold 0.10
    d = C._finish(r, s)
    assert (d["status"], d["underpowered"], d["mde"]) == ("descriptive", False, pytest.approx(0.1))
    wide = C._finish(M.CardRow("tie_rate", estimate=0.2, ci_low=0.05, ci_high=0.3), s)
    assert wide["underpowered"] is True and wide["mde"] == pytest.approx(0.125)
    noci = C._finish(M.CardRow("tie_rate", estimate=0.2, ci_low=NAN_, ci_high=0.3), s)
    assert noci["underpowered"] is True and np.isnan(noci["mde"])
    noci2 = C._finish(M.CardRow("tie_rate", estimate=0.2, ci_low=0.1, ci_high=NAN_), s)
    assert noci2["underpowered"] is True and np.isnan(noci2["mde"])
    ne = C._finish(M.CardRow("tie_rate"), s)
    assert (ne["status"], ne["reason"], ne["underpowered"]) == ("not estimable", "no estimate", True)


def test_family_mde_factor_is_the_bonferroni_level_over_the_plain_one():
    from scipy.stats import norm

    s = C.CardSettings(alpha=0.05, power=0.8)
    m = 4
    expected = (norm.ppf(1 - 0.05 / 8) + norm.ppf(0.8)) / (norm.ppf(0.975) + norm.ppf(0.8))
    assert MU.family_mde_factor(m, method=s.multiplicity, alpha=s.alpha, power=s.power) == pytest.approx(
        expected, rel=1e-12)
    assert MU.family_mde_factor(1, method="holm", alpha=0.05, power=0.8) == 1.0
    assert MU.family_mde_factor(0, method="holm", alpha=0.05, power=0.8) == 1.0
    assert MU.family_mde_factor(2, method=s.multiplicity, alpha=s.alpha, power=s.power) > 1.0
    assert MU.family_mde_factor(m, method="none", alpha=0.05, power=0.8) == 1.0
    assert MU.family_mde_factor(m, method="bh", alpha=0.05, power=0.8) == pytest.approx(expected, rel=1e-12)


def test_finish_rows_adjusts_the_family_together_and_names_it():
    s = C.CardSettings()
    rows = [_tested(metric="position_preference", p_value=0.01),
            M.CardRow("tie_rate", estimate=0.2, ci_low=0.1, ci_high=0.3),
            _tested(metric="length_preference", p_value=0.03, mde=0.05),
            _tested(metric="markdown_preference", p_value=0.04, identified=False)]
    out = finish_rows = C.finish_rows(rows, s)
    assert [d["metric"] for d in out] == ["position_preference", "tie_rate", "length_preference",
                                          "markdown_preference"]
    label = "holm over 2 tests: position_preference, length_preference"
    assert [d["test_family"] for d in finish_rows] == [label, "", label, ""]
    assert out[0]["p_adjusted"] == pytest.approx(0.02) and out[2]["p_adjusted"] == pytest.approx(0.03)
    assert np.isnan(out[1]["p_adjusted"]) and np.isnan(out[3]["p_adjusted"])
    f = MU.family_mde_factor(2, method=s.multiplicity, alpha=s.alpha, power=s.power)
    assert out[0]["mde"] == pytest.approx(0.15 * f) and out[2]["mde"] == pytest.approx(0.05 * f)
    assert out[3]["mde"] == 0.15  # outside the family: its own MDE
    assert out[0]["status"] == "detected" and out[2]["status"] == "detected"
    # no family: no label, no adjustment
    alone = C.finish_rows([rows[1]], s)
    assert alone[0]["test_family"] == ""
    none = C.finish_rows(rows, C.CardSettings(multiplicity="none"))
    assert none[0]["test_family"].startswith("none over 2 tests") and none[0]["p_adjusted"] == 0.01


def test_share_row_without_a_null_is_descriptive_and_with_one_is_a_binomial_test():
    from scipy.stats import binomtest

    s = C.CardSettings(min_decisive=4)
    success = np.array([1, 1, 1, 0, 1, 1, 0, 1, 9, 9])  # the last two are masked out
    mask = np.array([True] * 8 + [False] * 2)
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    d = RS._share_row("tie_rate", mask, success, items, s, null=None, share_of=20, note="n")
    assert (d.test, d.n, d.n_items, d.share, d.note) == ("none", 8, 4, 0.4, "n")
    assert d.estimate == 0.75 and np.isnan(d.null_value) and np.isnan(d.p_value)
    est, _, n_eff, k = K._share_stats(np.array([1, 1, 1, 0, 1, 1, 0, 1.0]), items[:8], 1.0)
    lo, hi = wilson_interval(est * n_eff, n_eff, alpha=s.alpha, clusters=k)
    assert (d.ci_low, d.ci_high) == (lo, hi)
    from scipy.stats import norm

    assert d.se == pytest.approx((hi - lo) / (2 * norm.ppf(0.975)))
    t = RS._share_row("position_preference", mask, success, items, s, null=0.5, share_of=0)
    assert t.test == "binomial" and t.null_value == 0.5 and np.isnan(t.share)
    _, _, n_eff, _ = K._share_stats(np.array([1, 1, 1, 0, 1, 1, 0, 1.0]), items[:8], K.DEFF_FLOOR)
    n_int = max(1, round(n_eff))
    assert t.statistic == round(0.75 * n_int)
    assert t.p_value == pytest.approx(binomtest(round(0.75 * n_int), n_int, 0.5).pvalue)
    assert t.se == pytest.approx(np.sqrt(0.25 / n_eff)) and t.mde == K.binomial_mde(n_int, 0.5, s.alpha, s.power)
    assert t.reason == ""
    few = RS._share_row("position_preference", mask, success, items, C.CardSettings(min_decisive=9), null=0.5,
                       share_of=8)
    assert few.reason == "fewer than 9 verdicts to test (8)"
    assert RS._share_row("position_preference", mask, success, items, C.CardSettings(min_decisive=8), null=0.5,
                        share_of=8).reason == ""
    empty = RS._share_row("tie_rate", np.zeros(10, bool), success, items, s, null=None, share_of=10,
                         identified=False)
    assert empty.reason == "no eligible verdicts" and empty.share == 0.0 and not empty.identified


# ---------------------------------------------------------------------------- cue rows vs gold

def test_excess_over_gold_by_hand():
    """Six pairs on three items: gold on the cue side in 4 (items 0, 0, 1, 2), on the other side in 2."""
    jc = np.array([True, True, False, True, True, True])
    gc = np.array([True, True, True, True, False, False])
    items = np.array([0, 0, 1, 2, 1, 2])
    ex = GE.excess_over_gold(jc, gc, items)
    g, n = 4 / 6, 6
    c_s, c_l = 2, 1  # errors where gold is on the other side (pick the cue) / on the cue's side
    assert (ex["errors_to_cue"], ex["errors_away"], ex["k"], ex["n"]) == (2, 1, 3, 6)
    assert ex["estimate"] == pytest.approx((c_s - c_l) / n) and ex["gold_share"] == pytest.approx(g)
    assert ex["estimate"] == pytest.approx(jc.mean() - gc.mean())
    ebar = 3 / 6
    assert ex["null"] == pytest.approx(ebar * (1 - 2 * g))
    err = (jc != gc).astype(float)
    w = np.where(gc, -(err - ebar) / 4, (err - ebar) / 2)
    u = np.array([w[items == i].sum() for i in range(3)])
    assert ex["se"] == pytest.approx(2 * g * (1 - g) * np.sqrt(u @ u))
    d = jc.astype(float) - gc
    u2 = np.array([(d[items == i] - ex["estimate"]).sum() for i in range(3)])
    assert ex["se_excess"] == pytest.approx(np.sqrt(u2 @ u2) / n)
    assert ex["reason"] == ""


def test_excess_over_gold_degenerate_designs_say_why():
    e = GE.excess_over_gold(np.array([], bool), np.array([], bool), np.array([]))
    assert e["reason"] == "no eligible verdicts" and e["n"] == 0 and np.isnan(e["estimate"]) and e["k"] == 0
    cue = GE.excess_over_gold(np.array([True, False]), np.array([True, True]), np.array([0, 1]))
    assert cue["reason"] == ("gold is on the cue side in every eligible pair: errors cannot be told from a cue "
                             "preference")
    assert cue["estimate"] == -0.5 and np.isnan(cue["null"]) and np.isnan(cue["se"])
    other = GE.excess_over_gold(np.array([True, False]), np.array([False, False]), np.array([0, 1]))
    assert other["reason"].startswith("gold is on the other side in every eligible pair")
    one = GE.excess_over_gold(np.array([True, False]), np.array([True, False]), np.array([0, 0]))
    assert one["reason"] == "one item: no clustered standard error" and one["null"] == 0.0
    assert np.isnan(one["se"]) and one["k"] == 1


def _cue_inputs():
    """Ten pairs: cue side per pair, gold per pair, the judge's verdict; one pair without gold."""
    cue = np.array(["A", "B", "A", "B", "A", "B", "A", "B", "A", "B"])
    gold = np.array(["A", "B", "A", "A", "B", "B", "A", "A", "B", ""])
    verdict = np.array(["A", "B", "A", "B", "A", "A", "B", "B", "A", "B"])
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    return cue, gold, verdict, items


def test_gold_cue_row_is_the_excess_over_gold_with_a_t_test_on_items():
    from scipy.stats import t as student_t

    cue, gold, verdict, items = _cue_inputs()
    elig = np.ones(10, bool)
    s = C.CardSettings(min_decisive=5)
    row = RC._gold_cue_rows("length_preference", elig, cue, verdict, gold, items, s, share_of=20, note="pre",
                           cue_word="longer")
    mask = gold != ""
    ex = GE.excess_over_gold((verdict == cue)[mask], (gold == cue)[mask], items[mask])
    assert (row.metric, row.test, row.n, row.n_items, row.share) == ("length_preference", "t-cluster", 9, 5, 9 / 20)
    assert row.estimate == ex["estimate"] and row.null_value == ex["null"] and row.se == ex["se"]
    assert row.statistic == pytest.approx((ex["estimate"] - ex["null"]) / ex["se"])
    assert row.p_value == pytest.approx(2 * student_t.sf(abs(row.statistic), 4))
    tcrit = student_t.ppf(0.975, 4)
    assert row.ci_low == pytest.approx(max(-1, ex["estimate"] - tcrit * ex["se_excess"]))
    assert row.ci_high == pytest.approx(min(1, ex["estimate"] + tcrit * ex["se_excess"]))
    from scipy.stats import norm

    assert row.mde == pytest.approx((tcrit + norm.ppf(0.8)) * ex["se"])
    assert row.note == (f"pre; judge share minus gold's ({ex['gold_share']:.3f} of these pairs have gold on the "
                        f"longer side); errors to the longer {ex['errors_to_cue']}, away {ex['errors_away']}")
    assert row.reason == ""
    few = RC._gold_cue_rows("length_preference", elig, cue, verdict, gold, items, C.CardSettings(min_decisive=10),
                           share_of=0, note="", cue_word="longer")
    assert few.reason == "fewer than 10 verdicts to test (9)" and np.isnan(few.share)
    assert few.note.startswith("judge share minus gold's")
    assert RC._gold_cue_rows("length_preference", elig, cue, verdict, gold, items, C.CardSettings(min_decisive=9),
                            share_of=0, note="", cue_word="longer").reason == ""


def test_gold_cue_row_without_errors_or_with_only_errors_says_why():
    cue, gold, _, items = _cue_inputs()
    elig = np.ones(10, bool)
    right = RC._gold_cue_rows("length_preference", elig, cue, gold.copy(), gold, items, S, share_of=10, note="",
                             cue_word="longer")
    assert right.reason == "no error against gold on the eligible verdicts: nothing to read a cue in"
    assert right.se == 0.0 and np.isnan(right.p_value)
    wrong = np.where(gold == "A", "B", "A")
    allwrong = RC._gold_cue_rows("length_preference", elig, cue, wrong, gold, items, S, share_of=10, note="",
                                cue_word="longer")
    assert allwrong.reason == "every eligible verdict is an error: nothing to read a cue in"
    none = RC._gold_cue_rows("length_preference", np.zeros(10, bool), cue, wrong, gold, items, S, share_of=10,
                            note="kept", cue_word="longer")
    assert none.reason == "no eligible verdicts" and none.note == "kept" and none.n == 0


def test_gold_cue_row_keeps_no_interval_when_judge_minus_gold_is_constant():
    """Every error picks the cue and gold is never the cue's side where the judge errs: judge - gold is
    +1 on the errors, 0 elsewhere, spread over items, so the excess has a width; with all verdicts one
    constant difference the interval is none while the test still runs."""
    jc = np.array([True, True, True, True])
    gc = np.array([False, False, True, True])
    items = np.array([0, 1, 2, 3])
    cue = np.array(["A"] * 4)
    verdict = np.where(jc, "A", "B")
    gold = np.where(gc, "A", "B")
    row = RC._gold_cue_rows("length_preference", np.ones(4, bool), cue, verdict, gold, items, C.CardSettings(
        min_decisive=1), share_of=4, note="", cue_word="longer")
    assert row.se > 0 and np.isfinite(row.p_value)
    assert np.isfinite(row.ci_low) and np.isfinite(row.ci_high)
    assert row.ci_low >= -1.0 and row.ci_high <= 1.0


def test_error_share_row_tests_the_errors_against_the_share_where_an_error_would_pick_the_cue():
    cue, gold, verdict, items = _cue_inputs()
    elig = np.ones(10, bool)
    row = RC._error_share_row("length_error_share", elig, cue, verdict, gold, items, C.CardSettings(min_decisive=1))
    mask = gold != ""
    jc, gc = verdict == cue, gold == cue
    err = mask & (jc != gc)
    null = np.count_nonzero(mask & ~gc) / 9
    assert row.null_value == pytest.approx(null)
    assert row.n == int(err.sum()) and row.estimate == pytest.approx(np.count_nonzero(err & jc) / err.sum())
    assert row.share == pytest.approx(err.sum() / 9)
    assert row.note == f"errors against gold; null: share of these pairs with gold on the other side ({null:.3f})"
    assert row.test == "binomial" and row.reason == ""
    one_side = RC._error_share_row("length_error_share", elig, cue, verdict, cue.copy(), items,
                                  C.CardSettings(min_decisive=1))
    assert one_side.null_value == 0.0  # gold always on the cue's side: an error can never pick the cue
    assert one_side.reason == "gold on one side of the cue in every eligible pair: no null to test against"
    flipped = np.where(cue == "A", "B", "A")
    v2 = np.where(verdict == "A", "B", "A")
    other = RC._error_share_row("length_error_share", elig, cue, v2, flipped, items, C.CardSettings(min_decisive=1))
    assert other.null_value == 1.0
    assert other.reason == "gold on one side of the cue in every eligible pair: no null to test against"
    empty = RC._error_share_row("length_error_share", np.zeros(10, bool), cue, verdict, gold, items, S)
    assert empty.null_value == 0.5 and empty.reason == "no eligible verdicts"


def test_not_estimable_rows_carry_their_reason_and_test():
    r = M._not_estimable("length_controlled", "why", test="logit", null=0.0, note="n")
    assert (r.metric, r.reason, r.test, r.null_value, r.note) == ("length_controlled", "why", "logit", 0.0, "n")
    d = M._not_estimable("tie_rate", "why")
    assert d.test == "none" and np.isnan(d.null_value)


# ------------------------------------------------------------------------ position and order gap

def test_position_row_is_b_with_the_score_test_on_items():
    from scipy.stats import t as student_t

    shown = np.array(["A", "A", "A", "B", "tie", "A", "A", "B", "", "A"])
    parsed = np.array([True] * 8 + [False, True])
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    s = C.CardSettings(min_decisive=5)
    row = RS._position_row(shown, parsed, items, s, one_order=False)
    y = np.array([1, 1, 1, 0, 0.5, 1, 1, 0, 1.0])
    est, _, n_eff, k = K._share_stats(y, items[parsed], K.DEFF_FLOOR)
    lo, hi = wilson_interval(est * n_eff, n_eff, alpha=s.alpha, clusters=k)
    assert (row.n, row.n_items, row.null_value, row.test) == (9, 5, 0.0, "score")
    assert row.estimate == pytest.approx(2 * est - 1) and row.estimate == pytest.approx(2 * y.mean() - 1)
    assert (row.ci_low, row.ci_high) == (pytest.approx(2 * lo - 1), pytest.approx(2 * hi - 1))
    se_y = np.sqrt(0.25 / n_eff)
    assert row.se == pytest.approx(2 * se_y) and row.statistic == pytest.approx((est - 0.5) / se_y)
    assert row.p_value == pytest.approx(2 * student_t.sf(abs(row.statistic), 4))
    assert row.mde == pytest.approx(2 * K.binomial_mde(max(1, round(n_eff)), 0.5, s.alpha, s.power))
    assert row.share == pytest.approx(8 / 9) and row.reason == "" and row.note == "" and row.identified
    few = RS._position_row(shown, parsed, items, C.CardSettings(min_decisive=9), one_order=False)
    assert few.reason == "fewer than 9 decisive verdicts (8)"
    assert RS._position_row(shown, parsed, items, C.CardSettings(min_decisive=8), one_order=False).reason == ""


def test_position_row_on_one_item_uses_the_normal_and_one_order_is_not_identified():
    from scipy.stats import norm

    shown = np.array(["A", "A", "B", "A"])
    row = RS._position_row(shown, np.ones(4, bool), np.zeros(4, int), S, one_order=True)
    assert row.n_items == 1 and row.p_value == pytest.approx(2 * norm.sf(abs(row.statistic)))
    assert not row.identified
    assert row.note == "only one presentation order recorded: b mixes position with gold"
    nog = RS._position_row(shown, np.ones(4, bool), np.zeros(4, int), S, one_order=True, has_gold=False)
    assert nog.note == ("only one presentation order recorded: b mixes position with answer quality (which "
                        "response is better)")
    none = RS._position_row(shown, np.zeros(4, bool), np.zeros(4, int), S, one_order=False)
    assert none.reason == "no parsed verdict" and none.n == 0


def test_order_gap_is_durkalskis_clustered_mcnemar():
    from scipy.stats import chi2, norm

    from judgelab.stats.mcnemar import mcnemar_mde

    ca = np.array([1, 1, 0, 1, 0, 1, 1, 0], bool)  # right as stored
    cb = np.array([0, 1, 1, 1, 1, 0, 1, 1], bool)  # right swapped
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    s = C.CardSettings(min_decisive=3)
    row = RS._order_gap_row(ca, cb, items, s)
    d = cb.astype(float) - ca
    dsum = np.array([d[items == i].sum() for i in range(4)])
    b, c = int((d < 0).sum()), int((d > 0).sum())
    assert (b, c) == (2, 3)
    assert row.estimate == pytest.approx(d.mean()) and (row.n, row.n_items) == (8, 4)
    assert row.statistic == pytest.approx(dsum.sum() ** 2 / (dsum @ dsum))
    assert row.p_value == pytest.approx(chi2.sf(row.statistic, 1))
    assert row.se == pytest.approx(np.sqrt(dsum @ dsum) / 8)
    z = norm.ppf(0.975)
    assert (row.ci_low, row.ci_high) == (pytest.approx(d.mean() - z * row.se), pytest.approx(d.mean() + z * row.se))
    deff = max(K.DEFF_FLOOR, (dsum @ dsum) / (b + c))
    assert row.mde == pytest.approx(mcnemar_mde(max(1, round(8 / deff)), 5 / 8, 0.05, 0.8))
    assert row.note == "discordant: 2 right only as stored, 3 only swapped" and row.reason == ""
    assert RS._order_gap_row(ca, cb, items, C.CardSettings(min_decisive=6)).reason == \
        "fewer than 6 discordant pairs (5)"
    assert RS._order_gap_row(ca, cb, items, C.CardSettings(min_decisive=5)).reason == ""
    # one item: the design effect is at least 1
    one = RS._order_gap_row(ca, cb, np.zeros(8, int), s)
    ss = d.sum() ** 2
    assert one.mde == pytest.approx(mcnemar_mde(max(1, round(8 / max(1.0, ss / 5))), 5 / 8, 0.05, 0.8))


def test_order_gap_clipped_to_minus_one_one_and_degenerate_cases():
    ca, cb = np.zeros(6, bool), np.ones(6, bool)  # every pair right only swapped
    row = RS._order_gap_row(ca, cb, np.arange(6), C.CardSettings(min_decisive=1))
    assert row.estimate == 1.0 and row.ci_high == 1.0 and row.ci_low < 1.0
    neg = RS._order_gap_row(cb, ca, np.arange(6), C.CardSettings(min_decisive=1))
    assert neg.ci_low == -1.0 and neg.ci_high > -1.0
    same = RS._order_gap_row(cb, cb, np.arange(6), S)
    assert (same.se, same.statistic, same.p_value) == (0.0, 0.0, 1.0)
    assert same.reason == "no discordant pair, or every item's discordant pairs cancel"
    cancel = RS._order_gap_row(np.array([1, 0], bool), np.array([0, 1], bool), np.array([0, 0]), S)
    assert cancel.reason == "no discordant pair, or every item's discordant pairs cancel" and cancel.p_value == 1.0
    empty = RS._order_gap_row(np.zeros(0, bool), np.zeros(0, bool), np.zeros(0), S)
    assert empty.reason == "no pair with gold recorded in both orders" and empty.test == "mcnemar-cluster"


def test_cluster_sandwich_equals_statsmodels_cluster_covariance_on_the_full_rows():
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    n, groups = 400, rng.integers(0, 40, 400)
    x1 = rng.integers(0, 3, n).astype(float)
    x2 = rng.integers(0, 2, n).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + 0.5 * x1 - 0.7 * x2)))).astype(float)
    X = np.column_stack([np.ones(n), x1, x2])
    full = sm.GLM(y, X, family=sm.families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": groups})
    key = pd.factorize(pd.Series([f"{a}|{b}|{c}" for a, b, c in zip(x1, x2, y, strict=True)]))[0]
    counts = np.bincount(key)
    rep = np.full(len(counts), -1)
    rep[key[::-1]] = np.arange(n)[::-1]
    distinct = sm.GLM(y[rep], X[rep], family=sm.families.Binomial(), freq_weights=counts.astype(float)).fit()
    mu = np.asarray(distinct.fittedvalues)
    resid = y - mu[key]
    se = SW._cluster_sandwich(X[rep], counts, mu, [None, x1, x2], resid, groups)
    assert se == pytest.approx(np.asarray(full.bse), rel=1e-6)


# --------------------------------------------------------------------------- benchmark metrics

def test_judgebench_pair_score_by_hand():
    v_ab = np.array(["A", "A", "A", "tie", "", "B", "A"])
    v_ba = np.array(["A", "tie", "B", "tie", "A", "B", "A"])
    gold = np.array(["A", "A", "A", "A", "A", "A", "B"])
    # agree right, right + tie, inconsistent, two ties, missing + right, agree wrong, agree wrong
    assert RB.judgebench_pair_correct(v_ab, v_ba, gold).tolist() == [True, True, False, False, True, False, False]
    assert RB.judgebench_pair_correct(np.array(["B"]), np.array(["B"]), np.array(["B"])).tolist() == [True]
    assert RB.judgebench_pair_correct(np.array(["A"]), np.array(["A"]), np.array([""])).tolist() == [False]


def test_arena_hard_pair_scores_by_hand():
    v_ab = np.array(["B", "A", "tie", "B", ""])
    v_ba = np.array(["B", "B", "A", "tie", "B"])
    strong_ab = np.array([True, False, False, False, False])
    strong_ba = np.array([False, True, False, False, False])
    total, weight = RB.arena_hard_pair_scores(v_ab, v_ba, strong_ab, strong_ba)
    assert total.tolist() == [3 * 1 + 1, 0 + 3 * 1, 0.5 + 0, 1 + 0.5, 0.0]
    assert weight.tolist() == [4.0, 4.0, 2.0, 2.0, 0.0]
    assert RB.ARENA_STRONG_WEIGHT == 3


# --------------------------------------------------------------------------------- the log arrays

def _table(n_pairs: int = 4, **over) -> pd.DataFrame:
    """A judge's log: pairs in both orders; response B of pair p has p + 1 times A's words."""
    rows = []
    for p in range(n_pairs):
        for order in ("AB", "BA"):
            rows.append({"judge": "j", "family": "fam", "pair_id": f"p{p}", "item_id": f"i{p // 2}", "order": order,
                         "verdict": "A" if p % 2 == 0 else "B", "verdict_shown": "A",
                         "expected_verdict": "A" if p < 2 else "B", "status": "ok", "parse_method": "recorded",
                         "response_a": "word " * 3, "response_b": "word " * (3 * (p + 1)) + ("\n# head" if p == 3 else ""),
                         "family_a": "fam" if p == 0 else "other", "family_b": "other" if p != 2 else "fam",
                         "label": "A>>B" if p == 1 else "A>B", "model_a": "base", "model_b": f"m{p % 3}"})
    t = pd.DataFrame(rows)
    for k, v in over.items():
        t[k] = v
    return t


def test_prepare_reads_the_arrays_the_card_needs():
    t = _table()
    lg = P._prepare(t, "lenient")
    assert lg.pairs.tolist() == [0, 0, 1, 1, 2, 2, 3, 3] and lg.items.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert lg.order.tolist() == ["AB", "BA"] * 4 and lg.gold.tolist() == ["A"] * 4 + ["B"] * 4
    assert lg.verdict.tolist() == ["A", "A", "B", "B", "A", "A", "B", "B"]
    assert lg.wa.tolist() == [3.0] * 8 and lg.wb.tolist() == [3, 3, 6, 6, 9, 9, 14, 14]
    assert lg.wa.dtype == np.float32 and lg.has_text.all()
    assert lg.mb[6] > 0 and lg.ma.max() == 0
    assert lg.own.tolist() == ["A", "A", "", "", "B", "B", "", ""]  # only A is "fam" in p0, only B in p2
    assert lg.family == "fam" and lg.strong.tolist() == [False, False, True, True] + [False] * 4
    assert lg.models.tolist() == ["", "base", "m0", "m1", "m2"]
    assert lg.model_names(lg.model_b).tolist() == ["m0", "m0", "m1", "m1", "m2", "m2", "m0", "m0"]
    assert lg.model_names(lg.model_a).tolist() == ["base"] * 8
    with pytest.raises(ValueError, match="unknown card view 'loose'"):
        P._prepare(t, "loose")


def test_prepare_own_family_is_the_only_response_of_the_judges_family():
    t = _table()
    t.loc[t["pair_id"] == "p2", ["family_a", "family_b"]] = ["other", "fam"]
    t.loc[t["pair_id"] == "p3", ["family_a", "family_b"]] = ["fam", "fam"]
    lg = P._prepare(t, "lenient")
    assert lg.own.tolist() == ["A", "A", "", "", "B", "B", "", ""]
    bare = P._prepare(t.drop(columns=["family", "family_a", "family_b", "label", "model_a", "model_b"]), "lenient")
    assert bare.family == "unknown" and (bare.own == "").all() and not bare.strong.any()
    assert bare.models.tolist() == [""] and (bare.model_b == 0).all() and (bare.model_a == 0).all()


def test_prepare_items_fall_back_to_pairs_and_the_strict_view_blanks_fallbacks():
    t = _table()
    t.loc[t["pair_id"] == "p3", "item_id"] = None
    t.loc[0, "status"] = "fallback"
    lg = P._prepare(t, "lenient")
    assert lg.items.tolist() == [0, 0, 0, 0, 1, 1, 2, 2]  # pair p3's id stands in for its item
    assert P._prepare(t.drop(columns="item_id"), "lenient").items.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    strict = P._prepare(t, "strict")
    assert strict.verdict[0] == "" and strict.shown[0] == "" and lg.verdict[0] == "A"
    assert strict.verdict[1:].tolist() == lg.verdict[1:].tolist()


def test_shown_cues_are_in_the_frame_of_the_slot_shown_first():
    lg = P._prepare(_table(), "lenient")
    cues = lg.shown_cues()
    ratio = np.clip(np.log2((3 + 1) / (np.array([3, 3, 6, 6, 9, 9, 14, 14]) + 1.0)), -3, 3)
    sign = np.array([1, -1] * 4)
    assert cues["len"] == pytest.approx(sign * ratio)
    assert cues["md"] == pytest.approx(sign * (lg.ma.astype(float) - lg.mb))
    assert cues["gold"].tolist() == [1, -1, 1, -1, -1, 1, -1, 1]
    assert lg.lenlr_shown == pytest.approx(cues["len"]) and lg.md_shown == pytest.approx(cues["md"])
    assert lg.gold_shown.tolist() == cues["gold"].tolist()
    part = lg.shown_cues(np.array([False, True, False, False, False, False, False, True]))
    assert part["len"] == pytest.approx(cues["len"][[1, 7]]) and part["gold"].tolist() == [-1, 1]
    # the clip at three doublings
    far = P._prepare(_table(1, response_b="w " * 200), "lenient").shown_cues()["len"]
    assert far.tolist() == [-3.0, 3.0]
    no_gold = P._prepare(_table(1, expected_verdict=""), "lenient").shown_cues()["gold"]
    assert no_gold.tolist() == [0.0, 0.0]


def test_response_features_from_the_feature_columns_texts_or_nothing():
    t = pd.DataFrame({"words_a": [2, 5], "markdown_a": [0.0, 0.5], "has_text_a": [True, False]})
    w, m, h = P._response_features(t, "a")
    assert w.tolist() == [2.0, 5.0] and m.tolist() == [0.0, 0.5] and h.tolist() == [True, False]
    w, m, h = P._response_features(t, "b")
    assert w.tolist() == [0.0, 0.0] and m.tolist() == [0.0, 0.0] and h.tolist() == [False, False]
    texts = pd.DataFrame({"response_b": ["one two", "", None, "# Title\n- item"]})
    w, m, h = P._response_features(texts, "b")
    from judgelab.datasets.features import markdown_score, word_count

    assert w.tolist() == [2.0, 0.0, 0.0, float(word_count("# Title\n- item"))]
    assert m[3] == pytest.approx(markdown_score("# Title\n- item")) and m[0] == 0.0
    assert h.tolist() == [True, False, False, True]
    cat = texts["response_b"].astype("category")
    w2, m2, h2 = P._response_features(pd.DataFrame({"response_b": cat}), "b")
    assert w2.tolist() == w.tolist() and m2.tolist() == m.tolist() and h2.tolist() == h.tolist()


def test_codes_are_in_order_of_first_appearance_with_fill_for_missing():
    assert P._codes(pd.Series(["b", "a", "b", "c"])).tolist() == [0, 1, 0, 2]
    assert P._codes(pd.Series(["b", "a", "b"])).dtype == np.int32
    assert P._codes(pd.Series(["x", None, "x"]), fill=pd.Series(["p", "q", "r"])).tolist() == [0, 1, 0]
    assert P._codes(pd.Series([1, 1, 2])).tolist() == [0, 0, 1]
    cat = pd.Series(["b", "a", "b"], dtype="category")
    assert P._codes(cat).tolist() == [0, 1, 0]


def test_exact_float32_only_when_every_value_survives():
    x = np.array([1.0, 2.5, 0.25])
    assert P._exact_float32(x).dtype == np.float32
    y = np.array([0.1, 2.0])
    out = P._exact_float32(y)
    assert out.dtype == np.float64 and out is y


def test_model_codes_index_one_sorted_name_list():
    t = pd.DataFrame({"model_a": ["z", "a", None], "model_b": ["a", "m", "z"]})
    out = P._model_codes(t)
    assert out["models"].tolist() == ["", "a", "m", "z"]
    assert out["model_a"].tolist() == [3, 1, 0] and out["model_b"].tolist() == [1, 2, 3]
    assert out["model_a"].dtype == np.int16
    only_b = P._model_codes(pd.DataFrame({"model_b": ["x", "y"]}))
    assert only_b["model_a"].tolist() == [0, 0] and only_b["models"].tolist() == ["", "x", "y"]


def test_identify_names_the_control_or_what_is_missing():
    qc = RC.QualityControl(gold=False, controlled=False, models=1)
    r = RC._identify(M.CardRow("length_preference", n=5, note="own"), "gold labels", qc)
    assert r.identified and r.note == "own; quality controlled by gold labels"
    r2 = RC._identify(M.CardRow("length_preference", n=5, note="own"), "", qc)
    assert not r2.identified and r2.note == qc.missing() + "; own"
    r3 = RC._identify(M.CardRow("length_preference", n=0, note="none eligible"), "gold labels", qc)
    assert r3.identified and r3.note == "none eligible"
    r4 = RC._identify(M.CardRow("length_preference", n=0, note="none eligible"), "", qc)
    assert not r4.identified and r4.note == "none eligible"
    r5 = RC._identify(M.CardRow("length_preference", n=3), "controlled pairs", qc)
    assert r5.note == "quality controlled by controlled pairs"


def test_quality_control_of_a_log():
    lg = P._prepare(_table(), "lenient")
    qc = RC.quality_control(lg, C.CardSettings())
    assert qc == RC.QualityControl(gold=True, controlled=False, models=4)
    lg2 = P._prepare(_table(expected_verdict="tie"), "lenient")
    assert RC.quality_control(lg2, C.CardSettings(controlled_pairs=True)) == RC.QualityControl(
        gold=False, controlled=True, models=4)
    lg3 = P._prepare(_table().drop(columns="model_a"), "lenient")
    lg3.model_a = None
    assert RC.quality_control(lg3, C.CardSettings()).models == 3


# ---------------------------------------------------------------------------- one judge's rows

SWAP = {"A": "B", "B": "A", "tie": "tie", "": ""}


def _judge_table(orders=("AB", "BA")) -> pd.DataFrame:
    """Six pairs on three items, both orders: verdicts (stored frame) with ties and an unparsed game,
    gold on five pairs, length and markdown cues, one own-family response in two pairs, four models."""
    spec = [  # gold, (verdict AB, verdict BA), words A, words B, markdown B, family A, family B
        ("A", ("A", "A"), 10, 30, "", "fam", "other"),
        ("B", ("A", "B"), 30, 10, "\n# T\n- a\n- b", "other", "fam"),
        ("A", ("A", "tie"), 10, 11, "", "other", "other"),
        ("B", ("B", ""), 20, 5, "\n**bold** and *it*", "other", "other"),
        ("A", ("B", "A"), 5, 20, "", "other", "other"),
        ("", ("A", "A"), 8, 40, "", "other", "other"),
    ]
    rows = []
    for p, (gold, verdicts, wa, wb, md_b, fa, fb) in enumerate(spec):
        for order, v in zip(("AB", "BA"), verdicts, strict=True):
            if order not in orders:
                continue
            rows.append({"judge": "j", "family": "fam", "pair_id": f"p{p}", "item_id": f"i{p // 2}", "order": order,
                         "verdict": v, "verdict_shown": v if order == "AB" else SWAP[v], "expected_verdict": gold,
                         "status": "ok" if v else "unparsed", "parse_method": "recorded",
                         "response_a": "w " * wa, "response_b": "w " * wb + md_b, "family_a": fa, "family_b": fb,
                         "label": "A>B", "model_a": "base", "model_b": f"m{p % 3}"})
    return pd.DataFrame(rows)


def _same(a: M.CardRow, b: M.CardRow) -> bool:
    from dataclasses import asdict

    da, db = asdict(a), asdict(b)
    same = da.keys() == db.keys() and all(
        (isinstance(x, float) and isinstance(y, float) and np.isnan(x) and np.isnan(y)) or x == y
        for x, y in zip(da.values(), db.values(), strict=True))
    assert same, (da, db)  # raised here, with both rows: a bare tuple would always be true
    return same


JS = C.CardSettings(min_decisive=2, n_resamples=50)


JUDGE_ROW_METRICS = [
    "accuracy_AB", "accuracy_BA", "accuracy_average", "correct_both", "judgebench_accuracy", "arena_hard_score",
    "accuracy_order_gap", "positional_agreement", "positional_agreement_all", "position_preference",
    "length_preference", "length_error_share", "length_share_raw", "markdown_preference", "markdown_error_share",
    "markdown_share_raw", "length_controlled", "markdown_controlled", "self_preference", "self_error_share",
    "self_share_raw", "tie_rate", "parse_failures", "human_accuracy", "human_kappa", "ppi_win_rate", "ppi_share_A",
    "ppi_share_B", "ppi_share_tie", "repetition_consistency"]


def test_judge_rows_wire_each_statistic_to_its_verdicts():
    t = _judge_table()
    rows, extra = C.judge_rows(t, JS)
    by = {r.metric: r for r in rows}
    assert [r.metric for r in rows] == JUDGE_ROW_METRICS
    assert extra == {"view": "lenient", "n_parsed": 11, "parsed_share": 11 / 12}
    lg = P._prepare(t, "lenient")
    items, v, g = lg.items, lg.verdict, lg.gold
    correct, with_gold = v == g, g != ""
    ab, ba = lg.order == "AB", lg.order == "BA"
    assert _same(by["accuracy_AB"], RS._share_row("accuracy_AB", with_gold & ab, correct, items, JS, null=0.5, share_of=0))
    assert _same(by["accuracy_BA"], RS._share_row("accuracy_BA", with_gold & ba, correct, items, JS, null=0.5, share_of=0))
    assert _same(by["accuracy_average"], RS._share_row("accuracy_average", with_gold, correct, items, JS, null=0.5,
                                                      share_of=0))
    assert by["accuracy_AB"].estimate == 3 / 5 and by["accuracy_BA"].estimate == 3 / 5
    ia, ib = np.arange(0, 12, 2), np.arange(1, 12, 2)
    pg = g[ia] != ""
    assert _same(by["correct_both"], RS._share_row("correct_both", pg, correct[ia] & correct[ib], items[ia], JS,
                                                  null=None, share_of=0))
    assert by["correct_both"].estimate == 1 / 5
    assert _same(by["accuracy_order_gap"], RS._order_gap_row(correct[ia][pg], correct[ib][pg], items[ia][pg], JS))
    has_value = v != ""
    valid = has_value[ia] & has_value[ib]
    assert _same(by["positional_agreement"], RS._share_row("positional_agreement", valid, v[ia] == v[ib], items[ia],
                                                          JS, null=None, share_of=6))
    assert by["positional_agreement"].estimate == 2 / 5
    assert _same(by["positional_agreement_all"], RS._share_row("positional_agreement_all", np.ones(6, bool),
                                                              v[ia] == v[ib], items[ia], JS, null=None, share_of=6))
    assert _same(by["position_preference"], RS._position_row(lg.shown, has_value, items, JS, one_order=False))
    for metric, mask in (("tie_rate", v == "tie"), ("parse_failures", ~has_value)):
        assert _same(by[metric], RS._share_row(metric, np.ones(12, bool), mask, items, JS, null=None, share_of=12))
    assert by["tie_rate"].estimate == 1 / 12 and by["parse_failures"].estimate == 1 / 12
    bench = RB._benchmark_rows(lg, ia, ib, JS)
    assert _same(by["judgebench_accuracy"], bench[0]) and _same(by["arena_hard_score"], bench[1])
    assert _same(by["repetition_consistency"], RH._repetition_row(lg, JS, 12))
    human = RH._human_rows(t, lg, JS)
    assert all(_same(by[h.metric], h) for h in human)


def test_judge_rows_read_the_cues_with_their_margins():
    t = _judge_table()
    rows, _ = C.judge_rows(t, JS)
    by = {r.metric: r for r in rows}
    lg = P._prepare(t, "lenient")
    qc = RC.quality_control(lg, JS)
    decisive = (lg.verdict == "A") | (lg.verdict == "B")
    n_dec = int(decisive.sum())
    assert n_dec == 10
    wa, wb = lg.wa.astype(float), lg.wb.astype(float)
    longer = np.where(wa >= 1.2 * wb, "A", np.where(wb >= 1.2 * wa, "B", ""))
    assert longer.tolist() == ["B", "B", "A", "A", "", "", "A", "A", "B", "B", "B", "B"]
    expected = RC._cue_rows("length_preference", decisive & (longer != ""), longer, lg, JS, qc, share_of=n_dec,
                           cue_word="longer", note="length ratio >= 1.2")
    assert all(_same(by[e.metric], e) for e in expected)
    more = np.where(lg.ma - lg.mb >= 0.25, "A", np.where(lg.mb - lg.ma >= 0.25, "B", ""))
    assert (more == "B").any()
    expected_md = RC._cue_rows("markdown_preference", decisive & (more != ""), more, lg, JS, qc, share_of=n_dec,
                              cue_word="more formatted", note="markdown difference >= 0.25")
    assert all(_same(by[e.metric], e) for e in expected_md)
    expected_self = RC._cue_rows("self_preference", decisive & (lg.own != ""), lg.own, lg, JS, qc, share_of=n_dec,
                                cue_word="own-family", note="")
    assert all(_same(by[e.metric], e) for e in expected_self)
    assert by["self_share_raw"].n == 4
    logit = [RC._identify(r, qc.regression(), qc) for r in RL._logit_rows(lg, decisive & lg.has_text, JS, qc.model_term)]
    assert all(_same(by[r.metric], r) for r in logit)
    # the margins come from the settings
    wide = {r.metric: r for r in C.judge_rows(t, C.CardSettings(min_decisive=2, n_resamples=50,
                                                                 length_margin=2.5))[0]}
    assert wide["length_share_raw"].n == 4 and by["length_share_raw"].n == 9
    assert wide["length_share_raw"].note == "length ratio >= 3.5; descriptive, not a finding: P(picks the longer)"
    flat = {r.metric: r for r in C.judge_rows(t, C.CardSettings(min_decisive=2, n_resamples=50,
                                                                 markdown_margin=1.0))[0]}
    assert flat["markdown_share_raw"].n == 0 and flat["markdown_share_raw"].reason == "no eligible verdicts"


def test_judge_rows_of_a_log_without_gold_texts_family_or_second_order():
    t = _judge_table(orders=("AB",)).drop(columns=["response_a", "response_b"])
    t["expected_verdict"] = ""
    t["family"] = "unknown"
    rows, extra = C.judge_rows(t, JS)
    by = {r.metric: r for r in rows}
    assert by["accuracy_AB"].note == "no gold in this log" and by["accuracy_AB"].reason == "no eligible verdicts"
    assert by["correct_both"].note == "no pair was recorded in both orders"
    assert by["positional_agreement"].note == "no pair was recorded in both orders"
    assert by["positional_agreement_all"].share != by["positional_agreement_all"].share  # NaN: no pair
    pos = by["position_preference"]
    assert not pos.identified and pos.note.endswith("mixes position with answer quality (which response is better)")
    assert by["length_share_raw"].note.startswith("no response texts in this log")
    assert by["self_preference"].note.startswith("judge family unknown") or by["self_preference"].note == \
        "judge family unknown"
    assert by["length_error_share"].reason == "no gold in this log"
    assert by["judgebench_accuracy"].reason == "no pair was recorded in both orders"
    assert extra["n_parsed"] == 6 and extra["parsed_share"] == 1.0


def test_judge_rows_family_known_but_never_alone():
    t = _judge_table()
    t["family_a"] = "other"
    t["family_b"] = "other"
    by = {r.metric: r for r in C.judge_rows(t, JS)[0]}
    assert by["self_share_raw"].note.startswith("no pair with exactly one own-family response")


def test_judge_card_finishes_the_rows_with_the_shared_columns():
    t = _judge_table()
    card = C.judge_card(t, JS, "strict")
    rows, extra = C.judge_rows(t, JS, "strict")
    assert [d["metric"] for d in card] == [r.metric for r in rows]
    finished = C.finish_rows(rows, JS)
    for d, f in zip(card, finished, strict=True):
        assert d["view"] == "strict" and d["n_parsed"] == extra["n_parsed"] and d["status"] == f["status"]
    assert C.judge_card(t)[0]["view"] == "lenient"


def test_first_row_per_pair_and_guard():
    pairs = np.array([2, 0, 2, 1, 0])
    assert P._first_row_per_pair(pairs, np.ones(5, bool)).tolist() == [1, 3, 0]
    assert P._first_row_per_pair(pairs, np.array([False, True, True, False, True])).tolist() == [1, -1, 2]
    assert P._first_row_per_pair(np.zeros(0, int), np.zeros(0, bool)).tolist() == []
    ok = M._guard(("a",), lambda: M.CardRow("a", estimate=1.0))
    assert len(ok) == 1 and ok[0].estimate == 1.0
    two = M._guard(("a", "b"), lambda: [M.CardRow("a"), M.CardRow("b")])
    assert [r.metric for r in two] == ["a", "b"]

    def boom():
        raise ZeroDivisionError("nothing")

    failed = M._guard(("a", "b"), boom)
    assert [(r.metric, r.reason) for r in failed] == [("a", "failed: ZeroDivisionError: nothing"),
                                                      ("b", "failed: ZeroDivisionError: nothing")]


# ------------------------------------------------------------------ cue rows, humans, repetition

def test_cue_rows_with_gold_read_against_gold_and_keep_the_raw_share():
    lg = P._prepare(_judge_table(), "lenient")
    qc = RC.quality_control(lg, JS)
    cue = np.array(["B", "B", "A", "A", "", "", "A", "A", "B", "B", "B", "B"])
    elig = (lg.verdict != "") & (lg.verdict != "tie") & (cue != "")
    main, cond, raw = RC._cue_rows("length_preference", elig, cue, lg, JS, qc, share_of=10, cue_word="longer",
                                  note="margin")
    assert (main.metric, cond.metric, raw.metric) == ("length_preference", "length_error_share", "length_share_raw")
    assert main.test == "t-cluster" and main.identified and main.note.endswith("quality controlled by gold labels")
    assert main.note.startswith("margin; judge share minus gold's")
    assert cond.test == "binomial" and cond.identified and cond.note.endswith("quality controlled by gold labels")
    assert raw.test == "none" and raw.note == "margin; descriptive, not a finding: P(picks the longer)"
    success = lg.verdict == cue
    assert raw.estimate == pytest.approx(success[elig].mean()) and raw.n == int(elig.sum()) and raw.share == 0.9
    # without a note the raw row says only what it is
    *_, bare = RC._cue_rows("length_preference", elig, cue, lg, JS, qc, share_of=10, cue_word="longer", note="")
    assert bare.note == "descriptive, not a finding: P(picks the longer)"


def test_cue_rows_without_gold_test_the_share_against_a_half_identified_only_by_design():
    t = _judge_table()
    t["expected_verdict"] = ""
    lg = P._prepare(t, "lenient")
    cue = np.array(["B", "B", "A", "A", "", "", "A", "A", "B", "B", "B", "B"])
    elig = (lg.verdict != "") & (lg.verdict != "tie") & (cue != "")
    qc = RC.quality_control(lg, JS)
    main, cond, raw = RC._cue_rows("markdown_preference", elig, cue, lg, JS, qc, share_of=10,
                                  cue_word="more formatted", note="m")
    expected = RS._share_row("markdown_preference", elig, lg.verdict == cue, lg.items, JS, null=0.5, share_of=10,
                            note="m")
    assert main.test == "binomial" and main.null_value == 0.5 and main.estimate == expected.estimate
    assert main.p_value == expected.p_value and not main.identified and main.note == qc.missing() + "; m"
    assert (cond.metric, cond.reason) == ("markdown_error_share", "no gold in this log")
    assert raw.metric == "markdown_share_raw" and raw.note == "m; descriptive, not a finding: P(picks the more formatted)"
    controlled = C.CardSettings(min_decisive=2, n_resamples=50, controlled_pairs=True)
    qc2 = RC.quality_control(lg, controlled)
    main2, *_ = RC._cue_rows("markdown_preference", elig, cue, lg, controlled, qc2, share_of=10,
                            cue_word="more formatted", note="m")
    assert main2.identified and main2.note == "m; quality controlled by controlled pairs"


def test_human_rows_from_human_labels_and_their_absence():
    t = _judge_table()
    lg = P._prepare(t, "lenient")
    none = RH._human_rows(t.assign(expected_verdict=""), P._prepare(t.assign(expected_verdict=""), "lenient"), JS)
    assert [(r.metric, r.reason) for r in none] == [(m, "no human labels in this log") for m in (
        "human_accuracy", "human_kappa", "ppi_win_rate", "ppi_share_A", "ppi_share_B", "ppi_share_tie")]
    rows = RH._human_rows(t, lg, JS)
    by = {r.metric: r for r in rows}
    human = t["expected_verdict"].to_numpy()
    lab = human != ""
    acc = RS._share_row("human_accuracy", lab, lg.verdict == human, lg.items, JS, null=None, share_of=12,
                       note="gold labels as the human anchor")
    assert _same(by["human_accuracy"], acc) and by["human_accuracy"].estimate == 6 / 10
    kap = by["human_kappa"]
    both = lab & np.isin(lg.verdict, ["A", "B", "tie"])
    assert kap.n == int(both.sum()) == 9 and kap.share == pytest.approx(9 / 10)
    from sklearn.metrics import cohen_kappa_score

    assert kap.estimate == pytest.approx(cohen_kappa_score(lg.verdict[both], human[both]))
    assert kap.note == "gold labels as the human anchor; statsmodels cohens_kappa, asymptotic CI"
    assert kap.n_items == len(set(lg.items[both]))
    # every pair labelled: PPI rows are there; fewer labels per side than the setting: underpowered
    ppi = by["ppi_win_rate"]
    assert ppi.note.endswith("; gold labels as the human anchor")
    assert ppi.underpowered_reason.endswith(f"fewer than {JS.min_labels_per_side} per side")
    from scipy.stats import norm

    if np.isfinite(ppi.ci_low):
        assert ppi.se == pytest.approx((ppi.ci_high - ppi.ci_low) / (2 * norm.ppf(0.975)))
    one = C.CardSettings(min_decisive=2, n_resamples=50, min_labels_per_side=1)
    assert {r.metric: r for r in RH._human_rows(t, lg, one)}["ppi_win_rate"].underpowered_reason == ""


def test_human_column_wins_over_gold():
    t = _judge_table()
    t["human"] = np.where(t["order"] == "AB", "A", "B")
    lg = P._prepare(t, "lenient")
    by = {r.metric: r for r in RH._human_rows(t, lg, JS)}
    assert by["human_accuracy"].note == "human labels"
    assert by["human_accuracy"].estimate == pytest.approx(np.mean(lg.verdict == t["human"].to_numpy()))


def test_repetition_row_counts_repeated_instances():
    t = _judge_table()
    lg = P._prepare(t, "lenient")
    assert RH._repetition_row(lg, JS, 12).reason == "no call repeated in this log"
    assert RH._repetition_row(lg, JS).reason == "no call repeated in this log"
    rep = pd.concat([t, t.iloc[[0, 2]].assign(verdict=["A", "B"])], ignore_index=True)  # p0 AB again, p1 AB again
    lg2 = P._prepare(rep, "lenient")
    row = RH._repetition_row(lg2, JS, 12)
    assert row.metric == "repetition_consistency" and row.n == 2 and row.share == pytest.approx(2 / 12)
    assert row.estimate == pytest.approx((1.0 + 0.5) / 2)  # p0: A, A; p1: A, B
    assert row.note == "Position-Bias-Analyzer repetitional consistency: each pair x order an instance"
    assert RH._repetition_row(lg2, JS, None).estimate == row.estimate


def test_panel_rows_for_two_judges_per_view_and_none_for_one():
    from judgelab.bias_card.reliability import PANEL_JUDGE, judges_kappa

    t = _judge_table()
    two = pd.concat([t, t.assign(judge="k", verdict=np.where(t["verdict"] == "A", "B", t["verdict"]))],
                    ignore_index=True)
    assert C._panel_rows(t, JS) == []
    assert C._panel_rows(t.drop(columns="judge"), JS) == []
    out = C._panel_rows(two, JS)
    assert [d["view"] for d in out] == ["lenient", "strict"]
    k = judges_kappa(two, n_resamples=50, alpha=0.05, seed=0)
    d = out[0]
    assert (d["judge"], d["family"], d["metric"], d["simulated"]) == (PANEL_JUDGE, "panel", "judges_kappa", False)
    assert d["estimate"] == k["estimate"] and d["n"] == k["n"] and d["n_parsed"] == k["n"]
    assert np.isnan(d["parsed_share"]) and d["status"] in M.STATUSES
    two.loc[0, "status"] = "fallback"
    strict = C._panel_rows(two, JS)[1]
    blank = (two["status"] == "fallback").to_numpy()
    assert strict["n"] == judges_kappa(two, n_resamples=50, alpha=0.05, seed=0, blank=blank)["n"]
    only = C._panel_rows(two, C.CardSettings(min_decisive=2, n_resamples=50, views=("strict",)))
    assert [d["view"] for d in only] == ["strict"]


def test_bias_card_is_every_judge_view_and_metric_plus_the_panel():
    t = _judge_table()
    two = pd.concat([t, t.assign(judge="k", family="other")], ignore_index=True)
    card = C.bias_card(two, JS)
    assert list(card.columns) == C.CARD_COLUMNS
    n_metrics = len(M.JUDGE_METRICS)
    assert len(card) == 2 * 2 * n_metrics + 2
    assert card.groupby(["judge", "view"]).size().to_dict() == {
        ("j", "lenient"): n_metrics, ("j", "strict"): n_metrics, ("k", "lenient"): n_metrics,
        ("k", "strict"): n_metrics, ("all judges", "lenient"): 1, ("all judges", "strict"): 1}
    assert set(card.loc[card["judge"] == "k", "family"]) == {"other"} and not card["simulated"].any()
    assert set(card.loc[card["judge"] == "j", "metric"]) == set(M.JUDGE_METRICS)
    sim = C.bias_card(t.assign(simulated=True), C.CardSettings(min_decisive=2, n_resamples=50, views=("lenient",)))
    assert sim["simulated"].all() and set(sim["view"]) == {"lenient"} and len(sim) == n_metrics
    nofam = C.bias_card(t.drop(columns="family"), C.CardSettings(min_decisive=2, n_resamples=50, views=("lenient",)))
    assert set(nofam["family"]) == {"unknown"}
    assert C.bias_card(t).shape[0] == 2 * n_metrics  # default settings


def test_card_settings_confidence_and_checks():
    assert C.CardSettings(alpha=0.1).confidence == pytest.approx(0.9)
    with pytest.raises(ValueError, match="alpha"):
        C.CardSettings(alpha=1.5)
    assert P.VIEWS == ("lenient", "strict") and MU.MULTIPLICITY == ("holm", "bh", "none")
    assert C.PANEL_METRICS == ("judges_kappa",) and "judges_kappa" not in M.JUDGE_METRICS


# ------------------------------------------------------------------------ the cue regressions

def _logit_table(n_items: int = 40, seed: int = 1, models: int = 1, coarse: bool = False) -> pd.DataFrame:
    """Pairs in both orders with varying lengths and markdown; P(picks the slot shown first) depends on
    the shown length ratio and gold.  ``coarse``: two lengths only, so distinct design rows repeat."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        wa, wb = ((int(rng.choice([10, 30])), int(rng.choice([10, 30]))) if coarse
                  else (int(rng.integers(5, 60)), int(rng.integers(5, 60))))
        md_a = "\n# H\n- x\n- y" if rng.random() < 0.4 else ""
        md_b = "\n**b** *i*" if rng.random() < 0.4 else ""
        gold = "A" if rng.random() < 0.5 else "B"
        for order in ("AB", "BA"):
            first_words, second_words = (wa, wb) if order == "AB" else (wb, wa)
            g_first = 1.0 if (gold == "A") == (order == "AB") else -1.0
            eta = 0.8 * np.log2((first_words + 1) / (second_words + 1)) + 0.7 * g_first + 0.2
            shown = "A" if rng.random() < 1 / (1 + np.exp(-eta)) else "B"
            verdict = shown if order == "AB" else SWAP[shown]
            rows.append({"judge": "j", "family": "fam", "pair_id": f"p{i}", "item_id": f"i{i // 2}", "order": order,
                         "verdict": verdict, "verdict_shown": shown, "expected_verdict": gold, "status": "ok",
                         "response_a": "w " * wa + md_a, "response_b": "w " * wb + md_b,
                         "model_a": "base", "model_b": f"m{i % models}" if models > 1 else "m0"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("coarse", [False, True], ids=["distinct-rows", "repeated-rows"])
def test_logit_rows_equal_statsmodels_clustered_glm_on_the_full_rows(coarse):
    """The fit on distinct design rows weighted by their counts is the fit on the full rows; with
    repeated rows (coarse lengths) a lost weight would show."""
    import statsmodels.api as sm
    from scipy.stats import norm

    t = _logit_table(n_items=80, coarse=True) if coarse else _logit_table()
    lg = P._prepare(t, "lenient")
    decisive = np.isin(lg.verdict, ["A", "B"])
    s = C.CardSettings(min_decisive=5)
    rows = {r.metric: r for r in RL._logit_rows(lg, decisive, s)}
    cues = lg.shown_cues(decisive)
    X = np.column_stack([np.ones(decisive.sum()), cues["len"], cues["md"], cues["gold"]])
    y = (lg.shown[decisive] == "A").astype(float)
    fit = sm.GLM(y, X, family=sm.families.Binomial()).fit(cov_type="cluster",
                                                          cov_kwds={"groups": lg.items[decisive]})
    z = norm.ppf(0.975)
    for metric, j in (("length_controlled", 1), ("markdown_controlled", 2)):
        r = rows[metric]
        assert r.estimate == pytest.approx(fit.params[j], rel=1e-6)
        assert r.se == pytest.approx(fit.bse[j], rel=1e-5)
        assert (r.ci_low, r.ci_high) == (pytest.approx(r.estimate - z * r.se), pytest.approx(r.estimate + z * r.se))
        assert r.statistic == pytest.approx(r.estimate / r.se)
        assert r.p_value == pytest.approx(2 * norm.sf(abs(r.estimate / r.se)))
        assert r.mde == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * r.se)
        assert (r.test, r.null_value, r.n, r.n_items, r.reason) == ("wald-cluster", 0.0, int(decisive.sum()),
                                                                   len(set(lg.items[decisive])), "")
    if coarse:
        return
    assert rows["length_controlled"].note == "controls: position, md, gold"
    assert rows["markdown_controlled"].note == "controls: position, len, gold"


def test_logit_rows_with_a_model_term_absorb_each_models_strength():
    import statsmodels.api as sm

    t = _logit_table(models=3)
    lg = P._prepare(t, "lenient")
    decisive = np.isin(lg.verdict, ["A", "B"])
    rows = {r.metric: r for r in RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5), model_term=True)}
    cues = lg.shown_cues(decisive)
    mt = RL._model_term(lg, decisive)
    X = np.column_stack([np.ones(decisive.sum()), cues["len"], cues["md"], cues["gold"], mt.to_numpy()])
    # the baseline is always one side: the model columns sum to -const, one goes
    while np.linalg.matrix_rank(X) < X.shape[1]:
        X = X[:, :-1]
    y = (lg.shown[decisive] == "A").astype(float)
    fit = sm.GLM(y, X, family=sm.families.Binomial()).fit()
    assert rows["length_controlled"].estimate == pytest.approx(fit.params[1], rel=1e-6)
    n_free = X.shape[1] - 4
    assert rows["length_controlled"].note == f"controls: position, md, gold, model strength ({n_free} free terms)"


def test_logit_rows_refuse_what_the_design_cannot_give():
    t = _logit_table()
    lg = P._prepare(t, "lenient")
    decisive = np.isin(lg.verdict, ["A", "B"])
    few = RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=81))
    assert [(r.metric, r.reason, r.test, r.null_value, r.n, r.n_items) for r in few] == [
        (m, "fewer than 81 decisive verdicts with response texts (80)", "wald-cluster", 0.0, 80, 20)
        for m in ("length_controlled", "markdown_controlled")]
    assert RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=80))[0].reason == ""
    one_item = P._prepare(t.assign(item_id="same"), "lenient")
    assert RL._logit_rows(one_item, decisive, C.CardSettings(min_decisive=5))[0].reason == \
        "one item: no clustered standard error"
    same = P._prepare(t.assign(verdict_shown="A"), "lenient")
    assert RL._logit_rows(same, decisive, C.CardSettings(min_decisive=5))[1].reason == \
        "every decisive verdict names the same slot: perfect separation"
    flat = P._prepare(t.assign(response_a="w w w", response_b="w w w"), "lenient")
    r = {x.metric: x for x in RL._logit_rows(flat, decisive, C.CardSettings(min_decisive=5))}
    assert r["length_controlled"].reason == "no variation in this cue" and r["markdown_controlled"].reason == \
        "no variation in this cue"
    assert r["length_controlled"].n == 80 and r["length_controlled"].test == "wald-cluster"
    assert (r["length_controlled"].null_value, r["length_controlled"].n_items) == (0.0, 20)
    two_items = P._prepare(t.assign(item_id=np.where(t.index % 2 == 0, "x", "y")), "lenient")
    assert RL._logit_rows(two_items, decisive, C.CardSettings(min_decisive=5))[0].reason != \
        "one item: no clustered standard error"  # two items give a clustered standard error


def test_logit_rows_separation_and_the_standard_error_cap():
    t = _logit_table()
    lg = P._prepare(t, "lenient")
    # the judge always picks the longer shown answer: length separates
    cues = lg.shown_cues()
    lg.shown = np.where(cues["len"] > 0, "A", "B")
    decisive = np.isin(lg.verdict, ["A", "B"]) & (cues["len"] != 0)
    rows = RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5))
    assert rows[0].reason in ("perfect separation", "quasi-separation: fitted probabilities at 0 or 1")
    lg2 = P._prepare(t, "lenient")
    d2 = np.isin(lg2.verdict, ["A", "B"])
    capped = {r.metric: r for r in RL._logit_rows(lg2, d2, C.CardSettings(min_decisive=5, max_logit_se=0.01))}
    se = capped["length_controlled"].se
    assert capped["length_controlled"].reason == f"quasi-separation: standard error {se:.3g} > 0.01"
    at_cap = {r.metric: r for r in RL._logit_rows(lg2, d2, C.CardSettings(min_decisive=5, max_logit_se=se))}
    assert at_cap["length_controlled"].reason == ""  # a standard error at the cap is kept


def test_logit_rows_model_term_beyond_the_dense_limit_is_left_out(monkeypatch):
    t = _logit_table(models=3)
    lg = P._prepare(t, "lenient")
    decisive = np.isin(lg.verdict, ["A", "B"])
    monkeypatch.setattr(RL, "MAX_MODEL_TERMS", 2)
    rows = RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5), model_term=True)
    left = "model term left out: 4 models x 80 verdicts exceed the card's dense design limit (2 model terms, 10,000,000 cells)"
    assert rows[0].note == "controls: position, md, gold; " + left
    monkeypatch.setattr(RL, "MAX_MODEL_TERMS", 3)
    assert "left out" not in RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5), model_term=True)[0].note
    monkeypatch.setattr(RL, "MAX_MODEL_TERM_CELLS", 80 * 3 - 1)
    assert "left out" in RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5), model_term=True)[0].note
    monkeypatch.setattr(RL, "MAX_MODEL_TERM_CELLS", 80 * 3)
    assert "left out" not in RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5), model_term=True)[0].note
    no_gold = P._prepare(t.assign(expected_verdict=""), "lenient")
    monkeypatch.setattr(RL, "MAX_MODEL_TERMS", 2)
    failed = RL._logit_rows(no_gold, decisive, C.CardSettings(min_decisive=5), model_term=True)
    assert failed[0].reason.startswith("model term left out: 4 models") and failed[0].reason.endswith(
        "; no other control of answer quality")
    ok = RL._logit_rows(no_gold, decisive, C.CardSettings(min_decisive=5, controlled_pairs=True), model_term=True)
    assert ok[0].reason == "" and ok[0].note.endswith("(2 model terms, 240 cells)")


def test_logit_rows_collinear_regressors_are_named():
    t = _logit_table()
    # the response on gold's side carries a markdown list (and so three more words): len, md and gold move
    # together, and the fit names every regressor
    t["response_a"] = np.where(t["expected_verdict"] == "A", "w w w\n# H\n- x\n- y", "w w w")
    t["response_b"] = np.where(t["expected_verdict"] == "B", "w w w\n# H\n- x\n- y", "w w w")
    lg = P._prepare(t, "lenient")
    decisive = np.isin(lg.verdict, ["A", "B"])
    rows = RL._logit_rows(lg, decisive, C.CardSettings(min_decisive=5))
    assert rows[0].reason == "collinear regressors (len, md, gold)" == rows[1].reason


# ----------------------------------------------------------------------------- benchmark rows

def test_benchmark_rows_score_pairs_in_both_orders():
    t = _judge_table()
    t["label"] = np.where(t["pair_id"] == "p0", "A>>B", "A>B")
    lg = P._prepare(t, "lenient")
    ia, ib = np.arange(0, 12, 2), np.arange(1, 12, 2)
    jb, ah = RB._benchmark_rows(lg, ia, ib, JS)
    has_gold = lg.gold[ia] != ""
    correct = RB.judgebench_pair_correct(lg.verdict[ia], lg.verdict[ib], lg.gold[ia])
    assert _same(jb, RS._share_row("judgebench_accuracy", has_gold, correct, lg.items[ia], JS, null=None, share_of=6,
                                  note="ScalerLab/JudgeBench utils/metrics.py compute_final_metrics"))
    num, den = RB.arena_hard_pair_scores(lg.verdict[ia], lg.verdict[ib], lg.strong[ia], lg.strong[ib])
    kept = den > 0
    assert kept.tolist() == [True, True, True, False, True, True]  # p3 has no verdict swapped
    est, lo, hi, var = _ratio_ci(num[kept], den[kept], lg.items[ia][kept], JS)
    assert (ah.estimate, ah.ci_low, ah.ci_high) == (est, lo, hi) and ah.se == pytest.approx(np.sqrt(var))
    assert (ah.n, ah.n_items, ah.share) == (5, 3, pytest.approx(5 / 6))
    assert ah.note == ("lmarena/arena-hard-auto show_result.py load_judgments; stored A is the baseline; "
                       "pooled over 3 models")
    assert ah.reason == "" and ah.test == "none"


def test_benchmark_rows_degenerate_logs_say_why():
    t = _judge_table()
    lg = P._prepare(t, "lenient")
    none = RB._benchmark_rows(lg, np.array([], int), np.array([], int), JS)
    assert [(r.metric, r.reason) for r in none] == [("judgebench_accuracy", "no pair was recorded in both orders"),
                                                   ("arena_hard_score", "no pair was recorded in both orders")]
    no_gold = P._prepare(t.assign(expected_verdict=""), "lenient")
    jb, ah = RB._benchmark_rows(no_gold, np.arange(0, 12, 2), np.arange(1, 12, 2), JS)
    assert jb.reason == "no gold in this log"
    # each item's pairs score 1/4 (0 + 1/2 on i0, 1/4 on i1, 1/2 + 0 on i2): every resample gives 0.25
    assert ah.estimate == 0.25 and ah.reason == "every pair scores 0.25: the cluster bootstrap interval has zero width"
    # one pair kept: one item, no interval
    one = RB._benchmark_rows(lg, np.array([0]), np.array([1]), JS)[1]
    assert one.reason == "one item: no cluster bootstrap interval" and one.note.endswith("stored A is the baseline")
    # every pair scores one half: a zero-width interval is refused
    rev = t.copy()
    rev["verdict"] = np.where(rev["order"] == "AB", "A", "B")
    lg_rev = P._prepare(rev, "lenient")
    half = RB._benchmark_rows(lg_rev, np.arange(0, 12, 2), np.arange(1, 12, 2), JS)[1]
    assert half.estimate == 0.5 and half.reason == "every pair scores 0.5: the cluster bootstrap interval has zero width"
    unparsed = P._prepare(t.assign(verdict=""), "lenient")
    nothing = RB._benchmark_rows(unparsed, np.arange(0, 12, 2), np.arange(1, 12, 2), JS)
    assert nothing[-1].reason == "no pair with a verdict in both games" and nothing[-1].metric == "arena_hard_score"
    single = P._prepare(t.assign(model_b="m"), "lenient")
    assert not RB._benchmark_rows(single, np.arange(0, 12, 2), np.arange(1, 12, 2), JS)[1].note.endswith("models")


def test_finish_descriptive_row_with_an_infinite_bound_has_no_half_width():
    d = C._finish(M.CardRow("tie_rate", estimate=0.2, ci_low=0.1, ci_high=float("inf")), C.CardSettings())
    assert np.isnan(d["mde"]) and d["underpowered"] is True
    d2 = C._finish(M.CardRow("tie_rate", estimate=0.2, ci_low=-float("inf"), ci_high=0.3), C.CardSettings())
    assert np.isnan(d2["mde"])


def test_excess_over_gold_reads_zero_one_codes_as_booleans():
    jc = np.array([True, True, False, True, True, True])
    gc = np.array([True, True, True, True, False, False])
    items = np.array([0, 0, 1, 2, 1, 2])
    as_bool = GE.excess_over_gold(jc, gc, items)
    as_int = GE.excess_over_gold(jc.astype(int), gc.astype(int), items)
    assert as_int == as_bool


EXCESS_KEYS = {"estimate", "null", "se", "se_excess", "k", "n", "errors_to_cue", "errors_away", "gold_share", "reason"}


def test_excess_over_gold_always_returns_the_same_fields():
    e = GE.excess_over_gold(np.array([], bool), np.array([], bool), np.array([]))
    assert set(e) == EXCESS_KEYS
    assert (e["errors_to_cue"], e["errors_away"], e["k"], e["n"]) == (0, 0, 0, 0)
    assert all(np.isnan(e[k]) for k in ("estimate", "null", "se", "se_excess", "gold_share"))
    jc = np.array([True, True, False, True, True, True])
    gc = np.array([True, True, True, True, False, False])
    full = GE.excess_over_gold(jc, gc, np.array([0, 0, 1, 2, 1, 2]))
    assert set(full) == EXCESS_KEYS
    one_side = GE.excess_over_gold(np.array([True, False]), np.array([True, True]), np.array([0, 1]))
    assert set(one_side) == EXCESS_KEYS and np.isnan(one_side["se_excess"])
    assert (one_side["errors_to_cue"], one_side["errors_away"], one_side["gold_share"]) == (0, 1, 1.0)


def test_a_descriptive_half_width_at_the_threshold_is_enough():
    d = C._finish(M.CardRow("tie_rate", estimate=0.1, ci_low=0.0, ci_high=0.2), C.CardSettings())
    assert d["mde"] == 0.1 == C.METRICS["tie_rate"].threshold and d["underpowered"] is False


def test_excess_over_gold_on_random_verdicts_equals_a_per_item_loop():
    rng = np.random.default_rng(11)
    jc, gc = rng.random(60) < 0.55, rng.random(60) < 0.6
    items = rng.integers(0, 9, 60)
    ex = GE.excess_over_gold(jc, gc, items)
    n, n_l = 60, int(gc.sum())
    n_s = n - n_l
    err = (jc != gc).astype(float)
    ebar, g = err.mean(), n_l / n
    u = []
    for i in np.unique(items):
        m = items == i
        u.append(sum((-(e - ebar) / n_l) if gl else ((e - ebar) / n_s) for e, gl in zip(err[m], gc[m], strict=True)))
    assert ex["se"] == pytest.approx(2 * g * (1 - g) * np.sqrt(np.sum(np.square(u))), rel=1e-12)
    assert ex["k"] == len(np.unique(items))


def test_excess_over_gold_on_two_items_has_a_standard_error():
    ex = GE.excess_over_gold(np.array([True, False, True, True]), np.array([True, True, False, False]),
                             np.array([0, 0, 1, 1]))
    assert ex["k"] == 2 and ex["reason"] == "" and np.isfinite(ex["se"])


def test_finish_returns_plain_integer_counts():
    d = C._finish(_tested(n=np.int64(4), n_items=np.int64(2)), C.CardSettings())
    assert d["n"] == 4 and d["n_items"] == 2 and type(d["n"]) is int and type(d["n_items"]) is int


def test_strict_verdicts_tell_every_rule_text_and_order_apart():
    """Four texts under one rule in both orders: each (rule, text, order) is read on its own, so a
    combined key that let two of them meet would give one of them the other's reading."""
    texts = ["[[A]] zero", "[[B]] one", "[[A]] two", "[[B]] three"]
    t = pd.DataFrame({"parse_method": "brackets", "raw_text": [x for x in texts for _ in (0, 1)],
                      "order": ["AB", "BA"] * 4, "status": "ok"})
    verdict, shown = P._strict_verdicts(t, np.array(["tie"] * 8), np.array(["tie"] * 8))
    assert shown.tolist() == ["A", "A", "B", "B", "A", "A", "B", "B"]
    assert verdict.tolist() == ["A", "B", "B", "A", "A", "B", "B", "A"]


def test_strict_verdicts_of_a_swapped_answer_without_a_verdict_are_empty():
    t = pd.DataFrame({"parse_method": "brackets", "raw_text": ["no marker here", "[[B]]"], "order": ["BA", "BA"],
                      "status": "ok"})
    verdict, shown = P._strict_verdicts(t, np.array(["A", "A"]), np.array(["B", "B"]))
    assert verdict.tolist() == ["", "A"] and shown.tolist() == ["", "B"]


def test_gold_cue_row_whose_items_all_share_one_excess_has_a_test_but_no_interval():
    """Each item holds one error that picks the longer answer (gold on the other side) and one right
    pick of the longer (gold on its side): judge - gold sums to the same on every item, so the excess's
    own clustered variance is zero, while the test's variance under the null is not."""
    cue = np.array(["A"] * 6)
    verdict = np.array(["A"] * 6)
    gold = np.array(["B", "A"] * 3)
    row = RC._gold_cue_rows("length_preference", np.ones(6, bool), cue, verdict, gold, np.array([0, 0, 1, 1, 2, 2]),
                           C.CardSettings(min_decisive=1), share_of=6, note="", cue_word="longer")
    assert row.se > 0 and np.isfinite(row.p_value) and row.estimate == 0.5
    assert np.isnan(row.ci_low) and np.isnan(row.ci_high)


def test_prepare_reads_the_shown_verdicts_in_both_views():
    t = _table()
    t["verdict_shown"] = np.where(t["order"] == "AB", t["verdict"], t["verdict"].map({"A": "B", "B": "A"}))
    t.loc[0, "status"] = "fallback"
    lenient, strict = P._prepare(t, "lenient"), P._prepare(t, "strict")
    assert lenient.shown.tolist() == t["verdict_shown"].tolist()
    assert strict.shown.tolist() == ["", *t["verdict_shown"].tolist()[1:]]


def test_gold_cue_row_keeps_the_excess_reason_and_clips_its_interval_to_minus_one_one():
    one_side = RC._gold_cue_rows("length_preference", np.ones(4, bool), np.array(["A"] * 4),
                                np.array(["A", "B", "A", "B"]), np.array(["A"] * 4), np.arange(4),
                                C.CardSettings(min_decisive=1), share_of=4, note="", cue_word="longer")
    assert one_side.reason.startswith("gold is on the cue side in every eligible pair") and np.isnan(one_side.se)
    # two items, every error away from the cue: the t interval on 1 df runs past -1 and is clipped there
    cue = np.array(["A"] * 8)
    gold = np.array(["A", "A", "A", "B", "A", "A", "B", "B"])
    verdict = np.array(["B", "B", "A", "B", "B", "A", "B", "B"])
    items = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = C.CardSettings(min_decisive=1)
    row = RC._gold_cue_rows("length_preference", np.ones(8, bool), cue, verdict, gold, items, s, share_of=8, note="",
                           cue_word="longer")
    from scipy.stats import t as student_t

    ex = GE.excess_over_gold(verdict == cue, gold == cue, items)
    tcrit = student_t.ppf(0.975, 1)
    assert ex["estimate"] - tcrit * ex["se_excess"] < -1.0 and row.ci_low == -1.0
    assert row.ci_high == pytest.approx(min(1.0, ex["estimate"] + tcrit * ex["se_excess"]))
    up = RC._gold_cue_rows("length_preference", np.ones(8, bool), np.array(["B"] * 8), verdict, gold, items, s,
                          share_of=8, note="", cue_word="longer")
    ex_up = GE.excess_over_gold(verdict == "B", gold == "B", items)
    assert ex_up["estimate"] + tcrit * ex_up["se_excess"] > 1.0 and up.ci_high == 1.0


def test_gold_cue_row_where_every_verdict_errs_says_so_whatever_the_split():
    cue = np.array(["A"] * 4)
    gold = np.array(["B", "B", "B", "A"])
    verdict = np.array(["A", "A", "A", "B"])  # three errors to the cue, one away
    row = RC._gold_cue_rows("length_preference", np.ones(4, bool), cue, verdict, gold, np.arange(4),
                           C.CardSettings(min_decisive=1), share_of=4, note="", cue_word="longer")
    assert row.reason == "every eligible verdict is an error: nothing to read a cue in" and row.se == 0.0
    even = RC._gold_cue_rows("length_preference", np.ones(4, bool), cue, np.array(["A", "A", "B", "B"]),
                            np.array(["B", "B", "A", "A"]), np.arange(4), C.CardSettings(min_decisive=1), share_of=4,
                            note="", cue_word="longer")  # two errors to the cue, two away
    assert even.reason == "every eligible verdict is an error: nothing to read a cue in"


def test_position_row_names_its_metric_and_prepare_reads_texts_on_either_side():
    row = RS._position_row(np.array(["A", "B", "A"]), np.ones(3, bool), np.arange(3), S, one_order=False)
    assert row.metric == "position_preference"
    t = _table(2)
    t.loc[0, "response_a"] = ""
    t.loc[1, ["response_a", "response_b"]] = ["", ""]
    lg = P._prepare(t, "lenient")
    assert lg.has_text.tolist() == [True, False, True, True]  # one text is enough
    t.loc[1, "family"] = "another"
    assert P._prepare(t, "lenient").family == "fam"  # the judge's family, from its first row


def test_position_row_on_two_items_uses_students_t_and_one_verdict_has_no_mde():
    from scipy.stats import t as student_t

    row = RS._position_row(np.array(["A", "A", "B", "A"]), np.ones(4, bool), np.array([0, 0, 1, 1]), S,
                          one_order=False)
    assert row.n_items == 2 and row.p_value == pytest.approx(2 * student_t.sf(abs(row.statistic), 1))
    one = RS._position_row(np.array(["A"]), np.ones(1, bool), np.array([0]), S, one_order=False)
    assert np.isnan(one.mde)


# ---------------------------------------------------------------------------- survivors of the full mutation run


def test_holm_adjusted_p_values_are_capped_at_one():
    """p-values near one times their rank exceed one: Holm caps them, as statsmodels does."""
    from statsmodels.stats.multitest import multipletests

    p = [0.6, 0.7, 0.04]
    adjusted = MU.adjust_p_values(p, "holm")
    assert adjusted == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert max(adjusted) == 1.0 and adjusted[2] == pytest.approx(0.12)


def test_the_panel_row_is_judges_kappa_under_the_cards_own_settings():
    """Every field of the between-judge row is the statistic's, computed with the card's resamples,
    interval level and seed (settings unlike the defaults, so a dropped one shows)."""
    from judgelab.bias_card.reliability import judges_kappa

    base = _judge_table()
    t = pd.concat([base.assign(pair_id=base["pair_id"] + f"-{c}", item_id=base["item_id"] + f"-{c}")
                   for c in range(8)], ignore_index=True)  # 24 items: resamples differ by seed
    rng = np.random.default_rng(3)
    two = pd.concat([t.assign(judge=j, verdict=np.where(rng.random(len(t)) < 0.3, "B", t["verdict"]))
                     for j in ("j", "k", "m")], ignore_index=True)
    s = C.CardSettings(min_decisive=2, n_resamples=40, alpha=0.2, seed=11, views=("lenient",))
    (d,) = C._panel_rows(two, s)
    k = judges_kappa(two, n_resamples=40, alpha=0.2, seed=11)
    for field in ("estimate", "ci_low", "ci_high", "se", "n", "n_items"):
        assert d[field] == pytest.approx(k[field], nan_ok=True), field
    assert np.isfinite(d["ci_low"]) and d["n_items"] == k["n_items"] > 0
    pair = two[two["judge"] != "m"]  # two judges: Cohen's kappa, with its analytic standard error
    (d2,) = C._panel_rows(pair, s)
    k2 = judges_kappa(pair, n_resamples=40, alpha=0.2, seed=11)
    assert np.isfinite(k2["se"]) and d2["se"] == pytest.approx(k2["se"])
    assert d["note"] == k["note"]
    other_seed = judges_kappa(two, n_resamples=40, alpha=0.2, seed=12)
    assert (other_seed["ci_low"], other_seed["ci_high"]) != (k["ci_low"], k["ci_high"])  # the seed matters here
    default_level = judges_kappa(two, n_resamples=40, alpha=0.05, seed=11)
    assert default_level["ci_low"] < k["ci_low"]
    default_resamples = judges_kappa(two, alpha=0.2, seed=11)
    assert (default_resamples["ci_low"], default_resamples["se"]) != (k["ci_low"], k["se"])
    assert d["status"] == C._finish(M.CardRow("judges_kappa", estimate=k["estimate"], ci_low=k["ci_low"],
                                              ci_high=k["ci_high"], se=k["se"], n=k["n"], n_items=k["n_items"],
                                              reason=k["reason"], note=k["note"]), s)["status"]


def test_a_panel_row_without_agreement_data_says_why():
    """A panel whose judges never share a decisive verdict carries the statistic's reason."""
    from judgelab.bias_card.reliability import judges_kappa

    t = _judge_table()
    two = pd.concat([t, t.assign(judge="k", verdict="")], ignore_index=True)
    (d,) = C._panel_rows(two, C.CardSettings(min_decisive=2, n_resamples=40, views=("lenient",)))
    k = judges_kappa(two, n_resamples=40)
    assert k["reason"] and d["reason"] == k["reason"] and d["status"] == "not estimable"


@pytest.mark.parametrize("builder", ["_share_row", "_benchmark_rows", "_order_gap_row", "_position_row",
                                     "_logit_rows", "_gold_cue_rows", "_error_share_row", "_human_rows",
                                     "_repetition_row"])
def test_a_failing_statistic_keeps_every_row_it_would_have_given(monkeypatch, builder):
    """Each statistic runs under a guard that names the rows it gives: when it raises, the card keeps
    exactly those rows (same metrics, same order), each saying what failed; the others are untouched."""
    t = _judge_table()
    healthy = {r.metric: r for r in C.judge_rows(t, JS)[0]}

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    break_everywhere(monkeypatch, builder, boom)
    rows, _ = C.judge_rows(t, JS)
    assert [r.metric for r in rows] == JUDGE_ROW_METRICS
    failed = [r.metric for r in rows if r.reason == "failed: RuntimeError: boom"]
    assert failed, builder  # the builder ran for this table
    for r in rows:
        if r.metric not in failed:
            assert _same(r, healthy[r.metric])
