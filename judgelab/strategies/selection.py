"""Cost-accuracy Pareto front (paper 003, Appendix H / Fig. 4) and the strategy selector (Algorithm 1).

Pareto front: on one dataset, every judge x strategy configuration is a point (cost per
instance from the recorded tokens and the judges' configured prices, agreement with gold);
a configuration is on the front when no other one is at most as expensive and at least as
accurate, and strictly better in one of the two.

Selector: paper 003's Algorithm 1 (JUDGESTRATEGYSELECTOR) states its recommendations as
constants read off its tables.  :func:`recommend` derives each branch from the measured
tables instead, so the same rules give the paper's answers on the paper's numbers and
data-driven answers on any other panel:

====== =========================================== ==============================================
line   situation                                    rule applied to the measured results
====== =========================================== ==============================================
1-2    adversarial / high-stakes task               on the adversarial set, each judge's best
                                                    strategy within budget; return the strategy
                                                    that is best for the most judges, with them
4-5    no preferred model, cost matters             the most accurate Pareto-front configuration
                                                    on the natural set within budget (cheapest on
                                                    ties; optionally under a cost cap)
7-14   preferred model measured                     its strategy with the largest significant
                                                    improvement over B0 (mixed model, p < alpha,
                                                    Holm if asked) within budget; none: B0, with
                                                    the best non-significant gain as alternative
                                                    ("gains within MDE")
16     model not measured                           the strategy that improves on B0 for the most
                                                    judges (positive mixed-model coefficient)
====== =========================================== ==============================================

Budget k caps the calls per instance (a strategy's verdict calls, plus one when it generates a
reference answer); ``None`` is no cap.

Tolerance: a strategy is recommended over B0 only on a difference larger than
:data:`TOLERANCE` (agreement or mixed-model coefficient, proportion scale): identical verdicts
give coefficients like 2e-17 and equal agreements, which are no evidence of anything, so B0
(the baseline, and the cheapest) is kept, and a tie among other strategies goes to the
cheaper one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from judgelab.stats.intervals import DEFAULT_ALPHA

#: Smallest difference (agreement, or mixed-model coefficient; proportion scale) that counts as one:
#: far below any effect a study can measure (1e-6 = 0.0001 percentage points), far above rounding.
TOLERANCE = 1e-6


def pareto_table(agreement: pd.DataFrame, dataset: str, *, exclude: Iterable[str] = ()) -> pd.DataFrame:
    """Configurations of ``dataset`` with cost, agreement, CI and an ``on_front`` flag."""
    ex = set(exclude) | {"gold"}
    d = agreement[(agreement["dataset"] == dataset) & ~agreement["judge"].isin(ex)].copy()
    cols = ["dataset", "judge", "strategy", "simulated", "agreement", "ci_low", "ci_high", "kappa",
            "cost_per_instance", "calls_per_instance"]
    d = d[cols].reset_index(drop=True)
    cost, acc = d["cost_per_instance"].to_numpy(), d["agreement"].to_numpy()
    front = []
    for i in range(len(d)):
        dominated = np.any((cost <= cost[i]) & (acc >= acc[i]) & ((cost < cost[i]) | (acc > acc[i])))
        front.append(bool(not dominated and np.isfinite(acc[i])))  # a cell with no verdict is on no front
    d["on_front"] = front
    return d.sort_values(["cost_per_instance", "agreement", "judge", "strategy"],
                         ascending=[True, False, True, True]).reset_index(drop=True)


def strategy_budget_costs(strategy_rows: Sequence[Mapping]) -> dict[str, int]:
    """Calls per instance each strategy needs (verdict calls, +1 with a reference generation)."""
    return {r["strategy"]: int(r["verdict_calls"]) + int(bool(r["reference_per_question"])) for r in strategy_rows}


def _within(strats: Iterable[str], costs: Mapping[str, int], k: int | None) -> list[str]:
    return [s for s in strats if k is None or costs.get(s, 10**6) <= k]


def _best_per_judge(acc: pd.DataFrame, allowed: Sequence[str], costs: Mapping[str, int],
                    tolerance: float = TOLERANCE) -> dict[str, str]:
    """Each judge's best strategy: the strategies within ``tolerance`` of the top agreement are
    tied, and a tie goes to B0, then to the cheapest, then by name."""
    out: dict[str, str] = {}
    for judge, g in acc[acc["strategy"].isin(allowed)].groupby("judge", sort=True):
        g = g[g["agreement"] >= g["agreement"].max() - tolerance]
        g = g.assign(_b=g["strategy"] != "B0", _c=g["strategy"].map(costs)).sort_values(["_b", "_c", "strategy"])
        out[cast("str", judge)] = str(g["strategy"].iloc[0])
    return out


def recommend(
    agreement: pd.DataFrame,
    mixed: pd.DataFrame,
    costs: Mapping[str, int],
    *,
    natural: str,
    adversarial: str | None,
    budgets: Sequence[int | None] = (1, 2, 3, None),
    alpha: float = DEFAULT_ALPHA,
    use_holm: bool = False,
    exclude: Iterable[str] = (),
    cost_cap: float | None = None,
    tolerance: float = TOLERANCE,
) -> pd.DataFrame:
    """Algorithm 1's recommendations for every (task, budget, model) scenario (module docstring);
    a difference of at most ``tolerance`` is no difference."""
    ex = set(exclude) | {"gold"}
    acc = agreement[~agreement["judge"].isin(ex) & (agreement["strategy"] != "")]
    nat = acc[acc["dataset"] == natural]
    mix = mixed[(mixed["dataset"] == natural) & ~mixed["judge"].isin(ex)]
    judges = sorted(nat["judge"].unique())
    pcol = "lpm_p_holm" if use_holm else "lpm_p"
    rows = []
    for k in budgets:
        kname = "any" if k is None else str(k)
        # lines 1-2: adversarial
        if adversarial is not None and adversarial in set(acc["dataset"]):
            adv = acc[acc["dataset"] == adversarial]
            best = _best_per_judge(adv, _within(adv["strategy"].unique(), costs, k), costs, tolerance)
            if best:
                tally = pd.Series(list(best.values())).value_counts()
                top = tally[tally == tally.max()].index
                mean_acc = adv[adv["strategy"].isin(top)].groupby("strategy")["agreement"].mean().reset_index()
                strat = str(mean_acc.sort_values(["agreement", "strategy"], ascending=[False, True])["strategy"].iloc[0])
                who = [j for j, s in best.items() if s == strat]
                delta = adv[(adv["strategy"] == strat) & adv["judge"].isin(who)]["delta_vs_B0"].mean()
                rows.append({"task": "adversarial", "budget": kname, "model": "any", "judges": ",".join(who),
                             "strategy": strat, "algorithm_line": "1-2",
                             "evidence": f"best on {adversarial} for {len(who)} of {len(best)} judges; "
                                         f"mean change vs B0 {100 * delta:+.1f} pp"})
        # lines 4-5: no model preference, cost matters
        pool = nat[nat["strategy"].isin(_within(nat["strategy"].unique(), costs, k))]
        if cost_cap is not None:
            pool = pool[pool["cost_per_instance"] <= cost_cap]
        if len(pool):
            front = pareto_table(pool, natural)
            # the most accurate point, up to the tolerance (a point 1e-17 more accurate does not
            # knock a cheaper or baseline one off the front): the cheapest of those, B0 first
            front = front[front["agreement"] >= front["agreement"].max() - tolerance]
            front = front.assign(_b=front["strategy"] != "B0").sort_values(
                ["cost_per_instance", "_b", "agreement", "judge", "strategy"], ascending=[True, True, False, True, True])
            top = front.iloc[0]
            rows.append({"task": "natural", "budget": kname, "model": "unspecified", "judges": top["judge"],
                         "strategy": top["strategy"], "algorithm_line": "4-5",
                         "evidence": f"most accurate Pareto point on {natural}: agreement {top['agreement']:.3f} "
                                     f"at ${top['cost_per_instance']:.5f}/instance"})
        # lines 7-14: a preferred, measured model
        for judge in judges:
            m = mix[(mix["judge"] == judge) & mix["strategy"].isin(_within(mix["strategy"].unique(), costs, k))]
            sig = m[(m[pcol] < alpha) & (m["lpm_coef"] > tolerance)].sort_values(["lpm_coef", "strategy"],
                                                                         ascending=[False, True])
            if len(sig):
                r = sig.iloc[0]
                rows.append({"task": "natural", "budget": kname, "model": judge, "judges": judge,
                             "strategy": r["strategy"], "algorithm_line": "7-12",
                             "evidence": f"{100 * r['lpm_coef']:+.1f} pp vs B0, p = {r[pcol]:.4f}"
                                         + (" (Holm)" if use_holm else "")})
            else:
                pos = m[m["lpm_coef"] > tolerance].sort_values(["lpm_coef", "strategy"], ascending=[False, True])
                alt = f"; best non-significant: {pos.iloc[0]['strategy']} ({100 * pos.iloc[0]['lpm_coef']:+.1f} pp)" \
                    if len(pos) else ""
                rows.append({"task": "natural", "budget": kname, "model": judge, "judges": judge, "strategy": "B0",
                             "algorithm_line": "13-14",
                             "evidence": f"no significant improvement at alpha {alpha} (gains within MDE){alt}"})
        # line 16: an unmeasured model
        m = mix[mix["strategy"].isin(_within(mix["strategy"].unique(), costs, k))]
        if len(m):
            m = m[m["strategy"] != "B0"]
            agg = m.groupby("strategy").agg(n_pos=("lpm_coef", lambda x: int((x > tolerance).sum())),
                                            mean=("lpm_coef", "mean"))
            agg = agg.reset_index().sort_values(["n_pos", "mean", "strategy"], ascending=[False, False, True])
            agg = agg.set_index("strategy")
            if len(agg) and agg["n_pos"].iloc[0] > 0:
                s = agg.index[0]
                rows.append({"task": "natural", "budget": kname, "model": "unknown", "judges": "", "strategy": s,
                             "algorithm_line": "16",
                             "evidence": f"improves on B0 for {agg.loc[s, 'n_pos']} of {m['judge'].nunique()} "
                                         f"judges (mean {100 * agg.loc[s, 'mean']:+.1f} pp)"})
            else:
                rows.append({"task": "natural", "budget": kname, "model": "unknown", "judges": "", "strategy": "B0",
                             "algorithm_line": "16",
                             "evidence": f"no strategy improves on B0 by more than {tolerance:g} for any judge"})
    return pd.DataFrame(rows, columns=["task", "budget", "model", "judges", "strategy", "algorithm_line", "evidence"])
