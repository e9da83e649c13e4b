"""Unit tests of paper 001's Tables 3, 4, 5 and Fig. 6 builders (judgelab/rbd/tables.py), cell by cell.

Each world is a handful of items whose per-item outcomes are planted; every expected number is
computed here from those outcomes (shares with statsmodels' Wilson interval, paired differences
with Student's t interval written out from its definition), and every column of each row is
compared, so a row written under a wrong key, a wrong order or a wrong default shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from judgelab.rbd.tables import (
    AVERAGE,
    FIG6_COLUMNS,
    NO_VARIANCE,
    TABLE3_COLUMNS,
    TABLE4_COLUMNS,
    TABLE5_COLUMNS,
    _baseline_outcomes,
    _join,
    _outcomes,
    _sim,
    final_verdicts,
    mean_difference,
    metric_of,
    outcome,
    share,
    size_gains,
    table3,
    table3_wide,
    table4,
    table5,
    wide,
)

# ---------------------------------------------------------------------------------
# independent expectations


def expect_share(ok: Sequence[bool]) -> tuple[float, float, float]:
    """Share of 0/1 outcomes with statsmodels' Wilson interval."""
    if not len(ok):
        return math.nan, math.nan, math.nan
    lo, hi = proportion_confint(int(sum(ok)), len(ok), method="wilson")
    return float(np.mean(ok)), float(lo), float(hi)


def expect_diff(d: Sequence[float]) -> tuple[float, float, float, str]:
    """Mean of paired differences with Student's t interval from its definition; none without variance."""
    d = np.asarray(d, dtype=float)
    if not len(d):
        return math.nan, math.nan, math.nan, "no items"
    if len(d) < 2 or len(set(d.tolist())) == 1:
        return float(d.mean()), math.nan, math.nan, NO_VARIANCE
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half), ""


def assert_row(actual: pd.Series | dict, expected: dict) -> None:
    """Every expected key equal in ``actual``: floats approximately (NaN equals NaN), others exactly."""
    for key, want in expected.items():
        got = actual[key]
        if isinstance(want, float):
            if math.isnan(want):
                assert pd.isna(got), (key, got)
            else:
                assert got == pytest.approx(want), (key, got, want)
        else:
            assert got == want, (key, got, want)


def _verdict(gold: list[int], ok: bool, d_ok: bool = True) -> list[int]:
    """A verdict per round: the last round (the swapped order for position) right iff ``ok``; the
    first of two rounds (position's D order) right iff ``d_ok``."""
    v = list(gold)
    if not ok:
        v[-1] = 1 - v[-1]
    if len(v) == 2 and not d_ok:
        v[0] = 1 - v[0]
    return v


def final_row(judge: str, det: str, set_name: str, k: int, bias: str, before: bool, after: bool, *,
              d_right: bool = True, d_order_before: bool = True, d_order_after: bool = True) -> dict:
    """One loop item as final_verdicts returns it (gold alternating with ``k``)."""
    g = k % 2
    gold = [g, 1 - g] if bias == "position" else [g]
    return {"judge": judge, "detector": det, "set": set_name, "item_id": f"{set_name}-{k}", "bias_type": bias,
            "verdict_D": g if d_right else 1 - g, "gold_D": g, "initial": _verdict(gold, before, d_order_before),
            "final": _verdict(gold, after, d_order_after), "gold": gold}


# ---------------------------------------------------------------------------------
# per-item outcomes


@pytest.mark.parametrize("bias", ["verbosity", "bandwagon", "sentiment", "position"])
def test_metric_is_accuracy_except_consistency_for_position(bias):
    assert metric_of(bias) == ("consistency" if bias == "position" else "accuracy")


def test_outcome_truth_table():
    """Accuracy reads D_bias (for position: the swapped order, the second round); consistency
    also needs D right (for position: both orders)."""
    for bias in ("verbosity", "bandwagon"):
        for v, g, vd, gd, acc, con in [([1], [1], 1, 1, True, True), ([1], [1], 0, 1, True, False),
                                       ([0], [1], 1, 1, False, False), ([0], [0], 1, 0, True, False),
                                       ([0], [0], 0, 0, True, True), ([-1], [0], 0, 0, False, False)]:
            assert outcome(bias, "accuracy", v, g, vd, gd) is acc
            assert outcome(bias, "consistency", v, g, vd, gd) is con
    # position: rounds (D order, swapped order); verdict_d / gold_d are not read
    for v, g, acc, con in [([0, 1], [0, 1], True, True), ([1, 1], [0, 1], True, False),
                           ([0, 0], [0, 1], False, False), ([1, 0], [1, 0], True, True),
                           ([0, 0], [1, 0], True, False), ([1, 1], [1, 0], False, False)]:
        for vd, gd in ((0, 0), (1, 0), (-1, 0)):
            assert outcome("position", "accuracy", v, g, vd, gd) is acc
            assert outcome("position", "consistency", v, g, vd, gd) is con


