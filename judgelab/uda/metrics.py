"""Paper 000's evaluation metrics over judge x model score matrices, and its table layouts.

Definitions (paper 000, "Metrics", and the values they reproduce from its appendix):

* **inter-judge standard deviation** of a model: the *sample* standard deviation (ddof = 1)
  of its scores across judges; the paper's Tables 1-2 report it per model and its mean
  (Table 2 baseline row = column sample std of Table 6's baseline block, mean 193.95);
* **reduction %** = 100 (std_baseline - std_method) / std_baseline;
* **relative inter-judge std** (ours, not the paper's) = mean inter-judge std / the sample std
  over models of the consensus scores: the std is in Elo points, so a method that merely
  compresses every judge's scale lowers it; the ratio does not move under compression;
* **Pearson with a reference** (human scores, or the planted true quality of a simulated
  tournament): per judge over the models that have a reference value, its mean over judges,
  and the Pearson of the *consensus* (the mean score over judges) -- Fig. 4, Table 3;
* **alignment with the baseline consensus** G (mean baseline score over judges): per judge
  the Pearson with G and the mean squared difference to G over models -- Table 4;
* **self-preference deviation** of a judge: (its score of its own model - the mean score the
  other judges give that model) / that mean, in % -- "-21% to +56%" for the baseline of the
  paper's transfer set (Table 6).

**Column order.**  Paper 000's Table 2 header lists the models as gpt-4o, claude-3.5,
glm-4-air, glm-4-plus, glm-4-flash, doubao, qwen-max, deepseek-v3, gemini, deepseek-r1, but
its values are the column stds of Table 6 in Table 6's order (gpt-4o, deepseek-v3,
claude-3.5, glm-4-plus, glm-4-air, glm-4-flash, doubao, qwen-max, gemini, deepseek-r1): the
header is permuted.  We follow Table 6/7's order (tests/uda/test_metrics.py).  Table 7's
"UDA (Full)" block has the mean std (65.64) that Table 3 reports for the *ablated* model.

**Controls** (:func:`controls_table`, beyond the paper): UDA beside the same adapter untrained
and a label-smoothing Elo, in-sample and on held-out prompts, raw and relative std -- a
reduction only counts as learned where UDA beats both on prompts it was not trained on.

**Long score table** (``scores.parquet``): dataset, method (baseline / label_smoothing /
uda_untrained / uda / uda_ablated), trained_on (dataset the adapter was trained on; empty for
baseline), split (all / train / heldout prompts; the paper's tables use ``all``), judge, model,
score.

**A judge with no usable verdict** (every verdict unparsed, refused or errored) is never
updated by the Elo, so its "scores" are the initial rating of every model.  Given the judges'
reasons (judge -> :func:`judgelab.stats.unscored.no_value_reason`, see
:func:`judgelab.uda.study.judge_reasons`), :func:`matrix` blanks that judge's row (NaN) for every
method: the per-judge tables (matrix, alignment, self-preference, reference) keep its rows with
NaN statistics and the ``reason``, and every spread, mean and consensus is taken over the judges
that were scored -- ``n_judges`` in the std, methods and controls tables says how many; a
statistic that needs more scored judges than there are is NaN with its ``reason``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import overload

import numpy as np
import pandas as pd

from judgelab.stats.unscored import REASON

METHOD_ORDER = ("baseline", "label_smoothing", "uda_untrained", "uda", "uda_ablated")


def inter_judge_std(S: pd.DataFrame) -> pd.Series:
    """Sample std (ddof 1) of each model's scores across judges (rows = judges, columns = models)."""
    return S.std(axis=0, ddof=1)


@overload
def reduction_pct(base: float, new: float) -> float: ...
@overload
def reduction_pct(base: pd.Series, new: pd.Series) -> pd.Series: ...
def reduction_pct(base: float | pd.Series, new: float | pd.Series) -> float | pd.Series:
    return 100.0 * (base - new) / base


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3 or np.std(x[ok]) == 0 or np.std(y[ok]) == 0:
        return float("nan")
    from scipy import stats  # here: the study's jobs that compute no correlation need no scipy.stats

    return float(stats.pearsonr(x[ok], y[ok]).statistic)


