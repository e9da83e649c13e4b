"""A judge's tournament verdicts, built column by column, are the table of one row per pair:
the same values and dtypes (the reference below writes each row as a dict), with errors,
unparsed answers, ties, prompts without gold and no pairs at all."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.records import CallStatus, JudgeRequest, JudgeResponse, Message
from judgelab.uda.data import SCORE_OF_VERDICT
from judgelab.uda.tournament import UDA_VERDICT_COLUMNS, _verdict_table


def by_rows(judge, reqs, resps, template, seed, dataset) -> pd.DataFrame:
    rows = []
    for req, r in zip(reqs, resps, strict=True):
        m = req.meta
        v = r.value if r.status.has_value else None
        rows.append({
            "pair_id": f"{m['prompt_id']}|{m['model_a']}|{m['model_b']}", "order": "AB", "judge": judge.name,
            "backend": judge.spec.backend, "model": judge.spec.model, "family": judge.spec.family,
            "template": template, "verdict_shown": v or "", "verdict": v or "", "expected_verdict": m["gold"],
            "correct": bool(v is not None and v == m["gold"]), "status": r.status.value,
            "parse_method": r.parse_method, "raw_text": r.raw_text or "", "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "latency_s": r.latency_s,
            "simulated": judge.simulated, "judge_seed": seed, "key": r.key, "bias_type": "none",
            "category": "", "dataset": dataset, "prompt_id": m["prompt_id"], "model_a": m["model_a"],
            "model_b": m["model_b"], "score_a": SCORE_OF_VERDICT.get(v, np.nan) if v else np.nan,
        })
    return pd.DataFrame(rows, columns=UDA_VERDICT_COLUMNS)


def pair(i: int, status: CallStatus, value: str | None, prompt_id) -> tuple[JudgeRequest, JudgeResponse]:
    req = JudgeRequest(messages=[Message("user", "q")],
                       meta={"prompt_id": prompt_id, "model_a": f"m{i}", "model_b": "m9", "gold": ["A", "B", "tie", ""][i % 4]})
    resp = JudgeResponse(key=f"k{i}", judge="j", backend="simulated", model="m", kind="pairwise",
                         raw_text=None if i % 3 == 0 else f"text {i}", value=value, status=status, parse_method="json",
                         tokens_in=10 * i, tokens_out=2, cost_usd=0.0 if i % 2 else 0.5, latency_s=0.1 * i)
    return req, resp


STATUSES = [CallStatus.OK, CallStatus.ERROR, CallStatus.UNPARSED, CallStatus.FALLBACK, CallStatus.REFUSAL]
CASES = {
    "none": [],
    "one": [pair(0, CallStatus.OK, "A", 1)],
    "mixed": [pair(i, STATUSES[i % 5], ["A", "B", "tie", None, "A"][i % 5], f"p{i}") for i in range(11)],
    "errors only": [pair(i, CallStatus.ERROR, None, i) for i in range(3)],
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_verdict_table_by_columns_is_the_table_by_rows(case):
    judge = make_judge(JudgeSpec.from_dict({"name": "j", "backend": "simulated", "model": "m", "family": "openai"}))
    reqs, resps = [q for q, _ in CASES[case]], [r for _, r in CASES[case]]
    got = _verdict_table(judge, reqs, resps, template="uda_pairwise", seed=3, dataset="d")
    pd.testing.assert_frame_equal(got, by_rows(judge, reqs, resps, "uda_pairwise", 3, "d"), check_exact=True)
