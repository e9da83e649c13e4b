"""Paper 001's rows against the ``rbd`` study's tables (``judgelab/reproduction/rbd.py``), cell by cell,
from hand-written tables in the study's layout.

* The best detector is the fine-tuned RBD detector with the highest scored test accuracy over all bias
  types, its Wilson interval from the confusion counts (statsmodels); zero-shot detectors, other subsets,
  per-type rows and unscored rows are not candidates.
* The evaluated items per set are the largest ``n_items`` of the evaluators' rows (not the pooled row);
  the paper's 500 are comparable, another count is named.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from judgelab.reproduction import reproduce

DET = "best fine-tuned RBD detector accuracy (test set)"
VERB = "share of biased examples, verbosity (%)"
REAL = {"name": "rbd-14b", "backend": "openai", "model": "m", "options": {"api_key_env": None}}


def _csv(root, name: str, rows: list[dict]) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _metric(detector: str, tp: int, tn: int, *, prompting: str = "rbd", subset: str = "test", bias_type: str = "all",
            scored: bool = True) -> dict:
    fp, fn = 50 - tn, 50 - tp
    return {"detector": detector, "prompting": prompting, "subset": subset, "bias_type": bias_type, "tp": tp, "fp": fp,
            "tn": tn, "fn": fn, "accuracy": (tp + tn) / 100 if scored else float("nan"), "simulated": False}


def test_the_best_detector_is_the_most_accurate_scored_rbd_detector_on_the_test_set(tmp_path):
    rows = [_metric("zs", 50, 50, prompting="zero_shot"), _metric("rbd-8b", 49, 49, subset="train"),
            _metric("rbd-8b", 50, 50, bias_type="verbosity"), _metric("rbd-1.5b", 45, 45, scored=False),
            _metric("rbd-8b", 40, 40), _metric("rbd-14b", 42, 41), _metric("rbd-7b", 40, 43)]
    f = _csv(tmp_path, "detectors/metrics.csv", rows)
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    lo, hi = proportion_confint(83, 100, method="wilson")
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.83, lo, hi))
    # the first of two equally accurate detectors in the table's order (a stable sort)
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-14b", 42, 41), _metric("rbd-7b", 41, 42)])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert row["verdict"] == "reproduced", row["reason"]  # rbd-14b, the paper's detector: comparable
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-7b", 41, 42), _metric("rbd-14b", 42, 41)])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert row["reason"].startswith("other judges than the paper's (paper: rbd-14b; run: rbd-7b)"), row["reason"]


def test_no_scored_detector_says_so(tmp_path):
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-14b", 45, 45, scored=False),
                                                 _metric("zs", 45, 45, prompting="zero_shot")])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert math.isnan(row["run_value"])
    assert row["reason"] == ("this run has no value: no fine-tuned RBD detector with a scored test set in "
                             "detectors/metrics.csv")
