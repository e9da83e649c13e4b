"""The verdict importer's promises one by one (issue 18): where files are found, what each mapped
field yields, which fields must be filled, what the errors name, and that missing stays missing.

Each test states a property a user relies on (the judge, verdict, order, item a record yields, the
file/row/key an error names, a pair id that stays the same across runs); they were written against
the surviving mutants of ``scripts/mutation.sh judgelab/verdict_import/importer.py``.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.verdict_import import build_mapping, import_verdicts, preset_mapping, replay_recording
from judgelab.verdict_import.importer import CATEGORY_COLUMNS, RECORDED_COLUMNS

JB = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _sha_id(*parts: object) -> str:
    """The documented pair/item id of a record without one: ``p`` + 12 hex of SHA-256 over the
    parts joined by U+001F, a missing part as empty (computed here independently)."""
    return "p" + hashlib.sha256("\x1f".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:12]


# --- replay ---------------------------------------------------------------------------------------


def test_replay_recording_reads_missing_texts_as_empty(tmp_path):
    """A recorded table with a missing instruction or response (category NA) replays with empty
    strings, never NaN: the replay judge tests ``instruction in prompt`` on them."""
    f = _jsonl(tmp_path / "r.jsonl", [{"id": 1, "a": "x", "b": "y", "v": "A", "t": "[[A]]"},
                                       {"id": 2, "a": "x", "v": "B", "q": "Q"}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "response_a": "a", "response_b": "b", "instruction": "q",
                                            "verdict": {"label": "v", "text": "t"}}))
    rec = replay_recording(t)
    assert set(rec) == {("x", "y"), ("x", "")}
    first, = rec[("x", "y")]
    assert first.instruction == "" and first.order == "AB" and first.raw_text == "[[A]]" and first.verdict_shown == "A"
    second, = rec[("x", "")]
    assert second.instruction == "Q" and second.raw_text == "" and second.verdict_shown == "B"
    for entries in rec.values():
        for e in entries:
            assert all(isinstance(v, str) for v in (e.instruction, e.order, e.raw_text, e.verdict_shown)), e


def test_replay_recording_keys_by_the_texts_as_shown():
    table = pd.DataFrame({"response_a": ["a1", "a2"], "response_b": ["b1", None], "order": ["AB", "BA"],
                          "instruction": [None, "i2"], "raw_text": pd.array(["r1", None], dtype="string"),
                          "verdict_shown": ["A", None]})  # a nullable string column holds pd.NA
    rec = replay_recording(table)
    assert rec == {("a1", "b1"): [rec[("a1", "b1")][0]], ("", "a2"): [rec[("", "a2")][0]]}
    e = rec[("", "a2")][0]
    assert (e.instruction, e.order, e.raw_text, e.verdict_shown) == ("i2", "BA", "", "")


# --- where files are found ------------------------------------------------------------------------


def _one(tmp: Path, name: str = "log.jsonl") -> Path:
    return _jsonl(tmp / name, [{"id": 1, "v": "A"}])


_PLAIN = {"pair_id": "id", "verdict": {"label": "v"}}


def test_no_files_is_an_error():
    with pytest.raises(InputError, match=r"^no recorded-verdict files given$"):
        import_verdicts([], build_mapping(_PLAIN))


def test_relative_paths_are_read_from_the_working_directory_only(tmp_path, monkeypatch):
    """``judgelab audit logs/x.jsonl`` reads ./logs/x.jsonl; a log only under the data root is not read
    silently in its place: the error names the working folder and the data-root file to give instead."""
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    _one(root / "logs", "x.jsonl")
    _jsonl(cwd / "here.jsonl", [{"id": 2, "v": "B"}])
    monkeypatch.setenv("JUDGELAB_DATA", str(root))
    monkeypatch.chdir(cwd)
    with pytest.raises(InputError, match=r"logs/x\.jsonl: no such file or folder in the working folder .*cwd") as e:
        import_verdicts(["logs/x.jsonl", "here.jsonl"], build_mapping(_PLAIN))
    assert str(root / "logs" / "x.jsonl") in str(e.value)
    t = import_verdicts([str(root / "logs" / "x.jsonl"), "here.jsonl"], build_mapping(_PLAIN))
    assert t["pair_id"].tolist() == ["1", "2"]
    assert t["source_file"].astype(str).tolist() == [str(root / "logs" / "x.jsonl"), "here.jsonl"]


def test_a_known_public_file_missing_locally_is_an_error_not_a_download(tmp_path, monkeypatch):
    """Reading logs never downloads (an audit runs offline): a public file's relative path that is
    on no disk stops with the data root named."""
    import judgelab.datasets.sources as sources

    rel = next(iter(sources.SOURCES.values())).rel
    calls: list[str] = []
    monkeypatch.setattr(sources, "download_file", lambda url, dest, **kw: calls.append(url) or dest)
    monkeypatch.setenv("JUDGELAB_DATA", str(tmp_path / "empty-root"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=f"data file {rel!r} not found under"):
        import_verdicts([rel], build_mapping(_PLAIN))
    assert calls == []


def test_a_folder_skips_hidden_files_and_folders(tmp_path):
    _one(tmp_path / "logs", "a.jsonl")
    _jsonl(tmp_path / "logs" / ".hidden.jsonl", [{"id": 9, "v": "A"}])
    _jsonl(tmp_path / "logs" / ".cache" / "b.jsonl", [{"id": 8, "v": "A"}])
    _jsonl(tmp_path / "logs" / "sub" / "c.jsonl", [{"id": 3, "v": "B"}])
    t = import_verdicts([tmp_path / "logs"], build_mapping(_PLAIN))
    assert sorted(t["pair_id"]) == ["1", "3"]


def test_rows_of_each_file_name_their_own_file(tmp_path):
    f1, f2 = _one(tmp_path, "one.jsonl"), _jsonl(tmp_path / "two.jsonl", [{"id": 2, "v": "B"}, {"id": 3, "v": "A"}])
    t = import_verdicts([f1, f2], build_mapping(_PLAIN))
    assert t["source_file"].astype(str).tolist() == [str(f1), str(f2), str(f2)]
    assert t["source_row"].tolist() == [1, 1, 2] and t["judge"].astype(str).tolist() == ["one", "two", "two"]


def test_an_empty_file_adds_no_rows_and_no_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    full = _jsonl(tmp_path / "full.jsonl", [{"id": 1, "q": "Q", "v": "A"}])
    t = import_verdicts([empty, full], build_mapping({**_PLAIN, "instruction": "q"}))  # q: checked per file
    assert t["pair_id"].tolist() == ["1"]


def test_no_rows_at_all_gives_the_empty_table_with_its_dtypes(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    t = import_verdicts([empty], build_mapping(_PLAIN))
    assert list(t.columns) == RECORDED_COLUMNS and len(t) == 0
    for c in CATEGORY_COLUMNS:
        assert isinstance(t[c].dtype, pd.CategoricalDtype), c
    assert t["correct"].dtype == "boolean" and t["preference"].dtype == "float64"
    assert t["source_row"].dtype == "int64" and t["simulated"].dtype == "bool"


def test_records_under_a_key_of_the_file(tmp_path):
    f = tmp_path / "log.json"
    f.write_text(json.dumps({"meta": {}, "data": {"rows": [{"id": 1, "v": "B"}, {"id": 2, "v": "A"}]}}))
    t = import_verdicts([f], build_mapping({**_PLAIN, "records": "data.rows"}))
    assert t["verdict"].tolist() == ["B", "A"]


# --- side tables ----------------------------------------------------------------------------------


def test_unknown_side_table_names_the_known_ones(tmp_path):
    f = _one(tmp_path)
    with pytest.raises(InputError, match=r"^mapping 'custom' has no side table\(s\) \['answer'\]; known: \(none\)$"):
        import_verdicts([f], build_mapping(_PLAIN), tables={"answer": [f]})
    m = preset_mapping("fastchat_pairwise")
    with pytest.raises(InputError, match=r"^mapping 'fastchat_pairwise' has no side table\(s\) \['answer', 'q'\]; "
                                         r"known: \['answers', 'questions'\]$"):
        import_verdicts([f], m, tables={"q": [f], "answer": [f], "answers": [f]})


def test_side_tables_keyed_by_file_name_path_and_row_under_a_records_key(tmp_path):
    """A side table's key may read its own file's name, path and record number (JSON elements
    count from 0); a table listed
    without files is skipped, the next one still loads."""
    side = tmp_path / "prompts" / "set=s1.json"
    side.parent.mkdir()
    side.write_text(json.dumps({"rows": [{"text": "first prompt"}, {"text": "second prompt"}]}))
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "set": "s1", "n": 0, "v": "A"},
                                        {"id": 2, "set": "s1", "n": 1, "v": "B"}])
    m = build_mapping({
        "pair_id": "id", "verdict": {"label": "v"}, "optional": ["category"],
        "instruction": {"table": "prompts", "key": ["set", {"const": "prompts"}, "n"], "value": "text"},
        "category": {"table": "unused", "key": ["id"], "value": "c"},
        "tables": {"unused": {"key": ["id"]},
                   "prompts": {"key": [{"file_key": "set"}, {"path_part": -2}, {"row": True}], "records": "rows",
                               "files": [str(side)]}},
    })
    t = import_verdicts([f], m)
    assert t["instruction"].astype(str).tolist() == ["first prompt", "second prompt"]
    assert (t["category"].astype(str) == "").all()


# --- fields of a record ---------------------------------------------------------------------------


def test_missing_models_stay_missing_and_each_row_keeps_its_own(tmp_path):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A", "ma": "gpt-4o", "mb": "claude-3"},
                                        {"id": 2, "v": "B", "ma": "llama-3"},
                                        {"id": 3, "v": "A", "mb": "qwen2"}])
    t = import_verdicts([f], build_mapping({**_PLAIN, "model_a": "ma", "model_b": "mb"})).set_index("pair_id")
    assert t["model_a"].astype(object).where(t["model_a"].notna(), None).tolist() == ["gpt-4o", "llama-3", None]
    assert t["model_b"].astype(object).where(t["model_b"].notna(), None).tolist() == ["claude-3", None, "qwen2"]
    assert t["family_a"].astype(str).tolist() == ["openai", "meta", ""]
    assert t["family_b"].astype(str).tolist() == ["anthropic", "", "qwen"]


def test_the_judges_family_from_the_file_the_option_or_the_name(tmp_path):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A", "j": "gpt-4o", "fam": "in-house"},
                                        {"id": 2, "v": "B", "j": "gpt-4o"}])
    m = build_mapping({**_PLAIN, "judge": "j", "family": "fam"})
    assert import_verdicts([f], m)["family"].astype(str).tolist() == ["in-house", "openai"]
    assert import_verdicts([f], m, family="lab")["family"].astype(str).tolist() == ["in-house", "lab"]
    # the judge's model names the family before the judge's name does
    g = _jsonl(tmp_path / "g.jsonl", [{"id": 1, "v": "A", "j": "my-judge", "m": "claude-3"}, {"id": 2, "v": "A",
                                                                                              "j": "llama-judge"}])
    t = import_verdicts([g], build_mapping({**_PLAIN, "judge": "j", "model": "m", "optional": ["model"]}))
    assert t["family"].astype(str).tolist() == ["anthropic", "meta"]


def test_a_family_field_empty_everywhere_names_the_family_option(tmp_path):
    f = _one(tmp_path)
    m = build_mapping({**_PLAIN, "family": "fam"})
    with pytest.raises(InputError, match=r"mapping field 'family' \('fam'\) is empty in every row of this file; "
                                         r"check the key \(format 'custom'\), list the field under 'optional', "
                                         r"or give --family$"):
        import_verdicts([f], m)
    assert import_verdicts([f], m, family="lab")["family"].astype(str).tolist() == ["lab"]


def test_a_model_field_empty_everywhere_names_the_judge_option(tmp_path):
    f = _one(tmp_path)
    with pytest.raises(InputError, match=r"mapping field 'model' \(concat\) is empty in every row.*, "
                                         r"or name the judge with --judge$"):
        import_verdicts([f], build_mapping({**_PLAIN, "model": {"concat": ["a", "b"]}}))
    assert import_verdicts([f], build_mapping({**_PLAIN, "model": "m"}), judge="j")["model"].tolist() == ["j"]


def test_other_fields_empty_everywhere_have_no_option_hint(tmp_path):
    f = _one(tmp_path)
    with pytest.raises(InputError, match=r"mapping field 'instruction' \('q\.007'\) is empty in every row of this "
                                         r"file; check the key \(format 'custom'\), list the field under 'optional',$"):
        import_verdicts([f], build_mapping({**_PLAIN, "instruction": "q.007"}))
    with pytest.raises(InputError, match=r"mapping field 'category' \('c\.d'\) is empty"):
        import_verdicts([f], build_mapping({**_PLAIN, "category": ["c", "d"]}))


def test_a_const_null_blanks_a_preset_field_without_an_error(tmp_path):
    """``{const: null}`` overrides a preset's field with nothing (the field is then never checked)."""
    f = _one(tmp_path)
    t = import_verdicts([f], build_mapping({**_PLAIN, "category": {"const": None}, "model_a": {"const": None}}))
    assert t["category"].astype(str).tolist() == [""] and t["model_a"].isna().all()


