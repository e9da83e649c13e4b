"""Batching of the ``transformers`` judge: length-sorted device batches, answers and keys unchanged.

The judge sorts the requests it is handed by prompt length and cuts them into batches by
count (``batch_size``) and padded tokens (``max_batch_tokens``).  None of that may change
an answer or a cache key: the same requests give the same verdicts, logprobs (to float
noise from padding) and generated text for batch sizes 1, 7 and 64, under a token budget,
and in any order.  Sampling at temperature > 0 runs on the device, one seeded stream of
uniforms per request; its draws must follow the tempered, top-k / top-p cut distribution.
"""

from __future__ import annotations

import itertools
import math
import os
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from judgelab.cache import CallCache  # noqa: E402
from judgelab.config import ConfigError, JudgeSpec  # noqa: E402
from judgelab.judges import make_judge  # noqa: E402
from judgelab.judges.runner import run_requests  # noqa: E402
from judgelab.judges.transformers_backend import HANDOVER_BATCHES, _SeededSampler, plan_batches  # noqa: E402
from judgelab.records import CallStatus, JudgeRequest, OutputKind  # noqa: E402

WORDS = ("which response is better A or B the answer short long correct wrong helpful "
         "clear first second score 1 2 3 4 5 Yes No judge says because").split()
TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    """A 2-layer random Llama with a word-level tokenizer (every word one token), on disk."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(set(WORDS) | {"user", "assistant", ":"}))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>",
                                     bos_token="<s>", eos_token="</s>")
    hf_tok.chat_template = TEMPLATE
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      pad_token_id=0, bos_token_id=2, eos_token_id=3)
    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("batching-llama")
    LlamaForCausalLM(cfg).save_pretrained(path)
    hf_tok.save_pretrained(path)
    return str(path)


def judge(path: str, *, temperature: float = 0.0, **options):
    spec = JudgeSpec(name="tiny", backend="transformers", model=path,
                     sampling={"temperature": temperature, "max_tokens": 5, "seed": 3},
                     options={"device": "cpu", **options})
    return make_judge(spec)


def requests(n: int = 40, seed: int = 0) -> list[JudgeRequest]:
    """Pairwise and score requests of prompts from 3 to ~70 words (very unequal lengths)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 70)))
        if i % 4 == 3:
            out.append(JudgeRequest(messages=[{"role": "user", "content": text}], kind=OutputKind.SCORE,
                                    fmt="result", score_ids="numeric"))
        else:
            out.append(JudgeRequest(messages=[{"role": "user", "content": text}], kind=OutputKind.PAIRWISE,
                                    fmt="letter"))
    return out


SETTINGS = [{"batch_size": 1}, {"batch_size": 7}, {"batch_size": 64}, {"batch_size": 64, "max_batch_tokens": 200}]


def _answers_in_order(j, reqs: list[JudgeRequest], order: list[int]):
    """Answers of ``reqs`` asked in ``order`` (in runner-sized hand-overs), put back in ``reqs`` order."""
    asked = [reqs[i] for i in order]
    got = []
    for start in range(0, len(asked), j.batch_size):
        got += j.answer(asked[start:start + j.batch_size])
    back = [None] * len(reqs)
    for pos, i in enumerate(order):
        back[i] = got[pos]
    return back


@pytest.mark.parametrize("mode", ["logits", "generate"])
def test_same_answers_for_every_batch_size_and_request_order(checkpoint, mode):
    reqs = requests(32 if mode == "logits" else 16)
    ident = list(range(len(reqs)))
    shuffled = ident[:]
    random.Random(5).shuffle(shuffled)
    runs = []
    for opts in SETTINGS:
        j = judge(checkpoint, verdict_mode=mode, **opts)
        for order in ((ident,) if opts["batch_size"] == 1 else (ident, shuffled)):  # batch 1: order is moot
            runs.append((opts, order is shuffled, _answers_in_order(j, reqs, order)))
    ref = runs[0][2]
    assert all(a.error is None for a in ref)
    assert len({a.text for a in ref}) > 1  # the random model does not answer everything alike
    for opts, shuf, answers in runs[1:]:
        assert [a.text for a in answers] == [a.text for a in ref], (opts, shuf)
        assert [a.tokens_in for a in answers] == [a.tokens_in for a in ref]
        if mode == "logits":
            for a, r in zip(answers, ref, strict=True):
                assert a.logprobs.keys() == r.logprobs.keys()
                for k in r.logprobs:  # padding may change the float sums, never the verdict
                    assert a.logprobs[k] == pytest.approx(r.logprobs[k], abs=1e-4)


