"""Metrics of paper 004 and the study's additions: correlations, fluctuation, distributions.

Paper 004 (Metrics) measures *scoring accuracy* as the correlation between gold
scores S and the judge's scores S' -- Spearman's rho and Pearson's r -- and
*scoring tendency* as the score distribution N = (N_1, ..., N_5), N_k = #{i: s'_i = k}
(Eqs. 3-4); Figure 6 adds a column for failed judgments (-1).  Scoring bias is the
change of these under a prompt perturbation, read against the unperturbed prompt.

Conventions here:

* A score of -1 (no score in the requested scheme) is counted in N_-1 and in
  ``n_unparsed``; it is left out of correlations (it is not a point on the 1-5
  scale), never turned into one.
* ``delta_rho`` of a variant is rho(variant) - rho(baseline) on the items both
  scored (paired); its CI is a paired bootstrap over items.  All variants and
  judges of a (data set, gold) share the same item resamples, so
  ``fluctuation`` = max over a family's variants of |delta_rho| (the paper's
  "maximum fluctuation") has a *simultaneous* 95% band: the (1 - alpha) quantile c
  of max_p |delta*_p - delta_p| over resamples; the fluctuation is significant when
  it exceeds c, i.e. when some variant's simultaneous interval delta_p +- c excludes 0.
* Krippendorff's alpha (ordinal, over the value domain 1-5) is the ``krippendorff``
  package's; its CI and that of exact agreement are percentile bootstraps over items (the
  same resamples); exact agreement also gets a Wilson interval (statsmodels).

Tables (long form, CSV):

``table3`` -- one row per data set x gold source x judge x variant: ``n`` (items with a
gold score), ``n_unparsed``, ``rho``, ``rho_ci_low/high``, ``r``, ``r_ci_low/high``,
``n_common``, ``delta_rho``, ``delta_ci_low/high`` (per variant) and
``delta_sim_ci_low/high`` (simultaneous within the variant's family), ``delta_r``; the
rule adds ``n_no_reference`` (items that left a reference variant for want of a matched
reference, ``generation.on_reject: drop``; per variant in ``reference_coverage.csv``);
``reason``: empty on a scored row; a judge whose every scoring of a variant failed keeps its
row, correlations NaN, and ``reason`` says why (:mod:`judgelab.stats.unscored`, e.g. ``no parsable
score: 40 of 40 unparsed``).

``fluctuation`` -- one row per data set x gold x judge x family (rubric_order,
score_ids, reference, all): ``fluctuation`` = max |delta_rho|, ``argmax_variant``,
``sim_halfwidth`` (c), ``significant``, ``max_abs_ci_low/high`` (percentile
interval of the bootstrap max |delta*|).

``distributions`` -- N_k per data set x judge x variant (k = -1, 1..5) and the gold
rows (``judge`` = ``[gold:<source>]``, variant ``-``), with ``share``.

``aggregation`` -- beyond the paper: per data set x gold x judge x variant set x
aggregator, rho of the aggregated score, rho of the baseline, their difference with
a paired-bootstrap CI, and ``n``; ``reason`` (empty on a scored row) says why a row has no
correlation: its gold set has no gold score, or its judge no valid baseline / variant score.

``stability`` -- per data set x rater (``gpt4`` = the three recorded GPT-4 scorings,
``gold_judge`` = the gold protocol's three scorings): exact agreement of the three
(bootstrap and Wilson CIs), mean pairwise agreement, ordinal Krippendorff's alpha (bootstrap CI),
mean pairwise Spearman between runs, ``loo_rho_mean`` / ``loo_rho_spread`` (Spearman of
each run against the mean of the others, and max - min of those across runs: how far a
correlation moves from sampling alone, the yardstick for a perturbation's |delta rho|),
and the score distribution (all scorings, ``n_score_k``; majorities, ``n_majority_k``);
``reason`` (empty on a scored row): a gold judge none of whose scorings parsed keeps its row,
its statistics NaN and its counts kept, with the counts of failures.

``fluctuation`` rows say in ``reason`` why their fluctuation is NaN: no gold score, no valid
baseline score, or no valid score under any of the family's variants.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from judgelab.io import any_true, table_tuples
from judgelab.registry import Registry
from judgelab.scoring.items import majority_score, stable_seed
from judgelab.scoring.prompt import VARIANTS
from judgelab.stats.intervals import DEFAULT_ALPHA, wilson_interval
from judgelab.stats.unscored import blank, no_gold_reason, no_value_reason

SCORES = (-1, 1, 2, 3, 4, 5)
FLUCTUATION_FAMILIES = ("rubric_order", "score_ids", "reference", "all")


# -- correlation over NaN-masked rows (vectorised over bootstrap resamples) ------------------


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r along the last axis over positions where both are finite."""
    ok = np.isfinite(x) & np.isfinite(y)
    n = ok.sum(axis=-1)
    xm = np.where(ok, x, 0.0)
    ym = np.where(ok, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = xm.sum(axis=-1, keepdims=True) / n[..., None]
        my = ym.sum(axis=-1, keepdims=True) / n[..., None]
        dx = np.where(ok, x - mx, 0.0)
        dy = np.where(ok, y - my, 0.0)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    return np.where(n >= 3, r, np.nan)


def rank_rows(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank); NaN is not ranked.

    Scores take a handful of values, so ranks come from counting: the rank of value v
    is #(values < v) + (#(values == v) + 1) / 2 -- the same as
    ``scipy.stats.rankdata(..., nan_policy="omit")`` (tested), several times faster on
    thousands of bootstrap rows.  Many distinct values fall back to scipy.
    """
    a = np.asarray(a, float)
    ok = np.isfinite(a)
    vals = np.unique(a[ok])
    if len(vals) == 0:
        return np.full(a.shape, np.nan)
    if len(vals) > 64:
        from scipy import stats  # here: the query jobs import this module for stable_seed alone

        return stats.rankdata(a, axis=-1, nan_policy="omit")
    pos = np.searchsorted(vals, np.where(ok, a, vals[0]))
    # counts[..., v] = #(ranked values equal to vals[v]) in that row: one bincount over
    # (row, value) codes, not a (..., n, V) indicator array summed over n
    n_rows = int(np.prod(a.shape[:-1], dtype=np.int64))
    codes = np.arange(n_rows).reshape((*a.shape[:-1], 1)) * len(vals) + pos
    counts = np.bincount(codes[ok], minlength=n_rows * len(vals)).reshape((*a.shape[:-1], len(vals)))
    avg = np.cumsum(counts, axis=-1) - counts + (counts + 1) / 2.0
    return np.where(ok, np.take_along_axis(avg, pos, axis=-1), np.nan)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho along the last axis: Pearson r of average ranks of the jointly finite pairs."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = np.broadcast_arrays(x, y)
    return _pearson_rows(rank_rows(np.where(ok, x, np.nan)), rank_rows(np.where(ok, y, np.nan)))


CORRELATIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "rho": _spearman_rows,
    "r": _pearson_rows,
}


def correlation(x: Sequence[float], y: Sequence[float], kind: str = "rho") -> float:
    return float(CORRELATIONS[kind](np.asarray(x, float)[None, :], np.asarray(y, float)[None, :])[0])


def bootstrap_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _ci(samples: np.ndarray, alpha: float) -> tuple[float, float]:
    s = samples[np.isfinite(samples)]
    if len(s) == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(s, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


# -- golds -------------------------------------------------------------------------------------


def gold_frame(items: pd.DataFrame, gold_scores: pd.DataFrame | None) -> pd.DataFrame:
    """Long table of gold scores: dataset, item_id, gold_source, gold.

    ``gold_judge`` is the majority of the gold protocol's repeated scorings
    (:func:`~judgelab.scoring.items.majority_score`; unparsed scorings do not vote);
    ``gpt4``, ``human`` and ``design`` come from the items table where present.
    """
    rows = []
    for src, col in (("gpt4", "gold_gpt4"), ("human", "human_score"), ("design", "design_score")):
        sub = items[items[col].notna()]
        rows.append(pd.DataFrame({"dataset": sub["dataset"], "item_id": sub["item_id"], "gold_source": src,
                                  "gold": sub[col].astype(float)}))
    if gold_scores is not None and len(gold_scores):
        g = gold_scores.copy()
        g["score"] = g["score"].where(g["score"] >= 1)
        per_item = g.groupby(["dataset", "item_id"], sort=True)["score"].agg(
            lambda s: np.nan if (m := majority_score(list(s))) is None else m)
        maj = per_item.dropna().reset_index().rename(columns={"score": "gold"})
        maj["gold_source"] = "gold_judge"
        rows.append(maj[["dataset", "item_id", "gold_source", "gold"]])
    out = pd.concat(rows, ignore_index=True)
    return out.sort_values(["dataset", "gold_source", "item_id"], kind="stable").reset_index(drop=True)


# -- Table 3 and fluctuation -------------------------------------------------------------------


_ORDER = ("baseline", "descending", "random", "letter", "roman", "ref1", "ref2", "ref3", "ref4", "ref5")


def _variant_order(names: Sequence[str]) -> list[str]:
    """The paper's row order (baseline, rubric order, score IDs, references), others after."""
    return sorted(names, key=lambda v: (_ORDER.index(v) if v in _ORDER else len(_ORDER), v))


def gold_gaps(gold_scores: pd.DataFrame | None, golds: pd.DataFrame) -> pd.DataFrame:
    """The data sets the gold protocol scored without yielding one gold score: ``dataset``,
    ``gold_source`` (``gold_judge``) and ``reason`` (:func:`judgelab.stats.unscored.no_gold_reason`,
    e.g. ``no gold score: gold judge X: 40 of 40 unparsed``).

    :func:`gold_frame` has no row for such a set; passed to :func:`correlation_tables` and
    :func:`aggregation_table`, these gaps keep every judge's rows of that set, NaN, with the reason.
    """
    cols = ["dataset", "gold_source", "reason"]
    if gold_scores is None or not len(gold_scores):
        return pd.DataFrame(columns=cols)
    have = set(golds.loc[golds["gold_source"] == "gold_judge", "dataset"])
    rows = []
    for ds, g in gold_scores.groupby("dataset", sort=True):
        if ds in have:
            continue
        judge = ", ".join(sorted(map(str, g["judge"].unique()))) if "judge" in g else "(unnamed)"
        statuses = g["status"] if "status" in g else [""] * len(g)
        reason = no_gold_reason(judge, statuses, usable=(pd.to_numeric(g["score"], errors="coerce") >= 1).to_numpy())
        rows.append({"dataset": ds, "gold_source": "gold_judge",
                     "reason": reason or "no gold score: no item with a majority gold score"})
    return pd.DataFrame(rows, columns=cols)


def _gold_sets(scores: pd.DataFrame, golds: pd.DataFrame, gaps: pd.DataFrame | None = None):
    """Yield (dataset, gold source, items, gold scores, first-repeat scores, reason) per gold set
    with at least 3 items scored by the judges -- the unit every correlation table uses -- and,
    for each gap (a set without a gold score, :func:`gold_gaps`), the judges' items with NaN gold
    and the gap's reason."""
    s = scores[scores["repeat"] == 0]
    sets: list[tuple[Any, Any, pd.DataFrame | None, str]] = [
        (ds, src, g, "") for (ds, src), g in golds.groupby(["dataset", "gold_source"], sort=True)]
    if gaps is not None:
        sets += [(r.dataset, r.gold_source, None, r.reason) for r in table_tuples(gaps)]
    for ds, src, g, reason in sorted(sets, key=lambda t: (t[0], t[1])):
        sd = s[s["dataset"] == ds]
        if g is None:
            items = sorted(set(sd["item_id"]))
            if items:
                yield ds, src, items, np.full(len(items), np.nan), sd, reason
            continue
        gold = g.set_index("item_id")["gold"]
        items = sorted(set(gold.index) & set(sd["item_id"]))
        if len(items) >= 3:
            yield ds, src, items, gold.loc[items].to_numpy(float), sd, ""


class _Resampled:
    """Correlations of one gold vector with score vectors, on the data and on shared resamples.

    Ranks of a (vector, mask) pair are computed once and reused: the baseline enters
    every variant's paired difference, and most variants have no unparsed answers, so
    their masks coincide.
    """

    def __init__(self, x: np.ndarray, idx: np.ndarray) -> None:
        self.x, self.idx = x, idx
        self._ranks: dict[tuple[str, bytes], np.ndarray] = {}

    def _rank(self, key: str, vals: np.ndarray, mask: np.ndarray) -> np.ndarray:
        k = (key, mask.tobytes())
        if k not in self._ranks:
            self._ranks[k] = rank_rows(np.where(mask[self.idx], vals[self.idx], np.nan))
        return self._ranks[k]

    def corr(self, kind: str, y: np.ndarray, mask: np.ndarray, key: str) -> tuple[float, np.ndarray]:
        """(point estimate, bootstrap replicates) of ``kind`` over the items in ``mask``."""
        xm, ym = np.where(mask, self.x, np.nan), np.where(mask, y, np.nan)
        point = float(CORRELATIONS[kind](xm[None, :], ym[None, :])[0])
        if kind == "rho":
            boot = _pearson_rows(self._rank("\0gold", self.x, mask), self._rank(key, y, mask))
        else:
            boot = _pearson_rows(xm[self.idx], ym[self.idx])
        return point, boot

    def forget(self, prefix: str) -> None:
        self._ranks = {k: v for k, v in self._ranks.items() if not k[0].startswith(prefix)}


def correlation_tables(
    scores: pd.DataFrame,
    golds: pd.DataFrame,
    *,
    n_boot: int = 1000,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    baseline: str = "baseline",
    gaps: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table3, fluctuation) -- see the module docstring for the columns.

    ``gaps`` (:func:`gold_gaps`): gold sets without a gold score, whose judges keep their rows,
    NaN, with the gap's reason.
    """
    t3_rows, fl_rows = [], []
    for ds, src, items, x, sd, gold_reason in _gold_sets(scores, golds, gaps):
        rs = _Resampled(x, bootstrap_indices(len(items), n_boot, stable_seed(seed, ds, src)))
        for judge, sj in sd.groupby("judge", sort=True):
            rs.forget(f"{judge}\0")
            wide = sj.pivot_table(index="item_id", columns="variant", values="score", aggfunc="first")
            wide = wide.reindex(items)
            variants = _variant_order(list(wide.columns))
            fam = {v: VARIANTS.get(v).family if v in VARIANTS else "other" for v in variants}
            y = {v: wide[v].to_numpy(float) for v in variants}
            yv = {v: np.where(y[v] >= 1, y[v], np.nan) for v in variants}
            boot: dict[str, np.ndarray] = {}
            point: dict[str, float] = {}
            base = yv.get(baseline)
            rows: list[dict] = []
            for v in variants:
                key = f"{judge}\0{v}"
                sv = sj[sj["variant"] == v]
                reason = gold_reason or no_value_reason(sv["status"] if "status" in sv else [""] * len(sv),
                                                        what="score", usable=(sv["score"] >= 1).to_numpy())
                row = {"dataset": ds, "gold_source": src, "judge": judge, "variant": v, "perturbation": fam[v],
                       "n": int(np.isfinite(y[v]).sum()), "n_unparsed": int((y[v] == -1).sum())}
                valid = np.isfinite(yv[v])
                for kind in CORRELATIONS:
                    row[kind], b = rs.corr(kind, yv[v], valid, key)
                    row[f"{kind}_ci_low"], row[f"{kind}_ci_high"] = _ci(b, alpha)
                if base is not None:
                    common = np.isfinite(base) & valid
                    row["n_common"] = int(common.sum())
                    for kind in CORRELATIONS:
                        pv, bv = rs.corr(kind, yv[v], common, key)
                        pb, bb = rs.corr(kind, base, common, f"{judge}\0{baseline}")
                        row[f"delta_{kind}"] = pv - pb
                        if kind == "rho":
                            row["delta_ci_low"], row["delta_ci_high"] = _ci(bv - bb, alpha)
                            point[v], boot[v] = pv - pb, bv - bb
                rows.append(blank(row, _CORR_STATS, reason))  # NaN gold: correlations NaN anyway
            t3_rows.extend(rows)
            if base is None:
                continue
            # simultaneous bands and fluctuation per family
            halfwidth: dict[str, float] = {}
            for family in FLUCTUATION_FAMILIES:
                members = [v for v in variants
                           if v != baseline and ((family == "all" and fam[v] != "baseline") or fam[v] == family)]
                if not members:
                    continue
                D = np.vstack([boot[v] for v in members])  # variants x resamples
                P = np.array([point[v] for v in members])
                if np.isfinite(D).any():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN resamples
                        dev = np.nanmax(np.abs(D - P[:, None]), axis=0)
                        maxabs = np.nanmax(np.abs(D), axis=0)
                    c = float(np.nanquantile(dev, 1 - alpha))
                else:
                    maxabs, c = np.full(D.shape[1], np.nan), float("nan")
                if family != "all":
                    for v in members:
                        halfwidth[v] = c
                absP = np.abs(P)
                j = int(np.nanargmax(absP)) if np.isfinite(absP).any() else 0
                lo, hi = _ci(maxabs, alpha)
                why = {r["variant"]: r["reason"] for r in rows}
                fl_reason = gold_reason or (f"{baseline}: {why[baseline]}" if why.get(baseline) else "")
                if not fl_reason and all(why[v] for v in members):
                    fl_reason = "; ".join(f"{v}: {why[v]}" for v in members)
                fl_rows.append({
                    "dataset": ds, "gold_source": src, "judge": judge, "family": family,
                    "n_variants": len(members), "fluctuation": float(absP[j]), "argmax_variant": members[j],
                    "delta_at_max": float(P[j]), "sim_halfwidth": c,
                    "significant": bool(np.isfinite(c) and absP[j] > c), "max_abs_ci_low": lo, "max_abs_ci_high": hi,
                    "reason": fl_reason,
                })
            for row in rows:
                c = halfwidth.get(row["variant"], np.nan)
                row["delta_sim_ci_low"] = row.get("delta_rho", np.nan) - c
                row["delta_sim_ci_high"] = row.get("delta_rho", np.nan) + c
    table3 = pd.DataFrame(t3_rows, columns=TABLE3_COLUMNS)
    return table3, pd.DataFrame(fl_rows, columns=FLUCTUATION_COLUMNS)


TABLE3_COLUMNS = [
    "dataset", "gold_source", "judge", "variant", "perturbation", "n", "n_unparsed", "rho", "rho_ci_low",
    "rho_ci_high", "r", "r_ci_low", "r_ci_high", "n_common", "delta_rho", "delta_ci_low", "delta_ci_high",
    "delta_sim_ci_low", "delta_sim_ci_high", "delta_r", "reason",
]
#: the correlation columns of a Table 3 row (NaN on a row whose variant has no valid score)
_CORR_STATS = ("rho", "rho_ci_low", "rho_ci_high", "r", "r_ci_low", "r_ci_high")
FLUCTUATION_COLUMNS = [
    "dataset", "gold_source", "judge", "family", "n_variants", "fluctuation", "argmax_variant", "delta_at_max",
    "sim_halfwidth", "significant", "max_abs_ci_low", "max_abs_ci_high", "reason",
]


def table3_wide(table3: pd.DataFrame) -> pd.DataFrame:
    """Paper 004's Table 3 layout: rows judge x perturbation x strategy, columns data set / gold / (rho, r)."""
    if table3.empty:
        return pd.DataFrame()
    t = table3.copy()
    t["strategy"] = t["variant"].map(lambda v: VARIANTS.get(v).label if v in VARIANTS else v)
    t["col"] = t["dataset"] + "/" + t["gold_source"]
    wide = t.pivot_table(index=["judge", "perturbation", "strategy", "variant"], columns="col", values=["rho", "r"],
                         aggfunc="first")
    cols = sorted(t["col"].unique())
    # every set/gold column, an all-empty one included (a human-scored set not downloaded: its cells empty)
    wide = wide.reindex(columns=[(m, c) for c in cols for m in ("rho", "r")])
    wide.columns = [f"{c} {m}" for m, c in zip(wide.columns.get_level_values(0), wide.columns.get_level_values(1),
                                                strict=True)]
    wide = wide.reset_index()
    order = {v: i for i, v in enumerate(_variant_order(list(wide["variant"].unique())))}
    wide["_o"] = wide["variant"].map(order)
    return wide.sort_values(["judge", "_o"], kind="stable").drop(columns=["_o"]).reset_index(drop=True)


# -- distributions -----------------------------------------------------------------------------


def distributions(scores: pd.DataFrame, golds: pd.DataFrame) -> pd.DataFrame:
    """N_k per data set x judge x variant (k = -1, 1..5), plus the gold rows (Figure 6)."""
    rows = []
    s = scores[scores["repeat"] == 0]
    for (ds, judge, variant), g in s.groupby(["dataset", "judge", "variant"], sort=True):
        counts = g["score"].astype(int).value_counts()
        for k in SCORES:
            rows.append({"dataset": ds, "judge": judge, "variant": variant, "score": k,
                         "count": int(counts.get(k, 0)), "share": float(counts.get(k, 0)) / len(g)})
    for (ds, src), g in golds.groupby(["dataset", "gold_source"], sort=True):
        rounded = np.floor(g["gold"].to_numpy(float) + 0.5).astype(int)  # human means -> nearest score
        for k in SCORES:
            c = int((rounded == k).sum())
            rows.append({"dataset": ds, "judge": f"[gold:{src}]", "variant": "-", "score": k, "count": c,
                         "share": c / len(g)})
    return pd.DataFrame(rows, columns=["dataset", "judge", "variant", "score", "count", "share"])


# -- aggregation over perturbation variants (beyond the paper) ---------------------------------

AggregatorFn = Callable[[np.ndarray], np.ndarray]
AGGREGATORS: Registry[AggregatorFn] = Registry("score aggregator")


@AGGREGATORS.register("mean")
def _agg_mean(m: np.ndarray) -> np.ndarray:
    """Mean of the valid scores of each item (rows = items, columns = variants)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an item with no valid score -> NaN
        return np.nanmean(m, axis=1)


@AGGREGATORS.register("majority")
def _agg_majority(m: np.ndarray) -> np.ndarray:
    """Majority vote of the valid scores (median when no score is the most frequent)."""
    return np.array([np.nan if (v := majority_score(list(row))) is None else v for row in m], float)


@AGGREGATORS.register("median")
def _agg_median(m: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(m, axis=1)


def aggregation_table(
    scores: pd.DataFrame,
    golds: pd.DataFrame,
    variant_sets: dict[str, list[str]],
    aggregators: Sequence[str] = ("mean", "majority"),
    *,
    n_boot: int = 1000,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    baseline: str = "baseline",
    gaps: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Does aggregating a judge's scores over prompt variants track gold better than one prompt?

    Paper 004's stated future work ("scoring multiple times followed by majority
    voting or averaging the scores, require empirical validation"): for each variant
    set and aggregator, rho(gold, aggregate) - rho(gold, baseline) on the items with
    a baseline score and at least one valid variant score, with a paired bootstrap CI
    over items.

    ``reason`` is empty on a scored row; a row whose gold set has no gold score (``gaps``,
    :func:`gold_gaps`), whose judge has no valid baseline score, or none among the set's
    variants keeps its ``n`` with NaN correlations and says why (:mod:`judgelab.stats.unscored`).
    """
    rows = []
    for ds, src, items, x, sd, gold_reason in _gold_sets(scores, golds, gaps):
        rs = _Resampled(x, bootstrap_indices(len(items), n_boot, stable_seed(seed, "aggregation", ds, src)))
        for judge, sj in sd.groupby("judge", sort=True):
            rs.forget(f"{judge}\0")
            wide = sj.pivot_table(index="item_id", columns="variant", values="score", aggfunc="first").reindex(items)
            if baseline not in wide.columns:
                continue
            wide = wide.where(wide >= 1)
            base = wide[baseline].to_numpy(float)
            for set_name, members in variant_sets.items():
                present = [v for v in members if v in wide.columns]
                if len(present) < 2:
                    continue
                m = wide[present].to_numpy(float)
                reason = gold_reason or _unscored(sj, [baseline]) or _unscored(sj, present)
                for agg in aggregators:
                    a = AGGREGATORS.get(agg, where="scoring.aggregation.aggregators")(m)
                    common = np.isfinite(base) & np.isfinite(a)
                    rho_a, ba = rs.corr("rho", a, common, f"{judge}\0{set_name}\0{agg}")
                    rho_b, bb = rs.corr("rho", base, common, f"{judge}\0{baseline}")
                    lo, hi = _ci(ba - bb, alpha)
                    row = {"dataset": ds, "gold_source": src, "judge": judge, "variant_set": set_name,
                           "variants": ",".join(present), "aggregator": agg, "n": int(common.sum()),
                           "rho_aggregate": rho_a, "rho_baseline": rho_b, "delta_rho": rho_a - rho_b,
                           "delta_ci_low": lo, "delta_ci_high": hi, "improves": bool(np.isfinite(lo) and lo > 0)}
                    rows.append({**row, "reason": reason})  # no valid pair: every rho is NaN already
    return pd.DataFrame(rows, columns=AGGREGATION_COLUMNS)


AGGREGATION_COLUMNS = [
    "dataset", "gold_source", "judge", "variant_set", "variants", "aggregator", "n", "rho_aggregate",
    "rho_baseline", "delta_rho", "delta_ci_low", "delta_ci_high", "improves", "reason"]


def _unscored(sj: pd.DataFrame, variants: Sequence[str]) -> str:
    """Why none of a judge's first-repeat scorings under ``variants`` is a valid score ("" when one is)."""
    sv = sj[sj["variant"].isin(variants)]
    reason = no_value_reason(sv["status"] if "status" in sv else [""] * len(sv), what="score",
                             usable=(sv["score"] >= 1).to_numpy())
    return f"{'/'.join(variants) if len(variants) == 1 else 'every variant of the set'}: {reason}" if reason else ""


# -- run-to-run stability of repeated scorings -------------------------------------------------


def krippendorff_alpha_ordinal(runs: np.ndarray) -> float:
    """Ordinal Krippendorff's alpha of a raters x units matrix of 1-5 scores (NaN = missing)."""
    import krippendorff

    data = np.asarray(runs, float)
    if np.isfinite(data).sum() < 2:
        return float("nan")
    vals = data[np.isfinite(data)]
    if len(np.unique(vals)) < 2:
        return float("nan")  # no variation at all: alpha is undefined
    if not (np.isfinite(data).sum(axis=0) >= 2).any():
        return float("nan")  # no unit scored twice (one run): nothing to agree on
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                                    value_domain=[1, 2, 3, 4, 5]))


