"""The level of :func:`judgelab.uda.human.bradley_terry_scores`' Elo intervals: each model's ends are
the ``alpha / 2`` and ``1 - alpha / 2`` percentiles of the Elo refitted on votes resampled with
scipy's bootstrap (same generator), the design written out here vote by vote (a tie is half a win
each way) and the percentiles read off with NumPy: the interval is at level ``1 - alpha``."""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.ranking.bradley_terry import fit_bradley_terry
from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.uda.elo import EloConfig
from judgelab.uda.human import bradley_terry_scores

ELO = EloConfig()


def _votes(n: int = 150, seed: int = 7) -> pd.DataFrame:
    """Votes among four models of planted strengths 0, 0.5, 1, 1.5 (logit scale), one in six a tie."""
    rng = np.random.default_rng(seed)
    models = np.array(["m0", "m1", "m2", "m3"])
    a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
    b = np.where(b >= a, b + 1, b)  # never a model against itself
    p_a = 1 / (1 + np.exp(-(0.5 * a - 0.5 * b)))
    winner = np.where(rng.random(n) < 1 / 6, "tie", np.where(rng.random(n) < p_a, "model_a", "model_b"))
    return pd.DataFrame({"model_a": models[a], "model_b": models[b], "winner": winner})


def _elo_of(votes: pd.DataFrame) -> np.ndarray:
    models = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    at = {m: i for i, m in enumerate(models)}
    win, lose, weight = [], [], []
    for ma, mb, w in votes[["model_a", "model_b", "winner"]].itertuples(index=False):
        pairs = {"model_a": [(ma, mb, 1.0)], "model_b": [(mb, ma, 1.0)], "tie": [(ma, mb, 0.5), (mb, ma, 0.5)]}[w]
        for x, y, wt in pairs:
            win.append(at[x])
            lose.append(at[y])
            weight.append(wt)
    theta = fit_bradley_terry(np.array(win), np.array(lose), len(models), weights=np.array(weight))
    return ELO.initial + (theta - theta.mean()) / ELO.c


@cache
def _bootstrap_elo() -> np.ndarray:
    """(models, 40) Elo refitted per resample of :func:`_votes` (seed 3): the same for every level."""
    votes = _votes()
    return stats.bootstrap((np.arange(len(votes)),), lambda i: _elo_of(votes.iloc[i]), vectorized=False,
                           n_resamples=40, random_state=np.random.default_rng(3)).bootstrap_distribution


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_the_elo_interval_ends_are_the_bootstrap_percentiles_at_alpha_over_two(alpha):
    got = bradley_terry_scores(_votes(), ELO, n_boot=40, seed=3, alpha=alpha)
    dist = _bootstrap_elo()
    want = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=-1)
    np.testing.assert_allclose(got["elo_ci_low"], want[0], atol=1e-6)
    np.testing.assert_allclose(got["elo_ci_high"], want[1], atol=1e-6)


def test_a_larger_alpha_narrows_every_interval_and_the_default_is_the_constant():
    votes = _votes()
    wide, narrow = (bradley_terry_scores(votes, ELO, n_boot=40, seed=3, alpha=x) for x in (0.05, 0.4))
    assert ((wide["elo_ci_low"] <= narrow["elo_ci_low"]) & (narrow["elo_ci_high"] <= wide["elo_ci_high"])).all()
    assert (narrow["elo_ci_high"] - narrow["elo_ci_low"] < wide["elo_ci_high"] - wide["elo_ci_low"]).all()
    pd.testing.assert_frame_equal(bradley_terry_scores(votes, ELO, n_boot=40, seed=3),
                                  bradley_terry_scores(votes, ELO, n_boot=40, seed=3, alpha=DEFAULT_ALPHA))
