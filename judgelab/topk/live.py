"""Rank a user's pool live with any judge (paper 002, Alg. 1 against a real judge, no theta).

The offline study (:mod:`judgelab.topk.experiment`) replays strategies against a full
oracle to reproduce the paper's figures; that needs every one of the ``N(N-1)`` verdicts and
the true quality.  This module is the production path: the judge is asked only what the
acquisition rule picks, in *batches* between Laplace refits, through the call cache
(:func:`judgelab.judges.runner.run_requests`), until a stopping rule on the posterior top-k
membership fires or a call / USD budget is spent.  Nothing here reads a true quality; an
items file with a planted ``true_quality`` (a simulated experiment) only adds recall to the
report.

The loop (:func:`rank_live`), per round:

1. fit the bias-aware model (Eqs. 1-2, warm-started) on the usable verdicts so far and draw
   ``p_i = Pr(i in S_k)`` from the Laplace posterior (S draws);
2. **stop** when the posterior is sure enough of the returned set ``S_hat`` (argtop-k of
   the posterior mode) and at least ``min_calls`` queries were made (``stop_reason =
   "posterior"``).  ``stop_rule = "expected_recall"`` (default) asks for
   ``E[|S_hat & S_k(theta)|] / k = mean_{i in S_hat} p_i >= stop_threshold`` -- the posterior
   expected top-k recall of the answer; ``"exact_set"`` for ``Pr(S_k(theta) = S_hat) >=
   stop_threshold``, stricter.  Both start near ``k/N`` and 0 under the prior, so neither
   can fire before the data speak (a per-item rule such as ``min_i max(p_i, 1 - p_i)``
   would: it is ``1 - k/N`` under the prior).  Otherwise stop when the budget is spent
   (``"budget_calls"`` / ``"budget_usd"``) or no pair is left to ask (``"exhausted"``);
3. the acquisition rule (default: Eq. 3, top-k-aware) picks a batch of distinct pairs
   (``batch``, the paper's refit period 8); each pair is asked on a random (prompt,
   presentation order) it was not yet asked in -- a prompt both items answered, either
   order -- so a pair can be asked again, and the loop never asks more than the full
   oracle (``N(N-1)`` ordered pairs per prompt);
4. verdicts become labels: ``y = 1`` / ``0`` when the first / second shown item is
   preferred, or -- for logit verdicts (``logprobs`` over A/B, transformers / vLLM / APIs with
   ``logprobs_top``) and ``soft_labels`` -- the judge's probability
   ``sigma(logp_A - logp_B)``; a tie, unparsed answer, refusal or error is NaN (spent,
   nothing revealed, counted).

Determinism: all choices come from one seeded generator and the verdicts from the cache, so
a rerun replays the same queries and makes no new call; a run killed mid-way resumes.

Cost.  ``budget_usd`` counts the recorded cost of every answer used (a cached answer costs
what it cost when asked), so the trajectory does not depend on what happened to be cached.
The batch is shrunk so the expected spend (mean cost per call so far) stays in the budget.

After the loop: the bias-aware and the naive fit on everything revealed; the Laplace
intervals of the bias terms; Pearson's r between each covariate and the *naive* quality
estimate (the judge's own reading of quality): a large |r| means the judge's preferences
follow the covariate, which the correction removes as bias -- right only if the covariate
is not real quality in this pool (Assumption 1; the paper's SummEval/Nectar counter-cases).
That is warned about (:class:`CovariateQualityWarning`); trusted anchors (``anchor`` in the
items file) let the gate (:mod:`judgelab.topk.gate`) decide instead.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request
from judgelab.ranking.acquisition import PairSpace, Posterior, make_rule
from judgelab.ranking.bias_aware import Comparisons, Fit, FitOptions, fit_bias_aware, naive_options, top_k_indices
from judgelab.stats.unscored import blank, no_value_reason
from judgelab.topk.gate import anchor_agreement
from judgelab.topk.oracle import label_from_response
from judgelab.topk.userpool import UserPool

log = logging.getLogger(__name__)


class CovariateQualityWarning(UserWarning):
    """A covariate tracks the judge's estimate of quality: the correction's assumption is at stake."""


@dataclass(frozen=True)
class LiveSettings:
    """Knobs of the live loop (config ``topk.rank``; model priors from ``topk.model``)."""

    k: int = 5
    budget_calls: int | None = 300
    budget_usd: float | None = None
    batch: int = 8
    stop_threshold: float = 0.95
    stop_rule: str = "expected_recall"
    min_calls: int = 0
    rule: str = "topk"
    n_samples: int = 1500
    soft_labels: bool = True
    corr_warn: float = 0.3
    seed: int = 0
    options: FitOptions = field(default_factory=FitOptions)

    def __post_init__(self) -> None:
        if self.budget_calls is None and self.budget_usd is None:
            raise ValueError("topk.rank.budget: give calls, usd or both")
        if not 0.5 < self.stop_threshold <= 1.0:
            raise ValueError(f"topk.rank.stop.threshold must lie in (0.5, 1], got {self.stop_threshold}")
        if self.stop_rule not in STOP_RULES:
            raise ValueError(f"topk.rank.stop.rule must be one of {sorted(STOP_RULES)}, got {self.stop_rule!r}")
        if self.batch < 1 or self.k < 1:
            raise ValueError("topk.rank: batch and k must be >= 1")


@dataclass
class LiveResult:
    """What :func:`rank_live` found (tables documented on :func:`result_tables`)."""

    pool: UserPool
    k: int
    aware: Fit
    naive: Fit
    membership: np.ndarray
    queries: pd.DataFrame
    trace: pd.DataFrame
    stop_reason: str
    calls: int
    spent_usd: float
    wall_s: float
    expected_recall: float
    p_set: float
    correlations: dict[str, float]
    warnings: list[str]
    gate: dict[str, Any]
    stop_rule: str = "expected_recall"
    stop_threshold: float = 0.95

    @property
    def stopped_by_rule(self) -> bool:
        return self.stop_reason == "posterior"


def expected_recall(p: np.ndarray, chosen: np.ndarray) -> float:
    """Posterior expected top-k recall of the returned set: the mean membership of its items."""
    return float(np.mean(p[chosen]))


#: stopping statistics: (membership p, returned set, Pr(set exact)) -> value compared to the threshold
STOP_RULES = {
    "expected_recall": lambda p, chosen, p_set: expected_recall(p, chosen),
    "exact_set": lambda p, chosen, p_set: p_set,
}


def _membership(fit: Fit, k: int, n_samples: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Top-k membership per item and the posterior probability that the returned set is exact."""
    n = fit.n_items
    from scipy.linalg import cholesky

    L = cholesky(fit.sigma + 1e-10 * np.eye(n), lower=True)
    draws = fit.theta + rng.standard_normal((n_samples, n)) @ L.T
    top = np.argpartition(-draws, k - 1, axis=1)[:, :k]
    p = np.bincount(top.ravel(), minlength=n) / n_samples
    chosen = np.zeros(n, dtype=bool)
    chosen[fit.top_k(k)] = True
    p_set = float(np.mean(chosen[top].all(axis=1)))
    return p, p_set


