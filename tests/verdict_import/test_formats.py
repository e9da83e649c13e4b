"""The verdict importer on the real published files, and the mapping's guards against silent
wrong input.

The JudgeBench folder under ``tests/fixtures/verdict_logs/judgebench/`` copies real records of four
published output files (two ``arena_hard``-prompt judges, two reward models; see the README there):
auditing the folder gives four judges named by model, reward-model scores are verdicts, and the
table reproduces JudgeBench's own pair-level accuracy (``utils/metrics.py``) computed from the raw
files.  The mapping guards: a key a format must have, a mapped field empty in every row, column
names with dots, ``--judge`` standing in for an empty name, ``order: auto``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from judgelab.config import ConfigError
from judgelab.io import InputError, write_table
from judgelab.verdict_import import build_mapping, import_verdicts, preset_mapping
from judgelab.verdict_import import readers as readers_mod
from judgelab.verdict_import.importer import file_name_keys

JB = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench"
JUDGES = {
    "arena_hard/o1-mini-2024-09-12": 3,
    "arena_hard/claude-3-haiku-20240307": 1,
    "reward_model/internlm/internlm2-20b-reward": 2,
    "reward_model/Skywork/Skywork-Reward-Gemma-2-27B": 3,
}


def _raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _judgebench_accuracy(pairs: list[dict]) -> float:
    """JudgeBench's ``compute_final_metrics(reverse_order=True)`` (utils/metrics.py), as published."""
    flip = {"A>B": "B>A", "B>A": "A>B"}
    n_correct = 0
    for pair in pairs:
        label = pair["label"]
        d1 = pair["judgments"][0]["decision"]
        d2 = pair["judgments"][1]["decision"]
        d2 = flip.get(d2, d2)
        counter = sum(1 if d == label else -1 if d == flip.get(label) else 0 for d in (d1, d2))
        n_correct += counter > 0
    return 100 * n_correct / len(pairs)


def test_judgebench_folder_gives_one_judge_per_model_file():
    table = import_verdicts([JB], preset_mapping("judgebench"))
    assert table.groupby("judge")["pair_id"].nunique().to_dict() == JUDGES
    assert table.groupby(["judge", "pair_id"])["order"].apply(lambda o: sorted(o) == ["AB", "BA"]).all()
    # the model is the one inside the games ("/"), not the file name's ("_")
    assert set(table["model"]) == {j.split("/", 1)[1] for j in JUDGES}
    assert set(table.loc[table.model.str.startswith("internlm"), "family"]) == {"shanghai-ai-lab"}
    # items are (source, original id): the same question judged by four judges is one cluster
    assert table.loc[table.pair_id == "e302b0a0-28d5-5a3c-b1af-fedcf5543e72", "item_id"].unique().tolist() == [
        "mmlu-pro-law/1420"]
    assert set(table["expected_verdict"]) == {"A"}


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_judgebench_table_reproduces_the_published_pair_accuracy(judge):
    """The table's verdicts (stored frame) give JudgeBench's own metric on the raw records."""
    f = next(p for p in JB.iterdir() if p.suffix == ".jsonl" and file_name_keys(p)["judge_model"]
             == judge.split("/", 1)[1].replace("/", "_"))
    want = _judgebench_accuracy(_raw(f))
    t = import_verdicts([f], preset_mapping("judgebench"))
    t = t.assign(score=(t["verdict"] == t["expected_verdict"]).astype(int)
                 - ((t["verdict"] != t["expected_verdict"]) & t["verdict"].isin(["A", "B"])).astype(int))
    got = 100 * (t.groupby("pair_id")["score"].sum() > 0).mean()
    assert got == pytest.approx(want)


def test_judgebench_verdicts_in_the_stored_frame():
    t = import_verdicts([JB], preset_mapping("judgebench")).set_index(["judge", "pair_id", "order"])
    o1 = "arena_hard/o1-mini-2024-09-12"
    # pair 2: game 1 "B>A"; game 2 (swapped) "A>B" in its own letters = B in the stored order
    assert t.loc[(o1, "2d989dfb-7cf0-549e-945c-3dd060d1fad5", "AB"), "verdict"] == "B"
    assert t.loc[(o1, "2d989dfb-7cf0-549e-945c-3dd060d1fad5", "BA"), "verdict"] == "B"
    assert t.loc[(o1, "2d989dfb-7cf0-549e-945c-3dd060d1fad5", "BA"), "verdict_shown"] == "A"
    # pair 3: "B>A" in both games = an inconsistent judge: B, then A in the stored order
    assert t.loc[(o1, "138e503c-b09d-5d19-82ff-0b5ddc3e7bf6", "BA"), "verdict"] == "A"
    assert t.loc[(o1, "138e503c-b09d-5d19-82ff-0b5ddc3e7bf6", "AB"), "raw_text"].endswith("[[B>A]]")
    haiku = ("arena_hard/claude-3-haiku-20240307", "b5ce1305-50fe-5a5e-b785-325ab15c6d2b", "BA")
    assert t.loc[haiku, "verdict"] == "tie" and t.loc[haiku, "label"] == "A=B"


