"""Figure of the both-orders study: accuracy per order, and position bias with parse failures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from judgelab.io import any_true
from judgelab.plots.stamp import plt, save_figure, stamp

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: matplotlib settings under which every text is drawn as written: a judge, model or set name holding
#: ``$``, ``^`` or ``_`` is a name, not mathtext (``$x^$`` would otherwise end the figure with a
#: parse error, ``$x$`` be drawn as math)
LITERAL_TEXT: dict[RcKeyType, Any] = {"text.parse_math": False, "text.usetex": False}


def accuracy_figure(summary: pd.DataFrame, path: str, *, simulated_inputs: str = "") -> None:
    """One column per pair set (texts drawn literally: :data:`LITERAL_TEXT`); see :func:`_accuracy_figure`."""
    with plt.rc_context(LITERAL_TEXT):
        _accuracy_figure(summary, path, simulated_inputs)


def _accuracy_figure(summary: pd.DataFrame, path: str, simulated_inputs: str) -> None:
    """One column per pair set.

    Top: bars of acc_AB / acc_BA per judge, Wilson CI on the mean.  Bottom (when the
    summary has the columns): share of parsed verdicts naming the first-shown response
    (Wilson CI; 0.5 = no position preference), with each judge's parse-failure rate and
    share of pairs parsed in both orders written under its bar -- a judge that answers
    "A" to everything, or parses almost nothing, is visible at a glance.
    """
    sets = sorted(summary["dataset"].unique())
    bias = "first_shown_share" in summary
    rows = 2 if bias else 1
    width = max(6, 0.9 * summary["judge"].nunique() + 2) * len(sets) ** 0.5
    fig, axes = plt.subplots(rows, len(sets), figsize=(width, 4.2 * rows), squeeze=False, sharey="row")
    for col, ds in enumerate(sets):
        s = summary[summary["dataset"] == ds].sort_values("judge")
        x = np.arange(len(s))
        ax = axes[0][col]
        ax.bar(x - 0.2, s["acc_AB"], 0.4, label="shown as stored (AB)", color="#4C72B0")
        ax.bar(x + 0.2, s["acc_BA"], 0.4, label="swapped (BA)", color="#DD8452")
        err = np.vstack([s["acc_average"] - s["acc_ci_low"], s["acc_ci_high"] - s["acc_average"]])
        ax.errorbar(x, s["acc_average"], yerr=err, fmt="o", color="black", ms=3, lw=1, label="mean, 95% CI")
        ax.set_xticks(x, s["judge"], rotation=45, ha="right", fontsize=8)
        ax.set_title(ds)
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="gray", lw=0.8, ls=":")
        if bias:
            _bias_panel(axes[1][col], s, x)
    axes[0][0].set_ylabel("accuracy vs gold")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if bias:
        axes[1][0].set_ylabel("share of verdicts for\nthe first-shown response")
    simulated = any_true(summary)
    stamp(fig, simulated=simulated, simulated_inputs=simulated_inputs,
          config_hash=str(summary["config_hash"].iloc[0]) if "config_hash" in summary else None)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)


def _bias_panel(ax, s: pd.DataFrame, x: np.ndarray) -> None:
    share = s["first_shown_share"].to_numpy(dtype=float)
    lo = s["first_shown_ci_low"].to_numpy(dtype=float)
    hi = s["first_shown_ci_high"].to_numpy(dtype=float)
    ax.bar(x, np.nan_to_num(share), 0.6, color="#8172B2")
    ok = np.isfinite(share)
    # Wilson bounds at a share of 0 or 1 sit on it up to rounding: clip the tiny negatives
    yerr = np.clip(np.vstack([share[ok] - lo[ok], hi[ok] - share[ok]]), 0, None)
    ax.errorbar(x[ok], share[ok], yerr=yerr, fmt="none", color="black", lw=1)
    ax.axhline(0.5, color="gray", lw=0.8, ls=":")
    ax.set_ylim(0, 1.15)
    fail = s["parse_failure_rate"].to_numpy(dtype=float) if "parse_failure_rate" in s else np.full(len(s), np.nan)
    both = s["both_parsed_share"].to_numpy(dtype=float) if "both_parsed_share" in s else np.full(len(s), np.nan)
    for xi, f, b in zip(x, fail, both, strict=True):
        ax.text(xi, 1.02, f"fail {f:.0%}\nboth {b:.0%}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x, s["judge"], rotation=45, ha="right", fontsize=8)