def test_the_verdict_row_reads_labels_statuses_and_methods_from_a_side_table(tmp_path):
    """Every part of a verdict may live in a side table (verdicts logged apart from the pairs)."""
    side = _jsonl(tmp_path / "verdicts.jsonl", [
        {"id": 1, "l": "A", "s": "fallback", "pm": "fallback-letter", "t": "it is A"},
        {"id": 2, "l": "B", "s": "ok", "pm": None, "t": "B wins"}])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1}, {"id": 2}])

    def tab(value: str) -> dict:
        return {"table": "v", "key": ["id"], "value": value}

    m = build_mapping({"pair_id": "id", "verdict": {"label": tab("l"), "status": tab("s"), "parse_method": tab("pm"),
                                                    "text": tab("t"), "frame": "stored"},
                       "tables": {"v": {"key": ["id"], "files": [str(side)]}}})
    t = import_verdicts([f], m).set_index("pair_id")
    assert t["verdict"].tolist() == ["A", "B"] and t["status"].tolist() == ["fallback", "ok"]
    assert t["parse_method"].astype(str).tolist() == ["fallback-letter", "label"]
    assert t["raw_text"].tolist() == ["it is A", "B wins"] and t["preference"].tolist() == [0.0, 1.0]


def test_a_parser_fallback_is_a_fallback_status(tmp_path):
    from judgelab.parsing import parse_pairwise

    answers = ["[[A]]", "Answer: B", "no idea"]
    f = _jsonl(tmp_path / "log.jsonl", [{"id": i, "out": a} for i, a in enumerate(answers)])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"text": "out", "parse": "brackets"}}))
    for (_, row), a in zip(t.iterrows(), answers, strict=True):
        parsed = parse_pairwise(a, fmt="brackets")
        assert row["status"] == parsed.status.value and row["parse_method"] == parsed.method, a
    assert t["status"].tolist() == ["ok", "fallback", "unparsed"]