def test_reward_model_scores_are_verdicts_with_a_bradley_terry_preference():
    t = import_verdicts([JB], preset_mapping("judgebench")).set_index(["judge", "pair_id", "order"])
    sk = "reward_model/Skywork/Skywork-Reward-Gemma-2-27B"
    row = t.loc[(sk, "2d989dfb-7cf0-549e-945c-3dd060d1fad5", "AB")]  # scores [24.75, 25.5]
    assert row["verdict"] == "B" and row["parse_method"] == "scores" and row["status"] == "ok"
    assert row["preference"] == pytest.approx(1 / (1 + math.exp(-(25.5 - 24.75))))
    # the swapped game's scores [25.5, 24.75] are shown-order: the same stored preference
    swapped = t.loc[(sk, "2d989dfb-7cf0-549e-945c-3dd060d1fad5", "BA")]
    assert swapped["verdict"] == "B" and swapped["preference"] == pytest.approx(row["preference"])
    assert swapped["verdict_shown"] == "A" and swapped["raw_text"] == ""


def test_scores_decide_over_the_label_and_equal_scores_tie(tmp_path):
    rec = _raw(next(JB.glob("*internlm*")))[0]
    rec["judgments"][0]["judgment"]["scores"] = [2.0, 2.0]
    rec["judgments"][0]["decision"] = "A>B"  # a stale label: the scores win
    rec["judgments"][1]["judgment"]["scores"] = None  # no scores: the decision stands
    f = tmp_path / "dataset=judgebench,judge_name=reward_model,judge_model=rm.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    t = import_verdicts([f], preset_mapping("judgebench")).set_index("order")
    assert t.loc["AB", "verdict"] == "tie" and t.loc["AB", "preference"] == 0.5
    assert t.loc["BA", "parse_method"] == "label" and t.loc["BA", "verdict"] == "A"
    rec["judgments"][1]["judgment"]["scores"] = ["x", 1.0]  # scores that are no numbers: a damaged record
    f.write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=r"rm\.jsonl row 1: the scores at 'judgments\.1\.judgment\.scores' are "
                                         r"\['x', 1\.0\], not two finite numbers"):
        import_verdicts([f], preset_mapping("judgebench"))


def test_judge_model_from_the_file_name_when_the_games_lack_it(tmp_path):
    d = tmp_path / "outputs"
    d.mkdir()
    for src in JB.glob("*.jsonl"):
        rows = _raw(src)
        for r in rows:
            for g in r["judgments"]:
                del g["judgment"]["judge_model"]
        (d / src.name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "README.md").write_text("not a log")  # skipped: no data suffix
    t = import_verdicts([tmp_path], preset_mapping("judgebench"))  # folders are searched recursively
    assert set(t["judge"]) == {"arena_hard/o1-mini-2024-09-12", "arena_hard/claude-3-haiku-20240307",
                               "reward_model/internlm_internlm2-20b-reward",
                               "reward_model/Skywork_Skywork-Reward-Gemma-2-27B"}
    assert file_name_keys(Path("a=1,b=x.y,c.jsonl")) == {"a": "1", "b": "x.y"}


def test_an_empty_judge_name_falls_back_to_the_judge_option(tmp_path):
    rec = _raw(next(JB.glob("*o1-mini*")))[0]
    for g in rec["judgments"]:
        del g["judgment"]["judge_model"]
    f = tmp_path / "log.jsonl"  # no judge_model in the file name either
    f.write_text(json.dumps(rec) + "\n")
    t = import_verdicts([f], preset_mapping("judgebench"), judge="my-judge")
    assert set(t["judge"]) == {"my-judge"} and set(t["model"]) == {"my-judge"}
    with pytest.raises(InputError, match=r"log\.jsonl: mapping field 'judge' \(concat\) is empty in every row.*"
                                         r"or name the judge with --judge"):
        import_verdicts([f], preset_mapping("judgebench"))


def test_a_file_of_another_format_names_file_row_and_key(tmp_path):
    f = tmp_path / "gpt-4_pair.jsonl"
    f.write_text(json.dumps({"question_id": 81, "model_1": "a", "model_2": "b", "g1_winner": "model_1",
                             "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"], "turn": 1}) + "\n")
    with pytest.raises(InputError, match=r"gpt-4_pair\.jsonl row 1: format 'judgebench' expects key 'pair_id'"):
        import_verdicts([f], preset_mapping("judgebench"))
    rec = _raw(next(JB.glob("*o1-mini*")))[0]
    del rec["judgments"]
    f.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=r"row 1: format 'judgebench' expects key 'judgments'"):
        import_verdicts([f], preset_mapping("judgebench"))
    # a null value is not a missing key: an unparsable decision is a row, not an error
    rec = _raw(next(JB.glob("*o1-mini*")))[0]
    rec["judgments"][0]["decision"] = None
    rec["judgments"][0]["judgment"]["response"] = "no verdict"
    f.write_text(json.dumps(rec) + "\n")
    t = import_verdicts([f], preset_mapping("judgebench")).set_index("order")
    assert t.loc["AB", "status"] == "unparsed" and t.loc["BA", "verdict"] == "A"


