"""The temperature-1 flip rate: how often a judge's verdict flips when the same pair is asked again.

Paper 002 queries every judge at temperature 0 so that verdicts are deterministic, and measures
run-to-run noise separately: "at temperature 1, GPT-4o-mini flips 8% of verdicts across repeats"
(Limitations (ii)); "the temperature-1 flip rate (8% for GPT-4o-mini) is measured separately and
is not part of the main protocol" (appendix, "Reproducibility of API judges").  The paper does not
define the rate further.  Here it is the probability that two asks of the same ordered pair at
the temperature give different verdicts: each sampled pair is asked ``repeats`` times (each ask a
distinct request, ``params.sample = r``, so a distinct call-cache key and, for local backends, a
distinct sampling seed), and every two of its usable answers are one comparison::

    flip rate = sum_i d_i / sum_i c_i,   c_i = m_i (m_i - 1) / 2,   d_i = c_i - sum_v n_iv (n_iv - 1) / 2

with ``m_i`` usable answers of pair ``i``, ``n_iv`` of them verdict ``v``: the share of repeat
pairs that disagree, an unbiased estimate (a U-statistic per pair) of P(second ask != first ask)
for any number of repeats >= 2.  Unusable answers (unparsed, refused, failed) leave their pair's
comparisons and are counted.

Interval.  The comparisons of one pair share its answers, so the pair is the cluster: the
variance is the cluster-robust (CR0) variance of a ratio of cluster totals
(:func:`judgelab.stats.clustered.ratio_cluster_variance`), turned into an effective number of
comparisons by the design effect, and the Wilson interval on that effective n with Student's t on
pairs - 1 degrees of freedom (:func:`judgelab.stats.intervals.wilson_interval`): the convention of
every clustered share in judgelab.  When no pair varies (a deterministic judge: rate 0) or every
comparison disagrees, there is no variance to estimate; the interval is then Wilson's on one
unit per pair (repeats of a pair that never varies carry no independent information) and the
``status`` column says so.  No p-value is reported: the rate is described, not tested.

For a simulated judge the exact expected rate of the asked pairs is known
(:meth:`judgelab.judges.simulated.SimulatedJudge.sample_probabilities`, fixed item noise, fresh
per-sample noise) and reported as ``planted_flip_rate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.judges.base import Judge
from judgelab.judges.pairwise import VERDICT_COLUMNS
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request, to_original_frame
from judgelab.records import JudgeRequest
from judgelab.stats.clustered import design_effect, ratio_cluster_variance
from judgelab.stats.intervals import DEFAULT_ALPHA, wilson_interval
from judgelab.topk.items import pools

FLIP_COLUMNS = [*VERDICT_COLUMNS, "oracle", "first_item", "second_item", "repeat", "temperature"]

SUMMARY_COLUMNS = [
    "judge", "simulated", "temperature", "repeats", "n_pairs", "n_pairs_usable", "n_answers", "n_unusable",
    "n_comparisons", "n_flipped", "flip_rate", "ci_low", "ci_high", "alpha", "n_effective",
    "planted_flip_rate", "status",
]


def flip_pairs(items: pd.DataFrame, n_pairs: int | None, seed: int) -> list[tuple[int, int, int]]:
    """``(pool, first, second)``: ``n_pairs`` ordered pairs drawn without replacement (seeded) from
    every ordered pair of the pools in ``items``; every ordered pair when ``n_pairs`` is None or
    at least their number."""
    every = [(int(p["oracle"].iloc[0]), a, b) for p in pools(items)
             for a in range(len(p)) for b in range(len(p)) if a != b]
    if n_pairs is None or n_pairs >= len(every):
        return every
    pick = np.sort(np.random.default_rng(seed).choice(len(every), size=int(n_pairs), replace=False))
    return [every[i] for i in pick]


def flip_requests(items: pd.DataFrame, pairs: Sequence[tuple[int, int, int]], *, template: str,
                  quality_scale: float, repeats: int, temperature: float,
                  seed: int | None = None) -> list[JudgeRequest]:
    """Each pair asked ``repeats`` times at ``temperature``; ask ``r`` carries ``params.sample = r``
    (a distinct cache key; API backends do not send the key, local ones hash it into their seed).

    ``seed``: the judge's own sampling seed, when it has one; ask ``r`` is then sent with seed
    ``seed + r``, since an API asked twice with one seed tries to answer the same (OpenAI's
    ``seed``): the repeats would measure the seed, not the decoding noise."""
    by_pool = {int(p["oracle"].iloc[0]): p for p in pools(items)}
    reqs = []
    for o, a, b in pairs:
        pool = by_pool[o]
        texts, theta = pool["text"].tolist(), pool["theta"].to_numpy(float)
        gold = "A" if theta[a] > theta[b] else ("B" if theta[a] < theta[b] else "tie")
        for r in range(int(repeats)):
            reqs.append(pairwise_request(
                template, question=str(pool["question"].iloc[0]), first=texts[a], second=texts[b], gold=gold,
                truth={"quality_a": float(theta[a]) * quality_scale, "quality_b": float(theta[b]) * quality_scale},
                meta={"oracle": o, "first_item": a, "second_item": b, "repeat": r},
                params={"temperature": float(temperature), "sample": r,
                        **({} if seed is None else {"seed": int(seed) + r})},
            ))
    return reqs


def collect_flips(judge: Judge, reqs: Sequence[JudgeRequest], cache: CallStore, *, template: str,
                  max_error_rate: float | None = 0.0, label: str | None = "topk flip rate") -> pd.DataFrame:
    """Ask ``judge`` the requests of :func:`flip_requests` through the call cache; the verdict table
    (:data:`FLIP_COLUMNS`; ``pair_id`` is ``o<pool>:<first>><second>``, one id per ordered pair)."""
    responses = run_requests(judge, list(reqs), cache, label=label, max_error_rate=max_error_rate)
    rows = []
    for req, resp in zip(reqs, responses, strict=True):
        o, a, b = req.meta["oracle"], req.meta["first_item"], req.meta["second_item"]
        order = "AB" if a < b else "BA"
        shown = resp.value if resp.status.has_value and resp.value in ("A", "B", "tie") else None
        verdict = to_original_frame(shown, order) if shown in ("A", "B") else shown
        gold = req.truth.get("gold")
        rows.append({
            "pair_id": f"o{o}:{a}>{b}", "order": order, "judge": judge.name, "backend": judge.spec.backend,
            "model": judge.spec.model, "family": judge.spec.family, "template": template,
            "verdict_shown": shown or "", "verdict": verdict or "",
            "expected_verdict": to_original_frame(gold, order) if gold in ("A", "B") else "tie",
            "correct": bool(shown is not None and shown == gold), "status": resp.status.value,
            "parse_method": resp.parse_method, "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in,
            "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd, "latency_s": resp.latency_s,
            "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0)), "key": resp.key,
            "bias_type": "none", "category": str(o), "oracle": o, "first_item": a, "second_item": b,
            "repeat": req.meta["repeat"], "temperature": float(req.params["temperature"]),
        })
    return pd.DataFrame(rows, columns=FLIP_COLUMNS)


def pair_counts(pair_ids: Sequence[Any] | pd.Series, verdicts: Sequence[str] | pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair (in first-seen order): usable answers ``m``, comparisons ``c`` and disagreeing
    comparisons ``d`` (module docstring); an empty verdict is unusable."""
    df = pd.DataFrame({"pair": list(pair_ids), "v": list(verdicts)})
    codes, uniq = pd.factorize(df["pair"])
    usable = df["v"].astype(str).str.len().to_numpy() > 0
    k = len(uniq)
    m = np.bincount(codes[usable], minlength=k).astype(float)
    counts = df[usable].groupby([codes[usable], "v"]).size()
    same = np.zeros(k)
    np.add.at(same, counts.index.get_level_values(0).to_numpy(int), (counts * (counts - 1) / 2).to_numpy(float))
    c = m * (m - 1) / 2
    return m, c, c - same


