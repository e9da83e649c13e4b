"""Offline evaluation against fixed oracles (paper 002, Technical Appendix).

An *oracle* is the full matrix of one judge's verdicts on every ordered pair of one item
pool, collected once (:mod:`judgelab.topk.oracle`) or drawn from the synthetic simulator
(:mod:`judgelab.simworld.topk`).  Strategies reveal entries of it up to their budget, so
every strategy faces the identical judge and randomness enters only through the strategy's
own seed.  Everything is scored by top-k recall against the pool's true quality.

Two evaluations:

* :func:`evaluate_full` -- full data (all ``N(N-1)`` ordered pairs): every *estimator*
  (:data:`ESTIMATORS`: naive Bradley-Terry, bias-aware at each ``lambda_b`` of the sweep,
  hierarchical empirical Bayes, post-hoc residualisation, order-swap majority vote, the
  trusted-anchor gate) at every k of ``k_values``; the bias-aware fits' parameters with 95%
  Laplace intervals and identifiability; per-item scores (Fig. 2).
* :func:`evaluate_budget` -- the active loop for every *strategy* (acquisition model x
  acquisition rule), oracle and seed, recall recorded at each budget; for naive
  acquisition also the residualise-then-acquire estimate; per-item allocation at one
  budget (Fig. 4).

Recall is tie-aware: ``recall@k = #{i in returned set : theta_i >= theta_(k)} / k`` with
``theta_(k)`` the k-th largest true quality, so when true qualities tie across the boundary
(k = 10 on the item pools) any of the tied items counts.  For the pools' own k every
top item is fully correct and strictly better than the rest, and this is ordinary recall.

Tables (columns):

* recall (full data): ``oracle, estimator, lam_b, k, recall, tau2, gate_enabled, n_comparisons, n_unusable``
  (usable verdicts of the N(N-1) ordered pairs, and the rest: unparsed, refused, failed)
* params: ``oracle, estimator, lam_b, param, estimate, se, ci_low, ci_high, status, vif``
* scores: ``oracle, item, theta, top_k, <covariates>, naive, aware``
* budget: ``oracle, seed, model, rule, estimator, budget, recall, n_usable, cost_per_call``
* allocation: ``oracle, seed, model, rule, budget, item, theta, distance, n_comparisons``
  (``distance`` = |theta - boundary|, the boundary halfway between the k-th and (k+1)-th
  true quality)
* queries: ``oracle, seed, model, rule, step, first_item, second_item, y`` -- every
  acquisition in order, with the randomised presentation order (``first_item`` shown in
  slot A) and the verdict (1 = first preferred, 0 = second, NaN = no usable verdict)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from judgelab.ranking.acquisition import ActiveSettings, make_rule, run_active
from judgelab.ranking.bias_aware import (
    Comparisons,
    Fit,
    FitOptions,
    fit_bias_aware,
    naive_options,
    one_blas_thread,
    residualize,
    swap_majority,
    top_k_indices,
)
from judgelab.registry import Registry


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the many tiny linear-algebra calls of a study on one BLAS thread.

    The model's matrices are ~30 x 30; a multi-threaded BLAS spends more time waking
    threads than computing, and on a shared 2-core machine that costs ~50x.
    """
    with one_blas_thread():
        yield


@dataclass
class PoolOracle:
    """One judge's verdicts on every ordered pair of one pool.

    ``Y[a, b]`` is 1 if the judge preferred the first-shown item ``a`` over ``b``, 0 if it
    preferred ``b``, NaN if it gave no usable verdict (and on the diagonal).
    """

    oracle_id: int
    theta: np.ndarray
    X: np.ndarray
    covariate_names: list[str]
    Y: np.ndarray
    cost_per_call: float = 0.0

    @property
    def n_items(self) -> int:
        return len(self.theta)

    def query(self, a: int, b: int) -> float:
        return float(self.Y[a, b])

    def full_comparisons(self) -> Comparisons:
        a, b = np.nonzero(~np.isnan(self.Y))
        return Comparisons(a, b, self.Y[a, b])


