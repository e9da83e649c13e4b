"""Paired, item-clustered differences of every bias-card row between two judges on the same items.

*Matching.*  A verdict is one presentation of one pair: ``(item_id, pair_id, order, repeat)``.
Only presentations both sides recorded enter the comparison, so a difference never mixes a change
of judge with a change of items; the others are counted and listed (``unmatched``), never dropped
silently.

*Estimate.*  Each side's card rows come from the card itself (:func:`judgelab.bias_card.card.judge_card`
on the matched verdicts), so "before" and "after" are exactly what ``judgelab audit`` would print
for those verdicts; the difference is ``after - before``.

*Interval and test.*  The two judges saw the same items, so their estimates are correlated; the
interval resamples whole items (every presentation of a drawn item, for both sides at once, a
drawn item counted as often as it is drawn) and recomputes both cards on each resample: the
percentile interval of the differences at the card's level, their standard deviation as the
standard error, and a two-sided Wald test ``diff / se``.  A row whose resampled differences do
not vary has no test (``p_value`` empty, ``test_reason`` says so).  The tests of one view form
a family corrected with Holm (statsmodels).

Why a bootstrap over whole cards and not a delta method per metric: the card's rows are ratios,
shares read against gold, logistic coefficients and kappas; recomputing the card keeps one
definition of each metric, and the item is the card's own unit of clustering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from judgelab.bias_card.card import CardSettings, judge_card
from judgelab.io import InputError

#: the columns that name one presentation of one pair
KEY = ("item_id", "pair_id", "order", "repeat")
#: fewer matched items than this: every row says the comparison is underpowered
MIN_MATCHED_ITEMS = 20

COLUMNS = ["view", "metric", "before", "after", "diff", "ci_low", "ci_high", "se", "p_value", "p_adjusted",
           "significant", "test_reason", "status_before", "status_after", "flip", "n_items", "underpowered"]


@dataclass
class Matched:
    """The two sides restricted to the presentations both recorded, and what was left out."""

    before: pd.DataFrame
    after: pd.DataFrame
    unmatched: pd.DataFrame  # side, item_id, pair_id, order, repeat

    @property
    def n_items(self) -> int:
        return int(self.before["item_id"].nunique())


def _keys(t: pd.DataFrame) -> pd.DataFrame:
    k = pd.DataFrame({c: (t[c].astype(str) if c in t.columns else "0") for c in KEY}, index=t.index)
    if "repeat" in t.columns:
        k["repeat"] = t["repeat"].fillna(0).astype(int).astype(str)
    return k


def match(before: pd.DataFrame, after: pd.DataFrame) -> Matched:
    """Keep the presentations both sides recorded (module docstring); a key recorded twice on one
    side is an error naming it (the pairing would be ambiguous)."""
    kb, ka = _keys(before), _keys(after)
    for side, k in (("before", kb), ("after", ka)):
        dup = k.duplicated()
        if dup.any():
            first = k[dup].iloc[0].to_dict()
            raise InputError(f"compare: the {side} log records one presentation twice ({first}); "
                             f"give each repetition its own 'repeat'")
    jb, ja = pd.MultiIndex.from_frame(kb), pd.MultiIndex.from_frame(ka)
    in_b, in_a = jb.isin(ja), ja.isin(jb)
    unmatched = pd.concat([kb[~in_b].assign(side="before"), ka[~in_a].assign(side="after")], ignore_index=True)
    common = jb[in_b].sort_values()  # one order on both sides: row i of each is the same presentation
    b = before.set_axis(jb).reindex(common).reset_index(drop=True)
    a = after.set_axis(ja).reindex(common).reset_index(drop=True)
    return Matched(b, a, unmatched[["side", *KEY]])


def _estimates(t: pd.DataFrame, s: CardSettings, view: str) -> dict[str, tuple[float, str]]:
    return {r["metric"]: (float(r["estimate"]), str(r["status"])) for r in judge_card(t, s, view)}


def _resample(t: pd.DataFrame, rows_of: list[np.ndarray], draw: np.ndarray) -> pd.DataFrame:
    """The rows of the drawn items, each copy of an item under its own item and pair ids (so the
    card's clustering and its pairing of the two orders see copies as distinct items)."""
    idx = np.concatenate([rows_of[i] for i in draw])
    copy = np.concatenate([np.full(len(rows_of[i]), k) for k, i in enumerate(draw)])
    out = t.iloc[idx].copy()
    suffix = pd.Series(copy, index=out.index).astype(str).radd("#")
    out["item_id"] = out["item_id"].astype(str) + suffix
    out["pair_id"] = out["pair_id"].astype(str) + suffix
    return out.reset_index(drop=True)


def item_draws(n_items: int, resamples: int, seed: int) -> np.ndarray:
    """The items each resample draws (with replacement): ``(resamples, n_items)`` indices into the
    sorted matched item ids; public so a test can replay the same draws independently."""
    return np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))


