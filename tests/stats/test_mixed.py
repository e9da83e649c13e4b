"""Mixed-effects fits: design, intervals, and the reported fields of each fit (mutation-tested, issue 13).

Small panels, so the whole file runs in seconds; recovery of planted effects and the
quadrature likelihood are tested in tests/strategies/test_stats.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

from judgelab.stats.mixed import MixedFit, _design, _GHQLogit, logit_random_intercept, lpm_random_intercept


def _panel(n: int, effects: dict[str, float], sd: float, seed: int, base: float = 0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strategies = ["B0", *effects]
    inst = np.repeat(np.arange(n), len(strategies))
    strat = np.tile(strategies, n)
    u = rng.normal(0, sd, n)[inst]
    eta = base + u + np.array([0.0 if s == "B0" else effects[s] for s in strat])
    return pd.DataFrame({"correct": rng.random(len(eta)) < expit(eta), "strategy": strat, "instance": inst})


def test_design_columns_and_reference():
    df = pd.DataFrame({"strategy": ["S2", "B0", "S1", "S2"], "correct": [1, 0, 1, 1], "instance": [0, 0, 1, 1]})
    X, names, levels = _design(df, "strategy", "B0")
    assert levels == ["B0", "S1", "S2"]
    assert names == ["Intercept", "C(strategy, Treatment('B0'))[T.S1]", "C(strategy, Treatment('B0'))[T.S2]"]
    assert X.tolist() == [[1, 0, 1], [1, 0, 0], [1, 1, 0], [1, 0, 1]]
    with pytest.raises(ValueError, match=r"^reference level 'B9' not in column 'strategy'$"):
        _design(df, "strategy", "B9")


def test_ci_uses_the_level():
    fit = MixedFit("m", pd.Series({"x": 1.0}), pd.Series({"x": 0.5}), pd.Series({"x": 0.04}), 1.0, 10, 5, True)
    ci = fit.ci()
    assert ci.loc["x", "low"] == pytest.approx(1 - 1.959963985 * 0.5)
    assert ci.loc["x", "high"] == pytest.approx(1 + 1.959963985 * 0.5)
    ci90 = fit.ci(0.1)
    assert ci90.loc["x", "high"] == pytest.approx(1 + 1.644853627 * 0.5)
    assert math.isnan(fit.loglik)  # not given


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    return _panel(80, {"S1": 0.8, "S2": -0.6}, 1.0, 11)


def test_logit_fit_reports_its_own_likelihood_and_wald_tests(panel):
    fit = logit_random_intercept(panel, n_nodes=12)
    assert fit.method == "logit_glmm_ghq12_ml" and fit.converged
    assert (fit.n_obs, fit.n_groups) == (240, 80)
    names = ["Intercept", "C(strategy, Treatment('B0'))[T.S1]", "C(strategy, Treatment('B0'))[T.S2]"]
    assert fit.coef.index.tolist() == names and fit.se.index.tolist() == names and fit.pvalue.index.tolist() == names
    X, _, _ = _design(panel, "strategy", "B0")
    model = _GHQLogit(panel["correct"].to_numpy(float), X, panel["instance"].to_numpy(), 12)
    theta = np.append(fit.coef.to_numpy(), 0.5 * math.log(fit.group_var))
    value, grad = model.value_grad(theta)
    assert fit.loglik == pytest.approx(value, abs=1e-9)  # the maximised log-likelihood
    assert np.abs(grad).max() < 1e-6  # at a stationary point, to the tight tolerances the fit asks for
    # it is a maximum: moving any coefficient lowers the likelihood
    for j in range(len(theta)):
        e = np.zeros_like(theta)
        e[j] = 0.05
        assert model.value_grad(theta + e)[0] < value and model.value_grad(theta - e)[0] < value
    # SEs: inverse observed information, here from a finite-difference Hessian of the log-likelihood
    k, h = len(theta), 1e-4
    H = np.zeros((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = h
        H[:, j] = -(model.value_grad(theta + e)[1] - model.value_grad(theta - e)[1]) / (2 * h)
    se = np.sqrt(np.diag(np.linalg.inv(0.5 * (H + H.T))))
    assert fit.se.to_numpy() == pytest.approx(se[:-1], rel=1e-3)
    assert fit.pvalue.to_numpy() == pytest.approx(2 * norm.sf(np.abs(fit.coef / fit.se)), rel=1e-9)
    # the planted direction of each effect is recovered
    assert fit.coef.iloc[1] > 0 > fit.coef.iloc[2]


def test_logit_default_nodes_and_custom_columns(panel):
    df = panel.rename(columns={"correct": "ok", "strategy": "arm", "instance": "item"}).replace({"arm": {"B0": "base"}})
    fit = logit_random_intercept(df, outcome="ok", treatment="arm", reference="base", group="item")
    assert fit.method == "logit_glmm_ghq32_ml"
    assert fit.coef.index.tolist()[1] == "C(arm, Treatment('base'))[T.S1]"
    ref = logit_random_intercept(panel)
    assert fit.coef.to_numpy() == pytest.approx(ref.coef.to_numpy(), abs=1e-6)


def test_logit_start_is_clipped_for_all_correct_data():
    # every answer correct: the start value is clipped (log(0.999/0.001)), not infinite, and the fit is finite
    df = _panel(20, {"S1": 0.0}, 0.5, 4).assign(correct=True)
    fit = logit_random_intercept(df, n_nodes=8)
    assert np.isfinite(fit.coef.to_numpy()).all() and fit.coef.iloc[0] > 5


def test_lpm_fit_is_statsmodels_reml(panel):
    import statsmodels.formula.api as smf

    fit = lpm_random_intercept(panel)
    data = panel.assign(correct=panel["correct"].astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = smf.mixedlm("correct ~ C(strategy, Treatment('B0'))", data, groups=data["instance"]).fit(reml=True)
    assert fit.method == "lpm_mixedlm_reml"
    assert fit.coef.to_numpy() == pytest.approx(ref.fe_params.to_numpy(), abs=1e-8)
    assert fit.se.to_numpy() == pytest.approx(ref.bse_fe.to_numpy(), rel=1e-6)
    assert fit.pvalue.to_numpy() == pytest.approx(ref.pvalues.reindex(ref.fe_params.index).to_numpy(), rel=1e-6)
    assert fit.group_var == pytest.approx(float(ref.cov_re.iloc[0, 0]), rel=1e-6)
    assert fit.loglik == pytest.approx(float(ref.llf), rel=1e-9)
    assert (fit.n_obs, fit.n_groups, fit.converged) == (240, 80, bool(ref.converged))
    assert fit.se.index.tolist() == fit.coef.index.tolist()
