"""Detector training as paper 001 ran it: mixed precision, bucketed micro-batches, memory guard.

The regression of issue #20: ``method: full`` with ``dtype: bfloat16`` at the paper's learning
rate (1e-5) used to step AdamW on bf16 weights, where most updates fall below bf16's resolution
and round to nothing (17.3 % of a layer's weights changed, 15 % of an fp32 run's loss drop, on
this tiny model).  With fp32 master weights and bf16 autocast the run must move (nearly) every
weight and lower the loss as an fp32 run does.  Besides: gradient accumulation weighs every
target token equally (equal to one big batch); the batched validation loss equals the
per-example loop; length bucketing covers every example once per epoch; determinism only when
asked; gradient checkpointing changes memory, not results; the memory estimate stops a run that
cannot fit with a message naming what would.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from judgelab.config import ConfigError  # noqa: E402
from judgelab.rbd import train as T  # noqa: E402
from judgelab.rbd.train import (  # noqa: E402
    ModelShape,
    TrainConfig,
    backward_window,
    build_tiny_llama,
    causal_examples,
    check_memory,
    encode_examples,
    epoch_micro_batches,
    estimate_memory,
    eval_loss,
    load_for_training,
    meta_shape,
    pack_by_length,
    train_into,
    train_steps,
)
from tests.rbd.test_train import traces  # noqa: E402

TINY = {"vocab_size": 400, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "max_position_embeddings": 1024}
Q0 = "model.layers.0.self_attn.q_proj.weight"


def cfg_of(**kw) -> TrainConfig:
    return TrainConfig.from_dict({"max_words": 12, "seed": 3, "tiny": TINY, **kw}, where="test")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny base checkpoint, its tokenizer and 24 encoded training examples."""
    from transformers import AutoTokenizer

    tr = traces(24)
    tr["reasoning"] = [r + " It weighed the evidence again." * (i % 4) for i, r in enumerate(tr["reasoning"])]
    ex = causal_examples(tr, 12)  # targets of unequal length
    base = build_tiny_llama(tmp_path_factory.mktemp("base"), [e.prompt + " " + e.target for e in ex], seed=3, **TINY)
    tok = AutoTokenizer.from_pretrained(base)
    return str(base), tok, ex, encode_examples(tok, ex, cfg_of())


def _run_full(ex, dtype, tmp_path, **kw):
    """method full at the paper's lr, every step on all 24 traces (so the loss rows are comparable)."""
    from safetensors.torch import load_file

    cfg = cfg_of(method="full", dtype=dtype, learning_rate=1e-5, max_steps=5, batch_size=24, warmup_ratio=0.0, **kw)
    res = train_into(ex, cfg, tmp_path / dtype)
    base = load_file(str(res.run_dir / "base" / "model.safetensors"))[Q0]
    got = load_file(str(res.run_dir / "merged" / "model.safetensors"))[Q0]
    changed = float((got != base.to(got.dtype)).float().mean())
    loss = res.losses["loss"].to_numpy()
    return changed, float(loss[0] - loss[-1])


def test_bf16_full_fine_tuning_at_lr_1e5_moves_the_weights_like_fp32(tiny, tmp_path):
    """Issue #20, item 1: fails on the bf16-weights loop (17.3 % changed, loss drop 0.15 x fp32's)."""
    _, _, ex, _ = tiny
    changed32, drop32 = _run_full(ex, "float32", tmp_path)
    changed16, drop16 = _run_full(ex, "bfloat16", tmp_path)
    assert changed32 > 0.99 and drop32 > 1e-3
    assert changed16 > 0.5, f"only {changed16:.1%} of {Q0} changed: the updates underflowed bf16"
    assert drop16 == pytest.approx(drop32, rel=0.2), (drop16, drop32)


def test_pure_bf16_weights_are_still_available_and_underflow(tiny, tmp_path):
    """mixed_precision: false trains the bf16 weights themselves (half the memory): the documented cost."""
    _, _, ex, _ = tiny
    changed, _ = _run_full(ex, "bfloat16", tmp_path, mixed_precision=False)
    assert changed < 0.5


