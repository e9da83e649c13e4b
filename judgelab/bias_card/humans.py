"""Human anchor rows of the bias card: agreement with human labels, and PPI++ where only some exist.

Where the labels come from: a log's ``human`` column (the mapping's ``human`` field, e.g. the
MT-Bench expert votes of :mod:`judgelab.bias_card.mtbench_humans`), else its gold
(``expected_verdict``: LLMBar's human-verified labels, JudgeBench's), the note says which.

Rows (one judge, one view; descriptive, never a detection):

``human_accuracy``
    share of presentations with a human label whose verdict equals it (A, B or tie; a missing
    verdict counts as disagreement, LLMBar's convention), item-clustered Wilson CI.
``human_kappa``
    Cohen's kappa between the judge's verdict and the human label over presentations with both
    (statsmodels ``cohens_kappa``: kappa +- z times its asymptotic SE, which treats presentations
    as independent).  Not estimable when the expected agreement is 1 (both raters use one and the
    same category: kappa is 0 / 0).
``ppi_win_rate``, ``ppi_share_A``, ``ppi_share_tie``, ``ppi_share_B``
    only when some pairs, not all, carry a human label: prediction-powered inference, PPI++
    with its power tuning (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453; the
    ``ppi-python`` package, ``ppi_mean_ci(..., lam=None)``), of the human win rate of stored B
    (P(B preferred), a tie 0.5) and of the human label shares.  The unit is the pair: its human
    label against the judge's preference averaged over the orders it was shown in (a pair
    without any verdict predicts 0.5, and 1/3 for each share); pairs are taken as i.i.d., as
    PPI's CLT interval assumes.

    Small samples (:func:`ppi_mean`): the interval's critical value is Student's t on
    labels - 1 df, since the rectifier's variance is estimated from the labels alone; below
    :data:`PPI_TUNE_MIN` labels the power tuning is left out (lambda = 1, plain PPI), since a
    lambda tuned on the same few labels makes the interval too short (planted worlds of
    ``tests/bias_card/test_ppi_small.py``: PPI++ with z covered 0.91 to 0.93 at 20 labels).
    Every interval and estimate is clipped to [0, 1] (a share cannot leave it), the note saying
    so; with fewer than ``CardSettings.min_labels_per_side`` labels for stored A or for stored B
    the rows are ``underpowered`` and the reason says how many each side has.

The confusion matrix (human label x judge verdict, ``none`` for no verdict) is
:func:`confusion`; ``judgelab audit`` writes it as ``human_confusion.csv`` beside the card.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import norm

from judgelab.bias_card.codes import category_codes, column_strings, is_any, judge_tables
from judgelab.stats.intervals import DEFAULT_ALPHA

LABELS = ("A", "B", "tie")
NAN = float("nan")


@dataclass(frozen=True)
class PPIResult:
    estimate: float
    ci_low: float
    ci_high: float
    n_labelled: int
    n_unlabelled: int
    reason: str = ""
    note: str = ""  # what was done to the interval (clipped to [0, 1], untuned lambda)
    labels_per_side: tuple[int, int] = (0, 0)  # labelled pairs whose human label is stored A, stored B


#: labels from which PPI++'s power-tuned lambda is used; fewer: plain PPI (lambda = 1)
PPI_TUNE_MIN = 50


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, *, alpha: float = DEFAULT_ALPHA
             ) -> PPIResult:
    """PPI++ mean of ``y`` from labelled (y, yhat) and unlabelled yhat, in [0, 1].

    ppi-python's interval is the estimate +- z se; here z becomes Student's t on n - 1 df
    (the rectifier's variance is estimated from the n labels), the point estimate is the
    interval's midpoint, and both are clipped to [0, 1] (ppi-python offers no bounded interval
    for a mean), the note saying when.  With :data:`PPI_TUNE_MIN` labels or more lambda is
    power-tuned (lam=None); with fewer it is 1 (plain PPI; see the module docstring).
    Predictions without variance carry no information: the classical interval (lam = 0) is
    used, as the tuned lambda would be 0 / 0.  Fewer than two labels leave nothing to estimate
    a variance from: NaN, with the reason.
    """
    y = np.asarray(y, dtype=float)
    yhat = np.asarray(yhat, dtype=float)
    yu = np.asarray(yhat_unlabelled, dtype=float)
    n, big_n = len(y), len(yu)
    if n < 2:
        return PPIResult(NAN, NAN, NAN, n, big_n, f"{n} human label(s): at least 2 are needed")
    if big_n == 0:
        return PPIResult(NAN, NAN, NAN, n, big_n, "every unit is human-labelled: the labelled mean is the answer")
    from ppi_py import ppi_mean_ci  # 4 s of imports (numba): only when a log has partial human labels
    from scipy.stats import t as student_t

    flat = np.ptp(np.concatenate([yhat, yu])) == 0
    lam = 0.0 if flat else (None if n >= PPI_TUNE_MIN else 1.0)
    z = float(norm.ppf(1 - alpha / 2))
    lo, hi = ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=lam)
    lo, hi = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * float(student_t.ppf(1 - alpha / 2, n - 1)) / z
    lo, hi = mid - half, mid + half
    notes = [] if lam is None or flat else [f"lambda 1 (plain PPI): fewer than {PPI_TUNE_MIN} labels to tune it"]
    if lo < 0 or hi > 1 or not 0 <= mid <= 1:
        notes.append(f"interval clipped to [0, 1] (unclipped [{lo:.3f}, {hi:.3f}])")
        lo, hi, mid = max(lo, 0.0), min(hi, 1.0), min(max(mid, 0.0), 1.0)
    reason = "" if hi > lo else "every label and prediction alike: the interval has zero width"
    return PPIResult(mid, lo, hi, n, big_n, reason, "; ".join(notes))


def human_labels(t: pd.DataFrame) -> tuple[np.ndarray, str]:
    """(label per row: A/B/tie or "", where they come from) of one judge's table."""
    for col, source in (("human", "human labels"), ("expected_verdict", "gold labels as the human anchor")):
        if col in t.columns:
            # each distinct value read once (a million-row log has a handful): its string if a label, else ""
            codes, uniq = category_codes(t[col])
            vals = [str(x) if str(x) in LABELS else "" for x in uniq] + [""]  # code -1 (missing): ""
            v = np.asarray(vals, dtype="<U3")[codes]
            if (v != "").any():
                return v, source
    return np.full(len(t), ""), ""


