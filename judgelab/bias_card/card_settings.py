"""The bias card's settings (:class:`CardSettings`), declared once with
:func:`judgelab.bias_card.settings.setting`: the ``judgelab audit`` options, the
``audit_logs.settings`` config keys and the schema fragment all derive from these fields."""

from __future__ import annotations

from dataclasses import dataclass

from judgelab.bias_card.prepare import VIEWS
from judgelab.bias_card.settings import check as check_settings
from judgelab.bias_card.settings import setting
from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.stats.multiplicity import MULTIPLICITY


@dataclass(frozen=True)
class CardSettings:
    """Every setting of the card, declared once (judgelab.bias_card.settings): the
    ``judgelab audit`` options and the ``audit_logs.settings`` config keys derive from these
    fields, and a value out of range is refused here, naming the setting."""

    length_margin: float = setting(0.2, "length preference counts pairs whose word counts differ by a factor "
                                   ">= 1 + margin", minimum=0)
    markdown_margin: float = setting(0.25, "markdown preference counts pairs whose markdown scores (0..1) differ "
                                     "by >= this", minimum=0, maximum=1)
    n_resamples: int = setting(1000, "cluster-bootstrap resamples (fewer than 20 give no interval beyond the "
                               "extremes)", key="resamples", minimum=20)
    alpha: float = setting(DEFAULT_ALPHA, "significance level of every test; every confidence interval is at level "
                           "1 - alpha", exclusive_minimum=0, exclusive_maximum=1)
    power: float = setting(0.8, "power of the minimum detectable effects", exclusive_minimum=0,
                           exclusive_maximum=1)
    seed: int = setting(0, "seed of the cluster bootstrap", minimum=0)
    min_decisive: int = setting(10, "tested rows with fewer decisive verdicts (discordant pairs for the order "
                                "gap) are 'not estimable'", minimum=1)
    parse_failure_alert: float = setting(0.2, "the card's headline leads with parse failures above this share "
                                         "of calls", minimum=0, maximum=1)
    max_logit_se: float = setting(10.0, "a logistic coefficient with a larger cluster-robust SE is treated as "
                                  "(quasi-)separated", exclusive_minimum=0)
    chunk_cells: int = setting(2_000_000, "largest resamples x items block one bootstrap chunk draws (bounds "
                               "memory)", minimum=1)
    views: tuple[str, ...] = setting(VIEWS, "lenient: ok + fallback verdicts; strict: ok only, the authors' "
                                     "extraction", choices=VIEWS)
    multiplicity: str = setting("holm", "correction of each judge's and view's family of tested rows: holm "
                                "(family-wise error), bh (false discovery rate, Benjamini-Hochberg) or none; a "
                                "row's status is decided on its adjusted p-value", choices=MULTIPLICITY)
    min_labels_per_side: int = setting(5, "PPI rows with fewer human labels for stored A, or for stored B, are "
                                       "'underpowered'", key="min_labels_per_side", minimum=1)
    controlled_pairs: bool = setting(False, "the log's pairs were built to differ only in the cue (length, "
                                     "markdown, source family), a design no log format records: it identifies "
                                     "the cue rows without gold")

    def __post_init__(self) -> None:
        check_settings(self)

    @property
    def confidence(self) -> float:
        """The CI level, 1 - alpha: a row is detected when its test rejects at alpha *and* its CI
        excludes the null, so the two must be at one level for a larger alpha never to detect less
        (a fixed 95 % CI made alpha 0.2 detect exactly what 0.05 did)."""
        return 1.0 - self.alpha
