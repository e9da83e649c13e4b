"""The card's rows of a share (:func:`_share_row`: accuracies, agreement, rates and every other share
with its item-clustered Wilson interval and design-effect binomial test), of the position preference
(:func:`_position_row`) and of the order gap (:func:`_order_gap_row`).  The statistics are those of
:mod:`judgelab.stats.clustered`, :mod:`judgelab.stats.intervals` and :mod:`judgelab.stats.mcnemar`,
called with the settings' numbers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import binomtest, chi2, norm
from scipy.stats import t as student_t

from judgelab.bias_card.metrics import NAN, CardRow
from judgelab.stats.clustered import DEFF_FLOOR, _cluster_codes, _share_stats, binomial_mde
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.mcnemar import mcnemar_mde

if TYPE_CHECKING:
    from judgelab.bias_card.card_settings import CardSettings


def _share_row(metric: str, mask: np.ndarray, success: np.ndarray, items: np.ndarray, s: CardSettings, *,
               null: float | None, share_of: int, note: str = "", identified: bool = True) -> CardRow:
    """A share with its clustered Wilson CI; with ``null``, the design-effect adjusted binomial test."""
    mask = np.asarray(mask, dtype=bool)
    n = int(mask.sum())
    row = CardRow(metric, null_value=NAN if null is None else null, test="none" if null is None else "binomial",
                  share=n / share_of if share_of else NAN, note=note, identified=identified)
    if n == 0:
        row.reason = "no eligible verdicts"
        return row
    y = np.asarray(success)[mask].astype(float)  # the masked rows only: no float copy of every row
    est, _, n_eff, k = _share_stats(y, items[mask], 1.0 if null is None else DEFF_FLOOR)
    lo, hi = wilson_interval(est * n_eff, n_eff, alpha=s.alpha, clusters=k)
    row.estimate, row.ci_low, row.ci_high, row.n, row.n_items = est, lo, hi, n, k
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    if null is None:
        row.se = (hi - lo) / (2 * z)
        return row
    n_int = max(1, round(n_eff))
    succ = round(est * n_int)
    row.statistic = float(succ)
    row.p_value = float(binomtest(succ, n_int, null).pvalue)
    row.se = math.sqrt(null * (1 - null) / n_eff)
    row.mde = binomial_mde(n_int, null, s.alpha, s.power)
    if n < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} verdicts to test ({n})"
    return row


def _position_row(shown: np.ndarray, parsed: np.ndarray, items: np.ndarray, s: CardSettings, *, one_order: bool,
                  has_gold: bool = True) -> CardRow:
    """Paper 003's b over parsed verdicts, Wilson CI of (b + 1) / 2 on the effective n, score test.

    (b + 1) / 2 is the mean of a [0, 1] score (first 1, tie 0.5, second 0); p(1 - p)
    bounds the variance of any [0, 1] variable with mean p, so Wilson's interval on the
    effective n is conservative with ties and never collapses at b = +-1.  The score test
    (t on items - 1 df, like the interval) is the one Wilson's interval inverts, so the CI
    excludes 0 exactly when p < 1 - confidence.
    """
    # the note names what the log has: with gold, the slot shown first may simply be gold's more often;
    # without, the better answer's (answer quality, which no column of this log records)
    mixed = "gold" if has_gold else "answer quality (which response is better)"
    note = f"only one presentation order recorded: b mixes position with {mixed}" if one_order else ""
    row = CardRow("position_preference", null_value=0.0, test="score", note=note, identified=not one_order)
    n = int(parsed.sum())
    if n == 0:
        row.reason = "no parsed verdict"
        return row
    sh = shown[parsed]
    first, second = sh == "A", sh == "B"
    y = np.full(n, 0.5)  # (sign + 1) / 2 of sign +1 (first shown), -1 (second), 0 (tie)
    y[first] = 1.0
    y[second] = 0.0
    n_dec = int(np.count_nonzero(first) + np.count_nonzero(second))
    sh = first = second = None
    est, _, n_eff, k = _share_stats(y, items[parsed], DEFF_FLOOR)
    lo, hi = wilson_interval(est * n_eff, n_eff, alpha=s.alpha, clusters=k)
    se_y = math.sqrt(0.25 / n_eff)
    zstat = (est - 0.5) / se_y
    n_int = max(1, round(n_eff))
    row.estimate, row.ci_low, row.ci_high = 2 * est - 1, 2 * lo - 1, 2 * hi - 1
    row.n, row.n_items, row.se, row.statistic = n, k, 2 * se_y, zstat
    row.p_value = float(2 * (student_t.sf(abs(zstat), k - 1) if k >= 2 else norm.sf(abs(zstat))))
    row.mde = 2 * binomial_mde(n_int, 0.5, s.alpha, s.power)
    row.share = n_dec / n
    if n_dec < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} decisive verdicts ({n_dec})"
    return row


def _order_gap_row(ca: np.ndarray, cb: np.ndarray, items: np.ndarray, s: CardSettings) -> CardRow:
    """Accuracy swapped minus stored; Durkalski's clustered McNemar over items and the CI it inverts.

    Per item i, d_i = (pairs right only swapped) - (pairs right only as stored); the
    statistic (sum d_i)^2 / sum d_i^2 is chi-square(1) under no order effect, treats the
    item as the unit (McNemar's b + c becomes sum d_i^2) and equals McNemar's without
    continuity correction when every item has one pair.  Its standard error is
    se = sqrt(sum d_i^2) / pairs, and the CI is gap +- z se (clipped to [-1, 1]): it
    excludes 0 exactly when the test rejects at 1 - confidence, and it keeps a width
    when every discordant pair goes one way (where a percentile bootstrap collapses).  The MDE is Connor's at the
    effective n: pairs over the design effect sum d_i^2 / (b + c).
    """
    n_p = len(ca)
    row = CardRow("accuracy_order_gap", null_value=0.0, test="mcnemar-cluster")
    if n_p == 0:
        row.reason = "no pair with gold recorded in both orders"
        return row
    d = cb.astype(float) - ca.astype(float)
    b, c = int(np.sum(d < 0)), int(np.sum(d > 0))
    codes, k = _cluster_codes(items)
    dsum = np.bincount(codes, weights=d, minlength=k)
    est = float(d.mean())
    row.estimate, row.n, row.n_items = est, n_p, k
    row.note = f"discordant: {b} right only as stored, {c} only swapped"
    ss = float(np.dot(dsum, dsum))
    if b + c == 0 or ss == 0:
        row.se, row.statistic, row.p_value = 0.0, 0.0, 1.0
        row.reason = "no discordant pair, or every item's discordant pairs cancel"
        return row
    row.statistic = float(dsum.sum() ** 2 / ss)
    row.p_value = float(chi2.sf(row.statistic, 1))
    row.se = math.sqrt(ss) / n_p
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    row.ci_low, row.ci_high = max(-1.0, est - z * row.se), min(1.0, est + z * row.se)
    deff = max(DEFF_FLOOR, ss / (b + c)) if k >= 2 else max(1.0, ss / (b + c))
    row.mde = mcnemar_mde(max(1, round(n_p / deff)), (b + c) / n_p, s.alpha, s.power)
    if b + c < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} discordant pairs ({b + c})"
    return row