def confusion(human: np.ndarray, verdict: np.ndarray) -> pd.DataFrame:
    """Counts of human label (rows A, B, tie) x judge verdict (A, B, tie, none) where a label exists."""
    v = np.where(is_any(verdict, LABELS), verdict, "none")
    cols = [*LABELS, "none"]
    counts = [[int(np.sum((human == h) & (v == c))) for c in cols] for h in LABELS]
    return pd.DataFrame(counts, index=pd.Index(LABELS, name="human"), columns=pd.Index(cols, name="judge"))


def cohen_kappa(a: np.ndarray, b: np.ndarray, alpha: float = DEFAULT_ALPHA) -> tuple[float, float, float, float, str]:
    """(kappa, se, low, high, reason) of two raters' labels over the same units (statsmodels).

    NaN with a reason when there is no unit or when the expected agreement is 1 (both raters
    give one and the same category everywhere: kappa is 0 / 0)."""

    if len(a) == 0:
        return NAN, NAN, NAN, NAN, "no unit labelled by both"
    # each rater's labels coded on its own (NumPy's sort: no Python object per unit), then on the
    # sorted union of both raters' labels
    (ua, ca), (ub, cb) = (np.unique(np.asarray(x), return_inverse=True) for x in (a, b))
    cats = sorted(set(ua.tolist()) | set(ub.tolist()))
    at = {c: i for i, c in enumerate(cats)}
    code_a = np.array([at[x] for x in ua.tolist()], dtype=np.int64)[ca]
    code_b = np.array([at[x] for x in ub.tolist()], dtype=np.int64)[cb]
    return kappa_of_codes(code_a, code_b, cats, alpha=alpha)


def kappa_of_codes(code_a: np.ndarray, code_b: np.ndarray, cats: list[str], *, alpha: float = DEFAULT_ALPHA
                   ) -> tuple[float, float, float, float, str]:
    """:func:`cohen_kappa` of labels already coded as indices into ``cats`` (sorted); categories
    neither rater uses are dropped, as :func:`cohen_kappa` never sees them."""
    from statsmodels.stats.inter_rater import cohens_kappa

    if len(code_a) == 0:
        return NAN, NAN, NAN, NAN, "no unit labelled by both"
    used = np.flatnonzero(np.bincount(code_a, minlength=len(cats)) + np.bincount(code_b, minlength=len(cats)))
    if len(used) < len(cats):
        remap = np.full(len(cats), -1, np.int64)
        remap[used] = np.arange(len(used))
        code_a, code_b, cats = remap[code_a], remap[code_b], [cats[i] for i in used]
    k = len(cats)
    tab = np.bincount(np.asarray(code_a, np.int64) * k + code_b, minlength=k * k).reshape(k, k).astype(float)
    pe = float((tab.sum(0) * tab.sum(1)).sum() / tab.sum() ** 2)
    if pe >= 1 - 1e-12:
        return NAN, NAN, NAN, NAN, f"kappa undefined: both give '{cats[0]}' to every unit (expected agreement 1)"
    r = cohens_kappa(tab, return_results=True)
    kap, se = float(r.kappa), float(r.std_kappa)
    if not se > 0:  # e.g. each rater uses one label, a different one: kappa 0 with a zero-width interval
        return kap, se, NAN, NAN, f"kappa's asymptotic standard error is {se:.3g}: no interval"
    z = float(norm.ppf(1 - alpha / 2))
    return kap, se, kap - z * se, kap + z * se, ""


