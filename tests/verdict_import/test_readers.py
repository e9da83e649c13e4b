"""Readers: gzip read through, JSON arrays streamed, and one InputError naming file, row and remedy."""

from __future__ import annotations

import codecs
import gzip
import json

import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.verdict_import import readers
from judgelab.verdict_import.readers import data_suffix, detect_format, read_records

RECS = [{"a": i, "t": "x" * i, "n": [1, {"b": None}]} for i in range(12)]


def test_gzip_is_read_through_whatever_the_name(tmp_path):
    body = "".join(json.dumps(r) + "\n" for r in RECS).encode()
    for name in ("log.jsonl.gz", "log.jsonl"):
        p = tmp_path / name
        p.write_bytes(gzip.compress(body))
        assert [r for _, r in read_records(p)] == RECS
    assert data_suffix(tmp_path / "a.JSONL.GZ") == ".jsonl" and detect_format(tmp_path / "x.csv.gz") == "csv"
    assert data_suffix(tmp_path / "noext") == "" and data_suffix(tmp_path / "a.gz") == ""
    c = tmp_path / "t.csv.gz"
    c.write_bytes(gzip.compress(b"id,v\n1,A\n2,\n"))
    assert read_records(c) == [(0, {"id": "1", "v": "A"}), (1, {"id": "2", "v": ""})]
    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(gzip.compress(body)[:40])
    with pytest.raises(InputError, match=r"cut\.jsonl\.gz: cannot be read \(EOFError.*is the file complete\?"):
        read_records(bad)


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 20])
def test_a_json_array_streams_across_blocks(tmp_path, monkeypatch, block):
    monkeypatch.setattr(readers, "JSON_BLOCK", block)
    p = tmp_path / "a.json"
    p.write_text("\n  [\n" + ",\n".join(json.dumps(r, indent=1) for r in RECS) + "\n]\n")
    assert read_records(p) == list(enumerate(RECS))
    p.write_text('[{"x": 12345678901234}, {"x": 1.5e3}]')  # numbers cut at a block edge still whole
    assert [r["x"] for _, r in read_records(p)] == [12345678901234, 1500.0]
    p.write_text("[ ]")
    assert read_records(p) == []
    p.write_text('\ufeff[{"a": 1}]', encoding="utf-8")  # a UTF-8 byte-order mark is skipped
    assert read_records(p) == [(0, {"a": 1})]


@pytest.mark.parametrize("text, message", [
    ('[{"a": 1}', r"expected ',' or '\]' after element 0 at line 1 column 10; the file ends early"),
    ('[{"a": 1},]', r"Expecting value at line 1 column 11\) in element 1"),
    ('[{"a": 1}] x', r"extra data after the array at line 1 column 12"),
    ('[{"a": 1} {"b": 2}]', r"expected ',' or '\]' after element 0 at line 1 column 11\)$"),
    ('[\n{"a": 1},\n{"a" 2}]', r"Expecting ':' delimiter at line 3 column 6\) in element 1"),
    ("[" * 100_000 + "]" * 100_000, r"a\.json element 0: JSON nested too deeply to read; flatten the record"),
    ('{"r": ' + "[" * 100_000 + "]" * 100_000 + "}", r"a\.json: JSON nested too deeply to read; flatten the records"),
    ("[1]", r"a\.json element 0: expected a JSON object, got int"),
])
def test_json_errors_name_line_column_and_element(tmp_path, text, message):
    p = tmp_path / "a.json"
    p.write_text(text)
    with pytest.raises(InputError, match=message):
        read_records(p)


def test_one_line_errors_for_each_kind_of_bad_file(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"e\.csv: the file is empty \(0 bytes\); give a CSV file with records"):
        read_records(empty)
    assert read_records(empty.with_suffix(".jsonl").write_bytes(b"") or empty.with_suffix(".jsonl")) == []
    blank = tmp_path / "b.csv"
    blank.write_text("\n\n")
    with pytest.raises(InputError, match=r"b\.csv: no header line"):
        read_records(blank)
    short = tmp_path / "s.csv"
    short.write_text("a,b,c,d\n1,2,3,4\n5,6\n")
    with pytest.raises(InputError, match=r"s\.csv row 1 \(line 3\): 2 of 4 fields; the row is cut short"):
        read_records(short)
    latin = tmp_path / "l.jsonl"
    latin.write_bytes('{"a": "ok"}\n{"a": "café"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match=r"l\.jsonl:2: not UTF-8 text; re-encode it as UTF-8"):
        read_records(latin)
    latin_csv = tmp_path / "l.csv"
    latin_csv.write_bytes("a\ncafé\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"l\.csv: not UTF-8 text .*re-encode it as UTF-8"):
        read_records(latin_csv)
    for bom, enc in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        u16 = tmp_path / "u.jsonl"
        u16.write_bytes(bom + '{"a": 1}\n'.encode(enc))
        with pytest.raises(InputError, match=r"u\.jsonl: the file is UTF-16 text; judgelab reads UTF-8"):
            read_records(u16)
    deep = tmp_path / "d.jsonl"
    deep.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"d\.jsonl:1: JSON nested too deeply to read"):
        read_records(deep)
    junk = tmp_path / "j.parquet"
    junk.write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(InputError, match=r"j\.parquet: not a parquet file .*; give a parquet file"):
        read_records(junk)
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.raises(InputError, match=r"dir\.jsonl: is a folder"):
        read_records(folder)


def test_a_damaged_parquet_names_the_row(tmp_path):
    p = tmp_path / "t.parquet"
    pd.DataFrame({"a": range(2000), "t": ["x" * 50] * 2000}).to_parquet(p, row_group_size=500)
    data = bytearray(p.read_bytes())
    data[len(data) // 2: len(data) // 2 + 200] = b"\0" * 200  # a page in the middle overwritten
    p.write_bytes(bytes(data))
    try:
        n = len(read_records(p))
    except InputError as exc:
        assert "t.parquet" in str(exc)
    else:
        assert n == 2000  # (damage parquet's checks cannot see is read as the data it holds)
