"""The leaderboard figure: raw win rate against each correction, one panel per correction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

from judgelab.board.table import CORRECTIONS
from judgelab.plots.stamp import stamp

#: at most this many models are named beside their points; a larger board is drawn unlabelled
#: (its names are in the page's tables)
MAX_LABELS = 12
#: half the side of the square around each marker that no other label may cover, in pixels
POINT_RADIUS_PX = 4.0
#: where a label may sit relative to its point, in points (x, y offset; horizontal alignment), tried in order
LABEL_OFFSETS: tuple[tuple[float, float, str], ...] = (
    (3, 3, "left"), (3, -9, "left"), (-3, 3, "right"), (-3, -9, "right"),
    (3, 11, "left"), (3, -17, "left"), (-3, 11, "right"), (-3, -17, "right"),
    (3, 19, "left"), (3, -25, "left"), (-3, 19, "right"), (-3, -25, "right"))


def place_labels(ax: Axes, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], *,
                 fontsize: float = 7) -> tuple[list[Annotation], list[str]]:
    """Name each point without two names overlapping: returns the labels drawn and the names dropped.

    A simple greedy label-repel, by hand because matplotlib has none and the one package that does
    (adjustText) moves labels iteratively and not deterministically enough for a test: points are
    taken from the highest to the lowest, and each label tries the offsets of
    :data:`LABEL_OFFSETS` (beside, below, to the left, then further away) until its box overlaps no
    label placed before it and no other point (a few pixels around each marker) and stays inside
    the panel; a label with no free place is dropped (the
    model stays a point; its name is in the page's tables).  Boxes are measured by the renderer at
    the figure's final size, so call it after the axis limits are set.
    """
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]  # the Agg canvas this module selects
    inside = ax.get_window_extent(renderer)
    points = ax.transData.transform(np.column_stack([xs, ys])) if len(texts) else np.empty((0, 2))
    r = POINT_RADIUS_PX
    placed: list[Annotation] = []
    boxes: list[Bbox] = []
    dropped: list[str] = []
    for i in sorted(range(len(texts)), key=lambda k: (-ys[k], xs[k])):
        others = np.delete(points, i, axis=0)
        for dx, dy, ha in LABEL_OFFSETS:
            a = ax.annotate(str(texts[i]), (xs[i], ys[i]), fontsize=fontsize, xytext=(dx, dy),
                            textcoords="offset points", ha=ha, parse_math=False)
            box = a.get_window_extent(renderer)
            fits = (box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 and box.y1 <= inside.y1)
            on_point = bool(((others[:, 0] + r > box.x0) & (others[:, 0] - r < box.x1)
                             & (others[:, 1] + r > box.y0) & (others[:, 1] - r < box.y1)).any())
            if fits and not on_point and not any(box.overlaps(b) for b in boxes):
                placed.append(a)
                boxes.append(box)
                break
            a.remove()
        else:
            dropped.append(str(texts[i]))
    return placed, dropped


def _raw_panel(ax: Axes, table: pd.DataFrame, labels: np.ndarray) -> None:
    """Raw win rate per model with its interval: the one panel when no correction has a number."""
    t = table.assign(label=labels)[np.isfinite(table["win_rate"].to_numpy(float))].sort_values("win_rate")
    y = np.arange(len(t))
    x = t["win_rate"].to_numpy(float)
    err = np.abs(np.vstack([x - t["win_rate_ci_low"].to_numpy(float), t["win_rate_ci_high"].to_numpy(float) - x]))
    ax.errorbar(x, y, xerr=np.nan_to_num(err), fmt="o", ms=4, lw=0.8, capsize=2)
    ax.set_yticks(y, [str(v) for v in t["label"]] if len(t) <= MAX_LABELS else [], fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("raw win rate (%)")
    ax.set_title("raw win rate (no correction has a number)", fontsize=10)


def leaderboard_figure(table: pd.DataFrame, path: str | Path, *, title: str, simulated: bool,
                       names: Mapping[str, str] | None = None) -> None:
    """Raw win rate (x, with its interval) against each corrected score (y, with its interval);
    the diagonal is "no change".  Written to ``path`` as is (the caller stages the folder).

    Only the corrections with a number for at least one model get a panel (an empty box says
    nothing the page's table does not); when none has one, the figure is one panel of the raw win
    rates.  Up to :data:`MAX_LABELS` models are named by :func:`place_labels` (``names``: display
    names), so two names never overlap.  Model names and the title are drawn literally
    (``parse_math=False``): a name is data, and matplotlib would otherwise read a ``$`` in it as
    the start of mathtext and fail the whole figure on a name such as ``x$^$y``."""
    names = names or {}
    x = table["win_rate"].to_numpy(float)
    drawn = [c for c in CORRECTIONS if (np.isfinite(table[c[0]].to_numpy(float)) & np.isfinite(x)).any()]
    labels = np.array([names.get(str(m), str(m)) for m in table["model"]], dtype=object)
    fig, axes = plt.subplots(1, max(len(drawn), 1), figsize=(5 * max(len(drawn), 1), 4.8), squeeze=False)
    if not drawn:
        _raw_panel(axes[0][0], table, labels)
    xerr = np.abs(np.vstack([x - table["win_rate_ci_low"].to_numpy(float),
                             table["win_rate_ci_high"].to_numpy(float) - x]))
    label = len(table) <= MAX_LABELS
    for ax, (col, lo, hi, name) in zip(axes[0], drawn, strict=False):
        y = table[col].to_numpy(float)
        ok = np.isfinite(y) & np.isfinite(x)
        yerr = np.abs(np.vstack([y - table[lo].to_numpy(float), table[hi].to_numpy(float) - y]))
        ax.plot([0, 100], [0, 100], color="grey", lw=0.8, ls="--", zorder=0)
        ax.errorbar(x[ok], y[ok], xerr=np.nan_to_num(xerr[:, ok]), yerr=np.nan_to_num(yerr[:, ok]), fmt="o",
                    ms=4, lw=0.8, capsize=2)
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.set_xlabel("raw win rate (%)")
        ax.set_ylabel(f"{name} (%)")
        ax.set_title(name, fontsize=10)
    fig.suptitle(title, parse_math=False)
    stamp(fig, simulated=simulated)
    if label:
        for ax, (col, _, _, _) in zip(axes[0], drawn, strict=False):
            y = table[col].to_numpy(float)
            ok = np.isfinite(y) & np.isfinite(x)
            place_labels(ax, x[ok], y[ok], labels[ok])
    fig.savefig(path, dpi=130, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
