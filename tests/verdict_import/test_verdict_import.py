"""Generic import of recorded verdicts: every preset's fixture, written from its published schema,
imports to the same verdict table; tables round-trip through CSV/parquet; the replay backend serves
any preset and keeps the two orders of identical responses apart; real-file robustness."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from judgelab.config import ConfigError, JudgeSpec
from judgelab.io import InputError, write_table
from judgelab.verdict_import import (
    PRESETS,
    RECORDED_COLUMNS,
    build_mapping,
    import_verdicts,
    model_family,
    preset_mapping,
)

SWAP = {"A": "B", "B": "A", "tie": "tie", None: None}
BASE = "gpt-4-0314"  # Arena-Hard v0.1 baseline, shown as A in game 1

# One canonical set of judged pairs: (question id, instruction, model_b, response_a, response_b, gold,
# verdict in the stored order when shown as stored (AB), verdict in the stored order when swapped (BA)).
# None = the judge gave no usable verdict.  Model A is the Arena-Hard baseline in every pair.
CANON = [
    ("q1", "Write a haiku about rain.", "claude-3-opus", "Rain taps the window", "Grey sky\nsoft rain falls\nquiet", "B", "B", "B"),
    ("q2", "What is 2 + 2?", "llama-3-8b", "4", "The answer is 4, because two plus two is four.", "A", "A", "B"),
    ("q3", "Name a prime number.", "qwen1.5-72b", "7", "9", "A", "A", None),
    ("q4", "Say hello.", "mixtral-8x7b", "Hello!", "Hello!", "A", "A", "A"),  # identical responses, answers differ
    ("q5", "Translate 'chat' to English.", "gemma-7b", "cat", "chat", "A", "tie", "tie"),
]


def _canon_rows(*, ties: bool = True, orders=("AB", "BA")) -> pd.DataFrame:
    rows = []
    for _q, instr, mb, ra, rb, gold, vab, vba in CANON:
        if not ties and "tie" in (vab, vba):
            continue
        for order, v in (("AB", vab), ("BA", vba)):
            if order in orders:
                rows.append({"instruction": instr, "order": order, "verdict": v or "",
                             "verdict_shown": (v if order == "AB" else SWAP[v]) or "",
                             "has_value": v is not None, "response_a": ra, "response_b": rb,
                             "model_a": BASE, "model_b": mb, "gold": gold})
    return pd.DataFrame(rows)


def _compare(table: pd.DataFrame, expected: pd.DataFrame, cols: list[str]) -> None:
    got = table.assign(has_value=table["status"].isin(["ok", "fallback"]), gold=table["expected_verdict"])
    got = got.astype({c: "str" for c in got.select_dtypes("category").columns})  # texts are categories
    key = ["instruction", "order"]
    got = got.sort_values(key).reset_index(drop=True)
    exp = expected.sort_values(key).reset_index(drop=True)
    assert len(got) == len(exp)
    pd.testing.assert_frame_equal(got[key + cols], exp[key + cols], check_dtype=False)


def _answers(tmp: Path, fmt_turn) -> tuple[Path, Path]:
    """FastChat/Arena-Hard model_answer folder and question.jsonl for the canonical pairs."""
    ans = tmp / "model_answer"
    ans.mkdir()
    by_model: dict[str, list[dict]] = {}
    for q, _, mb, ra, rb, *_ in CANON:
        for m, text in ((BASE, ra), (mb, rb)):
            by_model.setdefault(m, []).append({"question_id": q, "answer_id": f"{q}-{m}", "model_id": m,
                                               "choices": [{"index": 0, "turns": [fmt_turn(text)]}], "tstamp": 0.0})
    for m, rows in by_model.items():
        (ans / f"{m}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    qs = tmp / "question.jsonl"
    qs.write_text("".join(json.dumps({"question_id": q, "category": "writing", "turns": [fmt_turn(instr)]}) + "\n"
                          for q, instr, *_ in CANON))
    return ans, qs


def _arena_label(v: str | None, strong: bool) -> str | None:
    return {"A": "A>>B" if strong else "A>B", "B": "B>>A" if strong else "B>A", "tie": "A=B", None: None}[v]


def fixture_arena_hard(tmp: Path) -> tuple[list[Path], dict]:
    ans, qs = _answers(tmp, lambda t: {"content": t, "token_len": len(t.split())})
    rows = []
    for i, (q, _, mb, _, _, _, vab, vba) in enumerate(CANON):
        games = [{"user_prompt": "...", "judgment": f"My verdict: [[{_arena_label(vab, i % 2 == 0)}]]",
                  "score": _arena_label(vab, i % 2 == 0)},
                 {"user_prompt": "...", "judgment": "I could not decide.", "score": _arena_label(SWAP[vba], False)}]
        rows.append({"question_id": q, "model": mb, "judge": "gpt-4-1106-preview", "games": games, "tstamp": 0})
    f = tmp / "gpt-4-1106-preview.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [f], {"answers": [ans], "questions": [qs]}


def fixture_fastchat(tmp: Path) -> tuple[list[Path], dict]:
    ans, qs = _answers(tmp, lambda t: t)
    win = {"A": "model_1", "B": "model_2", "tie": "tie", None: "error"}
    rows = [{"question_id": q, "model_1": BASE, "model_2": mb, "g1_winner": win[vab], "g2_winner": win[vba],
             "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...", "g1_judgment": f"[[{(vab or 'X')[0].upper()}]]",
             "g2_user_prompt": "...", "g2_judgment": "...", "turn": 1, "tstamp": 0.0}
            for q, _, mb, _, _, _, vab, vba in CANON]
    f = tmp / "gpt-4_pair.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [f], {"answers": [ans], "questions": [qs]}


def fixture_judgebench(tmp: Path) -> tuple[list[Path], dict]:
    """The published layout (tests/fixtures/verdict_logs/judgebench/ holds real records): the judge
    model inside each game, the second game swapped, ``decision`` in that game's letters."""
    dec = {"A": "A>B", "B": "B>A", "tie": "A=B", None: None}
    judge = "gpt-4o-2024-05-13"

    def game(verdict: str | None) -> dict:
        return {"judgment": {"judge_model": judge, "prompt": "...", "response": f"verdict [[{dec[verdict]}]]"},
                "decision": dec[verdict]}

    rows = [{"pair_id": f"jb-{q}", "original_id": q, "source": "mmlu-pro", "question": instr,
             "response_model": "gpt-4o-2024-05-13", "response_A": ra, "response_B": rb,
             "label": "A>B" if gold == "A" else "B>A", "judge_name": "arena_hard",
             "judgments": [game(vab), game(SWAP[vba])]}
            for q, instr, _, ra, rb, gold, vab, vba in CANON]
    f = tmp / f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model={judge}.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [f], {}


