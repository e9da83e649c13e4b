"""Figures of the top-k study (paper 002, Figs. 2, 3, 4, 5, 7, 8).

Every figure is stamped "SIMULATED JUDGES" when any judge in it is simulated (the
synthetic simulator counts as simulated) and saved atomically.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.plots.stamp import plt, save_figure, stamp

_RULE_STYLE = {
    "topk": ("#C44E52", "top-k-aware (ours)"),
    "global": ("#4C72B0", "global uncertainty (D-opt.)"),
    "round_robin": ("#55A868", "round-robin"),
    "random": ("#8172B2", "random"),
    "entropy": ("#CCB974", "entropy only"),
    "no_variance": ("#DD8452", "no variance term"),
    "no_informativeness": ("#937860", "no p(1-p) term"),
}


def _finish(fig, path: str, *, simulated: bool, config_hash: str | None, simulated_inputs: str) -> None:
    stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def _se(x: pd.Series) -> float:
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def recall_vs_budget(budget: pd.DataFrame, path: str, *, simulated: bool, config_hash: str | None = None,
                     simulated_inputs: str = "") -> None:
    """Fig. 3: top-k recall vs budget (+/- s.e.) per strategy, one panel per judge/scenario."""
    sources = list(dict.fromkeys(budget["source"]))
    ncol = min(3, len(sources))
    nrow = int(np.ceil(len(sources) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.3 * nrow), squeeze=False, sharey=True)
    own = budget[budget["model"] == budget["estimator"]]
    for ax, src in zip(axes.ravel(), sources, strict=False):
        d = own[own["source"] == src]
        for (model, rule), g in d.groupby(["model", "rule"], sort=True):
            if model == "aware" and rule not in ("topk", "global", "round_robin", "random"):
                continue
            s = g.groupby("budget")["recall"].agg(["mean", _se])
            color, label = _RULE_STYLE.get(str(rule), ("gray", str(rule)))
            ls = "-" if model == "aware" else ":"
            ax.errorbar(s.index, s["mean"], yerr=s["_se"], color=color, ls=ls, marker="o", ms=3, capsize=2,
                        label=f"{label}{'' if model == 'aware' else ' (naive model)'}")
        ax.set_title(src, fontsize=9)
        ax.set_xlabel("comparisons (budget B)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(sources):]:
        ax.axis("off")
    axes[0][0].set_ylabel("top-k recall")
    axes[0][0].legend(fontsize=6, loc="lower right")
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)


def naive_vs_true(scores: pd.DataFrame, path: str, *, k: int, covariate: str, title: str, simulated: bool,
                  config_hash: str | None = None, simulated_inputs: str = "") -> None:
    """Fig. 2: naive (left) and bias-aware (right) estimates against true quality."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    bnd = np.sort(scores["theta"].to_numpy())[::-1]
    true_cut = (bnd[k - 1] + bnd[k]) / 2
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.15, 0.15, len(scores))  # separates items of equal true quality
    for ax, col, name in ((axes[0], "naive", "naive Bradley-Terry"), (axes[1], "aware", "bias-aware")):
        y = scores[col].to_numpy()
        cut = np.sort(y)[::-1][k - 1]
        hi = scores[covariate].to_numpy() > np.median(scores[covariate].to_numpy()) if covariate in scores else None
        for flag, marker, lab in ((False, "o", f"low {covariate}"), (True, "^", f"high {covariate}")):
            sel = (hi == flag) if hi is not None else np.ones(len(y), bool)
            ax.scatter(scores["theta"].to_numpy()[sel] + jitter[sel], y[sel], marker=marker, s=28, alpha=0.8,
                       label=lab, edgecolor="k", linewidth=0.4)
        wrong = (y >= cut) != scores["top_k"].to_numpy()
        ax.scatter(scores["theta"].to_numpy()[wrong] + jitter[wrong], y[wrong], s=160, facecolors="none",
                   edgecolors="red", linewidth=1.2, label="misplaced at the cut-off")
        ax.axhline(cut, color="gray", ls=":", lw=1, label=f"estimated top-{k} cut-off")
        ax.axvline(true_cut, color="black", ls="--", lw=1, label=f"true top-{k} boundary")
        ax.set_xlabel("true quality θ (#true − #false)")
        ax.set_ylabel(f"{name} estimate")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, loc="upper left")
    fig.suptitle(title, fontsize=9)
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)


