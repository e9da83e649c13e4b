"""Throughput of the simulated panel: pairwise verdicts per second on one core.

Goal (backbone issue): >= 50,000 verdicts/s.  Measures SimulatedJudge.answer on
prebuilt requests over real LLMBar texts when the data root is available (else
synthetic texts of similar length), both orders, JSON-verdict prompt, with and
without parsing the answers.

    python benchmarks/bench_simulated_panel.py [--n 100000]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JUDGELAB_PROGRESS", "0")

from judgelab.config import JudgeSpec
from judgelab.datasets.pairs import Pair, load_llmbar
from judgelab.judges import make_judge
from judgelab.judges.pairwise import pair_requests
from judgelab.parsing import parse_pairwise


def corpus(n_pairs: int) -> list[Pair]:
    from judgelab.datasets.sources import DataMissing, source_path

    base: list[Pair]
    try:
        base = load_llmbar(source_path("llmbar/Natural", download=False), subset="Natural")
    except DataMissing:
        base = [Pair(pair_id=str(i), prompt=f"Question {i}", response_a=f"answer {i} " * 60,
                     response_b=f"reply {i} " * 40, expected_verdict="A") for i in range(100)]
    out = []
    for r in range(n_pairs // len(base) + 1):
        for p in base:
            # distinct prompts -> distinct requests (no accidental reuse inside the judge)
            out.append(Pair(pair_id=f"{p.pair_id}-{r}", prompt=f"{p.prompt} [{r}]", response_a=p.response_a,
                            response_b=p.response_b, expected_verdict=p.expected_verdict))
    return out[:n_pairs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000, help="verdicts to time")
    args = ap.parse_args()
    spec = JudgeSpec.from_dict({
        "name": "bench", "backend": "simulated", "model": "sim", "family": "google",
        "sampling": {"temperature": 0.1, "seed": 1},
        "options": {"profile": {"biases": {"markdown": 0.7, "verbosity": 0.4, "position": 0.03,
                                           "self_preference": 0.2, "bandwagon": 0.2, "sentiment": 0.1},
                                "malformed_rate": 0.01}},
    })
    judge = make_judge(spec)
    reqs = pair_requests(corpus(args.n // 2), "json_verdict")
    t0 = time.perf_counter()
    answers = judge.answer(reqs)
    t1 = time.perf_counter()
    parsed = [parse_pairwise(a.text, "json") for a in answers]
    t2 = time.perf_counter()
    ok = sum(p.value is not None for p in parsed)
    print(f"simulated panel: {len(reqs):,} pairwise verdicts in {t1 - t0:.2f} s "
          f"= {len(reqs) / (t1 - t0):,.0f} verdicts/s (one core; goal >= 50,000)")
    print(f"  with parsing:  {len(reqs) / (t2 - t0):,.0f} verdicts/s; parsed {ok / len(reqs):.1%}")


if __name__ == "__main__":
    main()
