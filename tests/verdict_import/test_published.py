"""The ``fastchat_pairwise`` and ``arena_hard`` presets on real published judgment records.

``tests/fixtures/verdict_logs/fastchat/`` and ``.../arena_hard/`` copy the first records of two
published judgment files with the question and answer records they judge (sources, commits and
paths in the README there): an MT-Bench ``gpt-4_pair.jsonl`` (GPT-4, ``pair-v2``, phi-3 against
phi-3-dpo, turn 1) and an Arena-Hard v0.1 ``model_judgment/gpt-4-1106-preview/gpt-3.5-turbo-0125.jsonl``.
Every expectation here is computed from the raw records by the format's own rules (FastChat's
``g1_winner``/``g2_winner``, the judges' own ``[[A]]``/``[[A>>B]]`` text, the prompts the judge was
shown, Arena-Hard's ``show_result.py`` battles), never read back from the importer.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from judgelab.verdict_import import import_verdicts, preset_mapping

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
FC = FIX / "fastchat"
FC_JUDGMENTS = FC / "model_judgment" / "gpt-4_pair.jsonl"
AH = FIX / "arena_hard"
AH_JUDGMENTS = AH / "model_judgment" / "gpt-4-1106-preview" / "gpt-3.5-turbo-0125.jsonl"

SWAP = {"A": "B", "B": "A", "tie": "tie"}
#: FastChat ``play_a_match_pair`` writes both winners in the stored order (g2 already mapped back)
FC_WINNER = {"model_1": "A", "model_2": "B", "tie": "tie"}
#: FastChat pair-v2 output format, ``[[C]]`` = tie, in the letters of the game's own prompt
FC_TEXT_VERDICT = re.compile(r"\[\[([ABC])\]\]")
#: Arena-Hard labels in the letters of the game's own prompt
AH_SHOWN = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}


def _raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _fastchat() -> pd.DataFrame:
    return import_verdicts([FC_JUDGMENTS], preset_mapping("fastchat_pairwise"), tables={
        "answers": [str(FC / "model_answer")], "questions": [str(FC / "question.jsonl")]})


def _arena_hard() -> pd.DataFrame:
    # the folder, as Arena-Hard's show_result.py globs it: model_judgment/<judge>/*.jsonl
    return import_verdicts([AH / "model_judgment"], preset_mapping("arena_hard"), tables={
        "answers": [str(AH / "model_answer")], "questions": [str(AH / "question.jsonl")]})


def _row(t: pd.DataFrame, item: object, order: str) -> pd.Series:
    rows = t[(t["item_id"].astype(str) == str(item)) & (t["order"] == order)]
    assert len(rows) == 1, (item, order, len(rows))
    return rows.iloc[0]


def _fc_text_verdict(text: str) -> str:
    """The last ``[[A]]``/``[[B]]``/``[[C]]`` of a FastChat judgment (``[[C]]`` = tie)."""
    letter = FC_TEXT_VERDICT.findall(text)[-1]
    return "tie" if letter == "C" else letter


def _shown_first(prompt: str, *, arena: bool) -> str:
    """The answer a published judge prompt shows as Assistant A."""
    start, end = (("<|The Start of Assistant A's Answer|>\n", "\n<|The End of Assistant A's Answer|>") if arena
                  else ("[The Start of Assistant A's Answer]\n", "\n[The End of Assistant A's Answer]"))
    return prompt.split(start, 1)[1].split(end, 1)[0]


# ------------------------------------------------------------------------------ FastChat ------

def test_fastchat_judge_and_models_as_the_format_names_them():
    raw = _raw(FC_JUDGMENTS)
    t = _fastchat()
    assert len(t) == 2 * len(raw)
    # judge = [model, prompt name]: one judge "gpt-4/pair-v2" whose model is gpt-4
    assert set(t["judge"]) == {"/".join(r["judge"]) for r in raw} == {"gpt-4/pair-v2"}
    assert set(t["model"]) == {"gpt-4"} and set(t["family"]) == {"openai"}
    assert set(t["model_a"]) == {r["model_1"] for r in raw} == {"phi-3"}
    assert set(t["model_b"]) == {r["model_2"] for r in raw} == {"phi-3-dpo"}
    assert sorted(t["item_id"].astype(str).unique()) == sorted(str(r["question_id"]) for r in raw)
    orders = t.groupby("pair_id")["order"].apply(sorted)
    assert len(orders) == len(raw) and all(o == ["AB", "BA"] for o in orders)
    assert (t["status"] == "ok").all() and set(t["source_row"]) == set(range(1, len(raw) + 1))  # 1-based lines


def test_fastchat_verdicts_are_the_published_winners_in_the_stored_order():
    """g1 is the stored order, g2 the swapped one with its winner already mapped back: the
    judge's own text names the letter it was shown ([[A]] in both games here, the winners
    model_1 then model_2 -- a judge that always picks the first answer)."""
    t = _fastchat()
    for r in _raw(FC_JUDGMENTS):
        g1, g2 = _row(t, r["question_id"], "AB"), _row(t, r["question_id"], "BA")
        assert g1["verdict"] == FC_WINNER[r["g1_winner"]] and g2["verdict"] == FC_WINNER[r["g2_winner"]]
        assert g1["verdict_shown"] == _fc_text_verdict(r["g1_judgment"]) == g1["verdict"]
        assert g2["verdict_shown"] == _fc_text_verdict(r["g2_judgment"]) == SWAP[g2["verdict"]]
        assert g1["raw_text"] == r["g1_judgment"] and g2["raw_text"] == r["g2_judgment"]
    assert set(t["verdict_shown"]) == {"A"}


def test_fastchat_texts_are_the_judged_turn_from_the_side_tables():
    """instruction and responses come from question.jsonl and model_answer/*.jsonl at the
    record's turn (turn 1 here: the first turn only), and they are what the published prompts
    showed: g1 shows model_1 as Assistant A, g2 shows model_2 first."""
    questions = {r["question_id"]: r for r in _raw(FC / "question.jsonl")}
    answers = {(r["question_id"], r["model_id"]): r for p in sorted((FC / "model_answer").glob("*.jsonl"))
               for r in _raw(p)}
    t = _fastchat()
    for r in _raw(FC_JUDGMENTS):
        q = r["question_id"]
        assert r["turn"] == 1
        for order, prompt in (("AB", r["g1_user_prompt"]), ("BA", r["g2_user_prompt"])):
            row = _row(t, q, order)
            assert row["instruction"] == questions[q]["turns"][0]
            assert row["response_a"] == answers[q, r["model_1"]]["choices"][0]["turns"][0]
            assert row["response_b"] == answers[q, r["model_2"]]["choices"][0]["turns"][0]
            assert prompt.startswith(f"[User Question]\n{row['instruction']}\n")
            assert _shown_first(prompt, arena=False) == (row["response_a"] if order == "AB" else row["response_b"])


# ------------------------------------------------------------------------------ Arena-Hard ----

def test_arena_hard_judge_model_and_baseline_as_published():
    raw = _raw(AH_JUDGMENTS)
    t = _arena_hard()
    assert len(t) == 2 * len(raw)
    # the judge is the record's "judge", also the folder name; the model is the file name
    assert set(t["judge"]) == {r["judge"] for r in raw} == {AH_JUDGMENTS.parent.name}
    assert set(t["model"]) == {"gpt-4-1106-preview"} and set(t["family"]) == {"openai"}
    assert set(t["model_b"]) == {r["model"] for r in raw} == {AH_JUDGMENTS.stem}
    assert set(t["model_a"]) == {"gpt-4-0314"}  # the v0.1 baseline
    assert sorted(t["item_id"].unique()) == sorted(r["question_id"] for r in raw)


def test_arena_hard_scores_per_game_with_the_second_game_swapped():
    """Each game's label is in that game's letters: game 1 shows the baseline (stored A) first,
    game 2 the model first.  The published prompts say so, and the stored-order verdict of
    game 2 is the swapped label."""
    t = _arena_hard()
    for r in _raw(AH_JUDGMENTS):
        for i, order in enumerate(("AB", "BA")):
            game, row = r["games"][i], _row(t, r["question_id"], order)
            shown = AH_SHOWN[game["score"]]
            assert f"[[{game['score']}]]" in game["judgment"]  # the label is the judge's own verdict
            assert row["label"] == game["score"] and row["verdict_shown"] == shown
            assert row["verdict"] == (shown if i == 0 else SWAP[shown])
            assert row["raw_text"] == game["judgment"]
            first = row["response_a"] if i == 0 else row["response_b"]
            assert _shown_first(game["user_prompt"], arena=True) == first
    # the four records hold every kind of label: ties, slight and strong preferences
    assert {g["score"] for r in _raw(AH_JUDGMENTS) for g in r["games"]} == {"A=B", "A>B", "A>>B", "B>A", "B>>A"}


def test_arena_hard_texts_from_the_side_tables():
    questions = {r["question_id"]: r for r in _raw(AH / "question.jsonl")}
    answers = {(r["question_id"], r["model_id"]): r for p in sorted((AH / "model_answer").glob("*.jsonl"))
               for r in _raw(p)}
    t = _arena_hard()
    for _, row in t.iterrows():
        q = row["item_id"]
        assert row["instruction"] == questions[q]["turns"][0]["content"]
        assert row["response_a"] == answers[q, "gpt-4-0314"]["choices"][0]["turns"][0]["content"]
        assert row["response_b"] == answers[q, row["model_b"]]["choices"][0]["turns"][0]["content"]


def show_result_battles(records: list[dict], weight: int = 3) -> list[float]:
    """Arena-Hard's ``show_result.py`` ``load_judgments`` (lmarena/arena-hard-auto; v0.1 and, at commit
    005ac120, v2.0 read games the same way), as published: records with a null game or score are dropped; game 2's label scores the model as shown first, game 1's
    is taken as 1 - score; a strong label is ``weight`` battles.  The score is the battles' mean."""
    label_to_score = {"A>B": [1], "A>>B": [1] * weight, "A=B": [0.5], "A<<B": [0] * weight, "A<B": [0],
                      "B>A": [0], "B>>A": [0] * weight, "B=A": [0.5], "B<<A": [1] * weight, "B<A": [1]}
    battles: list[float] = []
    for r in records:
        g1, g2 = r["games"]
        if g1 is None or g2 is None or g1["score"] is None or g2["score"] is None:
            continue
        battles += label_to_score[g2["score"]] + [1 - s for s in label_to_score[g1["score"]]]
    return battles


def _audit(tmp_path: Path, fmt: str, files: Path, root: Path) -> pd.DataFrame:
    from judgelab import cli

    out = tmp_path / fmt
    assert cli.main(["audit", "--format", fmt, str(files), "--table", f"answers={root / 'model_answer'}",
                     "--table", f"questions={root / 'question.jsonl'}", "--out", str(out),
                     "--resamples", "400"]) == 0
    assert (out / "bias_card.md").exists() and (out / "bias_card.png").stat().st_size > 0
    return pd.read_csv(out / "bias_card.csv").set_index(["view", "metric"])


def test_audit_of_the_arena_hard_folder_gives_the_show_result_score(tmp_path):
    raw = _raw(AH_JUDGMENTS)
    battles = show_result_battles(raw)
    want = sum(battles) / len(battles)
    assert len(battles) == 12 and want == pytest.approx(2 / 12)  # 1.5 + 0 + 0 + 0.5 over 2 + 2 + 6 + 2 battles
    card = _audit(tmp_path, "arena_hard", AH / "model_judgment", AH)
    assert set(card["judge"]) == {"gpt-4-1106-preview"}
    row = card.loc[("lenient", "arena_hard_score")]
    assert row["estimate"] == pytest.approx(want)
    assert row["n"] == len(raw) and row["n_items"] == len(raw)
    # a cluster-bootstrap SE over four questions: finite, non-zero, near the delta-method SE of the
    # ratio of per-question totals, and an interval around the estimate
    num = [sum(show_result_battles([r])) for r in raw]
    den = [len(show_result_battles([r])) for r in raw]
    z = [n - want * d for n, d in zip(num, den, strict=True)]
    delta_se = math.sqrt(sum(v * v for v in z) / len(z) ** 2) / (sum(den) / len(den))
    assert math.isfinite(row["se"]) and 0.5 * delta_se < row["se"] < 1.5 * delta_se
    assert row["ci_low"] <= want <= row["ci_high"] and row["ci_low"] < row["ci_high"]
    # position: the same stored verdict in both games for 2 of the 4 questions
    agree = [AH_SHOWN[r["games"][0]["score"]] == SWAP[AH_SHOWN[r["games"][1]["score"]]] for r in raw]
    assert card.loc[("lenient", "positional_agreement"), "estimate"] == pytest.approx(sum(agree) / len(agree))
    ties = sum(g["score"] == "A=B" for r in raw for g in r["games"])
    assert card.loc[("lenient", "tie_rate"), "estimate"] == pytest.approx(ties / (2 * len(raw)))


def test_audit_of_the_fastchat_file_gives_a_card(tmp_path):
    raw = _raw(FC_JUDGMENTS)
    card = _audit(tmp_path, "fastchat_pairwise", FC_JUDGMENTS, FC)
    assert set(card["judge"]) == {"gpt-4/pair-v2"}
    # g1_winner == g2_winner would be a consistent judge: none of the three is
    consistent = [r["g1_winner"] == r["g2_winner"] for r in raw]
    assert card.loc[("lenient", "positional_agreement"), "estimate"] == pytest.approx(sum(consistent) / len(raw))
    # the answer shown first won every game: b = P(first) - P(second) = 1, but on 6 verdicts the
    # card withholds the finding (fewer than 10 decisive verdicts)
    first = sum(r["g1_winner"] == "model_1" for r in raw) + sum(r["g2_winner"] == "model_2" for r in raw)
    pos = card.loc[("lenient", "position_preference")]
    assert pos["estimate"] == pytest.approx((2 * first - 2 * len(raw)) / (2 * len(raw)))
    assert pos["status"] == "not estimable" and "fewer than 10 decisive" in pos["reason"]
    assert card.loc[("lenient", "parse_failures"), "estimate"] == 0
