"""Oracle collection: one judge answers every ordered pair of every item pool once.

Paper 002 (Technical Appendix): "for each judge we query all N(N-1) ordered pairs once at
temperature 0 and cache the verdict matrix"; the prompt is the A/B prompt (template
``ab_letter``: "Which answer is more accurate and complete? Respond with ONLY the single
letter A or B."), and open-weight judges answer with the arg max of the A/B next-token
logits.  :func:`study_judge_entry` applies both to a configured judge: its sampling
parameters are overridden (``topk.sampling``, default temperature 0) and local backends
(``transformers``, ``vllm``) are switched to ``verdict_mode: logits`` when
``topk.logit_verdicts`` is on.  Every call goes through :func:`judgelab.judges.runner.run_requests`
(cached; failures recorded; unparsed answers kept and counted).

The oracle table is a verdict table (columns of :mod:`judgelab.judges.pairwise`, so the call
summary counts it) with five more columns: ``oracle`` (pool), ``first_item`` and
``second_item`` (item indices in the shown order), ``y`` (1 = first-shown preferred,
0 = second, empty = no usable verdict) and ``y_soft`` -- for a logit verdict the judge's
probability of preferring the first-shown item, ``sigma(logp_A - logp_B)``, which keeps the
margin the arg max throws away (equal to ``y`` for a generated verdict; the paper's replay
uses ``y``, the live path :mod:`judgelab.topk.live` the soft label).  ``pair_id`` is ``o<pool>:<i>-<j>`` with ``i < j``;
``order`` is ``AB`` when item ``i`` was shown first.  ``expected_verdict`` is the better
item by true quality in the stored order (``tie`` for equal quality).

How the simulated panel meets Eq. (1).  A simulated judge answering the letter format has
no tie margin, so it prefers the first-shown item with probability
``sigma(competence * (q_a - q_b) + c_verb * log2((w_a + 1)/(w_b + 1)) + c_pos)`` at
temperature 0, where ``q = theta * quality_scale`` is what the request's ``truth`` carries
and ``w`` are word counts.  That *is* Eq. (1) with the covariate ``log2_length`` and
``c = c_verb``, ``kappa = c_pos``; with the binary ``verbosity`` covariate the planted
coefficient is ``c_verb`` times the pool's mean log2 length gap between verbose and terse
items (:func:`planted_bias`).  ``c_verb`` and ``c_pos`` are the panel's b-scores converted on
their reference contrasts (:func:`judgelab.judges.simulated.coefficient_for_bias`); the
elaboration clauses make an item about 2.8x longer, the verbosity reference contrast, so
``c`` is close to the coefficient the configured b-score gives on that contrast.

The study's judge-calling steps (:func:`query_judge`, :func:`llmbar_query`) live here too, apart
from the fits of :mod:`judgelab.topk.pipeline`, so that a query job does not load scipy's
optimisers and statistics.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import expit

from judgelab.cache import CallCache, CallStore
from judgelab.config import JudgeSpec
from judgelab.datasets.pairs import Pair, pair_from_row
from judgelab.io import table_rows
from judgelab.judges import make_judge
from judgelab.judges.base import Judge
from judgelab.judges.pairwise import VERDICT_COLUMNS, judge_pairs
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request, to_original_frame
from judgelab.records import JudgeRequest, JudgeResponse
from judgelab.registry import backend_traits
from judgelab.topk.items import covariate_matrix, pools

if TYPE_CHECKING:
    from judgelab.topk.experiment import PoolOracle

ORACLE_COLUMNS = [*VERDICT_COLUMNS, "oracle", "first_item", "second_item", "y", "y_soft"]


def study_judge_entry(entry: dict[str, Any], sampling: dict[str, Any] | None = None,
                      logit_verdicts: bool = True) -> dict[str, Any]:
    """The judge as this study queries it: sampling overrides and logit verdicts applied.

    Replayed judges are returned unchanged (their answers are recordings).
    """
    e = copy.deepcopy(entry)
    traits = backend_traits(e)
    if traits.recorded:
        return e
    if sampling:
        e["sampling"] = {**(e.get("sampling") or {}), **sampling}
    if logit_verdicts and traits.logit_verdicts:
        e["options"] = {**(e.get("options") or {}), "verdict_mode": "logits"}
    return e


def oracle_requests(items: pd.DataFrame, template: str, quality_scale: float) -> list[JudgeRequest]:
    """Every ordered pair (a, b), a != b, of every pool, ``a`` shown first."""
    reqs = []
    for pool in pools(items):
        texts, theta = pool["text"].tolist(), pool["theta"].to_numpy()
        question, o = str(pool["question"].iloc[0]), int(pool["oracle"].iloc[0])
        n = len(pool)
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                gold = "A" if theta[a] > theta[b] else ("B" if theta[a] < theta[b] else "tie")
                reqs.append(pairwise_request(
                    template, question=question, first=texts[a], second=texts[b], gold=gold,
                    truth={"quality_a": float(theta[a]) * quality_scale, "quality_b": float(theta[b]) * quality_scale},
                    meta={"oracle": o, "first_item": a, "second_item": b},
                ))
    return reqs


def collect_oracle(judge: Judge, items: pd.DataFrame, cache: CallStore, *, template: str = "ab_letter",
                   quality_scale: float = 0.2, label: str | None = "topk oracle",
                   max_error_rate: float | None = 0.0) -> pd.DataFrame:
    """Ask ``judge`` every ordered pair of every pool; return the oracle table."""
    reqs = oracle_requests(items, template, quality_scale)
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    theta = {(int(o), int(i)): float(t) for o, i, t in items[["oracle", "item", "theta"]].itertuples(index=False)}
    rows = []
    for req, resp in zip(reqs, responses, strict=True):
        o, a, b = req.meta["oracle"], req.meta["first_item"], req.meta["second_item"]
        lo, hi = min(a, b), max(a, b)
        order = "AB" if a == lo else "BA"
        shown = resp.value if resp.status.has_value and resp.value in ("A", "B") else None
        verdict = to_original_frame(shown, order)
        tl, th = theta[(o, lo)], theta[(o, hi)]
        expected = "A" if tl > th else ("B" if tl < th else "tie")
        rows.append({
            "pair_id": f"o{o}:{lo}-{hi}", "order": order, "judge": judge.name, "backend": judge.spec.backend,
            "model": judge.spec.model, "family": judge.spec.family, "template": template,
            "verdict_shown": shown or "", "verdict": verdict or "", "expected_verdict": expected,
            "correct": verdict == expected, "status": resp.status.value, "parse_method": resp.parse_method,
            "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out,
            "cost_usd": resp.cost_usd, "latency_s": resp.latency_s, "simulated": judge.simulated,
            "judge_seed": int(judge.spec.sampling.get("seed", 0)), "key": resp.key, "bias_type": "none",
            "category": str(o), "oracle": o, "first_item": a, "second_item": b,
            "y": {"A": 1.0, "B": 0.0}.get(shown or "", np.nan),
            "y_soft": label_from_response(resp, soft=True),
        })
    return pd.DataFrame(rows, columns=ORACLE_COLUMNS)


def pool_oracles(oracle_table: pd.DataFrame, items: pd.DataFrame, covariates: Sequence[str],
                 family: str = "unknown") -> list[PoolOracle]:
    """Verdict matrices per pool, with the pools' covariates and true quality.

    The cost per call is the mean recorded cost (for the cost-quality frontier).
    """
    from judgelab.topk.experiment import PoolOracle  # the fits' module (scipy): not for a query job

    out = []
    by_pool = dict(tuple(oracle_table.groupby("oracle", sort=True)))
    for pool in pools(items):
        o = int(pool["oracle"].iloc[0])
        if o not in by_pool:
            continue
        g = by_pool[o]
        n = len(pool)
        Y = np.full((n, n), np.nan)
        Y[g["first_item"].to_numpy(int), g["second_item"].to_numpy(int)] = g["y"].to_numpy(float)
        out.append(PoolOracle(
            oracle_id=o, theta=pool["theta"].to_numpy(float), X=covariate_matrix(pool, covariates, family),
            covariate_names=list(covariates), Y=Y, cost_per_call=float(g["cost_usd"].mean()),
        ))
    return out


def planted_bias(judge: Judge, items: pd.DataFrame, covariates: Sequence[str]) -> dict[str, float]:
    """The Eq. (1) coefficients a simulated judge plants on these pools (see module docstring).

    Returns ``{"c[<cov>]": ..., "kappa": ...}`` for covariates with a known mapping
    (``verbosity``, ``log2_length``, ``markdown``); an empty dict for other judges.
    """
    coef = getattr(judge, "coef", None)
    if not judge.simulated or coef is None:
        return {}
    out: dict[str, float] = {"kappa": float(coef["position"])}
    lg = np.log2(items["words"].to_numpy(float) + 1.0)
    verbose = items["verbose"].to_numpy(int) == 1
    if "verbosity" in covariates:
        gap = float(lg[verbose].mean() - lg[~verbose].mean()) if verbose.any() and (~verbose).any() else math.nan
        out["c[verbosity]"] = float(coef["verbosity"]) * gap
    if "log2_length" in covariates:
        out["c[log2_length]"] = float(coef["verbosity"])
    if "markdown" in covariates:
        out["c[markdown]"] = float(coef["markdown"])
    return out


def label_from_response(resp: JudgeResponse, soft: bool) -> float:
    """y for the shown order: 1 / 0 for A / B; ``sigma(logp_A - logp_B)`` for a logit verdict
    when ``soft``; NaN without a usable A/B verdict (tie, unparsed, refusal, error)."""
    if not resp.status.has_value or resp.value not in ("A", "B"):
        return math.nan
    lp = resp.logprobs or {}
    if soft and "A" in lp and "B" in lp and math.isfinite(lp["A"]) and math.isfinite(lp["B"]):
        return float(expit(lp["A"] - lp["B"]))
    return 1.0 if resp.value == "A" else 0.0


# -- the judge-calling steps (rules topk_query, topk_llmbar_replay) --------------------------
#
# Here rather than in judgelab.topk.pipeline: a query job then loads the oracle and the judge, not
# the study's fits and statistics (scipy.stats, scipy.optimize; about 0.8 CPU-s a job).


@contextmanager
def opened_cache(cache: str | os.PathLike[str] | CallStore) -> Iterator[CallStore]:
    """The call cache a rule function works through: the file ``cache`` names (a run), or
    ``cache`` itself when it is open already (``judgelab plan`` passes its own, in memory)."""
    if isinstance(cache, (str, os.PathLike)):
        with CallCache(cache) as opened:
            yield opened
    else:
        yield cache


def judge_pools(items: pd.DataFrame, cfg: Mapping[str, Any], judge: str) -> pd.DataFrame:
    """The pools ``judge`` answers: the first ``topk.oracles_per_judge[judge]`` of them (paper 002
    collects 1-10 oracles per judge, fewer for the costly ones: Table 1's n), else every pool.  The
    evaluation then sees only those (:func:`judgelab.topk.oracle.pool_oracles` skips pools without
    verdicts)."""
    n = (cfg.get("oracles_per_judge") or {}).get(judge)
    return items if n is None else items[items["oracle"] < int(n)]


def query_judge(entry: dict[str, Any], cfg: dict[str, Any], items: pd.DataFrame, probes: list[Pair],
                cache_path: str | CallStore, max_error_rate: float | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Oracle collection and the bias probes for one judge, through the call cache."""
    e = study_judge_entry(entry, cfg.get("sampling") or {}, bool(cfg.get("logit_verdicts", True)))
    items = judge_pools(items, cfg, str(entry["name"]))
    judge = make_judge(JudgeSpec.from_dict(e, where=f"judge {entry['name']}"))
    try:
        with opened_cache(cache_path) as cache:
            oracle = collect_oracle(judge, items, cache, template=cfg["template"],
                                    quality_scale=float(cfg["quality_scale"]), label="topk oracle",
                                    max_error_rate=max_error_rate)
            probe = judge_pairs(judge, probes, cache, template=cfg["template"], label="topk probes",
                                max_error_rate=max_error_rate)
    finally:
        judge.close()
    return oracle, probe


def llmbar_query(entry: dict[str, Any], cfg: dict[str, Any], pairs: pd.DataFrame, cache_path: str | CallStore,
                 max_error_rate: float | None) -> pd.DataFrame:
    """One judge on every LLMBar pair, both orders; a replayed judge only on the subset it
    was recorded on, with its recorded prompt template."""
    e = study_judge_entry(entry, cfg.get("sampling") or {}, bool(cfg.get("logit_verdicts", True)))
    opts = entry.get("options") or {}
    if backend_traits(entry).recorded:
        pairs = pairs[pairs["category"] == opts.get("dataset")]
    named = (cfg.get("llmbar") or {}).get("judges")
    if named is not None and entry["name"] not in named:
        pairs = pairs.iloc[:0]  # not an LLMBar judge (topk.llmbar.judges): its table is empty, nothing asked
    template = opts.get("prompt_template", cfg["template"])
    judge = make_judge(JudgeSpec.from_dict(e, where=f"judge {entry['name']}"))
    plist = [pair_from_row(r, where=f"LLMBar pairs row {i}") for i, r in enumerate(table_rows(pairs))]
    try:
        with opened_cache(cache_path) as cache:
            return judge_pairs(judge, plist, cache, template=template, label="topk llmbar",
                               max_error_rate=max_error_rate)
    finally:
        judge.close()