def rank_live(pool: UserPool, judge: Judge, cache: CallStore, settings: LiveSettings, *,
              template: str = "ab_letter", quality_scale: float = 1.0, label: str | None = "topk rank",
              max_error_rate: float | None = 0.0) -> LiveResult:
    """Alg. 1 against a live judge (module docstring).  ``quality_scale`` multiplies a planted
    ``true_quality`` before the simulated panel reads it (real judges never see it)."""
    started = time.perf_counter()
    n, k = pool.n_items, settings.k
    if not 0 < k < n:
        raise ValueError(f"topk.rank.k={k} must lie in [1, {n - 1}] for {n} items")
    rng = np.random.default_rng([int(settings.seed), 17])
    space = PairSpace(n)
    # what each unordered pair can still be asked: (prompt, orientation) for every shared
    # prompt in both presentation orders -- at most the full oracle's N(N-1) per prompt
    left = [[(q, o) for q in pool.shared_prompts(int(a), int(b)) for o in (0, 1)]
            for a, b in zip(space.i, space.j, strict=True)]
    space.open[:] = [bool(x) for x in left]
    rule = make_rule(settings.rule)
    rule.start(space, rng)
    truth = pool.truth
    X = pool.X
    first: list[int] = []
    second: list[int] = []
    y: list[float] = []
    qrows: list[dict[str, Any]] = []
    trace: list[dict[str, Any]] = []
    beta = None
    spent = 0.0
    calls = 0
    round_no = 0
    while True:
        comp = _comparisons(first, second, y)
        fit = fit_bias_aware(comp, n, X, options=settings.options, covariate_names=pool.covariate_names, x0=beta,
                             warn=False)
        beta = fit.beta
        p, p_set = _membership(fit, k, settings.n_samples, rng)
        exp_recall = expected_recall(p, fit.top_k(k))
        stat = STOP_RULES[settings.stop_rule](p, fit.top_k(k), p_set)
        trace.append({"round": round_no, "calls": calls, "usable": len(comp), "spent_usd": spent,
                      "expected_recall": exp_recall, "p_set": p_set})
        if calls >= settings.min_calls and stat >= settings.stop_threshold:
            reason = "posterior"
            break
        if settings.budget_calls is not None and calls >= settings.budget_calls:
            reason = "budget_calls"
            break
        if settings.budget_usd is not None and spent >= settings.budget_usd:
            reason = "budget_usd"
            break
        if not space.open.any():
            reason = "exhausted"
            break
        size = settings.batch
        if settings.budget_calls is not None:
            size = min(size, settings.budget_calls - calls)
        if settings.budget_usd is not None and calls and spent > 0:
            size = max(1, min(size, int((settings.budget_usd - spent) / (spent / calls))))
        rule.rescore(Posterior(fit, p, k), space)
        picks = []
        for _ in range(min(size, int(space.open.sum()))):
            m = rule.choose(space, rng)
            space.open[m] = False  # distinct pairs within a batch
            picks.append(m)
        reqs = []
        for m in picks:
            a, b = int(space.i[m]), int(space.j[m])
            # a random remaining (prompt, order): randomised presentation order (identifies kappa)
            prompt, flip = left[m].pop(int(rng.integers(len(left[m]))))
            if flip:
                a, b = b, a
            tr = {}
            if truth is not None:
                tr = {"quality_a": float(truth[a]) * quality_scale, "quality_b": float(truth[b]) * quality_scale}
            reqs.append(pairwise_request(template, question=prompt, first=pool.items[a].responses[prompt],
                                         second=pool.items[b].responses[prompt], truth=tr,
                                         meta={"first_item": a, "second_item": b, "prompt": prompt}))
        for m in picks:
            space.open[m] = bool(left[m])
        resps = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate, progress=False)
        round_no += 1
        for req, resp in zip(reqs, resps, strict=True):
            a, b = req.meta["first_item"], req.meta["second_item"]
            lab = label_from_response(resp, settings.soft_labels)
            first.append(a)
            second.append(b)
            y.append(lab)
            calls += 1
            spent += float(resp.cost_usd or 0.0)
            qrows.append({"step": calls, "round": round_no, "first_id": pool.items[a].id,
                          "second_id": pool.items[b].id, "first_item": a, "second_item": b,
                          "prompt": req.meta["prompt"], "verdict_shown": resp.value if resp.value in ("A", "B", "tie")
                          else "", "y": lab, "soft": bool(0.0 < lab < 1.0) if not math.isnan(lab) else False,
                          "status": resp.status.value, "cost_usd": float(resp.cost_usd or 0.0),
                          "cached": bool(resp.cached), "key": resp.key})
    comp = _comparisons(first, second, y)
    aware = fit_bias_aware(comp, n, X, options=settings.options, covariate_names=pool.covariate_names, x0=beta,
                           warn=False)
    naive = fit_bias_aware(comp, n, options=naive_options(settings.options), warn=False)
    msgs = [f"{name} is {st} on the revealed comparisons" for name, st in aware.identifiability.items()
            if st != "identified"]
    corrs, corr_msgs = covariate_correlations(X, pool.covariate_names, naive.theta, settings.corr_warn)
    for msg in corr_msgs:
        warnings.warn(msg, CovariateQualityWarning, stacklevel=2)
    msgs += corr_msgs
    gate = _gate(pool, naive, aware)
    if gate.get("n_anchors", 0) and not gate["enabled"]:
        msgs.append("trusted anchors agree better with the naive ranking: the correction is switched off "
                    f"(anchors: naive {gate['agree_naive']:.2f} vs bias-aware {gate['agree_aware']:.2f})")
    return LiveResult(pool=pool, k=k, aware=aware, naive=naive, membership=p, queries=pd.DataFrame(qrows),
                      trace=pd.DataFrame(trace), stop_reason=reason, calls=calls, spent_usd=spent,
                      wall_s=time.perf_counter() - started, expected_recall=exp_recall, p_set=p_set, correlations=corrs,
                      warnings=msgs, gate=gate, stop_rule=settings.stop_rule,
                      stop_threshold=settings.stop_threshold)