def test_a_recorded_status_counts_only_when_it_agrees_with_the_verdict(tmp_path):
    """An ``ok`` status on a row without a verdict (or ``refusal`` on one with) is not believed."""
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A", "s": "refusal"}, {"id": 2, "v": None, "s": "ok"},
                                        {"id": 3, "v": None, "s": "error"}, {"id": 4, "v": "B", "s": "bogus"}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "v", "status": "s"}}))
    assert t["status"].tolist() == ["ok", "unparsed", "error", "ok"]


def test_reward_scores_without_a_label_keep_the_label_empty(tmp_path):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "s": [1.0, 3.0], "d": None}, {"id": 2, "s": [2.0, 0.5], "d": "A>B"}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"scores": "s", "label": "d"}}))
    assert t["label"].astype(str).tolist() == ["", "A>B"] and t["verdict"].tolist() == ["B", "A"]


def test_ids_of_records_without_them_are_stable_hashes(tmp_path):
    """Without a pair field the pair id is a hash of (file name, instruction, response A, response B)
    and the item id one of the instruction: the same record gets the same ids in every run, so
    tables of two runs join; a missing text hashes as an empty one."""
    f = _jsonl(tmp_path / "calls.jsonl", [{"q": "Why?", "a": "x", "b": "y", "v": "A"},
                                          {"q": "Why?", "a": "x", "v": "B"}])
    t = import_verdicts([f], build_mapping({"instruction": "q", "response_a": "a", "response_b": "b",
                                            "verdict": {"label": "v"}, "optional": ["response_b"]}))
    assert t["pair_id"].tolist() == [_sha_id("calls.jsonl", "Why?", "x", "y"), _sha_id("calls.jsonl", "Why?", "x", "")]
    assert t["item_id"].tolist() == [_sha_id("Why?")] * 2
    long_id = "z" * 97
    g = _jsonl(tmp_path / "long.jsonl", [{"id": long_id, "v": "A"}])
    assert import_verdicts([g], build_mapping(_PLAIN))["pair_id"].tolist() == [_sha_id(long_id)]


def test_duplicates_name_the_first_row_of_the_same_pair(tmp_path):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A"}, {"id": 2, "v": "A"}, {"id": 2, "v": "B"}])
    with pytest.raises(InputError, match=rf"^{f} row 3: judge 'log' has two verdicts for pair '2' in order AB "
                                         rf"\(first at {f} row 2\); map pair_id"):
        import_verdicts([f], build_mapping(_PLAIN))
    g = _jsonl(tmp_path / "j2.jsonl", [{"id": 2, "j": "other", "v": "A"}, {"id": 1, "j": "log", "v": "A"}])
    h = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A"}, {"id": 2, "v": "A"}])
    m = build_mapping({**_PLAIN, "judge": "j", "optional": ["judge"]})
    with pytest.raises(InputError, match=rf"^{h} row 1: judge 'log' has two verdicts for pair '1' in order AB "
                                         rf"\(first at {g} row 2\)"):
        import_verdicts([g, h], m)


def test_a_missing_required_key_lists_the_first_fifteen_keys(tmp_path):
    rec = {f"k{i:02d}": i for i in range(20)}
    f = _jsonl(tmp_path / "log.jsonl", [rec])
    keys = sorted(rec)[:15]
    with pytest.raises(InputError, match=rf"row 1: format 'custom' expects key 'id', missing \(this record has keys "
                                         rf"{keys!r}\)".replace("[", r"\[").replace("]", r"\]")):
        import_verdicts([f], build_mapping({**_PLAIN, "require": ["id"]}))


def test_category_columns_are_unordered(tmp_path):
    """Categories are sorted only so that sorting by a column sorts its strings; they are no scale."""
    t = import_verdicts([JB], preset_mapping("judgebench"))
    for c in CATEGORY_COLUMNS:
        assert t[c].cat.ordered is False, c


