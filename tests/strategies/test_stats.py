"""Statistics of the strategies study against published values and planted effects.

* McNemar with continuity correction reproduces paper 003's Table 4 from its b and c.
* The minimum detectable effect at n = 400 and 40-50 discordant pairs is the paper's 4-5 pp
  (Appendix D), and inverts the sample-size formula.
* Holm-Bonferroni matches a hand computation; Cohen's kappa a textbook example.
* The linear-probability mixed model gives the difference in agreement rates on a balanced
  design (the paper's "coefficients in linear-probability units"); the logistic GLMM's
  quadrature likelihood matches direct numerical integration and its estimates recover
  planted log-odds effects.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.special import expit

from judgelab.stats.mcnemar import (
    discordant_counts,
    holm,
    mcnemar_mde,
    mcnemar_sample_size,
    mcnemar_test,
)
from judgelab.stats.mixed import _design, _GHQLogit, logit_random_intercept, lpm_random_intercept
from judgelab.strategies.analysis import bootstrap_ci, kappa, landis_koch

# paper 003, Table 4: (b, c) -> (chi2, p) as printed (p "< 0.0001" as 1e-4 upper bound)
TABLE4 = [
    ((23, 69), 22.01, ("<", 0.0001)),
    ((17, 47), 13.14, ("=", 0.0003)),
    ((33, 62), 8.25, ("=", 0.004)),
    ((12, 31), 7.53, ("=", 0.006)),
    ((27, 45), 4.01, ("=", 0.045)),
    ((14, 26), 3.02, ("=", 0.082)),
    ((16, 19), 0.11, ("=", 0.735)),
    ((30, 39), 0.93, ("=", 0.336)),
    ((39, 42), 0.05, ("=", 0.824)),
]


@pytest.mark.parametrize(("bc", "chi2", "p"), TABLE4)
def test_mcnemar_reproduces_paper_table4(bc, chi2, p):
    r = mcnemar_test(*bc)
    assert round(r.statistic, 2) == chi2
    op, val = p
    if op == "<":
        assert r.pvalue < val
    else:  # printed with as many significant digits as the paper gives
        digits = len(str(val).split(".")[1])
        assert round(r.pvalue, digits) == pytest.approx(val, abs=10 ** -digits / 2)
    # the closed form on one degree of freedom
    b, c = bc
    assert r.statistic == pytest.approx((abs(b - c) - 1) ** 2 / (b + c), rel=1e-12)


def test_mcnemar_edge_cases_and_counts():
    assert np.isnan(mcnemar_test(0, 0).pvalue)
    x = np.array([1, 1, 0, 0, 1], dtype=bool)
    y = np.array([1, 0, 1, 1, 1], dtype=bool)
    assert discordant_counts(x, y) == (1, 2)
    with pytest.raises(ValueError):
        mcnemar_test(-1, 3)


def test_minimum_detectable_effect_matches_appendix_d():
    # 40 to 50 discordant pairs out of 400 -> "approximately 4 to 5 percentage points"
    lo, hi = mcnemar_mde(400, 40 / 400), mcnemar_mde(400, 50 / 400)
    assert 0.040 < lo < hi < 0.052
    # the MDE is the effect at which the sample-size formula gives back n
    assert mcnemar_sample_size(lo, 0.10) == pytest.approx(400, rel=1e-6)
    # more pairs detect smaller effects
    assert mcnemar_mde(1600, 0.10) < lo / 1.9


def test_holm_matches_hand_computation():
    p = [0.01, 0.04, 0.03, 0.005]
    adj, rej = holm(p, 0.05)
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone: .02, .03, .06, .06
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert rej.tolist() == [True, False, False, True]


def test_kappa_textbook_example_and_labels():
    # Wikipedia's worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    v = ["A"] * 20 + ["A"] * 5 + ["B"] * 10 + ["B"] * 15
    g = ["A"] * 20 + ["B"] * 5 + ["A"] * 10 + ["B"] * 15
    assert kappa(v, g) == pytest.approx(0.4)
    # the paper's labels (Table 6): 0.358 Fair, 0.455 Moderate
    assert landis_koch(0.358) == "Fair" and landis_koch(0.455) == "Moderate" and landis_koch(0.9) == "Almost perfect"
    # a missing verdict is its own category and never agrees with gold
    assert kappa(["A", "", "B", "tie"], ["A", "A", "B", "tie"]) < 1.0


def test_bootstrap_ci_covers_mean_and_is_seeded():
    x = np.random.default_rng(1).random(300) < 0.6
    lo, hi = bootstrap_ci(x, rng=np.random.default_rng(5))
    assert lo < x.mean() < hi and hi - lo < 0.15
    assert (lo, hi) == bootstrap_ci(x, rng=np.random.default_rng(5))


def _panel(n: int, effects: dict[str, float], sd: float, seed: int, base: float = 0.4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strategies = ["B0", *effects]
    inst = np.repeat(np.arange(n), len(strategies))
    strat = np.tile(strategies, n)
    u = rng.normal(0, sd, n)[inst]
    eta = base + u + np.array([0.0 if s == "B0" else effects[s] for s in strat])
    y = rng.random(len(eta)) < expit(eta)
    return pd.DataFrame({"correct": y, "strategy": strat, "instance": inst})


def test_lpm_coefficients_are_agreement_differences_on_a_balanced_design():
    df = _panel(300, {"S1": 0.3, "S8": -0.2}, 1.2, 0)
    fit = lpm_random_intercept(df)
    means = df.groupby("strategy")["correct"].mean()
    for s in ("S1", "S8"):
        term = f"C(strategy, Treatment('B0'))[T.{s}]"
        assert fit.coef[term] == pytest.approx(means[s] - means["B0"], abs=1e-8)
        assert 0 < fit.pvalue[term] < 1


def test_glmm_quadrature_likelihood_matches_direct_integration():
    df = _panel(6, {"S1": 0.5, "S2": -0.4}, 1.5, 3)
    X, _, _ = _design(df, "strategy", "B0")
    model = _GHQLogit(df["correct"].to_numpy(float), X, df["instance"].to_numpy(), 40)
    theta = np.array([0.2, 0.4, -0.3, math.log(1.3)])
    value, grad = model.value_grad(theta)
    direct = 0.0
    for i, g in df.groupby("instance"):
        Xi = X[df["instance"].to_numpy() == i]
        eta, y = Xi @ theta[:-1], g["correct"].to_numpy()

        def f(u, eta=eta, y=y):
            p = expit(eta + u)
            return np.prod(np.where(y, p, 1 - p)) * math.exp(-u * u / (2 * 1.3**2)) / math.sqrt(2 * math.pi * 1.3**2)

        direct += math.log(quad(f, -30, 30, limit=200)[0])
    assert value == pytest.approx(direct, abs=1e-6)
    # the analytic gradient agrees with finite differences
    h = 1e-6
    for j in range(len(theta)):
        e = np.zeros_like(theta)
        e[j] = h
        fd = (model.value_grad(theta + e)[0] - model.value_grad(theta - e)[0]) / (2 * h)
        assert grad[j] == pytest.approx(fd, abs=1e-5)


def test_glmm_recovers_planted_log_odds_effects():
    """Coverage of the 95% Wald intervals, unbiasedness over seeds, and agreement with the
    conditional-likelihood estimator (statsmodels ConditionalLogit), which estimates the same
    within-instance log-odds ratios without assuming normal intercepts."""
    from statsmodels.discrete.conditional_models import ConditionalLogit

    planted = {"S1": 0.0, "S5": 0.6, "S8": -0.5}
    covered = total = 0
    est = {s: [] for s in planted}
    for seed in range(3):
        df = _panel(600, planted, 1.5, 100 + seed)
        fit = logit_random_intercept(df)
        assert fit.converged
        assert 1.5 < fit.group_var < 3.2  # planted sd 1.5 -> variance 2.25
        ci = fit.ci()
        X = pd.get_dummies(df["strategy"]).drop(columns="B0").astype(float)
        with pytest.warns(Warning):  # instances without variation are dropped by the conditional fit
            cl = ConditionalLogit(df["correct"].to_numpy(float), X.to_numpy(), groups=df["instance"].to_numpy()).fit(disp=0)
        for j, (s, b) in enumerate(planted.items()):
            term = f"C(strategy, Treatment('B0'))[T.{s}]"
            total += 1
            covered += ci.loc[term, "low"] <= b <= ci.loc[term, "high"]
            est[s].append(fit.coef[term])
            assert fit.coef[term] == pytest.approx(cl.params[j], abs=0.03)
    assert covered >= total - 1  # 95% intervals: at most one miss in nine
    for s, b in planted.items():
        assert np.mean(est[s]) == pytest.approx(b, abs=0.2)  # SE of the mean over 3 seeds ~ 0.08
