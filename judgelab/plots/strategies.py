"""Figures of the strategies study (paper 003): bias heatmap, agreement with CIs, cross-bias
heatmap, cost-accuracy Pareto front, per-category agreement.  Stamped when any judge is simulated."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm

from judgelab.io import any_true, table_tuples
from judgelab.plots.stamp import plt, save_figure, stamp
from judgelab.strategies import STRATEGY_ORDER

BIAS_LABELS = {"position": "position", "verbosity": "verbosity\n(length-aware)", "style": "style\n(pos.-averaged)",
               "self_preference": "self-\npreference", "model_preference": "model pref.\n(google side)"}


def _simulated(df: pd.DataFrame) -> bool:
    return any_true(df)


def _hash(df: pd.DataFrame) -> str | None:
    return str(df["config_hash"].iloc[0]) if "config_hash" in df and len(df) else None


def _strategies(values) -> list[str]:
    present = set(values)
    return [s for s in STRATEGY_ORDER if s in present] + sorted(present - set(STRATEGY_ORDER))


def bias_heatmap(bias: pd.DataFrame, path: str, *, strategy: str = "B0", simulated_inputs: str = "") -> None:
    """Fig. 1: signed bias scores (B0) per judge and bias type, RdBu centred at 0."""
    measures = [m for m in BIAS_LABELS if m in set(bias["measure"])]
    d = bias[(bias["strategy"] == strategy) & bias["measure"].isin(measures)]
    m = d.pivot_table(index="judge", columns="measure", values="value", aggfunc="first").reindex(columns=measures)
    fig, ax = plt.subplots(figsize=(1.5 * len(measures) + 2.5, 0.55 * len(m) + 1.8))
    im = ax.imshow(m.to_numpy(dtype=float), cmap="RdBu", norm=TwoSlopeNorm(vmin=-1, vcenter=0, vmax=1), aspect="auto")
    for (i, j), v in np.ndenumerate(m.to_numpy(dtype=float)):
        ax.text(j, i, "" if np.isnan(v) else f"{v:+.2f}", ha="center", va="center", fontsize=8,
                color="white" if abs(v) > 0.6 else "black")
    ax.set_xticks(range(len(measures)), [BIAS_LABELS[x] for x in measures], fontsize=8)
    ax.set_yticks(range(len(m)), m.index, fontsize=8)
    ax.set_title(f"Signed bias scores b on the controlled set ({strategy})", fontsize=10)
    fig.colorbar(im, ax=ax, label="b = P(target) - P(other)")
    stamp(fig, simulated=_simulated(bias), simulated_inputs=simulated_inputs, config_hash=_hash(bias))
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def agreement_figure(agreement: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """Tables 1/2 as a figure: agreement with gold and bootstrap 95% CI, per strategy and judge."""
    a = agreement[agreement["judge"] != "gold"]
    sets = sorted(a["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(6.2 * len(sets), 4.4), squeeze=False, sharey=True)
    for ax, ds in zip(axes[0], sets, strict=True):
        d = a[a["dataset"] == ds]
        strats = _strategies(d["strategy"])
        judges = sorted(d["judge"].unique())
        width = 0.8 / max(1, len(judges))
        for k, judge in enumerate(judges):
            g = d[d["judge"] == judge].set_index("strategy").reindex(strats)
            x = np.arange(len(strats)) - 0.4 + width * (k + 0.5)
            err = np.vstack([g["agreement"] - g["ci_low"], g["ci_high"] - g["agreement"]])
            ax.errorbar(x, g["agreement"], yerr=err, fmt="o", ms=3, lw=0.8, capsize=1.5, label=judge)
        ax.set_xticks(range(len(strats)), strats)
        ax.set_title(ds)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", lw=0.3)
    axes[0][0].set_ylabel("agreement with gold (95% bootstrap CI)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    stamp(fig, simulated=_simulated(a), simulated_inputs=simulated_inputs, config_hash=_hash(a))
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def cross_bias_heatmap(cross: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """Fig. 2: change in bias magnitude |b| vs B0, averaged over judges; negative (green) = better."""
    d = cross[cross["judge"] == "mean"]
    measures = [m for m in ("position", "verbosity", "style", "self_preference") if m in set(d["measure"])]
    strats = _strategies(d["strategy"])
    m = d.pivot_table(index="strategy", columns="measure", values="delta_abs_b", aggfunc="first")
    m = m.reindex(index=strats, columns=measures)
    vals = m.to_numpy(dtype=float)
    lim = max(0.05, float(np.nanmax(np.abs(vals))) if vals.size else 0.05)
    fig, ax = plt.subplots(figsize=(1.6 * len(measures) + 2.5, 0.45 * len(strats) + 1.8))
    im = ax.imshow(vals, cmap="RdYlGn_r", norm=TwoSlopeNorm(vmin=-lim, vcenter=0, vmax=lim), aspect="auto")
    for (i, j), v in np.ndenumerate(vals):
        ax.text(j, i, "" if np.isnan(v) else f"{v:+.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(measures)), [BIAS_LABELS[x] for x in measures], fontsize=8)
    ax.set_yticks(range(len(strats)), strats)
    over = str(d["averaged_over"].iloc[0]) if "averaged_over" in d and len(d) else ""
    ax.set_title("Change in |b| vs B0 (mean over judges)", fontsize=10)
    fig.colorbar(im, ax=ax, label="delta |b| (negative = less bias)")
    if over:
        fig.text(0.01, 0.97, f"averaged over: {over}", fontsize=6, color="dimgray", va="top")
    stamp(fig, simulated=_simulated(d), simulated_inputs=simulated_inputs, config_hash=_hash(cross))
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    save_figure(fig, path)


def pareto_figure(pareto: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """Fig. 4: cost per instance vs agreement; the Pareto front joined by a line."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for judge, g in pareto.groupby("judge", sort=True):
        ax.scatter(g["cost_per_instance"], g["agreement"], s=22, label=judge, alpha=0.85)
        for r in table_tuples(g):
            ax.annotate(r.strategy, (r.cost_per_instance, r.agreement), fontsize=6, xytext=(2, 2),
                        textcoords="offset points")
    f = pareto[pareto["on_front"]].sort_values("cost_per_instance")
    ax.plot(f["cost_per_instance"], f["agreement"], color="black", lw=1, ls="--", label="Pareto front")
    ax.set_xlabel("cost per instance (USD, recorded tokens x configured prices)")
    ax.set_ylabel("agreement with gold")
    ds = str(pareto["dataset"].iloc[0]) if len(pareto) else ""
    ax.set_title(f"Cost vs agreement on {ds}")
    ax.grid(lw=0.3)
    ax.legend(fontsize=7, loc="lower right")
    stamp(fig, simulated=_simulated(pareto), simulated_inputs=simulated_inputs, config_hash=_hash(pareto))
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def category_figure(categories: pd.DataFrame, path: str, *, dataset: str, strategy: str = "B0",
                    simulated_inputs: str = "") -> None:
    """Fig. 3: agreement by category (one strategy), per judge."""
    d = categories[(categories["dataset"] == dataset) & (categories["strategy"] == strategy)]
    cats = sorted(d["category"].unique())
    judges = sorted(d["judge"].unique())
    width = 0.8 / max(1, len(judges))
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(cats) + 2), 4.3))
    for k, judge in enumerate(judges):
        g = d[d["judge"] == judge].set_index("category").reindex(cats)
        x = np.arange(len(cats)) - 0.4 + width * (k + 0.5)
        ax.bar(x, g["agreement"], width, label=judge)
    n = d.groupby("category")["n"].first().reindex(cats)
    ax.set_xticks(range(len(cats)), [f"{c}\n(n={int(v)})" if not np.isnan(v) else str(c) for c, v in n.items()], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("agreement with gold")
    ax.set_title(f"{dataset}: agreement by category ({strategy})")
    ax.legend(fontsize=7, ncol=2)
    stamp(fig, simulated=_simulated(d), simulated_inputs=simulated_inputs, config_hash=_hash(categories))
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)
