"""The study's statistics over strategy verdict tables (paper 003, Secs. 3.5, 4; Appendices D-F).

Conventions (paper 003, Sec. 3.5 and Appendix D): "correct" is an exact-label match (a tie is
correct only when gold is a tie); an instance without a verdict (unparsed, refused, failed) is
wrong and is counted in ``n_no_verdict`` -- never dropped.  Every rate has a percentile
bootstrap 95% CI over instances (scipy.stats.bootstrap, 2,000 resamples by default), seeded
per table cell from the pipeline seed, so reruns give identical tables.  A cell with no
verdict at all keeps its row with its rates NaN and ``reason`` saying why
(:mod:`judgelab.stats.unscored`; agreement, category, bias and topic tables; empty when scored):
counting every missing verdict as wrong would print 0 % agreement, and a bias score of 0.

Tables (all long format, one row per judge x strategy x ...):

* :func:`agreement_table` -- Tables 1-3 and 6: agreement with gold and its CI, the change vs
  B0, Cohen's kappa (A / B / tie / no verdict as categories; statsmodels) with its Landis-Koch
  label, verdict counts and tie rate, malformed answers by kind, calls and cost per instance.
  Rows with ``judge == "gold"`` hold the gold label distribution.
* :func:`category_table` -- Figure 3 / Appendix E.1: agreement per category.
* :func:`bias_table` -- Sec. 3.5 / Fig. 1: signed bias scores on the controlled set (position,
  length-aware verbosity, position-averaged style and its two halves, self-preference where a
  side is the judge's family, model preference on the original Gemini-vs-Claude pairs) and
  truncation accuracy, each with its CI.
* :func:`topic_style_table` -- Table 7: position-averaged style bias per topic.
* :func:`length_ablation_table` -- Table 8: expansion bias and truncation accuracy.
* :func:`cross_bias_table` -- Fig. 2: change in bias magnitude |b| vs B0, per judge and
  averaged over a judge set.
* :func:`mcnemar_table`, :func:`mixed_table`, :func:`mde_table` -- Tables 4 and 5, Appendix D.
* :func:`replay_s1_table` -- S1 computed from real judges' recorded verdicts in both orders.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.io import any_true, table_tuples
from judgelab.stats.agreement import order_summary
from judgelab.stats.bias import bias_score
from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.stats.mcnemar import discordant_counts, holm, mcnemar_mde, mcnemar_test
from judgelab.stats.mixed import logit_random_intercept, lpm_random_intercept
from judgelab.stats.unscored import blank, no_value_reason, no_value_reason_from_counts
from judgelab.strategies import STRATEGY_ORDER
from judgelab.strategies.aggregate import MALFORMED_KINDS

KAPPA_CATEGORIES = ("A", "B", "tie", "")


def cell_seed(seed: int, *parts: object) -> np.random.Generator:
    """A generator per table cell: deterministic, independent of row order and of other cells."""
    return np.random.default_rng([int(seed), zlib.crc32("|".join(map(str, parts)).encode())])


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, n_resamples: int = 2000, alpha: float = DEFAULT_ALPHA,
                 rng: np.random.Generator | None = None) -> tuple[float, float]:
    """Percentile bootstrap CI of a mean (scipy); a constant sample has a zero-width CI."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return float("nan"), float("nan")
    if len(x) < 2 or np.all(x == x[0]):
        return float(x[0]), float(x[0])
    from scipy import stats  # here: the strategy rules that bootstrap nothing do not load scipy.stats

    res = stats.bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=1 - alpha, method="percentile",
                          random_state=rng if rng is not None else np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def landis_koch(kappa: float) -> str:
    """Landis & Koch (1977) labels, as the paper's Table 6 uses them: < 0 Poor, 0-0.20 Slight (0 included),
    then up to 0.40 Fair, 0.60 Moderate, 0.80 Substantial, above Almost perfect."""
    if np.isnan(kappa):
        return ""
    if kappa < 0.0:
        return "Poor"
    for hi, label in ((0.20, "Slight"), (0.40, "Fair"), (0.60, "Moderate"), (0.80, "Substantial")):
        if kappa <= hi:
            return label
    return "Almost perfect"