def test_outcomes_are_floats_in_row_order():
    rows = pd.DataFrame([final_row("ev", "d", "verbosity", 0, "verbosity", True, False),
                         final_row("ev", "d", "verbosity", 1, "verbosity", False, True, d_right=False),
                         final_row("ev", "d", "position", 2, "position", True, True, d_order_before=False)])
    before = _outcomes(rows, "initial", "accuracy")
    assert before.dtype == np.float64 and before.tolist() == [1.0, 0.0, 1.0]
    assert _outcomes(rows, "final", "accuracy").tolist() == [0.0, 1.0, 1.0]
    assert _outcomes(rows, "initial", "consistency").tolist() == [1.0, 0.0, 0.0]
    assert _outcomes(rows, "final", "consistency").tolist() == [0.0, 0.0, 1.0]
    assert (_outcomes(rows, "final", "accuracy") - before).tolist() == [-1.0, 1.0, 0.0]  # paired differences


def test_final_verdicts_take_the_last_revision_at_or_before_t():
    items = pd.DataFrame({"judge": ["ev"] * 5, "detector": ["d1", "d1", "d1", "d1", "d2"],
                          "set": ["s"] * 5, "item_id": ["a", "b", "c", "d", "a"],
                          "initial": [np.array([0.0]), (1,), [0], [1.0, 0.0], [1]], "extra": range(5)})
    trajectory = pd.DataFrame([  # rows not in iteration order
        {"judge": "ev", "detector": "d1", "set": "s", "item_id": "a", "iteration": 2, "verdict_after": [0.0]},
        {"judge": "ev", "detector": "d1", "set": "s", "item_id": "a", "iteration": 1, "verdict_after": [1.0]},
        {"judge": "ev", "detector": "d1", "set": "s", "item_id": "b", "iteration": 3, "verdict_after": [0]},
        {"judge": "ev", "detector": "d1", "set": "s", "item_id": "d", "iteration": 1, "verdict_after": (0, 1)},
        {"judge": "ev", "detector": "d1", "set": "other", "item_id": "c", "iteration": 1, "verdict_after": [1]},
    ])
    out = final_verdicts(items, trajectory, 2)
    assert list(out.columns) == [*items.columns, "final"]
    assert out["initial"].tolist() == [[0], [1], [0], [1, 0], [1]]
    assert all(type(x) is int for v in out["initial"] for x in v)
    # a: the revision at iteration 2 = T; b: its only revision is after T; c: revised in another set only;
    # d: revised once; a under d2: another detector's loop, never revised
    assert out["final"].tolist() == [[0], [1], [0], [0, 1], [1]]
    assert all(type(x) is int for v in out["final"] for x in v)
    assert final_verdicts(items, trajectory, 1)["final"].tolist() == [[1], [1], [0], [0, 1], [1]]
    assert final_verdicts(items, trajectory, 3)["final"].tolist() == [[0], [0], [0], [0, 1], [1]]
    assert items["initial"].iloc[0].dtype == np.float64  # the input is left as it was


# ---------------------------------------------------------------------------------
# statistics


def test_share_is_the_mean_with_wilsons_interval():
    x = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    assert share(x) == pytest.approx(expect_share(x.astype(bool).tolist()))
    assert share(np.ones(4)) == pytest.approx(expect_share([True] * 4))
    assert all(math.isnan(v) for v in share(np.array([])))


@pytest.mark.parametrize("d", [[0.0, 1.0], [1, 0, 1], [-1.0, 0.0, 1.0, 1.0], [0.5, 0.25, 0.75, 0.0, 1.0]])
def test_mean_difference_is_the_t_interval_from_two_units_on(d):
    got = mean_difference(np.array(d))
    want = expect_diff(d)
    assert got[:3] == pytest.approx(want[:3]) and got[3] == want[3] == ""
    assert got[1] < got[0] < got[2]


def test_mean_difference_takes_booleans_and_lists():
    assert mean_difference([True, False, True])[:3] == pytest.approx(expect_diff([1.0, 0.0, 1.0])[:3])
    m, lo, hi, why = mean_difference([1, 1, 1])
    assert m == 1.0 and math.isnan(lo) and math.isnan(hi) and why == NO_VARIANCE


def test_join_drops_empty_and_repeated_reasons_in_order():
    assert _join() == ""
    assert _join("", "") == ""
    assert _join("b", "", "a", "b") == "b; a"