def fixture_llmbar(tmp: Path) -> tuple[list[Path], dict]:
    win = {"A": "1", "B": "2", None: None}
    out = {"A": "Output (a)", "B": "Output (b)", None: "I cannot tell."}
    rows = [{"input": instr, "output_1": ra, "output_2": rb, "label": 1 if gold == "A" else 2,
             "results": [{"swap = False": {"completion": [out[vab], "stop"], "winner": win[vab]},
                          "swap = True": {"completion": [out[SWAP[vba]], "stop"], "winner": win[vba]}}]}
            for _, instr, _, ra, rb, gold, vab, vba in CANON if "tie" not in (vab, vba)]
    d = tmp / "Natural" / "evaluators" / "GPT-4" / "Vanilla"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps(rows))
    return [d / "result.json"], {}


def fixture_alpaca_eval(tmp: Path) -> tuple[list[Path], dict]:
    pref = {"A": 1.0, "B": 2.0, "tie": 1.5, None: None}
    rows = [{"instruction": instr, "output_1": ra, "generator_1": BASE, "output_2": rb, "generator_2": mb,
             "annotator": "alpaca_eval_gpt4", "preference": pref[vab], "raw_completion": "...",
             "dataset": "helpful_base", "price_per_example": 0.01, "time_per_example": 1.0}
            for _, instr, mb, ra, rb, _, vab, _ in CANON]
    f = tmp / "annotations.json"
    f.write_text(json.dumps(rows))
    return [f], {}


