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