def recall_at_k(scores: np.ndarray, theta: np.ndarray, k: int) -> float:
    """Tie-aware top-k recall of the set returned by ``scores`` (see module docstring).

    A true quality at most 1e-12 below ``theta_(k)`` (inclusive) counts as tied with it:
    qualities computed in floating point (``theta + c x`` of a legitimate covariate) may
    differ from an exact tie in the last bits.
    """
    theta = np.asarray(theta, dtype=float)
    kth = np.sort(theta)[::-1][k - 1]
    chosen = top_k_indices(scores, k)
    return float(np.sum(theta[chosen] >= kth - 1e-12)) / k


def boundary(theta: np.ndarray, k: int) -> float:
    s = np.sort(np.asarray(theta, dtype=float))[::-1]
    return float((s[k - 1] + s[k]) / 2)


@dataclass(frozen=True)
class TopkSettings:
    """Study hyper-parameters (config ``topk``); defaults are the paper's."""

    k: int = 5
    lam: float = 1.0
    lam_b: float = 0.1
    lam_b_sweep: tuple[float, ...] = (0.1, 1.0, 2.0)
    refit_every: int = 8
    n_samples: int = 1500
    k_values: tuple[int, ...] = (1, 3, 5, 10)
    n_anchors: int = 60
    anchor_seed: int = 0

    def options(self, **kw) -> FitOptions:
        return replace(FitOptions(lam=self.lam, lam_b=self.lam_b), **kw)


# ---------------------------------------------------------------------------------
# estimators: revealed comparisons -> quality scores


@dataclass
class Estimate:
    scores: np.ndarray
    fit: Fit | None = None
    extra: dict = field(default_factory=dict)


EstimatorFn = Callable[[Comparisons, PoolOracle, TopkSettings], Estimate]
ESTIMATORS: Registry[EstimatorFn] = Registry("top-k estimator")


#: the last few cold-start fits, by their inputs (:func:`_fit`)
_FITS: dict[tuple, Fit] = {}
_FITS_KEPT = 8


def _fit(comp: Comparisons, pool: PoolOracle, options: FitOptions) -> Fit:
    """``fit_bias_aware`` from a cold start on ``comp``, remembered for equal inputs.

    Estimators reuse each other's fits: ``resid`` and ``gated`` refit the naive model, ``gated``
    the bias-aware one, on the very comparisons the ``naive`` and ``aware`` rows fitted.  A cold
    fit is a deterministic function of its inputs, so the one kept is the one a refit would
    return, to the bit.  The key holds the comparisons' and covariates' bytes, so a different
    pool or revealed set never matches."""
    X = pool.X if options.covariates else None
    key = (options, pool.n_items, comp.first.tobytes(), comp.second.tobytes(), comp.y.tobytes(),
           None if X is None else (X.shape, X.dtype.str, np.ascontiguousarray(X).tobytes()),
           tuple(pool.covariate_names) if X is not None else ())
    fit = _FITS.get(key)
    if fit is None:
        if len(_FITS) >= _FITS_KEPT:
            _FITS.pop(next(iter(_FITS)))
        fit = _FITS[key] = fit_bias_aware(comp, pool.n_items, X, options=options,
                                          covariate_names=pool.covariate_names if X is not None else None,
                                          warn=False)
    return fit


