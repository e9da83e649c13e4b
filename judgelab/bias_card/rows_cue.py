"""The card's rows of a cue (the longer, the more formatted, the judge's own family's response): whether
the log's design separates the cue from answer quality (:class:`QualityControl`), and the three rows
of each cue (:func:`_cue_rows`): the bias row, read against gold (:func:`_gold_cue_rows`) or against
0.5, its conditional form among the judge's errors (:func:`_error_share_row`) and the raw share."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from judgelab.bias_card.codes import is_any
from judgelab.bias_card.metrics import NAN, CardRow, _guard, _not_estimable
from judgelab.bias_card.rows_share import _share_row
from judgelab.stats.gold_excess import excess_over_gold

if TYPE_CHECKING:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.prepare import _Log


#: the note of a cue row whose design has no control for answer quality
CONFOUNDED = "not identified: confounded with answer quality"


@dataclass(frozen=True)
class QualityControl:
    """What in a log's design separates a cue preference (length, markdown, own family) from quality.

    A judge that picks the longer answer may simply pick the better one, when the better answers
    are the longer ones (AlpacaEval: one weaker model against one baseline, one order, no gold).
    The cue is separable from quality only by design: ``gold`` labels (the cue regressions hold a
    gold term, so the cue is read beyond what quality explains; a share is read against gold's
    own balance), pairs declared ``controlled`` (built to differ only in the cue,
    ``CardSettings.controlled_pairs``), or, for the regressions only, a ``model_term``: three or
    more models behind the responses, so that a per-model strength term absorbs the quality of
    each model as AlpacaEval's length-controlled GLM does.  A share has no model term, so a
    multi-model log alone leaves the shares descriptive.
    """

    gold: bool
    controlled: bool
    models: int

    @property
    def model_term(self) -> bool:
        return self.models >= 3

    def share(self) -> str:
        """The design control a cue share rests on, or "" when it has none."""
        return "controlled pairs" if self.controlled else "gold labels" if self.gold else ""

    def regression(self) -> str:
        """The control a cue regression rests on, or ""."""
        return self.share() or (f"model term ({self.models} models)" if self.model_term else "")

    def missing(self) -> str:
        """Why a row is not identified: the controls this log lacks."""
        models = (f"{self.models} model(s) behind the responses, no model term" if self.models < 3 else "")
        return "; ".join(x for x in (CONFOUNDED, "no gold labels, no pairs built to differ only in the cue", models)
                         if x)


def quality_control(lg: _Log, s: CardSettings) -> QualityControl:
    """The quality controls of one judge's log (see :class:`QualityControl`)."""
    used = np.unique(lg.model_b) if lg.model_a is None else np.union1d(lg.model_b, lg.model_a)
    models = set(lg.models[used].tolist()) - {""}
    return QualityControl(gold=bool(is_any(lg.gold, ("A", "B")).any()), controlled=s.controlled_pairs,
                          models=len(models))


def _identify(row: CardRow, control: str, qc: QualityControl) -> CardRow:
    """Mark a cue row identified by ``control`` (named in its note), or not identified with the reason.

    A row without eligible verdicts keeps its note (why it has none): it is not estimable anyway."""
    row.identified = bool(control)
    if row.n == 0:
        return row
    extra = f"quality controlled by {control}" if control else ""
    row.note = "; ".join(x for x in ((row.note, extra) if control else (qc.missing(), row.note)) if x)
    return row