def covariate_correlations(X: np.ndarray, names: list[str], naive_theta: np.ndarray,
                           corr_warn: float) -> tuple[dict[str, float], list[str]]:
    """Pearson's r of each covariate with the naive quality estimate, and a warning text for
    every ``|r| >= corr_warn``: the judge's own reading of quality follows the covariate, so
    removing it as bias is right only if it is not real quality (Assumption 1).  A constant
    covariate or estimate has no r (NaN, never a warning)."""
    corrs: dict[str, float] = {}
    msgs: list[str] = []
    for m, name in enumerate(names):
        x = X[:, m]
        r = float(np.corrcoef(x, naive_theta)[0, 1]) if x.std() > 0 and naive_theta.std() > 0 else math.nan
        corrs[name] = r
        if math.isfinite(r) and abs(r) >= corr_warn:
            msgs.append(f"covariate {name!r} correlates with the judge's estimate of quality (naive scores, "
                        f"r = {r:+.2f}); the bias-aware ranking removes this as bias, which is right only if "
                        f"{name!r} is not real quality in this pool (Assumption 1 of paper 002). Give trusted "
                        "'anchor' scores for some items to let the gate check it.")
    return corrs, msgs


def _comparisons(first: list[int], second: list[int], y: list[float]) -> Comparisons:
    f, s, yy = np.array(first, dtype=np.int64), np.array(second, dtype=np.int64), np.array(y, dtype=float)
    ok = ~np.isnan(yy)
    return Comparisons(f[ok], s[ok], yy[ok])


