"""Pairwise judging of a pair set in one or both presentation orders.

The verdict table (one row per pair x order x judge) is the common currency of
every pairwise study.  Columns:

================== ===============================================================
pair_id, order     the pair and how it was shown (``AB`` as stored, ``BA`` swapped)
judge, backend,    who judged (``family`` drives self-preference analyses)
model, family
template           prompt template name (fixes the answer format)
verdict_shown      parsed verdict on the presented slots (A/B/tie, empty if none)
verdict            the same mapped back to the pair's stored order
expected_verdict   gold, in the stored order
correct            verdict == expected_verdict (False when there is no verdict)
status             ok / fallback / unparsed / refusal / error (see records.CallStatus)
parse_method       which parsing rule produced the value
raw_text           the judge's raw answer
tokens_in/out,     usage and cost of the call (cost from the judge's configured price)
cost_usd, latency_s
simulated          True when the judge is a simulated-panel judge
judge_seed         the judge's sampling seed
key                cache key of the call
bias_type,category copied from the pair
================== ===============================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from judgelab.cache import CallStore
from judgelab.datasets.pairs import Pair
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request, to_original_frame
from judgelab.records import JudgeRequest

ORDERS = ("AB", "BA")

VERDICT_COLUMNS = [
    "pair_id", "order", "judge", "backend", "model", "family", "template", "verdict_shown", "verdict",
    "expected_verdict", "correct", "status", "parse_method", "raw_text", "tokens_in", "tokens_out",
    "cost_usd", "latency_s", "simulated", "judge_seed", "key", "bias_type", "category",
]


def orient_context(context: str, order: str) -> str:
    """Fill the ``{A}``/``{B}`` slot placeholders of a pair's context for this order.

    A context that names a response ("90% of people believe Response {B} is better")
    must keep naming the same *response* when the slots are swapped.
    """
    if "{" not in context:
        return context
    shown = {"A": "A", "B": "B"} if order == "AB" else {"A": "B", "B": "A"}
    return context.replace("{A}", shown["A"]).replace("{B}", shown["B"])


def pair_requests(pairs: Sequence[Pair], template: str, orders: Sequence[str] = ORDERS,
                  params: dict | None = None) -> list[JudgeRequest]:
    reqs = []
    for order in orders:
        if order not in ORDERS:
            raise ValueError(f"unknown presentation order {order!r}; use AB or BA")
        for p in pairs:
            first, second = (p.response_a, p.response_b) if order == "AB" else (p.response_b, p.response_a)
            gold = p.expected_verdict if order == "AB" else to_original_frame(p.expected_verdict, "BA")
            reqs.append(pairwise_request(
                template, question=p.prompt, first=first, second=second, gold=gold,
                context=orient_context(p.context, order),
                params=params, meta={"pair_id": p.pair_id, "order": order},
            ))
    return reqs


def judge_pairs(judge: Judge, pairs: Sequence[Pair], cache: CallStore, *, template: str,
                orders: Sequence[str] = ORDERS, label: str | None = None,
                max_error_rate: float | None = 0.0) -> pd.DataFrame:
    """Ask ``judge`` about every pair in each order; return the verdict table."""
    reqs = pair_requests(pairs, template, orders)
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    by_id = {p.pair_id: p for p in pairs}
    rows = []
    for req, resp in zip(reqs, responses, strict=True):
        p = by_id[req.meta["pair_id"]]
        order = req.meta["order"]
        shown = resp.value if resp.status.has_value else None
        verdict = to_original_frame(shown, order)
        rows.append({
            "pair_id": p.pair_id, "order": order, "judge": judge.name, "backend": judge.spec.backend,
            "model": judge.spec.model, "family": judge.spec.family, "template": template,
            "verdict_shown": shown or "", "verdict": verdict or "", "expected_verdict": p.expected_verdict,
            "correct": verdict == p.expected_verdict, "status": resp.status.value,
            "parse_method": resp.parse_method, "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in,
            "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd, "latency_s": resp.latency_s,
            "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0)),
            "key": resp.key, "bias_type": p.bias_type, "category": p.category,
        })
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