def test_sim_is_the_loop_flag_or_the_evaluators():
    flags = {("e1", "d1"): True, ("e1", "d2"): False}
    assert _sim(flags, {}, "e1", "d1") is True
    assert _sim(flags, {}, "e1", "d2") is False
    assert _sim(flags, {}, "e2", "d1") is False  # no such loop, no evaluator flag
    assert _sim(flags, {"e1": True}, "e1", "d2") is True
    assert _sim(flags, {"e2": True}, "e2", "d9") is True
    assert _sim(flags, {"e2": False}, "e1", "d2") is False
    assert _sim({}, {"e1": 0}, "e1", "d1") is False


# ---------------------------------------------------------------------------------
# Table 3


EXTERNAL = {"llmbar_verbosity": ("LLMBar", "verbosity"), "judgebench_verbosity": ("JudgeBench", "verbosity"),
            "judgebench_bandwagon": ("JudgeBench", "bandwagon")}


def _table3_world(n: int = 6):
    """Two evaluators (ev-b listed first; ev-b skips the last item), two detectors in config order
    d-z, d-a (d-a changes nothing), three external sets, plus rows Table 3 must leave out: a
    non-external set and a detector not asked for.  Returns the final frame and the planted
    outcomes (set, detector, judge) -> (before, after) per item."""
    rng = np.random.default_rng(11)
    planted: dict[tuple[str, str, str], tuple[list[bool], list[bool]]] = {}
    rows = []
    for set_name, (_, bias) in EXTERNAL.items():
        for judge in ("ev-b", "ev-a"):
            ks = range(n - 1) if judge == "ev-b" else range(n)
            before = [bool(x) for x in rng.integers(0, 2, n)]
            for det in ("d-z", "d-a"):
                after = [bool(x) for x in rng.integers(0, 2, n)] if det == "d-z" else list(before)
                planted[(set_name, det, judge)] = ([before[k] for k in ks], [after[k] for k in ks])
                rows += [final_row(judge, det, set_name, k, bias, before[k], after[k], d_right=k % 3 != 0)
                         for k in ks]
    noise = [final_row("ev-a", "d-z", "verbosity", k, "verbosity", False, True) for k in range(3)]
    noise += [final_row("ev-a", "d-other", "llmbar_verbosity", k, "verbosity", False, True) for k in range(3)]
    return pd.DataFrame(rows + noise), planted


def test_table3_every_cell_from_the_planted_outcomes():
    final, planted = _table3_world()
    t3 = table3(final, ["d-z", "d-a"], 2, {("ev-a", "d-z"): True}, {"ev-b": True})
    assert list(t3.columns) == TABLE3_COLUMNS and list(t3.index) == list(range(len(t3)))
    order = [(s, d, j) for s in ("llmbar_verbosity", "judgebench_verbosity", "judgebench_bandwagon")
             for d in ("d-z", "d-a") for j in ("ev-a", "ev-b", AVERAGE)]
    assert list(zip(t3["set"], t3["detector"], t3["judge"], strict=True)) == order
    for (set_name, det, judge), (_, row) in zip(order, t3.iterrows(), strict=True):
        bench, bias = EXTERNAL[set_name]
        head = {"benchmark": bench, "bias_type": bias, "set": set_name, "judge": judge, "detector": det,
                "iterations": 2}
        if judge != AVERAGE:
            before, after = planted[(set_name, det, judge)]
            a0, a1 = expect_share(before), expect_share(after)
            gain = expect_diff(np.array(after, float) - np.array(before, float))
            simulated = (judge, det) == ("ev-a", "d-z") or judge == "ev-b"
            n = len(before)
        else:  # each item once: its mean over the evaluators that judged it
            per_item: dict[int, list[tuple[bool, bool]]] = {}
            for j in ("ev-a", "ev-b"):
                for k, (b, a) in enumerate(zip(*planted[(set_name, det, j)], strict=True)):
                    per_item.setdefault(k, []).append((b, a))
            b_mean = [np.mean([b for b, _ in v]) for v in per_item.values()]
            a_mean = [np.mean([a for _, a in v]) for v in per_item.values()]
            a0, a1 = expect_diff(b_mean)[:3], expect_diff(a_mean)[:3]
            gain = expect_diff(np.array(a_mean) - np.array(b_mean))
            simulated, n = True, len(per_item)
        assert_row(row, {**head, "n": n, "acc_without": a0[0], "acc_without_ci_low": a0[1],
                         "acc_without_ci_high": a0[2], "acc_with": a1[0], "acc_with_ci_low": a1[1],
                         "acc_with_ci_high": a1[2], "gain": gain[0], "gain_ci_low": gain[1],
                         "gain_ci_high": gain[2], "simulated": simulated, "reason": gain[3]})
    assert (t3.loc[t3["detector"] == "d-a", "reason"] == NO_VARIANCE).all()  # d-a changes nothing
    assert (t3.loc[t3["detector"] == "d-z", "reason"] == "").any()