def pearson_with(S: pd.DataFrame, ref: pd.Series) -> pd.Series:
    """Pearson of every judge's scores with ``ref`` over the models where ``ref`` is known."""
    r = ref.reindex(S.columns).to_numpy(dtype=float)
    return pd.Series({j: _pearson(S.loc[j].to_numpy(dtype=float), r) for j in S.index}, name="pearson")


def consensus(S: pd.DataFrame) -> pd.Series:
    return S.mean(axis=0)


def consensus_alignment(S: pd.DataFrame, G: pd.Series) -> pd.DataFrame:
    """Per judge: Pearson with G and mean squared difference to G over models (Table 4)."""
    g = G.reindex(S.columns).to_numpy(dtype=float)
    rows = {j: {"pearson": _pearson(S.loc[j].to_numpy(dtype=float), g),
                "mse": float(np.mean((S.loc[j].to_numpy(dtype=float) - g) ** 2))} for j in S.index}
    return pd.DataFrame.from_dict(rows, orient="index")


def self_preference(S: pd.DataFrame, own: Mapping[str, str],
                    reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Deviation of each judge's score of its own model from the other judges' mean, in %.

    The other judges' mean is over the judges that have a score (an unscored judge's row is NaN);
    a judge that is unscored itself, or whose own model no other judge scored, has NaN and a reason."""
    reasons = reasons or {}
    rows = []
    for j in S.index:
        m = own.get(j)
        if not m or m not in S.columns:
            continue
        others = S.loc[S.index != j, m]
        mean = float(others.mean())
        mine = float(S.loc[j, m])
        why = reasons.get(j, "")
        if not why and np.isnan(mean):
            why = f"no other judge with a usable verdict scored {m}"
        rows.append({"judge": j, "own_model": m, "own_score": mine, "others_mean": mean,
                     "deviation_pct": np.nan if why else 100.0 * (mine - mean) / mean, REASON: why})
    return pd.DataFrame(rows, columns=["judge", "own_model", "own_score", "others_mean", "deviation_pct", REASON])


# ---------------------------------------------------------------------------------
# the paper's tables from the long score table


def _split(scores: pd.DataFrame, split: str = "all") -> pd.DataFrame:
    """Rows of one prompt split (tables without a ``split`` column are all ``all``)."""
    return scores[scores["split"] == split] if "split" in scores.columns else scores


def method_keys(scores: pd.DataFrame) -> list[tuple[str, str]]:
    keys = _split(scores)[["method", "trained_on"]].drop_duplicates().itertuples(index=False, name=None)
    return sorted(keys, key=lambda k: (METHOD_ORDER.index(k[0]) if k[0] in METHOD_ORDER else 99, k[1]))


def label(method: str, trained_on: str, dataset: str) -> str:
    if method == "baseline" or trained_on in ("", dataset):
        return method
    return f"{method} [from {trained_on}]"


def matrix(scores: pd.DataFrame, method: str, trained_on: str, models: list[str], judges: list[str],
           split: str = "all", reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Judge x model scores of one method; the row of a judge with a reason (no usable verdict) is NaN."""
    scores = _split(scores, split)
    sub = scores[(scores["method"] == method) & (scores["trained_on"] == trained_on)]
    S = sub.pivot(index="judge", columns="model", values="score").reindex(index=judges, columns=models)
    unscored = [j for j in judges if (reasons or {}).get(j)]
    if unscored:
        S.loc[unscored] = np.nan
    return S


def n_scored(S: pd.DataFrame) -> int:
    """Judges of a score matrix with at least one score (those a spread across judges is taken over)."""
    return int(S.notna().any(axis=1).sum())


