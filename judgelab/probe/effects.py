"""The insertion probes' effects (bandwagon, sentiment), which the bias card has no row for.

Both probes show the item itself with a cue added (a majority statement, tones), so the effect is
paired: for each item and presentation order, whether the verdict picks the cue's side with the
cue, minus whether it picks that side on the same item and order without it (the position probe,
which shows the items as they are).  The estimate is the mean of those differences (the share of
verdicts the cue moves to its side, net of moves away), with an item-clustered standard error
(statsmodels OLS on a constant, cluster-robust, Student's t on items - 1 df: the card's own
clustering and degrees of freedom); where every item's differences average the same, the clustered
variance is zero and there is no test.  Only item-order pairs with a verdict (A, B or tie) on both sides
count, as the card computes its preferences over parsed verdicts: a cue that makes the judge's
answer unreadable is a parse failure, not a choice; the note counts the pairs left out.  The rows of one
judge are corrected together (``CardSettings.multiplicity``, as the card's families are).  A set
of differences with no variance has no test: its row says so and has no p-value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from judgelab.bias_card.card_settings import CardSettings
from judgelab.io import table_tuples
from judgelab.probe.build import INSERTION_PROBES
from judgelab.stats.multiplicity import adjust_p_values

COLUMNS = ["judge", "probe", "metric", "status", "estimate", "ci_low", "ci_high", "se", "null_value", "n", "n_items",
           "cue_share", "base_share", "test", "statistic", "p_value", "p_adjusted", "reason", "note"]
NAN = float("nan")
#: a verdict with a value (the card's parsed verdicts)
VALUES = ("A", "B", "tie")


def _shift(d: np.ndarray, items: np.ndarray, s: CardSettings) -> dict[str, Any]:
    import statsmodels.api as sm

    k = len(np.unique(items))
    out: dict[str, Any] = {"estimate": float(d.mean()) if len(d) else NAN, "se": NAN, "ci_low": NAN, "ci_high": NAN,
           "statistic": NAN, "p_value": NAN, "n_items": k, "reason": ""}
    if len(d) == 0:
        out["reason"] = "no parsed verdict of an item and order in both this probe and the position probe"
    elif k < 2:
        out["reason"] = "one item: no clustered standard error"
    elif np.all(d == d[0]):
        out["reason"] = "every difference is the same: no variance, no test"
    else:
        codes = pd.factorize(items)[0]
        sums, sizes = np.bincount(codes, weights=d), np.bincount(codes)
        if np.array_equal(sums * len(d), sizes * d.sum()):
            # every item's mean difference is the overall mean: the residuals sum to zero within each
            # item, so the clustered variance is exactly zero, where statsmodels returns rounding noise
            # (a se of 1e-16 and a t of 1e15); the differences are integers, so this test is exact
            out.update(se=0.0, reason="zero clustered standard error: no test")
            return out
        fit = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
        lo, hi = fit.conf_int(alpha=s.alpha)[0]
        out.update(se=float(fit.bse[0]), statistic=float(fit.tvalues[0]), p_value=float(fit.pvalues[0]),
                   ci_low=float(lo), ci_high=float(hi))
    return out


def insertion_effects(verdicts: pd.DataFrame, s: CardSettings | None = None) -> pd.DataFrame:
    """One row per judge and insertion probe in ``verdicts`` (a probe verdict table: ``judge``, ``probe``,
    ``item_id``, ``order``, ``verdict``, ``cue_side``); see the module docstring."""
    s = s or CardSettings()
    rows = []
    for judge, g in verdicts.groupby("judge", sort=True):
        base = g[g["probe"] == "position"][["item_id", "order", "verdict"]]
        judge_rows: list[dict[str, Any]] = []
        for probe in INSERTION_PROBES:
            t = g[g["probe"] == probe]
            if t.empty:
                continue
            row: dict[str, Any] = {"judge": judge, "probe": probe, "metric": f"{probe}_shift", "null_value": 0.0,
                   "test": "t-cluster"}
            m = t.merge(base, on=["item_id", "order"], how="inner", suffixes=("", "_base"))
            parsed = m["verdict"].isin(VALUES) & m["verdict_base"].isin(VALUES)
            m = m[parsed]
            cue = m["cue_side"].astype(str).to_numpy()
            with_cue = (m["verdict"].astype(str).to_numpy() == cue)
            without = (m["verdict_base"].astype(str).to_numpy() == cue)
            d = with_cue.astype(float) - without.astype(float)
            row.update(_shift(d, m["item_id"].astype(str).to_numpy(), s), n=len(m),
                       cue_share=float(with_cue.mean()) if len(m) else NAN,
                       base_share=float(without.mean()) if len(m) else NAN)
            if base.empty:
                row["reason"] = "no position probe: the items without the cue were not judged"
            left = len(t) - len(m)
            row["note"] = ("P(picks the cue's side) with the cue minus without it, same item and order, parsed "
                           "verdicts" + (f"; {left} verdicts without a parsed match left out" if left else ""))
            judge_rows.append(row)
        # a row with a reason has no p-value (no match: no differences; the reasons of _shift)
        tested = [i for i, r in enumerate(judge_rows) if math.isfinite(r["p_value"])]
        adj = dict(zip(tested, adjust_p_values([judge_rows[i]["p_value"] for i in tested], s.multiplicity),
                       strict=True))
        for i, r in enumerate(judge_rows):
            r["p_adjusted"] = adj.get(i, NAN)
            if i not in adj:
                r["status"] = "not estimable"
            else:
                excludes = not r["ci_low"] <= 0.0 <= r["ci_high"]
                r["status"] = "detected" if r["p_adjusted"] < s.alpha and excludes else "not detected"
            rows.append(r)
    return pd.DataFrame(rows, columns=COLUMNS)


def effects_markdown(effects: pd.DataFrame) -> str:
    """The effects as a markdown section appended to the card."""
    from judgelab.bias_card.report import _fmt, md_escape

    if effects.empty:
        return ""
    lines = ["# Insertion probes (bandwagon, sentiment)", "",
             "The share of verdicts that pick the cue's side with the cue, minus the share on the same items "
             "and orders without it (the position probe); item-clustered CI and t-test, corrected per judge.", "",
             "| judge | probe | status | shift | CI | with cue | without | n (items) | p | p adj. | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table_tuples(effects):
        lines.append(f"| {md_escape(r.judge)} | {r.probe} | {r.status} | {_fmt(r.estimate)} | "
                     f"[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] | {_fmt(r.cue_share)} | {_fmt(r.base_share)} | "
                     f"{r.n} ({r.n_items}) | {_fmt(r.p_value)} | {_fmt(r.p_adjusted)} | "
                     f"{md_escape(r.reason or r.note)} |")
    return "\n".join(lines) + "\n"