def stability(runs: np.ndarray, *, n_boot: int = 1000, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> dict[str, float]:
    """Run-to-run stability of repeated scorings (``runs``: items x repeats, NaN = no score)."""
    runs = np.asarray(runs, float)
    complete = np.isfinite(runs).all(axis=1)
    full = runs[complete]
    n = len(full)
    exact = int((full == full[:, :1]).all(axis=1).sum()) if n else 0
    lo, hi = wilson_interval(exact, n, alpha=alpha)
    pair_agree = [float(np.mean(full[:, a] == full[:, b])) for a, b in combinations(range(runs.shape[1]), 2)] if n else []
    pair_rho = [correlation(full[:, a], full[:, b]) for a, b in combinations(range(runs.shape[1]), 2)] if n > 2 else []
    # how far a correlation moves when only the sampling changes: rho of each run against the
    # mean of the other runs (leave-one-out), and the spread of those rhos across runs
    loo = ([correlation(full[:, k], np.delete(full, k, axis=1).mean(axis=1)) for k in range(runs.shape[1])]
           if n > 2 and runs.shape[1] > 1 else [])
    a_point = krippendorff_alpha_ordinal(runs.T)
    # percentile bootstrap over items, the same resamples for alpha and exact agreement
    rng = np.random.default_rng(seed)
    same = (full == full[:, :1]).all(axis=1) if n else np.zeros(0, bool)
    a_boot, e_boot = np.empty(n_boot), np.empty(n_boot)
    for b in range(n_boot):
        pick = rng.integers(0, len(runs), len(runs))
        a_boot[b] = krippendorff_alpha_ordinal(runs[pick].T)
        c = complete[pick]
        e_boot[b] = same[np.cumsum(complete)[pick[c]] - 1].mean() if c.any() else np.nan
    a_lo, a_hi = _ci(a_boot, alpha)
    e_lo, e_hi = _ci(e_boot, alpha)
    flat = runs[np.isfinite(runs)].astype(int)
    dist = {f"n_score_{k}": int((flat == k).sum()) for k in range(1, 6)}
    majority = [majority_score(list(r)) for r in runs]
    mdist = {f"n_majority_{k}": int(sum(1 for m in majority if m == k)) for k in range(1, 6)}
    return {
        "n_items": len(runs), "n_complete": n, "n_repeats": int(runs.shape[1]),
        "n_unparsed": int((~np.isfinite(runs)).sum()),
        "exact_agreement": exact / n if n else np.nan, "exact_ci_low": e_lo, "exact_ci_high": e_hi,
        "exact_wilson_low": float(lo), "exact_wilson_high": float(hi),
        "pairwise_agreement": float(np.mean(pair_agree)) if pair_agree else np.nan,
        "alpha_ordinal": a_point, "alpha_ci_low": a_lo, "alpha_ci_high": a_hi,
        "mean_pairwise_rho": float(np.mean(pair_rho)) if pair_rho else np.nan,
        "loo_rho_mean": float(np.mean(loo)) if loo else np.nan,
        "loo_rho_spread": float(np.max(loo) - np.min(loo)) if loo else np.nan,
        **dist, **mdist,
    }


def stability_table(items: pd.DataFrame, gold_scores: pd.DataFrame | None, *, n_boot: int = 1000,
                    alpha: float = DEFAULT_ALPHA, seed: int = 0) -> pd.DataFrame:
    """Stability of GPT-4's three recorded scorings (all items of a set) and of the gold protocol."""
    rows: list[dict[str, Any]] = []
    for ds, g in items.groupby("dataset", sort=True):
        rec = g[["gpt4_1", "gpt4_2", "gpt4_3"]].to_numpy(float)
        if np.isfinite(rec).any():
            rows.append({"dataset": ds, "rater": "gpt4", "judge": "gpt-4 (recorded)", "simulated": False,
                         **stability(rec, n_boot=n_boot, alpha=alpha, seed=stable_seed(seed, ds, "gpt4")), "reason": ""})
    if gold_scores is not None and len(gold_scores):
        for (set_name, judge), g in gold_scores.groupby(["dataset", "judge"], sort=True):
            wide = g.pivot_table(index="item_id", columns="repeat", values="score", aggfunc="first")
            runs = wide.where(wide >= 1).to_numpy(float)
            reason = no_value_reason(g["status"] if "status" in g else [""] * len(g), what="score",
                                     usable=(pd.to_numeric(g["score"], errors="coerce") >= 1).to_numpy())
            rows.append({"dataset": set_name, "rater": "gold_judge", "judge": judge, "simulated": any_true(g),  # no valid
                         **stability(runs, n_boot=n_boot, alpha=alpha, seed=stable_seed(seed, set_name, "gold")),  # run: NaN
                         "reason": reason})
    return pd.DataFrame(rows)