def test_sampled_answers_do_not_depend_on_batch_or_order_and_follow_the_seed(checkpoint):
    reqs = requests(12, seed=2)
    ident = list(range(len(reqs)))
    rev = ident[::-1]
    texts = []
    for opts in SETTINGS[:3]:
        j = judge(checkpoint, temperature=1.0, **opts)
        orders = (ident,) if opts["batch_size"] == 1 else (ident, rev)
        texts += [[a.text for a in _answers_in_order(j, reqs, order)] for order in orders]
    assert all(t == texts[0] for t in texts)
    greedy = [a.text for a in judge(checkpoint).answer(reqs)]
    assert texts[0] != greedy  # temperature 1 on a random model does sample
    other_seed = make_judge(JudgeSpec(name="tiny", backend="transformers", model=checkpoint,
                                      sampling={"temperature": 1.0, "max_tokens": 5, "seed": 4},
                                      options={"device": "cpu"}))
    assert [a.text for a in other_seed.answer(reqs)] != texts[0]


def test_cache_keys_and_cached_results_ignore_batch_settings(checkpoint, tmp_path):
    reqs = requests(16, seed=3)
    small, big = judge(checkpoint, verdict_mode="logits", batch_size=1), judge(
        checkpoint, verdict_mode="logits", batch_size=64, max_batch_tokens=300)
    assert [small.key(r) for r in reqs] == [big.key(r) for r in reqs]
    with CallCache(tmp_path / "a.sqlite") as a, CallCache(tmp_path / "b.sqlite") as b:
        one = run_requests(small, reqs, a, progress=False)
        two = run_requests(big, reqs, b, progress=False)
        assert [r.status for r in one] == [CallStatus.OK] * len(reqs)
        assert [(r.key, r.value, r.raw_text) for r in one] == [(r.key, r.value, r.raw_text) for r in two]
        again = run_requests(big, reqs, a, progress=False)  # the other judge's cache answers it all
        assert all(r.cached for r in again)


def test_device_batches_respect_count_and_token_budget(checkpoint, monkeypatch):
    j = judge(checkpoint, verdict_mode="logits", batch_size=16, max_batch_tokens=400)
    assert j.batch_size == 16 * HANDOVER_BATCHES  # the runner hands over a sorting window
    shapes = []
    real = j._forward_last

    def spy(seqs, keep=None):
        shapes.append((len(seqs), max(len(s) for s in seqs)))
        return real(seqs, keep)

    monkeypatch.setattr(j, "_forward_last", spy)
    reqs = requests(60, seed=4)
    assert all(a.error is None for a in j.answer(reqs))
    assert sum(n for n, _ in shapes) == len(reqs)
    assert all(n <= 16 and (n == 1 or n * w <= 400) for n, w in shapes)
    widths = [w for _, w in shapes]
    assert widths == sorted(widths, reverse=True)  # longest first
    assert max(n for n, _ in shapes) > min(n for n, _ in shapes)  # short prompts travel in bigger batches


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(1, 300), max_size=60), rows=st.integers(1, 20),
       budget=st.one_of(st.none(), st.integers(1, 3000)), extra=st.integers(0, 50))
def test_plan_batches_covers_each_request_once_within_limits(lengths, rows, budget, extra):
    plan = plan_batches(lengths, rows, budget, extra=extra)
    assert sorted(i for b in plan for i in b) == list(range(len(lengths)))
    flat = [i for b in plan for i in b]
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for b in plan:
        width = max(lengths[i] for i in b) + extra
        assert len(b) <= rows
        assert budget is None or len(b) == 1 or len(b) * width <= budget
    for b, nxt in itertools.pairwise(plan):  # a batch closes only when the next request would not fit
        width = max(lengths[i] for i in b + nxt[:1]) + extra
        assert len(b) == rows or (budget is not None and (len(b) + 1) * width > budget)
    ties = plan_batches([5, 5, 5, 5], 3)
    assert ties == [[0, 1, 2], [3]]  # stable: equal lengths keep request order