def test_table3_simulated_flags_per_row_and_over_evaluators():
    final, _ = _table3_world()
    t3 = table3(final, ["d-a"], 3, {("ev-b", "d-a"): True, ("ev-a", "d-z"): True}, {})
    sim = dict(zip(zip(t3["set"], t3["judge"], strict=True), t3["simulated"], strict=True))
    for set_name in EXTERNAL:
        assert (sim[(set_name, "ev-a")], sim[(set_name, "ev-b")], sim[(set_name, AVERAGE)]) == (False, True, True)
    assert (t3["iterations"] == 3).all() and set(t3["detector"]) == {"d-a"}
    clean = table3(final, ["d-a"], 3, {}, {"ev-a": False})
    assert not clean["simulated"].any()


def test_table3_without_external_rows_is_empty_with_its_columns():
    final, _ = _table3_world()
    for frame, detectors in ((final[~final["set"].isin(list(EXTERNAL))], ["d-z"]), (final, ["d-none"])):
        t3 = table3(frame, detectors, 2, {}, {})
        assert t3.empty and list(t3.columns) == TABLE3_COLUMNS


def test_table3_wide_leaves_missing_and_unknown_accuracies_empty():
    t3 = pd.DataFrame([
        {"benchmark": "LLMBar", "bias_type": "bandwagon", "judge": "ev", "detector": "d1", "acc_without": math.nan,
         "acc_with": 0.25},
        {"benchmark": "LLMBar", "bias_type": "bandwagon", "judge": "ev", "detector": "d2", "acc_without": math.nan,
         "acc_with": math.nan},
        {"benchmark": "LLMBar", "bias_type": "verbosity", "judge": AVERAGE, "detector": "d2", "acc_without": 0.125,
         "acc_with": 0.8},
    ])
    w = table3_wide(t3)
    assert list(w.columns) == ["bias_type", "judge", "LLMBar w/o", "LLMBar w/ d1", "LLMBar w/ d2"]
    rows = w.set_index(["bias_type", "judge"])
    assert rows.loc[("bandwagon", "ev")].tolist() == ["", "0.250", ""]  # NaN: an empty cell
    assert rows.loc[("verbosity", AVERAGE)].tolist() == ["0.125", "", "0.800"]  # no d1 row: an empty cell
    assert list(rows.index) == [("verbosity", AVERAGE), ("bandwagon", "ev")]
    empty = table3_wide(t3.iloc[:0])
    assert empty.empty and list(empty.columns) == ["bias_type", "judge"]


# ---------------------------------------------------------------------------------
# Table 4


def _reasons(*parts: str) -> str:
    return "; ".join(dict.fromkeys(p for p in parts if p))


def baseline_rows(judge: str, set_name: str, bias: str, plan: dict[int, tuple[bool | None, bool | None]],
                  simulated: bool | Sequence[bool] = False) -> list[dict]:
    """A baseline's verdict rows: item k -> (right on D?, right on D_bias?), None = no verdict row.
    Position's D_bias is the swapped order (gold flipped), as in the loop items."""
    rows = []
    for k, (d_ok, b_ok) in plan.items():
        g = k % 2
        for variant, ok, gold in (("D", d_ok, g), ("D_bias", b_ok, 1 - g if bias == "position" else g)):
            if ok is not None:
                rows.append({"judge": judge, "set": set_name, "item_id": f"{set_name}-{k}", "variant": variant,
                             "verdict": gold if ok else 1 - gold, "gold": gold, "simulated": False})
    if not isinstance(simulated, bool):
        for row, flag in zip(rows, simulated, strict=False):
            row["simulated"] = flag
    else:
        for row in rows:
            row["simulated"] = simulated
    return rows


def baseline_expected(bias: str, metric: str, plan: dict[int, tuple[bool | None, bool | None]]) -> dict[int, bool]:
    """Per item with a D_bias verdict: right on D_bias, and for consistency also on D (missing = wrong)."""
    return {k: bool(b) and (bool(d) if metric == "consistency" else True)
            for k, (d, b) in plan.items() if b is not None}


