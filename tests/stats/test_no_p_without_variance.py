"""No study table carries a p-value computed from zero variance.

Every paired test of the studies is fed degenerate inputs — differences equal to the last bit,
equal up to float noise, no discordant pair, a term with no spread — and must answer NaN with the
reason, never 0.0, 1.0 or 1e-47.  A comparison that holds by construction (paper 003's S1 vs B0 on
tie-free gold) is labelled ``structural``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.stats.mcnemar import discordant_counts, mcnemar_exact_p, mcnemar_test
from judgelab.stats.mixed import logit_random_intercept, wald_p
from judgelab.strategies import STRATEGIES, bounded_by_baseline
from judgelab.strategies.analysis import mcnemar_table
from judgelab.topk.llmbar import _mcnemar_exact
from judgelab.topk.stats import no_variance_reason, paired_comparison
from judgelab.topk.tables import table_budget

finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(base=st.lists(finite, min_size=2, max_size=12), shift=finite)
def test_constant_differences_have_no_p_value(base, shift):
    """a - b = shift on every unit (up to the float noise of the subtraction): no t-test."""
    a = np.asarray(base)
    b = a - shift
    r = paired_comparison(a, b, n_resamples=99)
    assert r["status"] == "no_variance" and "no variance" in r["reason"]
    assert np.isnan(r["p"]) and np.isnan(r["t"])
    assert r["ci_low"] == r["ci_high"] == pytest.approx(shift, abs=1e-12)


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")
def test_four_oracles_equal_to_sixteen_digits_are_not_p_4e_47():
    """The case Table 3 printed as p = 4.1e-47: four recall differences equal but for float noise."""
    topk = np.array([0.7, 0.55, 0.9, 0.35])
    other = topk - 0.15  # 0.7 - 0.15 and 0.9 - 0.15 round differently: differences not bit-equal
    d = topk - other
    assert np.ptp(d) > 0  # the noise is there, so an exact-equality check would run the t-test
    from scipy import stats

    assert stats.ttest_rel(topk, other).pvalue < 1e-10  # what a t-test on the noise says
    r = paired_comparison(topk, other)
    assert r["status"] == "no_variance" and np.isnan(r["p"])


def test_varying_differences_are_tested():
    rng = np.random.default_rng(0)
    a = rng.normal(size=20)
    b = a - rng.normal(0.5, 0.3, size=20)
    r = paired_comparison(a, b, n_resamples=199)
    assert r["status"] == "ok" and r["reason"] == "" and 0 <= r["p"] < 0.05
    assert no_variance_reason(np.array([0.1, 0.1 + 1e-6])) == ""  # a real (small) spread is variance
    assert "at least 2" in no_variance_reason(np.array([0.3]))
    # the tolerance is relative: differences of 3e8 equal but for float noise are constant too
    big = np.array([3.1e9, 7.3e9, 1.13e10, 5.7e9]) + np.array([0.123, 0.777, 0.4142, 0.31])
    assert np.ptp(big - (big - 330000000.1)) > 1e-9
    assert paired_comparison(big, big - 330000000.1)["status"] == "no_variance"


def _budget(diff_per_oracle: list[float]) -> pd.DataFrame:
    rows = []
    for o, d in enumerate(diff_per_oracle):
        for seed in range(2):
            base = 0.4 + 0.1 * o
            for rule, recall in (("topk", base + d), ("global", base), ("round_robin", base + d / 2)):
                rows.append({"judge": "j", "model": "aware", "estimator": "aware", "rule": rule, "budget": 40,
                             "oracle": o, "seed": seed, "recall": recall})
    return pd.DataFrame(rows)


def test_table3_budget_reports_no_variance_instead_of_a_p_value():
    out = table_budget(_budget([0.15, 0.15, 0.15, 0.15]))
    row = out[out["rule"] == "topk"].iloc[0]
    assert np.isnan(row["p_vs_global"]) and row["p_vs_global_status"] == "no_variance"
    assert np.isnan(row["p_vs_round_robin"]) and row["p_vs_round_robin_status"] == "no_variance"
    same = out[out["rule"] == "global"].iloc[0]
    assert same["p_vs_global_status"] == "same_rule"
    one = _budget([0.1, 0.2])
    one = one[~((one["oracle"] == 1) & (one["rule"] == "global"))]  # one oracle shared with global
    r1 = table_budget(one).set_index("rule").loc["topk"]
    assert r1["p_vs_global_status"] == "too_few_oracles" and np.isnan(r1["p_vs_global"])
    varied = table_budget(_budget([0.05, 0.2, 0.1, 0.3]))
    v = varied[varied["rule"] == "topk"].iloc[0]
    assert v["p_vs_global_status"] == "ok" and 0 < v["p_vs_global"] < 1


def test_mcnemar_without_discordant_pairs_has_no_p_value():
    hits = np.array([True, False, True, True])
    assert discordant_counts(hits, hits) == (0, 0)
    assert np.isnan(mcnemar_test(0, 0).pvalue) and np.isnan(mcnemar_test(0, 0).statistic)
    assert np.isnan(mcnemar_exact_p(0, 0)) and np.isnan(_mcnemar_exact(hits, hits))
    # one discordant pair is a (weak) test: the exact binomial p-value of 1 of 1 is 1.0
    one_more = hits.copy()
    one_more[1] = True
    assert _mcnemar_exact(hits, one_more) == pytest.approx(1.0)
    from statsmodels.stats.contingency_tables import mcnemar

    assert mcnemar_exact_p(7, 2) == pytest.approx(mcnemar([[0, 7], [2, 0]], exact=True).pvalue)


def test_wald_p_needs_a_standard_error():
    p = pd.Series([0.0, 0.0, 0.2], index=["a", "b", "c"])
    se = pd.Series([0.0, np.nan, 0.1], index=["a", "b", "c"])
    out = wald_p(p, se)
    assert out.isna().tolist() == [True, True, False]


def test_glmm_term_with_no_spread_has_no_wald_p_value():
    """A strategy right on every instance is separated: no Wald p-value (not 0.0)."""
    rng = np.random.default_rng(1)
    n = 40
    df = pd.DataFrame({"instance": np.tile(np.arange(n), 2), "strategy": ["B0"] * n + ["S4"] * n,
                       "correct": np.r_[rng.random(n) < 0.6, np.ones(n, bool)]})
    fit = logit_random_intercept(df, n_nodes=8)
    term = next(t for t in fit.coef.index if "S4" in t)
    assert np.isnan(fit.pvalue[term])


def _strategy_verdicts(ties_in_gold: bool) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        gold = "tie" if ties_in_gold and i % 10 == 0 else ("A" if i % 2 else "B")
        b0 = gold if rng.random() < 0.7 else ("B" if gold == "A" else "A")
        flips = rng.random() < 0.2
        s1 = b0 if not flips else "tie"
        s4 = gold if rng.random() < 0.75 else ("B" if gold == "A" else "A")
        for strat, v in (("B0", b0), ("S1", s1), ("S4", s4)):
            rows.append({"dataset": "llmbar", "judge": "j", "simulated": True, "strategy": strat, "pair_id": i,
                         "verdict": v, "expected_verdict": gold, "correct": v == gold, "has_verdict": True,
                         "status": "ok"})
    return pd.DataFrame(rows)


def test_s1_vs_b0_on_tie_free_gold_is_structural():
    assert bounded_by_baseline(STRATEGIES.get("S1"))
    assert not bounded_by_baseline(STRATEGIES.get("S8"))  # same rule, its own calls: a real test
    assert not bounded_by_baseline(STRATEGIES.get("S4"))
    from judgelab.strategies import CallSpec, Strategy

    vote = Strategy("X", "x", "multi-call aggregation", "", "majority",
                    lambda s: (CallSpec("baseline"), CallSpec("baseline", "BA")))
    assert not bounded_by_baseline(vote)  # B0's call under a majority vote: not S1's identity
    out = mcnemar_table(_strategy_verdicts(ties_in_gold=False)).set_index("strategy")
    assert out.loc["S1", "c"] == 0  # the identity the label is about
    assert out.loc["S1", "evidence"] == "structural" and "by construction" in out.loc["S1", "structural_reason"]
    assert out.loc["S4", "evidence"] == "test" and out.loc["S4", "structural_reason"] == ""
    with_ties = mcnemar_table(_strategy_verdicts(ties_in_gold=True)).set_index("strategy")
    assert with_ties.loc["S1", "evidence"] == "test"  # a tie can be right: S1 can beat B0 there


def test_identical_strategies_have_no_mcnemar_p_value():
    sv = _strategy_verdicts(ties_in_gold=False)
    s4 = sv[sv["strategy"] == "B0"].assign(strategy="S4")
    sv = pd.concat([sv[sv["strategy"] != "S4"], s4], ignore_index=True)
    row = mcnemar_table(sv).set_index("strategy").loc["S4"]
    assert row["b"] == row["c"] == 0
    assert np.isnan(row["p"]) and "no discordant pair" in row["p_reason"]
    assert not row["significant"]
