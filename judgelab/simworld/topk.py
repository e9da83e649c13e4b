"""The synthetic Bradley-Terry simulator of paper 002 (Technical Appendix), pure numpy.

Quality ``theta_i ~ N(0, 1.25^2)``; each covariate is a binary indicator assigned by the
same balanced shuffle as the item pools (half the items get 1, rejected unless
``|corr(theta, x)| < max_corr``); verdicts on every ordered pair are drawn from Eq. (1)
with controllable ``c*`` (one entry per covariate) and ``kappa*``.  ``c* = kappa* = 0`` is
the unbiased-judge control.

``legitimate=True`` builds the mirror case of the trusted-anchor gate: the judge's
preference for the covariate is *real quality* (SummEval-like), i.e. the ground truth
used for recall is ``theta + c* x`` while the verdicts are the same as in the spurious
case.  Blind debiasing then removes signal, and the gate should switch it off.

This module is the planted truth only (the judge's parameters and the pools drawn from
them); the study's runs over it are :mod:`judgelab.topk.synthetic`.  It reuses the study's
pool record (:class:`~judgelab.topk.experiment.PoolOracle`) and its balanced shuffle
(:func:`~judgelab.topk.items.balanced_assignment`), so a synthetic pool is built as a real one is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from judgelab.topk.experiment import PoolOracle
from judgelab.topk.items import balanced_assignment


@dataclass(frozen=True)
class SyntheticJudge:
    """Planted Eq. (1) parameters of a synthetic judge."""

    c: tuple[float, ...] = (1.5,)
    kappa: float = 0.5
    theta_sd: float = 1.25
    max_corr: float = 0.12
    legitimate: bool = False

    @property
    def n_covariates(self) -> int:
        return len(self.c)


def synthetic_oracle(judge: SyntheticJudge, oracle_id: int, n_items: int = 30, seed: int = 0,
                     covariate_names: Sequence[str] | None = None) -> PoolOracle:
    """One pool and the judge's verdict on every ordered pair, seeded by ``(seed, oracle_id)``."""
    rng = np.random.default_rng([int(seed), 5, int(oracle_id)])
    theta = rng.normal(0.0, judge.theta_sd, n_items)
    cols: list[np.ndarray] = []
    for _ in judge.c:
        cols.append(balanced_assignment(theta, rng, judge.max_corr, 100_000, tuple(cols)))
    X = np.column_stack(cols) if cols else np.zeros((n_items, 0))
    c = np.asarray(judge.c, dtype=float)
    shift = X @ c if len(c) else np.zeros(n_items)
    eta = theta[:, None] - theta[None, :] + (shift[:, None] - shift[None, :]) + judge.kappa
    Y = (rng.random((n_items, n_items)) < expit(eta)).astype(float)
    np.fill_diagonal(Y, np.nan)
    truth = theta + shift if judge.legitimate else theta
    names = list(covariate_names) if covariate_names is not None else [f"x{m}" for m in range(len(c))]
    return PoolOracle(oracle_id=int(oracle_id), theta=truth, X=X, covariate_names=names, Y=Y)


@dataclass(frozen=True)
class Scenario:
    name: str
    judge: SyntheticJudge