# --- the mapping language -------------------------------------------------------------------------


def test_a_column_name_is_read_as_written(tmp_path):
    """Column names that look like numbers or carry the path separator are those columns:
    ``01`` is not the key ``1``, ``X1`` is no number; the error names the key as written."""
    f = tmp_path / "log.csv"
    pd.DataFrame({"id": ["1", "2"], "01": ["A", "B"], "1": ["B", "A"], "X1": ["p", "q"]}).to_csv(f, index=False)
    t = import_verdicts([f], build_mapping({"pair_id": "id", "instruction": "X1", "verdict": {"label": "01"}}))
    assert t["verdict"].tolist() == ["A", "B"] and t["instruction"].astype(str).tolist() == ["p", "q"]
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": {"path": "01"}}}))
    assert t["verdict"].tolist() == ["A", "B"]
    with pytest.raises(InputError, match=r"the verdict of game 0 \('007'\) is empty in every row"):
        import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "007"}}))


def test_a_dotted_path_is_the_spec_of_its_key_list():
    from judgelab.verdict_import.mapping import FieldSpec

    for dotted, keys in (("results.0.winner", ["results", 0, "winner"]), ("games.-1.score", ["games", -1, "score"]),
                         ("a.b", ["a", "b"])):
        assert FieldSpec.parse(dotted, where="w").path == FieldSpec.parse(keys, where="w").path == tuple(keys)
        assert FieldSpec.parse({"path": dotted}, where="w").path == tuple(keys)
        assert FieldSpec.parse({"path": keys}, where="w") == FieldSpec.parse(keys, where="w")


def test_records_at_a_negative_list_index(tmp_path):
    """``records: runs.-1.rows`` reads the last run's rows (JSON lists take integer steps)."""
    f = tmp_path / "log.json"
    f.write_text(json.dumps({"runs": [{"rows": [{"id": 1, "v": "A"}]}, {"rows": [{"id": 2, "v": "B"}]}]}))
    t = import_verdicts([f], build_mapping({**_PLAIN, "records": "runs.-1.rows"}))
    assert t["pair_id"].tolist() == ["2"] and t["verdict"].tolist() == ["B"]
    t = import_verdicts([f], build_mapping({**_PLAIN, "records": "runs.0.rows"}))
    assert t["pair_id"].tolist() == ["1"]


def test_table_values_and_paths_as_key_lists(tmp_path):
    side = _jsonl(tmp_path / "answers.jsonl", [{"qid": 1, "choices": [{"turns": ["t1", "t2"]}]}])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "out": {"v": "A"}}])
    m = build_mapping({"pair_id": "id", "verdict": {"label": {"path": ["out", "v"]}},
                       "response_a": {"table": "answers", "key": ["id"], "value": ["choices", 0, "turns"]},
                       "tables": {"answers": {"key": ["qid"], "files": [str(side)]}}})
    t = import_verdicts([f], m)
    assert t["response_a"].astype(str).tolist() == ["t1\n\nt2"] and t["verdict"].tolist() == ["A"]


def test_nested_spec_errors_name_their_full_key():
    from judgelab.config import ConfigError
    from judgelab.verdict_import.mapping import FieldSpec

    bad = {"upto": "n"}
    cases = [({"path": "x", "upto": bad}, "m/upto"), ({"concat": ["a", bad]}, "m/concat/1"),
             ({"first_of": [bad]}, "m/first_of/0"), ({"table": "t", "key": ["a", "b", bad]}, "m/key/2")]
    for raw, where in cases:
        with pytest.raises(ConfigError, match=rf"^{where}: unknown field spec"):
            FieldSpec.parse(raw, where="m")
    with pytest.raises(ConfigError, match=r"^m/games/0/verdict: a verdict needs"):
        build_mapping({"games": [{"order": {"path": "o"}, "verdict": {"text": "x"}}]}, where="m")
    with pytest.raises(ConfigError, match=r"^verdict mapping: give either 'verdict'"):
        build_mapping({"verdict": {"label": "v"}, "games": [{"verdict": {"label": "v"}}]})


def test_a_table_spec_without_key_or_value_looks_up_the_empty_key():
    from judgelab.verdict_import.mapping import FieldSpec

    spec = FieldSpec.parse({"table": "t"}, where="w")
    assert spec.kind == "table" and spec.key == () and spec.path == ()


def test_mapping_defaults_are_the_documented_ones():
    """Without ``frame`` a verdict's letters are the shown slots, gold's the stored order; without
    ``responses`` the texts are in the stored order."""
    m = build_mapping({"verdict": {"label": "v"}, "gold": {"label": "g"}})
    assert m.games[0].verdict.frame == "shown" and m.gold.frame == "stored" and m.responses_frame == "stored"
    assert m.name == "custom" and m.file_type == "auto"


# --- log patterns of a config (rules/audit_logs.smk) ----------------------------------------------


def test_patterns_match_in_the_working_directory_then_the_data_root(tmp_path, monkeypatch):
    from judgelab.verdict_import.importer import expand_patterns

    root, cwd = tmp_path / "root", tmp_path / "cwd"
    for d, names in ((root / "logs", ["b.jsonl", "a.jsonl"]), (cwd / "mine", ["x.csv"])):
        d.mkdir(parents=True)
        for n in names:
            (d / n).write_text("")
    (root / "logs" / "sub").mkdir()  # a folder the glob matches is no file
    monkeypatch.setenv("JUDGELAB_DATA", str(root))
    monkeypatch.chdir(cwd)
    got = expand_patterns(["logs/*", "mine/*.csv", str(root / "logs" / "a.jsonl")], where="audit_logs/s1")
    assert got == [str(root / "logs" / "a.jsonl"), str(root / "logs" / "b.jsonl"), str(cwd / "mine" / "x.csv"),
                   str(root / "logs" / "a.jsonl")]
    (cwd / "logs").mkdir()
    (cwd / "logs" / "c.jsonl").write_text("")  # the working directory wins over the data root
    assert expand_patterns(["logs/*.jsonl"], where="w") == [str(cwd / "logs" / "c.jsonl")]
    assert expand_patterns(["**/*.csv"], where="w") == [str(cwd / "mine" / "x.csv")]  # recursive globs
    with pytest.raises(InputError, match=rf"^audit_logs/s1: no file matches 'nope/\*\.jsonl' \(relative paths are "
                                         rf"tried in the working directory and the data root {root}\)$"):
        expand_patterns(["nope/*.jsonl"], where="audit_logs/s1")
    with pytest.raises(InputError, match=r"^w: no file matches '/nowhere/\*'"):
        expand_patterns(["/nowhere/*"], where="w")


