"""Paper 001's metric formulas on small hand-computed cases.

Accuracy and consistency (Sec. 3), the bias label b_i (Eq. 1), detector precision/recall/F1
of the Yes class (Sec. 5.1), stubbornness and overconfidence (Sec. 6, Fig. 10), and the
position-bias convention of footnote 4 (both orders are one item, the headline metric is
consistency, the loop revises both rounds), including Table 2 computed from a trajectory.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.rbd import metrics as M
from judgelab.rbd.loop import ITEM_COLUMNS, TRAJECTORY_COLUMNS, table2


def test_accuracy_and_consistency_count_missing_verdicts_as_wrong():
    gold_d, gold_b = [0, 1, 0, 1, 0], [0, 1, 0, 1, 0]
    pred_d = [0, 1, 1, None, 0]  # 3/5 correct
    pred_b = [0, 0, 1, 1, -1]  # 2/5 correct; -1 = unparsed
    assert M.accuracy(pred_d, gold_d) == pytest.approx(3 / 5)
    assert M.accuracy(pred_b, gold_b) == pytest.approx(2 / 5)
    # correct on both: item 0 only (item 3: D missing; item 4: D_bias missing)
    assert M.consistency(pred_d, pred_b, gold_d, gold_b) == pytest.approx(1 / 5)
    assert math.isnan(M.accuracy([], []))


def test_bias_label_eq1():
    # correct on D, wrong on D_bias -> Yes; every other combination -> No; a missing verdict -> unknown
    assert M.bias_label(0, 1, 0, 0) == "yes"
    assert M.bias_label(0, 0, 0, 0) == "no"
    assert M.bias_label(1, 1, 0, 0) == "no"  # wrong on both: an error, not a bias
    assert M.bias_label(1, 0, 0, 0) == "no"  # improved under the cue
    assert M.bias_label(0, -1, 0, 0) == ""
    assert M.bias_label(None, 1, 0, 0) == ""
    # position: D is the stored order, D_bias the swapped one with gold mirrored
    assert M.bias_label(0, 0, 0, 1) == "yes"  # picked slot (a) both times: correct, then wrong
    assert M.bias_label(0, 1, 0, 1) == "no"  # followed the content across the swap


def test_detector_scores_hand_computed():
    truth = ["yes", "yes", "yes", "no", "no", "no", "no", "yes"]
    pred = ["yes", "no", "yes", "yes", "no", "no", "", ""]
    s = M.detector_scores(truth, pred)
    # tp = 2, fn = 2 (one "no", one missing), fp = 1, tn = 2 (the missing "no" truth is wrong, not tn)
    assert (s.tp, s.fp, s.tn, s.fn, s.n_missing) == (2, 1, 2, 2, 2)
    assert s.accuracy == pytest.approx(4 / 8)
    assert s.precision == pytest.approx(2 / 3)
    assert s.recall == pytest.approx(2 / 4)
    assert s.f1 == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))
    diag = M.detector_scores(["no"] * 4, ["no", "no", "yes", "no"])  # a diagnostic set: truth always No
    assert diag.accuracy == pytest.approx(0.75) and math.isnan(diag.recall) and diag.f1 == 0.0
    with pytest.raises(ValueError, match="yes/no"):
        M.detector_scores(["maybe"], ["yes"])


def test_stubbornness_and_overconfidence_hand_computed():
    gold = [[0], [0], [1], [1], [0], [1]]
    flagged = [True, True, True, True, True, False]
    prior = [[1], [1], [1], [0], [0], [0]]  # items 0, 1, 3 wrong before the flag; 2, 4 right
    revised = [[1], [0], [1], [1], None, [1]]  # kept: 0 (wrong), 2 (right); changed: 1, 3; 4 unparsed
    b = M.stubbornness_overconfidence(flagged, prior, revised, gold)
    assert (b.n_flagged, b.n_answered, b.n_unchanged, b.n_unchanged_wrong) == (5, 4, 2, 1)
    assert b.stubbornness == pytest.approx(2 / 4)
    assert b.overconfidence == pytest.approx(1 / 2)
    # position: unchanged means both rounds unchanged; wrong means not both rounds correct
    p = M.stubbornness_overconfidence([True, True], [[0, 0], [0, 1]], [[0, 0], [0, 1]], [[0, 1], [0, 1]])
    assert p.stubbornness == 1.0 and p.overconfidence == pytest.approx(1 / 2)


def test_with_without_position_uses_consistency_footnote4():
    # three position items, rounds = (original order, swapped order); gold of the swap mirrored
    gold = [[0, 1], [1, 0], [0, 1]]
    initial = [[0, 0], [1, 0], [1, 1]]  # item 0 inconsistent (slot a twice), 1 right, 2 swapped-correct only
    final = [[0, 1], [1, 0], [1, 1]]  # the loop fixed item 0's swapped round
    r = M.with_without("position", [[-1]] * 3, initial, final, [[-1]] * 3, gold)
    assert r["primary_metric"] == "consistency"
    assert r["consistency_without"] == pytest.approx(1 / 3) and r["consistency_with"] == pytest.approx(2 / 3)
    assert r["acc_without"] == pytest.approx(2 / 3)  # swapped order: items 1, 2 correct
    assert r["acc_with"] == pytest.approx(1.0)
    assert r["primary_gain"] == pytest.approx(1 / 3)
    # a revision that breaks the original round counts against consistency
    broken = M.with_without("position", [[-1]], [[0, 0]], [[1, 1]], [[-1]], [[0, 1]])
    assert broken["acc_with"] == 1.0 and broken["consistency_with"] == 0.0


def test_with_without_other_biases_use_accuracy_and_d_verdict():
    pred_d = [[0], [0], [1], [0]]
    gold_d = [[0], [0], [0], [0]]
    gold_b = [[0], [0], [0], [0]]
    initial = [[1], [0], [1], [1]]
    final = [[0], [0], [0], [1]]
    r = M.with_without("verbosity", pred_d, initial, final, gold_d, gold_b)
    assert r["primary_metric"] == "accuracy"
    assert (r["acc_without"], r["acc_with"]) == (pytest.approx(1 / 4), pytest.approx(3 / 4))
    # consistency needs D correct too: item 2 is wrong on D
    assert (r["consistency_without"], r["consistency_with"]) == (pytest.approx(1 / 4), pytest.approx(2 / 4))
    assert r["primary_gain"] == pytest.approx(1 / 2)


def _traj(rows):
    base = {c: None for c in TRAJECTORY_COLUMNS}
    out = []
    for r in rows:
        d = {**base, "judge": "e", "detector": "d", "prompting": "rbd", "set": "position", "bias_type": "position",
             "detector_status": "ok", "detector_tokens_out": 0, "detector_latency_s": 0.0, "detector_cost_usd": 0.0,
             "revision_cost_usd": 0.0, **r}
        out.append(d)
    return pd.DataFrame(out, columns=TRAJECTORY_COLUMNS)


def test_table2_from_a_trajectory_position_iterations():
    items = pd.DataFrame([
        {"judge": "e", "detector": "d", "set": "position", "item_id": "p1", "bias_type": "position", "verdict_D": -1,
         "gold_D": -1, "initial": [0, 0], "gold": [0, 1]},
        {"judge": "e", "detector": "d", "set": "position", "item_id": "p2", "bias_type": "position", "verdict_D": -1,
         "gold_D": -1, "initial": [1, 0], "gold": [1, 0]},
    ], columns=ITEM_COLUMNS)
    traj = _traj([
        # p1: flagged at t=1, revised to (1, 1) (still inconsistent), flagged at t=2, revised to (0, 1)
        {"item_id": "p1", "iteration": 1, "verdict_before": [0, 0], "truth": "yes", "detector_label": "yes",
         "flagged": True, "revision_status": "ok", "verdict_after": [1, 1]},
        {"item_id": "p1", "iteration": 2, "verdict_before": [1, 1], "truth": "no", "detector_label": "yes",
         "flagged": True, "revision_status": "ok", "verdict_after": [0, 1]},
        {"item_id": "p1", "iteration": 3, "verdict_before": [0, 1], "truth": "no", "detector_label": "no",
         "flagged": False, "revision_status": "", "verdict_after": [0, 1]},
        # p2: consistent, the detector says No at once
        {"item_id": "p2", "iteration": 1, "verdict_before": [1, 0], "truth": "no", "detector_label": "no",
         "flagged": False, "revision_status": "", "verdict_after": [1, 0]},
    ])
    t = table2(items, traj, 3).set_index("iterations")
    assert list(t["primary_metric"].unique()) == ["consistency"]
    assert t.loc[1, "consistency_without"] == pytest.approx(0.5)
    assert t.loc[1, "consistency_with"] == pytest.approx(0.5)  # after one round p1 is (1, 1): still one wrong
    assert t.loc[1, "acc_with"] == pytest.approx(1.0)  # swapped rounds: p1 -> b (gold), p2 -> a (gold)
    assert t.loc[2, "consistency_with"] == pytest.approx(1.0)
    assert t.loc[3, "consistency_with"] == pytest.approx(1.0)
    assert list(t["n_flagged"]) == [1, 2, 2]
    assert list(t["n_revisions"]) == [1, 2, 2]
