"""The card's rows of the human anchor (agreement with human labels, PPI++ where only some pairs carry
one) and of repetition consistency; the statistics live in :mod:`judgelab.bias_card.humans` and
:mod:`judgelab.bias_card.reliability`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import norm

from judgelab.bias_card.codes import is_any
from judgelab.bias_card.metrics import CardRow, _not_estimable
from judgelab.bias_card.rows_share import _share_row
from judgelab.stats.clustered import _n_distinct

if TYPE_CHECKING:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.prepare import _Log


def _human_rows(t: pd.DataFrame, lg: _Log, s: CardSettings) -> list[CardRow]:
    """Agreement with the human labels, and PPI++ where only some pairs carry one."""
    from judgelab.bias_card.humans import LABELS, PPI_METRICS, human_labels, kappa_of_codes, ppi_rows

    human, source = human_labels(t)
    if not source:
        return [_not_estimable(m, "no human labels in this log") for m in ("human_accuracy", "human_kappa",
                                                                               *PPI_METRICS)]
    lab = human != ""
    rows = [_share_row("human_accuracy", lab, lg.verdict == human, lg.items, s, null=None, share_of=len(human),
                       note=source)]
    both = lab & is_any(lg.verdict, LABELS)
    # both raters' labels are LABELS here: coded by comparison (sorted: A < B < tie), one byte a row
    code_v, code_h = ((x[both] == "B").astype(np.int8) + 2 * (x[both] == "tie").astype(np.int8)
                      for x in (lg.verdict, human))
    kap, se, lo, hi, reason = kappa_of_codes(code_v, code_h, list(LABELS), alpha=s.alpha)
    code_v = code_h = None
    rows.append(CardRow("human_kappa", estimate=kap, ci_low=lo, ci_high=hi, se=se, n=int(both.sum()),
                        n_items=_n_distinct(lg.items[both]), share=float(both.sum() / lab.sum()), reason=reason,
                        note=f"{source}; statsmodels cohens_kappa, asymptotic CI"))
    for metric, r, note in ppi_rows(lg.pairs, lg.verdict, human, alpha=s.alpha):
        n_a, n_b = r.labels_per_side
        few = (f"{n_a} human label(s) for stored A and {n_b} for stored B: fewer than {s.min_labels_per_side} "
               "per side" if min(n_a, n_b) < s.min_labels_per_side else "")
        rows.append(CardRow(metric, estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                            se=(r.ci_high - r.ci_low) / (2 * norm.ppf(0.5 + s.confidence / 2)),
                            n=r.n_labelled + r.n_unlabelled, n_items=r.n_labelled,
                            share=r.n_labelled / max(1, r.n_labelled + r.n_unlabelled), reason=r.reason,
                            note=f"{note}; {source}", underpowered_reason=few))
    return rows


def _repetition_row(lg: _Log, s: CardSettings, n_instances: int | None = None) -> CardRow:
    """Repetition consistency; ``n_instances`` (the distinct pair x order instances, when known) equal to
    the rows says at once that no call was repeated."""
    from judgelab.bias_card.reliability import instance_codes, repetition_instances

    if n_instances is not None and n_instances == len(lg.pairs):
        return _not_estimable("repetition_consistency", "no call repeated in this log")

    first, cons, n_rep = repetition_instances(lg.pairs, lg.order, lg.verdict)
    if n_rep == 0:
        return _not_estimable("repetition_consistency", "no call repeated in this log")
    n_inst = instance_codes(lg.pairs, lg.order)[1]
    return _share_row("repetition_consistency", np.ones(n_rep, bool), cons, lg.items[first], s, null=None,
                      share_of=n_inst, note="Position-Bias-Analyzer repetitional consistency: each pair x order "
                                            "an instance")
