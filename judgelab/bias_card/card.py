"""The bias card: one row per judge x metric, from recorded verdicts alone (no judge call).

Input is a recorded verdict table (:mod:`judgelab.verdict_import.importer`; judgelab's
own verdict tables import through the ``judgelab`` preset).  Columns of
``bias_card.csv``:

============== ===================================================================
judge, family  the judge and its model family
metric         see :data:`METRICS`
estimate       the point estimate on the metric's own scale
ci_low/high    95% CI, item-clustered (``item_id``: the question).  Shares: Wilson
               interval on the effective n (n / design effect, the design effect from a
               cluster bootstrap over items); differences and the position score b:
               percentile cluster bootstrap; logistic coefficients: cluster-robust Wald
null_value     the value of "no bias" / chance the test compares with
n              units the estimate uses (games, pairs or decisive verdicts)
n_items        clusters (distinct items) behind them
share          n over the units it could have used (e.g. pairs with a verdict in
               both orders over all pairs judged in both orders)
test           binomial (design-effect adjusted), mcnemar, wald-cluster, or none
statistic      the test statistic (successes, chi-square, or z)
p_value        two-sided
mde            minimum detectable effect at alpha 0.05 and power 0.8 (metric scale,
               distance from null_value; for untested rates the CI half-width)
underpowered   True when n is 0, or the test did not reject its null and the mde exceeds
               the metric's threshold (:data:`METRICS`): a non-significant result that
               could not have detected a threshold-size effect.  Untested rates: the CI
               half-width exceeds the threshold
note           what to keep in mind (e.g. only one order recorded)
simulated      True when the verdicts come from the simulated panel
============== ===================================================================

Conventions: accuracy counts a missing verdict as wrong (LLMBar's convention, so the
card of a replayed LLMBar judge equals the authors' ``statistics.json``); the position
preference ``b`` is paper 003's signed score (:func:`judgelab.stats.bias.bias_score`,
ties and failures in the denominator); the length/markdown/self preferences are
P(picks the longer / more formatted / own-family response) among decisive verdicts on
pairs that differ in that cue by the stated margin; the length-controlled view is a
logistic regression of "picks the response shown first" on the log2 length ratio, the
markdown difference and gold, with item-clustered standard errors.

The binomial tests treat verdicts within one item as correlated: the number of trials
is divided by the design effect (cluster-bootstrap variance over the binomial variance,
at least :data:`DEFF_FLOOR`), so p-values and MDEs match the clustered CI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.stats import binomtest, norm
from statsmodels.stats.power import NormalIndPower

from judgelab.features import length_log_ratio, markdown_score, word_count
from judgelab.stats.bias import bias_score
from judgelab.stats.mcnemar import mcnemar_mde, mcnemar_test

CARD_COLUMNS = ["judge", "family", "metric", "estimate", "ci_low", "ci_high", "null_value", "n", "n_items", "share",
                "test", "statistic", "p_value", "mde", "underpowered", "note", "simulated"]

#: metric -> (scale, underpowered threshold on the mde, description)
METRICS: dict[str, tuple[str, float, str]] = {
    "accuracy_AB": ("proportion", 0.10, "accuracy vs gold, shown in the stored order (binomial vs 0.5)"),
    "accuracy_BA": ("proportion", 0.10, "accuracy vs gold, shown swapped"),
    "accuracy_average": ("proportion", 0.10, "accuracy vs gold over both orders"),
    "correct_both": ("proportion", 0.10, "share of pairs correct in both orders"),
    "accuracy_order_gap": ("difference", 0.10, "accuracy swapped minus stored (McNemar over pairs)"),
    "positional_agreement": ("proportion", 0.10, "same verdict in both orders, pairs with a verdict in both"),
    "positional_agreement_all": ("proportion", 0.10, "LLMBar 'equal': same verdict (or none) in both orders"),
    "position_preference": ("b", 0.20, "b = P(picks slot shown first) - P(picks slot shown second)"),
    "length_preference": ("proportion", 0.10, "P(picks the longer) among decisive verdicts, length ratio >= 1+margin"),
    "length_controlled": ("log_odds", 0.50, "log-odds per doubling of length, controlling position, markdown, gold"),
    "markdown_preference": ("proportion", 0.10, "P(picks the more formatted) among decisive verdicts"),
    "markdown_controlled": ("log_odds", 0.50, "log-odds per unit markdown score, controlling position, length, gold"),
    "self_preference": ("proportion", 0.10, "P(picks the judge's own family) where exactly one response is"),
    "tie_rate": ("proportion", 0.10, "share of tie verdicts"),
    "parse_failures": ("proportion", 0.10, "share of calls without a verdict (unparsed, refusal, error)"),
}


@dataclass(frozen=True)
class CardSettings:
    length_margin: float = 0.2  # longer has at least (1 + margin) x the words of the shorter
    markdown_margin: float = 0.25  # markdown scores (0..1, features.markdown_score) differ by at least this
    n_resamples: int = 1000
    confidence: float = 0.95
    alpha: float = 0.05
    power: float = 0.8
    seed: int = 0


def cluster_ratio_ci(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, s: CardSettings
                     ) -> tuple[float, float, float, float]:
    """(estimate, low, high, bootstrap variance) of sum(num)/sum(den), resampling whole clusters.

    Hand-written because the statistic is a ratio of cluster totals whose resampled
    denominator can be zero; scipy.stats.bootstrap has no cluster resampling and fails
    on such resamples, here they are dropped (nan-percentiles).
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    if den.sum() == 0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    codes, uniq = pd.factorize(np.asarray(clusters))
    k = len(uniq)
    cn = np.bincount(codes, weights=num, minlength=k)
    cd = np.bincount(codes, weights=den, minlength=k)
    est = float(cn.sum() / cd.sum())
    if k < 2:
        return est, est, est, 0.0
    rng = np.random.default_rng(s.seed)
    idx = rng.integers(0, k, size=(s.n_resamples, k))
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = cn[idx].sum(axis=1) / cd[idx].sum(axis=1)
    a = (1 - s.confidence) / 2
    lo, hi = np.nanquantile(boot, [a, 1 - a])
    return est, float(lo), float(hi), float(np.nanvar(boot))


