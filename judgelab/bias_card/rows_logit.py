"""The card's length- and markdown-controlled rows: a logistic regression of "picks the response shown
first" on the cues, gold and, with three or more models, a Bradley-Terry strength per model
(:func:`_model_term`), with item-clustered standard errors (:func:`judgelab.stats.sandwich._cluster_sandwich`)."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import norm

from judgelab.bias_card.metrics import NAN, CardRow
from judgelab.stats.clustered import _n_distinct
from judgelab.stats.sandwich import _cluster_sandwich

if TYPE_CHECKING:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.prepare import _Log


#: the model term of the cue regressions is dense (a column per model, its rank check and fit cost models^2):
#: beyond these many model terms, or verdicts x model terms cells, it is left out (see :func:`_logit_rows`)
MAX_MODEL_TERMS = 1000
MAX_MODEL_TERM_CELLS = 10_000_000


def _logit_rows(lg: _Log, decisive: np.ndarray, s: CardSettings, model_term: bool = False) -> list[CardRow]:
    """Length- and markdown-controlled view: logit P(picks shown first) ~ len + md + gold [+ model term].

    With ``model_term`` (three or more models behind the responses) the regression holds a
    Bradley-Terry strength per model (:func:`_model_term`), so the cue is read within models.  A
    term beyond :data:`MAX_MODEL_TERMS` models or :data:`MAX_MODEL_TERM_CELLS` cells is left out
    before it is built (the note says so); then a log without gold or controlled pairs has no
    control of answer quality left, and the rows are not estimable with that reason.

    Not estimable (never detected) under separation or quasi-separation (statsmodels'
    PerfectSeparation warning or error, fitted probabilities at 0 or 1, or a
    cluster-robust SE above ``max_logit_se``), collinear regressors, a cue without
    variation, or fewer than ``min_decisive`` decisive verdicts.
    """
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM  # not statsmodels.api: 3 s of imports
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    metrics = (("length_controlled", "len"), ("markdown_controlled", "md"))
    items = lg.items[decisive]
    n, n_items = len(items), _n_distinct(items)

    def fail(reason: str) -> list[CardRow]:
        return [CardRow(m, test="wald-cluster", null_value=0.0, n=n, n_items=n_items, reason=reason)
                for m, _ in metrics]

    if n < s.min_decisive:
        return fail(f"fewer than {s.min_decisive} decisive verdicts with response texts ({n})")
    if n_items < 2:
        return fail("one item: no clustered standard error")
    y = (lg.shown[decisive] == "A").astype(float)
    if y.min() == y.max():
        return fail("every decisive verdict names the same slot: perfect separation")
    cols = lg.shown_cues(decisive)
    if not np.any(cols["gold"] != 0):
        del cols["gold"]
    left_out = ""
    if model_term:
        # one dense column per model, and a rank check and fit whose cost grows with models^2: refused
        # before anything is allocated when the design would not fit (a log of 10,000 models)
        n_terms = _n_distinct(np.concatenate([lg.model_b[decisive]] + ([] if lg.model_a is None
                                                                       else [lg.model_a[decisive]]))) - 1
        if n_terms > MAX_MODEL_TERMS or n * n_terms > MAX_MODEL_TERM_CELLS:
            left_out = (f"model term left out: {n_terms + 1} models x {n} verdicts exceed the card's dense design "
                        f"limit ({MAX_MODEL_TERMS} model terms, {MAX_MODEL_TERM_CELLS:,} cells)")
            if "gold" not in cols and not s.controlled_pairs:
                return fail(left_out + "; no other control of answer quality")
        else:
            cols.update({str(c): v.to_numpy() for c, v in _model_term(lg, decisive).items()})
    # the distinct (covariates, outcome) rows with their counts: the likelihood, and so the fit, of
    # the rows themselves; the clustered sandwich is summed over the rows (_cluster_sandwich)
    key = pd.factorize(y)[0].astype(np.int64, copy=False)
    for v in cols.values():
        codes, uniq = pd.factorize(v)
        key *= len(uniq) + 1
        key += codes
        del codes
        key = pd.factorize(key)[0].astype(np.int64, copy=False)
    counts = np.bincount(key)
    rep = np.full(len(counts), -1)
    rep[key[::-1]] = np.arange(len(key))[::-1]  # first row of each distinct row
    X = pd.DataFrame({"const": 1.0, **{c: v[rep] for c, v in cols.items()}})
    X = X.loc[:, (X.std() > 0) | (X.columns == "const")]
    # model strengths are defined up to the intercept: with one baseline shown first in every row the
    # evaluated models' columns sum to -const, so one of them goes (the cue's coefficient, the
    # column space, is the same whichever does)
    while X.columns[-1].startswith("model[") and np.linalg.matrix_rank(X.to_numpy()) < X.shape[1]:
        X = X.iloc[:, :-1]
    if np.linalg.matrix_rank(X.to_numpy()) < X.shape[1]:
        return fail("collinear regressors (" + ", ".join(X.columns[1:]) + ")")
    groups = pd.factorize(items)[0]
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = GLM(y[rep], X, family=families.Binomial(), freq_weights=counts.astype(float)).fit()
        except PerfectSeparationError:
            return fail("perfect separation")
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        return fail("perfect separation")
    mu = np.asarray(fit.fittedvalues)
    if np.any((mu < 1e-8) | (mu > 1 - 1e-8)):
        return fail("quasi-separation: fitted probabilities at 0 or 1")
    params = fit.params  # a Series named by X's columns
    row_cols = [None if c == "const" else cols[c] for c in X.columns]
    resid = mu[key]
    np.subtract(y, resid, out=resid)  # y - mu, row by row
    del key, y
    bse = pd.Series(_cluster_sandwich(X.to_numpy(), counts, mu, row_cols, resid, groups), index=X.columns)
    controls = [c for c in X.columns if c != "const" and not c.startswith("model[")]
    n_model_cols = sum(c.startswith("model[") for c in X.columns)
    rows = []
    for metric, col in metrics:
        if col not in X.columns:
            rows.append(CardRow(metric, test="wald-cluster", null_value=0.0, n=n, n_items=n_items,
                                reason="no variation in this cue"))
            continue
        b, se = float(params[col]), float(bse[col])
        reason = ""
        if not math.isfinite(se) or se <= 0:
            reason = f"cluster-robust standard error {se:.3g}"
        elif se > s.max_logit_se:
            reason = f"quasi-separation: standard error {se:.3g} > {s.max_logit_se:g}"
        mde = (norm.ppf(1 - s.alpha / 2) + norm.ppf(s.power)) * se
        rows.append(CardRow(metric, estimate=b, ci_low=b - z * se, ci_high=b + z * se, se=se, null_value=0.0, n=n,
                            n_items=n_items, test="wald-cluster", statistic=b / se if se > 0 else NAN,
                            p_value=float(2 * norm.sf(abs(b / se))) if se > 0 else NAN, mde=mde, reason=reason,
                            note="; ".join(x for x in (
                                "controls: " + ", ".join(["position"] + [c for c in controls if c != col]
                                                         + ([f"model strength ({n_model_cols} free terms)"]
                                                            if n_model_cols else [])), left_out) if x)))
    return rows


def _model_term(lg: _Log, rows: np.ndarray) -> pd.DataFrame:
    """Bradley-Terry strength columns of the models behind the shown responses (+1 shown first,
    -1 shown second), the first model in sorted order the reference; empty without model names."""
    if lg.model_a is None:
        return pd.DataFrame(index=range(int(rows.sum())))
    ab = lg.order[rows] == "AB"
    first = np.where(ab, lg.model_a[rows], lg.model_b[rows])
    second = np.where(ab, lg.model_b[rows], lg.model_a[rows])
    code = {str(lg.models[c]): c for c in np.union1d(first, second)}
    code.pop("", None)
    cols = {f"model[{m}]": (first == code[m]).astype(float) - (second == code[m]) for m in sorted(code)[1:]}
    return pd.DataFrame(cols, index=range(len(first)))