def allocation(alloc: pd.DataFrame, path: str, *, title: str, simulated: bool, config_hash: str | None = None,
               simulated_inputs: str = "") -> None:
    """Fig. 4: comparisons spent per item vs its distance to the top-k boundary."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    d = alloc[alloc["model"] == "aware"]
    for rule, g in d.groupby("rule", sort=True):
        s = g.groupby("distance")["n_comparisons"].agg(["mean", _se])
        color, label = _RULE_STYLE.get(str(rule), ("gray", str(rule)))
        ax.errorbar(s.index, s["mean"], yerr=s["_se"], color=color, marker="o", ms=4, capsize=2, label=label)
    b = int(d["budget"].iloc[0]) if len(d) else 0
    ax.set_xlabel("distance of the item's true quality to the top-k boundary")
    ax.set_ylabel(f"comparisons per item (B={b})")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)


def ablation(budget: pd.DataFrame, path: str, *, at_budget: int, title: str, simulated: bool,
             config_hash: str | None = None, simulated_inputs: str = "") -> None:
    """Fig. 5: recall at one budget for each acquisition rule (bias-aware model), +/- s.e."""
    d = budget[(budget["model"] == "aware") & (budget["estimator"] == "aware") & (budget["budget"] == at_budget)]
    s = d.groupby("rule")["recall"].agg(["mean", _se]).sort_values("mean", ascending=False)
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    colors = [_RULE_STYLE.get(r, ("gray", r))[0] for r in s.index]
    ax.bar(range(len(s)), s["mean"], yerr=s["_se"], color=colors, capsize=3)
    ax.set_xticks(range(len(s)), [_RULE_STYLE.get(r, ("", r))[1] for r in s.index], rotation=30, ha="right",
                  fontsize=7)
    ax.set_ylabel(f"top-k recall at B={at_budget}")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)


def judges_recall_vs_c(judges: pd.DataFrame, path: str, *, covariate: str, simulated: bool,
                       config_hash: str | None = None, simulated_inputs: str = "") -> None:
    """Fig. 8: each judge at (naive recall, c-hat); marker size grows with the gain delta."""
    col = f"c_{covariate}"
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    fams = sorted(judges["family"].astype(str).unique())
    cmap = plt.get_cmap("tab10")
    for fi, fam in enumerate(fams):
        g = judges[judges["family"].astype(str) == fam]
        size = 40 + 600 * np.clip(g["delta"].to_numpy(float), 0, None)
        ax.scatter(g["naive_recall"], g[col], s=size, color=cmap(fi % 10), alpha=0.7, edgecolor="k", label=fam)
        for _, r in g.iterrows():
            ax.annotate(str(r["judge"]), (r["naive_recall"], r[col]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
    ax.axhline(0, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("naive top-k recall (full data)")
    ax.set_ylabel(f"estimated bias coefficient ĉ[{covariate}]")
    ax.legend(fontsize=7, title="family", title_fontsize=7)
    ax.grid(alpha=0.3)
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)


def frontier(table: pd.DataFrame, path: str, *, simulated: bool, config_hash: str | None = None,
             simulated_inputs: str = "") -> None:
    """Fig. 7: recall vs money spent, per judge (bias-aware model, top-k-aware acquisition)."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    cmap = plt.get_cmap("tab10")
    for i, (judge, g) in enumerate(table.groupby("judge", sort=True)):
        g = g.sort_values("budget")
        x = g["cost_usd"].to_numpy(float)
        if not np.any(x > 0):
            continue  # free judges have no place on a cost axis
        ax.plot(x, g["recall"], marker="o", ms=3, color=cmap(i % 10), label=judge)
    ax.set_xscale("log")
    ax.set_xlabel("cost of the comparisons (USD, configured prices)")
    ax.set_ylabel("top-k recall")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3, which="both")
    _finish(fig, path, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
