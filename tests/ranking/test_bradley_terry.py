"""Plain Bradley-Terry fit recovers planted strengths."""

import numpy as np

from judgelab.ranking.bradley_terry import ELO_PER_LOGIT, fit_bradley_terry, to_elo


def test_recovers_planted_strengths():
    rng = np.random.default_rng(0)
    theta = np.array([1.0, 0.0, -1.0, 0.5, -0.5])
    i = rng.integers(0, 5, 40_000)
    j = (i + rng.integers(1, 5, 40_000)) % 5
    p = 1 / (1 + np.exp(-(theta[i] - theta[j])))
    win = rng.random(40_000) < p
    w, lo = np.where(win, i, j), np.where(win, j, i)
    est = fit_bradley_terry(w, lo, 5)
    assert np.allclose(est, theta - theta.mean(), atol=0.05)


def test_ties_as_half_wins_and_elo_scale():
    # one tie between 0 and 1, nothing else: equal strengths
    est = fit_bradley_terry([0, 1], [1, 0], 2, weights=[0.5, 0.5])
    assert abs(est[0] - est[1]) < 1e-6
    elo = to_elo(np.array([0.0, 1.0]))
    assert np.isclose(elo[1] - elo[0], ELO_PER_LOGIT) and np.isclose(elo.mean(), 1000.0)


def test_weights_ridge_and_bad_lengths():
    import pytest

    # a weight of 2 is the same evidence as the comparison listed twice
    w2 = fit_bradley_terry([0, 1], [1, 2], 3, weights=[2.0, 1.0])
    dup = fit_bradley_terry([0, 0, 1], [1, 1, 2], 3)
    assert np.allclose(w2, dup, atol=1e-5)
    assert np.isclose(dup.sum(), 0.0) and dup[0] > dup[1] > dup[2]
    # one item wins everything: the ridge keeps it finite, a stronger ridge pulls it in
    loose = fit_bradley_terry([0, 0], [1, 2], 3, ridge=1e-3)
    tight = fit_bradley_terry([0, 0], [1, 2], 3, ridge=1.0)
    assert np.isfinite(loose).all() and loose[0] - loose[1] > tight[0] - tight[1] > 0
    # the MAP: gradient of -loglik + ridge/2 |theta|^2 vanishes at the (uncentred) optimum
    from scipy.special import expit

    th = fit_bradley_terry([0, 1, 2, 0], [1, 2, 0, 2], 3, ridge=0.5)
    d = th[[0, 1, 2, 0]] - th[[1, 2, 0, 2]]
    g = -expit(-d)
    grad = np.bincount([0, 1, 2, 0], g, 3) - np.bincount([1, 2, 0, 2], g, 3) + 0.5 * th
    assert np.allclose(grad, 0.0, atol=1e-4)
    with pytest.raises(ValueError, match=r"^winners, losers and weights must have the same length$"):
        fit_bradley_terry([0, 1], [1], 2)
    with pytest.raises(ValueError, match=r"^winners, losers and weights must have the same length$"):
        fit_bradley_terry([0], [1], 2, weights=[1.0, 1.0])
    # the default ridge is weak: an item that wins everything gets a large strength
    top = fit_bradley_terry([0, 0, 0, 0], [1, 2, 1, 2], 3)
    assert top[0] - top[1] > 4.0
    # indices may come as floats (read from a table); the last item need never lose
    np.testing.assert_allclose(fit_bradley_terry(np.array([2.0, 2.0, 1.0]), np.array([0.0, 1.0, 0.0]), 3),
                               fit_bradley_terry([2, 2, 1], [0, 1, 0], 3))
    last = fit_bradley_terry([2, 2, 1], [0, 1, 0], 3)
    assert last[2] > last[1] > last[0]
    assert np.allclose(to_elo(np.array([0.0, 1.0]), center=1500.0).mean(), 1500.0)
    assert np.isclose(ELO_PER_LOGIT, 400 / np.log(10))