def test_a_mapped_field_empty_in_every_row_names_field_and_file(tmp_path):
    f = tmp_path / "log.csv"
    pd.DataFrame({"id": ["1", "2"], "prompt": ["p", "q"], "v": ["A", "B"]}).to_csv(f, index=False)
    m = {"pair_id": "id", "instruction": "promt", "verdict": {"label": "v"}}
    with pytest.raises(InputError, match=r"log\.csv: mapping field 'instruction' \('promt'\) is empty in every row"):
        import_verdicts([f], build_mapping(m))
    assert len(import_verdicts([f], build_mapping({**m, "optional": ["instruction"]}))) == 2
    with pytest.raises(ConfigError, match=r"optional: \['nope'\] are not mapping fields"):
        build_mapping({**m, "optional": ["nope"]})
    with pytest.raises(InputError, match=r"the verdict of game 0 \('verdict'\) is empty in every row"):
        import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "verdict"}}))
    # one non-empty row is enough: the field exists
    pd.DataFrame({"id": ["1", "2"], "prompt": ["", "q"], "v": ["A", ""]}).to_csv(f, index=False)
    t = import_verdicts([f], build_mapping({"pair_id": "id", "instruction": "prompt", "verdict": {"label": "v"}}))
    assert t["status"].tolist() == ["ok", "unparsed"]


def test_column_names_with_dots_are_read_as_written(tmp_path):
    """The Position-Bias-Analyzer layout: one column per judge model, named with dots."""
    f = tmp_path / "log.csv"
    pd.DataFrame({"id": ["1", "2"], "gpt-3.5-turbo-0125": ["A", "B"], "meta": ["x", "y"]}).to_csv(f, index=False)
    t = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "gpt-3.5-turbo-0125"}}))
    assert t["verdict"].tolist() == ["A", "B"]
    g = tmp_path / "log.jsonl"  # and a real dotted path still descends
    g.write_text(json.dumps({"id": 1, "out": {"v": "B"}}) + "\n")
    assert import_verdicts([g], build_mapping({"pair_id": "id", "verdict": {"label": "out.v"}}))["verdict"][0] == "B"


def test_concat_with_a_missing_part_is_missing(tmp_path):
    f = tmp_path / "run7.jsonl"
    f.write_text(json.dumps({"id": 1, "prompt_name": "p1", "v": "A"}) + "\n")
    m = build_mapping({"pair_id": "id", "judge": {"concat": ["prompt_name", "model"]}, "verdict": {"label": "v"},
                       "optional": ["judge"]})
    assert import_verdicts([f], m)["judge"].tolist() == ["run7"]
    assert import_verdicts([f], m, judge="mine")["judge"].tolist() == ["mine"]


