"""The authors' released reasoning supervision (paper 001) as a traces table.

The RBD authors publish their distilled supervision as ``RBD-ReasoningSupervision/*.csv``
(repository ``Joyyang158/Reasoning-Bias-Detector``) with the columns

=================================== =========================================================
``index``                           row id in the authors' data
``bias_category``                   verbosity / position / bandwagon / sentiment
``llm_judge_model``                 the evaluator whose verdict is examined (e.g. ``GPT-4o``)
``instruction``                     the question x
``choices``                         the options as the evaluator saw them, in the detector
                                    prompt's layout: ``Output (a): ...\\n\\nOutput (b): ...``;
                                    bandwagon prefixed by ``### Statement: ...``; position as
                                    ``### First Evaluation (Original Order)`` / ``### Second
                                    Evaluation (Swapped Order)``; sentiment numbered ``1. ...``
``llm_judgment``                    the verdict: ``Output (b)``, ``Choice 2`` or, for position,
                                    ``### Original Order\\nOutput (b)\\n\\n### Swapped Order\\n...``
``without_bias_label_think_content`` the teacher's (DeepSeek-R1) reasoning
``deepseek_prediction_bias_label``  the teacher's label (Yes / No)
``bias_label``                      b_i, the ground truth (Yes / No)
=================================== =========================================================

:func:`load_supervision_csv` turns such a file into judgelab's traces table
(:data:`judgelab.rbd.supervision.TRACE_COLUMNS`), so the detector trains on the authors' own
supervision through the same rule (config ``rbd.supervision_data``) instead of asking a
teacher.  ``kept`` applies the paper's filter: the teacher's label equals b_i and there is
reasoning.  A row that cannot be read stops the load with its file and row named.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.io import InputError, table_rows
from judgelab.rbd.detector import DetectorCase, cases_frame
from judgelab.rbd.evaluate import CALL_COLUMNS

REQUIRED = ("bias_category", "llm_judge_model", "instruction", "choices", "llm_judgment", "bias_label")
REASONING_COLUMNS = ("without_bias_label_think_content", "reasoning", "think_content")
TEACHER_LABEL_COLUMNS = ("deepseek_prediction_bias_label", "teacher_label")

_PAIR = re.compile(r"Output \(a\):\s?(?P<a>.*?)\n\nOutput \(b\):\s?(?P<b>.*)\Z", re.DOTALL)
_FIRST, _SECOND = "### First Evaluation (Original Order)\n", "### Second Evaluation (Swapped Order)\n"
_NUMBERED = re.compile(r"^(\d+)\.\s", re.MULTILINE)
_OUTPUT = re.compile(r"Output \(([ab])\)")
_CHOICE = re.compile(r"Choice\s+(\d+)")


def _pair(text: str, where: str) -> list[str]:
    m = _PAIR.search(text.strip())
    if not m:
        raise InputError(f"{where}: choices are not 'Output (a): ...\\n\\nOutput (b): ...'")
    return [m["a"].strip(), m["b"].strip()]


def _numbered(text: str, where: str) -> list[str]:
    marks = list(_NUMBERED.finditer(text))
    if len(marks) < 2 or [int(m[1]) for m in marks] != list(range(1, len(marks) + 1)):
        raise InputError(f"{where}: choices are not numbered '1. ...' lines")
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [text[m.end():e].strip() for m, e in zip(marks, ends, strict=True)]


def _one_verdict(text: str, pairwise: bool, where: str) -> int:
    m = (_OUTPUT if pairwise else _CHOICE).search(text)
    if not m:
        return -1  # the evaluator gave no valid answer (Eq. 1 reads it as wrong)
    return "ab".index(m[1]) if pairwise else int(m[1]) - 1


def parse_row(row: dict, where: str) -> tuple[DetectorCase, str, str]:
    """One CSV row as (detector case, teacher label, reasoning)."""
    bias = str(row["bias_category"]).strip().lower()
    choices, judgment = str(row["choices"]), str(row["llm_judgment"])
    statement, swapped = "", []
    if bias == "position":
        if _FIRST not in choices or _SECOND not in choices:
            raise InputError(f"{where}: a position row needs both evaluations in 'choices'")
        first, second = choices.split(_SECOND, 1)
        options, swapped = _pair(first.replace(_FIRST, ""), where), _pair(second, where)
        parts = judgment.split("### Swapped Order")
        verdict = [_one_verdict(parts[0], True, where), _one_verdict(parts[-1] if len(parts) > 1 else "", True, where)]
        fmt = "two_rounds"
    elif bias == "sentiment":
        options, fmt = _numbered(choices, where), "number"
        verdict = [_one_verdict(judgment, False, where)]
    elif bias in ("verbosity", "bandwagon"):
        body = choices
        if choices.startswith("### Statement:"):
            head, _, body = choices.partition("\n\n")
            statement = head.removeprefix("### Statement:").strip().replace("%%", "%")
        options, fmt = _pair(body, where), "output_ab"
        verdict = [_one_verdict(judgment, True, where)]
    else:
        raise InputError(f"{where}: bias_category {row['bias_category']!r} is not one of verbosity, position, "
                         "bandwagon, sentiment")
    truth = str(row["bias_label"]).strip().lower()
    if truth not in ("yes", "no"):
        raise InputError(f"{where}: bias_label must be Yes or No, got {row['bias_label']!r}")
    evaluator = str(row["llm_judge_model"]).strip()
    rid = str(row.get("index", "")).strip() or where.rsplit(" ", 1)[-1]
    case = DetectorCase(case_id=f"authors|{bias}|{rid}", subset="train", set=f"authors_{bias}", item_id=rid,
                        evaluator=evaluator, evaluator_model=evaluator, bias_type=bias, answer_format=fmt,
                        question=str(row["instruction"]), options=options, swapped_options=swapped,
                        statement=statement, verdict=verdict, truth=truth)
    reasoning = next((str(row[c]) for c in REASONING_COLUMNS if c in row and pd.notna(row[c])), "")
    label = next((str(row[c]).strip().lower() for c in TEACHER_LABEL_COLUMNS if c in row and pd.notna(row[c])), truth)
    return case, label, reasoning


def load_supervision_csv(path: str | Path) -> pd.DataFrame:
    """The authors' supervision CSV as a traces table (``kept``: teacher label == b_i, with reasoning)."""
    p = Path(path)
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError) as e:
        raise InputError(f"{p}: cannot read the supervision CSV ({e})") from e
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {missing}; the authors' layout has {list(REQUIRED)} "
                         f"plus {REASONING_COLUMNS[0]!r}")
    cases, labels, reasons = [], [], []
    for i, row in enumerate(table_rows(df)):
        case, label, reasoning = parse_row(row, f"{p} row {i + 2}")
        cases.append(case)
        labels.append(label)
        reasons.append(reasoning)
    out = cases_frame(cases)
    out["teacher_label"] = labels
    out["reasoning"] = reasons
    out["kept"] = (out["teacher_label"] == out["truth"]) & out["reasoning"].str.strip().ne("")
    # no call was made: the teacher is the authors' DeepSeek-R1, recorded in the file
    calls: dict[str, Any] = {"judge": "authors-teacher", "backend": "file", "model": "deepseek-r1 (authors' release)",
             "family": "deepseek", "simulated": False, "judge_seed": 0, "status": "ok", "parse_method": "file",
             "raw_text": "", "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "latency_s": 0.0, "key": ""}
    for c in CALL_COLUMNS:
        out[c] = calls[c]
    out["status"] = ["ok" if lab else "unparsed" for lab in out["teacher_label"]]
    return out
