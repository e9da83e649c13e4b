"""Plain Bradley-Terry maximum-likelihood (MAP with a small ridge) from comparisons.

P(i beats j) = sigma(theta_i - theta_j); a tie counts as half a win each way (the
usual convention of Chatbot-Arena-style fits).  A small Gaussian prior (``ridge``)
keeps the fit finite when an item wins or loses everything and fixes the scale's
location (scores sum to ~0).  Fitted with scipy's L-BFGS on the exact gradient.
``to_elo`` maps strengths to the Elo scale (400 / ln 10 per logit, centred at 1000).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import expit, log_expit

ELO_PER_LOGIT = 400.0 / math.log(10.0)


def fit_bradley_terry(
    winners: Sequence[int] | np.ndarray,
    losers: Sequence[int] | np.ndarray,
    n_items: int,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    ridge: float = 1e-3,
) -> np.ndarray:
    """Strengths theta (logits) from (winner, loser) index pairs with optional weights.

    Ties: pass the pair twice, once each way, with weight 0.5.
    """
    w_idx = np.asarray(winners, dtype=int)
    l_idx = np.asarray(losers, dtype=int)
    wt = np.ones(len(w_idx)) if weights is None else np.asarray(weights, dtype=float)
    if len(w_idx) != len(l_idx) or len(wt) != len(w_idx):
        raise ValueError("winners, losers and weights must have the same length")

    def f(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[w_idx] - theta[l_idx]
        nll = -np.sum(wt * log_expit(d)) + 0.5 * ridge * theta @ theta
        g = -wt * expit(-d)
        grad = np.bincount(w_idx, g, n_items) - np.bincount(l_idx, g, n_items) + ridge * theta
        return float(nll), grad

    from scipy.optimize import minimize  # here: the modules that import this one and fit nothing skip it

    res = minimize(f, np.zeros(n_items), jac=True, method="L-BFGS-B")
    return res.x - res.x.mean()


def to_elo(theta: np.ndarray, center: float = 1000.0) -> np.ndarray:
    return center + ELO_PER_LOGIT * (np.asarray(theta) - np.mean(theta))
