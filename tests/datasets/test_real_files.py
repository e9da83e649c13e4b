"""Robust real files (issue 11 item 4): empty responses keep their pair, CSV verdict tables round-trip."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from judgelab.datasets.pairs import (
    EmptyResponseWarning,
    empty_responses,
    load_llmbar,
    load_pairs,
    pair_from_row,
)
from judgelab.io import InputError, read_table, read_verdicts, write_table
from judgelab.stats.agreement import order_summary


def _row(i: int, a: str = "first answer", b: str = "second answer") -> dict:
    return {"pair_id": f"p{i}", "prompt": "Say hi.", "response_a": a, "response_b": b, "expected_verdict": "A"}


@pytest.mark.parametrize("blank", ["", " ", "\n\t  "])
def test_empty_response_keeps_its_pair_with_a_warning_and_count(tmp_path, blank):
    path = tmp_path / "pairs.jsonl"
    rows = [_row(0), _row(1, b=blank), _row(2, a=blank, b=blank), _row(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(EmptyResponseWarning, match=r"pairs\.jsonl: 3 empty or whitespace-only response\(s\) kept"):
        pairs = load_pairs(path)
    assert [p.pair_id for p in pairs] == ["p0", "p1", "p2", "p3"]
    assert pairs[1].response_b == blank  # kept verbatim, not stripped or replaced
    assert empty_responses(pairs) == [("p1", "response_b"), ("p2", "response_a"), ("p2", "response_b")]


def test_a_set_without_empty_responses_does_not_warn(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(_row(i)) + "\n" for i in range(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load_pairs(path)) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"prompt": "  "}, "field 'prompt' is empty or not text"),
        ({"response_a": 3}, "field 'response_a' is not text"),
        ({"response_b": None}, r"missing field\(s\) \['response_b'\]"),
        ({"expected_verdict": "C"}, "expected_verdict must be one of"),
    ],
)
def test_malformed_rows_still_fail_naming_the_row(change, message):
    with pytest.raises(InputError, match=message) as exc:
        pair_from_row({**_row(0), **change}, where="f.jsonl:7")
    assert str(exc.value).startswith("f.jsonl:7: ")


def test_llmbar_whitespace_only_response_keeps_the_set(tmp_path):
    data = [{"input": "q0", "output_1": "a", "output_2": "b", "label": 1},
            {"input": "q1", "output_1": "a", "output_2": "   ", "label": 2}]
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(data))
    with pytest.warns(EmptyResponseWarning, match="1 empty"):
        pairs = load_llmbar(path, subset="X")
    assert [(p.pair_id, p.expected_verdict) for p in pairs] == [("X-0000", "A"), ("X-0001", "B")]


@pytest.mark.shared_data
def test_real_llmbar_set_with_a_whitespace_response_loads(data_root):
    path = data_root / "llmbar" / "Processed" / "LLMEval^2" / "dataset.json"
    if not path.exists():
        pytest.skip("LLMEval^2 not in the shared data")
    n_items = len(json.loads(path.read_text()))
    with pytest.warns(EmptyResponseWarning):
        pairs = load_llmbar(path, subset="LLMEval^2")
    assert len(pairs) == n_items  # the whole set, nothing rejected or dropped
    assert len(empty_responses(pairs)) >= 1


def _verdict_table() -> pd.DataFrame:
    # two judges x three pairs x two orders; unparsed verdicts are "" as pairwise.judge_pairs writes them
    rows = []
    verdicts = {("j1", "007"): ("A", "A"), ("j1", "010"): ("", ""), ("j1", "011"): ("B", ""),
                ("j2", "007"): ("", ""), ("j2", "010"): ("tie", "tie"), ("j2", "011"): ("A", "B")}
    for (judge, pid), (v_ab, v_ba) in verdicts.items():
        for order, v in (("AB", v_ab), ("BA", v_ba)):
            rows.append({"pair_id": pid, "order": order, "judge": judge, "verdict_shown": v, "verdict": v,
                         "expected_verdict": "A", "correct": v == "A", "status": "ok" if v else "unparsed",
                         "raw_text": {"": "NA", "A": "None of them... [[A]]"}.get(v, "null"),
                         "tokens_in": 10 if v else np.nan, "cost_usd": 0.5, "simulated": True})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_verdict_table_round_trips(tmp_path, suffix):
    df = _verdict_table()
    path = tmp_path / f"verdicts{suffix}"
    write_table(df, path)
    back = read_table(path)
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    assert (back["verdict"] == "").sum() == 5  # empty, not NaN
    assert back["pair_id"].tolist()[:2] == ["007", "007"]  # ids keep their leading zeros
    assert back["raw_text"].isna().sum() == 0  # "NA", "null", "None ..." are text
    assert back["tokens_in"].isna().sum() == 5 and back["tokens_in"].dtype.kind == "f"  # numbers stay numbers
    assert back["correct"].dtype == bool


def test_equal_statistics_from_csv_match_parquet(tmp_path):
    df = _verdict_table()
    write_table(df, tmp_path / "v.csv")
    write_table(df, tmp_path / "v.parquet")
    csv, parquet = read_verdicts([str(tmp_path / "v.csv")]), read_verdicts([str(tmp_path / "v.parquet")])
    pd.testing.assert_frame_equal(order_summary(csv), order_summary(parquet))
    # LLMBar's "equal" straight from the table: two empty verdicts agree (with NaN they would not)
    for t in (csv, parquet):
        wide = t.pivot_table(index=["judge", "pair_id"], columns="order", values="verdict", aggfunc="first")
        equal = (wide["AB"] == wide["BA"]).groupby(level="judge").mean()
        assert equal.to_dict() == {"j1": pytest.approx(2 / 3), "j2": pytest.approx(2 / 3)}
    assert order_summary(csv).set_index("judge").loc["j1", "positional_agreement_all"] == pytest.approx(2 / 3)


def test_read_table_tsv_and_explicit_text_columns(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("id\tscore\tnote\tword\tnothing\n001\t3\t\tNA\t\n002\t\tok\tnull\t\n")
    t = read_table(path, text_columns={"id"})
    assert t["id"].tolist() == ["001", "002"]
    assert t["note"].tolist() == ["", "ok"]  # a text column keeps its empty cell as ""
    assert t["word"].tolist() == ["NA", "null"]  # words pandas would read as missing
    assert t["nothing"].isna().all()  # an empty column of no known type stays missing
    assert t["score"].iloc[0] == 3 and np.isnan(t["score"].iloc[1])
    assert read_table(path)["id"].tolist() == [1, 2]  # not a judgelab text column: inferred as a number