T4_SETS = {"verbosity": "verb-set", "position": "pos-set", "bandwagon": "bandwagon"}
# loop items of the evaluator with the detector: (before, after) per item; position: (D order before,
# swapped before, D order after, swapped after)
T4_LOOP = {
    "verbosity": [(True, True), (False, True), (False, False), (True, True), (False, True), (True, True)],
    "position": [(True, True, True, True), (False, True, True, True), (True, False, True, True),
                 (False, True, False, True), (True, True, True, True), (False, False, True, True)],
    "bandwagon": [(False, True), (False, False), (True, True), (True, True), (True, True), (False, True)],
}
T4_BASELINES = {  # method -> (kind, judge, simulated, {bias: plan})
    "icl": ("prompt", "ev", False, {
        "verbosity": {0: (True, True), 1: (True, False), 2: (True, None), 3: (True, True), 4: (True, False),
                      5: (True, True)},
        "position": {0: (True, True), 1: (None, True), 2: (False, True), 3: (True, False), 4: (True, True),
                     5: (True, True)}}),
    "ft": ("fine_tuned", "ft-model", [False, False, True], {
        "verbosity": {k: (True, k % 2 == 0) for k in range(6)},
        "position": {k: (k != 0, k != 5) for k in range(6)},
        "bandwagon": {k: (True, k < 3) for k in range(6)}}),
    "ft1": ("fine_tuned", "ft1-model", False, {"bandwagon": {4: (None, True)}}),
}


def _table4_world() -> tuple[pd.DataFrame, dict[str, tuple[str, pd.DataFrame]]]:
    rows = []
    for bias, plan in T4_LOOP.items():
        for k, p in enumerate(plan):
            if bias == "position":
                rows.append(final_row("ev", "det", T4_SETS[bias], k, bias, p[1], p[3], d_order_before=p[0],
                                      d_order_after=p[2]))
            else:
                rows.append(final_row("ev", "det", T4_SETS[bias], k, bias, p[0], p[1], d_right=k != 1))
            # other loops on the same items: another evaluator, another detector (all wrong after)
            rows.append(final_row("ev2", "det", T4_SETS[bias], k, bias, True, False))
            rows.append(final_row("ev", "det2", T4_SETS[bias], k, bias, True, False))
    baselines = {}
    for method, (kind, judge, simulated, plans) in T4_BASELINES.items():
        v = [r for bias, plan in plans.items() for r in baseline_rows(judge, T4_SETS[bias], bias, plan, simulated)]
        v += baseline_rows(judge, "other-set", "verbosity", {k: (False, False) for k in range(6)}, simulated)
        baselines[method] = (kind, pd.DataFrame(v))
    baselines["nothing"] = ("prompt", pd.DataFrame(columns=["judge", "set", "item_id", "variant", "verdict", "gold",
                                                            "simulated"]))
    return pd.DataFrame(rows), baselines


def test_table4_every_cell_from_the_planted_verdicts():
    final, baselines = _table4_world()
    key = "rbd.tables.baselines.judges[1]"
    t4 = table4(final, evaluator="ev", detector="det", bias_sets={"verbosity": "verb-set", "position": "pos-set"},
                baselines=baselines, sim_flags={("ev", "det"): True, ("ev", "det2"): False},
                verdict_flags={"ev2": True}, left_out={"sim-judge": key})
    assert list(t4.columns) == TABLE4_COLUMNS
    methods = ["Vanilla", "icl", "ft", "ft1", "nothing", "Ours", "sim-judge"]
    assert list(zip(t4["bias_type"], t4["method"], strict=True)) == [
        (b, m) for b in ("verbosity", "position", "bandwagon") for m in methods]  # no sentiment items: no rows
    got = t4.set_index(["bias_type", "method"])
    for bias, plan in T4_LOOP.items():
        metric = "consistency" if bias == "position" else "accuracy"
        if bias == "position":
            before = {k: p[0] and p[1] for k, p in enumerate(plan)}
            ours = {k: p[2] and p[3] for k, p in enumerate(plan)}
        else:
            before = {k: p[0] for k, p in enumerate(plan)}
            ours = {k: p[1] for k, p in enumerate(plan)}
        arms = {"Vanilla": ("vanilla", "ev", before, False)}
        for method, (kind, judge, simulated, plans) in T4_BASELINES.items():
            arms[method] = (kind, judge, baseline_expected(bias, metric, plans.get(bias, {})),
                            simulated if isinstance(simulated, bool) else any(simulated))  # any row simulated
        arms["nothing"] = ("prompt", "nothing", {}, False)
        for method, (kind, judge, x, simulated) in arms.items():
            common = [k for k in x if k in ours]
            diff = expect_diff([float(ours[k]) - float(x[k]) for k in common])
            s = expect_share(list(x.values()))
            assert_row(got.loc[(bias, method)], {
                "set": T4_SETS[bias], "metric": metric, "kind": kind, "judge": judge, "n": len(x), "value": s[0],
                "ci_low": s[1], "ci_high": s[2], "ours_minus": diff[0], "ours_minus_ci_low": diff[1],
                "ours_minus_ci_high": diff[2], "simulated": simulated,
                "reason": _reasons("no verdicts on these items" if not x else "", diff[3])})
        s = expect_share(list(ours.values()))
        assert_row(got.loc[(bias, "Ours")], {
            "set": T4_SETS[bias], "metric": metric, "kind": "rbd", "judge": "ev + det", "n": len(ours),
            "value": s[0], "ci_low": s[1], "ci_high": s[2], "ours_minus": math.nan, "ours_minus_ci_low": math.nan,
            "ours_minus_ci_high": math.nan, "simulated": True, "reason": ""})
        assert_row(got.loc[(bias, "sim-judge")], {
            "set": T4_SETS[bias], "metric": metric, "kind": "fine_tuned", "judge": "sim-judge", "n": 0,
            "value": math.nan, "ci_low": math.nan, "ours_minus": math.nan, "simulated": True,
            "reason": f"left out: a simulated stand-in in a real run ({key}; allow_simulated_roles admits it)"})
    # the evaluator's own verdicts flagged simulated: Vanilla is, whatever the loop's flags
    flagged = table4(final, evaluator="ev", detector="det", bias_sets=T4_SETS, baselines={}, sim_flags={},
                     verdict_flags={"ev": True}).set_index("method")
    assert flagged.loc["Vanilla", "simulated"].all() and flagged.loc["Ours", "simulated"].all()


