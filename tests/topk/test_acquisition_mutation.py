"""Alg. 1's pair selection (judgelab.ranking.acquisition), checked where a broken copy would differ
(issue 13, mutation testing):

* Eq. (3)'s factors on a 3-item posterior with correlated qualities, written out by hand, and
  the chosen pair maximises each rule's score among the unqueried pairs;
* ties (exact, or within the documented rounding tolerance) are broken uniformly at random,
  and a unique best draws nothing from the generator;
* every refit of the loop is the posterior of exactly the usable verdicts revealed so far,
  under the run's model, warm-started from the previous fit, without identifiability
  warnings; the rule reads the run's k and ``S`` draws;
* the pair index, the round-robin tournament for every pool size, the allocation counts and
  the error messages.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import judgelab.ranking.acquisition as acq
from judgelab.ranking.acquisition import (
    FACTORS,
    ActiveRun,
    ActiveSettings,
    PairSpace,
    Posterior,
    ScoreRule,
    binary_entropy,
    make_rule,
    run_active,
)
from judgelab.ranking.bias_aware import NAIVE, Comparisons, FitOptions, IdentifiabilityWarning, fit_bias_aware
from judgelab.registry import UnknownEntryError
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk.experiment import single_threaded_blas

LN2 = math.log(2.0)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


def posterior(theta, cov, membership, k) -> Posterior:
    fit = fit_bias_aware(Comparisons.empty(), len(theta), options=NAIVE, warn=False)
    fit.theta, fit.cov = np.asarray(theta, dtype=float), np.asarray(cov, dtype=float)
    return Posterior(fit, np.asarray(membership, dtype=float), k)


# pairs in PairSpace(3) order: (0, 1), (0, 2), (1, 2)
# theta_0 - theta_1 = theta_0 - theta_2 = log 3  ->  p = 3/4, p(1 - p) = 3/16;  theta_1 = theta_2 -> 1/4
# Var(theta_i - theta_j) = S_ii + S_jj - 2 S_ij:  3 + 2 - 1 = 4,  3 + 1 - 0 = 4,  2 + 1 - 0.5 = 2.5
# membership (k = 2) 1, 1/2, 1/2  ->  H = 0, log 2, log 2;  H_i + H_j = log 2, log 2, 2 log 2
THREE = dict(theta=[math.log(3.0), 0.0, 0.0], cov=[[3.0, 0.5, 0.0], [0.5, 2.0, 0.25], [0.0, 0.25, 1.0]],
             membership=[1.0, 0.5, 0.5], k=2)
HAND = {
    "topk": [3 / 16 * 4 * LN2, 3 / 16 * 4 * LN2, 1 / 4 * 2.5 * 2 * LN2],
    "global": [3 / 16 * 4, 3 / 16 * 4, 1 / 4 * 2.5],
    "no_variance": [3 / 16 * LN2, 3 / 16 * LN2, 1 / 4 * 2 * LN2],
    "no_informativeness": [4 * LN2, 4 * LN2, 2.5 * 2 * LN2],
    "entropy": [LN2, LN2, 2 * LN2],
}


def test_eq3_values_on_a_three_item_posterior_and_the_argmax():
    space = PairSpace(3)
    post = posterior(**THREE)
    for name, want in HAND.items():
        rule = make_rule(name)
        rule.rescore(post, space)
        np.testing.assert_allclose(rule.scores, want, rtol=1e-12, err_msg=name)
        picks = {rule.choose(space, np.random.default_rng(s)) for s in range(40)}
        best = np.flatnonzero(np.isclose(want, max(want), rtol=1e-12))
        assert picks == set(best.tolist()), name  # every best pair, and only those
    assert set(HAND) | {"round_robin", "random"} == set(acq.ACQUISITION_RULES)
    # the argmax runs over unqueried pairs only
    rule = make_rule("topk")
    rule.rescore(post, space)
    space.open[2] = False
    assert {rule.choose(space, np.random.default_rng(s)) for s in range(40)} == {0, 1}
    space.open[0] = False
    assert rule.choose(space, np.random.default_rng(0)) == 1


def test_ties_are_uniform_tolerance_is_relative_and_a_unique_best_draws_nothing():
    rule = ScoreRule("t", FACTORS)
    with pytest.raises(AssertionError, match=r"^rescore\(\) must run before choose\(\)$"):
        rule.choose(PairSpace(3), np.random.default_rng(0))
    space = PairSpace(4)  # 6 pairs
    rule.scores = np.array([1.0, 3.0, 2.0, 3.0, 0.5, 3.0])
    counts = np.bincount([rule.choose(space, np.random.default_rng(s)) for s in range(600)], minlength=6)
    assert counts[[0, 2, 4]].sum() == 0 and (np.abs(counts[[1, 3, 5]] - 200) < 50).all()
    rule.scores = np.array([1.0, 3.0, 2.0, 3.0, 0.5, 2.9])
    counts = np.bincount([rule.choose(space, np.random.default_rng(s)) for s in range(400)], minlength=6)
    assert counts[[0, 2, 4, 5]].sum() == 0 and (np.abs(counts[[1, 3]] - 200) < 50).all()

    def choices(scores):
        rule.scores = np.asarray(scores, dtype=float)
        return {rule.choose(space, np.random.default_rng(s)) for s in range(30)}

    for big in (1.0, 1e6):  # tolerance 1e-12 * max(1, |best|), inclusive
        tol = 1e-12 * big
        assert choices([big, big - 0.5 * tol, 0, 0, 0, 0]) == {0, 1}
        assert choices([big, big - tol, 0, 0, 0, 0]) == {0, 1}
        assert choices([big, big - 3 * tol, 0, 0, 0, 0]) == {0}
    assert choices([0.5, 0.5 - 0.8e-12, 0, 0, 0, 0]) == {0, 1}  # below 1 the tolerance stays 1e-12
    assert choices([0.5, 0.5 - 1.5e-12, 0, 0, 0, 0]) == {0}
    # a unique best leaves the generator untouched
    rule.scores = np.array([1.0, 3.0, 2.0, 0.0, 0.5, 2.9])
    rng = np.random.default_rng(7)
    assert rule.choose(space, rng) == 1
    assert rng.random() == np.random.default_rng(7).random()


class Recorder(ScoreRule):
    """The paper's rule, recording what every refit hands it and checking every choice."""

    def __init__(self) -> None:
        super().__init__("topk", FACTORS)
        self.refits: list[tuple[int, Posterior]] = []

    def rescore(self, post: Posterior, space: PairSpace) -> None:
        super().rescore(post, space)
        self.refits.append((int(space.open.sum()), post))

    def choose(self, space: PairSpace, rng: np.random.Generator) -> int:
        m = super().choose(space, rng)
        assert space.open[m] and self.scores[m] == self.scores[space.open].max()
        return m