def test_order_auto_links_the_two_presentations_of_a_pair(tmp_path):
    """One row per call, no order column: the stored order is the texts' sorted order."""
    f = tmp_path / "calls.jsonl"
    rows = [{"q": "Which?", "first": "alpha", "second": "beta", "out": "A"},
            {"q": "Which?", "first": "beta", "second": "alpha", "out": "B"},
            {"q": "Other?", "first": "zeta", "second": "eta", "out": "A"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = build_mapping({"instruction": "q", "response_a": "first", "response_b": "second", "order": "auto",
                       "verdict": {"label": "out"}})
    t = import_verdicts([f], m)
    which = t[t.instruction == "Which?"].set_index("order")
    assert which.loc["AB", "pair_id"] == which.loc["BA", "pair_id"]
    assert (which["response_a"] == "alpha").all() and (which["verdict"] == "A").all()
    other = t[t.instruction == "Other?"].iloc[0]
    assert other["order"] == "BA" and other["response_a"] == "eta" and other["verdict"] == "B"


def test_duplicate_verdicts_name_both_rows(tmp_path):
    f = tmp_path / "j.jsonl"
    rec = _raw(next(JB.glob("*o1-mini*")))[0]
    f.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=r"j\.jsonl row 2: judge 'arena_hard/o1-mini-2024-09-12' has two verdicts "
                                         r"for pair 'e302b0a0-28d5-5a3c-b1af-fedcf5543e72' in order AB "
                                         r"\(first at .*j\.jsonl row 1 game 0\)"):
        import_verdicts([f], preset_mapping("judgebench"))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_flat_files_stream_in_batches(tmp_path, monkeypatch, suffix):
    """Records of a parquet/CSV file stream in batches; rows keep their numbers across batches."""
    table = import_verdicts([JB], preset_mapping("judgebench"))
    out = tmp_path / f"t{suffix}"
    write_table(table, out)
    monkeypatch.setattr(readers_mod, "BATCH_ROWS", 4)
    back = import_verdicts([out], preset_mapping("judgelab"))
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    rows = [r for r, _ in readers_mod.iter_records(out)]
    assert rows == list(range(len(table)))


def test_columns_built_in_chunks_equal_one_chunk(monkeypatch):
    """Rows move to Arrow in chunks; texts and names become categories with sorted categories,
    so the table equals the one built in one go and sorts as its strings do."""
    import judgelab.verdict_import.importer as importer

    whole = import_verdicts([JB], preset_mapping("judgebench"))
    monkeypatch.setattr(importer, "CHUNK_ROWS", 3)
    chunked = import_verdicts([JB], preset_mapping("judgebench"))
    pd.testing.assert_frame_equal(chunked, whole)
    for col in ("judge", "instruction", "response_a", "source_file"):
        assert isinstance(whole[col].dtype, pd.CategoricalDtype), col
        cats = list(whole[col].cat.categories)
        assert cats == sorted(set(whole[col].astype(str))), col
    by_text = whole.sort_values("instruction", kind="stable")["instruction"].astype(str).tolist()
    assert by_text == sorted(whole["instruction"].astype(str))
    assert whole["correct"].dtype == "boolean" and whole["source_row"].dtype == "int64"


def test_missing_values_stay_missing_in_category_columns(tmp_path):
    f = tmp_path / "log.jsonl"
    f.write_text(json.dumps({"id": 1, "a": "x", "v": "A"}) + "\n" + json.dumps({"id": 2, "v": "B"}) + "\n")
    t = import_verdicts([f], build_mapping({"pair_id": "id", "response_a": "a", "verdict": {"label": "v"}}))
    assert t["response_a"].iloc[0] == "x" and pd.isna(t["response_a"].iloc[1])
    assert list(t["response_a"].cat.categories) == ["x"]


def test_items_cluster_pairs_of_one_question_without_an_item_field(tmp_path):
    """Without an item field, the pairs of one instruction share an item (the CI's cluster);
    without an instruction either, each pair is its own item."""
    f = tmp_path / "calls.jsonl"
    rows = [{"id": 1, "q": "Same question", "a": "x", "b": "y", "v": "A"},
            {"id": 2, "q": "Same question", "a": "x", "b": "z", "v": "B"},
            {"id": 3, "q": "Another", "a": "x", "b": "y", "v": "B"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = build_mapping({"pair_id": "id", "instruction": "q", "response_a": "a", "response_b": "b",
                       "verdict": {"label": "v"}})
    t = import_verdicts([f], m).set_index("pair_id")
    assert t.loc["1", "item_id"] == t.loc["2", "item_id"] != t.loc["3", "item_id"]
    assert t.loc["1", "item_id"] != "1"
    t2 = import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "v"}}))
    assert (t2["item_id"] == t2["pair_id"]).all()
    long_id = "x" * 200  # ids longer than 96 characters are hashed, stably
    f.write_text(json.dumps({"id": long_id, "item": long_id, "v": "A"}) + "\n")
    t3 = import_verdicts([f], build_mapping({"pair_id": "id", "item_id": "item", "verdict": {"label": "v"}}))
    assert t3["pair_id"][0] == t3["item_id"][0] and len(t3["pair_id"][0]) == 13


def test_alpaca_eval_published_annotations():
    """Two real records (a model against itself): identical outputs, preference 1.5 = a tie, null
    completion; one game per pair, the annotator is the judge."""
    f = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "alpaca_eval" / "annotations.json"
    t = import_verdicts([f], preset_mapping("alpaca_eval"))
    assert len(t) == 2 and set(t["order"]) == {"AB"}
    assert set(t["judge"]) == {"weighted_alpaca_eval_gpt4_turbo"} and set(t["family"]) == {"openai"}
    assert (t["verdict"] == "tie").all() and (t["preference"] == 0.5).all() and (t["raw_text"] == "").all()
    assert set(t["model_a"]) == {"gpt4_1106_preview"} and set(t["category"]) == {"helpful_base"}
    assert (t["response_a"].astype(str) == t["response_b"].astype(str)).all()