def flip_rate(pair_ids: Sequence[Any] | pd.Series, verdicts: Sequence[str] | pd.Series, *, alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """The flip rate of repeated verdicts with its clustered Wilson interval (module docstring)."""
    m, c, d = pair_counts(pair_ids, verdicts)
    keep = m >= 2
    c, d = c[keep], d[keep]
    k, n, flipped = int(keep.sum()), float(c.sum()), float(d.sum())
    out: dict[str, Any] = {"n_pairs_usable": k, "n_comparisons": int(n), "n_flipped": int(flipped), "alpha": alpha}
    if k == 0:
        return {**out, "flip_rate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_effective": np.nan,
                "status": "no pair has two usable answers: no flip rate"}
    est = flipped / n
    if flipped in (0.0, n):
        n_eff = float(k)
        status = ("no variance: every pair got the same verdict at every ask; interval on one unit per pair"
                  if flipped == 0 else "no variance: every two asks disagree; interval on one unit per pair")
    else:
        n_eff = n / design_effect(est, ratio_cluster_variance(d, c), int(n))
        status = "ok"
    lo, hi = wilson_interval(est * n_eff, n_eff, alpha=alpha, clusters=k)
    return {**out, "flip_rate": est, "ci_low": lo, "ci_high": hi, "n_effective": n_eff, "status": status}


def planted_flip_rate(judge: Judge, requests: Sequence[JudgeRequest], table: pd.DataFrame) -> float:
    """The expected flip rate of a simulated judge on the asked pairs, each pair weighted by its
    usable comparisons as the estimate weights it; NaN for other judges."""
    probs = getattr(judge, "sample_probabilities", None)
    if not judge.simulated or probs is None or not len(table):
        return float("nan")
    _, c, _ = pair_counts(table["pair_id"], table["verdict"])
    first: dict[str, JudgeRequest] = {}
    for req in requests:
        first.setdefault(f"o{req.meta['oracle']}:{req.meta['first_item']}>{req.meta['second_item']}", req)
    ids = pd.unique(table["pair_id"])
    q = np.array([1.0 - sum(p * p for p in probs(first[i])) for i in ids])
    return float(np.dot(q, c) / c.sum()) if c.sum() else float("nan")


def flip_summary(table: pd.DataFrame, *, judge: str, simulated: bool, temperature: float, repeats: int,
                 n_pairs: int, alpha: float = DEFAULT_ALPHA, planted: float = float("nan")) -> pd.DataFrame:
    """One row: the judge's flip rate, interval, counts, planted truth and status (:data:`SUMMARY_COLUMNS`)."""
    est = flip_rate(table["pair_id"], table["verdict"], alpha=alpha)
    row = {"judge": judge, "simulated": simulated, "temperature": temperature, "repeats": repeats,
           "n_pairs": n_pairs, "n_answers": len(table), "n_unusable": int((table["verdict"] == "").sum()),
           "planted_flip_rate": planted, **est}
    return pd.DataFrame([row], columns=SUMMARY_COLUMNS)
