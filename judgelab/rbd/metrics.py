"""The numbers paper 001 reports, as plain functions over predictions.

Conventions (a missing verdict -- unparsed, refused or failed -- is an index < 0 or None):

* **accuracy** (Sec. 3): share of items whose verdict is the gold option; a missing verdict
  is wrong, never dropped;
* **consistency** (Sec. 3): share of items correct both on D and on D_bias;
* **bias label** b_i (Eq. 1): ``yes`` iff the verdict on D is correct and the verdict on
  D_bias is wrong; ``no`` otherwise; ``""`` (unknown) when either verdict is missing -- a
  parse failure is not evidence of bias, so those items are counted separately;
* **detector scores** (Sec. 5.1): accuracy, precision, recall and F1 of the *Yes* class; a
  missing detector answer is wrong for accuracy and a false negative when the truth is Yes;
* **stubbornness** (Sec. 6, Fig. 10): among items the detector flags (Yes) whose evaluator
  answered the re-prompt, the share whose verdict is unchanged; **overconfidence**: the
  share of those unchanged verdicts that are wrong;
* **position bias, footnote 4**: the two presentation orders are one item, D = the stored
  order and D_bias = the swapped order; the detector sees both rounds and the evaluator
  re-decides both; the headline metric is *consistency* (both orders correct), because
  the detector targets the inconsistency, not the evaluator's ability; accuracy (of the
  swapped order) is reported but no gain is claimed for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

Verdict = int | None


def valid(v: Verdict) -> bool:
    return v is not None and not (isinstance(v, float) and np.isnan(v)) and int(v) >= 0


def is_correct(pred: Verdict, gold: int) -> bool:
    return pred is not None and valid(pred) and int(pred) == int(gold)


def accuracy(preds: Sequence[Verdict], golds: Sequence[int]) -> float:
    """Share of correct verdicts (missing = wrong); NaN for no items."""
    if len(preds) != len(golds):
        raise ValueError("preds and golds differ in length")
    if not preds:
        return float("nan")
    return float(np.mean([is_correct(p, g) for p, g in zip(preds, golds, strict=True)]))


def consistency(pred_d: Sequence[Verdict], pred_bias: Sequence[Verdict], gold_d: Sequence[int],
                gold_bias: Sequence[int]) -> float:
    """Share of items correct on both D and D_bias."""
    n = len(pred_d)
    if not (n == len(pred_bias) == len(gold_d) == len(gold_bias)):
        raise ValueError("inputs differ in length")
    if not n:
        return float("nan")
    return float(np.mean([is_correct(a, ga) and is_correct(b, gb)
                          for a, b, ga, gb in zip(pred_d, pred_bias, gold_d, gold_bias, strict=True)]))


def bias_label(pred_d: Verdict, pred_bias: Verdict, gold_d: int, gold_bias: int) -> str:
    """Eq. 1: ``yes`` if correct on D and wrong on D_bias, ``no`` otherwise, ``""`` if a verdict is missing."""
    if not (valid(pred_d) and valid(pred_bias)):
        return ""
    return "yes" if is_correct(pred_d, gold_d) and not is_correct(pred_bias, gold_bias) else "no"


@dataclass(frozen=True)
class DetectorScores:
    n: int
    n_missing: int
    tp: int
    fp: int
    tn: int
    fn: int
    accuracy: float
    precision: float
    recall: float
    f1: float

    def row(self) -> dict[str, float | int]:
        return asdict(self)


def detector_scores(truth: Sequence[str], pred: Sequence[str | None]) -> DetectorScores:
    """Accuracy and precision/recall/F1 of the Yes class (labels ``yes``/``no``; others missing)."""
    if len(truth) != len(pred):
        raise ValueError("truth and pred differ in length")
    t = [str(x).lower() for x in truth]
    if set(t) - {"yes", "no"}:
        raise ValueError(f"truth labels must be yes/no, got {sorted(set(t) - {'yes', 'no'})}")
    p = [str(x).lower() if x is not None else "" for x in pred]
    tp = sum(a == "yes" and b == "yes" for a, b in zip(t, p, strict=True))
    fp = sum(a == "no" and b == "yes" for a, b in zip(t, p, strict=True))
    tn = sum(a == "no" and b == "no" for a, b in zip(t, p, strict=True))
    fn = sum(a == "yes" and b != "yes" for a, b in zip(t, p, strict=True))
    missing = sum(b not in ("yes", "no") for b in p)
    n = len(t)
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else float("nan")  # = harmonic mean of P and R
    return DetectorScores(n=n, n_missing=missing, tp=tp, fp=fp, tn=tn, fn=fn,
                          accuracy=(tp + tn) / n if n else float("nan"), precision=prec, recall=rec, f1=f1)


def rounds_correct(verdict: Sequence[Verdict], gold: Sequence[int]) -> bool:
    """All rounds correct (one round, or both presentation orders for position)."""
    return len(verdict) == len(gold) and all(is_correct(v, g) for v, g in zip(verdict, gold, strict=True))


@dataclass(frozen=True)
class Behaviour:
    n_flagged: int
    n_answered: int
    n_unchanged: int
    n_unchanged_wrong: int
    stubbornness: float
    overconfidence: float


def stubbornness_overconfidence(flagged: Sequence[bool], prior: Sequence[Sequence[Verdict]],
                                revised: Sequence[Sequence[Verdict] | None],
                                gold: Sequence[Sequence[int]]) -> Behaviour:
    """Fig. 10: keep rate after a flag, and the wrong share among kept verdicts.

    ``prior``/``revised``/``gold`` are per item tuples of rounds (two for position);
    ``revised`` is None for items not re-prompted or whose revision could not be parsed.
    """
    n_flag = n_ans = n_keep = n_keep_wrong = 0
    for f, p, r, g in zip(flagged, prior, revised, gold, strict=True):
        if not f or not all(valid(v) for v in p):
            continue
        n_flag += 1
        if r is None or not all(valid(v) for v in r):
            continue
        n_ans += 1
        if [int(v) for v in r if v is not None] == [int(v) for v in p if v is not None]:  # all valid here
            n_keep += 1
            n_keep_wrong += not rounds_correct(p, g)
    return Behaviour(n_flag, n_ans, n_keep, n_keep_wrong,
                     n_keep / n_ans if n_ans else float("nan"),
                     n_keep_wrong / n_keep if n_keep else float("nan"))


PRIMARY_METRIC = {"position": "consistency"}


def with_without(bias_type: str, pred_d: Sequence[Sequence[Verdict]], initial: Sequence[Sequence[Verdict]],
                 final: Sequence[Sequence[Verdict]], gold_d: Sequence[Sequence[int]],
                 gold_bias: Sequence[Sequence[int]]) -> dict[str, float | str | int]:
    """Table 2: accuracy and consistency on D_bias without and with the detector.

    Per item, ``pred_d`` is the verdict on D and ``initial``/``final`` the D_bias verdict
    before and after the loop; for position (footnote 4) ``initial``/``final`` hold both
    rounds ``(original order, swapped order)`` and ``pred_d``/``gold_d`` are unused: the
    loop revises both rounds, accuracy is that of the swapped order, consistency needs both.
    """
    n = len(initial)
    if bias_type == "position":
        acc0 = accuracy([v[1] for v in initial], [g[1] for g in gold_bias])
        acc1 = accuracy([v[1] for v in final], [g[1] for g in gold_bias])
        con0 = float(np.mean([rounds_correct(v, g) for v, g in zip(initial, gold_bias, strict=True)])) if n else np.nan
        con1 = float(np.mean([rounds_correct(v, g) for v, g in zip(final, gold_bias, strict=True)])) if n else np.nan
    else:
        acc0 = accuracy([v[0] for v in initial], [g[0] for g in gold_bias])
        acc1 = accuracy([v[0] for v in final], [g[0] for g in gold_bias])
        con0 = consistency([v[0] for v in pred_d], [v[0] for v in initial], [g[0] for g in gold_d],
                           [g[0] for g in gold_bias])
        con1 = consistency([v[0] for v in pred_d], [v[0] for v in final], [g[0] for g in gold_d],
                           [g[0] for g in gold_bias])
    primary = PRIMARY_METRIC.get(bias_type, "accuracy")
    p0, p1 = (con0, con1) if primary == "consistency" else (acc0, acc1)
    return {"n": n, "acc_without": acc0, "acc_with": acc1, "consistency_without": con0,
            "consistency_with": con1, "primary_metric": primary, "primary_without": p0, "primary_with": p1,
            "primary_gain": p1 - p0}
