"""Paired, item-clustered differences of every leaderboard column between two judges on the same items.

When the matched log has models to rank (two or more besides the baseline, or besides the
reference of free battles, as :func:`judgelab.board.battles.battles_from_table` reads them), the
leaderboard of each side is :func:`judgelab.board.table.leaderboard` on that side's matched
verdicts, so "before" and "after" are what ``judgelab leaderboard`` would print for them; the
difference is ``after - before`` per model and score column (:data:`SCORES`).

*Interval.*  As for the card rows (:mod:`judgelab.compare.paired`): the same item draws, whole
items for both sides at once, both boards recomputed on each resample; the percentile interval
at the card's level, the resamples' standard deviation as the standard error, a two-sided Wald
test, Holm within each score column (statsmodels).  Only the columns a resample can recompute
quickly *and* by the board's own definition are resampled (:data:`RESAMPLED`):

* ``win_rate`` and ``bias_aware`` are recomputed from the resampled battles with the functions
  the board calls for them (:func:`judgelab.board.winrate.win_rates`,
  :func:`judgelab.board.bias_aware.bias_aware`); on the full data this path must give the
  board's own value, or the column's ``interval`` says it does not and no interval is shown;
* ``lc_win_rate`` re-estimates every instruction's difficulty jointly with all models (most of a
  board's time), and ``style_controlled`` is itself the median of ``--resamples`` bootstrap fits
  (Arena-Hard's procedure), so resampling it would nest one bootstrap in another: their
  ``interval`` says ``not computed (...)`` and the row keeps before, after and the difference.

*Rank flips.*  For every score column, the pairs of models whose order is reversed between the
two boards (strictly above before, strictly below after; a model without a number on a side
takes part in no pair): the flips table, and per model the ``rank_flip`` column (``"3 -> 1,
order reversed with alpha, bravo"`` when the model is in a reversed pair, empty otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from judgelab.bias_card.card_settings import CardSettings
from judgelab.compare.paired import MIN_MATCHED_ITEMS, Matched, _resample, bootstrap_summary, item_draws, item_rows
from judgelab.io import InputError

#: the leaderboard's score columns compared, raw win rate first (:mod:`judgelab.board.table`)
SCORES = ("win_rate", "lc_win_rate", "style_controlled", "bias_aware")
#: the columns whose difference gets an item-bootstrap interval (module docstring)
RESAMPLED = ("win_rate", "bias_aware")
#: why the others get none
NOT_RESAMPLED = {
    "lc_win_rate": "not computed (the length-controlled GLM re-estimates every instruction's difficulty from all "
                   "models: too slow to refit on every resample)",
    "style_controlled": "not computed (the style-controlled score is itself the median of a bootstrap of fits: "
                        "resampling it would nest one bootstrap in another)",
}
#: the status column of each score (the raw win rate has none: a number or not)
STATUS = {"lc_win_rate": "lc_status", "style_controlled": "style_status", "bias_aware": "bias_aware_status"}
#: fewer models besides the baseline than this: no leaderboard to compare
MIN_RANKED_MODELS = 2

BOARD_COLUMNS = ["model", "score", "before", "after", "diff", "ci_low", "ci_high", "se", "p_value", "p_adjusted",
                 "significant", "interval", "test_reason", "rank_before", "rank_after", "rank_flip", "status_before",
                 "status_after", "n_items", "underpowered"]
FLIP_COLUMNS = ["correction", "model_1", "model_2", "before_1", "before_2", "after_1", "after_2"]


@dataclass
class BoardComparison:
    """The per-model, per-score rows (:data:`BOARD_COLUMNS`), the rank flips (:data:`FLIP_COLUMNS`);
    or, when the log has no leaderboard to compare, empty tables and ``note`` saying why."""

    table: pd.DataFrame
    flips: pd.DataFrame
    note: str = ""
    baseline: str = ""

    @property
    def compared(self) -> bool:
        return not self.note


def board_note(t: pd.DataFrame) -> str:
    """Why the matched verdicts ``t`` (texts or features) have no leaderboard to compare, or ""
    when they may: a quick look at the model columns before the answers' texts are read (the
    battles decide in :func:`compare_boards`)."""
    if t.empty:
        return "no presentation was recorded on both sides"
    for col in ("model_a", "model_b"):
        if col not in t.columns or t[col].isna().all():
            return f"the log names no models ({col} is empty): there is no leaderboard to compare"
    n = pd.concat([t["model_a"], t["model_b"]]).dropna().astype(str).nunique()
    if n < MIN_RANKED_MODELS + 1:
        return (f"{n} model(s) in the log: a leaderboard needs {MIN_RANKED_MODELS} to rank besides "
                "the baseline")
    return ""


def skipped(note: str) -> BoardComparison:
    """No leaderboard to compare, and why."""
    return BoardComparison(pd.DataFrame(columns=BOARD_COLUMNS), pd.DataFrame(columns=FLIP_COLUMNS), note)


def _battles(t: pd.DataFrame):  # -> Battles
    from judgelab.board.battles import battles_from_table

    return battles_from_table(t)


def ranked_models(b) -> int:  # b: Battles
    """Models scored against another: every model but the baseline (free battles: the reference)."""
    return b.n_models - 1


def resampled_scores(b, alpha: float) -> dict[str, dict[str, float]]:  # b: Battles
    """``score -> model -> value`` of the :data:`RESAMPLED` columns of the battles ``b``, by the
    functions the board calls for them (module docstring); the baseline has no row."""
    from judgelab.board.bias_aware import bias_aware
    from judgelab.board.winrate import win_rates

    if b.baseline is not None:
        model, y, _ = b.evaluated()
        item = b.item
    else:  # free battles: every game from both sides
        model, y, item = np.r_[b.b, b.a], np.r_[b.pref_b, 1 - b.pref_b], np.r_[b.item, b.item]
    raw = win_rates(model, y, item, b.n_models, alpha)
    ba = bias_aware(b, alpha=alpha)
    names = [(m, name) for m, name in enumerate(b.models) if b.baseline is None or name != b.baseline]
    return {"win_rate": {name: float(raw[m].win_rate) for m, name in names},
            "bias_aware": {name: float(ba.score[m]) for m, name in names}}


def _ranks(values: pd.Series) -> pd.Series:
    return values.rank(ascending=False, method="min")


def rank_flips(before: pd.Series, after: pd.Series, score: str) -> pd.DataFrame:
    """Pairs (model_1, model_2) with model_1 strictly above model_2 on ``before`` and strictly
    below on ``after`` (both indexed by model); a missing number takes part in no pair."""
    names = before.index.to_numpy()
    b, a = before.to_numpy(float), after.reindex(before.index).to_numpy(float)
    i, j = np.nonzero((b[:, None] > b[None, :]) & (a[:, None] < a[None, :]))
    return pd.DataFrame({"correction": score, "model_1": names[i], "model_2": names[j], "before_1": b[i],
                         "before_2": b[j], "after_1": a[i], "after_2": a[j]}, columns=FLIP_COLUMNS)


def compare_boards(m: Matched, s: CardSettings | None = None, *, resamples: int = 200, seed: int = 0,
                   style_rounds: int = 100) -> BoardComparison:
    """Before, after, the paired difference with its interval and the rank flips of every
    leaderboard column (module docstring); ``m`` must carry the answers' texts (the board's
    length and style features).  A log without models to rank gives a :class:`BoardComparison`
    whose ``note`` says why, never an error."""
    from judgelab.board.table import BoardSettings, leaderboard

    s = s or CardSettings()
    if "response_a" not in m.before.columns or "response_a" not in m.after.columns:
        raise ValueError("compare_boards needs the answers' texts: import the logs with texts=True")
    note = board_note(m.before) or board_note(m.after)
    if note:
        return skipped(note)
    try:
        bb, ba = _battles(m.before), _battles(m.after)
    except InputError as exc:
        return skipped(f"no leaderboard: {exc}")
    n_ranked = min(ranked_models(bb), ranked_models(ba))
    if n_ranked < MIN_RANKED_MODELS:
        return skipped(f"{n_ranked} model(s) besides the baseline {bb.reference!r}: a leaderboard needs "
                        f"{MIN_RANKED_MODELS} to rank")
    settings = BoardSettings(alpha=s.alpha, style_rounds=style_rounds, seed=s.seed)
    board_b = leaderboard(bb, settings, judges=False).table.set_index("model")
    board_a = leaderboard(ba, settings, judges=False).table.set_index("model")
    models = sorted(set(board_b.index) | set(board_a.index))
    board_b, board_a = board_b.reindex(models), board_a.reindex(models)

    items, rows_of = item_rows(m.before)
    n_items = len(items)
    boot = {score: np.full((resamples, len(models)), np.nan) for score in RESAMPLED}
    full_b, full_a = resampled_scores(bb, s.alpha), resampled_scores(ba, s.alpha)
    agrees = {score: all(_same(full_b[score].get(k, np.nan), board_b.at[k, score])
                         and _same(full_a[score].get(k, np.nan), board_a.at[k, score]) for k in models)
              for score in RESAMPLED}
    if any(agrees.values()):
        for r, draw in enumerate(item_draws(n_items, resamples, seed)):
            try:
                rb = resampled_scores(_battles(_resample(m.before, rows_of, draw)), s.alpha)
                ra = resampled_scores(_battles(_resample(m.after, rows_of, draw)), s.alpha)
            except InputError:  # a resample without a usable game on a side: no difference from it
                continue
            for score in RESAMPLED:
                boot[score][r] = [ra[score].get(k, np.nan) - rb[score].get(k, np.nan) for k in models]

    rows, flips = [], []
    for score in SCORES:
        vb, va = board_b[score].astype(float), board_a[score].astype(float)
        rank_b, rank_a = _ranks(vb), _ranks(va)
        f = rank_flips(vb, va, score)
        flips.append(f)
        for j, k in enumerate(models):
            before, after = float(vb[k]), float(va[k])
            d = after - before
            lo = hi = se = p = np.nan
            reason = ""
            if score not in RESAMPLED:
                interval = NOT_RESAMPLED[score]
            elif not agrees[score]:
                interval = ("not computed (the resampling path does not reproduce the board's "
                            f"{score} on the full data)")
            else:
                interval = f"item bootstrap ({resamples} resamples)"
                lo, hi, se, p, reason = bootstrap_summary(d, boot[score][:, j], resamples, s.alpha)
            status = STATUS.get(score)
            swapped = sorted(set(f.loc[f["model_1"] == k, "model_2"]) | set(f.loc[f["model_2"] == k, "model_1"]))
            rows.append({"model": k, "score": score, "before": before, "after": after, "diff": d, "ci_low": lo,
                         "ci_high": hi, "se": se, "p_value": p, "interval": interval, "test_reason": reason,
                         "rank_before": rank_b[k], "rank_after": rank_a[k],
                         "rank_flip": (f"{_rank(rank_b[k])} -> {_rank(rank_a[k])}, order reversed with "
                                       + ", ".join(map(str, swapped))) if swapped else "",
                         "status_before": _status(board_b, k, score, status),
                         "status_after": _status(board_a, k, score, status),
                         "n_items": n_items, "underpowered": n_items < MIN_MATCHED_ITEMS})
    table = pd.DataFrame(rows)
    table["p_adjusted"] = np.nan
    for _score, idx in table[table["p_value"].notna()].groupby("score").groups.items():
        table.loc[idx, "p_adjusted"] = multipletests(table.loc[idx, "p_value"].to_numpy(float), method="holm")[1]
    table["significant"] = table["p_adjusted"] < s.alpha
    table[["rank_before", "rank_after"]] = table[["rank_before", "rank_after"]].astype("Int64")
    return BoardComparison(table[BOARD_COLUMNS], pd.concat(flips, ignore_index=True)[FLIP_COLUMNS],
                           baseline=bb.reference)


def _same(x: float, y: object) -> bool:
    y = float(y)  # type: ignore[arg-type]
    return (np.isnan(x) and np.isnan(y)) or bool(abs(x - y) <= 1e-9 * max(1.0, abs(y)))


def _rank(r: float) -> str:
    return "-" if np.isnan(r) else str(int(r))


def _status(board: pd.DataFrame, model: str, score: str, column: str | None) -> str:
    if column is not None:
        v: Any = board.at[model, column]
        return "" if pd.isna(v) else str(v)
    value: Any = board.at[model, score]
    return "ok" if np.isfinite(float(value)) else "no games"
