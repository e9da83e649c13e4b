"""External validity on LLMBar (paper 002, Sec. 6 and Technical Appendix).

Every judge answers every LLMBar pair in both presentation orders.  Per subset and judge:

* ``judge_score`` -- the order-averaged preference for output 1 (1 per order that picks
  output 1, 0 per order that picks output 2, 1/2 for an order without a usable verdict);
* ``raw_acc`` -- agreement of the judge score with gold (score > 1/2 picks output 1,
  < 1/2 output 2, = 1/2 counts half);
* ``prefers_longer`` / ``gold_longer`` -- how often the judge (score) and gold pick the
  output with more words (pairs of equal length excluded);
* ``corrected_acc`` -- the 5-fold cross-validated accuracy of an l2-regularised logistic
  model predicting gold from the judge score and the length and format differences
  (word-count difference and markdown-marker difference, output 1 minus output 2,
  standardised inside each training fold), the pairwise analogue of the covariate model;
* ``features_acc`` -- the **features-only control**: the same cross-validated model on the
  length and format differences alone, no judge.  On LLMBar's adversarial subsets the
  worse output is built to be longer, so length alone predicts gold (Neighbor: ~0.86): a
  "correction" can score high by learning the answer key from the features.  The judge
  contributes only what ``corrected_acc`` adds over this control:
  ``delta_vs_features = corrected_acc - features_acc`` with an exact McNemar test on the
  per-pair hits of the two models (same folds, same pairs; ``p_vs_features``), and
  ``beats_features`` (delta > 0 and p < 0.05).

Wilson 95% intervals on the accuracies.  Replayed real judges count as judges here too,
on the subsets they were recorded on.

Columns: ``dataset, judge, simulated, n_pairs, n_unparsed, raw_acc, raw_ci_low,
raw_ci_high, corrected_acc, corr_ci_low, corr_ci_high, features_acc, feat_ci_low,
feat_ci_high, delta_vs_features, p_vs_features, beats_features, prefers_longer, gold_longer, reason``.
A judge with no A/B verdict on a subset keeps its row: the judge's statistics NaN (the
features-only control stays, it uses no judge) and ``reason`` saying why
(:mod:`judgelab.stats.unscored`; empty on a scored row).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.datasets.features import markdown_score, word_count
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.unscored import blank, no_value_reason

#: the columns that need a judge verdict (blanked on a row the table cannot score)
JUDGE_STATS = ("raw_acc", "raw_ci_low", "raw_ci_high", "corrected_acc", "corr_ci_low", "corr_ci_high",
               "delta_vs_features", "p_vs_features", "prefers_longer")


def pair_features(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per pair: gold (1 = output 1 better), word-count and markdown differences."""
    return pd.DataFrame({
        "pair_id": pairs["pair_id"],
        "gold1": (pairs["expected_verdict"] == "A").astype(int),
        "d_words": [word_count(a) - word_count(b) for a, b in zip(pairs["response_a"], pairs["response_b"], strict=True)],
        "d_markdown": [markdown_score(a) - markdown_score(b)
                       for a, b in zip(pairs["response_a"], pairs["response_b"], strict=True)],
    })


def judge_scores(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Order-averaged preference for output 1 per pair (module docstring)."""
    v = verdicts.assign(pref1=np.where(verdicts["verdict"] == "A", 1.0, np.where(verdicts["verdict"] == "B", 0.0, 0.5)))
    out = v.groupby("pair_id", sort=True).agg(judge_score=("pref1", "mean"), n_calls=("pref1", "size"))
    out["n_unparsed"] = v.assign(u=~v["verdict"].isin(["A", "B"])).groupby("pair_id", sort=True)["u"].sum()
    return out.reset_index()


def _mcnemar_exact(hit_a: np.ndarray, hit_b: np.ndarray) -> float:
    """Exact McNemar p-value of two classifiers' per-pair hits on the same pairs (statsmodels);
    NaN where they never disagree (no variance: :func:`judgelab.stats.mcnemar.mcnemar_exact_p`)."""
    from judgelab.stats.mcnemar import discordant_counts, mcnemar_exact_p

    return mcnemar_exact_p(*discordant_counts(hit_a, hit_b))


def external_validity(verdicts: pd.DataFrame, pairs: pd.DataFrame, *, n_folds: int = 5, C: float = 1.0,
                      seed: int = 0) -> dict:
    """One row of the LLMBar table for one judge on one subset."""
    # scikit-learn is imported here: the querying environments do not need it
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    feats = pair_features(pairs).merge(judge_scores(verdicts), on="pair_id", how="inner")
    n = len(feats)
    s = feats["judge_score"].to_numpy()
    gold = feats["gold1"].to_numpy()
    raw_hits = np.where(s > 0.5, gold == 1, np.where(s < 0.5, gold == 0, 0.5)).astype(float)
    raw = float(raw_hits.mean()) if n else np.nan
    X = feats[["judge_score", "d_words", "d_markdown"]].to_numpy(float)
    folds = min(n_folds, int(np.bincount(gold, minlength=2).min())) if n else 0
    corrected = features = delta = p_feat = np.nan
    if folds >= 2:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=C))  # l2 penalty (the default)
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        hit = cross_val_predict(model, X, gold, cv=cv) == gold
        # the features-only control: same model, same folds, no judge score
        hit_f = cross_val_predict(model, X[:, 1:], gold, cv=cv) == gold
        corrected, features = float(hit.mean()), float(hit_f.mean())
        delta = corrected - features
        p_feat = _mcnemar_exact(hit, hit_f)
    neq = feats["d_words"] != 0
    judge_longer = np.where(feats["d_words"] > 0, s, 1.0 - s)[neq]
    gold_longer = np.where(feats["d_words"] > 0, gold, 1 - gold)[neq]
    rlo, rhi = wilson_interval(raw * n, n)
    clo, chi = wilson_interval(corrected * n, n) if np.isfinite(corrected) else (np.nan, np.nan)
    flo, fhi = wilson_interval(features * n, n) if np.isfinite(features) else (np.nan, np.nan)
    usable = verdicts["verdict"].isin(["A", "B"]).to_numpy()
    reason = no_value_reason(verdicts["status"] if "status" in verdicts else [""] * len(verdicts), usable=usable)
    return blank({
        "n_pairs": n, "n_unparsed": int(feats["n_unparsed"].sum()), "raw_acc": raw, "raw_ci_low": rlo,
        "raw_ci_high": rhi, "corrected_acc": corrected, "corr_ci_low": clo, "corr_ci_high": chi,
        "features_acc": features, "feat_ci_low": flo, "feat_ci_high": fhi, "delta_vs_features": delta,
        "p_vs_features": p_feat, "beats_features": bool(not reason and np.isfinite(delta) and delta > 0 and p_feat < 0.05),
        "prefers_longer": float(judge_longer.mean()) if neq.any() else np.nan,
        "gold_longer": float(gold_longer.mean()) if neq.any() else np.nan,
    }, JUDGE_STATS, reason)
