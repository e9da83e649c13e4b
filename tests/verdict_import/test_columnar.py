"""The columnar JSONL reader gives the record path's table exactly, and hands every file it cannot
read exactly back to the record path (which then gives the same rows or the same error)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings, bias_card
from judgelab.io import InputError
from judgelab.verdict_import import columnar
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.mapping import build_mapping
from judgelab.verdict_import.presets import preset_mapping
from tests.verdict_import.test_stream import _judgebench_log

FIXTURES = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench"


def _both(files, mapping, **kw) -> tuple[pd.DataFrame, pd.DataFrame]:
    fast = import_verdicts(files, mapping, texts=False, **kw)
    slow = import_verdicts(files, mapping, texts=False, columnar=False, **kw)
    return fast, slow


def _same(fast: pd.DataFrame, slow: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(fast, slow)  # values, dtypes and categories alike
    assert fast.attrs == slow.attrs


def test_published_judgebench_files_read_by_columns_equal_the_record_path(taken):
    fast, slow = _both([FIXTURES], preset_mapping("judgebench"))
    assert len(taken) == len(list(FIXTURES.glob("*.jsonl"))) == 4
    _same(fast, slow)
    s = CardSettings(n_resamples=200)
    pd.testing.assert_frame_equal(bias_card(fast, s), bias_card(slow, s))


def test_varied_judgebench_log_equal_with_card(tmp_path, taken):
    """Nulls, ties, strong labels, scores on some records only, non-ASCII and blank texts."""
    _judgebench_log(tmp_path, 150)
    fast, slow = _both([tmp_path], preset_mapping("judgebench"))
    assert len(taken) == 2 and fast.attrs["empty_responses"] > 0
    _same(fast, slow)
    s = CardSettings(n_resamples=100)
    pd.testing.assert_frame_equal(bias_card(fast, s), bias_card(slow, s))


def _write(path: Path, recs: list[dict], *, sep: str = "\n") -> Path:
    path.write_text(sep.join(json.dumps(r) for r in recs) + "\n")
    return path


CUSTOM = {
    "file_type": "jsonl",
    "judge": {"first_of": ["judge", {"file_key": "judge"}]},
    "pair_id": "id",
    "item_id": {"concat": ["q", "sub"], "sep": "/"},
    "instruction": "prompt",
    "response_a": "a", "response_b": "b",
    "model_a": "ma", "model_b": {"const": "gpt-4"},
    "optional": ["item_id", "model_a"],
    "games": [{"order": "AB", "verdict": {"text": "g.t", "parse": "brackets"}},
              {"order": "BA", "verdict": {"label": "g.l", "values": {"1": "A", "2": "B", "0": "tie"}}}],
}


def _custom_records(n: int) -> list[dict]:
    out = []
    for i in range(n):
        r = {"id": f"id{i}" if i % 5 else "x" * 120 + str(i), "q": f"q{i % 7}", "prompt": f"question {i}",
             "a": "**a** " * (i % 4), "b": "- b\n- c" if i % 3 else "", "ma": ["claude-3", "", None][i % 3],
             "g": {"t": ["[[A]]", "[[B]] then [[A]]", "no verdict", None][i % 4], "l": [1, 2, 0, None, 7][i % 5]}}
        if i % 4 == 0:
            r["sub"] = i
        if i % 6 == 0:
            r["judge"] = "llama-3-70b"
        out.append(r)
    return out


def test_custom_mapping_with_text_rules_labels_and_long_ids(tmp_path, taken):
    f = _write(tmp_path / "judge=qwen-72b.jsonl", _custom_records(60))
    fast, slow = _both([f], build_mapping(CUSTOM))
    assert taken == [f.name]
    _same(fast, slow)
    # the forms really vary: hashed long ids, items missing a part, both families inferred
    assert fast["pair_id"].astype(str).str.startswith("p").any() and fast["item_id"].isna().sum() == 0
    assert set(fast["family"].astype(str)) == {"meta", "qwen"}
    assert set(fast["status"].astype(str)) >= {"ok", "unparsed"}


@pytest.mark.parametrize("case", ["blank line", "gzip", "float label", "list text", "mixed types"])
def test_files_the_columns_cannot_read_exactly_go_record_by_record(tmp_path, taken, case):
    recs = _custom_records(30)
    f = tmp_path / "judge=qwen-72b.jsonl"
    if case == "blank line":  # row numbers count lines
        _write(f, recs, sep="\n\n")
    elif case == "gzip":
        f = tmp_path / "judge=qwen-72b.jsonl.gz"
        f.write_bytes(gzip.compress(("\n".join(json.dumps(r) for r in recs) + "\n").encode()))
    elif case == "float label":  # 1.0 and 1 read alike by Arrow, written apart by Python
        for r in recs:
            r["g"]["l"] = 1.0 if r["g"]["l"] == 1 else 2.5 if r["g"]["l"] == 7 else r["g"]["l"]
        _write(f, recs)
    elif case == "list text":
        recs[3]["a"] = ["turn one", "turn two"]
        recs[4]["a"] = None
        for r in recs:
            r["a"] = r["a"] if isinstance(r["a"], list) else [r["a"] or ""]
        _write(f, recs)
    else:  # an id that is a number in one record and a string in another
        recs[7]["id"] = 7
        _write(f, recs)
    fast, slow = _both([f], build_mapping(CUSTOM))
    assert taken == []
    _same(fast, slow)


def test_a_missing_required_key_gives_the_record_paths_error(tmp_path, taken):
    _judgebench_log(tmp_path, 6)
    f = next(tmp_path.glob("judge_name=arena_hard*"))
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    del recs[3]["label"]
    _write(f, recs)
    with pytest.raises(InputError) as fast:
        import_verdicts([f], preset_mapping("judgebench"), texts=False)
    with pytest.raises(InputError) as slow:  # the record path's own message
        import_verdicts([f], preset_mapping("judgebench"), texts=False, columnar=False)
    assert str(fast.value) == str(slow.value) and "row 4" in str(fast.value) and "'label'" in str(fast.value)
    assert taken == []


def test_a_file_with_its_verdicts_empty_everywhere_is_refused_alike(tmp_path, taken):
    recs = _custom_records(12)
    for r in recs:
        r["g"] = {"t": None, "l": None}
    f = _write(tmp_path / "judge=qwen-72b.jsonl", recs)
    msgs = []
    for col in (True, False):
        with pytest.raises(InputError) as e:
            import_verdicts([f], build_mapping(CUSTOM), texts=False, columnar=col)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "empty in every row" in msgs[0]
    assert taken == [f.name]  # read by columns, refused by the same check


def test_small_pieces_give_the_same_table_and_each_piece_ends_at_a_line(tmp_path, taken, monkeypatch):
    """The reader parses line-aligned pieces of about BLOCK_BYTES (a record longer than a piece
    included): the pieces put back together are the file, none splits a record, none is much
    larger than a block, and the table equals the record path's."""
    _judgebench_log(tmp_path, 60)
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 700)  # several records per piece, some longer than one
    pieces: list[bytes] = []
    real = columnar._parse

    def spy(piece: bytes):
        pieces.append(piece)
        return real(piece)

    monkeypatch.setattr(columnar, "_parse", spy)
    fast, slow = _both([tmp_path], preset_mapping("judgebench"))
    _same(fast, slow)
    files = sorted(tmp_path.glob("*.jsonl"))
    assert b"".join(pieces) == b"".join(f.read_bytes() for f in files)
    longest = max(len(line) for f in files for line in f.read_bytes().splitlines(keepends=True))
    assert len(pieces) > 20 and all(p.endswith(b"\n") for p in pieces)
    assert max(len(p) for p in pieces) <= 700 + longest
    assert fast["words_a"].dtype == "float32" and fast["source_row"].dtype == "int32"


def test_chunks_of_a_file_without_a_final_line_end(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 8)
    f = tmp_path / "x.jsonl"
    f.write_bytes(b'{"a": 1}\n{"a": 22222222222}\n{"a": 3}')
    assert list(columnar._chunks(f)) == [b'{"a": 1}\n', b'{"a": 22222222222}\n', b'{"a": 3}']


def test_a_file_without_a_final_line_end_is_still_read_by_columns(tmp_path, taken):
    """The last record without its newline is a line like the others: counted, not taken for a
    blank line (which would send the file to the record path)."""
    _judgebench_log(tmp_path, 30)
    for f in tmp_path.glob("*.jsonl"):
        f.write_bytes(f.read_bytes().rstrip(b"\n"))
    fast, slow = _both([tmp_path], preset_mapping("judgebench"))
    assert len(taken) == 2 and len(fast) == 2 * 2 * 30
    _same(fast, slow)
