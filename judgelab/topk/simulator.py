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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from judgelab.topk.experiment import PoolOracle, Strategy, TopkSettings, evaluate_budget, evaluate_full
from judgelab.topk.items import balanced_assignment
from judgelab.topk.stats import paired_comparison


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


# ---------------------------------------------------------------------------------
# the synthetic study: scenarios x oracles, full data and budgets


@dataclass(frozen=True)
class Scenario:
    name: str
    judge: SyntheticJudge


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_synthetic(scenarios: Sequence[Scenario], *, n_oracles: int, n_items: int, seeds: Sequence[int],
                  budgets: Sequence[int], strategies: Sequence[Strategy], settings: TopkSettings,
                  seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Full-data and budget evaluations of every scenario (tables of
    :mod:`judgelab.topk.experiment`, with a ``scenario`` column; params carry ``planted``)."""
    full, params, budget = [], [], []
    for sc in scenarios:
        names = [f"x{m}" for m in range(sc.judge.n_covariates)]
        planted = {f"c[{n}]": c for n, c in zip(names, sc.judge.c, strict=True)} | {"kappa": sc.judge.kappa}
        for o in range(n_oracles):
            pool = synthetic_oracle(sc.judge, o, n_items=n_items, seed=seed, covariate_names=names)
            r = evaluate_full(pool, settings)
            full.append(r.recall.assign(scenario=sc.name))
            params.append(r.params.assign(scenario=sc.name, planted=r.params["param"].map(planted)))
            if strategies:
                b = evaluate_budget(pool, strategies, seeds, budgets, settings, base_seed=seed).recall
                budget.append(b.assign(scenario=sc.name))
    return _concat(full), _concat(params), _concat(budget)


def synthetic_summary(full: pd.DataFrame, params: pd.DataFrame, budget: pd.DataFrame, *, k: int, lam_b: float,
                      at_budget: int, seed: int = 0) -> pd.DataFrame:
    """Per scenario: full-data naive vs bias-aware recall (paired over oracles), 95% Laplace
    coverage of the planted c and kappa, top-k vs round-robin at ``at_budget`` (paired over
    oracles, strategy seeds averaged within each) and the trusted-anchor gate's enable rate and recall."""
    rows = []
    for sc, f in full.groupby("scenario", sort=False):
        f = f[f["k"] == k]
        nv = f[f["estimator"] == "naive"].set_index("oracle")["recall"]
        aw = f[(f["estimator"] == "aware") & np.isclose(f["lam_b"].astype(float), lam_b)].set_index("oracle")["recall"]
        gt = f[f["estimator"] == "gated"].set_index("oracle")
        cmp = paired_comparison(aw.to_numpy(), nv.reindex(aw.index).to_numpy(), seed=seed)
        row = {"scenario": sc, "n_oracles": len(nv), "naive_full": cmp["mean_b"], "aware_full": cmp["mean_a"],
               "delta_full": cmp["delta"], "delta_ci_low": cmp["ci_low"], "delta_ci_high": cmp["ci_high"],
               "p_full": cmp["p"], "gate_enabled_rate": float(gt["gate_enabled"].astype(float).mean()),
               "gated_full": float(gt["recall"].mean()),
               "best_of_two_full": float(np.maximum(aw.to_numpy(), nv.reindex(aw.index).to_numpy()).mean())}
        p = params[(params["scenario"] == sc) & (params["estimator"] == "aware")
                   & np.isclose(params["lam_b"].astype(float), lam_b)]
        for name, gp in p.groupby("param", sort=True):
            col = "kappa" if name == "kappa" else "c_" + name[2:-1]
            row[f"planted_{col}"] = float(gp["planted"].iloc[0])
            row[f"mean_{col}"] = float(gp["estimate"].mean())
            row[f"cover_{col}"] = float(((gp["ci_low"] <= gp["planted"]) & (gp["planted"] <= gp["ci_high"])).mean())
        if len(budget):
            b = budget[(budget["scenario"] == sc) & (budget["budget"] == at_budget) & (budget["model"] == "aware")]
            # oracle-level test: seeds re-run one oracle, so they are averaged within it
            w = b.pivot_table(index="oracle", columns="rule", values="recall", aggfunc="mean")
            if {"topk", "round_robin"} <= set(w.columns):
                c2 = paired_comparison(w["topk"].to_numpy(), w["round_robin"].to_numpy(), seed=seed)
                row.update({"budget": at_budget, "topk_at_budget": c2["mean_a"], "round_robin_at_budget": c2["mean_b"],
                            "p_topk_vs_round_robin": c2["p"], "n_oracles_paired": c2["n"]})
        rows.append(row)
    return pd.DataFrame(rows)
