"""Fast tests of :mod:`judgelab.board.battles`: which verdicts become games, the design it reads
(baseline or free battles), the counts it keeps per model, and where the style counts come from.
Each expectation is worked out by hand from the module's documented rules (no fit)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgelab.board.battles import battles_from_table, read_answer_metadata
from judgelab.io import InputError
from judgelab.verdict_import.importer import RECORDED_COLUMNS


def _t(games, **extra):
    """Recorded rows from (pair, item, model_a, model_b, preference, status[, label, order, source, simulated])."""
    rows = []
    for k, g in enumerate(games):
        pair, item, a, b, p, status, *rest = g
        label, order, source, sim = (list(rest) + ["", "AB", f"{b}.json", False][len(rest):])[:4]
        rows.append({"judge": "j", "backend": "recorded", "model": "j", "family": "u", "pair_id": pair,
                     "item_id": item, "order": order, "instruction": item, "response_a": f"answer {a} {item}",
                     "response_b": f"the answer of {b} to {item}", "model_a": a, "model_b": b, "family_a": "u",
                     "family_b": "u", "verdict_shown": "", "verdict": "", "preference": p, "label": label,
                     "expected_verdict": pd.NA, "correct": pd.NA, "status": status, "parse_method": "x",
                     "raw_text": "", "simulated": sim, "category": "", "source_file": source, "source_row": 10 + k,
                     **extra})
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def test_failures_leave_with_their_pair_and_are_counted_per_evaluated_model():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok"), ("p1", "q1", "base", "m1", np.nan, "unparsed"),  # pair leaves
            ("p2", "q2", "base", "m1", 0.5, "fallback"),  # a fallback parse is a verdict
            ("p3", "q3", "base", "m2", 0.0, "ok"), ("p4", "q4", "base", "m2", 1.0, "error"),  # error status
            ("p5", "q5", "base", "base", 1.0, "ok"),  # the baseline against itself: no game, no failure
            ("p6", "q6", "base", "m2", 1.0, "ok"),
            ("p7", "q7", "m2", "base", np.nan, "unparsed")])  # the evaluated model stored as A
    b = battles_from_table(t)
    assert len(b) == 3 and b.n_models == 3
    assert b.failed == {"m1": 2, "m2": 2}
    assert b.row.tolist() == [12, 13, 16]
    assert b.pref_b.tolist() == [0.5, 0.0, 1.0]
    assert b.items == ["q2", "q3", "q6"] and b.item.tolist() == [0, 1, 2]
    assert b.judges == ["j"] and b.judge.tolist() == [0, 0, 0]
    # integer codes as int64 (as the model codes), style counts as floats (as the lengths)
    assert b.item.dtype == b.judge.dtype == b.a.dtype == b.row.dtype == np.int64
    assert b.pref_b.dtype == np.float64
    assert b.style_a.dtype == b.style_b.dtype == b.len_a.dtype == b.len_b.dtype == np.float64


def test_no_usable_verdict_names_the_file():
    t = _t([("p1", "q1", "base", "m0", np.nan, "unparsed"), ("p2", "q2", "m1", "m1", 1.0, "ok")])
    with pytest.raises(InputError) as e:
        battles_from_table(t)
    assert str(e.value) == ("m0.json: no usable verdict (every row is a failure, a refusal or a model judged "
                            "against itself)")


def test_a_missing_model_names_file_row_and_column():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok"), ("p2", "q2", "base", "m2", 1.0, "ok")])
    t.loc[1, "model_a"] = None
    with pytest.raises(InputError) as e:
        battles_from_table(t)
    assert str(e.value) == ("m2.json: row 11: no model_a (the leaderboard needs the models behind both answers; "
                            "map model_a/model_b)")


def test_the_model_in_every_game_is_the_baseline_whichever_side_it_is_stored_on():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok"), ("p2", "q2", "m2", "base", 1.0, "ok"),
            ("p3", "q3", "m2", "base", 0.25, "ok")])  # m2, not the baseline, is the most frequent A
    b = battles_from_table(t)
    assert (b.baseline, b.reference, b.models) == ("base", "base", ["base", "m1", "m2"])
    model, y, is_b = b.evaluated()
    assert model.tolist() == [1, 2, 2] and is_b.tolist() == [True, False, False]
    assert y.tolist() == [1.0, 0.0, 0.75]  # stored as A, the model wins with 1 - P(B)


def test_two_models_in_every_game_the_baseline_is_the_one_stored_as_a():
    t = _t([("p1", "q1", "y", "x", 1.0, "ok"), ("p2", "q2", "y", "x", 0.0, "ok"), ("p3", "q3", "x", "y", 1.0, "ok")])
    b = battles_from_table(t)
    assert b.baseline == "y" and b.reference == "y"


def test_free_battles_refer_to_the_model_in_most_games_or_the_one_named():
    t = _t([("p1", "q1", "a", "b", 1.0, "ok"), ("p2", "q2", "b", "c", 1.0, "ok"), ("p3", "q3", "c", "d", 1.0, "ok"),
            ("p4", "q4", "c", "a", 0.0, "ok")])
    b = battles_from_table(t)
    assert b.baseline is None and b.reference == "c"  # c plays 3 games
    assert battles_from_table(t, baseline="d").reference == "d"
    with pytest.raises(InputError) as e:
        battles_from_table(t, baseline="zz")
    assert str(e.value) == "--baseline 'zz' is not a model of the log (models: a, b, c, d)"


def test_naming_another_baseline_than_the_common_model_makes_free_battles():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok"), ("p2", "q2", "base", "m2", 1.0, "ok")])
    same = battles_from_table(t, baseline="base")
    assert (same.baseline, same.reference) == ("base", "base")
    other = battles_from_table(t, baseline="m1")
    assert (other.baseline, other.reference) == (None, "m1")


def test_weights_orders_sources_and_the_simulated_flag():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok", "A<<B", "BA", "one.json", False),
            ("p2", "q2", "base", "m1", 0.0, "ok", "A>>B", "AB", "two.json", True),
            ("p3", "q3", "base", "m2", 0.0, "ok", "A>B", "AB", "three.json", False),
            ("p4", "q4", "base", "m2", 1.0, "ok", "", "AB", "four.json", False)])
    b = battles_from_table(t)
    assert b.weight.tolist() == [3, 3, 1, 1]
    assert b.b_first.tolist() == [True, False, False, False]
    assert b.sources == {"m1": "one.json", "m2": "three.json"}
    assert b.simulated is True
    assert battles_from_table(t.assign(simulated=False)).simulated is False
    assert battles_from_table(t.drop(columns=["label"])).weight.tolist() == [1, 1, 1, 1]


def test_lengths_styles_and_their_source():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok"), ("p2", "q2", "base", "m1", 0.0, "ok")])
    t.loc[0, "response_b"] = "# Title\n- item\n**bold** word"
    b = battles_from_table(t)
    assert b.len_a.tolist() == [len("answer base q1"), len("answer base q2")]
    assert b.len_b[0] == len("# Title\n- item\n**bold** word")
    assert b.style_b[0].tolist() == [6, 1, 1, 1] and b.style_a[1].tolist() == [3, 0, 0, 0]
    assert b.style_source == "texts"
    meta = {("q1", "m1"): (100, 2, 3, 4), ("q1", "base"): (50, 0, 0, 1)}
    part = battles_from_table(t, metadata=meta)
    assert part.style_b[0].tolist() == [100, 2, 3, 4] and part.style_a[0].tolist() == [50, 0, 0, 1]
    assert part.style_b[1].tolist() == [len("the answer of m1 to q2".split()), 0, 0, 0]
    assert part.style_source == "answer metadata and texts"
    full = {**meta, ("q2", "m1"): (7, 0, 0, 0), ("q2", "base"): (8, 1, 0, 0)}
    assert battles_from_table(t, metadata=full).style_source == "answer metadata"


def test_subset_keeps_the_codes_and_every_array_in_step():
    t = _t([("p1", "q1", "base", "m1", 1.0, "ok", "A<<B"), ("p2", "q2", "base", "m2", 0.0, "ok", "", "BA"),
            ("p3", "q3", "base", "m1", 0.5, "ok")])
    b = battles_from_table(t)
    s = b.subset(np.array([False, True, True]))
    assert s.models == b.models and s.items == b.items and s.reference == b.reference and s.baseline == "base"
    for k in ("a", "b", "pref_b", "b_first", "weight", "item", "row", "judge", "len_a", "len_b", "style_a",
              "style_b"):
        np.testing.assert_array_equal(getattr(s, k), getattr(b, k)[1:])
    assert (s.failed, s.sources, s.simulated, s.style_source, s.judges) == (b.failed, b.sources, b.simulated,
                                                                           b.style_source, b.judges)


def test_answer_metadata_files_keys_and_counts(tmp_path):
    d = tmp_path / "answers"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "m.jsonl").write_text(
        json.dumps({"uid": "none", "model": "m"}) + "\n"  # no metadata: skipped, the file read on
        + json.dumps({"question_id": 7, "model": "m", "metadata": {"token_len": "12", "header_count": {"h1": 1},
                                                                  "list_count": {"ordered": 2, "unordered": 3},
                                                                  "bold_count": {"**": 1, "__": 1}}}) + "\n"
        + json.dumps({"uid": "u", "question_id": 8, "model": "m", "metadata": {
            "token_len": 5, "header_count": 0, "list_count": 0, "bold_count": 0}}) + "\n"
        + json.dumps({"uid": "v", "model": "m", "metadata": "none"}) + "\n")
    (d / "notes.json").write_text("not read")
    assert read_answer_metadata([str(d)]) == {("7", "m"): (12, 1, 5, 2), ("u", "m"): (5, 0, 0, 0)}
    other = tmp_path / "x.json"
    other.write_text("{}")
    assert read_answer_metadata([str(other)]) == {}  # only .jsonl answer files
    assert read_answer_metadata([str(other), str(d / "sub" / "m.jsonl")]) == {("7", "m"): (12, 1, 5, 2),
                                                                             ("u", "m"): (5, 0, 0, 0)}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"uid": "u", "model": "m", "metadata": {}}) + "\n"
                   + json.dumps({"uid": "w", "model": "m", "metadata": {"token_len": "x"}}) + "\n")
    with pytest.raises(InputError) as e:
        read_answer_metadata([str(bad)])
    assert str(e.value) == f"{bad}: line 1: answer metadata lacks or garbles key 'token_len'"
    bad.write_text(json.dumps({"uid": "w", "model": "m", "metadata": {
        "token_len": "x", "header_count": 0, "list_count": 0, "bold_count": 0}}) + "\n")
    with pytest.raises(InputError, match=rf"^{bad}: line 1: answer metadata lacks or garbles key invalid literal"):
        read_answer_metadata([str(bad)])
