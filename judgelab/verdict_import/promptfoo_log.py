"""Read promptfoo ``output.json`` exports as one record per model-graded assertion result.

``promptfoo eval -o output.json`` writes one object: ``evalId``, ``results`` (``version`` 3,
``timestamp``, ``prompts``, ``results``, ``stats``), ``config``, ``shareableUrl``, ``metadata``.
Each entry of ``results.results`` is one test case run through one prompt and one provider:
``testIdx``, ``promptIdx``, ``provider`` (``{id, label}``), ``prompt.raw`` (the rendered prompt),
``response.output``, ``testCase`` (its ``vars``, ``assert`` and ``options.provider``, the grader
when the test names one), ``failureReason`` (0 none, 1 an assertion failed, 2 an error) and
``gradingResult.componentResults``: one ``{assertion: {type, value}, pass, score, reason}`` per
assertion.

Only model-graded assertions are a judge's verdict (:data:`MODEL_GRADED`); ``contains``, ``cost``,
``latency`` and the like are checks, not judgments, and are not read.  Each model-graded component
becomes one record with keys ``eval_id``, ``test_idx``, ``prompt_idx``, ``provider``, ``grader``
(``testCase.options.provider`` as a string or its ``id``; ``"default"`` when the test names none:
promptfoo then grades with its default provider, which the file does not record),
``assertion_type``, ``rubric`` (the assertion's ``value``), ``component_idx``, ``pass``, ``score``,
``reason``, ``prompt`` and ``output``.  A result that errored before grading (``failureReason`` 2,
no component results) becomes one record per model-graded assertion of its ``testCase.assert``
with ``pass`` null, so each judge counts the failed call, never drops it.  Why a reader: the model-graded components sit at no fixed
position in ``componentResults``, so no path addresses them.

Bad input raises :class:`~judgelab.io.InputError` naming the file, the result and the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgelab.io import InputError
from judgelab.verdict_import.readers import load_json_object

#: assertion types graded by a model (promptfoo's "model-graded metrics"); the others are checks
MODEL_GRADED = frozenset({"llm-rubric", "model-graded-closedqa", "factuality", "model-graded-factuality",
                          "select-best", "g-eval"})


def _load(p: Path) -> dict[str, Any]:
    return load_json_object(p, "promptfoo", "evalId, results, ...")


def _grader(test_case: Any) -> str:
    opts = test_case.get("options") if isinstance(test_case, dict) else None
    prov = opts.get("provider") if isinstance(opts, dict) else None
    if isinstance(prov, dict):
        prov = prov.get("id") or prov.get("label")
    return str(prov) if prov else "default"


def iter_promptfoo_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, record)``: one record per model-graded component (see the module docstring)."""
    p = Path(path)
    doc = _load(p)
    summary = doc.get("results")
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
        got = type(summary).__name__ if not isinstance(summary, dict) else \
            f"results.results of type {type(summary.get('results')).__name__}"
        raise InputError(f"{p}: format 'promptfoo' expects key 'results.results' (a list of test results), "
                         f"got {got}; is this a promptfoo output.json (results version 3)?")
    row = 0
    for i, res in enumerate(summary["results"]):
        where = f"{p} results.results[{i}]"
        if not isinstance(res, dict):
            raise InputError(f"{where}: expected an object, got {type(res).__name__}")
        for k in ("testIdx", "promptIdx", "provider"):
            if k not in res:
                raise InputError(f"{where}: expects key {k!r}, missing (keys {sorted(res)[:12]})")
        provider = res["provider"]
        provider = (provider.get("label") or provider.get("id")) if isinstance(provider, dict) else provider
        prompt = res.get("prompt")
        response = res.get("response")
        base = {
            "eval_id": doc.get("evalId"), "test_idx": res["testIdx"], "prompt_idx": res["promptIdx"],
            "provider": provider, "grader": _grader(res.get("testCase")),
            "prompt": prompt.get("raw") if isinstance(prompt, dict) else prompt,
            "output": response.get("output") if isinstance(response, dict) else None,
        }
        grading = res.get("gradingResult")
        components = grading.get("componentResults") if isinstance(grading, dict) else None
        if components is None:
            # the call failed before any grade: one record per model-graded assertion the test asked
            # for, with no verdict, so each judge counts the failure instead of losing the call
            tc = res.get("testCase")
            asked = tc.get("assert") if isinstance(tc, dict) else None
            for j, a in enumerate(asked if isinstance(asked, list) else []):
                if isinstance(a, dict) and a.get("type") in MODEL_GRADED:
                    yield row, {**base, "assertion_type": a["type"], "rubric": a.get("value"), "component_idx": j,
                                "pass": None, "score": None, "reason": res.get("error")}
                    row += 1
            continue
        if not isinstance(components, list):
            raise InputError(f"{where}: key 'gradingResult.componentResults' should be a list, "
                             f"got {type(components).__name__}")
        for j, comp in enumerate(components):
            if not isinstance(comp, dict) or not isinstance(comp.get("assertion"), dict):
                raise InputError(f"{where}.gradingResult.componentResults[{j}]: expects an object with key "
                                 f"'assertion', got {str(comp)[:60]!r}")
            kind = comp["assertion"].get("type")
            if kind not in MODEL_GRADED:
                continue
            if "pass" not in comp:
                raise InputError(f"{where}.gradingResult.componentResults[{j}] ({kind}): expects key 'pass', "
                                 f"missing (keys {sorted(comp)[:10]})")
            yield row, {**base, "assertion_type": kind, "rubric": comp["assertion"].get("value"),
                        "component_idx": j, "pass": comp["pass"], "score": comp.get("score"),
                        "reason": comp.get("reason")}
            row += 1