def kappa(verdicts: Sequence[str], gold: Sequence[str]) -> float:
    """Cohen's kappa of verdicts vs gold over A / B / tie / no verdict (statsmodels)."""
    idx = {c: i for i, c in enumerate(KAPPA_CATEGORIES)}
    table = np.zeros((len(idx), len(idx)))
    for v, g in zip(verdicts, gold, strict=True):
        table[idx.get(v or "", 3), idx[g]] += 1
    keep = (table.sum(0) + table.sum(1)) > 0
    table = table[np.ix_(keep, keep)]
    if table.shape[0] < 2:
        return float("nan")
    from statsmodels.stats.inter_rater import cohens_kappa  # here: a slow import most strategy rules skip

    return float(cohens_kappa(table).kappa)


def _strategy_sort(df: pd.DataFrame) -> pd.DataFrame:
    order = {s: i for i, s in enumerate(STRATEGY_ORDER)}
    key = df["strategy"].map(lambda s: order.get(s, len(order)))
    return df.assign(_k=key).sort_values([c for c in ("dataset", "judge") if c in df] + ["_k"]).drop(columns="_k")


def no_verdict_reason(g: pd.DataFrame) -> str:
    """Why a cell has no verdict at all (:mod:`judgelab.stats.unscored`'s wording, counted over its calls); ``""``
    when some instance has one.  Such a cell keeps its row with NaN rates: counting every missing verdict
    as wrong would print an agreement of 0.  A frame that records no verdicts (only ``correct``) is
    taken as scored."""
    if "has_verdict" in g:
        has = g["has_verdict"].astype(bool)
    elif "verdict" in g:
        has = g["verdict"].fillna("").astype(str) != ""
    else:
        return ""
    if has.any():
        return ""
    def n(*cols: str) -> int:
        return int(sum(g[c].sum() for c in cols if c in g))

    calls = {"unparsed": n("n_unparsed"), "refusal": n("n_refusal"), "error": n("n_error")}
    counted = sum(calls.values()) + n("n_ok", "n_fallback", "n_missing_calls")
    total = n("n_calls") if "n_calls" in g else len(g)  # n_calls counts the missing calls too
    return no_value_reason_from_counts(calls, max(total, counted))


