"""Bias-aware Bayesian Bradley-Terry (paper 002, Eqs. 1-2): MAP, Laplace posterior, top-k membership.

A judge shown the ordered pair (a, b) -- ``a`` in the first slot -- prefers ``a`` (y = 1) with

    Pr(y = 1 | a, b) = sigma(theta_a - theta_b + sum_m c_m (x_am - x_bm) + kappa)          (1)

``theta`` is latent item quality, ``x`` are item covariates a judge may reward regardless of
quality (binary verbosity, length, markdown, resemblance to the judge's own family; any
number of them), ``c`` their *bias coefficients* and ``kappa`` the *position* term (a constant
preference for the first-shown answer).  With ``beta = (theta, c, kappa)`` and design vector
``z_ab = (e_a - e_b, x_a - x_b, 1)`` this is a logistic regression, and the MAP minimises

    L(beta) = -sum [y log sigma(beta'z) + (1 - y) log sigma(-beta'z)]
              + lambda/2 |theta|^2 + lambda_b/2 (|c|^2 + kappa^2)                       (2)

with ``lambda`` the quality-prior precision and ``lambda_b = 1/tau^2`` the shrinkage precision
of the bias terms.  L is convex; it is solved with scipy's L-BFGS on the exact gradient,
warm-started from the previous fit in the active loop.  The Laplace posterior is
``N(beta_hat, H^-1)`` with ``H = sum pi(1 - pi) z z' + Lambda``; its quality block is
``Sigma``.  Top-k membership probabilities ``p_i = Pr(i in S_k(theta))`` are Monte-Carlo
counts over ``S`` draws from ``N(theta_hat, Sigma)`` (the paper uses S = 1500).

The *naive* model is the same fit with ``c = kappa = 0`` (``FitOptions(covariates=False,
position=False)``).  Shrinkage is either fixed (``lambda_b``; the paper sweeps
{0.1, 1, 2}) or *hierarchical*: empirical Bayes alternates the Laplace fit with the evidence
update ``tau^2 <- mean over bias terms of (estimate^2 + posterior variance)`` (the paper's
``1/2 (c^2 + kappa^2 + Var c + Var kappa)`` for one covariate plus position).

Identifiability (Prop. 2).  Because every item has its own ``theta_i``, an item covariate's
column ``x_a - x_b`` is a combination of the item columns: the likelihood alone cannot tell
``theta_i + c x_i`` apart (that sum is the naive model's estimand, Prop. 1).  What separates
``c`` from quality is the model's assumption that quality is centred and uncorrelated with
the covariates (Assumption 1; the pools are built so, |corr| < 0.12), which the quality
prior encodes; ``c`` is then read off the gap in augmented score between covariate levels.
That gap exists only if some comparison crosses the levels (Prop. 2 (ii)), and ``kappa``
only if presentation order is not tied to the items (Prop. 2 (iii): both orders of some
pairs, or randomised order).  Every fit checks this on the revealed design, with quality
restricted to the complement of ``span(1, X)``: for each bias parameter, the share of its
design information not explained by the other columns (Schur complement of the unweighted
Fisher information).  None left means *not identified*: the estimate is then the prior mean
and its interval the prior's, which is reported (``Fit.identifiability``,
:class:`IdentifiabilityWarning`) rather than returned as if it were a measurement.  A
variance-inflation factor above ``VIF_WEAK`` (more than half the information shared) is
reported as *weak*.
"""

from __future__ import annotations

import math
import sys
import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
from scipy import sparse
from scipy.linalg import blas, cho_factor, cholesky, lapack
from scipy.sparse.csgraph import connected_components
from scipy.special import expit
from threadpoolctl import ThreadpoolController

from judgelab.stats.intervals import DEFAULT_ALPHA, normal_critical

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

#: a design matrix, dense or (as the fits build it) sparse
Design: TypeAlias = "np.ndarray | sparse.csr_array"

#: A bias term whose variance is inflated more than this by collinearity with the other
#: parameters -- i.e. more than half of its design information is shared with quality or
#: other bias terms -- is reported as weakly identified.  Randomised presentation order
#: gives kappa a VIF near 1 (both orders of every pair: exactly 1); showing every pair in
#: one fixed order gives ~3 on a round robin.
VIF_WEAK = 2.0
#: Below this share of its own design information a bias term counts as not identified.
_RANK_TOL = 1e-9
#: Up to this many parameters the Laplace covariance is the dense ``H^-1`` (and the identifiability
#: check the dense Schur complement); above it both run on the sparse design through a factor of the
#: item-item block that is dense only on its core (:class:`PeeledCholesky`, :class:`SparsePosterior`,
#: :func:`identifiability_sparse`): a star design of 10,000 items needs a few numbers per item where
#: one dense ``p x p`` array would be 0.8 GB.
DENSE_MAX = 1500


class IdentifiabilityWarning(UserWarning):
    """A bias coefficient cannot be (or can barely be) told apart from quality by this design."""


