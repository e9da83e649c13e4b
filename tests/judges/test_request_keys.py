"""Cache keys and the shortcuts a plan takes to compute them quickly.

A key is ``sha256(canonical_json({"judge": identity, "request": payload[, "slots", "truth"]}))``;
it is written part by part (the payload's JSON once per request, long texts escaped once), and
each shortcut must give the very same string: a changed key would ask every cached call again.
Also: a verdict parsed once per distinct answer equals the verdict parsed anew.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.judges.runner import parse_answer
from judgelab.records import (
    JudgeRequest,
    Message,
    OutputKind,
    canonical_json,
    canonical_json_utf8,
    sha256_hex,
)

# texts both short and past the length from which their JSON is remembered, with characters JSON escapes
_TEXT = st.text(alphabet=st.sampled_from('ab é"\\\n\t\x00\u2028😀<'), max_size=400)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True), _TEXT)
_KEY = st.one_of(_TEXT, st.integers(0, 5))  # integer keys: JSON writes them as strings, unsorted with str keys
_JSONISH = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(_KEY, inner, max_size=4)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_JSONISH)
def test_texts_json_is_canonical_json(obj):
    try:
        expected = canonical_json(obj).encode("utf-8")
    except (TypeError, ValueError):  # mixed int/str keys cannot be sorted: the shortcut raises alike
        with pytest.raises((TypeError, ValueError)):
            canonical_json_utf8(obj)
        return
    assert canonical_json_utf8(obj) == expected
    assert canonical_json_utf8(obj) == expected  # a second time: from the remembered texts


def test_texts_json_writes_every_scalar_as_json_does():
    scalars = [None, True, False, 0, -7, 10**30, 0.0, -0.0, 1e16, 1.5e-7, 5e-324, math.inf, -math.inf, math.nan,
               "", "é\n\"", "x" * 300 + "\u2028\x00"]
    obj = {f"k{i}": v for i, v in enumerate(scalars)} | {"list": scalars}
    assert canonical_json_utf8(obj) == canonical_json(obj).encode("utf-8")


def test_texts_json_leaves_subclasses_and_numpy_to_json():
    import numpy as np

    obj = {"kind": OutputKind.PAIRWISE, "q": np.float64(0.25), "n": np.int64(3), "t": ("a" * 300, 1),
           "f": math.inf}
    assert canonical_json_utf8(obj) == canonical_json(obj).encode("utf-8")


def _old_key(req: JudgeRequest, identity: dict, include_truth: bool) -> str:
    """The key as it was written before: one canonical_json of the whole body."""
    body = {"judge": identity, "request": req.payload()}
    if include_truth:
        body["truth"] = req.truth
        body["slots"] = req.slots
    return sha256_hex(canonical_json(body))


@settings(max_examples=100, deadline=None)
@given(content=_TEXT, a=_TEXT, b=_TEXT, truth=st.dictionaries(st.text(max_size=5), _JSONISH, max_size=3),
       params=st.dictionaries(st.sampled_from(["temperature", "max_tokens", "seed"]), _SCALAR, max_size=2),
       task=st.sampled_from([None, "cot", "verdict"]), json_mode=st.booleans(),
       include_truth=st.booleans())
def test_a_key_written_part_by_part_is_the_key(content, a, b, truth, params, task, json_mode, include_truth):
    req = JudgeRequest(messages=[Message("system", "be fair"), Message("user", content or "x")], fmt="json",
                       params=params, slots={"A": a, "B": b}, truth=truth, task=task, json_mode=json_mode)
    identity = {"backend": "simulated", "model": "m", "sampling": {"temperature": 0.0}, "name": "j",
                "options": {"profile": {"scores": {"1": 0.5}}}}
    try:
        old = _old_key(req, identity, include_truth)
    except TypeError:  # mixed int and str keys cannot be sorted: the key raises alike
        with pytest.raises(TypeError):
            req.key(identity, include_truth=include_truth)
        return
    assert req.key(identity, include_truth=include_truth) == old
    payload = canonical_json(req.payload()).encode("utf-8")
    assert req.key(identity, include_truth=include_truth, payload_utf8=payload) == old


def test_a_verdict_parsed_once_per_answer_equals_a_fresh_parse():
    from judgelab.parsing import parse

    texts = ['{"reasoning": "A is better", "verdict": "A"}', "I think [[B]]", "<think>[[A]]</think> [[B]]",
             "Feedback: fine [RESULT] 4", None, ""]
    for fmt, kind in (("json", OutputKind.PAIRWISE), ("brackets", OutputKind.PAIRWISE), ("result", OutputKind.SCORE)):
        req = JudgeRequest(messages=[Message("user", "q")], kind=kind, fmt=fmt)
        for t in texts * 2:
            fresh = parse(kind, t.split("</think>")[-1] if t and "</think>" in t else t, fmt=fmt)
            assert parse_answer(req, t) == fresh


def test_a_plan_makes_each_payloads_json_once_and_tells_payloads_apart():
    """The plan's memo of payload JSON (shared between judges) gives each request its own
    payload's bytes and hash, and never another request's: every field of the payload counts."""
    from judgelab.judges.runner import _plan_payload

    base = dict(messages=[Message("system", "s"), Message("user", "a long question " * 40)], fmt="json")
    variants = [JudgeRequest(**base), JudgeRequest(**base, params={"temperature": 0.7}),
                JudgeRequest(**base, task="cot"), JudgeRequest(**base, json_mode=True),
                JudgeRequest(**{**base, "fmt": "brackets"}), JudgeRequest(**base, kind=OutputKind.SCORE),
                JudgeRequest(**base, score_ids="roman"),
                JudgeRequest(messages=[Message("user", "s"), Message("user", "a long question " * 40)], fmt="json"),
                JudgeRequest(**base, truth={"gold": "A"}, meta={"i": 1})]  # truth and meta: not in the payload
    got = [_plan_payload(r) for r in variants]
    for r, planned in zip(variants, got, strict=True):
        assert planned.data == canonical_json(r.payload()).encode("utf-8")
        assert planned.sha == sha256_hex(canonical_json(r.payload()))
        assert planned.payload == r.payload()
        logged = json.loads("{" + planned.log_fields + "}")
        assert logged == {"payload_sha": planned.sha, "task": r.output_task,
                          "max_tokens_param": r.params.get("max_tokens"), "chars_in": len(r.prompt_text())}
    assert len({p.sha for p in got}) == len(variants) - 1  # only the last repeats the first payload
    assert got[-1] is got[0]


@pytest.mark.parametrize("entry", [
    {"name": "sim", "backend": "simulated", "model": "m", "family": "openai", "sampling": {"temperature": 0.0}},
    {"name": "api", "backend": "openai", "model": "gpt-x", "sampling": {"temperature": 0.0, "max_tokens": 300},
     "drop_params": ["seed"], "output_limits": {"cot": 2048}, "options": {"api_key_env": "NO_SUCH_KEY"}},
])
def test_a_batch_of_keys_is_each_requests_key(entry, monkeypatch):
    """``Judge.keys`` (the identity made once per batch) gives each request's own ``Judge.key``:
    with output controls that differ by request (a real backend) and with truth in the key (simulated)."""
    from judgelab.config import JudgeSpec
    from judgelab.judges import make_judge
    from judgelab.judges.runner import _plan_payload

    monkeypatch.setenv("NO_SUCH_KEY", "not-a-key")  # (the judge is built, never asked)
    judge = make_judge(JudgeSpec.from_dict(entry))
    reqs = [JudgeRequest(messages=[Message("user", f"q{i} " * (i * 40))], fmt="json", task=task, params=params,
                         slots={"A": "a" * i, "B": "b"}, truth={"gold": "A", "i": i})
            for i, (task, params) in enumerate([(None, {}), ("cot", {}), ("verdict", {"max_tokens": 17}),
                                                (None, {"temperature": 0.5}), ("cot", {})])]
    one_by_one = [judge.key(r) for r in reqs]
    assert judge.keys(reqs) == one_by_one
    assert judge.keys(reqs, [_plan_payload(r).data for r in reqs]) == one_by_one
    assert len(set(one_by_one)) == len(reqs)
    if entry["backend"] == "openai":  # the controls are in the key: the cot request is keyed apart from its twin
        assert judge.output_controls(reqs[1]) != judge.output_controls(reqs[0])