def _spread_reason(S: pd.DataFrame) -> str:
    """Why an inter-judge std cannot be computed on ``S`` (``""`` when it can)."""
    k = n_scored(S)
    return "" if k >= 2 else f"inter-judge std needs 2 judges with a usable verdict: {k} of {len(S)}"


def std_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
              reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Tables 1-2: per method the inter-judge std per model and its mean; reduction rows vs baseline;
    ``n_judges`` scored judges the std is taken over."""
    base_m = matrix(scores, "baseline", "", models, judges, reasons=reasons)
    base = inter_judge_std(base_m)
    rows = []
    for method, src in method_keys(scores):
        S = matrix(scores, method, src, models, judges, reasons=reasons)
        sd = inter_judge_std(S)
        lab = label(method, src, dataset)
        extra = {"n_judges": n_scored(S), REASON: _spread_reason(S)}
        rows.append({"row": "std", "method": lab, **{str(m): v for m, v in sd.items()}, "mean": float(sd.mean()), **extra})
        if method != "baseline":
            red = reduction_pct(base, sd)
            rows.append({"row": "reduction_pct", "method": lab, **{str(m): v for m, v in red.items()},
                         "mean": float(reduction_pct(base.mean(), sd.mean())),
                         **{**extra, REASON: extra[REASON] or _spread_reason(base_m)}})
    return pd.DataFrame(rows, columns=["row", "method", *models, "mean", "n_judges", REASON])


def methods_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                  reference: pd.Series | None, reference_name: str,
                  reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 3: mean inter-judge std, mean per-judge Pearson with the reference, consensus Pearson
    (over the ``n_judges`` scored judges)."""
    base_m = matrix(scores, "baseline", "", models, judges, reasons=reasons)
    base_std = float(inter_judge_std(base_m).mean())
    base_r = float(pearson_with(base_m, reference).mean()) if reference is not None else float("nan")
    rows = []
    for method, src in method_keys(scores):
        S = matrix(scores, method, src, models, judges, reasons=reasons)
        sd = float(inter_judge_std(S).mean())
        r = pearson_with(S, reference) if reference is not None else pd.Series(dtype=float)
        mean_r = float(r.mean()) if r.notna().any() else float("nan")
        spread = float(consensus(S).std(ddof=1))
        rows.append({
            "method": label(method, src, dataset), "trained_on": src, "mean_inter_judge_std": sd,
            "std_reduction_pct": float(reduction_pct(base_std, sd)),
            "consensus_spread": spread,
            "relative_inter_judge_std": sd / spread if spread > 0 else float("nan"),
            "reference": reference_name, "n_reference_models": int(reference.reindex(models).notna().sum()) if reference is not None else 0,
            "mean_pearson_reference": mean_r,
            "pearson_change_pct": 100.0 * (mean_r - base_r) / abs(base_r) if reference is not None else float("nan"),
            "consensus_pearson_reference": _pearson(consensus(S).to_numpy(float), reference.reindex(models).to_numpy(float))
            if reference is not None else float("nan"),
            "n_judges": n_scored(S), REASON: _spread_reason(S),
        })
    return pd.DataFrame(rows)


def controls_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                   reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """UDA beside its controls, per prompt split: raw and relative inter-judge std and their reductions
    against the baseline Elo on the same prompts (``all`` = in-sample as in the paper, ``heldout`` =
    the validation prompts no adapter was trained on)."""
    splits = list(dict.fromkeys(scores["split"])) if "split" in scores.columns else ["all"]
    rows = []
    for split in splits:
        sub = _split(scores, split)
        keys = sorted(sub[["method", "trained_on"]].drop_duplicates().itertuples(index=False, name=None),
                      key=lambda k: (METHOD_ORDER.index(k[0]) if k[0] in METHOD_ORDER else 99, k[1]))
        base = matrix(scores, "baseline", "", models, judges, split, reasons)
        base_sd = float(inter_judge_std(base).mean())
        base_rel = base_sd / float(consensus(base).std(ddof=1))
        for method, src in keys:
            S = matrix(scores, method, src, models, judges, split, reasons)
            sd = float(inter_judge_std(S).mean())
            spread = float(consensus(S).std(ddof=1))
            rel = sd / spread if spread > 0 else float("nan")
            rows.append({"split": split, "method": label(method, src, dataset), "trained_on": src,
                         "mean_inter_judge_std": sd, "std_reduction_pct": float(reduction_pct(base_sd, sd)),
                         "consensus_spread": spread, "relative_inter_judge_std": rel,
                         "relative_std_reduction_pct": float(reduction_pct(base_rel, rel)),
                         "n_judges": n_scored(S), REASON: _spread_reason(S)})
    return pd.DataFrame(rows, columns=["split", "method", "trained_on", "mean_inter_judge_std", "std_reduction_pct",
                                       "consensus_spread", "relative_inter_judge_std", "relative_std_reduction_pct",
                                       "n_judges", REASON])


