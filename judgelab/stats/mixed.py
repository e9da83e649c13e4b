"""Mixed-effects models of per-instance correctness: ``correct ~ C(strategy, Treatment('B0')) + (1|instance)``.

Paper 003, Appendix D / Table 5, fits this model per judge.  Its coefficients are "in
linear-probability units", and each equals the difference in agreement rates (Claude S8 +0.115
= .695 - .580), which is what a *linear* mixed model gives on a balanced design.  We therefore
fit two models and report both:

* :func:`lpm_random_intercept` -- the linear-probability mixed model (the paper's units):
  statsmodels ``MixedLM`` with a random intercept per instance, fitted by REML; p-values are
  Wald z-tests from the REML covariance of the fixed effects.  On a balanced design the
  coefficients equal the differences in mean correctness exactly.
* :func:`logit_random_intercept` -- the mixed-effects *logistic* regression named in the
  paper: ``logit P(correct_ij) = x_ij'beta + u_i``, ``u_i ~ N(0, sigma^2)``, fitted by maximum
  likelihood with the marginal likelihood integrated over ``u_i`` by Gauss-Hermite quadrature
  (non-adaptive, ``n_nodes`` nodes; as lme4's ``glmer(nAGQ > 1)``), maximised with L-BFGS on the
  exact gradient.  Standard errors come from the inverse of the observed information (a
  finite-difference Hessian of the exact gradient); p-values are two-sided Wald z-tests.
  Coefficients are log-odds ratios vs B0, conditional on the instance.

Why the logistic fit is written here: statsmodels' only GLMM, ``BinomialBayesMixedGLM``, is a
variational/MAP Bayesian approximation (its MAP fit collapsed the variance on our data and its
VB fit took ~1 min per judge), and no other maintained Python library fits a frequentist
binomial GLMM.  The quadrature likelihood is checked against direct numerical integration and
for recovery of planted effects (tests/strategies/test_stats.py).

Separation: when a strategy (or B0) is right -- or wrong -- on every instance, or more generally
when some combination of the fixed effects splits right from wrong answers, the logistic
likelihood keeps rising along that direction and the maximum-likelihood coefficient is
infinite; the optimiser stops at its bound (+-30 log-odds) with a finite-looking standard error
and reports success.  :func:`separated_terms` finds these terms (Konis' linear-programming check,
as R's ``detectseparation``; statsmodels only warns on *complete* separation in fixed-effects
models and names no term), and the fit then says so: ``separation`` names them, their
p-values are NaN (a Wald test of an infinite estimate means nothing) and ``converged`` is False.
The random intercept does not rescue a separated fixed effect: the likelihood is non-decreasing
along the direction for every value of the intercepts, so the marginal likelihood is too.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import expit, log_expit, logsumexp

from judgelab.stats.intervals import DEFAULT_ALPHA


@dataclass
class MixedFit:
    """Fixed effects of one fit (index: term names), plus the random-intercept variance."""

    method: str
    coef: pd.Series
    se: pd.Series
    pvalue: pd.Series
    group_var: float
    n_obs: int
    n_groups: int
    converged: bool
    loglik: float = float("nan")
    #: terms whose maximum-likelihood estimate is infinite (quasi-)complete separation; () when none
    separation: tuple[str, ...] = ()

    def ci(self, alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
        """Wald intervals of the coefficients at level ``1 - alpha``."""
        from scipy.stats import norm  # here, as in the fits: importing this module loads no scipy.stats

        z = norm.ppf(1 - alpha / 2)
        return pd.DataFrame({"low": self.coef - z * self.se, "high": self.coef + z * self.se})


def _design(df: pd.DataFrame, treatment: str, reference: str) -> tuple[np.ndarray, list[str], list[str]]:
    levels = [reference, *sorted(x for x in df[treatment].unique() if x != reference)]
    if reference not in set(df[treatment]):
        raise ValueError(f"reference level {reference!r} not in column {treatment!r}")
    cols = [f"C({treatment}, Treatment('{reference}'))[T.{lv}]" for lv in levels[1:]]
    X = np.zeros((len(df), len(levels)))
    X[:, 0] = 1.0
    codes = {lv: i for i, lv in enumerate(levels)}
    idx = df[treatment].map(codes).to_numpy()
    for j in range(1, len(levels)):
        X[idx == j, j] = 1.0
    return X, ["Intercept", *cols], levels


def separated_terms(X: np.ndarray, y: np.ndarray, names: list[str], *, tol: float = 1e-7) -> tuple[str, ...]:
    """The terms of a logistic design with an infinite maximum-likelihood estimate.

    A direction ``b`` with ``(2y - 1) * (X @ b) >= 0`` for every row and ``X @ b != 0`` for some
    (a recession direction of the log-likelihood) means (quasi-)complete separation; the terms
    with ``b_j != 0`` in some such direction are the infinite ones (Konis 2007, *Linear
    programming algorithms for detecting separated data in binary logistic regression models*,
    DPhil thesis, Oxford; R's ``detectseparation``).  Per term, two linear programs (scipy's
    HiGHS) maximise and minimise ``b_j`` under those constraints with ``b`` in [-1, 1]: a
    non-zero optimum is an infinite coefficient.  Exact: no threshold on a fitted coefficient.
    """
    from scipy.optimize import linprog

    s = 2.0 * np.asarray(y, dtype=float) - 1.0
    A = -(s[:, None] * np.asarray(X, dtype=float))  # -(s_i x_i' b) <= 0
    # deduplicate rows: the constraints of a dummy design repeat (and HiGHS likes small LPs)
    A = np.unique(np.round(A, 12), axis=0)
    k = A.shape[1]
    out = []
    for j in range(k):
        for sign in (-1.0, 1.0):  # minimise -b_j (maximise b_j), then minimise b_j
            c = np.zeros(k)
            c[j] = sign
            res = linprog(c, A_ub=A, b_ub=np.zeros(len(A)), bounds=[(-1.0, 1.0)] * k, method="highs")
            if res.status == 0 and res.fun is not None and -res.fun > tol:
                out.append(names[j])
                break
    return tuple(out)


def wald_p(p: pd.Series, se: pd.Series) -> pd.Series:
    """Wald p-values, NaN where the standard error is zero, negative or not finite.

    A zero standard error (every outcome of a term equal, or the information matrix clipped at
    the boundary) makes ``coef / se`` infinite and its p-value 0.0: a statistic with no variance
    has no p-value."""
    ok = np.isfinite(se.to_numpy(float)) & (se.to_numpy(float) > 0)
    return p.where(ok)


def lpm_random_intercept(df: pd.DataFrame, outcome: str = "correct", treatment: str = "strategy",
                         reference: str = "B0", group: str = "instance") -> MixedFit:
    """Linear-probability mixed model (statsmodels MixedLM, REML, Wald z p-values)."""
    import statsmodels.formula.api as smf

    data = df[[outcome, treatment, group]].copy()
    data[outcome] = data[outcome].astype(float)
    formula = f"{outcome} ~ C({treatment}, Treatment('{reference}'))"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary / convergence chatter; convergence is reported
        res = smf.mixedlm(formula, data, groups=data[group]).fit(reml=True)
    fe = res.fe_params.index
    se = res.bse_fe.reindex(fe)
    return MixedFit("lpm_mixedlm_reml", res.fe_params.copy(), se, wald_p(res.pvalues.reindex(fe), se),
                    float(res.cov_re.iloc[0, 0]), int(res.nobs), int(data[group].nunique()), bool(res.converged),
                    float(res.llf))


class _GHQLogit:
    """Marginal log-likelihood of a random-intercept logistic model by Gauss-Hermite quadrature."""

    def __init__(self, y: np.ndarray, X: np.ndarray, groups: np.ndarray, n_nodes: int) -> None:
        self.y, self.X = y.astype(float), X
        codes, self.uniq = pd.factorize(groups)
        self.codes = codes
        self.S = sparse.csr_matrix((np.ones(len(y)), (codes, np.arange(len(y)))), shape=(len(self.uniq), len(y)))
        x, w = np.polynomial.hermite.hermgauss(n_nodes)
        self.nodes = np.sqrt(2.0) * x
        self.logw = np.log(w) - 0.5 * np.log(np.pi)

    def value_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta, log_s = theta[:-1], theta[-1]
        s = np.exp(log_s)
        eta = (self.X @ beta)[:, None] + s * self.nodes[None, :]  # (n, K)
        ll = self.y[:, None] * eta + log_expit(-eta)  # y*eta - log(1 + e^eta)
        L = self.S @ ll + self.logw[None, :]  # (G, K)
        lse = logsumexp(L, axis=1)
        post = np.exp(L - lse[:, None])[self.codes]  # (n, K) posterior node weights
        r = self.y[:, None] - expit(eta)
        a = (post * r).sum(axis=1)
        g_beta = self.X.T @ a
        g_logs = float((post * r * (s * self.nodes)[None, :]).sum())
        return float(lse.sum()), np.append(g_beta, g_logs)


def logit_random_intercept(df: pd.DataFrame, outcome: str = "correct", treatment: str = "strategy",
                           reference: str = "B0", group: str = "instance", n_nodes: int = 32) -> MixedFit:
    """Mixed-effects logistic regression by Gauss-Hermite maximum likelihood (module docstring)."""
    X, names, _ = _design(df, treatment, reference)
    y = df[outcome].astype(float).to_numpy()
    model = _GHQLogit(y, X, df[group].to_numpy(), n_nodes)
    p0 = np.clip(y.mean(), 1e-3, 1 - 1e-3)
    theta0 = np.zeros(X.shape[1] + 1)
    theta0[0] = np.log(p0 / (1 - p0))

    def f(th: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = model.value_grad(th)
        return -v, -g

    from scipy.optimize import minimize  # here: importing this module loads no optimizer

    bounds = [(-30.0, 30.0)] * X.shape[1] + [(-7.0, 3.0)]
    res = minimize(f, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-7})
    th = res.x
    k = len(th)
    H = np.zeros((k, k))
    for j in range(k):  # observed information: central differences of the exact gradient
        h = 1e-4 * max(1.0, abs(th[j]))
        e = np.zeros(k)
        e[j] = h
        H[:, j] = (f(th + e)[1] - f(th - e)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    try:
        cov = np.linalg.inv(H)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(k, np.nan)
    coef = pd.Series(th[:-1], index=names)
    se_s = pd.Series(se[:-1], index=names)
    from scipy.stats import norm

    with np.errstate(divide="ignore", invalid="ignore"):
        p = wald_p(pd.Series(2 * norm.sf(np.abs(coef / se_s)), index=names), se_s)
    separated = separated_terms(X, y, names)
    p[list(separated)] = np.nan  # an infinite estimate has no Wald test
    return MixedFit(f"logit_glmm_ghq{n_nodes}_ml", coef, se_s, p, float(np.exp(2 * th[-1])), len(y),
                    len(model.uniq), bool(res.success) and not separated, float(-res.fun), separated)
