"""Figures of the scoring study (paper 004): Figure 5 (rho vs reference score) and Figure 6
(score-distribution heatmaps).  Both are stamped when any judge is simulated."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgelab.io import any_true
from judgelab.plots.stamp import plt, save_figure, stamp
from judgelab.scoring.metrics import SCORES
from judgelab.scoring.prompt import VARIANTS

_REF_X = [("baseline", "None"), ("ref1", "1"), ("ref2", "2"), ("ref3", "3"), ("ref4", "4"), ("ref5", "5")]
_ROW_ORDER = ("baseline", "descending", "random", "letter", "roman", "ref1", "ref2", "ref3", "ref4", "ref5")


def _first_gold(sources: Sequence[str], gold_order: Sequence[str]) -> str | None:
    present = set(sources)
    return next((g for g in gold_order if g in present), None)


def _provenance(df: pd.DataFrame) -> tuple[bool, str | None]:
    simulated = any_true(df)
    return simulated, str(df["config_hash"].iloc[0]) if "config_hash" in df and len(df) else None


def reference_rho_figure(table3: pd.DataFrame, path: str, *, gold_order: Sequence[str],
                         simulated_inputs: str = "") -> None:
    """Figure 5: Spearman's rho of each judge against gold with no reference and with a
    reference answer scored 1..5; one panel per data set (gold: the first of ``gold_order``
    it has), 95% bootstrap intervals as bands."""
    sets = sorted(table3["dataset"].unique())
    n = max(1, len(sets))
    ncol = min(2, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.6 * ncol, 3.8 * nrow), squeeze=False, sharey=True)
    xs = np.arange(len(_REF_X))
    for ax, ds in zip(axes.flat, sets, strict=False):
        t = table3[table3["dataset"] == ds]
        src = _first_gold(t["gold_source"].unique(), gold_order)
        t = t[t["gold_source"] == src]
        for judge, g in t.groupby("judge", sort=True):
            g = g.set_index("variant")
            y = np.array([g["rho"].get(v, np.nan) for v, _ in _REF_X], float)
            lo = np.array([g["rho_ci_low"].get(v, np.nan) for v, _ in _REF_X], float)
            hi = np.array([g["rho_ci_high"].get(v, np.nan) for v, _ in _REF_X], float)
            (line,) = ax.plot(xs, y, marker="o", ms=4, lw=1.4, label=judge)
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.08, lw=0)
        ax.set_xticks(xs, [lab for _, lab in _REF_X])
        ax.set_xlabel("score of the reference answer in the prompt")
        ax.set_title(f"{ds} (gold: {src})", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(sets):]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel("Spearman's rho vs gold")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(4, max(1, len(labels))), fontsize=8,
               bbox_to_anchor=(0.5, 1.0))
    simulated, chash = _provenance(table3)
    stamp(fig, simulated=simulated, config_hash=chash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.03, 1, 0.93))
    save_figure(fig, path)


def distribution_heatmaps(dist: pd.DataFrame, path: str, *, dataset: str, gold_order: Sequence[str],
                          simulated_inputs: str = "") -> None:
    """Figure 6: per judge, a heatmap of score counts N_k (columns -1, 1..5; -1 = failed
    judgment) for the gold scores (top row) and every prompt variant."""
    d = dist[dist["dataset"] == dataset]
    gold_rows = d[d["judge"].str.startswith("[gold:")]
    src = _first_gold([j[6:-1] for j in gold_rows["judge"].unique()], gold_order)
    judges = sorted(j for j in d["judge"].unique() if not j.startswith("[gold:"))
    ncol = min(3, max(1, len(judges)))
    nrow = max(1, int(np.ceil(len(judges) / ncol)))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 4.0 * nrow), squeeze=False)
    for ax, judge in zip(axes.flat, judges, strict=False):
        jd = d[d["judge"] == judge]
        variants = sorted(jd["variant"].unique(), key=lambda v: (_ROW_ORDER.index(v) if v in _ROW_ORDER else 99, v))
        rows, labels = [], []
        if src is not None:
            gd = gold_rows[gold_rows["judge"] == f"[gold:{src}]"].set_index("score")["count"]
            rows.append([int(gd.get(k, 0)) for k in SCORES])
            labels.append(f"Gold ({src})")
        for v in variants:
            vd = jd[jd["variant"] == v].set_index("score")["count"]
            rows.append([int(vd.get(k, 0)) for k in SCORES])
            labels.append(VARIANTS.get(v).label if v in VARIANTS else v)
        m = np.array(rows, float)
        ax.imshow(m, cmap="Blues", aspect="auto", vmin=0)
        for (i, j), val in np.ndenumerate(m):
            ax.text(j, i, f"{int(val)}", ha="center", va="center", fontsize=7,
                    color="white" if val > 0.6 * m.max() else "black")
        ax.set_xticks(range(len(SCORES)), [str(k) for k in SCORES])
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_title(judge, fontsize=9)
        ax.set_xlabel("assigned score (-1 = failed)", fontsize=8)
    for ax in axes.flat[len(judges):]:
        ax.axis("off")
    fig.suptitle(f"Score distributions under prompt perturbations: {dataset}", fontsize=11)
    simulated, chash = _provenance(d)
    stamp(fig, simulated=simulated, config_hash=chash, simulated_inputs=simulated_inputs)
    fig.tight_layout(rect=(0, 0.03, 1, 0.96))
    save_figure(fig, path)