def test_accumulated_micro_batches_give_the_big_batch_gradient(tiny):
    """Unequal target counts per micro-batch: a mean of per-batch means would weigh tokens unequally."""
    base, tok, _, enc = tiny
    cfg = cfg_of(method="full")
    idx = list(range(8))
    assert len({T.n_targets(enc[i], False) for i in idx}) > 1  # the split matters
    grads = []
    for window in ([idx], [idx[:1], idx[1:3], idx[3:]]):
        model = load_for_training(base, cfg)
        loss = backward_window(model, enc, window, cfg, pad_id=tok.pad_token_id)
        grads.append((float(loss), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (l1, g1), (l2, g2) = grads
    assert l2 == pytest.approx(l1, rel=1e-5)
    for n in g1:
        torch.testing.assert_close(g2[n], g1[n], rtol=1e-4, atol=1e-7)
    # the reference: transformers' own token-mean loss of the big batch
    model = load_for_training(base, cfg)
    ids = T._pad(torch, [enc[i][0] for i in idx], tok.pad_token_id)
    mask = T._pad(torch, [[1] * len(enc[i][0]) for i in idx], 0)
    labels = T._pad(torch, [enc[i][1] for i in idx], -100)
    with torch.no_grad():
        assert float(model(input_ids=ids, attention_mask=mask, labels=labels).loss) == pytest.approx(l1, rel=1e-5)


def test_batched_validation_loss_equals_the_per_example_loop(tiny):
    base, tok, _, enc = tiny
    model = load_for_training(base, cfg_of(method="full")).eval()
    with torch.no_grad():
        ref = [float(model(input_ids=torch.tensor([ids]), labels=torch.tensor([lab])).loss) for ids, lab in enc]
    for bs, budget in ((8, None), (24, 200), (1, None)):
        got = eval_loss(model, enc, cfg_of(batch_size=bs, micro_batch_tokens=budget), pad_id=tok.pad_token_id)
        assert got == pytest.approx(sum(ref) / len(ref), rel=1e-5), (bs, budget)


def test_length_buckets_cover_each_example_once_and_respect_the_budget():
    lengths = [5, 50, 7, 48, 6, 300, 52, 8, 49, 5, 51, 9] * 3
    for bs, budget in ((4, None), (8, 160), (3, 100)):
        batches = pack_by_length(lengths, range(len(lengths)), batch_size=bs, max_tokens=budget)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        for b in batches:
            assert len(b) <= bs
            if budget is not None and len(b) > 1:
                assert max(lengths[i] for i in b) * len(b) <= budget
        # sorted by length: batches do not interleave, so padding stays small
        spans = [(min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in batches]
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    e0 = epoch_micro_batches(lengths, batch_size=4, max_tokens=None, seed=1, epoch=0)
    assert e0 == epoch_micro_batches(lengths, batch_size=4, max_tokens=None, seed=1, epoch=0)
    e1 = epoch_micro_batches(lengths, batch_size=4, max_tokens=None, seed=1, epoch=1)
    assert e1 != e0 and sorted(i for b in e1 for i in b) == list(range(len(lengths)))


def test_steps_run_across_epochs_and_count_target_tokens(tiny):
    base, tok, _, enc = tiny
    cfg = cfg_of(method="full", batch_size=5, grad_accum=2, max_steps=None, epochs=2.0)
    stats = train_steps(load_for_training(base, cfg), enc, cfg, pad_id=tok.pad_token_id)
    # 24 examples in micro-batches of 5: 5 per epoch, 2 per step -> ceil(2 * 5 / 2) = 5 steps
    assert [r["step"] for r in stats.rows] == [1, 2, 3, 4, 5]
    assert stats.rows[-1]["epoch"] == pytest.approx(2.0)
    assert stats.target_tokens == sum(r["n_tokens"] for r in stats.rows) == 2 * sum(
        T.n_targets(e, False) for e in enc)
    assert stats.tokens == 2 * sum(len(e[0]) for e in enc) <= stats.padded_tokens
    assert stats.tokens_per_s > 0 and stats.model_flops == 6 * stats.n_params * stats.tokens


def test_gradient_checkpointing_changes_memory_not_results(tiny):
    base, tok, _, enc = tiny
    out = []
    for ckpt in (False, True):
        cfg = cfg_of(method="full", batch_size=6, max_steps=3, grad_checkpointing=ckpt)
        model = load_for_training(base, cfg)
        assert T.checkpointing_enabled(model) is ckpt
        torch.manual_seed(0)
        out.append([r["loss"] for r in train_steps(model, enc, cfg, pad_id=tok.pad_token_id).rows])
    assert out[1] == pytest.approx(out[0], rel=1e-5)


def test_determinism_only_when_asked(tiny, tmp_path, monkeypatch):
    _, _, ex, _ = tiny
    seen = []
    real = T.train_steps

    def spy(*a, **k):
        seen.append(torch.are_deterministic_algorithms_enabled())
        return real(*a, **k)

    monkeypatch.setattr(T, "train_steps", spy)
    before = torch.are_deterministic_algorithms_enabled()
    for det in (False, True):
        train_into(ex[:6], cfg_of(method="full", max_steps=1, deterministic=det), tmp_path / str(det))
    assert seen == [before, True]
    assert torch.are_deterministic_algorithms_enabled() == before  # restored after the run


def test_lora_under_bf16_autocast_keeps_trained_tensors_fp32(tiny):
    base, tok, _, enc = tiny
    cfg = cfg_of(dtype="bfloat16", learning_rate=0.03, max_steps=6, batch_size=8, modules_to_save=["lm_head"])
    model = load_for_training(base, cfg)
    trained = [p for p in model.parameters() if p.requires_grad]
    frozen = [p for p in model.parameters() if not p.requires_grad]
    assert trained and all(p.dtype == torch.float32 for p in trained)
    assert frozen and all(p.dtype == torch.bfloat16 for p in frozen)
    loss = [r["loss"] for r in train_steps(model, enc, cfg, pad_id=tok.pad_token_id).rows]
    assert loss[-1] < loss[0] - 0.5, loss


# -- memory -------------------------------------------------------------------------------

# DeepSeek-R1-Distill-Qwen-1.5B and -Llama-8B shapes (config.json sizes; LoRA r 8 on q/v: 32 x 8 x (8192 + 5120))
QWEN_1_5B = ModelShape(n_params=1_777_088_000, n_lora=0, n_saved=0, hidden=1536, intermediate=8960, layers=28,
                       vocab=151_936)
LLAMA_8B = ModelShape(n_params=8_030_261_248, n_lora=3_407_872, n_saved=0, hidden=4096, intermediate=14336,
                      layers=32, vocab=128_256)
GIB = 2 ** 30


def test_memory_estimate_accounts_like_mixed_precision_adamw():
    full = TrainConfig(method="full", dtype="bfloat16")
    e = estimate_memory(QWEN_1_5B, full, tokens=4096)
    assert e.weights + e.grads + e.optimizer == 18 * QWEN_1_5B.n_params  # fp32 w+g+m+v, bf16 autocast copies
    pure = estimate_memory(QWEN_1_5B, dataclasses.replace(full, mixed_precision=False), tokens=4096)
    assert pure.weights + pure.grads + pure.optimizer == 8 * QWEN_1_5B.n_params
    ckpt = estimate_memory(QWEN_1_5B, dataclasses.replace(full, grad_checkpointing=True), tokens=4096)
    assert ckpt.activations < e.activations / 2 and ckpt.weights == e.weights
    assert estimate_memory(QWEN_1_5B, full, tokens=8192).activations == 2 * e.activations
    lora = estimate_memory(LLAMA_8B, TrainConfig(method="lora", dtype="bfloat16"), tokens=4096)
    assert lora.weights == pytest.approx(2 * LLAMA_8B.n_params, rel=0.01) and lora.optimizer == 8 * LLAMA_8B.n_lora
    assert 25 * GIB < e.total < 60 * GIB  # 1.5B full at 4k tokens fits one 80 GB H100


def test_a_run_that_cannot_fit_stops_naming_what_would():
    full8 = TrainConfig(method="full", dtype="bfloat16", base_model="meta-llama/Llama-3.1-8B", device="cuda")
    with pytest.raises(ConfigError) as err:
        check_memory(LLAMA_8B, full8, 4096, 78 * GIB, where="rbd.train.runs.rbd-8b")
    msg = str(err.value)
    assert msg.startswith("rbd.train.runs.rbd-8b: method full") and "78.0 GiB are free" in msg
    assert "method: lora (~" in msg and "sharding weights, gradients and AdamW states over >= 4 such devices" in msg
    assert "Would fit: method: lora (~" in msg  # full with checkpointing is not proposed: 18 B/param of 8B > 78 GiB
    # what does not fit either is not proposed
    with pytest.raises(ConfigError) as err:
        check_memory(LLAMA_8B, full8, 4096, 30 * GIB, where="w")
    assert "method: lora (~" not in str(err.value) and "lora with grad_checkpointing: true (~" in str(err.value)
    with pytest.raises(ConfigError, match="the activations alone need"):
        check_memory(LLAMA_8B, full8, 4096, 20 * GIB, where="w")
    # a 1.5B full run fits; unknown free memory is not checked
    assert check_memory(QWEN_1_5B, dataclasses.replace(full8, base_model="q"), 4096, 78 * GIB, where="w").total > 0
    assert check_memory(LLAMA_8B, full8, 4096, None, where="w").total > 78 * GIB


def test_meta_shape_counts_what_loading_and_peft_give(tiny):
    base, _, _, _ = tiny
    cfg = cfg_of(target_modules=["q_proj", "v_proj"])
    shape = meta_shape(base, cfg)
    full = load_for_training(base, cfg_of(method="full"))
    assert shape.n_params == sum(p.numel() for p in full.parameters())
    lora = load_for_training(base, cfg)
    assert shape.n_lora == sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert (shape.hidden, shape.layers, shape.vocab) == (32, 2, full.config.vocab_size)


def test_training_stops_before_loading_when_memory_is_short(tiny, tmp_path, monkeypatch):
    _, _, ex, _ = tiny
    monkeypatch.setattr(T, "available_memory", lambda device: 1024)
    loaded = []
    monkeypatch.setattr(T, "load_for_training", lambda *a, **k: loaded.append(1))
    with pytest.raises(ConfigError, match=r"^rbd\.train\.runs\.x: method full .*Would fit: "):
        train_into(ex, cfg_of(method="full"), tmp_path / "m", where="rbd.train.runs.x")
    assert not loaded
    with pytest.raises(ConfigError, match="micro_batch_tokens"):
        cfg_of(micro_batch_tokens=0)


def test_train_detector_checks_the_memory_of_its_real_micro_batches(tiny, tmp_path, monkeypatch):
    """train_detector's own numbers: a 1.5B model, full fine-tuning in bf16, micro-batches of 4 x
    4096 tokens needs ~116 GiB, so it stops on an 80 GB card before loading.  An estimate from one
    sequence (4096 tokens: ~54 GiB) would pass the check and die after loading."""
    _, _, ex, _ = tiny
    seen = []
    real_check = T.check_memory

    def spy(shape, cfg, tokens, available, **kw):
        seen.append(tokens)
        return real_check(shape, cfg, tokens, available, **kw)

    monkeypatch.setattr(T, "meta_shape", lambda base, cfg, classifier=False: QWEN_1_5B)
    monkeypatch.setattr(T, "encode_examples", lambda tok, examples, cfg: [([1] * 4096, [-100] + [1] * 4095)] * 8)
    monkeypatch.setattr(T, "available_memory", lambda device: 78 * GIB)
    monkeypatch.setattr(T, "check_memory", spy)
    loaded = []
    monkeypatch.setattr(T, "load_for_training", lambda *a, **k: loaded.append(1))
    cfg = cfg_of(method="full", dtype="bfloat16", batch_size=4, max_seq_len=4096)
    with pytest.raises(ConfigError, match=r"16384 tokens per micro-batch\) needs about 116\.1 GiB"):
        train_into(ex, cfg, tmp_path / "m", where="rbd.train.runs.qwen")
    assert seen == [16384] and not loaded
    # a token budget of one sequence per micro-batch is what the estimate then uses, and it fits
    seen.clear()
    monkeypatch.setattr(T, "load_for_training", lambda *a, **k: (loaded.append(1), (_ for _ in ()).throw(
        RuntimeError("stop after the check"))))
    with pytest.raises(RuntimeError, match="stop after the check"):
        train_into(ex, dataclasses.replace(cfg, micro_batch_tokens=4096), tmp_path / "m")
    assert seen == [4096] and loaded == [1]


def _dtype_spy(model):
    """Output dtypes of every Linear layer's forward passes (a forward hook on each)."""
    seen: set = set()
    hooks = [m.register_forward_hook(lambda mod, inp, out: seen.add(out.dtype))
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    return seen, hooks


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_full_fine_tuning_computes_in_the_asked_16bit_dtype_with_fp32_master_weights(tiny, dtype, monkeypatch):
    """``method: full`` with a 16-bit ``dtype``: every Linear computes in that dtype under autocast
    (a run silently in fp32 would pass every loss test), the master weights stay fp32, and fp16
    (not bf16) scales its loss with an enabled GradScaler; the weights move and the loss stays finite."""
    base, tok, _, enc = tiny
    cfg = cfg_of(method="full", dtype=dtype, learning_rate=1e-3, max_steps=3, batch_size=8, warmup_ratio=0.0)
    model = load_for_training(base, cfg, pad_id=tok.pad_token_id)
    before = model.get_parameter(Q0).detach().clone()
    scalers = []
    real_scaler = torch.amp.GradScaler

    def spy_scaler(*a, **k):
        s = real_scaler(*a, **k)
        scalers.append(s)
        return s

    monkeypatch.setattr(torch.amp, "GradScaler", spy_scaler)
    seen, hooks = _dtype_spy(model)
    try:
        stats = train_steps(model, enc, cfg, pad_id=tok.pad_token_id)
    finally:
        for h in hooks:
            h.remove()
    want = getattr(torch, dtype)
    assert seen == {want}
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert len(scalers) == 1 and scalers[0].is_enabled() == (dtype == "float16")
    if dtype == "float16":
        assert scalers[0].get_scale() > 1.0  # the loss was scaled (fp16 gradients underflow otherwise)
    assert all(math.isfinite(r["loss"]) for r in stats.rows)
    assert not torch.equal(model.get_parameter(Q0).detach(), before)
