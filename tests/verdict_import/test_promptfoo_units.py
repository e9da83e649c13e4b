"""Units of :mod:`judgelab.verdict_import.promptfoo_log` on small ``output.json`` documents in
promptfoo's layout (results version 3; the real export is checked in
tests/verdict_import/test_tools_presets.py): every record field, the grader and provider fallbacks,
failed calls kept, and each refusal's exact line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judgelab.io import InputError
from judgelab.verdict_import.promptfoo_log import iter_promptfoo_records


def _comp(kind: str, value: Any = "be kind", passed: Any = True, score: Any = 1.0, reason: str = "ok") -> dict:
    return {"assertion": {"type": kind, "value": value}, "pass": passed, "score": score, "reason": reason}


def _res(**over: Any) -> dict:
    res = {"testIdx": 0, "promptIdx": 1, "provider": {"id": "openai:gpt-4o-mini", "label": "mini"},
           "prompt": {"raw": "Say hi", "label": "p"}, "response": {"output": "hi"},
           "testCase": {"vars": {}, "assert": [], "options": {"provider": {"id": "openai:o3", "label": "grader"}}},
           "gradingResult": {"componentResults": [_comp("contains"), _comp("llm-rubric", score=0.8, reason="fine")]}}
    res.update(over)
    return res


def _file(tmp_path: Path, results: Any, **doc: Any) -> Path:
    path = tmp_path / "output.json"
    path.write_text(json.dumps({"evalId": "eval-1", "results": {"version": 3, "results": results}, **doc}))
    return path


def _records(tmp_path: Path, results: Any) -> list[tuple[int, dict]]:
    return list(iter_promptfoo_records(_file(tmp_path, results)))


def test_a_model_graded_component_is_one_record_with_every_field(tmp_path: Path) -> None:
    assert _records(tmp_path, [_res()]) == [(0, {
        "eval_id": "eval-1", "test_idx": 0, "prompt_idx": 1, "provider": "mini", "grader": "openai:o3",
        "prompt": "Say hi", "output": "hi", "assertion_type": "llm-rubric", "rubric": "be kind",
        "component_idx": 1, "pass": True, "score": 0.8, "reason": "fine"})]


def test_provider_and_grader_fallbacks(tmp_path: Path) -> None:
    recs = _records(tmp_path, [
        _res(provider={"id": "only-id"}, testCase={"options": {"provider": {"label": "lab"}}}),
        _res(provider="plain", testCase={"options": {"provider": "grader-str"}}, prompt="raw text", response="x"),
        _res(testCase="not an object"),
        _res(testCase={"options": "not an object"}),
        _res(testCase={"options": {"provider": {}}}),
    ])
    got = [(r["provider"], r["grader"], r["prompt"], r["output"]) for _, r in recs]
    assert got == [("only-id", "lab", "Say hi", "hi"), ("plain", "grader-str", "raw text", None),
                   ("mini", "default", "Say hi", "hi"), ("mini", "default", "Say hi", "hi"),
                   ("mini", "default", "Say hi", "hi")]
    assert [r for r, _ in recs] == [0, 1, 2, 3, 4]


def test_a_failed_call_keeps_one_record_per_model_graded_assertion_asked(tmp_path: Path) -> None:
    failed = _res(gradingResult=None, error="timeout",
                  testCase={"assert": ["not an object", {"type": "contains", "value": "x"},
                                       {"type": "select-best", "value": "best"}, {"type": "g-eval", "value": "r"}]})
    recs = _records(tmp_path, [failed, _res(gradingResult={}, error="again", testCase={"assert": "nope"}),
                               {**failed, "testIdx": 5}])
    assert [(r, d["assertion_type"], d["rubric"], d["component_idx"], d["pass"], d["score"], d["reason"])
            for r, d in recs] == [(0, "select-best", "best", 2, None, None, "timeout"),
                                  (1, "g-eval", "r", 3, None, None, "timeout"),
                                  (2, "select-best", "best", 2, None, None, "timeout"),
                                  (3, "g-eval", "r", 3, None, None, "timeout")]
    assert recs[2][1]["test_idx"] == 5  # a second failed result is read too
    no_case = _res(gradingResult=None, testCase=None)
    assert _records(tmp_path, [no_case, _res()])[0][1]["component_idx"] == 1


def _refused(path: Path) -> str:
    with pytest.raises(InputError) as err:
        list(iter_promptfoo_records(path))
    return str(err.value)


def test_each_refusal_is_its_own_exact_line(tmp_path: Path) -> None:
    p = tmp_path / "output.json"
    p.write_text("[]")
    assert _refused(p) == f"{p}: format 'promptfoo' expects one JSON object (evalId, results, ...), got a list"
    p.write_text(json.dumps({"results": [1]}))
    assert _refused(p) == (f"{p}: format 'promptfoo' expects key 'results.results' (a list of test results), "
                           f"got list; is this a promptfoo output.json (results version 3)?")
    p.write_text(json.dumps({"results": {"results": {"a": 1}}}))
    assert _refused(p) == (f"{p}: format 'promptfoo' expects key 'results.results' (a list of test results), "
                           f"got results.results of type dict; is this a promptfoo output.json (results version 3)?")
    assert _refused(_file(tmp_path, [_res(), 7])) == f"{p} results.results[1]: expected an object, got int"
    many = {f"k{i:02d}": 0 for i in range(14)}
    assert _refused(_file(tmp_path, [{**many, "testIdx": 0}])) == (
        f"{p} results.results[0]: expects key 'promptIdx', missing (keys {sorted([*many, 'testIdx'])[:12]})")
    assert _refused(_file(tmp_path, [_res(gradingResult={"componentResults": "x"})])) == (
        f"{p} results.results[0]: key 'gradingResult.componentResults' should be a list, got str")
    long = "y" * 100
    assert _refused(_file(tmp_path, [_res(gradingResult={"componentResults": [long]})])) == (
        f"{p} results.results[0].gradingResult.componentResults[0]: expects an object with key 'assertion', "
        f"got {long[:60]!r}")
    comp = {f"c{i:02d}": 0 for i in range(12)} | {"assertion": {"type": "factuality"}}
    assert _refused(_file(tmp_path, [_res(gradingResult={"componentResults": [comp]})])) == (
        f"{p} results.results[0].gradingResult.componentResults[0] (factuality): expects key 'pass', "
        f"missing (keys {sorted(comp)[:10]})")
