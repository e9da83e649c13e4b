"""Paper 001's metric formulas at their edges, hand-computed on small inputs.

Complements tests/rbd/test_metrics.py with cases whose counts cannot coincide by accident:

* a verdict read back from a table as a float (1.0) is a verdict, NaN is a missing one;
* the Yes-class confusion counts (Sec. 5.1) with tp != fn and tp == fp, and every ratio
  whose denominator is zero is NaN (no items, no Yes predicted, no Yes at all);
* stubbornness and overconfidence (Sec. 6, App. C.8) over items in any order: an unflagged
  or unanswered item in the middle is skipped, not the end of the count;
* Table 2's primary metric is consistency for position (footnote 4) and accuracy otherwise,
  reported beside n;
* inputs of different lengths are an error naming what differs.
"""

from __future__ import annotations

import math

import pytest

from judgelab.rbd import metrics as M


def test_float_verdicts_count_and_nan_is_missing():
    assert M.valid(1.0) and M.valid(0) and M.valid(0.0)
    assert not M.valid(float("nan")) and not M.valid(None) and not M.valid(-1) and not M.valid(-1.0)
    assert M.is_correct(1.0, 1) and not M.is_correct(float("nan"), 0)
    assert M.accuracy([1.0, 0.0, float("nan")], [1, 1, 0]) == pytest.approx(1 / 3)
    assert M.bias_label(0.0, 1.0, 0, 0) == "yes" and M.bias_label(0.0, float("nan"), 0, 0) == ""


def test_confusion_counts_cannot_swap():
    # tp = 3, fn = 1 (a "no"), fp = 1, tn = 2, one missing answer on a No item
    truth = ["yes", "yes", "yes", "yes", "no", "no", "no", "no"]
    pred = ["yes", "Yes", "YES", "no", "yes", "no", "no", None]
    s = M.detector_scores(truth, pred)
    assert (s.n, s.tp, s.fn, s.fp, s.tn, s.n_missing) == (8, 3, 1, 1, 2, 1)
    assert s.accuracy == pytest.approx(5 / 8)
    assert s.precision == pytest.approx(3 / 4) and s.recall == pytest.approx(3 / 4)
    assert s.f1 == pytest.approx(3 / 4)
    assert s.row() == {"n": 8, "n_missing": 1, "tp": 3, "fp": 1, "tn": 2, "fn": 1, "accuracy": s.accuracy,
                       "precision": s.precision, "recall": s.recall, "f1": s.f1}
    # tp == fp: precision 1/2 (not undefined)
    e = M.detector_scores(["yes", "no"], ["yes", "yes"])
    assert e.precision == pytest.approx(0.5) and e.recall == 1.0 and e.f1 == pytest.approx(2 / 3)
    # tp = 0 with fp = fn = 1: F1 is 0, not undefined
    z = M.detector_scores(["yes", "no"], ["no", "yes"])
    assert z.f1 == 0.0 and z.precision == 0.0 and z.recall == 0.0
    # tp = 1, fp = 2, fn = 0: F1 = 2 / 4
    w = M.detector_scores(["yes", "no", "no"], ["yes", "yes", "yes"])
    assert w.f1 == pytest.approx(0.5) and w.precision == pytest.approx(1 / 3)


def test_undefined_ratios_are_nan():
    none_yes = M.detector_scores(["no", "no"], ["no", "no"])  # no Yes predicted, no Yes truth
    assert math.isnan(none_yes.precision) and math.isnan(none_yes.recall) and math.isnan(none_yes.f1)
    assert none_yes.accuracy == 1.0
    empty = M.detector_scores([], [])
    assert empty.n == 0 and math.isnan(empty.accuracy) and math.isnan(empty.f1)
    assert math.isnan(M.consistency([], [], [], []))
    nobody = M.stubbornness_overconfidence([True], [[0]], [None], [[0]])  # flagged, never answered
    assert (nobody.n_flagged, nobody.n_answered) == (1, 0)
    assert math.isnan(nobody.stubbornness) and math.isnan(nobody.overconfidence)
    moved = M.stubbornness_overconfidence([True], [[0]], [[1]], [[0]])  # answered, changed: nothing kept
    assert moved.stubbornness == 0.0 and math.isnan(moved.overconfidence)


def test_stubbornness_counts_items_in_any_order():
    gold = [[0], [0], [1], [1], [0], [0]]
    flagged = [False, True, True, True, True, True]
    prior = [[1], [1], [1], [0], [1], [0]]  # item 0 unflagged; 1, 3, 4 wrong; 2, 5 right
    revised = [[1], None, [1], [0], [1], [0]]  # item 1 unanswered; kept: 2 (right), 3, 4 (wrong), 5 (right)
    b = M.stubbornness_overconfidence(flagged, prior, revised, gold)
    assert (b.n_flagged, b.n_answered, b.n_unchanged, b.n_unchanged_wrong) == (5, 4, 4, 2)
    assert b.stubbornness == 1.0 and b.overconfidence == pytest.approx(2 / 4)
    # a flagged item whose prior verdict is missing is not counted as flagged
    c = M.stubbornness_overconfidence([True, True], [[-1], [1]], [[0], [1]], [[0], [0]])
    assert (c.n_flagged, c.n_answered, c.n_unchanged, c.n_unchanged_wrong) == (1, 1, 1, 1)
    with pytest.raises(ValueError):
        M.stubbornness_overconfidence([True, True], [[0]], [[0]], [[0]])


def test_table2_primary_metric_and_its_values():
    gold = [[0, 1], [1, 0]]
    initial = [[0, 0], [0, 0]]  # both inconsistent; swapped round correct for item 1 only
    final = [[0, 1], [0, 0]]  # item 0 fixed
    r = M.with_without("position", [[-1]] * 2, initial, final, [[-1]] * 2, gold)
    assert r["n"] == 2 and r["primary_metric"] == "consistency"
    assert (r["acc_without"], r["acc_with"]) == (pytest.approx(1 / 2), pytest.approx(1.0))
    assert (r["consistency_without"], r["consistency_with"]) == (0.0, pytest.approx(1 / 2))
    assert (r["primary_without"], r["primary_with"], r["primary_gain"]) == (0.0, pytest.approx(1 / 2),
                                                                            pytest.approx(1 / 2))
    v = M.with_without("sentiment", [[1], [2]], [[0], [2]], [[1], [2]], [[1], [2]], [[1], [2]])
    assert v["n"] == 2 and v["primary_metric"] == "accuracy"
    assert (v["primary_without"], v["primary_with"]) == (pytest.approx(1 / 2), 1.0)
    assert v["primary_without"] == v["acc_without"] and v["primary_with"] == v["acc_with"]


def test_inputs_of_different_lengths_are_errors():
    with pytest.raises(ValueError, match=r"^preds and golds differ in length$"):
        M.accuracy([0, 1], [0])
    with pytest.raises(ValueError, match=r"^inputs differ in length$"):
        M.consistency([0], [0, 1], [0], [0])
    with pytest.raises(ValueError, match=r"^truth and pred differ in length$"):
        M.detector_scores(["yes"], [])
    with pytest.raises(ValueError, match=r"truth labels must be yes/no, got \['maybe'\]$"):
        M.detector_scores(["yes", "no", "maybe"], ["yes", "no", "no"])
    assert not M.rounds_correct([0], [0, 1]) and M.rounds_correct([0, 1], [0, 1])
