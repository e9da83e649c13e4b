"""The strict view applies each source's published extraction; the lenient view reads markers in context.

The authors' code is transcribed here independently of :mod:`judgelab.parsing`:

* FastChat ``fastchat/llm_judge/common.py`` ``run_judge_pair`` (lm-sys/FastChat 007ecd07);
* Position-Bias-Analyzer ``match_answer`` (``benchmark == "MTBench"``) and ``find_inconsistent``
  (Slimshilin/Position-Bias-Analyzer 0eb0ce93, ``judging_the_judges/repetitional_consistency/
  repetitonal_consistency_util.py``; ``subeval/subjective/util.py`` in Position-Bias-Analyzer-Demo).

The records are real (``tests/fixtures/verdict_logs/position_bias_analyzer``, provenance in the
README there).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import card_view
from judgelab.parsing import STRICT_RULES, parse_pairwise, strict_verdict
from judgelab.records import CallStatus
from judgelab.verdict_import import import_verdicts
from judgelab.verdict_import.mapping import build_mapping

PBA = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "position_bias_analyzer"
FILES = sorted(PBA.rglob("record_*.tsv"))
CARD = CardSettings(n_resamples=50, min_decisive=1)


# ------------------------------------------------------------------ the authors' code, transcribed


def fastchat_winner(judgment: str) -> str:
    if "[[A]]" in judgment:
        winner = "A"
    elif "[[B]]" in judgment:
        winner = "B"
    elif "[[C]]" in judgment:
        winner = "tie"
    else:
        winner = "error"
    return winner


def pba_match_answer(s: str) -> str | None:
    if result := re.findall(r'\[\[([ABCD])\]\]', s):
        return result[0]
    return None


def pba_find_inconsistent(rows: list[dict], vals: str = "ABCD") -> tuple[list[str], list[str]]:
    """``find_inconsistent`` over rows whose ``extracted`` is not None (``preprocess`` drops the rest)."""
    cons, incons = [], []
    pred_map = {r["cmp_index"]: r["extracted"] for r in rows}
    for k in pred_map:
        parts = k.split(";")
        kct = ";".join([parts[0], parts[2], parts[1]])
        if kct not in pred_map:
            cons.append(k)
            continue
        tups = [(vals[0], vals[1]), (vals[1], vals[0]), (vals[2], vals[2]), (vals[3], vals[3])]
        if any(pred_map[k] == a and pred_map[kct] == b for a, b in tups):
            cons.append(k)
        else:
            incons.append(k)
    return cons, incons


def _rows(path: Path) -> tuple[str, list[dict]]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    judge = path.stem.split("_")[1]  # record_[judge]_[nopt].tsv, as load_repetition_data reads it
    return judge, rows


def _mapping(judge: str, parse: str = "position_bias_analyzer"):
    return build_mapping({
        "file_type": "tsv", "judge": {"const": judge},
        "instruction": {"concat": ["question_1", "question_2"], "sep": "\n\n"},
        "response_a": {"concat": ["answer1_1", "answer1_2"], "sep": "\n\n"},
        "response_b": {"concat": ["answer2_1", "answer2_2"], "sep": "\n\n"},
        "model_a": "A", "model_b": "B", "item_id": "question_1", "category": "task", "order": "auto",
        "verdict": {"text": judge, "parse": parse, "frame": "shown"}})


def _paired_consistency(rows: list[dict]) -> tuple[int, int]:
    """(consistent, all) games among those whose swapped game was also extracted: the authors' rate
    restricted to games with a partner (the card's positional agreement is over such pairs)."""
    ext = [dict(r, extracted=pba_match_answer(r[list(r)[-1]])) for r in rows]
    ext = [r for r in ext if r["extracted"] is not None]
    keys = {r["cmp_index"] for r in ext}
    paired = [r for r in ext if ";".join([r["cmp_index"].split(";")[i] for i in (0, 2, 1)]) in keys]
    cons, _ = pba_find_inconsistent(paired)
    return len(cons), len(paired)


# ------------------------------------------------------------------ rules equal the transcriptions

_MARKED = st.lists(st.sampled_from(["[[A]]", "[[B]]", "[[C]]", "[[D]]", "**[[A]]**", "[[ B ]]", " better than ",
                                    " for the second question, but ", "Therefore, ", ".", "\n", "A", "x"]),
                   max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_MARKED)
def test_fastchat_rule_equals_run_judge_pair(text):
    expected = fastchat_winner(text)
    assert strict_verdict(text, "brackets") == (None if expected == "error" else expected)


@settings(max_examples=300, deadline=None)
@given(text=_MARKED)
def test_position_bias_analyzer_rule_equals_match_answer(text):
    got = pba_match_answer(text)
    expected = {"A": "A", "B": "B", "C": "tie"}.get(got)  # D: no verdict in the A/B/tie scheme
    assert strict_verdict(text, "position_bias_analyzer") == expected


def test_rules_cite_their_source_and_apply_to_their_format_only():
    assert "run_judge_pair" in STRICT_RULES["brackets"].source
    assert "match_answer" in STRICT_RULES["position_bias_analyzer"].source
    assert strict_verdict("[[A]]", "brackets:conflicting") == "A"  # a method refinement keeps its format's rule
    for method in ("label", "fallback:brackets", "json", "scores", "weight"):
        assert strict_verdict("[[A]]", method) is None


@pytest.mark.parametrize(("text", "fastchat", "pba", "lenient"), [
    # the sentences of issue 25, as judges wrote them
    ("Therefore, **[[B]]** is better than **[[A]]**", "A", "B", "B"),
    ("Therefore, [[B]] is better than [[A]]", "A", "B", "B"),
    ("[[C]] for the second question, but [[A]] for the entire conversation", "A", "tie", "A"),
    ("I prefer **[[B]]** over **[[A]]**.", "A", "B", "B"),
])
def test_each_view_reads_the_issue_sentences(text, fastchat, pba, lenient):
    assert strict_verdict(text, "brackets") == fastchat
    assert strict_verdict(text, "position_bias_analyzer") == pba
    for fmt in ("brackets", "position_bias_analyzer"):
        p = parse_pairwise(text, fmt)
        assert (p.value, p.status, p.method) == (lenient, CallStatus.OK, fmt)


# ------------------------------------------------------------------ the real records


def test_fixture_records_are_the_published_layout():
    assert len(FILES) == 2
    for f in FILES:
        judge, rows = _rows(f)
        assert list(rows[0])[-1] == judge and next(iter(rows[0])) == "cmp_index"
        assert all(r["cmp_index"].count(";") == 2 for r in rows)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name.split("_record0_")[1])
