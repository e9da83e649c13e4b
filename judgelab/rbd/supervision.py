"""Reasoning supervision: teacher traces filtered by the bias label (paper 001, Sec. 4).

For every training tuple (x_bias_i, y_bias_i, b_i, t_i) a teacher model M_T is prompted
with the biased input, the bias type to consider, the evaluator's name (which tells it
the evaluator's capability) and the evaluator's verdict (E.3), and writes
``<think> r_i </think> b_i``.  Only traces whose label equals the ground-truth b_i are
kept: D_train = {(x, y_bias, y_r, I_MJ, t) | b_hat_i = b_i}.  The kept traces train the
detector jointly over the four bias types.

Columns of the traces table: the detector-case columns of
:data:`judgelab.rbd.detector.CASE_COLUMNS` (``truth`` is b_i), ``teacher_label`` (yes /
no / "" when unparsed), ``reasoning`` (the text inside ``<think>``), ``kept`` and the call
columns of :data:`judgelab.rbd.evaluate.CALL_COLUMNS` (the teacher's call).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from judgelab.cache import CallStore
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.parsing import split_think
from judgelab.rbd.detector import CASE_COLUMNS, DetectorCase, case_info, case_record
from judgelab.rbd.evaluate import CALL_COLUMNS, call_fields
from judgelab.rbd.prompts import BIAS_TYPES, teacher_messages
from judgelab.records import JudgeRequest, Message, OutputKind

TRACE_COLUMNS = [*CASE_COLUMNS, "teacher_label", "reasoning", "kept", *CALL_COLUMNS]


def teacher_request(case: DetectorCase) -> JudgeRequest:
    """The teacher's request for one case (a text generation answered ``<think>...</think> Yes``)."""
    if case.bias_type not in BIAS_TYPES:
        raise ValueError(f"case {case.case_id}: the teacher handles {list(BIAS_TYPES)}, not {case.bias_type!r}")
    system, user = teacher_messages(bias_type=case.bias_type, evaluator=case.evaluator_model,
                                    instruction=case.question, choices=case.choices(), judgement=case.judgement())
    slots = {str(k): o for k, o in enumerate(case.options)}
    return JudgeRequest(
        messages=[Message("system", system), Message("user", user)], kind=OutputKind.TEXT, fmt="text",
        task="reasoning", slots=slots, meta={"case_id": case.case_id},
        truth={"gen": {"task": "rbd_teacher"}, "label": case.truth, "rbd": case_info(case)},
    )


def collect_traces(teacher: Judge, cases: Sequence[DetectorCase], cache: CallStore, *, label: str | None = None,
                   max_error_rate: float | None = 0.0) -> pd.DataFrame:
    """Ask the teacher about every case; keep the traces whose label matches b_i."""
    from judgelab.parsing import parse_label

    reqs = [teacher_request(c) for c in cases]
    responses = run_requests(teacher, reqs, cache, label=label, max_error_rate=max_error_rate)
    rows = []
    for c, resp in zip(cases, responses, strict=True):
        p = parse_label(resp.raw_text, "think")
        lab = str(p.value) if p.status.has_value else ""
        reasoning = split_think(resp.raw_text or "")[0]
        rows.append({
            **case_record(c), "teacher_label": lab, "reasoning": reasoning,
            "kept": bool(lab == c.truth and reasoning.strip()),
            **call_fields(teacher, resp, p.status.value if resp.status.value != "error" else "error", p.method),
        })
    return pd.DataFrame(rows, columns=TRACE_COLUMNS)