def test_text_of_reads_every_recorded_text_shape():
    from judgelab.verdict_import.importer import text_of

    assert text_of(None) is None and text_of(float("nan")) is None and text_of(3) == "3"
    for key in ("content", "text", "judgment", "completion", "output"):
        assert text_of({key: "t", "zz": "other"}) == "t", key
    assert text_of({"content": "c", "text": "t"}) == "c"  # the first key of the list wins
    assert text_of(["a", None, {"content": ["b", "c"]}]) == "a\n\nb\n\nc"
    assert text_of({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'  # unknown dicts as sorted JSON, unescaped
    assert text_of([]) == ""


@pytest.mark.parametrize(("name", "family"), [
    ("gpt-4o-2024-05-13", "openai"), ("o1-mini-2024-09-12", "openai"), ("claude-3-haiku-20240307", "anthropic"),
    ("gemini-1.5-pro", "google"), ("Skywork/Skywork-Reward-Gemma-2-27B", "google"), ("llama-3-8b", "meta"),
    ("qwen1.5-72b-chat", "qwen"), ("mixtral-8x7b", "mistral"), ("phi-3-medium", "microsoft"),
    ("deepseek-coder-v2", "deepseek"), ("glm-4-0520", "zhipu"), ("falcon-180b", "tii"),
    ("internlm/internlm2-20b-reward", "shanghai-ai-lab"), ("command-r-plus", "cohere"), (None, "unknown"),
    ("", "unknown"), ("GPT-4", "openai"),
])
def test_model_families(name, family):
    from judgelab.verdict_import import model_family

    assert model_family(name) == family


def test_field_specs_one_by_one(tmp_path):
    from judgelab.verdict_import.importer import _MISSING, _Ctx, _needs_absent_table, _walk, get_field
    from judgelab.verdict_import.mapping import FieldSpec

    def fs(raw):
        return FieldSpec.parse(raw, where="t")

    path = tmp_path / "a" / "judge=j1,x=2.jsonl"
    ctx = _Ctx(path, 7, {"answers": {("q1",): {"turns": ["t1", "t2", "t3"]}}}, file_name_keys(path))
    rec = {"a": {"0": "zero", "b": [10, 20]}, "s": "str", "n": None, "k.v": "dotted", "k": {"v": "nested"},
           "q": "q1", "t": 2}
    assert get_field(fs("a.0"), rec, ctx) == "zero"  # an int step on a dict tries the string key
    assert get_field(fs("a.b.1"), rec, ctx) == 20 and get_field(fs("a.b.5"), rec, ctx) is None
    assert get_field(fs("a.b.x"), rec, ctx) is None and get_field(fs("s.x"), rec, ctx) is None
    assert get_field(fs("n.x"), rec, ctx) is None
    assert get_field(fs("k.v"), rec, ctx) == "dotted" and get_field(fs(["k", "v"]), rec, ctx) == "nested"
    assert get_field(fs({"path": "k.v"}), rec, ctx) == "dotted"
    assert get_field(fs({"file_key": "judge"}), rec, ctx) == "j1"
    assert get_field(fs({"file_key": "none"}), rec, ctx) is None
    assert get_field(fs({"path_part": -2}), rec, ctx) == "a"
    with pytest.raises(InputError, match="has no path component 99"):
        get_field(fs({"path_part": 99}), rec, ctx)
    assert get_field(fs({"row": True}), rec, ctx) == 7 and get_field(fs({"row": True, "width": 3}), rec, ctx) == "007"
    assert get_field(fs({"concat": ["q", "t"], "sep": "#"}), rec, ctx) == "q1#2"
    assert get_field(fs({"concat": ["q", "t"]}), rec, ctx) == "q1|2"
    assert get_field(fs({"first_of": ["n", "missing", "q"]}), rec, ctx) == "q1"
    assert get_field(fs({"first_of": ["n", "missing"]}), rec, ctx) is None
    tab = {"table": "answers", "key": ["q"], "value": "turns"}
    assert get_field(fs(tab), rec, ctx) == ["t1", "t2", "t3"]
    assert get_field(fs({**tab, "upto": "t"}), rec, ctx) == ["t1", "t2"]
    assert get_field(fs({**tab, "upto": "n"}), rec, ctx) == ["t1", "t2", "t3"]
    assert get_field(fs({**tab, "key": ["s"]}), rec, ctx) is None
    assert get_field(fs({**tab, "table": "other"}), rec, ctx) is None
    assert get_field(fs({"path": "a.b", "upto": {"const": 1}}), rec, ctx) == [10]
    assert get_field(fs({"const": 5}), rec, ctx) == 5 and get_field(None, rec, ctx) is None
    # a key that is there with a null value is not missing; a step into null, a short list or a string is
    assert _walk(rec, ("n",), _MISSING) is None
    for p in (("n", "x"), ("a", "b", 9), ("s", "x"), ("nope",), ("a", "b", "x")):
        assert _walk(rec, p, _MISSING) is _MISSING, p
    # side-table fields are only checked when their table was given
    assert _needs_absent_table(fs(tab), {}) and not _needs_absent_table(fs(tab), {"answers": {}})
    assert _needs_absent_table(fs({"first_of": [tab, tab]}), {})
    assert not _needs_absent_table(fs({"first_of": ["q", tab]}), {})
    assert _needs_absent_table(fs({"concat": ["q", tab]}), {}) and not _needs_absent_table(fs("q"), {})
    assert not _needs_absent_table(None, {})


def test_required_nested_keys(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps({"id": 1, "g": [{"v": "A"}]}) + "\n" + json.dumps({"id": 2, "g": []}) + "\n")
    m = build_mapping({"pair_id": "id", "verdict": {"label": "g.0.v"}, "require": ["id", ["g", 0, "v"]]})
    with pytest.raises(InputError, match=r"r\.jsonl row 2: format 'custom' expects key 'g\.0\.v'"):
        import_verdicts([f], m)


@pytest.mark.parametrize(("scores", "verdict", "pref", "method"), [
    ([0.0, 1.0], "B", 1 / (1 + math.exp(-1)), "scores"),
    ([3, 1], "A", 1 / (1 + math.exp(2)), "scores"),
    ([1000.0, 0.0], "A", 0.0, "scores"),  # no overflow: exp(1000) would raise
    ([0.0, 1000.0], "B", 1.0, "scores"),
    (None, "A", None, "label"),  # no scores: the label decides
    ("", "A", None, "label"),
    (["1", "2"], "B", 1 / (1 + math.exp(-1)), "scores"),  # numbers written as text (a CSV cell) are numbers
])
def test_two_scores_or_the_label(scores, verdict, pref, method):
    from judgelab.verdict_import.importer import _Ctx, _target
    from judgelab.verdict_import.mapping import _verdict

    spec = _verdict({"label": "d", "values": {"A>B": "A", "B>A": "B"}, "scores": "s"}, where="t")
    got = _target(spec, {"d": "A>B", "s": scores}, _Ctx(Path("x.jsonl"), 1, {}))
    assert got[0] == verdict and got[2] == method and got[4]
    assert got[1] is None if pref is None else got[1] == pytest.approx(pref)
    assert got[3] == "A>B"  # the label as written is kept either way


@pytest.mark.parametrize("scores", [[1.0, float("nan")], [1.0, float("inf")], [1.0, 2.0, 3.0], "1.0,2.0", [True, False],
                                    [1.0, None], {"a": 1}])
def test_scores_that_are_no_two_finite_numbers_are_refused(scores):
    """A score list that is there but broken is a damaged record, never a silent fall-back to the label."""
    from judgelab.verdict_import.importer import _Ctx, _target
    from judgelab.verdict_import.mapping import _verdict

    spec = _verdict({"label": "d", "values": {"A>B": "A", "B>A": "B"}, "scores": "s"}, where="t")
    with pytest.raises(InputError, match=r"^x\.jsonl row 7: the scores at 's' are .*, not two finite numbers"):
        _target(spec, {"d": "A>B", "s": scores}, _Ctx(Path("x.jsonl"), 7, {}))


def test_readers_name_the_file_and_what_is_wrong(tmp_path):
    from judgelab.verdict_import.readers import detect_format, read_records

    with pytest.raises(InputError, match=r"nope\.jsonl: file not found"):
        read_records(tmp_path / "nope.jsonl")
    odd = tmp_path / "x.txt"
    odd.write_text("{}")
    with pytest.raises(InputError, match=r"x\.txt: cannot tell the file type from the suffix '\.txt'; give the mapping's file_type"):
        read_records(odd)
    assert detect_format(odd, "json") == "json" and detect_format(tmp_path / "a.NDJSON") == "jsonl"
    j = tmp_path / "a.json"
    j.write_text('{"data": {"rows": [{"a": 1}, {"a": 2}]}}')
    assert read_records(j, records=("data", "rows")) == [(0, {"a": 1}), (1, {"a": 2})]
    with pytest.raises(InputError, match=r"a\.json: no records at 'data\.nope'"):
        read_records(j, records=("data", "nope"))
    j.write_text('{"k1": {"a": 1}, "k2": 5}')
    assert read_records(j) == [(0, {"_key": "k1", "a": 1}), (1, {"_key": "k2", "value": 5})]
    j.write_text("[1]")
    with pytest.raises(InputError, match=r"a\.json element 0: expected a JSON object, got int"):
        read_records(j)
    j.write_text('"text"')
    with pytest.raises(InputError, match=r"a\.json: expected a JSON array of records, got str"):
        read_records(j)
    j.write_text("[{]")
    with pytest.raises(InputError, match=r"a\.json: not valid JSON \(.* at line 1 column 3\)"):
        read_records(j)
    t = tmp_path / "a.tsv"
    t.write_text("id\tv\n1\t\n2\tB\n")
    assert read_records(t) == [(0, {"id": "1", "v": ""}), (1, {"id": "2", "v": "B"})]
    c = tmp_path / "a.csv"
    c.write_text('id,v\n1,"unclosed\n')
    with pytest.raises(InputError, match=r"a\.csv: not a valid CSV file"):
        read_records(c)
    with pytest.raises(InputError, match=r"unknown file type 'xml'"):
        read_records(c, "xml")
    p = tmp_path / "a.parquet"
    pd.DataFrame({"id": [1, 2], "x": [1.5, float("nan")], "l": [[1, 2], []]}).to_parquet(p, index=False)
    assert read_records(p) == [(0, {"id": 1, "x": 1.5, "l": [1, 2]}), (1, {"id": 2, "x": None, "l": []})]


def test_mapping_compiles_and_rejects_with_the_key_named():
    from judgelab.verdict_import import mapping_from_config
    from judgelab.verdict_import.mapping import FieldSpec, value_key

    assert [value_key(v) for v in (None, True, False, 2, 2.0, "2", " 2.50 ", float("nan"), "nan", "", " x ")] == [
        None, "true", "false", "2", "2", "2", "2.5", None, None, None, "x"]
    with pytest.raises(ConfigError, match=r"either 'verdict' .* or 'games', not both"):
        build_mapping({"verdict": {"label": "v"}, "games": [{"verdict": {"label": "v"}}]})
    with pytest.raises(ConfigError, match=r"games/0/order/values: orders must be AB or BA, got \['CD'\]"):
        build_mapping({"games": [{"order": {"path": "o", "values": {"x": "CD"}}, "verdict": {"label": "v"}}]})
    with pytest.raises(ConfigError, match=r"weight_range: need low < high, got \[2\.0, 1\.0\]"):
        build_mapping({"verdict": {"weight": "w", "weight_range": [2, 1]}})
    with pytest.raises(ConfigError, match="a field spec is a path, a list of keys or a mapping"):
        FieldSpec.parse(3, where="w")
    with pytest.raises(ConfigError, match="unknown field spec"):
        FieldSpec.parse({"upto": "n"}, where="w")
    m = build_mapping({"records": "data.rows", "games": [{"order": "BA", "verdict": {"label": "v"}},
                                                         {"order": "swapped", "verdict": {"label": "w"}}],
                       "tables": {"t": {"key": ["k"], "records": "a.b", "files": ["f.jsonl"]}},
                       "require": ["x.y", ["z", 0]], "optional": ["category"], "category": "c"})
    assert m.records == ("data", "rows") and m.games[0].order == "BA" and m.games[1].order is None
    assert m.games[1].order_field.path == ("swapped",) and m.games[1].order_values == {}
    assert m.tables["t"].records == ("a", "b") and m.tables["t"].files == ("f.jsonl",)
    assert m.require == (("x", "y"), ("z", 0)) and m.optional == frozenset({"category"})
    assert m.field("category").path == ("c",) and m.field("judge") is None
    assert build_mapping({"verdict": {"label": "v"}}).games[0].order == "AB"
    arena = mapping_from_config({"preset": "arena_hard", "model_a": {"const": "gpt-4o"}})
    assert arena.name == "arena_hard" and arena.fields["model_a"].const == "gpt-4o"
    assert mapping_from_config("llmbar").name == "llmbar"
    with pytest.raises(ConfigError, match="invalid verdict mapping at key '\\(top level\\)'"):
        mapping_from_config({"nonsense": 1}, where="m.yaml")


def test_parquet_nested_values_come_back_plain(tmp_path):
    from judgelab.verdict_import.readers import read_records

    p = tmp_path / "n.parquet"
    pd.DataFrame({"g": [{"v": "A", "s": float("nan")}, {"v": None, "s": 2.5}],
                  "l": [[1.0, float("nan")], [2.0]], "b": [True, False]}).to_parquet(p, index=False)
    assert read_records(p) == [(0, {"g": {"v": "A", "s": None}, "l": [1.0, None], "b": True}),
                               (1, {"g": {"v": None, "s": 2.5}, "l": [2.0], "b": False})]


def test_parquet_nan_written_by_arrow_reads_as_missing(tmp_path):
    """pandas writes NaN as null, other writers keep a float NaN: either is a missing cell."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from judgelab.verdict_import.readers import read_records

    p = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"x": pa.array([float("nan"), 1.5]), "l": pa.array([[float("nan")], [2.0]]),
                             "s": pa.array([{"v": float("nan")}, {"v": 0.5}])}), p)
    assert read_records(p) == [(0, {"x": None, "l": [None], "s": {"v": None}}),
                               (1, {"x": 1.5, "l": [2.0], "s": {"v": 0.5}})]


def test_tsv_cells_with_commas_stay_whole(tmp_path):
    from judgelab.verdict_import.readers import read_records

    t = tmp_path / "log.tsv"
    t.write_text("a,b\tc\n1,2\t3\n4,5\t6\n")
    assert read_records(t) == [(0, {"a,b": "1,2", "c": "3"}), (1, {"a,b": "4,5", "c": "6"})]


def test_mapping_errors_name_where_they_are(tmp_path):
    bad = {"upto": "n"}  # passes the schema, is no field spec
    cases = [
        ({"games": [{"verdict": {"text": "x"}}]}, r"^m/games/0/verdict: a verdict needs"),
        ({"gold": {"text": "x"}, "verdict": {"label": "v"}}, r"^m/gold: a verdict needs"),
        ({"games": [{"order": bad, "verdict": {"label": "v"}}]}, r"^m/games/0/order: unknown field spec"),
        ({"judge": bad, "verdict": {"label": "v"}}, r"^m/judge: unknown field spec"),
        ({"tables": {"t": {"key": [bad]}}, "verdict": {"label": "v"}}, r"^m/tables/t/key: unknown field spec"),
        ({"verdict": {"label": bad}}, r"^m/games/0/verdict/label: unknown field spec"),
        ({"verdict": {"label": "v", "values": {"a": "C"}}, "file_type": "xml"},
         r"^m: invalid verdict mapping at key 'file_type'"),
        ({"verdict": {"label": "v", "frame": "x"}, "responses": "y", "file_type": "xml"},
         r"^m: invalid verdict mapping at key 'file_type'"),
    ]
    for raw, pattern in cases:
        with pytest.raises(ConfigError, match=pattern):
            build_mapping(raw, where="m")


def test_games_default_to_the_stored_order_and_a_null_order_value(tmp_path):
    m = build_mapping({"games": [{"verdict": {"label": "v"}}]})
    assert m.games[0].order == "AB" and m.games[0].order_values == {}
    f = tmp_path / "o.jsonl"
    f.write_text(json.dumps({"id": 1, "v": "A"}) + "\n" + json.dumps({"id": 1, "o": "s", "v": "B"}) + "\n")
    m = build_mapping({"pair_id": "id", "order": {"path": "o", "values": {None: "AB", "s": "BA"}},
                       "verdict": {"label": "v"}})
    t = import_verdicts([f], m).set_index("order")
    assert t.loc["AB", "verdict"] == "A" and t.loc["BA", "verdict"] == "A"  # B as shown in the swapped game


@pytest.mark.slow  # the whole card: kept out of the importer's mutation runs
def test_auditing_the_judgebench_folder_in_one_command(tmp_path):
    """The issue's "done when": one `judgelab audit` on the folder of four published output files
    gives four judges named by model, each with JudgeBench's pair-level accuracy."""
    from judgelab.cli import main

    out = tmp_path / "audit"
    assert main(["audit", "--format", "judgebench", str(JB), "--out", str(out), "--resamples", "50"]) == 0
    card = pd.read_csv(out / "bias_card.csv")
    assert set(card["judge"]) == set(JUDGES) | {"all judges"}  # and the agreement between them
    acc = card[card["metric"] == "judgebench_accuracy"].groupby("judge")["estimate"].first()
    for judge in JUDGES:
        f = next(p for p in JB.glob("*.jsonl")
                 if file_name_keys(p)["judge_model"] == judge.split("/", 1)[1].replace("/", "_"))
        assert 100 * acc[judge] == pytest.approx(_judgebench_accuracy(_raw(f))), judge


def test_mapping_defaults_and_explicit_formats(tmp_path):
    # a values map with a null key catches the missing labels; a weight without a range is in [0, 1]
    f = tmp_path / "log.data"  # no known suffix: the mapping's format says how to read it
    f.write_text(json.dumps({"id": 1, "w": 0.8}) + "\n" + json.dumps({"id": 2, "w": None, "l": "x"}) + "\n")
    m = build_mapping({"file_type": "jsonl", "pair_id": "id", "verdict": {"weight": "w", "values": {None: "tie"}}})
    t = import_verdicts([f], m).set_index("pair_id")
    assert t.loc["1", "verdict"] == "B" and t.loc["1", "preference"] == pytest.approx(0.8)
    assert t.loc["2", "verdict"] == "tie" and t.loc["2", "parse_method"] == "weight-value"
    m = build_mapping({"file_type": "jsonl", "pair_id": "id", "verdict": {"label": "l", "values": {"": "refusal"}}})
    assert import_verdicts([f], m).set_index("pair_id").loc["1", "status"] == "refusal"
    # a side table read by its declared format; the default format goes by the suffix
    side = tmp_path / "pairs.data"
    side.write_text(json.dumps({"pid": 1, "prompt": "P1"}) + "\n")
    m = build_mapping({"file_type": "jsonl", "pair_id": "id", "verdict": {"weight": "w"}, "optional": ["instruction"],
                       "instruction": {"table": "pairs", "key": ["id"], "value": "prompt"},
                       "tables": {"pairs": {"key": ["pid"], "file_type": "jsonl"}}})
    t = import_verdicts([f], m, tables={"pairs": [side]})
    assert t.set_index("pair_id").loc["1", "instruction"] == "P1"
    m2 = build_mapping({**m.raw, "tables": {"pairs": {"key": ["pid"]}}})
    with pytest.raises(InputError, match=r"pairs\.data: cannot tell the file type"):
        import_verdicts([f], m2, tables={"pairs": [side]})


def test_a_recorded_status_survives_the_round_trip(tmp_path):
    f = tmp_path / "v.csv"
    pd.DataFrame({"pair_id": ["1", "1", "2"], "order": ["AB", "BA", "AB"], "judge": ["j", "j", "j"],
                  "verdict": ["A", "B", ""], "status": ["fallback", "ok", "refusal"],
                  "parse_method": ["fallback-letter", "json", ""]}).to_csv(f, index=False)
    t = import_verdicts([f], preset_mapping("judgelab")).set_index(["pair_id", "order"])
    assert t.loc[("1", "AB"), "status"] == "fallback" and t.loc[("1", "AB"), "parse_method"] == "fallback-letter"
    assert t.loc[("1", "BA"), "status"] == "ok" and t.loc[("2", "AB"), "status"] == "refusal"
    assert t.loc[("2", "AB"), "parse_method"] == "label-missing"
