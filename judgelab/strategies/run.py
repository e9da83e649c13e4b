"""Asking one judge every call its strategies need, through the cache (one table per judge).

The calls of all configured strategies are planned together (:func:`plan_calls`): a call
used by several strategies (S1's first order is B0's call; S3 reuses B0 calls) is built once,
and its row lists every strategy that uses it.  Reference-guided strategies first need a
reference answer per question: the dataset's (``reference`` column) where it has one, else one
the judge writes (one text call per question, shared by all pairs of that question).  If that
generation yields no text, the reference calls of that question are not made and the strategy
has no verdict there (counted as a missing call when aggregating), never a guess.

Calls table (one row per distinct call; the verdict-table columns of
:mod:`judgelab.judges.pairwise` plus):

============== ===============================================================
dataset        the pair set
call_id        role | order | temperature (:class:`judgelab.strategies.CallSpec`)
role           prompt role (baseline, rubric, cot, reference, cot_rubric, full;
               ``reference_generation`` for the text calls writing references)
temperature    the per-call temperature override (NaN: the judge's own)
strategies     comma-separated strategies this call belongs to
kind           pairwise or text
question_key   hash of the question text (joins references to pairs)
reference_from dataset / judge / '' (where the prompt's reference answer came from)
============== ===============================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from judgelab.cache import CallStore
from judgelab.datasets.pairs import Pair, pair_from_row
from judgelab.io import table_rows
from judgelab.judges.base import Judge
from judgelab.judges.pairwise import VERDICT_COLUMNS, orient_context
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request, to_original_frame
from judgelab.records import JudgeRequest, Message, OutputKind, sha256_hex
from judgelab.strategies import ROLE_TEMPLATES, CallSpec, StrategySettings, get_strategies
from judgelab.strategies.prompts import REFERENCE_GENERATION, reference_context

CALL_COLUMNS = [*VERDICT_COLUMNS, "dataset", "call_id", "role", "temperature", "strategies", "kind",
                "question_key", "reference_from"]
REFERENCE_GEN_ID = "reference_generation"


def question_key(prompt: str) -> str:
    return sha256_hex(prompt)[:16]


def plan_calls(strategies: Sequence[str], settings: StrategySettings) -> dict[str, tuple[CallSpec, list[str]]]:
    """call_id -> (call, strategies using it), in first-use order."""
    calls: dict[str, tuple[CallSpec, list[str]]] = {}
    for s in get_strategies(strategies):
        for c in s.calls(settings):
            calls.setdefault(c.call_id, (c, []))[1].append(s.name)
    return calls


def reference_request(question: str, qkey: str) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("user", REFERENCE_GENERATION.format(question=question))], kind=OutputKind.TEXT,
        fmt="text", truth={"gen": {"task": "strategies_reference", "question": question}},
        meta={"call_id": REFERENCE_GEN_ID, "question_key": qkey},
    )


def _base_row(judge: Judge, dataset: str) -> dict:
    return {
        "judge": judge.name, "backend": judge.spec.backend, "model": judge.spec.model, "family": judge.spec.family,
        "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0)), "dataset": dataset,
    }


def pairwise_requests(plist: Sequence[Pair], plan: Mapping[str, tuple[CallSpec, list[str]]],
                      templates: Mapping[str, str], refs: Mapping[str, tuple[str, str]]) -> list[JudgeRequest]:
    """The pairwise requests of every planned call for every pair (reference calls only where a
    reference exists); the shown gold is the pair's gold in the presented order."""
    reqs: list[JudgeRequest] = []
    for cid, (spec, _users) in plan.items():
        template = templates[spec.role]
        params = {} if spec.temperature is None else {"temperature": float(spec.temperature)}
        for p in plist:
            qk = question_key(p.prompt)
            ctx = orient_context(p.context, spec.order)
            ref_from = ""
            if spec.needs_reference:
                if qk not in refs:
                    continue  # no reference for this question: the call is not made (counted when aggregating)
                ctx = reference_context(refs[qk][0]) + ctx
                ref_from = refs[qk][1]
            first, second = (p.response_a, p.response_b) if spec.order == "AB" else (p.response_b, p.response_a)
            gold = p.expected_verdict if spec.order == "AB" else to_original_frame(p.expected_verdict, "BA")
            reqs.append(pairwise_request(
                template, question=p.prompt, first=first, second=second, gold=gold, context=ctx, params=params,
                meta={"pair_id": p.pair_id, "order": spec.order, "call_id": cid, "question_key": qk,
                      "reference_from": ref_from},
            ))
    return reqs


