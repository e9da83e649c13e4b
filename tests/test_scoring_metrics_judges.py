"""Table 3 with several judges in one gold set: each judge's statistics are its own.

A gold set is shared by every judge scored on it, but judges need not score the same
items or the same variants: one may have skipped items (a failed batch, a later
slice), one may lack the unperturbed prompt, one may carry a variant outside paper
004's list. Each judge's rows must then equal what scipy computes on that judge's
own items -- never shifted onto another judge's items, never dropped because the
judge before it in name order had no baseline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.scoring.metrics import correlation_tables


def _frame(judge: str, variants: dict[str, np.ndarray], items: list[str]) -> pd.DataFrame:
    return pd.DataFrame([
        {"dataset": "d", "item_id": it, "judge": judge, "variant": v, "repeat": 0, "score": int(s)}
        for v, ys in variants.items() for it, s in zip(items, ys, strict=True)
    ])


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.spearmanr(x, y).statistic)


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(20)
    n = 40
    gold = rng.integers(1, 6, n).astype(float)
    ids = [f"i{i:03d}" for i in range(n)]

    def judge(sd: float, m: int = n) -> np.ndarray:
        return np.clip(np.floor(gold[:m] + rng.normal(0, sd, m) + 0.5), 1, 5)

    # "a" has no baseline: its rows have no delta, and it must not stop the judges after it
    a = _frame("a", {"letter": judge(0.7)}, ids)
    # "b" scored only the first 30 items (plus one item the gold set does not have)
    m = 30
    b_scores = {"baseline": judge(0.8, m), "letter": judge(1.2, m), "custom": judge(0.5, m)}
    b = _frame("b", b_scores, ids[:m])
    stray = pd.DataFrame([{"dataset": "d", "item_id": "zz-not-in-gold", "judge": "b", "variant": v, "repeat": 0,
                           "score": 1} for v in b_scores])
    golds = pd.DataFrame({"dataset": "d", "item_id": ids, "gold_source": "design", "gold": gold})
    t3, fl = correlation_tables(pd.concat([a, b, stray], ignore_index=True), golds, n_boot=40, seed=5)
    return gold, m, b_scores, t3, fl


def test_a_judge_that_skipped_items_is_scored_on_its_own_items(world):
    gold, m, b_scores, t3, _ = world
    t = t3[t3["judge"] == "b"].set_index("variant")
    for v, ys in b_scores.items():
        assert t.loc[v, "n"] == m  # the 10 items it never scored are not counted, the stray item neither
        assert t.loc[v, "rho"] == pytest.approx(_rho(gold[:m], ys), abs=1e-12)
        assert t.loc[v, "r"] == pytest.approx(stats.pearsonr(gold[:m], ys).statistic, abs=1e-12)
    expected = _rho(gold[:m], b_scores["letter"]) - _rho(gold[:m], b_scores["baseline"])
    assert t.loc["letter", "delta_rho"] == pytest.approx(expected, abs=1e-12)
    assert t.loc["letter", "n_common"] == m


def test_a_judge_without_baseline_keeps_its_rows_and_stops_no_other_judge(world):
    gold, _, _, t3, fl = world
    a = t3[t3["judge"] == "a"].set_index("variant")
    assert list(a.index) == ["letter"]
    assert np.isnan(a.loc["letter", "delta_rho"]) and np.isnan(a.loc["letter", "delta_sim_ci_low"])
    assert a.loc["letter", "n"] == len(gold)
    assert set(fl["judge"]) == {"b"}  # no fluctuation without a baseline to fluctuate from ...
    assert set(t3["judge"]) == {"a", "b"}  # ... and judge b, after a in name order, is still there


def test_a_variant_outside_the_paper_is_its_own_perturbation_in_the_all_family(world):
    _, _, _, t3, fl = world
    t = t3[t3["judge"] == "b"].set_index("variant")
    assert list(t.index) == ["baseline", "letter", "custom"]  # the paper's order, others after
    assert t.loc["custom", "perturbation"] == "other"
    f = fl.set_index("family")
    assert set(f.index) == {"score_ids", "all"}
    assert f.loc["all", "n_variants"] == 2 and f.loc["score_ids", "n_variants"] == 1
    # its simultaneous band is not one of the paper's families' bands
    assert np.isnan(t.loc["custom", "delta_sim_ci_low"]) and np.isfinite(t.loc["letter", "delta_sim_ci_low"])
