"""Separation in the leaderboard's logistic fits: which games a direction of the coefficients
predicts exactly, so that the maximum-likelihood fit has no finite optimum.

Each correction (style control, bias-aware Bradley-Terry, length control) is a logistic
regression of a soft outcome ``y`` in [0, 1] on a design ``X``.  As a likelihood in the
coefficients it is the binary one of two rows per game: label 1 weighted ``y`` and label 0
weighted ``1 - y``; a row of zero weight drops out.  A direction ``b`` with
``s_i x_i' b >= 0`` on every remaining row (``s_i = +1`` for label 1, ``-1`` for label 0) is a
recession direction: moving along it never lowers the likelihood, and where some
``s_i x_i' b > 0`` it raises it forever, so the estimate runs to infinity (complete or quasi-
complete separation; Albert and Anderson 1984).  A fitter then stops wherever its iteration
budget or tolerance ends (Arena-Hard's L-BFGS: a score of 0.00095 % on a model whose raw win
rate is 50 %) and its number is not an estimate.

:func:`separated_rows` finds every row that some recession direction moves, with one linear
program (scipy's HiGHS, on the sparse design) after Konis (2007, *Linear programming
algorithms for detecting separated data in binary logistic regression models*, DPhil thesis,
Oxford; R's ``detectseparation``):

    maximise sum_i t_i  subject to  s_i x_i' b >= t_i,  0 <= t_i <= 1,  b free.

The recession directions form a convex cone (closed under sums and positive multiples), so
the optimum sets ``t_i = 1`` on exactly the rows that some direction moves and ``0`` elsewhere:
one program answers for every row at once, where Konis' per-coefficient programs need two per
column (a 10,000-model design would need 20,000).  A tie (``y = 1/2``) or any soft label
contributes both signs, so its ``x_i' b`` is held at zero: a tied game never separates.

:func:`judgelab.stats.mixed.separated_terms` is the per-term form for small dense designs; the
tests check the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from scipy import sparse
from scipy.optimize import linprog


@dataclass(frozen=True)
class Separation:
    """Rows (games) that a recession direction moves, and that direction."""

    rows: np.ndarray  # bool per game: some direction predicts this game's outcome exactly
    direction: np.ndarray  # one direction b moving every such row (zeros when none)

    @property
    def any(self) -> bool:
        return bool(self.rows.any())

    def columns(self, tol: float = 1e-7) -> np.ndarray:
        """Columns with a non-zero entry in the direction found (indicative: another direction may
        move other columns; the rows are exact)."""
        return np.flatnonzero(np.abs(self.direction) > tol * max(1.0, float(np.abs(self.direction).max(initial=0))))


def separated_rows(X: np.ndarray | sparse.sparray | sparse.spmatrix, y: np.ndarray) -> Separation:
    """Which rows of the soft-label logistic design ``(X, y)`` lie on a recession direction (see
    the module doc).  ``X`` may be dense or scipy.sparse; ``y`` in [0, 1]."""
    # scipy's stubs type csr_array() for each kind of input, not for their union
    Xs: sparse.csr_array[Any, tuple[int, int]] = sparse.csr_array(cast(Any, X), dtype=float)
    y = np.asarray(y, dtype=float)
    n, k = Xs.shape
    if len(y) != n:
        raise ValueError(f"{n} design rows for {len(y)} outcomes")
    if n == 0:
        return Separation(rows=np.zeros(0, bool), direction=np.zeros(k))
    pos = np.flatnonzero(y > 0.0)  # a label-1 row with positive weight
    neg = np.flatnonzero(y < 1.0)  # a label-0 row with positive weight
    src = np.r_[pos, neg]
    sign = np.r_[np.ones(len(pos)), -np.ones(len(neg))]
    m = len(src)
    SX = sparse.csr_array(sparse.diags_array(sign) @ Xs[src])
    # -s_i x_i' b + t_i <= 0
    A = sparse.hstack([-SX, sparse.eye_array(m)], format="csr")
    c = np.r_[np.zeros(k), -np.ones(m)]
    bounds = [(None, None)] * k + [(0.0, 1.0)] * m
    res = linprog(c, A_ub=A, b_ub=np.zeros(m), bounds=bounds, method="highs")
    if res.status != 0:  # the program is bounded and feasible (b = 0, t = 0): any failure is numerical
        raise RuntimeError(f"separation check: the linear program did not solve ({res.message})")
    x = np.asarray(res.x)  # set when status is 0
    rows = np.zeros(n, bool)
    np.logical_or.at(rows, src, x[k:] > 0.5)
    return Separation(rows=rows, direction=x[:k].copy())


def separated_models(rows: np.ndarray, first: np.ndarray, second: np.ndarray, n_models: int,
                     ref: int) -> dict[int, tuple[int, int]]:
    """``{model: (separated games, games)}`` for every model other than ``ref`` with a separated game
    (as either side): its score is a difference of coefficients some of which run to infinity."""
    first, second = np.asarray(first), np.asarray(second)
    games = np.bincount(first, minlength=n_models) + np.bincount(second, minlength=n_models)
    hit = np.bincount(first[rows], minlength=n_models) + np.bincount(second[rows], minlength=n_models)
    return {int(m): (int(hit[m]), int(games[m])) for m in np.flatnonzero(hit) if m != ref}


def reason(n_separated: int, n_games: int, terms: list[str]) -> str:
    """The status of a model whose score rests on separated games."""
    by = f" (the direction moves {', '.join(terms)})" if terms else ""
    return (f"not estimable: separation: {n_separated} of its {n_games} games are predicted exactly by a "
            f"direction of the coefficients{by}, so the fit has no finite maximum")


class NotEstimable(ValueError):
    """A fit whose design cannot give a finite, data-determined estimate; the message is the reason."""
