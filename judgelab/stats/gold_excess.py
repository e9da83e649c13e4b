"""A judge's share of a cue's side (the longer, the more formatted, its own family's response) read
against gold's own share on the same verdicts, with an item-clustered score test.  On plain arrays
(which verdicts and which gold labels are on the cue's side, the items), never the card's settings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from judgelab.stats.clustered import _cluster_codes

NAN = float("nan")


def excess_over_gold(judge_cue: np.ndarray, gold_cue: np.ndarray, items: np.ndarray) -> dict[str, Any]:
    """A judge's cue share read against gold's, on the same decisive verdicts (each with gold).

    ``judge_cue`` / ``gold_cue``: the verdict / the gold label is the cue's side (longer, more
    formatted, own family).  The estimate is the paired excess, judge share minus gold share,
    = (c_s - c_l) / n with c_s the errors on pairs where gold is on the other side (an error
    there picks the cue) and c_l the errors on pairs where gold is on the cue's side.

    Why not test the excess against 0: a judge whose errors ignore the cue (error rate e on
    both kinds of pair) reads e (1 - 2 g) below gold's share g, since its errors move the share
    toward 0.5; on a log where gold favours the cue 60 % of the time, a noisy but cue-blind
    judge would be "detected" with a negative preference.  The null value is therefore that
    expectation at the observed error rate, ebar (1 - 2 g), and the excess beyond it is exactly
    2 g (1 - g) (e_s - e_l): the difference of the two conditional error rates, gold's sides
    fixed by the design.  The test's variance (``se``) is the item-clustered (CR0, linearised)
    variance of e_s - e_l under the null e_s = e_l = ebar (a score-type variance: it stays
    positive when every error goes one way, where a Wald variance collapses), times
    (2 g (1 - g))^2, with Student's t on items - 1 df.  The interval (``se_excess``) is the
    excess's own: the item-clustered (CR0) Wald variance of the per-verdict differences
    judge - gold, so it covers the population excess (gold's share, the error rate and the
    cue effect all vary from log to log).  Hand-written because no library offers a clustered
    two-proportion score test on per-item sums.
    """
    jc, gc = np.asarray(judge_cue, bool), np.asarray(gold_cue, bool)
    n = len(jc)
    out: dict[str, Any] = {"estimate": NAN, "null": NAN, "se": NAN, "se_excess": NAN, "k": 0, "n": n, "errors_to_cue": 0, "errors_away": 0,
           "gold_share": NAN, "reason": ""}
    if n == 0:
        out["reason"] = "no eligible verdicts"
        return out
    err = jc != gc
    codes, k = _cluster_codes(items)
    n_l = int(gc.sum())
    n_s = n - n_l
    c_s, c_l = int(np.count_nonzero(err & ~gc)), int(np.count_nonzero(err & gc))
    g = n_l / n
    out.update(estimate=(c_s - c_l) / n, gold_share=g, k=k, errors_to_cue=c_s, errors_away=c_l)
    if n_s == 0 or n_l == 0:
        out["reason"] = (f"gold is on the {'cue' if n_s == 0 else 'other'} side in every eligible pair: errors "
                         "cannot be told from a cue preference")
        return out
    ebar = (c_s + c_l) / n
    out["null"] = ebar * (1 - 2 * g)
    if k < 2:
        out["reason"] = "one item: no clustered standard error"
        return out
    w = np.where(gc, -(err - ebar) / n_l, (err - ebar) / n_s)  # linearised e_s - e_l, per verdict
    u = np.bincount(codes, weights=w, minlength=k)
    out["se"] = 2 * g * (1 - g) * math.sqrt(float(np.dot(u, u)))
    d = jc.astype(float) - gc
    u = np.bincount(codes, weights=d - out["estimate"], minlength=k)
    out["se_excess"] = math.sqrt(float(np.dot(u, u))) / n
    return out
