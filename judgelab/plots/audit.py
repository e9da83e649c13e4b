"""Figure of the judge audit: accuracy per judge and presentation order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.plots.stamp import plt, save_figure, stamp


def accuracy_figure(summary: pd.DataFrame, path: str) -> None:
    """One panel per pair set: bars of acc_AB / acc_BA per judge, Wilson CI on the mean."""
    sets = sorted(summary["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(max(6, 0.9 * summary["judge"].nunique() + 2) * len(sets) ** 0.5, 4.2),
                             squeeze=False, sharey=True)
    for ax, ds in zip(axes[0], sets, strict=True):
        s = summary[summary["dataset"] == ds].sort_values("judge")
        x = np.arange(len(s))
        ax.bar(x - 0.2, s["acc_AB"], 0.4, label="shown as stored (AB)", color="#4C72B0")
        ax.bar(x + 0.2, s["acc_BA"], 0.4, label="swapped (BA)", color="#DD8452")
        err = np.vstack([s["acc_average"] - s["acc_ci_low"], s["acc_ci_high"] - s["acc_average"]])
        ax.errorbar(x, s["acc_average"], yerr=err, fmt="o", color="black", ms=3, lw=1, label="mean, 95% CI")
        ax.set_xticks(x, s["judge"], rotation=45, ha="right", fontsize=8)
        ax.set_title(ds)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="gray", lw=0.8, ls=":")
    axes[0][0].set_ylabel("accuracy vs gold")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    simulated = bool(summary["simulated"].astype(bool).any())
    stamp(fig, simulated=simulated, config_hash=str(summary["config_hash"].iloc[0]) if "config_hash" in summary else None)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)