def test_a_known_public_file_not_on_disk_is_kept_for_its_job(tmp_path, monkeypatch):
    """A plain path of a known public file resolves under the data root when there, and is kept as
    given when not (the job that reads it downloads it, not the DAG construction)."""
    import judgelab.datasets.sources as sources
    from judgelab.verdict_import.importer import expand_patterns

    rel = next(iter(sources.SOURCES.values())).rel
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGELAB_DATA", str(tmp_path / "root"))
    assert expand_patterns([rel], where="w") == [rel]
    (tmp_path / "root" / rel).parent.mkdir(parents=True)
    (tmp_path / "root" / rel).write_text("")
    assert expand_patterns([rel], where="w") == [str((tmp_path / "root" / rel).resolve())]
    monkeypatch.delenv("JUDGELAB_DATA")
    monkeypatch.setattr(sources, "data_root", lambda: None)
    assert expand_patterns([rel], where="w") == [rel]
    with pytest.raises(InputError, match=r"data root None\)"):
        expand_patterns(["nope/*.jsonl"], where="w")


# --- presets --------------------------------------------------------------------------------------


@pytest.mark.parametrize("rebuilt", [False, True])
def test_judgebench_games_read_text_label_and_scores_of_their_own_game(tmp_path, rebuilt):
    """Each JudgeBench game reads its own ``judgment.response`` and ``decision``; ``B=A`` is a tie
    like ``A=B`` (both letters orders of the arena-hard prompt's equality).  ``rebuilt``: the games
    built again at test time (the registry builds them once, at import)."""
    from judgelab.verdict_import import PRESETS
    from judgelab.verdict_import.presets import _judgebench_game

    rec = json.loads(next(JB.glob("*o1-mini*")).read_text(encoding="utf-8").splitlines()[0])
    rec["judgments"][0]["judgment"]["response"] = "first game says [[B=A]]"
    rec["judgments"][0]["decision"] = "B=A"
    rec["judgments"][1]["judgment"]["response"] = "second game says [[A>B]]"
    rec["judgments"][1]["decision"] = "A>B"
    f = _jsonl(tmp_path / "jb.jsonl", [rec])
    raw = {**PRESETS.get("judgebench"), "games": [_judgebench_game(0, "AB"), _judgebench_game(1, "BA")]}
    mapping = build_mapping(raw, name="judgebench") if rebuilt else preset_mapping("judgebench")
    t = import_verdicts([f], mapping).set_index("order")
    assert t.loc["AB", "verdict"] == "tie" and t.loc["AB", "label"] == "B=A"
    assert t.loc["AB", "raw_text"] == "first game says [[B=A]]"
    assert t.loc["BA", "verdict_shown"] == "A" and t.loc["BA", "verdict"] == "B"
    assert t.loc["BA", "raw_text"] == "second game says [[A>B]]"


def _llmbar_result(tmp_path: Path, label: int, games: dict[str, tuple[str, str]]) -> Path:
    """One LLMBar ``result.json`` record in the published layout: ``{flag: (completion, winner)}`` per game."""
    rows = [{"input": "Pick one.", "output_1": "a", "output_2": "b", "label": label,
             "results": [{flag: {"completion": [text, "stop"], "winner": winner}
                          for flag, (text, winner) in games.items()}]}]
    d = tmp_path / "Natural" / "evaluators" / "GPT-4" / "Vanilla"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps(rows))
    return d / "result.json"


def test_llmbar_games_read_the_completion_text_of_their_own_flag(tmp_path):
    f = _llmbar_result(tmp_path, 2, {"swap = False": ("Output (b)", "2"), "swap = True": ("Output (a)", "2")})
    t = import_verdicts([f], preset_mapping("llmbar")).set_index("order")
    assert t.loc["AB", "raw_text"] == "Output (b)" and t.loc["BA", "raw_text"] == "Output (a)"
    assert t.loc["AB", "verdict"] == t.loc["BA", "verdict"] == "B"  # winners are in the stored order
    assert t.loc["BA", "verdict_shown"] == "A" and (t["expected_verdict"] == "B").all()
    assert set(t["category"].astype(str)) == {"Natural"} and set(t["model"].astype(str)) == {"GPT-4"}


def test_preset_overrides_leave_the_registered_preset_alone():
    from judgelab.verdict_import import PRESETS, mapping_from_config

    before = json.dumps(PRESETS.get("arena_hard"), sort_keys=True)
    m = mapping_from_config({"preset": "arena_hard", "model_a": {"const": "gpt-4o"},
                             "tables": {"answers": {"key": ["question_id", "model_id"], "files": ["a.jsonl"]}}})
    assert m.fields["model_a"].const == "gpt-4o" and m.tables["answers"].files == ("a.jsonl",)
    m.raw["games"][0]["verdict"]["values"]["A>B"] = "B"  # a compiled mapping's raw dict is a copy too
    assert json.dumps(PRESETS.get("arena_hard"), sort_keys=True) == before
    assert preset_mapping("arena_hard").fields["model_a"].const == "gpt-4-0314"
    assert preset_mapping("arena_hard").raw["games"][0]["verdict"]["values"]["A>B"] == "A"


def test_preset_and_mapping_errors_name_where():
    from judgelab.config import ConfigError
    from judgelab.registry import UnknownEntryError
    from judgelab.verdict_import import mapping_from_config

    with pytest.raises(UnknownEntryError, match=r"unknown verdict-log format 'fastchat' \(--format / format\); known:"):
        mapping_from_config("fastchat")
    with pytest.raises(UnknownEntryError, match=r"\(--format / format\)"):
        mapping_from_config({"preset": "nope"})
    with pytest.raises(ConfigError, match=r"^preset 'llmbar': invalid verdict mapping at key 'file_type'"):
        mapping_from_config({"preset": "llmbar", "file_type": "xml"})
    with pytest.raises(ConfigError, match=r"^cfg/mapping: invalid verdict mapping at key 'file_type'"):
        mapping_from_config({"file_type": "xml", "verdict": {"label": "v"}}, where="cfg/mapping")
    with pytest.raises(ConfigError, match=r"^mapping: invalid verdict mapping"):
        mapping_from_config({"file_type": "xml", "verdict": {"label": "v"}})
    assert mapping_from_config({"verdict": {"label": "v"}}).name == "custom"
    spec = {"preset": "llmbar", "judge": {"const": "j"}}
    assert mapping_from_config(spec).name == "llmbar" and spec == {"preset": "llmbar", "judge": {"const": "j"}}