def test_batch_options_are_validated(checkpoint):
    for bad in ({"max_batch_tokens": 0}, {"max_batch_tokens": "lots"}, {"batch_size": 0}, {"batch_size": True}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            judge(checkpoint, **bad)


def _sampler_draws(logits: list[float], n: int, *, temp: float = 1.0, top_p: float = 1.0, top_k: int = 0):
    """``n`` first-step draws from the device sampler, one row (own seed) per draw."""
    scores = torch.tensor([logits] * n)
    s = _SeededSampler(torch, list(range(n)), [temp] * n, [top_p] * n, [top_k] * n, prompt_width=1, max_new=1)
    out = s(torch.zeros((n, 1), dtype=torch.long), scores)
    assert torch.isfinite(out).sum(-1).eq(1).all()  # exactly one finite token per row
    return torch.bincount(out.argmax(-1), minlength=len(logits)).double() / n


@pytest.mark.parametrize(("temp", "top_p", "top_k"), [(1.0, 1.0, 0), (0.5, 1.0, 0), (2.0, 1.0, 3), (1.0, 0.8, 0)])
def test_device_sampler_follows_the_cut_distribution(temp, top_p, top_k):
    logits = [2.0, 1.5, 1.0, 0.0, -1.0, -3.0]
    n = 20000
    freq = _sampler_draws(logits, n, temp=temp, top_p=top_p, top_k=top_k)
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64) / temp, -1)
    if top_k:
        p[top_k:] = 0
    if top_p < 1:
        keep = (p.cumsum(0) - p) < top_p
        p = torch.where(keep, p, 0)
    p = p / p.sum()
    assert freq[p == 0].sum() == 0  # nothing outside top-k / the nucleus
    se = (p * (1 - p) / n).sqrt()
    assert ((freq - p).abs() <= 5 * se + 1e-12).all(), (freq.tolist(), p.tolist())


def test_device_sampler_greedy_rows_take_the_arg_max_beside_sampled_rows():
    scores = torch.tensor([[0.0, 3.0, 1.0, 0.5], [0.0, 0.0, 0.0, 0.0], [5.0, -1.0, 0.0, 0.5]])
    steps = 8
    s = _SeededSampler(torch, [1, 2, 3], [0.0, 1.0, 0.0], [1.0] * 3, [0] * 3, prompt_width=2, max_new=steps)
    picks = []
    for step in range(steps):
        out = s(torch.zeros((3, 2 + step), dtype=torch.long), scores)
        picks.append(out.argmax(-1).tolist())
    assert all(p[0] == 1 and p[2] == 0 for p in picks)
    # the sampled row (flat: every token 1/4) reads its own uniform of each step, in order
    u = torch.rand(steps, generator=torch.Generator().manual_seed(2))
    assert [p[1] for p in picks] == [min(3, int(x * 4)) for x in u.tolist()]
    assert len({p[1] for p in picks}) > 1
    assert math.isclose(float(torch.softmax(scores[1], -1).sum()), 1.0, rel_tol=1e-6)


def test_generation_batches_count_the_new_tokens_in_the_budget(checkpoint, monkeypatch):
    """Generation mode: a batch of n prompts grows to n x (longest prompt + new tokens); the budget
    holds for that, not for the prompts alone (a planner that forgets the new tokens packs rows the
    device cannot hold once generation runs)."""
    max_new = 40  # long answers next to short prompts: the new tokens dominate the budget
    j = make_judge(JudgeSpec(name="tiny", backend="transformers", model=checkpoint,
                             sampling={"temperature": 0.0, "max_tokens": max_new, "seed": 3},
                             options={"device": "cpu", "verdict_mode": "generate", "batch_size": 16,
                                      "max_batch_tokens": 400}))
    shapes = []
    real = j._generate_batch

    def spy(reqs, chunk, n):
        shapes.append((len(chunk), max(len(ids) for _, ids in chunk), n))
        return real(reqs, chunk, n)

    monkeypatch.setattr(j, "_generate_batch", spy)
    reqs = requests(24, seed=5)
    assert all(a.error is None for a in j.answer(reqs))
    assert sum(n for n, _, _ in shapes) == len(reqs) and all(n_new == max_new for *_, n_new in shapes)
    assert all(n == 1 or n * (w + max_new) <= 400 for n, w, _ in shapes)
    # the budget binds here: the prompts alone would travel in fewer, fuller batches
    lengths = [len(j.prompt_ids(r)) for r in reqs]
    assert len(plan_batches(lengths, 16, 400)) < len(shapes) == len(plan_batches(lengths, 16, 400, extra=max_new))