def role_templates_for(judge: Judge, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Template per prompt role: the defaults, the config's overrides, and a replayed judge's own
    baseline prompt (it was recorded with it)."""
    templates = {**ROLE_TEMPLATES, **(overrides or {})}
    custom = (judge.spec.options or {}).get("prompt_template")
    if custom:
        templates["baseline"] = str(custom)
    return templates


def query_strategies(
    judge: Judge,
    pairs: pd.DataFrame,
    cache: CallStore,
    *,
    dataset: str,
    strategies: Sequence[str],
    settings: StrategySettings,
    role_templates: Mapping[str, str] | None = None,
    label: str | None = None,
    max_error_rate: float | None = 0.0,
) -> pd.DataFrame:
    """Make every call of ``strategies`` for every pair; return the calls table."""
    templates = role_templates_for(judge, role_templates)
    plan = plan_calls(strategies, settings)
    plist = [pair_from_row(r, where=f"pairs table {dataset} row {i}") for i, r in enumerate(table_rows(pairs))]
    dataset_refs = dict(zip(pairs["pair_id"].astype(str), pairs.get("reference", pd.Series([""] * len(pairs))).fillna(""),
                            strict=True))
    base = _base_row(judge, dataset)
    rows: list[dict] = []

    refs: dict[str, tuple[str, str]] = {}  # question key -> (text, origin)
    ref_users = sorted({s for c, ss in plan.values() if c.needs_reference for s in ss})
    if ref_users:
        todo: dict[str, str] = {}
        for p in plist:
            qk = question_key(p.prompt)
            if dataset_refs.get(p.pair_id):
                refs.setdefault(qk, (dataset_refs[p.pair_id], "dataset"))
            elif qk not in refs:
                todo.setdefault(qk, p.prompt)
        todo = {k: q for k, q in todo.items() if k not in refs}
        gen_reqs = [reference_request(q, k) for k, q in todo.items()]
        for req, resp in zip(gen_reqs, run_requests(judge, gen_reqs, cache, label=f"{label} references" if label else None,
                                                     max_error_rate=max_error_rate), strict=True):
            qk = req.meta["question_key"]
            if resp.status.has_value and str(resp.value).strip():
                refs[qk] = (str(resp.value), "judge")
            rows.append({
                **base, "pair_id": "", "order": "", "template": REFERENCE_GEN_ID, "verdict_shown": "", "verdict": "",
                "expected_verdict": "", "correct": False, "status": resp.status.value, "parse_method": resp.parse_method,
                "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out,
                "cost_usd": resp.cost_usd, "latency_s": resp.latency_s, "key": resp.key, "bias_type": "", "category": "",
                "call_id": REFERENCE_GEN_ID, "role": REFERENCE_GEN_ID, "temperature": math.nan,
                "strategies": ",".join(ref_users), "kind": "text", "question_key": qk, "reference_from": "judge",
            })

    reqs = pairwise_requests(plist, plan, templates, refs)
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    by_id = {p.pair_id: p for p in plist}
    for req, resp in zip(reqs, responses, strict=True):
        p = by_id[req.meta["pair_id"]]
        spec, users = plan[req.meta["call_id"]]
        shown = resp.value if resp.status.has_value else None
        verdict = to_original_frame(shown, spec.order)
        rows.append({
            **base, "pair_id": p.pair_id, "order": spec.order, "template": templates[spec.role],
            "verdict_shown": shown or "", "verdict": verdict or "", "expected_verdict": p.expected_verdict,
            "correct": verdict == p.expected_verdict, "status": resp.status.value, "parse_method": resp.parse_method,
            "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out,
            "cost_usd": resp.cost_usd, "latency_s": resp.latency_s, "key": resp.key, "bias_type": p.bias_type,
            "category": p.category, "call_id": req.meta["call_id"], "role": spec.role,
            "temperature": math.nan if spec.temperature is None else float(spec.temperature),
            "strategies": ",".join(users), "kind": "pairwise", "question_key": req.meta["question_key"],
            "reference_from": req.meta["reference_from"],
        })
    return pd.DataFrame(rows, columns=CALL_COLUMNS)