def test_plain_paths_recursive_globs_and_public_files_among_patterns(tmp_path, monkeypatch):
    import judgelab.datasets.sources as sources
    from judgelab.verdict_import.importer import expand_patterns

    rel = next(iter(sources.SOURCES.values())).rel
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGELAB_DATA", str(tmp_path / "root"))
    deep = tmp_path / "runs" / "a" / "b" / "x.csv"
    deep.parent.mkdir(parents=True)
    deep.write_text("")
    (tmp_path / "plain.jsonl").write_text("")
    # a public file kept for its job does not end the list; a plain file is resolved like a glob hit
    assert expand_patterns([rel, "plain.jsonl", "runs/**/*.csv"], where="w") == [
        rel, str(tmp_path / "plain.jsonl"), str(deep)]
    with pytest.raises(InputError, match=r"^w: no file matches 'missing\.jsonl'"):
        expand_patterns(["missing.jsonl"], where="w")
    # a public file's path that is on disk where the user runs is that file
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text("")
    assert expand_patterns([rel], where="w") == [str((tmp_path / rel).resolve())]


# --- verdict sources ------------------------------------------------------------------------------


def test_numbers_are_texts_and_only_nan_is_missing():
    from judgelab.verdict_import.importer import text_of

    assert text_of(2.5) == "2.5" and text_of(0.0) == "0.0" and text_of(7) == "7" and text_of(True) == "True"
    assert text_of(float("nan")) is None and text_of([1.5, float("nan"), "x"]) == "1.5\n\nx"


def test_scores_and_labels_read_from_a_side_table(tmp_path):
    side = _jsonl(tmp_path / "rm.jsonl", [{"id": 1, "s": [0.0, 2.0], "d": "B>A"}, {"id": 2, "s": None, "d": "A>B"}])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1}, {"id": 2}])
    tab = {"table": "rm", "key": ["id"]}
    m = build_mapping({"pair_id": "id", "tables": {"rm": {"key": ["id"], "files": [str(side)]}},
                       "verdict": {"scores": {**tab, "value": "s"}, "label": {**tab, "value": "d"},
                                   "values": {"A>B": "A", "B>A": "B"}}})
    t = import_verdicts([f], m)
    assert t["verdict"].tolist() == ["B", "A"] and t["parse_method"].astype(str).tolist() == ["scores", "label"]
    assert t["label"].astype(str).tolist() == ["B>A", "A>B"]
    assert t["preference"].iloc[0] == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_scores_alone_leave_the_label_empty(tmp_path):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "s": [3.0, 1.0]}, {"id": 2, "s": [-800.0, 800.0]}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"scores": "s"}}))
    assert t["label"].astype(str).tolist() == ["", ""] and t["verdict"].tolist() == ["A", "B"]
    assert t["preference"].iloc[0] == pytest.approx(1 / (1 + math.exp(2.0))) and t["preference"].iloc[1] == 1.0


def test_a_missing_label_is_empty_and_counts_as_found_only_with_an_answer(tmp_path):
    """A null label keeps the label cell empty; a file whose labels are all null is an error unless
    the judge's answers are there (the label was then unparsable, not misspelt)."""
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": None, "t": "an answer"}, {"id": 2, "v": None, "t": ""}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "v", "text": "t"}}))
    assert t["label"].astype(str).tolist() == ["", ""] and t["status"].tolist() == ["unparsed", "unparsed"]
    assert t["parse_method"].astype(str).tolist() == ["label-missing", "label-missing"]
    g = _jsonl(tmp_path / "none.jsonl", [{"id": 1, "v": None, "t": ""}, {"id": 2, "v": None}])
    with pytest.raises(InputError, match=r"none\.jsonl: the verdict of game 0 \('v'\) is empty in every row"):
        import_verdicts([g], build_mapping({"pair_id": "id", "verdict": {"label": "v", "text": "t"}}))
    side = _jsonl(tmp_path / "answers.jsonl", [{"id": 1, "t": "an answer"}])
    h = _jsonl(tmp_path / "side.jsonl", [{"id": 1, "v": None}])
    m = build_mapping({"pair_id": "id", "tables": {"a": {"key": ["id"], "files": [str(side)]}},
                       "verdict": {"label": "v", "text": {"table": "a", "key": ["id"], "value": "t"}}})
    assert import_verdicts([h], m)["raw_text"].tolist() == ["an answer"]


@pytest.mark.parametrize(("verdict", "value", "want"), [
    # verdict spec, the record's value at "x", (status, verdict, parse_method, label, preference)
    ({"label": "x", "values": {"A>B": "A"}}, "A>>B", ("unparsed", "", "label-unknown", "A>>B", None)),
    ({"weight": "x", "weight_range": [1, 3]}, 2.5, ("ok", "B", "weight", "2.5", 0.75)),
    ({"weight": "x", "weight_range": [1, 3]}, 1.5, ("ok", "A", "weight", "1.5", 0.25)),
    ({"weight": "x", "weight_range": [1, 3]}, 2, ("ok", "tie", "weight", "2", 0.5)),
    ({"weight": "x", "values": {"0": "tie"}}, 0, ("ok", "tie", "weight-value", "0", 0.5)),
    ({"weight": "x"}, None, ("unparsed", "", "weight-missing", "", None)),
    ({"scores": "x", "text": "x"}, None, ("unparsed", "", "scores-missing", "", None)),
    ({"text": "x", "parse": "brackets"}, "[[B]]", ("ok", "B", "brackets", "", 1.0)),
])
def test_each_verdict_source_gives_its_status_method_and_label(tmp_path, verdict, value, want):
    there = 1 if "weight" in verdict else [1, 2]  # row 2: the source is there (a weight on every scale used)
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "x": value}, {"id": 2, "x": there}])
    row = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {**verdict, "frame": "stored"}})).iloc[0]
    got = (row["status"], row["verdict"], row["parse_method"], row["label"], row["preference"])
    assert got[:4] == want[:4]
    assert pd.isna(got[4]) if want[4] is None else got[4] == pytest.approx(want[4])


