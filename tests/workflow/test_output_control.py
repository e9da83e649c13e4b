"""Request-level output control: JSON mode, per-task output limits, sampling overrides,
reasoning returned in a separate field (issue 10, item 5).

The request bodies are captured by the fault-injecting loopback fake server of
``tests/judges/test_openai_backend.py`` (its ``api`` fixture).
"""

from __future__ import annotations

import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec, validate_config
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request
from judgelab.rbd.detector import DetectorCase
from judgelab.rbd.supervision import collect_traces, teacher_request
from judgelab.records import DEFAULT_OUTPUT_LIMITS, JudgeRequest, Message, OutputKind
from judgelab.strategies import prompts as _strategy_prompts  # noqa: F401  (registers the S4-S8 templates)
from tests.judges import test_openai_backend as _fake
from tests.judges.test_openai_backend import make

# the fault-injecting loopback fake server and its proxy guard, reused as fixtures here
api = _fake.api
_no_proxy = _fake._no_proxy


def _pair(template: str, pid: str):
    return pairwise_request(template, question=f"id={pid} plan=ok What is 2+2?", first="4", second="5")


def _bodies_by_id(api_) -> dict[str, dict]:
    out = {}
    for b in api_.bodies:
        text = b["messages"][-1]["content"]
        pid = text.split("id=", 1)[1].split()[0]
        out[pid] = b
    return out


def test_json_mode_only_on_requests_that_ask_for_json_only(api, monkeypatch):
    judge = make(api, monkeypatch, response_format_json=True, sampling={"temperature": 0.0})
    reqs = {
        "json": _pair("json_verdict", "json"),
        "cot": _pair("cot_json", "cot"),  # free analysis first, then a JSON object
        "brackets": _pair("abc_brackets", "brackets"),
        "gen": JudgeRequest(messages=[Message("user", "id=gen plan=ok Answer the question.")], kind=OutputKind.TEXT,
                            fmt="text"),
    }
    answers = judge.answer(list(reqs.values()))
    assert all(a.error is None for a in answers)
    bodies = _bodies_by_id(api)
    assert bodies["json"]["response_format"] == {"type": "json_object"}
    for pid in ("cot", "brackets", "gen"):
        assert "response_format" not in bodies[pid], pid


def test_output_limits_follow_the_task_of_the_request(api, monkeypatch):
    judge = make(api, monkeypatch, sampling={"temperature": 0.0})
    teacher_like = JudgeRequest(messages=[Message("user", "id=teach plan=ok think")], kind=OutputKind.TEXT,
                                fmt="text", task="reasoning")
    judge.answer([_pair("json_verdict", "v"), _pair("cot_json", "c"), teacher_like,
                  JudgeRequest(messages=[Message("user", "id=g plan=ok write")], kind=OutputKind.TEXT, fmt="text")])
    b = _bodies_by_id(api)
    assert b["v"]["max_tokens"] == DEFAULT_OUTPUT_LIMITS["verdict"]
    assert b["c"]["max_tokens"] == DEFAULT_OUTPUT_LIMITS["cot"]
    assert b["teach"]["max_tokens"] == DEFAULT_OUTPUT_LIMITS["reasoning"] == 8192
    assert b["g"]["max_tokens"] == DEFAULT_OUTPUT_LIMITS["generation"]


def test_judge_limits_drop_and_rename_params(api, monkeypatch):
    judge = make(api, monkeypatch, sampling={"temperature": 0.3, "seed": 3})
    spec = JudgeSpec.from_dict({
        "name": "reasoner", "backend": "openai", "model": "fake-model",
        "sampling": {"temperature": 0.3, "seed": 3}, "output_limits": {"cot": 6000},
        "drop_params": ["temperature"], "rename_params": {"max_tokens": "max_completion_tokens"},
        "options": judge.spec.options,
    })
    reasoner = make_judge(spec)
    reasoner.answer([_pair("cot_json", "r1"), _pair("json_verdict", "r2")])
    b = _bodies_by_id(api)
    assert "temperature" not in b["r1"] and "max_tokens" not in b["r1"]
    assert b["r1"]["max_completion_tokens"] == 6000 and b["r1"]["seed"] == 3
    assert b["r2"]["max_completion_tokens"] == DEFAULT_OUTPUT_LIMITS["verdict"]
    # a raised limit is a different call: the truncated answer is not reused
    wider = make_judge(JudgeSpec.from_dict({**spec.__dict__, "price": {}, "output_limits": {"cot": 8000},
                                            "drop_params": list(spec.drop_params)}))
    assert wider.key(_pair("cot_json", "r1")) != reasoner.key(_pair("cot_json", "r1"))
    assert wider.key(_pair("json_verdict", "r2")) == reasoner.key(_pair("json_verdict", "r2"))