def alignment_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                    reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 4: every judge's Pearson and MSE to the baseline consensus, per method, with averages
    (over the scored judges; an unscored judge's row is NaN with its reason)."""
    reasons = reasons or {}
    G = consensus(matrix(scores, "baseline", "", models, judges, reasons=reasons))
    rows = []
    for method, src in method_keys(scores):
        S = matrix(scores, method, src, models, judges, reasons=reasons)
        al = consensus_alignment(S, G)
        lab = label(method, src, dataset)
        for j in judges:
            rows.append({"judge": j, "method": lab, "pearson_consensus": al.loc[j, "pearson"],
                         "mse_consensus": al.loc[j, "mse"], REASON: reasons.get(str(j), "")})
        rows.append({"judge": "Average", "method": lab, "pearson_consensus": float(al["pearson"].mean()),
                     "mse_consensus": float(al["mse"].mean()),
                     REASON: "" if n_scored(S) else "no judge with a usable verdict"})
    return pd.DataFrame(rows, columns=["judge", "method", "pearson_consensus", "mse_consensus", REASON])


def self_preference_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                          own: Mapping[str, str], reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    frames = []
    for method, src in method_keys(scores):
        sp = self_preference(matrix(scores, method, src, models, judges, reasons=reasons), own, reasons)
        sp.insert(1, "method", label(method, src, dataset))
        frames.append(sp)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def reference_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                    reference: pd.Series, reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Fig. 4 data: Pearson with the reference per judge and method, plus the consensus (of the scored judges)."""
    reasons = reasons or {}
    rows = []
    ref = reference.reindex(models)
    for method, src in method_keys(scores):
        S = matrix(scores, method, src, models, judges, reasons=reasons)
        lab = label(method, src, dataset)
        for j, r in pearson_with(S, ref).items():
            rows.append({"judge": j, "method": lab, "pearson_reference": r, REASON: reasons.get(str(j), "")})
        rows.append({"judge": "consensus", "method": lab,
                     "pearson_reference": _pearson(consensus(S).to_numpy(float), ref.to_numpy(float)),
                     REASON: "" if n_scored(S) else "no judge with a usable verdict"})
    return pd.DataFrame(rows, columns=["judge", "method", "pearson_reference", REASON])


def matrix_table(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                 reference: pd.Series | None, reference_name: str,
                 reasons: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Tables 5-7: the judge x model score matrices of every method, and the reference row; an
    unscored judge's row is NaN (not the initial rating) with its reason."""
    reasons = reasons or {}
    frames = []
    for method, src in method_keys(scores):
        S = matrix(scores, method, src, models, judges, reasons=reasons).reset_index()
        S.insert(0, "method", label(method, src, dataset))
        S[REASON] = [reasons.get(j, "") for j in S["judge"]]
        frames.append(S)
    if reference is not None:
        frames.append(pd.DataFrame([{"method": reference_name, "judge": reference_name,
                                     **reference.reindex(models).to_dict(), REASON: ""}]))
    return pd.concat(frames, ignore_index=True)[["method", "judge", *models, REASON]]
