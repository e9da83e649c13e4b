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
``meta.json``), as the authors select their checkpoint.  The prompt is rendered exactly as the ``transformers`` judge
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


@dataclass
class TrainConfig:
    """One training run (config ``rbd.train.runs.<name>``)."""

    kind: str = "causal_lm"  # causal_lm (RBD) | classifier (label-only baseline)
    method: str = "lora"  # lora | full (every weight, as paper 001 fine-tunes)
    base_model: str = "builtin:tiny-llama"
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
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
    device: str = "cpu"
    dtype: str = "float32"  # float32 | bfloat16 | float16
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
        if cfg.max_steps is None and cfg.epochs <= 0:
            raise ConfigError(f"{where}: give max_steps or epochs > 0")
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


def causal_examples(traces: pd.DataFrame, max_words: int | None) -> list[Example]:
    """Kept traces as (detector prompt, ``<think> r </think>\\nLabel``) pairs."""
    from judgelab.rbd.detector import cases_from_frame

    kept = traces[traces["kept"]].reset_index(drop=True)
    cases = cases_from_frame(kept)
    return [Example(detector_prompt(c, "rbd", max_words=max_words),
                    f"<think> {r.strip()} </think>\n{c.truth.capitalize()}")
            for c, r in zip(cases, kept["reasoning"], strict=True)]


def classifier_examples(traces: pd.DataFrame, max_words: int | None) -> list[Example]:
    from judgelab.rbd.detector import cases_from_frame

    kept = traces[traces["kept"]].reset_index(drop=True)
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
    """The base checkpoint to fine-tune: built (``builtin:``) into ``run_dir/base``, or the given path."""
    if cfg.base_model.startswith("builtin:"):
        builder = BUILTIN_BASES.get(cfg.base_model.split(":", 1)[1], where="rbd.train base_model")
        return str(builder(run_dir / "base", texts, seed=cfg.seed, **cfg.tiny))
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


def _dtype(torch: Any, name: str) -> dict[str, Any]:
    """``from_pretrained`` keyword for the dtype (``dtype`` since transformers 4.56, else ``torch_dtype``)."""
    import re

    import transformers

    v = tuple(int(x) for x in re.findall(r"\d+", transformers.__version__)[:2])
    key = "dtype" if v >= (4, 56) else "torch_dtype"
    return {key: {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]}


def _schedule(cfg: TrainConfig, n_examples: int) -> int:
    per_epoch = math.ceil(n_examples / cfg.batch_size / max(1, cfg.grad_accum))
    return int(cfg.max_steps) if cfg.max_steps is not None else max(1, math.ceil(cfg.epochs * per_epoch))


def _lora_model(model: Any, cfg: TrainConfig, task_type: str) -> Any:
    from peft import LoraConfig, get_peft_model

    lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.target_modules), modules_to_save=list(cfg.modules_to_save) or None,
                      task_type=task_type)
    return get_peft_model(model, lcfg)


def _batches(torch: Any, n: int, batch_size: int, steps: int, accum: int, seed: int) -> list[list[list[int]]]:
    """Index batches for ``steps`` optimiser steps of ``accum`` micro-batches: seeded epoch shuffles."""
    g = torch.Generator().manual_seed(seed)
    order: list[int] = []
    need = steps * accum * batch_size
    while len(order) < need:
        order += torch.randperm(n, generator=g).tolist()
    micro = [order[i: i + batch_size] for i in range(0, need, batch_size)]
    return [micro[s * accum:(s + 1) * accum] for s in range(steps)]


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


