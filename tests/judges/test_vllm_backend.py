"""The vllm backend's pure logic, and its answer path on a fake ``vllm.LLM`` (no vllm needed)."""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS, make_judge
from judgelab.judges.base import BackendUnavailable
from judgelab.judges.verdict_text import (
    answer_choices,
    choice_spellings,
    format_choice,
    pick_choice,
    request_seed,
)
from judgelab.judges.vllm_backend import (
    NO_ANSWER_TOKEN,
    VLLMJudge,
    read_logit_verdict,
    sampling_kwargs,
    top_logprobs_by_text,
)
from judgelab.parsing import SCORE_IDS, parse, parse_pairwise
from judgelab.records import CallStatus, JudgeRequest, OutputKind


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _req(kind=OutputKind.PAIRWISE, fmt="letter", score_ids="numeric", content="A or B?", **params) -> JudgeRequest:
    return JudgeRequest(messages=[{"role": "user", "content": content}], kind=kind, fmt=fmt,
                        score_ids=score_ids, params=params)


# -- answer_choices ---------------------------------------------------------------------


def test_answer_choices_by_kind():
    assert answer_choices(_req()) == ["A", "B"]
    assert answer_choices(_req(fmt="brackets"), {"logit_choices": ["A", "B", "C"]}) == ["A", "B", "C"]
    assert answer_choices(_req(fmt="json"), {"logit_choices": ["A", "B", "tie"]}) == ["A", "B", "tie"]
    # formats that cannot express a tie drop the tie choice
    assert answer_choices(_req(fmt="letter"), {"logit_choices": ["A", "B", "C"]}) == ["A", "B"]
    assert answer_choices(_req(fmt="output_ab"), {"logit_choices": ["A", "B", "tie"]}) == ["A", "B"]
    for scheme, ids in SCORE_IDS.items():
        assert answer_choices(_req(OutputKind.SCORE, "result", scheme)) == list(ids)
    assert answer_choices(_req(OutputKind.LABEL, "think")) == ["Yes", "No"]
    with pytest.raises(ValueError):
        answer_choices(_req(OutputKind.TEXT, "text"))
    with pytest.raises(ValueError):
        answer_choices(_req(), {"logit_choices": ["A", "X"]})


# -- pick_choice --------------------------------------------------------------------------


def test_pick_choice_argmax_and_merging_spellings():
    top = {"A": -0.9, " B": -0.7, "B": -3.0, "The": -0.1, "\n": -5.0}
    win, scores = pick_choice(top, ["A", "B"])
    assert win == "B"
    assert set(scores) == {"A", "B"}
    assert scores["A"] == pytest.approx(-0.9)
    assert scores["B"] == pytest.approx(math.log(math.exp(-0.7) + math.exp(-3.0)))  # " B" and "B" add up
    assert all(v <= 0 for v in scores.values())


def test_pick_choice_missing_choices_and_ties():
    assert pick_choice({"The": -0.1, "I": -1.0}, ["A", "B"]) == (None, {})
    win, scores = pick_choice({"A": -2.0}, ["A", "B"])
    assert win == "A" and scores == {"A": -2.0}  # an absent choice is left out, not invented
    assert pick_choice({"A": -1.0, "B": -1.0}, ["A", "B"])[0] == "A"  # equal: the earlier choice
    assert pick_choice({"A": -1.0, "B": -1.0}, ["B", "A"])[0] == "B"


def test_pick_choice_with_label_and_tie_spellings():
    sp = choice_spellings(OutputKind.LABEL, ["Yes", "No"])
    win, scores = pick_choice({" yes": -1.2, "Yes": -1.5, "no": -0.9}, ["Yes", "No"], sp)
    assert win == "Yes"
    assert scores["Yes"] == pytest.approx(math.log(math.exp(-1.2) + math.exp(-1.5)))
    sp = choice_spellings(OutputKind.PAIRWISE, ["A", "B", "tie"])
    assert pick_choice({"Tie": -0.2, "A": -2.0}, ["A", "B", "tie"], sp)[0] == "tie"
    # pairwise letters are case-sensitive: "a" is not the answer "A"
    assert pick_choice({"a": -0.1, "B": -3.0}, ["A", "B"], choice_spellings(OutputKind.PAIRWISE, ["A", "B"]))[0] == "B"


# -- format_choice ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,expected", [("letter", "A"), ("brackets", "[[A]]"), ("json", '{"verdict": "A"}'),
                                          ("output_ab", "Output (a)"), ("labelled", "Verdict: A")])
def test_format_choice_pairwise_round_trips(fmt, expected):
    assert format_choice(OutputKind.PAIRWISE, fmt, "numeric", "A") == expected
    for letter in ("A", "B"):
        p = parse_pairwise(format_choice(OutputKind.PAIRWISE, fmt, "numeric", letter), fmt)
        assert (p.value, p.status) == (letter, CallStatus.OK)


