"""Position swapping (S1) helps where position bias is planted: a planted-truth recovery test.

Paper 003 (Sec. 4.2): S1 keeps a verdict only when both presentation orders agree and resolves
disagreement to a tie, so it helps judges that flip with the order on data whose gold has ties
(MT-Bench), and cannot help where every gold is a clear winner.  On pairs whose two answers are
equally good (gold tie), a judge with a planted position preference ``b`` says "A" in both
orders more often; the stored-frame verdicts then disagree and S1 answers tie, while B0 answers
"A" (wrong).  The exact expected gain E[correct(S1) - correct(B0)] follows from the judge's own
ordered-logit probabilities for every presented prompt; the test checks that the estimated gain
(a paired difference over pairs) covers it, that it grows with ``b``, and that on pairs with a
clear winner S1 never beats B0 (S1 is right only when both orders are).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.datasets.pairs import pair_from_row
from judgelab.judges.simulated import pairwise_probs
from judgelab.strategies import StrategySettings
from judgelab.strategies.aggregate import aggregate_strategies
from judgelab.strategies.run import pairwise_requests, plan_calls, query_strategies, role_templates_for
from tests.strategies.test_run import sim

SETTINGS = StrategySettings()
STRATS = ("B0", "S1")
N = 240


def tie_pairs(n: int = N, gold: str = "tie") -> pd.DataFrame:
    """Two equally good, equally long plain answers per question (no cue but the slot)."""
    return pd.DataFrame([{
        "pair_id": f"t{i}", "prompt": f"Question {i}: name a use of tool {i}.",
        "response_a": f"Tool {i} is used to fix parts.", "response_b": f"Tool {i} is used to join parts.",
        "expected_verdict": gold, "bias_type": "none", "category": "c"} for i in range(n)])


def expected_gain(judge, pairs: pd.DataFrame) -> float:
    """E[correct(S1)] - E[correct(B0)] from the judge's probabilities (stored frame, tie gold)."""
    plist = [pair_from_row(r, where="t") for r in pairs.to_dict("records")]
    probs: dict[tuple[str, str], tuple[float, float, float]] = {}
    for req in pairwise_requests(plist, plan_calls(STRATS, SETTINGS), role_templates_for(judge), {}):
        prompt = req.prompt_text()
        z, _ = judge.preference_logit(req, prompt)
        pa, pt, pb = pairwise_probs(z, judge.decision_params(prompt)[2])
        stored = (pa, pt, pb) if "|AB|" in req.meta["call_id"] else (pb, pt, pa)
        probs[(req.meta["call_id"], req.meta["pair_id"])] = stored
    ab = {p: v for (c, p), v in probs.items() if "|AB|" in c}  # B0's call, S1's first order
    ba = {p: v for (c, p), v in probs.items() if "|BA|" in c}  # S1's swapped order
    gains = [(1.0 - ab[p][0] * ba[p][0] - ab[p][2] * ba[p][2]) - ab[p][1] for p in ab]
    return float(np.mean(gains))


def estimated_gain(judge, pairs: pd.DataFrame, tmp_path) -> tuple[float, float]:
    with CallCache(tmp_path / f"{judge.name}.sqlite") as cache:
        calls = query_strategies(judge, pairs, cache, dataset="t", strategies=STRATS, settings=SETTINGS,
                                 max_error_rate=None)
    sv = aggregate_strategies(calls, pairs, {judge.name: list(STRATS)}, SETTINGS)
    w = sv.pivot(index="pair_id", columns="strategy", values="correct").astype(float)
    d = (w["S1"] - w["B0"]).to_numpy()
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


@pytest.mark.parametrize("seed", [3, 4])
def test_swap_gain_recovers_planted_position_bias(tmp_path, seed):
    pairs = tie_pairs()
    exp, est = {}, {}
    for b in (0.0, 0.4, 0.8):
        judge = sim(f"pos{int(b * 10)}", seed=seed, competence=2.0, biases={"position": b})
        exp[b] = expected_gain(judge, pairs)
        est[b] = estimated_gain(judge, pairs, tmp_path)
        mean, se = est[b]
        assert abs(mean - exp[b]) < 3.0 * se + 1e-9, (b, mean, se, exp[b])
    # the planted truth: the gain grows with the position bias, and the estimates see it
    assert exp[0.0] < exp[0.4] < exp[0.8]
    assert exp[0.8] - exp[0.0] > 0.25
    diff = est[0.8][0] - est[0.0][0]
    assert diff - 2.0 * np.hypot(est[0.8][1], est[0.0][1]) > 0


def test_swap_never_beats_baseline_on_clear_winners(tmp_path):
    pairs = tie_pairs(120, gold="A")
    judge = sim("pos8", seed=5, competence=2.0, biases={"position": 0.8})
    mean, _ = estimated_gain(judge, pairs, tmp_path)
    with CallCache(tmp_path / "c.sqlite") as cache:
        calls = query_strategies(judge, pairs, cache, dataset="t", strategies=STRATS, settings=SETTINGS,
                                 max_error_rate=None)
    sv = aggregate_strategies(calls, pairs, {judge.name: list(STRATS)}, SETTINGS)
    w = sv.pivot(index="pair_id", columns="strategy", values="correct")
    assert not (w["S1"] & ~w["B0"]).any()  # S1 right only where B0 (its first order) is right
    assert mean < 0