FIXTURES = {
    # preset: (fixture writer, columns compared with the canonical table, canonical subset)
    "arena_hard": (fixture_arena_hard, ["verdict", "verdict_shown", "has_value", "response_a", "response_b",
                                        "model_a", "model_b"], {}),
    "fastchat_pairwise": (fixture_fastchat, ["verdict", "verdict_shown", "has_value", "response_a", "response_b",
                                             "model_a", "model_b"], {}),
    "judgebench": (fixture_judgebench, ["verdict", "verdict_shown", "has_value", "response_a", "response_b", "gold"],
                   {}),
    "llmbar": (fixture_llmbar, ["verdict", "verdict_shown", "has_value", "response_a", "response_b", "gold"],
               {"ties": False}),
    "alpaca_eval": (fixture_alpaca_eval, ["verdict", "has_value", "response_a", "response_b", "model_a", "model_b"],
                    {"orders": ("AB",)}),
}


def test_every_preset_has_a_fixture():
    # arena_hard_v2 is tested on its real published records in tests/verdict_import/test_arena_hard_v2.py,
    # inspect_ai, rewardbench2 and promptfoo (one game per pair, own readers) in tests/verdict_import/test_tools_presets.py
    assert set(PRESETS.names()) == set(FIXTURES) | {"judgelab", "arena_hard_v2", "inspect_ai", "rewardbench2", "promptfoo"}


@pytest.mark.parametrize("preset", sorted(FIXTURES))
def test_preset_fixture_imports_to_the_canonical_verdicts(preset, tmp_path):
    write, cols, subset = FIXTURES[preset]
    files, tables = write(tmp_path)
    table = import_verdicts(files, preset_mapping(preset), tables=tables)
    assert list(table.columns) == RECORDED_COLUMNS
    _compare(table, _canon_rows(**subset), cols)
    assert table["judge"].nunique() == 1 and (table["backend"] == "recorded").all()
    # both orders of a pair share pair_id; items cluster by question
    if "BA" in set(table["order"]):
        assert (table.groupby("pair_id")["order"].apply(set) == {"AB", "BA"}).all()


@pytest.mark.parametrize("preset", sorted(FIXTURES))
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_preset_tables_round_trip_through_the_judgelab_preset(preset, suffix, tmp_path):
    write, _, _ = FIXTURES[preset]
    files, tables = write(tmp_path)
    table = import_verdicts(files, preset_mapping(preset), tables=tables)
    out = tmp_path / f"recorded{suffix}"
    write_table(table, out)
    back = import_verdicts([out], preset_mapping("judgelab"))
    pd.testing.assert_frame_equal(back, table, check_dtype=False)


def test_judge_names_models_and_families(tmp_path):
    files, tables = fixture_fastchat(tmp_path)
    t = import_verdicts(files, preset_mapping("fastchat_pairwise"), tables=tables)
    assert set(t["judge"]) == {"gpt-4/pair-v2"} and set(t["family"]) == {"openai"}
    assert set(t["family_a"]) == {"openai"} and "anthropic" in set(t["family_b"])
    files, _ = fixture_llmbar(tmp_path / "l")
    t = import_verdicts(files, preset_mapping("llmbar"))
    assert set(t["judge"]) == {"GPT-4-Vanilla"} and set(t["pair_id"]) >= {"Natural-0000"}
    assert model_family("text-bison-001") == "google" and model_family("falcon-180b-chat") == "tii"
    assert model_family("some-new-model") == "unknown"


