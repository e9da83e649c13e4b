"""Separation flagged in the strategies study's logistic GLMM: a strategy right (or wrong) on every
instance has an infinite log-odds ratio; the fit used to stop at its bound (coef -30, SE 18.9) and
report "converged".  Now the term is named, its p-value is NaN and the fit is not converged."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.stats.mixed import _design, logit_random_intercept, separated_terms

TERM = "C(strategy, Treatment('B0'))[T.{}]"


def _data(rates: dict[str, float], n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s, p in rates.items():
        for i in range(n):
            rows.append({"instance": f"q{i}", "strategy": s, "correct": float(rng.random() < p)})
    return pd.DataFrame(rows)


def test_a_strategy_wrong_everywhere_is_flagged_not_converged():
    d = _data({"B0": 0.6, "S1": 0.0, "S4": 0.7})
    fit = logit_random_intercept(d, n_nodes=12)
    assert fit.separation == (TERM.format("S1"),)
    assert fit.coef[TERM.format("S1")] < -10  # at or near the optimiser's bound: not an estimate
    assert np.isnan(fit.pvalue[TERM.format("S1")]) and np.isfinite(fit.pvalue[TERM.format("S4")])
    assert not fit.converged


def test_no_separation_on_ordinary_data():
    fit = logit_random_intercept(_data({"B0": 0.6, "S1": 0.4, "S4": 0.7}), n_nodes=12)
    assert fit.separation == () and fit.converged and fit.pvalue.notna().all()


def test_mixed_table_carries_the_flag():
    from judgelab.strategies.analysis import mixed_table

    d = _data({"B0": 0.6, "S1": 1.0, "S4": 0.5}).rename(columns={"instance": "pair_id"})
    sv = d.assign(dataset="mine", judge="j", simulated=False)
    t = mixed_table(sv, n_nodes=12).set_index("strategy")
    assert bool(t.loc["S1", "separation"]) and not bool(t.loc["S4", "separation"])
    assert np.isnan(t.loc["S1", "logit_p"]) and not bool(t.loc["S1", "logit_converged"])
    assert t.loc["S1", "separated_terms"] == TERM.format("S1")


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)).filter(lambda c: sum(c) > 0),
                       min_size=2, max_size=4))
def test_separated_terms_of_a_dummy_design_are_the_constant_levels(counts):
    """With treatment dummies only, a term is infinite exactly when its level is constant (all right
    or all wrong), and a constant reference level (B0) makes every term infinite."""
    levels = ["B0", "S1", "S2", "S3"][: len(counts)]
    rows = [{"strategy": lv, "correct": float(v)} for lv, (n0, n1) in zip(levels, counts, strict=True)
            for v in [0] * n0 + [1] * n1]
    d = pd.DataFrame(rows)
    X, names, _ = _design(d, "strategy", "B0")
    constant = {lv for lv, (n0, n1) in zip(levels, counts, strict=True) if n0 == 0 or n1 == 0}
    expected = set(names) if "B0" in constant else {TERM.format(lv) for lv in constant}
    assert set(separated_terms(X, d["correct"].to_numpy(), names)) == expected


def test_complete_separation_on_a_continuous_covariate():
    """Not only dummies: x > 0 exactly when y = 1 separates (and a flipped point removes it)."""
    x = np.linspace(-2, 2, 20)
    y = (x > 0).astype(float)
    X = np.column_stack([np.ones_like(x), x])
    assert separated_terms(X, y, ["Intercept", "x"]) != ()
    y2 = y.copy()
    y2[0], y2[-1] = 1.0, 0.0
    assert separated_terms(X, y2, ["Intercept", "x"]) == ()
