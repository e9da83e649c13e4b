"""Reasoning supervision (paper 001, Sec. 4): the teacher's request and the filter on its traces.

* the teacher is told what the paper says it is told: the biased input, the bias type to
  consider, the evaluator's name (I_MJ) and the evaluator's verdict (E.3), and answers a
  free-text ``<think> r </think> b`` trace;
* only traces whose parsed label equals the ground-truth b_i and that carry reasoning are
  kept (D_train = {... | b_hat_i = b_i}); a trace without a label, a trace cut off inside
  ``<think>``, a refusal and a failed call are recorded, never kept, and never read as a label;
* every trace row carries its case, the teacher's label and reasoning, and the teacher's call.

The teacher here is a scripted backend that answers each case with a given raw text (a real
teacher's answers), so each filter rule is tested on the exact text it reads.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict

import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.rbd.detector import CASE_COLUMNS, DetectorCase, case_info
from judgelab.rbd.supervision import TRACE_COLUMNS, collect_traces, teacher_request
from judgelab.records import OutputKind, RawAnswer


class ScriptedTeacher(Judge):
    """Answers each request with ``script[case_id]`` (a raw text, or an ``error:`` for a failed call)."""

    def __init__(self, script: dict[str, str], name: str = "teacher") -> None:
        super().__init__(JudgeSpec.from_dict({"name": name, "backend": "scripted", "model": "teacher-model-x"}))
        self.script = script
        self.asked: list[str] = []
        self.prompts: list[str] = []

    def answer(self, requests):
        out = []
        for r in requests:
            cid = r.meta["case_id"]
            self.asked.append(cid)
            self.prompts.append(r.prompt_text())
            text = self.script[cid]
            out.append(RawAnswer(text=None, error=text) if text.startswith("error:")
                       else RawAnswer(text=text, tokens_in=50, tokens_out=len(text.split())))
        return out


def case(cid: str, truth: str, *, bias: str = "verbosity", verdict: int = 1) -> DetectorCase:
    return DetectorCase(case_id=cid, subset="train", set=bias, item_id=f"item-{cid}", evaluator="e",
                        evaluator_model="Evaluator-Model-7B", bias_type=bias, answer_format="output_ab",
                        question=f"How much is 17 times {cid}?", options=[f"It is short {cid}.",
                                                                         f"It is a much longer answer {cid}."],
                        swapped_options=[], statement="", verdict=[verdict], truth=truth)


def test_teacher_request_carries_bias_type_evaluator_input_and_verdict():
    c = case("q1", "yes", verdict=1)
    req = teacher_request(c)
    assert [m.role for m in req.messages] == ["system", "user"]
    system, user = (m.content for m in req.messages)
    assert "verbosity bias" in system.lower()  # the bias type to consider
    assert "Evaluator-Model-7B" in user  # I_MJ: who judged
    assert c.question in user and all(o in user for o in c.options)  # the biased input
    # the evaluator's verdict (option index 1 = Output (b)), after the options
    assert user.split("Evaluation by LLM-as-a-Judge:")[1].split("---")[0].strip() == "Output (b)"
    other_verdict = teacher_request(case("q1", "yes", verdict=0)).messages[1].content
    assert other_verdict.split("Evaluation by LLM-as-a-Judge:")[1].split("---")[0].strip() == "Output (a)"
    # a free-text trace (think block then label), not a constrained label
    assert req.kind is OutputKind.TEXT and req.fmt == "text" and req.task == "reasoning"
    assert req.slots == {"0": c.options[0], "1": c.options[1]}
    assert req.meta == {"case_id": "q1"}
    # what a simulated teacher may read: b_i and the case's cues (a real one reads the prompt only)
    assert req.truth["label"] == "yes" and req.truth["gen"] == {"task": "rbd_teacher"}
    assert req.truth["rbd"] == case_info(c)
    assert teacher_request(case("q1", "no")).truth["label"] == "no"
    # another bias type gets its own system prompt
    other = teacher_request(case("q2", "no", bias="sentiment")).messages[0].content.lower()
    assert "sentiment bias" in other and "verbosity" not in other


def test_teacher_request_rejects_an_unknown_bias_type_naming_the_case():
    with pytest.raises(ValueError, match=r"case q9: the teacher handles .*'style'"):
        teacher_request(case("q9", "yes", bias="style"))


SCRIPT = {
    # (truth, raw teacher answer, expected label, expected reasoning, expected status, kept)
    "agree_yes": ("yes", "<think>\nThe judge chose the longer, wrong answer.\n</think>\nYes",
                  "yes", "The judge chose the longer, wrong answer.", "ok", True),
    "agree_no": ("no", "<think>Both are fine; the judge chose the correct one.</think> No",
                 "no", "Both are fine; the judge chose the correct one.", "ok", True),
    "disagree_yes": ("yes", "<think>It looks fine to me.</think> No", "no", "It looks fine to me.", "ok", False),
    "disagree_no": ("no", "<think>The longer answer won.</think> Yes", "yes", "The longer answer won.", "ok", False),
    "empty_reasoning": ("yes", "<think>  \n </think> Yes", "yes", "", "ok", False),
    "no_think": ("yes", "Yes", "yes", "", "fallback", False),
    "no_label": ("yes", "<think>Yes, the judge is biased, I think.</think> Perhaps.", "",
                 "Yes, the judge is biased, I think.", "unparsed", False),
    "cut_off": ("no", "<think>No bias here. No.", "", "", "unparsed", False),
    "failed": ("yes", "error: HTTP 503", "", "", "error", False),
}


def test_traces_keep_exactly_the_labelled_reasoned_traces_that_match_b_i(tmp_path):
    cases = [case(cid, truth) for cid, (truth, *_rest) in SCRIPT.items()]
    teacher = ScriptedTeacher({cid: row[1] for cid, row in SCRIPT.items()})
    with CallCache(tmp_path / "c.sqlite") as cache:
        tr = collect_traces(teacher, cases, cache, max_error_rate=None)
    assert list(tr.columns) == TRACE_COLUMNS and len(tr) == len(SCRIPT)
    tr = tr.set_index("case_id", drop=False)
    for cid, (truth, raw, label, reasoning, status, kept) in SCRIPT.items():
        row = tr.loc[cid]
        assert row["truth"] == truth, cid
        assert row["teacher_label"] == label, cid
        assert row["reasoning"] == reasoning, cid
        assert row["status"] == status, cid
        assert bool(row["kept"]) is kept, cid
        assert row["raw_text"] == ("" if status == "error" else raw), cid
    assert list(tr.loc[tr["kept"], "case_id"]) == ["agree_yes", "agree_no"]
    # the case columns are the case itself (truth is b_i), the call columns the teacher's call
    for c in cases:
        assert {k: tr.loc[c.case_id, k] for k in CASE_COLUMNS} == asdict(c)
    assert (tr["judge"] == "teacher").all() and (tr["model"] == "teacher-model-x").all()
    assert (tr["backend"] == "scripted").all() and not tr["simulated"].any()
    assert tr.loc["agree_yes", "parse_method"] == "after_think"
    assert tr.loc["agree_yes", "tokens_out"] == len(SCRIPT["agree_yes"][1].split())
    assert tr.loc["failed", "tokens_out"] == 0


def test_a_failed_teacher_call_fails_the_rule_by_default_and_is_retried(tmp_path):
    from judgelab.judges.runner import TooManyErrors

    cases = [case("a", "yes"), case("b", "no")]
    teacher = ScriptedTeacher({"a": "<think>Longer won.</think> Yes", "b": "error: timeout"})
    with CallCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(TooManyErrors):
            collect_traces(teacher, cases, cache, label="rbd teacher")
        teacher.script["b"] = "<think>Fine.</think> No"
        tr = collect_traces(teacher, cases, cache, label="rbd teacher")
    assert teacher.asked == ["a", "b", "b"]  # the answered trace is cached, the failure asked again
    assert list(tr["kept"]) == [True, True]
    # the cache's run log names the step that asked (the audit of who asked what)
    with sqlite3.connect(tmp_path / "c.sqlite") as con:
        runs = con.execute("SELECT label, requested, new_calls, failures FROM runs ORDER BY rowid").fetchall()
    assert runs == [("rbd teacher", 2, 1, 1), ("rbd teacher", 2, 1, 0)]


def test_no_cases_give_an_empty_traces_table_with_every_column(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as cache:
        tr = collect_traces(ScriptedTeacher({}), [], cache)
    assert tr.empty and list(tr.columns) == TRACE_COLUMNS
