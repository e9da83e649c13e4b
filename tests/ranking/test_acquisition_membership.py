"""A rule that reads no top-k membership (``global``: informativeness x variance) gets none
computed, and its runs are the ones a full membership estimate gives, query for query: the loop
still takes the posterior samples' draws from the run's generator (none when k is 0 or covers
every item, as :func:`topk_membership` takes none)."""

from __future__ import annotations

import numpy as np
import pytest

from judgelab.ranking.acquisition import (
    ACQUISITION_RULES,
    ActiveSettings,
    ScoreRule,
    make_rule,
    run_active,
    unread_membership,
)
from judgelab.ranking.bias_aware import topk_membership
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk.experiment import single_threaded_blas


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


def test_only_rules_with_the_boundary_factor_read_membership():
    reads = {name: make_rule(name).needs_membership for name in ACQUISITION_RULES.names()}
    assert reads == {"topk": True, "global": False, "no_variance": True, "no_informativeness": True,
                     "entropy": True, "round_robin": True, "random": True}
    # round robin and random fit nothing at all (needs_posterior), so their flag is never read
    assert not make_rule("round_robin").needs_posterior and not make_rule("random").needs_posterior


@pytest.mark.parametrize("k", [0, 3, 8])
def test_unread_membership_takes_the_draws_topk_membership_takes(k):
    theta = np.linspace(-1.0, 1.0, 8)
    a, b = np.random.default_rng(4), np.random.default_rng(4)
    topk_membership(theta, np.eye(8), k, 300, a)
    got = unread_membership(8, k, 300, b)
    assert np.isnan(got).all() and got.shape == (8,)
    assert a.bit_generator.state == b.bit_generator.state


class _GlobalReadingMembership(ScoreRule):
    """``global`` with the membership computed as before (nothing reads it)."""

    def __init__(self) -> None:
        super().__init__("global", ("informativeness", "variance"))
        self.needs_membership = True


@pytest.mark.parametrize("k", [2, 10])
def test_a_global_run_is_the_run_with_membership_computed(k):
    pool = synthetic_oracle(SyntheticJudge(c=(1.0,), kappa=0.5), 0, n_items=10, seed=9)
    settings = ActiveSettings(k=k, refit_every=3, n_samples=200)
    for seed in range(3):
        runs = []
        for rule in (make_rule("global"), _GlobalReadingMembership()):
            rng = np.random.default_rng([seed, 1])
            runs.append((run_active(pool.query, pool.n_items, pool.X, rule, 30, settings, rng), rng.random()))
        (fast, after_fast), (full, after_full) = runs
        np.testing.assert_array_equal(fast.first, full.first)
        np.testing.assert_array_equal(fast.second, full.second)
        np.testing.assert_array_equal(fast.y, full.y)
        assert fast.n_refits == full.n_refits == 10
        assert after_fast == after_full  # the generator is left where the full run leaves it