def item_rows(t: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sorted item ids of ``t`` and the row positions of each: what :func:`item_draws` indexes."""
    items = np.sort(t["item_id"].astype(str).unique())
    code = pd.Index(items).get_indexer(t["item_id"].astype(str))
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(len(items) + 1))
    return items, [order[bounds[i]:bounds[i + 1]] for i in range(len(items))]


def bootstrap_summary(d: float, draws: np.ndarray, resamples: int, alpha: float
                      ) -> tuple[float, float, float, float, str]:
    """``(ci_low, ci_high, se, p_value, reason)`` of a paired difference ``d`` from its item-bootstrap
    draws (NaN where a resample gave no estimate): percentile interval, Wald test on the draws'
    standard error; no interval with too few usable draws, and no test when they do not vary."""
    col = draws[np.isfinite(draws)]
    lo = hi = se = p = np.nan
    reason = ""
    if not np.isfinite(d):
        reason = "a side has no estimate"
    elif len(col) < max(10, resamples // 2):
        reason = f"only {len(col)} of {resamples} resamples gave both estimates"
    else:
        lo, hi = (float(x) for x in np.quantile(col, [alpha / 2, 1 - alpha / 2]))
        se = float(np.std(col, ddof=1))
        if se > 1e-12 * max(1.0, abs(d)):
            p = float(2 * norm.sf(abs(d) / se))
        else:
            reason = "the resampled differences do not vary: no variance, no test"
    return lo, hi, se, p, reason


def compare_cards(m: Matched, s: CardSettings | None = None, *, resamples: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per view and card metric: before, after, the paired difference and its interval,
    test, Holm-adjusted p-value and whether the card's conclusion flips (module docstring)."""
    s = s or CardSettings()
    if m.before.empty:
        raise InputError("compare: no presentation was recorded on both sides; nothing to compare "
                         f"({len(m.unmatched)} unmatched)")
    items, rows_of = item_rows(m.before)
    draws = item_draws(len(items), resamples, seed)
    under = len(items) < MIN_MATCHED_ITEMS
    out = []
    for view in s.views:
        eb, ea = _estimates(m.before, s, view), _estimates(m.after, s, view)
        metrics = [k for k in eb if k in ea]
        boot = np.full((resamples, len(metrics)), np.nan)
        for r, draw in enumerate(draws):
            bb = _estimates(_resample(m.before, rows_of, draw), s, view)
            ba = _estimates(_resample(m.after, rows_of, draw), s, view)
            boot[r] = [ba.get(k, (np.nan, ""))[0] - bb.get(k, (np.nan, ""))[0] for k in metrics]
        for j, metric in enumerate(metrics):
            (before, st_b), (after, st_a) = eb[metric], ea[metric]
            d = after - before
            lo, hi, se, p, reason = bootstrap_summary(d, boot[:, j], resamples, s.alpha)
            out.append({"view": view, "metric": metric, "before": before, "after": after, "diff": d, "ci_low": lo,
                        "ci_high": hi, "se": se, "p_value": p, "test_reason": reason, "status_before": st_b,
                        "status_after": st_a, "flip": "" if st_b == st_a else f"{st_b} -> {st_a}",
                        "n_items": len(items), "underpowered": under})
    table = pd.DataFrame(out)
    table["p_adjusted"] = np.nan
    for _view, idx in table[table["p_value"].notna()].groupby("view").groups.items():
        table.loc[idx, "p_adjusted"] = multipletests(table.loc[idx, "p_value"].to_numpy(float), method="holm")[1]
    table["significant"] = table["p_adjusted"] < s.alpha
    return table[COLUMNS]


def split_judges(table: pd.DataFrame, names: str) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, str]]:
    """``--judges old,new``: the two judges' verdicts of one log."""
    parts = [p.strip() for p in names.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InputError(f"--judges wants two judge names, OLD,NEW; got {names!r}")
    known = sorted(table["judge"].astype(str).unique())
    for p in parts:
        if p not in known:
            import difflib

            close = difflib.get_close_matches(p, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (judges: {', '.join(known[:12])})"
            raise InputError(f"--judges: no judge {p!r} in the log{hint}")
    judge = table["judge"].astype(str)
    return table[judge == parts[0]], table[judge == parts[1]], (parts[0], parts[1])