_NOWHERE = r"log\.jsonl: the verdict of game 0 \('x'\) is empty in every row"
_REFUSED = r"log\.jsonl row [12]: the (preference|scores) at 'x' (is|are) "


@pytest.mark.parametrize(("verdict", "values", "error"), [
    # a verdict source empty in every row stops the import, and so does a preference that is no number
    # on the scale; a label or an answer the rules cannot read does not
    ({"weight": "x"}, [None, None], _NOWHERE),
    ({"weight": "x"}, ["much", "more"], _REFUSED),
    ({"weight": "x"}, [7, 8], _REFUSED),
    ({"weight": "x", "values": {"0": "tie"}}, [0, 0], None),
    ({"weight": "x", "values": {None: "tie"}}, [None, None], _NOWHERE),
    ({"scores": "x"}, [None, None], _NOWHERE),
    ({"scores": "x"}, [None, [1, None]], _REFUSED),
    ({"label": "x", "values": {"a": "A"}}, ["b", "c"], None),
    ({"text": "x", "parse": "brackets"}, ["no idea", "none"], None),
    ({"text": "x", "parse": "brackets"}, ["", None], _NOWHERE),
])
def test_a_verdict_source_found_nowhere_is_an_error(tmp_path, verdict, values, error):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": i, "x": v} for i, v in enumerate(values)])
    m = build_mapping({"pair_id": "id", "verdict": verdict})
    if error:
        with pytest.raises(InputError, match=error):
            import_verdicts([f], m)
    else:
        assert len(import_verdicts([f], m)) == 2


def test_weights_and_answers_read_from_a_side_table(tmp_path):
    side = _jsonl(tmp_path / "w.jsonl", [{"id": 1, "w": 0.9, "t": "[[A]]"}, {"id": 2, "w": 0.1, "t": "[[B]]"}])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1}, {"id": 2}])
    tables = {"w": {"key": ["id"], "files": [str(side)]}}

    def tab(v: str) -> dict:
        return {"table": "w", "key": ["id"], "value": v}

    t = import_verdicts([f], build_mapping({"pair_id": "id", "tables": tables, "verdict": {"weight": tab("w")}}))
    assert t["verdict"].tolist() == ["B", "A"] and t["preference"].tolist() == pytest.approx([0.9, 0.1])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "tables": tables,
                                            "verdict": {"text": tab("t"), "parse": "brackets"}}))
    assert t["verdict"].tolist() == ["A", "B"] and t["raw_text"].tolist() == ["[[A]]", "[[B]]"]


def test_table_keys_and_upto_may_read_the_file_name(tmp_path):
    """A look-up key or a turn count may come from the log's file name (one file per model/turn)."""
    side = _jsonl(tmp_path / "answers.jsonl", [{"q": 1, "m": "gpt-4o", "turns": ["t1", "t2", "t3"]}])
    f = _jsonl(tmp_path / "model=gpt-4o,turn=2.jsonl", [{"id": 1, "q": 1, "v": "A", "s": "abc"}])
    m = build_mapping({"pair_id": "id", "verdict": {"label": "v"}, "tables": {"a": {"key": ["q", "m"],
                                                                                   "files": [str(side)]}},
                       "response_a": {"table": "a", "key": ["q", {"file_key": "model"}], "value": "turns",
                                      "upto": {"file_key": "turn"}},
                       "instruction": {"path": "s", "upto": {"const": 1}}})  # upto cuts lists, not strings
    t = import_verdicts([f], m)
    assert t["response_a"].astype(str).tolist() == ["t1\n\nt2"] and t["instruction"].astype(str).tolist() == ["abc"]


def test_a_side_tables_key_sees_no_other_side_table(tmp_path):
    """Side tables load before any look-up: a key field that is itself a table look-up reads empty."""
    side = _jsonl(tmp_path / "s.jsonl", [{"k": 1, "text": "T"}])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "v": "A"}])
    m = build_mapping({"pair_id": "id", "verdict": {"label": "v"}, "optional": ["instruction"],
                       "instruction": {"table": "s", "key": [{"const": None}], "value": "text"},
                       "tables": {"s": {"key": [{"table": "s", "key": ["k"], "value": "k"}], "files": [str(side)]}}})
    assert import_verdicts([f], m)["instruction"].astype(str).tolist() == ["T"]


def test_file_name_keys_split_at_the_first_equals_sign():
    from judgelab.verdict_import.importer import file_name_keys

    assert file_name_keys(Path("judge=a=b, x = 1,loose,=v.jsonl")) == {"judge": "a=b", "x": "1"}


def test_simulated_categories_and_a_model_without_family(tmp_path):
    rows = [{"id": 1, "v": "A", "sim": "True", "cat": "math", "j": "gpt-judge", "m": "my-model"},
            {"id": 2, "v": "A", "sim": "1", "cat": "code", "j": "gpt-judge", "m": "my-model"},
            {"id": 3, "v": "B", "sim": "false", "cat": None, "j": "gpt-judge", "m": "claude-x"},
            {"id": 4, "v": "B", "sim": None, "cat": "math", "j": "gpt-judge", "m": "my-model"},
            {"id": 5, "v": "B", "sim": 0, "cat": "code", "j": "gpt-judge", "m": "my-model"}]
    f = _jsonl(tmp_path / "log.jsonl", rows)
    m = build_mapping({**_PLAIN, "simulated": "sim", "category": "cat", "judge": "j", "model": "m"})
    t = import_verdicts([f], m)
    assert t["simulated"].tolist() == [True, True, False, False, False]
    assert t["category"].astype(str).tolist() == ["math", "code", "", "math", "code"]
    # a model name of no known family: the judge's name may still tell it
    assert t["family"].astype(str).tolist() == ["openai", "openai", "anthropic", "openai", "openai"]


def test_every_empty_response_is_counted(tmp_path, caplog):
    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "a": "", "b": " ", "v": "A"}, {"id": 2, "a": "\n", "b": "y",
                                                                                 "v": "B"}])
    with caplog.at_level("WARNING", logger="judgelab.verdict_import.importer"):
        t = import_verdicts([f], build_mapping({**_PLAIN, "response_a": "a", "response_b": "b"}))
    assert t.attrs["empty_responses"] == 3 and len(t) == 2
    assert [r.getMessage() for r in caplog.records] == [
        "3 empty or whitespace-only responses kept (their pairs stay in the table)"]


