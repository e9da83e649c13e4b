"""What a leaderboard is computed with (:class:`BoardSettings`), apart from the computation.

``judgelab leaderboard`` builds its parser from these declarations on every start, ``--help``
included; :mod:`judgelab.board.table` loads the corrections' libraries (scipy, scikit-learn),
which a parser never needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from judgelab.bias_card.settings import check as check_settings
from judgelab.bias_card.settings import setting
from judgelab.stats.intervals import DEFAULT_ALPHA

if TYPE_CHECKING:  # length_controlled imports scikit-learn
    from judgelab.board.length_controlled import Gamed

#: the corrections ``--corrections`` may name (all by default)
CORRECTION_NAMES = ("lc", "style", "bias_aware")


@dataclass
class BoardSettings:
    """What a leaderboard is computed with.  Its statistic options are declared once, with the
    bias card's helper (:func:`judgelab.bias_card.settings.setting`): ``judgelab leaderboard``'s
    ``--alpha``, ``--resamples`` and ``--seed`` (:func:`judgelab.bias_card.settings.add_arguments`),
    their defaults, ranges and help derive from these fields, and a value out of range is refused
    here, naming the option.  The other fields come from files and ``--corrections``."""

    alpha: float = setting(DEFAULT_ALPHA, "significance level; every interval is at level 1 - alpha",
                           exclusive_minimum=0, exclusive_maximum=1)
    style_rounds: int = setting(100, "bootstrap rounds of the style control (show_result.py's default)",
                                key="resamples", minimum=1)
    seed: int = setting(0, "seed of the style control's bootstrap", minimum=0)
    gamed: Gamed | None = None
    style_reference: dict | None = None
    lc_weights: pd.DataFrame | None = None
    corrections: tuple[str, ...] = CORRECTION_NAMES
    #: GiB the bias-aware fit may plan for (None: ``$JUDGELAB_MEMORY_GIB``, else the machine's memory)
    memory_gib: float | None = None

    def __post_init__(self) -> None:
        check_settings(self, "leaderboard setting")