def test_fastchat_turn_two_shows_both_turns(tmp_path):
    ans = tmp_path / "model_answer"
    ans.mkdir()
    for m, turns in (("m1", ["first answer", "second answer"]), ("m2", ["other one", "other two"])):
        (ans / f"{m}.jsonl").write_text(json.dumps({"question_id": 81, "model_id": m,
                                                    "choices": [{"index": 0, "turns": turns}]}) + "\n")
    rows = [{"question_id": 81, "model_1": "m1", "model_2": "m2", "g1_winner": "model_1", "g2_winner": "tie",
             "judge": ["gpt-4", "pair-v2-multi-turn"], "turn": t, "g1_judgment": "", "g2_judgment": ""} for t in (1, 2)]
    f = tmp_path / "j.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = import_verdicts([f], preset_mapping("fastchat_pairwise"), tables={"answers": [ans]})
    by_turn = t[t.order == "AB"].set_index(t[t.order == "AB"]["pair_id"].str.endswith("|2"))["response_a"]
    assert by_turn[False] == "first answer"
    assert by_turn[True] == "first answer\n\nsecond answer"
    assert set(t[t.order == "BA"]["verdict"]) == {"tie"}


def test_alpaca_eval_weights_identical_and_missing(tmp_path):
    rows = [{"instruction": f"i{k}", "output_1": "x", "generator_1": "a", "output_2": "y", "generator_2": "b",
             "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": p}
            for k, p in enumerate([1.8, 1.2, 1.5, 0, None, 2.6])]
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(rows[:5]))
    t = import_verdicts([f], preset_mapping("alpaca_eval")).set_index("instruction")
    assert t.loc["i0", "verdict"] == "B" and t.loc["i0", "preference"] == pytest.approx(0.8)
    assert t.loc["i1", "verdict"] == "A" and t.loc["i1", "preference"] == pytest.approx(0.2)
    assert t.loc["i2", "verdict"] == "tie" and t.loc["i3", "verdict"] == "tie"
    assert t.loc["i4", "status"] == "unparsed" and t.loc["i4", "verdict"] == ""
    f.write_text(json.dumps(rows))  # 2.6 is off AlpacaEval's scale: a damaged file, not a verdict
    with pytest.raises(InputError, match=r"annotations\.json row 5: the preference at 'preference' is 2\.6, outside "
                                         r"the scale \[1, 2\]"):
        import_verdicts([f], preset_mapping("alpaca_eval"))


def test_custom_csv_mapping_one_row_per_call_with_shown_responses(tmp_path):
    """A user's own log: one row per call, responses as shown, a swapped flag links the orders."""
    f = tmp_path / "log.csv"
    pd.DataFrame([
        {"qid": "1", "prompt": "p", "first": "short", "second": "much longer answer", "swapped": "false",
         "out": "[[B]]", "truth": "second_is_better"},
        {"qid": "1", "prompt": "p", "first": "much longer answer", "second": "short", "swapped": "true",
         "out": "[[A]]", "truth": "second_is_better"},
        {"qid": "2", "prompt": "q", "first": "x", "second": "y", "swapped": "false", "out": "", "truth": ""},
    ]).to_csv(f, index=False)
    mapping = build_mapping({
        "judge": {"const": "my-judge"}, "model": {"const": "gpt-4o-mini"}, "pair_id": "qid", "instruction": "prompt",
        "response_a": "first", "response_b": "second", "responses": "shown",
        "order": {"path": "swapped", "values": {"false": "AB", "true": "BA"}},
        "verdict": {"text": "out", "parse": "brackets"},
        "gold": {"label": "truth", "values": {"second_is_better": "B"}, "frame": "shown"},
    })
    t = import_verdicts([f], mapping).set_index(["pair_id", "order"])
    assert t.loc[("1", "AB"), "response_a"] == "short" and t.loc[("1", "BA"), "response_a"] == "short"
    assert t.loc[("1", "AB"), "verdict"] == "B" and t.loc[("1", "BA"), "verdict"] == "B"
    assert t.loc[("1", "BA"), "expected_verdict"] == "A"  # gold given in the shown frame of the swapped row
    assert t.loc[("1", "AB"), "expected_verdict"] == "B"
    # an empty CSV cell is an empty answer (unparsed), not NaN, and not a verdict
    assert t.loc[("2", "AB"), "status"] == "unparsed" and t.loc[("2", "AB"), "verdict"] == ""
    assert pd.isna(t.loc[("2", "AB"), "correct"])