def test_table4_names_a_baseline_by_its_verdicts_judge_even_with_one_verdict():
    final, _ = _table4_world()
    one = pd.DataFrame(baseline_rows("one-model", "bandwagon", "bandwagon", {2: (None, False)}, True))
    assert len(one) == 1
    t4 = table4(final, evaluator="ev", detector="det", bias_sets=T4_SETS, baselines={"one": ("fine_tuned", one)},
                sim_flags={}, verdict_flags={}).set_index(["bias_type", "method"])
    row = t4.loc[("bandwagon", "one")]
    assert (row["judge"], row["n"], row["value"], bool(row["simulated"])) == ("one-model", 1, 0.0, True)
    assert t4.loc[("verbosity", "one"), "judge"] == "one-model" and t4.loc[("verbosity", "one"), "n"] == 0


def test_table4_without_the_evaluators_items_is_empty_with_its_columns():
    final, baselines = _table4_world()
    for evaluator, detector in (("nobody", "det"), ("ev", "none")):
        t4 = table4(final, evaluator=evaluator, detector=detector, bias_sets=T4_SETS, baselines=baselines,
                    sim_flags={}, verdict_flags={}, left_out={"sim-judge": "k"})
        assert t4.empty and list(t4.columns) == TABLE4_COLUMNS


@pytest.mark.parametrize("metric", ["accuracy", "consistency"])
@pytest.mark.parametrize("bias", ["verbosity", "position"])
def test_baseline_outcomes_per_item(bias, metric):
    plan = {0: (True, True), 1: (False, True), 2: (None, True), 3: (True, None), 4: (True, False), 5: (False, False)}
    v = pd.DataFrame(baseline_rows("b", "s", bias, plan) + baseline_rows("b", "t", bias, {k: (True, True)
                                                                                        for k in range(6)}))
    ids = [f"s-{k}" for k in (5, 0, 1, 2, 3, 4, 9)]  # the loop's items, in its order; s-9 has no verdict
    out = _baseline_outcomes(v, "s", ids, bias, metric)
    want = baseline_expected(bias, metric, plan)
    if bias == "position" and metric == "accuracy":  # the swapped order alone
        want = {k: bool(b) for k, (_, b) in plan.items() if b is not None}
    assert out.dtype == np.float64
    assert out.to_dict() == {f"s-{k}": float(want[k]) for k in (5, 0, 1, 2, 4)}
    empty = _baseline_outcomes(v, "s", [], bias, metric)
    assert empty.empty and empty.dtype == np.float64


def test_wide_keeps_first_seen_rows_and_columns_and_empties_nan():
    long = pd.DataFrame({"bias_type": ["verbosity", "verbosity", "position", "bandwagon", "bandwagon"],
                         "metric": ["accuracy", "accuracy", "consistency", "accuracy", "accuracy"],
                         "method": ["Vanilla", "Ours", "Ours", "Vanilla", "Ours"],
                         "value": [0.5, 0.75, 0.6, math.nan, 1 / 3]})
    w = wide(long, ["bias_type", "metric"], "method", "value")
    assert list(w.columns) == ["bias_type", "metric", "Vanilla", "Ours"] and w.columns.name is None
    assert w.values.tolist() == [["verbosity", "accuracy", "0.500", "0.750"], ["position", "consistency", "", "0.600"],
                                 ["bandwagon", "accuracy", "", "0.333"]]
    # a repeated cell keeps its first value
    repeated = pd.concat([long, long[long["value"].notna()].assign(value=0.0)], ignore_index=True)
    assert wide(repeated, ["bias_type", "metric"], "method", "value").values.tolist() == w.values.tolist()
    empty = wide(long.iloc[:0], ["bias_type", "metric"], "method", "value")
    assert empty.empty and list(empty.columns) == ["bias_type", "metric"]


