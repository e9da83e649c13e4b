"""Paper 002's temperature-1 flip rate row (``judgelab/reproduction/topk.py``): read from the flip
judge's ``flip_rate/<judge>.csv`` (the study's own :func:`judgelab.topk.flips.flip_summary` on a
verdict table with hand-counted flips), in percent with the table's interval; the judge standing
for GPT-4o-mini, not another flip judge; said to be another temperature or another judge's; and
without a flip table, no value and why."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from judgelab.io import write_table
from judgelab.reproduction import reproduce
from judgelab.topk.flips import flip_summary
from judgelab.workflow import provenance

CELL = "GPT-4o-mini: temperature-1 flip rate across repeats (%)"
MINI = {"name": "gpt-4o-mini", "backend": "openai", "model": "gpt-4o-mini", "options": {"api_key_env": None}}
OTHER = {"name": "aaa-judge", "backend": "openai", "model": "x", "options": {"api_key_env": None}}


def _verdicts(n_pairs: int, flipped_pairs: int, repeats: int = 5) -> pd.DataFrame:
    """``n_pairs`` pairs asked ``repeats`` times; in ``flipped_pairs`` of them one answer differs.
    Hand count: such a pair has repeats - 1 disagreeing comparisons of C(repeats, 2)."""
    rows = []
    for i in range(n_pairs):
        for r in range(repeats):
            rows.append({"pair_id": f"o0:{i}>{i + 1}", "verdict": "B" if (i < flipped_pairs and r == 0) else "A"})
    return pd.DataFrame(rows)


def _flip_file(root: Path, judge: dict, table: pd.DataFrame, temperature: float = 1.0, simulated: bool = False) -> str:
    summary = flip_summary(table, judge=judge["name"], simulated=simulated, temperature=temperature, repeats=5,
                           n_pairs=table["pair_id"].nunique())
    path = root / "flip_rate" / f"{judge['name']}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(summary, path, provenance=provenance("h", 0, [judge]))
    return str(path)


def _row(root: Path, files: list[str], entries: dict) -> pd.Series:
    return reproduce("topk", root, files, entries, {"focus": "aaa-judge"}).set_index("cell").loc[CELL]


def test_the_flip_rate_row_reads_the_gpt_4o_mini_table_in_percent(tmp_path):
    root = tmp_path / "topk"
    # 20 pairs x 5 asks, one odd answer in 4 pairs: 4 x 4 disagreeing of 20 x 10 comparisons = 8 %
    mini = _flip_file(root, MINI, _verdicts(20, 4))
    other = _flip_file(root, OTHER, _verdicts(20, 15))  # sorts first: a lookup by the wrong key reads it
    summary = pd.read_csv(mini)
    assert summary["n_flipped"].iloc[0] == 16 and summary["n_comparisons"].iloc[0] == 200
    row = _row(root, [mini, other], {"gpt-4o-mini": MINI, "aaa-judge": OTHER})
    assert row["run_value"] == pytest.approx(8.0)
    assert (row["run_ci_low"], row["run_ci_high"]) == pytest.approx(
        (100 * summary["ci_low"].iloc[0], 100 * summary["ci_high"].iloc[0]))
    assert row["run_ci_low"] < 8.0 < row["run_ci_high"]
    assert row["provenance"] == "real" and row["verdict"] == "reproduced", row["reason"]
    assert row["paper_value"] == 8.0 and row["paper_precision"] == 0.5


def test_another_temperature_or_another_judge_is_not_comparable(tmp_path):
    root = tmp_path / "topk"
    hot = _flip_file(root, MINI, _verdicts(20, 4), temperature=0.7)
    row = _row(root, [hot], {"gpt-4o-mini": MINI})
    assert row["run_value"] == pytest.approx(8.0) and row["verdict"] == "not comparable"
    assert row["reason"].startswith("temperature 0.7, the paper's 1"), row["reason"]
    # only another judge was asked (the default: the focus judge): its rate, said to be another judge's
    root2 = tmp_path / "topk2"
    other = _flip_file(root2, OTHER, _verdicts(20, 15))
    row = _row(root2, [other], {"aaa-judge": OTHER})
    assert row["run_value"] == pytest.approx(100 * 15 * 4 / 200)
    assert row["verdict"] == "not comparable"
    assert row["reason"].startswith("other judges than the paper's (paper: gpt-4o-mini; run: aaa-judge)")


def test_a_simulated_flip_judge_is_simulated_not_planted(tmp_path):
    root = tmp_path / "topk"
    sim = {"name": "sim-gpt-4o-mini", "backend": "simulated", "model": "s",
           "options": {"profile": {"competence": 2.0, "biases": {"verbosity": 0.2}}}}
    f = _flip_file(root, sim, _verdicts(20, 4), simulated=True)
    row = _row(root, [f], {"sim-gpt-4o-mini": sim})
    assert row["run_value"] == pytest.approx(8.0)
    assert row["provenance"] == "simulated" and row["verdict"] == "not comparable"


def test_without_a_flip_table_the_row_says_why(tmp_path):
    root = tmp_path / "topk"
    row = _row(root, [], {"gpt-4o-mini": MINI})
    assert pd.isna(row["run_value"]) and row["verdict"] == "not comparable"
    assert "no flip-rate table in this run" in row["reason"]
    # a table an older run left on disk is not among this run's outputs: not read
    _flip_file(root, MINI, _verdicts(20, 4))
    row = _row(root, [], {"gpt-4o-mini": MINI})
    assert pd.isna(row["run_value"]) and "no flip-rate table in this run" in row["reason"]
    # a judge that never gave two usable answers: the table's status is the reason
    empty = pd.DataFrame({"pair_id": ["o0:0>1", "o0:1>2"], "verdict": ["A", ""]})
    f = _flip_file(root, MINI, empty)
    row = _row(root, [f], {"gpt-4o-mini": MINI})
    assert pd.isna(row["run_value"]) and "no pair has two usable answers" in row["reason"]
