"""Figures of study ``rbd`` (paper 001): Fig. 3, Table 2 as bars, Fig. 10, Figs. 4-5 and training loss."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from judgelab.io import any_true
from judgelab.plots.stamp import plt, save_figure, stamp

BIAS_ORDER = ("verbosity", "position", "bandwagon", "sentiment")
#: paper 001, Fig. 3e: share of biased examples per bias type, pooled over eight evaluators
PAPER_BIAS_SHARE = {"verbosity": 0.313, "position": 0.129, "bandwagon": 0.125, "sentiment": 0.150}


def _finish(fig, df: pd.DataFrame, path: str, simulated_inputs: str) -> None:
    simulated = any_true(df)
    stamp(fig, simulated=simulated, simulated_inputs=simulated_inputs,
          config_hash=str(df["config_hash"].iloc[0]) if "config_hash" in df and len(df)
          else None)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def bias_existence_figure(summary: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """Fig. 3: (a-d) accuracy on D and D_bias and consistency per evaluator; (e) share of biased examples."""
    fig, axes = plt.subplots(1, 5, figsize=(21, 4.4), gridspec_kw={"width_ratios": [1, 1, 1, 1, 0.8]})
    per_judge = summary[summary["judge"] != "(all)"]
    for ax, bias in zip(axes[:4], BIAS_ORDER, strict=True):
        s = per_judge[per_judge["set"] == bias].sort_values("judge")
        x = np.arange(len(s))
        ax.bar(x - 0.27, s["acc_D"], 0.27, label="accuracy on D", color="#4C72B0")
        ax.bar(x, s["acc_D_bias"], 0.27, label="accuracy on D_bias", color="#DD8452")
        ax.bar(x + 0.27, s["consistency"], 0.27, label="consistency", color="#55A868")
        ax.set_xticks(x, s["judge"], rotation=45, ha="right", fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_title(f"{bias} bias")
    axes[0].set_ylabel("share of items")
    axes[0].legend(fontsize=7, loc="lower left")
    pooled = summary[(summary["judge"] == "(all)") & summary["set"].isin(BIAS_ORDER)].set_index("set")
    pooled = pooled.reindex([b for b in BIAS_ORDER if b in pooled.index])
    x = np.arange(len(pooled))
    err = np.vstack([pooled["bias_share"] - pooled["bias_ci_low"], pooled["bias_ci_high"] - pooled["bias_share"]])
    axes[4].bar(x, pooled["bias_share"], 0.6, color="#8172B2", label="this run (Wilson 95% CI)")
    axes[4].errorbar(x, pooled["bias_share"], yerr=err, fmt="none", color="black", lw=1)
    axes[4].scatter(x, [PAPER_BIAS_SHARE.get(b, np.nan) for b in pooled.index], marker="D", color="red", zorder=5,
                    label="paper 001, Fig. 3e")
    axes[4].set_xticks(x, pooled.index, rotation=30, ha="right")
    axes[4].set_title("(e) biased examples (b_i = Yes)")
    axes[4].set_ylim(0, max(0.5, float(np.nanmax(pooled["bias_ci_high"])) + 0.05) if len(pooled) else 1)
    axes[4].legend(fontsize=7)
    _finish(fig, summary, path, simulated_inputs)


def loop_figure(table2: pd.DataFrame, path: str, *, detector: str | None = None, simulated_inputs: str = "") -> None:
    """Table 2 as bars: the primary metric without vs with the detector (T = max), per set and evaluator."""
    if detector is None:
        detector = str(table2["detector"].iloc[0])
    t = table2[(table2["detector"] == detector) & (table2["iterations"] == table2["iterations"].max())]
    sets = list(dict.fromkeys(t["set"]))
    ncol = min(3, max(1, len(sets)))
    nrow = int(np.ceil(len(sets) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(6 * ncol, 4 * nrow), squeeze=False)
    for ax, s in zip(axes.ravel(), sets, strict=False):
        g = t[t["set"] == s].sort_values("judge")
        x = np.arange(len(g))
        ax.bar(x - 0.2, g["primary_without"], 0.4, label="without detector", color="#999999")
        ax.bar(x + 0.2, g["primary_with"], 0.4, label=f"with {detector}", color="#4C72B0")
        ax.set_xticks(x, g["judge"], rotation=45, ha="right", fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_title(f"{s}: {g['primary_metric'].iloc[0]}")
    for ax in axes.ravel()[len(sets):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Evaluators with and without the detector (T = {int(t['iterations'].max())}; position: "
                 "consistency, footnote 4)")
    _finish(fig, table2.assign(simulated=True) if "simulated" not in table2 else table2, path, simulated_inputs)


def behaviour_figure(behaviour: pd.DataFrame, path: str, *, detector: str | None = None,
                     simulated_inputs: str = "") -> None:
    """Fig. 10: stubbornness (top) and overconfidence (bottom) per evaluator, pooled over sets."""
    if detector is None:
        detector = str(behaviour["detector"].iloc[0])
    b = behaviour[(behaviour["detector"] == detector) & (behaviour["set"] == "(all)")].sort_values("judge")
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 1.1 * len(b) + 2), 6.5), sharex=True)
    x = np.arange(len(b))
    axes[0].bar(x, b["stubbornness"], color="#C44E52")
    axes[0].set_ylabel("stubbornness")
    axes[0].set_title(f"After a {detector} flag: keep rate (top) and wrong share of kept verdicts (bottom)")
    axes[1].bar(x, b["overconfidence"], color="#8172B2")
    axes[1].set_ylabel("overconfidence")
    axes[1].set_xticks(x, b["judge"], rotation=45, ha="right", fontsize=8)
    for ax in axes:
        ax.set_ylim(0, 1)
    _finish(fig, behaviour.assign(simulated=True) if "simulated" not in behaviour else behaviour, path,
            simulated_inputs)


def detector_figure(metrics: pd.DataFrame, losses: Mapping[str, pd.DataFrame], path: str, *,
                    simulated_inputs: str = "") -> None:
    """Figs. 4-5: detector accuracy/F1 on the test set, accuracy on the diagnostic sets; training loss."""
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.6))
    m = metrics[(metrics["bias_type"] == "all")]
    test = m[m["subset"] == "test"].sort_values("detector")
    x = np.arange(len(test))
    axes[0].bar(x - 0.2, test["accuracy"], 0.4, label="accuracy", color="#4C72B0")
    axes[0].bar(x + 0.2, test["f1"].fillna(0), 0.4, label="F1 (Yes)", color="#55A868")
    axes[0].set_xticks(x, test["detector"], rotation=45, ha="right", fontsize=7)
    axes[0].set_ylim(0, 1)
    axes[0].set_title("balanced detector test set")
    axes[0].legend(fontsize=7)
    diag = m[m["subset"] != "test"]
    subsets = sorted(diag["subset"].unique())
    dets = sorted(diag["detector"].unique())
    w = 0.8 / max(1, len(subsets))
    for k, sub in enumerate(subsets):
        d = diag[diag["subset"] == sub].set_index("detector").reindex(dets)
        axes[1].bar(np.arange(len(dets)) + (k - (len(subsets) - 1) / 2) * w, d["accuracy"], w, label=sub)
    axes[1].set_xticks(np.arange(len(dets)), dets, rotation=45, ha="right", fontsize=7)
    axes[1].set_ylim(0, 1)
    axes[1].set_title("diagnostic sets (truth always No)")
    axes[1].legend(fontsize=7)
    for name, df in sorted(losses.items()):
        axes[2].plot(df["step"], df["loss"], label=name)
    axes[2].set_xlabel("optimiser step")
    axes[2].set_ylabel("training loss")
    axes[2].set_title("fine-tuning (LoRA)")
    if losses:
        axes[2].legend(fontsize=7)
    _finish(fig, metrics, path, simulated_inputs)


def detector_sizes_figure(sizes: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """Fig. 6: mean accuracy and consistency gain per detector size, with their 95% t intervals
    (a size without an interval, no variance over its cells, is drawn without a bar)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = np.arange(len(sizes))
    for off, metric, color in ((-0.18, "acc", "#4C72B0"), (0.18, "consistency", "#55A868")):
        m = sizes[f"{metric}_gain"].to_numpy(dtype=float)
        lo = sizes[f"{metric}_gain_ci_low"].to_numpy(dtype=float)
        hi = sizes[f"{metric}_gain_ci_high"].to_numpy(dtype=float)
        ax.bar(x + off, m, 0.36, color=color, label=f"{'accuracy' if metric == 'acc' else metric} gain")
        err = np.vstack([np.where(np.isnan(lo), 0, m - lo), np.where(np.isnan(hi), 0, hi - m)])
        ax.errorbar(x + off, m, yerr=err, fmt="none", color="black", lw=1)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, [f"{s}\n({d})" for s, d in zip(sizes["size"], sizes["detector"], strict=True)], fontsize=7)
    ax.set_ylabel("mean gain with the detector")
    ax.set_title("Detector size: average gains over evaluators and bias types")
    ax.legend(fontsize=7)
    _finish(fig, sizes, path, simulated_inputs)
