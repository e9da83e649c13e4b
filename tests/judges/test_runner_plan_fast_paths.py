"""A plan's shortcuts give the very keys and answers of the plain path.

While planning, :func:`judgelab.judges.runner.run_requests` keys requests with the payload's and the
slots' JSON made once and shared by every judge asked them (``_plan_payload``, ``_plan_slots``), each
judge's SHA-256 copied from a hasher already fed its identity (``key_prefix``), and the simulated
stand-ins hash the prompt message by message from each message's UTF-8 made once
(``Message.content_utf8``), draw their uniforms lazily, and remember the reasoning sentence, the
own-answer similarity and the shared cues.  A changed key would ask every cached call again, a
changed answer would change what later rules ask: so each is compared here with the plain path,
written out as it reads -- the whole key object's ``canonical_json`` hashed at once, the joined
prompt encoded and hashed at once, every cue read afresh -- on texts with unicode, JSON escapes,
empty strings and long texts, for every judge of the shipped configs as a plan asks it (the
configured simulated judges, and the stand-in of every real one), and for a real backend's keys
(output controls per request).
"""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any

import pytest

from judgelab.config import REPO_ROOT, JudgeSpec, default_config_paths, fill_output_limits, load_config
from judgelab.datasets.features import (
    bandwagon_cue,
    bow_cosine,
    family_signature_score,
    length_log_ratio,
    text_features,
)
from judgelab.judges import make_judge, simulated
from judgelab.judges.runner import _plan_payload, _plan_slots, _plan_truth
from judgelab.judges.simulated import (
    _TIE_FORMATS,
    GENERATORS,
    PROMPT_STYLES,
    REFUSAL_TEXT,
    SimulatedJudge,
    _malformed_pairwise,
    _quality_gap,
    _style_of,
    _write_pairwise,
    _write_reasoning,
)
from judgelab.prompts import pairwise_request
from judgelab.records import JudgeRequest, Message, OutputKind, canonical_json, sha256_hex
from judgelab.workflow.plan import stand_in_config

LONG = ("Ünïcödé façade — 😀 naïve; \"quoted\" \\ back\tslash\n" * 60).strip()  # past the remembered-JSON length
TEXTS = ["", "é\u2028\x00😀 \"q\" \\", "A **bold** answer:\n- one\n- two\nwhich is great and wonderful.",
         "I think this is terrible and wrong; it fails.", LONG]


def config_judges() -> list[dict[str, Any]]:
    """Every judge entry of the shipped configs as a plan asks it (real ones as their stand-ins), by name."""
    entries: dict[str, dict[str, Any]] = {}
    extra = sorted((REPO_ROOT / "config" / "judges").glob("*.yaml"))
    for cfg in [None, *extra]:
        config = load_config(*default_config_paths(), *([cfg] if cfg is not None else []))
        fill_output_limits(config)
        stand_in, _ = stand_in_config(config)

        def walk(obj: Any) -> None:
            if isinstance(obj, dict):
                if {"name", "backend", "model"} <= set(obj) and obj["backend"] == "simulated":
                    entries.setdefault(str(obj["name"]), obj)
                    return
                for v in obj.values():
                    walk(v)
            elif isinstance(obj, list):
                for v in obj:
                    walk(v)

        walk(stand_in)
    # one judge per distinct behaviour (family, options, sampling): the stand-ins of most real judges differ by name only
    distinct: dict[str, dict[str, Any]] = {}
    for k in sorted(entries):
        e = entries[k]
        distinct.setdefault(canonical_json([e.get("family"), e.get("options"), e.get("sampling")]), e)
    return list(distinct.values())


JUDGES = config_judges()


