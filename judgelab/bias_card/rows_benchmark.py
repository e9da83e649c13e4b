"""The benchmarks' own metrics as card rows: JudgeBench's pair score (:func:`judgebench_pair_correct`)
and Arena-Hard's two-game score (:func:`arena_hard_pair_scores`, its interval the percentile cluster
bootstrap of :func:`judgelab.stats.clustered.cluster_ratio_ci`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from judgelab.bias_card.metrics import NAN, CardRow, _guard, _not_estimable
from judgelab.bias_card.rows_share import _share_row
from judgelab.stats.clustered import _n_distinct, cluster_ratio_ci

if TYPE_CHECKING:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.prepare import _Log


def judgebench_pair_correct(v_ab: np.ndarray, v_ba: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """JudgeBench's score of a pair from its two games, both verdicts in the stored frame.

    ``compute_final_metrics(..., reverse_order=True)`` in ScalerLab/JudgeBench
    ``utils/metrics.py``: each game's decision adds +1 when it equals the label and -1
    when it equals the flipped label (a tie or a missing decision adds 0); the pair is
    correct when the sum is positive.  So two agreeing decisive verdicts count, a
    decisive verdict plus a tie counts as that verdict, inconsistent verdicts count as
    wrong, and the denominator is every pair, nulls included.
    """
    flip = np.where(gold == "A", "B", np.where(gold == "B", "A", ""))
    counter = ((v_ab == gold).astype(int) + (v_ba == gold) - (v_ab == flip) - (v_ba == flip))
    return counter > 0


#: Arena-Hard's label_to_score weight of a strong verdict (``A>>B``)
ARENA_STRONG_WEIGHT = 3


def arena_hard_pair_scores(v_ab: np.ndarray, v_ba: np.ndarray, strong_ab: np.ndarray, strong_ba: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(score sum, weight) per pair of stored response B against stored A, over both games.

    ``load_judgments`` in lmarena/arena-hard-auto ``show_result.py``: game 1 shows the
    baseline first, game 2 the model first; each game's label becomes battles for the
    model (``A>B`` 1 for A, ``A>>B`` three battles of 1, ``A=B`` 0.5, game 1 taken as
    1 - score), pairs with a null game are dropped, and the score is the mean over all
    battles.  Here stored A plays the baseline: the AB game is game 1, BA is game 2,
    verdicts in the stored frame.
    """
    def score(v: np.ndarray) -> np.ndarray:
        return np.where(v == "B", 1.0, np.where(v == "A", 0.0, np.where(v == "tie", 0.5, NAN)))

    sab, sba = score(np.asarray(v_ab)), score(np.asarray(v_ba))
    wab = np.where(strong_ab, ARENA_STRONG_WEIGHT, 1.0)
    wba = np.where(strong_ba, ARENA_STRONG_WEIGHT, 1.0)
    keep = ~(np.isnan(sab) | np.isnan(sba))
    return np.where(keep, sab * wab + sba * wba, 0.0), np.where(keep, wab + wba, 0.0)


def _benchmark_rows(lg: _Log, ia: np.ndarray, ib: np.ndarray, s: CardSettings) -> list[CardRow]:
    """JudgeBench's and Arena-Hard's pair metrics over the pairs recorded in both orders (rows ia, ib)."""
    if not len(ia):
        return [_not_estimable(m, "no pair was recorded in both orders")
                for m in ("judgebench_accuracy", "arena_hard_score")]
    items = lg.items[ia]
    va, vb = lg.verdict[ia], lg.verdict[ib]
    gold = lg.gold[ia]
    has_gold = (gold == "A") | (gold == "B")
    rows = []
    if not has_gold.any():
        rows.append(_not_estimable("judgebench_accuracy", "no gold in this log"))
    else:
        rows += _guard(("judgebench_accuracy",), lambda: _share_row(
            "judgebench_accuracy", has_gold, judgebench_pair_correct(va, vb, gold), items, s, null=None,
            share_of=len(ia), note="ScalerLab/JudgeBench utils/metrics.py compute_final_metrics"))
    num, den = arena_hard_pair_scores(va, vb, lg.strong[ia], lg.strong[ib])
    kept = den > 0
    if not kept.any():
        rows.append(_not_estimable("arena_hard_score", "no pair with a verdict in both games"))
        return rows
    est, lo, hi, var = cluster_ratio_ci(num[kept], den[kept], items[kept], alpha=s.alpha,
                                         n_resamples=s.n_resamples, seed=s.seed, chunk_cells=s.chunk_cells)
    n_models = _n_distinct(lg.model_b[ia][kept])
    note = ("lmarena/arena-hard-auto show_result.py load_judgments; stored A is the baseline"
            + (f"; pooled over {n_models} models" if n_models > 1 else ""))
    if not math.isfinite(lo):
        reason = "one item: no cluster bootstrap interval"
    elif not hi > lo:
        # every resample gives the same score (e.g. each pair scores 0.5: the judge reversed its verdict with
        # the order, or tied both games): a zero-width interval would claim certainty the data do not give
        reason = f"every pair scores {est:.3g}: the cluster bootstrap interval has zero width"
    else:
        reason = ""
    rows.append(CardRow("arena_hard_score", estimate=est, ci_low=lo, ci_high=hi, se=math.sqrt(var) if var >= 0 else NAN,
                        n=int(kept.sum()), n_items=_n_distinct(items[kept]), share=float(kept.mean()), note=note,
                        reason=reason))
    return rows