@ESTIMATORS.register("naive")
def _naive(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    fit = _fit(comp, pool, naive_options(s.options()))
    return Estimate(fit.theta, fit)


@ESTIMATORS.register("aware")
def _aware(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    fit = _fit(comp, pool, s.options())
    return Estimate(fit.theta, fit)


@ESTIMATORS.register("aware_hier")
def _aware_hier(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    fit = _fit(comp, pool, s.options(hierarchical=True))
    return Estimate(fit.theta, fit)


@ESTIMATORS.register("resid")
def _resid(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    naive = _naive(comp, pool, s)
    return Estimate(residualize(naive.scores, pool.X) if pool.X.shape[1] else naive.scores)


@ESTIMATORS.register("swap_majority")
def _swap(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    return Estimate(swap_majority(comp, pool.n_items, lam=s.lam))


@ESTIMATORS.register("gated")
def _gated(comp: Comparisons, pool: PoolOracle, s: TopkSettings) -> Estimate:
    from judgelab.topk.gate import anchor_pairs, gate

    naive, aware = _naive(comp, pool, s), _aware(comp, pool, s)
    rng = np.random.default_rng([s.anchor_seed, pool.oracle_id, 11])
    dec = gate(naive.scores, aware.scores, anchor_pairs(pool.theta, s.n_anchors, rng))
    return Estimate(aware.scores if dec.enabled else naive.scores, aware.fit if dec.enabled else naive.fit,
                    {"gate_enabled": dec.enabled})


# ---------------------------------------------------------------------------------
# full data


def _param_rows(fit: Fit, base: dict) -> list[dict]:
    rows = []
    n = fit.n_items
    for name in fit.names[n:]:
        lo, hi = fit.interval(name)
        rows.append({**base, "param": name, "estimate": fit.estimate(name), "se": fit.se(name), "ci_low": lo,
                     "ci_high": hi, "status": fit.identifiability.get(name, ""), "vif": fit.vif.get(name, np.nan)})
    return rows


@dataclass
class FullResult:
    recall: pd.DataFrame
    params: pd.DataFrame
    scores: pd.DataFrame


def evaluate_full(pool: PoolOracle, settings: TopkSettings) -> FullResult:
    """Every estimator on all revealed ordered pairs of one oracle (see module docstring)."""
    comp = pool.full_comparisons()
    ks = [k for k in settings.k_values if 0 < k < pool.n_items]
    recall_rows: list[dict] = []
    param_rows: list[dict] = []
    runs: list[tuple[str, float, Estimate]] = []
    for name in ("naive", "resid", "swap_majority", "aware_hier", "gated"):
        runs.append((name, np.nan if name != "aware_hier" else settings.lam_b,
                     ESTIMATORS.get(name)(comp, pool, settings)))
    sweep = sorted(set(settings.lam_b_sweep) | {settings.lam_b})
    for lb in sweep:
        runs.append(("aware", lb, _aware(comp, pool, replace(settings, lam_b=lb))))
    for name, lb, est in runs:
        for k in ks:
            recall_rows.append({
                "oracle": pool.oracle_id, "estimator": name, "lam_b": lb, "k": k,
                "recall": recall_at_k(est.scores, pool.theta, k),
                "tau2": est.fit.tau2 if est.fit is not None and not est.fit.options.naive else np.nan,
                "gate_enabled": est.extra.get("gate_enabled"),
                "n_comparisons": len(comp), "n_unusable": pool.n_items * (pool.n_items - 1) - len(comp),
            })
        if est.fit is not None and not est.fit.options.naive and name != "gated":
            param_rows += _param_rows(est.fit, {"oracle": pool.oracle_id, "estimator": name, "lam_b": lb})
    naive = runs[0][2].scores
    aware = next(e for n, lb, e in runs if n == "aware" and lb == settings.lam_b).scores
    scores = pd.DataFrame({"oracle": pool.oracle_id, "item": np.arange(pool.n_items), "theta": pool.theta,
                           "top_k": np.isin(np.arange(pool.n_items), top_k_indices(pool.theta, settings.k))})
    for m, cname in enumerate(pool.covariate_names):
        scores[cname] = pool.X[:, m]
    scores["naive"] = naive
    scores["aware"] = aware
    return FullResult(pd.DataFrame(recall_rows), pd.DataFrame(param_rows), scores)


# ---------------------------------------------------------------------------------
# budgets


@dataclass(frozen=True)
class Strategy:
    """An acquisition model (``aware`` or ``naive``) driving an acquisition rule."""

    model: str
    rule: str

    def __post_init__(self) -> None:
        if self.model not in ("aware", "naive"):
            raise ValueError(f"strategy model must be 'aware' or 'naive', got {self.model!r}")

    @property
    def estimators(self) -> tuple[str, ...]:
        # naive acquisition is also scored after post-hoc residualisation
        # (the paper's residualise-then-acquire baseline)
        return ("aware",) if self.model == "aware" else ("naive", "resid")

    @property
    def label(self) -> str:
        return f"{self.model}/{self.rule}"


@dataclass
class BudgetResult:
    recall: pd.DataFrame
    allocation: pd.DataFrame
    queries: pd.DataFrame


def evaluate_budget(
    pool: PoolOracle,
    strategies: Sequence[Strategy],
    seeds: Sequence[int],
    budgets: Sequence[int],
    settings: TopkSettings,
    *,
    base_seed: int = 0,
    allocation_budget: int | None = None,
) -> BudgetResult:
    """Run every strategy x seed on one oracle; recall at each budget, allocation and the
    query log (see module docstring)."""
    budgets = sorted({int(b) for b in budgets})
    bmax = max(budgets + ([allocation_budget] if allocation_budget else []))
    rows, alloc, queries = [], [], []
    bnd = boundary(pool.theta, settings.k)
    for strat in strategies:
        opts = settings.options() if strat.model == "aware" else naive_options(settings.options())
        act = ActiveSettings(k=settings.k, refit_every=settings.refit_every, n_samples=settings.n_samples,
                             options=opts)
        X = pool.X if strat.model == "aware" else None
        for seed in seeds:
            rng = np.random.default_rng([int(base_seed), int(pool.oracle_id), int(seed)])
            run = run_active(pool.query, pool.n_items, X, make_rule(strat.rule), bmax, act, rng)
            queries.append(pd.DataFrame({
                "oracle": pool.oracle_id, "seed": int(seed), "model": strat.model, "rule": strat.rule,
                "step": np.arange(1, len(run.y) + 1), "first_item": run.first, "second_item": run.second,
                "y": run.y,
            }))
            for b in budgets:
                comp = run.revealed(b)
                for est in strat.estimators:
                    e = ESTIMATORS.get(est)(comp, pool, settings)
                    rows.append({"oracle": pool.oracle_id, "seed": int(seed), "model": strat.model,
                                 "rule": strat.rule, "estimator": est, "budget": b,
                                 "recall": recall_at_k(e.scores, pool.theta, settings.k), "n_usable": len(comp),
                                 "cost_per_call": pool.cost_per_call})
            if allocation_budget:
                counts = run.allocation(allocation_budget, pool.n_items)
                for i in range(pool.n_items):
                    alloc.append({"oracle": pool.oracle_id, "seed": int(seed), "model": strat.model,
                                  "rule": strat.rule, "budget": allocation_budget, "item": i,
                                  "theta": float(pool.theta[i]), "distance": abs(float(pool.theta[i]) - bnd),
                                  "n_comparisons": int(counts[i])})
    return BudgetResult(pd.DataFrame(rows), pd.DataFrame(alloc),
                        pd.concat(queries, ignore_index=True) if queries else pd.DataFrame())


def parse_strategies(spec: Sequence[dict] | Sequence[str]) -> list[Strategy]:
    """Strategies from config: ``{model: aware, rule: topk}`` or ``"aware/topk"``."""
    out: list[Strategy] = []
    for s in spec:
        if isinstance(s, str):
            model, _, rule = s.partition("/")
            out.append(Strategy(model, rule))
        else:
            out.append(Strategy(str(s["model"]), str(s["rule"])))
    for strategy in out:
        make_rule(strategy.rule)  # unknown names fail here, naming the known ones
    return out
