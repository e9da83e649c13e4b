"""Top-k-aware acquisition and the offline evaluation on the synthetic simulator (paper 002).

The issue's claims, on the synthetic simulator (pure numpy, Eq. (1) verdicts):

* with c* > 0, naive top-k recall plateaus below the bias-aware model at full data (paired
  over 30 oracles), and top-k-aware acquisition beats round-robin at B = 120 (paired t-test
  over 30 oracles, 2 strategy seeds averaged within each);
* with c* = kappa* = 0 (the unbiased-judge control) bias-aware recall is within 0.1 of naive;
* the mechanism of Fig. 4: top-k-aware acquisition spends more comparisons near the boundary.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.ranking.acquisition import (
    ACQUISITION_RULES,
    ActiveSettings,
    PairSpace,
    Posterior,
    binary_entropy,
    make_rule,
    run_active,
)
from judgelab.ranking.bias_aware import NAIVE, Comparisons, fit_bias_aware
from judgelab.registry import UnknownEntryError
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk.experiment import (
    Strategy,
    TopkSettings,
    evaluate_budget,
    recall_at_k,
    single_threaded_blas,
)
from judgelab.topk.stats import paired_comparison


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


SETTINGS = TopkSettings(n_samples=500, lam_b_sweep=(0.1,))


def full_recalls(judge: SyntheticJudge, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Full-data top-5 recall of the naive and the bias-aware (lambda_b = 0.1) model per oracle."""
    naive, aware = [], []
    for o in range(n):
        pool = synthetic_oracle(judge, o, seed=seed)
        comp = pool.full_comparisons()
        naive.append(recall_at_k(fit_bias_aware(comp, 30, options=NAIVE).theta, pool.theta, 5))
        aware.append(recall_at_k(fit_bias_aware(comp, 30, pool.X, warn=False).theta, pool.theta, 5))
    return np.array(naive), np.array(aware)


def test_naive_plateaus_below_bias_aware_at_full_data():
    naive, aware = full_recalls(SyntheticJudge(c=(1.0,), kappa=0.5), 30, seed=31)
    cmp = paired_comparison(aware, naive)
    assert cmp["delta"] > 0.08 and cmp["ci_low"] > 0 and cmp["p"] < 0.01, cmp


def test_unbiased_control_bias_aware_within_0_1_of_naive():
    naive, aware = full_recalls(SyntheticJudge(c=(0.0,), kappa=0.0), 30, seed=32)
    assert abs(aware.mean() - naive.mean()) <= 0.1, (aware.mean(), naive.mean())


def test_topk_aware_beats_round_robin_at_b120():
    # 30 oracles x 2 strategy seeds, S = 1500 membership draws (the paper's)
    judge = SyntheticJudge(c=(1.0,), kappa=0.5)
    frames = []
    for o in range(30):
        b = evaluate_budget(synthetic_oracle(judge, o, seed=33), [Strategy("aware", "topk"),
                            Strategy("aware", "round_robin")], seeds=[0, 1], budgets=[120],
                            settings=TopkSettings(lam_b_sweep=(0.1,)))
        frames.append(b.recall)
    # oracle-level test: the two seeds re-run one oracle and are averaged within it
    w = pd.concat(frames).pivot_table(index="oracle", columns="rule", values="recall", aggfunc="mean")
    assert len(w) == 30
    cmp = paired_comparison(w["topk"].to_numpy(), w["round_robin"].to_numpy())
    assert cmp["delta"] > 0 and cmp["p"] < 0.05, cmp