def test_format_choice_ties_scores_labels():
    assert format_choice(OutputKind.PAIRWISE, "brackets", "numeric", "C") == "[[C]]"
    assert parse_pairwise(format_choice(OutputKind.PAIRWISE, "json", "numeric", "tie"), "json").value == "tie"
    assert parse_pairwise(format_choice(OutputKind.PAIRWISE, "brackets", "numeric", "tie"), "brackets").value == "tie"
    with pytest.raises(ValueError):
        format_choice(OutputKind.PAIRWISE, "letter", "numeric", "tie")
    for scheme, ids in SCORE_IDS.items():
        for score, sid in enumerate(ids, start=1):
            text = format_choice(OutputKind.SCORE, "result", scheme, sid)
            assert text == f"[RESULT] {sid}"
            p = parse(OutputKind.SCORE, text, score_ids=scheme)
            assert (p.value, p.status) == (score, CallStatus.OK)
    with pytest.raises(ValueError):
        format_choice(OutputKind.SCORE, "result", "numeric", "6")
    assert format_choice(OutputKind.LABEL, "think", "numeric", "Yes") == "<think></think> Yes"
    assert format_choice(OutputKind.LABEL, "word", "numeric", "No") == "No"
    assert format_choice(OutputKind.LABEL, "think", "numeric", "no") == "<think></think> No"
    assert parse(OutputKind.LABEL, "No").value == "no"


# -- sampling parameters and seeds --------------------------------------------------------


def test_sampling_kwargs():
    req = _req()
    assert sampling_kwargs(req, {"temperature": 0.7}, logits_mode=True, logprobs_top=5) == {
        "max_tokens": 1, "temperature": 0.0, "logprobs": 5}
    greedy = sampling_kwargs(req, {"temperature": 0, "max_tokens": 64, "top_k": 40, "api_key": "x"},
                             logits_mode=False)
    assert greedy == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "top_k": 40}  # no seed, no foreign keys
    assert sampling_kwargs(req, {}, logits_mode=False)["max_tokens"] == 256
    hot = sampling_kwargs(req, {"temperature": 0.7, "seed": 3}, logits_mode=False)
    assert hot["seed"] == request_seed(3, req) == sampling_kwargs(req, {"temperature": 0.7, "seed": 3},
                                                                   logits_mode=False)["seed"]
    other = _req(content="something else")
    assert sampling_kwargs(other, {"temperature": 0.7, "seed": 3}, logits_mode=False)["seed"] != hot["seed"]
    # text requests are generated even in logits mode
    text = _req(OutputKind.TEXT, "text")
    assert "logprobs" not in sampling_kwargs(text, {"max_tokens": 9}, logits_mode=True)


# -- top-logprob dicts as vLLM returns them ----------------------------------------------


@dataclass
class Logprob:  # the fields of vllm.sequence.Logprob / vllm.logprobs.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


def test_top_logprobs_by_text_and_read_logit_verdict():
    position = {11: Logprob(-0.5, 1, "B"), 12: Logprob(-1.5, 2, " A"), 13: Logprob(-1.6, 3, "A"),
                14: Logprob(-2.0, 4, None), 15: Logprob(-4.0, 5, "B")}
    top = top_logprobs_by_text(position, decode=lambda tid: {14: "The"}[tid])
    assert top["The"] == -2.0
    assert top["B"] == pytest.approx(math.log(math.exp(-0.5) + math.exp(-4.0)))  # same text, two ids
    text, scores, err = read_logit_verdict(_req(fmt="brackets"), top, ["A", "B"], k=5)
    assert err is None and text == "[[B]]" and set(scores) == {"A", "B"}
    text, scores, err = read_logit_verdict(_req(), {"The": -0.1}, ["A", "B"], k=5)
    assert text is None and scores is None and NO_ANSWER_TOKEN in err


# -- the answer path on a fake engine -------------------------------------------------


@dataclass
class FakeCompletion:
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"
    logprobs: list[dict[int, Logprob]] | None = None


@dataclass
class FakeOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeCompletion] = field(default_factory=list)


class FakeSamplingParams:
    def __init__(self, **kw: Any) -> None:
        self.kw = kw


