"""Speed of the scoring study's heavy parts (paper 004), printed, not asserted.

1. Prompt building + simulated 1-5 scoring + parsing, per call, on the Prometheus
   MT-Bench items (real prompt lengths; synthetic items without the data root).
2. The Table 3 / fluctuation statistics (paired bootstrap with shared resamples) at
   the default scale (6 judges x 4 sets x 48 items x 10 variants, 1,000 resamples) and
   at paper scale (6 judges x 2 sets x 320 items).
3. Ordinal Krippendorff's alpha with 500 bootstrap resamples on 320 items x 3 runs.

    python benchmarks/bench_scoring.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("JUDGELAB_PROGRESS", "0")

import numpy as np
import pandas as pd

from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.parsing import parse_score
from judgelab.scoring.items import ScoringItem, load_items
from judgelab.scoring.metrics import correlation_tables, stability
from judgelab.scoring.prompt import get_variant
from judgelab.scoring.query import score_requests

VARIANTS = ["baseline", "descending", "random", "letter", "roman", "ref1", "ref2", "ref3", "ref4", "ref5"]


def items() -> list[ScoringItem]:
    from judgelab.datasets.sources import DataMissing

    try:
        return load_items("mt_bench", {"loader": "prometheus", "source": "prometheus_eval/mt_bench"})
    except DataMissing:
        return [ScoringItem("synth", f"i{i}", f"g{i}", "Explain. " * 100, "Answer. " * 300, "Good?", "a", "b", "c",
                            "d", "e", "Ref. " * 200, truth_score=float(i % 5 + 1)) for i in range(320)]


def bench_calls() -> None:
    its = items()
    refs = pd.DataFrame([{"dataset": it.dataset, "group_id": it.group_id, "level": k, "text": "A reference. " * 40}
                         for it in its for k in (1, 2, 3, 4)]).drop_duplicates(["dataset", "group_id", "level"])
    judge = make_judge(JudgeSpec.from_dict({"name": "b", "backend": "simulated", "model": "m", "options": {
        "profile": {"reference_anchor": 0.4, "rubric_order": {"random": {"noise": 0.5}}}}}))
    t = time.perf_counter()
    reqs = score_requests(its, [get_variant(v) for v in VARIANTS], references=refs)
    t_build = time.perf_counter() - t
    t = time.perf_counter()
    answers = judge.answer(reqs)
    t_answer = time.perf_counter() - t
    t = time.perf_counter()
    for r, a in zip(reqs, answers, strict=True):
        parse_score(a.text, r.score_ids)
    t_parse = time.perf_counter() - t
    n = len(reqs)
    mean_len = np.mean([len(r.messages[0].content) for r in reqs])
    print(f"[calls] {n} requests, mean prompt {mean_len:.0f} chars: build {n / t_build:,.0f}/s, "
          f"simulated answer {n / t_answer:,.0f}/s, parse {n / t_parse:,.0f}/s")


def synthetic_scores(n_items: int, datasets: list[str], judges: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows, golds = [], []
    for ds in datasets:
        truth = rng.integers(1, 6, n_items)
        golds += [{"dataset": ds, "item_id": f"i{i}", "gold_source": "gold_judge", "gold": float(t)}
                  for i, t in enumerate(truth)]
        for j in range(judges):
            for v in VARIANTS:
                s = np.clip(np.round(truth + rng.normal(0, 0.9, n_items)), 1, 5).astype(int)
                s[rng.random(n_items) < 0.02] = -1
                rows += [{"dataset": ds, "item_id": f"i{i}", "judge": f"j{j}", "variant": v, "repeat": 0,
                          "score": int(x)} for i, x in enumerate(s)]
    return pd.DataFrame(rows), pd.DataFrame(golds)


def bench_tables() -> None:
    for label, n, sets in [("default", 48, ["a", "b", "c", "d"]), ("paper", 320, ["mt_bench", "vicuna_bench"])]:
        scores, golds = synthetic_scores(n, sets, 6)
        t = time.perf_counter()
        t3, _ = correlation_tables(scores, golds, n_boot=1000)
        dt = time.perf_counter() - t
        print(f"[tables:{label}] {len(t3)} Table-3 rows ({len(sets)} sets x 6 judges x 10 variants, {n} items, "
              f"1,000 resamples): {dt:.2f} s")


def bench_alpha() -> None:
    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, (320, 1))
    runs = np.clip(truth + rng.integers(-1, 2, (320, 3)), 1, 5).astype(float)
    t = time.perf_counter()
    s = stability(runs, n_boot=500)
    print(f"[alpha] ordinal Krippendorff alpha {s['alpha_ordinal']:.3f} with 500 resamples on 320 x 3: "
          f"{time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    bench_calls()
    bench_tables()
    bench_alpha()