def test_topk_rule_spends_budget_at_the_boundary():
    judge = SyntheticJudge(c=(1.0,), kappa=0.5)
    near, far = {}, {}
    for o in range(4):
        pool = synthetic_oracle(judge, o, seed=34)
        res = evaluate_budget(pool, [Strategy("aware", "topk"), Strategy("aware", "round_robin")], seeds=[0],
                              budgets=[120], settings=SETTINGS, allocation_budget=120)
        alloc = res.allocation
        q = res.queries  # the query log records every acquisition and its presentation order
        assert len(q) == 2 * 120 and q.groupby("rule")["step"].max().eq(120).all()
        assert (q["first_item"] != q["second_item"]).all()
        for rule, g in alloc.groupby("rule"):
            cut = g["distance"].quantile(0.25)
            near.setdefault(rule, []).append(g.loc[g["distance"] <= cut, "n_comparisons"].mean())
            far.setdefault(rule, []).append(g.loc[g["distance"] > cut, "n_comparisons"].mean())
    ratio = {r: np.mean(near[r]) / np.mean(far[r]) for r in near}
    assert ratio["topk"] > 1.5 * ratio["round_robin"], ratio


def test_round_robin_schedule_is_a_tournament():
    rng = np.random.default_rng(0)
    for n in (6, 7):
        space = PairSpace(n)
        rule = make_rule("round_robin")
        rule.start(space, rng)
        assert sorted(rule.schedule) == list(range(n * (n - 1) // 2))  # every pair exactly once
        per_round = n // 2
        for r in range(n - 1 if n % 2 == 0 else n):
            chunk = rule.schedule[r * per_round : (r + 1) * per_round]
            items = np.concatenate([[space.i[m], space.j[m]] for m in chunk])
            assert len(set(items.tolist())) == len(items)  # nobody plays twice in a round


def test_score_factors_target_what_they_say():
    n = 6
    space = PairSpace(n)
    theta = np.array([2.0, 0.1, 0.0, -0.1, -2.0, -2.1])
    sigma = np.diag([0.01, 0.5, 0.5, 0.5, 0.01, 3.0])
    fit = fit_bias_aware(Comparisons.empty(), n, options=NAIVE, warn=False)
    fit.theta, fit.cov = theta, sigma
    post = Posterior(fit, np.array([1.0, 0.5, 0.5, 0.5, 0.0, 0.0]), k=2)
    picks = {}
    for name in ("entropy", "global", "topk"):
        rule = make_rule(name)
        rule.rescore(post, space)
        m = rule.choose(space, np.random.default_rng(0))
        picks[name] = {int(space.i[m]), int(space.j[m])}
    assert picks["entropy"] <= {1, 2, 3}  # both items on the boundary (p = 1/2)
    assert 5 in picks["global"]  # the most uncertain item, wherever it is
    assert picks["topk"] <= {1, 2, 3}
    assert binary_entropy(np.array([0.0, 0.5, 1.0])) == pytest.approx([0.0, np.log(2), 0.0])


def test_runs_are_seeded_and_record_random_orders():
    pool = synthetic_oracle(SyntheticJudge(), 0, seed=35)
    act = ActiveSettings(k=5, n_samples=200)
    r1 = run_active(pool.query, 30, pool.X, make_rule("topk"), 80, act, np.random.default_rng(1))
    r2 = run_active(pool.query, 30, pool.X, make_rule("topk"), 80, act, np.random.default_rng(1))
    r3 = run_active(pool.query, 30, pool.X, make_rule("topk"), 80, act, np.random.default_rng(2))
    assert (r1.first == r2.first).all() and (r1.second == r2.second).all()
    assert not (r1.first == r3.first).all()
    lower_first = (r1.first < r1.second).mean()
    assert 0.3 < lower_first < 0.7  # presentation order randomised
    pairs = {frozenset(p) for p in zip(r1.first.tolist(), r1.second.tolist(), strict=True)}
    assert len(pairs) == 80 and r1.n_refits == 10  # no pair twice; refit every 8


def test_unusable_verdicts_spend_budget_but_reveal_nothing():
    pool = synthetic_oracle(SyntheticJudge(), 0, seed=36)
    pool.Y[np.random.default_rng(0).random(pool.Y.shape) < 0.3] = np.nan
    run = run_active(pool.query, 30, pool.X, make_rule("random"), 100, ActiveSettings(), np.random.default_rng(0))
    assert len(run.first) == 100 and 50 < len(run.revealed(100)) < 90


def test_recall_is_tie_aware():
    theta = np.array([6, 6, 4, 4, 4, 2], dtype=float)
    assert recall_at_k(np.array([5, 4, 3, 2, 1, 0.0]), theta, 2) == 1.0
    assert recall_at_k(np.array([0, 4, 3, 2, 1, 5.0]), theta, 2) == 0.5
    assert recall_at_k(np.array([5, 4, 0, 0, 3, 0.0]), theta, 3) == 1.0  # any of the tied 4s counts


def test_unknown_rule_names_the_known_ones():
    with pytest.raises(UnknownEntryError, match="round_robin"):
        make_rule("roundrobin")
    assert {"topk", "global", "round_robin", "random", "entropy", "no_variance", "no_informativeness"} <= set(
        ACQUISITION_RULES)


def test_variance_factor_is_the_contrast_variance():
    # Var(theta_i - theta_j) = Sigma_ii + Sigma_jj - 2 Sigma_ij: items 0 and 1 are strongly
    # positively correlated, so their contrast is nearly certain although each item is not
    n = 3
    space = PairSpace(n)
    sigma = np.array([[1.0, 0.95, 0.0], [0.95, 1.0, 0.0], [0.0, 0.0, 0.5]])
    fit = fit_bias_aware(Comparisons.empty(), n, options=NAIVE, warn=False)
    fit.theta, fit.cov = np.zeros(n), sigma
    post = Posterior(fit, np.full(n, 1 / 3), k=1)
    rule = make_rule("global")
    rule.rescore(post, space)
    var = sigma[space.i, space.i] + sigma[space.j, space.j] - 2 * sigma[space.i, space.j]
    np.testing.assert_allclose(rule.scores, 0.25 * var)  # p_ij(1 - p_ij) = 1/4 at equal theta
    m = rule.choose(space, np.random.default_rng(0))
    assert {int(space.i[m]), int(space.j[m])} != {0, 1}
    # and the full rule multiplies in the boundary term H(p_i) + H(p_j)
    top = make_rule("topk")
    top.rescore(post, space)
    np.testing.assert_allclose(top.scores, 0.25 * var * 2 * binary_entropy(np.array(1 / 3)))


def test_table3_tests_at_the_oracle_level():
    # issue 13: seeds re-run one oracle; the test's units are the oracles (seed means), so 3
    # oracles x 8 seeds is n = 3, not 24 -- here the seeds agree within each oracle, and
    # treating them as independent runs would shrink the p-value by orders of magnitude
    from judgelab.topk.tables import table_budget

    rng = np.random.default_rng(0)
    rows = []
    gain = {0: 0.05, 1: 0.20, 2: 0.10}
    for o in range(3):
        base = rng.uniform(0.4, 0.6)
        for seed in range(8):
            for rule, r in (("topk", base + gain[o]), ("global", base), ("round_robin", base - 0.1)):
                rows.append({"judge": "j", "oracle": o, "seed": seed, "model": "aware", "rule": rule,
                             "estimator": "aware", "budget": 120, "recall": r + 0.01 * (seed % 2)})
    t = table_budget(pd.DataFrame(rows)).set_index("rule")
    means = pd.DataFrame(rows).groupby(["rule", "oracle"])["recall"].mean()
    expected = paired_comparison(means["topk"].to_numpy(), means["global"].to_numpy())
    assert t.loc["topk", "n_oracles"] == 3 and t.loc["topk", "n_runs"] == 24
    assert t.loc["topk", "p_vs_global"] == pytest.approx(expected["p"], rel=1e-9)
    assert 0.01 < t.loc["topk", "p_vs_global"] < 0.2  # three oracles cannot give p < 1e-3
    assert t.loc["topk", "recall"] == pytest.approx(means["topk"].mean())
    assert t.loc["topk", "se"] == pytest.approx(means["topk"].std(ddof=1) / np.sqrt(3))
    assert np.isnan(t.loc["global", "p_vs_global"])


def test_registered_rules_are_the_documented_factor_products():
    expected = {"topk": ("informativeness", "variance", "boundary"), "global": ("informativeness", "variance"),
                "no_variance": ("informativeness", "boundary"), "no_informativeness": ("variance", "boundary"),
                "entropy": ("boundary",)}
    for name, factors in expected.items():
        rule = make_rule(name)
        assert rule.name == name and rule.factors == factors and rule.needs_posterior
    assert not make_rule("random").needs_posterior and not make_rule("round_robin").needs_posterior
    assert make_rule("random").name == "random" and make_rule("round_robin").name == "round_robin"
    from judgelab.ranking.acquisition import ScoreRule

    for bad in ((), ("variance", "luck")):
        with pytest.raises(ValueError, match="non-empty subset"):
            ScoreRule("x", bad)
    # each factor's value on a hand-made posterior
    n = 4
    space = PairSpace(n)
    fit = fit_bias_aware(Comparisons.empty(), n, options=NAIVE, warn=False)
    fit.theta = np.array([1.0, 0.0, -0.5, 2.0])
    fit.cov = np.diag([0.5, 1.0, 2.0, 0.25])
    memb = np.array([0.9, 0.5, 0.2, 1.0])
    post = Posterior(fit, memb, k=2)
    i, j = space.i, space.j
    from scipy.special import expit

    pij = expit(fit.theta[i] - fit.theta[j])
    var = np.diag(fit.cov)[i] + np.diag(fit.cov)[j]
    h = binary_entropy(memb)
    want = {"no_variance": pij * (1 - pij) * (h[i] + h[j]), "no_informativeness": var * (h[i] + h[j]),
            "entropy": h[i] + h[j], "global": pij * (1 - pij) * var}
    for name, w in want.items():
        rule = make_rule(name)
        rule.rescore(post, space)
        np.testing.assert_allclose(rule.scores, w, rtol=1e-12)


def test_active_loop_defaults_budget_cap_and_rescoring():
    d = ActiveSettings()
    assert (d.k, d.refit_every, d.n_samples) == (5, 8, 1500)  # the paper's Alg. 1 settings
    pool = synthetic_oracle(SyntheticJudge(), 1, n_items=6, seed=37)
    run = run_active(pool.query, 6, pool.X, make_rule("topk"), 100, ActiveSettings(k=2, n_samples=100, refit_every=4),
                     np.random.default_rng(0))
    assert len(run.y) == 15 and run.n_refits == 4  # capped at the 15 unordered pairs; refits at t = 0, 4, 8, 12
    assert {frozenset(p) for p in zip(run.first.tolist(), run.second.tolist(), strict=True)} == {
        frozenset(p) for p in zip(*np.triu_indices(6, 1), strict=True)}
    np.testing.assert_array_equal(run.allocation(15, 6), np.full(6, 5))
    assert run.allocation(3, 6).sum() == 6 and len(run.allocation(1, 6)) == 6
    rr = run_active(pool.query, 6, None, make_rule("round_robin"), 9, ActiveSettings(k=2), np.random.default_rng(0))
    assert rr.n_refits == 0  # rules without a posterior never refit
    ran = run_active(pool.query, 6, None, make_rule("random"), 15, ActiveSettings(k=2), np.random.default_rng(0))
    assert ran.n_refits == 0 and len({frozenset(p) for p in zip(ran.first.tolist(), ran.second.tolist(),
                                                                   strict=True)}) == 15
    y_shown = np.array([pool.query(a, b) for a, b in zip(run.first, run.second, strict=True)])
    np.testing.assert_array_equal(run.y, y_shown)  # the verdict on the order shown


def test_round_robin_falls_back_to_random_after_its_schedule():
    space = PairSpace(5)
    rule = make_rule("round_robin")
    rng = np.random.default_rng(0)
    rule.start(space, rng)
    assert len(rule.schedule) == 10
    picks = []
    for _ in range(10):
        m = rule.choose(space, rng)
        assert space.open[m]
        space.open[m] = False
        picks.append(m)
    assert sorted(picks) == list(range(10))
    assert rule.schedule == picks  # the schedule in order
    # a pair that reopens after the schedule is spent (the live loop asks a pair again on
    # another prompt) is still chosen
    space.open[7] = True
    assert rule.choose(space, rng) == 7
    assert PairSpace(5).index(3, 1) == PairSpace(5).index(1, 3) == 5