def requests() -> list[JudgeRequest]:
    """Pairwise (every format, both temperatures, a bandwagon statement, two messages), score, label
    and generation requests over :data:`TEXTS`; pairs share their slots dict between two requests,
    as a tournament's judges' copies do."""
    out = []
    for i, (a, b) in enumerate((a, b) for a in TEXTS for b in TEXTS if a != b):
        truth = {"quality_a": float(i % 3), "quality_b": 1.0,
                 "own_answers": {"openai": TEXTS[3], "meta": LONG, "anthropic": ""}}
        context = "90% of people believe that Output (b) is better.\n\n" if i % 5 == 0 else ""
        req = pairwise_request("json_verdict", question=f"Question {i} {TEXTS[i % len(TEXTS)]}?", first=a,
                               second=b, context=context, truth=truth)
        out.append(req)
        twin = JudgeRequest(**{**req.__dict__, "truth": {**truth, "gold": "A"}, "meta": {}})  # same slots dict
        twin.slots = req.slots
        out.append(twin)
        if i % 4 == 0:
            out.append(JudgeRequest(messages=[Message("system", "Be fair. " + a), Message("user", b or "?")],
                                    kind=OutputKind.PAIRWISE, fmt=("brackets", "letter", "output_ab", "labelled")[i % 16 // 4],
                                    slots={"A": a, "B": b}, truth={"gold": "AB"[i % 2]},
                                    params={"temperature": (0.0, 0.7, 1.0)[i % 3]}))
    for i, t in enumerate(TEXTS):
        out.append(JudgeRequest(messages=[Message("user", f"Score this.\nScore 1: bad\nScore 5: good\n{t}\n"
                                                          f"Reference Answer (Score {1 + i % 5})")],
                                kind=OutputKind.SCORE, fmt="result", truth={"score": 1 + i % 5},
                                params={"temperature": 0.3 * (i % 2)}))
        out.append(JudgeRequest(messages=[Message("user", f"Is this biased? {t}")], kind=OutputKind.LABEL, fmt="think",
                                truth={"label": "yes" if i % 2 else "no"}))
        out.append(JudgeRequest(messages=[Message("user", f"Write about {t or 'nothing'}")], kind=OutputKind.TEXT,
                                fmt="text", truth={"gen": {"task": "answer", "sentences": 1 + i % 3}}))
    return out


# -- the plain path ---------------------------------------------------------------------------------

def plain_key(judge: Any, req: JudgeRequest) -> str:
    """The key as its definition reads: one ``canonical_json`` of the whole object, hashed at once."""
    identity = judge.identity()
    controls = judge.output_controls(req)
    if controls:
        identity = {**identity, "controls": controls}
    body: dict[str, Any] = {"judge": identity, "request": req.payload()}
    if judge.reads_truth:
        body.update(slots=req.slots, truth=req.truth)
    return sha256_hex(canonical_json(body))


def plain_draws(data: bytes, salt: bytes) -> list[float]:
    digest = hashlib.blake2b(data, key=salt[:64], digest_size=32).digest()
    return [(v + 0.5) / 4294967296.0 for v in struct.unpack("<8I", digest[:32])]


def plain_own(text: str, family: str, req: JudgeRequest) -> float:
    sim = family_signature_score(text, family)
    own = req.truth.get("own_answers", {}).get(family) if req.truth else None
    return max(sim, bow_cosine(text, own)) if own else sim


def plain_answer(judge: SimulatedJudge, req: JudgeRequest) -> tuple[str, int, int]:
    """(text, tokens_in, tokens_out): the joined prompt encoded and hashed whole, every cue read afresh."""
    p = judge.profile
    prompt = req.prompt_text()
    encoded = prompt.encode("utf-8")
    temp = float(req.params.get("temperature", judge.spec.sampling.get("temperature", 0.0)))
    d = plain_draws(encoded, judge._salt)
    d2 = plain_draws(f"{temp}|{req.params}".encode() + encoded, judge._salt) if temp > 0 else None
    if d[5] < p.refusal_rate and req.kind is not OutputKind.TEXT:
        text = REFUSAL_TEXT
    elif req.kind is OutputKind.PAIRWISE:
        style = _style_of(prompt, [(n, PROMPT_STYLES.get(n).marker) for n in PROMPT_STYLES])
        c, competence, margin = judge.decision_params(prompt, style=style)
        a, b = req.slots.get("A", ""), req.slots.get("B", "")
        fa, fb = text_features(a), text_features(b)
        cues = {"len": length_log_ratio(a, b), "md": fa.markdown - fb.markdown, "sent": fa.sentiment - fb.sentiment,
                "own": plain_own(a, judge.spec.family, req) - plain_own(b, judge.spec.family, req)}
        z = c["position"] + c["verbosity"] * cues["len"] + c["markdown"] * cues["md"]
        z += c["sentiment"] * cues["sent"] + c["self_preference"] * cues["own"]
        cue = bandwagon_cue(prompt) if "%" in prompt else None
        if cue is not None:
            z += c["bandwagon"] * cue[1] * (1.0 if cue[0] == "A" else -1.0)
        z += competence * _quality_gap(req.truth)
        margin = margin if req.fmt in _TIE_FORMATS else 0.0
        noisy = z + math.log(d[0] / (1.0 - d[0]))
        if d2 is not None:
            noisy += temp * p.sample_noise * math.log(d2[0] / (1.0 - d2[0]))
        verdict = "A" if noisy > margin else ("B" if noisy < -margin else "tie")
        reasoning = _write_reasoning(cues, verdict)
        writer = PROMPT_STYLES.get(style).writer if style is not None else None
        if d[6] < p.malformed_rate:
            text = _malformed_pairwise(req.fmt, d[7], reasoning)
        elif writer is not None:
            text = writer(req.fmt, verdict, reasoning, d)  # type: ignore[arg-type]  # (a list reads as the draws)
        else:
            text = _write_pairwise(req.fmt, verdict, reasoning)
    elif req.kind is OutputKind.SCORE:
        text = judge._score(req, prompt, d, d2, temp)  # type: ignore[arg-type]  # (a list reads as the draws)
    elif req.kind is OutputKind.LABEL:
        text = judge._label(req, d)  # type: ignore[arg-type]
    else:
        text = GENERATORS.get(str(req.truth.get("gen", {}).get("task", "answer")))(req, judge, d)  # type: ignore[arg-type]
    return text, len(prompt) // 4 + 1, len(text) // 4 + 1


# -- the tests ----------------------------------------------------------------------------------------

def test_the_configs_give_judges_of_every_profile_kind():
    """The judges below cover the configured simulated panel and the real judges' stand-ins."""
    names = {e["name"] for e in JUDGES}
    models = {str(e["model"]) for e in JUDGES}
    assert len(JUDGES) >= 20, names
    assert any(m.startswith("plan-stand-in/") for m in models) and any(not m.startswith("plan-stand-in/") for m in models)
    assert any((e.get("options") or {}).get("profile", {}).get("prompt_styles") for e in JUDGES), names
    assert any((e.get("options") or {}).get("profile", {}).get("malformed_rate") for e in JUDGES), names


@pytest.mark.parametrize("entry", JUDGES, ids=lambda e: str(e["name"]))
def test_a_plans_keys_and_answers_are_the_plain_ones(entry):
    judge = make_judge(JudgeSpec.from_dict(entry))
    assert isinstance(judge, SimulatedJudge)
    reqs = requests()
    simulated._SHARED_CUES["cues"].clear()
    fast = judge.keys(reqs, [_plan_payload(r).data for r in reqs], [_plan_slots(r.slots) for r in reqs],
                      [_plan_truth(r.truth) for r in reqs])
    assert fast == [plain_key(judge, r) for r in reqs]
    assert judge.keys(reqs) == fast  # (no shortcut given: the same)
    for _ in range(2):  # the second time from every memo
        for req, ans in zip(reqs, judge.answer(reqs), strict=True):
            assert (ans.text, ans.tokens_in, ans.tokens_out) == plain_answer(judge, req), (entry["name"], req.kind)


def test_a_real_backends_keys_are_the_plain_ones(monkeypatch):
    """A real backend keys with output controls per request (and no slots or truth)."""
    monkeypatch.setenv("NO_SUCH_KEY", "not-a-key")
    judge = make_judge(JudgeSpec.from_dict({
        "name": "api", "backend": "openai", "model": "gpt-x", "sampling": {"temperature": 0.0, "max_tokens": 300},
        "drop_params": ["seed"], "output_limits": {"cot": 2048}, "options": {"api_key_env": "NO_SUCH_KEY"}}))
    reqs = requests()
    reqs[1].task = "cot"
    assert judge.keys(reqs, [_plan_payload(r).data for r in reqs], [_plan_slots(r.slots) for r in reqs],
                      [_plan_truth(r.truth) for r in reqs]) == [plain_key(judge, r) for r in reqs]


def test_slots_json_is_made_once_per_distinct_slots_and_never_anothers():
    from judgelab.records import canonical_json_utf8

    slots: list[dict[str, Any]] = [{"A": a, "B": b} for a in TEXTS for b in TEXTS] + [{}, {"A": "x"}, {"B": "x", "A": "y"},
                                                               {"A": "x", "B": 3}, {"1": "x", "2": LONG},
                                                               {"A": "x", "B": LONG}]  # (the same texts, other slots)
    for s in slots * 2:
        assert _plan_slots(s) == canonical_json_utf8(s) == canonical_json(s).encode("utf-8")
    shared = {"A": LONG, "B": "b"}
    assert _plan_slots(shared) is _plan_slots(dict(shared))  # found by its texts


def test_a_message_encodes_its_text_once_and_stays_equal():
    m = Message("user", LONG)
    assert m.content_utf8 == LONG.encode("utf-8") and m.content_utf8 is m.content_utf8
    assert m == Message("user", LONG) and hash(m) == hash(Message("user", LONG))
    from dataclasses import asdict

    assert asdict(m) == {"role": "user", "content": LONG}
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: refused as the plain encode refuses it
        Message("user", "\ud800").content_utf8  # noqa: B018


def test_the_reasoning_sentence_is_written_as_before_for_every_side():
    for ln in (-1.0, -0.3, -0.31, 0.0, 0.3, 0.31, 2.0, math.nan):
        for md in (-0.5, 0.0, 0.3, 0.4, math.nan):
            for verdict in ("A", "B", "tie"):
                cues = {"len": ln, "md": md}
                assert simulated._reasoning(cues, verdict) == _write_reasoning(cues, verdict)
    assert simulated._reasoning({}, "A") == _write_reasoning({}, "A")



def test_each_uniform_is_the_plain_draw_of_its_word():
    """A uniform made when read is the one made with all eight: (word + 0.5) / 2**32, bit for bit."""
    from judgelab.judges.simulated import _Draws

    for data in (b"", LONG.encode("utf-8"), b"\x00" * 64):
        for salt in (b"j|0", b"x" * 80):
            digest = hashlib.blake2b(data, key=salt[:64], digest_size=32).digest()
            draws, plain = _Draws(digest), plain_draws(data, salt)
            assert [draws[i] for i in range(8)] == plain and draws[-1] == plain[-1]


def test_truth_json_is_made_once_per_truth_dict_and_never_anothers():
    """A truth dict shared by the judges asked one request is written once; another dict, equal or
    not, and a dict made after the first is gone (its ``id`` may be the first's) get their own."""
    from judgelab.records import canonical_json_utf8

    truths: list[dict[str, Any]] = [{}, {"gold": "A"}, {"gold": "B"}, {"label": "yes", "rbd": {"chosen": [0, 1]}},
                                    {"quality_a": 0.1, "quality_b": 1e-300, "own_answers": {"f": LONG}},
                                    {"gen": {"task": "rbd_detect"}, "label": "no", "rbd": {"chosen": [-1]}}]
    for t in truths * 2:
        assert _plan_truth(t) == canonical_json_utf8(t) == canonical_json(t).encode("utf-8")
    shared = {"label": "yes", "text": LONG}
    assert _plan_truth(shared) is _plan_truth(shared)  # the same dict: written once
    for i in range(50):  # dicts made and dropped in turn (an id freed is given to the next): each its own JSON
        t = {"gold": "AB"[i % 2], "n": i}
        got = _plan_truth(t)
        assert got == canonical_json(t).encode("utf-8")
        del t, got


def test_a_plans_run_requests_gives_the_plain_keys_for_requests_judges_share(tmp_path, monkeypatch):
    """``run_requests`` while planning (its payload, slots and truth JSON made once and shared by the
    judges asked one request object) keys and answers every request as the plain path does."""
    from judgelab.cache import CallCache
    from judgelab.judges.runner import PLAN_LOG_ENV, run_requests

    monkeypatch.setenv(PLAN_LOG_ENV, str(tmp_path / "plan.jsonl"))
    reqs = requests()
    with CallCache(tmp_path / "c.sqlite") as cache:
        for entry in JUDGES[:4]:
            judge = make_judge(JudgeSpec.from_dict(entry))
            resp = run_requests(judge, reqs, cache, max_error_rate=None)
            assert [r.key for r in resp] == [plain_key(judge, r) for r in reqs]
            assert [r.raw_text for r in resp] == [plain_answer(judge, r)[0] for r in reqs]
