"""The ``transformers`` backend on a tiny random Llama built offline in the test."""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from judgelab.cache import CallCache  # noqa: E402
from judgelab.config import ConfigError, JudgeSpec  # noqa: E402
from judgelab.judges import make_judge  # noqa: E402
from judgelab.judges.runner import run_requests  # noqa: E402
from judgelab.parsing import parse, parse_pairwise  # noqa: E402
from judgelab.records import CallStatus, JudgeRequest, OutputKind  # noqa: E402

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
SENTENCES = [
    "which response is better A or B",
    "response A is short and response B is long",
    "answer with a single letter A or B",
    "score the response from 1 to 5 [RESULT] 1 2 3 4 5",
    "is the evaluation biased Yes or No",
    "user system assistant : the a is of and to",
]


@pytest.fixture(scope="session", autouse=True)
def _offline():
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield
    if old is None:
        os.environ.pop("HF_HUB_OFFLINE", None)
    else:
        os.environ["HF_HUB_OFFLINE"] = old


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, _offline) -> str:
    """A 2-layer Llama with a word-level tokenizer and a chat template, saved to disk."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    words = sorted({w for s in SENTENCES for w in pre_tokenizers.Whitespace().pre_tokenize_str(s) for w in [w[0]]})
    vocab = {t: i for i, t in enumerate(specials + [w for w in words if w not in specials])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
    )
    hf_tok.chat_template = CHAT_TEMPLATE
    cfg = LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128,
        pad_token_id=vocab["<pad>"], bos_token_id=vocab["<s>"], eos_token_id=vocab["</s>"],
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    hf_tok.save_pretrained(path)
    return str(path)


def _judge(path: str, **options):
    options.setdefault("device", "cpu")
    spec = JudgeSpec(name="tiny", backend="transformers", model=path, sampling={"temperature": 0.0, "max_tokens": 6},
                     options=options)
    return make_judge(spec)


@pytest.fixture(scope="session")
def gen_judge(tiny_checkpoint):
    return _judge(tiny_checkpoint)


@pytest.fixture(scope="session")
def logit_judge(tiny_checkpoint):
    return _judge(tiny_checkpoint, verdict_mode="logits", batch_size=3)


def _pair(text: str, fmt: str = "letter", **params) -> JudgeRequest:
    return JudgeRequest(
        messages=[{"role": "system", "content": "answer with a single letter A or B"},
                  {"role": "user", "content": text}],
        kind=OutputKind.PAIRWISE, fmt=fmt, params=params,
    )


PROMPTS = [
    "which response is better A or B",
    "response A is short and response B is long",
    "response B is long and response A is short which response is better",
    "is the evaluation biased",
]


def test_generate_mode_returns_text_and_token_counts(gen_judge):
    reqs = [_pair(p) for p in PROMPTS]
    answers = gen_judge.answer(reqs)
    assert len(answers) == len(reqs)
    for req, ans in zip(reqs, answers, strict=True):
        assert ans.error is None and isinstance(ans.text, str)
        assert ans.tokens_in == len(gen_judge.prompt_ids(req)) > 0
        assert 1 <= ans.tokens_out <= 6
        assert ans.finish_reason in ("stop", "length")
        assert ans.latency_s >= 0
    assert gen_judge.use_chat_template is True


def test_generate_greedy_is_deterministic_and_batch_independent(gen_judge):
    reqs = [_pair(p) for p in PROMPTS]
    batched = [a.text for a in gen_judge.answer(reqs)]
    again = [a.text for a in gen_judge.answer(reqs)]
    alone = [gen_judge.answer([r])[0].text for r in reqs]
    assert batched == again == alone


def test_sampling_is_seeded_per_request(gen_judge):
    reqs = [_pair(p, temperature=1.0, max_tokens=8) for p in PROMPTS]
    first = [a.text for a in gen_judge.answer(reqs)]
    second = [a.text for a in gen_judge.answer(reqs)]
    alone = [gen_judge.answer([r])[0].text for r in reqs]
    assert first == second == alone
    assert all(a.error is None for a in gen_judge.answer(reqs))


def test_logits_mode_pairwise(logit_judge):
    reqs = [_pair(p) for p in PROMPTS]
    answers = logit_judge.answer(reqs)
    for ans in answers:
        assert ans.error is None
        assert ans.text in ("A", "B")
        assert set(ans.logprobs) == {"A", "B"}
        assert all(v <= 0.0 and math.isfinite(v) for v in ans.logprobs.values())
        assert ans.text == max(ans.logprobs, key=ans.logprobs.get)
        assert sum(math.exp(v) for v in ans.logprobs.values()) <= 1.0 + 1e-6
        assert ans.finish_reason == "logits" and ans.tokens_in > 0
    # same request twice, and alone vs. in a batch: same verdict, (almost) same logprobs
    again = logit_judge.answer(reqs)
    alone = [logit_judge.answer([r])[0] for r in reqs]
    for a, b, c in zip(answers, again, alone, strict=True):
        assert a.text == b.text == c.text
        assert a.logprobs == b.logprobs
        for k in a.logprobs:
            assert a.logprobs[k] == pytest.approx(c.logprobs[k], abs=1e-4)


@pytest.mark.parametrize("fmt", ["letter", "brackets", "json", "output_ab"])
def test_logits_text_parses_back_in_every_format(logit_judge, fmt):
    letter_answers = logit_judge.answer([_pair(p, "letter") for p in PROMPTS])
    answers = logit_judge.answer([_pair(p, fmt) for p in PROMPTS])
    for ref, ans in zip(letter_answers, answers, strict=True):
        parsed = parse_pairwise(ans.text, fmt)
        assert parsed.status is CallStatus.OK
        assert parsed.value == ref.text  # same letter whatever the format
        assert ans.logprobs == pytest.approx(ref.logprobs)


def test_logits_mode_scores_labels_and_text(logit_judge):
    score = JudgeRequest(messages=[{"role": "user", "content": "score the response from 1 to 5"}],
                         kind=OutputKind.SCORE, fmt="result", score_ids="numeric")
    label = JudgeRequest(messages=[{"role": "user", "content": "is the evaluation biased Yes or No"}],
                         kind=OutputKind.LABEL, fmt="think")
    text = JudgeRequest(messages=[{"role": "user", "content": "which response is better"}],
                        kind=OutputKind.TEXT, fmt="text", params={"max_tokens": 3})
    s, lab, t = logit_judge.answer([score, label, text])
    assert s.error is None and s.text.startswith("[RESULT] ")
    assert set(s.logprobs) == {"1", "2", "3", "4", "5"}
    assert parse(OutputKind.SCORE, s.text, score_ids="numeric").value == int(max(s.logprobs, key=s.logprobs.get))
    assert lab.error is None and lab.text in ("<think></think> Yes", "<think></think> No")
    assert set(lab.logprobs) == {"Yes", "No"}
    got = parse(OutputKind.LABEL, lab.text, fmt="think")
    assert got.value == max(lab.logprobs, key=lab.logprobs.get).lower() and got.status.value == "ok"
    assert t.error is None and t.logprobs is None and 1 <= t.tokens_out <= 3  # text is always generated


def test_unreadable_choice_and_too_long_input_are_per_request_errors(logit_judge):
    roman = JudgeRequest(messages=[{"role": "user", "content": "score the response"}],
                         kind=OutputKind.SCORE, fmt="result", score_ids="roman")  # not in the vocabulary
    too_long = _pair(" ".join(["response"] * 200))
    ok = _pair(PROMPTS[0])
    a, b, c = logit_judge.answer([roman, too_long, ok])
    assert a.text is None and "no next token of its own" in a.error
    assert b.text is None and "exceeds the model's context" in b.error
    assert c.error is None and c.text in ("A", "B")


def test_runner_caches_answers(tiny_checkpoint, tmp_path):
    judge = _judge(tiny_checkpoint, verdict_mode="logits")
    reqs = [_pair(p) for p in PROMPTS] + [_pair(PROMPTS[0])]  # a duplicate is asked once
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = run_requests(judge, reqs, cache, progress=False)
        assert [r.status for r in first] == [CallStatus.OK] * len(reqs)
        assert not any(r.cached for r in first)
        assert len(cache) == len(PROMPTS)
        second = run_requests(judge, reqs, cache, progress=False)
    assert all(r.cached for r in second)
    assert [r.value for r in first] == [r.value for r in second]
    assert [r.logprobs for r in first] == [r.logprobs for r in second]
    # the verdict mode is part of the key: a generating judge does not reuse logit answers
    gen = _judge(tiny_checkpoint)
    assert gen.key(reqs[0]) != judge.key(reqs[0])


def test_plain_prompt_without_chat_template(tiny_checkpoint):
    judge = _judge(tiny_checkpoint, chat_template=False)
    assert judge.use_chat_template is False
    ans = judge.answer([_pair(PROMPTS[0])])[0]
    assert ans.error is None and ans.tokens_in > 0


def test_missing_checkpoint_is_a_config_error(tmp_path):
    missing = str(tmp_path / "no-such-checkpoint")
    with pytest.raises(ConfigError, match="tiny") as e:
        _judge(missing)
    assert missing in str(e.value)


def test_bad_options_are_config_errors(tiny_checkpoint):
    with pytest.raises(ConfigError, match="verdict_mode"):
        _judge(tiny_checkpoint, verdict_mode="vibes")
    with pytest.raises(ConfigError, match="dtype"):
        _judge(tiny_checkpoint, dtype="float8")
    with pytest.raises(ConfigError, match="logit_choices"):
        _judge(tiny_checkpoint, logit_choices=["A", "X"])


def test_without_torch_the_error_says_how_to_install(tiny_checkpoint, monkeypatch):
    import sys

    from judgelab.judges.base import BackendUnavailable

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(BackendUnavailable) as e:
        _judge(tiny_checkpoint)
    assert "pip install 'judgelab[train]'" in str(e.value)


def test_unknown_option_is_rejected_naming_judge_and_option(tiny_checkpoint):
    with pytest.raises(ConfigError) as e:
        _judge(tiny_checkpoint, verdict_mod="logits")  # misspelt: must not silently generate
    assert "'tiny'" in str(e.value) and "verdict_mod" in str(e.value) and "transformers" in str(e.value)


def test_model_locations_gguf_and_packages(tmp_path):
    from judgelab.judges.base import BackendUnavailable
    from judgelab.judges.transformers_backend import resolve_checkpoint

    def spec(model):
        return JudgeSpec(name="loc", backend="transformers", model=model)

    (tmp_path / "m.Q4.gguf").write_bytes(b"GGUF")
    assert resolve_checkpoint(spec(str(tmp_path / "m.Q4.gguf"))) == (str(tmp_path), "m.Q4.gguf")
    assert resolve_checkpoint(spec(str(tmp_path)), "m.Q4.gguf") == (str(tmp_path), "m.Q4.gguf")
    with pytest.raises(ConfigError, match=r"gguf_file 'other.gguf' is not in .*m\.Q4\.gguf"):
        resolve_checkpoint(spec(str(tmp_path)), "other.gguf")
    assert resolve_checkpoint(spec("org/model")) == ("org/model", None)
    # pkg:<package> is the installed package's directory, found without importing it
    assert resolve_checkpoint(spec("pkg:judgelab"))[0] == os.path.dirname(os.path.abspath(
        __import__("judgelab").__file__))
    with pytest.raises(BackendUnavailable, match=r"no_such_model_pkg.*not installed"):
        resolve_checkpoint(spec("pkg:no_such_model_pkg"))


def test_gguf_option_must_name_a_gguf_file(tiny_checkpoint):
    with pytest.raises(ConfigError, match=r"gguf_file must name a \.gguf file"):
        _judge(tiny_checkpoint, gguf_file="model.safetensors")
    with pytest.raises(ConfigError, match="num_threads"):
        _judge(tiny_checkpoint, num_threads=0)


def test_judges_on_one_checkpoint_share_its_weights(tiny_checkpoint):
    import gc

    from judgelab.judges import transformers_backend as tb

    a = _judge(tiny_checkpoint, chat_template=False)
    b = _judge(tiny_checkpoint, verdict_mode="logits", chat_template=False)
    assert a.model is b.model and a.tokenizer is b.tokenizer
    n = len(tb._LOADED)
    a.close()
    b.close()
    del a, b
    gc.collect()
    # a session fixture may still hold the same checkpoint; otherwise the entry is gone
    assert len(tb._LOADED) <= n


def test_each_request_gets_its_task_output_limit(tiny_checkpoint):
    """max_tokens comes from the request's task (output_limits), not one judge-wide value."""
    spec = JudgeSpec(name="tiny", backend="transformers", model=tiny_checkpoint,
                     sampling={"temperature": 0.0, "max_tokens": 6},
                     output_limits={"verdict": 2, "generation": 9}, options={"device": "cpu"})
    judge = make_judge(spec)
    text = JudgeRequest(messages=[{"role": "user", "content": PROMPTS[0]}], kind=OutputKind.TEXT, fmt="text")
    verdict, gen = judge.answer([_pair(PROMPTS[0]), text])
    assert verdict.error is None and gen.error is None
    assert verdict.tokens_out <= 2
    assert gen.tokens_out <= 9
    # a random tiny model never emits eos this early: it runs to each limit
    assert (verdict.tokens_out, gen.tokens_out) == (2, 9) or "stop" in (verdict.finish_reason, gen.finish_reason)


def test_a_fully_cached_rerun_never_loads_the_weights(tiny_checkpoint, tmp_path):
    first = _judge(tiny_checkpoint, dtype="float32")
    # same identity (local_files_only is not part of it), but its own load: weights not shared
    second = _judge(tiny_checkpoint, dtype="float32", local_files_only=True)
    reqs = [_pair(p) for p in PROMPTS]
    with CallCache(tmp_path / "calls.sqlite") as cache:
        asked = run_requests(first, reqs, cache)
        assert first._loaded._model is not None
        assert second._loaded is not first._loaded and second._loaded._model is None
        again = run_requests(second, reqs, cache)
    assert all(r.cached for r in again) and [r.raw_text for r in again] == [r.raw_text for r in asked]
    assert second._loaded._model is None  # keys and prompts needed only the tokenizer
    assert second.answer([reqs[0]])[0].error is None and second._loaded._model is not None
