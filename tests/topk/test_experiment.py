"""The offline evaluation tables of judgelab.topk.experiment: every documented column, its
values and its row count, on small seeded synthetic oracles (issue 13: checks that can fail)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.ranking.bias_aware import NAIVE, FitOptions, fit_bias_aware, residualize, swap_majority
from judgelab.registry import UnknownEntryError
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk.experiment import (
    ESTIMATORS,
    PoolOracle,
    Strategy,
    TopkSettings,
    boundary,
    evaluate_budget,
    evaluate_full,
    parse_strategies,
    recall_at_k,
    single_threaded_blas,
)

SET = TopkSettings(k=3, lam_b_sweep=(0.1, 1.0), k_values=(0, 1, 3, 12), n_samples=200, n_anchors=20, refit_every=4)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


@pytest.fixture(scope="module")
def pool() -> PoolOracle:
    p = synthetic_oracle(SyntheticJudge(c=(1.5,), kappa=0.4), 3, n_items=12, seed=8, covariate_names=["verb"])
    p.Y[0, 1] = np.nan  # one unusable verdict
    p.Y[5, 2] = np.nan
    p.cost_per_call = 0.25
    return p


def test_settings_and_oracle_helpers(pool):
    opts = TopkSettings(lam=0.7, lam_b=0.3).options(hierarchical=True)
    assert (opts.lam, opts.lam_b, opts.hierarchical, opts.covariates) == (0.7, 0.3, True, True)
    assert pool.n_items == 12 and pool.query(1, 0) == pool.Y[1, 0] and np.isnan(pool.query(0, 1))
    comp = pool.full_comparisons()
    assert len(comp) == 12 * 11 - 2 and set(np.unique(comp.y)) <= {0.0, 1.0}
    assert not ((comp.first == 0) & (comp.second == 1)).any()
    theta = np.array([5.0, 4.0, 3.0, 1.0])
    assert boundary(theta, 2) == 3.5 and boundary(theta, 1) == 4.5 and boundary(theta, 3) == 2.0
    assert recall_at_k(np.array([0, 1, 2, 3.0]), theta, 2) == 0.0
    assert recall_at_k(np.array([3, 0, 2, 1.0]), theta, 2) == 0.5
    assert recall_at_k(theta, theta, 3) == 1.0


def test_estimators_registry_matches_the_model(pool):
    comp = pool.full_comparisons()
    naive = ESTIMATORS.get("naive")(comp, pool, SET)
    np.testing.assert_allclose(naive.scores, fit_bias_aware(comp, 12, options=NAIVE).theta, atol=1e-6)
    aware = ESTIMATORS.get("aware")(comp, pool, SET)
    np.testing.assert_allclose(aware.scores, fit_bias_aware(comp, 12, pool.X, warn=False).theta, atol=1e-6)
    assert aware.fit.names[-2:] == ["c[verb]", "kappa"]
    hier = ESTIMATORS.get("aware_hier")(comp, pool, SET)
    assert hier.fit.options.hierarchical and hier.fit.tau2 != pytest.approx(10.0)
    np.testing.assert_allclose(ESTIMATORS.get("resid")(comp, pool, SET).scores, residualize(naive.scores, pool.X),
                               atol=1e-9)
    np.testing.assert_allclose(ESTIMATORS.get("swap_majority")(comp, pool, SET).scores,
                               swap_majority(comp, 12, lam=SET.lam), atol=1e-9)
    g = ESTIMATORS.get("gated")(comp, pool, SET)
    assert set(g.extra) == {"gate_enabled"}
    chosen = aware if g.extra["gate_enabled"] else naive
    np.testing.assert_allclose(g.scores, chosen.scores)
    # without covariates residualisation is the naive ranking
    bare = PoolOracle(0, pool.theta, np.zeros((12, 0)), [], pool.Y)
    np.testing.assert_allclose(ESTIMATORS.get("resid")(comp, bare, SET).scores, naive.scores)


def test_full_data_tables(pool):
    r = evaluate_full(pool, SET)
    rec, par, sc = r.recall, r.params, r.scores
    assert list(rec.columns) == ["oracle", "estimator", "lam_b", "k", "recall", "tau2", "gate_enabled",
                                 "n_comparisons", "n_unusable"]
    ests = ["naive", "resid", "swap_majority", "aware_hier", "gated", "aware", "aware"]
    assert len(rec) == len(ests) * 2  # k = 0 and k = 12 (= N) are dropped
    assert sorted(rec["k"].unique()) == [1, 3] and (rec["oracle"] == 3).all()
    assert (rec["n_comparisons"] == 130).all() and (rec["n_unusable"] == 2).all()
    assert rec["recall"].between(0, 1).all()
    aware_rows = rec[rec["estimator"] == "aware"]
    assert sorted(aware_rows["lam_b"].unique()) == [0.1, 1.0]
    np.testing.assert_allclose(aware_rows.sort_values("lam_b")["tau2"].unique(), [10.0, 1.0])
    hier = rec[rec["estimator"] == "aware_hier"]
    assert (hier["lam_b"] == SET.lam_b).all() and hier["tau2"].notna().all() and (hier["tau2"] != 10.0).all()
    for e in ("naive", "resid", "swap_majority"):
        sel = rec[rec["estimator"] == e]
        assert sel["lam_b"].isna().all() and sel["tau2"].isna().all() and sel["gate_enabled"].isna().all()
    gated = rec[rec["estimator"] == "gated"]
    assert gated["gate_enabled"].isin([True, False]).all() and gated["lam_b"].isna().all()
    # recall is the documented recall of each estimator's scores
    comp = pool.full_comparisons()
    naive_scores = fit_bias_aware(comp, 12, options=NAIVE).theta
    for k in (1, 3):
        got = rec[(rec["estimator"] == "naive") & (rec["k"] == k)]["recall"].iloc[0]
        assert got == recall_at_k(naive_scores, pool.theta, k)
    # params: bias terms of every non-naive fit except the gate (c and kappa, sweep and hierarchical)
    assert list(par.columns) == ["oracle", "estimator", "lam_b", "param", "estimate", "se", "ci_low", "ci_high",
                                 "status", "vif"]
    assert len(par) == 3 * 2 and set(par["estimator"]) == {"aware", "aware_hier"}
    assert set(par["param"]) == {"c[verb]", "kappa"} and (par["status"] == "identified").all()
    assert ((par["ci_low"] < par["estimate"]) & (par["estimate"] < par["ci_high"])).all()
    np.testing.assert_allclose(par["ci_high"] - par["estimate"], 1.959964 * par["se"], rtol=1e-5)
    assert (par["vif"] >= 1).all() and (par["se"] > 0).all()
    fit = fit_bias_aware(comp, 12, pool.X, options=FitOptions(lam_b=1.0), warn=False)
    row = par[(par["estimator"] == "aware") & (par["lam_b"] == 1.0) & (par["param"] == "kappa")].iloc[0]
    assert row["estimate"] == pytest.approx(fit.kappa, abs=1e-6) and row["se"] == pytest.approx(fit.se("kappa"))
    # scores: one row per item, naive and main bias-aware estimates, the covariates, the true top-k
    assert list(sc.columns) == ["oracle", "item", "theta", "top_k", "verb", "naive", "aware"]
    assert len(sc) == 12 and sc["top_k"].sum() == 3 and (sc["item"] == np.arange(12)).all()
    assert set(sc.loc[sc["top_k"], "item"]) == set(np.argsort(-pool.theta)[:3])
    np.testing.assert_allclose(sc["naive"], naive_scores, atol=1e-6)
    np.testing.assert_allclose(sc["aware"], fit_bias_aware(comp, 12, pool.X, warn=False).theta, atol=1e-6)
    np.testing.assert_array_equal(sc["verb"], pool.X[:, 0])


def test_budget_tables(pool):
    strats = [Strategy("aware", "topk"), Strategy("naive", "round_robin")]
    res = evaluate_budget(pool, strats, seeds=[0, 1], budgets=[20, 10, 20], settings=SET, base_seed=4,
                          allocation_budget=16)
    rec, alloc, q = res.recall, res.allocation, res.queries
    assert list(rec.columns) == ["oracle", "seed", "model", "rule", "estimator", "budget", "recall", "n_usable",
                                 "cost_per_call"]
    # aware: 1 estimator, naive: 2 (naive, resid); 2 seeds x 2 budgets
    assert len(rec) == (1 + 2) * 2 * 2 and sorted(rec["budget"].unique()) == [10, 20]
    assert set(rec.loc[rec["model"] == "naive", "estimator"]) == {"naive", "resid"}
    assert set(rec.loc[rec["model"] == "aware", "estimator"]) == {"aware"}
    assert (rec["cost_per_call"] == 0.25).all() and rec["recall"].between(0, 1).all()
    assert list(q.columns) == ["oracle", "seed", "model", "rule", "step", "first_item", "second_item", "y"]
    assert len(q) == 2 * 2 * 20  # the largest budget (the allocation budget is smaller)
    for (model, seed), g in q.groupby(["model", "seed"]):
        assert list(g["step"]) == list(range(1, 21))
        usable = rec[(rec["model"] == model) & (rec["seed"] == seed) & (rec["budget"] == 20)]["n_usable"]
        assert (usable == g["y"].notna().sum()).all()
        ten = rec[(rec["model"] == model) & (rec["seed"] == seed) & (rec["budget"] == 10)]["n_usable"]
        assert (ten == g["y"].iloc[:10].notna().sum()).all()
    assert list(alloc.columns) == ["oracle", "seed", "model", "rule", "budget", "item", "theta", "distance",
                                   "n_comparisons"]
    assert len(alloc) == 2 * 2 * 12 and (alloc["budget"] == 16).all()
    assert (alloc.groupby(["model", "seed"])["n_comparisons"].sum() == 2 * 16).all()
    bnd = boundary(pool.theta, 3)
    np.testing.assert_allclose(alloc["distance"], np.abs(alloc["theta"] - bnd))
    np.testing.assert_allclose(alloc["theta"], np.tile(pool.theta, 4))
    # seeded: the same call reproduces every query; another base seed changes them
    again = evaluate_budget(pool, strats, seeds=[0, 1], budgets=[20, 10], settings=SET, base_seed=4)
    pd.testing.assert_frame_equal(again.queries, q)
    other = evaluate_budget(pool, strats[:1], seeds=[0], budgets=[20], settings=SET, base_seed=5).queries
    assert not np.array_equal(other["first_item"].to_numpy(), q[(q["model"] == "aware") & (q["seed"] == 0)]
                              ["first_item"].to_numpy())
    # the loop is Alg. 1 with the strategy's model: the aware rule acquires with the bias-aware
    # posterior and the settings' k / refit period, the naive one with the naive posterior
    from judgelab.ranking.acquisition import ActiveSettings, make_rule, run_active
    from judgelab.ranking.bias_aware import naive_options

    both = evaluate_budget(pool, [Strategy("aware", "topk"), Strategy("naive", "topk")], seeds=[0], budgets=[14],
                           settings=SET).queries
    for model, X, opts in (("aware", pool.X, SET.options()), ("naive", None, naive_options(SET.options()))):
        act = ActiveSettings(k=3, refit_every=4, n_samples=200, options=opts)
        ref = run_active(pool.query, 12, X, make_rule("topk"), 14, act, np.random.default_rng([0, 3, 0]))
        got = both[both["model"] == model]
        np.testing.assert_array_equal(got["first_item"], ref.first)
        np.testing.assert_array_equal(got["second_item"], ref.second)
    default_seed = evaluate_budget(pool, strats[:1], seeds=[0], budgets=[8], settings=SET).queries
    pd.testing.assert_frame_equal(default_seed, evaluate_budget(pool, strats[:1], seeds=[0], budgets=[8], settings=SET,
                                                                base_seed=0).queries)
    # an allocation budget beyond the recall budgets extends the run to it
    long = evaluate_budget(pool, strats[:1], seeds=[0], budgets=[10], settings=SET, allocation_budget=24)
    assert len(long.queries) == 24 and long.allocation["n_comparisons"].sum() == 48
    assert sorted(long.recall["budget"].unique()) == [10]
    # no allocation budget: no allocation rows
    assert evaluate_budget(pool, strats[:1], seeds=[0], budgets=[8], settings=SET).allocation.empty


def test_strategies_parse_and_validate():
    s = parse_strategies(["aware/topk", {"model": "naive", "rule": "global"}])
    assert s == [Strategy("aware", "topk"), Strategy("naive", "global")]
    assert s[0].label == "aware/topk" and s[0].estimators == ("aware",) and s[1].estimators == ("naive", "resid")
    with pytest.raises(ValueError, match="must be 'aware' or 'naive'"):
        Strategy("bias", "topk")
    with pytest.raises(UnknownEntryError, match="topk"):
        parse_strategies(["aware/topkk"])
    with pytest.raises(UnknownEntryError, match="x/topk"):  # the model is what comes before the first '/'
        parse_strategies(["naive/x/topk"])