def _gate(pool: UserPool, naive: Fit, aware: Fit) -> dict[str, Any]:
    """Trusted-anchor gate on the items' anchor scores: every pair of anchored items with
    different scores is a labelled pair (better, worse)."""
    a = pool.anchors
    if a is None:
        return {"n_anchors": 0, "enabled": True, "agree_naive": math.nan, "agree_aware": math.nan}
    idx = np.flatnonzero(~np.isnan(a))
    i, j = np.meshgrid(idx, idx, indexing="ij")
    keep = a[i] > a[j]
    pairs = np.column_stack([i[keep], j[keep]])
    an, aa = anchor_agreement(naive.theta, pairs), anchor_agreement(aware.theta, pairs)
    enabled = bool(len(pairs) == 0 or aa >= an)
    return {"n_anchors": len(pairs), "enabled": enabled, "agree_naive": an, "agree_aware": aa}


def result_tables(res: LiveResult, *, pool_name: str, judge: str, simulated: bool) -> dict[str, pd.DataFrame]:
    """The live run as tables.

    * ``ranking`` -- one row per item, best first: ``rank, id, score`` (the selected model's
      quality: bias-aware unless the anchor gate switched the correction off), ``in_top_k``,
      ``p_top_k`` (posterior membership), ``theta_aware, se_aware, theta_naive``, the
      covariates, ``anchor`` and, with a planted truth, ``true_quality, true_top_k``;
    * ``queries`` -- every query in order: ``step, round, first_id, second_id, prompt,
      verdict_shown, y, soft, status, cost_usd, cached, key``;
    * ``trace`` -- per refit: ``round, calls, usable, spent_usd, expected_recall, p_set``;
    * ``summary`` -- one row: pool, judge, ``simulated``, ``n_items, n_prompts, k, calls,
      n_unusable, n_soft, spent_usd, stop_reason, stopped_by_rule, stop_rule,
      expected_recall`` (posterior expected top-k recall of the answer), ``p_set`` (posterior
      probability that the returned set is exactly right), ``full_oracle_calls`` (``N(N-1)``
      ordered pairs per prompt) and ``call_ratio`` (calls / that), ``wall_s``, the bias
      terms with 95% Laplace intervals, ``corr_naive_<cov>``, the gate, ``recall`` and
      ``recall_naive`` (NaN without a planted truth), ``warnings`` and ``reason``: when no query
      got a usable verdict, every fitted number (expected recall, ``p_set``, bias terms,
      correlations, the gate's agreements, recalls) is NaN and ``reason`` says why
      (:mod:`judgelab.stats.unscored`; empty otherwise).
    """
    pool = res.pool
    n, k = pool.n_items, res.k
    use_aware = bool(res.gate["enabled"])
    score = res.aware.theta if use_aware else res.naive.theta
    order = np.argsort(-score, kind="stable")
    top = set(top_k_indices(score, k).tolist())
    se = np.sqrt(np.clip(np.diag(res.aware.sigma), 0, None))
    rk = pd.DataFrame({"id": pool.ids, "score": score, "in_top_k": [i in top for i in range(n)],
                       "p_top_k": res.membership, "theta_aware": res.aware.theta, "se_aware": se,
                       "theta_naive": res.naive.theta})
    for m, name in enumerate(pool.covariate_names):
        rk[name] = pool.X[:, m]
    if pool.anchors is not None:
        rk["anchor"] = pool.anchors
    truth = pool.truth
    recall = recall_naive = math.nan
    if truth is not None:
        from judgelab.topk.experiment import recall_at_k

        rk["true_quality"] = truth
        rk["true_top_k"] = np.isin(np.arange(n), top_k_indices(truth, k))
        recall = recall_at_k(score, truth, k)
        recall_naive = recall_at_k(res.naive.theta, truth, k)
    rk = rk.iloc[order].reset_index(drop=True)
    rk.insert(0, "rank", np.arange(1, n + 1))
    n_prompts_pairs = sum(len(pool.shared_prompts(i, j)) for i in range(n) for j in range(i + 1, n))
    full = 2 * n_prompts_pairs
    row: dict[str, Any] = {
        "pool": pool_name, "judge": judge, "simulated": simulated, "n_items": n, "n_prompts": len(pool.prompts),
        "k": k, "model": "bias-aware" if use_aware else "naive (gate off)", "calls": res.calls,
        "n_unusable": int(res.queries["y"].isna().sum()) if len(res.queries) else 0,
        "n_soft": int(res.queries["soft"].sum()) if len(res.queries) else 0,
        "spent_usd": res.spent_usd, "stop_reason": res.stop_reason, "stopped_by_rule": res.stopped_by_rule,
        "stop_rule": f"{res.stop_rule} >= {res.stop_threshold:g}", "expected_recall": res.expected_recall,
        "p_set": res.p_set, "full_oracle_calls": full,
        "call_ratio": res.calls / full if full else math.nan, "wall_s": res.wall_s,
    }
    for name in res.aware.names[n:]:
        lo, hi = res.aware.interval(name)
        col = "kappa" if name == "kappa" else "c_" + name[2:-1]
        row.update({col: res.aware.estimate(name), f"{col}_ci_low": lo, f"{col}_ci_high": hi,
                    f"{col}_status": res.aware.identifiability.get(name, "")})
    for name, r in res.correlations.items():
        row[f"corr_naive_{name}"] = r
    row.update({"gate_n_anchor_pairs": res.gate["n_anchors"], "gate_enabled": res.gate["enabled"],
                "gate_agree_naive": res.gate["agree_naive"], "gate_agree_aware": res.gate["agree_aware"],
                "recall": recall, "recall_naive": recall_naive, "warnings": " | ".join(res.warnings)})
    # no usable verdict: the fit, its posterior, the gate and the recalls are the prior's alone
    q = res.queries
    reason = no_value_reason(q["status"] if "status" in q else [], usable=q["y"].notna().to_numpy() if len(q) else None)
    fitted = [c for c in row if c.startswith(("c_", "kappa", "corr_naive_", "gate_agree_"))
              and not c.endswith("_status")]
    row = blank(row, ["expected_recall", "p_set", *fitted, "recall", "recall_naive"], reason)
    return {"ranking": rk, "queries": res.queries, "trace": res.trace, "summary": pd.DataFrame([row])}
