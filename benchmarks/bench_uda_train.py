"""Paper-scale UDA training: 10 judges x 10 models x 500 prompts = 450,000 judgments.

Paper 000 trains its adapter on ArenaHard (10 judges = the 10 answer models, 500 prompts,
every ordered pair: 450,000 judgments) in 8 hours on an RTX 4090.  The goal here: train the
same size on this machine's 2 CPU cores in <= 10 minutes with <= 4 GiB peak memory.

The tournament is simulated: ten answer models named and grouped in families after the
paper's (three GLM and two DeepSeek models), every model also a judge whose own model is
itself, with planted self-preference from -0.4 (gpt-4o-like, under-rates itself) to +0.7
(glm-4-flash-like), as in the paper's Fig. 2.  Verdicts come from the simulated panel
through the same request builders as the pipeline, but straight from the backend (no call
cache: 450k cached prompts would be a gigabyte of SQLite, and the cache is not what is
timed).  The script prints the time of each stage, the training epochs, the peak resident
memory and the result (inter-judge std, Pearson with the planted quality, in-sample and on
the held-out validation prompts, beside the baseline and the fitted label-smoothing control).
It asserts nothing.

    python benchmarks/bench_uda_train.py                     # paper scale, MiniLM embeddings
    python benchmarks/bench_uda_train.py --embedder hashing  # skip the encoder (training only)
    python benchmarks/bench_uda_train.py --prompts 50        # a quick look
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("JUDGELAB_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pandas as pd
import torch

from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.parsing import parse
from judgelab.uda.data import SCORE_OF_VERDICT
from judgelab.uda.elo import EloConfig
from judgelab.uda.embeddings import EmbeddingConfig
from judgelab.uda.study import embed_tournament, load_data
from judgelab.uda.tournament import build_tournament, own_answer_requests, pair_requests
from judgelab.uda.training import TrainConfig, apply_adapter, baseline_scores, smoothing_elo, train_adapter

# name, family, planted quality (logit), sentences, markdown, planted self-preference b
MODELS = [
    ("gpt-4o", "openai", 0.3, 5, True, -0.4),
    ("deepseek-v3", "deepseek", 0.7, 6, True, 0.2),
    ("claude-3.5", "anthropic", 0.5, 6, False, 0.3),
    ("glm-4-plus", "zhipu", 0.1, 5, True, 0.2),
    ("glm-4-air", "zhipu", -0.4, 4, False, 0.4),
    ("glm-4-flash", "zhipu", -0.8, 4, False, 0.7),
    ("doubao-1.5pro", "bytedance", 0.2, 5, True, 0.1),
    ("qwen-max", "qwen", 0.5, 5, True, 0.3),
    ("gemini-2.0-flash", "google", 0.4, 7, True, 0.5),
    ("deepseek-r1", "deepseek", 0.9, 8, True, -0.2),
]


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def judges() -> list:
    out = []
    for n, (name, fam, _q, _s, _md, b) in enumerate(MODELS):
        out.append(make_judge(JudgeSpec.from_dict({
            "name": f"judge-{name}", "backend": "simulated", "model": f"sim/{name}", "family": fam,
            "sampling": {"temperature": 0.0, "seed": 100 + n},
            "options": {"profile": {"competence": 1.5, "biases": {"self_preference": b, "verbosity": 0.05 * (n % 5 - 2),
                                                                  "markdown": 0.1 * (n % 3)}}},
        })))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--embedder", choices=["sentence-transformers", "hashing"], default="sentence-transformers")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hidden", default="128,32")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    spec = {"loader": "simulated", "n_prompts": args.prompts, "quality": {"source": "planted", "answer_noise": 0.5},
            "models": [{"name": n, "family": f, "quality": q, "sentences": s, "markdown": md}
                       for n, f, q, s, md, _ in MODELS]}
    t0 = time.perf_counter()
    table = build_tournament("bench", spec, seed=args.seed)
    panel = judges()
    answers, scores_rows = [], []
    for judge, (own_model, *_rest) in zip(panel, MODELS, strict=True):
        reqs = own_answer_requests(table, own_model)
        own = {}
        for req, raw in zip(reqs, judge.answer(reqs), strict=True):
            own[req.meta["prompt_id"]] = raw.text
            answers.append({"prompt_id": req.meta["prompt_id"], "judge": judge.name, "answer": raw.text})
        vreqs = pair_requests(table, own, judge.spec.family)
        for a in range(0, len(vreqs), 20_000):
            batch = vreqs[a : a + 20_000]
            for req, raw in zip(batch, judge.answer(batch), strict=True):
                p = parse(req.kind, raw.text, fmt=req.fmt)
                v = p.value if p.status.has_value else ""
                scores_rows.append((req.meta["prompt_id"], req.meta["model_a"], req.meta["model_b"], judge.name, v))
        del vreqs
    verdicts = pd.DataFrame(scores_rows, columns=["prompt_id", "model_a", "model_b", "judge", "verdict"])
    answers = pd.DataFrame(answers)
    t1 = time.perf_counter()
    print(f"tournament: {table['prompt_id'].nunique()} prompts x {len(MODELS)} models, {len(panel)} judges, "
          f"{len(verdicts):,} judgments ({verdicts['verdict'].isin(list(SCORE_OF_VERDICT)).mean():.1%} usable) "
          f"simulated in {t1 - t0:.1f} s")

    emb_cfg = EmbeddingConfig(backend=args.embedder, max_seq_length=96) if args.embedder != "hashing" else \
        EmbeddingConfig(backend="hashing", dim=384)
    emb = embed_tournament(table, answers, emb_cfg)
    t2 = time.perf_counter()
    print(f"embeddings: {len(emb):,} texts with {emb['embedder'].iloc[0]} in {t2 - t1:.1f} s")

    data = load_data("bench", table, verdicts, emb, [j.name for j in panel])
    del verdicts, emb
    elo = EloConfig()
    cfg = TrainConfig(epochs=args.epochs, hidden=tuple(int(h) for h in args.hidden.split(",")), seed=args.seed)
    t3 = time.perf_counter()
    result = train_adapter(data, "full", cfg, elo, order_seed=args.seed + 1)
    t4 = time.perf_counter()
    print(f"training: {cfg.epochs} epochs (full-batch AdamW steps over {data.n_judgments:,} judgments, "
          f"{len(result.train_prompts)} training / {len(result.val_prompts)} validation prompts) in {t4 - t3:.1f} s "
          f"= {(t4 - t3) / max(1, cfg.epochs):.2f} s/epoch; best epoch {result.best_epoch}; "
          f"{args.threads} thread(s)")
    R_base, _ = baseline_scores(data, elo, order_seed=args.seed + 1)
    R_uda, _ = apply_adapter(result.adapter, result.standardizer, data, elo, order_seed=args.seed + 1)
    t5 = time.perf_counter()
    truth = np.array([q for _n, _f, q, *_ in MODELS])

    def report(name: str, R: np.ndarray) -> None:
        sd = R.std(axis=0, ddof=1).mean()
        rho = np.mean([np.corrcoef(r, truth)[0, 1] for r in R])
        own_dev = np.array([(R[k, k] - np.delete(R[:, k], k).mean()) / np.delete(R[:, k], k).mean() * 100
                            for k in range(len(MODELS))])
        print(f"  {name:9s} mean inter-judge std {sd:7.1f}   mean Pearson with planted quality {rho:.3f}   "
              f"self-preference {own_dev.min():+.1f}% .. {own_dev.max():+.1f}%")

    print("in-sample (all prompts):")
    report("baseline", R_base)
    report("UDA", R_uda)
    # the controls on the held-out validation prompts: raw and relative std (std / consensus spread)
    va = np.array([data.prompt_ids.index(p) for p in result.val_prompts])
    ls = result.meta["label_smoothing"]
    held = {"baseline": baseline_scores(data, elo, order_seed=args.seed + 1, prompt_idx=va)[0],
            f"label smoothing (K {ls['k']:.0f}, label {ls['label']:.3f})":
                smoothing_elo(data, va, ls["k"], ls["label"], elo, order_seed=args.seed + 1)[0],
            "UDA": apply_adapter(result.adapter, result.standardizer, data, elo, order_seed=args.seed + 1,
                                 prompt_idx=va)[0]}
    print(f"held-out validation prompts ({len(va)}): mean inter-judge std / relative std")
    for name, R in held.items():
        sd = R.std(axis=0, ddof=1).mean()
        print(f"  {name:32s} {sd:7.1f}   {sd / R.mean(axis=0).std(ddof=1):.3f}")
    print(f"applying the adapter to all prompts: {t5 - t4:.1f} s")
    print(f"total {t5 - t0:.1f} s; peak resident memory {peak_rss_gib():.2f} GiB "
          f"(goal: training <= 600 s, <= 4 GiB)")


if __name__ == "__main__":
    main()
