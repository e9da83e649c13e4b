"""The ``arena_hard_v2`` preset on real records of the current lmarena/arena-hard-auto layout.

``tests/fixtures/verdict_logs/arena_hard_v2/`` copies published records (sources, commits and
paths in the README there): two judgment records of Gemini-2.5-Flash judging mistral-small-2503
against the v2.0 ``hard_prompt`` baseline o3-mini-2025-01-31, the o3-mini and mistral answer
records they judge, and their question records.  The v2.0 layout differs from v0.1 in every key
the ``arena_hard`` preset reads: ``uid`` for ``question_id``, the baseline named per record
(``baseline``, one per category), each game's judge output a dict (``judgment.answer``), answers
as chat ``messages`` with the text at ``messages[-1].content.answer`` (or, in files written by
older answer code such as the mistral file here, ``messages[-1].content`` itself), questions as
``{uid, category, subcategory, prompt}``.

Every expectation is computed from the raw records by the format's own rules (the judges'
``[[A>>B]]`` labels, the prompts the judge was shown, ``show_result.py``'s battles), never read
back from the importer.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.verdict_import import import_verdicts, preset_mapping
from tests.verdict_import.test_published import show_result_battles as _show_result_battles

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
V2 = FIX / "arena_hard_v2"
V2_JUDGMENTS = V2 / "model_judgment" / "gemini-2.5-flash" / "mistral-small-2503.jsonl"
V1 = FIX / "arena_hard"
V1_JUDGMENTS = V1 / "model_judgment" / "gpt-4-1106-preview" / "gpt-3.5-turbo-0125.jsonl"

SWAP = {"A": "B", "B": "A", "tie": "tie"}
#: the labels in the letters of the game's own prompt
SHOWN = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}
#: ``JUDGE_SETTINGS`` of lmarena/arena-hard-auto ``src/arenahard/utils/judge_utils.py`` (bed1604):
#: the v2.0 baseline of each category
V2_BASELINE = {"hard_prompt": "o3-mini-2025-01-31", "coding": "o3-mini-2025-01-31", "math": "o3-mini-2025-01-31",
               "creative_writing": "gemini-2.0-flash-001", "arena-hard-v0.1": "gpt-4-0314"}
#: ``get_score``'s patterns in the v2.0 config: the last ``[[...]]`` label of the judge's answer
VERDICT_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")


def _raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _tables() -> dict[str, list[str]]:
    return {"answers": [str(V2 / "model_answer")], "questions": [str(V2 / "question.jsonl")]}


def _v2() -> pd.DataFrame:
    # the judge's folder, as show_result.py globs it: model_judgment/<judge>/*.jsonl
    return import_verdicts([V2 / "model_judgment"], preset_mapping("arena_hard_v2"), tables=_tables())


def _row(t: pd.DataFrame, item: str, order: str) -> pd.Series:
    rows = t[(t["item_id"] == item) & (t["order"] == order)]
    assert len(rows) == 1, (item, order, len(rows))
    return rows.iloc[0]


def _answer_text(rec: dict) -> str:
    """The answer as gen_judgment.py reads it, ``messages[-1]["content"]["answer"]``; an answer
    file written by older answer code stores the text as the content itself."""
    content = rec["messages"][-1]["content"]
    return content["answer"] if isinstance(content, dict) else content


def _shown(prompt: str) -> tuple[str, str]:
    """The answers a published v2.0 judge prompt shows as Assistant A and Assistant B."""
    def between(start: str, end: str) -> str:
        return prompt.split(start, 1)[1].split(end, 1)[0]
    return (between("<|The Start of Assistant A's Answer|>\n", "\n<|The End of Assistant A's Answer|>"),
            between("<|The Start of Assistant B's Answer|>\n", "\n<|The End of Assistant B's Answer|>"))


def write_canonical_v2(tmp: Path, canon: list[tuple], baseline: str) -> tuple[list[Path], dict[str, list[Path]]]:
    """Canonical judged pairs in the v2.0 layout, as ``gen_judgment.py`` / ``gen_answer.py`` write it.

    ``canon`` rows are ``(uid, instruction, model, baseline answer, model answer, gold, stored
    verdict shown AB, stored verdict swapped)`` (``tests/verdict_import/test_verdict_import.py``'s ``CANON``);
    game 1 shows the baseline as A, game 2 the model, each ``score`` in its game's letters
    (``None`` = no label found, as ``get_score`` returns); every other pair's labels are strong.
    Returns the judgment file and the side tables for :func:`import_verdicts`.
    """
    def label(v: str | None, strong: bool) -> str | None:
        return {"A": "A>>B" if strong else "A>B", "B": "B>>A" if strong else "B>A", "tie": "A=B", None: None}[v]

    ans = tmp / "model_answer"
    ans.mkdir()
    by_model: dict[str, list[dict]] = {}
    for uid, instr, model, ra, rb, *_ in canon:
        for m, text in ((baseline, ra), (model, rb)):
            by_model.setdefault(m, []).append({
                "uid": uid, "ans_id": f"{uid}-{m}", "model": m, "tstamp": 0.0, "metadata": {"token_len": 1},
                "messages": [{"role": "user", "content": instr}, {"role": "assistant", "content": {"answer": text}}]})
    for m, rows in by_model.items():
        (ans / f"{m}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    qs = tmp / "question.jsonl"
    qs.write_text("".join(json.dumps({"uid": uid, "category": "hard_prompt", "subcategory": "coding",
                                      "prompt": instr}) + "\n" for uid, instr, *_ in canon))
    records = []
    for i, (uid, _, model, _, _, _, vab, vba) in enumerate(canon):
        shown = (label(vab, i % 2 == 0), label(SWAP.get(vba), False))
        records.append({"uid": uid, "category": "hard_prompt", "judge": "gpt-4.1", "model": model,
                        "baseline": baseline,
                        "games": [{"score": s, "judgment": {"answer": f"My final verdict: [[{s}]]" if s else "Unsure."},
                                   "prompt": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}]}
                                  for s in shown]})
    f = tmp / "gpt-4.1.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return [f], {"answers": [ans], "questions": [qs]}


# ------------------------------------------------------------------------------------------

def test_judge_models_and_the_baseline_each_record_names():
    raw = _raw(V2_JUDGMENTS)
    t = _v2()
    assert len(t) == 2 * len(raw)
    # the judge is the record's "judge" (the folder name); the model is the file name
    assert set(t["judge"]) == {r["judge"] for r in raw} == {V2_JUDGMENTS.parent.name}
    assert set(t["model"]) == {"gemini-2.5-flash"} and set(t["family"]) == {"google"}
    assert set(t["model_b"]) == {r["model"] for r in raw} == {V2_JUDGMENTS.stem}
    # stored A is the baseline the record names, the one judge_utils.py gives its category
    assert set(t["model_a"]) == {r["baseline"] for r in raw} == {V2_BASELINE[r["category"]] for r in raw}
    assert set(t["family_a"]) == {"openai"} and set(t["family_b"]) != {"openai"}
    assert sorted(t["item_id"].unique()) == sorted(r["uid"] for r in raw)
    assert set(t["category"]) == {r["category"] for r in raw} == {"hard_prompt"}
    orders = t.groupby("pair_id")["order"].apply(sorted)
    assert len(orders) == len(raw) and all(o == ["AB", "BA"] for o in orders)
    assert (t["status"] == "ok").all()


def test_each_game_scored_in_its_own_letters_with_the_second_game_swapped():
    """Game 1 shows the baseline (stored A) first, game 2 the model: the published prompts say
    so, and the stored-order verdict of game 2 is its label swapped."""
    t = _v2()
    answers = {(r["uid"], r["model"]): _answer_text(r) for p in sorted((V2 / "model_answer").glob("*.jsonl"))
               for r in _raw(p)}
    for r in _raw(V2_JUDGMENTS):
        for i, order in enumerate(("AB", "BA")):
            game, row = r["games"][i], _row(t, r["uid"], order)
            # the label is the judge's own last [[...]] verdict
            assert VERDICT_LABEL.findall(game["judgment"]["answer"])[-1] == game["score"]
            shown = SHOWN[game["score"]]
            assert row["label"] == game["score"] and row["verdict_shown"] == shown
            assert row["verdict"] == (shown if i == 0 else SWAP[shown])
            assert row["raw_text"] == game["judgment"]["answer"]
            first, second = _shown(game["prompt"][1]["content"])
            a, b = answers[r["uid"], r["baseline"]], answers[r["uid"], r["model"]]
            assert (first, second) == ((a, b) if i == 0 else (b, a))
    # slight and strong labels in both letters; in stored terms the judge kept its verdict when
    # the order flipped: the model (B) both times for 62d7, the baseline (A) both times for 666d
    assert {g["score"] for r in _raw(V2_JUDGMENTS) for g in r["games"]} == {"A>B", "B>A", "A>>B", "B>>A"}
    stored = t.pivot(index="item_id", columns="order", values="verdict")
    assert stored.to_dict("index") == {"62d77ecc66d04286": {"AB": "B", "BA": "B"},
                                       "666d2acdd7d64e17": {"AB": "A", "BA": "A"}}


def test_texts_come_from_the_question_and_answer_records():
    """The instruction is the question's ``prompt``; the baseline's answer (``content.answer``)
    and the model's (an answer file whose ``content`` is the text) fill the stored slots; both
    are what the judge was shown."""
    questions = {r["uid"]: r for r in _raw(V2 / "question.jsonl")}
    o3 = {r["uid"]: r for r in _raw(V2 / "model_answer" / "o3-mini-2025-01-31.jsonl")}
    mi = {r["uid"]: r for r in _raw(V2 / "model_answer" / "mistral-small-2503.jsonl")}
    assert all(isinstance(r["messages"][-1]["content"], dict) for r in o3.values())
    assert all(isinstance(r["messages"][-1]["content"], str) for r in mi.values())
    t = _v2()
    for _, row in t.iterrows():
        u = row["item_id"]
        assert row["instruction"] == questions[u]["prompt"] == o3[u]["messages"][0]["content"]
        assert row["response_a"] == o3[u]["messages"][-1]["content"]["answer"]
        assert row["response_b"] == mi[u]["messages"][-1]["content"]
    for r in _raw(V2_JUDGMENTS):
        for game in r["games"]:
            assert game["prompt"][1]["content"].startswith(f"<|User Prompt|>\n{questions[r['uid']]['prompt']}\n\n")


def test_audit_gives_the_show_result_score(tmp_path):
    from judgelab import cli

    raw = _raw(V2_JUDGMENTS)
    battles = _show_result_battles(raw)
    want = sum(battles) / len(battles)
    # 62d7: B>A then A>B, the model won both games (2 battles of 1); 666d: A>>B then B>>A, the
    # baseline won both strongly (6 battles of 0)
    assert len(battles) == 8 and want == pytest.approx(2 / 8)
    out = tmp_path / "audit"
    assert cli.main(["audit", "--format", "arena_hard_v2", str(V2 / "model_judgment"),
                     "--table", f"answers={V2 / 'model_answer'}", "--table", f"questions={V2 / 'question.jsonl'}",
                     "--out", str(out), "--resamples", "400"]) == 0
    assert (out / "bias_card.md").exists() and (out / "bias_card.png").stat().st_size > 0
    card = pd.read_csv(out / "bias_card.csv").set_index(["view", "metric"])
    assert set(card["judge"]) == {"gemini-2.5-flash"}
    row = card.loc[("lenient", "arena_hard_score")]
    assert row["estimate"] == pytest.approx(want)
    assert row["n"] == len(raw) and row["n_items"] == len(raw)
    # two questions, per-question scores 1 and 0: the cluster bootstrap's SE is finite and not zero
    assert math.isfinite(row["se"]) and row["se"] > 0
    assert row["ci_low"] <= want <= row["ci_high"] and row["ci_low"] < row["ci_high"]
    agree = [SHOWN[r["games"][0]["score"]] == SWAP[SHOWN[r["games"][1]["score"]]] for r in raw]
    assert card.loc[("lenient", "positional_agreement"), "estimate"] == pytest.approx(sum(agree) / len(agree))


def test_a_failed_game_drops_its_pair_from_the_score_as_show_result_does(tmp_path):
    """gen_judgment.py appends ``None`` for a game whose API call failed: that game is unparsed,
    and the pair leaves the Arena-Hard score as show_result.py drops the record.  With one
    question left the card reports the score but withholds the finding (no interval)."""
    from judgelab import cli

    raw = _raw(V2_JUDGMENTS)
    raw[0]["games"][1] = None
    folder = tmp_path / "model_judgment" / V2_JUDGMENTS.parent.name
    folder.mkdir(parents=True)
    (folder / V2_JUDGMENTS.name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in raw))
    t = import_verdicts([folder.parent], preset_mapping("arena_hard_v2"), tables=_tables())
    failed = _row(t, raw[0]["uid"], "BA")
    assert failed["status"] == "unparsed" and failed["verdict"] == "" and failed["label"] == ""
    assert (t.drop(failed.name)["status"] == "ok").all()
    battles = _show_result_battles(raw)
    assert battles == [0.0] * 6  # only 666d's six strong battles for the baseline are left
    out = tmp_path / "audit"
    assert cli.main(["audit", "--format", "arena_hard_v2", str(folder.parent), "--table",
                     f"answers={V2 / 'model_answer'}", "--table", f"questions={V2 / 'question.jsonl'}",
                     "--out", str(out), "--resamples", "200"]) == 0
    card = pd.read_csv(out / "bias_card.csv").set_index(["view", "metric"])
    row = card.loc[("lenient", "arena_hard_score")]
    assert row["estimate"] == pytest.approx(sum(battles) / len(battles)) and row["n"] == 1
    assert row["status"] == "not estimable" and not math.isfinite(row["se"]) and "one item" in row["reason"]
    assert card.loc[("lenient", "parse_failures"), "estimate"] == pytest.approx(1 / 4)


def test_canonical_pairs_written_in_the_v2_layout_import_to_the_canonical_verdicts(tmp_path):
    """The canonical pairs of ``tests/verdict_import/test_verdict_import.py`` (ties, unparsed games, identical
    responses) written by :func:`write_canonical_v2` import to the canonical verdicts and
    round-trip through the ``judgelab`` preset, as every preset's fixture does there."""
    from judgelab.io import write_table
    from judgelab.verdict_import import RECORDED_COLUMNS
    from tests.verdict_import.test_verdict_import import (  # (imported late: that module
        BASE,
        CANON,
        _canon_rows,
        _compare,
    )
    # imports this one for its FIXTURES table)

    files, tables = write_canonical_v2(tmp_path, CANON, BASE)
    table = import_verdicts(files, preset_mapping("arena_hard_v2"), tables=tables)
    assert list(table.columns) == RECORDED_COLUMNS
    _compare(table, _canon_rows(), ["verdict", "verdict_shown", "has_value", "response_a", "response_b",
                                    "model_a", "model_b"])
    assert (table.groupby("pair_id")["order"].apply(set) == {"AB", "BA"}).all()
    out = tmp_path / "recorded.parquet"
    write_table(table, out)
    pd.testing.assert_frame_equal(import_verdicts([out], preset_mapping("judgelab")), table, check_dtype=False)


# ------------------------------------------------------------------------------- wrong layout --

def test_a_v01_file_given_to_the_v2_preset_stops_naming_file_row_and_key():
    with pytest.raises(InputError, match=rf"{re.escape(str(V1_JUDGMENTS))} row 1: format 'arena_hard_v2' "
                                         r"expects key 'uid'"):
        import_verdicts([V1_JUDGMENTS], preset_mapping("arena_hard_v2"), tables=_tables())


def test_a_v2_file_given_to_the_v01_preset_stops_naming_file_row_and_key():
    with pytest.raises(InputError, match=rf"{re.escape(str(V2_JUDGMENTS))} row 1: format 'arena_hard' "
                                         r"expects key 'question_id'"):
        import_verdicts([V2_JUDGMENTS], preset_mapping("arena_hard"),
                        tables={"answers": [str(V1 / "model_answer")], "questions": [str(V1 / "question.jsonl")]})