#: lower bound of the design effect: the two orders of a pair can be negatively correlated
#: (a consistent judge picks A, then B), which makes the paired design more efficient than
#: independent verdicts; the floor keeps a noisy variance estimate from shrinking n_eff away
DEFF_FLOOR = 0.5


def design_effect(est: float, var_boot: float, n: int, floor: float = DEFF_FLOOR) -> float:
    """Clustered over binomial variance: how much item clustering changes the variance (>= floor)."""
    iid = est * (1 - est) / n if n else float("nan")
    return max(floor, var_boot / iid) if iid > 0 and not math.isnan(var_boot) else 1.0


def clustered_proportion_ci(y: np.ndarray, clusters: np.ndarray, s: CardSettings, *, floor: float = DEFF_FLOOR
                            ) -> tuple[float, float, float, float]:
    """(share, low, high, bootstrap variance) of a 0/1 outcome clustered by item.

    The cluster bootstrap estimates the variance; the interval is Wilson's on the
    effective sample size n / design effect (statsmodels), because percentile bootstrap
    intervals of rare outcomes (ties, parse failures) cover too little.  Untested rates
    use ``floor=1`` (never narrower than independent verdicts); tested shares use the
    same design effect as their test, so CI and p-value agree.
    """
    from statsmodels.stats.proportion import proportion_confint

    n = len(y)
    est, _, _, var = cluster_ratio_ci(y, np.ones(n), clusters, s)
    n_eff = n / design_effect(est, var, n, floor)
    lo, hi = proportion_confint(est * n_eff, n_eff, alpha=1 - s.confidence, method="wilson")
    return est, float(lo), float(hi), var


def binomial_mde(n: float, p0: float, s: CardSettings) -> float:
    """Smallest p - p0 a two-sided test on n trials detects (Cohen's h, statsmodels power)."""
    return _binomial_mde(int(n), float(p0), s.alpha, s.power)


@lru_cache(maxsize=4096)
def _binomial_mde(n: int, p0: float, alpha: float, power: float) -> float:
    if n < 2:
        return float("nan")
    h = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power, ratio=0)
    p1 = math.sin(math.asin(math.sqrt(p0)) + h / 2) ** 2
    return float(p1 - p0)


def _binomial(est: float, var_boot: float, n: int, p0: float, s: CardSettings) -> tuple[float, float, float]:
    """Design-effect adjusted binomial test: (successes, p-value, mde) on the effective n."""
    if n == 0 or math.isnan(est):
        return float("nan"), float("nan"), float("nan")
    n_eff = max(1, round(n / design_effect(est, var_boot, n)))
    k = round(est * n_eff)
    return float(k), float(binomtest(k, n_eff, p0).pvalue), binomial_mde(n_eff, p0, s)