def train_detector(examples: Sequence[Example], cfg: TrainConfig, run_dir: str | Path) -> TrainResult:
    """Fine-tune (LoRA or every weight) on ``examples``; save the selected weights, merged model
    and meta into ``run_dir``."""
    if not examples:
        raise ConfigError("no training examples (no kept teacher traces); enlarge rbd.max_eval_items")
    torch = _torch(peft=cfg.method == "lora")
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_cosine_schedule_with_warmup,
    )

    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    if cfg.device == "cpu":
        torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    base = resolve_base(cfg, run, [e.prompt + " " + e.target for e in examples])
    tok = AutoTokenizer.from_pretrained(base)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    dtype = _dtype(torch, cfg.dtype)
    classifier = cfg.kind == "classifier"
    if classifier:
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=2, **dtype)
        model.config.pad_token_id = tok.pad_token_id
        if cfg.method == "lora":
            model = _lora_model(model, cfg, "SEQ_CLS")
        enc_all = []
        for e in examples:
            ids = list(tok(e.prompt, add_special_tokens=True)["input_ids"])
            enc_all.append((ids[-cfg.max_seq_len:], 1 if e.target == "yes" else 0))  # keep the judgement at the end
    else:
        model = AutoModelForCausalLM.from_pretrained(base, **dtype)
        if cfg.method == "lora":
            model = _lora_model(model, cfg, "CAUSAL_LM")
        enc_all = [encode_causal(tok, e, cfg.max_seq_len) for e in examples]
    tr_idx, val_idx = split_validation(len(enc_all), cfg.val_fraction, cfg.seed)
    enc, val = [enc_all[i] for i in tr_idx], [enc_all[i] for i in val_idx]
    model.to(cfg.device)
    model.train()
    steps = _schedule(cfg, len(enc))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    sched = get_cosine_schedule_with_warmup(opt, int(cfg.warmup_ratio * steps), steps)
    per_epoch = max(1, math.ceil(len(enc) / cfg.batch_size))
    eval_every = cfg.eval_every or max(1, math.ceil(per_epoch / max(1, cfg.grad_accum)))

    def forward(data: list, idx: list[int]) -> Any:
        ids = _pad(torch, [data[i][0] for i in idx], tok.pad_token_id).to(cfg.device)
        if classifier:
            labels = torch.tensor([data[i][1] for i in idx], dtype=torch.long, device=cfg.device)
            mask = (ids != tok.pad_token_id).long()
        else:
            labels = _pad(torch, [data[i][1] for i in idx], -100).to(cfg.device)
            mask = _pad(torch, [[1] * len(data[i][0]) for i in idx], 0).to(cfg.device)
        return model(input_ids=ids, attention_mask=mask, labels=labels), labels

    def eval_loss() -> float:
        """Mean loss over the validation examples (per example, so batch padding cannot matter)."""
        model.eval()
        with torch.no_grad():
            losses = [float(forward(val, [i])[0].loss) for i in range(len(val))]
        model.train()
        return sum(losses) / len(losses)

    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    best = (math.inf, 0, None)  # (eval loss, step, CPU copy of the trained weights)
    rows = []
    for step, micro in enumerate(_batches(torch, len(enc), cfg.batch_size, steps, cfg.grad_accum, cfg.seed), start=1):
        opt.zero_grad()
        total, n_tok = 0.0, 0
        for idx in micro:
            out, labels = forward(enc, idx)
            (out.loss / len(micro)).backward()
            total += float(out.loss.detach()) / len(micro)
            n_tok += int((labels != -100).sum()) if not classifier else len(idx)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        ev = float("nan")
        if val and (step % eval_every == 0 or step == steps):
            ev = eval_loss()
            if ev < best[0]:
                best = (ev, step, {n: p.detach().to("cpu", copy=True) for n, p in trained.items()})
        rows.append({"step": step, "epoch": (step * cfg.grad_accum) / per_epoch, "loss": total,
                     "lr": float(sched.get_last_lr()[0]), "n_tokens": n_tok, "eval_loss": ev})
    if best[2] is not None:  # the checkpoint of the lowest eval loss, not the last step
        with torch.no_grad():
            for n, p in trained.items():
                p.copy_(best[2][n].to(p.device))
    model.eval()
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
            "best_eval_loss": best[0] if best[2] is not None else None, "merged_sha256": digest}
    write_json(run / "meta.json", meta)
    return TrainResult(run, pd.DataFrame(rows, columns=LOSS_COLUMNS), len(enc), digest, meta)


def train_into(examples: Sequence[Example], cfg: TrainConfig, out_dir: str | Path) -> TrainResult:
    """Train into a sibling ``.partial`` directory and rename it into place: the run appears whole or not at all."""
    import shutil

    out = Path(out_dir)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    res = train_detector(examples, cfg, tmp)
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
    model = AutoModelForCausalLM.from_pretrained(base)
    model = PeftModel.from_pretrained(model, run / "adapter").to(device)
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
