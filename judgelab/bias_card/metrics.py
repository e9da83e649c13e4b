"""What a bias card is made of: its metrics (:data:`METRICS`, each with its scale, threshold and kind),
its columns and statuses, and the record of one metric's row before its status is decided
(:class:`CardRow`), with the two ways a row builder gives rows that could not be computed
(:func:`_not_estimable`, :func:`_guard`).  Every row builder (``rows_*.py``) and the card itself
(:mod:`judgelab.bias_card.card`) import these; this module imports nothing of the card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

STATUSES = ("detected", "not detected", "underpowered", "not estimable", "not identified", "descriptive")

CARD_COLUMNS = ["judge", "family", "view", "metric", "status", "estimate", "ci_low", "ci_high", "se", "null_value",
                "n", "n_items", "share", "n_parsed", "parsed_share", "test", "statistic", "p_value", "p_adjusted",
                "test_family", "mde", "underpowered", "estimable", "identified", "reason", "note", "simulated"]

NAN = float("nan")


@dataclass(frozen=True)
class Metric:
    """A card metric: its scale, the effect size below which a miss is acceptable, and its kind.

    ``kind`` decides where the row may appear: only ``bias`` rows reach the card's
    "Biases detected" headline; ``accuracy`` rows are tested against chance; ``conditional``
    rows (the share of a judge's errors that go to a cue's side) are tested and in the
    multiplicity family, but a second reading of their bias row, not a headline of their own;
    ``rate`` and ``benchmark`` rows are descriptive.
    """

    scale: str
    threshold: float
    description: str
    kind: str


METRICS: dict[str, Metric] = {
    "accuracy_AB": Metric("proportion", 0.10, "accuracy vs gold, shown in the stored order (binomial vs 0.5)",
                          "accuracy"),
    "accuracy_BA": Metric("proportion", 0.10, "accuracy vs gold, shown swapped", "accuracy"),
    "accuracy_average": Metric("proportion", 0.10, "accuracy vs gold over both orders", "accuracy"),
    "correct_both": Metric("proportion", 0.10, "share of pairs correct in both orders", "rate"),
    "judgebench_accuracy": Metric("proportion", 0.10, "JudgeBench pair score: the two games' decisive verdicts "
                                  "vote, a tie defers, inconsistent pairs count wrong", "benchmark"),
    "arena_hard_score": Metric("proportion", 0.10, "Arena-Hard score of stored B vs stored A: both games, strong "
                               "verdicts (>>) weighted 3", "benchmark"),
    "accuracy_order_gap": Metric("difference", 0.10, "accuracy swapped minus stored (McNemar clustered by item)",
                                 "bias"),
    "positional_agreement": Metric("proportion", 0.10, "same verdict in both orders, pairs with a verdict in both",
                                   "rate"),
    "positional_agreement_all": Metric("proportion", 0.10, "LLMBar 'equal': same verdict (or none) in both orders",
                                       "rate"),
    "position_preference": Metric("b", 0.20, "b = P(picks slot shown first) - P(picks slot shown second), parsed "
                                  "verdicts", "bias"),
    "length_preference": Metric("proportion", 0.10, "with gold: P(picks the longer) minus gold's own share on the "
                                "same decisive verdicts (length ratio >= 1+margin), tested against what errors blind "
                                "to length give; without gold: P(picks the longer) against 0.5", "bias"),
    "length_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick the longer, "
                                 "against the share of eligible pairs where an error would", "conditional"),
    "length_share_raw": Metric("proportion", 0.10, "P(picks the longer) among decisive verdicts, raw (mixes the cue "
                               "with gold's own balance)", "rate"),
    "length_controlled": Metric("log_odds", 0.50, "log-odds per doubling of length, controlling position, markdown, "
                                "gold", "bias"),
    "markdown_preference": Metric("proportion", 0.10, "with gold: P(picks the more formatted) minus gold's own "
                                  "share, tested against markdown-blind errors; without gold: against 0.5", "bias"),
    "markdown_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick the more "
                                   "formatted, against the share of eligible pairs where an error would",
                                   "conditional"),
    "markdown_share_raw": Metric("proportion", 0.10, "P(picks the more formatted) among decisive verdicts, raw",
                                 "rate"),
    "markdown_controlled": Metric("log_odds", 0.50, "log-odds per unit markdown score, controlling position, "
                                  "length, gold", "bias"),
    "self_preference": Metric("proportion", 0.10, "with gold: P(picks the judge's own family) minus gold's own "
                              "share where exactly one response is, tested against family-blind errors; without "
                              "gold: against 0.5", "bias"),
    "self_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick its own "
                               "family, against the share of eligible pairs where an error would", "conditional"),
    "self_share_raw": Metric("proportion", 0.10, "P(picks the judge's own family) where exactly one response is, raw",
                             "rate"),
    "tie_rate": Metric("proportion", 0.10, "share of tie verdicts", "rate"),
    "parse_failures": Metric("proportion", 0.10, "share of calls without a verdict (unparsed, refusal, error; "
                             "strict view: fallback too)", "rate"),
    # human anchor and reliability (judgelab.bias_card.humans / .reliability): descriptive rows
    "human_accuracy": Metric("proportion", 0.10, "verdict equals the human label (a missing verdict disagrees)",
                             "rate"),
    "human_kappa": Metric("kappa", 0.10, "Cohen's kappa, judge vs human label (A/B/tie)", "rate"),
    "ppi_win_rate": Metric("proportion", 0.05, "PPI++ human P(stored B preferred), from the labelled pairs and "
                           "the judge on all", "rate"),
    "ppi_share_A": Metric("proportion", 0.05, "PPI++ share of pairs humans give to stored A", "rate"),
    "ppi_share_B": Metric("proportion", 0.05, "PPI++ share of pairs humans give to stored B", "rate"),
    "ppi_share_tie": Metric("proportion", 0.05, "PPI++ share of pairs humans call a tie", "rate"),
    "repetition_consistency": Metric("proportion", 0.10, "mean share of an instance's repetitions giving its most "
                                     "frequent verdict (Position-Bias-Analyzer)", "rate"),
    "judges_kappa": Metric("kappa", 0.10, "agreement between judges: Cohen's (2) / Fleiss' (3+) kappa", "rate"),
}

#: metrics of the whole table (judge ``all judges``), not of one judge's card
PANEL_METRICS = ("judges_kappa",)
#: the metrics of one judge's card (every one of them has a row in :func:`judgelab.bias_card.card.judge_card`)
JUDGE_METRICS = tuple(m for m in METRICS if m not in PANEL_METRICS)


@dataclass
class CardRow:
    """One metric of one judge and view, before its status is decided (:func:`judgelab.bias_card.card._finish`)."""

    metric: str
    estimate: float = NAN
    ci_low: float = NAN
    ci_high: float = NAN
    se: float = NAN
    null_value: float = NAN
    n: int = 0
    n_items: int = 0
    share: float = NAN
    test: str = "none"
    statistic: float = NAN
    p_value: float = NAN
    mde: float = NAN
    reason: str = ""
    note: str = ""
    identified: bool = True
    #: why an estimable row rests on too little data to be read (e.g. too few human labels): its status
    #: is then ``underpowered`` whatever its test says
    underpowered_reason: str = ""


def _not_estimable(metric: str, reason: str, *, test: str = "none", null: float = NAN, **kw) -> CardRow:
    return CardRow(metric, reason=reason, test=test, null_value=null, **kw)


def _guard(metrics: tuple[str, ...], fn: Callable[[], list[CardRow] | CardRow]) -> list[CardRow]:
    """Run one statistic; an exception becomes not-estimable rows that name it, never the end of the card."""
    try:
        out = fn()
        return out if isinstance(out, list) else [out]
    except Exception as exc:  # any failure of one statistic must leave the rest of the card
        return [CardRow(m, reason=f"failed: {type(exc).__name__}: {exc}") for m in metrics]