def _row(metric: str, est: float, lo: float, hi: float, *, null: float, n: int, n_items: int, share: float,
         test: str, stat: float, p: float, mde: float, note: str = "") -> dict:
    threshold = METRICS[metric][1]
    if test == "none":
        mde = (hi - lo) / 2 if not math.isnan(hi) else float("nan")
    rejected = test != "none" and not math.isnan(p) and p < 0.05
    under = n == 0 or (not rejected and (math.isnan(mde) or abs(mde) > threshold))
    return {"metric": metric, "estimate": est, "ci_low": lo, "ci_high": hi, "null_value": null, "n": int(n),
            "n_items": int(n_items), "share": share, "test": test, "statistic": stat, "p_value": p, "mde": mde,
            "underpowered": bool(under), "note": note}


def _proportion(metric: str, mask: np.ndarray, success: np.ndarray, items: np.ndarray, s: CardSettings, *,
                null: float | None, share_of: int, note: str = "") -> dict:
    mask = np.asarray(mask, dtype=bool)
    n = int(mask.sum())
    if n == 0:
        return _row(metric, *(float("nan"),) * 3, null=null if null is not None else float("nan"), n=0,
                    n_items=0, share=0.0 if share_of else float("nan"), test="none" if null is None else "binomial",
                    stat=float("nan"), p=float("nan"), mde=float("nan"), note=note or "no eligible verdicts")
    y = np.asarray(success, dtype=float)[mask]
    est, lo, hi, var = clustered_proportion_ci(y, items[mask], s, floor=1.0 if null is None else DEFF_FLOOR)
    n_items = len(pd.unique(items[mask]))
    share = n / share_of if share_of else float("nan")
    if null is None:
        return _row(metric, est, lo, hi, null=float("nan"), n=n, n_items=n_items, share=share, test="none",
                    stat=float("nan"), p=float("nan"), mde=float("nan"), note=note)
    k, p, mde = _binomial(est, var, n, null, s)
    return _row(metric, est, lo, hi, null=null, n=n, n_items=n_items, share=share, test="binomial",
                stat=k, p=p, mde=mde, note=note)