def _pair_predictions(pairs: np.ndarray, verdict: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pair codes in first-seen order, (k, 4) judge predictions: P(B) and the shares of A, B, tie)."""
    codes, uniq = pd.factorize(pairs)
    k = len(uniq)
    has = is_any(verdict, LABELS)
    cnt = np.bincount(codes, weights=has, minlength=k)
    out = np.empty((k, 4))
    pref = (verdict == "B").astype(float)  # 1 B, 0.5 tie, 0 A or none
    pref[verdict == "tie"] = 0.5
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 0] = np.where(cnt > 0, np.bincount(codes, weights=pref, minlength=k) / cnt, 0.5)
        for j, lab in enumerate(LABELS):
            out[:, j + 1] = np.where(cnt > 0, np.bincount(codes, weights=verdict == lab, minlength=k) / cnt, 1 / 3)
    return codes, out


PPI_METRICS = ("ppi_win_rate", "ppi_share_A", "ppi_share_B", "ppi_share_tie")


def ppi_rows(pairs: np.ndarray, verdict: np.ndarray, human: np.ndarray, *, alpha: float = DEFAULT_ALPHA
             ) -> list[tuple[str, PPIResult, str]]:
    """(metric, result, note) of the PPI rows, intervals at level ``1 - alpha``; see the module docstring."""
    if len(human) and (human != "").all():  # every pair labelled: nothing for predictions to add
        k = len(pd.unique(np.asarray(pairs)))
        note = f"PPI++ (ppi-python), {k} of {k} pairs human-labelled"
        r = ppi_mean(np.zeros(k), np.zeros(k), np.zeros(0), alpha=alpha)  # its reason, not a fit
        return [(m, r, note) for m in PPI_METRICS]
    codes, pred = _pair_predictions(pairs, verdict)
    k = pred.shape[0]
    rows = np.flatnonzero(human != "")
    first = np.full(k, -1, np.int64)
    first[codes[rows[::-1]]] = rows[::-1]  # each labelled pair's first labelled row (the last write wins)
    pair_of = np.flatnonzero(first >= 0)
    hl = np.full(k, "", dtype=object)
    hl[pair_of] = human[first[pair_of]]
    lab = hl != ""
    targets = [np.where(hl == "B", 1.0, np.where(hl == "tie", 0.5, 0.0))] + [(hl == x).astype(float) for x in LABELS]
    note = f"PPI++ (ppi-python), {int(lab.sum())} of {k} pairs human-labelled"
    sides = (int(np.count_nonzero(hl == "A")), int(np.count_nonzero(hl == "B")))
    out = []
    for col, m in enumerate(PPI_METRICS):  # columns of pred and targets: P(B), A, B, tie
        r = ppi_mean(targets[col][lab], pred[lab, col], pred[~lab, col], alpha=alpha)
        out.append((m, replace(r, labels_per_side=sides), "; ".join(x for x in (note, r.note) if x)))
    return out


def confusion_table(table: pd.DataFrame) -> pd.DataFrame:
    """Long confusion table of every judge with human labels: judge, human, judge_verdict, n
    (lenient view: every verdict with a value); empty when no judge has a human label."""
    out = []
    for judge, g in judge_tables(table):
        human, source = human_labels(g)
        if not source:
            continue
        verdict = column_strings(g, "verdict")
        cm = confusion(human, verdict)
        for h in cm.index:
            for v in cm.columns:
                out.append({"judge": judge, "label_source": source, "human": h, "judge_verdict": v,
                            "n": int(cm.loc[h, v])})
    return pd.DataFrame(out, columns=["judge", "label_source", "human", "judge_verdict", "n"])