class FakeLLM:
    """Answers like vllm.LLM.chat: one output per conversation, in order."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def chat(self, conversations, sampling_params, use_tqdm=True, **kw):
        self.calls.append(len(conversations))
        outs = []
        for conv, sp in zip(conversations, sampling_params, strict=True):
            content = conv[-1]["content"]
            if "explode" in content:
                raise ValueError("prompt is longer than the maximum model length")
            n_in = len(content.split())
            if "logprobs" in sp.kw:
                if "nothing" in content:
                    top = {1: Logprob(-0.1, 1, "The")}
                elif "score" in content:
                    top = {1: Logprob(-0.3, 1, "4"), 2: Logprob(-1.9, 2, " 5"), 3: Logprob(-2.5, 3, "3")}
                else:
                    top = {1: Logprob(-0.2, 1, " B"), 2: Logprob(-1.8, 2, " A"), 3: Logprob(-3.0, 3, "The")}
                comp = FakeCompletion(text=top[1].decoded_token, token_ids=[1], finish_reason="length",
                                      logprobs=[top])
            else:
                comp = FakeCompletion(text=f"[[A]] t={sp.kw['temperature']}", token_ids=[5, 6, 7])
            outs.append(FakeOutput(prompt_token_ids=list(range(n_in)), outputs=[comp]))
        return outs


def _fake_judge(tmp_path, **options) -> VLLMJudge:
    spec = JudgeSpec(name="vj", backend="vllm", model=str(tmp_path), sampling={"temperature": 0.0, "seed": 1},
                     options=options)
    judge = VLLMJudge.__new__(VLLMJudge)
    super(VLLMJudge, judge).__init__(spec)
    judge._configure(spec)
    judge._SamplingParams = FakeSamplingParams
    judge.llm = FakeLLM()
    return judge


def test_answer_generate_mode_on_fake_engine(tmp_path):
    judge = _fake_judge(tmp_path)
    assert judge.batch_size == 512
    reqs = [_req(fmt="brackets", content="one two three"), _req(fmt="brackets", content="four", temperature=0.5)]
    a, b = judge.answer(reqs)
    assert judge.llm.calls == [2]  # one batched chat call
    assert (a.text, a.tokens_in, a.tokens_out, a.finish_reason) == ("[[A]] t=0.0", 3, 3, "stop")
    assert b.text == "[[A]] t=0.5" and b.error is None


def test_answer_logits_mode_on_fake_engine(tmp_path):
    judge = _fake_judge(tmp_path, verdict_mode="logits", logprobs_top=3)
    reqs = [_req(fmt="json", content="which is better"),
            _req(OutputKind.SCORE, "result", "numeric", content="score this"),
            _req(content="nothing useful"),
            _req(OutputKind.TEXT, "text", content="write")]
    pair, score, none, text = judge.answer(reqs)
    assert pair.text == '{"verdict": "B"}' and pair.logprobs == pytest.approx({"A": -1.8, "B": -0.2})
    assert parse_pairwise(pair.text, "json").value == "B"
    assert pair.finish_reason == "logits" and pair.tokens_out == 1
    assert score.text == "[RESULT] 4" and set(score.logprobs) == {"3", "4", "5"}
    # neither letter in the top-k: an answer without a verdict, not an error
    assert none.error is None and none.text == "" and NO_ANSWER_TOKEN in none.finish_reason
    assert text.text.startswith("[[A]]") and text.logprobs is None  # text is generated
    assert judge.identity()["verdict_mode"] == "logits"


def test_logit_verdict_without_a_letter_is_counted_unparsed_not_failed(tmp_path):
    """max_error_rate 0 must not fail the rule: the call is answered, unparsed, and cached."""
    from judgelab.cache import CallCache
    from judgelab.judges.runner import run_requests

    judge = _fake_judge(tmp_path, verdict_mode="logits", logprobs_top=3)
    reqs = [_req(fmt="json", content="which is better"), _req(content="nothing useful")]
    with CallCache(tmp_path / "c.sqlite") as cache:
        first = run_requests(judge, reqs, cache, max_error_rate=0.0, progress=False)
        again = run_requests(judge, reqs, cache, max_error_rate=0.0, progress=False)
    assert [r.status.value for r in first] == ["ok", "unparsed"]
    assert [r.status.value for r in again] == ["ok", "unparsed"] and all(r.cached for r in again)


def test_a_failing_request_does_not_sink_its_batch(tmp_path):
    judge = _fake_judge(tmp_path)
    reqs = [_req(content=f"ok {i}") for i in range(5)] + [_req(content="explode")] + [_req(content="ok 9")]
    answers = judge.answer(reqs)
    assert [a.error is None for a in answers] == [True] * 5 + [False, True]
    assert "maximum model length" in answers[5].error


# -- construction ------------------------------------------------------------------------


def test_registered_and_options_validated(tmp_path):
    assert BACKENDS.get("vllm") is VLLMJudge
    with pytest.raises(ConfigError, match="verdict_mode"):
        _fake_judge(tmp_path, verdict_mode="vibes")
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        _fake_judge(tmp_path, gpu_memory_utilization=1.5)
    kw = _fake_judge(tmp_path, verdict_mode="logits", logprobs_top=50, max_model_len=4096).engine_kwargs()
    assert kw["max_logprobs"] == 50 and kw["max_model_len"] == 4096 and kw["enable_prefix_caching"] is True
    assert kw["tensor_parallel_size"] == 1 and kw["gpu_memory_utilization"] == 0.9


def test_missing_checkpoint_is_a_config_error(tmp_path):
    spec = JudgeSpec(name="vj", backend="vllm", model=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="nope"):
        make_judge(spec)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_without_vllm_the_error_says_how_to_install(tmp_path):
    spec = JudgeSpec(name="vj", backend="vllm", model=str(tmp_path))
    with pytest.raises(BackendUnavailable) as e:
        make_judge(spec)
    assert "conda env create -f envs/vllm.yaml" in str(e.value)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
