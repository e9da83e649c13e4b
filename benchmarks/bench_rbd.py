"""Speed of study rbd's pieces on one core: set construction, evaluation, Algorithm 1, tiny LoRA steps,
and tiny full fine-tuning in fp32 / bf16 mixed precision / pure bf16 (throughput, weights reached).

Prints figures, asserts nothing.  Uses the public data under ``$JUDGELAB_DATA``; a fresh
temporary call cache, so every call is new (the DAG's reruns are cache hits).

    python benchmarks/bench_rbd.py [--n 200] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JUDGELAB_PROGRESS", "0")

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.rbd.detector import DetectorSpec, build_cases
from judgelab.rbd.evaluate import bias_labels, evaluate_items, select_items
from judgelab.rbd.loop import LoopDetector, loop_items, run_loop
from judgelab.rbd.sets import SET_BUILDERS, BuildContext
from judgelab.rbd.supervision import collect_traces


def sim(name: str, **profile):
    return make_judge(JudgeSpec.from_dict({"name": name, "backend": "simulated", "model": f"sim/{name}",
                                           "options": {"profile": profile}}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="items per set")
    ap.add_argument("--steps", type=int, default=20, help="LoRA steps of the tiny model")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cache = CallCache(tmp / "c.sqlite")
    writer = sim("writer")
    t0 = time.perf_counter()
    items = []
    for name in ("verbosity", "position", "bandwagon", "sentiment"):
        ctx = BuildContext(name=name, seed=1, n_items=args.n, generate=lambda r: run_requests(writer, r, cache))
        items += SET_BUILDERS.get(name).build(ctx)
    t_sets = time.perf_counter() - t0
    print(f"sets: {len(items)} item-variants in {t_sets:.2f} s ({len(items) / t_sets:,.0f}/s incl. generation)")

    ev = sim("ev", stubbornness=0.4, keep_correct=0.9, biases={"verbosity": 0.4, "bandwagon": 0.3,
                                                             "sentiment": 0.3, "position": 0.05})
    t0 = time.perf_counter()
    chosen = [i for s in ("verbosity", "position", "bandwagon", "sentiment")
              for i in select_items([x for x in items if x.set == s], None)]
    verdicts = evaluate_items(ev, chosen, cache)
    t_eval = time.perf_counter() - t0
    print(f"evaluation: {len(verdicts)} verdicts in {t_eval:.2f} s ({len(verdicts) / t_eval:,.0f} verdicts/s)")

    labels = bias_labels(verdicts, {s: "eq1" for s in ("verbosity", "position", "bandwagon", "sentiment")})
    cases = build_cases(chosen, labels, {"ev": "sim/ev"})
    teacher = sim("teacher", label_accuracy=0.85)
    t0 = time.perf_counter()
    traces = collect_traces(teacher, [c for c in cases if c.subset == "train"], cache)
    t_teach = time.perf_counter() - t0
    print(f"teacher: {len(traces)} traces in {t_teach:.2f} s ({len(traces) / t_teach:,.0f}/s), "
          f"{int(traces['kept'].sum())} kept")

    det = sim("det", label_recall=0.8, label_specificity=0.85)
    li = loop_items(chosen, verdicts, evaluator="ev", evaluator_model="sim/ev",
                    sets=["verbosity", "position", "bandwagon", "sentiment"])
    t0 = time.perf_counter()
    _, _, calls = run_loop(ev, [LoopDetector(DetectorSpec(name="det", judge={}), det)], li, cache,
                              max_iterations=3)
    t_loop = time.perf_counter() - t0
    print(f"Algorithm 1 (T=3): {len(li)} items, {len(calls)} calls in {t_loop:.2f} s "
          f"({len(li) / t_loop:,.0f} items/s, {len(calls) / t_loop:,.0f} calls/s)")

    try:
        from judgelab.rbd.train import TrainConfig, causal_examples, train_into
    except ImportError:
        return
    cfg = TrainConfig(max_steps=args.steps, learning_rate=0.03, modules_to_save=["lm_head"], max_words=24)
    ex = causal_examples(traces, cfg.max_words)
    t0 = time.perf_counter()
    res = train_into(ex, cfg, tmp / "tiny")
    t_train = time.perf_counter() - t0
    tokens = int(res.losses["n_tokens"].sum())
    print(f"tiny LoRA: {args.steps} steps on {len(ex)} traces in {t_train:.2f} s incl. building the model "
          f"({tokens / t_train:,.0f} target tokens/s); loss {res.losses['loss'].iloc[0]:.2f} -> "
          f"{res.losses['loss'].iloc[-1]:.2f}")
    precision(ex, tmp, args.steps)
    cache.close()


def precision(ex, tmp: Path, steps: int) -> None:
    """Full fine-tuning of the tiny model at the paper's lr 1e-5: fp32, bf16 mixed precision (fp32
    master weights + autocast) and pure bf16 weights: throughput of the training loop and the share
    of one layer's weights an update reached (bf16 weights lose most updates)."""
    import torch
    from transformers import AutoTokenizer

    from judgelab.rbd.train import TrainConfig, build_tiny_llama, encode_examples, load_for_training, train_steps

    base = str(build_tiny_llama(tmp / "tiny-base", [e.prompt + " " + e.target for e in ex], seed=0))
    tok = AutoTokenizer.from_pretrained(base)
    key = "model.layers.0.self_attn.q_proj.weight"
    for dtype, mixed in (("float32", True), ("bfloat16", True), ("bfloat16", False)):
        cfg = TrainConfig(method="full", dtype=dtype, mixed_precision=mixed, learning_rate=1e-5, batch_size=8,
                          warmup_ratio=0.0, max_words=24)
        ref = load_for_training(base, TrainConfig(method="full")).state_dict()[key].clone()
        model = load_for_training(base, cfg)
        st = train_steps(model, encode_examples(tok, ex, cfg), cfg, pad_id=tok.pad_token_id, steps=steps)
        w = model.state_dict()[key]
        changed = float((w != ref.to(w.dtype)).float().mean())
        label = f"{dtype}{' mixed' if mixed and dtype != 'float32' else ''}"
        print(f"tiny full, lr 1e-5, {label:>14}: {st.tokens_per_s:,.0f} tokens/s "
              f"({st.tokens:,} tokens, {st.padded_tokens / st.tokens:.2f} padded/real), "
              f"loss {st.rows[0]['loss']:.4f} -> {st.rows[-1]['loss']:.4f}, {changed:.0%} of {key} changed"
              f"{'' if torch.cuda.is_available() else ' (CPU)'}")

if __name__ == "__main__":
    main()
