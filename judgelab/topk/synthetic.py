"""The synthetic top-k study of paper 002 (Technical Appendix): scenarios x oracles.

Each :class:`~judgelab.simworld.topk.Scenario` names a synthetic judge with planted ``c*`` and
``kappa*`` (:mod:`judgelab.simworld.topk`, the simulated world); :func:`run_synthetic` evaluates
the study's estimators on its pools with full data and under budgets, and
:func:`synthetic_summary` compares them with the planted values (recall, coverage, the gate).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgelab.simworld.topk import Scenario, synthetic_oracle
from judgelab.topk.experiment import Strategy, TopkSettings, evaluate_budget, evaluate_full
from judgelab.topk.stats import paired_comparison


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
               "p_full": cmp["p"], "p_full_status": cmp["status"], "gate_enabled_rate": float(gt["gate_enabled"].astype(float).mean()),
               "gated_full": float(gt["recall"].mean()),
               "best_of_two_full": float(np.maximum(aw.to_numpy(), nv.reindex(aw.index).to_numpy()).mean())}
        p = params[(params["scenario"] == sc) & (params["estimator"] == "aware")
                   & np.isclose(params["lam_b"].astype(float), lam_b)]
        for name, gp in p.groupby("param", sort=True):
            col = "kappa" if name == "kappa" else "c_" + str(name)[2:-1]
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
                            "p_topk_vs_round_robin": c2["p"], "p_topk_vs_round_robin_status": c2["status"],
                            "n_oracles_paired": c2["n"]})
        rows.append(row)
    return pd.DataFrame(rows)
