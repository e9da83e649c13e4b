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


@pytest.fixture  # per test: each test then runs correlation_tables itself (mutmut maps tests to the code they run)
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
    assert set(fl["dataset"]) == {"d"} and set(fl["gold_source"]) == {"design"}
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


def _one_judge(gold: np.ndarray, variants: dict[str, np.ndarray]) -> pd.DataFrame:
    return _frame("j", variants, [f"i{i:03d}" for i in range(len(gold))])


def _golds(gold: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"dataset": "d", "item_id": [f"i{i:03d}" for i in range(len(gold))],
                         "gold_source": "design", "gold": gold})


def test_a_family_whose_deltas_are_all_undefined_has_no_band_and_is_not_significant():
    """A variant that shares a single parsed item with the baseline has no paired rho, on the data
    or on any resample: its family's band, fluctuation and interval are undefined (NaN), never a
    number, and never significant."""
    rng = np.random.default_rng(3)
    gold = rng.integers(1, 6, 30).astype(float)
    base = np.clip(np.floor(gold + rng.normal(0, 0.8, 30) + 0.5), 1, 5)
    base[1] = -1
    roman = np.full(30, -1.0)
    roman[:2] = [3, 4]  # parsed on two items, one of which the baseline did not parse
    t3, fl = correlation_tables(_one_judge(gold, {"baseline": base, "roman": roman}), _golds(gold), n_boot=30)
    row = fl.set_index("family").loc["score_ids"]
    assert row["n_variants"] == 1 and row["argmax_variant"] == "roman"
    for col in ("fluctuation", "delta_at_max", "sim_halfwidth", "max_abs_ci_low", "max_abs_ci_high"):
        assert np.isnan(row[col]), col
    assert not row["significant"]
    t = t3.set_index("variant")
    assert t.loc["roman", "n_common"] == 1 and np.isnan(t.loc["roman", "delta_rho"])
    assert np.isnan(t.loc["roman", "delta_sim_ci_low"]) and np.isnan(t.loc["roman", "delta_sim_ci_high"])


def test_the_unperturbed_prompt_is_never_a_perturbation_even_against_another_baseline():
    """Read against another prompt (``baseline="letter"``), the unperturbed prompt still joins
    no fluctuation family: ``all`` holds the perturbations only."""
    rng = np.random.default_rng(4)
    gold = rng.integers(1, 6, 40).astype(float)

    def judge(sd):
        return np.clip(np.floor(gold + rng.normal(0, sd, 40) + 0.5), 1, 5)

    scores = _one_judge(gold, {"baseline": judge(0.3), "letter": judge(1.0), "roman": judge(1.0)})
    t3, fl = correlation_tables(scores, _golds(gold), n_boot=30, baseline="letter")
    f = fl.set_index("family")
    assert f.loc["all", "n_variants"] == 1 and f.loc["all", "argmax_variant"] == "roman"
    assert f.loc["score_ids", "n_variants"] == 1
    t = t3.set_index("variant")
    assert t.loc["letter", "delta_rho"] == 0.0  # the reference prompt against itself
    y = {v: scores[scores["variant"] == v]["score"].to_numpy(float) for v in ("letter", "roman")}
    assert t.loc["roman", "delta_rho"] == pytest.approx(_rho(gold, y["roman"]) - _rho(gold, y["letter"]), abs=1e-12)


def test_a_planted_large_perturbation_effect_is_significant():
    """Planted truth: the baseline tracks gold closely, the ``random`` prompt not at all
    (its scores are gold shuffled), so delta rho is about -0.9 on 200 items; the fluctuation
    exceeds the simultaneous band, in its own family and in ``all``."""
    rng = np.random.default_rng(8)
    n = 200
    gold = rng.integers(1, 6, n).astype(float)
    base = np.clip(np.floor(gold + rng.normal(0, 0.3, n) + 0.5), 1, 5)
    shuffled = rng.permutation(gold)
    close = np.clip(np.floor(gold + rng.normal(0, 0.3, n) + 0.5), 1, 5)
    t3, fl = correlation_tables(_one_judge(gold, {"baseline": base, "descending": close, "random": shuffled}),
                                _golds(gold), n_boot=100, seed=2)
    f = fl.set_index("family")
    for fam in ("rubric_order", "all"):
        assert f.loc[fam, "argmax_variant"] == "random"
        assert f.loc[fam, "delta_at_max"] < -0.7
        assert 0 < f.loc[fam, "sim_halfwidth"] < 0.3
        assert bool(f.loc[fam, "significant"])
    t = t3.set_index("variant")
    assert t.loc["random", "delta_sim_ci_high"] < 0  # its simultaneous interval excludes 0