def test_top_level_output_limits_fill_real_judges_without_their_own():
    cfg = {"judges": [
        {"name": "a", "backend": "openai", "model": "m"},
        {"name": "b", "backend": "openai", "model": "m", "sampling": {"max_tokens": 64}},
        {"name": "c", "backend": "openai", "model": "m", "output_limits": {"cot": 99}},
    ], "output_limits": {"verdict": 10, "cot": 20}}
    validate_config(cfg)
    specs = {d["name"]: JudgeSpec.from_dict(d) for d in cfg["judges"]}
    assert specs["a"].output_limit("verdict") == 10 and specs["a"].output_limit("cot") == 20
    assert specs["b"].output_limits == {}  # its own sampling.max_tokens stays its limit
    assert specs["c"].output_limit("cot") == 99 and specs["c"].output_limit("verdict") == 10
    assert specs["a"].output_limit("reasoning") == DEFAULT_OUTPUT_LIMITS["reasoning"]


def _case(pid: str, plan: str, truth: str) -> DetectorCase:
    return DetectorCase(
        case_id=pid, subset="test", set="D_bias", item_id=pid, evaluator="e", evaluator_model="gpt-4o",
        bias_type="verbosity", answer_format="output_ab", question=f"id={pid} plan={plan} Name a prime.",
        options=["2", "Two is the smallest prime number, and it is even."], swapped_options=[], statement="",
        verdict=[1], truth=truth,
    )


def test_reasoning_field_reaches_a_kept_teacher_trace(api, monkeypatch, tmp_path):
    teacher = make(api, monkeypatch, response_format_json=True, sampling={"temperature": 0.0})
    cases = [_case("t1", "reasoning_yes", "yes"), _case("t2", "reasoning_no", "yes")]
    assert teacher_request(cases[0]).output_task == "reasoning"
    with CallCache(tmp_path / "c.sqlite") as cache:
        traces = collect_traces(teacher, cases, cache)
    b = _bodies_by_id(api)
    assert b["t1"]["max_tokens"] == 8192 and "response_format" not in b["t1"]
    t1, t2 = traces.set_index("case_id").loc["t1"], traces.set_index("case_id").loc["t2"]
    assert t1["teacher_label"] == "yes" and bool(t1["kept"])
    assert "id=t1: the evaluator followed the cue." in t1["reasoning"]
    assert t2["teacher_label"] == "no" and not bool(t2["kept"])  # label differs from the truth


def test_reasoning_is_cached_and_verdicts_come_from_the_answer(api, monkeypatch, tmp_path):
    """The reasoning is stored with the answer; a verdict the model only mentions while
    reasoning is not taken for its answer."""
    judge = make(api, monkeypatch, sampling={"temperature": 0.0})
    req = JudgeRequest(messages=[Message("user", "id=r plan=reasoning_yes Which is better?")],
                       kind=OutputKind.PAIRWISE, fmt="json")
    with CallCache(tmp_path / "c.sqlite") as cache:
        [first] = run_requests(judge, [req], cache)
        [again] = run_requests(judge, [req], cache)
    assert again.cached and "<think>" in again.raw_text and "followed the cue" in again.raw_text
    assert '{"verdict": "A"}' in again.raw_text  # considered while reasoning, not answered
    assert first.status.value == "unparsed" and again.status.value == "unparsed" and again.value is None


@pytest.mark.parametrize("template,json_mode,task", [
    ("json_verdict", True, "verdict"), ("cot_json", False, "cot"), ("abc_brackets", False, "verdict"),
    ("ab_letter", False, "verdict"), ("output_ab", False, "verdict"), ("cot_rubric_json", True, "cot"),
])
def test_templates_set_the_request_flags(template, json_mode, task):
    r = _pair(template, "x")
    assert (r.json_mode, r.output_task) == (json_mode, task)
