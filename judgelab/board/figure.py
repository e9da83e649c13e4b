"""The leaderboard figure: raw win rate against each correction, one panel per correction."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from judgelab.board.table import CORRECTIONS
from judgelab.plots.stamp import stamp


def leaderboard_figure(table: pd.DataFrame, path: str | Path, *, title: str, simulated: bool) -> None:
    """Raw win rate (x, with its interval) against each corrected score (y, with its interval);
    the diagonal is "no change".  Written to ``path`` as is (the caller stages the folder).

    Model names and the title are drawn literally (``parse_math=False``): a name is data, and
    matplotlib would otherwise read a ``$`` in it as the start of mathtext and fail the whole
    figure on a name such as ``x$^$y``."""
    fig, axes = plt.subplots(1, len(CORRECTIONS), figsize=(5 * len(CORRECTIONS), 4.8), squeeze=False)
    x = table["win_rate"].to_numpy(float)
    xerr = np.abs(np.vstack([x - table["win_rate_ci_low"].to_numpy(float),
                             table["win_rate_ci_high"].to_numpy(float) - x]))
    label = len(table) <= 12
    for ax, (col, lo, hi, name) in zip(axes[0], CORRECTIONS, strict=False):
        y = table[col].to_numpy(float)
        ok = np.isfinite(y) & np.isfinite(x)
        yerr = np.abs(np.vstack([y - table[lo].to_numpy(float), table[hi].to_numpy(float) - y]))
        ax.plot([0, 100], [0, 100], color="grey", lw=0.8, ls="--", zorder=0)
        if ok.any():
            ax.errorbar(x[ok], y[ok], xerr=np.nan_to_num(xerr[:, ok]), yerr=np.nan_to_num(yerr[:, ok]), fmt="o",
                        ms=4, lw=0.8, capsize=2)
            if label:
                for xi, yi, m in zip(x[ok], y[ok], table["model"].to_numpy()[ok], strict=False):
                    ax.annotate(str(m), (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points",
                                parse_math=False)
        else:
            ax.text(50, 50, "not estimable", ha="center", va="center", color="dimgray")
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.set_xlabel("raw win rate (%)")
        ax.set_ylabel(f"{name} (%)")
        ax.set_title(name, fontsize=10)
    fig.suptitle(title, parse_math=False)
    stamp(fig, simulated=simulated)
    fig.savefig(path, dpi=130, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