def agreement_table(sv: pd.DataFrame, *, n_resamples: int = 2000, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> pd.DataFrame:
    """Agreement, CI, kappa, verdict distribution and failure counts per dataset x judge x strategy."""
    rows = []
    for (ds, judge, strat), g in sv.groupby(["dataset", "judge", "strategy"], sort=True):
        corr = g["correct"].to_numpy(dtype=float)
        lo, hi = bootstrap_ci(corr, n_resamples=n_resamples, alpha=alpha, rng=cell_seed(seed, ds, judge, strat))
        k = kappa(g["verdict"].tolist(), g["expected_verdict"].tolist())
        counts = g["verdict"].value_counts()
        n = len(g)
        rows.append(blank({
            "dataset": ds, "judge": judge, "family": g["family"].iloc[0], "simulated": any_true(g),
            "strategy": strat, "n": n, "agreement": float(corr.mean()), "ci_low": lo, "ci_high": hi,
            "kappa": k, "kappa_label": landis_koch(k),
            "n_A": int(counts.get("A", 0)), "n_B": int(counts.get("B", 0)), "n_tie": int(counts.get("tie", 0)),
            "tie_pct": float(counts.get("tie", 0) / n), "n_no_verdict": int((~g["has_verdict"]).sum()),
            "calls": int(g["n_calls"].sum()), "n_missing_calls": int(g["n_missing_calls"].sum()),
            "n_malformed": int(sum(g[f"n_{m}"].sum() for m in (*MALFORMED_KINDS, "refusal", "error"))),
            "n_refusal": int(g["n_refusal"].sum()), "n_error": int(g["n_error"].sum()),
            **{f"n_{m}": int(g[f"n_{m}"].sum()) for m in MALFORMED_KINDS},
            "calls_per_instance": float(g["n_calls"].mean()), "tokens_in_per_instance": float(g["tokens_in"].mean()),
            "tokens_out_per_instance": float(g["tokens_out"].mean()), "cost_per_instance": float(g["cost_usd"].mean()),
        }, ("agreement", "ci_low", "ci_high", "kappa", "tie_pct"), no_verdict_reason(g)))
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out.loc[out["reason"] != "", "kappa_label"] = ""
    base = out[out["strategy"] == "B0"].set_index(["dataset", "judge"])["agreement"]
    out["delta_vs_B0"] = [r.agreement - base.get((r.dataset, r.judge), np.nan) for r in table_tuples(out)]
    gold = []
    for ds, g in sv.drop_duplicates(["dataset", "pair_id"]).groupby("dataset", sort=True):
        c = g["expected_verdict"].value_counts()
        gold.append({"dataset": ds, "judge": "gold", "strategy": "", "n": len(g), "n_A": int(c.get("A", 0)),
                     "n_B": int(c.get("B", 0)), "n_tie": int(c.get("tie", 0)), "tie_pct": float(c.get("tie", 0) / len(g))})
    return pd.concat([_strategy_sort(out), pd.DataFrame(gold)], ignore_index=True)


def category_table(sv: pd.DataFrame, *, n_resamples: int = 2000, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> pd.DataFrame:
    rows = []
    for (ds, judge, strat, cat), g in sv.groupby(["dataset", "judge", "strategy", "category"], sort=True):
        corr = g["correct"].to_numpy(dtype=float)
        lo, hi = bootstrap_ci(corr, n_resamples=n_resamples, alpha=alpha, rng=cell_seed(seed, ds, judge, strat, cat))
        rows.append(blank({"dataset": ds, "judge": judge, "simulated": any_true(g), "strategy": strat,
                           "category": cat, "n": len(g), "agreement": float(corr.mean()), "ci_low": lo, "ci_high": hi},
                          ("agreement", "ci_low", "ci_high"), no_verdict_reason(g)))
    return _strategy_sort(pd.DataFrame(rows)) if rows else pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# bias scores on the controlled set


def _b(verdicts: pd.Series, targets: pd.Series, *, n_resamples: int, alpha: float, rng_seed: int,
       groups: pd.Series | None = None) -> dict:
    """One signed bias score.  ``groups`` (the question id) makes the bootstrap resample whole
    questions: a question's mirrored STYLE / STYLE_BA pairs, its several pairs of one bias type
    and the calls the swap strategies share are not independent, so resampling rows would make
    the interval too narrow (about sqrt(2) for the mirrored style halves)."""
    est = bias_score(verdicts.to_numpy(dtype=object), targets.to_numpy(dtype=object), n_resamples=n_resamples,
                     seed=rng_seed, alpha=alpha, groups=None if groups is None else groups.to_numpy(dtype=object))
    return blank({"value": est.b, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n,
                  "n_no_verdict": int((verdicts == "").sum())}, ("value", "ci_low", "ci_high"), _cell_reason(verdicts))


def _cell_reason(verdicts: pd.Series) -> str:
    """Why a cell of pairs has no estimate: no pair of its kind, or no verdict on any (:mod:`judgelab.stats.unscored`)."""
    if not len(verdicts):
        return "no pairs of this kind"
    return no_value_reason([""] * len(verdicts), usable=(verdicts != "").to_numpy())


#: What each bias measure's target is (the ``target`` column of :func:`bias_table`; paper 003, Sec. 3.5).
#: Self- and model preference name the family in the row itself.
MEASURE_TARGETS = {
    "position": "slot A (identical texts)",
    "verbosity": "the longer response (by word count)",
    "style": "the markdown response (position-averaged)",
    "style_ab": "the markdown response (STYLE pairs only)",
    "style_ba": "the markdown response (STYLE_BA pairs only)",
    "truncation_accuracy": "the complete response",
}


def _measures(g: pd.DataFrame, family: str, original_target: str) -> dict[str, tuple[pd.DataFrame, pd.Series, str]]:
    """measure -> (rows, target side per row, what the target is)."""
    out: dict[str, tuple[pd.DataFrame, pd.Series, str]] = {}
    pos = g[g["bias_type"] == "POSITION"]
    out["position"] = (pos, pd.Series("A", index=pos.index), MEASURE_TARGETS["position"])
    exp = g[(g["bias_type"] == "LENGTH") & (g["subset"] == "expansion") & (g["target_side"] != "")]
    out["verbosity"] = (exp, exp["target_side"], MEASURE_TARGETS["verbosity"])
    sty = g[g["bias_type"].isin(["STYLE", "STYLE_BA"])]
    out["style"] = (sty, sty["target_side"], MEASURE_TARGETS["style"])
    for half in ("STYLE", "STYLE_BA"):
        h = g[g["bias_type"] == half]
        measure = "style_ab" if half == "STYLE" else "style_ba"
        out[measure] = (h, h["target_side"], MEASURE_TARGETS[measure])
    mo = g[g["bias_type"] == "MODEL_ORIGIN"]
    own = mo[(mo["origin_a"] != mo["origin_b"]) & ((mo["origin_a"] == family) | (mo["origin_b"] == family))]
    out["self_preference"] = (own, pd.Series(np.where(own["origin_a"] == family, "A", "B"), index=own.index),
                              f"the {family}-family response")
    orig = mo[mo["subset"] == "original"]
    out["model_preference"] = (orig, pd.Series(np.where(orig["origin_a"] == original_target, "A", "B"),
                                               index=orig.index), f"the {original_target}-family response")
    return out


HEADLINE_BIASES = ("position", "verbosity", "style", "self_preference")


def bias_table(sv: pd.DataFrame, pairs: pd.DataFrame, *, original_target: str = "google", n_resamples: int = 2000,
               alpha: float = DEFAULT_ALPHA, seed: int = 0) -> pd.DataFrame:
    """Signed bias scores (and truncation accuracy) per judge x strategy on the controlled set."""
    extra = pairs[["pair_id", "subset", "target_side", "origin_a", "origin_b", "question_id"]]
    df = sv.merge(extra, on="pair_id", how="left", validate="many_to_one")
    rows = []
    for (judge, strat), g in df.groupby(["judge", "strategy"], sort=True):
        fam = str(g["family"].iloc[0])
        base = {"judge": judge, "family": fam, "simulated": any_true(g), "strategy": strat}
        for measure, (sub, tgt, what) in _measures(g, fam, original_target).items():
            r = _b(sub["verdict"], tgt, n_resamples=n_resamples, alpha=alpha,
                   rng_seed=zlib.crc32(f"{seed}|{judge}|{strat}|{measure}".encode()), groups=sub["question_id"])
            rows.append({**base, "measure": measure, "kind": "bias_score", "target": what, **r})
        tr = g[(g["bias_type"] == "LENGTH") & (g["subset"] == "truncation")]
        corr = tr["correct"].to_numpy(dtype=float)
        lo, hi = bootstrap_ci(corr, n_resamples=n_resamples, alpha=alpha, rng=cell_seed(seed, judge, strat, "trunc"))
        rows.append(blank({**base, "measure": "truncation_accuracy", "kind": "accuracy",
                           "target": MEASURE_TARGETS["truncation_accuracy"],
                           "value": float(corr.mean()) if len(corr) else float("nan"), "ci_low": lo, "ci_high": hi,
                           "n": len(tr), "n_no_verdict": int((tr["verdict"] == "").sum())},
                          ("value", "ci_low", "ci_high"), _cell_reason(tr["verdict"])))
    return _strategy_sort(pd.DataFrame(rows))


def topic_style_table(sv: pd.DataFrame, pairs: pd.DataFrame, *, n_resamples: int = 2000, alpha: float = DEFAULT_ALPHA,
                      seed: int = 0) -> pd.DataFrame:
    """Table 7: position-averaged style bias per judge x strategy x topic (STYLE + STYLE_BA)."""
    df = sv.merge(pairs[["pair_id", "target_side", "question_id"]], on="pair_id", how="left", validate="many_to_one")
    df = df[df["bias_type"].isin(["STYLE", "STYLE_BA"])]
    rows = []
    for (judge, strat, topic), g in df.groupby(["judge", "strategy", "category"], sort=True):
        r = _b(g["verdict"], g["target_side"], n_resamples=n_resamples, alpha=alpha,
               rng_seed=zlib.crc32(f"{seed}|{judge}|{strat}|{topic}".encode()), groups=g["question_id"])
        rows.append({"judge": judge, "simulated": any_true(g), "strategy": strat, "topic": topic, **r})
    return _strategy_sort(pd.DataFrame(rows))


def length_ablation_table(bias: pd.DataFrame) -> pd.DataFrame:
    """Table 8: expansion bias and truncation accuracy side by side per judge x strategy."""
    keep = bias[bias["measure"].isin(["verbosity", "truncation_accuracy"])]
    wide = keep.pivot_table(index=["judge", "strategy"], columns="measure", values=["value", "ci_low", "ci_high", "n"],
                            aggfunc="first")
    wide.columns = [f"{'expansion_bias' if m == 'verbosity' else 'truncation_accuracy'}"
                    f"{'' if v == 'value' else '_' + v}"
                    for v, m in zip(wide.columns.get_level_values(0), wide.columns.get_level_values(1), strict=True)]
    return _strategy_sort(wide.reset_index())


def cross_bias_table(bias: pd.DataFrame, *, average_over: Sequence[str] | None = None) -> pd.DataFrame:
    """Fig. 2: |b_strategy| - |b_B0| per judge, strategy and bias; plus their mean over ``average_over``."""
    b = bias[bias["measure"].isin(HEADLINE_BIASES)]
    base = b[b["strategy"] == "B0"].set_index(["judge", "measure"])["value"]
    rows = []
    for r in table_tuples(b[b["strategy"] != "B0"]):
        b0 = base.get((r.judge, r.measure), np.nan)
        rows.append({"judge": r.judge, "simulated": r.simulated, "strategy": r.strategy, "measure": r.measure,
                     "b": r.value, "b_B0": b0, "delta_abs_b": abs(r.value) - abs(b0)})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    judges = sorted(out["judge"].unique()) if average_over is None else [j for j in average_over if j in set(out["judge"])]
    avg = (out[out["judge"].isin(judges)].groupby(["strategy", "measure"], as_index=False)
           .agg(delta_abs_b=("delta_abs_b", "mean"), simulated=("simulated", "any")))
    avg["judge"] = "mean"
    avg["averaged_over"] = ",".join(judges)
    return _strategy_sort(pd.concat([out, avg], ignore_index=True))


# ---------------------------------------------------------------------------------
# significance


def _paired(g: pd.DataFrame, strat: str) -> tuple[np.ndarray, np.ndarray]:
    w = g.pivot_table(index="pair_id", columns="strategy", values="correct", aggfunc="first")
    w = w[["B0", strat]].dropna()
    return w["B0"].to_numpy(dtype=bool), w[strat].to_numpy(dtype=bool)


def in_family(judges: pd.Series, strategies: pd.Series, family: Mapping[str, Sequence[str] | None] | None) -> pd.Series:
    """Which comparisons belong to the multiple-testing family.

    ``family`` = ``{"strategies": [...] | None, "judges": [...] | None, "exclude_judges": [...]}``;
    None for a key means "all".  Paper 003 corrects over m = 20: its five judges x S1, S4, S5, S8
    vs B0 (config ``strategies.analysis.holm_family``); ``None`` corrects over every comparison.
    """
    fam = dict(family or {})
    keep = pd.Series(True, index=judges.index)
    if (only := fam.get("strategies")) is not None:
        keep &= strategies.isin(list(only))
    if (listed := fam.get("judges")) is not None:
        keep &= judges.isin(list(listed))
    if excluded := fam.get("exclude_judges"):
        keep &= ~judges.isin(list(excluded))
    return keep


def mcnemar_table(sv: pd.DataFrame, *, alpha: float = DEFAULT_ALPHA,
                  family: Mapping[str, Sequence[str] | None] | None = None) -> pd.DataFrame:
    """Table 4: McNemar (continuity-corrected) of every strategy vs B0, per dataset x judge;
    Holm-Bonferroni over the comparisons of a dataset that are in ``family`` (:func:`in_family`;
    ``in_family`` column, ``m`` = the family's size; rows outside it have no Holm p-value).

    A comparison one side of which has no verdict at all keeps its row with NaN agreements,
    discordant counts and test, and ``reason`` says which side and why (a missing verdict counted
    as wrong would make "B0 vs S4" a significant drop computed from no verdict)."""
    rows = []
    for (ds, judge), g in sv.groupby(["dataset", "judge"], sort=True):
        base_reason = _side_reason(g, "B0")
        for strat in sorted(set(g["strategy"]) - {"B0"}):
            x, y = _paired(g, strat)
            b, c = discordant_counts(x, y)
            t = mcnemar_test(b, c)
            rows.append(blank({"dataset": ds, "judge": judge, "simulated": any_true(g), "comparison":
                               f"B0 vs {strat}", "strategy": strat, "n": len(x), "agreement_B0": float(x.mean()),
                               "agreement": float(y.mean()), "delta_pp": 100 * float(y.mean() - x.mean()), "b": b,
                               "c": c, "chi2": t.statistic, "p": t.pvalue, "p_reason": t.reason,
                               **_evidence(g, strat)}, _MCNEMAR_STATS,
                              base_reason or _side_reason(g, strat)))
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["in_family"] = in_family(out["judge"], out["strategy"], family)
    _holm_within(out, "p", "p_holm", alpha)
    out["significant"] = out["p"] < alpha
    out["holm_significant"] = out["p_holm"] < alpha
    return _strategy_sort(out)


_MCNEMAR_STATS = ("agreement_B0", "agreement", "delta_pp", "b", "c", "chi2", "p")


def _evidence(g: pd.DataFrame, strat: str) -> dict[str, str]:
    """``evidence``: ``structural`` where the comparison with B0 holds by construction
    (:func:`judgelab.strategies.bounded_by_baseline` on gold without ties), with the reason in
    ``structural_reason``; else ``test``."""
    from judgelab.strategies import STRATEGIES, bounded_by_baseline

    gold = g["expected_verdict"] if "expected_verdict" in g.columns else None
    if (strat in STRATEGIES.names() and bounded_by_baseline(STRATEGIES.get(strat)) and gold is not None
            and not (gold == "tie").any()):
        return {"evidence": "structural", "structural_reason":
                f"{strat} keeps B0's verdict or answers tie, and gold has no tie: {strat} can be right only where "
                f"B0 is (c = 0 by construction); the test counts B0's order flips, not a cost of {strat}"}
    return {"evidence": "test", "structural_reason": ""}


def _side_reason(g: pd.DataFrame, strat: str) -> str:
    """``"<strategy>: no parsable verdict: ..."`` when the strategy's cell of ``g`` has no verdict at all, else ``""``."""
    why = no_verdict_reason(g[g["strategy"] == strat])
    return f"{strat}: {why}" if why else ""


def _holm_within(out: pd.DataFrame, col: str, dest: str, alpha: float) -> None:
    """Holm-adjust ``col`` into ``dest`` per dataset over the rows with ``in_family``; set ``m``."""
    out[dest] = np.nan
    fam = out[out["in_family"]]
    out["m"] = out["dataset"].map(fam.groupby("dataset").size()).fillna(0).astype(int)
    for _ds, idx in fam.groupby("dataset").groups.items():
        out.loc[idx, dest] = holm(out.loc[idx, col].to_numpy(), alpha)[0]


def _fit_or_none(fit, d: pd.DataFrame, **kw):
    """A fit, or None when the model cannot be fitted (e.g. a judge right on every instance:
    singular); the table then shows NaN and ``*_converged = False`` instead of failing the rule."""
    try:
        return fit(d, **kw)
    except (np.linalg.LinAlgError, ValueError) as exc:
        import logging

        logging.getLogger(__name__).warning("mixed model %s failed: %s", fit.__name__, exc)
        return None


def _terms(f, term: str) -> tuple[float, float, float]:
    if f is None or term not in f.coef.index:
        return float("nan"), float("nan"), float("nan")
    return float(f.coef[term]), float(f.se[term]), float(f.pvalue[term])


def mixed_table(sv: pd.DataFrame, *, alpha: float = DEFAULT_ALPHA, n_nodes: int = 32,
                strategies: Sequence[str] | None = None,
                family: Mapping[str, Sequence[str] | None] | None = None) -> pd.DataFrame:
    """Table 5: per dataset x judge, ``correct ~ C(strategy, Treatment('B0')) + (1|instance)`` as a
    linear-probability mixed model and as a logistic GLMM (judgelab.stats.mixed), fitted on the
    modelled ``strategies`` only (paper 003: B0, S1, S4, S5, S8, i.e. 400 x 5 observations per
    judge; None: every strategy); Holm over the dataset's terms in ``family`` (:func:`in_family`).

    A strategy with no verdict at all is left out of the fit and keeps its row, NaN, with
    ``reason``; when B0 has none, every row of the judge does (no reference level)."""
    if strategies is not None:
        if "B0" not in strategies:
            raise ValueError("strategies.analysis.mixed_strategies must include the reference level B0")
        sv = sv[sv["strategy"].isin(list(strategies))]
    rows = []
    for (ds, judge), g in sv.groupby(["dataset", "judge"], sort=True):
        if g["strategy"].nunique() < 2:
            continue
        # a strategy with no verdict at all is not modelled (its "correct" would be all False: a
        # coefficient from no verdict); its row stays, NaN, with the reason -- every row when B0 has none
        base_reason = _side_reason(g, "B0")
        why = {s: base_reason or _side_reason(g, s) for s in sorted(set(g["strategy"]) - {"B0"})}
        d = g[g["strategy"].isin(["B0", *(s for s, r in why.items() if not r)])]
        d = d[["correct", "strategy", "pair_id"]].rename(columns={"pair_id": "instance"})
        if base_reason or d["strategy"].nunique() < 2 or d["correct"].nunique() < 2:
            lpm = glmm = None  # right (or wrong) everywhere: no model is identified
        else:
            lpm, glmm = _fit_or_none(lpm_random_intercept, d), _fit_or_none(logit_random_intercept, d, n_nodes=n_nodes)
        for strat, reason in why.items():
            term = f"C(strategy, Treatment('B0'))[T.{strat}]"
            lpm_t, glmm_t = _terms(lpm, term), _terms(glmm, term)
            rows.append({
                "dataset": ds, "judge": judge, "simulated": any_true(g), "strategy": strat,
                "n_obs": len(d), "n_instances": int(d["instance"].nunique()),
                "lpm_coef": lpm_t[0], "lpm_se": lpm_t[1], "lpm_p": lpm_t[2],
                "logit_coef": glmm_t[0], "logit_se": glmm_t[1], "logit_p": glmm_t[2], "odds_ratio": float(np.exp(glmm_t[0])),
                "lpm_instance_var": lpm.group_var if lpm else np.nan,
                "logit_instance_var": glmm.group_var if glmm else np.nan,
                "lpm_converged": bool(lpm and lpm.converged), "logit_converged": bool(glmm and glmm.converged),
                # (quasi-)separation: this term's logistic estimate is infinite (its p-value NaN);
                # the intercept's separation (B0 right or wrong everywhere) makes every term's odds
                # ratio against an infinite reference
                "separation": bool(glmm and (term in glmm.separation or "Intercept" in glmm.separation)),
                "separated_terms": ",".join(glmm.separation) if glmm else "",
                "lpm_method": ("" if reason else lpm.method if lpm else "lpm_mixedlm_reml (failed)"),
                "logit_method": ("" if reason else glmm.method if glmm else f"logit_glmm_ghq{n_nodes}_ml (failed)"),
                "reason": reason,
            })
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["in_family"] = in_family(out["judge"], out["strategy"], family)
    for col in ("lpm_p", "logit_p"):
        _holm_within(out, col, f"{col}_holm", alpha)
    out["significant"] = out["lpm_p"] < alpha
    out["holm_significant"] = out["lpm_p_holm"] < alpha
    return _strategy_sort(out)


def mde_table(mcn: pd.DataFrame, *, alpha: float = DEFAULT_ALPHA, power: float = 0.8) -> pd.DataFrame:
    """Appendix D: minimum detectable agreement change per dataset x judge at the observed n and
    discordance (mean over that judge's strategies; min and max too).

    Only the comparisons :func:`mcnemar_table` scored enter; a judge with none keeps its row with
    NaN discordance and MDE, and ``reason`` gives theirs (e.g. ``B0: no parsable verdict: ...``)."""
    rows = []
    for (ds, judge), g in mcn.groupby(["dataset", "judge"], sort=True):
        n = int(g["n"].max())
        why = g["reason"].fillna("") if "reason" in g else pd.Series("", index=g.index)
        scored = g[why == ""]
        if scored.empty:
            rows.append({"dataset": ds, "judge": judge, "n": n, "agreement_B0": np.nan, "discordance_mean": np.nan,
                         "discordant_pairs_mean": np.nan, "mde_pp": np.nan, "mde_pp_min": np.nan, "mde_pp_max": np.nan,
                         "alpha": alpha, "power": power, "reason": "; ".join(dict.fromkeys(why))})
            continue
        psi = (scored["b"] + scored["c"]) / scored["n"]
        rows.append({
            "dataset": ds, "judge": judge, "n": n, "agreement_B0": float(scored["agreement_B0"].iloc[0]),
            "discordance_mean": float(psi.mean()), "discordant_pairs_mean": float((scored["b"] + scored["c"]).mean()),
            "mde_pp": 100 * mcnemar_mde(n, float(psi.mean()), alpha, power),
            "mde_pp_min": 100 * mcnemar_mde(n, float(psi.min()), alpha, power) if psi.min() > 0 else float("nan"),
            "mde_pp_max": 100 * mcnemar_mde(n, float(psi.max()), alpha, power),
            "alpha": alpha, "power": power, "reason": "",
        })
    return pd.DataFrame(rows)


def replay_s1_table(calls: pd.DataFrame, sv: pd.DataFrame) -> pd.DataFrame:
    """Real judges replayed in both orders: LLMBar-style order statistics of their baseline calls,
    and S1 (position swap) computed from those same verdicts, with McNemar vs B0."""
    base = calls[(calls["kind"] == "pairwise") & (calls["role"] == "baseline") & calls["temperature"].isna()]
    stats_ = order_summary(base, by=("dataset", "judge"))
    rows = []
    for r in table_tuples(stats_):
        g = sv[(sv["dataset"] == r.dataset) & (sv["judge"] == r.judge)]
        if "S1" not in set(g["strategy"]):
            continue
        x, y = _paired(g, "S1")
        b, c = discordant_counts(x, y)
        t = mcnemar_test(b, c)
        s1 = g[g["strategy"] == "S1"]
        bc = base[(base["dataset"] == r.dataset) & (base["judge"] == r.judge)]
        call_reason = no_value_reason(bc["status"]) if "status" in bc else ""
        reason = (f"baseline calls: {call_reason}" if call_reason else "") or _side_reason(g, "B0") or _side_reason(g, "S1")
        row = {**r._asdict(), "agreement_B0": float(x.mean()), "agreement_S1": float(y.mean()),
               "delta_pp": 100 * float(y.mean() - x.mean()), "S1_tie_rate": float((s1["verdict"] == "tie").mean()),
               "S1_no_verdict": int((~s1["has_verdict"]).sum()), "b": b, "c": c, "chi2": t.statistic, "p": t.pvalue,
               "p_reason": t.reason, **_evidence(g, "S1")}
        # order statistics of calls without a verdict (both orders "" reads as agreeing) and an S1
        # or B0 cell without one (every instance "wrong") are not numbers: NaN, with the reason
        rows.append(blank(row, [k for k in (*_ORDER_STATS, *_REPLAY_STATS) if k in row] if reason else (), reason))
    out = pd.DataFrame(rows)
    return out.drop(columns=["Index"], errors="ignore")


#: order_summary's rates (judgelab.stats.agreement) and the S1 replay's, NaN on a row without a verdict
_ORDER_STATS = ("acc_AB", "acc_BA", "acc_average", "acc_ci_low", "acc_ci_high", "correct_both",
                "positional_agreement", "positional_agreement_all", "tie_rate", "first_shown_share",
                "first_shown_ci_low", "first_shown_ci_high")
_REPLAY_STATS = ("agreement_B0", "agreement_S1", "delta_pp", "S1_tie_rate", "b", "c", "chi2", "p")
