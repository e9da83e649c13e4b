"""Reliability rows of the bias card: one judge asked the same call again, several judges on one item.

``repetition_consistency`` (per judge)
    Position-Bias-Analyzer's repetitional consistency (Shi et al. 2024, "Judging the Judges";
    Slimshilin/Position-Bias-Analyzer ``judging_the_judges/repetitional_consistency/
    calculate_repetitional_consistency.py``, commit 0eb0ce93): for each evaluation instance (a pair
    in one presentation order: "the swapped order of response is regarded as a different
    evaluation instance") asked two or more times, the count of its most frequent verdict over
    the number of repetitions (a repetition without a verdict is in the denominator and never the
    majority: pandas' ``value_counts`` drops it there, ``len`` keeps it); the judge's figure is
    the mean over instances.  Here with an item-clustered Wilson interval on the instances.
``judges_kappa`` (one row for the table, judge ``all judges``)
    agreement between judges on the presentations every one of them judged with a verdict
    (same pair, order and first repetition): Cohen's kappa for two judges (statsmodels
    ``cohens_kappa``, its asymptotic CI), Fleiss' kappa for three or more (statsmodels
    ``fleiss_kappa``, with an item-cluster percentile bootstrap CI, which statsmodels does not
    give; hand-written for that reason).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.bias_card.humans import LABELS, cohen_kappa

NAN = float("nan")
PANEL_JUDGE = "all judges"


def repetition_instances(pairs: np.ndarray, order: np.ndarray, verdict: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, int]:
    """(first row of each repeated instance, its consistency, instances asked more than once).

    An instance is one pair in one order; its rows are its repetitions."""
    key = pd.factorize(pd.Series(pairs).astype(str) + "\x1f" + pd.Series(order).astype(str))[0]
    n_inst = int(key.max()) + 1 if len(key) else 0
    reps = np.bincount(key, minlength=n_inst)
    has = np.isin(verdict, LABELS)
    top = np.zeros(n_inst)
    for lab in LABELS:
        top = np.maximum(top, np.bincount(key, weights=has & (verdict == lab), minlength=n_inst))
    first = np.full(n_inst, -1)
    first[key[::-1]] = np.arange(len(key))[::-1]
    rep = reps >= 2
    return first[rep], top[rep] / reps[rep], int(rep.sum())


def judge_matrix(table: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, int]:
    """(units x judges verdicts, item code per unit, judges) over the presentations (pair, order, first
    repetition) that every judge judged with a verdict."""
    t = table[table["verdict"].astype(str).isin(LABELS)]
    if "repeat" in t.columns:
        t = t[pd.to_numeric(t["repeat"], errors="coerce").fillna(0) == 0]
    n_judges = table["judge"].astype(str).nunique()
    t = t.assign(_u=t["pair_id"].astype(str) + "\x1f" + t["order"].astype(str), _j=t["judge"].astype(str),
                 _v=t["verdict"].astype(str))
    wide = t.drop_duplicates(["_u", "_j"]).pivot(index="_u", columns="_j", values="_v")
    wide = wide.reindex(columns=sorted(table["judge"].astype(str).unique())).dropna()
    first = t.drop_duplicates("_u").set_index("_u")
    item_col = first["item_id"] if "item_id" in first.columns else first["pair_id"]
    return wide, pd.factorize(item_col.reindex(wide.index).astype(str))[0], n_judges


def category_counts(wide: pd.DataFrame) -> np.ndarray:
    """units x categories (A, B, tie) counts of a units x judges verdict matrix."""
    if wide.empty:
        return np.zeros((0, len(LABELS)))
    return np.stack([(wide == lab).sum(axis=1).to_numpy() for lab in LABELS], axis=1).astype(float)


def fleiss(counts: np.ndarray) -> float:
    """Fleiss' kappa (statsmodels) of a units x categories count table; NaN when undefined
    (no unit, or every rating in one category: the expected agreement is 1)."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    if len(counts) == 0:
        return NAN
    p = counts.sum(0) / counts.sum()
    if (p ** 2).sum() >= 1 - 1e-12:
        return NAN
    with np.errstate(invalid="ignore", divide="ignore"):  # a unit with a single rating: NaN, not a warning line
        return float(fleiss_kappa(counts, method="fleiss"))


def fleiss_ci(counts: np.ndarray, items: np.ndarray, *, n_resamples: int, confidence: float, seed: int
              ) -> tuple[float, float]:
    """Percentile bootstrap CI of Fleiss' kappa, resampling whole items (vectorised over resamples)."""
    k = int(items.max()) + 1 if len(items) else 0
    if k < 2:
        return NAN, NAN
    m = counts.sum(1)[0]
    p_i = ((counts ** 2).sum(1) - m) / (m * (m - 1))
    per_item = np.column_stack([np.bincount(items, weights=p_i, minlength=k),
                                np.bincount(items, minlength=k)]
                               + [np.bincount(items, weights=counts[:, j], minlength=k) for j in range(counts.shape[1])])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, k, size=(n_resamples, k))
    tot = per_item[idx].sum(axis=1)  # (resamples, 2 + categories)
    pbar = tot[:, 0] / tot[:, 1]
    pj = tot[:, 2:] / (tot[:, 1:2] * m)
    pe = (pj ** 2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kap = np.where(pe < 1, (pbar - pe) / (1 - pe), NAN)
    a = (1 - confidence) / 2
    if np.isnan(kap).all():
        return NAN, NAN
    lo, hi = np.nanquantile(kap, [a, 1 - a])
    return float(lo), float(hi)


def judges_kappa(table: pd.DataFrame, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict:
    """The between-judge agreement row's fields (estimate, ci_low, ci_high, se, n, n_items, reason, note)."""
    wide, items, n_judges = judge_matrix(table)
    counts = category_counts(wide)
    out = {"estimate": NAN, "ci_low": NAN, "ci_high": NAN, "se": NAN, "n": len(wide),
           "n_items": len(np.unique(items)), "reason": "", "note": ""}
    if n_judges < 2:
        out["reason"] = "one judge: no agreement between judges"
        return out
    if len(wide) == 0:
        out["reason"] = f"no presentation judged with a verdict by all {n_judges} judges"
        return out
    if n_judges == 2:
        kap, se, lo, hi, reason = cohen_kappa(wide.iloc[:, 0].to_numpy(), wide.iloc[:, 1].to_numpy(), confidence)
        out.update(estimate=kap, se=se, ci_low=lo, ci_high=hi, reason=reason,
                   note=f"Cohen's kappa, {wide.columns[0]} vs {wide.columns[1]} (statsmodels, asymptotic CI)")
        return out
    kap = fleiss(counts)
    if not np.isfinite(kap):
        out["reason"] = "kappa undefined: every verdict in one category (expected agreement 1)"
        return out
    lo, hi = fleiss_ci(counts, items, n_resamples=n_resamples, confidence=confidence, seed=seed)
    out.update(estimate=kap, ci_low=lo, ci_high=hi, note=f"Fleiss' kappa, {n_judges} judges (statsmodels; "
                                                          "item-cluster bootstrap CI)")
    return out