def _gold_cue_rows(metric: str, elig: np.ndarray, cue: np.ndarray, verdict: np.ndarray, gold: np.ndarray,
                   items: np.ndarray, s: CardSettings, *, share_of: int, note: str, cue_word: str) -> CardRow:
    """The bias row read against gold: :func:`judgelab.stats.gold_excess.excess_over_gold` of the eligible verdicts with gold."""
    mask = np.asarray(elig, bool) & is_any(gold, ("A", "B"))
    jc, gc = verdict[mask] == cue[mask], gold[mask] == cue[mask]
    it = items[mask]
    ex = excess_over_gold(jc, gc, it)
    n = int(mask.sum())
    row = CardRow(metric, estimate=ex["estimate"], null_value=ex["null"], n=n, n_items=ex["k"],
                  share=n / share_of if share_of else NAN, test="t-cluster", reason=ex["reason"], note=note)
    if n:
        row.note = "; ".join(x for x in (note, f"judge share minus gold's ({ex['gold_share']:.3f} of these pairs "
                                                f"have gold on the {cue_word} side); errors to the {cue_word} "
                                                f"{ex['errors_to_cue']}, away {ex['errors_away']}") if x)
    if math.isfinite(ex["se"]) and ex["se"] > 0:
        k = ex["k"]
        tcrit = float(student_t.ppf(1 - s.alpha / 2, k - 1))
        row.se = ex["se"]
        row.statistic = (ex["estimate"] - ex["null"]) / ex["se"]
        row.p_value = float(2 * student_t.sf(abs(row.statistic), k - 1))
        if ex["se_excess"] > 0:  # the excess's own interval; zero width (judge - gold constant) is none
            row.ci_low = max(-1.0, ex["estimate"] - tcrit * ex["se_excess"])
            row.ci_high = min(1.0, ex["estimate"] + tcrit * ex["se_excess"])
        row.mde = (tcrit + float(norm.ppf(s.power))) * ex["se"]
    elif not row.reason and math.isfinite(ex["se"]):
        row.se = ex["se"]
        row.reason = ("no error against gold on the eligible verdicts: nothing to read a cue in" if
                      ex["errors_to_cue"] + ex["errors_away"] == 0 else
                      "every eligible verdict is an error: nothing to read a cue in")
    if not row.reason and n < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} verdicts to test ({n})"
    return row


def _error_share_row(metric: str, elig: np.ndarray, cue: np.ndarray, verdict: np.ndarray, gold: np.ndarray,
                     items: np.ndarray, s: CardSettings) -> CardRow:
    """The conditional form of a cue row read against gold: the share of the judge's errors that pick the
    cue's side, tested (design-effect binomial) against the share of eligible pairs where an error would
    pick it (gold on the other side).  Why that null and not 0.5: with errors blind to the cue, each
    error falls on a pair whatever gold's side, so the errors land on the cue's side in the proportion of
    pairs whose gold is on the other side (gold favouring the longer answer 60 % of the time makes 40 %
    of a cue-blind judge's errors pick the longer)."""
    mask = np.asarray(elig, bool) & is_any(gold, ("A", "B"))
    jc, gc = verdict == cue, gold == cue
    err = mask & (jc != gc)
    n = int(mask.sum())
    cond_null = int(np.count_nonzero(mask & ~gc)) / n if n else 0.5
    row = _share_row(metric, err, mask & jc & ~gc, items, s, null=cond_null, share_of=n,
                     note=f"errors against gold; null: share of these pairs with gold on the other side "
                          f"({cond_null:.3f})")
    if not 0 < cond_null < 1 and not row.reason:
        row.reason = "gold on one side of the cue in every eligible pair: no null to test against"
    return row


def _cue_rows(metric: str, elig: np.ndarray, cue: np.ndarray, lg: _Log, s: CardSettings, qc: QualityControl, *,
              share_of: int, cue_word: str, note: str) -> list[CardRow]:
    """A cue's three rows: the bias row, its conditional form and the raw share (descriptive).

    With gold the bias row is the excess over gold's own share (:func:`_gold_cue_rows`); without it,
    the share against 0.5, identified only by pairs declared controlled.  The raw share P(picks the
    cue's side) is always kept, descriptive: with gold it mixes the cue with gold's own balance."""
    prefix = metric.split("_")[0]
    raw, cond = f"{prefix}_share_raw", f"{prefix}_error_share"
    success = lg.verdict == cue
    out = _guard((raw,), lambda: _share_row(raw, elig, success, lg.items, s, null=None, share_of=share_of,
                                            note="; ".join(x for x in (note, "descriptive, not a finding: "
                                                                        f"P(picks the {cue_word})") if x)))
    if qc.gold:
        main = _guard((metric,), lambda: _identify(_gold_cue_rows(
            metric, elig, cue, lg.verdict, lg.gold, lg.items, s, share_of=share_of, note=note,
            cue_word=cue_word), "gold labels", qc))
        errs = _guard((cond,), lambda: _identify(_error_share_row(cond, elig, cue, lg.verdict, lg.gold, lg.items, s),
                                                 "gold labels", qc))
        out = [*main, *errs, *out]
    else:
        main = _guard((metric,), lambda: _identify(_share_row(
            metric, elig, success, lg.items, s, null=0.5, share_of=share_of, note=note), qc.share(), qc))
        out = [*main, _not_estimable(cond, "no gold in this log"), *out]
    return out
