"""Algorithm 1 recommends a strategy over B0 only on a difference beyond the stated tolerance:
identical verdicts (a mixed-model coefficient of 2e-17, agreements equal to the last bit or
not) leave B0, on every line of the selector."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.strategies.selection import TOLERANCE, recommend

COSTS = {"B0": 1, "S1": 2, "S4": 1, "S5": 1}


def _tables(acc_noise: dict[str, float], coef: dict[str, float], p: float = 0.01):
    acc, mix = [], []
    for ds in ("mtbench", "llmbar"):
        for judge in ("j1", "j2"):
            for s in COSTS:
                a = 0.7 + acc_noise.get(s, 0.0)
                acc.append({"dataset": ds, "judge": judge, "strategy": s, "simulated": False, "agreement": a,
                            "ci_low": a - 0.05, "ci_high": a + 0.05, "kappa": 0.4, "delta_vs_B0": a - 0.7,
                            "cost_per_instance": 0.001 * COSTS[s], "calls_per_instance": COSTS[s]})
                if ds == "mtbench" and s != "B0":
                    mix.append({"dataset": ds, "judge": judge, "strategy": s, "lpm_coef": coef.get(s, 0.0),
                                "lpm_p": p, "lpm_p_holm": p})
    return pd.DataFrame(acc), pd.DataFrame(mix)


def test_a_coefficient_of_2e_17_recommends_nothing_over_b0():
    """The issue's case: S4's verdicts equal B0's, its coefficient is 2e-17 (and, say, 'significant')."""
    acc, mix = _tables({"S4": 2e-17}, {"S4": 2e-17}, p=1e-9)
    recs = recommend(acc, mix, COSTS, natural="mtbench", adversarial="llmbar", budgets=(1, None))
    assert set(recs["strategy"]) == {"B0"}, recs[["algorithm_line", "strategy", "evidence"]]
    assert "no strategy improves on B0" in recs.loc[recs["algorithm_line"] == "16", "evidence"].iloc[0]


def test_a_real_difference_is_still_recommended():
    acc, mix = _tables({"S4": 0.05}, {"S4": 0.05}, p=1e-4)
    recs = recommend(acc, mix, COSTS, natural="mtbench", adversarial="llmbar", budgets=(None,))
    assert set(recs["strategy"]) == {"S4"}, recs[["algorithm_line", "strategy"]]


@settings(max_examples=80, deadline=None)
@given(noise=st.dictionaries(st.sampled_from(["S1", "S4", "S5"]),
                             st.floats(-TOLERANCE, TOLERANCE, allow_nan=False), max_size=3),
       coef=st.dictionaries(st.sampled_from(["S1", "S4", "S5"]),
                            st.floats(-TOLERANCE, TOLERANCE, allow_nan=False), max_size=3),
       p=st.floats(0, 1), k=st.sampled_from([1, 2, None]))
def test_differences_within_tolerance_always_leave_b0(noise, coef, p, k):
    acc, mix = _tables(noise, coef, p)
    recs = recommend(acc, mix, COSTS, natural="mtbench", adversarial="llmbar", budgets=(k,))
    assert set(recs["strategy"]) == {"B0"}, recs[["algorithm_line", "strategy", "evidence"]]
