"""Paper 002's bias-aware Bradley-Terry as a leaderboard correction.

Each game is a comparison of two models (the items of Eq. 1 of
:mod:`judgelab.ranking.bias_aware`) with the first-shown model in slot A and ``y`` = P(first
shown preferred) (a soft label for weighted annotators):

    logit y = theta_first - theta_second + c_len * w_len + c_md * w_md + kappa

Unlike the paper's item covariates, length and markdown differ from game to game for one model,
so they enter as covariates of the comparison (``pair_X``): ``w_len = (t_f - t_s) / (t_f + t_s)``
over tokens and ``w_md = (d_f - d_s) / (d_f + d_s + 1)`` over markdown densities (headers, list
items and bold spans per token), Arena-Hard's style features, each scaled to unit standard
deviation so one bias prior fits both.  Within-model variation of length is what separates the
judge's taste for length from model quality (the multi-model design of LC).  The position term
``kappa`` is in the model only where the log shows some games in both orders; a log recorded in
one order (AlpacaEval stores its games un-swapped) leaves it out and says so, since it would be
confounded with the baseline's strength.  The quality prior (precision 1) and bias prior
(precision 0.1) are the paper's; the score is ``100 * sigma(theta_m - theta_ref)`` (the win rate
against the reference at equal style, first-shown half the time) with its Laplace interval.
Models with no chain of games to the reference get no number.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit
from scipy.stats import norm

from judgelab.board.battles import Battles
from judgelab.board.separation import reason, separated_models, separated_rows
from judgelab.ranking.bias_aware import (
    Comparisons,
    FitOptions,
    IdentifiabilityWarning,
    fit_bias_aware,
    sparse_design_matrix,
)
from judgelab.stats.intervals import DEFAULT_ALPHA


@dataclass
class BiasAwareResult:
    score: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    status: list[str]
    terms: dict[str, tuple[float, float, str]]  # name -> (estimate, se, identifiability)
    note: str


def connected_to(first: np.ndarray, second: np.ndarray, n: int, ref: int) -> np.ndarray:
    """Models joined to ``ref`` by a chain of games."""
    g = coo_matrix((np.ones(len(first)), (first, second)), shape=(n, n))
    _, labels = connected_components(g, directed=False)
    return labels == labels[ref]


def comparison_covariates(style_first: np.ndarray, style_second: np.ndarray) -> np.ndarray:
    """(w_len, w_md) of each game, first-shown minus second-shown (see the module doc)."""
    tf, ts = style_first[:, 0], style_second[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        w_len = np.where(tf + ts > 0, (tf - ts) / (tf + ts), 0.0)
        df = np.where(tf > 0, style_first[:, 1:].sum(axis=1) / tf, 0.0)
        ds = np.where(ts > 0, style_second[:, 1:].sum(axis=1) / ts, 0.0)
    w_md = (df - ds) / (df + ds + 1.0)
    return np.column_stack([w_len, w_md])


def bias_aware(b: Battles, *, alpha: float = DEFAULT_ALPHA, options: FitOptions | None = None) -> BiasAwareResult:
    n = b.n_models
    ref = b.models.index(b.reference)
    first = np.where(b.b_first, b.b, b.a)
    second = np.where(b.b_first, b.a, b.b)
    y = np.where(b.b_first, b.pref_b, 1.0 - b.pref_b)
    sf = np.where(b.b_first[:, None], b.style_b, b.style_a)
    ss = np.where(b.b_first[:, None], b.style_a, b.style_b)
    W = comparison_covariates(sf, ss)
    names, keep_cols, notes = [], [], []
    for j, name in enumerate(("length", "markdown")):
        sd = float(np.std(W[:, j]))
        if sd > 0:
            W[:, j] /= sd
            names.append(name)
            keep_cols.append(j)
        else:
            notes.append(f"{name}: no variation between the answers, left out")
    both_orders = bool(b.b_first.any() and (~b.b_first).any())
    if not both_orders:
        notes.append("position: one presentation order in the log, not identified, left out")
    base = options or FitOptions()
    opts = FitOptions(lam=base.lam, lam_b=base.lam_b, covariates=bool(keep_cols), position=both_orders)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IdentifiabilityWarning)
        fit = fit_bias_aware(Comparisons(first, second, y), n, None, options=opts,
                             pair_X=W[:, keep_cols] if keep_cols else None, pair_names=names or None)
    del caught
    reach = connected_to(first, second, n, ref)
    # the MAP is finite under the priors even on separated games, but there the data leave the
    # score to the prior alone: no measurement (:mod:`judgelab.board.separation`)
    design = sparse_design_matrix(Comparisons(first, second, y), n, None, opts,
                                  W[:, keep_cols] if keep_cols and opts.covariates else None)
    sep = separated_rows(design, y)
    z = float(norm.ppf(1 - alpha / 2))
    theta = fit.theta - fit.theta[ref]
    # Var(theta_m - theta_ref) needs only the variances and the reference's column of H^-1, which a
    # fit of many models keeps implicit (ranking.bias_aware.SparsePosterior)
    var_all, col = fit.variances()[:n], fit.cov_column(ref)[:n]
    var = var_all + var_all[ref] - 2 * col
    se = np.sqrt(np.maximum(var, 0.0))
    score, lo, hi = 100 * expit(theta), 100 * expit(theta - z * se), 100 * expit(theta + z * se)
    status = ["ok"] * n
    if not fit.converged:
        for m in range(n):
            score[m] = lo[m] = hi[m] = np.nan
            status[m] = f"not estimable: the MAP fit did not converge in {fit.n_iter} L-BFGS iterations"
    if sep.any:
        cols = sep.columns()
        separating = [fit.names[c] for c in cols if c >= n]
        for m, (k, g) in separated_models(sep.rows, first, second, n, ref).items():
            score[m] = lo[m] = hi[m] = np.nan
            own = ["its score"] if m in cols or ref in cols else []
            status[m] = reason(k, g, own + separating) + " (the MAP is the prior's)"
    for m in np.flatnonzero(~reach).tolist():
        score[m] = lo[m] = hi[m] = np.nan
        status[m] = f"not estimable: no chain of games to the reference {b.reference!r}"
    terms = {}
    for name in fit.names[n:]:
        est, sd = fit.estimate(name), fit.se(name)
        terms[name] = (est, sd, fit.identifiability.get(name, "identified"))
    return BiasAwareResult(score=score, ci_low=lo, ci_high=hi, status=status, terms=terms, note="; ".join(notes))