def test_strict_view_equals_the_authors_code_on_real_records(path):
    judge, rows = _rows(path)
    table = import_verdicts([path], _mapping(judge))
    # every game: the strict reading equals match_answer on the recorded text
    for r, (_, t) in zip(rows, table.sort_values("source_row").iterrows(), strict=True):
        want = {"A": "A", "B": "B", "C": "tie"}.get(pba_match_answer(r[judge]) or "")
        assert strict_verdict(t["raw_text"], t["parse_method"]) == want
    cons, n = _paired_consistency(rows)
    strict = card_view(bias_card(table, CARD), "strict")
    assert strict.loc["positional_agreement", "n"] * 2 == n
    assert strict.loc["positional_agreement", "estimate"] == pytest.approx(cons / n)


def test_a_record_read_differently_by_the_authors_moves_only_the_strict_view(tmp_path):
    """A variant of a real record: the gpt-3.5 judgment of the stored order ends in the issue's
    two-verdict sentence instead of its published ``[[A]]``.  Position-Bias-Analyzer's first match
    reads C (a tie), so the pair is inconsistent for the authors and in the strict view; the
    lenient view reads the last word, A, which agrees with the swapped game's B."""
    src = next(f for f in FILES if "gpt-3.5" in f.name)
    judge, rows = _rows(src)
    assert rows[0][judge].endswith("[[A]]")
    rows[0][judge] = rows[0][judge][: -len("[[A]]")] + ("[[C]] for the second question, but [[A]] for the "
                                                        "entire conversation")
    f = tmp_path / src.name
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t", quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    cons, n = _paired_consistency(rows)
    assert (cons, n) == (0, 2)
    card = bias_card(import_verdicts([f], _mapping(judge)), CARD)
    assert card_view(card, "strict").loc["positional_agreement", "estimate"] == 0.0
    assert card_view(card, "lenient").loc["positional_agreement", "estimate"] == 1.0
    # the same text read as FastChat's format: run_judge_pair finds "[[A]]" first, as the lenient view
    fast = card_view(bias_card(import_verdicts([f], _mapping(judge, "brackets")), CARD), "strict")
    assert fast.loc["positional_agreement", "estimate"] == 1.0
    # the audit imports without texts (features and the rule's reading kept): the same card
    for fmt in (None, "brackets"):
        full = bias_card(import_verdicts([f], _mapping(judge, *([fmt] if fmt else []))), CARD)
        lean = bias_card(import_verdicts([f], _mapping(judge, *([fmt] if fmt else [])), texts=False), CARD)
        pd.testing.assert_frame_equal(lean, full)
