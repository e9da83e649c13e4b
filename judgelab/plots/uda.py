"""Figures of study ``uda`` (paper 000): score trajectories (Fig. 3), judge x model heatmaps (Fig. 5),
per-judge Pearson markers with a reference (Fig. 4).  Stamped when any judge is simulated."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.plots.stamp import plt, save_figure, stamp

METHOD_COLORS = {"baseline": "#4C72B0", "label_smoothing": "#8172B3", "uda_untrained": "#937860", "uda": "#DD8452",
                 "uda_ablated": "#55A868"}
#: columns of the score-matrix table that are not answer models
META_COLUMNS = {"method", "judge", "dataset", "config_hash", "pipeline_seed", "judge_ids", "judge_seeds", "simulated", "reason"}


def _color(label: str) -> str:
    for k in ("uda_ablated", "uda_untrained", "uda", "label_smoothing", "baseline"):
        if label.startswith(k):
            return METHOD_COLORS[k]
    return "gray"


def trajectories_figure(traj: pd.DataFrame, path: str, *, title: str, simulated: bool, config_hash: str | None,
                        methods: list[tuple[str, str]], simulated_inputs: str = "") -> None:
    """One panel per method: every judge's Elo trajectory of every model (colour = model)."""
    models = list(dict.fromkeys(traj["model"]))
    cmap = plt.get_cmap("tab10" if len(models) <= 10 else "tab20")
    fig, axes = plt.subplots(1, len(methods), figsize=(5.2 * len(methods), 4.4), sharey=True, squeeze=False)
    for ax, (method, src) in zip(axes[0], methods, strict=True):
        sub = traj[(traj["method"] == method) & (traj["trained_on"] == src)]
        for mi, m in enumerate(models):
            for _, g in sub[sub["model"] == m].groupby("judge", sort=True):
                ax.plot(g["step"], g["score"], color=cmap(mi % cmap.N), lw=0.9, alpha=0.75)
        final = sub[sub["step"] == sub["step"].max()]
        spread = final.groupby("model")["score"].agg(lambda s: s.max() - s.min()).max()
        name = method if not src or method == "baseline" else f"{method} (trained on {src})"
        ax.set_title(f"{name}\nlargest final envelope {spread:.0f} points", fontsize=9)
        ax.set_xlabel("prompts processed")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("Elo score")
    handles = [plt.Line2D([], [], color=cmap(i % cmap.N), label=m) for i, m in enumerate(models)]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(models)), fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.09, 1, 0.96))
    save_figure(fig, path)


def heatmap_figure(matrix: pd.DataFrame, path: str, *, title: str, simulated: bool, config_hash: str | None,
                   reference_name: str | None, simulated_inputs: str = "") -> None:
    """Judge x model score heatmaps per method with a shared colour scale; the reference row below."""
    models = [c for c in matrix.columns if c not in META_COLUMNS]
    labels = [m for m in dict.fromkeys(matrix["method"]) if m != reference_name]
    ref = matrix[matrix["method"] == reference_name] if reference_name else matrix.iloc[0:0]
    vals = matrix[models].to_numpy(dtype=float)
    vmin, vmax = np.nanmin(vals), np.nanmax(vals)
    fig, axes = plt.subplots(1, len(labels), figsize=(0.55 * len(models) * len(labels) + 2, 0.32 * matrix["judge"].nunique() + 2.6),
                             squeeze=False)
    im = None
    for n, (ax, lab) in enumerate(zip(axes[0], labels, strict=True)):
        sub = matrix[matrix["method"] == lab]
        block = pd.concat([sub, ref]) if len(ref) else sub
        im = ax.imshow(block[models].to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax)
        ax.set_xticks(range(len(models)), models, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(block)), block["judge"] if n == 0 else [""] * len(block), fontsize=7)
        if len(ref):
            ax.axhline(len(sub) - 0.5, color="white", lw=2)
        sd = sub[models].std(axis=0, ddof=1).mean()
        ax.set_title(f"{lab}\nmean inter-judge std {sd:.1f}", fontsize=9)
    assert im is not None, "no method to draw"  # labels is never empty
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="Elo score")
    fig.suptitle(title, fontsize=10)
    stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
    save_figure(fig, path)


def pearson_figure(ref_table: pd.DataFrame, path: str, *, title: str, reference_name: str, simulated: bool,
                   config_hash: str | None, simulated_inputs: str = "") -> None:
    """Per-judge Pearson with the reference: one marker per method; consensus as dashed lines."""
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * ref_table["judge"].nunique() + 2), 4.2))
    if ref_table.empty or ref_table["pearson_reference"].isna().all():
        ax.text(0.5, 0.5, "no reference scores for this tournament", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title, fontsize=10)
        stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
        save_figure(fig, path)
        return
    judges = [j for j in dict.fromkeys(ref_table["judge"]) if j != "consensus"]
    x = np.arange(len(judges))
    labels = list(dict.fromkeys(ref_table["method"]))
    offsets = np.linspace(-0.2, 0.2, len(labels)) if len(labels) > 1 else [0.0]
    for off, lab in zip(offsets, labels, strict=True):
        sub = ref_table[ref_table["method"] == lab].set_index("judge")
        transferred = "[from" in lab  # zero-shot transfer: hollow squares
        ax.scatter(x + off, sub.reindex(judges)["pearson_reference"], marker="s" if transferred else "o", s=30,
                   label=lab, zorder=3, facecolors="none" if transferred else _color(lab), edgecolors=_color(lab))
        cons = sub.loc["consensus", "pearson_reference"] if "consensus" in sub.index else np.nan
        if np.isfinite(cons):
            ax.axhline(cons, color=_color(lab), ls="--", lw=1, alpha=0.8)
    ax.set_xticks(x, judges, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"Pearson with {reference_name}")
    ax.set_ylim(min(-0.1, float(np.nanmin(ref_table["pearson_reference"])) - 0.05) if len(ref_table) else -0.1, 1.02)
    ax.axhline(0, color="black", lw=0.6)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, loc="lower left", title="dashed: consensus", title_fontsize=7)
    ax.set_title(title, fontsize=10)
    stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def training_figure(histories: dict[str, pd.DataFrame], path: str, *, title: str, simulated: bool,
                    config_hash: str | None, simulated_inputs: str = "") -> None:
    """Training and validation loss (Eq. 3) per epoch, best checkpoint marked."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    if not histories:
        axes[0].text(0.5, 0.5, "no adapter trained on this tournament", ha="center", va="center",
                     transform=axes[0].transAxes)
    for name, h in histories.items():
        c = _color("uda_ablated" if "ablated" in name else "uda")
        axes[0].plot(h["epoch"], h["train_loss"], color=c, ls="-", label=f"{name} train")
        axes[0].plot(h["epoch"], h["val_loss"], color=c, ls="--", label=f"{name} validation")
        b = h[h["best"]]
        axes[0].scatter(b["epoch"], b["val_loss"], color=c, marker="*", s=80, zorder=3)
        axes[1].plot(h["epoch"], h["val_mean_judge_std"], color=c, label=name)
        if "val_baseline_judge_std" in h:
            axes[1].axhline(float(h["val_baseline_judge_std"].iloc[0]), color="#4C72B0", ls=":", lw=1)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel("loss, Eq. (3)")
    axes[1].set_xlabel("epoch")
    axes[1].set_ylabel("mean inter-judge std (validation)\ndotted: baseline Elo on the same prompts", fontsize=8)
    for ax in axes:
        if histories:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    stamp(fig, simulated=simulated, config_hash=config_hash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    save_figure(fig, path)