# ---------------------------------------------------------------------------------
# Table 5


def _position_right(v: tuple[bool, bool], metric: str) -> bool:
    return v[0] and v[1] if metric == "consistency" else v[1]


def _t5_row(judge: str, det: str, set_name: str, bias: str, k: int, before, after) -> dict:
    if bias == "position":
        return final_row(judge, det, set_name, k, bias, before[1], after[1], d_order_before=before[0],
                         d_order_after=after[0])
    return final_row(judge, det, set_name, k, bias, before, after)


def _table5_world():
    """Per (evaluator, bias): item -> (original, label-only final, reasoning final); position's
    outcomes are (D order right, swapped right).  The label-only loop lists its items in another
    order than the reasoning loop and each has items the other lacks (items 0 and 6)."""
    rng = np.random.default_rng(5)

    def draw(bias: str):
        if bias == "position":
            return tuple(bool(x) for x in rng.integers(0, 2, 2))
        return bool(rng.integers(0, 2))

    planted = {}
    for judge, biases in (("ev-b", ("position", "bandwagon")), ("ev-a", ("verbosity", "position"))):
        for bias in biases:
            planted[(judge, bias)] = {k: (draw(bias), draw(bias), draw(bias)) for k in range(7)}
    # no variance in either difference: all three arms equal on every item
    planted[("ev-b", "bandwagon")] = {k: (k % 2 == 0,) * 3 for k in range(7)}
    sets = {"verbosity": "verbosity", "position": "pos-set", "bandwagon": "bandwagon"}
    label, reasoning = [], []
    for (judge, bias), items in planted.items():
        for k in (3, 1, 5, 2, 4, 0):
            orig, lab, _ = items[k]
            label.append(_t5_row(judge, "det", sets[bias], bias, k, orig, lab))
            label.append(_t5_row(judge, "det2", sets[bias], bias, k, orig, orig))
        for k in (6, 5, 4, 3, 2, 1):
            orig, _, rea = items[k]
            reasoning.append(_t5_row(judge, "det", sets[bias], bias, k, orig, rea))
            reasoning.append(_t5_row(judge, "det2", sets[bias], bias, k, orig, orig))
    # an evaluator of the reasoning loop alone, on the same items: not in Table 5
    reasoning += [_t5_row("ev-c", "det", "bandwagon", "bandwagon", k, True, False) for k in range(7)]
    return pd.DataFrame(label), pd.DataFrame(reasoning), planted, sets


def test_table5_every_cell_from_the_planted_outcomes():
    label, reasoning, planted, sets = _table5_world()
    t5 = table5(reasoning, label, detector="det", bias_sets={"position": "pos-set"},
                sim_flags={("ev-a", "det"): True, ("ev-b", "det2"): True}, verdict_flags={"ev-b": False})
    assert list(t5.columns) == TABLE5_COLUMNS
    assert list(zip(t5["judge"], t5["bias_type"], strict=True)) == [
        ("ev-a", "verbosity"), ("ev-a", "position"), ("ev-b", "position"), ("ev-b", "bandwagon")]
    for (_, row), (judge, bias) in zip(t5.iterrows(), zip(t5["judge"], t5["bias_type"], strict=True), strict=True):
        metric = "consistency" if bias == "position" else "accuracy"
        ids = [3, 1, 5, 2, 4]  # in both loops

        def right(v, metric=metric, bias=bias):
            return float(_position_right(v, metric) if bias == "position" else v)

        o, lab, rea = ([right(planted[(judge, bias)][k][arm]) for k in ids] for arm in range(3))
        so, sl, sr = expect_share(o), expect_share(lab), expect_share(rea)
        lg = expect_diff(np.subtract(lab, o))
        rl = expect_diff(np.subtract(rea, lab))
        reason = _reasons(f"label gain: {lg[3]}" if lg[3] else "", f"reasoning - label: {rl[3]}" if rl[3] else "")
        assert_row(row, {
            "detector": "det", "set": sets[bias], "metric": metric, "n": len(ids), "original": so[0],
            "original_ci_low": so[1], "original_ci_high": so[2], "label_only": sl[0], "label_only_ci_low": sl[1],
            "label_only_ci_high": sl[2], "reasoning": sr[0], "reasoning_ci_low": sr[1], "reasoning_ci_high": sr[2],
            "label_gain": lg[0], "label_gain_ci_low": lg[1], "label_gain_ci_high": lg[2],
            "reasoning_minus_label": rl[0], "reasoning_minus_label_ci_low": rl[1],
            "reasoning_minus_label_ci_high": rl[2], "simulated": judge == "ev-a", "reason": reason})
    both = t5.set_index(["judge", "bias_type"]).loc[("ev-b", "bandwagon"), "reason"]
    assert both == f"label gain: {NO_VARIANCE}; reasoning - label: {NO_VARIANCE}"


