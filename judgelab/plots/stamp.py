"""The "SIMULATED" stamp and atomic figure saving.

A figure made from the simulated panel must never be mistaken for real model
behaviour, whoever crops it: the stamp is a diagonal watermark across the axes
plus a footer, both drawn into the pixels.
"""

from __future__ import annotations

import os

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from judgelab.io import atomic_path

STAMP_TEXT = "SIMULATED JUDGES"


INPUTS_STAMP_TEXT = "SIMULATED INPUTS"


def stamp(fig: Figure, *, simulated: bool, config_hash: str | None = None,
          simulated_inputs: str = "") -> None:
    """Watermark ``fig`` when it shows simulated judges or is built on simulated inputs
    (a simulated gold judge, writer or teacher beside real judges: ``simulated_inputs``, the
    ``key=judge`` pairs a rule script reads from its input tables with
    :func:`judgelab.workflow.simulated_inputs_of` and passes down through the figure
    function); add a provenance footer naming them.  The caller decides both, so a figure's
    stamp depends on its arguments only, never on the process it is drawn in."""
    if not isinstance(simulated, bool | np.bool_):
        # a stamp decided from text ("False" is truthy) or a missing cell would mislabel a real result;
        # callers decide it with judgelab.io.any_true on the typed column
        raise TypeError(f"stamp: simulated must be a bool, got {type(simulated).__name__} {simulated!r}")
    footer = []
    # the decision, kept on the figure for save_figure's metadata (a reader, or a test, can ask a
    # PNG what it was stamped with without reading pixels)
    fig._judgelab_stamp = (  # type: ignore[attr-defined]  # judgelab's own attribute on the figure
        STAMP_TEXT if simulated else INPUTS_STAMP_TEXT if simulated_inputs else "none")
    if simulated:
        fig.text(0.5, 0.5, STAMP_TEXT, fontsize=40, color="red", alpha=0.18, rotation=25,
                 ha="center", va="center", weight="bold", zorder=1000)
        footer.append("Simulated panel: planted biases, not real model behaviour.")
    elif simulated_inputs:
        fig.text(0.5, 0.5, INPUTS_STAMP_TEXT, fontsize=36, color="red", alpha=0.18, rotation=25,
                 ha="center", va="center", weight="bold", zorder=1000)
    if simulated_inputs:
        footer.append(f"Simulated inputs: {simulated_inputs}.")
    if config_hash:
        footer.append(f"config {config_hash}")
    if footer:
        fig.text(0.01, 0.005, "  ".join(footer), fontsize=7, color="dimgray", ha="left", va="bottom")


#: PNG text chunk naming the stamp a figure carries: ``SIMULATED JUDGES``, ``SIMULATED INPUTS``,
#: ``none`` (stamp decided: not simulated) or absent (the figure was never passed to :func:`stamp`).
STAMP_METADATA_KEY = "judgelab-stamp"


def figure_stamp(path: str | os.PathLike[str]) -> str | None:
    """The stamp recorded in a PNG written by :func:`save_figure` (None: no stamp decision)."""
    from PIL import Image

    with Image.open(path) as im:
        return (getattr(im, "text", None) or im.info).get(STAMP_METADATA_KEY)


def save_figure(fig: Figure, path: str | os.PathLike[str], *, dpi: int = 150) -> None:
    """Save atomically (the rule never leaves a half-written image); a PNG records its stamp
    (:data:`STAMP_METADATA_KEY`)."""
    fmt = os.path.splitext(str(path))[1].lstrip(".") or "png"
    meta = None
    if fmt == "png":
        meta = {"Software": None}
        if getattr(fig, "_judgelab_stamp", None):
            meta[STAMP_METADATA_KEY] = fig._judgelab_stamp  # type: ignore[attr-defined]
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=fmt, bbox_inches="tight", metadata=meta)
    plt.close(fig)