def test_mapping_errors_name_the_key_file_and_row(tmp_path):
    with pytest.raises(ConfigError, match="at key 'verdict/frame'"):
        build_mapping({"verdict": {"label": "x", "frame": "sideways"}})
    with pytest.raises(ConfigError, match="needs a label, a weight, scores, or text with a parse format"):
        build_mapping({"verdict": {"text": "x"}})
    with pytest.raises(ConfigError, match="at key 'verdict/values/1': 'C' is not one of"):
        build_mapping({"verdict": {"label": "x", "values": {"1": "C"}}})
    f = tmp_path / "log.jsonl"
    f.write_text('{"id": 1, "o": "AB", "v": "A"}\n{"id": 1, "o": "up", "v": "A"}\n')
    m = build_mapping({"pair_id": "id", "order": {"path": "o", "values": {"AB": "AB"}}, "verdict": {"label": "v"}})
    with pytest.raises(InputError, match=r"log\.jsonl row 2: presentation order 'up'"):
        import_verdicts([f], m)
    f.write_text('{"id": 1, "v": "A"}\n{"id": 1, "v": "B"}\n')
    with pytest.raises(InputError, match=r"row 2: judge 'log' has two verdicts for pair '1' in order AB"):
        import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "v"}}))
    f.write_text('{"id": 1}\nnot json\n')
    with pytest.raises(InputError, match=r"log\.jsonl:2: not valid JSON"):
        import_verdicts([f], build_mapping({"pair_id": "id", "verdict": {"label": "v"}}))


def test_whitespace_only_response_keeps_its_pair(tmp_path, caplog):
    files, _ = fixture_llmbar(tmp_path)
    data = json.loads(files[0].read_text())
    data[0]["output_2"] = "   \n"
    files[0].write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        t = import_verdicts(files, preset_mapping("llmbar"))
    assert len(t) == 2 * len(data) and t.attrs["empty_responses"] == 1
    assert "1 empty or whitespace-only responses kept" in caplog.text


def _replay_spec(path: Path, source: str, **extra) -> JudgeSpec:
    return JudgeSpec.from_dict({"name": "replayed", "backend": "replay", "model": "m",
                                "options": {"source": source, "path": str(path), **extra}})


def test_replay_serves_any_preset_and_keeps_identical_responses_apart(tmp_path):
    """q4 has two identical responses and different recorded answers in the two orders."""
    from judgelab.cache import CallCache
    from judgelab.datasets.pairs import Pair
    from judgelab.judges import make_judge
    from judgelab.judges.pairwise import judge_pairs

    files, _ = fixture_llmbar(tmp_path)
    pairs = [Pair(pair_id=q, prompt=instr, response_a=ra, response_b=rb, expected_verdict=gold)
             for q, instr, _, ra, rb, gold, vab, vba in CANON if "tie" not in (vab, vba)]
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(make_judge(_replay_spec(files[0], "llmbar")), pairs, cache, template="output_ab",
                        max_error_rate=None)
    got = v.set_index(["pair_id", "order"])["verdict"]
    for q, _, _, _, _, _, vab, vba in CANON:
        if "tie" in (vab, vba):
            continue
        assert got[(q, "AB")] == (vab or "") and got[(q, "BA")] == (vba or ""), q
    # a label-only log (JudgeBench decisions) replays its verdicts in the request's format
    (tmp_path / "jb").mkdir()
    jb, _ = fixture_judgebench(tmp_path / "jb")
    rows = [json.loads(line) for line in jb[0].read_text().splitlines()]
    for r in rows:
        for g in r["judgments"]:
            del g["judgment"]
    jb[0].write_text("".join(json.dumps(r) + "\n" for r in rows))
    with CallCache(tmp_path / "c2.sqlite") as cache:
        v2 = judge_pairs(make_judge(_replay_spec(jb[0], "judgebench")), pairs, cache, template="json_verdict",
                         max_error_rate=None)
    assert (v2.set_index(["pair_id", "order"])["verdict"] == got).all()


def test_replay_needs_a_format():
    from judgelab.judges import make_judge

    with pytest.raises(ConfigError, match="replay needs option 'source'"):
        make_judge(JudgeSpec.from_dict({"name": "r", "backend": "replay", "model": "m", "options": {"path": "/x"}}))