@dataclass(frozen=True)
class Comparisons:
    """Revealed verdicts: item ``first[t]`` was shown in slot A, ``second[t]`` in slot B, and
    ``y[t] = 1`` when the judge preferred the first-shown item, 0 when it preferred the second.

    A value strictly between 0 and 1 is a *soft label*: the judge's own probability of
    preferring the first-shown item (from its A/B logit margin, ``sigma(logp_A - logp_B)``).
    Eq. (2)'s Bernoulli log-likelihood becomes the cross-entropy against that probability,
    which keeps the margin instead of rounding it to the arg max; the Laplace Hessian does not
    involve ``y`` and is unchanged.
    """

    first: np.ndarray
    second: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        f = np.asarray(self.first, dtype=np.int64)
        s = np.asarray(self.second, dtype=np.int64)
        y = np.asarray(self.y, dtype=float)
        if not (len(f) == len(s) == len(y)):
            raise ValueError(f"first/second/y lengths differ: {len(f)}, {len(s)}, {len(y)}")
        if len(f) and np.any(f == s):
            raise ValueError("an item cannot be compared with itself")
        if len(y) and not np.all((y >= 0.0) & (y <= 1.0)):  # NaN fails both comparisons: refused too
            raise ValueError("y must lie in [0, 1] (1 = first-shown item preferred; in between: a soft label)")
        object.__setattr__(self, "first", f)
        object.__setattr__(self, "second", s)
        object.__setattr__(self, "y", y)

    def __len__(self) -> int:
        return len(self.y)

    @classmethod
    def empty(cls) -> Comparisons:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))


@dataclass(frozen=True)
class FitOptions:
    """Hyper-parameters of Eq. (2) and which bias terms are in the model.

    ``lam`` is the quality-prior precision (paper: 1), ``lam_b = 1/tau^2`` the bias-prior
    precision (paper: 0.1).  ``covariates=False, position=False`` is the naive model.
    ``hierarchical=True`` learns ``tau^2`` by empirical Bayes, starting from ``1/lam_b``.
    """

    lam: float = 1.0
    lam_b: float = 0.1
    covariates: bool = True
    position: bool = True
    hierarchical: bool = False
    eb_max_iter: int = 100
    eb_tol: float = 1e-4  # stop when tau^2 moves less than eb_tol * max(tau^2, 1)
    tau2_floor: float = 1e-6
    gtol: float = 1e-7

    def __post_init__(self) -> None:
        if self.lam <= 0 or self.lam_b <= 0:
            raise ValueError(f"prior precisions must be positive (lam={self.lam}, lam_b={self.lam_b})")

    @property
    def naive(self) -> bool:
        return not self.covariates and not self.position


NAIVE = FitOptions(covariates=False, position=False)


