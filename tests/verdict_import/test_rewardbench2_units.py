"""Units of :mod:`judgelab.verdict_import.rewardbench2_log`: every record field, the row count, and
each refusal's exact line, on small files written the way RewardBench 2's ``save_to_hub`` writes them
(one JSON object of columns; the real fixture is checked in tests/verdict_import/test_tools_presets.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from judgelab.io import InputError
from judgelab.verdict_import.rewardbench2_log import iter_rewardbench2_records


def _file(tmp_path: Path, **cols) -> Path:
    doc = {"id": ["p0", "p1"], "subset": ["Math", "Ties"], "num_correct": [1, 2],
           "scores": [[2.0, 1.0, 0.5], [3.0, 2.5, 1.0]], "model": "rm", **cols}
    doc = {k: v for k, v in doc.items() if v is not None}
    path = tmp_path / "rm.json"
    path.write_text(json.dumps(doc, indent=4, sort_keys=True))
    return path


def test_records_carry_every_field_and_rows_count_from_zero(tmp_path: Path) -> None:
    path = _file(tmp_path, text=[["a", "b", "c"], ["x", "y", "z"]], results=[1, 0])
    got = list(iter_rewardbench2_records(path))
    assert [r for r, _ in got] == [0, 1, 2, 3]
    assert got[0][1] == {"model": "rm", "id": "p0", "subset": "Math", "chosen_index": 0, "rejected_index": 1,
                         "scores": [2.0, 1.0], "text_chosen": "a", "text_rejected": "b", "result": 1}
    assert [(r["chosen_index"], r["rejected_index"]) for _, r in got] == [(0, 1), (0, 2), (0, 2), (1, 2)]
    assert got[3][1]["text_chosen"] == "y" and got[3][1]["text_rejected"] == "z" and got[3][1]["result"] == 0


def test_without_text_and_results_those_fields_are_none(tmp_path: Path) -> None:
    (_, rec), *_ = iter_rewardbench2_records(_file(tmp_path))
    assert rec["text_chosen"] is None and rec["text_rejected"] is None and rec["result"] is None
    # a results value that is no list is not a column
    (_, rec), *_ = iter_rewardbench2_records(_file(tmp_path, results="n/a"))
    assert rec["result"] is None


def _refused(path: Path) -> str:
    with pytest.raises(InputError) as err:
        list(iter_rewardbench2_records(path))
    return str(err.value)


def test_each_refusal_is_its_own_exact_line(tmp_path: Path) -> None:
    p = _file(tmp_path)
    p.write_text("[1, 2]")
    assert _refused(p) == (f"{p}: format 'rewardbench2' expects one JSON object (of columns id, subset, "
                           f"num_correct, scores, ...), got a list")
    keys = [f"k{i:02d}" for i in range(14)]
    p.write_text(json.dumps({key: [] for key in keys}))
    assert _refused(p) == (f"{p}: format 'rewardbench2' expects key 'id', missing (keys {keys[:12]}); "
                           f"is this a RewardBench 2 eval-set-scores file?")
    assert _refused(_file(tmp_path, subset="Math")) == (
        f"{p}: key 'subset' should be a list (one entry per prompt), got str")
    assert _refused(_file(tmp_path, scores=[[], [1.0, 0.0]])) == (
        f"{p} prompt 0 (id 'p0'): key 'scores' should hold a list of rewards, got []")
    assert _refused(_file(tmp_path, scores=[7, [1.0, 0.0]])) == (
        f"{p} prompt 0 (id 'p0'): key 'scores' should hold a list of rewards, got 7")
    assert _refused(_file(tmp_path, text=[["a", "b", "c"], ["x"]])) == (
        f"{p} prompt 1 (id 'p1'): key 'text' should hold one text per score (3)")
    assert _refused(_file(tmp_path, text=[["a", "b", "c"], "xyz"])) == (
        f"{p} prompt 1 (id 'p1'): key 'text' should hold one text per score (3)")


@pytest.mark.parametrize("k", [0, 3, 1.5, True, "1"])
def test_num_correct_must_count_some_but_not_all_completions(tmp_path: Path, k: object) -> None:
    msg = _refused(_file(tmp_path, num_correct=[k, 2]))
    assert re.fullmatch(r".* prompt 0 \(id 'p0'\): key 'num_correct' is .*; it must count the chosen completions "
                        r"\(at least 1, fewer than the 3 scores\)", msg)


def test_a_whole_float_count_is_a_count(tmp_path: Path) -> None:
    got = list(iter_rewardbench2_records(_file(tmp_path, num_correct=[2.0, 2])))
    assert [(r["chosen_index"], r["rejected_index"]) for _, r in got[:2]] == [(0, 2), (1, 2)]