def test_table5_without_common_items_is_empty_with_its_columns():
    label, reasoning, _, _ = _table5_world()
    for det in ("det", "none"):
        t5 = table5(reasoning.iloc[:0] if det == "det" else reasoning, label, detector=det, bias_sets={},
                    sim_flags={}, verdict_flags={})
        assert t5.empty and list(t5.columns) == TABLE5_COLUMNS


# ---------------------------------------------------------------------------------
# Fig. 6


def _t2_rows(det: str, cells: dict[tuple[str, str], tuple[float, float, float, float]], T: int = 3) -> list[dict]:
    return [{"judge": j, "detector": det, "set": s, "iterations": T, "acc_without": a0, "acc_with": a1,
             "consistency_without": c0, "consistency_with": c1} for (j, s), (a0, a1, c0, c1) in cells.items()]


def test_fig6_reads_the_configured_set_names_and_drops_missing_cells():
    bias_sets = {"verbosity": "verb-set", "position": "pos-set"}
    cells = {("a", "verb-set"): (0.5, 0.75, 0.25, 0.5), ("b", "verb-set"): (0.5, 0.5, 0.5, 0.75),
             ("a", "pos-set"): (0.25, 1.0, 0.5, 0.5), ("b", "pos-set"): (0.5, 0.0, 0.25, 1.0),
             ("a", "bandwagon"): (0.75, 1.0, math.nan, 0.5), ("b", "sentiment"): (math.nan, 0.5, 0.25, 0.25)}
    t2 = pd.DataFrame(_t2_rows("d", cells) + _t2_rows("d", {("a", "verbosity"): (0.0, 1.0, 0.0, 1.0),
                                                               ("a", "position"): (0.0, 1.0, 0.0, 1.0)}))
    out = size_gains(t2, {"8B": "d"}, max_iterations=3, bias_sets=bias_sets)
    assert list(out.columns) == FIG6_COLUMNS and len(out) == 1
    acc = [a1 - a0 for (_, s), (a0, a1, _, _) in cells.items() if s != "pos-set" and not math.isnan(a1 - a0)]
    con = [c1 - c0 for (a0, a1, c0, c1) in cells.values() if not math.isnan(c1 - c0)]
    a, c = expect_diff(acc), expect_diff(con)
    assert_row(out.iloc[0], {"size": "8B", "detector": "d", "iterations": 3, "n_cells": len(cells),
                             "acc_gain": a[0], "acc_gain_ci_low": a[1], "acc_gain_ci_high": a[2],
                             "consistency_gain": c[0], "consistency_gain_ci_low": c[1],
                             "consistency_gain_ci_high": c[2], "simulated": False, "reason": ""})


def test_fig6_reasons_and_flags():
    flat = {(j, s): (0.5, 0.75, 0.5, 0.5) for j in ("a", "b") for s in ("verbosity", "position", "bandwagon")}
    t2 = pd.DataFrame(_t2_rows("d-flat", flat))
    out = size_gains(t2, {"1.5B": "d-flat", "7B": "d-none"}, max_iterations=3, bias_sets={},
                     simulated=["d-none"]).set_index("size")
    assert out.loc["1.5B", "reason"] == f"accuracy: {NO_VARIANCE}; consistency: {NO_VARIANCE}"
    assert out.loc["1.5B", "acc_gain"] == pytest.approx(0.25) and out.loc["1.5B", "consistency_gain"] == 0.0
    assert not out.loc["1.5B", "simulated"] and out.loc["7B", "simulated"]
    assert out.loc["7B", "reason"] == "detector not in the loop's Table 2" and out.loc["7B", "n_cells"] == 0
    assert math.isnan(out.loc["7B", "acc_gain"]) and math.isnan(out.loc["7B", "consistency_gain"])
    panel = size_gains(t2, {"1.5B": "d-flat"}, max_iterations=3, bias_sets={}, panel_simulated=True)
    assert panel["simulated"].tolist() == [True]
    for flag in (False, True):
        none = size_gains(t2, {}, max_iterations=2, bias_sets={}, panel_simulated=flag)
        assert list(none.columns) == FIG6_COLUMNS and len(none) == 1
        assert_row(none.iloc[0], {"size": "", "detector": "", "iterations": 2, "n_cells": 0, "acc_gain": math.nan,
                                  "consistency_gain": math.nan, "simulated": flag,
                                  "reason": "no loop detector has a size (rbd.detectors[i].size)"})