def test_order_auto_with_missing_and_identical_responses(tmp_path):
    """``order: auto`` sorts the two texts (a missing one as empty); identical texts are stored as shown."""
    f = _jsonl(tmp_path / "calls.jsonl", [{"id": 1, "a": None, "b": "Aardvark", "v": "A"},
                                          {"id": 2, "a": "B", "b": None, "v": "A"},
                                          {"id": 3, "a": "same", "b": "same", "v": "B"}])
    t = import_verdicts([f], build_mapping({"pair_id": "id", "response_a": "a", "response_b": "b", "order": "auto",
                                            "verdict": {"label": "v"}, "optional": ["response_a", "response_b"]}))
    assert t["order"].tolist() == ["AB", "BA", "AB"] and t["verdict"].tolist() == ["A", "B", "B"]


def test_order_from_the_file_name_or_as_recorded(tmp_path):
    f = _jsonl(tmp_path / "order=BA.jsonl", [{"id": 1, "v": "A"}])
    m = build_mapping({**_PLAIN, "order": {"file_key": "order"}})  # no values map: AB/BA as written
    t = import_verdicts([f], m)
    assert t["order"].tolist() == ["BA"] and t["verdict"].tolist() == ["B"]


def test_ids_up_to_96_characters_are_kept(tmp_path):
    ok, long = "k" * 96, "k" * 97
    f = _jsonl(tmp_path / "log.jsonl", [{"id": ok, "v": "A"}, {"id": long, "v": "A"}])
    t = import_verdicts([f], build_mapping({**_PLAIN, "item_id": "id"}))
    assert t["pair_id"].tolist() == [ok, _sha_id(long)] and t["item_id"].tolist() == [ok, _sha_id(long)]


def test_gold_ties_correctness_and_gold_from_a_side_table(tmp_path):
    side = _jsonl(tmp_path / "gold.jsonl", [{"id": i, "g": g} for i, g in enumerate(["A", "tie", "B", None])])
    f = _jsonl(tmp_path / "log.jsonl", [{"id": i, "v": v} for i, v in enumerate(["A", "A", "tie", "B"])])
    m = build_mapping({**_PLAIN, "gold": {"label": {"table": "g", "key": ["id"], "value": "g"}},
                       "tables": {"g": {"key": ["id"], "files": [str(side)]}}})
    t = import_verdicts([f], m)
    assert t["expected_verdict"].tolist() == ["A", "tie", "B", ""]
    assert t["correct"].tolist()[:3] == [True, False, False] and pd.isna(t["correct"].iloc[3])
    plain = import_verdicts([f], build_mapping(_PLAIN))  # no gold at all: empty, not missing
    assert plain["expected_verdict"].tolist() == [""] * 4 and plain["correct"].isna().all()


def test_an_empty_weight_range_is_rejected():
    """``weight_range: [1, 1]`` would divide by zero on every weight: a config error naming the key."""
    from judgelab.config import ConfigError

    with pytest.raises(ConfigError, match=r"^verdict mapping/games/0/verdict/weight_range: need low < high, "
                                          r"got \[1\.0, 1\.0\]$"):
        build_mapping({"verdict": {"weight": "w", "weight_range": [1, 1]}})


# The game builders of the JudgeBench and LLMBar presets run once, when the registry is filled; these
# tests build the games again and read the published records with them (what the registered presets do).


def test_judgebench_games_read_the_published_decisions_texts_and_scores():
    from judgelab.verdict_import import PRESETS
    from judgelab.verdict_import.presets import _judgebench_game

    raw = {**PRESETS.get("judgebench"), "games": [_judgebench_game(0, "AB"), _judgebench_game(1, "BA")]}
    t = import_verdicts([JB], build_mapping(raw, name="judgebench")).set_index(["pair_id", "order", "judge"])
    letter = {"A>B": "A", "B>A": "B", "A=B": "tie", "B=A": "tie", None: None}
    swap = {"A": "B", "B": "A", "tie": "tie", None: None}
    n = 0
    for f in JB.glob("*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            for i, order in enumerate(("AB", "BA")):
                game = rec["judgments"][i]
                judge = f"{rec['judge_name']}/{game['judgment']['judge_model']}"
                row = t.loc[(rec["pair_id"], order, judge)]
                scores = game["judgment"].get("scores")
                if scores:  # reward model: the higher score as shown, P(B) = logistic(score B - score A)
                    shown = "B" if scores[1] > scores[0] else "A" if scores[1] < scores[0] else "tie"
                    p_shown = 1 / (1 + math.exp(scores[0] - scores[1]))
                    assert row["preference"] == pytest.approx(p_shown if order == "AB" else 1 - p_shown)
                else:
                    shown = letter[game["decision"]]
                assert row["verdict_shown"] == (shown or "") and row["label"] == (game["decision"] or "")
                assert row["verdict"] == ((shown if order == "AB" else swap[shown]) or "")
                assert row["raw_text"] == game["judgment"]["response"]
                n += 1
    assert n == len(t) == 18


def test_llmbar_games_read_the_winner_and_completion_of_their_swap_flag(tmp_path):
    from judgelab.verdict_import import PRESETS
    from judgelab.verdict_import.presets import _llmbar_game

    f = _llmbar_result(tmp_path, 1, {"swap = False": ("Output (a)", "1"), "swap = True": ("Output (a)", "2")})
    raw = {**PRESETS.get("llmbar"), "games": [_llmbar_game("swap = False", "AB"), _llmbar_game("swap = True", "BA")]}
    t = import_verdicts([f], build_mapping(raw, name="llmbar")).set_index("order")
    # winners are in the stored order (the authors un-swap them): "Output (a)" in the swapped game is B
    assert t.loc["AB", "verdict"] == "A" and t.loc["BA", "verdict"] == "B" and t.loc["BA", "verdict_shown"] == "A"
    assert (t["raw_text"] == "Output (a)").all() and (t["label"] == ["1", "2"]).all()


def test_an_unparsable_answer_keeps_the_parsers_status_and_no_label(tmp_path):
    from judgelab.parsing import parse_pairwise

    f = _jsonl(tmp_path / "log.jsonl", [{"id": 1, "x": "no idea"}, {"id": 2, "x": "[[A]]"}])
    row = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"text": "x", "parse": "brackets"}})).iloc[0]
    parsed = parse_pairwise("no idea", fmt="brackets")
    assert (row["status"], row["parse_method"], row["label"], row["verdict"]) == (
        parsed.status.value, parsed.method, "", "")