@dataclass
class Fit:
    """A MAP fit with its Laplace posterior.

    ``cov`` is ``H^-1`` over ``(theta, c, kappa)`` (the terms in the model); ``names`` labels
    its rows.  ``identifiability`` maps each bias term to ``identified`` / ``weak`` /
    ``not identified``; ``vif`` holds the variance-inflation factors behind it.
    """

    theta: np.ndarray
    c: np.ndarray
    kappa: float
    cov: np.ndarray | None  # None above DENSE_MAX parameters: then ``posterior`` holds H^-1 implicitly
    names: list[str]
    options: FitOptions
    n_comparisons: int
    tau2: float
    converged: bool
    n_iter: int
    nll: float
    identifiability: dict[str, str] = field(default_factory=dict)
    vif: dict[str, float] = field(default_factory=dict)
    posterior: SparsePosterior | None = None

    def _implicit(self) -> SparsePosterior:
        """``posterior``: a fit without ``cov`` always keeps it."""
        assert self.posterior is not None, "a fit without cov keeps its posterior"
        return self.posterior

    def variances(self) -> np.ndarray:
        """The Laplace posterior variances, ``diag(H^-1)``, of every parameter (without forming
        ``H^-1`` where the fit keeps it implicit)."""
        return np.diag(self.cov).copy() if self.cov is not None else self._implicit().diag()

    def cov_column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``H^-1`` (every parameter's posterior covariance with parameter ``j``)."""
        return self.cov[:, j].copy() if self.cov is not None else self._implicit().column(j)

    @property
    def n_items(self) -> int:
        return len(self.theta)

    @property
    def beta(self) -> np.ndarray:
        parts = [self.theta]
        if self.options.covariates:
            parts.append(self.c)
        if self.options.position:
            parts.append(np.array([self.kappa]))
        return np.concatenate(parts)

    @property
    def sigma(self) -> np.ndarray:
        """Posterior covariance of the quality block (the paper's Sigma)."""
        n = self.n_items
        if self.cov is None:
            return self._implicit().dense()[:n, :n]
        return self.cov[:n, :n]

    def se(self, name: str) -> float:
        i = self.names.index(name)
        var = self.cov[i, i] if self.cov is not None else self._implicit().variance(i)
        return float(math.sqrt(max(var, 0.0)))

    def estimate(self, name: str) -> float:
        return float(self.beta[self.names.index(name)])

    def interval(self, name: str, alpha: float = DEFAULT_ALPHA) -> tuple[float, float]:
        """Laplace (Wald) interval of one parameter at level ``1 - alpha``."""
        z = normal_critical(alpha)  # not scipy.stats: the topk jobs that only read fits skip it
        est, se = self.estimate(name), self.se(name)
        return est - z * se, est + z * se

    def top_k(self, k: int) -> np.ndarray:
        """The returned answer: argtop-k of the posterior mode (ties broken by index)."""
        return top_k_indices(self.theta, k)

    def membership(self, k: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``p_i = Pr(i in S_k(theta))`` from ``n_samples`` draws of ``N(theta_hat, Sigma)``."""
        return topk_membership(self.theta, self.sigma, k, n_samples, rng)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, highest first (stable: ties go to the lower index)."""
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    return order[:k]


def topk_membership(theta: np.ndarray, sigma: np.ndarray, k: int, n_samples: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Monte-Carlo top-k membership probabilities under ``N(theta, sigma)``."""
    n = len(theta)
    if not 0 < k < n:
        return np.full(n, 1.0 if k >= n else 0.0)
    # a tiny jitter keeps the factorisation defined when sigma is near-singular
    L = cholesky(sigma + 1e-10 * np.eye(n), lower=True)
    draws = theta + rng.standard_normal((n_samples, n)) @ L.T
    top = np.argpartition(-draws, k - 1, axis=1)[:, :k]
    return np.bincount(top.ravel(), minlength=n) / n_samples


def design_matrix(comp: Comparisons, n_items: int, X: np.ndarray | None, options: FitOptions,
                  pair_X: np.ndarray | None = None) -> np.ndarray:
    """Rows ``z_ab = (e_a - e_b, x_a - x_b, w_ab, 1)`` for the terms in the model.

    ``pair_X`` (one row per comparison) holds covariates of the comparison itself rather than
    of its items -- the first-shown answer's length or markdown relative to the second's, when
    the two answers of one model differ from game to game (a leaderboard's items are models)."""
    n = len(comp)
    d = 0 if (X is None or not options.covariates) else X.shape[1]
    e = 0 if (pair_X is None or not options.covariates) else pair_X.shape[1]
    Z = np.zeros((n, n_items + d + e + int(options.position)))
    rows = np.arange(n)
    Z[rows, comp.first] = 1.0
    Z[rows, comp.second] -= 1.0
    if d and X is not None:  # d > 0 only with X
        Z[:, n_items : n_items + d] = X[comp.first] - X[comp.second]
    if e:
        Z[:, n_items + d : n_items + d + e] = pair_X
    if options.position:
        Z[:, -1] = 1.0
    return Z


def sparse_design_matrix(comp: Comparisons, n_items: int, X: np.ndarray | None, options: FitOptions,
                         pair_X: np.ndarray | None = None) -> sparse.csr_array:
    """:func:`design_matrix` built sparse: a comparison row holds +1, -1 and its few bias entries,
    so the design of 10,000 items costs a few numbers per comparison, not 10,000 (the dense form
    of 40,000 comparisons would be 3 GiB).

    The CSR arrays are written directly, as ``sparse.hstack`` of the blocks would lay them out (a
    row's two item entries in column order, then its nonzero covariate differences, its nonzero
    comparison covariates and the position column; zeros not stored): the active loops build one
    design per refit, and stacking the blocks costs more than the fit's own products.  The layout
    is the one the products have always summed in, so every fit's numbers stay the same to the bit
    (``tests/ranking/test_bias_aware_speed.py`` compares the arrays with the stacked blocks)."""
    n = len(comp)
    first, second = comp.first, comp.second
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    cols = [lo, hi]
    vals = [np.where(first == lo, 1.0, -1.0), np.where(first == lo, -1.0, 1.0)]
    blocks = [X[first] - X[second]] if X is not None and options.covariates else []
    if pair_X is not None and options.covariates:
        blocks.append(pair_X)
    offset = n_items
    for block in blocks:
        block = np.asarray(block, float)
        for m in range(block.shape[1]):
            cols.append(np.full(n, offset + m))
            vals.append(block[:, m])
        offset += block.shape[1]
    if options.position:
        cols.append(np.full(n, offset))
        vals.append(np.ones(n))
        offset += 1
    col, val = np.column_stack(cols), np.column_stack(vals)
    stored = val != 0.0
    indptr = np.r_[0, np.cumsum(stored.sum(axis=1))]
    return sparse.csr_array((val[stored], col[stored], indptr), shape=(n, offset))


def param_names(n_items: int, covariate_names: list[str], options: FitOptions) -> list[str]:
    names = [f"theta[{i}]" for i in range(n_items)]
    if options.covariates:
        names += [f"c[{c}]" for c in covariate_names]
    if options.position:
        names.append("kappa")
    return names


def _check_inputs(comp: Comparisons, n_items: int, X: np.ndarray | None,
                  covariate_names: list[str] | None, options: FitOptions) -> tuple[np.ndarray | None, list[str]]:
    if len(comp) and (comp.first.max() >= n_items or comp.second.max() >= n_items or
                      min(comp.first.min(), comp.second.min()) < 0):
        raise ValueError(f"comparison item index out of range for {n_items} items")
    if not options.covariates:
        return None, []
    if X is None:
        raise ValueError("the bias-aware model needs item covariates X (n_items x d); "
                         "use FitOptions(covariates=False) for none")
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[0] != n_items:
        raise ValueError(f"X has {X.shape[0]} rows for {n_items} items")
    if not np.all(np.isfinite(X)):
        raise ValueError("covariates X contain NaN or infinite values")
    names = list(covariate_names) if covariate_names is not None else [f"x{m}" for m in range(X.shape[1])]
    if len(names) != X.shape[1]:
        raise ValueError(f"{len(names)} covariate names for {X.shape[1]} covariate columns")
    return X, names


def _identification(imm: float, schur: float) -> tuple[str, float]:
    """A bias term's status and variance inflation from its information ``imm`` and the part of it
    no other parameter explains (``schur``, the Schur complement): none left is not identified."""
    if schur <= _RANK_TOL * imm:
        return "not identified", math.inf
    v = float(imm / schur)
    return ("weak" if v > VIF_WEAK else "identified"), v


def identifiability_dense(Z: Design, n_items: int, names: list[str],
                          X: np.ndarray | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """Status of every bias term on this design (Prop. 2), from the unweighted information.

    An item covariate's column ``x_a - x_b`` is itself a combination of the item columns
    ``e_a - e_b``, so the likelihood alone never separates ``c`` from ``theta``: what
    identifies ``c`` is the model's assumption that quality is centred and uncorrelated
    with the covariates (Assumption 1; the quality prior encodes it).  The check makes
    that assumption explicit -- quality is restricted to the complement of
    ``span(1, X)`` -- and then, for bias column m, computes
    ``schur_m = I_mm - I_m,rest I_rest^+ I_rest,m``: the design information left for ``m``
    after every other parameter has taken what it can explain.  ``VIF = I_mm / schur_m``.
    No cross-level comparison leaves ``c_m`` without information; a presentation order
    tied to the items leaves ``kappa`` without information.
    """
    status: dict[str, str] = {}
    vif: dict[str, float] = {}
    span = np.ones((n_items, 1)) if X is None else np.column_stack([np.ones(n_items), X])
    q, _ = np.linalg.qr(span)
    proj = np.eye(n_items) - q @ q.T
    # info = D'D for D = Z P, P = blockdiag(proj, I): formed as P'(Z'Z)P from the sparse Gram
    # matrix (each comparison row has a handful of nonzeros), not from the dense n x p matrix D
    P = np.eye(Z.shape[1])
    P[:n_items, :n_items] = proj
    info = P.T @ _gram(Z) @ P
    for m in range(n_items, Z.shape[1]):
        name = names[m]
        imm = info[m, m]
        if imm <= 0.0:
            status[name], vif[name] = "not identified", math.inf
            continue
        rest = [j for j in range(info.shape[1]) if j != m]
        a = info[np.ix_(rest, rest)]
        b = info[rest, m]
        schur = imm - b @ np.linalg.lstsq(a, b, rcond=None)[0]
        status[name], vif[name] = _identification(imm, schur)
    return status, vif


def elimination_order(first: np.ndarray, second: np.ndarray, n_items: int) -> tuple[np.ndarray, int]:
    """An elimination order of the items for :class:`PeeledCholesky`, and its core size.

    Items with at most one remaining neighbour in the comparison graph (a model compared with the
    baseline only, a chain's end) are eliminated first, repeatedly: eliminating such an item adds no
    fill and changes only its neighbour's diagonal.  What is left -- the *core*, every item there
    with two or more remaining neighbours -- comes last in index order and is factored dense.  A
    star design (every game against one baseline) and any tree peel away whole (core 0); a round
    robin's core is every item.  Written by hand because scipy has no Cholesky ordering that says
    beforehand what it will need, and the core size is what lets a run refuse before it allocates
    (:func:`posterior_memory`)."""
    first, second = np.asarray(first, np.int64), np.asarray(second, np.int64)
    adj = sparse.csr_array((np.ones(2 * len(first), bool), (np.r_[first, second], np.r_[second, first])),
                           shape=(n_items, n_items))
    adj.sum_duplicates()
    indptr, indices = adj.indptr, adj.indices
    degree = np.diff(indptr).astype(np.int64)
    removed = np.zeros(n_items, bool)
    stack = np.flatnonzero(degree <= 1).tolist()
    order: list[int] = []
    while stack:
        v = stack.pop()
        if removed[v]:
            continue
        removed[v] = True
        order.append(v)
        for u in indices[indptr[v]:indptr[v + 1]].tolist():
            if not removed[u]:
                degree[u] -= 1
                if degree[u] == 1:
                    stack.append(u)
    core = np.flatnonzero(~removed)
    return np.r_[np.asarray(order, np.int64), core], len(core)


def posterior_memory(first: np.ndarray, second: np.ndarray, n_items: int, n_bias: int) -> tuple[int, int]:
    """(bytes, core size): what the Laplace posterior and the identifiability check of a fit on these
    comparisons need at most, known before anything of that size is allocated.

    Dense path (``n_items + n_bias <= DENSE_MAX``): four ``p x p`` arrays.  Sparse path: the core's
    dense block twice (the posterior keeps its inverse while the identifiability check factors the
    grounded Laplacian's) and a few dozen numbers per item and bias term.  For fits without item
    covariates (a leaderboard's); with them the identifiability check stays dense."""
    p = n_items + n_bias
    if p <= DENSE_MAX:
        return 4 * 8 * p * p, n_items
    _, core = elimination_order(first, second, n_items)
    return 2 * 8 * core * core + 8 * p * (n_bias + 16), core


class PeeledCholesky:
    """``A = L D L'`` of a sparse symmetric positive-definite ``A`` in the order of
    :func:`elimination_order`: each peeled item has at most one later neighbour (its *parent*), so
    its column of ``L`` holds one number, ``l_i = A_{p i} / d_i``, and eliminating it lowers only the
    parent's pivot by ``A_{p i} l_i``; the core's Schur complement (the core block with those
    lowered pivots) is factored and inverted dense, in place (LAPACK ``potrf``/``potri``; one ``c x c``
    array, its upper triangle read by ``dsymm``).

    Solves run the two triangular sweeps over the peeled items and the dense core inverse between
    them.  The diagonal of ``A^-1`` is Takahashi's recurrence (Takahashi, Fagan and Chen 1973), which
    for a single off-diagonal per column reads ``Z_ii = 1/d_i + l_i^2 Z_pp`` from the parent down: exact,
    and ``O(n + c^3)`` for core size ``c`` -- where solving against every unit vector would cost ``n``
    solves.  Written by hand because scipy's sparse factorisations (SuperLU) offer neither a
    selected inverse nor a bound on their fill before they run."""

    def __init__(self, matrix: sparse.sparray | sparse.spmatrix) -> None:
        # scipy's stubs type csr_array() for each kind of input, not for their union
        A: sparse.csr_array[Any, tuple[int, int]] = sparse.csr_array(cast(Any, matrix), dtype=float)
        A.sum_duplicates()
        n = A.shape[0]
        coo = sparse.coo_array(A)
        off = coo.row != coo.col
        order, c = elimination_order(coo.row[off], coo.col[off], n)
        self.n, self.peeled, self.core = n, order[:n - c], order[n - c:]
        pivot = A.diagonal().astype(float).copy()
        parent = np.full(n, -1, np.int64)
        low = np.zeros(n)
        done = np.zeros(n, bool)
        indptr, indices, data = A.indptr, A.indices, A.data
        for i in self.peeled.tolist():
            nb = indices[indptr[i]:indptr[i + 1]]
            later = np.flatnonzero(~done[nb] & (nb != i))
            done[i] = True
            if len(later):  # the order leaves at most one
                k = indptr[i] + int(later[0])
                u = int(indices[k])
                parent[i], low[i] = u, data[k] / pivot[i]
                pivot[u] -= data[k] * low[i]
        self.pivot, self.parent, self.low = pivot, parent, low
        # the core's inverse in place of its Schur complement, one c x c array (Fortran order, so that
        # potrf and potri overwrite it): its upper triangle only, read by dsymm
        self.core_inv = np.zeros((c, c), order="F")
        if c:
            S = A[self.core][:, self.core].toarray(order="F")
            S[np.diag_indices(c)] = pivot[self.core]
            factor, info = lapack.dpotrf(S, lower=0, overwrite_a=1, clean=0)
            if info == 0:
                factor, info = lapack.dpotri(factor, lower=0, overwrite_c=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"core of the item block: LAPACK info {info}")
            self.core_inv = factor

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``A^-1 rhs`` (a vector or one column per right-hand side)."""
        y = np.array(rhs, dtype=float, copy=True)
        parent, low = self.parent, self.low
        for i in self.peeled.tolist():  # L y = rhs
            if parent[i] >= 0:
                y[parent[i]] -= low[i] * y[i]
        x = np.empty_like(y)
        if len(self.core):
            yc = y[self.core].reshape(len(self.core), -1)
            x[self.core] = blas.dsymm(1.0, self.core_inv, yc, side=0, lower=0).reshape(y[self.core].shape)
        for i in self.peeled[::-1].tolist():  # D L' x = y
            x[i] = y[i] / self.pivot[i] - (low[i] * x[parent[i]] if parent[i] >= 0 else 0.0)
        return x

    def inv_diag(self) -> np.ndarray:
        """``diag(A^-1)`` by Takahashi's recurrence (see the class doc)."""
        z = np.empty(self.n)
        z[self.core] = np.diag(self.core_inv)
        parent, low, pivot = self.parent, self.low, self.pivot
        for i in self.peeled[::-1].tolist():
            z[i] = 1.0 / pivot[i] + (low[i] ** 2 * z[parent[i]] if parent[i] >= 0 else 0.0)
        return z


def identifiability(Z: Design, n_items: int, names: list[str],
                    X: np.ndarray | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """Status of every bias term (Prop. 2; see :func:`identifiability_dense`): the dense Schur
    complement up to ``DENSE_MAX`` parameters or with item covariates ``X``, else the same numbers
    from the sparse design (:func:`identifiability_sparse`)."""
    if X is not None or Z.shape[1] <= DENSE_MAX:
        return identifiability_dense(Z, n_items, names, X)
    return identifiability_sparse(Z, n_items, names)


def identifiability_sparse(Z: Design, n_items: int,
                           names: list[str]) -> tuple[dict[str, str], dict[str, float]]:
    """:func:`identifiability_dense` without item covariates, on the sparse design.

    Without ``X`` the span to remove is the constant alone, and an item column ``e_a - e_b`` is
    already orthogonal to it, so the information is the Gram matrix ``G = Z'Z`` itself.  The Schur
    complement of bias column ``m`` is the squared residual of column ``m`` regressed on every other
    column; by Frisch-Waugh-Lovell that is done in two steps: first the bias columns' residuals on
    the item columns, ``R = G_bb - G_bt G_tt^+ G_tb`` (``q x q`` for ``q`` bias terms), then the
    same Schur complement within ``R``.  ``G_tt`` is the comparison graph's Laplacian, singular on the
    indicator of each connected component; ``G_tb`` sums to zero over each component (every row adds
    ``+v`` to one item and ``-v`` to the other), so one item per component is fixed at zero
    (grounded) and the remaining system, positive definite, is solved with :class:`PeeledCholesky`:
    any solution gives the same ``G_bt x``."""
    Zs = _sparse(Z)
    G = sparse.csc_array(Zs.T @ Zs)
    q = Z.shape[1] - n_items
    Gtt = G[:n_items, :n_items]
    Gtb = G[:n_items, n_items:].toarray()
    Gbb = G[n_items:, n_items:].toarray()
    coo = sparse.coo_array(Gtt)
    off = coo.row != coo.col
    first, second = coo.row[off], coo.col[off]
    _, comp = connected_components(sparse.csr_array((np.ones(off.sum()), (first, second)),
                                                    shape=(n_items, n_items)), directed=False)
    grounded = np.zeros(n_items, bool)
    grounded[np.unique(comp, return_index=True)[1]] = True
    keep = np.flatnonzero(~grounded)
    x = np.zeros((n_items, q))
    if len(keep):
        x[keep] = PeeledCholesky(Gtt[keep][:, keep]).solve(Gtb[keep])
    R = Gbb - Gtb.T @ x
    R = (R + R.T) / 2
    status: dict[str, str] = {}
    vif: dict[str, float] = {}
    for j in range(q):
        name = names[n_items + j]
        imm = Gbb[j, j]
        if imm <= 0.0:
            status[name], vif[name] = "not identified", math.inf
            continue
        rest = [i for i in range(q) if i != j]
        b = R[rest, j]
        schur = R[j, j] - (b @ np.linalg.lstsq(R[np.ix_(rest, rest)], b, rcond=None)[0] if rest else 0.0)
        status[name], vif[name] = _identification(imm, schur)
    return status, vif


def _why(name: str, status: str) -> str:
    if name == "kappa":
        cause = ("presentation order is confounded with the items (e.g. one presentation order only, or "
                 "each item always in the same slot); Prop. 2 (iii): show some pairs in both orders or "
                 "randomise the order")
    else:
        cause = (f"no (or almost no) revealed comparison crosses the levels of covariate {name[2:-1]!r}; "
                 "Prop. 2 (ii): compare items with different covariate values")
    if status == "not identified":
        return f"{name} is not identified by this design: {cause}. Its estimate is the prior mean, not a measurement."
    return f"{name} is only weakly identified by this design (VIF > {VIF_WEAK:g}): {cause}."


def _sparse(Z: Design) -> sparse.csr_array:
    """The design as a sparse matrix: a comparison row holds +1, -1 and its few bias entries, so
    products with it cost a handful of operations per row instead of one per item."""
    return Z if isinstance(Z, sparse.csr_array) else sparse.csr_array(Z)


def _gram(Z: Design, w: np.ndarray | None = None) -> np.ndarray:
    """``Z' diag(w) Z`` (``w`` = 1 when None), dense, computed on the sparse design.

    ``diag(w) Z`` is ``Z``'s nonzeros each times its row's weight, on ``Z``'s own index arrays:
    the same matrix, entry for entry, that ``Z.multiply(w[:, None])`` builds through a COO copy
    and a conversion back, at a fraction of the cost (the active loop forms it at every refit)."""
    Zs = _sparse(Z)
    Zw = Zs if w is None else sparse.csr_array(
        (Zs.data * np.repeat(np.asarray(w, float), np.diff(Zs.indptr)), Zs.indices, Zs.indptr), shape=Zs.shape)
    return np.asarray((Zs.T @ Zw).toarray())


def _laplace_cov(Z: sparse.csr_array, w: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``H^-1`` for ``H = Z' diag(w) Z + diag(prior)``, in place: the Gram matrix is the one dense
    p x p array, factored (LAPACK ``potrf``) and inverted (``potri``) where it lies, instead of
    ``cho_solve`` against a dense identity (three p x p arrays: 2.4 GB at 10,000 items)."""
    H = _gram(Z, w)
    H[np.diag_indices_from(H)] += prior
    c, lower = cho_factor(H, lower=False, overwrite_a=True, check_finite=False)
    inv, info = lapack.dpotri(c, lower=lower, overwrite_c=True)
    if info != 0:
        raise np.linalg.LinAlgError(f"Laplace covariance: potri info {info}")
    iu = np.triu_indices_from(inv, 1)  # potri fills one triangle: mirror it
    inv[(iu[1], iu[0])] = inv[iu]
    return inv


class SparsePosterior:
    """``H^-1`` for ``H = Z' diag(w) Z + diag(prior)`` kept implicit, read by diagonal and columns.

    ``H`` has the block form ``[[A, B], [B', D]]``: ``A`` (items x items) is the weighted
    comparison graph's Laplacian plus the quality prior, sparse and positive definite; ``B`` and
    ``D`` hold the few bias terms.  With ``C = A^-1 B`` and the bias terms' Schur complement
    ``S = D - B'C`` (``q x q``), block inversion gives ``H^-1 = [[A^-1 + C S^-1 C', -C S^-1],
    [-S^-1 C', S^-1]]``: the bias block is ``S^-1``, an item column is one solve with ``A``, and
    the item variances are ``diag(A^-1)`` (:meth:`PeeledCholesky.inv_diag`) plus the row-wise
    quadratic form of ``C`` in ``S^-1``.  Memory: the factor of ``A`` (dense on its core only) and
    ``C``, where ``H^-1`` itself would be ``p^2`` numbers."""

    def __init__(self, Z: sparse.csr_array, w: np.ndarray, prior: np.ndarray, n_items: int) -> None:
        Zs = _sparse(Z)
        H = sparse.csc_array(Zs.T @ sparse.csr_array(Zs.multiply(np.asarray(w)[:, None])))
        n = n_items
        self.n_items, self.n_params = n, Z.shape[1]
        A = H[:n, :n] + sparse.diags_array(np.asarray(prior[:n], float))
        B = H[:n, n:].toarray()
        D = H[n:, n:].toarray() + np.diag(np.asarray(prior[n:], float))
        self.factor = PeeledCholesky(A)
        self.C = self.factor.solve(B)
        S = D - B.T @ self.C
        self.Sinv = np.linalg.inv((S + S.T) / 2) if len(S) else np.zeros((0, 0))
        self._diag: np.ndarray | None = None

    def diag(self) -> np.ndarray:
        """``diag(H^-1)``: ``diag(A^-1) + diag(C S^-1 C')`` for the items, then ``diag(S^-1)``."""
        if self._diag is None:
            d_items = self.factor.inv_diag() + np.einsum("ij,jk,ik->i", self.C, self.Sinv, self.C)
            self._diag = np.r_[d_items, np.diag(self.Sinv)]
        return self._diag.copy()

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``H^-1``."""
        n = self.n_items
        if j < n:
            e = np.zeros(n)
            e[j] = 1.0
            c_j = self.Sinv @ self.C[j]
            return np.r_[self.factor.solve(e) + self.C @ c_j, -c_j]
        s = self.Sinv[:, j - n]
        return np.r_[-self.C @ s, s]

    def variance(self, j: int) -> float:
        return float(self.column(j)[j]) if self._diag is None else float(self._diag[j])

    def dense(self) -> np.ndarray:
        """All of ``H^-1`` (for small fits and tests: ``p^2`` numbers)."""
        return np.column_stack([self.column(j) for j in range(self.n_params)])


#: The thread-pool controller and the number of loaded modules it was made at (:func:`one_blas_thread`).
_CONTROLLER: tuple[int, ThreadpoolController] | None = None


def one_blas_thread() -> AbstractContextManager[object]:
    """A context in which BLAS runs on one thread (``threadpool_limits(limits=1, user_api="blas")``).

    ``threadpool_limits`` scans every loaded shared library (``/proc/self/maps``) each time it is
    entered, about 2 ms: a good share of a small fit, and the active loops enter it thousands of
    times.  The scan is kept and redone only when the set of imported modules has changed (a new
    module may have loaded a BLAS), threadpoolctl's own rule for its cached controller."""
    global _CONTROLLER
    n_modules = len(sys.modules)
    if _CONTROLLER is None or _CONTROLLER[0] != n_modules:
        _CONTROLLER = (n_modules, ThreadpoolController())
    return _CONTROLLER[1].limit(limits=1, user_api="blas")


def _map(design: Design, y: np.ndarray, prior: np.ndarray, x0: np.ndarray, gtol: float) -> OptimizeResult:
    from scipy.optimize import minimize  # here: the topk jobs that fit nothing do not load it

    Z = _sparse(design)
    ZT = Z.T  # the transpose's view made once, not at each of L-BFGS's evaluations

    def f(beta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = Z @ beta
        nll = float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * beta @ (prior * beta))
        grad = ZT @ (expit(eta) - y) + prior * beta
        return nll, grad

    # one BLAS thread: L-BFGS-B's steps are small vector operations that a thread pool on a shared
    # machine slows several times over
    with one_blas_thread():
        return minimize(f, x0, jac=True, method="L-BFGS-B", options={"gtol": gtol, "ftol": 1e-12, "maxiter": 2000})


def fit_bias_aware(
    comp: Comparisons,
    n_items: int,
    X: np.ndarray | None = None,
    *,
    options: FitOptions = FitOptions(),
    covariate_names: list[str] | None = None,
    x0: np.ndarray | None = None,
    warn: bool = True,
    pair_X: np.ndarray | None = None,
    pair_names: list[str] | None = None,
    identify: bool = True,
) -> Fit:
    """MAP of Eq. (2) with its Laplace posterior; the naive model when ``options.naive``.

    ``x0`` warm-starts L-BFGS (a previous fit's ``beta``; ignored if its length differs).
    With ``warn`` an :class:`IdentifiabilityWarning` is issued for every bias term the
    revealed design cannot (or can barely) identify.  ``identify=False`` skips that check
    (``identifiability`` and ``vif`` stay empty, nothing is warned): the active loop's refits
    read only the posterior, and the check costs about a tenth of a refit.
    """
    if pair_X is not None and options.covariates:
        pair_X = np.asarray(pair_X, dtype=float).reshape(len(comp), -1)
        if not np.all(np.isfinite(pair_X)):
            raise ValueError("comparison covariates pair_X contain NaN or infinite values")
        pair_names = list(pair_names) if pair_names is not None else [f"w{m}" for m in range(pair_X.shape[1])]
        if X is None:  # comparison covariates only
            X, cov_names = None, list[str]()
            _check_inputs(comp, n_items, None, None, replace(options, covariates=False))
        else:
            X, cov_names = _check_inputs(comp, n_items, X, covariate_names, options)
        cov_names = cov_names + pair_names
    else:
        pair_X = None
        X, cov_names = _check_inputs(comp, n_items, X, covariate_names, options)
    names = param_names(n_items, cov_names, options)
    Z = sparse_design_matrix(comp, n_items, X, options, pair_X)  # products run on the nonzeros
    n_bias = Z.shape[1] - n_items
    start = np.zeros(Z.shape[1]) if x0 is None or len(x0) != Z.shape[1] else np.asarray(x0, dtype=float)
    tau2 = 1.0 / options.lam_b
    total_iter = 0
    for _ in range(options.eb_max_iter if options.hierarchical and n_bias else 1):
        used = tau2  # the tau^2 behind this pass's beta and cov: the one the fit returns
        prior = np.concatenate([np.full(n_items, options.lam), np.full(n_bias, 1.0 / used)])
        res = _map(Z, comp.y, prior, start, options.gtol)
        total_iter += int(res.nit)
        beta = res.x
        w = expit(Z @ beta)
        w = w * (1.0 - w)
        if Z.shape[1] <= DENSE_MAX:
            cov, posterior = _laplace_cov(Z, w, prior), None
            bias_var = np.diag(cov)[n_items:]
        else:  # H^-1 kept implicit: p^2 numbers would not fit at 10,000 items
            cov, posterior = None, SparsePosterior(Z, w, prior, n_items)
            bias_var = np.diag(posterior.Sinv)
        if not (options.hierarchical and n_bias):
            break
        # evidence (EM) update of tau^2 from the bias terms' posterior moments
        b = beta[n_items:]
        new = max(options.tau2_floor, float(np.mean(b**2 + bias_var)))
        if abs(new - tau2) <= options.eb_tol * max(tau2, 1.0):
            break
        # the next pass fits with ``new``; if the iteration budget ends first, the fit
        # still reports ``used`` (the tau^2 that produced its estimates), not ``new``
        tau2, start = new, beta
    d = len(cov_names)
    status, vif = identifiability(Z, n_items, names, X) if n_bias and identify else ({}, {})
    fit = Fit(
        theta=beta[:n_items].copy(),
        c=beta[n_items : n_items + d].copy() if options.covariates else np.zeros(0),
        kappa=float(beta[-1]) if options.position else 0.0,
        cov=cov, names=names, options=options, n_comparisons=len(comp), tau2=used,
        converged=bool(res.success), n_iter=total_iter, nll=float(res.fun),
        identifiability=status, vif=vif, posterior=posterior,
    )
    if warn:
        for name, st in status.items():
            if st != "identified":
                warnings.warn(_why(name, st), IdentifiabilityWarning, stacklevel=2)
    return fit


def naive_options(options: FitOptions) -> FitOptions:
    """The naive counterpart (same quality prior, no bias terms)."""
    return replace(options, covariates=False, position=False, hierarchical=False)


def residualize(scores: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Post-hoc length residualisation (paper 002, Table 2 baseline): regress naive scores on
    the covariates (with an intercept) and keep the residual."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    A = np.column_stack([np.ones(len(scores)), X])
    coef, *_ = np.linalg.lstsq(A, scores, rcond=None)
    return np.asarray(scores) - A @ coef


def swap_majority(comp: Comparisons, n_items: int, lam: float = 1.0) -> np.ndarray:
    """Order-swap majority vote (paper 002, Table 2 baseline): per unordered pair, the votes of
    every revealed presentation order are pooled; the majority item gets a win, a split vote a
    half win each; strengths are a naive Bradley-Terry fit of those outcomes."""
    lo = np.minimum(comp.first, comp.second)
    hi = np.maximum(comp.first, comp.second)
    lo_won = np.where(comp.first == lo, comp.y, 1.0 - comp.y)
    key = lo * n_items + hi
    uniq, inv = np.unique(key, return_inverse=True)
    share = np.bincount(inv, lo_won) / np.bincount(inv)
    a, b = uniq // n_items, uniq % n_items
    maj = np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, 0.5))
    # a split vote enters as half a win each way (two weighted rows)
    first = np.concatenate([a, a])
    second = np.concatenate([b, b])
    y = np.concatenate([np.ones(len(a)), np.zeros(len(a))])
    wts = np.concatenate([maj, 1.0 - maj])
    keep = wts > 0
    Z = design_matrix(Comparisons(first[keep], second[keep], y[keep]), n_items, None, NAIVE)
    prior = np.full(n_items, lam)

    def f(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = Z @ theta
        yy, ww = y[keep], wts[keep]
        nll = float(np.sum(ww * (np.logaddexp(0.0, eta) - yy * eta)) + 0.5 * theta @ (prior * theta))
        return nll, Z.T @ (ww * (expit(eta) - yy)) + prior * theta

    from scipy.optimize import minimize  # here: the topk jobs that fit nothing do not load it

    return minimize(f, np.zeros(n_items), jac=True, method="L-BFGS-B").x
