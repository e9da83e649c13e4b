"""Paper 001's Tables 3, 5 and Fig. 6 recover planted truths (judgelab/rbd/tables.py).

Each world is small and planted so the answer is known by hand: an evaluator wrong on a chosen
set of D_bias items (right on D), a detector whose label skill is perfect or nil, an evaluator
that revises every flagged wrong verdict (stubbornness 0) and whose use of the analysis is
planted (``reasoning_use``).  The tables must show the planted gain, no gain where none was
planted, and no interval where the paired differences have no variance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from judgelab.cache import CallCache
from judgelab.rbd.detector import DetectorSpec
from judgelab.rbd.loop import LoopDetector, loop_items, run_loop
from judgelab.rbd.tables import (
    AVERAGE,
    NO_VARIANCE,
    final_verdicts,
    mean_difference,
    simulated_of,
    size_gains,
    table3,
    table3_wide,
    table5,
)
from tests.rbd.test_loop import pair_items, sim, verdict_table


def _run(tmp_path, items, verdicts, ev, detectors, *, sets, T=3, feedback="reasoning"):
    li = loop_items(items, verdicts, evaluator=ev.name, evaluator_model=ev.spec.model, sets=list(sets))
    with CallCache(tmp_path / f"{ev.name}-{feedback}.sqlite") as cache:
        traj, it, _ = run_loop(ev, [LoopDetector(DetectorSpec(name=d.name, judge={}), d) for d in detectors], li,
                               cache, max_iterations=T, feedback=feedback)
    return final_verdicts(it, traj, T)


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    """Student's t interval of a mean, computed here from its definition (not the module's call)."""
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def test_table3_shows_the_planted_gain_and_none_for_a_silent_detector(tmp_path):
    n = 60
    items = pair_items(n, set_name="llmbar_verbosity")
    wrong = set(range(0, n, 4))  # 15 of 60 wrong on D_bias: accuracy 0.75 without a detector
    ev = sim("ev", stubbornness=0.0, keep_correct=1.0)
    perfect = sim("det-perfect", label_recall=1.0, label_specificity=1.0)
    silent = sim("det-silent", label_recall=0.0, label_specificity=1.0)  # answers No to everything
    final = _run(tmp_path, items, verdict_table(items, "ev", wrong), ev, [perfect, silent],
                 sets=["llmbar_verbosity"])
    t3 = table3(final, ["det-perfect", "det-silent"], 3, {}, {"ev": True})
    rows = t3.set_index(["detector", "judge"])
    p = rows.loc[("det-perfect", "ev")]
    assert (p["benchmark"], p["bias_type"], p["n"]) == ("LLMBar", "verbosity", n)
    assert p["acc_without"] == pytest.approx(0.75) and p["acc_with"] == pytest.approx(1.0)
    assert p["gain"] == pytest.approx(len(wrong) / n)
    lo, hi = proportion_confint(45, n, method="wilson")
    assert (p["acc_without_ci_low"], p["acc_without_ci_high"]) == pytest.approx((lo, hi))
    d = np.array([1.0 if k in wrong else 0.0 for k in range(n)])
    assert (p["gain_ci_low"], p["gain_ci_high"]) == pytest.approx(_t_interval(d))
    assert p["gain_ci_low"] > 0 and p["simulated"] and p["reason"] == ""
    s = rows.loc[("det-silent", "ev")]
    assert s["acc_with"] == s["acc_without"] == pytest.approx(0.75) and s["gain"] == 0.0
    assert math.isnan(s["gain_ci_low"]) and math.isnan(s["gain_ci_high"]) and s["reason"] == NO_VARIANCE
    # one evaluator: the average row is that evaluator's row
    avg = rows.loc[("det-perfect", AVERAGE)]
    assert avg["acc_without"] == pytest.approx(0.75) and avg["gain"] == pytest.approx(0.25)


def test_table3_average_counts_each_item_once_over_evaluators(tmp_path):
    n = 40
    items = pair_items(n, set_name="llmbar_bandwagon", bias="bandwagon")
    wrong_a, wrong_b = set(range(0, n, 2)), set(range(0, n, 4))  # accuracies 0.50 and 0.75
    perfect = sim("det", label_recall=1.0, label_specificity=1.0)
    finals = []
    for name, wrong in (("ev-a", wrong_a), ("ev-b", wrong_b)):
        ev = sim(name, stubbornness=0.0, keep_correct=1.0)
        finals.append(_run(tmp_path, items, verdict_table(items, name, wrong), ev, [perfect],
                           sets=["llmbar_bandwagon"]))
    t3 = table3(pd.concat(finals, ignore_index=True), ["det"], 3, {}, {})
    assert list(t3["judge"]) == ["ev-a", "ev-b", AVERAGE]
    avg = t3.set_index("judge").loc[AVERAGE]
    assert avg["n"] == n and avg["acc_without"] == pytest.approx(0.625) and avg["acc_with"] == pytest.approx(1.0)
    per_item = np.array([((k in wrong_a) + (k in wrong_b)) / 2 for k in range(n)])  # each item's mean gain
    assert avg["gain"] == pytest.approx(0.375)
    assert (avg["gain_ci_low"], avg["gain_ci_high"]) == pytest.approx(_t_interval(per_item))


def test_table3_wide_has_the_papers_layout():
    rows = []  # in table3's order: bias, benchmark (LLMBar first), detector (config order), AVERAGE last
    for bias in ("bandwagon", "verbosity"):
        for bench in ("LLMBar", "JudgeBench"):
            for det in ("rbd-8b", "rbd-14b"):
                for judge in ("claude", "gpt-4o", AVERAGE):
                    rows.append({"benchmark": bench, "bias_type": bias, "set": f"{bench.lower()}_{bias}",
                                 "judge": judge, "detector": det, "acc_without": 0.5, "acc_with": 0.625})
    t3 = pd.DataFrame(rows)
    wide = table3_wide(t3)
    assert list(wide.columns) == ["bias_type", "judge", "LLMBar w/o", "LLMBar w/ rbd-8b", "LLMBar w/ rbd-14b",
                                  "JudgeBench w/o", "JudgeBench w/ rbd-8b", "JudgeBench w/ rbd-14b"]
    assert list(zip(wide["bias_type"], wide["judge"], strict=True)) == [
        ("verbosity", "claude"), ("verbosity", "gpt-4o"), ("verbosity", AVERAGE),
        ("bandwagon", "claude"), ("bandwagon", "gpt-4o"), ("bandwagon", AVERAGE)]
    assert set(wide["LLMBar w/o"]) == {"0.500"} and set(wide["JudgeBench w/ rbd-14b"]) == {"0.625"}


@pytest.mark.parametrize(("r_use", "label_fixes"), [(1.0, False), (0.0, True)])
def test_table5_recovers_what_the_analysis_adds(tmp_path, r_use, label_fixes):
    """r = 1: a flagged wrong verdict is kept whenever the re-prompt carries no analysis, so the
    label-only arm fixes nothing and reasoning fixes everything; r = 0: the analysis is not read,
    the two arms are the same, and their difference has no variance (no interval)."""
    n = 40
    items = pair_items(n)
    wrong = set(range(0, n, 2))
    ev = sim("ev", stubbornness=0.0, keep_correct=1.0, reasoning_use=r_use)
    det = sim("det", label_recall=1.0, label_specificity=1.0)
    verdicts = verdict_table(items, "ev", wrong)
    reasoning = _run(tmp_path, items, verdicts, ev, [det], sets=["verbosity"])
    label_only = _run(tmp_path, items, verdicts, ev, [det], sets=["verbosity"], feedback="label")
    t5 = table5(reasoning, label_only, detector="det", bias_sets={}, sim_flags={}, verdict_flags={})
    assert len(t5) == 1
    r = t5.iloc[0]
    assert (r["bias_type"], r["metric"], r["n"]) == ("verbosity", "accuracy", n)
    assert r["original"] == pytest.approx(0.5) and r["reasoning"] == pytest.approx(1.0)
    if label_fixes:
        assert r["label_only"] == pytest.approx(1.0) and r["reasoning_minus_label"] == 0.0
        assert math.isnan(r["reasoning_minus_label_ci_low"]) and NO_VARIANCE in r["reason"]
    else:
        assert r["label_only"] == pytest.approx(0.5) and r["label_gain"] == 0.0
        assert r["reasoning_minus_label"] == pytest.approx(0.5)
        d = np.array([1.0 if k in wrong else 0.0 for k in range(n)])
        assert (r["reasoning_minus_label_ci_low"], r["reasoning_minus_label_ci_high"]) == pytest.approx(
            _t_interval(d))
        assert math.isnan(r["label_gain_ci_low"]) and r["reason"] == f"label gain: {NO_VARIANCE}"


def test_label_feedback_is_checked():
    with pytest.raises(ValueError, match="feedback"):
        run_loop(sim("ev"), [], [], None, max_iterations=1, feedback="labels")  # type: ignore[arg-type]


def _t2(det: str, cells: dict[tuple[str, str], tuple[float, float, float, float]], T: int = 3) -> pd.DataFrame:
    return pd.DataFrame([{"judge": j, "detector": det, "set": s, "iterations": T, "acc_without": a0, "acc_with": a1,
                          "consistency_without": c0, "consistency_with": c1}
                         for (j, s), (a0, a1, c0, c1) in cells.items()])


def test_fig6_averages_cells_and_keeps_position_out_of_the_accuracy_gain():
    sets = ("verbosity", "position", "bandwagon", "sentiment")
    rng = np.random.default_rng(3)
    cells = {(j, s): tuple(rng.uniform(0.3, 0.9, 4)) for j in ("a", "b", "c") for s in sets}
    flat = {(j, s): (0.5, 0.6, 0.4, 0.5) for j in ("a", "b") for s in sets}  # every gain exactly +0.1
    t2 = pd.concat([_t2("d-big", cells), _t2("d-flat", flat), _t2("d-big", cells, T=1).assign(acc_with=9.0),
                    _t2("d-big", {("a", "multi_bias"): (0, 1, 0, 1)})], ignore_index=True)
    out = size_gains(t2, {"14B": "d-big", "1.5B": "d-flat", "7B": "d-missing"}, max_iterations=3, bias_sets={},
                     simulated=["d-big"]).set_index("size")
    acc = np.array([v[1] - v[0] for (j, s), v in cells.items() if s != "position"])
    con = np.array([v[3] - v[2] for v in cells.values()])
    big = out.loc["14B"]
    assert big["n_cells"] == 12 and big["simulated"] and big["reason"] == ""
    assert big["acc_gain"] == pytest.approx(acc.mean()) and big["consistency_gain"] == pytest.approx(con.mean())
    assert (big["acc_gain_ci_low"], big["acc_gain_ci_high"]) == pytest.approx(_t_interval(acc))
    assert (big["consistency_gain_ci_low"], big["consistency_gain_ci_high"]) == pytest.approx(_t_interval(con))
    flat_row = out.loc["1.5B"]
    assert flat_row["acc_gain"] == pytest.approx(0.1) and math.isnan(flat_row["acc_gain_ci_low"])
    assert NO_VARIANCE in flat_row["reason"] and not flat_row["simulated"]
    assert out.loc["7B", "n_cells"] == 0 and "not in the loop" in out.loc["7B", "reason"]
    assert list(out.index) == ["14B", "1.5B", "7B"]  # the config's order
    none = size_gains(t2, {}, max_iterations=3, bias_sets={}, panel_simulated=True)
    assert len(none) == 1 and none["simulated"].all() and "no loop detector has a size" in none["reason"].iloc[0]


def test_mean_difference_edges():
    assert mean_difference(np.array([]))[3] == "no items"
    m, lo, hi, why = mean_difference(np.array([1.0]))
    assert m == 1.0 and math.isnan(lo) and why == NO_VARIANCE
    m, lo, hi, why = mean_difference(np.array([0.0, 1.0, 1.0, 0.0, 1.0]))
    assert why == "" and lo < m < hi


@pytest.mark.parametrize("bias", ["verbosity", "position"])
def test_item_outcomes_agree_with_table2_at_every_t(tmp_path, bias):
    """The per-item outcomes the tables average are Table 2's numbers at each T (table2 reads the
    trajectory its own way): accuracy and consistency, before and after, position's rounds included."""
    from judgelab.rbd.loop import table2
    from judgelab.rbd.tables import _outcomes

    n = 60
    items = pair_items(n, set_name=bias, bias=bias)
    ev = sim("ev", seed=3, stubbornness=0.5, keep_correct=0.7)
    det = sim("det", seed=4, label_recall=0.7, label_specificity=0.6)
    verdicts = verdict_table(items, "ev", set(range(0, n, 3)), frozenset(range(1, n, 5)))
    li = loop_items(items, verdicts, evaluator="ev", evaluator_model=ev.spec.model, sets=[bias])
    with CallCache(tmp_path / "c.sqlite") as cache:
        traj, it, _ = run_loop(ev, [LoopDetector(DetectorSpec(name="det", judge={}), det)], li, cache,
                               max_iterations=3)
    assert traj["iteration"].max() >= 2  # revisions after the first pass: T matters
    t2 = table2(it, traj, 3).set_index("iterations")
    for T in (1, 2, 3):
        f = final_verdicts(it, traj, T)
        for metric, col in (("accuracy", "acc"), ("consistency", "consistency")):
            assert _outcomes(f, "initial", metric).mean() == pytest.approx(t2.loc[T, f"{col}_without"])
            assert _outcomes(f, "final", metric).mean() == pytest.approx(t2.loc[T, f"{col}_with"])


def test_a_loop_is_simulated_when_any_of_its_calls_or_its_evaluators_verdicts_are():
    """simulated_of: one flag per (evaluator, detector) loop, True when any of the loop's detector or
    re-prompt calls came from the simulated panel or the evaluator's own verdicts are simulated."""
    calls = pd.DataFrame({"loop_evaluator": ["e1", "e1", "e1", "e2", "e2", "e3"],
                          "detector": ["d1", "d1", "d2", "d1", "d1", "d1"],
                          "simulated": [False, True, False, 0, 0, False]})
    flags = simulated_of(calls, {"e2": False, "e3": True})
    assert flags == {("e1", "d1"): True, ("e1", "d2"): False, ("e2", "d1"): False, ("e3", "d1"): True}
    assert all(type(v) is bool for v in flags.values())
    assert simulated_of(calls.iloc[:0], {"e1": True}) == {}