def _logit(t: pd.DataFrame, decisive: np.ndarray, s: CardSettings) -> list[dict]:
    """Length- and markdown-controlled view: logit P(picks shown first) ~ len + md + gold."""
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM  # not statsmodels.api: 3 s of imports

    d = t[decisive]
    rows = []
    n, n_items = len(d), d["item_id"].nunique()
    if n < 10 or n_items < 2:
        return [_row(m, *(float("nan"),) * 3, null=0.0, n=n, n_items=n_items, share=float("nan"), test="wald-cluster",
                     stat=float("nan"), p=float("nan"), mde=float("nan"), note="too few decisive verdicts")
                for m in ("length_controlled", "markdown_controlled")]
    y = (d["verdict_shown"] == "A").to_numpy(float)
    X = pd.DataFrame({"const": 1.0, "len": d["_lenlr_shown"].to_numpy(), "md": d["_md_shown"].to_numpy()})
    gold = d["_gold_shown"].to_numpy()
    if np.any(gold != 0):
        X["gold"] = gold
    X = X.loc[:, (X.std() > 0) | (X.columns == "const")]
    groups = pd.factorize(d["item_id"])[0]
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    try:
        fit = GLM(y, X, family=families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": groups})
    except (ValueError, np.linalg.LinAlgError) as exc:  # perfect separation and the like
        fit, err = None, str(exc)
    for metric, col in (("length_controlled", "len"), ("markdown_controlled", "md")):
        if fit is None or col not in X.columns or not np.isfinite(fit.bse.get(col, np.nan)):
            note = "no variation in this cue" if fit is not None else f"logit failed: {err}"
            rows.append(_row(metric, *(float("nan"),) * 3, null=0.0, n=n, n_items=n_items, share=float("nan"),
                             test="wald-cluster", stat=float("nan"), p=float("nan"), mde=float("nan"), note=note))
            continue
        b, se = float(fit.params[col]), float(fit.bse[col])
        mde = (norm.ppf(1 - s.alpha / 2) + norm.ppf(s.power)) * se
        rows.append(_row(metric, b, b - z * se, b + z * se, null=0.0, n=n, n_items=n_items, share=float("nan"),
                         test="wald-cluster", stat=b / se, p=float(fit.pvalues[col]), mde=mde,
                         note="controls: position, " + ("markdown" if col == "len" else "length")
                         + (", gold" if "gold" in X.columns else "")))
    return rows


def _prepare(t: pd.DataFrame) -> pd.DataFrame:
    t = t.copy()
    for c in ("response_a", "response_b", "expected_verdict", "verdict", "verdict_shown", "family_a", "family_b"):
        if c not in t.columns:
            t[c] = ""
        t[c] = t[c].fillna("").astype(str)
    if "item_id" not in t.columns:
        t["item_id"] = t["pair_id"]
    t["item_id"] = t["item_id"].fillna(t["pair_id"]).astype(str)
    has_text = (t["response_a"] != "") | (t["response_b"] != "")
    t["_has_text"] = has_text
    wa = t["response_a"].map(word_count).astype(float)
    wb = t["response_b"].map(word_count).astype(float)
    ma = t["response_a"].map(markdown_score).astype(float)
    mb = t["response_b"].map(markdown_score).astype(float)
    t["_wa"], t["_wb"], t["_ma"], t["_mb"] = wa, wb, ma, mb
    ab = t["order"] == "AB"
    lenlr = np.array([length_log_ratio(a, b) for a, b in zip(t["response_a"], t["response_b"], strict=True)])
    t["_lenlr_shown"] = np.where(ab, lenlr, -lenlr)
    t["_md_shown"] = np.where(ab, ma - mb, mb - ma)
    g = t["expected_verdict"]
    gold_a = np.where(g == "A", 1.0, np.where(g == "B", -1.0, 0.0))
    t["_gold_shown"] = np.where(ab, gold_a, -gold_a)
    return t


def judge_card(t: pd.DataFrame, s: CardSettings | None = None) -> list[dict]:
    """The card rows of one judge's recorded verdicts."""
    s = s or CardSettings()
    t = _prepare(t)
    items = t["item_id"].to_numpy()
    n_games = len(t)
    verdict = t["verdict"].to_numpy()
    shown = t["verdict_shown"].to_numpy()
    has_value = np.isin(verdict, ["A", "B", "tie"])
    decisive = np.isin(verdict, ["A", "B"])
    gold = t["expected_verdict"].to_numpy()
    with_gold = gold != ""
    correct = verdict == gold
    one_order = set(t["order"]) != {"AB", "BA"}
    rows = []
    for metric, order in (("accuracy_AB", "AB"), ("accuracy_BA", "BA"), ("accuracy_average", None)):
        m = with_gold & ((t["order"] == order).to_numpy() if order else True)
        rows.append(_proportion(metric, m, correct, items, s, null=0.5, share_of=0,
                                note="" if with_gold.any() else "no gold in this log"))
    # pairs shown in both orders
    ab = t[t["order"] == "AB"].drop_duplicates("pair_id").set_index("pair_id")
    ba = t[t["order"] == "BA"].drop_duplicates("pair_id").set_index("pair_id")
    both = ab.index.intersection(ba.index)
    pa, pb = ab.loc[both], ba.loc[both]
    p_items = pa["item_id"].to_numpy()
    p_gold = (pa["expected_verdict"] != "").to_numpy()
    ca = (pa["verdict"] == pa["expected_verdict"]).to_numpy()
    cb = (pb["verdict"] == pb["expected_verdict"]).to_numpy()
    note_pairs = "" if len(both) else "no pair was recorded in both orders"
    rows.append(_proportion("correct_both", p_gold, ca & cb, p_items, s, null=None, share_of=0, note=note_pairs))
    # McNemar: stored-order correctness vs swapped-order correctness on the same pairs
    g_ = p_gold
    bcount, ccount = int(np.sum(ca[g_] & ~cb[g_])), int(np.sum(~ca[g_] & cb[g_]))
    n_p = int(g_.sum())
    if n_p:
        est, lo, hi, _ = cluster_ratio_ci((cb[g_].astype(float) - ca[g_].astype(float)), np.ones(n_p), p_items[g_], s)
        mc = mcnemar_test(bcount, ccount)
        psi = (bcount + ccount) / n_p
        rows.append(_row("accuracy_order_gap", est, lo, hi, null=0.0, n=n_p, n_items=len(pd.unique(p_items[g_])),
                         share=float("nan"), test="mcnemar", stat=mc.statistic, p=mc.pvalue,
                         mde=mcnemar_mde(n_p, psi) if psi > 0 else float("nan"),
                         note=f"discordant: {bcount} right only as stored, {ccount} only swapped"))
    else:
        rows.append(_row("accuracy_order_gap", *(float("nan"),) * 3, null=0.0, n=0, n_items=0, share=float("nan"),
                         test="mcnemar", stat=float("nan"), p=float("nan"), mde=float("nan"),
                         note=note_pairs or "no gold in this log"))
    va, vb = pa["verdict"].to_numpy(), pb["verdict"].to_numpy()
    valid = np.isin(va, ["A", "B", "tie"]) & np.isin(vb, ["A", "B", "tie"])
    rows.append(_proportion("positional_agreement", valid, va == vb, p_items, s, null=None, share_of=len(both),
                            note=note_pairs))
    rows.append(_proportion("positional_agreement_all", np.ones(len(both), bool), va == vb, p_items, s, null=None,
                            share_of=len(both), note=note_pairs))
    # position preference b (paper 003), item-clustered bootstrap from stats.bias
    if n_games:
        be = bias_score(shown, np.full(n_games, "A", dtype=object), groups=items,
                        n_resamples=max(s.n_resamples, 1000), seed=s.seed, confidence=s.confidence)
        n_dec = int(decisive.sum())
        p_first = float(np.mean(shown[decisive] == "A")) if n_dec else float("nan")
        _, _, _, var = cluster_ratio_ci((shown[decisive] == "A").astype(float), np.ones(n_dec), items[decisive], s) \
            if n_dec else (0, 0, 0, float("nan"))
        k, p, mde_p = _binomial(p_first, var, n_dec, 0.5, s)
        note = "only one presentation order recorded: b mixes position with gold" if one_order else ""
        rows.append(_row("position_preference", be.b, be.ci_low, be.ci_high, null=0.0, n=n_games,
                         n_items=len(pd.unique(items)), share=float("nan"), test="binomial", stat=k, p=p,
                         mde=2 * mde_p * n_dec / n_games if n_games else float("nan"), note=note))
    else:
        rows.append(_row("position_preference", *(float("nan"),) * 3, null=0.0, n=0, n_items=0, share=float("nan"),
                         test="binomial", stat=float("nan"), p=float("nan"), mde=float("nan"), note="no verdicts"))
    # length
    wa, wb = t["_wa"].to_numpy(), t["_wb"].to_numpy()
    longer = np.where(wa >= (1 + s.length_margin) * wb, "A", np.where(wb >= (1 + s.length_margin) * wa, "B", ""))
    elig = decisive & (longer != "") & t["_has_text"].to_numpy()
    no_text = "" if t["_has_text"].any() else "no response texts in this log"
    rows.append(_proportion("length_preference", elig, verdict == longer, items, s, null=0.5,
                            share_of=int(decisive.sum()), note=no_text or f"length ratio >= {1 + s.length_margin:g}"))
    ma, mb = t["_ma"].to_numpy(), t["_mb"].to_numpy()
    more_md = np.where(ma - mb >= s.markdown_margin, "A", np.where(mb - ma >= s.markdown_margin, "B", ""))
    elig = decisive & (more_md != "")
    rows.append(_proportion("markdown_preference", elig, verdict == more_md, items, s, null=0.5,
                            share_of=int(decisive.sum()), note=no_text or f"markdown difference >= {s.markdown_margin:g}"))
    rows.extend(_logit(t, decisive & t["_has_text"].to_numpy(), s))
    fam = str(t["family"].iloc[0]) if "family" in t.columns and n_games else "unknown"
    fa, fb = t["family_a"].to_numpy(), t["family_b"].to_numpy()
    own = np.where((fa == fam) & (fb != fam), "A", np.where((fb == fam) & (fa != fam), "B", ""))
    elig = decisive & (own != "") & (fam not in ("", "unknown"))
    note = ("judge family unknown" if fam in ("", "unknown") else
            "no pair with exactly one own-family response" if not elig.any() else "not controlled for quality")
    rows.append(_proportion("self_preference", elig, verdict == own, items, s, null=0.5,
                            share_of=int(decisive.sum()), note=note))
    rows.append(_proportion("tie_rate", np.ones(n_games, bool), verdict == "tie", items, s, null=None,
                            share_of=n_games))
    rows.append(_proportion("parse_failures", np.ones(n_games, bool), ~has_value, items, s, null=None,
                            share_of=n_games))
    return rows


def bias_card(table: pd.DataFrame, settings: CardSettings | None = None) -> pd.DataFrame:
    """One row per judge x metric (columns :data:`CARD_COLUMNS`)."""
    out = []
    for judge, g in table.groupby("judge", sort=True):
        fam = str(g["family"].iloc[0]) if "family" in g.columns else "unknown"
        sim = bool(g["simulated"].astype(str).str.lower().isin(["true", "1"]).any()) if "simulated" in g else False
        for r in judge_card(g, settings):
            out.append({"judge": judge, "family": fam, **r, "simulated": sim})
    return pd.DataFrame(out, columns=CARD_COLUMNS)