@pytest.mark.parametrize("model", ["aware", "naive"])
def test_every_refit_is_the_posterior_of_the_usable_verdicts_so_far(model, monkeypatch):
    pool = synthetic_oracle(SyntheticJudge(c=(1.0,), kappa=0.5), 0, n_items=8, seed=41)
    pool.Y[np.random.default_rng(1).random(pool.Y.shape) < 0.2] = np.nan  # some unusable verdicts
    opts = FitOptions(lam_b=0.5) if model == "aware" else NAIVE
    X = pool.X if model == "aware" else None
    settings = ActiveSettings(k=3, refit_every=5, n_samples=300, options=opts)
    starts, fits = [], []
    real_fit = acq.fit_bias_aware

    def spy(*args, **kw):
        starts.append(None if kw.get("x0") is None else np.array(kw["x0"]))
        fits.append(real_fit(*args, **kw))
        return fits[-1]

    monkeypatch.setattr(acq, "fit_bias_aware", spy)
    rule = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)  # the loop's early fits are weak by design
        run = run_active(pool.query, 8, X, rule, 20, settings, np.random.default_rng(3))
    monkeypatch.undo()
    assert run.n_refits == len(rule.refits) == 4  # t = 0, 5, 10, 15
    assert [n_open for n_open, _ in rule.refits] == [28, 23, 18, 13]
    for (_, post), t in zip(rule.refits, (0, 5, 10, 15), strict=True):
        comp = run.revealed(t)
        assert post.k == 3 and post.fit.options == opts and post.fit.n_comparisons == len(comp)
        ref = fit_bias_aware(comp, 8, X, options=opts, warn=False)
        np.testing.assert_allclose(post.fit.theta, ref.theta, atol=1e-4)
        assert len(post.fit.c) == (1 if model == "aware" else 0)
        p = post.membership
        assert p.sum() == pytest.approx(3.0) and np.allclose(p * 300, np.round(p * 300))
    assert len(run.revealed(20)) < 20  # some verdicts were unusable and revealed nothing
    # warm start: every refit after the first starts from the previous fit's beta
    assert starts[0] is None and len(starts) == 4
    for prev, x0 in zip(fits[:-1], starts[1:], strict=True):
        np.testing.assert_array_equal(x0, prev.beta)


def test_pair_index_is_the_inverse_of_the_pair_list():
    for n in (2, 3, 5, 8):
        space = PairSpace(n)
        assert len(space.i) == n * (n - 1) // 2 and space.open.all()
        for m, (a, b) in enumerate(zip(space.i.tolist(), space.j.tolist(), strict=True)):
            assert a < b and space.index(a, b) == space.index(b, a) == m
            assert (space.i[space.index(b, a)], space.j[space.index(a, b)]) == (a, b)  # usable as an index
        space.open[0] = False
        assert space.i[space.open].tolist() == space.i[1:].tolist()  # a boolean mask of unqueried pairs
        assert space.j[~space.open].tolist() == [1]


def test_round_robin_is_a_full_tournament_for_every_pool_size():
    for n in range(2, 10):
        space = PairSpace(n)
        rule = make_rule("round_robin")
        rule.start(space, np.random.default_rng(n))
        assert sorted(rule.schedule) == list(range(len(space.i))), n
        size = n // 2  # matches per round; rounds: n - 1 (even n) or n (odd n, one bye each)
        rounds = [rule.schedule[r * size:(r + 1) * size] for r in range(len(rule.schedule) // size)]
        assert len(rounds) == (n - 1 if n % 2 == 0 else n)
        for chunk in rounds:
            items = [x for m in chunk for x in (space.i[m], space.j[m])]
            assert len(set(items)) == len(items) == 2 * size


def test_allocation_counts_both_slots_and_make_rule_names_its_registry():
    run = ActiveRun(first=np.array([2, 1, 2]), second=np.array([0, 2, 1]), y=np.array([1.0, np.nan, 0.0]),
                    n_refits=0)
    np.testing.assert_array_equal(run.allocation(1, 4), [1, 0, 1, 0])
    np.testing.assert_array_equal(run.allocation(3, 4), [1, 2, 3, 0])
    comp = run.revealed(3)
    assert comp.first.tolist() == [2, 2] and comp.second.tolist() == [0, 1] and comp.y.tolist() == [1.0, 0.0]
    with pytest.raises(UnknownEntryError, match=r"unknown acquisition rule 'nope' \(topk acquisition\); known: "):
        make_rule("nope")
    assert binary_entropy(np.array([0.25])) == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
