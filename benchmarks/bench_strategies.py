"""Wall time of the strategies study's analysis on a 5-judge x 9-strategy x 975-instance result table.

Goal (issue 3): all statistics, including the mixed models, <= 60 s.  The 975 instances are
paper 003's three sets: the 375-pair controlled set (built from the shipped bank with simulated
generators), 400 MT-Bench-like and 200 LLMBar-like gold pairs.  The calls table (every distinct
call of the nine strategies for five judges: 16 per instance, ~78,000 rows) is synthesised with
random verdicts of judge-specific accuracy and 2% malformed answers, so the timing covers the
analysis rules only (strategies_verdicts, _agreement, _bias, _selection), not judge calls.

    python benchmarks/bench_strategies.py [--judges 5] [--n-resamples 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JUDGELAB_PROGRESS", "0")

import numpy as np
import pandas as pd

from judgelab.strategies import STRATEGY_ORDER, StrategySettings, strategy_table
from judgelab.strategies.aggregate import aggregate_strategies, cross_family_members
from judgelab.strategies.analysis import (
    agreement_table,
    bias_table,
    category_table,
    cross_bias_table,
    length_ablation_table,
    mcnemar_table,
    mde_table,
    mixed_table,
    topic_style_table,
)
from judgelab.strategies.run import REFERENCE_GEN_ID, plan_calls, question_key
from judgelab.strategies.selection import pareto_table, recommend, strategy_budget_costs

FAMILIES = ["google", "google", "anthropic", "openai", "meta", "qwen", "mistral"]


def controlled_pairs() -> pd.DataFrame:
    """The 375-pair set from the shipped bank, texts written by simulated generators."""
    from judgelab.cache import CallCache
    from judgelab.config import REPO_ROOT, JudgeSpec
    from judgelab.datasets.controlled import ControlledSpec, load_bank
    from judgelab.judges import make_judge
    from judgelab.strategies.build import assemble_controlled, generate_texts

    bank, spec = load_bank(REPO_ROOT / "data/strategies/question_bank.jsonl"), ControlledSpec(seed=1)
    fams = ["google", "anthropic", "meta", "openai"]
    gens = []
    with CallCache(Path(tempfile.mkdtemp()) / "gen.sqlite") as cache:
        for i, fam in enumerate(fams):
            judge = make_judge(JudgeSpec.from_dict({"name": f"gen-{fam}", "backend": "simulated", "model": "m",
                                                    "family": fam, "sampling": {"seed": i}}))
            gens.append(generate_texts(judge, bank, spec, cache, expansion=fam == "google", families=[fam]))
    return assemble_controlled(bank, pd.concat(gens, ignore_index=True), spec, {f: f"gen-{f}" for f in fams})


def gold_pairs(name: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
    cats = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]
    return pd.DataFrame({
        "pair_id": [f"{name}-{i}" for i in range(n)], "prompt": [f"{name} question {i // 3}" for i in range(n)],
        "expected_verdict": rng.choice(["A", "B", "tie"], n, p=[0.4, 0.36, 0.24]), "bias_type": "none",
        "category": rng.choice(cats, n),
    })


def synth_calls(dataset: str, pairs: pd.DataFrame, judges: list[tuple[str, str]], rng: np.random.Generator) -> pd.DataFrame:
    plan = plan_calls(STRATEGY_ORDER, StrategySettings())
    frames = []
    n = len(pairs)
    for k, (judge, fam) in enumerate(judges):
        acc = 0.6 + 0.05 * k
        for cid, (spec, _users) in plan.items():
            gold = pairs["expected_verdict"].to_numpy()
            other = rng.choice(["A", "B", "tie"], n)
            verdict = np.where(rng.random(n) < acc, gold, other)
            bad = rng.random(n) < 0.02
            frames.append(pd.DataFrame({
                "dataset": dataset, "pair_id": pairs["pair_id"].to_numpy(), "judge": judge, "backend": "simulated",
                "model": "sim", "family": fam, "simulated": True, "judge_seed": k, "call_id": cid, "role": spec.role,
                "order": spec.order, "kind": "pairwise", "verdict": np.where(bad, "", verdict),
                "status": np.where(bad, "unparsed", "ok"), "parse_method": np.where(bad, "none", "json"),
                "raw_text": np.where(bad, "Both have merits.", '{"verdict": "A"}'), "tokens_in": 900,
                "tokens_out": 60, "cost_usd": 0.001 * (k + 1), "question_key": pairs["prompt"].map(question_key).to_numpy(),
            }))
        qk = pairs["prompt"].map(question_key).unique()
        frames.append(pd.DataFrame({"dataset": dataset, "pair_id": "", "judge": judge, "backend": "simulated",
                                    "model": "sim", "family": fam, "simulated": True, "judge_seed": k,
                                    "call_id": REFERENCE_GEN_ID, "role": REFERENCE_GEN_ID, "order": "", "kind": "text",
                                    "verdict": "", "status": "ok", "parse_method": "text", "raw_text": "ref",
                                    "tokens_in": 100, "tokens_out": 200, "cost_usd": 0.0005, "question_key": qk}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--judges", type=int, default=5)
    ap.add_argument("--n-resamples", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    judges = [(f"judge-{k}", FAMILIES[k % len(FAMILIES)]) for k in range(args.judges)]
    sets = {"controlled": controlled_pairs(), "mtbench": gold_pairs("mtbench", 400, rng),
            "llmbar": gold_pairs("llmbar", 200, rng)}
    calls = {ds: synth_calls(ds, p, judges, rng) for ds, p in sets.items()}
    n_inst = sum(len(p) for p in sets.values())
    n_calls = sum(len(c) for c in calls.values())
    print(f"{args.judges} judges x {len(STRATEGY_ORDER)} strategies x {n_inst} instances; {n_calls:,} call rows")
    settings = StrategySettings()
    members = cross_family_members(judges, settings.cross_family_size)
    js = {j: list(STRATEGY_ORDER) for j, _ in judges}
    boot = {"n_resamples": args.n_resamples, "level": 0.95, "seed": 1}
    times: dict[str, float] = {}

    t = time.perf_counter()
    sv = {ds: aggregate_strategies(calls[ds], sets[ds], js, settings, members) for ds in sets}
    times["strategies_verdicts (aggregate 3 sets)"] = time.perf_counter() - t
    gold = pd.concat([sv["mtbench"], sv["llmbar"]], ignore_index=True)

    t = time.perf_counter()
    agr = agreement_table(gold, **boot)
    cat = category_table(gold, **boot)
    times["agreement + kappa + distributions + categories (bootstrap)"] = time.perf_counter() - t
    t = time.perf_counter()
    mcn = mcnemar_table(gold)
    mde_table(mcn)
    times["McNemar + Holm + MDE"] = time.perf_counter() - t
    t = time.perf_counter()
    mix = mixed_table(gold)
    times[f"mixed models (LPM + logistic GLMM, {2 * args.judges} fits)"] = time.perf_counter() - t
    t = time.perf_counter()
    bias = bias_table(sv["controlled"], sets["controlled"], **boot)
    topic_style_table(sv["controlled"], sets["controlled"], **boot)
    length_ablation_table(bias)
    cross_bias_table(bias)
    times["bias scores + topic style + length + cross-bias (bootstrap)"] = time.perf_counter() - t
    t = time.perf_counter()
    rows = strategy_table(settings)
    pareto_table(agr, "mtbench")
    recommend(agr, mix, strategy_budget_costs(rows), natural="mtbench", adversarial="llmbar")
    times["Pareto front + selector"] = time.perf_counter() - t
    assert len(cat) and len(mix) == 2 * args.judges * (len(STRATEGY_ORDER) - 1)

    width = max(len(k) for k in times)
    for k, v in times.items():
        print(f"  {k:<{width}}  {v:6.2f} s")
    total = sum(times.values())
    print(f"  {'total':<{width}}  {total:6.2f} s   (goal <= 60 s: {'met' if total <= 60 else 'NOT met'})")


if __name__ == "__main__":
    main()
